"""Error-only passes (akfviz.kernels.error_pass): each kernel's ``batch_error`` equals the error of
its approximation, ``approx(ts, idx).err``, bit for bit, and the error of decode(encode(t))."""
import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.analysis.tiling import build_tiles
from akfviz.execute import threads
from akfviz.kernels import get_kernel
from akfviz.kernels.error_pass import pass_bounds

#: the kernels with an error-only pass (the others use approx().err)
ERROR_PASS_KERNELS = ["NM2:4", "NM1:4", "NM4:8", "PRUNE50", "PRUNE25", "QUANT8", "QUANT8D", "SKIP"]


def _with_ties(A, rng):
    """Values drawn from a few magnitudes and signs, so the rankings meet many ties."""
    A = sp.csr_array(A, copy=True)
    A.data = rng.choice([-2.0, -1.0, 1.0, 2.0, 0.5], size=A.nnz)
    return A


def _explicit_zeros(A, rng):
    """Some stored entries set to 0.0 (kept in the pattern)."""
    A = sp.csr_array(A, copy=True)
    A.data[rng.random(A.nnz) < 0.2] = 0.0
    return A


def cases():
    rng = np.random.default_rng(11)
    yield "hyper-sparse", sp.random_array((300, 280), density=0.01, rng=rng, format="csr"), 32
    yield "dense tiles (sorted ranks)", sp.random_array((70, 66), density=0.9, rng=rng, format="csr"), 16
    yield "ties", _with_ties(sp.random_array((90, 90), density=0.3, rng=rng, format="csr"), rng), 16
    yield "ties, large tiles", _with_ties(sp.random_array((64, 64), density=0.7, rng=rng, format="csr"),
                                          rng), 32
    yield "explicit zeros", _explicit_zeros(sp.random_array((80, 75), density=0.4, rng=rng, format="csr"),
                                            rng), 8
    yield "one entry", sp.csr_array(([-3.5], ([4], [9])), shape=(10, 12)), 4
    heavy = sp.random_array((120, 120), density=0.2, rng=rng, format="csr")
    heavy.data = rng.standard_t(2, size=heavy.nnz) * 10.0 ** rng.integers(-3, 3, heavy.nnz)
    yield "heavy-tailed", heavy, 32


CASES = list(cases())


@pytest.mark.parametrize("name", ERROR_PASS_KERNELS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_batch_error_equals_approx_error_bit_for_bit(name, case):
    _, A, T = case
    ts = build_tiles(A, T)
    k = get_kernel(name)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, ts.n_tiles, size=2 * ts.n_tiles)  # any order, repeats
    got = k.batch_error(ts, idx)
    want = k.approx(ts, idx).err
    assert got.dtype == np.float64 and got.shape == idx.shape
    np.testing.assert_array_equal(got, want)
    # and the single-tile API, up to rounding
    for u in range(min(40, idx.size)):
        tile = ts.dense(idx[u])
        assert got[u] == pytest.approx(float(np.sum((tile - k.decode(k.encode(tile))) ** 2)),
                                       rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("name", ERROR_PASS_KERNELS)
def test_parallel_and_serial_passes_agree(name, monkeypatch):
    A = sp.random_array((2000, 2000), density=0.02, rng=np.random.default_rng(4), format="csr")
    ts = build_tiles(A, 32)
    k = get_kernel(name)
    idx = np.arange(ts.n_tiles)[::-1].copy()
    monkeypatch.setattr(threads, "pack_parallel", lambda work: True)
    par = k.batch_error(ts, idx)
    monkeypatch.setattr(threads, "pack_parallel", lambda work: False)
    ser = k.batch_error(ts, idx)
    np.testing.assert_array_equal(par, ser)
    np.testing.assert_array_equal(par, k.approx(ts, idx).err)


def test_prune_error_of_a_large_tile_known_answer():
    """20 entries (the sorted branch, more than PAIRWISE_MAX) with magnitudes 1 … 20 in shuffled
    places: PRUNE50 keeps the ten largest, PRUNE25 the five largest."""
    mags = np.random.default_rng(2).permutation(np.arange(1.0, 21.0))
    signs = np.where(np.arange(20) % 3 == 0, -1.0, 1.0)
    A = sp.csr_array((mags * signs, (np.arange(20) // 5, np.arange(20) % 5 * 3)), shape=(4, 15))
    ts = build_tiles(A, 16)
    assert ts.n_tiles == 1
    assert get_kernel("PRUNE50").batch_error(ts)[0] == sum(i * i for i in range(1, 11))
    assert get_kernel("PRUNE25").batch_error(ts)[0] == sum(i * i for i in range(1, 16))
    # the same tile cut to 16 entries takes the pairwise branch
    B = sp.csr_array(A.toarray()[:, :12])
    kept = np.sort(np.abs(B.data))
    ts = build_tiles(B, 16)
    assert B.nnz == 16
    assert get_kernel("PRUNE50").batch_error(ts)[0] == np.sum(kept[:8] ** 2)


def test_nm_error_counts_only_dropped_entries_of_full_groups():
    # one row, groups of 4: [3, 1, 2, 0.5] keeps 3 and 2 under 2:4 → E = 1 + 0.25
    A = sp.csr_array(np.array([[3.0, 1.0, 2.0, 0.5, 0.0, 7.0, 0.0, 0.0]]))
    ts = build_tiles(A, 8)
    assert get_kernel("NM2:4").batch_error(ts)[0] == 1.25
    assert get_kernel("NM1:4").batch_error(ts)[0] == 1.0 + 4.0 + 0.25
    assert get_kernel("NM4:8").batch_error(ts)[0] == 0.25


def test_empty_batch_and_bounds():
    ts = build_tiles(sp.random_array((50, 50), density=0.1, rng=np.random.default_rng(0), format="csr"), 16)
    for name in ERROR_PASS_KERNELS:
        assert get_kernel(name).batch_error(ts, np.zeros(0, np.int64)).shape == (0,)
    for n in (1, 2, 7, 1000):
        b = pass_bounds(n)
        assert b[0] == 0 and b[-1] == n and np.all(np.diff(b) >= 1)
