"""The fast FusionPlan construction equals a slow, obvious reference (issue 3, akf-spec §3, §9).

The reference builds everything from the kernels' own ``approx`` (TileApprox) with plain numpy:

* ``tile_errors``: ``kernel.approx(ts, idx).err`` per group (exact entry kernels: 0);
* the residual: every residual tile's ``Â`` entries (global row, column, value), sorted by
  (row, tile column block, position inside the tile) — compressed rows;
* which tiles go to the residual: :func:`akfviz.execute.fused.to_residual` (vectorised rule),
  except the QUANT8 tiles on a few long diagonal runs (:func:`diagonal_rule_reference`), which
  run in the DIA layout;
* the packed formats: the per-format packers on the kept tiles' entries; the formats of
  :data:`akfviz.execute.packing.RESIDUAL_ONLY_FORMATS` keep no tile and have no pack.

Compared bit for bit: tile errors, residual arrays, every pack, ``matvec``/``matmat``,
``approx_matrix()``, ``npu_work()``, ``to_dict()``.
"""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from akfviz.analysis.pattern import analyze
from akfviz.execute import FusionPlan
from akfviz.execute import fused
from akfviz.execute.plan import _group_tiles
from akfviz.kernels import KERNELS, get_kernel
from akfviz.kernels.base import gather_entries
from akfviz.kernels.quant import quant_approx, quant_codes, quant_scale


# --------------------------------------------------------------------------- reference
def ref_groups(ts, names):
    """(kernel, idx, TileApprox or None) per kernel in use, errors per tile (obvious numpy)."""
    names = np.asarray(names, dtype=object)
    err = np.zeros(ts.n_tiles)
    groups = []
    for name in sorted(set(names.tolist())):
        k = get_kernel(name)
        idx = np.flatnonzero(names == name).astype(np.int64)
        ap = None if (k.lossless and k.entry_format) else k.approx(ts, idx)
        if ap is not None:
            err[idx] = ap.err
        groups.append((k, idx, ap))
    return groups, err


def ref_entries(ts, idx, ap):
    """Global (row, column, value) and tile of every ``Â`` entry of the tiles ``idx``."""
    if ap is None:
        ptr, pos = gather_entries(ts, idx)
        r, c, v = ts.r[pos], ts.c[pos], ts.v[pos]
    else:
        ptr, r, c, v = ap.ptr, ap.r, ap.c, ap.v
    seg = np.repeat(idx, np.diff(ptr))
    T = ts.tile
    return ts.bi[seg] * T + r, ts.bj[seg] * T + c, np.asarray(v, dtype=np.float64), seg


def diagonal_rule_reference(ts, t):
    """Slow statement of fused.diagonal_tiles for one tile, from its dense form."""
    d = ts.dense(t) != 0
    h, w = d.shape
    side = min(h, w)
    nnz = int(d.sum())
    if 2 * nnz < side:
        return False
    n_diag = slots = 0
    for o in range(-(h - 1), w):
        rows = [i for i in range(h) if 0 <= i + o < w and d[i, i + o]]
        if rows:
            n_diag += 1
            slots += rows[-1] - rows[0] + 1
    return n_diag <= 0.25 * side and 3 * nnz >= 2 * slots


def ref_plan(ts, names):
    """Reference: errors, residual (ptr per row, col, val) and the packs of kept tiles."""
    groups, err = ref_groups(ts, names)
    rows, cols, vals, tiles = [], [], [], []
    kept = {f: [] for f in fused.EXEC_FORMATS}
    for k, idx, ap in groups:
        fmt = k.exec_format
        if fmt == "none":
            continue
        nk = (ts.ptr[idx + 1] - ts.ptr[idx]) if ap is None else np.diff(ap.ptr)
        exact_dense = fmt == "dense" and k.lossless  # its entries are the tile's own
        res = fused.to_residual(fmt, nk, ts.h[idx], ts.w[idx], getattr(k, "n", None)) \
            if (k.entry_format or exact_dense) \
            else np.zeros(idx.shape[0], bool)
        if k.name in fused.INLINE_RESIDUAL:  # tiles on long diagonal runs: DIA layout
            diag = np.array([diagonal_rule_reference(ts, t) for t in idx], dtype=bool)
            if diag.any():
                kept["dia"].append((k, idx[diag]))
            res = res & ~diag
            idx, res = idx[~diag], res[~diag]
        sub = idx[res]
        if sub.size:
            if ap is None:
                r, c, v, seg = ref_entries(ts, sub, None)
            elif k.name in fused.INLINE_RESIDUAL:
                # QUANT8 in the residual: every entry of its tiles, quantised with its tile's scale
                # (a value that rounds to 0 is a stored 0; the kernel's own approx leaves it out)
                r, c, v, seg = ref_entries(ts, sub, None)
                mx = np.zeros(ts.n_tiles)
                np.maximum.at(mx, seg, np.abs(v))
                scale = quant_scale(mx[seg])
                v = quant_codes(v, scale).astype(np.float64) * scale
            else:
                keep = np.isin(ap.idx, sub)
                seg_all = np.repeat(ap.idx, np.diff(ap.ptr))
                m = np.isin(seg_all, sub)
                T = ts.tile
                r = ts.bi[seg_all[m]] * T + ap.r[m]
                c = ts.bj[seg_all[m]] * T + ap.c[m]
                v, seg = ap.v[m], seg_all[m]
                assert keep.sum() == sub.size
            for lst, a in zip((rows, cols, vals, tiles), (r, c, v, seg)):
                lst.append(a)
        kept[fmt].append((k, idx[~res]))
    n_rows = ts.shape[0]
    if rows:
        r, c, v, t = (np.concatenate(x) for x in (rows, cols, vals, tiles))
        o = np.lexsort((c, t, r))  # by row, then tile (bj order inside a row block), then column
        r, c, v = r[o], c[o], v[o]
    else:
        r = c = np.zeros(0, np.int64)
        v = np.zeros(0)
    ptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n_rows), out=ptr[1:])
    return err, (ptr, c, v), kept


def residual_csr(packed):
    """The packed residual as compressed rows (expands the row-block COO layout)."""
    res = packed.residual
    n_rows = packed.shape[0]
    if int(res["mode"][0]) == fused.RES_COO:
        ptr = np.zeros(n_rows + 1, np.int64)
        np.cumsum(np.bincount(res["row"].astype(np.int64), minlength=n_rows), out=ptr[1:])
    else:
        ptr = res["ptr"]
    return ptr, res["col"].astype(np.int64), res["val"]


def same_work(w1, w2):
    """Same TileWork up to the numbering of kernels (which follows the order of the names)."""
    assert np.array_equal(np.asarray(w1.kernel_names, dtype=object)[w1.kernel_id],
                          np.asarray(w2.kernel_names, dtype=object)[w2.kernel_id])
    for f, a in vars(w1).items():
        if f in ("kernel_names", "kernel_id"):
            continue
        b = getattr(w2, f)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), f
        else:
            assert a == b, f


# --------------------------------------------------------------------------- cases
def matrices():
    rng = np.random.default_rng(3)
    yield "hyper", sp.random(300, 280, density=0.002, random_state=1, format="csr"), 16
    yield "mid", sp.random(200, 200, density=0.06, random_state=2, format="csr"), 16
    yield "dense-ish", sp.random(96, 96, density=0.6, random_state=3, format="csr"), 32
    yield "rect-T-not-dividing", sp.random(101, 157, density=0.05, random_state=4, format="csr"), 32
    yield "tall", sp.random(170, 41, density=0.2, random_state=5, format="csr"), 8
    yield "banded", sp.csr_array(sp.diags([1.0, -2.0, 1.5], [-1, 0, 2], shape=(130, 130))), 16
    blk = sp.block_diag([rng.standard_normal((8, 8)) for _ in range(8)], format="csr")
    yield "blocks", sp.csr_array(blk), 16
    small = sp.random(64, 64, density=0.3, random_state=6, format="csr")
    small.data[::3] *= 1e-4  # entries that quantise to 0 (stored zeros in the residual)
    yield "tiny-values", sp.csr_array(small), 16


MIXES = {
    "all": list(KERNELS),
    "quant": ["QUANT8", "QUANT8D", "PRUNE25"],
    "entries": ["CSC", "BITMAP", "DIA", "BLOCK", "NM2:4", "PRUNE50", "QUANT8"],
    "dense-lowrank-skip": ["DENSE", "LOWRANK2", "SKIP", "QUANT8"],
}

CASES = [(m, mix) for m in matrices() for mix in MIXES]
IDS = [f"{m[0]}-{mix}" for m, mix in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fast_build_equals_reference(case):
    (_, A, T), mix = case
    pa = analyze(A, tile=T)
    ts = pa.tileset
    rng = np.random.default_rng(len(mix) + T)
    names = rng.choice(MIXES[mix], ts.n_tiles).astype(object)
    err, (rptr, rcol, rval), kept = ref_plan(ts, names)
    for given in (names, pd.Categorical(names), pd.Categorical(names, categories=list(KERNELS))):
        plan = FusionPlan(pa, given)
        assert np.array_equal(plan.tile_errors, err)
        assert list(plan.tile_kernels) == list(names)
        ptr, col, val = residual_csr(plan._packed)
        assert np.array_equal(ptr, rptr) and np.array_equal(col, rcol) and np.array_equal(val, rval)
        assert set(plan._packed.packs) == set(fused.FORMATS)
        for fmt, parts in kept.items():
            tiles = np.sort(np.concatenate([idx for _, idx in parts])) if parts else np.zeros(0, np.int64)
            if fmt in fused.RESIDUAL_ONLY_FORMATS:
                assert tiles.shape[0] == 0 and plan._packed.format_tiles()[fmt] == 0, fmt
                continue
            meta = plan._packed.packs[fmt]["meta"]
            assert meta.shape[0] == tiles.shape[0], fmt
            if tiles.size:
                assert np.array_equal(meta[:, 0], ts.bi[tiles] * T) and np.array_equal(meta[:, 1], ts.bj[tiles] * T)
        # Â, products and summaries against the same plan built from plain object names
        M = plan.approx_matrix()
        r, c, v, _ = zip(*(ref_entries(ts, idx, ap) for k, idx, ap in ref_groups(ts, names)[0])) \
            if ts.n_tiles else ((), (), (), ())
        ref_M = sp.csr_array(sp.coo_array((np.concatenate(v), (np.concatenate(r), np.concatenate(c))),
                                          shape=A.shape)) if r else sp.csr_array(A.shape)
        ref_M.sum_duplicates()
        ref_M.eliminate_zeros()
        ref_M.sort_indices()
        assert np.array_equal(M.indptr, ref_M.indptr) and np.array_equal(M.indices, ref_M.indices)
        assert np.array_equal(M.data, ref_M.data)
        x = rng.standard_normal(A.shape[1])
        X = rng.standard_normal((A.shape[1], 3))
        np.testing.assert_allclose(plan.matvec(x), ref_M @ x, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(plan.matmat(X), ref_M @ X, rtol=1e-12, atol=1e-12)
    base = FusionPlan(pa, names)
    y = base.matvec(x)
    assert np.array_equal(plan.matvec(x), y) and np.array_equal(plan.matmat(X), base.matmat(X))
    same_work(plan.npu_work(), base.npu_work())
    assert plan.to_dict() == base.to_dict()
    pd.testing.assert_series_equal(plan.kernel_counts, base.kernel_counts)


def test_quant8_residual_values_and_errors_equal_quant_approx():
    # every tile QUANT8: Â is computed inside the residual builder, never materialised
    A = sp.random(300, 300, density=0.02, random_state=9, format="csr")
    A.data[::4] *= 1e-5  # codes 0: left out of quant_approx, stored zeros in the residual
    pa = analyze(A, tile=16)
    ts = pa.tileset
    plan = FusionPlan(pa, ["QUANT8"] * ts.n_tiles)
    ap = quant_approx(ts, np.arange(ts.n_tiles))
    assert np.array_equal(plan.tile_errors, ap.err)
    assert np.diff(ap.ptr).sum() < ts.nnz  # some entries round to 0
    # obvious per-tile numpy quantisation
    for t in range(0, ts.n_tiles, 7):
        tile = ts.dense(t)
        s = float(quant_scale(np.abs(tile).max()))
        deq = quant_codes(tile, s).astype(np.float64) * s
        assert plan.tile_errors[t] == pytest.approx(float(((tile - deq) ** 2).sum()), rel=1e-12, abs=1e-300)
    ptr, col, val = residual_csr(plan._packed)
    seg = np.repeat(np.arange(ts.n_tiles), np.diff(ap.ptr))
    r = ts.bi[seg] * 16 + ap.r
    c = ts.bj[seg] * 16 + ap.c
    o = np.lexsort((c, r))
    # the residual has A's pattern (it shares A's arrays); its nonzero values are quant_approx's Â
    # and its stored zeros are the entries that round to 0
    M = pa.A
    assert np.array_equal(ptr, M.indptr) and np.array_equal(col, M.indices)
    nz = val != 0.0
    assert np.array_equal(col[nz], c[o]) and np.array_equal(val[nz], ap.v[o])
    assert (~nz).sum() == ts.nnz - np.diff(ap.ptr).sum()
    assert "csc_i8" not in plan._packed.packs and plan._packed.format_tiles()["csc_i8"] == 0


def test_counting_order_equals_stable_argsort():
    rng = np.random.default_rng(0)
    for dtype, k in ((np.int8, 3), (np.int16, 40), (np.int64, 17), (np.intp, 1)):
        codes = rng.integers(0, k, 5000).astype(dtype)
        codes[:50] = k - 1
        order, bounds = _group_tiles(codes, k)
        assert np.array_equal(order, np.argsort(codes, kind="stable"))
        assert np.array_equal(bounds, np.r_[0, np.cumsum(np.bincount(codes, minlength=k))])
    order, bounds = _group_tiles(np.zeros(0, np.int8), 2)
    assert order.shape == (0,) and np.array_equal(bounds, [0, 0, 0])


def test_route_rule_equals_to_residual():
    # the numba routing pass applies exactly the vectorised rule of to_residual
    rng = np.random.default_rng(5)
    A = sp.random(256, 256, density=0.15, random_state=5, format="csr")
    ts = analyze(A, tile=32).tileset
    n = ts.n_tiles
    idx = np.arange(n, dtype=np.int64)
    for name in ("CSC", "BITMAP", "DIA", "BLOCK", "NM2:4", "NM1:4", "NM4:8", "PRUNE50", "QUANT8"):
        k = get_kernel(name)
        kptr = np.r_[0, np.cumsum(rng.integers(0, 40, n))].astype(np.int64)
        src = np.zeros(n, np.int8)
        lo, hi, keep = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
        nk = fused._route_tiles(idx, kptr, ts.ptr, ts.h, ts.w, np.int64(fused.residual_rule(k)),
                                np.int64(fused.SRC_OTHER), np.int64(5), src, lo, hi, keep)
        want = fused.to_residual(k.exec_format, np.diff(kptr), ts.h, ts.w, getattr(k, "n", None))
        assert np.array_equal(src != 0, want)
        assert np.array_equal(keep[:nk], np.flatnonzero(~want))
        assert np.array_equal(lo[want], 5 + kptr[:-1][want]) and np.array_equal(hi[want], 5 + kptr[1:][want])


def test_empty_groups_and_empty_matrix():
    A = sp.random(80, 80, density=0.05, random_state=1, format="csr")
    pa = analyze(A, tile=16)
    names = ["QUANT8"] * len(pa.tiles)
    # categories that no tile uses (empty groups) change nothing
    p1 = FusionPlan(pa, pd.Categorical(names, categories=list(KERNELS)))
    p2 = FusionPlan(pa, names)
    assert np.array_equal(p1.tile_errors, p2.tile_errors)
    same_work(p1.npu_work(), p2.npu_work())
    assert p1.to_dict() == p2.to_dict()
    pe = FusionPlan(analyze(sp.csr_array((20, 30)), tile=8), pd.Categorical([]))
    assert pe.tile_kernels.shape == (0,) and np.all(pe.matvec(np.ones(30)) == 0)
    assert pe.kernel_counts.empty


def test_dia_packing_parallel_equals_serial(monkeypatch):
    # the two-pass DIA packer gives the same arrays on the worker threads as serially, and the
    # plan still computes A @ x (large enough to take the parallel path)
    import akfviz
    from akfviz.execute import threads
    from akfviz.execute.plan import FusionPlan

    A = akfviz.generate("banded", n=12_000, bandwidth=6, seed=2)
    pa = akfviz.analyze(A, tile=32)
    names = ["DIA"] * pa.n_tiles
    assert A.nnz + pa.n_tiles >= threads.PACK_PARALLEL_MIN
    monkeypatch.setattr(threads, "cores_have_room", lambda: True)
    par = FusionPlan(pa, names)._packed.packs["dia"]
    monkeypatch.setattr(threads, "pack_parallel", lambda work: False)
    ser = FusionPlan(pa, names)._packed.packs["dia"]
    for key in ser:
        np.testing.assert_array_equal(par[key], ser[key], err_msg=key)
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    plan = FusionPlan(pa, names)
    np.testing.assert_allclose(plan.matvec(x), A @ x, rtol=1e-12, atol=1e-12)


def test_small_plan_fast_path_equals_general_path():
    # a small plan skips the thread and load checks (and a contiguous float64 x skips the input
    # copy); every call, and odd inputs that take the checked path, give the general driver's vector
    import akfviz
    from akfviz.errors import InputError
    from akfviz.execute.plan import FusionPlan

    A = akfviz.generate("banded", n=300, bandwidth=4, seed=3) + akfviz.generate("uniform", n=300, density=0.01, seed=4)
    pa = akfviz.analyze(A, tile=16)
    kinds = np.array(["DIA", "DENSE", "CSC", "QUANT8"], dtype=object)[np.arange(pa.n_tiles) % 4]
    plan = FusionPlan(pa, kinds)
    P = plan._packed
    assert P.bytes_moved() < 1 << 20
    x = np.random.default_rng(1).standard_normal(300)
    ref = P.run_matvec(x, np.empty(300), 1, False)
    assert P._mv_args(1)[1] is not None  # the plan has packed tiles as well as a residual
    np.testing.assert_array_equal(plan.matvec(x), ref)
    np.testing.assert_array_equal(plan.matvec(x), ref)
    np.testing.assert_array_equal(plan.matvec(x.astype(np.float32)), P.run_matvec(
        x.astype(np.float32).astype(np.float64), np.empty(300), 1, False))
    wide = np.zeros(600)
    wide[::2] = x
    np.testing.assert_array_equal(plan.matvec(wide[::2]), ref)  # strided view: copied, same result
    np.testing.assert_allclose(plan.matvec(x), plan.approx_matrix() @ x, rtol=1e-12, atol=1e-12)
    with pytest.raises(InputError):
        plan.matvec(np.ones(299))


def test_parallel_threshold_depends_on_calling_thread(monkeypatch):
    # OpenMP keeps one thread team per calling thread: from the main thread (its team persists)
    # plans from PARALLEL_MIN_BYTES_MAIN run on the workers; from another thread only from
    # PARALLEL_MIN_BYTES. Same vector either way.
    import threading

    import numba
    import akfviz
    from akfviz.execute import fused, threads

    if numba.get_num_threads() < 2:
        pytest.skip("needs two numba threads")
    A = akfviz.generate("uniform", n=1536, density=0.02, seed=5)  # ≈ 47k nonzeros
    plan = akfviz.select(akfviz.analyze(A), error_budget=0)
    P = plan._packed
    assert threads.PARALLEL_MIN_BYTES_MAIN <= P.bytes_moved() < threads.PARALLEL_MIN_BYTES
    monkeypatch.setattr(threads, "cores_have_room", lambda: True)
    calls = []
    run = fused.PackedPlan.run_matvec
    monkeypatch.setattr(fused.PackedPlan, "run_matvec",
                        lambda self, x, y, n, par: calls.append(par) or run(self, x, y, n, par))
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    y_main = plan.matvec(x)
    out = {}
    th = threading.Thread(target=lambda: out.update(y=plan.matvec(x)))
    th.start()
    th.join()
    assert calls == [True, False]
    assert np.array_equal(y_main, out["y"])  # the arithmetic does not depend on the chunking
    np.testing.assert_allclose(y_main, A @ x, rtol=1e-12, atol=1e-12)


def test_quant8_tiles_on_long_diagonal_runs_run_in_the_dia_layout():
    """The selector's exact plan of a 5-point stencil is mostly QUANT8 (its equal values quantise
    exactly). Those tiles whose entries lie on a few long diagonal runs now run in the DIA layout
    with their dequantised values; Â, E_t and matvec are those of QUANT8, whatever the layout."""
    import akfviz
    from akfviz.execute import fused
    from akfviz.execute.packing import _dia_count_range

    rng = np.random.default_rng(11)
    A = akfviz.generate("stencil5", n=48 * 48, seed=0)
    A.data = A.data * (1.0 + 0.37 * rng.random(A.nnz))              # lossy under int8 codes
    A.data[::29] *= 1e-4                                              # some codes 0: dropped
    A = sp.csr_array(A + sp.random_array(A.shape, density=2e-3, rng=rng, format="csr"))
    pa = akfviz.analyze(A, tile=16)
    ts = pa.tileset
    n = ts.n_tiles
    want = np.array([diagonal_rule_reference(ts, t) for t in range(n)])
    got = fused.diagonal_tiles(ts, np.arange(n))
    assert np.array_equal(got, want) and 0 < want.sum() < n
    from akfviz.execute.packing import long_diagonal_runs, long_diagonal_runs_serial
    for run in (long_diagonal_runs, long_diagonal_runs_serial):   # the parallel pass, any chunking
        for chunks in (1, 3, 8, n + 2):
            odd = np.arange(n)[::-1].copy()
            got = run(ts.ptr, ts.r, ts.c, ts.h, ts.w, odd, np.int64(16), fused.DIAGONAL_MAX_DIAGS_PER_SIDE,
                      fused.DIAGONAL_MIN_FILL, np.int64(chunks))
            assert np.array_equal(got, want[odd]), (run, chunks)
    nd, slots = np.zeros(n, np.int64), np.zeros(n, np.int64)
    _dia_count_range(ts.ptr, ts.r, ts.c, np.int64(16), 0, n, nd, slots)   # the shape helper both passes use
    diag_counts = [len({int(c) - int(r) for r, c in zip(*ts.entries(t)[:2])}) for t in range(n)]
    assert np.array_equal(nd, diag_counts)

    plan = FusionPlan(pa, ["QUANT8"] * n)
    fmt = plan._packed.format_tiles()
    assert fmt["dia"] == int(want.sum()) and fmt["csc_i8"] == 0
    assert np.array_equal(plan.tile_errors, quant_approx(ts, np.arange(n)).err)   # bit for bit
    assert plan.relative_error > 0
    A_hat = plan.approx_matrix().toarray()
    k8 = get_kernel("QUANT8")
    for t in range(n):  # single-tile encode/decode (the slow reference)
        r0, c0 = ts.bi[t] * 16, ts.bj[t] * 16
        tile_hat = k8.decode(k8.encode(ts.dense(t)))
        assert np.array_equal(A_hat[r0:r0 + ts.h[t], c0:c0 + ts.w[t]], tile_hat)
    x = rng.standard_normal(A.shape[1])
    X = rng.standard_normal((A.shape[1], 3))
    np.testing.assert_allclose(plan.matvec(x), A_hat @ x, rtol=1e-12, atol=1e-12 * np.abs(A_hat @ x).max())
    np.testing.assert_allclose(plan.matmat(X), A_hat @ X, rtol=1e-12, atol=1e-12 * np.abs(A_hat @ X).max())
    err = np.linalg.norm(A.toarray() - A_hat) / np.linalg.norm(A.toarray())
    assert plan.relative_error == pytest.approx(err, rel=1e-9)

    # the selector's exact plan of the plain stencil: QUANT8 tiles in the DIA layout, result A @ x
    S = akfviz.generate("stencil5", n=64 * 64, seed=0)
    ps = akfviz.analyze(S, tile=16)
    exact = akfviz.select(ps, error_budget=0)
    counts = exact.kernel_counts
    assert counts.get("QUANT8", 0) > 0 and exact.relative_error == 0.0
    assert exact._packed.format_tiles()["dia"] > counts.get("DIA", 0)
    xs = rng.standard_normal(S.shape[1])
    np.testing.assert_allclose(exact.matvec(xs), S @ xs, rtol=1e-12, atol=1e-12 * np.abs(S @ xs).max())


def test_concurrent_calls_from_several_threads_agree_bit_for_bit(monkeypatch):
    # Streamlit runs each session's script in its own thread: plans shared through the caches are
    # called at the same time; on the OpenMP layer every call gives the one-thread result
    import threading

    import akfviz
    from akfviz.execute import threads as th

    monkeypatch.setattr(th, "cores_have_room", lambda: True)
    monkeypatch.setattr(th, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(th, "PARALLEL_MIN_BYTES_MAIN", 0)
    A = akfviz.generate("uniform", n=3000, density=0.01, seed=4)
    plan = akfviz.select(akfviz.analyze(A, tile=32))
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    X = np.random.default_rng(1).standard_normal((A.shape[1], 3))
    want, want_m = plan.matvec(x), plan.matmat(X)
    bad = []

    def work():
        for _ in range(20):
            if not (np.array_equal(plan.matvec(x), want) and np.array_equal(plan.matmat(X), want_m)):
                bad.append(1)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad
