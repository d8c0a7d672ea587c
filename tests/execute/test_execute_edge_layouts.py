"""Executor layouts at their edges (from a mutation probe of the fused CPU executor):
N:M 2:4 tiles with an odd number of column groups, a rectangular plan's vector length,
and packed tiles merged from several kernels kept in row-block order."""
import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.analysis.pattern import analyze
from akfviz.errors import InputError
from akfviz.execute import FusionPlan


@pytest.mark.parametrize("shape, T", [((64, 84), 32), ((40, 44), 8)])
def test_nm_2_4_tiles_with_an_odd_number_of_groups_match_scipy(shape, T):
    # 84 = 2·32 + 20: the last column block is 20 wide, 5 groups of 4 (the 2:M loop's odd tail);
    # 44 = 5·8 + 4 with T = 8: one group in the edge tiles
    rng = np.random.default_rng(5)
    A = sp.csr_array(rng.standard_normal(shape))
    pa = analyze(A, tile=T)
    plan = FusionPlan(pa, ["NM2:4"] * len(pa.tiles))
    assert plan._packed.format_tiles()["nm"] == len(pa.tiles)   # packed in the nm layout, not residual
    Ahat = plan.approx_matrix()
    assert Ahat.nnz == A.nnz // 2                                   # 2 of every 4 kept
    x = rng.standard_normal(shape[1])
    ref = Ahat @ x
    np.testing.assert_allclose(plan.matvec(x), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    X = rng.standard_normal((shape[1], 3))
    np.testing.assert_allclose(plan.matmat(X), Ahat @ X, rtol=1e-12, atol=1e-12 * np.abs(Ahat @ X).max())


@pytest.mark.parametrize("shape", [(50, 30), (30, 50)])
def test_matvec_refuses_a_float64_vector_of_the_row_count_on_a_rectangular_plan(shape):
    A = sp.random(*shape, density=0.3, random_state=1, format="csr")
    pa = analyze(A, tile=8)
    plan = FusionPlan(pa, ["DENSE"] * len(pa.tiles))
    with pytest.raises(InputError, match=f"length {shape[1]}"):
        plan.matvec(np.ones(shape[0]))       # float64, contiguous, 1-D: the unchecked fast path's shape
    np.testing.assert_allclose(plan.matvec(np.ones(shape[1])), A @ np.ones(shape[1]), rtol=1e-12)


def _check_row_block_order(packed):
    T = packed.tile
    for fmt, pk in packed.packs.items():
        rbp, meta = pk["rbp"], pk["meta"]
        assert rbp.shape == (packed.n_brows + 1,) and rbp[0] == 0 and rbp[-1] == meta.shape[0], fmt
        for b in range(packed.n_brows):
            assert np.all(meta[rbp[b]:rbp[b + 1], 0] == b * T), (fmt, b)


def test_tiles_merged_from_several_kernels_stay_in_row_block_order():
    """A row block owns its rows: tiles of one format must lie in rbp[b]:rbp[b+1] of their own
    row block b, also when several kernels feed the format (DENSE tiles and full BITMAP tiles
    both run as dense; DIA tiles and QUANT8 tiles on long diagonals both run as DIA). Else a
    parallel run adds a tile from another thread's row block (a write race)."""
    rng = np.random.default_rng(3)
    A = sp.csr_array(rng.standard_normal((48, 48)))        # every 8×8 tile full
    pa = analyze(A, tile=8)
    names = np.where(np.arange(len(pa.tiles)) % 2 == 0, "DENSE", "BITMAP")
    plan = FusionPlan(pa, names)
    assert plan._packed.format_tiles()["dense"] == len(pa.tiles)
    _check_row_block_order(plan._packed)
    x = rng.standard_normal(48)
    y1 = plan._packed.run_matvec(x, np.empty(48), 1, False)
    np.testing.assert_allclose(y1, A @ x, rtol=1e-12, atol=1e-12 * np.abs(A @ x).max())
    for k in (2, 3, 6):
        assert np.array_equal(plan._packed.run_matvec(x, np.full(48, np.nan), k, True), y1)

    # a banded matrix with equal values (QUANT8 exact, on long diagonal runs → DIA) and DIA tiles
    B = sp.diags_array([1.0, 2.0, 1.0], offsets=[-1, 0, 1], shape=(64, 64), format="csr")
    pb = analyze(B, tile=16)
    names = np.where(np.arange(len(pb.tiles)) % 2 == 0, "DIA", "QUANT8")
    plan = FusionPlan(pb, names)
    assert plan._packed.format_tiles()["dia"] == 4               # 2 DIA + 2 QUANT8 diagonal tiles
    _check_row_block_order(plan._packed)
    xb = rng.standard_normal(64)
    np.testing.assert_allclose(plan.matvec(xb), plan.approx_matrix() @ xb, rtol=1e-12, atol=1e-12)
