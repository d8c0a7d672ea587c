"""Batch paths over a TileSet: batch_error, approx and npu_work against the single-tile API."""
import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.analysis.tiling import build_tiles
from akfviz.errors import InputError
from akfviz.kernels import KERNELS, get_kernel


def matrices():
    rng = np.random.default_rng(5)
    yield "random", sp.random(70, 53, density=0.15, random_state=1, format="csr"), 16
    yield "dense-ish", sp.random(40, 40, density=0.8, random_state=2, format="csr"), 8
    yield "banded", sp.diags([1.0, -2.0, 1.0, 0.5], [-1, 0, 1, 5], shape=(45, 45), format="csr"), 16
    yield "one-nnz", sp.csr_array(([3.0], ([7], [9])), shape=(20, 30)), 8
    blk = sp.block_diag([rng.standard_normal((6, 6)) for _ in range(5)], format="csr")
    yield "blocks", blk, 8
    hs = sp.random(200, 190, density=0.004, random_state=3, format="lil")
    hs[5, :] = 1.5  # a full row and column through hyper-sparse tiles
    hs[:, 70] = -0.5
    yield "hyper-sparse", sp.csr_matrix(hs), 64


CASES = list(matrices())


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_batch_error_equals_single_tile_error(name, case):
    _, A, T = case
    ts = build_tiles(A, T)
    k = get_kernel(name)
    got = k.batch_error(ts, np.arange(ts.n_tiles))
    want = np.array([k.error(ts.dense(t)) for t in range(ts.n_tiles)])
    assert got.dtype == np.float64 and got.shape == (ts.n_tiles,)
    scale = np.array([np.sum(ts.dense(t) ** 2) for t in range(ts.n_tiles)])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * scale.max())


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_approx_entries_equal_decode(name, case):
    _, A, T = case
    ts = build_tiles(A, T)
    k = get_kernel(name)
    idx = np.arange(ts.n_tiles)[::-1].copy()  # any order
    ap = k.approx(ts, idx)
    for u, t in enumerate(idx):
        tile = ts.dense(t)
        got = np.zeros_like(tile)
        s, e = ap.ptr[u], ap.ptr[u + 1]
        got[ap.r[s:e], ap.c[s:e]] = ap.v[s:e]
        want = k.decode(k.encode(tile))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1.0, np.abs(tile).max()))
        assert ap.err[u] == pytest.approx(np.sum((tile - got) ** 2), rel=1e-9, abs=1e-20)


@pytest.mark.parametrize("name", [n for n in KERNELS if n != "SKIP"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_npu_work_consistent_with_payload(name, case):
    _, A, T = case
    ts = build_tiles(A, T)
    k = get_kernel(name)
    idx = np.arange(ts.n_tiles)
    work = k.npu_work(ts, idx).validate()
    assert work.n_tiles == ts.n_tiles and work.kernel_names == (name,)
    np.testing.assert_array_equal(work.tile_index, idx)
    np.testing.assert_array_equal(work.h, ts.h)
    for u in range(ts.n_tiles):
        tile = ts.dense(u)
        dec = k.decode(k.encode(tile))
        cols = work.col_local[work.col_ptr[u]:work.col_ptr[u + 1]]
        assert np.all(np.diff(cols) > 0) and cols.min() >= 0 and cols.max() < ts.w[u]
        if k.exec_format in ("dense", "dense_i8", "nm", "lowrank"):
            np.testing.assert_array_equal(cols, np.arange(ts.w[u]))  # dense-format routing
        elif k.exec_format in ("csc", "csc_i8", "bitmap"):
            np.testing.assert_array_equal(cols, np.flatnonzero(np.any(dec != 0, axis=0)))
        assert work.payload_bytes[u] == k.payload_bytes(k.encode(tile))
    if k.exec_format in ("csc", "csc_i8", "bitmap"):
        kept = sum(np.count_nonzero(k.decode(k.encode(ts.dense(u)))) for u in range(ts.n_tiles))
        assert work.ev_macs.sum() == kept  # one MAC per kept nonzero per event
    if k.exec_format == "dense":
        assert work.ev_macs.sum() == int(np.sum(ts.h * ts.w))


def test_hand_counted_work_on_tiny_tile():
    # one 6×6 tile (T=8 covers it as an edge tile):
    #   (0,0)=1 (1,1)=2 (2,2)=3 (0,4)=4 (5,1)=5
    A = sp.csr_array(([1.0, 2.0, 3.0, 4.0, 5.0], ([0, 1, 2, 0, 5], [0, 1, 2, 4, 1])), shape=(6, 6))
    ts = build_tiles(A, 8)
    csc = get_kernel("CSC").npu_work(ts)
    assert csc.col_local.tolist() == [0, 1, 2, 4]
    assert csc.ev_macs.tolist() == [1, 2, 1, 1]
    assert csc.ev_decodes.tolist() == [1, 1, 1, 1]
    assert csc.out_rows.tolist() == [4]  # rows 0, 1, 2, 5
    bm = get_kernel("BITMAP").npu_work(ts)
    assert bm.ev_decodes.tolist() == [1, 1, 1, 1] and bm.ev_macs.tolist() == [1, 2, 1, 1]
    # DIA: diagonals 0 (rows 0..5), +4 (rows 0..1 → cols 4,5), -4 (rows 4..5 → cols 0,1)
    dia = get_kernel("DIA").npu_work(ts)
    assert dia.col_local.tolist() == [0, 1, 2, 3, 4, 5]
    assert dia.ev_macs.tolist() == [2, 2, 1, 1, 2, 2]
    assert dia.payload_bytes.tolist() == [3 * 6 * 4 + 3 * 2 + 6]
    # BLOCK b=4: blocks (0,0) [entries (0,0),(1,1),(2,2)], (0,1) [(0,4)], (1,0) [(5,1)]
    blk = get_kernel("BLOCK").npu_work(ts)
    assert blk.col_local.tolist() == [0, 1, 2, 3, 4, 5]
    assert blk.ev_macs.tolist() == [8, 8, 8, 8, 4, 4]
    assert blk.out_rows.tolist() == [6]
    nm = get_kernel("NM2:4").npu_work(ts)
    assert nm.ev_macs.tolist() == [3] * 6  # ceil(6·2/4)
    lr = get_kernel("LOWRANK2").npu_work(ts)
    assert lr.ev_macs.tolist() == [2] * 6 and lr.final_macs.tolist() == [12]
    dn = get_kernel("DENSE").npu_work(ts)
    assert dn.ev_macs.tolist() == [6] * 6 and dn.payload_bytes.tolist() == [36 * 4 + 6]
    q = get_kernel("QUANT8").npu_work(ts)
    assert q.int8.tolist() == [True] and not csc.int8.any()
    sk = get_kernel("SKIP").npu_work(ts)
    assert sk.n_tiles == 0 and sk.n_routes == 0


def test_hand_counted_work_on_non_square_edge_tiles():
    # a 3 × 4 tile (T = 8 covers it): NM2:4 keeps s = 3 rows · 1 group · 2 = 6 slots of 2-bit
    # indices = 12 bits, which round UP to 2 bytes: 6·4 B values + 2 B indices + 4 routes of 1 B
    A = sp.csr_array(np.arange(1.0, 13.0).reshape(3, 4))
    ts = build_tiles(A, 8)
    nm = get_kernel("NM2:4")
    assert nm.npu_work(ts).payload_bytes.tolist() == [6 * 4 + 2 + 4]
    assert nm.payload_bytes(nm.encode(A.toarray())) == 6 * 4 + 2 + 4
    # an 8 × 3 tile under LOWRANK2: the final product U·(Vᵀx) is k·h = 2·8 MACs (not k·w = 6),
    # reading k·h fp32 values of U
    B = sp.csr_array(np.arange(1.0, 25.0).reshape(8, 3))
    lr = get_kernel("LOWRANK2").npu_work(build_tiles(B, 8))
    assert lr.final_macs.tolist() == [16] and lr.final_sram_bytes.tolist() == [64]
    assert lr.out_rows.tolist() == [8]


def test_batch_rejects_bad_indices():
    ts = build_tiles(sp.eye(10, format="csr"), 4)
    for bad in ([5], [-1], [ts.n_tiles], np.array([0.5]), [[0, 1]]):
        with pytest.raises(InputError):
            get_kernel("CSC").batch_error(ts, bad)


def test_empty_index_batch():
    ts = build_tiles(sp.eye(10, format="csr"), 4)
    for k in KERNELS.values():
        assert k.batch_error(ts, np.zeros(0, np.int64)).shape == (0,)
        assert k.npu_work(ts, np.zeros(0, np.int64)).n_tiles == 0


def test_rank_within_groups_matches_lexsort_reference():
    from akfviz.kernels.base import rank_within_groups, rank_within_groups_reference

    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(0, 400))
        gid = np.sort(rng.integers(0, int(rng.integers(1, 30)), n))  # small and large groups
        key = rng.integers(0, 3, n).astype(float) if trial % 2 else np.abs(rng.standard_normal(n))
        tie = rng.integers(0, 4, n)  # ties on key and on tie: position decides
        assert np.array_equal(rank_within_groups(gid, key, tie),
                              rank_within_groups_reference(gid, key, tie))


@pytest.mark.parametrize("r", [1, 2, 4, 8])
def test_lowrank_singular_value_error_equals_reconstruction(r):
    # batch_error (compact SVD, singular values only) against approx (full SVD + rebuild)
    rng = np.random.default_rng(r)
    A = sp.random(300, 260, density=0.02, random_state=r, format="lil")
    A[rng.integers(0, 300, 4), :] = rng.standard_normal((4, 260))
    ts = build_tiles(sp.csr_matrix(A), 32)
    k = get_kernel(f"LOWRANK{r}")
    idx = np.arange(ts.n_tiles)
    got = k.batch_error(ts, idx)
    want = k.approx(ts, idx).err
    scale = max(float(np.sum(ts.v ** 2)), 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * scale)
    assert (got > 0).sum() >= 10  # many tiles really are approximated


def test_lowrank_errors_for_several_ranks_equal_one_rank_at_a_time():
    from akfviz.kernels.lowrank import lowrank_errors

    A = sp.random(260, 250, density=0.05, random_state=9, format="csr")
    ts = build_tiles(A, 16)
    idx = np.arange(ts.n_tiles)[::-1].copy()
    both = lowrank_errors(ts, idx, [1, 2, 4, 8])
    for q, r in enumerate([1, 2, 4, 8]):
        np.testing.assert_array_equal(both[:, q], get_kernel(f"LOWRANK{r}").batch_error(ts, idx))
    assert (both[:, 0] >= both[:, 1]).all() and (both[:, 1] >= both[:, 3]).all()
    assert (both[:, 0] > 0).sum() > 50


def test_dense_layout_work_that_would_exhaust_memory_is_refused(monkeypatch):
    from akfviz import memory
    from akfviz.errors import ResourceLimitError

    ts = build_tiles(sp.random(300, 300, density=0.01, random_state=4, format="csr"), 32)
    routes = int(ts.w.sum())
    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)  # a small case stands in for a huge one
    monkeypatch.setattr(memory, "available_memory", lambda: int(64 * routes / memory.MEMORY_SHARE) - 1)
    for name in ("DENSE", "QUANT8D", "LOWRANK2"):
        with pytest.raises(ResourceLimitError, match="dense-layout"):
            get_kernel(name).npu_work(ts)
    assert get_kernel("CSC").npu_work(ts).n_tiles == ts.n_tiles  # sparse routing: not affected


def test_all_columns_matches_numpy_reference():
    from akfviz.kernels.base import all_columns

    rng = np.random.default_rng(4)
    for w in (np.zeros(0, np.int64), np.array([5]), np.array([0, 3, 0, 1]), rng.integers(0, 40, 200)):
        col_ptr, col_local = all_columns(w)
        ref_ptr = np.concatenate([[0], np.cumsum(w)]).astype(np.int64)
        ref = np.concatenate([np.arange(k) for k in w]).astype(np.int64) if len(w) else np.zeros(0, np.int64)
        np.testing.assert_array_equal(col_ptr, ref_ptr)
        assert col_local.dtype == np.int64
        np.testing.assert_array_equal(col_local, ref)
