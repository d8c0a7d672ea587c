"""The eager pass (scanpass) and the pair clustering (pairclust) against the full pass and the
per-tile clustering they replace in ``analyze``: the same numbers, bit for bit."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.analysis import tilepass
from akfviz.analysis.lsh import LSHConfig, cluster_tiles
from akfviz.analysis.pairclust import _exact_repeat, cluster_scan
from akfviz.analysis.scanpass import MAX_CHUNKS, chunk_bounds, scan_tiles
from akfviz.selection.structure import classify_arrays


def _scan_and_full(A, T, cfg=None):
    cfg = cfg or LSHConfig()
    M, indptr, indices, rb = tilepass.canonical_csr(A, T)
    scan = scan_tiles(M, indptr, indices, rb, T, cfg.grid, cfg.top_q, cfg.bins_per_decade)
    full = tilepass.tiles_and_features(M, indptr, indices, rb, T, cfg.grid, cfg.top_q,
                                       cfg.bins_per_decade)
    return M, scan, full


def _tile_chunk_offsets(scan):
    """The pair slot of every tile: its chunk's first slot + its local pair id."""
    n = scan.bj.shape[0]
    rb_of_tile = np.searchsorted(scan.rb_ptr, np.arange(n), side="right") - 1
    chunk = np.searchsorted(scan.bounds, rb_of_tile, side="right") - 1
    return scan.rb_ptr[scan.bounds[chunk]] + scan.pid


def _matrices():
    rng = np.random.default_rng(7)
    yield "uniform", akfviz.generate("uniform", n=1500, density=0.004, seed=1), 32
    yield "uniform T=24", akfviz.generate("uniform", n=1000, m=777, density=0.01, seed=2), 24
    yield "llm", akfviz.generate("llm", n=512, sparsity=0.85, seed=0), 32
    yield "banded T=16", akfviz.generate("banded", n=2000, seed=0), 16
    yield "stencil9", akfviz.generate("stencil9", n=2500, seed=0), 32
    yield "block", akfviz.generate("block_diagonal", n=1024, seed=3), 32
    yield "nm 2:4 T=8", akfviz.generate("nm", n=512, seed=1), 8
    yield "powerlaw T=13", akfviz.generate("powerlaw", n=1200, density=0.01, seed=4), 13
    yield "dense 40x33 T=7", sp.csr_array(rng.standard_normal((40, 33))), 7
    # wide and sparse: a row block's column blocks ordered by a bitmap with a few bits per word
    yield "wide, few per word", sp.random_array((400, 200_000), density=5e-5, format="csr", rng=rng), 32
    yield "one nonzero", sp.csr_array(([2.5], ([3], [9])), shape=(10, 12)), 4
    yield "1x1", sp.csr_array(np.array([[3.0]])), 4
    yield "empty rows", sp.csr_array(([1.0, -2.0, 3.0], ([0, 0, 99], [5, 50, 0])), shape=(100, 64)), 16
    big = sp.random_array((300, 260), density=0.02, format="csr", rng=rng)
    big.indices = big.indices.astype(np.int64)
    big.indptr = big.indptr.astype(np.int64)
    yield "int64 indices", big, 32
    tiny = np.zeros((9, 9))
    tiny[0, 0] = 1e-200  # its square underflows: fro2 = 0, top = 0
    tiny[4, 5] = 2.0
    yield "underflowing square", sp.csr_array(tiny), 4
    one = np.zeros((1, 6400))
    one[0, np.random.default_rng(4).choice(200, 100, replace=False) * 32 + 5] = 1.0
    yield "one row, distinct column blocks", sp.csr_array(one), 32
    every = np.zeros((32, 3200))
    every[3, ::32] = 2.0
    every[7, 1::32] = 3.0
    yield "every column block", sp.csr_array(every), 32


@pytest.mark.parametrize("name,A,T", list(_matrices()), ids=[m[0] for m in _matrices()])
def test_scan_equals_the_full_pass_bit_for_bit(name, A, T):
    M, scan, (ts, ints, floats, sig, dbin) = _scan_and_full(A, T)
    np.testing.assert_array_equal(scan.rb_ptr, ts.rb_ptr)
    np.testing.assert_array_equal(scan.bj, ts.bj)
    np.testing.assert_array_equal(scan.nnz, ints[:, 0])
    np.testing.assert_array_equal(scan.fro2, floats[:, 1])
    multi = scan.nnz > 1
    np.testing.assert_array_equal(scan.top[multi], floats[multi, 2])  # one-entry tiles: not written
    pa = akfviz.analyze(A, tile=T)
    np.testing.assert_array_equal(pa.compact.top, floats[:, 2])
    np.testing.assert_array_equal(pa.compact.density, floats[:, 0])
    cls = classify_arrays(ts.h, ts.w, ints[:, 0], ints[:, 5], ints[:, 7], sig, 8) if ts.n_tiles \
        else np.zeros(0, np.int64)
    np.testing.assert_array_equal(scan.cls, cls)
    slot = _tile_chunk_offsets(scan)
    np.testing.assert_array_equal(scan.psig[slot], sig)   # every tile points at its own pair
    np.testing.assert_array_equal(scan.pbin[slot], dbin)


@pytest.mark.parametrize("top_q,grid", [(0.5, 8), (1.0, 4), (0.1, 1), (0.05, 3)])
def test_scan_with_other_lsh_settings(top_q, grid):
    # a large top_q makes every tile of two or more entries "large" (grouped entries, top-q sums)
    cfg = LSHConfig(top_q=top_q, grid=grid, bins_per_decade=3)
    A = akfviz.generate("llm", n=384, sparsity=0.7, seed=5)
    M, scan, (ts, ints, floats, sig, dbin) = _scan_and_full(A, 16, cfg)
    multi = scan.nnz > 1
    np.testing.assert_array_equal(scan.top[multi], floats[multi, 2])
    np.testing.assert_array_equal(scan.fro2, floats[:, 1])
    np.testing.assert_array_equal(scan.cls, classify_arrays(ts.h, ts.w, ints[:, 0], ints[:, 5], ints[:, 7],
                                                            sig, grid))
    slot = _tile_chunk_offsets(scan)
    np.testing.assert_array_equal(scan.psig[slot], sig)
    np.testing.assert_array_equal(scan.pbin[slot], dbin)


def test_chunks_depend_on_the_matrix_only(monkeypatch):
    import numba

    assert chunk_bounds(10, 100).tolist() == [0, 10]                # small: one chunk
    b = chunk_bounds(5000, 10**6)
    assert b.size == MAX_CHUNKS + 1 and b[0] == 0 and b[-1] == 5000 and np.all(np.diff(b) > 0)
    # the same pairs and numbering on one thread as on all of them
    A = sp.random_array((20000, 20000), density=1e-3, format="csr", rng=np.random.default_rng(3))
    pa = akfviz.analyze(A)
    numba.set_num_threads(1)
    try:
        pa1 = akfviz.analyze(A)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for f in ("pair", "cluster", "nnz", "cls"):
        np.testing.assert_array_equal(getattr(pa.compact, f), getattr(pa1.compact, f))
    np.testing.assert_array_equal(pa.cluster_order, pa1.cluster_order)
    assert pa.clusters.equals(pa1.clusters)


def _old_analysis(A, T, cfg):
    M, indptr, indices, rb = tilepass.canonical_csr(A, T)
    ts, ints, floats, sig, dbin = tilepass.tiles_and_features(M, indptr, indices, rb, T, cfg.grid,
                                                              cfg.top_q, cfg.bins_per_decade)
    return ts, ints, floats, sig, dbin, cluster_tiles(sig, dbin, cfg, density=floats[:, 0],
                                                      top_mass=floats[:, 2], fro2=floats[:, 1])


LSH_CASES = [None, dict(num_hashes=16, bands=4, seed=3), dict(jaccard_pairs=3, grid=4),
             dict(bins_per_decade=5, top_q=0.3)]


@pytest.mark.parametrize("name,A,T", list(_matrices()), ids=[m[0] for m in _matrices()])
@pytest.mark.parametrize("lsh", LSH_CASES, ids=["default", "16 hashes", "3 pairs", "5 bins"])
def test_analyze_equals_the_per_tile_clustering(name, A, T, lsh):
    """Clusters, ids, representatives, Jaccard means, mean densities (exact: summed in tile order,
    or known exactly for alike members), histogram, cluster order and ‖A‖_F as before."""
    cfg = LSHConfig.from_any(lsh)
    ts, ints, floats, sig, dbin, cl = _old_analysis(A, T, cfg)
    pa = akfviz.analyze(A, tile=T, lsh=lsh)
    assert pa.n_clusters == cl["n_clusters"]
    np.testing.assert_array_equal(pa.compact.cluster, cl["cluster"])
    np.testing.assert_array_equal(pa.cluster_order, cl["order"])
    np.testing.assert_array_equal(pa.cluster_ptr, cl["cptr"])
    c = pa.clusters
    np.testing.assert_array_equal(c["representative"].to_numpy(), cl["representative"])
    np.testing.assert_array_equal(c["jaccard_mean"].to_numpy(), cl["jaccard_mean"])
    if pa.n_clusters:
        np.testing.assert_array_equal(c["mean_density"].to_numpy(), cl["density_sum"] / np.diff(cl["cptr"]))
        np.testing.assert_array_equal(c["density_bin"].to_numpy(), dbin[cl["representative"]])
    np.testing.assert_array_equal(pa.density_hist["count"].to_numpy(), cl["bin_counts"])
    assert pa.fro_norm == (np.sqrt(floats[:, 1].sum()) if ts.n_tiles else 0.0)
    assert not pa._full.done  # none of this needed the full pass
    t = pa.tiles
    for col, ref in (("bi", ts.bi), ("bj", ts.bj), ("h", ts.h), ("w", ts.w), ("nnz", ints[:, 0]),
                     ("n_diagonals", ints[:, 5]), ("signature", sig), ("density_bin", dbin),
                     ("density", floats[:, 0]), ("fro2", floats[:, 1]), ("top_mass", floats[:, 2]),
                     ("cluster", cl["cluster"])):
        np.testing.assert_array_equal(t[col].to_numpy(), ref, err_msg=col)
        assert t[col].dtype == ref.dtype, col


def test_clusters_of_one_nonzero_tiles_at_scale():
    """A hyper-sparse matrix: ≈ one nonzero per tile, so one large cluster of alike tiles (its
    representative and mean density known without a pass over its members) beside clusters of
    two- and three-entry tiles (members summed in tile order)."""
    A = sp.random_array((20000, 20000), density=2e-4, format="csr", rng=np.random.default_rng(11))
    cfg = LSHConfig()
    ts, ints, floats, sig, dbin, cl = _old_analysis(A, 32, cfg)
    pa = akfviz.analyze(A)
    np.testing.assert_array_equal(pa.clusters["representative"].to_numpy(), cl["representative"])
    np.testing.assert_array_equal(pa.clusters["mean_density"].to_numpy(), cl["density_sum"] / np.diff(cl["cptr"]))
    np.testing.assert_array_equal(pa.clusters["jaccard_mean"].to_numpy(), cl["jaccard_mean"])
    assert pa.clusters["size"].max() > 0.8 * pa.n_tiles
    assert pa.compact.pairs["uniform"].any() and not pa.compact.pairs["uniform"].all()


@pytest.mark.parametrize("bpd,T", [(2, 32), (20, 64)], ids=["two-bit table", "hashed (74 bins)"])
def test_pairs_over_many_chunks(bpd, T):
    """Many chunks (a pair table each, merged) and many tiles of two entries, whose pairs the eager
    pass and the merge find in a direct table of bit pairs — or, with more than DIRECT2_MAX_BINS
    density bins, by hashing: every tile points at its own pair, and the clusters are those of the
    per-tile clustering."""
    from akfviz.analysis.scanpass import DIRECT2_MAX_BINS, bin_floor

    A = sp.random_array((24000, 24000), density=4.2e-4, format="csr",
                        rng=np.random.default_rng(5))
    cfg = LSHConfig(bins_per_decade=bpd)
    assert (1 - bin_floor(T, bpd) <= DIRECT2_MAX_BINS) == (bpd == 2)
    M, scan, (ts, ints, floats, sig, dbin) = _scan_and_full(A, T, cfg)
    assert scan.bounds.size - 1 == MAX_CHUNKS
    bits = np.bitwise_count(sig)
    assert (bits == 2).sum() > 10_000 and (bits > 2).sum() > 100
    slot = _tile_chunk_offsets(scan)
    np.testing.assert_array_equal(scan.psig[slot], sig)
    np.testing.assert_array_equal(scan.pbin[slot], dbin)
    for ch in range(MAX_CHUNKS):   # a chunk lists each of its pairs once
        a = scan.rb_ptr[scan.bounds[ch]]
        keys = np.stack([scan.psig[a:a + scan.m[ch]].view(np.int64), scan.pbin[a:a + scan.m[ch]]])
        assert np.unique(keys, axis=1).shape[1] == scan.m[ch]
    cl = cluster_tiles(sig, dbin, cfg, density=floats[:, 0], top_mass=floats[:, 2], fro2=floats[:, 1])
    pa = akfviz.analyze(A, tile=T, lsh=cfg)
    np.testing.assert_array_equal(pa.compact.cluster, cl["cluster"])
    np.testing.assert_array_equal(pa.cluster_order, cl["order"])
    np.testing.assert_array_equal(pa.clusters["representative"].to_numpy(), cl["representative"])
    pairs = pa.compact.pairs
    np.testing.assert_array_equal(pairs["sig"][pa.compact.pair], sig)
    assert np.unique(np.stack([pairs["sig"].view(np.int64), pairs["bin"]]), axis=1).shape[1] == pairs["sig"].size


@pytest.mark.parametrize("x,m", [(1 / 1024, 10**6), (3 / 1024, 1234), (1 / 640, 7), (1.0, 10**9),
                                 (0.1, 3), (2.0 ** -40, 2**12), (0.0, 5), (5e-324, 3), (1 / 3, 1)])
def test_exact_repeat_matches_a_left_to_right_sum(x, m):
    """When _exact_repeat says so, adding x to itself m times left to right gives m·x exactly."""
    if _exact_repeat(x, m):
        s = 0.0
        for _ in range(m if m <= 10**6 else 0):
            s += x
        if m <= 10**6:
            assert s == m * x
        assert float(m) * x == m * x  # representable
    if x in (1 / 1024, 3 / 1024, 1.0, 0.0):
        assert _exact_repeat(x, m)
    if x in (1 / 640, 0.1):
        assert not _exact_repeat(x, m)


def test_cluster_scan_alone_and_an_empty_matrix():
    A = sp.csr_array((40, 30))
    M, indptr, indices, rb = tilepass.canonical_csr(A, 8)
    scan = scan_tiles(M, indptr, indices, rb, 8)
    cl = cluster_scan(scan, LSHConfig())
    assert cl["n_clusters"] == 0 and cl["order"].size == 0 and cl["bin_counts"].size == 0


@pytest.mark.parametrize("seed", range(6))
def test_cluster_statistics_against_the_slow_reference(seed):
    """Medoid / representative / Jaccard / density sum of the pair-based kernel against a plain
    Python loop over the members, on clusters small enough for every statistic to be exact."""
    from analysis_naive import naive_cluster_stats

    rng = np.random.default_rng(seed)
    n = 400
    pool = rng.integers(1, 2**20, 12).astype(np.uint64) << rng.integers(0, 40, 12).astype(np.uint64)
    sig = pool[rng.integers(0, pool.size, n)]
    dbin = rng.integers(-3, 0, n)
    # a few alike clusters (one density and top share) beside spread ones
    dens = np.where(dbin == -1, 1 / 1024, rng.integers(1, 30, n) / 1024.0)
    top = np.where(dbin == -1, 1.0, rng.random(n))
    cl = cluster_tiles(sig, dbin, LSHConfig(), density=dens, top_mass=top)
    rep, jm, ds = naive_cluster_stats(sig, dens, top, cl["cluster"], cl["n_clusters"])
    np.testing.assert_array_equal(cl["representative"], rep)
    np.testing.assert_array_equal(cl["jaccard_mean"], jm)
    np.testing.assert_array_equal(cl["density_sum"], ds)
