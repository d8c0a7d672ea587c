"""Plans built before the analysis' full pass (residual read straight from the matrix, small
approximations on a TileSet subset) against the same plans built after it: the same executor
arrays, errors and products, bit for bit."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.execute import fused
from akfviz.execute.plan import FusionPlan


def _two_analyses(A, T):
    fresh = akfviz.analyze(A, tile=T)
    ready = akfviz.analyze(A, tile=T)
    ready.tileset.v  # runs the full pass: the tile-order route
    return fresh, ready


def _same_plans(p1, p2, A):
    r1, r2 = p1._packed.residual, p2._packed.residual
    assert set(r1) == set(r2)
    for k in r1:
        np.testing.assert_array_equal(r1[k], r2[k], err_msg=k)
        assert r1[k].dtype == r2[k].dtype, k
    for fmt in p1._packed.packs:
        for k, a in p1._packed.packs[fmt].items():
            np.testing.assert_array_equal(a, p2._packed.packs[fmt][k], err_msg=f"{fmt}.{k}")
    np.testing.assert_array_equal(p1.tile_errors, p2.tile_errors)
    assert p1.relative_error == p2.relative_error
    rng = np.random.default_rng(1)
    x = rng.standard_normal(A.shape[1])
    np.testing.assert_array_equal(p1.matvec(x), p2.matvec(x))
    X = rng.standard_normal((A.shape[1], 3))
    np.testing.assert_array_equal(p1.matmat(X), p2.matmat(X))


def _hyper_sparse(n, m, density, seed, spread=False):
    A = sp.random_array((n, m), density=density, format="csr", rng=np.random.default_rng(seed))
    if spread:  # values over 6 decades: QUANT8 drops entries below max|v| / 254 of their tile
        A.data = A.data * 10.0 ** np.random.default_rng(seed + 1).uniform(-6, 0, A.nnz)
    return A


KERNEL_MIXES = [("QUANT8",), ("CSC",), ("QUANT8", "SKIP"), ("QUANT8", "PRUNE50"),
                ("QUANT8", "PRUNE25", "CSC", "NM1:4", "SKIP"), ("PRUNE50", "QUANT8D")]


@pytest.mark.parametrize("mix", KERNEL_MIXES, ids=["+".join(m) for m in KERNEL_MIXES])
@pytest.mark.parametrize("case", [(4000, 4000, 2e-3, 32, False), (3000, 2100, 3e-3, 24, True),
                                  (2000, 2500, 1e-2, 13, True)],
                         ids=["square T32", "rect T24 spread", "T13 spread"])
def test_plans_before_and_after_the_full_pass_are_identical(mix, case):
    n, m, density, T, spread = case
    A = _hyper_sparse(n, m, density, 3, spread)
    fresh, ready = _two_analyses(A, T)
    rng = np.random.default_rng(len(mix))
    names = np.asarray(mix, dtype=object)[rng.integers(0, len(mix), fresh.n_tiles)]
    p1 = FusionPlan(fresh, names)
    p2 = FusionPlan(ready, names)
    _same_plans(p1, p2, A)
    if set(mix) <= {"QUANT8", "CSC", "SKIP"} and T >= 24:
        # routed without the TileSet's entries (at T = 13 some QUANT8 tiles hold half a tile side
        # of entries: they may run as DIA, which the entries decide)
        assert not fresh._full.done


def test_a_few_approximated_tiles_merge_into_the_residual_read_from_the_matrix():
    """A few PRUNE / N:M tiles (approximated on a TileSet subset) among QUANT8 tiles: their entries
    are merged into the matrix-order residual by column, without the full pass."""
    A = _hyper_sparse(6000, 5000, 2e-3, 9, spread=True)
    fresh, ready = _two_analyses(A, 32)
    rng = np.random.default_rng(2)
    names = np.full(fresh.n_tiles, "QUANT8", dtype=object)
    multi = np.flatnonzero(fresh.compact.nnz > 1)
    names[rng.choice(multi, 20, replace=False)] = "PRUNE50"
    names[rng.choice(fresh.n_tiles, 20, replace=False)] = "NM1:4"
    names[rng.choice(fresh.n_tiles, 20, replace=False)] = "SKIP"
    p1, p2 = FusionPlan(fresh, names), FusionPlan(ready, names)
    assert not fresh._full.done
    _same_plans(p1, p2, A)
    assert (p1.tile_errors[names == "PRUNE50"] > 0).all()


def test_quant8_keeps_small_entries_as_stored_zeros_and_counts_their_error():
    M = np.zeros((64, 64))
    M[:4, :4] = [[1.0, 1e-4, 0, 0], [0, 2.0, 0, 3e-5], [0, 0, 0, 0], [5.0, 0, 0, 0]]
    A = sp.csr_array(M)
    fresh, ready = _two_analyses(A, 32)
    p1, p2 = FusionPlan(fresh, ["QUANT8"]), FusionPlan(ready, ["QUANT8"])
    _same_plans(p1, p2, A)
    assert not fresh._full.done
    res = p1._packed.residual
    assert res["val"].shape[0] == 5                    # 1e-4 and 3e-5 quantise to 0: stored zeros
    assert np.count_nonzero(res["val"]) == 3
    assert res["col"][res["val"] == 0.0].tolist() == [1, 3]
    v = np.array([1.0, 1e-4, 2.0, 3e-5, 5.0])
    scale = 5.0 / 127
    vh = np.clip(np.rint(v / scale), -127, 127) * scale
    assert vh[1] == vh[3] == 0.0
    assert p1.tile_errors[0] == pytest.approx(np.sum((v - vh) ** 2), rel=1e-12)


def test_tiles_that_need_their_entries_take_the_tile_order_route():
    """A QUANT8 tile with half a tile side of entries may run as DIA (diagonal runs), a BITMAP or
    DENSE tile above its residual threshold is packed: both need the TileSet's entries."""
    A = akfviz.generate("banded", n=512, seed=0)
    fresh, ready = _two_analyses(A, 32)
    for kernel in ("QUANT8", "DENSE", "BITMAP", "DIA"):
        p1 = FusionPlan(akfviz.analyze(A, tile=32), [kernel] * fresh.n_tiles)
        p2 = FusionPlan(ready, [kernel] * ready.n_tiles)
        _same_plans(p1, p2, A)
    src, approx = fused._compact_route(fresh.tileset, [], fresh.compact)  # no group: nothing routed
    assert approx is None and not src.any()
    assert fused._compact_route(fresh.tileset, [], None) is None  # no compact arrays: tile order


@pytest.mark.parametrize("mix", [("QUANT8",), ("QUANT8", "SKIP", "CSC"), ("QUANT8", "PRUNE50")],
                         ids=["QUANT8", "QUANT8+SKIP+CSC", "QUANT8+PRUNE50"])
def test_the_residual_read_on_worker_threads_equals_the_tile_order_route(monkeypatch, mix):
    """A small matrix sent down the parallel path (chunks of row blocks on the worker threads; a
    lazy row cursor counts the entries each row leaves out): the same arrays as the tile-order
    builder, with entries QUANT8 rounds to 0 (values over 6 decades: stored zeros) and entries left
    out by SKIP and by approximations."""
    from akfviz.execute import threads

    monkeypatch.setattr(threads, "PACK_PARALLEL_MIN", 1)
    A = _hyper_sparse(3000, 2600, 4e-3, 5, spread=True)
    fresh, ready = _two_analyses(A, 16)
    rng = np.random.default_rng(7)
    names = np.asarray(mix, dtype=object)[rng.integers(0, len(mix), fresh.n_tiles)]
    p1, p2 = FusionPlan(fresh, names), FusionPlan(ready, names)
    _same_plans(p1, p2, A)
    res = p1._packed.residual
    kept = res["val"].shape[0]
    assert (res["val"] == 0.0).any()   # stored zeros (QUANT8 values that round to 0)
    if mix == ("QUANT8",):
        assert kept == A.nnz   # nothing left out: the residual has A's pattern
    else:
        assert kept < A.nnz    # entries were left out, so the rows were closed up
