"""The Solver page says what its residual is, for each method (akf-spec §7, iterative mode).

A held-out review found power iteration's convergence plot labelled just "residual", although what
:mod:`akfviz.npu.iterative` measures for it is not ‖b − A x_k‖ / ‖b‖ (the other methods') but the
eigen-residual ‖A x_k − λ_k x_k‖ / |λ_k| of the unit-norm iterate with its Rayleigh quotient.
"""
import json

import numpy as np
import pytest

import akfviz
from akfviz.npu.iterative import run_solver
from akfviz.viz import solver as vs


@pytest.fixture(scope="module")
def plan():
    return akfviz.select(akfviz.analyze(akfviz.generate("stencil5", n=256), tile=16), error_budget=0.02)


def test_power_label_is_the_eigen_residual():
    assert vs.residual_label("power") == "eigen-residual ‖A x_k − λ_k x_k‖ / |λ_k|"
    assert vs.residual_label("jacobi") == vs.residual_label("cg") == "relative residual ‖b − A x_k‖ / ‖b‖"
    cap = vs.residual_caption("power")
    assert "‖A x_k − λ_k x_k‖ / |λ_k|" in cap and "λ_k = x_kᵀ A x_k" in cap and "length 1" in cap
    assert "‖b − A x_k‖ / ‖b‖" in vs.residual_caption("cg") and "λ" not in vs.residual_caption("jacobi")
    fig = vs.convergence({"exact A": [0.5, 0.1]}, ylabel=vs.residual_label("power"))
    assert fig.layout.yaxis.title.text == vs.residual_label("power")


@pytest.mark.parametrize("iterations", [1, 3, 7])
def test_the_labels_are_what_the_solver_computes(plan, iterations):
    """Recompute the last residual of each run from its last iterate, by the label's formula."""
    A = plan.pa.A
    res = run_solver(plan, method="power", iterations=iterations, tol=0.0)
    for x, col in ((res.x_exact, "residual_exact"), (res.x_approx, "residual_approx")):
        assert np.linalg.norm(x) == pytest.approx(1.0)                       # x_k has length 1
        lam = float(x @ (A @ x))                                           # its Rayleigh quotient with A
        want = np.linalg.norm(A @ x - lam * x) / abs(lam)
        assert res.curves[col].iloc[-1] == pytest.approx(want, rel=1e-10)

    b = np.random.default_rng(0).standard_normal(A.shape[0])
    for method in ("jacobi", "cg"):
        r = run_solver(plan, method=method, b=b, iterations=iterations, tol=0.0)
        want = np.linalg.norm(b - A @ r.x_exact) / np.linalg.norm(b)
        assert r.curves["residual_exact"].iloc[-1] == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("method", ["power", "jacobi"])
def test_solver_page_labels_the_residual_of_the_method_shown(app, method):
    app.query_params.update({"solver": method, "iters": "20"})
    app.run()
    app.switch_page("pages/6_Solver.py").run()
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    conv = next(json.loads(c.proto.spec) for c in app.get("plotly_chart")
                if "Convergence" in str(json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "")))
    assert conv["layout"]["yaxis"]["title"]["text"] == vs.residual_label(method)
    assert any(c.value.startswith(vs.residual_caption(method)) for c in app.caption)   # then what the curves do
    if method == "power":
        assert "λ_k" in conv["layout"]["yaxis"]["title"]["text"]
