"""FusionPlan and the fused executor against scipy and a slow per-tile reference (akf-spec §3, §9)."""
import json
import pickle

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.analysis.pattern import analyze
from akfviz.errors import InputError
from akfviz.execute import FusionPlan
from akfviz.kernels import KERNELS, LOSSLESS, get_kernel


def slow_approx(pa, names):
    """Â built tile by tile through the single-tile encode/decode (the slow reference)."""
    ts = pa.tileset
    out = np.zeros(ts.shape)
    T = ts.tile
    for t, name in enumerate(names):
        k = get_kernel(name)
        r0, c0 = ts.bi[t] * T, ts.bj[t] * T
        out[r0:r0 + ts.h[t], c0:c0 + ts.w[t]] = k.decode(k.encode(ts.dense(t)))
    return out


def cases():
    rng = np.random.default_rng(7)
    yield "square", sp.random(96, 96, density=0.08, random_state=1, format="csr"), 32
    yield "rect-wide", sp.random(37, 150, density=0.2, random_state=2, format="csr"), 16
    yield "rect-tall", sp.random(150, 37, density=0.3, random_state=3, format="csr"), 8
    yield "T-not-dividing", sp.random(101, 77, density=0.05, random_state=4, format="csr"), 32
    yield "dense-ish", sp.random(50, 50, density=0.9, random_state=5, format="csr"), 16
    yield "banded", sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(90, 90), format="csr"), 16
    z = sp.random(60, 40, density=0.3, random_state=6, format="lil")
    z[10:30, :] = 0
    yield "zero-rows", sp.csr_array(z), 8
    yield "one-nnz", sp.csr_array(([2.0], ([5], [3])), shape=(40, 40)), 16
    yield "1x1", sp.csr_array(np.array([[3.0]])), 8
    yield "empty", sp.csr_array((30, 20)), 8
    blk = sp.block_diag([rng.standard_normal((8, 8)) for _ in range(6)], format="csr")
    yield "blocks", blk, 16


CASES = list(cases())
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_exact_plan_equals_scipy(case, index_dtype):
    _, A, T = case
    A = sp.csr_array(A)
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    pa = analyze(A, tile=T)
    rng = np.random.default_rng(11)
    names = rng.choice(list(LOSSLESS), len(pa.tiles))
    plan = FusionPlan(pa, names)
    x = rng.standard_normal(A.shape[1])
    ref = A @ x
    y = plan.matvec(x)
    assert y.dtype == np.float64 and y.shape == (A.shape[0],)
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(ref).max()))
    X = rng.standard_normal((A.shape[1], 3))
    np.testing.assert_allclose(plan.matmat(X), A @ X, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(A @ X).max()))
    assert plan.relative_error == 0.0
    assert plan.output_error(x) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("name", list(LOSSLESS))
def test_each_exact_kernel_alone(name):
    A = sp.random(80, 70, density=0.25, random_state=9, format="csr")
    pa = analyze(A, tile=16)
    plan = FusionPlan(pa, [name] * len(pa.tiles))
    x = np.random.default_rng(1).standard_normal(70)
    np.testing.assert_allclose(plan.matvec(x), A @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lossy_plan_computes_approximation(case):
    _, A, T = case
    pa = analyze(A, tile=T)
    rng = np.random.default_rng(12)
    names = rng.choice(list(KERNELS), len(pa.tiles))
    plan = FusionPlan(pa, names)
    Ahat = plan.approx_matrix()
    assert isinstance(Ahat, sp.csr_array) and Ahat.shape == A.shape
    slow = slow_approx(pa, names)
    np.testing.assert_allclose(Ahat.toarray(), slow, rtol=0, atol=1e-12 * max(1.0, np.abs(slow).max()))
    x = rng.standard_normal(A.shape[1])
    np.testing.assert_allclose(plan.matvec(x), Ahat @ x, rtol=1e-10, atol=1e-12)
    X = rng.standard_normal((A.shape[1], 4))
    np.testing.assert_allclose(plan.matmat(X), Ahat @ X, rtol=1e-10, atol=1e-12)
    fro = np.linalg.norm(A.toarray())
    want = np.linalg.norm(A.toarray() - Ahat.toarray()) / fro if fro else 0.0
    assert plan.relative_error == pytest.approx(want, rel=1e-8, abs=1e-12)
    ax = A @ x
    if np.linalg.norm(ax) > 0:
        assert plan.output_error(x) == pytest.approx(
            np.linalg.norm(ax - Ahat @ x) / np.linalg.norm(ax), rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("name", [n for n in KERNELS if n not in LOSSLESS])
def test_each_lossy_kernel_alone(name):
    A = sp.random(64, 64, density=0.5, random_state=3, format="csr")
    pa = analyze(A, tile=16)
    plan = FusionPlan(pa, [name] * len(pa.tiles))
    x = np.random.default_rng(2).standard_normal(64)
    np.testing.assert_allclose(plan.matvec(x), slow_approx(pa, plan.tile_kernels) @ x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(plan.tile_errors, get_kernel(name).batch_error(pa.tileset), rtol=1e-9, atol=1e-12)
    if name == "SKIP":
        assert plan.relative_error == pytest.approx(1.0)
        assert np.all(plan.matvec(x) == 0)


def test_hyper_sparse_tiles_go_to_residual():
    A = sp.random(2000, 2000, density=0.001, random_state=1, format="csr")  # ~1 nnz per tile
    pa = analyze(A, tile=32)
    plan = FusionPlan(pa, ["CSC"] * len(pa.tiles))
    info = plan.to_dict()["executor"]
    assert info["csc"] == 0 and info["residual_entries"] == A.nnz
    dense = sp.csr_array(np.ones((64, 64)))
    # exact CSC tiles run as compressed rows even when full (RESIDUAL_ONLY_FORMATS)
    plan = FusionPlan(analyze(dense, tile=32), ["CSC"] * 4)
    info = plan.to_dict()["executor"]
    assert info["csc"] == 0 and info["residual_entries"] == 64 * 64
    # a full BITMAP tile runs in the dense layout (no bit scan: the same products); a nearly full one
    # stays a bitmap; a half-full one goes to the residual
    plan = FusionPlan(analyze(dense, tile=32), ["BITMAP"] * 4)
    info = plan.to_dict()["executor"]
    assert info["bitmap"] == 0 and info["dense"] == 4 and info["residual_entries"] == 0
    x = np.random.default_rng(1).standard_normal(64)
    np.testing.assert_allclose(plan.matvec(x), dense @ x, rtol=1e-12)
    X = np.random.default_rng(2).standard_normal((64, 3))
    np.testing.assert_allclose(plan.matmat(X), dense @ X, rtol=1e-12)
    nearly = dense.toarray()
    nearly[5, 7] = nearly[40, 3] = 0.0                 # tiles 0 and 2 lose one entry each
    nearly = sp.csr_array(nearly)
    plan = FusionPlan(analyze(nearly, tile=32), ["BITMAP"] * 4)
    info = plan.to_dict()["executor"]
    assert info["bitmap"] == 2 and info["dense"] == 2 and info["residual_entries"] == 0
    np.testing.assert_allclose(plan.matvec(x), nearly @ x, rtol=1e-12)
    np.testing.assert_allclose(plan.matmat(X), nearly @ X, rtol=1e-12)
    half = sp.csr_array(np.kron(np.ones((64, 32)), [[1.0, 0.0]]))
    pa = analyze(half, tile=32)
    plan = FusionPlan(pa, ["BITMAP"] * len(pa.tiles))
    info = plan.to_dict()["executor"]
    assert info["bitmap"] == 0 and info["residual_entries"] == half.nnz
    x = np.random.default_rng(0).standard_normal(64)
    np.testing.assert_allclose(plan.matvec(x), half @ x, rtol=1e-12, atol=1e-12)


def test_float32_and_integer_inputs():
    A = sp.random(40, 30, density=0.3, random_state=2, format="csr")
    plan = FusionPlan(analyze(A, tile=8), None or ["DENSE"] * len(analyze(A, tile=8).tiles))
    x32 = np.arange(30, dtype=np.float32) / 7
    np.testing.assert_allclose(plan.matvec(x32), A @ x32.astype(np.float64), rtol=1e-12)
    np.testing.assert_allclose(plan.matvec(np.arange(30)), A @ np.arange(30.0), rtol=1e-12)
    X = np.asfortranarray(np.ones((30, 2), dtype=np.float32))
    np.testing.assert_allclose(plan.matmat(X), A @ np.ones((30, 2)), rtol=1e-12)
    mask = np.arange(30) % 3 == 0                 # booleans count as 0/1, as in scipy's A @ mask
    np.testing.assert_allclose(plan.matvec(mask), A @ mask, rtol=1e-12)
    np.testing.assert_allclose(plan.matmat(np.c_[mask, ~mask]), A @ np.c_[mask, ~mask], rtol=1e-12)


def test_input_errors():
    A = sp.random(40, 30, density=0.3, random_state=2, format="csr")
    pa = analyze(A, tile=8)
    n = len(pa.tiles)
    with pytest.raises(InputError, match="entries"):
        FusionPlan(pa, ["CSC"] * (n - 1))
    with pytest.raises(InputError, match="Valid kernels"):
        FusionPlan(pa, ["CSC"] * (n - 1) + ["FOO"])
    with pytest.raises(InputError):
        FusionPlan(pa, "CSC")
    plan = FusionPlan(pa, ["CSC"] * n)
    for bad in (np.ones(29), np.ones((30, 1)), np.array(["a"] * 30), np.ones(30, dtype=complex)):
        with pytest.raises(InputError):
            plan.matvec(bad)
    for bad in (np.ones(30), np.ones((29, 2))):
        with pytest.raises(InputError):
            plan.matmat(bad)
    # a sparse x/X is named as such (np.asarray would make it a 0-d object array)
    with pytest.raises(InputError, match=r"dense numpy array.*toarray"):
        plan.matmat(sp.csr_array(np.ones((30, 2))))
    with pytest.raises(InputError, match=r"sparse coo"):
        plan.matvec(sp.coo_array(np.ones((1, 30))))


def test_determinism_and_thread_independence():
    A = sp.random(300, 260, density=0.05, random_state=3, format="csr")
    pa = analyze(A, tile=16)
    names = np.random.default_rng(0).choice(list(KERNELS), len(pa.tiles))
    p1, p2 = FusionPlan(pa, names), FusionPlan(pa, names)
    x = np.random.default_rng(1).standard_normal(260)
    y1 = p1.matvec(x)
    assert np.array_equal(y1, p2.matvec(x))
    assert np.array_equal(p1.tile_errors, p2.tile_errors)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        y_serial = p1.matvec(x)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(y1, y_serial)


def test_summaries_npu_work_and_pickle():
    A = sp.random(100, 90, density=0.1, random_state=4, format="csr")
    pa = analyze(A, tile=16)
    names = np.random.default_rng(3).choice(list(KERNELS), len(pa.tiles))
    plan = FusionPlan(pa, names, resource=12.5, selection={"mode": "test"})
    assert plan.shape == (100, 90) and plan.tile == 16
    assert plan.tile_kernels.dtype == object and list(plan.tile_kernels) == list(names)
    counts = plan.kernel_counts
    assert counts.sum() == len(pa.tiles)
    assert counts.to_dict() == {k: int(np.sum(names == k)) for k in set(names)}
    work = plan.npu_work().validate()
    nonskip = np.flatnonzero(names != "SKIP")
    np.testing.assert_array_equal(work.tile_index, nonskip)
    np.testing.assert_array_equal(np.asarray(work.kernel_names)[work.kernel_id], names[nonskip])
    for t in nonskip[:10]:
        u = int(np.searchsorted(work.tile_index, t))
        single = get_kernel(names[t]).npu_work(pa.tileset, [t])
        assert work.payload_bytes[u] == single.payload_bytes[0]
        np.testing.assert_array_equal(work.col_local[work.col_ptr[u]:work.col_ptr[u + 1]], single.col_local)
        np.testing.assert_array_equal(work.ev_macs[work.col_ptr[u]:work.col_ptr[u + 1]], single.ev_macs)
    assert plan.payload_bytes == int(work.payload_bytes.sum())
    d = plan.to_dict()
    json.dumps(d)
    assert d["resource"] == 12.5 and d["relative_error"] == plan.relative_error
    q = pickle.loads(pickle.dumps(plan))
    x = np.ones(90)
    assert np.array_equal(q.matvec(x), plan.matvec(x))
    assert q.selection == {"mode": "test"}


def test_zero_matrix_plan():
    pa = analyze(sp.csr_array((10, 7)), tile=8)
    plan = FusionPlan(pa, [])
    assert plan.relative_error == 0.0
    assert np.array_equal(plan.matvec(np.ones(7)), np.zeros(10))
    assert plan.npu_work().n_tiles == 0 and plan.payload_bytes == 0
    assert plan.approx_matrix().nnz == 0


def test_parallel_and_serial_drivers_agree_bitwise():
    from akfviz.execute import fused

    A = sp.random(500, 420, density=0.05, random_state=8, format="csr")
    pa = analyze(A, tile=16)
    names = np.random.default_rng(4).choice(list(KERNELS), len(pa.tiles))
    packed = FusionPlan(pa, names)._packed
    x = np.random.default_rng(5).standard_normal(420)
    X = np.random.default_rng(6).standard_normal((420, 3))
    y_ser = packed.run_matvec(x, np.empty(500), 1, False)
    for n_chunks in (2, 3, 7, 1000):  # any chunking of the row blocks: same bits
        for par in (True, False):
            y_par = packed.run_matvec(x, np.full(500, np.nan), n_chunks, par)
            assert np.array_equal(y_par, y_ser)
    chunks = packed._mv_args(3)[0][0].view(np.int64)
    assert chunks[0] == 0 and chunks[-1] == packed.n_brows and np.all(np.diff(chunks) >= 0)
    Y_par, Y_ser = np.empty((500, 3)), np.empty((500, 3))
    fused._fused_matmat(X, Y_par, *packed._mm_args())
    fused._fused_matmat_serial(X, Y_ser, *packed._mm_args())
    assert np.array_equal(Y_par, Y_ser)
    np.testing.assert_allclose(Y_par[:, 1], packed.matvec(np.ascontiguousarray(X[:, 1])), rtol=1e-12, atol=1e-12)


def test_categorical_tile_kernels_fast_path():
    import pandas as pd

    A = sp.random(60, 60, density=0.2, random_state=5, format="csr")
    pa = analyze(A, tile=8)
    names = np.random.default_rng(9).choice(list(KERNELS), len(pa.tiles))
    p1 = FusionPlan(pa, names)
    p2 = FusionPlan(pa, pd.Categorical(names))
    p3 = FusionPlan(pa, pd.Series(names, dtype="category"))
    x = np.ones(60)
    assert np.array_equal(p1.matvec(x), p2.matvec(x)) and np.array_equal(p1.matvec(x), p3.matvec(x))
    assert list(p2.tile_kernels) == list(names)
    with pytest.raises(InputError, match="Valid kernels"):
        FusionPlan(pa, pd.Categorical(["FOO"] * len(pa.tiles)))
    with pytest.raises(InputError):
        FusionPlan(pa, pd.Categorical(names[:-1]))
    # a missing value (code -1) would index the last category: refused, not run as another kernel
    gap = pd.Categorical(list(names[:-1]) + [None])
    assert gap.codes[-1] == -1
    with pytest.raises(InputError, match="missing values"):
        FusionPlan(pa, gap)
    with pytest.raises(InputError, match="missing values"):
        FusionPlan(pa, pd.Series(gap))


@pytest.mark.parametrize("T", [128, 256])
def test_dense_bitmap_tiles_wider_than_one_word_match_scipy(T):
    # BITMAP tiles of 75-100 % density run in the bitmap layout, one 64-bit word per 64 columns:
    # only tiles wider than 64 columns have a second word (T ≤ 64 everywhere else in the tests)
    A = sp.random(2 * T + 17, 2 * T + 5, density=0.85, random_state=T, format="csr")
    pa = analyze(A, tile=T)
    plan = FusionPlan(pa, ["BITMAP"] * pa.n_tiles)
    assert (pa.tiles["w"] > 64).sum() >= 2
    x = np.random.default_rng(2).standard_normal(A.shape[1])
    np.testing.assert_allclose(plan.matvec(x), A @ x, rtol=1e-12, atol=1e-12)
    X = np.random.default_rng(3).standard_normal((A.shape[1], 3))
    np.testing.assert_allclose(plan.matmat(X), A @ X, rtol=1e-12, atol=1e-12)


def test_residual_layouts_coo_and_csr_match_scipy():
    from akfviz.execute import fused

    # fewer residual entries than rows -> row-block COO; more -> compressed rows
    for density, coo in ((0.0004, 1), (0.02, 0), (0.1, 0)):  # COO, short rows, long rows
        A = sp.random(900, 700, density=density, random_state=11, format="csr")
        pa = analyze(A, tile=16)
        plan = FusionPlan(pa, ["CSC"] * len(pa.tiles))
        res = plan._packed.residual
        assert (int(res["mode"][0]) == fused.RES_COO) == bool(coo) and res["val"].shape[0] == A.nnz
        assert res["ptr"].shape[0] == (pa.tileset.n_brows + 1 if coo else 901)
        x = np.random.default_rng(1).standard_normal(700)
        X = np.random.default_rng(2).standard_normal((700, 4))
        np.testing.assert_allclose(plan.matvec(x), A @ x, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(plan.matmat(X), A @ X, rtol=1e-12, atol=1e-14)


def test_dense_dia_nm_block_packs_match_scipy_bitwise_across_chunkings():
    rng = np.random.default_rng(12)
    A = sp.random(300, 260, density=0.3, random_state=12, format="csr")
    A = sp.csr_array(A + sp.diags_array(rng.standard_normal(260), offsets=0, shape=(300, 260)))
    pa = analyze(A, tile=32)
    for name in ("DENSE", "DIA", "BLOCK", "BITMAP", "NM4:8", "QUANT8D", "LOWRANK4"):
        if name not in KERNELS:
            continue
        plan = FusionPlan(pa, [name] * len(pa.tiles))
        x = rng.standard_normal(260)
        y1 = plan._packed.run_matvec(x, np.empty(300), 1, False)
        for k in (2, 5):
            y2 = plan._packed.run_matvec(x, np.full(300, np.nan), k, True)
            assert np.array_equal(y1, y2)
        ref = plan.approx_matrix() @ x
        np.testing.assert_allclose(y1, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_hyper_sparse_dense_tiles_run_from_the_residual_not_as_zero_blocks():
    # an all-DENSE plan (the BlockSparse baseline) of a hyper-sparse matrix: a mostly-zero
    # h×w block per one-entry tile would be 8 kB each; such tiles go to the residual
    import akfviz

    rng = np.random.default_rng(3)
    A = sp.random_array((3000, 2800), density=4e-4, format="lil", rng=rng)
    for b in (0, 2, 40):  # three full, tile-aligned 32×32 blocks
        A[b * 32:(b + 1) * 32, b * 32:(b + 1) * 32] = rng.standard_normal((32, 32))
    A = sp.csr_array(A)
    pa = akfviz.analyze(A, tile=32)
    plan = akfviz.execute.FusionPlan(pa, np.full(pa.n_tiles, "DENSE", dtype=object))
    fmt = plan._packed.format_tiles()
    nnz_t = pa.tiles["nnz"].to_numpy()
    w = pa.tiles["w"].to_numpy()
    assert fmt["dense"] == int((nnz_t >= w).sum()) > 0       # the well-filled tiles stay dense
    assert fmt["residual_entries"] == int(nnz_t[nnz_t < w].sum()) > 0
    assert plan._packed.bytes_moved() < 40 * A.nnz * 12     # not 8 kB per tile
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    np.testing.assert_allclose(plan.matvec(x), A @ x, rtol=1e-12, atol=1e-12 * np.abs(A @ x).max())
    assert plan.relative_error == 0.0


@pytest.mark.parametrize("kernel", ["CSC", "PRUNE50", "PRUNE25", "QUANT8"])
def test_residual_only_formats_have_no_layout(kernel):
    """CSC, PRUNE and QUANT8 tiles (exec_format ``csc`` / ``csc_i8``) have no packed layout: every
    tile runs from the residual, QUANT8 tiles on long diagonal runs as DIA; the plan packs only
    the formats with a layout and still reports 0 tiles for the residual-only ones."""
    from akfviz.execute import packing

    rng = np.random.default_rng(4)
    A = akfviz.generate("stencil5", n=40 * 40, seed=0)          # diagonal runs (QUANT8: DIA layout)
    A.data = A.data * (1.0 + 0.3 * rng.random(A.nnz))
    A = sp.lil_array(A + sp.random_array(A.shape, density=3e-3, rng=rng, format="csr"))
    A[64:96, 1000:1032] = rng.standard_normal((32, 32))           # full tiles: not hyper-sparse
    A = sp.csr_array(A)
    pa = analyze(A, tile=16)
    plan = FusionPlan(pa, [kernel] * pa.n_tiles)
    P = plan._packed
    assert set(P.packs) == set(packing.FORMATS) and not set(packing.FORMATS) & set(packing.RESIDUAL_ONLY_FORMATS)
    # the hand-ordered list of every format is exactly the two kinds together
    assert sorted(packing.EXEC_FORMATS) == sorted(packing.FORMATS + packing.RESIDUAL_ONLY_FORMATS)
    fmt = P.format_tiles()
    assert list(fmt) == [*packing.EXEC_FORMATS, "residual_entries"] == list(plan.to_dict()["executor"])
    assert all(n == 0 for f, n in fmt.items() if f not in ("dia", "residual_entries")), fmt
    assert (fmt["dia"] > 0) == (kernel == "QUANT8")
    # every entry of Â is a nonzero residual entry or lies in a DIA tile (the residual may also
    # store zeros: QUANT8 values that round to 0)
    M = plan.approx_matrix()
    in_dia = sum(M[r0:r0 + h, c0:c0 + w].nnz for r0, c0, h, w in P.packs["dia"]["meta"][:, :4])
    assert np.count_nonzero(P.residual["val"]) + in_dia == M.nnz <= fmt["residual_entries"] + in_dia
    x = rng.standard_normal(A.shape[1])
    np.testing.assert_allclose(plan.matvec(x), M @ x, rtol=1e-12, atol=1e-12 * np.abs(M @ x).max())
    # every registered kernel's format has a layout, runs from the residual, or is not stored
    from akfviz.execute import fused

    for k in KERNELS.values():
        f = k.exec_format
        assert f == "none" or f in packing.FORMATS or (
            f in packing.RESIDUAL_ONLY_FORMATS and fused.residual_rule(k) == fused.RULE_ALWAYS), k.name


@pytest.mark.parametrize("pattern", ["1:4", "4:8", "2:4"])
def test_nm_tiles_without_a_loop_of_their_own_run_from_the_residual(pattern):
    """Held-out audit: the exact plan of a 1:4 matrix (every tile NM1:4) ran at 0.3× scipy's speed in the
    N:M format's generic loop; tiles whose N has no unrolled loop now run as whole CSR rows."""
    import akfviz
    from akfviz.execute import fused

    A = akfviz.generate("nm", n=256, pattern=pattern, seed=1)
    pa = akfviz.analyze(A, tile=32)
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    for name in ("NM1:4", "NM4:8", "NM2:4"):
        plan = akfviz.execute.FusionPlan(pa, [name] * pa.n_tiles)
        fmt = plan._packed.format_tiles()
        own = int(name[2]) in fused.NM_OWN_LOOP_N
        assert (fmt["nm"] == pa.n_tiles) == own and (fmt["nm"] == 0) == (not own), (name, fmt)
        A_hat = plan.matmat(np.eye(A.shape[1]))                      # the plan's own Â, column by column
        np.testing.assert_allclose(plan.matvec(x), A_hat @ x, rtol=1e-12, atol=1e-12 * np.abs(A_hat @ x).max())
        err = np.linalg.norm(A.toarray() - A_hat) / np.linalg.norm(A.toarray())
        assert plan.relative_error == pytest.approx(err, rel=1e-9, abs=1e-15)
    exact = akfviz.select(pa, error_budget=0)
    np.testing.assert_allclose(exact.matvec(x), A @ x, rtol=1e-12, atol=1e-12 * np.abs(A @ x).max())


def test_parallel_path_only_when_row_blocks_share_the_work():
    import akfviz
    from akfviz.execute import threads

    rng = np.random.default_rng(2)
    wide = sp.random_array((40, 50000), density=0.02, format="csr", rng=rng)  # blocks of 32 and 8 rows
    tall = sp.random_array((4000, 300), density=0.05, format="csr", rng=rng)  # 125 even row blocks
    p_wide = akfviz.select(akfviz.analyze(wide), error_budget=0)._packed
    p_tall = akfviz.select(akfviz.analyze(tall), error_budget=0)._packed
    cw = p_wide.block_work
    assert cw[1] - cw[0] > threads.PARALLEL_MAX_SHARE * cw[-1]  # the first block is most of the work
    assert not p_wide._splits_well(2)
    assert p_tall._splits_well(2) and p_tall._splits_well(4)
    x = rng.standard_normal(50000)  # either path gives the same result, bit for bit
    assert np.array_equal(p_wide.run_matvec(x, np.empty(40), 2, True), p_wide.run_matvec(x, np.empty(40), 1, False))


@pytest.mark.parametrize("T", [4, 256])
def test_dia_run_words_at_their_bit_limits(T):
    # one T×T tile under DIA: a full main diagonal (run length T), the two corner entries
    # (offsets ±(T−1)) and a run starting on the last row — the extremes of the 8 + 9 + 8-bit
    # run word; matvec and matmat must match scipy and the decoded runs the entries
    from akfviz.execute.packing import DIA_OFFSET_BIAS

    rng = np.random.default_rng(T)
    rows = list(range(T)) + [0, T - 1, T - 1]
    cols = list(range(T)) + [T - 1, 0, T - 2]
    A = sp.csr_array((rng.standard_normal(len(rows)), (rows, cols)), shape=(T, T))
    pa = analyze(A, tile=T)
    plan = FusionPlan(pa, ["DIA"] * pa.n_tiles)
    dia = plan._packed.packs["dia"]
    assert dia["meta"].shape[0] == 1
    words = dia["run"].astype(np.int64)
    lo, off, n = words & 255, ((words >> 8) & 511) - DIA_OFFSET_BIAS, (words >> 17) + 1
    assert (off.min(), off.max()) == (-(T - 1), T - 1) and n.max() == T
    # each run covers its diagonal's entries, and the slots hold the values in row order
    Ad = A.toarray()
    s = 0
    for a, o, k in zip(lo, off, n):
        idx = np.arange(a, a + k)
        np.testing.assert_array_equal(dia["val"][s:s + k], Ad[idx, idx + o])
        s += k
    assert s == dia["val"].shape[0]
    x = rng.standard_normal(T)
    np.testing.assert_allclose(plan.matvec(x), A @ x, rtol=1e-12, atol=1e-12)
    X = rng.standard_normal((T, 3))
    np.testing.assert_allclose(plan.matmat(X), A @ X, rtol=1e-12, atol=1e-12)


def test_tile_table_is_the_plan_tile_by_tile_and_exports():
    import io

    import pandas as pd

    from akfviz.app_state import frame_bytes

    A = sp.random(300, 200, density=0.05, random_state=3, format="csr")
    pa = analyze(A, tile=16)
    names = np.array(["DENSE", "QUANT8", "PRUNE50", "SKIP"], dtype=object)[np.arange(pa.n_tiles) % 4]
    plan = FusionPlan(pa, names)
    tab = plan.tile_table()
    assert list(tab.columns) == ["tile", "bi", "bj", "nnz", "density", "cluster", "kernel", "sq_error"]
    assert len(tab) == pa.n_tiles and list(tab["kernel"].astype(str)) == list(names)
    np.testing.assert_array_equal(tab[["bi", "bj", "nnz", "cluster"]].to_numpy(),
                                  pa.tiles[["bi", "bj", "nnz", "cluster"]].to_numpy())
    # the errors sum to the plan's measured error; lossless tiles have none
    assert np.sqrt(tab["sq_error"].sum()) / pa.fro_norm == pytest.approx(plan.relative_error, rel=1e-12)
    assert (tab.loc[tab["kernel"] == "DENSE", "sq_error"] == 0).all()
    assert (tab.loc[tab["kernel"] == "SKIP", "sq_error"] > 0).all()
    # both export formats read back to the same table
    csv = pd.read_csv(io.BytesIO(frame_bytes(tab, "csv")))
    np.testing.assert_array_equal(csv["kernel"].to_numpy(), tab["kernel"].astype(str).to_numpy())
    np.testing.assert_allclose(csv["sq_error"].to_numpy(), tab["sq_error"].to_numpy(), rtol=1e-15)
    pq = pd.read_parquet(io.BytesIO(frame_bytes(tab, "parquet")))
    np.testing.assert_array_equal(pq["sq_error"].to_numpy(), tab["sq_error"].to_numpy())
    assert list(pq["kernel"].astype(str)) == list(names)


@pytest.mark.parametrize("kernel", ["DENSE", "DIA", "BLOCK", "CSC"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_operands_are_refused_with_their_position(kernel, bad):
    # dense-layout tiles multiply stored zeros: 0 × nan would reach rows scipy keeps finite
    A = sp.random(40, 30, density=0.3, random_state=2, format="csr")
    plan = FusionPlan(analyze(A, tile=8), [kernel] * len(analyze(A, tile=8).tiles))
    x = np.ones(30)
    x[7] = bad
    for arg in (x, list(x), x.astype(np.float32), x[::-1][::-1]):
        with pytest.raises(InputError, match=r"x\[7\] is .*finite"):
            plan.matvec(arg)
    X = np.ones((30, 3))
    X[11, 2] = bad
    for arg in (X, np.asfortranarray(X)):
        with pytest.raises(InputError, match=r"X\[11, 2\] is"):
            plan.matmat(arg)
    assert np.isfinite(plan.matvec(np.ones(30))).all()
    assert plan.matmat(np.ones((30, 0))).shape == (40, 0)


def test_first_non_finite_matches_numpy():
    from akfviz.execute.plan import _first_non_finite
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 64, 1000):
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
        assert _first_non_finite(a) == -1
        for _ in range(5):
            if n:
                b = a.copy()
                pos = np.sort(rng.choice(n, size=min(n, 3), replace=False))
                b[pos] = rng.choice([np.nan, np.inf, -np.inf, 1e308], size=pos.size)
                bad = np.flatnonzero(~np.isfinite(b))
                assert _first_non_finite(b) == (bad[0] if bad.size else -1)


@pytest.mark.parametrize("kind", ["llm", "clustered"])
def test_matmat_columns_do_not_depend_on_the_batch_and_agree_with_matvec_to_rounding(kind):
    A = akfviz.generate(kind, n=384, seed=2)
    plan = akfviz.select(akfviz.analyze(A, tile=32), error_budget=0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(A.shape[1])
    X = rng.standard_normal((A.shape[1], 5))
    X[:, 2] = x
    one = plan.matmat(x[:, None])[:, 0]
    assert np.array_equal(plan.matmat(X)[:, 2], one)
    assert np.array_equal(plan.matmat(X[:, ::-1].copy())[:, 2], one)
    y = plan.matvec(x)
    assert np.max(np.abs(y - one)) <= 1e-14 * np.max(np.abs(y))
    assert np.max(np.abs(y - A @ x)) <= 1e-13 * np.max(np.abs(y))


def test_a_plans_arrays_are_read_only_so_it_cannot_contradict_itself():
    """Editing tile_errors changed relative_error and tile_table() but not matvec or kernel_counts."""
    A = akfviz.generate("llm", n=200, m=160, sparsity=0.8, seed=9)
    plan = akfviz.select(analyze(A), error_budget=0)
    for arr in (plan.tile_errors, plan.tile_kernels):
        with pytest.raises(ValueError, match="read-only"):
            arr[:] = arr[0]
    assert plan.relative_error == 0.0
    mine = plan.tile_errors.copy()          # a private copy is writable
    mine[:] = 1.0
    assert plan.relative_error == 0.0 and plan.tile_table()["sq_error"].sum() == 0.0


def test_float16_x_is_computed_as_its_exact_float64_value_and_columns_get_a_hint():
    A = akfviz.generate("banded", n=96, seed=2)
    plan = akfviz.select(analyze(A, tile=16), error_budget=0)
    x16 = np.random.default_rng(0).standard_normal(96).astype(np.float16)
    np.testing.assert_array_equal(plan.matvec(x16), plan.matvec(x16.astype(np.float64)))
    np.testing.assert_array_equal(plan.matmat(x16[:, None]), plan.matmat(x16.astype(np.float64)[:, None]))
    res16 = akfviz.simulate(plan, akfviz.HardwareConfig(), x=x16)
    assert res16.cycles == akfviz.simulate(plan, akfviz.HardwareConfig(), x=x16.astype(np.float64)).cycles
    with pytest.raises(InputError, match=r"use plan\.matmat\(x\)"):
        plan.matvec(np.ones((96, 1)))



@pytest.mark.parametrize("kernel", ["DENSE", "NM2:4"])
def test_plan_without_residual_skips_its_pass(kernel):
    """Every entry in a packed tile (no residual entry): y is zeroed by the driver instead of the
    residual pass; the result is the residual-pass result, bit for bit, for any chunking, even
    when y arrives full of NaN."""
    from akfviz import generate

    A = generate("nm", n=256, pattern="2:4", seed=3)
    pa = analyze(A, tile=32)
    plan = FusionPlan(pa, [kernel] * pa.n_tiles)
    packed = plan._packed
    assert packed.residual["val"].shape[0] == 0
    res_args, tile_args = packed._mv_args(3)
    assert res_args is None and tile_args is not None
    x = np.random.default_rng(2).standard_normal(256)
    want = plan.approx_matrix() @ x
    np.testing.assert_allclose(want, A @ x, rtol=1e-12, atol=1e-12)   # exact on complying tiles
    ref = packed.run_matvec(x, np.full(256, np.nan), 1, False)
    np.testing.assert_allclose(ref, want, rtol=1e-12, atol=1e-12)
    for n_chunks in (2, 3, 8):
        for par in (True, False):
            assert np.array_equal(packed.run_matvec(x, np.full(256, np.nan), n_chunks, par), ref)
    assert np.array_equal(plan.matvec(x), ref)


def test_relative_error_sums_the_tile_errors_once():
    """``Σ E_t`` is summed on the first access (``tile_errors`` is read-only, so it cannot change):
    the same value as the formula, and later accesses read the remembered sum."""
    from akfviz import generate

    A = generate("llm", n=96, sparsity=0.7, seed=2)
    pa = analyze(A, tile=16)
    plan = FusionPlan(pa, ["QUANT8"] * pa.n_tiles)
    assert "_error_sum" not in plan.__dict__
    first = plan.relative_error
    assert first == np.sqrt(np.sum(plan.tile_errors)) / pa.fro_norm > 0
    assert plan.__dict__["_error_sum"] == float(np.sum(plan.tile_errors))
    plan._error_sum = 4.0 * plan._error_sum     # the remembered sum is what later accesses read
    assert plan.relative_error == pytest.approx(2.0 * first, rel=1e-15)
    with pytest.raises(ValueError):
        plan.tile_errors[0] = 1.0
