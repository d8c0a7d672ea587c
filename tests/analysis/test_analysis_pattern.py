"""akfviz.analyze end to end: contract fields, edge cases, determinism (akf-spec §2, §9)."""
import math
import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.analysis import LSHConfig, PatternAnalysis
from akfviz.analysis.pattern import CLUSTER_COLUMNS, HIST_COLUMNS, TILE_COLUMNS
from akfviz.workloads.validate import as_csr
from analysis_naive import jaccard, naive_features, naive_tiles

FLOATS = {"density", "fro2", "top_mass"}


def _matrix(seed=0, n=200, m=170):
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, m), density=0.03, format="lil", rng=rng)
    A[:40, :40] = rng.standard_normal((40, 40))          # dense block
    for i in range(min(n, m)):                            # diagonal
        A[i, i] = 1.0 + i
    return sp.csr_array(A)


def _check_contract(pa, A, T):
    assert isinstance(pa, PatternAnalysis)
    assert tuple(pa.tiles.columns) == TILE_COLUMNS
    for col in TILE_COLUMNS:
        want = np.float64 if col in FLOATS else (np.uint64 if col == "signature" else np.int64)
        assert pa.tiles[col].dtype == want, col
    assert tuple(pa.clusters.columns) == CLUSTER_COLUMNS
    assert pa.clusters.index.tolist() == list(range(pa.n_clusters))
    assert tuple(pa.density_hist.columns) == HIST_COLUMNS
    assert pa.tile == T and pa.shape == A.shape and pa.nnz == A.nnz
    assert pa.n_tiles == len(pa.tiles) == pa.tileset.n_tiles
    assert isinstance(pa.A, sp.csr_array) and pa.A.dtype == np.float64
    assert pa.signatures.dtype == np.uint64
    np.testing.assert_array_equal(pa.signatures, pa.tiles["signature"].to_numpy())
    assert pa.fro_norm == pytest.approx(sp.linalg.norm(A) if A.nnz else 0.0, rel=1e-12)
    assert isinstance(pa.lsh, LSHConfig)
    assert pa.timings["total"] >= 0 and all(v >= 0 for v in pa.timings.values())
    if pa.n_tiles:
        assert pa.clusters["size"].sum() == pa.n_tiles
        assert pa.density_hist["count"].sum() == pa.n_tiles
    s = pa.summary()
    assert s["n_tiles"] == pa.n_tiles and s["n_clusters"] == pa.n_clusters
    import json
    json.dumps(s)


@pytest.mark.parametrize("T", [4, 16, 32, 128])
def test_analyze_matches_references(T):
    A = _matrix(T)
    pa = akfviz.analyze(A, tile=T)
    _check_contract(pa, A, T)
    ref = naive_tiles(A.toarray(), T)
    tiles = pa.tiles
    assert len(ref) == len(tiles)
    for t, (bi, bj, h, w, r, c, v) in enumerate(ref):
        row = tiles.iloc[t]
        assert (row.bi, row.bj, row.h, row.w) == (bi, bj, h, w)
        blk = np.zeros((h, w))
        blk[r, c] = v
        f = naive_features(blk)
        for name, val in f.items():
            if name in FLOATS:
                assert row[name] == pytest.approx(val, rel=1e-12)
            else:
                assert int(tiles[name].iat[t]) == val, name
    # clusters: pure in density bin, reps are members, Jaccard within bounds
    for c in range(pa.n_clusters):
        mem = pa.cluster_members(c)
        assert mem.size == pa.clusters["size"].iat[c]
        assert (tiles["cluster"].to_numpy()[mem] == c).all()
        assert tiles["density_bin"].iloc[mem].nunique() == 1
        assert pa.clusters["density_bin"].iat[c] == tiles["density_bin"].iat[mem[0]]
        assert pa.clusters["representative"].iat[c] in mem
        assert pa.clusters["mean_density"].iat[c] == pytest.approx(tiles["density"].iloc[mem].mean())
        assert 0.0 <= pa.clusters["jaccard_mean"].iat[c] <= 1.0
    # histogram bins are consistent with density_bin
    bpd = pa.lsh.bins_per_decade
    for _, row in pa.density_hist.iterrows():
        b = int(round(row.bin_left * bpd))
        assert row.bin_right == pytest.approx((b + 1) / bpd)
        assert row["count"] == (tiles["density_bin"] == b).sum()


@pytest.mark.parametrize("bpd", [1, 3, 4])
def test_histogram_bins_follow_bins_per_decade(bpd):
    # every other test runs the default 2 bins per decade, where "/ 2" and "/ bpd" agree
    A = akfviz.generate("powerlaw", n=600, density=0.02, seed=3)
    pa = akfviz.analyze(A, tile=16, lsh={"bins_per_decade": bpd})
    t = pa.tiles
    dens = t["nnz"].to_numpy() / (t["h"].to_numpy() * t["w"].to_numpy())
    want_bin = np.floor(np.log10(dens) * bpd).astype(np.int64)
    np.testing.assert_array_equal(t["density_bin"].to_numpy(), want_bin)
    h = pa.density_hist
    np.testing.assert_allclose(h["bin_right"] - h["bin_left"], 1.0 / bpd, rtol=1e-12)
    lo = want_bin.min()
    np.testing.assert_array_equal(h["bin_left"].to_numpy(), np.arange(lo, lo + len(h)) / bpd)
    np.testing.assert_array_equal(h["count"].to_numpy(), np.bincount(want_bin - lo))
    # the bins hold the densities they say: 10^left <= d < 10^right
    for left, right, b in zip(h["bin_left"], h["bin_right"], range(lo, lo + len(h))):
        d = dens[want_bin == b]
        assert ((10.0 ** left <= d * (1 + 1e-12)) & (d < 10.0 ** right)).all()


def test_summary_jaccard_is_the_size_weighted_mean_over_clusters_of_two_or_more():
    A = akfviz.generate("uniform", n=256, density=0.01, seed=2)
    pa = akfviz.analyze(A, tile=16)
    cl = pa.clusters_as_analysed()
    size, jm = cl["size"].to_numpy(), cl["jaccard_mean"].to_numpy()
    multi = size >= 2
    assert multi.any() and (~multi).any()       # one-tile clusters (J = 1 by definition) must not count
    want = float(np.sum(jm[multi] * size[multi]) / np.sum(size[multi]))
    assert pa.summary()["jaccard_mean"] == pytest.approx(want, rel=1e-12)
    assert pa.summary()["jaccard_mean"] < float(np.sum(jm * size) / np.sum(size))


def test_density_split_separates_sparse_and_dense_tiles_with_same_outline():
    # every tile of side 8 covers all 64 cells of an 8x8 grid, some 100 % dense, some 1/8 dense
    T = 64
    A = np.zeros((2 * T, T))
    A[:T] = 1.0                       # dense tile
    A[T:, :] = 0.0
    A[T + np.arange(T), (np.arange(T) * 9) % T] = 1.0   # one nonzero per row, spread out
    pa = akfviz.analyze(A, tile=T, lsh={"grid": 1})    # one cell: identical signatures
    assert pa.tiles["signature"].nunique() == 1
    assert pa.n_clusters == 2
    assert pa.tiles["cluster"].tolist() == [0, 1]


def test_identical_tiles_share_cluster():
    blk = np.zeros((8, 8))
    blk[[0, 3, 5], [1, 4, 7]] = 2.0
    A = sp.csr_array(sp.block_diag([blk] * 6 + [np.ones((8, 8))]))
    pa = akfviz.analyze(A, tile=8)
    c = pa.tiles["cluster"].tolist()
    assert c == [0] * 6 + [1]
    assert pa.clusters["size"].tolist() == [6, 1]
    assert pa.clusters["jaccard_mean"].tolist() == [1.0, 1.0]


def test_edge_cases():
    empty = akfviz.analyze(sp.csr_array((50, 30)), tile=8)
    _check_contract(empty, sp.csr_array((50, 30)), 8)
    assert empty.n_tiles == 0 and empty.n_clusters == 0
    assert len(empty.clusters) == 0 and len(empty.density_hist) == 0
    assert empty.summary()["jaccard_mean"] is None
    with pytest.raises(akfviz.InputError):
        empty.cluster_members(0)
    one = akfviz.analyze(np.array([[3.0]]), tile=4)
    assert one.n_tiles == 1 and one.tiles["density"].iat[0] == 1.0 and one.n_clusters == 1
    single = sp.csr_array(([2.0], ([70], [3])), shape=(71, 90))
    pa = akfviz.analyze(single, tile=32)
    assert pa.tiles[["bi", "bj", "h", "w", "nnz"]].values.tolist() == [[2, 0, 7, 32, 1]]
    rows = np.zeros((20, 20))
    rows[[2, 17]] = 1.0
    _check_contract(akfviz.analyze(rows, tile=8), sp.csr_array(rows), 8)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_index_dtypes_same_result(idx_dtype):
    A = _matrix(5)
    B = A.copy()
    B.indices = B.indices.astype(idx_dtype)
    B.indptr = B.indptr.astype(idx_dtype)
    pd.testing.assert_frame_equal(akfviz.analyze(A, 16).tiles, akfviz.analyze(B, 16).tiles)


def test_determinism_and_seed():
    A = _matrix(9, 300, 300)
    cfg = {"seed": 11, "num_hashes": 16, "bands": 16}
    a, b = akfviz.analyze(A, 8, cfg), akfviz.analyze(A, 8, LSHConfig(**cfg))
    pd.testing.assert_frame_equal(a.tiles, b.tiles)
    pd.testing.assert_frame_equal(a.clusters, b.clusters)
    pd.testing.assert_frame_equal(a.density_hist, b.density_hist)
    other = akfviz.analyze(A, 8, {**cfg, "seed": 12})
    pd.testing.assert_frame_equal(a.tiles.drop(columns="cluster"), other.tiles.drop(columns="cluster"))


def test_pickle_roundtrip():
    pa = akfviz.analyze(_matrix(1), 16)
    back = pickle.loads(pickle.dumps(pa))
    pd.testing.assert_frame_equal(back.tiles, pa.tiles)
    np.testing.assert_array_equal(back.cluster_members(0), pa.cluster_members(0))
    assert back.lsh == pa.lsh


def test_table_edits_do_not_corrupt_tileset():
    pa = akfviz.analyze(_matrix(2), 16)
    bi0 = pa.tileset.bi[0]
    tiles = pa.tiles
    tiles.loc[0, "bi"] = 999
    assert pa.tileset.bi[0] == bi0


@pytest.mark.parametrize("granularity", ["cluster", "tile"])
def test_edited_tables_stay_edited_and_never_reach_select(granularity):
    """pa.tiles / pa.clusters are the user's copy-on-write views: an out-of-range cluster id or
    representative written into them once crashed the selector's numba pass (segfault)."""
    A = _matrix(3)
    pa = akfviz.analyze(A, 16)
    before = akfviz.select(pa, granularity=granularity)
    as_analysed = pa.tiles_as_analysed().copy()
    clusters = pa.clusters_as_analysed().copy()
    pa.tiles.loc[0, "cluster"] = 10**6
    pa.tiles.loc[1, "h"] = -5
    pa.tiles.loc[2, "density"] = np.nan
    pa.tiles["nnz"] = -pa.tiles["nnz"]
    pa.clusters.loc[0, "representative"] = 10**9
    pa.clusters["size"] = 0
    # the edits stay where the user made them ...
    assert pa.tiles.loc[0, "cluster"] == 10**6 and (pa.tiles["nnz"] < 0).all()
    assert pa.clusters.loc[0, "representative"] == 10**9
    # ... and nothing the analysis computed changed
    pd.testing.assert_frame_equal(pa.tiles_as_analysed(), as_analysed)
    pd.testing.assert_frame_equal(pa.clusters_as_analysed(), clusters)
    assert pa.summary()["n_tiles"] == len(as_analysed)
    after = akfviz.select(pa, granularity=granularity)
    np.testing.assert_array_equal(after.tile_kernels, before.tile_kernels)
    x = np.linspace(-1.0, 1.0, A.shape[1])
    np.testing.assert_array_equal(after.matvec(x), before.matvec(x))
    assert after.resource == before.resource
    pd.testing.assert_frame_equal(after.tile_table(), before.tile_table())


def test_jaccard_mean_exact_for_small_clusters():
    pa = akfviz.analyze(_matrix(3, 256, 256), 8, {"jaccard_pairs": 100_000})
    sig = pa.signatures
    for c in range(pa.n_clusters):
        mem = pa.cluster_members(c)
        if 1 < mem.size <= 40:
            ref = np.mean([jaccard(sig[i], sig[j]) for a, i in enumerate(mem) for j in mem[a + 1:]])
            assert pa.clusters["jaccard_mean"].iat[c] == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("bad_tile", [2, 300, 16.5, "a", None])
def test_invalid_tile(bad_tile):
    with pytest.raises(akfviz.InputError):
        akfviz.analyze(np.eye(10), tile=bad_tile)


@pytest.mark.parametrize("bad_lsh", [{"bands": 7}, {"nope": 1}, "fast", {"grid": 10}])
def test_invalid_lsh(bad_lsh):
    with pytest.raises(akfviz.InputError):
        akfviz.analyze(np.eye(10), tile=4, lsh=bad_lsh)


def test_invalid_matrix():
    with pytest.raises(akfviz.InputError):
        akfviz.analyze(np.array([[np.nan, 1.0]]), tile=4)
    with pytest.raises(akfviz.InputError):
        akfviz.analyze(np.ones(5), tile=4)


def test_cluster_members_errors():
    pa = akfviz.analyze(np.eye(16), tile=8)
    with pytest.raises(akfviz.InputError):
        pa.cluster_members(pa.n_clusters)
    with pytest.raises(akfviz.InputError):
        pa.cluster_members("0")
    assert math.isfinite(pa.summary()["tiles_per_cluster"]["mean"])


@pytest.mark.parametrize("kind,kw", [("uniform", dict(n=3000, density=3e-3)),
                                     ("banded", dict(n=2000, bandwidth=5)),
                                     ("powerlaw", dict(n=2500, density=4e-3))])
def test_cluster_table_and_histogram_equal_numpy_bincount(kind, kw):
    # the per-cluster density sums and the histogram come from fused passes (lsh._gather_tiles,
    # pair counts); they must equal the plain numpy construction bit for bit
    import akfviz

    pa = akfviz.analyze(akfviz.generate(kind, seed=4, **kw), tile=16)
    t = pa.tiles
    size = np.bincount(t["cluster"], minlength=pa.n_clusters)
    ref_mean = np.bincount(t["cluster"], weights=t["density"], minlength=pa.n_clusters) / size
    assert np.array_equal(pa.clusters["size"].to_numpy(), size)
    assert np.array_equal(pa.clusters["mean_density"].to_numpy(), ref_mean)  # exact, not approx
    dbin = t["density_bin"].to_numpy()
    ref_counts = np.bincount(dbin - dbin.min())
    assert np.array_equal(pa.density_hist["count"].to_numpy(), ref_counts)
    assert np.array_equal(pa.density_hist["bin_left"].to_numpy(),
                          np.arange(dbin.min(), dbin.min() + ref_counts.size) / pa.lsh.bins_per_decade)
    order = np.argsort(t["cluster"].to_numpy(), kind="stable")
    assert np.array_equal(pa.cluster_order, order)


@pytest.mark.parametrize("scale, word", [(1e160, "overflows"), (1e-160, "underflow"),
                                         (1e-300, "underflow")])
def test_values_whose_squares_leave_float64_are_refused(scale, word):
    # squared errors would be inf (every cost non-finite) or 0 (every tile "free" to skip)
    A = sp.random_array((100, 100), density=0.1, format="csr", rng=np.random.default_rng(0))
    with pytest.raises(akfviz.InputError, match=word):
        akfviz.analyze(A * scale)


@pytest.mark.parametrize("scale", [1e-100, 1e100])
def test_analysis_and_relative_errors_do_not_depend_on_the_scale(scale):
    A = sp.random_array((100, 100), density=0.1, format="csr", rng=np.random.default_rng(0))
    pa1, pas = akfviz.analyze(A), akfviz.analyze(A * scale)
    assert pas.fro_norm == pytest.approx(pa1.fro_norm * scale, rel=1e-12)
    assert (pas.tiles["cluster"].to_numpy() == pa1.tiles["cluster"].to_numpy()).all()
    p1, ps = akfviz.select(pa1), akfviz.select(pas)
    assert list(ps.tile_kernels) == list(p1.tile_kernels)
    assert ps.relative_error == pytest.approx(p1.relative_error, rel=1e-9)
    assert p1.relative_error > 0  # a lossy plan, so the comparison means something


def test_analysis_that_would_exhaust_memory_is_refused_before_allocating(monkeypatch):
    from akfviz import memory

    from akfviz.analysis.scanpass import EAGER_BYTES_PER_TILE

    A = sp.random_array((2000, 2000), density=0.001, format="csr", rng=np.random.default_rng(0))
    pa = akfviz.analyze(A, tile=8)  # fits
    need = EAGER_BYTES_PER_TILE * pa.n_tiles
    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)  # a small case stands in for a huge one
    monkeypatch.setattr(memory, "available_memory", lambda: int(need / memory.MEMORY_SHARE) - 1)
    with pytest.raises(akfviz.errors.ResourceLimitError, match="larger tile side"):
        akfviz.analyze(A, tile=8)
    monkeypatch.setattr(memory, "available_memory", lambda: None)  # unknown: not checked
    n_tiles = pa.n_tiles
    pa = akfviz.analyze(A, tile=8)
    assert pa.n_tiles == n_tiles
    # the deferred full pass (entries moved to their tiles, every feature) checks its own, larger
    # need when something first asks for it
    full = 8 * (19 * pa.n_tiles + 3 * A.nnz) + 32 * pa.n_tiles
    monkeypatch.setattr(memory, "available_memory", lambda: int(full / memory.MEMORY_SHARE) - 1)
    with pytest.raises(akfviz.errors.ResourceLimitError, match="larger tile side"):
        pa.tiles


def test_small_requests_do_not_read_the_available_memory(monkeypatch):
    from akfviz import memory

    def fail():
        raise AssertionError("available_memory read for a small request")

    monkeypatch.setattr(memory, "available_memory", fail)
    memory.check_memory(memory.CHECK_FROM_BYTES - 1, "x", "y")
    with pytest.raises(AssertionError):
        memory.check_memory(memory.CHECK_FROM_BYTES, "x", "y")


def test_available_memory_is_a_positive_byte_count():
    from akfviz.memory import available_memory

    got = available_memory()
    assert got is None or got > 1 << 20


@pytest.mark.parametrize("make, words", [
    # scipy builds these without complaint (it checks only array lengths); the CSR conversion
    # then dropped an entry silently, or an assert fired
    (lambda: sp.csr_array((np.array([1., 2.]), np.array([0, 5]), np.array([0, 1, 2])), shape=(2, 2)),
     r"column indices outside 0…1"),
    (lambda: sp.csr_array((np.array([1., 2., 3.]), np.array([0, 1, -1]), np.array([0, 1, 3])), shape=(2, 2)),
     r"column indices outside 0…1"),
    (lambda: sp.csr_array((np.array([1., 2.]), np.array([0, 1]), np.array([0, 2, 1])), shape=(2, 2)),
     "the row pointers decrease"),
    (lambda: sp.csc_array((np.array([1., 2.]), np.array([0, 5]), np.array([0, 1, 2])), shape=(2, 2)),
     r"row indices outside 0…1"),
    (lambda: sp.csr_matrix((np.array([1., 2.]), np.array([0, 1]), np.array([0, 2, 1])), shape=(2, 2)),
     "the row pointers decrease"),
    # the last pointer agrees with the entries, one in the middle goes back
    (lambda: sp.csr_array((np.ones(3), np.array([0, 1, 2]), np.array([0, 3, 1, 3])), shape=(3, 3)),
     "the row pointers decrease"),
    (lambda: sp.csc_array((np.ones(3), np.array([0, 1, 2]), np.array([0, 3, 1, 3])), shape=(3, 3)),
     "the column pointers decrease"),
    # an index equal to the size: one past the last row / column (a CSR conversion moved it to the
    # next row, a CSC one dropped it)
    (lambda: sp.csr_array((np.array([1., 2.]), np.array([0, 3]), np.array([0, 1, 2, 2])), shape=(3, 3)),
     r"column indices outside 0…2"),
    (lambda: sp.csc_array((np.array([1., 2.]), np.array([0, 3]), np.array([0, 1, 2, 2])), shape=(3, 3)),
     r"row indices outside 0…2"),
])
def test_broken_sparse_index_arrays_are_input_errors(make, words):
    A = make()
    with pytest.raises(akfviz.InputError, match=words):
        akfviz.analyze(A, tile=4)
    with pytest.raises(akfviz.InputError, match=words):
        as_csr(A)


def test_a_valid_csr_with_unsorted_indices_is_still_accepted_and_left_unchanged():
    A = sp.csr_array((np.array([1., 2., 3.]), np.array([1, 0, 1]), np.array([0, 2, 3])), shape=(2, 2))
    before = (A.indices.copy(), A.indptr.copy(), A.indices.dtype)
    pa = akfviz.analyze(A, tile=4)
    np.testing.assert_array_equal(pa.A.toarray(), [[2., 1.], [0., 3.]])
    assert (A.indices.tolist(), A.indptr.tolist(), A.indices.dtype) == \
        (before[0].tolist(), before[1].tolist(), before[2])


@pytest.mark.parametrize("arr", [np.array([["1", "0"], ["0", "1"]]), np.array([[b"1", b"0"]]),
                                 np.array([[1, 2]], dtype="datetime64[s]"),
                                 np.array([[1, 2]], dtype="timedelta64[s]")])
def test_text_and_time_arrays_are_input_errors(arr):
    with pytest.raises(akfviz.InputError, match="not a number type"):
        akfviz.analyze(arr, tile=4)


def test_a_declared_shape_whose_csr_copy_cannot_fit_is_refused_before_converting():
    A = sp.coo_array(([1.0], ([5], [7])), shape=(10**11, 10**11))   # 800 GB of row pointers
    with pytest.raises(akfviz.errors.ResourceLimitError, match="row pointer"):
        akfviz.analyze(A, tile=256)


def test_top_count_is_the_one_definition_of_the_top_mass_count():
    """``features.top_count`` (used, inlined, by both numba feature passes) is
    ``max(1, floor(q·k + 1e-9))``, callable from Python too."""
    from akfviz.analysis.features import top_count

    for k in (0, 1, 2, 9, 10, 30, 31, 1024):
        for q in (0.01, 0.1, 0.25, 1 / 3, 0.5, 1.0):
            assert top_count(k, q) == max(1, int(math.floor(q * k + 1e-9))), (k, q)
    # products that fall just below a whole number in floating point: the slack counts them whole
    # (0.1·30 is 3.0000000000000004, so it never needed the slack; 0.7·90 does)
    assert 0.7 * 90 < 63 and 0.7 * 170 < 119
    assert top_count(90, 0.7) == 63 and top_count(170, 0.7) == 119
    assert top_count(30, 0.1) == 3


def test_top_mass_of_a_tile_where_q_k_falls_just_below_a_whole_number():
    # a 10 x 9 tile of the values 1..90: top_q = 0.7 counts the 63 largest (0.7·90 = 62.999…)
    T = 16
    A = np.zeros((T, T))
    A[:10, :9] = np.arange(1, 91, dtype=np.float64).reshape(10, 9)
    pa = akfviz.analyze(A, tile=T, lsh={"top_q": 0.7})
    sq = np.arange(1, 91, dtype=np.float64) ** 2
    want = sq[-63:].sum() / sq.sum()
    assert pa.tiles["top_mass"].iat[0] == pytest.approx(want, rel=1e-14)
    assert pa.tiles["top_mass"].iat[0] != pytest.approx(sq[-62:].sum() / sq.sum(), rel=1e-9)


def test_the_analysis_is_read_only_and_the_callers_matrix_is_not():
    """Held-out determinism probe: editing pa.A.data in place changed a plan built before the edit
    (its output_error) and mixed edited and original data in later plans; analyses are shared
    through the app's caches. Everything the analysis holds is read-only, the input stays writable."""
    import akfviz

    A = akfviz.generate("llm", n=128, m=96, seed=2)
    pa = akfviz.analyze(A, tile=32)
    for arr in (pa.A.data, pa.A.indices, pa.A.indptr, pa.tileset.v, pa.tileset.r, pa.tileset.ptr,
                pa.signatures, pa.cluster_order, pa.cluster_ptr, *pa._features):
        with pytest.raises(ValueError, match="read-only"):
            arr[...] = arr
    before = float(pa.A.data[0])
    A.data[0] = before + 7.0         # the caller's matrix is still theirs (pa.A is a copy)
    assert pa.A.data[0] == before
    plan = akfviz.select(pa)         # selection and execution need no writable analysis arrays
    x = np.ones(A.shape[1])
    assert np.isfinite(plan.output_error(x)) and plan.matvec(x).shape == (A.shape[0],)


def test_timings_name_every_stage_and_total_is_their_sum():
    pa = akfviz.analyze(_matrix(1, 120, 90), 8)
    t = pa.timings
    assert set(t) == {"validate", "tiling_features", "pairs", "minhash", "lsh", "medoid_jaccard",
                      "clustering", "tables", "total"}
    # the top-level stages partition the run; the clustering's own stages lie inside it
    assert t["validate"] > 0.0
    assert t["total"] == pytest.approx(t["validate"] + t["tiling_features"] + t["clustering"]
                                       + t["tables"], rel=1e-9, abs=1e-12)
    assert t["pairs"] + t["minhash"] + t["lsh"] + t["medoid_jaccard"] <= t["clustering"] + 1e-12


def test_cluster_and_histogram_tables_are_built_on_first_use_from_read_only_arrays():
    """analyze and a cluster-mode select build no DataFrame of the clusters or the histogram (≈ 0.8 ms
    on a 1M-nonzero matrix); the tables, when asked for, hold the arrays the selector read, and an
    edited table does not reach them."""
    pa = akfviz.analyze(_matrix(3), 16)
    plan = akfviz.select(pa)
    assert "_clusters" not in pa.__dict__ and "density_hist" not in pa.__dict__
    assert "trajectory" not in plan.selection.fusion.__dict__
    arrays = pa.cluster_arrays()
    for name, arr in arrays.items():
        with pytest.raises(ValueError, match="read-only"):
            arr[...] = arr
        np.testing.assert_array_equal(pa.clusters[name].to_numpy(), arr)
    assert list(pa.clusters.columns) == list(CLUSTER_COLUMNS) and pa.clusters.index.name == "cluster"
    assert list(pa.density_hist.columns) == list(HIST_COLUMNS)
    assert pa.density_hist["count"].sum() == pa.n_tiles == arrays["size"].sum()
    pa.clusters.loc[0, "representative"] = -5       # the user's view; the analysis keeps its own
    assert pa.cluster_arrays()["representative"][0] != -5
    assert akfviz.select(pa).tile_kernels.tolist() == plan.tile_kernels.tolist()
    traj = plan.selection.fusion.trajectory
    assert list(traj.columns) == ["step", "cost", "entropy", "temperature", "penalty", "sram_bytes"]
    assert traj["step"].dtype == np.int64 and len(traj) == plan.selection.fusion.weights_trajectory.shape[0]
