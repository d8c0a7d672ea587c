"""The fused tiling + features pass and the pair-level clustering against the slower paths."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.analysis import tilepass
from akfviz.analysis.features import tile_features
from akfviz.analysis.lsh import (LSHConfig, _band_components, _cluster_keys,
                                 _first_appearance, _pair_ids, cluster_tiles)
from akfviz.analysis.minhash import minhash_signatures
from akfviz.analysis.tiling import _tiles_of_csr
from akfviz.workloads.validate import as_csr

from analysis_naive import naive_features, naive_tiles

FIELDS = ("bi", "bj", "h", "w", "ptr", "r", "c", "v", "rb_ptr")


def _fused(A, T, **kw):
    M, indptr, indices, rb = tilepass.canonical_csr(A, T)
    return M, tilepass.tiles_and_features(M, indptr, indices, rb, T, **kw)


def _check_same(A, T, **kw):
    M, (ts, ints, floats, sig, dbin) = _fused(A, T, **kw)
    M0 = as_csr(A)
    assert M.indices.dtype == M0.indices.dtype and M.indptr.dtype == M0.indptr.dtype
    assert abs(M - M0).nnz == 0 and M.has_canonical_format
    ts0 = _tiles_of_csr(M0, T)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(ts, f), getattr(ts0, f), err_msg=f)
        assert getattr(ts, f).dtype == getattr(ts0, f).dtype
    i0, f0, s0, d0 = tile_features(ts0, kw.get("grid", 8), kw.get("top_q", 0.1),
                                   kw.get("bins_per_decade", 2))
    np.testing.assert_array_equal(ints, i0)
    np.testing.assert_array_equal(floats, f0)  # bit for bit
    np.testing.assert_array_equal(sig, s0)
    np.testing.assert_array_equal(dbin, d0)
    return ts, ints, floats, sig, dbin


# 12, 20 and 24: multiples of 4 that are not powers of two (the app's tile slider steps by 4), where
# the column block must be col // T, not a shift (a shift taken for them crashed the pass)
@pytest.mark.parametrize("T", [4, 8, 12, 13, 20, 24, 32, 64])
@pytest.mark.parametrize("shape,density", [((300, 200), 0.02), ((64, 64), 0.4), ((5, 9), 0.5),
                                           ((1500, 1500), 0.001)])
def test_fused_pass_equals_tiling_then_features(T, shape, density):
    A = sp.random_array(shape, density=density, format="csr", rng=np.random.default_rng(T))
    _check_same(A, T)
    _check_same(sp.csr_matrix(A), T, grid=5, top_q=0.3, bins_per_decade=3)
    B = A.copy()
    B.indices = B.indices.astype(np.int64)
    B.indptr = B.indptr.astype(np.int64)
    _check_same(B, T)
    _check_same(A.toarray(), T)


def test_the_shift_fast_path_is_taken_for_powers_of_two_only():
    for T in range(4, 257):
        want = T.bit_length() - 1 if T in (4, 8, 16, 32, 64, 128, 256) else -1
        assert tilepass._shift(T) == want, T


def test_fused_pass_against_naive_reference():
    rng = np.random.default_rng(3)
    dense = np.where(rng.random((40, 50)) < 0.15, rng.standard_normal((40, 50)), 0.0)
    dense[:8, :8] = rng.standard_normal((8, 8))  # a full tile, many multi-entry tiles
    T = 8
    ts, ints, floats, sig, dbin = _check_same(dense, T)
    ref = naive_tiles(dense, T)
    assert len(ref) == ts.n_tiles
    from akfviz.analysis.features import FLOAT_FEATURES, INT_FEATURES
    for t, (bi, bj, h, w, r, c, v) in enumerate(ref):
        want = naive_features(dense[bi * T:(bi + 1) * T, bj * T:(bj + 1) * T])
        for k, name in enumerate(INT_FEATURES):
            assert ints[t, k] == want[name], name
        for k, name in enumerate(FLOAT_FEATURES):
            assert floats[t, k] == pytest.approx(want[name], rel=1e-12), name
        assert int(sig[t]) == want["signature"] and dbin[t] == want["density_bin"]


@pytest.mark.parametrize("make", [
    lambda A: sp.csr_array((A.data, A.indices, A.indptr), shape=A.shape),  # canonical
    lambda A: A.tocoo(),
    lambda A: sp.csr_array((np.r_[A.data, 0.0], np.r_[A.indices, 0], np.r_[A.indptr[:-1], A.nnz + 1]),
                           shape=A.shape),  # explicit zero at the end of the last row
])
def test_canonical_csr_fast_path_and_fallback_agree_with_as_csr(make):
    A = sp.random_array((50, 40), density=0.1, format="csr", rng=np.random.default_rng(0))
    X = make(A)
    M, indptr, indices, rb = tilepass.canonical_csr(X, 8)
    M0 = as_csr(X)
    assert abs(M - M0).nnz == 0 and M.nnz == M0.nnz
    np.testing.assert_array_equal(indptr, M0.indptr.astype(np.int64))
    ts0 = _tiles_of_csr(M0, 8)
    np.testing.assert_array_equal(rb, np.diff(ts0.rb_ptr))


def test_non_canonical_inputs_fall_back():
    # unsorted indices, duplicates, explicit zeros, non-finite values
    indptr = np.array([0, 3, 5])
    indices = np.array([2, 0, 2, 1, 1])
    data = np.array([1.0, 2.0, 3.0, 0.0, 4.0])
    A = sp.csr_array((data, indices, indptr), shape=(2, 3))
    M, *_ = tilepass.canonical_csr(A, 4)
    np.testing.assert_array_equal(M.toarray(), as_csr(A).toarray())
    assert M.nnz == 3
    # a repeated column in sorted order (3, 3): not canonical either; the two are summed
    dup = sp.csr_array((np.array([1.0, 2.0, 5.0]), np.array([3, 3, 7]), np.array([0, 2, 3] + [3] * 14)),
                       shape=(16, 16))
    for T in (4, 8, 16):
        M, *_ = tilepass.canonical_csr(dup, T)
        assert M.nnz == 2 and M[0, 3] == 3.0 and M[1, 7] == 5.0
        pa = akfviz.analyze(dup, tile=T)
        assert pa.nnz == 2 and pa.fro_norm == pytest.approx(np.sqrt(9.0 + 25.0), rel=1e-15)
        assert pa.tiles_as_analysed()["nnz"].sum() == 2
    bad = sp.csr_array((np.array([np.nan]), np.array([0]), np.array([0, 1])), shape=(1, 1))
    with pytest.raises(akfviz.InputError):
        tilepass.canonical_csr(bad, 4)


def test_analyze_copies_the_matrix():
    A = sp.random_array((40, 40), density=0.1, format="csr", rng=np.random.default_rng(1))
    pa = akfviz.analyze(A, 8)
    before = pa.A.toarray().copy()
    A.data[:] = 7.0
    np.testing.assert_array_equal(pa.A.toarray(), before)


def test_parallel_fill_equals_serial(monkeypatch):
    A = sp.random_array((3000, 3000), density=0.004, format="csr", rng=np.random.default_rng(2))
    _, serial = _fused(A, 16)
    monkeypatch.setattr(tilepass, "PARALLEL_MIN_NNZ", 0)
    _, par = _fused(A, 16)
    for a, b in zip(serial[1:], par[1:]):
        np.testing.assert_array_equal(a, b)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(serial[0], f), getattr(par[0], f))


def _tile_level_clusters(sig, dbin, cfg):
    """The former tile-level path: unique signatures and cluster keys over all tiles."""
    uid, first = _first_appearance(sig)
    mh = minhash_signatures(sig[first], cfg.num_hashes, cfg.seed, cfg.grid * cfg.grid)
    root = _band_components(mh, cfg.bands)
    bmin = int(dbin.min())
    keys = _cluster_keys(root, uid, dbin, bmin, int(dbin.max()) - bmin + 1)
    cluster, _ = _first_appearance(keys)
    return uid, sig[first], cluster


@pytest.mark.parametrize("seed", [0, 1])
def test_pair_level_clustering_equals_tile_level(seed):
    rng = np.random.default_rng(seed)
    n = 5000
    single = np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)
    multi = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) & np.uint64(0xF0F0)
    multi[multi == 0] = 3
    sig = np.where(rng.random(n) < 0.7, single, multi)
    sig[::97] = np.uint64(0)  # empty sets take the hashed path too
    dbin = rng.integers(-6, 1, n)
    cfg = LSHConfig()
    cl = cluster_tiles(sig, dbin, cfg)
    uid, usig, cluster = _tile_level_clusters(sig, dbin, cfg)
    np.testing.assert_array_equal(cl["tile_unique"], uid)
    np.testing.assert_array_equal(cl["unique_signatures"], usig)
    np.testing.assert_array_equal(cl["cluster"], cluster)
    pid = np.empty(n, np.int64)
    first = _pair_ids(sig, dbin, int(dbin.min()), int(dbin.max() - dbin.min()) + 1, pid)
    keys = [(int(a), int(b)) for a, b in zip(sig, dbin)]
    ref = {}
    for k in keys:
        ref.setdefault(k, len(ref))
    np.testing.assert_array_equal(pid, [ref[k] for k in keys])
    assert [keys[f] for f in first] == list(ref)


def test_tiles_table_is_lazy_cached_and_pickles():
    import pickle

    A = sp.random_array((64, 64), density=0.1, format="csr", rng=np.random.default_rng(4))
    pa = akfviz.analyze(A, 8)
    fresh = pickle.loads(pickle.dumps(pa))
    assert "tiles" not in pa.__dict__
    t = pa.tiles
    assert pa.tiles is t
    assert list(t.columns) == list(akfviz.analysis.pattern.TILE_COLUMNS)
    assert t["signature"].dtype == np.uint64 and t["density"].dtype == np.float64
    assert t["nnz"].dtype == np.int64 and t["cluster"].dtype == np.int64
    pd_ = pickle.loads(pickle.dumps(pa))
    assert pd_.tiles.equals(t) and fresh.tiles.equals(t)
    t.loc[0, "bi"] = 99  # the table owns its columns
    assert pa.tileset.bi[0] != 99


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.bool_])
def test_csr_with_other_value_dtypes_is_analysed_as_float64(dtype):
    # a canonical CSR whose values are not float64 must not take the copy-as-is fast path
    # with its own dtype: pa.A is always a float64 copy (akf-spec §9)
    A = sp.random_array((40, 36), density=0.15, format="csr", rng=np.random.default_rng(4))
    A.data[:] = np.arange(1, A.nnz + 1)
    X = sp.csr_array((A.data.astype(dtype), A.indices.copy(), A.indptr.copy()), shape=A.shape)
    assert X.has_canonical_format
    pa = akfviz.analyze(X, tile=8)
    assert pa.A.dtype == np.float64 and pa.A.data.dtype == np.float64
    ref = akfviz.analyze(X.astype(np.float64), tile=8)
    np.testing.assert_array_equal(pa.A.toarray(), ref.A.toarray())
    assert pa.fro_norm == ref.fro_norm


def test_complex_csr_is_an_input_error():
    A = sp.random_array((20, 20), density=0.2, format="csr", rng=np.random.default_rng(5))
    X = sp.csr_array((A.data * (1 + 1j), A.indices.copy(), A.indptr.copy()), shape=A.shape)
    with pytest.raises(akfviz.InputError):
        akfviz.analyze(X, tile=8)
