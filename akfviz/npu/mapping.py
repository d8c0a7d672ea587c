"""Placing tiles on the PE grid: locality-aware greedy + simulated annealing (akf-spec §6).

Objective (minimised), for a placement ``pe[u]`` of the tiles:

``J = max_p (T_p + M_p) + gamma · Σ_u hops_u + delta · Σ_p max(0, payload_p − sram_bytes_per_pe)``

* ``T_p`` = Σ estimated cycles of the tiles on ``p`` (setup + expected event work + final
  phase, see :mod:`akfviz.npu.costmodel`): when ``p`` is done, so are its tiles (the engine
  interleaves their events, so they all finish near the end);
* ``M_p`` = what must still happen after that: ``max(R_p, max_{u on p} tail_u)``, with ``R_p``
  the reduction work of the row blocks ``p`` reduces (done after its own tiles, ``docs/model.md``)
  and ``tail_u = hop · dist(p, q_u) + R_{q_u}`` — tile ``u``'s partial sums travel to its
  reduction PE ``q_u``, which then has at most all its reduction work left. So the first term
  is an upper estimate of the makespan: stacking tiles on one PE delays every partial sum it
  sends. (A per-PE load alone, with reductions added at the reduction PE, missed this: on
  ``minilm_attnq0_nm24`` with 8 KiB SRAM annealing stacked two tiles per PE for fewer hops and
  the simulated makespan rose 702 → 994 cycles while the estimate rose 605 → 662.)
* ``hops_u = E_u · dist(src[bj_u], pe_u) + out_rows_u · dist(pe_u, red[bi_u])``, with ``E_u``
  the expected number of events (``rho_x`` × routed columns) and Manhattan distances;
* ``payload_p`` = Σ payload bytes of the tiles on ``p``.

Greedy: the placement uses a compact corner block of ``n_tiles + n_brows`` PEs when the grid
is larger (:func:`compact_snake`); row blocks get contiguous regions of its snake order in proportion to their
estimated work; the middle PE of a region is the row block's reduction PE (and the source of
column block ``bj = bi`` events, see ``docs/model.md``); the tiles of a row block, longest
first, go to the region's PEs nearest the reduction PE (one each), or, when they outnumber the
region, each to the least-loaded PE of the region (LPT). Annealing then moves single tiles
(to a random PE within a window around their reduction PE) or swaps two tiles, accepting by
the Metropolis rule with geometric cooling, seeded with ``numpy.random.default_rng(seed)``;
the objective is updated incrementally (a segment tree keeps ``max_p (T_p + M_p)``; each PE
keeps the tile attaining ``M_p`` and a list of its tiles, scanned only when that tile leaves).
Reduction PEs stay where greedy put them. The result is never worse than the greedy start.

``gamma`` defaults to :data:`GAMMA_PER_HOP_CYCLE` × hop latency (at least :data:`GAMMA_MIN`):
hops break ties between placements of (nearly) equal makespan. With 0.01 (before), a placement
that saved 13k flit-hops "paid" for 130 cycles of makespan, and better hardware could come out
slower (more SRAM let annealing stack tiles). The objective is still an estimate: in the engine
an annealed placement can take more cycles than its greedy start, so :func:`akfviz.simulate`
runs both and keeps the annealed one only when its (cycles, energy) is not larger
(``docs/model.md``, Mapping).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._jit import njit_cached
from ..arguments import choice
from ..errors import InputError


@dataclass(frozen=True, eq=False)
class Mapping:
    """A placement of tiles on PEs.

    Attributes
    ----------
    pe : int64 (n_tiles,)
        PE id (``row * cols + col``) of each tile.
    red : int64 (n_brows,)
        Reduction PE of each row block.
    src : int64 (n_bcols,)
        Event-source PE of each column block.
    trajectory : float64 (k,)
        Objective during annealing (first entry = greedy objective).
    greedy_objective, objective : float
        Objective of the greedy start and of the returned placement.
    iterations : int
        Annealing proposals evaluated.
    iterations_per_s : float
    seconds : float
        Wall time of the annealing.
    method : str
        "greedy" or "anneal".
    components : dict
        ``makespan_est`` (``max_p (T_p + M_p)``, module docstring), ``hops``, ``overflow_bytes``
        of the returned placement.
    engine_check : dict
        Empty from :func:`map_tiles`. When :func:`akfviz.npu.simulate.cached_map_tiles` (the
        placement :func:`akfviz.simulate` uses) ran the annealed and the greedy placement in the
        engine: ``kept`` (``"anneal"`` or ``"greedy"``), ``anneal_cycles``, ``greedy_cycles``,
        ``anneal_energy_pj``, ``greedy_energy_pj`` and ``anneal_objective``.
    """

    pe: np.ndarray
    red: np.ndarray
    src: np.ndarray
    trajectory: np.ndarray
    greedy_objective: float
    objective: float
    iterations: int
    iterations_per_s: float
    seconds: float
    method: str
    components: dict = field(default_factory=dict)
    engine_check: dict = field(default_factory=dict)

    @property
    def trajectory_proposals(self) -> np.ndarray:
        """Annealing proposals evaluated at each point of ``trajectory``: 0 (the greedy start),
        then every ``max(1, iterations // TRAJECTORY_POINTS)`` proposals."""
        every = max(1, int(self.iterations) // TRAJECTORY_POINTS)
        return np.arange(self.trajectory.size, dtype=np.int64) * every

    @property
    def improvement(self) -> float:
        """Relative improvement over greedy, ``1 − objective / greedy_objective``."""
        if self.greedy_objective <= 0:
            return 0.0
        return 1.0 - self.objective / self.greedy_objective

    def summary(self) -> dict:
        """Small JSON-able summary."""
        return dict(method=self.method, greedy_objective=float(self.greedy_objective),
                    objective=float(self.objective), improvement=float(self.improvement),
                    iterations=int(self.iterations), iterations_per_s=float(self.iterations_per_s),
                    seconds=float(self.seconds), pes_used=int(np.count_nonzero(np.bincount(self.pe))) if self.pe.size else 0,
                    **{k: float(v) for k, v in self.components.items()},
                    **{f"engine_{k}": (v if isinstance(v, str) else float(v)) for k, v in self.engine_check.items()})


# --------------------------------------------------------------------------- helpers
def snake_order(rows: int, cols: int) -> np.ndarray:
    """PE ids in boustrophedon order (row 0 left→right, row 1 right→left, …)."""
    g = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    g[1::2] = g[1::2, ::-1]
    return g.ravel()


def compact_snake(rows: int, cols: int, needed: int) -> np.ndarray:
    """Snake order over the smallest near-square corner sub-grid with ``needed`` PEs.

    A plan with far fewer tiles than PEs is placed in a compact block at the grid's
    top-left corner (next to the I/O ports on row 0) rather than spread over the whole
    grid (the greedy start shares a PE between tiles only where a row block's share of the
    block has fewer PEs than the row block has tiles); events and partial sums travel a few
    hops instead of hundreds. With ``needed >= rows·cols`` this is :func:`snake_order`.
    """
    if needed >= rows * cols:
        return snake_order(rows, cols)
    cs = int(min(cols, max(1, np.ceil(np.sqrt(needed)))))
    rs = int(min(rows, -(-needed // cs)))
    local = snake_order(rs, cs)
    return (local // cs) * cols + local % cs


def source_pes(red: np.ndarray, n_bcols: int, cols: int) -> np.ndarray:
    """Source PE of each column block: the reduction PE of row block ``bj`` when it exists
    (for square operators the vector slice ``x[bj]`` lives where ``y[bj]`` is reduced),
    otherwise an I/O port on grid row 0 at column ``bj mod cols``."""
    src = np.empty(n_bcols, dtype=np.int64)
    nb = red.shape[0]
    for bj in range(n_bcols):
        src[bj] = red[bj] if bj < nb else bj % cols
    return src


@njit_cached
def _sift_down(hk, hp, i, n):
    while True:
        m = i
        a = 2 * i + 1
        b = a + 1
        if a < n and (hk[a] < hk[m] or (hk[a] == hk[m] and hp[a] < hp[m])):
            m = a
        if b < n and (hk[b] < hk[m] or (hk[b] == hk[m] and hp[b] < hp[m])):
            m = b
        if m == i:
            return
        hk[i], hk[m] = hk[m], hk[i]
        hp[i], hp[m] = hp[m], hp[i]
        i = m


@njit_cached
def _greedy(bi, work, n_brows, red_load, snake, cols, n_pes):
    n = bi.shape[0]
    P = snake.shape[0]
    # row-block work, ordered tiles per row block (longest first)
    wb = np.zeros(n_brows, dtype=np.float64)
    cntb = np.zeros(n_brows + 1, dtype=np.int64)
    for u in range(n):
        wb[bi[u]] += work[u]
        cntb[bi[u] + 1] += 1
    for b in range(n_brows):
        wb[b] += red_load[b] + 1.0
        cntb[b + 1] += cntb[b]
    order = np.argsort(-work, kind="mergesort")
    byb = np.empty(n, dtype=np.int64)
    fill = cntb[:n_brows].copy()
    for q in range(n):
        u = order[q]
        byb[fill[bi[u]]] = u
        fill[bi[u]] += 1
    total = wb.sum()
    pe = np.empty(n, dtype=np.int64)
    red = np.empty(n_brows, dtype=np.int64)
    load = np.zeros(n_pes, dtype=np.float64)
    cum = 0.0
    for b in range(n_brows):
        s = int(np.floor(P * cum / total))
        cum += wb[b]
        e = int(np.floor(P * cum / total))
        if s > P - 1:
            s = P - 1
        if e < s + 1:
            e = s + 1
        if e > P:
            e = P
        R = e - s
        rpe = snake[(s + e - 1) // 2]
        red[b] = rpe
        load[rpe] += red_load[b]
        rr, rc = rpe // cols, rpe % cols
        region = snake[s:e]
        dist = np.empty(R, dtype=np.int64)
        for i in range(R):
            p = region[i]
            dist[i] = abs(p // cols - rr) + abs(p % cols - rc)
        near = region[np.argsort(dist, kind="mergesort")]
        lo, hi = cntb[b], cntb[b + 1]
        c = hi - lo
        if c <= R and R > 1:
            # one tile per PE, nearest first; the reduction PE itself last when there is room
            i = 0
            for q in range(lo, hi):
                if near[i] == rpe and c < R:
                    i += 1
                p = near[i]
                pe[byb[q]] = p
                load[p] += work[byb[q]]
                i += 1
        else:
            # LPT: longest remaining tile to the least-loaded PE of the region (binary min-heap
            # keyed by (load, position in the nearness order))
            hk = np.empty(R, dtype=np.float64)
            hp = np.empty(R, dtype=np.int64)
            for i in range(R):
                hk[i] = load[near[i]]
                hp[i] = i
            # heapify
            for i0 in range(R // 2 - 1, -1, -1):
                _sift_down(hk, hp, i0, R)
            for q in range(lo, hi):
                p = near[hp[0]]
                pe[byb[q]] = p
                load[p] += work[byb[q]]
                hk[0] = load[p]
                _sift_down(hk, hp, 0, R)
    return pe, red


@njit_cached
def _reduced_at(red, red_load, P):
    """``Rred_p``: the reduction work of the row blocks whose reduction PE is ``p``."""
    rred = np.zeros(P, dtype=np.float64)
    for b in range(red.shape[0]):
        rred[red[b]] += red_load[b]
    return rred


@njit_cached
def _tail(p, u, bi, red, rred, cols, hop):
    """What follows tile ``u``'s last event when it sits on PE ``p``: its partial sums travel
    to the reduction PE ``q`` of its row block (``hop · dist(p, q)``), which then does (at most)
    all its reduction work ``Rred_q``."""
    q = red[bi[u]]
    return hop * (abs(p // cols - q // cols) + abs(p % cols - q % cols)) + rred[q]


@njit_cached
def _objective_parts(pe, bi, bj, work, ev, outr, payload, red, src, red_load, P, cols, sram, hop):
    rred = _reduced_at(red, red_load, P)
    load = np.zeros(P, dtype=np.float64)
    mx = rred.copy()
    pay = np.zeros(P, dtype=np.float64)
    hops = 0.0
    for u in range(pe.shape[0]):
        p = pe[u]
        load[p] += work[u]
        pay[p] += payload[u]
        t = _tail(p, u, bi, red, rred, cols, hop)
        if t > mx[p]:
            mx[p] = t
        s = src[bj[u]]
        q = red[bi[u]]
        hops += ev[u] * (abs(p // cols - s // cols) + abs(p % cols - s % cols)) \
            + outr[u] * (abs(p // cols - q // cols) + abs(p % cols - q % cols))
    ovf = 0.0
    mk = 0.0
    for p in range(P):
        if pay[p] > sram:
            ovf += pay[p] - sram
        if load[p] + mx[p] > mk:
            mk = load[p] + mx[p]
    return mk, hops, ovf


@njit_cached
def _tree_build(load, size):
    tree = np.full(2 * size, -np.inf)
    for p in range(load.shape[0]):
        tree[size + p] = load[p]
    for i in range(size - 1, 0, -1):
        tree[i] = max(tree[2 * i], tree[2 * i + 1])
    return tree


@njit_cached
def _tree_set(tree, size, p, v):
    i = size + p
    tree[i] = v
    i >>= 1
    while i >= 1:
        tree[i] = max(tree[2 * i], tree[2 * i + 1])
        i >>= 1


@njit_cached
def _tile_hops(p, u, bi, bj, ev, outr, red, src, cols):
    s = src[bj[u]]
    q = red[bi[u]]
    return ev[u] * (abs(p // cols - s // cols) + abs(p % cols - s % cols)) \
        + outr[u] * (abs(p // cols - q // cols) + abs(p % cols - q % cols))


@njit_cached
def _pe_max_without(p, u, v, tv, head, nxt, tl, mx, arg, rred):
    """``M_p`` (and the tile attaining it, −1 for the PE's own reductions) after tile ``u``
    leaves ``p`` and tile ``v`` (``v < 0``: none) arrives there with tail ``tv``. Only when ``u``
    attained the maximum are the PE's remaining tiles scanned."""
    if arg[p] != u:
        best = mx[p]
        who = arg[p]
    else:
        best = rred[p]
        who = -1
        w = head[p]
        while w >= 0:
            if w != u and tl[w] > best:
                best = tl[w]
                who = w
            w = nxt[w]
    if v >= 0 and tv > best:
        best = tv
        who = v
    return best, who


@njit_cached
def _unlink(u, p, head, nxt, prv):
    if prv[u] >= 0:
        nxt[prv[u]] = nxt[u]
    else:
        head[p] = nxt[u]
    if nxt[u] >= 0:
        prv[nxt[u]] = prv[u]


@njit_cached
def _link(u, p, head, nxt, prv):
    prv[u] = -1
    nxt[u] = head[p]
    if head[p] >= 0:
        prv[head[p]] = u
    head[p] = u


@njit_cached
def _anneal(pe, bi, bj, work, ev, outr, payload, red, src, red_load, rows, cols, sram,
            gamma, delta, hop, iters, window, rnd, n_traj, t0_scale):
    """Simulated annealing in place on ``pe``; ``rnd`` are uniform [0,1) numbers (5 per step).

    Per PE ``p`` it keeps ``T_p`` (tile work), ``M_p`` (the largest tail of its tiles, or its own
    reductions) with the tile attaining it, its payload, and its tiles as a linked list; a
    segment tree keeps ``max_p (T_p + M_p)``. A proposal changes two PEs; it is evaluated on
    the tree and undone there when rejected.

    Ends on the best placement visited, not the last: every accepted move since the last new
    best is journalled (tile, its PE before; the swapped tile, if any) and undone at the end,
    O(1) per move instead of a copy of ``pe`` at each new best. Returns that best objective
    and the trajectory of the search itself."""
    n = pe.shape[0]
    P = rows * cols
    rred = _reduced_at(red, red_load, P)
    load = np.zeros(P, dtype=np.float64)
    pay = np.zeros(P, dtype=np.float64)
    mx = rred.copy()
    arg = np.full(P, -1, dtype=np.int64)
    head = np.full(P, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    tl = np.empty(n, dtype=np.float64)
    hops = 0.0
    for u in range(n):
        p = pe[u]
        load[p] += work[u]
        pay[p] += payload[u]
        hops += _tile_hops(p, u, bi, bj, ev, outr, red, src, cols)
        tl[u] = _tail(p, u, bi, red, rred, cols, hop)
        if tl[u] > mx[p]:
            mx[p] = tl[u]
            arg[p] = u
        _link(u, p, head, nxt, prv)
    ovf = 0.0
    for p in range(P):
        if pay[p] > sram:
            ovf += pay[p] - sram
    size = 1
    while size < P:
        size *= 2
    key = load + mx
    tree = _tree_build(key, size)
    obj = tree[1] + gamma * hops + delta * ovf
    traj = np.empty(n_traj + 1, dtype=np.float64)
    traj[0] = obj
    every = max(1, iters // n_traj)
    # initial temperature: the scale of the hop term's change, the mean |gamma·Δhops| over a few
    # random moves (not applied). Not the tile's work as well (until the twenty-seventh session):
    # at that temperature a move stacking two tiles was often taken, and the max term's plateau
    # never led back (trajectories ended 1.1–1.9× above the start on 9 of the 11 samples; from
    # the hop scale the objective fell on all 11, 5.5 % on average)
    t0 = 0.0
    nsamp = 0
    for z in range(min(200, iters)):
        u = int(rnd[5 * z] * n)
        q = red[bi[u]]
        rr = q // cols + int((rnd[5 * z + 1] * 2 - 1) * window)
        cc = q % cols + int((rnd[5 * z + 2] * 2 - 1) * window)
        rr = min(max(rr, 0), rows - 1)
        cc = min(max(cc, 0), cols - 1)
        p2 = rr * cols + cc
        dh = _tile_hops(p2, u, bi, bj, ev, outr, red, src, cols) - \
            _tile_hops(pe[u], u, bi, bj, ev, outr, red, src, cols)
        t0 += abs(gamma * dh)
        nsamp += 1
    t0 = max(t0 / max(nsamp, 1), 1e-9) * t0_scale
    t_end = t0 * 1e-4
    cool = (t_end / t0) ** (1.0 / max(iters, 1))
    temp = t0
    k = 1
    best = obj
    jn = 0                                   # journal: accepted moves since the best
    j_u = np.empty(iters, dtype=np.int64)
    j_pa = np.empty(iters, dtype=np.int64)
    j_v = np.empty(iters, dtype=np.int64)
    for it in range(iters):
        r0 = rnd[5 * it]
        r1 = rnd[5 * it + 1]
        r2 = rnd[5 * it + 2]
        r3 = rnd[5 * it + 3]
        u = int(r0 * n)
        pa = pe[u]
        if r3 < 0.5 or n < 2:
            # move u to a random PE near its reduction PE
            q = red[bi[u]]
            rr = q // cols + int((r1 * 2 - 1) * (window + 1))
            cc = q % cols + int((r2 * 2 - 1) * (window + 1))
            rr = min(max(rr, 0), rows - 1)
            cc = min(max(cc, 0), cols - 1)
            pb = rr * cols + cc
            v = -1
        else:
            v = int(r1 * n)
            pb = pe[v]
        # a proposal that stays on its PE changes nothing, but still cools and is recorded
        if pb != pa:
            wu = work[u]
            tub = _tail(pb, u, bi, red, rred, cols, hop)
            dhop = _tile_hops(pb, u, bi, bj, ev, outr, red, src, cols) - \
                _tile_hops(pa, u, bi, bj, ev, outr, red, src, cols)
            la = load[pa] - wu
            lb = load[pb] + wu
            ya = pay[pa] - payload[u]
            yb = pay[pb] + payload[u]
            tva = 0.0
            if v >= 0:
                wv = work[v]
                tva = _tail(pa, v, bi, red, rred, cols, hop)
                dhop += _tile_hops(pa, v, bi, bj, ev, outr, red, src, cols) - \
                    _tile_hops(pb, v, bi, bj, ev, outr, red, src, cols)
                la += wv
                lb -= wv
                ya += payload[v]
                yb -= payload[v]
            ma, wa = _pe_max_without(pa, u, v, tva, head, nxt, tl, mx, arg, rred)
            if v >= 0:
                mb, wb = _pe_max_without(pb, v, u, tub, head, nxt, tl, mx, arg, rred)
            else:
                mb, wb = mx[pb], arg[pb]
                if tub > mb:
                    mb, wb = tub, u
            dovf = (max(ya - sram, 0.0) + max(yb - sram, 0.0)) - \
                (max(pay[pa] - sram, 0.0) + max(pay[pb] - sram, 0.0))
            _tree_set(tree, size, pa, la + ma)
            _tree_set(tree, size, pb, lb + mb)
            new_obj = tree[1] + gamma * (hops + dhop) + delta * (ovf + dovf)
            d = new_obj - obj
            accept = d <= 0.0
            if not accept:
                accept = rnd[5 * it + 4] < np.exp(-d / temp)
            if accept:
                load[pa] = la
                load[pb] = lb
                pay[pa] = ya
                pay[pb] = yb
                mx[pa], arg[pa] = ma, wa
                mx[pb], arg[pb] = mb, wb
                hops += dhop
                ovf += dovf
                obj = new_obj
                _unlink(u, pa, head, nxt, prv)
                _link(u, pb, head, nxt, prv)
                pe[u] = pb
                tl[u] = tub
                if v >= 0:
                    _unlink(v, pb, head, nxt, prv)
                    _link(v, pa, head, nxt, prv)
                    pe[v] = pa
                    tl[v] = tva
                if obj < best:
                    best = obj
                    jn = 0
                else:
                    j_u[jn] = u
                    j_pa[jn] = pa
                    j_v[jn] = v
                    jn += 1
            else:
                _tree_set(tree, size, pa, load[pa] + mx[pa])
                _tree_set(tree, size, pb, load[pb] + mx[pb])
        temp *= cool
        if (it + 1) % every == 0 and k <= n_traj:
            traj[k] = obj
            k += 1
    # back to the best placement: undo the journalled moves, last first (u went pa -> pe[u],
    # and a swapped v went pe[u] -> pa)
    for q in range(jn - 1, -1, -1):
        u = j_u[q]
        v = j_v[q]
        if v >= 0:
            pe[v] = pe[u]
        pe[u] = j_pa[q]
    return best, traj[:k].copy()


# --------------------------------------------------------------------------- public
def _whole(value, name: str, lo: int):
    """``value`` (None kept: the default applies) as an int ≥ ``lo``."""
    from ..arguments import check_whole

    return None if value is None else check_whole(value, name, lo)


#: Default weight of one flit-hop in the objective, per cycle of hop latency (see the module docstring).
GAMMA_PER_HOP_CYCLE = 0.001
#: Smallest default weight of a flit-hop (hop latency 0: hops still break ties).
GAMMA_MIN = 0.0001
#: Points of the annealing trajectory after the greedy start (one every iterations // this proposals).
TRAJECTORY_POINTS = 200
#: Most annealing proposals one placement may ask for (5 random numbers each are drawn up front).
MAX_ANNEAL_ITERATIONS = 20_000_000


def map_tiles(work, hw, *, rho_x: float = 1.0, method: str = "anneal", seed: int = 0,
              iterations: int | None = None, gamma: float | None = None,
              delta: float | None = None, n_brows: int | None = None,
              n_bcols: int | None = None, window: int | None = None,
              temperature: float = 1.0) -> Mapping:
    """Place the tiles of ``work`` on the ``hw.rows × hw.cols`` grid (akf-spec §6).

    Parameters
    ----------
    work : TileWork
    hw : HardwareConfig
    rho_x : float
        Activation density used for the expected event counts.
    method : {"anneal", "greedy"}
    seed : int
        Seed of ``numpy.random.default_rng`` for the annealing moves.
    iterations : int, optional
        Annealing proposals (default ``clip(30 · n_tiles, 20_000, 600_000)``).
    gamma : float, optional
        Weight of a flit-hop in cycles (default ``GAMMA_PER_HOP_CYCLE · hop_latency_cycles``,
        at least ``GAMMA_MIN``).
    delta : float, optional
        Weight of an SRAM overflow byte (default ``1 / dram_bytes_per_cycle``: the cycles the
        shared DRAM needs to stream it).
    n_brows, n_bcols : int, optional
        Row / column blocks of the matrix (default: from ``work.bi`` / ``work.bj``).
    window : int, optional
        Half-width of the move window around the reduction PE (default ``max(4, 2·sqrt(P_used/n_brows))``, ``P_used`` the PEs of the greedy region).
    temperature : float
        Start temperature as a multiple of the default ``T0`` (the mean ``|γ·Δhops|`` of 200
        sampled moves); above 1 the search accepts more uphill moves early.

    Returns
    -------
    Mapping
    """
    from ..arguments import check_real, check_seed
    from .costmodel import check_activation_density, event_work_cycles, final_work_cycles
    from .hardware import HardwareConfig
    from .work import TileWork

    if not isinstance(work, TileWork):
        raise InputError(f"map_tiles places a TileWork (plan.npu_work()), got {type(work).__name__}.")
    if not isinstance(hw, HardwareConfig):
        raise InputError(f"hw must be a HardwareConfig, got {type(hw).__name__}.")
    name = choice(method, MAPPING_METHODS)
    if name is None:
        raise InputError(f"Unknown mapping method {method!r}; use one of {', '.join(MAPPING_METHODS)}.")
    method = name
    seed = check_seed(seed)
    rho_x = check_activation_density(rho_x)
    iterations = _whole(iterations, "iterations", 0)
    if iterations is not None and iterations > MAX_ANNEAL_ITERATIONS:
        raise InputError(f"iterations={iterations:,} is more annealing proposals than akfviz runs (at most "
                         f"{MAX_ANNEAL_ITERATIONS:,}: about 12 s and 0.8 GB of random numbers); the default "
                         "is 30 per tile, between 20,000 and 600,000.")
    window = _whole(window, "window", 1)
    temperature = check_real(temperature, "temperature", 1e-6, 1e6)
    gamma = None if gamma is None else check_real(gamma, "gamma")
    delta = None if delta is None else check_real(delta, "delta")
    n = work.n_tiles
    n_brows, n_bcols = _whole(n_brows, "n_brows", 1), _whole(n_bcols, "n_bcols", 1)
    nbr = int(n_brows if n_brows is not None else (work.bi.max() + 1 if n else 1))
    nbc = int(n_bcols if n_bcols is not None else (work.bj.max() + 1 if n else 1))
    if n and (nbr <= work.bi.max() or nbc <= work.bj.max()):
        raise InputError(f"n_brows={nbr} / n_bcols={nbc} leave tiles outside the block grid "
                         f"(the work reaches row block {int(work.bi.max())}, column block {int(work.bj.max())}).")
    P = hw.n_pes
    ptr = work.col_ptr
    wev = np.concatenate([[0], np.cumsum(event_work_cycles(work, hw))]).astype(np.float64)
    ev_work = rho_x * (wev[ptr[1:]] - wev[ptr[:-1]])
    est = (hw.setup_cycles + ev_work + final_work_cycles(work, hw)).astype(np.float64)
    ev = rho_x * np.diff(ptr).astype(np.float64)
    outr = work.out_rows.astype(np.float64)
    red_load = np.zeros(nbr, dtype=np.float64)
    np.add.at(red_load, work.bi, outr * hw.reduce_cycles)
    payload = work.payload_bytes.astype(np.float64)
    bi = work.bi.astype(np.int64)
    bj = work.bj.astype(np.int64)
    # one PE per tile and per reduction, in a compact corner block when the grid is larger
    snake = compact_snake(hw.rows, hw.cols, n + nbr)
    if n:
        pe, red = _greedy(bi, est, nbr, red_load, snake, hw.cols, P)
    else:
        pe, red = np.zeros(0, np.int64), _greedy(np.zeros(0, np.int64), np.zeros(0), nbr,
                                                  red_load, snake, hw.cols, P)[1]
    src = source_pes(red, nbc, hw.cols)
    t_scale = float(temperature)
    if gamma is None:
        gamma = max(GAMMA_PER_HOP_CYCLE * hw.hop_latency_cycles, GAMMA_MIN)
        # the start temperature scales with γ; at hop latency 0 (γ at its floor) it was a tenth of
        # latency 1's, too cold to leave the greedy start (Dense on 8×3 PEs: 654 cycles against 536
        # at latency 1): anneal from latency 1's temperature, the objective keeping its own γ
        t_scale *= max(gamma, GAMMA_PER_HOP_CYCLE) / gamma
    if delta is None:
        delta = 1.0 / hw.dram_bytes_per_cycle
    sram = float(hw.sram_bytes_per_pe)
    hop = float(hw.hop_latency_cycles)
    mk, hp, ov = _objective_parts(pe, bi, bj, est, ev, outr, payload, red, src, red_load, P,
                                  hw.cols, sram, hop)
    g_obj = mk + gamma * hp + delta * ov
    iters, secs, traj, obj = 0, 0.0, np.array([g_obj]), g_obj
    if method == "anneal" and n >= 1 and P > 1:
        iters = int(iterations if iterations is not None else min(max(30 * n, 20_000), 600_000))
        if window is None:
            window = int(max(4, 2 * np.sqrt(snake.shape[0] / max(nbr, 1))))
        rnd = np.random.default_rng(seed).random(5 * max(iters, 200))
        pe_a = pe.copy()
        t = time.perf_counter()
        obj_a, traj = _anneal(pe_a, bi, bj, est, ev, outr, payload, red, src, red_load, hw.rows,
                              hw.cols, sram, float(gamma), float(delta), hop, iters, int(window), rnd,
                              TRAJECTORY_POINTS, t_scale)
        secs = time.perf_counter() - t
        # exact recomputation (guards against drift of the incremental sums)
        mk2, hp2, ov2 = _objective_parts(pe_a, bi, bj, est, ev, outr, payload, red, src, red_load,
                                         P, hw.cols, sram, hop)
        obj_a = mk2 + gamma * hp2 + delta * ov2
        if obj_a <= g_obj:
            pe, obj, mk, hp, ov = pe_a, obj_a, mk2, hp2, ov2
    return Mapping(pe=pe, red=red, src=src, trajectory=np.asarray(traj, dtype=np.float64),
                   greedy_objective=float(g_obj), objective=float(obj), iterations=iters,
                   iterations_per_s=float(iters / secs) if secs > 0 else 0.0, seconds=secs,
                   method=method, components=dict(makespan_est=mk, hops=hp, overflow_bytes=ov))


#: Registry of mapping methods.
MAPPING_METHODS = ("anneal", "greedy")
