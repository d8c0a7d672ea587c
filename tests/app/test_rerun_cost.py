"""A rerun that changes nothing a figure depends on does not rebuild it (probe: interactive speed —
six pages rebuilt every plotly figure on every rerun, Patterns over 300 ms each time)."""
import collections

import pytest

from akfviz.viz import compare as vc
from akfviz.viz import dse as vd
from akfviz.viz import learn as vl
from akfviz.viz import matrix as vm
from akfviz.viz import patterns as vp
from akfviz.viz import solver as vs

BUILDERS = {
    "app.py": (vm, ["spy_density", "nnz_histograms"]),
    "pages/1_Patterns.py": (vp, ["tile_density_map", "cluster_map", "representative_gallery", "density_histogram",
                                 "cluster_sizes"]),
    "pages/4_Compare.py": (vc, ["compare_bars"]),
    "pages/5_Design_space.py": (vd, ["sweep_scatter", "baseline_bars", "parallel_coordinates"]),
    "pages/6_Solver.py": (vs, ["convergence", "persistence_bars"]),
    "pages/7_Learn.py": (vl, ["learn_matrix", "learn_grid", "learn_timeline"]),
}


def _count(monkeypatch, module, names):
    calls = collections.Counter()
    for name in names:
        fn = getattr(module, name)

        def counted(*a, _fn=fn, _name=name, **k):
            calls[_name] += 1
            return _fn(*a, **k)
        monkeypatch.setattr(module, name, counted)
    return calls


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", list(BUILDERS))
def test_a_rerun_with_nothing_changed_builds_no_figure(app, monkeypatch, page):
    module, names = BUILDERS[page]
    app.run()
    if page != "app.py":
        app.switch_page(page).run()
    _ok(app)
    calls = _count(monkeypatch, module, names)
    app.run()
    _ok(app)
    assert not calls, dict(calls)
    assert len(app.get("plotly_chart")) >= 1


def test_patterns_selected_tile_rebuilds_only_the_figures_that_show_it(app, monkeypatch):
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    _ok(app)
    calls = _count(monkeypatch, vp, BUILDERS["pages/1_Patterns.py"][1])
    app.number_input(key="w:tsel").set_value(1).run()
    _ok(app)
    # the tile map (red frame) and the tile detail (a one-tile gallery); nothing else
    assert calls == {"tile_density_map": 1, "representative_gallery": 1}, dict(calls)


def test_design_space_axis_change_keeps_the_baseline_bars_and_the_parallel_axes(app, monkeypatch):
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    _ok(app)
    calls = _count(monkeypatch, vd, BUILDERS["pages/5_Design_space.py"][1])
    x = app.selectbox(key="dse_x")
    x.set_value(next(o for o in x.options if o != x.value)).run()
    _ok(app)
    assert calls == {"sweep_scatter": 1}, dict(calls)


def test_compare_new_static_kernel_simulates_only_the_static_sparse_plan(app, monkeypatch):
    """Compare once was one cached call: another Static-sparse kernel re-simulated all four plans
    (seconds each on a 1M-nonzero matrix). Now each plan's row is cached on its own."""
    import importlib

    from akfviz.app_cache import _compare_row_cached

    # the module (``import akfviz.compare as m`` can give the package's lazy compare function)
    cmp_mod = importlib.import_module("akfviz.compare")

    app.run()
    app.switch_page("pages/4_Compare.py").run()
    _ok(app)
    _compare_row_cached.clear()   # every row simulated afresh below, whatever earlier tests cached
    calls = collections.Counter()
    real = cmp_mod.plan_row

    def counted(which, *a, **k):
        calls[which] += 1
        return real(which, *a, **k)
    monkeypatch.setattr(cmp_mod, "plan_row", counted)
    box = app.selectbox(key="w:static")
    app.run()
    _ok(app)
    assert calls == {w: 1 for w in cmp_mod.PLANS}, dict(calls)
    calls.clear()
    box.set_value("BITMAP" if box.value != "BITMAP" else "DIA").run()
    _ok(app)
    assert calls == {"StaticSparse": 1}, dict(calls)
    # the kernel mix is listed under "All measured columns", one line per plan
    mixes = next(m.value for m in app.markdown if m.value.startswith("**kernel_mix**")).splitlines()
    assert any(m.startswith(f"- StaticSparse: {box.value} 100") for m in mixes), mixes


def test_kernels_page_explains_a_unit_once_per_plan(app, monkeypatch):
    """The explanation of a cluster-mode budget sums two kernels over every member tile (≈ 170 ms
    for the largest cluster of a 1M-nonzero matrix); it ran on every rerun of the Kernels page."""
    import importlib

    import streamlit as st

    ex = importlib.import_module("akfviz.selection.explain")   # the package also exports the function
    st.cache_data.clear()
    app.query_params.update({"mode": "resource", "rbudget": "0.3"})
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    calls = _count(monkeypatch, ex, ["explain"])
    app.run()
    _ok(app)
    assert not calls, dict(calls)
    assert any("costs" in s.value or "lowest cost" in s.value for s in app.success)
    app.number_input(key="w:csel").set_value(1).run()      # another cluster: explained once
    _ok(app)
    assert calls["explain"] == 1
