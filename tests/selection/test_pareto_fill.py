"""The Pareto front's refinement between multipliers and its plans between corners (akf-spec §5).

UX review (``powerlaw`` 4096², T = 16, cycles, error budget 5 %): the error-budget plan sat at half
the error the front drew for its resource, because the log-spaced multipliers stepped over corners
and a multiplier never reaches the plans between two corners, which the budget modes' fill does.
"""
import numpy as np
import pytest

import akfviz
from akfviz.npu.hardware import HardwareConfig
from akfviz.selection.costs import SelectionProblem, resolve_candidates
from akfviz.selection.pareto import kernel_mix, pareto_front
from selection_naive import naive_front_corners, naive_switch_path


def _staircase(front, resource):
    """Least front error among plans costing at most ``resource`` (what the chart's steps show)."""
    ok = front["resource"].to_numpy() <= resource * (1 + 1e-12)
    return front["error"].to_numpy()[ok].min() if ok.any() else 1.0


@pytest.mark.parametrize("granularity, resource, eps, before", [
    ("cluster", "cycles", 0.05, 0.0863),   # the front's error there before: 8.63 %
    ("tile", "energy", 0.10, 0.2823),
])
def test_budget_plans_sit_on_the_front_not_far_below_it(granularity, resource, eps, before):
    pa = akfviz.analyze(akfviz.generate("uniform", n=512, seed=0), tile=16)
    plan = akfviz.select(pa, error_budget=eps, resource=resource, granularity=granularity)
    pf = pareto_front(pa, resource=resource, granularity=granularity)
    shown = _staircase(pf.front, plan.resource)
    assert plan.relative_error <= eps
    assert shown <= 1.1 * plan.relative_error < before
    # corners only (no plans between them, no refinement of the grid) leave the gap open
    coarse = pareto_front(pa, resource=resource, granularity=granularity, fill=0, n_points=2,
                          log_range=(-4, 8))
    assert _staircase(coarse.front, plan.resource) > 1.2 * plan.relative_error


def test_refinement_finds_every_corner_a_dense_multiplier_grid_finds():
    """Tile mode: the argmin's corners are the lower convex hull of (Σ En, Σ Rn). Starting from
    λ = 0, one λ ≈ 1 and λ = ∞, the refinement must reach every plan that 4001 multipliers from
    10⁻⁸ to 10¹² reach."""
    pa = akfviz.analyze(akfviz.generate("banded", n=96, seed=0), tile=16)
    prob = SelectionProblem(pa, resolve_candidates(None), HardwareConfig(), resource="energy",
                            granularity="tile")
    dense = {prob.evaluate(prob.argmin(lam, 1.0)) for lam in np.concatenate([[0.0], np.logspace(-8, 12, 4001),
                                                                            [np.inf]])}
    pf = pareto_front(pa, granularity="tile", n_points=200, log_range=(0.0, 1e-3), fill=0)
    got = pf.points[~pf.points["between"]]
    found = {(e, r) for e, r in zip(got["error"], got["resource"])}
    assert len(dense) >= 6                                     # so the check has corners to miss
    missing = [p for p in dense if not any(np.isclose(p[0], e, rtol=1e-12, atol=1e-15)
                                           and np.isclose(p[1], r, rtol=1e-12) for e, r in found)]
    assert not missing
    # without refinement (budget n_points = 2) the three starting multipliers miss most of them
    few = pareto_front(pa, granularity="tile", n_points=2, log_range=(0.0, 1e-3), fill=0).points
    assert len({(e, r) for e, r in zip(few["error"], few["resource"])}) < len(dense)


@pytest.mark.parametrize("granularity", ["tile", "cluster"])
def test_plans_between_corners_are_real_plans_measured_exactly(granularity):
    pa = akfviz.analyze(akfviz.generate("powerlaw", n=384, seed=2), tile=16)
    fill = 5
    pf = pareto_front(pa, granularity=granularity, resource="cycles", fill=fill, n_points=6, merge=False)
    prob = SelectionProblem(pa, resolve_candidates(None), HardwareConfig(), resource="cycles",
                            granularity=granularity)
    corners = naive_front_corners(pf, prob)
    between = pf.points[pf.points["between"]]
    assert len(between) > 0 and between["multiplier"].isna().all()
    reference = []
    for lo, hi in zip(corners[:-1], corners[1:]):
        # the fill plans are taken along this path (its ends excluded): each must be one of these,
        # measured here with ``evaluate`` on explicit choice vectors, not with the path's running sums
        for ch in naive_switch_path(prob, lo, hi)[1:-1]:
            e, r = prob.evaluate(ch)
            counts = np.bincount(ch, weights=prob.unit_size, minlength=len(prob.names))
            reference.append((e, r, kernel_mix(prob.names, counts)))
    for row in between.itertuples():
        assert any(abs(row.error - e) <= 1e-12 * max(1.0, e) and abs(row.resource - r) <= 1e-9 * r
                   and row.kernel_mix == mix for e, r, mix in reference), row
    assert len(between) <= fill * max(len(corners) - 1, 1)
    # the front is non-dominated over corners and the plans between them
    pts = pf.points
    for f in pf.front.itertuples():
        dom = (pts["error"] <= f.error) & (pts["resource"] <= f.resource) & \
              ((pts["error"] < f.error) | (pts["resource"] < f.resource))
        assert not dom.any()


def test_refinement_budget_shrinks_only_for_very_large_problems():
    """Each refined multiplier prices every (unit, kernel) pair: 25 for 65k tiles × 20 kernels
    (1.3M pairs), 4 — the floor — for 951k × 20 (19M pairs: 50M // 19M = 2)."""
    from akfviz.selection.pareto import REFINE_WORK, refine_budget

    assert REFINE_WORK == 5e7
    assert refine_budget(25, 65_536, 20) == 25
    assert refine_budget(25, 950_626, 20) == 4
    assert refine_budget(25, 250_000, 20) == 10          # 5e7 // 5e6
    assert refine_budget(3, 10, 20) == 3                 # never more than n_points
    assert refine_budget(25, 0, 20) == 25
