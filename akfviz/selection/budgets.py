"""Adaptive alpha/beta: the error-budget and resource-budget modes (akf-spec §5).

Both search the multiplier ``λ = alpha / beta`` of the cost ``λ·E/‖A‖² + R/R_dense`` by bisection
on ``log10 λ`` in ``[LOG_LAM_MIN, LOG_LAM_MAX]``, besides the two ends ``λ = 0`` (resource only,
error breaks ties) and ``λ = ∞`` (error only, resource breaks ties). Every evaluated choice is
measured on every member tile (:meth:`.costs.SelectionProblem.evaluate`: exact errors, the table's
resources), and the answer is the best *feasible* plan seen during the search:

* error budget ``eps``: least resource among the plans with relative error ``≤ eps``
  (``eps = 0``: an exact plan of least resource — per unit the lossless candidates and the lossy
  ones that reproduce every member tile bit for bit, e.g. NM2:4 on complying tiles; a zero E
  alone is not enough (:func:`_reproduced`);
  when no plan of the full search is feasible — possible in cluster mode — the search is repeated
  without the lossy kernels that are exact on a representative but not on every member, whose
  λ = ∞ end is the ``eps = 0`` plan: feasible, and never cheaper than the answer);
* resource budget ``b`` (a share of ``R_dense``): least error among the plans with
  resource ``≤ b·R_dense``.

Per tile the chosen kernel's error is non-increasing in λ (a parametric argmin), so the search is a
proper bisection in tile mode; in cluster mode the member errors need not be monotone, which is why
every evaluated plan is kept and the best feasible one returned.

A multiplier only reaches the corners of the error–resource front. After the bisection, a greedy
fill (:func:`_fill`) moves the units that differ between the bracket's two plans, one switch per
unit in order of benefit per cost, while the budget holds; the result is kept when it is better
(trace row with ``lambda`` NaN).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..arguments import check_real
from ..errors import InputError

LOG_LAM_MIN, LOG_LAM_MAX = -12.0, 12.0
MAX_BISECTIONS = 40


@dataclass(frozen=True, eq=False)
class BudgetResult:
    """Outcome of a budget search: the chosen per-unit kernels, the effective multiplier, the
    measured error and resource, and the search trace (``lambda, error, resource, feasible``)."""

    choice: np.ndarray
    multiplier: float
    error: float
    resource: float
    trace: pd.DataFrame
    mode: str
    budget: float
    #: The candidates the search allowed, (n_units, K) or (K,) bool; None: all of them.
    mask: np.ndarray | None = None


def check_budget(value, name: str, upper=None) -> float:
    """A budget (relative error, or share of the Dense resource) as a float in ``[0, upper]``."""
    return check_real(value, name, 0.0, upper)


def _search(problem, feasible, better, mask=None, spend_resource=False):
    trace = []
    seen = {}

    def ev(lam):
        choice = problem.argmin(lam, 1.0, mask=mask)
        key = choice.tobytes()
        if key not in seen:
            seen[key] = problem.evaluate(choice)
        err, res = seen[key]
        ok = feasible(err, res)
        trace.append((lam, err, res, ok))
        return choice, err, res, ok

    results = [ev(0.0), ev(np.inf)]
    lo_ok, hi_ok = results[0][3], results[1][3]
    if lo_ok != hi_ok:
        lo, hi = LOG_LAM_MIN, LOG_LAM_MAX
        c_lo, c_hi = results[0][0], results[1][0]
        for _ in range(MAX_BISECTIONS):
            if hi - lo < 1e-3 or np.array_equal(c_lo, c_hi):
                break
            mid = 0.5 * (lo + hi)
            r = ev(10.0 ** mid)
            results.append(r)
            if r[3] == lo_ok:
                lo, c_lo = mid, r[0]
            else:
                hi, c_hi = mid, r[0]
    best, best_lam = None, None
    for (choice, err, res, ok), t in zip(results, trace):
        if ok and (best is None or better((err, res), best[1:3])):
            best, best_lam = (choice, err, res), t[0]
    if best is not None and lo_ok != hi_ok:
        # the bracket's infeasible end: move units towards it while the budget holds
        target = c_hi if lo_ok else c_lo
        filled = _fill(problem, best[0], target, feasible, spend_resource, mask)
        if filled is not None:
            err, res = problem.evaluate(filled)
            ok = feasible(err, res)
            trace.append((np.nan, err, res, ok))
            if ok and better((err, res), best[1:3]):
                best = (filled, err, res)
    df = pd.DataFrame(trace, columns=["lambda", "error", "resource", "feasible"])
    return best, best_lam, df


def _fill(problem, start, target, feasible, spend_resource: bool, mask=None):
    """Greedy step between two plans of the search (a multiple-choice knapsack between adjacent
    Lagrangian solutions): the units whose kernel differs between the feasible ``start`` and the
    infeasible ``target`` may each switch to any candidate kernel; switches are taken in order of
    what they buy per unit of what they cost (error saved per resource added, or resource saved
    per error added), one per unit, skipping any that would break the budget. The multiplier
    alone only reaches the corners of the error–resource front, so a budget between two corners
    was met by the cheaper corner with room left (resource budget 0.5 answered with 0.26 × Dense
    at 60 % error). ``mask`` keeps the search's candidate restriction ((K,) or (n_units, K)).
    Returns the new choice, or None when nothing moves.
    """
    start = np.asarray(start, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    diff = np.flatnonzero(start != target)
    if diff.size == 0:
        return None
    nu, K = problem.n_units, len(problem.names)
    E_start = problem.member_error_sums(start)
    Rall = problem.member_resource_sums()
    err2 = float(E_start.sum())
    res = float(Rall[np.arange(nu), start].sum())
    fro2 = problem.fro2 if problem.fro2 > 0 else 1.0
    dE = np.empty((diff.size, K))
    for k in range(K):  # member error sums of the differing units only (cached per unit, kernel)
        trial = start.copy()
        trial[diff] = k
        dE[:, k] = problem.member_error_sums(trial)[diff] - E_start[diff]
    dR = Rall[diff] - Rall[diff, start[diff]][:, None]
    useful = (dE < 0) | (dR < 0)
    if mask is not None:
        useful &= mask[diff] if mask.ndim == 2 else mask[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dR > 0, -dE / dR, np.inf) if spend_resource else np.where(dE > 0, -dR / dE, np.inf)
    ratio = np.where(useful, ratio, -np.inf)
    choice = start.copy()
    done = np.zeros(diff.size, dtype=bool)
    moved = False
    for flat in np.argsort(-ratio, axis=None, kind="stable"):
        j, k = divmod(int(flat), K)
        if ratio[j, k] == -np.inf:
            break  # only useless or excluded switches remain
        if done[j]:
            continue
        e_new, r_new = err2 + dE[j, k], res + dR[j, k]
        if feasible(float(np.sqrt(max(e_new, 0.0) / fro2)), r_new):
            err2, res = e_new, r_new
            choice[diff[j]] = k
            done[j] = moved = True
    return choice if moved else None


def solve_error_budget(problem, eps: float) -> BudgetResult:
    """Least-resource plan with relative error ≤ ``eps`` (see the module docstring)."""
    eps = check_budget(eps, "error_budget")
    mask = None
    if eps == 0.0:
        if not problem.lossless.any():
            return _exact_without_lossless(problem)
        mask = _exact_mask(problem)
    feasible = lambda e, r: e <= eps  # noqa: E731
    better = lambda a, b: (a[1], a[0]) < (b[1], b[0])  # noqa: E731
    best, lam, trace = _search(problem, feasible, better, mask=mask)
    if best is None and mask is None and problem.lossless.any():
        # In cluster mode a kernel exact on the representative (e.g. PRUNE50 or LOWRANK1 on a
        # one-nonzero tile) can still be lossy on other members, so even λ = ∞ may miss eps.
        # Search again without those pairs unless they reproduce every member (what eps = 0
        # allows); every lossy kernel with a nonzero E stays a candidate. λ = ∞ is then the
        # eps = 0 plan (error 0, feasible), so a budget never gets a plan that costs more than
        # the exact one. (It searched the lossless kernels alone: every budget from 1e-6 to 5 %
        # got error 0 at more resource than error_budget=0 — held-out probe, uniform 512², T = 16.)
        honest = members_exact_mask(problem)
        if honest is not None:
            best, lam, extra = _search(problem, feasible, better, mask=honest)
            trace = pd.concat([trace, extra], ignore_index=True)
    if best is None:
        emin = float(trace["error"].min())
        raise InputError(
            f"No plan with these candidate kernels reaches relative error ≤ {eps:g}; the smallest "
            f"reachable is {emin:.3g}. Raise the error budget or add lossless kernels."
        )
    return BudgetResult(best[0], float(lam), best[1], best[2], trace, "error_budget", eps, mask)


def members_exact_mask(problem) -> np.ndarray | None:
    """(units × kernels) every candidate pair except the lossy kernels with E = 0 on a unit's
    representative that do not reproduce every member tile (in cluster mode PRUNE50 or LOWRANK1 on a
    one-nonzero medoid "look exact" and drop entries of the other members); None when no lossy pair
    has E = 0, so there is nothing to exclude. Used by the error-budget fallback and by the second
    sweep of :func:`akfviz.selection.pareto.pareto_front`."""
    claimed = (problem.E == 0.0) & ~problem.lossless[None, :]
    return (~claimed | _exact_mask(problem)) if claimed.any() else None


def _exact_mask(problem) -> np.ndarray:
    """(units × kernels) the pairs an exact plan may use: the lossless kernels, and per unit the
    lossy ones that reproduce every member tile bit for bit (NM2:4 on a complying tile) —
    checked only where they cost less than the unit's cheapest lossless kernel (the check
    decodes every member tile; the others would never be chosen)."""
    best_lossless = np.where(problem.lossless[None, :], problem.Rn, np.inf).min(axis=1, keepdims=True)
    lossy_exact = (problem.E == 0.0) & ~problem.lossless[None, :] & (problem.Rn < best_lossless)
    return problem.lossless[None, :] | (_reproduced(problem, lossy_exact) if lossy_exact.any()
                                        else lossy_exact)


def _exact_without_lossless(problem) -> BudgetResult:
    """``error_budget=0`` when no candidate is lossless: a lossy kernel can still be exact on
    a tile (N:M on a complying tile, QUANT8 on a tile whose values are its grid points). Each
    unit may use the kernels that reproduce every member tile bit for bit
    (:func:`akfviz.kernels.base.reproduces_exactly`: ``E == 0`` is not enough — squares of
    tiny entries underflow, and LOWRANK's E is the exact-arithmetic tail of the singular
    values while its product carries rounding); the plan is accepted only when its error is 0."""
    exact = _reproduced(problem, problem.E == 0.0)
    feasible = lambda e, r: e == 0.0  # noqa: E731
    better = lambda a, b: (a[1], a[0]) < (b[1], b[0])  # noqa: E731
    best, lam, trace = (None, None, None) if not exact.any(axis=1).all() else \
        _search(problem, feasible, better, mask=exact)
    if best is None:
        lowrank = any(k.family == "LOWRANK" for k in problem.kernels)
        raise InputError(
            "error_budget=0 asks for an exact plan, but none of the candidate kernels "
            f"({', '.join(problem.names)}) is lossless and they are not exact on every tile (their "
            "decoded tiles differ from the originals" + (": LOWRANK's factors carry rounding of "
            "about 1e-16 even where the rank fits" if lowrank else "") + "); add e.g. CSC or DENSE"
            + (", or allow a tiny error budget such as 1e-12." if lowrank else "."))
    return BudgetResult(best[0], float(lam), best[1], best[2], trace, "error_budget", 0.0, exact)


def _reproduced(problem, exact: np.ndarray) -> np.ndarray:
    """``exact`` (units × kernels, where E == 0) narrowed to the pairs whose kernel reproduces
    every member tile of the unit bit for bit (checked on the members, not the representative)."""
    from ..kernels.base import reproduces_exactly

    exact = exact.copy()
    for k, kernel in enumerate(problem.kernels):
        if not exact[:, k].any():
            continue
        tiles = np.flatnonzero(exact[problem.unit_of_tile, k])
        ok = reproduces_exactly(kernel, problem.ts, tiles)
        exact[np.unique(problem.unit_of_tile[tiles[~ok]]), k] = False
    return exact


def solve_resource_budget(problem, share: float) -> BudgetResult:
    """Least-error plan with resource ≤ ``share · R_dense`` (see the module docstring)."""
    share = check_budget(share, "resource_budget")
    limit = share * problem.R_dense
    best, lam, trace = _search(problem, lambda e, r: r <= limit * (1 + 1e-12),
                               lambda a, b: (a[0], a[1]) < (b[0], b[1]), spend_resource=True)
    if best is None:
        rmin = float(trace["resource"].min()) / problem.R_dense if problem.R_dense > 0 else 0.0
        raise InputError(
            f"No plan with these candidate kernels uses at most {share:.4g} of the Dense "
            f"{problem.resource}; the cheapest needs {rmin:.4g}. Raise the resource budget or add "
            "cheaper kernels (e.g. SKIP)."
        )
    return BudgetResult(best[0], float(lam), best[1], best[2], trace, "resource_budget", share)
