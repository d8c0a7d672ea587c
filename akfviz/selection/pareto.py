"""The error–resource Pareto front from a sweep of the multiplier ``λ = alpha/beta`` (akf-spec §5).

For ``λ`` log-spaced over ``10**log_range`` plus the two ends ``λ = 0`` (cheapest) and ``λ = ∞``
(most accurate), the selector's argmin plan is formed and measured on every member tile (exact
relative error ``‖A − Â‖_F/‖A‖_F``, table resource). A plan is on the front when no other plan has
both less-or-equal error and less-or-equal resource with one of them strictly less. The front is
returned sorted by resource (ascending), where its error then strictly decreases.

In cluster mode a lossy kernel can be exact on a cluster's representative (PRUNE50 or LOWRANK1 on
a one-nonzero medoid) and lossy on its other members. The argmin then picks it at every ``λ``,
even ``λ = ∞``, and the sweep never reaches the low-error end: on ``powerlaw_4096`` at T = 16 the
whole front stayed above 21 % error while the error-budget mode found a 5 % plan and an exact one.
So, as the error-budget search does (:mod:`.budgets`), the sweep is repeated without those
(cluster, kernel) pairs — unless the kernel reproduces every member — when some exist; those
points have ``restricted = True``, and the front is taken over both sweeps.

A multiplier only reaches the corners of the front (the plans on its lower convex hull), and a
log-spaced grid of them steps over many corners; the budget modes bisect the multiplier and then
fill in between corners (:func:`.budgets._fill`), so a budget's plan could sit far below the front
drawn for its resource — on ``powerlaw_4096`` (T = 16, cycles) the 5 % plan lay at half the error
the front showed. So each sweep is refined where the grid stepped over corners (:func:`_refine`,
up to ``n_points`` more multipliers), and the plans between corners are added (``between = True``,
multiplier NaN), in one of two ways:

* with at most :data:`MERGE_MAX_UNITS` decision units, the front merged unit by unit
  (:mod:`.front_merge`): every plan no other plan beats, on the measured member sums, thinned to a
  few thousand points. The budget modes' plans are plans too, so they sit on this front (to its
  thinning). The merge needs every kernel's error on every member tile, about what tile mode's
  errors cost (3.0 s instead of 1.3 s for the cluster front of a 1M-nonzero 100k² matrix);
* with more units, the plans met on the way from one corner to the next (:func:`_between`): the
  units whose kernels differ switch from the cheaper corner's kernel to the other's one at a time,
  most error saved per resource added first, and ``fill`` of those plans, evenly spaced along the
  path, are measured like the corners (``restricted`` when both corners are). The budget modes'
  fill may also switch a unit to a kernel neither corner uses, so a budget's plan can lie a little
  below this front; with many units each switch is small.

The front is taken over corners and the plans between them (docs/decisions.md, "The Pareto front
is refined and filled between corners" and "… merged unit by unit").
"""
from __future__ import annotations

import heapq
import math
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..arguments import check_seed
from ..errors import InputError
from .budgets import members_exact_mask
from .costs import SelectionProblem, check_pa, resolve_candidates
from .front_merge import merged_front
from .perftable import check_resource, check_rho_x

POINT_COLUMNS = ["alpha", "beta", "multiplier", "error", "error_pct", "resource", "resource_share",
                 "kernel_mix", "n_kernels", "restricted", "between"]


@dataclass(frozen=True, eq=False)
class ParetoFront:
    """``points``: every swept plan (``restricted``: from the second, cluster-mode sweep, see the
    module docstring) and the plans between adjacent corners (``between``); ``front``: the
    non-dominated ones (sorted by resource);
    ``current``: the point of a given plan (dict) or None; ``measure``, ``granularity``."""

    points: pd.DataFrame
    front: pd.DataFrame
    current: dict | None
    measure: str
    granularity: str


def kernel_mix(names, tile_counts) -> str:
    """``"CSC 61 %, DENSE 30 %, SKIP 9 %"``: every kernel with a tile, largest first, by share of tiles.

    No kernel is left out and no share rounds to a value it is not: a share under 0.5 % reads
    ``"SKIP < 1 % (8 tiles)"`` and one that is not the whole but rounds to 100 reads ``"> 99 %"``
    (a label once read ``"QUANT8 100 %"`` for a plan whose 8 SKIP tiles made its error 10× larger).
    """
    counts = np.asarray(tile_counts, dtype=np.float64)
    tot = counts.sum()
    if tot <= 0:
        return "(no tiles)"
    order = np.lexsort((np.arange(counts.size), -counts))
    parts = []
    for i in order:
        if counts[i] <= 0:
            continue
        share = counts[i] / tot
        text = f"{100 * share:.0f}"          # decided on the printed digits: 0.5 % prints "0" (half to even)
        if text == "0":
            n = int(counts[i])
            text = f"< 1 % ({n:,} tile{'s' if n != 1 else ''})"
        elif text == "100" and counts[i] < tot:
            text = "> 99 %"
        else:
            text += " %"
        parts.append(f"{names[i]} {text}")
    return ", ".join(parts)


def non_dominated(error, resource) -> np.ndarray:
    """Boolean mask of the non-dominated points (minimising both), duplicates kept once (the first)."""
    e = np.asarray(error, dtype=np.float64)
    r = np.asarray(resource, dtype=np.float64)
    order = np.lexsort((np.arange(e.size), e, r))  # by resource, then error, then position
    keep = np.zeros(e.size, dtype=bool)
    best = np.inf
    for i in order:
        if e[i] < best:
            keep[i] = True
            best = e[i]
    return keep


def _estimate(prob, ch, err: float, res: float) -> tuple:
    """The selector's totals ``(Ê, R̂) = (Σ_u En[u, k_u], Σ_u Rn[u, k_u])`` of a choice. In tile mode
    they are the measured ``(err², res / R_dense)`` (a tile's own error and resource), which saves
    two gathers over every unit."""
    if prob.granularity == "tile":
        return err * err, (res / prob.R_dense if prob.R_dense > 0 else 0.0)
    rows = np.arange(prob.n_units)
    return float(prob.En[rows, ch].sum()), float(prob.Rn[rows, ch].sum())


def _refine(prob, swept: list, mask, budget: int) -> list:
    """Multipliers between the swept ones that reach corners the log-spaced grid stepped over.

    ``swept``: ``(λ, choice, error, resource)`` of the sweep. For two plans of adjacent
    multipliers with selector totals ``(Ê_a, R̂_a)``, ``(Ê_b, R̂_b)`` (what the argmin minimises
    is ``λ·Ê + R̂``; :func:`_estimate`) and ``Ê_a > Ê_b``, the multiplier
    ``λ* = (R̂_b − R̂_a) / (Ê_a − Ê_b)`` prices both the same; the argmin at ``λ*`` is a new corner
    when it costs less than both, and the two new gaps are searched the same way (the non-inferior
    set estimation of Cohon et al.). The widest gaps (in Ê and R̂, each scaled by its range over
    the sweep) are tried first, at most ``budget`` argmins. Returns the new corners, measured, in
    the same form as ``swept``.
    """
    if prob.n_units == 0 or budget < 1 or len(swept) < 2:
        return []
    pts = sorted(((lam, ch, (err, res), _estimate(prob, ch, err, res)) for lam, ch, err, res in swept),
                 key=lambda t: t[0])
    E_all = [p[3][0] for p in pts]
    R_all = [p[3][1] for p in pts]
    span_e = max(max(E_all) - min(E_all), 1e-300)
    span_r = max(max(R_all) - min(R_all), 1e-300)
    heap, tie = [], 0

    def push(a, b):
        nonlocal tie
        (Ea, Ra), (Eb, Rb) = a[3], b[3]
        if Ea > Eb and Rb > Ra and not np.array_equal(a[1], b[1]):
            heapq.heappush(heap, (-((Ea - Eb) / span_e + (Rb - Ra) / span_r), tie, a, b))
            tie += 1

    for a, b in zip(pts[:-1], pts[1:]):
        push(a, b)
    added = []
    tries = 0
    while heap and tries < budget:
        _, _, a, b = heapq.heappop(heap)
        (Ea, Ra), (Eb, Rb) = a[3], b[3]
        lam = (Rb - Ra) / (Ea - Eb)
        ch = prob.argmin(lam, 1.0, mask=mask)
        tries += 1
        err, res = prob.evaluate(ch)
        c = (lam, ch, (err, res), _estimate(prob, ch, err, res))
        if lam * c[3][0] + c[3][1] >= (lam * Ea + Ra) * (1 - 1e-12):
            continue  # nothing below the segment: a and b are adjacent corners
        added.append((lam, ch, err, res))
        push(a, c)
        push(c, b)
    return added


#: Work (units × candidate kernels) of one argmin above which the refinement gets fewer than
#: ``n_points`` multipliers: each argmin prices every (unit, kernel), 0.3 s for 951k tiles × 20.
REFINE_WORK = 5e7


def refine_budget(n_points: int, n_units: int, n_kernels: int) -> int:
    """Refined multipliers per sweep: ``n_points``, or fewer (at least 4) when one argmin prices
    more than :data:`REFINE_WORK` / ``n_points`` pairs, so the refinement costs about as much as
    ``REFINE_WORK`` pair prices (951k tiles × 20 kernels, tile mode: 4 instead of 25)."""
    work = max(n_units * n_kernels, 1)
    return int(min(n_points, max(4, REFINE_WORK // work)))


def _between(prob, lo, hi, fill: int) -> list:
    """Plans on the way from corner ``lo`` (the cheaper) to corner ``hi``, as point rows.

    The units whose kernels differ switch from ``lo``'s kernel to ``hi``'s one at a time; the
    switches are ordered by error saved per resource added, ``−ΔE/ΔR`` descending, where a switch
    that saves both comes first and one that costs both last (cluster mode measures member errors,
    so a corner need not be the best of its own units). Each plan's squared error and resource are
    the corner's plus the cumulative sums of the switches' ``ΔE = Σ_members E(t, k_hi) − E(t,
    k_lo)`` and ``ΔR`` (exact: both are sums over units). ``fill`` plans evenly spaced along the
    path — by its length in relative error and resource, each scaled by the corners' difference, so
    that one switch that moves the error a lot is not skipped — ``hi`` itself excluded, are returned.
    """
    ch_lo, ch_hi = lo["choice"], hi["choice"]
    diff = np.flatnonzero(ch_lo != ch_hi)
    if diff.size < 2 or fill < 1:
        return []
    k_lo, k_hi = ch_lo[diff], ch_hi[diff]
    if prob.granularity == "tile":  # a tile's own errors: no need to gather every unit
        dE = prob.E[diff, k_hi] - prob.E[diff, k_lo]
    else:
        dE = prob.member_error_sums(ch_hi)[diff] - prob.member_error_sums(ch_lo)[diff]  # cached
    Rall = prob.member_resource_sums()
    dR = Rall[diff, k_hi] - Rall[diff, k_lo]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dR > 0, -dE / dR, np.where(dE <= 0, np.inf, -np.inf))
    order = np.argsort(-ratio, kind="stable")
    err2 = lo["err2"] + np.cumsum(dE[order])
    res = lo["res"] + np.cumsum(dR[order])
    fro2 = prob.fro2 if prob.fro2 > 0 else 1.0
    rel = np.sqrt(np.maximum(err2, 0.0) / fro2) if prob.fro2 > 0 else np.zeros(err2.size)
    rel0 = float(np.sqrt(max(lo["err2"], 0.0) / fro2)) if prob.fro2 > 0 else 0.0
    span_e = max(abs(rel[-1] - rel0), 1e-300)
    span_r = max(abs(res[-1] - lo["res"]), 1e-300)
    length = np.cumsum(np.abs(np.diff(rel, prepend=rel0)) / span_e
                       + np.abs(np.diff(res, prepend=lo["res"])) / span_r)
    targets = length[-1] * np.arange(1, fill + 1) / (fill + 1)
    steps = np.unique(np.minimum(np.searchsorted(length, targets), diff.size - 2))
    # kernel counts at the sampled steps: switch i belongs to the first step s ≥ i; the tile
    # counts each segment moves, summed over the segments up to a step
    K = len(prob.names)
    size = prob.unit_size[diff][order].astype(np.float64)
    seg = np.searchsorted(steps, np.arange(diff.size))          # steps.size: after the last step
    moved = (np.bincount(seg * K + k_hi[order], weights=size, minlength=(steps.size + 1) * K)
             - np.bincount(seg * K + k_lo[order], weights=size, minlength=(steps.size + 1) * K))
    moved = np.cumsum(moved.reshape(steps.size + 1, K)[:-1], axis=0)
    rows = []
    for j, s in enumerate(steps):
        counts = lo["counts"] + moved[j]
        e = float(rel[s])
        r = float(res[s])
        rows.append((np.nan, np.nan, np.nan, e, 100 * e, r, r / prob.R_dense if prob.R_dense > 0 else 0.0,
                     kernel_mix(prob.names, counts), int(np.count_nonzero(counts)),
                     bool(lo["restricted"] and hi["restricted"]), True))
    return rows


#: ``log_range`` bounds: 10**±300 is still a finite float64.
LOG_RANGE_LIMIT = 300.0


def _check_log_range(log_range) -> tuple[float, float]:
    """``log_range`` as (low, high): two finite real numbers, low < high, both within ±300."""
    want = (f"log_range must be two numbers (low, high) with low < high, both between "
            f"{-LOG_RANGE_LIMIT:g} and {LOG_RANGE_LIMIT:g} (log10 of the multipliers), e.g. (-4, 8); "
            f"got {log_range!r}.")
    if isinstance(log_range, (str, bytes)) or not hasattr(log_range, "__len__") \
            or getattr(log_range, "ndim", 1) != 1 or len(log_range) != 2:
        raise InputError(want)
    out = []
    for v in log_range:
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v.item()
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InputError(want)
        v = float(v)
        if not (math.isfinite(v) and -LOG_RANGE_LIMIT <= v <= LOG_RANGE_LIMIT):
            raise InputError(want)
        out.append(v)
    lo, hi = out
    if not lo < hi:
        raise InputError(want)
    return lo, hi


#: Largest number of decision units whose front is merged unit by unit (:mod:`.front_merge`); a larger
#: selection fills the gaps between corners with :func:`_between` (its units are then each a small
#: share of the plan, and the switch path runs close to the front).
MERGE_MAX_UNITS = 2000


def _merged_rows(prob, swept_rows) -> list:
    """The plans of the merged front (:func:`.front_merge.merged_front`) as point rows (``between``,
    multiplier NaN), without those that repeat a swept plan (to rounding: the sums run in another
    order), which keep their multiplier."""
    E = prob.member_error_matrix()
    R = prob.member_resource_sums()
    err2, res, counts, _ = merged_front(E, R, prob.unit_size, prob.fro2)
    fro2 = prob.fro2 if prob.fro2 > 0 else 1.0
    rel = np.sqrt(np.maximum(err2, 0.0) / fro2) if prob.fro2 > 0 else np.zeros(err2.size)
    if swept_rows:
        se = np.array([row[3] for row in swept_rows])
        sr = np.array([row[5] for row in swept_rows])
        tol_e = 1e-9 * max(float(se.max()), 1e-300)
        tol_r = 1e-9 * max(float(sr.max()), 1e-300)
        same = (np.abs(rel[:, None] - se[None, :]) <= tol_e) & (np.abs(res[:, None] - sr[None, :]) <= tol_r)
        fresh = ~same.any(axis=1)
    else:
        fresh = np.ones(rel.size, dtype=bool)
    rows = []
    for i in np.flatnonzero(fresh):
        e, r = float(rel[i]), float(res[i])
        rows.append((np.nan, np.nan, np.nan, e, 100 * e, r, r / prob.R_dense if prob.R_dense > 0 else 0.0,
                     kernel_mix(prob.names, counts[i]), int(np.count_nonzero(counts[i])), False, True))
    return rows


def pareto_front(pa, kernels=None, hw=None, *, resource="energy", granularity="cluster", n_points=25,
                 log_range=(-4.0, 8.0), rho_x=1.0, seed=0, plan=None, fill=8, merge=None) -> ParetoFront:
    """Sweep the multiplier and return the error–resource Pareto front (see the module docstring).

    Parameters
    ----------
    pa : PatternAnalysis
    kernels, hw, resource, granularity, rho_x, seed
        As in :func:`akfviz.select`.
    n_points : int ≥ 2
        Log-spaced multipliers (plus λ = 0 and λ = ∞), and at most as many refined ones per sweep
        (fewer on very large problems: :func:`refine_budget`).
    log_range : (float, float)
        log10 of the smallest and largest multiplier.
    plan : FusionPlan, optional
        Its (error, resource) is returned as ``current``.
    fill : int in 0 … 1000
        0: the sweep's plans only (the corners). Otherwise the plans between corners: the merged
        front's (``merge``), or ``fill`` plans between every two adjacent corners on the switch path.
    merge : bool or None
        Fill between corners with the front merged unit by unit (:mod:`.front_merge`: every plan
        no other plan beats, to its thinning) instead of the switch path; None: when the selection
        has at most :data:`MERGE_MAX_UNITS` decision units.

    Returns
    -------
    ParetoFront

    Raises
    ------
    InputError
        A bad argument (checked before any plan is formed): ``hw`` not a HardwareConfig, ``seed``
        not a whole number ≥ 0, ``n_points`` outside 2 … 1000, ``fill`` outside 0 … 1000,
        ``log_range`` not two numbers low < high within ±300, ``plan`` not a FusionPlan, ``merge``
        not None, True or False, and the checks of :func:`akfviz.select`.
    """
    from ..execute.plan import FusionPlan
    from ..npu.hardware import as_hardware

    check_pa(pa)
    hw = as_hardware(hw)
    seed = check_seed(seed)
    if isinstance(n_points, (bool, np.bool_)) or not (
            isinstance(n_points, (int, np.integer)) and 2 <= n_points <= 1000):
        raise InputError(f"n_points must be an integer in [2, 1000], got {n_points!r}.")
    if isinstance(fill, (bool, np.bool_)) or not (isinstance(fill, (int, np.integer)) and 0 <= fill <= 1000):
        raise InputError(f"fill must be an integer in [0, 1000] (plans between two corners), got {fill!r}.")
    lo, hi = _check_log_range(log_range)
    if merge is not None and not isinstance(merge, (bool, np.bool_)):
        raise InputError(f"merge must be True, False or None (decide by the number of units), got {merge!r}.")
    if plan is not None and not isinstance(plan, FusionPlan):
        raise InputError(
            f"plan must be a FusionPlan (from akfviz.select) or None, got {type(plan).__name__}.")
    prob = SelectionProblem(pa, resolve_candidates(kernels), hw, resource=check_resource(resource),
                            granularity=granularity, rho_x=check_rho_x(rho_x), seed=seed)
    lams = np.concatenate([[0.0], np.logspace(lo, hi, int(n_points)), [np.inf]])
    rows, choices, totals = [], [], []
    masks = [None]
    if prob.granularity == "cluster" and prob.n_units and prob.lossless.any():
        honest = members_exact_mask(prob)
        if honest is not None:
            masks.append(honest)
    for mask in masks:
        swept = []
        for lam in lams:
            ch = prob.argmin(lam, 1.0, mask=mask)
            swept.append((lam, ch, *prob.evaluate(ch)))
        budget = refine_budget(int(n_points), prob.n_units, len(prob.names))
        for lam, ch, err, res in swept + _refine(prob, swept, mask, budget):
            counts = np.bincount(ch, weights=prob.unit_size, minlength=len(prob.names)) if prob.n_units else \
                np.zeros(len(prob.names))
            totals.append((err * err * prob.fro2, res, counts))  # ‖A − Â‖² to rounding
            rows.append((lam, 1.0, lam, err, 100 * err, res,
                         res / prob.R_dense if prob.R_dense > 0 else 0.0,
                         kernel_mix(prob.names, counts), int(np.count_nonzero(counts)), mask is not None,
                         False))
            choices.append(ch)
    if merge is None:
        merge = prob.n_units <= MERGE_MAX_UNITS
    if fill > 0 and merge and prob.n_units:
        rows += _merged_rows(prob, rows)
    else:
        corners = np.flatnonzero(non_dominated([r[3] for r in rows], [r[5] for r in rows]))
        corners = corners[np.lexsort(([rows[i][3] for i in corners], [rows[i][5] for i in corners]))]
        ends = [dict(choice=choices[i], restricted=rows[i][9], err2=totals[i][0], res=totals[i][1],
                     counts=totals[i][2]) for i in corners]
        for lo, hi in zip(ends[:-1], ends[1:]):
            rows += _between(prob, lo, hi, int(fill))
    points = pd.DataFrame(rows, columns=POINT_COLUMNS)
    mask = non_dominated(points["error"].to_numpy(), points["resource"].to_numpy())
    front = points[mask].sort_values(["resource", "error"]).reset_index(drop=True)
    current = None
    if plan is not None:
        sel = getattr(plan, "selection", None)
        current = {"error": float(plan.relative_error), "error_pct": 100 * float(plan.relative_error),
                   "resource": float(plan.resource),
                   "resource_share": float(plan.resource) / prob.R_dense if prob.R_dense > 0 else 0.0,
                   "alpha": float(sel.alpha) if sel is not None else float("nan"),
                   "beta": float(sel.beta) if sel is not None else float("nan")}
    return ParetoFront(points=points, front=front, current=current, measure=prob.resource,
                       granularity=prob.granularity)
