"""Probe 43 of the fused CPU execution: LOWRANK1's closed-form error of two-line tiles
(akf-spec §3: ``E = ||t − decode(encode(t))||_F²``) at large and small value scales."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.kernels.lowrank import lowrank_errors


def _two_row_tile(scale):
    """An 8×8 matrix whose one tile has exactly two nonempty rows (the closed-form path)."""
    M = np.zeros((8, 8))
    M[0, :3] = [1.0, 2.0, 3.0]
    M[1, :3] = [3.0, 1.0, 2.0]
    return M * scale


@pytest.mark.parametrize("scale", [1e100, 1e139, 1e-100, 1e-130])
def test_lowrank1_two_line_error_matches_svd_at_any_scale(scale):
    # was NaN at 1e100 (σ₁²σ₂² overflowed: inf / inf) and 0 at 1e-100 (underflow), although the
    # matrix is inside the range analyze() accepts
    M = _two_row_tile(scale)
    pa = akfviz.analyze(sp.csr_array(M), tile=8)
    err = lowrank_errors(pa.tileset, np.arange(pa.tileset.n_tiles), [1, 2])
    s = np.linalg.svd(M / scale, compute_uv=False)
    assert np.isfinite(err).all()
    np.testing.assert_allclose(err[0, 0] / scale**2, s[1] ** 2, rtol=1e-12)
    assert err[0, 1] == 0.0


@pytest.mark.parametrize("scale", [1e100, 1e139])
def test_lowrank1_plan_relative_error_equals_measured(scale):
    # select(kernels=["LOWRANK1"]) raised "The cost matrix has non-finite entries." at 1e100 and
    # at 1e139
    M = _two_row_tile(scale)
    A = sp.csr_array(M)
    plan = akfviz.select(akfviz.analyze(A, tile=8), kernels=["LOWRANK1"])
    Ah = plan.approx_matrix()
    measured = np.linalg.norm((M - Ah.toarray()) / scale) / np.linalg.norm(M / scale)
    assert measured > 0.3
    np.testing.assert_allclose(plan.relative_error, measured, rtol=1e-10)
    tt = plan.tile_table()
    np.testing.assert_allclose(np.sqrt(tt["sq_error"].sum()) / np.linalg.norm(M), measured, rtol=1e-10)
    x = np.arange(1.0, 9.0)
    np.testing.assert_allclose(plan.matvec(x), Ah @ x, rtol=1e-13, atol=1e-13 * np.abs(Ah @ x).max())


def test_lowrank1_two_column_tiles_in_a_larger_matrix_big_values():
    # tiles with two nonempty columns, several tiles, values near 1e120: a finite error per tile
    rng = np.random.default_rng(3)
    M = np.zeros((32, 32))
    for b in range(0, 32, 8):
        M[b:b + 8, b] = rng.standard_normal(8)
        M[b:b + 8, b + 3] = rng.standard_normal(8)
    M *= 1e120
    A = sp.csr_array(M)
    plan = akfviz.select(akfviz.analyze(A, tile=8), kernels=["LOWRANK1"])
    assert np.isfinite(plan.tile_errors).all()
    D = (M - plan.approx_matrix().toarray()) / 1e120
    np.testing.assert_allclose(plan.relative_error, np.linalg.norm(D) / np.linalg.norm(M / 1e120), rtol=1e-9)
