"""Mutation probe 45 of the selection code (performance table, its numba kernels, fusion weights,
cost matrices): tests for the behaviours no test pinned, each killing the mutant named beside it.

The out-of-range ids of the table's evaluations make the numba kernels read (or write) beyond
their arrays, so the public-level one-past-the-end cases run in the child process of
tests/test_probe_44_perftable_trace.py (a crash there fails one test instead of ending the run).
"""

import numpy as np
import pytest

import akfviz
from akfviz.errors import InputError
from akfviz.selection import perftable as ptab
from akfviz.selection.structure import CLASS_NAMES
from selection_naive import naive_table_value


@pytest.fixture(scope="module")
def table8():
    return ptab.performance_table(tile=8)


# --------------------------------------------------------------------------- id checks
def test_an_id_equal_to_the_count_is_out_of_range():
    # mutant: `hi >= n_valid` -> `hi > n_valid` in _id_array (one past the end was let through)
    with pytest.raises(InputError, match=r"cls must hold structure class ids from 0 to 3, got 4"):
        ptab._id_array([0, 4], 4, "cls", "structure class ids")
    np.testing.assert_array_equal(ptab._id_array([0, 3], 4, "cls", "structure class ids"), [0, 3])
    with pytest.raises(InputError, match=r"there are none to index"):
        ptab._id_array([0], 0, "group", "group ids")


# the public evaluations' one-past-the-end ids run in a child process beside the probe-44 cases:
# tests/test_probe_44_perftable_trace.py::test_ids_out_of_range_are_refused_instead_of_read_beyond_the_arrays


def test_the_last_valid_ids_price_as_the_reference(table8):
    # the other side of the bound: the last class, kernel and group are evaluated, as np.polyval
    nk, nc = len(table8.kernels), len(table8.classes)
    names = list(table8.kernels)
    want = np.array([naive_table_value(table8, k, nc - 1, 0.3, 0.5, "cycles") for k in names])
    assert want[-2:].min() >= 0 and want.max() > 0
    got = table8.evaluate_chosen([nk - 2, nk - 1], [nc - 1, nc - 1], [0.3, 0.3], [0.5, 0.5], measure="cycles")
    np.testing.assert_allclose(got, want[-2:], rtol=1e-12)
    sums = table8.group_sums(names, [nc - 1, nc - 1], [0.3, 0.3], [0.5, 0.5], [1, 1], 2, measure="cycles")
    np.testing.assert_allclose(sums, [np.zeros(nk), 2 * want], rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda t: t.evaluate(["CSC"], [1.0], [0.1]),                   # a float class id
    lambda t: t.evaluate(["CSC"], [True], [0.1]),                  # a bool class id
    lambda t: t.evaluate_chosen([0.0], [1], [0.1]),                # a float kernel index
    lambda t: t.group_sums(["CSC"], [1], [0.1], [1.0], [0.0], 1),  # a float group id
])
def test_ids_that_are_not_whole_numbers_are_refused(table8, call):
    # mutant: _id_array accepting dtype kinds "iufb" (1.0 and True were taken as ids, 1.7 as 1)
    with pytest.raises(InputError, match=r"must be a 1-D array of whole numbers"):
        call(table8)


def test_chosen_pass_refuses_float_kernel_indices(table8):
    # mutant: _id_array accepting dtype kinds "iufb"
    pa = akfviz.analyze(akfviz.generate("uniform", n=64, density=0.1, seed=0), tile=8)
    n = pa.compact.nnz.shape[0]
    with pytest.raises(InputError, match=r"kernel_of_unit must be a 1-D array of whole numbers"):
        table8.chosen_pass(pa, np.zeros(n, np.int64), np.array([1.0]), {"energy": 1.0})
    with pytest.raises(InputError, match=r"unit_of_tile must be a 1-D array of whole numbers"):
        table8.chosen_pass(pa, np.zeros(n), np.array([1]), {"energy": 1.0})


# --------------------------------------------------------------------------- densities and scales
@pytest.mark.parametrize("density, scale", [
    ([np.nan], None), ([np.inf], None), ([0.1], [np.nan]), ([0.1], [np.inf]),
])
def test_evaluate_refuses_non_finite_densities_and_scales(table8, density, scale):
    # mutant: no isfinite check in _float_array (NaN and inf went into the numba pass)
    with pytest.raises(InputError, match=r"must be finite numbers"):
        table8.evaluate(["CSC"], [1], density, scale)
    with pytest.raises(InputError, match=r"must be finite numbers"):
        table8.evaluate_chosen([0], [1], density, scale)


@pytest.mark.parametrize("density", [["0.1"], [True], np.array([0.1], dtype=object)])
def test_evaluate_refuses_densities_that_are_not_numbers(table8, density):
    # mutant: _float_array without its dtype-kind check (the string "0.1" and True were converted)
    with pytest.raises(InputError, match=r"Tile densities must be a 1-D array of numbers"):
        table8.evaluate(["CSC"], [1], density)


def test_predict_lets_a_rounding_above_one_through_and_refuses_more(table8):
    # mutants: `d > 1.0 + 1e-9` -> `d > 1.0` (a density of 1 + 1e-12, a rounding of k / T², was
    # refused) and -> `d > 1.5` (a density of 1.2 was priced as a full tile)
    want = naive_table_value(table8, "CSC", CLASS_NAMES.index("random"), 1.0, 1.0, "energy")
    got = table8.predict("CSC", "random", [1.0 + 1e-12, 1.0])
    np.testing.assert_allclose(got, [want, want], rtol=1e-12)
    for bad in (1.01, 1.2):
        with pytest.raises(InputError, match=r"between 0 and 1"):
            table8.predict("CSC", "random", bad)


# --------------------------------------------------------------------------- small-tile calibration
@pytest.mark.parametrize("n_distinct", [2, 3])
def test_a_class_with_fewer_than_three_rule_densities_also_takes_its_generated_tiles(monkeypatch, n_distinct):
    # mutants: MIN_FIT_DENSITIES = 2 (a class of two densities was fitted on them alone) and
    # `< MIN_FIT_DENSITIES` -> `<=` (a class of three took the generated tiles too). With the default
    # seed no class has two or three distinct densities below T = 16, so the rule class of the
    # diagonal tiles is cut down here to `n_distinct` densities (the rest called block).
    real = ptab.classify_tiles
    seen = {}

    def fewer_diagonal(tiles, grid=8, idx=None):
        cls = np.array(real(tiles, grid=grid, idx=idx))
        dens = tiles["density"].to_numpy(np.float64)
        diag = np.flatnonzero(cls == 0)
        keep = np.unique(dens[diag])[:n_distinct]
        cls[diag[~np.isin(dens[diag], keep)]] = CLASS_NAMES.index("block")
        seen["cls"], seen["dens"] = cls.copy(), dens
        return cls

    monkeypatch.setattr(ptab, "classify_tiles", fewer_diagonal)
    tab = ptab.calibrate(None, 4, kernels=["CSC"])
    made = np.array([it[0] for it in ptab._calibration_set(4, 0)])
    rule = seen["cls"] == 0
    assert np.unique(seen["dens"][rule]).size == n_distinct
    members = rule | (made == "diagonal") if n_distinct < 3 else rule     # counted by hand
    fe = tab.fit_error[tab.fit_error["class"] == "diagonal"]
    assert set(fe["n_points"]) == {int(members.sum())}
    assert tuple(tab.domain[0]) == (seen["dens"][members].min(), seen["dens"][members].max())
    cal = tab.calibration[tab.calibration["class"] == "diagonal"]
    assert len(cal) == int(members.sum())
    assert ((cal["made_as"] == "diagonal") | (cal["classified_as"] == "diagonal")).all()


# --------------------------------------------------------------------------- structure rule
def test_a_tile_with_exactly_eighty_percent_of_its_cells_filled_is_block():
    # mutant: `cells <= BLOCK_MAX_SHARE * gh * gw` -> `<` in _kernels._class_of. With the default
    # grid the share 0.8 · 64 is no whole number; a 5×5 grid of 4×4-entry cells (T = 20, the BLOCK
    # kernel's blocks, so no cells are merged) has 20 of 25 cells at exactly 80 %.
    import scipy.sparse as sp
    from akfviz.selection.structure import classify_dense, classify_tiles

    rng = np.random.default_rng(3)
    tiles, want = [], []
    for filled in (19, 20, 21, 20, 20):
        t = np.zeros((20, 20))
        for cell in rng.permutation(25)[:filled]:
            r, c = divmod(int(cell), 5)
            t[4 * r:4 * r + 4, 4 * c:4 * c + 4] = rng.uniform(1.0, 2.0, (4, 4))
        tiles.append(t)
        # by hand: not diagonal (more than 15 of the 39 diagonals), not N:M (full groups of 4),
        # every occupied cell full: block iff at most 20 of the 25 cells
        want.append(CLASS_NAMES.index("block") if filled <= 20 else CLASS_NAMES.index("random"))
        assert classify_dense(t, grid=5) == want[-1]
    A = sp.block_diag([sp.csr_array(t) for t in tiles], format="csr")
    pa = akfviz.analyze(A, tile=20, lsh={"grid": 5})
    tab = pa.tiles_as_analysed()
    on_diag = (tab["bi"] == tab["bj"]).to_numpy()
    assert on_diag.sum() == len(tiles)
    assert classify_tiles(tab, grid=5)[on_diag].tolist() == want
    assert pa.compact.cls[on_diag].tolist() == want     # the analysis' own pass agrees


# --------------------------------------------------------------------------- fits
@pytest.mark.parametrize("T", [4, 5])
def test_a_fit_has_fewer_coefficients_than_distinct_calibration_densities(T):
    # mutant: `np.unique(x).size - 1` -> `np.unique(x).size` in _fit_in (a quartic through the four
    # distinct densities of the N:M tiles at T = 4 was underdetermined: lstsq's minimum-norm
    # solution, which swings between the points; DIA's and PRUNE50's N:M fits in log10 density)
    tab = ptab.performance_table(tile=T)
    cal = tab.calibration
    n_distinct = cal[cal["kernel"] == tab.kernels[0]].groupby("class")["density"].nunique()   # by hand
    fe = tab.fit_error.assign(n_distinct=tab.fit_error["class"].map(n_distinct))
    assert (fe["degree"] <= fe["n_distinct"] - 1).all(), fe[fe["degree"] > fe["n_distinct"] - 1]
    top = np.where(fe["variable"] == "log10 density", ptab.MAX_DEGREE, ptab.LINEAR_DEGREE)
    reached = fe["degree"] == np.minimum(top, fe["n_distinct"] - 1)
    assert reached.mean() > 0.9          # all but the fits of costs that are all 0 (SKIP's)
    if T == 4:   # some log10 fits are limited by their points, not by MAX_DEGREE (the case above)
        short = (fe["variable"] == "log10 density") & (fe["n_distinct"] <= ptab.MAX_DEGREE) & reached
        assert short.any()


# --------------------------------------------------------------------------- fusion weights
@pytest.mark.parametrize("penalty", [0.15, 0.2, 0.25])
def test_a_binding_descent_ends_at_the_minimiser_of_the_objective(penalty):
    # mutants: the penalty gradient without its factor 2 (`lam = pen·N·over/cap²`; the descent then
    # minimised the objective of half the penalty) and the trajectory's penalty term without N.
    # One unit of 2 tiles, costs (0, 1) (so sigma = 1), payloads (400, 0) B, a 200 B chip. With w the
    # weight of the second kernel, S = 2·400·(1 − w) and the objective
    #     F(w) = 2·w + P·2·((S − 200) / 200)² = 2·w + 2·P·(3 − 4·w)²     (S > 200)
    # has its minimum at w* = (3 − 1/(8P)) / 4, 0.54 … 0.625 here: above 1/2, so the choice
    # moves to the second kernel (at P/2 it stayed at w < 1/2).
    from akfviz.selection.fusion_weights import optimize_fusion_weights

    res = optimize_fusion_weights(np.array([[0.0, 1.0]]), np.array([2.0]), np.array([[400.0, 0.0]]), 200.0,
                                  penalty=penalty)
    w_star = (3.0 - 1.0 / (8.0 * penalty)) / 4.0
    assert res.binding and res.sram_bytes_argmin == 800.0
    assert res.weights[0, 1] == pytest.approx(w_star, rel=1e-9)
    assert res.choice.tolist() == [1] and res.sram_bytes_final == 0.0
    last = res.trajectory.iloc[-1]
    S = 2 * 400.0 * (1.0 - w_star)
    assert last["sram_bytes"] == pytest.approx(S, rel=1e-9)
    assert last["cost"] == pytest.approx(2.0 * w_star, rel=1e-9)
    assert last["penalty"] == pytest.approx(penalty * 2.0 * ((S - 200.0) / 200.0) ** 2, rel=1e-9)


def test_a_binding_descent_keeps_the_callers_tie_break_between_kernels_of_equal_cost_and_payload():
    # mutant: `b[argmin] <= b[choice]` -> `<` (kernels of equal cost and equal payload: the descent
    # keeps their weights equal and its argmax took the first, not the caller's argmin)
    from akfviz.selection.fusion_weights import optimize_fusion_weights

    C = np.array([[0.0, 0.0, 1.0]] * 3)
    b = np.array([[10.0, 10.0, 0.0]] * 3)
    res = optimize_fusion_weights(C, np.ones(3), b, 25.0, penalty=1e-3, argmin=np.array([1, 1, 0]))
    assert res.binding and res.sram_bytes_argmin == 30.0
    np.testing.assert_array_equal(res.weights[:, 0], res.weights[:, 1])      # the descent cannot tell
    assert res.choice.tolist() == [1, 1, 0]


def test_the_weight_trajectory_follows_the_largest_units():
    # mutant: `np.argsort(-s)` -> `np.argsort(s)` (the smallest units were recorded)
    from akfviz.selection.fusion_weights import optimize_fusion_weights

    size = np.array([3.0, 40.0, 1.0, 7.0, 40.0, 2.0])
    C = np.tile([0.0, 1.0], (6, 1))
    res = optimize_fusion_weights(C, size, np.zeros((6, 2)), 1e9, max_record_units=3)
    assert res.recorded_units.tolist() == [1, 4, 3]       # by size, the first of equal sizes first
    np.testing.assert_allclose(res.weights_trajectory[-1], res.weights[[1, 4, 3]], rtol=1e-12)


@pytest.mark.parametrize("gap, moves", [(1e4, False), (100.0, True)])
def test_the_penalty_does_not_outweigh_a_cost_thousands_of_decision_gaps_above(gap, moves):
    # mutant: COST_CAP = 1e2 (a kernel 10⁴ typical gaps dearer looked only 100 dearer, and the
    # penalty moved the unit onto it). Nine units decide by a gap of 1 (sigma = 1) and need no SRAM;
    # the tenth has costs (0, gap) and payloads (400, 0) B on a 100 B chip. With w its second
    # kernel's weight, F(w) = gap·w + P·N·(3 − 4w)² (P·N = 100): at gap = 10⁴ the minimum is
    # w = 0 (staying costs 900, moving 10⁴); at gap = 100 it is above 1/2 (the unit moves).
    from akfviz.selection.fusion_weights import optimize_fusion_weights

    C = np.array([[0.0, 1.0]] * 9 + [[0.0, gap]])
    b = np.array([[0.0, 0.0]] * 9 + [[400.0, 0.0]])
    res = optimize_fusion_weights(C, np.ones(10), b, 100.0, penalty=10.0)
    assert res.binding
    assert res.choice.tolist() == [0] * 9 + [1 if moves else 0]


def test_allowed_must_allow_each_units_argmin():
    # mutant: the check `allowed[ar, argmin].all()` dropped (a mask without the argmin was taken,
    # and without a binding chip the disallowed argmin was the choice)
    from akfviz.selection.fusion_weights import optimize_fusion_weights

    C = np.array([[0.0, 1.0], [0.0, 1.0]])
    with pytest.raises(InputError, match=r"allow every unit's argmin"):
        optimize_fusion_weights(C, np.ones(2), np.zeros((2, 2)), 1e9,
                                allowed=np.array([[True, True], [False, True]]))


# --------------------------------------------------------------------------- cost matrices
def _claims_problem(E, lossless, unit_size, Rn, nbytes):
    """A SelectionProblem holding only what representative_claims reads (hand-made numbers)."""
    from akfviz.selection.costs import SelectionProblem

    prob = object.__new__(SelectionProblem)
    prob.granularity = "cluster"
    prob.E, prob.lossless = np.asarray(E, float), np.asarray(lossless, bool)
    prob.unit_size, prob.Rn, prob.bytes = np.asarray(unit_size), np.asarray(Rn, float), np.asarray(nbytes, float)
    return prob


def test_a_lossy_kernel_is_claimed_unless_a_lossless_one_is_cheaper_in_both_resource_and_bytes():
    # mutants in representative_claims: `&` -> `|` between the two comparisons, `<` -> `<=`
    # (a lossless kernel of equal cost does not beat the lossy one: at equal C the first
    # candidate wins, and that can be the lossy one), and `unit_size > 1` -> `>= 1`
    prob = _claims_problem(
        E=[[0, 0], [0, 0], [0, 0], [0, 0], [0, 0.5]],
        lossless=[True, False],
        unit_size=[3, 3, 3, 1, 3],
        Rn=[[1.0, 1.0], [0.5, 1.0], [0.5, 1.0], [0.5, 1.0], [0.5, 1.0]],
        nbytes=[[10, 10], [5, 10], [20, 10], [20, 10], [20, 10]])
    # by hand: unit 0 ties (not beaten), unit 1 is beaten in both, unit 2 only in resource, unit 3
    # is a one-tile cluster (its representative is its only member), unit 4 has an error already
    want = np.array([[False, True], [False, False], [False, True], [False, False], [False, False]])
    np.testing.assert_array_equal(prob.representative_claims(), want)


@pytest.mark.parametrize("kind, seed", [("uniform", 7), ("powerlaw", 5)])
def test_an_all_skip_plan_has_a_relative_error_of_exactly_one(kind, seed):
    # mutant: `min(err2, self.fro2)` -> `err2` in SelectionProblem.evaluate. On these matrices the
    # members' ‖t‖² (SKIP's errors) add up to more than ‖A‖² by rounding, and the square root of
    # the ratio was 1.0000000000000002: more than an error budget of 1 allows
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.selection.costs import SelectionProblem

    pa = akfviz.analyze(akfviz.generate(kind, n=96, seed=seed), tile=4)
    prob = SelectionProblem(pa, ("SKIP", "CSC"), HardwareConfig(), granularity="cluster")
    skip = np.zeros(prob.n_units, dtype=np.int64)
    err2 = float(prob.member_error_sums(skip).sum())
    if not np.sqrt(err2 / prob.fro2) > 1.0:
        pytest.skip("the members' errors no longer add up to more than ‖A‖² here")
    assert prob.evaluate(skip) == (1.0, 0.0)
    plan = akfviz.select(pa, error_budget=1.0, kernels=["SKIP", "CSC"])
    assert set(plan.tile_kernels) == {"SKIP"} and plan.relative_error == 1.0


def _reference_argmin(En, Rn, first, second):
    """Per unit, by loops: the least `first`, then the least `second` among those, then the first."""
    keys = {"E": En, "R": Rn}
    out = []
    for u in range(En.shape[0]):
        a, b = keys[first][u], keys[second][u]
        ks = [k for k in range(En.shape[1]) if a[k] == a.min()]
        out.append(min(ks, key=lambda k: (b[k], k)))
    return np.array(out)


@pytest.mark.parametrize("granularity", ["tile", "cluster"])
def test_alpha_infinity_takes_the_least_error_and_then_the_least_resource(granularity):
    # mutant: the alpha = inf cost let kernels within 1.5x of the least error compete on resource
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.selection.costs import SelectionProblem

    pa = akfviz.analyze(akfviz.generate("uniform", n=64, density=0.2, seed=3), tile=8)
    prob = SelectionProblem(pa, ("PRUNE25", "NM2:4", "PRUNE50"), HardwareConfig(), granularity=granularity)
    np.testing.assert_array_equal(prob.argmin(np.inf, 1.0), _reference_argmin(prob.En, prob.Rn, "E", "R"))


def test_alpha_zero_breaks_equal_resource_by_the_lower_error():
    # mutant: tie_break without its alpha = 0 case (the first candidate won a tie in resource).
    # A rank-4 factorisation of a full 8×8 tile stores 4·(8 + 8) = 64 values, as DENSE does: the
    # same resource, and LOWRANK4 loses entries of a random full-rank tile.
    import scipy.sparse as sp
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.selection.costs import SelectionProblem

    A = sp.csr_array(np.random.default_rng(0).standard_normal((32, 32)))
    prob = SelectionProblem(akfviz.analyze(A, tile=8), ("LOWRANK4", "DENSE"), HardwareConfig(), granularity="tile")
    assert (prob.Rn[:, 0] == prob.Rn[:, 1]).all() and (prob.En[:, 0] > 0).all()
    got = prob.argmin(0.0, 1.0)
    np.testing.assert_array_equal(got, _reference_argmin(prob.En, prob.Rn, "R", "E"))
    assert (got == 1).all()
