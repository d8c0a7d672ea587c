"""A subnormal alpha or beta (0 < w < 2.2e-308) chooses as a zero weight does: the weight's products
with the cost shares underflow to exactly 0, so every exact kernel tied and the first candidate, DENSE,
won — the most expensive exact kernel — where beta = 0 picks the cheapest (probe, forty-fifth session)."""
import numpy as np
import pytest

import akfviz
from akfviz.selection.costs import tie_break
from akfviz.selection.explain import explain

SUBNORMAL = (5e-324, 1e-310, np.nextafter(np.finfo(np.float64).tiny, 0))


@pytest.fixture(scope="module")
def pa():
    return akfviz.analyze(akfviz.generate("uniform", n=256, density=0.05, seed=1))


@pytest.mark.parametrize("granularity", ["tile", "cluster"])
@pytest.mark.parametrize("w", SUBNORMAL)
def test_subnormal_beta_chooses_as_beta_zero(pa, granularity, w):
    zero = akfviz.select(pa, alpha=1.0, beta=0.0, granularity=granularity)
    sub = akfviz.select(pa, alpha=1.0, beta=w, granularity=granularity)
    assert list(sub.tile_kernels) == list(zero.tile_kernels)
    assert "DENSE" not in set(sub.tile_kernels)        # the cheapest exact kernel, not the first one
    assert sub.relative_error == 0.0
    assert sub.resource == zero.resource


@pytest.mark.parametrize("granularity", ["tile", "cluster"])
@pytest.mark.parametrize("w", SUBNORMAL)
def test_subnormal_alpha_chooses_as_alpha_zero(pa, granularity, w):
    zero = akfviz.select(pa, alpha=0.0, beta=1.0, granularity=granularity)
    sub = akfviz.select(pa, alpha=w, beta=1.0, granularity=granularity)
    assert list(sub.tile_kernels) == list(zero.tile_kernels)


def test_the_smallest_normal_weight_is_still_a_weight():
    # at 2.2e-308 the products no longer vanish: the key is the plain weighted cost (no tie key)
    tiny = np.finfo(np.float64).tiny
    En, Rn = np.zeros((1, 2)), np.array([[0.5, 0.25]])
    assert tie_break(1.0, tiny, En, Rn) is None and tie_break(tiny, 1.0, En, Rn) is None
    np.testing.assert_array_equal(tie_break(1.0, 5e-324, En, Rn), Rn)
    np.testing.assert_array_equal(tie_break(5e-324, 1.0, En, Rn), En)


def test_explain_names_the_kernel_the_plan_chose(pa):
    plan = akfviz.select(pa, alpha=1.0, beta=5e-324, granularity="tile")
    df = explain(plan, tile=0)
    assert df.query("chosen")["kernel"].iat[0] == plan.tile_kernels[0]
