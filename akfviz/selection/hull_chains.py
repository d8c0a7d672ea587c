"""Each unit's options as a chain along their lower convex hull (akf-spec §5, the budget modes).

A budget mode minimises one quantity ``c`` (resource under an error budget, squared error under a
resource budget) while the other, ``s``, is limited. From a unit's current kernel, the next step of
its chain is the option of lower ``c`` that saves the most ``c`` per unit of ``s`` added,

    k* = argmax_k  (c[cur] − c[k]) / (s[k] − s[cur])   over the options with c[k] < c[cur],

and a step that adds no ``s`` at all is free (efficiency ``+inf``; the lowest ``c`` among them is
taken). Repeating from ``k*`` walks the lower convex hull of the options in the ``(s, c)`` plane, so
the efficiencies along a chain never increase. Taking the steps of all units in order of efficiency
while the budget holds is the classic greedy for the linear relaxation of the multiple-choice
knapsack (:func:`akfviz.selection.budgets._fill`).

``hull_chains`` is the numba kernel; :func:`unit_chains` checks shapes and returns the steps.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit_cached


@njit_cached
def hull_chains(S, C, allowed, cur):
    """Steps of every unit's chain, flat: ``(unit, kernel, efficiency, position in its chain)``.

    ``S``, ``C`` (n, K) float64; ``allowed`` (n, K) bool (the current kernel counts as allowed);
    ``cur`` (n,) int64. Ties of efficiency take the lower ``c`` (the larger saving), then the
    lower kernel index."""
    n, K = S.shape
    step_unit = np.empty(n * K, dtype=np.int64)
    step_k = np.empty(n * K, dtype=np.int64)
    step_eff = np.empty(n * K, dtype=np.float64)
    step_pos = np.empty(n * K, dtype=np.int64)
    m = 0
    for j in range(n):
        at = cur[j]
        pos = 0
        while True:
            nxt = -1
            best_free = False
            best_gain = -1.0
            for k in range(K):
                if not allowed[j, k] or not C[j, k] < C[j, at]:
                    continue
                ds = S[j, k] - S[j, at]
                if ds <= 0.0:
                    # free: lowest c wins, then lowest s, then lowest index
                    if (not best_free or C[j, k] < C[j, nxt]
                            or (C[j, k] == C[j, nxt] and S[j, k] < S[j, nxt])):
                        nxt = k
                        best_free = True
                elif not best_free:
                    gain = (C[j, at] - C[j, k]) / ds
                    if nxt < 0 or gain > best_gain or (gain == best_gain and C[j, k] < C[j, nxt]):
                        nxt = k
                        best_gain = gain
            if nxt < 0:
                break
            step_unit[m] = j
            step_k[m] = nxt
            step_eff[m] = np.inf if best_free else best_gain
            step_pos[m] = pos
            m += 1
            pos += 1
            at = nxt
    return step_unit[:m], step_k[:m], step_eff[:m], step_pos[:m]


def unit_chains(S, C, allowed, cur):
    """Validated call of :func:`hull_chains`, the steps sorted in the order the greedy takes
    them: efficiency descending, then unit, then position in the unit's chain (so a unit's steps
    come in walking order, also when two of them tie).

    Returns
    -------
    unit, kernel : int64 arrays
    efficiency : float64 array
    """
    S = np.ascontiguousarray(S, dtype=np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    allowed = np.ascontiguousarray(allowed, dtype=np.bool_)
    cur = np.ascontiguousarray(cur, dtype=np.int64)
    if S.ndim != 2 or S.shape != C.shape or S.shape != allowed.shape or cur.shape != (S.shape[0],):
        raise ValueError("unit_chains: S, C, allowed must be (n, K) and cur (n,)")
    if S.shape[0] == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e.copy(), np.zeros(0, dtype=np.float64)
    if cur.min() < 0 or cur.max() >= S.shape[1]:
        raise ValueError("unit_chains: cur holds a kernel index outside 0..K-1")
    allowed = allowed.copy()
    allowed[np.arange(S.shape[0]), cur] = True
    u, k, eff, pos = hull_chains(S, C, allowed, cur)
    order = np.lexsort((pos, u, -eff))
    return u[order], k[order], eff[order]
