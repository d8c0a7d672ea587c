"""The error–resource front of a selection by merging the units' own fronts (akf-spec §5).

A plan gives every decision unit ``u`` (a cluster, or a tile in tile mode) one kernel ``k_u``. Its
squared error ``Σ_u E[u, k_u]`` and its resource ``Σ_u R[u, k_u]`` are sums over the units (in
cluster mode ``E[u, k]`` and ``R[u, k]`` are sums over the unit's member tiles), so the plans that
no other plan beats on both form the front of a multiple-choice knapsack, built one unit at a time
(dynamic programming)::

    F_0 = {(0, 0)},    F_u = ND(F_{u-1} ⊕ P_u),

where ``P_u`` holds unit ``u``'s own non-dominated kernels, ``⊕`` adds every pair of points, and
``ND`` keeps the points that no other point beats on both coordinates (ties: the first). Every
point of ``F_u`` is a plan of the first ``u`` units; the last front is the selection's.

A multiplier sweep (:mod:`.pareto`) reaches only the corners of this front, its lower convex hull;
the budget modes' plans (:mod:`.budgets`) lie anywhere on it, so a front drawn from corners alone
left them below the line (banded 2048², T = 32, cycles, cluster mode: a 20 % budget's plan at
13.3 % error where the drawn front read 24.8 %).

The fronts can grow with every unit, so each ``F_u`` is thinned to at most ``cap`` points, evenly
spaced along its length in relative error ``√(E / ‖A‖²_F)`` and resource, each scaled by its range
on ``F_u`` (both ends kept). Relative error, not squared error: the budgets are relative errors,
and spaced in squared error the low-error end, where they lie, kept too few points. A thinned front
is no longer exact; the points it keeps are still exact plans, measured as sums of exact per-unit
terms.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit_cached

#: Points kept per intermediate front (see the module docstring).
MERGE_CAP = 4000


@njit_cached
def unit_options(E, R, out):
    """Per row ``u`` of ``E``, ``R`` (n_units, K) the kernels no other kernel of the row beats on both
    (equal on both: the first), sorted by resource then error; written to ``out[u, :n]``.

    Returns the counts ``n`` per row (int64). O(K²) per row: a kernel ``k`` is dropped when some ``j``
    has ``R[j] ≤ R[k]`` and ``E[j] ≤ E[k]`` with one strictly less, or both equal and ``j < k``.
    """
    nu, K = E.shape
    counts = np.zeros(nu, np.int64)
    for u in range(nu):
        n = 0
        for k in range(K):
            dominated = False
            for j in range(K):
                if j == k:
                    continue
                if R[u, j] <= R[u, k] and E[u, j] <= E[u, k]:
                    if R[u, j] < R[u, k] or E[u, j] < E[u, k] or j < k:
                        dominated = True
                        break
            if not dominated:
                # insertion by (R, E): the kept kernels have distinct R and E
                pos = n
                while pos > 0 and R[u, out[u, pos - 1]] > R[u, k]:
                    out[u, pos] = out[u, pos - 1]
                    pos -= 1
                out[u, pos] = k
                n += 1
        counts[u] = n
    return counts


@njit_cached
def merge_unit(e, r, de, dr, out_e, out_r, out_parent, out_option):
    """``ND({(e[i] + de[j], r[i] + dr[j])})`` sorted by resource, written to the ``out_`` arrays.

    ``e, r`` (n): a front, ``r`` ascending and ``e`` strictly descending; ``de, dr`` (p): one unit's
    options in the same order. The ``p`` shifted copies of the front are each sorted, so a ``p``-way
    merge by ``(r, e)`` visits the sums in order and keeps each whose error is below every one
    before it (equal resource and error: the copy of the smaller ``j``). ``out_parent[m] = i``,
    ``out_option[m] = j``. The outputs need room for ``n·p`` points; returns how many were written.
    O(n·p²).
    """
    n = e.size
    p = de.size
    head = np.zeros(p, np.int64)
    best = np.inf
    m = 0
    while True:
        jmin = -1
        rmin = np.inf
        emin = np.inf
        for j in range(p):
            i = head[j]
            if i < n:
                rv = r[i] + dr[j]
                ev = e[i] + de[j]
                if jmin < 0 or rv < rmin or (rv == rmin and ev < emin):
                    jmin = j
                    rmin = rv
                    emin = ev
        if jmin < 0:
            break
        i = head[jmin]
        head[jmin] = i + 1
        if emin < best:
            best = emin
            out_e[m] = emin
            out_r[m] = rmin
            out_parent[m] = i
            out_option[m] = jmin
            m += 1
    return m


@njit_cached
def thin_indices(e2, r, fro2, cap):
    """At most ``cap ≥ 2`` indices of a front (``r`` ascending, ``e2`` descending), evenly spaced along
    its length in relative error ``√(e2 / fro2)`` and resource, each scaled by its range; the first
    and the last always kept. The index of point ``i`` is the first whose length reaches target
    ``t·L / (cap − 1)``, ``t = 0 … cap − 1``, duplicates once (ascending int64)."""
    m = e2.size
    if m <= cap:
        return np.arange(m)
    rel = np.empty(m)
    for i in range(m):
        rel[i] = np.sqrt(max(e2[i], 0.0) / fro2) if fro2 > 0 else 0.0
    span_e = max(rel[0] - rel[m - 1], 1e-300)
    span_r = max(r[m - 1] - r[0], 1e-300)
    length = np.empty(m)
    length[0] = 0.0
    for i in range(1, m):
        length[i] = length[i - 1] + abs(rel[i] - rel[i - 1]) / span_e + abs(r[i] - r[i - 1]) / span_r
    out = np.empty(cap, np.int64)
    k = 0
    i = 0
    for t in range(cap):
        target = length[m - 1] * t / (cap - 1)
        while i < m - 1 and length[i] < target:
            i += 1
        if k == 0 or out[k - 1] != i:
            out[k] = i
            k += 1
    if out[k - 1] != m - 1:
        out[k] = m - 1  # rounding of the last target
        k += 1
    return out[:k]


def merged_front(E, R, unit_size, fro2: float, cap: int = MERGE_CAP, choices: bool = False):
    """The selection's front by merging the units' own fronts (see the module docstring).

    Parameters
    ----------
    E, R : float64 arrays, (n_units, K)
        Squared error and resource of every (unit, kernel): over the unit's member tiles in cluster
        mode (:meth:`.costs.SelectionProblem.member_error_matrix`).
    unit_size : int array, (n_units,)
        Tiles per unit (for the kernel counts).
    fro2 : float
        ``‖A‖²_F``, the scale of the thinning's relative error.
    cap : int ≥ 2
        Points kept per intermediate front.
    choices : bool
        Also return every point's kernel per unit, (P, n_units) int64 (for tests and small problems).

    Returns
    -------
    err2, res : float64 arrays, (P,)
        Squared error and resource of each plan on the front, resource ascending, error descending.
    counts : float64 array, (P, K)
        Tiles per kernel of each plan.
    thinned : bool
        Whether some intermediate front was thinned (the front is then approximate).
    choice : int64 array, (P, n_units), only with ``choices``.
    """
    E = np.ascontiguousarray(E, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    nu, K = E.shape
    size = np.asarray(unit_size, dtype=np.float64)
    opts = np.zeros((nu, K), dtype=np.int64)
    n_opts = unit_options(E, R, opts)
    e = np.zeros(1)
    r = np.zeros(1)
    parents, options = [], []
    thinned = False
    for u in range(nu):
        ks = opts[u, :n_opts[u]]
        room = e.size * ks.size
        out_e, out_r = np.empty(room), np.empty(room)
        out_p, out_o = np.empty(room, np.int64), np.empty(room, np.int64)
        m = merge_unit(e, r, E[u, ks], R[u, ks], out_e, out_r, out_p, out_o)
        keep = thin_indices(out_e[:m], out_r[:m], float(fro2), int(cap))
        thinned |= keep.size < m
        e, r = out_e[keep], out_r[keep]
        parents.append(out_p[keep].astype(np.int32))
        options.append(ks[out_o[keep]].astype(np.int16))
    P = e.size
    counts = np.zeros((P, K))
    choice = np.empty((P, nu), np.int64) if choices else None
    idx = np.arange(P)
    rows = np.arange(P)
    for u in range(nu - 1, -1, -1):
        k = options[u][idx]
        counts[rows, k] += size[u]
        if choices:
            choice[:, u] = k
        idx = parents[u][idx]
    out = (e, r, counts, thinned)
    return out + (choice,) if choices else out
