"""SelectionProblem.argmin's numba pass (no (n, K) temporaries) against numpy's
``argmin(where(mask, alpha·En + beta·Rn, inf))``: the same choices, ties and masks included."""
import numba
import numpy as np
import pytest

from akfviz.selection import _kernels as K
from akfviz.selection.costs import SelectionProblem


def _reference(En, Rn, alpha, beta, mask):
    C = alpha * En + beta * Rn
    if mask is not None:
        C = np.where(mask if mask.ndim == 2 else mask[None, :], C, np.inf)
    return np.argmin(C, axis=1)


class _Problem:
    """Just what SelectionProblem.argmin reads."""
    granularity = "tile"

    def __init__(self, En, Rn):
        self.En, self.Rn = En, Rn
        self.n_units = En.shape[0]
        self.lossless = np.zeros(En.shape[1], dtype=bool)

    argmin = SelectionProblem.argmin
    cost = SelectionProblem.cost


@pytest.mark.parametrize("n", [1, 7, 5000, 120_000])
def test_weighted_argmin_equals_numpy(n, monkeypatch):
    rng = np.random.default_rng(n)
    Kn = 17
    En = rng.choice([0.0, 1e-3, 0.5, 1.0], size=(n, Kn)) * rng.random((n, 1))   # many exact ties
    Rn = rng.choice([0.1, 0.2, 0.7], size=(n, Kn))
    En[rng.random((n, Kn)) < 0.01] = np.inf                                     # overflowed costs
    masks = [None, rng.random(Kn) < 0.6, rng.random((n, Kn)) < 0.5, np.zeros(Kn, dtype=bool)]
    prob = _Problem(En, Rn)
    calls = []
    for fn in ("_weighted_argmin", "_weighted_argmin_serial"):
        import akfviz.selection.costs as C
        real = getattr(C, fn)
        monkeypatch.setattr(C, fn, lambda *a, real=real, fn=fn: calls.append(fn) or real(*a))
    for alpha, beta in [(1.0, 1.0), (3.7, 0.25), (1e300, 1.0), (0.5, 1e-300)]:
        for mask in masks:
            got = prob.argmin(alpha, beta, mask=mask)
            np.testing.assert_array_equal(got, _reference(En, Rn, alpha, beta, mask))
            assert got.dtype == np.int64
    assert len(calls) == 16
    parallel = n >= K.ARGMIN_PARALLEL_MIN and numba.get_num_threads() > 1
    assert ("_weighted_argmin" in calls) == parallel


def test_tie_break_cases_keep_the_numpy_path():
    """beta = 0 (resource breaks ties) and alpha = 0 (error breaks ties) and alpha = inf are not
    the plain weighted argmin: their keys still decide."""
    En = np.array([[0.0, 0.0, 1.0], [0.5, 0.5, 0.5]])
    Rn = np.array([[0.9, 0.1, 0.0], [0.3, 0.2, 0.1]])
    prob = _Problem(En, Rn)
    np.testing.assert_array_equal(prob.argmin(1.0, 0.0), [1, 2])     # equal error: less resource
    np.testing.assert_array_equal(prob.argmin(0.0, 1.0), [2, 2])
    np.testing.assert_array_equal(prob.argmin(np.inf, 1.0), [1, 2])
