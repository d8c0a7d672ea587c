"""Tiling and features against slow references (akf-spec §2)."""
import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.analysis.features import FLOAT_FEATURES, INT_FEATURES, tile_features
from akfviz.analysis.tiling import TileSet, build_tiles
from akfviz.errors import InputError
from analysis_naive import naive_features, naive_tiles


def _random(n, m, density, seed, idx_dtype=np.int32):
    A = sp.random_array((n, m), density=density, format="csr", rng=np.random.default_rng(seed))
    A.indices = A.indices.astype(idx_dtype)
    A.indptr = A.indptr.astype(idx_dtype)
    return A


def _check_tiles(A, T):
    dense = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)
    ts = build_tiles(A, T)
    ref = naive_tiles(dense, T)
    assert ts.n_tiles == len(ref)
    assert ts.n_brows == -(-dense.shape[0] // T) and ts.n_bcols == -(-dense.shape[1] // T)
    for arr in (ts.bi, ts.bj, ts.h, ts.w, ts.ptr, ts.r, ts.c, ts.rb_ptr):
        assert arr.dtype == np.int64
    assert ts.v.dtype == np.float64
    assert ts.ptr[0] == 0 and ts.ptr[-1] == np.count_nonzero(dense)
    for t, (bi, bj, h, w, r, c, v) in enumerate(ref):
        assert (ts.bi[t], ts.bj[t], ts.h[t], ts.w[t]) == (bi, bj, h, w)
        s, e = ts.ptr[t], ts.ptr[t + 1]
        np.testing.assert_array_equal(ts.r[s:e], r)
        np.testing.assert_array_equal(ts.c[s:e], c)
        np.testing.assert_array_equal(ts.v[s:e], v)
        np.testing.assert_array_equal(ts.dense(t), dense[bi * T:bi * T + h, bj * T:bj * T + w])
    # rb_ptr: the tiles of row block b
    for b in range(ts.n_brows):
        sel = ts.bi[ts.rb_ptr[b]:ts.rb_ptr[b + 1]]
        assert np.all(sel == b)
        assert np.count_nonzero(ts.bi == b) == sel.size
    return ts


@pytest.mark.parametrize("shape,density,T", [
    ((50, 50), 0.1, 8), ((37, 61), 0.2, 8), ((64, 64), 0.05, 4), ((300, 200), 0.01, 128),
    ((130, 129), 0.3, 32), ((5, 300), 0.5, 16), ((300, 3), 0.5, 4), ((257, 257), 0.002, 256),
])
def test_tiles_match_dense_slicing(shape, density, T):
    _check_tiles(_random(*shape, density, seed=sum(shape) + T), T)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_index_dtypes(idx_dtype):
    A = _random(90, 70, 0.1, 3, idx_dtype)
    assert A.indices.dtype == idx_dtype
    ts = _check_tiles(A, 16)
    ts32 = build_tiles(_random(90, 70, 0.1, 3, np.int32), 16)
    np.testing.assert_array_equal(ts.r, ts32.r)
    np.testing.assert_array_equal(ts.v, ts32.v)


def test_many_tiles_per_row_block_uses_bitmap_path():
    # a full row block with many distinct column blocks (d log d > n_bcols / 32)
    A = _random(16, 4000, 0.5, 5)
    _check_tiles(A, 4)
    # and a sparse wide one (sorting path)
    _check_tiles(_random(40, 5000, 0.002, 6), 4)


def test_edge_cases():
    _check_tiles(sp.csr_array((1, 1)), 4)
    ts = _check_tiles(sp.csr_array(np.array([[2.5]])), 4)
    assert ts.n_tiles == 1 and ts.h[0] == 1 and ts.w[0] == 1
    one = sp.csr_array(([7.0], ([99], [3])), shape=(100, 100))
    ts = _check_tiles(one, 32)
    assert ts.bi.tolist() == [3] and ts.bj.tolist() == [0] and ts.h.tolist() == [4]
    rows_zero = np.zeros((40, 40))
    rows_zero[[0, 39], :] = 1.0
    _check_tiles(sp.csr_array(rows_zero), 8)
    empty = build_tiles(sp.csr_array((1000, 500)), 8)
    assert empty.n_tiles == 0 and empty.ptr.tolist() == [0] and empty.rb_ptr.size == 126


def test_dense_input_and_noncanonical_input_not_mutated():
    coo = sp.coo_array(([1.0, 2.0, 0.0, 3.0], ([5, 5, 1, 0], [3, 3, 2, 9])), shape=(10, 10))
    csr = sp.csr_array(coo)  # duplicates, explicit zero, unsorted
    before = (csr.data.copy(), csr.indices.copy())
    ts = build_tiles(csr, 4)
    np.testing.assert_array_equal(csr.data, before[0])
    np.testing.assert_array_equal(csr.indices, before[1])
    assert ts.nnz == 2
    assert ts.dense(1)[1, 3] == 3.0


def test_no_block_grid_allocation():
    # 100k x 100k at T=4: 6.25e8 tile slots; only the nonempty ones may exist
    A = sp.csr_array(([1.0, 1.0], ([0, 99_999], [99_999, 0])), shape=(100_000, 100_000))
    ts = build_tiles(A, 4)
    assert ts.n_tiles == 2 and ts.bi.tolist() == [0, 24_999] and ts.bj.tolist() == [24_999, 0]


@pytest.mark.parametrize("bad", [3, 257, 0, -8, 8.5, "32", None, True])
def test_invalid_tile(bad):
    with pytest.raises(InputError):
        build_tiles(np.eye(4), bad)


def test_tile_index_errors():
    ts = build_tiles(np.eye(8), 4)
    with pytest.raises(InputError):
        ts.dense(2)
    with pytest.raises(InputError):
        ts.dense(-1)
    assert isinstance(ts, TileSet)


def _check_features(A, T, g=8, top_q=0.1, bpd=2):
    ts = build_tiles(A, T)
    ints, floats, sig, dbin = tile_features(ts, g, top_q, bpd)
    for t in range(ts.n_tiles):
        ref = naive_features(ts.dense(t), g, top_q, bpd)
        for k, name in enumerate(INT_FEATURES):
            assert ints[t, k] == ref[name], (name, t)
        for k, name in enumerate(FLOAT_FEATURES):
            assert floats[t, k] == pytest.approx(ref[name], rel=1e-12), (name, t)
        assert int(sig[t]) == ref["signature"]
        assert dbin[t] == ref["density_bin"]
    return ints, floats, sig


@pytest.mark.parametrize("shape,density,T", [
    ((64, 64), 0.3, 8), ((70, 45), 0.6, 16), ((40, 40), 1.0, 4), ((200, 150), 0.05, 32),
    ((129, 129), 0.9, 128), ((23, 23), 0.2, 4),
])
def test_features_match_reference(shape, density, T):
    _check_features(_random(*shape, density, seed=shape[0] * T), T)


def test_features_other_grid_and_q():
    _check_features(_random(50, 50, 0.4, 11), 16, g=4, top_q=0.25, bpd=3)
    _check_features(_random(50, 50, 0.4, 12), 16, g=1, top_q=1.0, bpd=1)


def test_features_structured():
    # a banded matrix, an N:M (2:4) pattern, a diagonal: known values
    n = 64
    band = sp.diags_array([np.ones(n - 1), 2 * np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1])
    ints, _, _ = _check_features(sp.csr_array(band), 16)
    nd = INT_FEATURES.index("n_diagonals")
    assert ints[0, nd] == 3  # the first diagonal tile holds diagonals -1, 0, 1
    nm24 = np.zeros((16, 16))
    nm24[:, 0::4] = 1.0
    nm24[:, 1::4] = -2.0
    ints, _, _ = _check_features(sp.csr_array(nm24), 16)
    assert ints[0, INT_FEATURES.index("nm4")] == 2 and ints[0, INT_FEATURES.index("nm8")] == 4
    ints, floats, sig = _check_features(sp.csr_array(np.diag(np.arange(1.0, 33.0))), 32)
    assert ints[0, INT_FEATURES.index("bandwidth")] == 0
    # top 10 % of 32 values = the 3 largest
    assert floats[0, 2] == pytest.approx((30**2 + 31**2 + 32**2) / np.sum(np.arange(1, 33) ** 2))
    # diagonal occupancy on an 8x8 grid: bits 0, 9, 18, ..., 63
    assert int(sig[0]) == sum(1 << (9 * i) for i in range(8))


def test_features_edge_tiles_and_single_entry():
    A = sp.csr_array(([-3.0], ([10], [12])), shape=(11, 13))
    ints, floats, sig = _check_features(A, 8)
    assert floats[0, 0] == pytest.approx(1 / (3 * 5))
    assert floats[0, 2] == 1.0
    _check_features(sp.csr_array(np.ones((1, 1))), 4)
    _check_features(sp.csr_array(np.ones((9, 9))), 8)


def test_features_invalid_settings():
    ts = build_tiles(np.eye(8), 4)
    with pytest.raises(InputError):
        tile_features(ts, grid=9)
    with pytest.raises(InputError):
        tile_features(ts, top_q=0.0)


def test_parallel_paths_match_serial_and_reference():
    # large enough for the parallel kernels (nnz > 1e5, tiles > 2e4)
    from akfviz.analysis import features as F
    from akfviz.analysis.tiling import _bucket_row_blocks  # noqa: F401
    A = _random(1000, 1100, 0.12, 21)
    T = 4
    ts = build_tiles(A, T)
    assert A.nnz > 100_000 and ts.n_tiles > F.PARALLEL_MIN
    dense = A.toarray()
    ref = naive_tiles(dense, T)
    assert ts.n_tiles == len(ref)
    np.testing.assert_array_equal(ts.bi, [x[0] for x in ref])
    np.testing.assert_array_equal(ts.bj, [x[1] for x in ref])
    np.testing.assert_array_equal(ts.w, [x[3] for x in ref])
    np.testing.assert_array_equal(ts.v, np.concatenate([x[6] for x in ref]))
    np.testing.assert_array_equal(ts.c, np.concatenate([x[5] for x in ref]))
    ints, floats, sig, dbin = tile_features(ts)
    n = ts.n_tiles
    si = np.empty((n, len(INT_FEATURES)), np.int64, order="F")
    sf = np.empty((n, len(FLOAT_FEATURES)), order="F")
    ss = np.empty(n, np.uint64)
    sd = np.empty(n, np.int64)
    F._tile_range_features(ts.ptr, ts.r, ts.c, ts.v, ts.h, ts.w, T, 8, 0.1, 2.0, 0, n, si, sf, ss, sd)
    np.testing.assert_array_equal(ints, si)
    np.testing.assert_array_equal(floats, sf)
    np.testing.assert_array_equal(sig, ss)
    np.testing.assert_array_equal(dbin, sd)
    for t in range(0, n, 997):
        f = naive_features(ts.dense(t))
        assert [ints[t, k] for k in range(len(INT_FEATURES))] == [f[k] for k in INT_FEATURES]
        assert int(sig[t]) == f["signature"]


def test_top_sum_quickselect():
    from akfviz.analysis.features import _top_sum
    rng = np.random.default_rng(0)
    for k in [1, 2, 3, 10, 57, 400]:
        for a in (rng.random(k), np.ones(k), rng.integers(0, 3, k).astype(float)):
            for ntop in sorted({1, max(1, k // 10), k // 2 or 1, k}):
                ref = np.sort(a)[::-1][:ntop].sum()
                assert _top_sum(a.copy(), k, ntop) == pytest.approx(ref, rel=1e-12)


def test_top_sum_small_equals_sorted_sum_in_any_order():
    # the small-ntop path keeps a sorted buffer: same multiset as a full sort, and the same
    # floating-point sum for any order of the input (ties and zeros included)
    from akfviz.analysis.features import TOP_SMALL, _top_sum_small

    rng = np.random.default_rng(5)
    for k in (1, 2, 7, 16, 17, 61, 300, 1024):
        for ntop in sorted({1, 2, min(k, 6), min(k, TOP_SMALL)}):
            v = rng.standard_normal(k)
            v[rng.random(k) < 0.2] = 1.5  # ties
            ref = 0.0
            for x in np.sort(v * v)[k - ntop:]:  # added in ascending order, like the buffer
                ref += float(x)
            buf = np.empty(TOP_SMALL)
            got = _top_sum_small(v, 0, k, ntop, buf)
            assert got == ref
            again = _top_sum_small(rng.permutation(v), 0, k, ntop, buf)
            assert again == got
            ascending = _top_sum_small(np.sort(np.abs(v)), 0, k, ntop, buf)  # worst case order
            assert ascending == got


def test_a_huge_tile_side_is_named_by_its_size():
    # 10**5000 made the message itself fail (more than 4,300 digits) with a raw ValueError
    import akfviz

    for t, words in ((10 ** 5000, "a 5001-digit number"), (10 ** 400, "a 401-digit number"), (1000, "got 1000.")):
        with pytest.raises(akfviz.InputError, match=words):
            akfviz.analyze(np.eye(4), tile=t)
