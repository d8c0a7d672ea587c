"""The deferred full pass of an analysis: what runs it, what does not, and that it gives the eager
arrays (TileSet entries and every feature) exactly."""
import pickle
import threading

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.analysis import tilepass
from akfviz.analysis.tiling import TileSet


def _pa(seed=0, n=600, T=16):
    return akfviz.analyze(akfviz.generate("uniform", n=n, density=0.01, seed=seed), tile=T)


def test_geometry_and_compact_arrays_do_not_run_the_full_pass():
    pa = _pa()
    ts = pa.tileset
    assert isinstance(ts, TileSet) and not ts.entries_ready
    assert ts.n_tiles == pa.n_tiles and ts.nnz == pa.nnz and ts.shape == pa.shape
    T = pa.tile
    ref_bi = np.repeat(np.arange(ts.n_brows), np.diff(ts.rb_ptr))
    np.testing.assert_array_equal(ts.bi, ref_bi)
    np.testing.assert_array_equal(ts.h, np.minimum(T, pa.shape[0] - ref_bi * T))
    np.testing.assert_array_equal(ts.bj, pa.compact.col_block)
    for f in ("bi", "bj", "h", "w"):
        assert getattr(ts, f).dtype == np.int64 and not getattr(ts, f).flags.writeable
    pa.summary(), pa.clusters, pa.density_hist, pa.cluster_members(0)
    assert not pa._full.done


@pytest.mark.parametrize("first", ["tiles", "r", "signatures", "ptr"])
def test_the_full_pass_gives_the_eager_arrays(first):
    A = akfviz.generate("llm", n=300, m=200, sparsity=0.8, seed=2)
    pa = akfviz.analyze(A, tile=24)
    getattr(pa.tileset, first) if first in ("r", "ptr") else getattr(pa, first)
    assert pa._full.done and pa.tileset.entries_ready
    M, indptr, indices, rb = tilepass.canonical_csr(A, 24)
    ts, ints, floats, sig, dbin = tilepass.tiles_and_features(M, indptr, indices, rb, 24)
    for f in ("bi", "bj", "h", "w", "ptr", "r", "c", "v", "rb_ptr"):
        np.testing.assert_array_equal(getattr(pa.tileset, f), getattr(ts, f), err_msg=f)
        assert getattr(pa.tileset, f).dtype == getattr(ts, f).dtype
    np.testing.assert_array_equal(pa.signatures, sig)
    i2, f2, d2, cl = pa._features
    np.testing.assert_array_equal(i2, ints)
    np.testing.assert_array_equal(f2, floats)
    np.testing.assert_array_equal(d2, dbin)
    for arr in (pa.tileset.r, pa.tileset.v, pa.signatures, i2):
        assert not arr.flags.writeable


def test_subset_reads_tiles_from_the_matrix_as_the_full_pass_would():
    pa = _pa(3, n=700, T=24)
    idx = np.array([5, 0, pa.n_tiles - 1, 17, 5])
    sub = pa.tileset.subset(idx)
    assert not pa._full.done and sub.rb_ptr is None and sub.n_tiles == idx.size
    dense = [sub.dense(i) for i in range(idx.size)]
    for i, t in enumerate(idx):
        np.testing.assert_array_equal(dense[i], pa.tileset.dense(t))  # runs the full pass
    again = pa.tileset.subset(idx)  # now gathered from the full pass's arrays
    for f in ("ptr", "r", "c", "v", "bi", "bj", "h", "w"):
        np.testing.assert_array_equal(getattr(sub, f), getattr(again, f))
    with pytest.raises(akfviz.InputError):
        pa.tileset.subset([pa.n_tiles])


@pytest.mark.parametrize("parallel", [True, False])
def test_subset_reads_the_same_tiles_on_the_worker_threads_and_serially(parallel, monkeypatch):
    from akfviz.analysis import tiling
    from akfviz.execute import threads

    monkeypatch.setattr(tiling, "SUBSET_PARALLEL_ROWS", 0 if parallel else 1 << 62)
    monkeypatch.setattr(threads, "cores_have_room", lambda: True)
    pa = _pa(4, n=900, T=16)
    idx = np.random.default_rng(0).permutation(pa.n_tiles)[:300]
    sub = pa.tileset.subset(idx)
    assert not pa._full.done
    pa.tileset.r  # the full pass
    again = pa.tileset.subset(idx)  # gathered from its arrays
    for f in ("ptr", "r", "c", "v", "bi", "bj", "h", "w"):
        np.testing.assert_array_equal(getattr(sub, f), getattr(again, f), err_msg=f)


def test_tileset_is_immutable_and_pickles_before_and_after_the_full_pass():
    pa = _pa(1)
    with pytest.raises(AttributeError):
        pa.tileset.r = np.zeros(3)
    with pytest.raises(AttributeError):
        pa.tileset.no_such_thing
    before = pickle.loads(pickle.dumps(pa))
    assert not before._full.done
    np.testing.assert_array_equal(before.tiles["signature"].to_numpy(), pa.tiles["signature"].to_numpy())
    after = pickle.loads(pickle.dumps(pa))
    assert after._full.done and after.tileset.entries_ready
    np.testing.assert_array_equal(after.tileset.v, pa.tileset.v)
    assert "TileSet" in repr(pa.tileset)


def test_concurrent_first_access_runs_the_full_pass_once(monkeypatch):
    from akfviz.analysis import pattern

    pa = _pa(4, n=900)
    calls = []
    real = pattern.tiles_and_features

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(pattern, "tiles_and_features", counted)
    out = []
    threads = [threading.Thread(target=lambda: out.append(pa.tileset.v.sum())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(out)) == 1


def test_a_selection_in_cluster_mode_and_its_plan_need_no_full_pass():
    A = sp.random_array((6000, 6000), density=5e-4, format="csr", rng=np.random.default_rng(5))
    pa = akfviz.analyze(A)
    plan = akfviz.select(pa)
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    y = plan.matvec(x)
    assert not pa._full.done
    # the same plan as after the full pass
    pa2 = akfviz.analyze(A)
    pa2.tileset.v
    plan2 = akfviz.select(pa2)
    assert list(plan.tile_kernels) == list(plan2.tile_kernels)
    assert plan.resource == plan2.resource
    np.testing.assert_array_equal(plan.tile_errors, plan2.tile_errors)
    np.testing.assert_array_equal(y, plan2.matvec(x))
    np.testing.assert_array_equal(plan.selection.E, plan2.selection.E)


def test_values_checked_by_the_scan_fall_back_to_the_canonical_form():
    """A float64 CSR input with canonical indices has its values checked by the eager pass: an
    explicit zero sends it through scipy's canonical form (the zero dropped), a NaN is refused."""
    rng = np.random.default_rng(0)
    A = sp.random_array((300, 200), density=0.05, format="csr", rng=rng)
    ref = akfviz.analyze(A, tile=16)
    Z = A.copy()
    Z.data[7] = 0.0                        # an explicit zero: same indices, one entry less
    pz = akfviz.analyze(Z, tile=16)
    assert pz.nnz == A.nnz - 1 and pz.A.has_canonical_format
    assert (pz.A != ref.A).nnz == 1
    assert Z.data[7] == 0.0 and Z.data.flags.writeable     # the caller's matrix is untouched
    Nn = A.copy()
    Nn.data[3] = np.nan
    with pytest.raises(akfviz.InputError):
        akfviz.analyze(Nn, tile=16)
    # a clean input: pa.A is a copy, the caller's arrays stay writable and unchanged
    pa = akfviz.analyze(A, tile=16)
    assert pa.A.data is not A.data and A.data.flags.writeable and not pa.A.data.flags.writeable
    np.testing.assert_array_equal(pa.A.data, A.data)
    np.testing.assert_array_equal(pa.A.indices, A.indices)
