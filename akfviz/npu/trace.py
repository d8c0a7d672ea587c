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
   at ``arrival = inject_j + hop_latency · |Δrow| + |Δcol|`` (Manhattan distance between the
   source PE and the tile's PE, times the hop latency); ``distance`` flit-hops are counted.
3. **Processing.** A PE first sets up all its tiles (``setup_cycles`` each, from ``ready``),
   runs the final phase of tiles that get no event, then serves deliveries in arrival order:
   ``start = max(t, arrival)``, ``t = start + work``, with
   ``work = event_cycles + ceil(ev_macs / mac_lanes) + ev_decodes · decode_cycles`` (plus the
   tile's final phase ``ceil(final_macs / mac_lanes)`` after its last event). Each event adds
   ``A_tile[:, j] · x_j`` to the tile's partial sums.
4. **Reduction.** A finished tile sends ``out_rows`` partial-sum flits to its row block's
   reduction PE, arriving ``hop_latency · distance`` after the tile finished. The reduction PE,
   after its own tile work, serves whole trains in arrival order:
   ``start = max(t, arrival)``, ``t = start + out_rows · reduce_cycles``; it adds them into ``y``.
5. **Makespan** = the latest time any PE finishes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from .work import TileWork

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
    """Result of :func:`trace_spmv`: the steps in time order, counters per PE, the output."""

    steps: list
    makespan: int
    counters: dict               # name -> int64 array (P,)
    y: np.ndarray                # the reduced output A x
    partial: np.ndarray          # per tile: its partial sums (h,) after all events, as list of arrays
    tile_pe: np.ndarray
    red_pe: np.ndarray
    src_pe: np.ndarray
    grid: tuple
    tile: int
    meta: dict = field(default_factory=dict)

    def state_at(self, i: int) -> dict:
        """Snapshot after the first ``i`` steps (0 … len(steps)).

        Returns a dict: ``time`` (start of step i, or makespan), ``pe_clock`` (P,) — the end
        of the last step done on each PE, ``queues`` — per PE the list of delivered but not yet
        served events ``(tile, column, arrival)``, ``partial`` — per tile its partial sums so
        far, ``y`` — the output reduced so far, ``done`` — the steps already done.
        """
        i = max(0, min(int(i), len(self.steps)))
        P = int(self.grid[0] * self.grid[1])
        clock = np.zeros(P, np.int64)
        done = self.steps[:i]
        partial = [np.zeros_like(p) for p in self.partial]
        y = np.zeros_like(self.y)
        now = self.steps[i].start if i < len(self.steps) else self.makespan
        for s in done:
            if s.kind != "inject":
                clock[s.pe] = max(clock[s.pe], s.end)
            if s.kind == "event":
                partial[s.tile] += self.meta["contrib"][(s.tile, s.column)]
            elif s.kind == "reduce":
                r0 = self.meta["row0"][s.tile]
                y[r0:r0 + partial[s.tile].size] += self.partial[s.tile]
        served = {(s.tile, s.column) for s in done if s.kind == "event"}
        queues = [[] for _ in range(P)]
        for s in self.steps:
            if s.kind == "event" and (s.tile, s.column) not in served and s.arrival <= now:
                queues[s.pe].append((s.tile, s.column, s.arrival))
        return {"time": now, "pe_clock": clock, "queues": queues, "partial": partial, "y": y, "done": done}


def _manhattan(p: int, q: int, cols: int) -> int:
    return abs(p // cols - q // cols) + abs(p % cols - q % cols)


def _ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def trace_spmv(A, x, work: TileWork, hw, tile_pe, red_pe, src_pe, ready=None, tile: int | None = None) -> Trace:
    """Run the event model of akf-spec §7 step by step on a tiny case.

    Parameters
    ----------
    A : array-like or scipy.sparse (n, m)
        The matrix whose tiles ``work`` describes (dense values are used for partial sums;
        pass the plan's approximation ``Â`` for lossy kernels).
    x : array (m,)
        Input vector; only nonzero entries are events.
    work : TileWork
        Per-tile work (routed columns, per-event counts, out_rows, final phase).
    hw : HardwareConfig
        Uses ``rows, cols, hop_latency_cycles, setup_cycles, event_cycles, mac_lanes,
        decode_cycles, reduce_cycles, inject_cycles``.
    tile_pe : int array (n_tiles,)
        PE (row-major index ``r * cols + c``) of each tile.
    red_pe : int array (n_brows,)
        Reduction PE of each row block.
    src_pe : int array (n_bcols,)
        Event-source PE of each column block.
    ready : int array (P,), optional
        Cycle each PE may start (after its DRAM stream); default 0.
    tile : int, optional
        Tile side T (default: the widest tile in ``work``).

    Returns
    -------
    Trace
    """
    dense = np.asarray(A.toarray() if hasattr(A, "toarray") else A, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64).ravel()
    if dense.ndim != 2 or x.size != dense.shape[1]:
        raise InputError(f"x has {x.size} entries but the matrix has {dense.shape[1]} columns.")
    if dense.size > 4096:
        raise InputError("The step-by-step trace is for tiny teaching cases (at most 4096 matrix entries).")
    R, C = int(hw.rows), int(hw.cols)
    P = R * C
    if P > 4096:
        raise InputError("The step-by-step trace is for tiny PE grids (at most 4096 PEs).")
    n = work.n_tiles
    tile_pe = np.asarray(tile_pe, np.int64)
    red_pe = np.asarray(red_pe, np.int64)
    src_pe = np.asarray(src_pe, np.int64)
    ready = np.zeros(P, np.int64) if ready is None else np.asarray(ready, np.int64)
    hop = int(hw.hop_latency_cycles)
    steps: list[Step] = []
    cnt = {k: np.zeros(P, np.int64) for k in ("busy", "events", "macs", "decodes", "sram_bytes",
                                              "flit_hops", "reduce_adds")}
    # tile geometry: column offset bj*T and row offset bi*T (T from the tile grid)
    tsize = int(tile) if tile else _tile_side(work)
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
        steps.append(Step("setup", p, t, t + su, -1, -1, f"PE {p} sets up its {len(mine)} tile(s)",
                          f"setup = {len(mine)} tiles × setup_cycles {hw.setup_cycles} = {su}"))
        t += su
        cnt["busy"][p] += su
        for u in mine:
            if remaining[u] == 0:
                f = _ceil_div(work.final_macs[u], hw.mac_lanes)
                steps.append(Step("final", p, t, t + f, u, -1, f"tile {u} gets no event; final phase only",
                                  f"final = ceil({int(work.final_macs[u])} / {hw.mac_lanes}) = {f}"))
                t += f
                cnt["busy"][p] += f
                cnt["macs"][p] += work.final_macs[u]
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
                       f"ceil({int(work.ev_macs[r])} MACs / {hw.mac_lanes}) + {int(work.ev_decodes[r])} decodes × "
                       f"{hw.decode_cycles}" + (f" + final {fin}" if fin else "") + f" = {wk + fin}")
            steps.append(Step("event", p, start, start + wk + fin, u, j,
                              f"PE {p}, tile {u}: event x[{j}] (local column {jl}) adds column {jl} × x[{j}] "
                              f"to the partial sums ({int(work.ev_macs[r])} MACs, {d} hops)", formula, arrival))
            t = start + wk + fin
            cnt["busy"][p] += wk + fin
            cnt["events"][p] += 1
            cnt["macs"][p] += work.ev_macs[r] + (work.final_macs[u] if remaining[u] == 0 else 0)
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
                          f"tile {u} sends {o} partial-sum flit(s) to reduction PE {q}",
                          f"arrival = done {int(t_done[u])} + hop {hop} × {d} hops = {a}", a))
        trains.setdefault(q, []).append((a, u, o))
    for q in sorted(trains):
        t = int(pe_end[q])
        for a, u, o in sorted(trains[q], key=lambda tr: (tr[0], tr[1])):
            start = max(t, a)
            dur = o * int(hw.reduce_cycles)
            steps.append(Step("reduce", q, start, start + dur, u, -1,
                              f"reduction PE {q} adds tile {u}'s {o} partial sums into y",
                              f"start = max(t {t}, arrival {a}) = {start}; {o} flits × reduce_cycles "
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
                 meta={"contrib": contrib, "row0": row0, "col0": col0})


def _tile_side(work: TileWork) -> int:
    """Tile side T: the widest tile (edge tiles are narrower; a full tile has h = w = T)."""
    if work.n_tiles == 0:
        return 1
    return int(max(work.h.max(), work.w.max()))


@dataclass
class TinyCase:
    """Everything the Learn page shows: matrix, x, plan, work, hardware, placement and the trace."""

    A: object
    A_hat: np.ndarray
    x: np.ndarray
    plan: object
    work: TileWork
    hw: object
    mapping: object
    trace: Trace


def tiny_case(n: int = 8, tile: int = 4, grid: tuple = (2, 2), density: float = 0.35, x_density: float = 1.0,
              kernel: str | None = "CSC", seed: int = 0, kind: str = "uniform") -> TinyCase:
    """Build a tiny teaching case and trace it.

    Parameters
    ----------
    n : int
        Matrix side (4 … 32).
    tile : int
        Tile side T.
    grid : (int, int)
        PE grid (rows, cols), at most 4 × 4.
    density, kind, seed
        Passed to :func:`akfviz.generate` (``kind="uniform"``: each entry nonzero with ``density``).
    x_density : float
        Fraction of nonzero inputs (seeded).
    kernel : str or None
        One registry kernel for every tile, or ``None`` for the selector's choice (α = β = 1).

    Returns
    -------
    TinyCase
        The placement is the simulator's greedy mapping (``map_tiles(method="greedy")``).
    """
    from ..analysis.pattern import analyze
    from ..execute.plan import FusionPlan
    from ..workloads.generators import generate
    from .hardware import HardwareConfig
    from .mapping import map_tiles

    if not (4 <= int(n) <= 32):
        raise InputError(f"The teaching case needs 4 ≤ n ≤ 32, got n={n}.")
    rows, cols = (int(g) for g in grid)
    if not (1 <= rows <= 4 and 1 <= cols <= 4):
        raise InputError(f"The teaching PE grid must be at most 4×4, got {rows}×{cols}.")
    if not (0.0 < x_density <= 1.0):
        raise InputError(f"x_density must be in (0, 1], got {x_density}.")
    A = generate(kind, n=int(n), density=float(density), seed=int(seed)) if kind == "uniform" \
        else generate(kind, n=int(n), seed=int(seed))
    pa = analyze(A, tile=int(tile))
    if kernel is None:
        from ..selection.selector import select
        plan = select(pa, alpha=1.0, beta=1.0, fusion=False)
    else:
        plan = FusionPlan(pa, [kernel] * pa.tileset.n_tiles)
    work = plan.npu_work()
    hw = HardwareConfig(rows=rows, cols=cols)
    mp = map_tiles(work, hw, method="greedy", n_brows=pa.tileset.n_brows, n_bcols=pa.tileset.n_bcols)
    rng = np.random.default_rng(int(seed) + 1)
    x = np.round(rng.uniform(-2, 2, size=A.shape[1]), 1)
    x[x == 0] = 0.5
    k = max(1, int(round(x_density * x.size)))
    x[rng.permutation(x.size)[k:]] = 0.0
    A_hat = plan.approx_matrix().toarray()
    tr = trace_spmv(A_hat, x, work, hw, mp.pe, mp.red, mp.src, tile=int(tile))
    return TinyCase(A=A, A_hat=A_hat, x=x, plan=plan, work=work, hw=hw, mapping=mp, trace=tr)
