"""The front merged unit by unit (akfviz.selection.front_merge) and its use by the Pareto front.

UX / probe case: banded 2048², T = 32, cycles, cluster mode, error budget 20 %: the budget's plan
(13.3 % error) sat 11.5 points below the front drawn from the multiplier's corners and the switch
path between them (24.8 % at its resource), because with three clusters the plans between corners
are few and the budget's fill reaches one the path does not.
"""
import numpy as np
import pytest

import akfviz
from akfviz.errors import InputError
from akfviz.npu.hardware import HardwareConfig
from akfviz.selection import pareto as pareto_mod
from akfviz.selection.costs import SelectionProblem, resolve_candidates
from akfviz.selection.front_merge import merge_unit, merged_front, thin_indices, unit_options
from akfviz.selection.pareto import kernel_mix, pareto_front
from selection_naive import naive_all_plans_front


def _staircase(front, resource):
    ok = front["resource"].to_numpy() <= resource * (1 + 1e-12)
    return front["error"].to_numpy()[ok].min() if ok.any() else 1.0


def _small_problem(seed, nu=4, K=5, ties=False):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: equal errors, equal resources and equal sums
        return rng.integers(0, 4, (nu, K)).astype(float), rng.integers(1, 4, (nu, K)).astype(float)
    return rng.exponential(1.0, (nu, K)), rng.exponential(1.0, (nu, K))


# ------------------------------------------------------------------ the kernels against slow references
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", [False, True])
def test_unit_options_are_the_kernels_no_other_beats_sorted_by_resource(seed, ties):
    E, R = _small_problem(seed, nu=6, K=7, ties=ties)
    out = np.zeros(E.shape, np.int64)
    n = unit_options(E, R, out)
    for u in range(E.shape[0]):
        want = [k for k in range(E.shape[1])
                if not any(j != k and E[u, j] <= E[u, k] and R[u, j] <= R[u, k]
                           and (E[u, j] < E[u, k] or R[u, j] < R[u, k] or j < k) for j in range(E.shape[1]))]
        want.sort(key=lambda k: R[u, k])
        assert out[u, :n[u]].tolist() == want


@pytest.mark.parametrize("seed", range(6))
def test_merge_unit_keeps_the_sums_no_other_sum_beats(seed):
    """Against every pair summed and filtered by a double loop (ties: the first pair in the order
    (resource, error, option))."""
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(1, 30)), int(rng.integers(1, 6))
    r = np.cumsum(rng.integers(0, 3, n) + 1.0)              # ascending
    e = np.cumsum(rng.integers(0, 3, n)[::-1] + 1.0)[::-1]  # strictly descending
    dr = np.cumsum(rng.integers(0, 3, p) + 1.0)
    de = np.cumsum(rng.integers(0, 3, p)[::-1] + 1.0)[::-1]
    out = [np.empty(n * p), np.empty(n * p), np.empty(n * p, np.int64), np.empty(n * p, np.int64)]
    m = merge_unit(e, r, de, dr, *out)
    pairs = [(r[i] + dr[j], e[i] + de[j], j, i) for i in range(n) for j in range(p)]
    pairs.sort(key=lambda t: (t[0], t[1], t[2]))
    want, best = [], np.inf
    for rv, ev, j, i in pairs:
        if ev < best:
            best = ev
            want.append((ev, rv, i, j))
    got = list(zip(out[0][:m], out[1][:m], out[2][:m], out[3][:m]))
    assert got == want


def test_thin_indices_keeps_both_ends_and_spaces_points_along_the_scaled_length():
    rng = np.random.default_rng(3)
    m = 500
    r = np.cumsum(rng.exponential(1.0, m))
    e2 = np.cumsum(rng.exponential(1.0, m)[::-1])[::-1] ** 2   # squared errors, descending
    fro2 = float(e2[0]) * 1.5
    cap = 17
    idx = thin_indices(e2, r, fro2, cap)
    rel = np.sqrt(e2 / fro2)
    length = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(rel)) / (rel[0] - rel[-1])
                                              + np.diff(r) / (r[-1] - r[0]))])
    want = sorted({next(i for i in range(m) if length[i] >= length[-1] * t / (cap - 1) or i == m - 1)
                   for t in range(cap)} | {m - 1})
    assert idx.tolist() == want
    assert idx[0] == 0 and idx[-1] == m - 1 and len(idx) <= cap
    # a front within the cap is kept whole
    assert thin_indices(e2[:cap], r[:cap], fro2, cap).tolist() == list(range(cap))


# ------------------------------------------------------------------ the merged front
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", [False, True])
def test_merged_front_is_every_plan_no_other_plan_beats(seed, ties):
    """All 5⁴ = 625 plans of a 4-unit, 5-kernel selection enumerated: the merged front has the same
    (error, resource) points, bit for bit (the sums run in the same unit order), and each point's
    choice and kernel counts are a plan with those sums."""
    E, R = _small_problem(seed, ties=ties)
    size = np.array([3, 1, 2, 5])
    err2, res, counts, thinned, choice = merged_front(E, R, size, fro2=10.0, cap=10_000, choices=True)
    want = naive_all_plans_front(E, R)
    assert not thinned
    assert list(zip(err2.tolist(), res.tolist())) == [(e, r) for e, r, _ in want]
    for i in range(err2.size):
        ch = choice[i]
        assert sum(E[u, k] for u, k in enumerate(ch)) == err2[i]
        assert sum(R[u, k] for u, k in enumerate(ch)) == res[i]
        assert counts[i].tolist() == np.bincount(ch, weights=size, minlength=E.shape[1]).tolist()


def test_a_thinned_front_keeps_real_plans_and_says_it_was_thinned():
    E, R = _small_problem(7, nu=12, K=6)
    err2, res, counts, thinned, choice = merged_front(E, R, np.ones(12), fro2=float(E.max(axis=1).sum()), cap=20,
                                                      choices=True)
    full = merged_front(E, R, np.ones(12), fro2=1.0, cap=100_000)
    assert thinned and not full[3]
    assert len(err2) <= 20 < len(full[0])
    for i in range(err2.size):
        assert E[np.arange(12), choice[i]].sum() == pytest.approx(err2[i], rel=1e-12)
        assert R[np.arange(12), choice[i]].sum() == pytest.approx(res[i], rel=1e-12)
    # both ends of the exact front survive the thinning
    assert (err2[0], res[0]) == (full[0][0], full[1][0]) and (err2[-1], res[-1]) == (full[0][-1], full[1][-1])


# ------------------------------------------------------------------ in pareto_front
def test_budget_plan_of_few_clusters_sits_on_the_front():
    pa = akfviz.analyze(akfviz.generate("banded", n=2048, seed=0), tile=32)
    # (cycles with budget 0.2 until the forty-sixth session's degree-6 table made that plan exact)
    plan = akfviz.select(pa, error_budget=0.3, resource="energy", granularity="cluster")
    merged = pareto_front(pa, resource="energy", granularity="cluster")
    path = pareto_front(pa, resource="energy", granularity="cluster", merge=False)
    assert plan.relative_error <= 0.3
    assert _staircase(merged.front, plan.resource) <= plan.relative_error * (1 + 1e-9)
    # the switch path between the multiplier's corners left it far below the line
    assert _staircase(path.front, plan.resource) > plan.relative_error + 0.05


@pytest.mark.parametrize("granularity", ["cluster", "tile"])
def test_merged_rows_are_plans_measured_by_evaluate(granularity):
    pa = akfviz.analyze(akfviz.generate("powerlaw", n=384, seed=2), tile=16)
    pf = pareto_front(pa, granularity=granularity, resource="cycles", n_points=6)
    prob = SelectionProblem(pa, resolve_candidates(None), HardwareConfig(), resource="cycles",
                            granularity=granularity)
    _, _, _, _, choice = merged_front(prob.member_error_matrix(), prob.member_resource_sums(), prob.unit_size,
                                      prob.fro2, choices=True)
    reference = []
    for ch in choice:
        e, r = prob.evaluate(ch)
        reference.append((e, r, kernel_mix(prob.names, np.bincount(ch, weights=prob.unit_size,
                                                                   minlength=len(prob.names)))))
    between = pf.points[pf.points["between"]]
    assert len(between) > 0 and between["multiplier"].isna().all() and not between["restricted"].any()
    for row in between.itertuples():
        assert any(abs(row.error - e) <= 1e-12 * max(1.0, e) and abs(row.resource - r) <= 1e-9 * r
                   and row.kernel_mix == mix for e, r, mix in reference), row
    # a swept plan is not repeated as a merged one (the corner keeps its multiplier)
    swept = pf.points[~pf.points["between"]]
    for row in between.itertuples():
        assert not ((np.abs(swept["error"] - row.error) <= 1e-12)
                    & (np.abs(swept["resource"] - row.resource) <= 1e-9 * row.resource)).any()


def test_fill_zero_keeps_the_corners_only_and_many_units_take_the_switch_path(monkeypatch):
    pa = akfviz.analyze(akfviz.generate("powerlaw", n=384, seed=2), tile=16)
    corners = pareto_front(pa, granularity="tile", fill=0)
    assert not corners.points["between"].any()
    path = pareto_front(pa, granularity="tile", merge=False)
    monkeypatch.setattr(pareto_mod, "MERGE_MAX_UNITS", 0)
    auto = pareto_front(pa, granularity="tile")
    pd_cols = ["error", "resource", "kernel_mix", "between"]
    assert auto.points[pd_cols].equals(path.points[pd_cols])
    monkeypatch.setattr(pareto_mod, "MERGE_MAX_UNITS", 10**6)
    assert len(pareto_front(pa, granularity="tile").points) != len(path.points)


@pytest.mark.parametrize("merge", ["yes", 1, 0.0, np.array([True])])
def test_merge_must_be_a_bool_or_none(merge):
    pa = akfviz.analyze(akfviz.generate("uniform", n=64, seed=0), tile=16)
    with pytest.raises(InputError, match="merge must be True, False or None"):
        pareto_front(pa, merge=merge)
