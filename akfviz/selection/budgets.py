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
fill (:func:`_fill`) moves the units that differ between the bracket's two plans along their
options' lower convex hulls, steps in order of benefit per cost, while the budget holds; the result
is kept when it is better. Then, each kept when better:

* a small problem (at most :data:`EXACT_MAX_UNITS` units, :data:`EXACT_MAX_TILES` tiles) is solved
  exactly on its merged error–resource front (:func:`_exact_small`);
* a medium one (up to :data:`FRONT_MAX_UNITS` units) takes the best plan of its thinned merged
  front (:func:`_thinned_front`);
* the best plan so far is improved by single and pair moves between units
  (:func:`_exchange_step`, :mod:`.exchange`) over the options whose member errors are known.

Against exact optima (scipy's MILP over the selector's own member sums, ``bench/bench_budget_gap.py``:
156 budgets on seven generated matrices; a dynamic programme on integer problems in the tests) the
search and fill alone were up to 15.3 % off (cluster mode, a few large clusters); with these steps
0.28 % at most, one case above 0.1 %.

The trace has a row per plan measured: ``lambda, error, resource, feasible, step, kept`` with
``step`` ``search`` (a multiplier's plan), ``fill``, ``exact``, ``front`` or ``exchange`` (``lambda``
NaN), and ``kept`` True on the row of the plan returned (:func:`kept_step`).
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


#: What each step of the budget search is, for the trace's ``step`` column (one line each).
STEP_NAMES = {
    "search": "a multiplier of the bisection (the argmin of λ·E/‖A‖² + R/R_dense)",
    "fill": "the greedy fill between the bracket's two plans",
    "exact": "the exact merged error–resource front (small problem)",
    "front": "the thinned merged error–resource front (medium problem)",
    "exchange": "single and pair moves between units after the other steps",
}


def kept_step(trace: pd.DataFrame) -> str | None:
    """The ``step`` of the trace row marked ``kept`` (the plan the search returned); None when the
    trace has no such row (or no ``kept`` column)."""
    if trace is None or "kept" not in trace.columns:
        return None
    hit = trace.loc[trace["kept"].astype(bool), "step"]
    return str(hit.iloc[0]) if len(hit) else None


def check_budget(value, name: str, upper=None) -> float:
    """A budget (relative error, or share of the Dense resource) as a float in ``[0, upper]``."""
    return check_real(value, name, 0.0, upper)


def _search(problem, feasible, better, mask=None, spend_resource=False, cap=None):
    trace = []
    seen = {}

    def ev(lam):
        choice = problem.argmin(lam, 1.0, mask=mask)
        key = choice.tobytes()
        if key not in seen:
            seen[key] = problem.evaluate(choice)
        err, res = seen[key]
        ok = feasible(err, res)
        trace.append((lam, err, res, ok, "search"))
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
    best, best_lam, best_row = None, None, None
    for i, ((choice, err, res, ok), t) in enumerate(zip(results, trace)):
        if ok and (best is None or better((err, res), best[1:3])):
            best, best_lam, best_row = (choice, err, res), t[0], i

    def consider(choice, step):
        # a plan of a step after the multipliers: measured, traced (lambda NaN), kept when feasible
        # and better; the multiplier reported stays the search's (the selector's argmin and costs
        # read it). When no multiplier's plan was feasible (cluster mode: λ = ∞ decides on
        # representatives that look exact) it is the search's end nearest the budget — error first
        # for an error budget, resource first for a resource budget — never NaN (a probe found the
        # report's costs all NaN)
        nonlocal best, best_lam, best_row
        if choice is None or (best is not None and np.array_equal(choice, best[0])):
            return
        err, res = problem.evaluate(choice)
        ok = feasible(err, res)
        trace.append((np.nan, err, res, ok, step))
        if ok and (best is None or better((err, res), best[1:3])):
            if best is None:
                best_lam = 0.0 if spend_resource else np.inf
            best, best_row = (choice, err, res), len(trace) - 1

    if best is not None:
        # the bracket's infeasible end: move units towards it while the budget holds. With both
        # ends feasible, the other end: in cluster mode λ = ∞ chooses on the representatives, so
        # a kernel exact there (QUANT8 on a 9-point stencil) can still lose to an exact one on
        # the members (resource budget 5 %: 0.13 % error where CSC fits with none)
        if lo_ok != hi_ok:
            target = c_hi if lo_ok else c_lo
        else:
            target = results[1][0] if np.array_equal(best[0], results[0][0]) else results[0][0]
        consider(_fill(problem, best[0], target, feasible, spend_resource, mask), "fill")
    consider(_exact_small(problem, feasible, spend_resource, mask), "exact")
    consider(_thinned_front(problem, feasible, spend_resource, mask), "front")
    if best is not None and cap is not None:
        consider(_exchange_step(problem, best[0], cap, spend_resource, mask), "exchange")
    df = pd.DataFrame(trace, columns=["lambda", "error", "resource", "feasible", "step"])
    df["kept"] = np.arange(len(df)) == (-1 if best_row is None else best_row)
    return best, best_lam, df


#: A problem of at most this many units and tiles is also solved exactly (:func:`_exact_small`). The
#: tile limit bounds the member errors it may add: LOWRANK's SVDs cost ≈ 60 µs a tile per rank (2,304
#: tiles of 32×32 at 10 %: +160 ms to a budget selection of 20 ms).
EXACT_MAX_UNITS = 64
EXACT_MAX_TILES = 5_000


def _exact_small(problem, feasible, spend_resource: bool, mask=None):
    """The exact answer of a small budget problem, or None: the plan of the error–resource front
    that the budget allows and that is best in what the mode minimises.

    The front is every plan no other plan beats on both squared error and resource, merged unit by
    unit from the units' own fronts (:func:`.front_merge.merged_front`, exact when not thinned), over
    the member sums of every (unit, kernel) allowed by ``mask``. The multiplier search and the greedy
    fill reach a front's corners and the relaxation's rounding; on a few units one unit's rounding
    is much of the plan (a three-cluster problem, cycles, error budget 0.3: the fill's plan cost 3.9 %
    more than the best within the budget). Only for at most :data:`EXACT_MAX_UNITS` units and
    :data:`EXACT_MAX_TILES` tiles, where the member errors it needs are cheap (:func:`_front_inputs`).
    Ties: the least of the other quantity, then the front's order."""
    nu = int(problem.n_units)
    if nu == 0 or nu > EXACT_MAX_UNITS or int(getattr(problem, "n_tiles", nu)) > EXACT_MAX_TILES:
        return None
    return _front_choice(problem, feasible, spend_resource, mask, allow_thinned=False)


#: Problems of more than :data:`EXACT_MAX_UNITS` and at most this many units (and at most
#: :data:`EXACT_MAX_TILES` tiles) also take the best plan of their thinned front
#: (:func:`_thinned_front`): merging costs ≈ 0.4 ms a unit at the front's cap of 4,000 points.
FRONT_MAX_UNITS = 256
#: Points the thinned front keeps after each unit (its merge costs in proportion).
FRONT_CAP = 4000


def _thinned_front(problem, feasible, spend_resource: bool, mask=None):
    """A candidate for a medium-sized budget problem, or None: the best plan within the budget on its
    merged front, thinned to :data:`.front_merge.MERGE_CAP` points after each unit (approximate, so
    it is measured like every other candidate and kept only when better).

    Why: in cluster mode the multiplier chooses on the representatives, and a few clusters can hold
    most of the matrix, so the search and the fill can end far from the optimum (forty-seventh
    session, against a MILP optimum: power-law 512², T = 32, 111 clusters, energy, error budget 0.5:
    15.3 % more energy; this step: 0.13 %, 54 ms). For more than :data:`EXACT_MAX_UNITS` and at most
    :data:`FRONT_MAX_UNITS` units and :data:`EXACT_MAX_TILES` tiles."""
    nu = int(problem.n_units)
    if not EXACT_MAX_UNITS < nu <= FRONT_MAX_UNITS or int(getattr(problem, "n_tiles", nu)) > EXACT_MAX_TILES:
        return None
    return _front_choice(problem, feasible, spend_resource, mask, allow_thinned=True, cap=FRONT_CAP)


def _front_choice(problem, feasible, spend_resource: bool, mask, allow_thinned: bool, cap=None):
    """The plan of the merged front (thinned only when ``allow_thinned``) that the budget allows
    and that is best in what the mode minimises; ties: the least of the other quantity, then the
    front's order. None when no point fits, an option of some unit has no known error, or the front
    was thinned and that is not allowed."""
    from .front_merge import merged_front

    E, R = _front_inputs(problem, mask)
    if not np.isfinite(E).any(axis=1).all():
        return None
    kw = {} if cap is None else {"cap": int(cap)}
    err2, res, _, thinned, choice = merged_front(E, R, problem.unit_size, problem.fro2, choices=True, **kw)
    if (thinned and not allow_thinned) or err2.size == 0:
        return None
    fro2 = problem.fro2 if problem.fro2 > 0 else 1.0
    rel = np.sqrt(np.maximum(err2, 0.0) / fro2) if problem.fro2 > 0 else np.zeros(err2.size)
    ok = np.isfinite(err2) & np.isfinite(res) & np.asarray(feasible(rel, res), dtype=bool)
    if not ok.any():
        return None
    keys = (err2, res) if spend_resource else (res, err2)
    order = np.lexsort((np.arange(err2.size), keys[1], keys[0]))
    best = order[ok[order]][0]
    return np.asarray(choice[best], dtype=np.int64)


#: The exchange step (:func:`_exchange_step`) runs on problems of at most this many (unit, kernel)
#: pairs: a round costs ≈ 1.2 ms for 85,000 pairs, and it makes at most ``exchange.MAX_ROUNDS``.
EXCHANGE_MAX_MOVES = 400_000


def _exchange_step(problem, start, cap: float, spend_resource: bool, mask=None):
    """``start`` improved by single and pair moves (:func:`.exchange.exchange`), or None.

    Moves use the options whose member errors are already known — every option in tile mode, those
    the search, the fill and the front steps measured in cluster mode — so the step runs no kernel.
    ``cap`` is the budget on the limited quantity: ``eps²·‖A‖²`` on the squared error, or
    ``b·R_dense`` on the resource. The squared-error cap is shrunk by a relative 1e-12 so rounding
    cannot turn ``Σ E ≤ cap`` into a relative error just above ``eps`` (the plan is measured and
    checked again by the search anyway). Problems of more than :data:`EXCHANGE_MAX_MOVES` pairs
    are skipped."""
    from .exchange import exchange

    known = getattr(problem, "known_member_error_sums", None)
    nu, K = int(problem.n_units), len(problem.names)
    if known is None or nu == 0 or nu * K > EXCHANGE_MAX_MOVES:
        return None
    E = np.array(known(), dtype=np.float64)
    R = np.asarray(problem.member_resource_sums(), dtype=np.float64)
    allowed = np.isfinite(E) & np.isfinite(R)
    if mask is not None:
        allowed &= np.broadcast_to(np.asarray(mask, dtype=bool), (nu, K))
    start = np.asarray(start, dtype=np.int64)
    rows = np.arange(nu)
    if not allowed[rows, start].all():
        return None
    S, C = (R, E) if spend_resource else (E, R)
    cap = float(cap) if spend_resource else float(cap) * (1.0 - 1e-12)
    cap = max(cap, float(S[rows, start].sum()))
    choice, moves = exchange(S, C, start, cap, allowed)
    return choice if moves else None


def _front_inputs(problem, mask=None):
    """``(E, R)`` (n_units, K) for the exact front: member sums of error and resource, ``inf`` where
    ``mask`` forbids the pair or where a lossless kernel of the unit costs no more (error 0 and no
    more resource: that option is never on the front, so its member errors are not computed — a
    LOWRANK rank's cost about 130 ms on 2,304 tiles)."""
    R = np.array(problem.member_resource_sums(), dtype=np.float64)
    nu, K = R.shape
    allowed = np.ones((nu, K), dtype=bool) if mask is None else \
        np.array(np.broadcast_to(mask if mask.ndim == 2 else mask[None, :], (nu, K)), dtype=bool)
    lossless = np.asarray(problem.lossless, dtype=bool)
    E = np.full((nu, K), np.inf)
    free = allowed & lossless[None, :]
    E[free] = 0.0
    cheapest = np.where(free, R, np.inf).min(axis=1)
    need = allowed & ~lossless[None, :] & (R < cheapest[:, None])
    if need.any():
        base = np.argmax(free, axis=1) if free.any(axis=1).all() else None
        for k in np.flatnonzero(need.any(axis=0)):
            rows = np.flatnonzero(need[:, k])
            if base is None:   # no lossless option in some unit: every unit's sum of kernel k
                trial = np.full(nu, k, dtype=np.int64)
            else:              # the other units on a lossless kernel, whose sums are known zeros
                trial = base.astype(np.int64)
                trial[rows] = k
            E[rows, k] = np.asarray(problem.member_error_sums(trial), dtype=np.float64)[rows]
    R[~allowed] = np.inf
    return E, R


#: In cluster mode the greedy fill may move every cluster, not only those whose kernel differs
#: between the bracket's two plans, when the clusters hold at most this many tiles: it needs every
#: kernel's exact error on every member tile (≈ 1.7 s for 950k one-nonzero tiles).
FILL_ALL_UNITS_MAX_TILES = 200_000


def _fill(problem, start, target, feasible, spend_resource: bool, mask=None):
    """Greedy fill between two plans of the search: the classic greedy of the linear relaxation
    of a multiple-choice knapsack.

    Which units may move: those whose kernel differs between the feasible ``start`` and the
    infeasible ``target`` (in tile mode the relaxation's optimum lies between two adjacent
    multipliers' plans, which differ only there). In cluster mode the multiplier chooses on the
    representatives but the budget counts every member, so every cluster may move when they hold
    at most :data:`FILL_ALL_UNITS_MAX_TILES` tiles.

    Per unit, the options form a chain along their lower convex hull
    (:mod:`.hull_chains`): for an error budget, resource saved per unit of squared error added;
    for a resource budget, error saved per unit of resource added. The steps of all units are
    taken in order of that efficiency while the budget holds; a unit whose next step breaks it
    stops there. A last pass gives each unit the single switch that saves the most of what the
    mode minimises and still fits. Also tried: the single switch that saves the most on its own,
    then the room left (the greedy alone can fill the budget with small steps that leave no room
    for one large one); the better of the two answers is returned.

    The multiplier alone reaches only the corners of the error–resource front, so a budget
    between two corners was met by the cheaper corner with room left (resource budget 0.5
    answered with 0.26 × Dense at 60 % error). Until the twenty-seventh session each differing
    unit moved once, to its most efficient switch, and a switch that bought the budgeted quantity
    at more of the minimised one counted as free: under an error budget a lossless kernel (less
    error, more resource) was taken first and closed its unit (held-out probe: cluster mode,
    budget 0.5, QUANT8 kept at resource 42,778 where PRUNE25 on every tile met the budget at
    35,218). ``mask`` keeps the search's candidate restriction ((K,) or (n_units, K)). Returns
    the new choice, or None when nothing moves.
    """
    from .hull_chains import unit_chains

    start = np.asarray(start, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    diff = np.flatnonzero(start != target)
    if diff.size == 0:
        return None
    nu, K = problem.n_units, len(problem.names)
    if getattr(problem, "granularity", "tile") == "cluster" and \
            getattr(problem, "n_tiles", np.inf) <= FILL_ALL_UNITS_MAX_TILES:
        diff = np.arange(nu)
    E_start = problem.member_error_sums(start)
    Rall = problem.member_resource_sums()
    err2 = float(E_start.sum())
    res = float(Rall[np.arange(nu), start].sum())
    fro2 = problem.fro2 if problem.fro2 > 0 else 1.0
    R = np.asarray(Rall[diff], dtype=np.float64)
    rows = np.arange(diff.size)
    allowed = np.ones((diff.size, K), dtype=bool)
    if mask is not None:
        allowed &= mask[diff] if mask.ndim == 2 else mask[None, :]
    # Member errors cost a kernel run on every member tile (SVDs for LOWRANK), so only the options
    # that can help are measured: under an error budget those that save resource; under a
    # resource budget those whose resource could fit at all. The others never move a unit.
    if spend_resource:
        helps = np.asarray(feasible(np.zeros_like(R), res + R - R[rows, start[diff]][:, None]), dtype=bool)
    else:
        helps = R < R[rows, start[diff]][:, None]
    helps &= allowed
    E = np.full((diff.size, K), np.inf)
    E[rows, start[diff]] = E_start[diff]
    for k in range(K):  # member error sums of those options (cached per unit, kernel)
        need = np.flatnonzero(helps[:, k])
        if need.size:
            trial = start.copy()
            trial[diff[need]] = k
            E[need, k] = problem.member_error_sums(trial)[diff[need]]
    allowed &= helps | (np.arange(K)[None, :] == start[diff][:, None])
    S, C = (R, E) if spend_resource else (E, R)     # what the budget limits, what is minimised
    ranked = np.argsort(C, axis=1, kind="stable")

    class _State:
        def __init__(self):
            self.cur, self.err2, self.res, self.moved = start[diff].copy(), err2, res, False

        def fits(self, j, k):
            e_new = self.err2 + E[j, k] - E[j, self.cur[j]]
            r_new = self.res + R[j, k] - R[j, self.cur[j]]
            return feasible(float(np.sqrt(max(e_new, 0.0) / fro2)), r_new), e_new, r_new

        def take(self, j, k, e_new, r_new):
            self.err2, self.res, self.cur[j], self.moved = e_new, r_new, k, True

        def fill_room(self):
            # the room left: per unit, the largest saving that still fits
            for j in range(diff.size):
                for k in ranked[j].tolist():
                    if not C[j, k] < C[j, self.cur[j]]:
                        break
                    if allowed[j, k]:
                        ok, e_new, r_new = self.fits(j, k)
                        if ok:
                            self.take(j, k, e_new, r_new)
                            break

        def score(self):   # what the mode minimises, then the other
            return (self.err2, self.res) if spend_resource else (self.res, self.err2)

    walk = _State()
    units, kernels, _ = unit_chains(S, C, allowed, walk.cur)
    stopped = np.zeros(diff.size, dtype=bool)
    for j, k in zip(units.tolist(), kernels.tolist()):
        if stopped[j]:
            continue
        ok, e_new, r_new = walk.fits(j, k)
        if ok:
            walk.take(j, k, e_new, r_new)
        else:
            stopped[j] = True       # its later steps build on this one
    walk.fill_room()
    # The greedy's known weak case: efficient small steps fill the budget and the one large step
    # that would save more no longer fits (banded 256², T = 32, cycles, resource budget 5 %: BLOCK
    # on two clusters at 93.9 % error where LOWRANK2 on the third alone gives 89.3 %). So also
    # the single switch that saves the most on its own, then the room left; the better answer wins.
    single = _State()
    c_now = C[rows, single.cur][:, None]
    e_all = err2 + E - E[rows, single.cur][:, None]
    r_all = res + R - R[rows, single.cur][:, None]
    ok = allowed & (C < c_now) & np.asarray(
        feasible(np.sqrt(np.maximum(e_all, 0.0) / fro2), r_all), dtype=bool)
    if ok.any():
        flat = int(np.argmax(np.where(ok, c_now - C, -np.inf)))   # ties: the first unit, kernel
        j, k = divmod(flat, K)
        single.take(j, k, float(e_all[j, k]), float(r_all[j, k]))
    single.fill_room()
    best = min((walk, single), key=_State.score) if single.moved else walk
    if not best.moved:
        return None
    choice = start.copy()
    choice[diff] = best.cur
    return choice


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
    cap = eps * eps * problem.fro2
    best, lam, trace = _search(problem, feasible, better, mask=mask, cap=cap)
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
            best, lam, extra = _search(problem, feasible, better, mask=honest, cap=cap)
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
                               lambda a, b: (a[0], a[1]) < (b[0], b[1]), spend_resource=True, cap=limit)
    if best is None:
        rmin = float(trace["resource"].min()) / problem.R_dense if problem.R_dense > 0 else 0.0
        raise InputError(
            f"No plan with these candidate kernels uses at most {share:.4g} of the Dense "
            f"{problem.resource}; the cheapest needs {rmin:.4g}. Raise the resource budget or add "
            "cheaper kernels (e.g. SKIP)."
        )
    return BudgetResult(best[0], float(lam), best[1], best[2], trace, "resource_budget", share)
