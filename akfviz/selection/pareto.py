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
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..arguments import check_seed
from ..errors import InputError
from .budgets import members_exact_mask
from .costs import SelectionProblem, check_pa, resolve_candidates
from .perftable import check_resource, check_rho_x

POINT_COLUMNS = ["alpha", "beta", "multiplier", "error", "error_pct", "resource", "resource_share",
                 "kernel_mix", "n_kernels", "restricted"]


@dataclass(frozen=True, eq=False)
class ParetoFront:
    """``points``: every swept plan (``restricted``: from the second, cluster-mode sweep, see the
    module docstring); ``front``: the non-dominated ones (sorted by resource);
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


def pareto_front(pa, kernels=None, hw=None, *, resource="energy", granularity="cluster", n_points=25,
                 log_range=(-4.0, 8.0), rho_x=1.0, seed=0, plan=None) -> ParetoFront:
    """Sweep the multiplier and return the error–resource Pareto front (see the module docstring).

    Parameters
    ----------
    pa : PatternAnalysis
    kernels, hw, resource, granularity, rho_x, seed
        As in :func:`akfviz.select`.
    n_points : int ≥ 2
        Log-spaced multipliers (plus λ = 0 and λ = ∞).
    log_range : (float, float)
        log10 of the smallest and largest multiplier.
    plan : FusionPlan, optional
        Its (error, resource) is returned as ``current``.

    Returns
    -------
    ParetoFront

    Raises
    ------
    InputError
        A bad argument (checked before any plan is formed): ``hw`` not a HardwareConfig, ``seed``
        not a whole number ≥ 0, ``n_points`` outside 2 … 1000, ``log_range`` not two numbers
        low < high within ±300, ``plan`` not a FusionPlan, and the checks of :func:`akfviz.select`.
    """
    from ..execute.plan import FusionPlan
    from ..npu.hardware import as_hardware

    check_pa(pa)
    hw = as_hardware(hw)
    seed = check_seed(seed)
    if isinstance(n_points, (bool, np.bool_)) or not (
            isinstance(n_points, (int, np.integer)) and 2 <= n_points <= 1000):
        raise InputError(f"n_points must be an integer in [2, 1000], got {n_points!r}.")
    lo, hi = _check_log_range(log_range)
    if plan is not None and not isinstance(plan, FusionPlan):
        raise InputError(
            f"plan must be a FusionPlan (from akfviz.select) or None, got {type(plan).__name__}.")
    prob = SelectionProblem(pa, resolve_candidates(kernels), hw, resource=check_resource(resource),
                            granularity=granularity, rho_x=check_rho_x(rho_x), seed=seed)
    lams = np.concatenate([[0.0], np.logspace(lo, hi, int(n_points)), [np.inf]])
    rows = []
    masks = [None]
    if prob.granularity == "cluster" and prob.n_units and prob.lossless.any():
        honest = members_exact_mask(prob)
        if honest is not None:
            masks.append(honest)
    for mask in masks:
        for lam in lams:
            ch = prob.argmin(lam, 1.0, mask=mask)
            err, res = prob.evaluate(ch)
            counts = np.bincount(ch, weights=prob.unit_size, minlength=len(prob.names)) if prob.n_units else \
                np.zeros(len(prob.names))
            rows.append((lam, 1.0, lam, err, 100 * err, res,
                         res / prob.R_dense if prob.R_dense > 0 else 0.0,
                         kernel_mix(prob.names, counts), int(np.count_nonzero(counts)), mask is not None))
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
