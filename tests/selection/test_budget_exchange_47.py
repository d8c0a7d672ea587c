"""The budget modes' last steps (forty-seventh session): the thinned front for medium problems and
the exchange search (:mod:`akfviz.selection.exchange`), checked against slow exact references — a
brute-force neighbourhood for the exchange, a dynamic programme over integer budgets for the
multiple-choice knapsack, and scipy's MILP on one real matrix."""
import itertools

import numpy as np
import pytest

from akfviz import InputError
from akfviz.selection import budgets
from akfviz.selection.exchange import exchange
from selection_naive import BudgetToy


# ------------------------------------------------------------------------------ slow references
def naive_improving_move(S, C, cur, cap):
    """The first single or pair move (in units of different index) that keeps ``Σ S ≤ cap`` and
    lowers ``Σ C``, by enumerating all of them; None when ``cur`` is a local optimum."""
    n, K = S.shape
    rows = np.arange(n)
    slack = cap - S[rows, cur].sum()
    moves = [(u, k, S[u, k] - S[u, cur[u]], C[u, k] - C[u, cur[u]])
             for u in range(n) for k in range(K) if k != cur[u] and np.isfinite(S[u, k] + C[u, k])]
    for u, k, ds, dc in moves:
        if ds <= slack and dc < 0:
            return ((u, k),)
    for (u, k, ds, dc), (v, k2, ds2, dc2) in itertools.combinations(moves, 2):
        if u != v and ds + ds2 <= slack and dc + dc2 < 0:
            return ((u, k), (v, k2))
    return None


def dp_min(S, C, cap):
    """``min Σ C`` subject to ``Σ S ≤ cap`` with one option per unit, for non-negative integer ``S``
    (a dynamic programme over the budget: exact)."""
    cap = int(cap)
    best = np.full(cap + 1, np.inf)
    best[0] = 0.0
    for u in range(S.shape[0]):
        nxt = np.full(cap + 1, np.inf)
        for k in range(S.shape[1]):
            s = int(S[u, k])
            if s <= cap:
                nxt[s:] = np.minimum(nxt[s:], best[:cap + 1 - s] + C[u, k])
        best = nxt
    return float(best.min())


def int_toy(seed, nu, K=5):
    """A seeded integer problem as :func:`selection_naive.budget_toy` makes them, of ``nu`` units."""
    rng = np.random.default_rng(seed)
    E = rng.integers(0, 40, (nu, K)).astype(np.float64)
    E[:, 0] = 0.0
    R = rng.integers(1, 30, (nu, K)).astype(np.float64)
    R[:, 0] = 30.0
    return BudgetToy(E, R, fro2=float(E.max(axis=1).sum()) + 1.0)


def error_cap(prob, eps):
    """The largest integer squared error whose relative error the budget allows (the search's own
    test: ``sqrt(err2 / fro2) ≤ eps``)."""
    s = int(np.floor(eps * eps * prob.fro2)) + 2
    while np.sqrt(s / prob.fro2) > eps:
        s -= 1
    return s


# ------------------------------------------------------------------------------ the exchange kernel
@pytest.mark.parametrize("seed", range(40))
def test_exchange_ends_in_a_feasible_local_optimum_of_single_and_pair_moves(seed):
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(2, 25)), int(rng.integers(2, 6))
    S = rng.integers(0, 20, (n, K)).astype(np.float64)
    C = rng.integers(0, 20, (n, K)).astype(np.float64)
    start = np.argmin(S, axis=1)
    rows = np.arange(n)
    cap = float(S[rows, start].sum() + rng.integers(0, 60))
    got, moves = exchange(S, C, start, cap)
    assert moves < 200
    assert S[rows, got].sum() <= cap
    assert C[rows, got].sum() <= C[rows, start].sum()
    assert (C[rows, got].sum() < C[rows, start].sum()) == (moves > 0)
    assert naive_improving_move(S, C, got, cap) is None
    np.testing.assert_array_equal(start, np.argmin(S, axis=1))  # the caller's plan is not changed
    again, _ = exchange(S, C, start, cap)
    np.testing.assert_array_equal(got, again)


def test_exchange_finds_the_pair_no_single_move_reaches():
    # unit 0 may drop from option 0 (s 5) to 1 (s 0, c +1); unit 1 gains 10 at option 1 (s +5), which
    # does not fit alone (no slack): only the pair improves
    S = np.array([[5.0, 0.0], [0.0, 5.0]])
    C = np.array([[0.0, 1.0], [10.0, 0.0]])
    got, moves = exchange(S, C, [0, 0], cap=5.0)
    assert list(got) == [1, 1] and moves == 1


def test_exchange_keeps_to_allowed_options_and_does_not_combine_two_options_of_one_unit():
    S = np.array([[5.0, 0.0, 9.0], [0.0, 5.0, 0.0]])
    C = np.array([[0.0, 1.0, -50.0], [10.0, 0.0, 10.0]])
    allowed = np.array([[True, True, False], [True, True, True]])
    got, _ = exchange(S, C, [0, 0], cap=5.0, allowed=allowed)
    assert list(got) == [1, 1]
    # one unit: its own release and gain are two options of the same unit, never a pair
    got, moves = exchange(np.array([[5.0, 0.0, 6.0]]), np.array([[0.0, 1.0, -5.0]]), [0], cap=5.0)
    assert list(got) == [0] and moves == 0


def test_exchange_pairs_a_gain_with_the_best_release_of_another_unit():
    """The cheapest release that frees enough budget is in the gaining unit itself (unit 0's option
    1, Δc +0.5), so the pair must take the best release of another unit (unit 1's option 1, Δc +1),
    which never was the prefix's best: unit 0 gains 8 at option 2 (Δs +4, no slack), unit 1 frees 4.
    (A mutation probe: the kernel without its second-best update made no move here.)"""
    S = np.array([[5.0, 0.0, 9.0], [5.0, 1.0, 9.0]])
    C = np.array([[10.0, 10.5, 2.0], [0.0, 1.0, 5.0]])
    got, moves = exchange(S, C, [0, 0], cap=10.0)
    assert list(got) == [2, 1] and moves == 1
    assert naive_improving_move(S, C, got, 10.0) is None


@pytest.mark.parametrize("bad", [
    dict(S=np.zeros((2, 3)), C=np.zeros((3, 2)), cur=[0, 0], cap=1.0),
    dict(S=np.zeros((2, 3)), C=np.zeros((2, 3)), cur=[0, 3], cap=1.0),
    dict(S=np.zeros((2, 3)), C=np.zeros((2, 3)), cur=[0], cap=1.0),
    dict(S=np.ones((2, 3)), C=np.zeros((2, 3)), cur=[0, 0], cap=1.0),      # start over the cap
    dict(S=np.array([[np.inf, 0.0]]), C=np.zeros((1, 2)), cur=[0], cap=1.0),
])
def test_exchange_rejects_inputs_it_cannot_work_from(bad):
    with pytest.raises(InputError):
        exchange(bad["S"], bad["C"], bad["cur"], bad["cap"])


# ------------------------------------------------------------------------------ the budget modes
def _gaps(nu, seeds=range(6)):
    out = []
    for seed in seeds:
        prob = int_toy(seed, nu)
        for eps in (0.1, 0.3, 0.5):
            opt = dp_min(prob.E, prob.R, error_cap(prob, eps))
            got = budgets.solve_error_budget(prob, eps)
            assert got.error <= eps
            out.append(got.resource / opt - 1)
        for share in (0.3, 0.5, 0.7):
            limit = share * prob.R_dense
            opt = dp_min(prob.R, prob.E, np.floor(limit * (1 + 1e-12)))
            got = budgets.solve_resource_budget(prob, share)
            assert got.resource <= limit * (1 + 1e-12)
            out.append(got.error ** 2 * prob.fro2 / opt - 1)
    return np.array(out)


def test_medium_budget_problems_are_solved_to_the_optimum():
    """100 units (above the exact step's 64): the thinned front and the exchange reach the dynamic
    programme's optimum in every budget (the search and fill alone: up to 4.8 % over it)."""
    g = _gaps(100)
    assert np.all(np.abs(g) <= 1e-12), g


def test_large_budget_problems_come_within_a_few_tenths_of_a_percent():
    """300 units (above the front's 256): the exchange alone after the fill; 0.25 % at most in the
    forty-seventh session's measurement (2.3 % without it)."""
    g = _gaps(300)
    assert g.min() >= -1e-12
    assert g.max() <= 0.004, g
    assert np.mean(g) <= 0.0005, g


def test_without_the_new_steps_those_budgets_miss_the_optimum(monkeypatch):
    """The two tests above can fail: with the thinned front and the exchange off, the search and the
    fill leave more than 1 % on several budgets of either size."""
    monkeypatch.setattr(budgets, "FRONT_MAX_UNITS", 0)
    monkeypatch.setattr(budgets, "EXCHANGE_MAX_MOVES", 0)
    assert (_gaps(100) > 0.01).sum() >= 3
    assert (_gaps(300) > 0.005).sum() >= 3


def test_the_steps_are_traced_and_keep_the_search_multiplier(monkeypatch):
    prob = int_toy(3, 300)
    got = budgets.solve_resource_budget(prob, 0.5)
    tr = got.trace
    assert list(tr.columns) == ["lambda", "error", "resource", "feasible", "step", "kept"]
    assert tr["kept"].sum() == 1 and budgets.kept_step(tr) == "exchange"
    assert set(tr["step"]) <= {"search", "fill", "exact", "front", "exchange"}
    assert (tr["step"] == "exchange").sum() == 1
    assert tr.loc[tr["step"] == "search", "lambda"].notna().all()
    assert tr.loc[tr["step"] != "search", "lambda"].isna().all()
    assert np.isfinite(got.multiplier)
    row = tr[tr["step"] == "exchange"].iloc[0]
    assert row["error"] == got.error and row["resource"] == got.resource


def test_the_exchange_runs_no_kernel_in_cluster_mode():
    """In cluster mode the exchange moves only between options whose member errors are known
    (``known_member_error_sums``); an unknown option is never chosen through it."""
    import akfviz
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.selection.costs import SelectionProblem, resolve_candidates

    pa = akfviz.analyze(akfviz.generate("uniform", n=300, density=0.05, seed=0), tile=16)
    prob = SelectionProblem(pa, resolve_candidates(None), HardwareConfig(), resource="energy",
                            granularity="cluster")
    known = prob.known_member_error_sums()
    assert not known.flags.writeable
    assert np.isnan(known).any()          # nothing measured yet beyond the lossless zeros
    before = np.isnan(known).copy()
    start = np.zeros(prob.n_units, dtype=np.int64) + list(prob.names).index("CSC")
    limit = float(prob.member_resource_sums()[np.arange(prob.n_units), start].sum())
    budgets._exchange_step(prob, start, limit, True)
    np.testing.assert_array_equal(np.isnan(prob.known_member_error_sums()), before)


def test_a_real_cluster_budget_comes_within_a_tenth_of_a_percent_of_the_milp_optimum():
    """Power-law 512², T = 32, cluster mode, energy, error budget 0.5: the search and fill alone
    spent 15.3 % more energy than scipy's MILP optimum over the same member sums."""
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    import akfviz
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.selection.costs import SelectionProblem, resolve_candidates

    pa = akfviz.analyze(akfviz.generate("powerlaw", n=512, seed=0), tile=32)
    prob = SelectionProblem(pa, resolve_candidates(None), HardwareConfig(), resource="energy",
                            granularity="cluster")
    got = budgets.solve_error_budget(prob, 0.5)
    assert got.error <= 0.5
    E = np.asarray(prob.member_error_matrix(), dtype=np.float64)
    R = np.asarray(prob.member_resource_sums(), dtype=np.float64)
    nu, K = E.shape
    A_eq = sp.csr_array((np.ones(nu * K), (np.repeat(np.arange(nu), K), np.arange(nu * K))), shape=(nu, nu * K))
    res = milp(R.ravel(), integrality=np.ones(nu * K), bounds=Bounds(0, 1),
               constraints=[LinearConstraint(A_eq, 1, 1),
                            LinearConstraint(E.ravel()[None, :], -np.inf, 0.25 * prob.fro2 * (1 - 1e-12))],
               options={"mip_rel_gap": 1e-9, "time_limit": 60})
    assert res.x is not None
    opt = float(R.ravel() @ np.round(res.x))
    assert got.resource <= opt * 1.001, (got.resource, opt)
