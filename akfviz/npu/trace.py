"""A readable, step-by-step version of the event-driven NPU model for tiny cases (akf-spec §7).

This is the *teaching* twin of :mod:`akfviz.npu._engine`: plain Python, one phase, one input
vector, and every action recorded as a :class:`Step` (what happened, where, when, and the
formula that gave its time). The Learn page steps through it; a test checks that its makespan
and counters equal the numba engine on the same tiny case.

The model, exactly as the engine implements it:

1. **Injection.** The nonzero ``x_j`` whose column is routed by some tile are events. The
   source PE of column block ``j // T`` injects its events one every ``inject_cycles`` cycles
   in column order: ``inject_j = (number of earlier events of that source) · inject_cycles``.
2. **Delivery.** The event reaches each tile of its column block that routes column ``j``
   at ``arrival = inject_j + hop_latency · (|Δrow| + |Δcol|)`` (Manhattan distance between the
   source PE and the tile's PE, times the hop latency); ``distance`` flit-hops are counted.
3. **Processing.** A PE first sets up all its tiles (``setup_cycles`` each, from ``ready``: 0,
   or — when its tiles' payload overflows its SRAM — the end of its DRAM stream),
   runs the final phase of tiles that get no event, then serves deliveries in arrival order:
   ``start = max(t, arrival)``, ``t = start + work``, with
   ``work = event_cycles + ceil(ev_macs / mac_lanes) + ev_decodes · decode_cycles`` (plus the
   tile's final phase ``ceil(final_macs / mac_lanes)`` after its last event). Each event adds
   ``A_tile[:, j] · x_j`` to the tile's partial sums.
4. **Reduction.** A finished tile sends ``out_rows`` partial-sum flits to its row block's
   reduction PE, arriving ``hop_latency · distance`` after the tile finished. The reduction PE,
   after its own tile work, serves whole trains in arrival order:
   ``start = max(t, arrival)``, ``t = start + out_rows · reduce_cycles``; it adds them into ``y``.
5. **Makespan** = the latest time any PE finishes. ``akfviz.simulate`` adds the x load before
   and the y write-back after it (:func:`transfer_cycles`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arguments import check_real, check_seed, check_whole, shown
from ..errors import InputError, checked_call
from .hardware import HardwareConfig, as_hardware
from .work import TileWork

#: Largest matrix (entries) and PE grid (PEs) :func:`trace_spmv` accepts.
MAX_ENTRIES = 4096
MAX_PES = 4096
#: Matrix side and PE grid side of :func:`tiny_case`.
TINY_N = (4, 32)
TINY_GRID_MAX = 4

#: Step kinds, in the order a PE meets them.
KINDS = ("inject", "setup", "final", "event", "send", "reduce")


@dataclass(frozen=True)
class Step:
    """One action of the model.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    pe : int
        PE where it happens (for "inject": the source PE).
    start, end : int
        Cycles; ``end - start`` is the busy time it costs (0 for inject and send).
    tile : int
        Tile (row of the TileWork) or -1.
    column : int
        Global input column ``j`` (events, injections) or -1.
    text : str
        What happened, in words.
    formula : str
        The formula with the numbers filled in.
    arrival : int
        Cycle the event (or the partial-sum train) arrived at ``pe``; -1 for other steps.
    """

    kind: str
    pe: int
    start: int
    end: int
    tile: int = -1
    column: int = -1
    text: str = ""
    formula: str = ""
    arrival: int = -1


@dataclass
class Trace:
    """Result of :func:`trace_spmv`: the steps in time order, counters per PE, the output.

    Attributes
    ----------
    steps : list of Step
        Every action, sorted by start cycle (then by :data:`KINDS` order, PE, tile, column).
    makespan : int
        The latest cycle any PE finishes (equals the engine's ``engine_cycles``).
    counters : dict
        Counter name -> int64 array (P,): ``busy, events, macs, macs_int8, decodes, sram_bytes,
        flit_hops, reduce_adds``; as in the engine, ``macs`` counts the float MACs and
        ``macs_int8`` those of int8 (QUANT8) tiles.
    y : ndarray (n,)
        The reduced output ``A x``.
    partial : list of ndarray
        Per tile its partial sums (h,) after all its events.
    tile_pe, red_pe, src_pe : int64 arrays
        The placement the trace ran with.
    grid : (int, int)
        PE grid (rows, cols).
    tile : int
        Tile side T.
    meta : dict
        ``contrib`` ((tile, column) -> the partial sums that event added), ``row0``, ``col0``
        (first row / column of each tile) and ``ready`` (cycle each PE may start).
    """

    steps: list
    makespan: int
    counters: dict
    y: np.ndarray
    partial: list
    tile_pe: np.ndarray
    red_pe: np.ndarray
    src_pe: np.ndarray
    grid: tuple
    tile: int
    meta: dict = field(default_factory=dict)

    def state_at(self, i) -> dict:
        """Snapshot after the first ``i`` steps.

        Parameters
        ----------
        i : int
            Steps done: a whole number from 0 (nothing yet) to ``len(steps)`` (all); Python
            or numpy integers.

        Returns
        -------
        dict
            ``time`` — the cycle reached: 0 before any step, the start of step ``i`` (the
            last one done, ``steps[i - 1]``) while steps remain, the makespan once all are
            done; ``pe_clock`` (P,) — the end of the last step done on each PE; ``queues`` —
            per PE the events waiting there ``(tile, column, arrival)``: injected by one of
            the steps done, arrived by ``time``, and not yet served by a step done (so
            nothing is queued at ``i = 0``, and no step still to come shows its effect);
            ``partial`` — per tile its partial sums so far; ``y`` — the output reduced so
            far; ``done`` — the steps already done.

        Raises
        ------
        InputError
            ``i`` is not a whole number in ``0 … len(steps)`` (a negative or too large step is
            refused, not clamped).
        """
        i = _whole(i, "state_at: i (the number of steps done)", 0, len(self.steps))
        P = int(self.grid[0] * self.grid[1])
        clock = np.zeros(P, np.int64)
        done = self.steps[:i]
        partial = [np.zeros_like(p) for p in self.partial]
        y = np.zeros_like(self.y)
        # the state after steps 1 … i, at the cycle of step i: not the next step's cycle, which
        # showed events whose injection was still to come as queued (at step 0, x[0] at its source)
        if i == 0:
            now = 0
        elif i < len(self.steps):
            now = self.steps[i - 1].start
        else:
            now = self.makespan
        for s in done:
            if s.kind != "inject":
                clock[s.pe] = max(clock[s.pe], s.end)
            if s.kind == "event":
                partial[s.tile] += self.meta["contrib"][(s.tile, s.column)]
            elif s.kind == "reduce":
                r0 = self.meta["row0"][s.tile]
                y[r0:r0 + partial[s.tile].size] += self.partial[s.tile]
        served = {(s.tile, s.column) for s in done if s.kind == "event"}
        injected = {s.column for s in done if s.kind == "inject"}
        queues = [[] for _ in range(P)]
        for s in self.steps:
            if s.kind == "event" and s.column in injected and (s.tile, s.column) not in served \
                    and s.arrival <= now:
                queues[s.pe].append((s.tile, s.column, s.arrival))
        return {"time": now, "pe_clock": clock, "queues": queues, "partial": partial, "y": y, "done": done}


# --------------------------------------------------------------------------- argument checks
def _whole(value, name: str, lo: int, hi: int) -> int:
    """``value`` as an int in ``lo … hi``; integral floats (``8.0``) are accepted, ``8.7`` is not."""
    return check_whole(value, name, lo, hi)


def _index_array(values, name: str, what: str, n_lo: int, n_hi: int, lo: int, hi: int,
                 range_text: str) -> np.ndarray:
    """``values`` as a 1-D int64 array of ``n_lo … n_hi`` entries, each in ``lo … hi``.

    ``what`` says what one entry is, ``range_text`` what the range means (both for messages).
    Integer arrays and float arrays of whole numbers are accepted.
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        arr = np.asarray(None)
    kind = arr.dtype.kind
    if arr.ndim != 1 or kind not in "iuf" or (kind == "f" and not np.all(np.isfinite(arr))) \
            or (kind == "f" and not np.all(arr == np.round(arr))):
        # shortened: a list of 4,000 huge numbers was echoed whole (a 412 KB message)
        got = f"shape {arr.shape} of {arr.dtype}" if arr.dtype != object else shown(values)
        raise InputError(f"{name} must be a 1-D array of whole numbers ({what}), got {got}.")
    if not n_lo <= arr.size <= n_hi:
        count = f"{n_hi}" if n_lo == n_hi else f"between {n_lo} and {n_hi}"
        raise InputError(f"{name} must have {count} entries ({what}), got {arr.size}.")
    bad = np.flatnonzero((arr < lo) | (arr > hi))
    if bad.size:
        k = int(bad[0])
        v = arr[k].item()
        raise InputError(f"{name} must hold values between {lo} and {hi} ({range_text}), "
                         f"got {name}[{k}] = {int(v) if kind == 'f' else v}.")
    return arr.astype(np.int64)


def _fits(work: TileWork, T: int, rows: int, cols: int) -> int:
    """First tile whose size or place does not fit tile side ``T`` on a rows × cols matrix, or -1.

    A tile of block row ``bi`` starts at row ``bi·T`` and has ``min(T, rows − bi·T)`` rows
    (the last block row may be shorter), likewise for columns.
    """
    r0, c0 = work.bi * T, work.bj * T
    ok = ((r0 < rows) & (c0 < cols) & (work.h == np.minimum(T, rows - r0))
          & (work.w == np.minimum(T, cols - c0)))
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if bad.size else -1


def _outside(work: TileWork, T: int, dense: np.ndarray):
    """First nonzero ``(i, j)`` of ``dense`` that lies in no tile of ``work`` (tile side T), or None."""
    covered = np.zeros(dense.shape, bool)
    for u in range(work.n_tiles):
        r0, c0 = int(work.bi[u]) * T, int(work.bj[u]) * T
        covered[r0:r0 + int(work.h[u]), c0:c0 + int(work.w[u])] = True
    i, j = np.nonzero((dense != 0) & ~covered)
    return (int(i[0]), int(j[0])) if i.size else None


def _resolve_tile(work: TileWork, dense: np.ndarray, tile) -> int:
    """The tile side T of ``work`` on the matrix ``dense``: ``tile`` checked, or told by the tiles
    (:meth:`TileWork.tile_side`, as :func:`akfviz.simulate` does); either way every tile must
    have its size and place on ``dense`` and hold all of its nonzeros."""
    from .simulate import TILE_SIDE_UNTOLD

    rows, cols = dense.shape
    if tile is None:
        T = work.tile_side()
        if T is None and work.n_tiles:
            raise InputError(TILE_SIDE_UNTOLD)
        T = 1 if T is None else T
        given = f"The work's tile side {T} (its widest tile)"
    else:
        T = _whole(tile, "tile (the tile side T)", 1, MAX_ENTRIES)
        given = f"tile={T}"
    u = _fits(work, T, rows, cols)
    if u >= 0:
        bi, bj = int(work.bi[u]), int(work.bj[u])
        if bi * T >= rows or bj * T >= cols:
            where = "lies outside the matrix"
        else:
            where = f"is {min(T, rows - bi * T)}×{min(T, cols - bj * T)} with that tile side"
        raise InputError(
            f"{given} does not match the work: its tile {u} (block row {bi}, block column {bj}) is "
            f"{int(work.h[u])}×{int(work.w[u])}, but that block of the {rows}×{cols} matrix {where}. "
            "Pass the matrix and the tile side the work was built with (for a FusionPlan: plan.pa.tile).")
    at = _outside(work, T, dense)
    if at is not None:
        raise InputError(
            f"A has a nonzero entry at ({at[0]}, {at[1]}) that lies in none of the work's tiles (tile side {T}): "
            "the work does not describe this matrix. Pass the matrix the work was built from (for a "
            "FusionPlan: plan.approx_matrix()) and its tile side.")
    return T


def _check_work(work) -> TileWork:
    if not isinstance(work, TileWork):
        raise InputError(f"work must be a TileWork (e.g. plan.npu_work()), got {type(work).__name__}.")
    try:
        work.validate()
    except ValueError as exc:
        raise InputError(f"The TileWork is inconsistent: {exc}") from None
    if work.n_tiles:
        w_of_route = np.repeat(work.w, np.diff(work.col_ptr))
        if np.any(work.col_local < 0) or np.any(work.col_local >= w_of_route) or np.any(work.h < 1) \
                or np.any(work.w < 1) or np.any(work.bi < 0) or np.any(work.bj < 0):
            raise InputError("The TileWork is inconsistent: a tile has a negative block index, an empty "
                             "size, or a routed column outside its width.")
    return work


def _check_matrix(A) -> np.ndarray:
    from ..workloads.validate import as_csr

    M = as_csr(A, name="matrix A")
    if M.shape[0] * M.shape[1] > MAX_ENTRIES:
        raise InputError(f"The step-by-step trace is for tiny teaching cases (at most {MAX_ENTRIES} matrix "
                         f"entries); A is {M.shape[0]}×{M.shape[1]}.")
    return M.toarray()


def _check_x(x, n_cols: int) -> np.ndarray:
    from ..workloads.validate import dense_operand

    if x is None:   # dense_operand names a missing entry of a vector, which read "x[] is a missing value"
        raise InputError(f"x must be a vector of {n_cols} entries (one per column of A), got None.")
    X = dense_operand(x, "x")
    if not (X.ndim == 1 or (X.ndim == 2 and X.shape[1] == 1)) or X.shape[0] != n_cols:
        raise InputError(f"x must be a vector of {n_cols} entries (one per column of A), got shape {X.shape}.")
    X = X.astype(np.float64).ravel()
    if not np.all(np.isfinite(X)):
        raise InputError("x contains NaN or infinite values.")
    return X


# --------------------------------------------------------------------------- the trace
def _manhattan(p: int, q: int, cols: int) -> int:
    return abs(p // cols - q // cols) + abs(p % cols - q % cols)


def _count(k: int, word: str) -> str:
    """``k`` and ``word``, plural unless k is 1: "1 hop", "3 hops", "1 MAC", "0 MACs"."""
    return f"{int(k)} {word}{'' if int(k) == 1 else 's'}"


def _ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


@checked_call
def trace_spmv(A, x, work: TileWork, hw: HardwareConfig, tile_pe, red_pe, src_pe, ready=None,
               tile: int | None = None) -> Trace:
    """Run the event model of akf-spec §7 step by step on a tiny case.

    Parameters
    ----------
    A : array-like or scipy.sparse (n, m)
        The matrix whose tiles ``work`` describes (its values give the partial sums; pass the
        plan's approximation ``Â`` for lossy kernels). Finite real numbers, at most
        :data:`MAX_ENTRIES` entries; every nonzero must lie in one of the work's tiles.
    x : array (m,)
        Input vector of finite numbers; only nonzero entries are events.
    work : TileWork
        Per-tile work (routed columns, per-event counts, out_rows, final phase).
    hw : HardwareConfig
        Uses ``rows, cols, hop_latency_cycles, setup_cycles, event_cycles, mac_lanes,
        decode_cycles, reduce_cycles, inject_cycles``; at most :data:`MAX_PES` PEs.
    tile_pe : int array (n_tiles,)
        PE (row-major index ``r * cols + c``, in ``0 … rows·cols − 1``) of each tile.
    red_pe : int array
        Reduction PE of each row block: from ``max(bi) + 1`` (the row blocks the tiles use) to
        ``ceil(n / T)`` entries.
    src_pe : int array
        Event-source PE of each column block: from ``max(bj) + 1`` to ``ceil(m / T)`` entries.
    ready : int array (P,), optional
        Cycle each PE may start (after its DRAM stream); default 0.
    tile : int, optional
        Tile side T. Default: told by the tiles (:meth:`TileWork.tile_side`, the widest tile);
        a single tile away from block (0, 0) cannot tell it, and an InputError asks for it.

    Returns
    -------
    Trace

    Raises
    ------
    InputError
        A bad argument: the message names it, what is accepted and what was given (a tile
        side that does not match the tiles, PE indices outside the grid, arrays whose
        lengths do not match the work, x of the wrong length or with NaN / inf, ...).
    """
    if not isinstance(hw, HardwareConfig):
        raise InputError(f"hw must be a HardwareConfig (e.g. akfviz.HardwareConfig(rows=2, cols=2)), "
                         f"got {type(hw).__name__}.")
    R, C = int(hw.rows), int(hw.cols)
    P = R * C
    if P > MAX_PES:
        raise InputError(f"The step-by-step trace is for tiny PE grids (at most {MAX_PES} PEs); "
                         f"hw has {R}×{C} = {P}.")
    work = _check_work(work)
    dense = _check_matrix(A)
    x = _check_x(x, dense.shape[1])
    n = work.n_tiles
    tsize = _resolve_tile(work, dense, tile)
    n_brows, n_bcols = _ceil_div(dense.shape[0], tsize), _ceil_div(dense.shape[1], tsize)
    grid_text = f"PE indices of the {R}×{C} grid"
    tile_pe = _index_array(tile_pe, "tile_pe", "the PE of each of the work's tiles", n, n, 0, P - 1, grid_text)
    red_pe = _index_array(red_pe, "red_pe", f"the reduction PE of each row block of tile side {tsize}",
                          int(work.bi.max()) + 1 if n else 0, n_brows, 0, P - 1, grid_text)
    src_pe = _index_array(src_pe, "src_pe", f"the event-source PE of each column block of tile side {tsize}",
                          int(work.bj.max()) + 1 if n else 0, n_bcols, 0, P - 1, grid_text)
    ready = np.zeros(P, np.int64) if ready is None else \
        _index_array(ready, "ready", "the cycle each PE may start", P, P, 0, 2**53, "cycles")
    hop = int(hw.hop_latency_cycles)
    steps: list[Step] = []
    cnt = {k: np.zeros(P, np.int64) for k in ("busy", "events", "macs", "macs_int8", "decodes",
                                              "sram_bytes", "flit_hops", "reduce_adds")}
    mac_key = ["macs_int8" if q else "macs" for q in np.asarray(work.int8, bool)]   # per tile, as the engine
    # tile geometry: column offset bj*T and row offset bi*T
    col0 = work.bj * tsize
    row0 = work.bi * tsize
    # 1. injection ----------------------------------------------------------------------
    routed = np.zeros(dense.shape[1], bool)
    for u in range(n):
        routed[col0[u] + work.col_local[work.col_ptr[u]:work.col_ptr[u + 1]]] = True
    inj = np.full(dense.shape[1], -1, np.int64)
    sent = np.zeros(P, np.int64)
    for j in range(dense.shape[1]):
        if routed[j] and x[j] != 0:
            s = int(src_pe[j // tsize])
            inj[j] = sent[s] * hw.inject_cycles
            sent[s] += 1
            steps.append(Step("inject", s, int(inj[j]), int(inj[j]), -1, j,
                              f"source PE {s} injects the event x[{j}] = {x[j]:.3g}",
                              f"inject = {int(sent[s] - 1)} earlier events × inject_cycles {hw.inject_cycles} = {int(inj[j])}"))
    # 2.-3. delivery and processing per PE --------------------------------------------------
    contrib = {}
    partial = [np.zeros(int(work.h[u])) for u in range(n)]
    t_done = np.zeros(n, np.int64)
    pe_end = np.zeros(P, np.int64)
    for p in range(P):
        mine = [u for u in range(n) if tile_pe[u] == p]
        if not mine:
            continue
        deliveries = []          # (arrival, order, tile, route, column, distance)
        for u in mine:
            d = _manhattan(int(src_pe[work.bj[u]]), p, C)
            for r in range(work.col_ptr[u], work.col_ptr[u + 1]):
                j = int(col0[u] + work.col_local[r])
                if inj[j] >= 0:
                    deliveries.append((int(inj[j]) + hop * d, len(deliveries), u, r, j, d))
        remaining = {u: sum(1 for dv in deliveries if dv[2] == u) for u in mine}
        t = int(ready[p])
        su = int(hw.setup_cycles) * len(mine)
        after = f" after its DRAM stream (ready at cycle {t})" if t else ""
        steps.append(Step("setup", p, t, t + su, -1, -1, f"PE {p} sets up its {_count(len(mine), 'tile')}{after}",
                          f"setup = {_count(len(mine), 'tile')} × setup_cycles {hw.setup_cycles} = {su}"))
        t += su
        cnt["busy"][p] += su
        for u in mine:
            if remaining[u] == 0:
                f = _ceil_div(work.final_macs[u], hw.mac_lanes)
                steps.append(Step("final", p, t, t + f, u, -1, f"tile {u} gets no event; final phase only",
                                  f"final = ceil({int(work.final_macs[u])} / {hw.mac_lanes}) = {f}"))
                t += f
                cnt["busy"][p] += f
                cnt[mac_key[u]][p] += work.final_macs[u]
                cnt["sram_bytes"][p] += work.final_sram_bytes[u]
                t_done[u] = t
        deliveries.sort(key=lambda dv: (dv[0], dv[1]))
        for arrival, _, u, r, j, d in deliveries:
            start = max(t, arrival)
            wk = (int(hw.event_cycles) + _ceil_div(work.ev_macs[r], hw.mac_lanes)
                  + int(work.ev_decodes[r]) * int(hw.decode_cycles))
            remaining[u] -= 1
            fin = _ceil_div(work.final_macs[u], hw.mac_lanes) if remaining[u] == 0 else 0
            jl = j - int(col0[u])
            add = dense[row0[u]:row0[u] + work.h[u], j] * x[j]
            contrib[(u, j)] = add
            partial[u] = partial[u] + add
            formula = (f"start = max(t {t}, arrival {arrival}) = {start}; work = event {hw.event_cycles} + "
                       f"ceil({_count(work.ev_macs[r], 'MAC')} / {hw.mac_lanes}) + {_count(work.ev_decodes[r], 'decode')} × "
                       f"{hw.decode_cycles}" + (f" + final {fin}" if fin else "") + f" = {wk + fin}")
            macs = _count(work.ev_macs[r], "MAC")
            if work.final_macs[u] > 0:   # LOWRANK: the event updates the r coefficients; the rows come at the end
                what = (f"PE {p}, tile {u}: event x[{j}] (local column {jl}) updates the kernel's coefficients "
                        f"({macs}, {_count(d, 'hop')}); its share, column {jl} × x[{j}], reaches the rows in the "
                        f"tile's final phase ({_count(work.final_macs[u], 'MAC')})")
            else:
                what = (f"PE {p}, tile {u}: event x[{j}] (local column {jl}) adds column {jl} × x[{j}] "
                        f"to the partial sums ({macs}, {_count(d, 'hop')})")
            steps.append(Step("event", p, start, start + wk + fin, u, j, what, formula, arrival))
            t = start + wk + fin
            cnt["busy"][p] += wk + fin
            cnt["events"][p] += 1
            cnt[mac_key[u]][p] += work.ev_macs[r] + (work.final_macs[u] if remaining[u] == 0 else 0)
            cnt["decodes"][p] += work.ev_decodes[r]
            cnt["sram_bytes"][p] += work.ev_sram_bytes[r] + (work.final_sram_bytes[u] if remaining[u] == 0 else 0)
            cnt["flit_hops"][p] += d
            if remaining[u] == 0:
                t_done[u] = t
        pe_end[p] = t
    # 4. reduction trains -----------------------------------------------------------------
    trains = {}
    for u in range(n):
        o = int(work.out_rows[u])
        if o <= 0:
            continue
        p, q = int(tile_pe[u]), int(red_pe[work.bi[u]])
        d = _manhattan(p, q, C)
        cnt["flit_hops"][p] += o * d
        a = int(t_done[u]) + hop * d
        steps.append(Step("send", p, int(t_done[u]), int(t_done[u]), u, -1,
                          f"tile {u} sends {_count(o, 'partial-sum flit')} to reduction PE {q}",
                          f"arrival = done {int(t_done[u])} + hop {hop} × {_count(d, 'hop')} = {a}", a))
        trains.setdefault(q, []).append((a, u, o))
    for q in sorted(trains):
        t = int(pe_end[q])
        for a, u, o in sorted(trains[q], key=lambda tr: (tr[0], tr[1])):
            start = max(t, a)
            dur = o * int(hw.reduce_cycles)
            steps.append(Step("reduce", q, start, start + dur, u, -1,
                              f"reduction PE {q} adds tile {u}'s {_count(o, 'partial sum')} into y",
                              f"start = max(t {t}, arrival {a}) = {start}; {_count(o, 'flit')} × reduce_cycles "
                              f"{hw.reduce_cycles} = {dur}", a))
            t = start + dur
            cnt["busy"][q] += dur
            cnt["reduce_adds"][q] += o
        pe_end[q] = t
    makespan = int(pe_end.max(initial=0))
    order = {k: i for i, k in enumerate(KINDS)}
    steps.sort(key=lambda s: (s.start, order[s.kind], s.pe, s.tile, s.column))
    y = np.zeros(dense.shape[0])
    for u in range(n):
        if work.out_rows[u] > 0:
            y[row0[u]:row0[u] + work.h[u]] += partial[u]
    return Trace(steps=steps, makespan=makespan, counters=cnt, y=y, partial=partial, tile_pe=tile_pe,
                 red_pe=red_pe, src_pe=src_pe, grid=(R, C), tile=tsize,
                 meta={"contrib": contrib, "row0": row0, "col0": col0, "ready": ready})


# --------------------------------------------------------------------------- the tiny case
@dataclass
class TinyCase:
    """Everything the Learn page shows: matrix, x, plan, work, hardware, placement and the trace.

    Attributes
    ----------
    A : scipy.sparse.csr_array
        The generated matrix.
    A_hat : ndarray
        What the PEs hold after the kernels (``plan.approx_matrix()``), dense.
    x : ndarray
        The input vector.
    plan : FusionPlan
    work : TileWork
    hw : HardwareConfig
        The hardware traced: the teaching grid with the timing of the preset it came from.
    mapping : Mapping
        The greedy placement.
    trace : Trace
    """

    A: object
    A_hat: np.ndarray
    x: np.ndarray
    plan: object
    work: TileWork
    hw: object
    mapping: object
    trace: Trace

    def transfer_cycles(self) -> dict:
        """Same as :func:`transfer_cycles` of this case."""
        return transfer_cycles(self)


def _check_grid(grid) -> tuple:
    g = TINY_GRID_MAX
    wanted = (f"grid must be a pair (rows, cols) of whole numbers from 1 to {g} "
              f"(the teaching PE grid is at most {g}×{g})")
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__len__") or len(grid) != 2:
        raise InputError(f"{wanted}, got {grid!r}.")
    try:
        return tuple(_whole(v, "grid", 1, g) for v in grid)
    except InputError:
        raise InputError(f"{wanted}, got {grid!r}.") from None


def _check_choice(value, name: str, options: list, what: str):
    if not isinstance(value, str) or value not in options:
        raise InputError(f"{name} must be {what}: one of {', '.join(options)}, got {value!r}.")
    return value


@checked_call
def tiny_case(n: int = 8, tile: int = 4, grid: tuple = (2, 2), density: float = 0.35, x_density: float = 1.0,
              kernel: str | None = "CSC", seed: int = 0, kind: str = "uniform",
              hw: HardwareConfig | None = None) -> TinyCase:
    """Build a tiny teaching case and trace it.

    Parameters
    ----------
    n : int
        Matrix side, a whole number from 4 to 32.
    tile : int
        Tile side T, a whole number from 4 to 256 (as :func:`akfviz.analyze` accepts).
    grid : (int, int)
        PE grid (rows, cols), whole numbers from 1 to 4.
    density : float
        Fraction of nonzero entries of the ``"uniform"`` matrix, 0 … 1. Range-checked whatever
        ``kind`` is, but passed to the generator only for ``kind="uniform"``: every other kind
        is built with its own default density (:func:`akfviz.workloads.generator_params`), so
        this default of 0.35 never thins a stencil or a band.
    x_density : float
        Fraction of nonzero inputs, in (0, 1] (seeded).
    kernel : str or None
        One registry kernel (:func:`akfviz.kernels.registry.kernel_names`) for every tile, or
        ``None`` for the selector's choice: ``select(pa, alpha=1, beta=1, fusion=False, hw=hw,
        rho_x=x_density)``, priced for the hardware the case is traced on and its own x.
    seed : int
        Seed of the matrix, of x and of the selection: a whole number from 0 to 2⁶³ − 1.
    kind : str
        A generator of :func:`akfviz.generate`, called as ``generate(kind, n=n, seed=seed)``
        (``"uniform"``: ``round(density·n²)`` distinct nonzero positions, with ``density``).
    hw : HardwareConfig, optional
        Whose timing (and energy) parameters to trace with, e.g. a preset such as
        ``HardwareConfig.from_preset("loihi-like")``; its rows and cols are replaced by
        ``grid``. ``None`` (default): the default configuration on ``grid``.

    Returns
    -------
    TinyCase
        The placement is the simulator's greedy mapping (``map_tiles(method="greedy")``). PEs
        whose tiles overflow their SRAM first stream the excess from DRAM (as the persistent
        kernel of :func:`akfviz.simulate` does), so the trace's makespan equals the engine's
        ``engine_cycles`` for ``simulate(tc.plan, tc.hw, x=tc.x, mapping=tc.mapping)``.

    Raises
    ------
    InputError
        Any argument out of its range or of the wrong type (no silent truncation: ``n=8.7``
        or ``seed=1.5`` are refused), or a case too large to trace.
    """
    from ..analysis.pattern import analyze
    from ..analysis.tiling import TILE_MAX, TILE_MIN, check_tile
    from ..execute.plan import FusionPlan
    from ..kernels.registry import kernel_names
    from ..workloads.generators import generate, generators
    from .mapping import map_tiles
    from .simulate import ps_completion, tile_overflow

    n = _whole(n, "n (the matrix side of the teaching case)", *TINY_N)
    try:
        tile = check_tile(tile)
    except InputError:
        raise InputError(f"tile (the tile side T) must be a whole number between {TILE_MIN} and {TILE_MAX}, "
                         f"got {tile!r}.") from None
    rows, cols = _check_grid(grid)
    density = check_real(density, "density", 0.0, 1.0)
    try:
        xd = check_real(x_density, "x_density", 0.0, 1.0)
    except InputError:
        xd = 0.0
    if not xd > 0.0:
        raise InputError(f"x_density (the fraction of nonzero entries of x) must be a number in (0, 1], "
                         f"got {x_density!r}.")
    if kernel is not None:
        _check_choice(kernel, "kernel", kernel_names(), "a registered kernel or None (the selector's choice)")
    seed = check_seed(seed)
    kind = _check_choice(kind, "kind", generators(), "a matrix generator")
    base = as_hardware(hw)
    hw = base.replace(rows=rows, cols=cols)
    A = generate(kind, n=n, density=density, seed=seed) if kind == "uniform" else generate(kind, n=n, seed=seed)
    pa = analyze(A, tile=tile)
    if kernel is None:
        from ..selection.selector import select
        # priced for the hardware the case is traced on and for its own x (as the other pages price theirs)
        plan = select(pa, alpha=1.0, beta=1.0, fusion=False, hw=hw, rho_x=xd)
    else:
        plan = FusionPlan(pa, [kernel] * pa.tileset.n_tiles)
    work = plan.npu_work()
    mp = map_tiles(work, hw, method="greedy", n_brows=pa.tileset.n_brows, n_bcols=pa.tileset.n_bcols)
    # the engine's start of each PE: its SRAM overflow streamed at the shared DRAM bandwidth
    ovf = tile_overflow(np.asarray(work.payload_bytes, np.int64), mp.pe, hw.sram_bytes_per_pe)
    stream = np.bincount(mp.pe, weights=ovf, minlength=hw.n_pes).astype(np.int64) if work.n_tiles \
        else np.zeros(hw.n_pes, np.int64)
    ready = ps_completion(stream, hw.dram_bytes_per_cycle)
    rng = np.random.default_rng(seed + 1)
    x = np.round(rng.uniform(-2, 2, size=A.shape[1]), 1)
    x[x == 0] = 0.5
    k = max(1, int(round(xd * x.size)))
    x[rng.permutation(x.size)[k:]] = 0.0
    A_hat = plan.approx_matrix().toarray()
    tr = trace_spmv(A_hat, x, work, hw, mp.pe, mp.red, mp.src, ready=ready, tile=tile)
    return TinyCase(A=A, A_hat=A_hat, x=x, plan=plan, work=work, hw=hw, mapping=mp, trace=tr)


def transfer_cycles(tc: TinyCase) -> dict:
    """The DRAM transfers :func:`akfviz.simulate` adds around the traced engine part.

    One persistent iteration of ``simulate(tc.plan, tc.hw, x=tc.x, mapping=tc.mapping)``
    costs ``cycles = load_cycles + engine_cycles + writeback_cycles`` where
    ``engine_cycles`` is the trace's makespan and (akf-spec §7, :mod:`akfviz.npu.simulate`):

    * ``load_cycles = ceil(nnz(x) · flit_bytes / dram_bytes_per_cycle)`` — x is read from DRAM
      before any event;
    * ``writeback_cycles = ceil(rows · flit_bytes / dram_bytes_per_cycle)`` — y is written back,
      every one of its ``rows`` (rows no tile reaches are zeros the host still receives).

    Parameters
    ----------
    tc : TinyCase

    Returns
    -------
    dict
        ``load_cycles, engine_cycles, writeback_cycles, cycles`` (ints), ``x_bytes, y_bytes``
        and ``formulas`` (name -> the formula with the numbers filled in).
    """
    if not isinstance(tc, TinyCase):
        raise InputError(f"transfer_cycles needs a TinyCase (from tiny_case), got {type(tc).__name__}.")
    hw, tr, work = tc.hw, tc.trace, tc.work
    bw, fb, T = int(hw.dram_bytes_per_cycle), int(hw.flit_bytes), int(tr.tile)
    nnz_x = int(np.count_nonzero(tc.x))
    n_rows = int(tc.A_hat.shape[0])
    y_rows = n_rows
    x_bytes, y_bytes = nnz_x * fb, y_rows * fb
    load, wb = _ceil_div(x_bytes, bw), _ceil_div(y_bytes, bw)
    return {
        "load_cycles": load, "engine_cycles": int(tr.makespan), "writeback_cycles": wb,
        "cycles": load + int(tr.makespan) + wb, "x_bytes": x_bytes, "y_bytes": y_bytes,
        "formulas": {
            "load_cycles": f"ceil({nnz_x} nonzero x × {fb} bytes / {bw} bytes per cycle) = {load}",
            "writeback_cycles": f"ceil({y_rows} rows of y × {fb} bytes / {bw} bytes per cycle) = {wb}",
            "cycles": f"{load} + makespan {int(tr.makespan)} + {wb} = {load + int(tr.makespan) + wb}",
        },
    }
