"""Iterative solvers on a real FusionPlan, and simulate() on a plan."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.errors import InputError
from akfviz.npu.iterative import run_solver


@pytest.fixture(scope="module")
def stencil_plan():
    A = akfviz.generate("stencil5", n=32, seed=0)
    return akfviz.select(akfviz.analyze(A, tile=16))


def test_simulate_accepts_a_fusion_plan(stencil_plan):
    res = akfviz.simulate(stencil_plan, akfviz.HardwareConfig(rows=8, cols=8))
    A = stencil_plan.pa.A
    assert res.cycles > 0 and res.meta["origin"] == "FusionPlan"
    # x is all-nonzero by default: every stored weight is used once by an exact plan
    if stencil_plan.relative_error == 0:
        assert res.macs >= A.nnz


@pytest.mark.parametrize("method", ["jacobi", "cg", "power"])
def test_solvers_converge_with_exact_operator(stencil_plan, method):
    r = run_solver(stencil_plan, akfviz.HardwareConfig(rows=8, cols=8), method=method,
                   iterations=200, tol=1e-6)
    c = r.curves["residual_exact"].dropna().to_numpy()
    assert c[-1] < c[0]
    if method != "power":
        assert r.iterations_to_tol["exact"] is not None
    p, q = r.npu.loc["persistent"], r.npu.loc["non-persistent"]
    assert p.dram_bytes <= q.dram_bytes and p.cycles <= q.cycles


def test_cg_jacobi_reference_values(stencil_plan):
    # plain scipy CG-free check: the Jacobi residual after 1 step from x=0 is ||b - A D^-1 b||/||b||
    A = stencil_plan.pa.A
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    r = run_solver(stencil_plan, akfviz.HardwareConfig(rows=4, cols=4), method="jacobi", b=b,
                   iterations=1)
    x1 = b / A.diagonal()
    assert r.curves["residual_exact"].iloc[0] == pytest.approx(
        np.linalg.norm(b - A @ x1) / np.linalg.norm(b))


def test_cg_rejects_nonsymmetric():
    A = sp.csr_array(np.array([[4.0, 1.0], [0.0, 3.0]]))
    plan = akfviz.select(akfviz.analyze(A, tile=8))
    with pytest.raises(InputError, match="symmetric"):
        run_solver(plan, method="cg")
    with pytest.raises(InputError, match="solver"):
        run_solver(plan, method="gmres")
