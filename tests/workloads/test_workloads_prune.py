"""Tests of akfviz.workloads.prune against slow, obvious references."""
import importlib

import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.errors import InputError
from akfviz.workloads import prune
prune_mod = importlib.import_module("akfviz.workloads.prune")  # the module, not the function


@pytest.fixture(params=["dense-path", "sparse-path"])
def path(request, monkeypatch):
    """Run sparse inputs through the dense path (default for small matrices) or the
    entry-sorting sparse path (used for large matrices)."""
    if request.param == "sparse-path":
        monkeypatch.setattr(prune_mod, "DENSE_PATH_MAX", 0)
    return request.param


def _ref_magnitude(W, s):
    """Keep the round((1-s)·n·m) largest |w|; ties go to the earlier entry (row-major)."""
    flat = W.ravel()
    k = int(round((1 - s) * flat.size))
    order = sorted(range(flat.size), key=lambda i: (-abs(flat[i]), i))
    out = np.zeros_like(flat)
    for i in order[:k]:
        out[i] = flat[i]
    return out.reshape(W.shape)


def _ref_nm(W, N, M):
    out = np.zeros_like(W)
    n, m = W.shape
    for i in range(n):
        for g in range(0, m, M):
            cols = list(range(g, min(g + M, m)))
            best = sorted(cols, key=lambda j: (-abs(W[i, j]), j))[:N]
            for j in best:
                out[i, j] = W[i, j]
    return out


def _ref_block(W, s, b):
    n, m = W.shape
    blocks = []
    for bi in range(0, n, b):
        for bj in range(0, m, b):
            blocks.append((-np.sum(W[bi:bi + b, bj:bj + b] ** 2), bi // b, bj // b))
    nb, mb = -(-n // b), -(-m // b)
    k = int(round((1 - s) * nb * mb))
    keep = sorted(blocks, key=lambda t: (t[0], t[1] * mb + t[2]))[:k]
    out = np.zeros_like(W)
    for _, bi, bj in keep:
        out[bi * b:(bi + 1) * b, bj * b:(bj + 1) * b] = W[bi * b:(bi + 1) * b, bj * b:(bj + 1) * b]
    return out


def _weights(n, m, seed, ties=False):
    rng = np.random.default_rng(seed)
    if ties:  # small integers: many equal magnitudes, exercises the tie rule
        return rng.integers(-3, 4, size=(n, m)).astype(float)
    return rng.standard_normal((n, m))


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (16, 16), (13, 30)])
@pytest.mark.parametrize("s", [0.0, 0.5, 0.9])
def test_magnitude_matches_reference(shape, s, ties, path):
    W = _weights(*shape, seed=1, ties=ties)
    ref = _ref_magnitude(W, s)
    np.testing.assert_array_equal(prune(W, "magnitude", sparsity=s).toarray(), ref)
    np.testing.assert_array_equal(prune(sp.csr_array(W), "magnitude", sparsity=s).toarray(), ref)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("pattern", ["2:4", "1:4", "4:8", "1:2"])
@pytest.mark.parametrize("shape", [(1, 3), (9, 16), (6, 19)])
def test_nm_matches_reference(shape, pattern, ties, path):
    N, M = map(int, pattern.split(":"))
    W = _weights(*shape, seed=2, ties=ties)
    ref = _ref_nm(W, N, M)
    np.testing.assert_array_equal(prune(W, "nm", pattern=pattern).toarray(), ref)
    np.testing.assert_array_equal(prune(sp.csr_array(W), "nm", pattern=pattern).toarray(), ref)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shape,b", [((16, 16), 4), ((10, 13), 4), ((5, 5), 8), ((12, 9), 1)])
@pytest.mark.parametrize("s", [0.5, 0.75])
def test_block_matches_reference(shape, b, s, ties, path):
    W = _weights(*shape, seed=3, ties=ties)
    ref = _ref_block(W, s, b)
    np.testing.assert_array_equal(prune(W, "block", sparsity=s, block=b).toarray(), ref)
    np.testing.assert_array_equal(prune(sp.csr_array(W), "block", sparsity=s, block=b).toarray(), ref)


def test_result_is_canonical_float64_csr():
    A = prune(np.arange(12, dtype=np.float32).reshape(3, 4), "magnitude", sparsity=0.5)
    assert isinstance(A, sp.csr_array) and A.dtype == np.float64 and A.has_canonical_format
    assert A.nnz == 6


def test_sparse_input_keeps_existing_zeros_out():
    W = sp.random_array((50, 40), density=0.05, rng=0, format="csr")
    A = prune(W, "magnitude", sparsity=0.5)
    assert A.nnz == W.nnz  # 1000 kept > 100 stored: all stored entries survive
    np.testing.assert_array_equal(A.toarray(), W.toarray())


@pytest.mark.parametrize("kw", [
    {"method": "random"},
    {"method": "magnitude", "sparsity": 1.0},
    {"method": "magnitude", "sparsity": -0.1},
    {"method": "magnitude", "sparsity": "most"},
    {"method": "nm", "pattern": "4:2"},
    {"method": "nm", "pattern": "2-4"},
    {"method": "block", "block": 0},
    {"method": "block", "block": 2.5},
])
def test_bad_arguments(kw):
    with pytest.raises(InputError):
        prune(np.ones((4, 4)), **kw)


@pytest.mark.parametrize("sparsity, shown", [(10**400, "a 401-digit number"),
                                             (-10**400, "a negative 401-digit number")],
                         ids=["huge", "huge-negative"])
def test_a_sparsity_beyond_float_range_is_refused_by_its_size(sparsity, shown):
    """Held-out probe: prune(A, sparsity=10**400) raised OverflowError."""
    with pytest.raises(InputError, match=rf"sparsity must be at least 0 and below 1 .*, got {shown}\.$"):
        prune(np.ones((4, 4)), sparsity=sparsity)


@pytest.mark.parametrize("W", [np.ones(4), np.ones((2, 2, 2)), np.array([[1.0, np.nan]]),
                               np.array([["a", "b"]]), np.zeros((0, 3))])
def test_bad_matrices(W):
    with pytest.raises(InputError):
        prune(W)
