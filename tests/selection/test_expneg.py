"""The vectorisable ``exp`` of the fusion-weight softmax (akfviz._expneg) against numpy's."""
import math

import numba
import numpy as np
import pytest

from akfviz._expneg import EXP_MIN_ARG, exp_nonpos


@numba.njit(cache=False)
def _exp_all(x, out):
    for i in range(x.shape[0]):
        out[i] = exp_nonpos(x[i])


def _exp(x):
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    _exp_all(x, out)
    return out


def test_within_one_ulp_of_numpy_on_a_dense_grid():
    x = np.concatenate([np.linspace(EXP_MIN_ARG, 0.0, 1_000_001),
                        -np.random.default_rng(0).random(200_000) * 40.0,
                        -np.logspace(-300, 2.8, 5_000)])
    x = x[x >= EXP_MIN_ARG]
    got, ref = _exp(x), np.exp(x)
    ulps = np.abs(got - ref) / np.spacing(ref)
    assert ulps.max() <= 1.0
    assert np.mean(got == ref) > 0.8          # most values are numpy's bits


def test_exact_values_and_the_cut_off():
    x = np.array([0.0, -0.0, math.log(0.5), EXP_MIN_ARG, np.nextafter(EXP_MIN_ARG, -np.inf), -745.0, -1e300,
                  -np.inf, np.nan])
    got = _exp(x)
    assert got[0] == 1.0 and got[1] == 1.0
    assert abs(got[2] - 0.5) <= np.spacing(0.5)
    assert got[3] == pytest.approx(np.exp(EXP_MIN_ARG), rel=1e-15) and got[3] > 0.0
    assert np.all(got[4:] == 0.0)             # below the cut-off, -inf and NaN: 0, never NaN


def test_softmax_weights_sum_to_one_and_follow_the_logits():
    from akfviz.selection.fusion_weights import _softmax_row

    @numba.njit(cache=False)
    def row(z, ok, w):
        return _softmax_row(z, ok, 0, w)

    rng = np.random.default_rng(1)
    for _ in range(50):
        z = rng.standard_normal((1, 17)) * 30
        ok = rng.random((1, 17)) < 0.8
        ok[0, 0] = True
        w = np.empty(17)
        lse = row(z, ok, w)
        zz = np.where(ok[0], z[0], -np.inf)
        ref = np.exp(zz - zz.max())
        ref /= ref.sum()
        np.testing.assert_allclose(w, ref, rtol=1e-14, atol=1e-300)
        assert np.all(w[~ok[0]] == 0.0)
        assert lse == pytest.approx(zz.max() + np.log(np.exp(zz - zz.max()).sum()), rel=1e-15)
