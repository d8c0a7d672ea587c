"""Findings of the forty-ninth session's cross-page consistency probe (docs/decisions.md,
"Forty-ninth session"): the same quantity for the same settings must read the same on every page,
or the page must say why not."""
import importlib

import pytest

import akfviz
from akfviz.errors import InputError

from apptest_tree import ok, open_page

dse = importlib.import_module("akfviz.dse")
STENCIL = {"src": "gen", "gen": "stencil5", "g_n": "900"}


def test_run_sweep_analyses_with_the_given_lsh():
    A = akfviz.generate("stencil5", n=900, seed=0)
    lsh = {"num_hashes": 32, "bands": 32, "grid": 8, "seed": 0}
    df = dse.run_sweep(A, {"tile": [32]}, base={"error_budget": 0.05}, lsh=lsh)
    want = akfviz.select(akfviz.analyze(A, tile=32, lsh=lsh), error_budget=0.05).relative_error
    other = akfviz.select(akfviz.analyze(A, tile=32), error_budget=0.05).relative_error
    assert want != pytest.approx(other, rel=0.1)          # the case the probe found: ≈ 10× apart
    assert df.loc[0, "error_pct"] == pytest.approx(100 * want, rel=1e-12)
    with pytest.raises(InputError):
        dse.run_sweep(A, {"tile": [32]}, lsh={"bands": "many"})


def test_design_space_rows_follow_the_patterns_page_lsh(app):
    """Before: with 32 LSH bands the Kernels page's plan had 0.25 % error and the sweep's row at the
    same settings 2.38 % (the sweep analysed with the default LSH)."""
    q = dict(STENCIL, mode="error", budget="0.05", lsh_b="32", sweep="tile=16,32")
    open_page(app, "pages/2_Kernels.py", **q)
    ok(app)
    kernels_err = next(m.value for m in app.metric if m.label == "relative error")
    app.switch_page("pages/5_Design_space.py").run()
    ok(app)
    part = next(d.value for d in app.dataframe if "error_pct" in d.value.columns)
    row = part[part["tile"] == 32].iloc[0]
    assert f"{row['error_pct']:.3g} %" == kernels_err
    assert any("LSH 32 hashes, 32 bands" in c.value for c in app.caption)


@pytest.mark.parametrize("xdens", ["0.3", "1"])
def test_solver_says_its_plan_is_priced_for_a_dense_x(app, xdens):
    open_page(app, "pages/6_Solver.py", **STENCIL, xdens=xdens)
    ok(app)
    said = any("dense x (ρ_x = 1)" in c.value and f"ρ_x = {xdens}" in c.value for c in app.caption)
    assert said == (xdens != "1")                      # only when the other pages' ρ_x differs
    help_ = next(m.help for m in app.metric if m.label == "plan's relative error")
    assert "ρ_x = 1" in help_


def test_kernels_output_error_says_which_x(app):
    open_page(app, "pages/2_Kernels.py")
    ok(app)
    help_ = next(m.help for m in app.metric if m.label.startswith("output error"))
    assert "ρ_x" in help_ and "Compare" in help_
