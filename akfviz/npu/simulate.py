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

All iterations after the first are identical, so the engine runs at most twice per phase.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from . import _engine
from .costmodel import event_work_cycles, final_work_cycles
from .hardware import HardwareConfig
from .mapping import Mapping, map_tiles
from .results import COUNTERS, SimResult
from .tilework_builders import dense_tilework
from .work import TileWork

MAX_ITERATIONS = 100_000
MAX_BATCH = 1024


# --------------------------------------------------------------------------- inputs
def _resolve_plan(plan, shape, tile, tile_rows=None):
    if isinstance(plan, TileWork):
        work = plan
        src = "TileWork"
    elif hasattr(plan, "npu_work"):
        work = plan.npu_work()
        if not isinstance(work, TileWork):
            raise InputError("plan.npu_work() did not return a TileWork.")
        pa = getattr(plan, "pa", None)
        if tile is None and pa is not None:
            tile = int(pa.tile)
        if shape is None:
            shape = getattr(plan, "shape", None)
            if shape is None and pa is not None:
                shape = pa.A.shape
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
        tile = int(max(work.w.max(), work.h.max())) if n else 1
    tile = int(tile)
    tr = tile if tile_rows is None else int(tile_rows)
    if tile < 1 or tr < 1:
        raise InputError(f"The tile side must be >= 1, got {tile}.")
    if shape is None:
        if n == 0:
            raise InputError("An empty TileWork needs an explicit shape=(rows, cols).")
        shape = (int((work.bi * tr + work.h).max()), int((work.bj * tile + work.w).max()))
    shape = (int(shape[0]), int(shape[1]))
    if n and ((work.bj * tile + work.w).max() > shape[1] or (work.bi * tr + work.h).max() > shape[0]):
        raise InputError(f"The tiles reach beyond the matrix shape {shape} with tile side {tile}.")
    return work, shape, tile, tr, src


def _resolve_x(x, n_cols, rho_x, seed, batch):
    if x is None:
        rho = 1.0 if rho_x is None else rho_x
        try:
            rho = float(rho)
        except (TypeError, ValueError):
            raise InputError(f"rho_x must be a number in [0, 1], got {rho_x!r}.") from None
        if not 0.0 <= rho <= 1.0:
            raise InputError(f"rho_x (activation density) must be in [0, 1], got {rho_x!r}.")
        k = 1 if batch is None else batch
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_BATCH:
            raise InputError(f"batch must be a whole number between 1 and {MAX_BATCH}, got {batch!r}.")
        rng = np.random.default_rng(seed)
        if rho >= 1.0:
            active = np.ones((n_cols, int(k)), dtype=bool)
        else:
            active = rng.random((n_cols, int(k))) < rho
        return active, rho
    if rho_x is not None:
        raise InputError("Give either x or rho_x, not both (rho_x only shapes the random x).")
    X = np.asarray(x)
    if X.dtype == object or not np.issubdtype(X.dtype, np.number):
        raise InputError("x must be a numeric vector or matrix.")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != n_cols:
        raise InputError(f"x must have {n_cols} rows (the matrix's columns), got shape {np.shape(x)}.")
    if batch is not None and X.shape[1] != batch:
        raise InputError(f"batch={batch} but x has {X.shape[1]} columns.")
    if not 1 <= X.shape[1] <= MAX_BATCH:
        raise InputError(f"x may have 1 to {MAX_BATCH} columns, got {X.shape[1]}.")
    if not np.all(np.isfinite(X)):
        raise InputError("x contains NaN or infinite values.")
    active = X != 0
    return active, float(active.mean()) if active.size else 0.0


def _check_int(name, v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise InputError(f"{name} must be a whole number between {lo} and {hi}, got {v!r}.")
    return int(v)


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
    by the excess, all later tiles entirely.
    """
    n = payload.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(pe, kind="stable")
    p = payload[order].astype(np.int64)
    grp = pe[order]
    cum = np.cumsum(p)
    start = np.r_[True, grp[1:] != grp[:-1]]
    base = np.maximum.accumulate(np.where(start, cum - p, 0))
    cum_in = cum - base
    ovf = np.clip(cum_in - sram, 0, p)
    out = np.empty(n, np.int64)
    out[order] = ovf
    return out


class _Phase:
    """The arrays of one phase (a subset of tiles), prepared once."""

    def __init__(self, work: TileWork, idx: np.ndarray, mp: Mapping, hw, tile: int, n_cols: int):
        # the engine wants the tiles of a PE contiguous (sequential memory access)
        idx = idx[np.argsort(mp.pe[idx], kind="stable")]
        self.idx = idx
        ptr = work.col_ptr
        lens = ptr[idx + 1] - ptr[idx]
        self.col_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        ridx = (np.repeat(ptr[idx] - self.col_ptr[:-1], lens)
                + np.arange(self.col_ptr[-1], dtype=np.int64))
        self.ridx = ridx
        self.col_local = work.col_local[ridx]
        self.w_ev = event_work_cycles(work, hw)[ridx]
        self.ev_macs = work.ev_macs[ridx]
        self.ev_decodes = work.ev_decodes[ridx]
        self.ev_sram = work.ev_sram_bytes[ridx]
        self.t_pe = mp.pe[idx]
        self.t_red = mp.red[work.bi[idx]]
        self.t_src = mp.src[work.bj[idx]]
        self.t_coloff = work.bj[idx] * tile
        self.final_cyc = final_work_cycles(work, hw)[idx]
        self.final_macs = work.final_macs[idx]
        self.final_sram = work.final_sram_bytes[idx]
        self.out_rows = work.out_rows[idx]
        self.int8 = work.int8[idx].astype(np.bool_)
        routed = np.zeros(n_cols, dtype=np.bool_)
        routed[np.repeat(self.t_coloff, lens) + self.col_local] = True
        self.routed = routed
        self.lens = lens


def _run_iteration(phases, work, hw, mp, active_flat, k, tile, streams, fused, record, x_from_dram,
                   x_dram_per_pe, y_write, y_dram_per_pe, sync_cycles):
    P = hw.n_pes
    c = {name: np.zeros(P, dtype=np.int64) for name in COUNTERS}
    hops = np.zeros(hw.rows + hw.cols, dtype=np.int64)
    bw = hw.dram_bytes_per_cycle
    load = 0
    if x_from_dram:
        xb = int(x_dram_per_pe.sum())
        load = -(-xb // bw)
        c["dram_bytes"] += x_dram_per_pe
    t = load
    intervals = []
    for q, ph in enumerate(phases):
        if not fused and q > 0:
            t += hw.reconfig_cycles
        sb = np.bincount(ph.t_pe, weights=streams[ph.idx], minlength=P).astype(np.int64)
        c["dram_bytes"] += sb
        ready = ps_completion(sb, bw)
        inj = _engine.injection_times(active_flat, k, ph.routed, tile, mp.src, hw.inject_cycles, P)
        pe_end = np.zeros(P, dtype=np.int64)
        t_done = np.zeros(ph.idx.size, dtype=np.int64)
        mk, nd, ivp, ivs, ive, ivt, ivk = _engine.run_phase(
            ph.t_pe, ph.t_red, ph.t_src, ph.t_coloff, ph.col_ptr, ph.col_local, ph.w_ev,
            ph.ev_macs, ph.ev_decodes, ph.ev_sram, ph.final_cyc, ph.final_macs, ph.final_sram,
            ph.out_rows, ph.int8, inj, k, ready, hw.cols, hw.hop_latency_cycles, hw.setup_cycles,
            hw.reduce_cycles, record, c["busy"], c["events"], c["macs"], c["macs_int8"],
            c["decodes"], c["sram_bytes"], c["flit_hops"], c["reduce_adds"], pe_end, t_done)
        if record:
            intervals.append((ivp, ivs + t, ive + t,
                              np.where(ivt >= 0, ph.idx[np.maximum(ivt, 0)], -1) if ivt.size else ivt,
                              ivk))
        # hop histogram: events per tile at their source distance, partial sums at theirs
        delivered = np.zeros(ph.idx.size, dtype=np.int64)
        if ph.col_ptr[-1]:
            per_route = (inj.reshape(-1, k) >= 0).sum(axis=1)[np.repeat(ph.t_coloff, ph.lens)
                                                              + ph.col_local]
            seg = np.concatenate([[0], np.cumsum(per_route)])
            delivered = seg[ph.col_ptr[1:]] - seg[ph.col_ptr[:-1]]
        cols = hw.cols
        dsrc = np.abs(ph.t_pe // cols - ph.t_src // cols) + np.abs(ph.t_pe % cols - ph.t_src % cols)
        dred = np.abs(ph.t_pe // cols - ph.t_red // cols) + np.abs(ph.t_pe % cols - ph.t_red % cols)
        nh = hops.size
        hops += np.bincount(dsrc, weights=delivered, minlength=nh)[:nh].astype(np.int64)
        hops += np.bincount(dred, weights=ph.out_rows, minlength=nh)[:nh].astype(np.int64)
        t += int(mk)
        if not fused and q < len(phases) - 1:
            t += hw.barrier_cycles
    engine = t - load
    wb = 0
    if y_write:
        c["dram_bytes"] += y_dram_per_pe
        wb = -(-int(y_dram_per_pe.sum()) // bw)
    total = load + engine + wb + sync_cycles
    row = dict(cycles=total, load_cycles=load, engine_cycles=engine, writeback_cycles=wb,
               sync_cycles=sync_cycles, dram_bytes=int(c["dram_bytes"].sum()),
               events=int(c["events"].sum()), macs=int(c["macs"].sum() + c["macs_int8"].sum()))
    return c, hops, row, intervals


# --------------------------------------------------------------------------- public
def simulate(plan, hw: HardwareConfig | None = None, x=None, iterations: int = 1,
             persistent: bool = True, fused: bool = True, *, rho_x: float | None = None,
             seed: int = 0, mapping="anneal", batch: int | None = None, shape=None,
             tile: int | None = None, record: bool = True,
             tile_rows: int | None = None) -> SimResult:
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
        Placement method or a ready placement.
    batch : int, optional
        Columns of a random batch ``X`` (each nonzero ``X[j, b]`` is an event).
    shape, tile : optional
        Matrix shape and tile side for a TileWork input.
    record : bool
        Record busy intervals of the first iteration (for :meth:`SimResult.timeline`).
    tile_rows : int, optional
        Tile height when it differs from ``tile`` (the width); used by :func:`simulate_dense`.

    Returns
    -------
    SimResult
    """
    if hw is None:
        hw = HardwareConfig()
    if not isinstance(hw, HardwareConfig):
        raise InputError(f"hw must be a HardwareConfig, got {type(hw).__name__}.")
    iterations = _check_int("iterations", iterations, 1, MAX_ITERATIONS)
    seed = _check_int("seed", seed, 0, 2**63 - 1)
    work, shape, tile, tr, origin = _resolve_plan(plan, shape, tile, tile_rows)
    n_cols = shape[1]
    active, rho = _resolve_x(x, n_cols, rho_x, seed, batch)
    k = active.shape[1]
    active_flat = np.ascontiguousarray(active.reshape(-1))
    n = work.n_tiles
    n_brows = -(-shape[0] // tr)
    n_bcols = -(-n_cols // tile)
    if isinstance(mapping, Mapping):
        mp = mapping
        if mp.pe.shape != (n,) or mp.red.shape[0] < n_brows or mp.src.shape[0] < n_bcols:
            raise InputError("The given Mapping does not match the plan (tile / block counts differ).")
        if n and (mp.pe.max() >= hw.n_pes or mp.red.max() >= hw.n_pes):
            raise InputError("The given Mapping uses PEs outside this hardware's grid.")
    elif isinstance(mapping, str):
        mp = map_tiles(work, hw, rho_x=max(rho, 1e-9), method=mapping, seed=seed,
                       n_brows=n_brows, n_bcols=n_bcols)
    else:
        raise InputError(f"mapping must be 'anneal', 'greedy' or a Mapping, got {mapping!r}.")

    # phases
    if fused or n == 0:
        groups = [np.arange(n, dtype=np.int64)]
    else:
        names = [work.kernel_names[i] for i in np.unique(work.kernel_id)]
        groups = [np.flatnonzero(work.kernel_id == work.kernel_names.index(nm)).astype(np.int64)
                  for nm in sorted(names)]
    phases = [_Phase(work, g, mp, hw, tile, n_cols) for g in groups]

    # DRAM attribution
    P = hw.n_pes
    fb = hw.flit_bytes
    x_per_pe = np.zeros(P, dtype=np.int64)
    col_src = mp.src[np.arange(n_cols) // tile]
    np.add.at(x_per_pe, col_src, active.sum(axis=1).astype(np.int64) * fb)
    y_per_pe = np.zeros(P, dtype=np.int64)
    if n:
        has = np.zeros(n_brows, bool)
        has[work.bi] = True
        rows_b = np.minimum(tr, shape[0] - np.arange(n_brows) * tr)
        np.add.at(y_per_pe, mp.red[:n_brows][has], rows_b[has] * k * fb)
    ovf = tile_overflow(work.payload_bytes, mp.pe, hw.sram_bytes_per_pe)
    full = work.payload_bytes.astype(np.int64)

    def run(first: bool, last: bool, rec: bool):
        streams = ovf if persistent else full
        x_dram = first or not persistent
        y_write = (not persistent) or last
        if persistent:
            sync = 0 if last else hw.barrier_cycles
        else:
            sync = hw.launch_cycles
        return _run_iteration(phases, work, hw, mp, active_flat, k, tile, streams, fused, rec,
                              x_dram, x_per_pe, y_write, y_per_pe, sync)

    kinds = []  # (kind result, count, iteration numbers)
    if iterations == 1:
        kinds.append((run(True, True, record), [0]))
    elif not persistent:
        kinds.append((run(True, False, record), list(range(iterations))))
    else:
        kinds.append((run(True, False, record), [0]))
        if iterations > 2:
            kinds.append((run(False, False, False), list(range(1, iterations - 1))))
        kinds.append((run(False, True, False), [iterations - 1]))

    counters = {name: np.zeros(P, dtype=np.int64) for name in COUNTERS}
    hop_hist = np.zeros(hw.rows + hw.cols, dtype=np.int64)
    rows = []
    for (c, hops, row, _), its in kinds:
        m = len(its)
        for name in COUNTERS:
            counters[name] += c[name] * m
        hop_hist += hops * m
        for i in its:
            rows.append(dict(iteration=i, **row))
    per_it = pd.DataFrame(rows).sort_values("iteration").reset_index(drop=True)
    cycles = int(per_it["cycles"].sum())
    intervals = {}
    first_iv = kinds[0][0][3]
    if record and first_iv:
        cat = lambda j: np.concatenate([iv[j] for iv in first_iv])  # noqa: E731
        intervals = dict(pe=cat(0), start=cat(1), end=cat(2), tile=cat(3), kind=cat(4))
    last_nz = np.flatnonzero(hop_hist)
    hop_hist = hop_hist[: (last_nz[-1] + 1 if last_nz.size else 1)]
    meta = dict(fused=bool(fused), persistent=bool(persistent), iterations=iterations, batch=int(k),
                rho_x=float(rho), tiles=int(n), tile=int(tile), shape=list(shape), origin=origin,
                kernels=sorted({work.kernel_names[i] for i in np.unique(work.kernel_id)}) if n else [],
                phases=len(phases), seed=seed, payload_bytes=int(full.sum()),
                overflow_bytes=int(ovf.sum()), preload_bytes=int(full.sum() - ovf.sum()) if persistent else 0)
    tile_names = tuple(np.asarray(work.kernel_names, dtype=object)[work.kernel_id].tolist()) if n else ()
    return SimResult(counters=counters, cycles=cycles, hw=hw, config_hash=hw.config_hash(),
                     mapping=mp.summary(), per_iteration=per_it, hop_histogram=hop_hist, meta=meta,
                     intervals=intervals, tile_kernels=tile_names)


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
    try:
        m, ncols = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise InputError(f"shape must be (rows, cols), got {shape!r}.") from None
    tile = int(tile)
    if m < 1 or ncols < 1 or tile < 1:
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
