"""FusionPlan: its vector methods answer a wrong call with InputError (they raised TypeError); its summary is reproducible."""

import numpy as np
import pytest

import akfviz


@pytest.fixture(scope="module")
def plan():
    A = akfviz.generate("banded", n=96, seed=1)
    return akfviz.select(akfviz.analyze(A, tile=16))


@pytest.mark.parametrize("call, words", [
    (lambda p: p.matvec(), "matvec(): missing a required argument: 'x'. Its parameters are: x."),
    (lambda p: p.matvec(np.ones(96), np.ones(96)), "matvec(): too many positional arguments"),
    (lambda p: p.matmat(Y=np.ones((96, 2))), "matmat(): missing a required argument: 'X'"),
    (lambda p: p.output_error(), "output_error(): missing a required argument: 'x'"),
])
def test_a_wrong_call_is_an_input_error(plan, call, words):
    with pytest.raises(akfviz.InputError) as e:
        call(plan)
    assert words in str(e.value) and "self" not in str(e.value)


def test_the_checked_methods_still_compute(plan):
    x = np.linspace(-1, 1, 96)
    A = plan.pa.A
    np.testing.assert_allclose(plan.matvec(x), plan.approx_matrix() @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(plan.matmat(np.c_[x, 2 * x]), plan.approx_matrix() @ np.c_[x, 2 * x],
                               rtol=1e-12, atol=1e-12)
    assert plan.output_error(x) == pytest.approx(
        np.linalg.norm(plan.matvec(x) - A @ x) / np.linalg.norm(A @ x), rel=1e-9, abs=1e-15)
    assert plan.matvec.__name__ == "matvec" and "fused executor" in plan.matvec.__doc__


def test_the_plan_summary_is_the_same_bit_for_bit_and_timings_come_on_request():
    import json

    A = akfviz.generate("banded", n=96, seed=1)
    d = [akfviz.select(akfviz.analyze(A, tile=16)).to_dict() for _ in range(2)]
    assert json.dumps(d[0], sort_keys=True) == json.dumps(d[1], sort_keys=True)
    assert "timings" not in d[0]["selection"]
    timed = akfviz.select(akfviz.analyze(A, tile=16)).to_dict(timings=True)
    assert timed["selection"]["timings"]["table"] >= 0
