"""Exchange search: the last step of the budget modes (akf-spec §5, adaptive alpha/beta).

A budget mode picks one kernel per unit to minimise ``Σ_u c[u, k_u]`` subject to
``Σ_u s[u, k_u] ≤ cap`` — a multiple-choice knapsack. Under an error budget ``s`` is the squared
error (``cap = eps²·‖A‖²_F``) and ``c`` the resource; under a resource budget ``s`` is the resource
(``cap = b·R_dense``) and ``c`` the squared error. The multiplier search and the greedy fill of
:mod:`.budgets` end at the linear relaxation's rounding; one unit that cannot take its next step
can leave budget unused that a *pair* of changes would spend (held-out measurement, forty-seventh
session: up to 11.9 % more error than the optimum on a uniform 300² matrix in cluster mode,
2.8 % on the 5-point stencil in tile mode).

From a feasible plan, each round takes the best improving move of one of two kinds:

* a **single** change ``(u, k)``: ``Δs ≤ slack`` and ``Δc < 0``;
* a **pair** of changes in two different units, ``(v, l)`` that gains (``Δc < 0``) but does not fit
  alone (``Δs > slack``) and ``(u, k)`` that releases budget (``Δs < 0``), with
  ``Δs_vl + Δs_uk ≤ slack``; the pair minimising ``Δc_vl + Δc_uk < 0``.

with ``Δs = s[u, k] − s[u, cur_u]``, ``Δc`` likewise and ``slack = cap − Σ s``. The release moves are
sorted by ``Δs``; a prefix minimum of ``Δc`` (best and best of another unit) answers each gain move's
"cheapest release of at least this much" by binary search, so a round costs ``O(M log M)`` for
``M = units × kernels`` moves. Rounds repeat until no move improves ``Σ c`` by more than a relative
``rtol`` (or ``max_rounds``). Every round strictly improves, so the search ends; it is deterministic
(ties: the first move in unit-major order, the release moves in a stable sort).

``exchange_rounds`` is the numba kernel; :func:`exchange` checks its inputs.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit_cached
from ..errors import InputError

#: Rounds at most (each strictly improves the objective).
MAX_ROUNDS = 200
#: A move must improve ``Σ c`` by more than this share of it (rounding noise is no improvement).
RTOL = 1e-12


@njit_cached
def exchange_rounds(S, C, allowed, cur, cap, max_rounds, rtol):
    """Improve ``cur`` in place by single and pair moves (see the module docstring).

    ``S``, ``C`` (n, K) float64, finite where ``allowed``; ``allowed`` (n, K) bool; ``cur`` (n,) int64,
    a feasible plan (``Σ S[u, cur[u]] ≤ cap``) on allowed options. Returns the number of moves made
    (0 to ``max_rounds``)."""
    n, K = S.shape
    M = n * K
    rel_ds = np.empty(M, dtype=np.float64)
    rel_dc = np.empty(M, dtype=np.float64)
    rel_id = np.empty(M, dtype=np.int64)
    gain_ds = np.empty(M, dtype=np.float64)
    gain_dc = np.empty(M, dtype=np.float64)
    gain_id = np.empty(M, dtype=np.int64)
    for rnd in range(max_rounds):
        s_tot = 0.0
        c_tot = 0.0
        for u in range(n):
            s_tot += S[u, cur[u]]
            c_tot += C[u, cur[u]]
        slack = cap - s_tot
        best = -rtol * max(abs(c_tot), 1e-300)
        m1 = -1
        m2 = -1
        nr = 0
        ng = 0
        for u in range(n):
            cu = cur[u]
            for k in range(K):
                if k == cu or not allowed[u, k]:
                    continue
                ds = S[u, k] - S[u, cu]
                dc = C[u, k] - C[u, cu]
                if ds <= slack:
                    if dc < best:
                        best = dc
                        m1 = u * K + k
                        m2 = -1
                elif dc < 0.0:
                    gain_ds[ng] = ds
                    gain_dc[ng] = dc
                    gain_id[ng] = u * K + k
                    ng += 1
                if ds < 0.0:
                    rel_ds[nr] = ds
                    rel_dc[nr] = dc
                    rel_id[nr] = u * K + k
                    nr += 1
        if nr > 0 and ng > 0:
            order = np.argsort(rel_ds[:nr], kind="mergesort")
            sds = rel_ds[:nr][order]
            sdc = rel_dc[:nr][order]
            sid = rel_id[:nr][order]
            # prefix over the sorted releases: the least Δc, and the least Δc of another unit
            b1 = np.empty(nr, dtype=np.int64)
            b2 = np.empty(nr, dtype=np.int64)
            i1 = 0
            i2 = -1
            b1[0] = 0
            b2[0] = -1
            for i in range(1, nr):
                if sdc[i] < sdc[i1]:
                    if sid[i] // K != sid[i1] // K:
                        i2 = i1
                    i1 = i
                elif sid[i] // K != sid[i1] // K and (i2 < 0 or sdc[i] < sdc[i2]):
                    i2 = i
                b1[i] = i1
                b2[i] = i2
            for g in range(ng):
                need = slack - gain_ds[g]            # the release must have Δs ≤ need (< 0)
                p = np.searchsorted(sds, need, side="right") - 1
                if p < 0:
                    continue
                j = b1[p]
                if sid[j] // K == gain_id[g] // K:
                    j = b2[p]
                    if j < 0:
                        continue
                tot = gain_dc[g] + sdc[j]
                if tot < best:
                    best = tot
                    m1 = gain_id[g]
                    m2 = sid[j]
        if m1 < 0:
            return rnd
        cur[m1 // K] = m1 % K
        if m2 >= 0:
            cur[m2 // K] = m2 % K
    return max_rounds


def exchange(S, C, cur, cap, allowed=None, max_rounds: int = MAX_ROUNDS, rtol: float = RTOL):
    """The plan ``cur`` improved by single and pair moves within ``Σ s ≤ cap`` (module docstring).

    Parameters
    ----------
    S, C : array_like, (n_units, K)
        The limited and the minimised quantity per (unit, option); ``NaN`` or ``inf`` entries are
        not allowed options.
    cur : array_like of int, (n_units,)
        A plan on allowed options with ``Σ S[u, cur[u]] ≤ cap``.
    cap : float
        The budget on ``Σ S``.
    allowed : array_like of bool, (n_units, K) or (K,), optional
        Options the plan may use (default: every finite one).

    Returns
    -------
    (choice, moves) : (int64 array (n_units,), int)
        The improved plan (a new array) and the number of moves made.

    Raises
    ------
    InputError
        Shapes that do not match, ``cur`` on a forbidden option or out of range, or a ``cur`` that
        does not fit ``cap``.
    """
    S = np.ascontiguousarray(S, dtype=np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    if S.ndim != 2 or S.shape != C.shape:
        raise InputError(f"exchange: S and C must be (units, kernels) arrays of one shape, got {S.shape} and {C.shape}.")
    n, K = S.shape
    choice = np.array(cur, dtype=np.int64).reshape(-1)
    if choice.shape[0] != n or (n and (choice.min() < 0 or choice.max() >= K)):
        raise InputError(f"exchange: cur must hold one kernel index in 0..{K - 1} per unit ({n} units).")
    ok = np.isfinite(S) & np.isfinite(C)
    if allowed is not None:
        ok &= np.broadcast_to(np.asarray(allowed, dtype=bool), (n, K))
    rows = np.arange(n)
    if n and not ok[rows, choice].all():
        raise InputError("exchange: cur uses an option that is not allowed or not finite.")
    if not float(S[rows, choice].sum()) <= float(cap):
        raise InputError("exchange: cur does not fit the budget it should keep.")
    if n == 0:
        return choice, 0
    moves = exchange_rounds(S, C, np.ascontiguousarray(ok), choice, float(cap), int(max_rounds), float(rtol))
    return choice, int(moves)
