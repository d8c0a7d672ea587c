"""``akfviz.simulate``: run a plan on the event-driven NPU model (akf-spec §7).

One iteration of ``y = A x`` (or ``Y = A X``) is, in this order:

1. **x load** — when the input comes from DRAM (the first iteration, or every iteration when
   not persistent): ``nnz(x) · flit_bytes`` bytes at the shared bandwidth, before any event
   (``load_cycles``). Persistent iterations after the first take ``x`` from the PEs that
   reduced ``y`` (vector slices stay on chip).
2. **phases** — fused: one phase with every tile; unfused: one phase per distinct kernel
   (ascending kernel name), re-broadcasting the events, with a reconfiguration before and a
   global barrier after each phase but the last. In each phase a PE first receives the payload
   bytes it must stream (persistent: the part of its payload beyond its SRAM; non-persistent:
   its whole payload) — the DRAM channel is shared fairly (processor sharing) among the PEs
   that stream — then runs the engine (:mod:`akfviz.npu._engine`).
3. **y write-back** — non-persistent: every iteration; persistent: after the last one
   (``rows · k · flit_bytes`` bytes).
4. **sync** — persistent: a global barrier between iterations; non-persistent: kernel exit +
   launch (``launch_cycles``) every iteration.

The engine part (step 2) is identical in every iteration — persistent runs stream the same
overflow each time, non-persistent runs the whole payload each time — so each phase is simulated
once and the iterations differ only in steps 1, 3 and 4.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import fields as dataclass_fields

import numba
import numpy as np

from .._jit import njit_cached
from ..arguments import check_flag, check_seed, check_whole, choice
from ..frozen import read_only
from ..memory import check_memory
from ..errors import InputError, checked_call
from . import _engine
from .costmodel import check_activation_density
from .hardware import HardwareConfig, as_hardware
from .mapping import MAPPING_METHODS, Mapping, map_tiles
from .results import COUNTERS, SimResult
from .tilework_builders import dense_tilework
from .work import TileWork
from ..workloads.validate import dense_operand

MAX_ITERATIONS = 100_000
MAX_BATCH = 1024
#: Memory per PE of a simulation (counters, their totals over iterations, clocks, utilisation):
#: measured ≈ 130 bytes on a 4096 × 4096 grid.
BYTES_PER_PE = 160
#: Memory per recorded busy interval (five int64 rows, grown by doubling, then copied and
#: offset per phase).
BYTES_PER_INTERVAL = 160


# --------------------------------------------------------------------------- inputs
def _as_shape(shape) -> tuple[int, int]:
    try:
        m, n = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise InputError(f"shape must be (rows, cols), got {shape!r}.") from None
    return m, n


#: Why a bare TileWork needs ``tile=`` (see :meth:`TileWork.tile_side`).
TILE_SIDE_UNTOLD = ("A TileWork with a single tile away from block (0, 0) does not tell the tile side (that tile "
                    "may be a narrower edge tile of a larger T); pass tile=T (for a FusionPlan: plan.pa.tile).")


def _resolve_plan(plan, shape, tile, tile_rows=None):
    # whole numbers ≥ 1, never cut (tile=8.9 became 8; "abc" raised ValueError: probe)
    if tile is not None:
        tile = check_whole(tile, "tile (the tile side)", 1)
    if tile_rows is not None:
        tile_rows = check_whole(tile_rows, "tile_rows (the tile height)", 1)
    if isinstance(plan, TileWork):
        work = plan
        src = "TileWork"
    elif hasattr(plan, "npu_work"):
        work = plan.npu_work()
        if not isinstance(work, TileWork):
            raise InputError("plan.npu_work() did not return a TileWork.")
        pa = getattr(plan, "pa", None)
        own_tile = int(pa.tile) if pa is not None else None
        own_shape = getattr(plan, "shape", None)
        if own_shape is None and pa is not None:
            own_shape = pa.A.shape
        # a plan carries its own geometry: another tile side or shape would deliver the events
        # of x to the wrong column blocks (akf-spec §7), so only the plan's own values are accepted
        if tile is not None and own_tile is not None and int(tile) != own_tile:
            raise InputError(f"tile={tile} does not match the plan, which was analysed with tiles of "
                             f"{own_tile}; leave tile out when simulating a FusionPlan.")
        if tile_rows is not None and own_tile is not None and int(tile_rows) != own_tile:
            raise InputError(f"tile_rows={tile_rows} does not match the plan's tile side {own_tile}; "
                             "leave it out when simulating a FusionPlan.")
        if shape is not None and own_shape is not None and _as_shape(shape) != tuple(own_shape):
            raise InputError(f"shape={tuple(shape)} does not match the plan's matrix "
                             f"({own_shape[0]} × {own_shape[1]}); leave shape out when simulating a FusionPlan.")
        tile = own_tile if tile is None else tile
        shape = own_shape if shape is None else shape
        src = "FusionPlan"
    else:
        raise InputError(
            f"simulate needs a FusionPlan (from akfviz.select) or a TileWork, got {type(plan).__name__}."
        )
    try:
        work.validate()
    except ValueError as exc:
        raise InputError(f"The plan's TileWork is inconsistent: {exc}") from None
    n = work.n_tiles
    if tile is None:
        tile = work.tile_side()
        if tile is None and n:
            raise InputError(TILE_SIDE_UNTOLD)
        tile = 1 if tile is None else tile
    tile = int(tile)
    tr = tile if tile_rows is None else int(tile_rows)
    if n and (int(work.w.max()) > tile or int(work.h.max()) > tr):
        # blocks narrower than their tiles overlap: x's events would go to the wrong column blocks
        raise InputError(f"The tiles are up to {int(work.h.max())} × {int(work.w.max())}, larger than the tile "
                         f"side given (tile_rows={tr}, tile={tile}); give the side the TileWork was built with.")
    if shape is None:
        if n == 0:
            raise InputError("An empty TileWork needs an explicit shape=(rows, cols).")
        shape = (int((work.bi * tr + work.h).max()), int((work.bj * tile + work.w).max()))
    shape = _as_shape(shape)
    if n and ((work.bj * tile + work.w).max() > shape[1] or (work.bi * tr + work.h).max() > shape[0]):
        raise InputError(f"The tiles reach beyond the matrix shape {shape} with tile side {tile}.")
    return work, shape, tile, tr, src


def kept_inputs(n_cols: int, rho_x: float) -> int:
    """Nonzeros per column of :func:`random_input`: ``round(rho_x · n_cols)``, at least one when
    ``rho_x > 0``."""
    return 0 if rho_x == 0 else max(1, int(round(rho_x * int(n_cols))))


def input_density(n_cols: int, rho_x: float) -> float:
    """The density :func:`random_input` really gives (``kept_inputs / n_cols``, e.g. 115 / 384 =
    0.2995 for ``rho_x = 0.3``): what the placement is keyed and estimated with, so that
    ``simulate(rho_x=…)``, ``simulate(x=random_input(…))`` (as ``compare`` does) and
    :func:`plan_mapping` use one placement (they used two, and a sweep row mixed them)."""
    if rho_x >= 1.0 or int(n_cols) <= 0:
        return float(rho_x)
    return kept_inputs(n_cols, rho_x) / int(n_cols)


def random_input(n_cols: int, rho_x: float = 1.0, seed: int = 0, batch: int = 1) -> np.ndarray:
    """The seeded input ``x`` used wherever none is given (``simulate``, ``compare``, the app).

    Each column: standard normal values of which exactly ``round(rho_x · n_cols)`` are kept
    (at least one when ``rho_x > 0``), chosen by a seeded permutation, the rest zero — a
    ReLU-like activation of density ``rho_x`` (akf-spec §7). One function, so that a page's
    simulation and the comparison of the same settings see the same events.

    Returns
    -------
    ndarray, shape (n_cols,) when ``batch == 1``, else (n_cols, batch)
    """
    rho = check_activation_density(rho_x)
    n = int(n_cols)
    rng = np.random.default_rng(check_seed(seed))
    keep_n = kept_inputs(n, rho)
    out = np.zeros((n, int(batch)))   # filled column by column: no list of columns to stack
    for b in range(int(batch)):
        values = rng.standard_normal(n)
        keep = rng.permutation(n)[:keep_n]
        out[keep, b] = values[keep]
    return out[:, 0].copy() if batch == 1 else out


def _resolve_x(x, n_cols, rho_x, seed, batch):
    if x is None:
        rho = check_activation_density(1.0 if rho_x is None else rho_x)
        k = 1 if batch is None else check_whole(batch, "batch", 1, MAX_BATCH)
        # the pattern (1 byte per entry) and, below ρ_x = 1, the random x it comes from (8 bytes per
        # entry, plus a column's draws): a 2M-column matrix with batch 1024 asked for ≈ 32 GB unchecked
        need = n_cols * int(k) * (1 if rho >= 1.0 else 9) + (0 if rho >= 1.0 else 24 * n_cols)
        check_memory(need, f"The random input x ({n_cols:,} rows × {int(k)} columns)",
                     "Use a smaller batch, or pass x yourself.")
        if rho >= 1.0:
            active = np.ones((n_cols, int(k)), dtype=bool)
        else:
            active = random_input(n_cols, rho, seed, int(k)).reshape(n_cols, int(k)) != 0
        return active, input_density(n_cols, rho)
    if rho_x is not None:
        raise InputError("Give either x or rho_x, not both (rho_x only shapes the random x).")
    X = dense_operand(x, "x")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != n_cols:
        raise InputError(f"x must have {n_cols} rows (the matrix's columns), got shape {np.shape(x)}.")
    if batch is not None and X.shape[1] != check_whole(batch, "batch", 1, MAX_BATCH):
        raise InputError(f"batch={batch} but x has {X.shape[1]} columns.")
    if not 1 <= X.shape[1] <= MAX_BATCH:
        raise InputError(f"x may have 1 to {MAX_BATCH} columns, got {X.shape[1]}.")
    if not np.all(np.isfinite(X)):
        raise InputError("x contains NaN or infinite values.")
    active = X != 0
    return active, float(active.mean()) if active.size else 0.0


# --------------------------------------------------------------------------- helpers
def ps_completion(bytes_per_pe: np.ndarray, bw: float) -> np.ndarray:
    """Completion cycle of each stream when all start at 0 and share ``bw`` fairly.

    Processor sharing: with sizes sorted ascending ``s_1 ≤ … ≤ s_n`` stream ``i`` ends at
    ``(Σ_{k<i} s_k + (n − i + 1) · s_i) / bw``, rounded up; zero-byte streams end at 0.
    """
    s = np.asarray(bytes_per_pe, dtype=np.float64)
    out = np.zeros(s.shape, dtype=np.int64)
    nz = np.flatnonzero(s > 0)
    if nz.size == 0:
        return out
    order = nz[np.argsort(s[nz], kind="stable")]
    ss = s[order]
    n = ss.size
    before = np.concatenate([[0.0], np.cumsum(ss)[:-1]])
    comp = (before + (n - np.arange(n)) * ss) / float(bw)
    out[order] = np.ceil(comp - 1e-9).astype(np.int64)
    return out


def tile_overflow(payload: np.ndarray, pe: np.ndarray, sram: int) -> np.ndarray:
    """Bytes of each tile that do not fit in its PE's SRAM.

    Tiles of a PE fill its SRAM in TileWork order; the first tile that does not fit overflows
    by the excess, all later tiles entirely (one O(n) pass, :func:`_engine.tile_overflow_kernel`).
    """
    n = payload.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    pe = np.ascontiguousarray(pe, dtype=np.int64)
    return _engine.tile_overflow_kernel(np.ascontiguousarray(payload, dtype=np.int64), pe,
                                        int(sram), int(pe.max()) + 1)


# --------------------------------------------------------------------------- caches
#: Mappings computed by simulate(), keyed by a digest of everything map_tiles reads.
_MAPPING_CACHE: OrderedDict = OrderedDict()
MAPPING_CACHE_SIZE = 8


def mapping_key(work: TileWork, hw: HardwareConfig, rho: float, method: str, seed: int,
                n_brows: int, n_bcols: int, shape=None, tile=None, tile_rows=None) -> str:
    """Content digest (sha256) of every input of :func:`cached_map_tiles`.

    Two calls with equal TileWork arrays (every one of them: the engine check of an annealed
    placement runs the whole TileWork), hardware, activation density, method, seed, block counts
    and run geometry (``shape``, ``tile``, ``tile_rows``) get the same key, whatever the objects'
    identities. Keyed on fewer arrays, two plans differing only in their tiles' local columns
    shared one placement and its engine-check figures (probe).
    """
    h = hashlib.sha256()
    geometry = None if shape is None else tuple(int(v) for v in shape)
    h.update(repr((hw.config_hash(), float(rho), method, int(seed), int(n_brows), int(n_bcols),
                   work.n_tiles, work.n_routes, tuple(work.kernel_names), geometry,
                   None if tile is None else int(tile), None if tile_rows is None else int(tile_rows))).encode())
    for f in dataclass_fields(work):
        v = getattr(work, f.name)
        if isinstance(v, np.ndarray):
            h.update(f.name.encode())
            h.update(np.ascontiguousarray(v, dtype=np.int64).data)
    return h.hexdigest()


def cached_map_tiles(work: TileWork, hw: HardwareConfig, *, rho_x: float, method: str, seed: int,
                     n_brows: int, n_bcols: int, shape=None, tile: int | None = None,
                     tile_rows: int | None = None) -> Mapping:
    """:func:`map_tiles` with an LRU cache (``MAPPING_CACHE_SIZE`` entries) keyed by content.

    An annealed placement that differs from the greedy start is checked in the engine
    (:func:`_engine_checked`): it is kept only when its simulated run is not slower (then not
    more energy-hungry) than the greedy placement's, on the seeded input of density ``rho_x``.
    ``shape``, ``tile`` and ``tile_rows`` are the matrix geometry for that run (default: the
    tiles' extent, as :func:`simulate` takes a TileWork).

    The placement depends only on the plan, the hardware, ``rho_x``, the method and the seed,
    so repeated simulations of one plan (fused vs unfused, persistent or not, other x of the
    same density, iterations…) reuse it. The cached Mapping is shared, so its arrays are
    read-only (:mod:`akfviz.frozen`); copy one to edit it. ``rho_x = 0`` (no events) is placed as a tiny positive density, so the
    placement still weighs the tiles' work.
    """
    rho_x = max(rho_x, 1e-9)
    key = mapping_key(work, hw, rho_x, method, seed, n_brows, n_bcols, shape, tile, tile_rows)
    mp = _MAPPING_CACHE.get(key)
    if mp is not None:
        _MAPPING_CACHE.move_to_end(key)
        return mp
    mp = map_tiles(work, hw, rho_x=rho_x, method=method, seed=seed, n_brows=n_brows, n_bcols=n_bcols)
    if method == "anneal" and mp.objective < mp.greedy_objective:
        mp = _engine_checked(work, hw, mp, rho_x=rho_x, seed=seed, n_brows=n_brows, n_bcols=n_bcols,
                             shape=shape, tile=tile, tile_rows=tile_rows)
    mp = read_only(mp)
    _MAPPING_CACHE[key] = mp
    while len(_MAPPING_CACHE) > MAPPING_CACHE_SIZE:
        _MAPPING_CACHE.popitem(last=False)
    return mp


def _engine_checked(work, hw, mp, *, rho_x, seed, n_brows, n_bcols, shape, tile, tile_rows) -> Mapping:
    """The annealed placement ``mp``, or the greedy one when the engine runs it slower.

    The annealer minimises an estimate (``akfviz.npu.mapping``), and the estimate does not see
    when events and partial sums arrive: on 99 cases (11 samples × CSC / DENSE / AKF × three
    grids) placements it found better ran up to 61 % slower than their greedy start in the
    engine (17 of 99; docs/model.md, Mapping). Both placements run once on the seeded input of
    density ``rho_x`` (``record=False``); the annealed one is kept when its ``(cycles, energy)``
    is not larger. Otherwise the greedy placement is returned with the annealer's trajectory and
    ``engine_check["kept"] == "greedy"``.
    """
    from dataclasses import replace

    greedy = cached_map_tiles(work, hw, rho_x=rho_x, method="greedy", seed=seed, n_brows=n_brows,
                              n_bcols=n_bcols)
    def run(m):
        # two numbers only: a whole SimResult holds per-PE counters (≈ 1 GB at 4096² PEs), and the
        # first would otherwise stay alive while the second runs
        r = simulate(work, hw, rho_x=rho_x, seed=seed, mapping=m, record=False, shape=shape,
                     tile=tile, tile_rows=tile_rows)
        return int(r.cycles), float(r.energy_total_pj)

    runs = {"anneal": run(mp), "greedy": run(greedy)}
    check = dict(anneal_cycles=runs["anneal"][0], greedy_cycles=runs["greedy"][0],
                 anneal_energy_pj=runs["anneal"][1], greedy_energy_pj=runs["greedy"][1],
                 anneal_objective=float(mp.objective))
    if runs["anneal"] <= runs["greedy"]:
        return replace(mp, engine_check=dict(kept="anneal", **check))
    return replace(mp, pe=np.array(greedy.pe), objective=float(greedy.objective),
                   components=dict(greedy.components), engine_check=dict(kept="greedy", **check))


def plan_mapping(plan, hw: HardwareConfig | None = None, *, rho_x: float | None = None, x=None,
                 method: str = "anneal", seed: int = 0, tile_rows: int | None = None) -> Mapping:
    """The placement :func:`simulate` uses for ``plan`` (akf-spec §6), from the same cache.

    The row and column block counts come from the matrix shape (``ceil(rows / tile_rows)``,
    ``ceil(cols / tile)``) as in :func:`simulate`, not from the last nonempty tile: a matrix
    whose last blocks hold no tile still gets a reduction PE per row block. Passing the result
    as ``simulate(..., mapping=mp)`` gives the same run as ``mapping=method`` with the same
    input: ``rho_x`` (default 1) for ``simulate(rho_x=…)``, or ``x`` for ``simulate(x=…)`` —
    the placement is keyed by the density of the events, which for a batch ``x`` of several
    columns need not be a whole number of entries per column. The placement is the cached
    object itself, so its arrays are read-only: ``mp.pe.copy()`` to experiment.
    """
    hw = as_hardware(hw)
    seed = check_seed(seed)
    work, shape, tile, tr, _ = _resolve_plan(plan, None, None, tile_rows)
    if x is not None:
        # the density simulate(x=…) measures (a batch's too), not one rounded per column
        _, rho = _resolve_x(x, shape[1], rho_x, seed, None)
    else:
        rho = check_activation_density(1.0 if rho_x is None else rho_x)
        rho = input_density(shape[1], rho)   # as simulate(rho_x=…) and an x from random_input
    return cached_map_tiles(work, hw, rho_x=rho, method=method, seed=seed,
                            n_brows=-(-shape[0] // tr), n_bcols=-(-shape[1] // tile), shape=shape, tile=tile,
                            tile_rows=tr)


def recorded_intervals_estimate(work: TileWork, active: np.ndarray, tile: int) -> int:
    """Busy intervals a recorded run keeps, at most: one per event delivered to a tile (every
    active column ``j`` a tile stores, for each input column) plus a setup and a final step per
    tile. Counted from the routed columns without running the engine."""
    if work.n_tiles == 0:
        return 0
    gcol = np.repeat(_i64(work.bj) * int(tile), np.diff(_i64(work.col_ptr))) + _i64(work.col_local)
    act = np.ascontiguousarray(active, dtype=bool)
    if act.ndim == 1:
        act = act[:, None]
    if gcol.size >= act.shape[0]:
        # more routed columns than matrix columns: count each column once (8 bytes per column,
        # no more than gcol itself)
        return int(np.count_nonzero(act, axis=1)[gcol].sum()) + 2 * work.n_tiles
    # fewer: visit only the routed columns' rows, allocating nothing (a per-column count of a
    # 2.2e9-column matrix was 17.6 GB; gathering the rows, routed pairs × batch bytes)
    return int(_routed_active(act, gcol)) + 2 * work.n_tiles


@njit_cached
def _routed_active(active, gcol):
    """Number of ``True`` entries in the rows ``gcol`` of ``active`` (bool, (n, k)), rows counted
    as often as they appear."""
    total = 0
    for g in gcol:
        for b in range(active.shape[1]):
            if active[g, b]:
                total += 1
    return total


# --------------------------------------------------------------------------- engine driver
def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


class _WorkArrays:
    """The TileWork arrays the engine reads, as contiguous int64 / bool (no copy if already).

    For a batch of ``k`` input columns a tile's per-vector work is done ``k`` times: each event
    ``x[j, b]`` is already one delivery, and the final phase (``final_macs``, ``final_sram_bytes``)
    and the partial sums sent to the reduction (``out_rows`` flits, one add each) are per output
    column, so they are scaled by ``k`` here (docs/model.md, Batches)."""

    def __init__(self, work: TileWork, k: int = 1):
        for name in ("bi", "bj", "col_ptr", "col_local", "ev_macs", "ev_decodes", "ev_sram_bytes",
                     "final_macs", "final_sram_bytes", "out_rows"):
            setattr(self, name, _i64(getattr(work, name)))
        if k > 1:
            for name in ("final_macs", "final_sram_bytes", "out_rows"):
                setattr(self, name, getattr(self, name) * np.int64(k))
        self.int8 = np.ascontiguousarray(work.int8, dtype=np.bool_)


class _Phase:
    """The tiles of one phase sorted by PE, and their partial-sum trains by reduction PE."""

    def __init__(self, wa: _WorkArrays, sel: np.ndarray, mp: Mapping, P: int):
        self.sel = sel
        self.order, self.pe_ptr = _engine.pe_sort(sel, mp.pe, P)
        self.tr_tile, self.tr_ptr = _engine.reduction_trains(self.order, self.pe_ptr, wa.out_rows,
                                                             wa.bi, mp.red, P, sel)


#: Estimated work (deliveries + 2 per tile) from which a phase runs in parallel over PEs
#: (``prange`` over PE chunks; same result bit for bit). Set high: on the shared 2-core
#: development machine two threads were slower than one, and even a one-chunk parallel
#: launch cost ~8 ms there (see docs/benchmarks.md); below it the serial kernel runs.
PARALLEL_MIN_WORK = 1 << 16


def _n_chunks(P: int) -> int:
    return int(max(1, min(P, 8 * numba.get_num_threads())))


def _run_engine(phases, wa, hw, mp, active_flat, k, tile, n_cols, streams, fused, record):
    """Run every phase once (one iteration without x load, y write-back and sync).

    Returns the counter matrix (9, P), the hop histogram, the engine cycles (phases +
    reconfigurations + barriers) and the recorded intervals (phase time offsets applied).
    """
    P = hw.n_pes
    cnt = np.zeros((len(COUNTERS), P), dtype=np.int64)
    hist = np.zeros(hw.rows + hw.cols, dtype=np.int64)
    t_done = np.zeros(wa.out_rows.shape[0], dtype=np.int64)
    pe_end = np.empty(P, dtype=np.int64)
    bw = hw.dram_bytes_per_cycle
    nch = _n_chunks(P)
    t = 0
    intervals = []
    hw_args = (hw.cols, hw.hop_latency_cycles, hw.setup_cycles, hw.event_cycles, hw.mac_lanes,
               hw.decode_cycles, hw.reduce_cycles)
    for q, ph in enumerate(phases):
        if not fused and q > 0:
            t += hw.reconfig_cycles
        inj, sb, wptr = _engine.prepare_phase(ph.sel, wa.bj, wa.col_ptr, wa.col_local,
                                              active_flat, k, tile, mp.src, hw.inject_cycles,
                                              n_cols, P, mp.pe, streams)
        cnt[_engine.C_DRAM] += sb
        ready = ps_completion(sb, bw)
        work_args = (wa.bj, wa.col_ptr, wa.col_local, wa.ev_macs, wa.ev_decodes, wa.ev_sram_bytes,
                     wa.final_macs, wa.final_sram_bytes, wa.out_rows, wa.int8, wa.bi, mp.red,
                     mp.src, inj, k, tile, ready) + hw_args + (cnt, hist, pe_end, t_done)
        if record:
            mk, _, iv = _engine.run_phase_recorded(ph.order, ph.pe_ptr, ph.tr_tile, ph.tr_ptr,
                                                   *work_args)
            intervals.append((iv[0], iv[1] + t, iv[2] + t, iv[3], iv[4]))
        else:
            # small phases run on one worker (a parallel launch costs more than they do)
            par = wptr[-1] >= PARALLEL_MIN_WORK
            nc = nch if par else 1
            bounds = _engine.balanced_chunks(wptr, nc)
            rbounds = _engine.balanced_chunks(ph.tr_ptr, nc)
            kernel = _engine.run_phase_parallel if par else _engine.run_phase
            mk, _ = kernel(ph.order, ph.pe_ptr, bounds, ph.tr_tile, ph.tr_ptr, rbounds,
                                      *work_args)
        t += int(mk)
        if not fused and q < len(phases) - 1:
            t += hw.barrier_cycles
    return cnt, hist, t, intervals


# --------------------------------------------------------------------------- public
@checked_call
def simulate(plan, hw: HardwareConfig | None = None, x=None, iterations: int = 1,
             persistent: bool = True, fused: bool = True, *, rho_x: float | None = None,
             seed: int = 0, mapping="anneal", batch: int | None = None, shape=None,
             tile: int | None = None, record: bool = True,
             tile_rows: int | None = None, record_limit: int | None = None) -> SimResult:
    """Simulate ``iterations`` applications of the plan's matrix on the NPU (akf-spec §7).

    Parameters
    ----------
    plan : FusionPlan or TileWork
        What runs. A TileWork (e.g. a baseline) may come with ``shape`` and ``tile``; when
        they are missing, ``tile`` = largest tile side and ``shape`` = the tiles' extent.
    hw : HardwareConfig, optional
        Default ``HardwareConfig()``.
    x : array (n,) or (n, k), optional
        Input; only its nonzero pattern matters. Default: a deterministic random input from
        ``seed`` with activation density ``rho_x`` (default 1: every entry nonzero).
    iterations : int
        Applications of the matrix (1 … 100,000).
    persistent : bool
        Persistent kernel: payloads stay in SRAM (only the overflow streams each iteration),
        vector slices stay on chip, iterations are separated by a global barrier. Otherwise
        every iteration reloads payloads, reads x, writes y and pays kernel exit/launch.
    fused : bool
        One phase with every kernel (fused) or one phase per kernel (unfused).
    rho_x : float, optional
        Activation density of the random x (only when ``x`` is None).
    seed : int
        Seed of the random x and of the annealing.
    mapping : {"anneal", "greedy"} or Mapping
        Placement method or a ready placement. Placements computed here are cached by content
        (:func:`cached_map_tiles`), so simulating the same plan again skips the mapping.
    batch : int, optional
        Columns of a random batch ``X`` (each nonzero ``X[j, b]`` is an event).
    shape, tile : optional
        Matrix shape and tile side for a TileWork input. A FusionPlan brings its own; other
        values are refused (they would send x's events to the wrong column blocks).
    record : bool
        Record busy intervals of the first iteration (for :meth:`SimResult.timeline`). With
        ``record=False`` the engine runs in parallel over PEs (same counters, bit for bit).
    record_limit : int, optional
        Record only when the run would keep at most this many busy intervals (estimated from
        the routed columns before running, :func:`recorded_intervals_estimate`); above it the run
        goes without, and ``meta["recorded"]`` says so. The app passes its interactive limit.
    tile_rows : int, optional
        Tile height when it differs from ``tile`` (the width); used by :func:`simulate_dense`.

    Returns
    -------
    SimResult
    """
    hw = as_hardware(hw)
    iterations = check_whole(iterations, "iterations", 1, MAX_ITERATIONS)
    seed = check_seed(seed)
    persistent = check_flag(persistent, "persistent")
    fused = check_flag(fused, "fused")
    record = check_flag(record, "record")
    if record_limit is not None:
        record_limit = check_whole(record_limit, "record_limit")
    work, shape, tile, tr, origin = _resolve_plan(plan, shape, tile, tile_rows)
    n_cols = shape[1]
    active, rho = _resolve_x(x, n_cols, rho_x, seed, batch)
    k = active.shape[1]
    active_flat = np.ascontiguousarray(active.reshape(-1))
    n = work.n_tiles
    check_memory(BYTES_PER_PE * hw.n_pes, f"Simulating a {hw.rows}×{hw.cols} PE grid",
                 "Use a smaller PE grid (rows × cols).")
    if record:
        n_intervals = recorded_intervals_estimate(work, active, tile)
        if record_limit is not None and n_intervals > record_limit:
            record = False
        else:
            check_memory(BYTES_PER_INTERVAL * n_intervals,
                         f"Recording every busy interval of {n:,} tiles for {k} input column(s)",
                         "Pass record=False: the same counters, cycles and energy, without the timeline.")
    n_brows = -(-shape[0] // tr)
    n_bcols = -(-n_cols // tile)
    if isinstance(mapping, Mapping):
        mp = mapping
        if mp.pe.shape != (n,) or mp.red.shape[0] < n_brows or mp.src.shape[0] < n_bcols:
            raise InputError("The given Mapping does not match the plan (tile / block counts differ).")
        if n and (mp.pe.max() >= hw.n_pes or mp.red.max() >= hw.n_pes):
            raise InputError("The given Mapping uses PEs outside this hardware's grid.")
    elif isinstance(mapping, str):
        method = choice(mapping, MAPPING_METHODS)
        if method is None:
            raise InputError(f"Unknown mapping method {mapping!r}; use one of {', '.join(MAPPING_METHODS)}.")
        mp = cached_map_tiles(work, hw, rho_x=rho, method=method, seed=seed,
                              n_brows=n_brows, n_bcols=n_bcols, shape=shape, tile=tile, tile_rows=tr)
    else:
        raise InputError(f"mapping must be 'anneal', 'greedy' or a Mapping, got {mapping!r}.")
    P = hw.n_pes
    wa = _WorkArrays(work, k)
    kid = _i64(work.kernel_id)
    used_kernels = np.flatnonzero(np.bincount(kid, minlength=len(work.kernel_names))) if n else kid
    kernel_list = sorted({work.kernel_names[i] for i in used_kernels})

    # phases
    if fused or n == 0:
        groups = [np.arange(n, dtype=np.int64)]
    else:
        groups = [np.flatnonzero(kid == work.kernel_names.index(nm)).astype(np.int64)
                  for nm in kernel_list]
    phases = [_Phase(wa, g, mp, P) for g in groups]

    # DRAM attribution
    fb = hw.flit_bytes
    col_src = mp.src[np.arange(n_cols) // tile]
    x_per_pe = np.bincount(col_src, weights=active.sum(axis=1).astype(np.float64) * fb,
                           minlength=P).astype(np.int64)
    # y out: every row of y, by its row block's reduction PE — rows no tile reaches are zeros the
    # host still receives (as the Dense baseline writes them), so a sparser plan gets no discount
    rows_b = np.minimum(tr, shape[0] - np.arange(n_brows) * tr)
    y_per_pe = np.bincount(mp.red[:n_brows], weights=(rows_b * k * fb).astype(np.float64),
                           minlength=P).astype(np.int64)
    full = _i64(work.payload_bytes)
    ovf = tile_overflow(full, mp.pe, hw.sram_bytes_per_pe)
    streams = ovf if persistent else full

    # The engine part of an iteration is the same in every iteration (persistent: the
    # overflow streams each time; non-persistent: the whole payload), so it runs once; the
    # iterations differ only in x load, y write-back and sync.
    cnt, hist, engine, first_iv = _run_engine(phases, wa, hw, mp, active_flat, k, tile, n_cols,
                                              streams, fused, record)
    bw = hw.dram_bytes_per_cycle
    x_bytes, y_bytes = int(x_per_pe.sum()), int(y_per_pe.sum())
    load_c, wb_c = -(-x_bytes // bw), -(-y_bytes // bw)
    it = np.arange(iterations, dtype=np.int64)
    if persistent:
        x_load = it == 0
        y_write = it == iterations - 1
        sync = np.where(it == iterations - 1, 0, hw.barrier_cycles).astype(np.int64)
    else:
        x_load = np.ones(iterations, bool)
        y_write = np.ones(iterations, bool)
        sync = np.full(iterations, hw.launch_cycles, dtype=np.int64)
    load = np.where(x_load, load_c, 0).astype(np.int64)
    wb = np.where(y_write, wb_c, 0).astype(np.int64)
    eng_dram = int(cnt[_engine.C_DRAM].sum())
    events_it = int(cnt[_engine.C_EVENTS].sum())
    macs_it = int(cnt[_engine.C_MACS].sum() + cnt[_engine.C_MACS8].sum())
    cyc = load + engine + wb + sync
    per_it = dict(iteration=it, cycles=cyc, load_cycles=load,
                  engine_cycles=np.full(iterations, engine, dtype=np.int64), writeback_cycles=wb,
                  sync_cycles=sync,
                  dram_bytes=eng_dram + np.where(x_load, x_bytes, 0) + np.where(y_write, y_bytes, 0),
                  events=np.full(iterations, events_it, dtype=np.int64),
                  macs=np.full(iterations, macs_it, dtype=np.int64))
    cnt *= iterations
    cnt[_engine.C_DRAM] += x_per_pe * int(x_load.sum()) + y_per_pe * int(y_write.sum())
    counters = {name: cnt[i] for i, name in enumerate(COUNTERS)}
    hop_hist = hist * iterations
    cycles = int(cyc.sum())
    intervals = {}
    if record and first_iv:
        cat = lambda j: np.concatenate([iv[j] for iv in first_iv])  # noqa: E731
        # the first iteration's phases start after its x load
        intervals = dict(pe=cat(0), start=cat(1) + load[0], end=cat(2) + load[0], tile=cat(3),
                         kind=cat(4))
    last_nz = np.flatnonzero(hop_hist)
    hop_hist = hop_hist[: (last_nz[-1] + 1 if last_nz.size else 1)]
    meta = dict(fused=bool(fused), persistent=bool(persistent), iterations=iterations, batch=int(k),
                rho_x=float(rho), tiles=int(n), tile=int(tile), shape=list(shape), origin=origin,
                kernels=kernel_list if n else [], phases=len(phases), seed=seed, recorded=bool(record),
                payload_bytes=int(full.sum()), overflow_bytes=int(ovf.sum()),
                preload_bytes=int(full.sum() - ovf.sum()) if persistent else 0)
    return SimResult(counters=counters, cycles=cycles, hw=hw, config_hash=hw.config_hash(),
                     mapping=mp.summary(), per_iteration_columns=per_it, hop_histogram=hop_hist,
                     meta=meta, intervals=intervals, kernel_names=tuple(work.kernel_names),
                     kernel_id=kid)


#: Largest number of (merged) tiles and of routed columns simulate_dense builds explicitly.
DENSE_MAX_TILES = 1 << 18
DENSE_MAX_ROUTES = 1 << 23


def simulate_dense(shape, tile: int = 32, hw: HardwareConfig | None = None, x=None, **kwargs) -> SimResult:
    """The Dense baseline (akf-spec §8): every ``T × T`` tile, empty ones included, is DENSE.

    Regularity: a dense tile depends only on its shape, so the TileWork is built from the
    matrix shape alone (:func:`~akfviz.npu.tilework_builders.dense_tilework`). When the
    explicit grid would exceed ``DENSE_MAX_TILES`` tiles or ``DENSE_MAX_ROUTES`` routed
    columns (``n_row_blocks × n_cols``), ``g_r × g_c`` neighbouring tiles are merged into one
    DENSE super-tile of ``(g_r·T) × (g_c·T)`` (the smallest factors that fit). MACs, SRAM
    bytes, payload and DRAM bytes are unchanged by merging; events, event receives, setups and
    partial-sum flits are then counted once per super-tile (so the merged Dense baseline is, if
    anything, slightly *favoured*). ``meta["dense_merge"] = (g_r, g_c)`` records it. Matrices
    with more than ``DENSE_MAX_ROUTES`` columns cannot be merged enough and raise InputError.

    Other keyword arguments are passed to :func:`simulate`.
    """
    m, ncols = _as_shape(shape)
    tile = check_whole(tile, "tile (the Dense tile side)", 1)
    if m < 1 or ncols < 1:
        raise InputError(f"simulate_dense needs a positive shape and tile, got {shape}, {tile}.")
    if ncols > DENSE_MAX_ROUTES:
        raise InputError(
            f"The Dense baseline of a matrix with {ncols} columns is beyond the simulator's limit "
            f"of {DENSE_MAX_ROUTES} columns (one event stream per column and row-block group)."
        )
    nbr, nbc = -(-m // tile), -(-ncols // tile)
    gr = max(1, -(-nbr * ncols // DENSE_MAX_ROUTES))
    nbr_m = -(-nbr // gr)
    gc = max(1, -(-nbr_m * nbc // DENSE_MAX_TILES))
    work = dense_tilework((m, ncols), gr * tile, gc * tile)
    res = simulate(work, hw, x, shape=(m, ncols), tile=gc * tile, tile_rows=gr * tile, **kwargs)
    res.meta["dense_merge"] = (int(gr), int(gc))
    return res
