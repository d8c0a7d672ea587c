"""Small budget problems are solved exactly on their merged error–resource front (akf-spec §5).

The multiplier search reaches the front's corners and the greedy fill the linear relaxation's
rounding; with a few units one unit's rounding is much of the plan (a three-cluster problem of the
degree-6 table, cycles, error budget 0.3: 3.9 % above the best plan within the budget). The slow
reference here is brute force over every plan."""
import itertools

import numpy as np
import pytest

from akfviz.errors import InputError
from akfviz.selection import budgets
from akfviz.selection.budgets import solve_error_budget, solve_resource_budget
from selection_naive import budget_brute, budget_toy as _toy


@pytest.mark.parametrize("seed", range(30))
def test_error_and_resource_budgets_of_small_problems_are_the_brute_force_optimum(seed):
    prob = _toy(seed)
    err, res, _ = budget_brute(prob)
    for eps in (0.05, 0.15, 0.3, 0.5, 0.8):
        got = solve_error_budget(prob, eps)
        assert got.error <= eps
        assert got.resource == pytest.approx(res[err <= eps + 1e-12].min(), abs=1e-9), eps
    for share in (0.3, 0.5, 0.7, 0.9):
        limit = share * prob.R_dense
        if not (res <= limit * (1 + 1e-12)).any():
            with pytest.raises(InputError):
                solve_resource_budget(prob, share)
            continue
        got = solve_resource_budget(prob, share)
        assert got.resource <= limit * (1 + 1e-12)
        assert got.error == pytest.approx(err[res <= limit * (1 + 1e-12)].min(), abs=1e-12), share


def test_without_the_exact_step_some_of_those_budgets_miss_the_optimum(monkeypatch):
    """The test above can fail: with the exact step off (the search and the greedy fill alone, no
    front or exchange step) some of its budgets cost more than the best plan within them."""
    # the later steps (the thinned front and the exchange, forty-seventh session) off too: they
    # would now run on these 4-unit problems and find the optimum
    monkeypatch.setattr(budgets, "EXACT_MAX_UNITS", 0)
    monkeypatch.setattr(budgets, "FRONT_MAX_UNITS", 0)
    monkeypatch.setattr(budgets, "EXCHANGE_MAX_MOVES", 0)
    misses = 0
    for seed in range(30):
        prob = _toy(seed)
        err, res, _ = budget_brute(prob)
        for eps in (0.05, 0.15, 0.3, 0.5, 0.8):
            misses += solve_error_budget(prob, eps).resource > res[err <= eps + 1e-12].min() + 1e-9
    assert misses > 0


def test_large_problems_keep_the_search_and_fill_answer(monkeypatch):
    """Above EXACT_MAX_UNITS units the exact step does not run (it would enumerate a large front)."""
    calls = []
    real = budgets._exact_small

    def spy(problem, *a, **k):
        calls.append(problem.n_units)
        return real(problem, *a, **k)

    monkeypatch.setattr(budgets, "_exact_small", spy)
    big = _toy(1, nu=budgets.EXACT_MAX_UNITS + 1, K=3)
    assert real(big, lambda e, r: e <= 0.5, False) is None
    solve_error_budget(big, 0.5)
    assert calls == [big.n_units]


def test_the_exact_step_skips_options_a_lossless_kernel_of_the_unit_beats():
    """On a real cluster problem: an option with no less resource than the unit's cheapest lossless
    kernel is never on the front, so its member errors are not computed (inf in the front's input);
    the others are the member sums; and the answer is still the brute-force optimum."""
    import akfviz
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.selection.costs import SelectionProblem, resolve_candidates

    pa = akfviz.analyze(akfviz.generate("llm_magnitude", n=160, density=0.3, seed=1), tile=16)
    prob = SelectionProblem(pa, resolve_candidates(None), HardwareConfig(), resource="cycles",
                            granularity="cluster")
    E, R = budgets._front_inputs(prob)
    full = prob.member_error_matrix()
    Rm = prob.member_resource_sums()
    cheapest = np.where(prob.lossless[None, :], Rm, np.inf).min(axis=1, keepdims=True)
    skipped = ~prob.lossless[None, :] & (Rm >= cheapest)
    assert skipped.any() and (~skipped).any()
    assert np.all(np.isinf(E[skipped]))
    np.testing.assert_array_equal(E[~skipped], full[~skipped])
    np.testing.assert_array_equal(R, Rm)
    idx = np.arange(prob.n_units)
    plans = np.array(list(itertools.product(range(full.shape[1]), repeat=prob.n_units)))
    err = np.sqrt(full[idx, plans].sum(axis=1) / prob.fro2)
    res = Rm[idx, plans].sum(axis=1)
    for eps in (0.05, 0.3):
        got = budgets._exact_small(prob, lambda e, r: e <= eps, False)
        ge, gr = prob.evaluate(got)
        assert ge <= eps and gr == pytest.approx(res[err <= eps].min(), rel=1e-12)
