"""Input checks of the selector helpers ``pareto_front`` and ``prediction_error`` (akf-spec §9):
a bad argument raises InputError with a readable message before any work."""
import numpy as np
import pytest

import akfviz
from akfviz.selection.pareto import pareto_front
from akfviz.selection.perftable import prediction_error


@pytest.fixture(scope="module")
def pa():
    return akfviz.analyze(akfviz.generate("banded", n=64), tile=16)


@pytest.mark.parametrize("kw, words", [
    (dict(hw="x"), "hw must be a HardwareConfig"),
    (dict(seed=-1), "seed must be a whole number"),
    (dict(seed=1.5), "seed must be a whole number"),
    (dict(log_range=5), "log_range must be two numbers"),
    (dict(log_range="ab"), "log_range must be two numbers"),
    (dict(log_range=(1, 2, 3)), "log_range must be two numbers"),
    (dict(log_range=(8, -4)), "low < high"),
    (dict(log_range=(-4, "x")), "log_range must be two numbers"),
    (dict(log_range=(-4, float("inf"))), "log_range must be two numbers"),
    (dict(log_range=(-4, 400)), "between -300 and 300"),
    (dict(n_points=True), "n_points"),
    (dict(fill=-1), r"fill must be an integer in \[0, 1000\]"),
    (dict(fill=1001), "fill must be"),
    (dict(fill=2.0), "fill must be"),
    (dict(fill=True), "fill must be"),
    (dict(plan="p"), "plan must be a FusionPlan"),
])
def test_pareto_front_bad_arguments(pa, kw, words):
    with pytest.raises(akfviz.InputError, match=words):
        pareto_front(pa, **kw)


def test_pareto_front_accepts_numpy_log_range(pa):
    pf = pareto_front(pa, n_points=3, log_range=np.array([-2.0, 2.0]), seed=np.int64(1))
    swept = pf.points[~pf.points["between"]]
    grid = [0.0, 0.01, 1.0, 100.0, np.inf]     # λ = 0, three multipliers from 10**-2 … 10**2, λ = ∞
    for restricted in (False, True):            # and the same again in cluster mode's second sweep
        lams = swept.loc[swept["restricted"] == restricted, "multiplier"].to_numpy()
        if restricted and lams.size == 0:
            continue
        assert all(np.isclose(lams, g, rtol=1e-12).any() for g in grid[1:-1])
        assert 0.0 in lams and np.inf in lams
        assert lams.size <= 5 + 3                # at most n_points refined multipliers per sweep


@pytest.mark.parametrize("max_tiles", [-1, 0, "a", 2.5, True, None])
def test_prediction_error_max_tiles(pa, max_tiles):
    with pytest.raises(akfviz.InputError, match=r"max_tiles .* whole number ≥ 1"):
        prediction_error(pa, max_tiles=max_tiles)


@pytest.mark.parametrize("kw, words", [
    (dict(seed=-1), "seed must be a whole number"),
    (dict(hw="x"), "hw must be a HardwareConfig"),
    (dict(against="oracle"), "against must be one of"),
    (dict(rho_x=2.0), "rho_x"),
])
def test_prediction_error_other_arguments(pa, kw, words):
    with pytest.raises(akfviz.InputError, match=words):
        prediction_error(pa, **kw)


def test_prediction_error_one_tile_is_enough(pa):
    df = prediction_error(pa, kernels=["DENSE"], max_tiles=np.int64(1))
    assert (df["n_tiles"] >= 1).all() and df["n_tiles"].sum() <= 5 * 3


@pytest.mark.parametrize("names, counts, label", [
    (["CSC", "DENSE", "SKIP"], [61, 30, 9], "CSC 61 %, DENSE 30 %, SKIP 9 %"),
    (["QUANT8", "SKIP"], [2296, 8], "QUANT8 > 99 %, SKIP < 1 % (8 tiles)"),
    (["SKIP", "PRUNE50"], [999, 1], "SKIP > 99 %, PRUNE50 < 1 % (1 tile)"),
    (["BITMAP"], [576], "BITMAP 100 %"),
    (["A", "B", "C"], [0, 5, 5], "B 50 %, C 50 %"),
    (["A"], [0], "(no tiles)"),
    # exactly 0.5 %: printed "0 %" (half to even) before the text was decided on the printed digits
    (["CSC", "SKIP"], [199, 1], "CSC > 99 %, SKIP < 1 % (1 tile)"),
    (["A", "B", "C"], [197, 2, 1], "A 98 %, B 1 %, C < 1 % (1 tile)"),
    (["A", "B"], [1991, 9], "A > 99 %, B < 1 % (9 tiles)"),
])
def test_kernel_mix_names_every_kernel_used(names, counts, label):
    """Held-out review: the label dropped kernels under 0.5 % of the tiles ('QUANT8 100 %' for a plan
    whose 8 SKIP tiles made its error 10× larger; two different Pareto points both read 'SKIP 100 %')."""
    from akfviz.selection.pareto import kernel_mix

    assert kernel_mix(names, counts) == label
