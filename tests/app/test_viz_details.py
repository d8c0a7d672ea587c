"""Figure and page details a user reads as numbers: which value a hover, a frame or a bar stands for.

Each test names the behaviour it checks; they were written against mutants of the figure builders and
the page scripts that the rest of the suite let through (a hover naming another plan, a frame on the
transposed tile, a widget whose value never reached the library call)."""
import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.viz import compare as vc
from akfviz.viz import dse as vd
from akfviz.viz import kernels as vk
from akfviz.viz import matrix as vm
from akfviz.viz import patterns as vp
from akfviz.viz.colors import CLUSTER_PALETTE
from apptest_tree import typed_array


# --------------------------------------------------------------------------- library figures
def test_matrix_summary_calls_only_a_symmetric_matrix_symmetric():
    upper = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 4.0]]))
    assert vm.matrix_summary(upper)["symmetric"] is False
    same_pattern = sp.csr_array(np.array([[1.0, 2.0], [5.0, 3.0]]))     # pattern symmetric, values not
    assert vm.matrix_summary(same_pattern)["symmetric"] is False
    sym = sp.csr_array(np.array([[1.0, 2.0], [2.0, 3.0]]))
    assert vm.matrix_summary(sym)["symmetric"] is True


def test_compare_bars_hover_names_the_plan_of_each_bar():
    plans = ["Dense", "BlockSparse", "StaticSparse", "AKF"]
    measured = pd.DataFrame({"speedup": [1.0, 1.5, 2.0, 3.0], "energy_rel": [1.0, 0.9, 0.7, 0.5],
                             "error_pct": [0.0, 0.0, 1.0, 2.0]}, index=plans)
    fig = vc.compare_bars(measured)
    ticks = dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext))
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 3
    for bar in bars:
        for y, name in zip(bar.y, bar.customdata):
            assert ticks[y] == name                      # the hover's plan is the row's plan


def test_aggregated_tile_density_map_shows_the_mean_density_over_each_cells_area():
    # 300 tile columns at cap 256: two tile columns per cell
    tiles = pd.DataFrame({"bi": [0, 0, 0], "bj": [0, 1, 2], "density": [0.1, 0.3, 0.5]})
    fig = vp.tile_density_map(tiles, 1, 300, 8)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert "each cell: 1×2 tiles" in fig.layout.title.text
    np.testing.assert_allclose(z[0, 0], np.log10(0.2), rtol=1e-6)     # (0.1 + 0.3) / 2
    np.testing.assert_allclose(z[0, 1], np.log10(0.25), rtol=1e-6)    # (0.5 + empty) / 2


def test_tile_map_hover_and_frame_put_bi_on_the_rows_and_bj_on_the_columns():
    tiles = pd.DataFrame({"bi": [0, 1], "bj": [3, 0], "density": [0.5, 0.25]})
    fig = vp.tile_density_map(tiles, 2, 5, 8, selected=0)
    layer = fig.data[1]
    pts = {int(c): (float(x), float(y)) for c, x, y in zip(layer.customdata, layer.x, layer.y)}
    assert pts[0] == (3.0, 0.0) and pts[1] == (0.0, 1.0)          # x = bj, y = bi
    assert "bi %{y" in layer.hovertemplate and "bj %{x" in layer.hovertemplate
    (frame,) = fig.layout.shapes
    assert (frame.x0, frame.x1, frame.y0, frame.y1) == (2.5, 3.5, -0.5, 0.5)   # tile (bi 0, bj 3)


def test_cluster_highlight_greys_the_other_clusters_and_keeps_the_selected_ones_colour():
    tiles = pd.DataFrame({"bi": [0, 0, 1], "bj": [0, 1, 0], "cluster": [0, 1, 1]})
    k = len(CLUSTER_PALETTE)
    z = np.asarray(vp.cluster_map(tiles, 2, 2, 8, selected_cluster=1).data[0].z, dtype=float)
    assert z[0, 0] == k                                   # cluster 0: grey
    assert z[0, 1] == 1 and z[1, 0] == 1                  # cluster 1: its own colour
    assert np.isnan(z[1, 1])
    z = np.asarray(vp.cluster_map(tiles, 2, 2, 8).data[0].z, dtype=float)
    assert z[0, 0] == 0 and z[0, 1] == 1                  # no selection: nothing grey


def test_cluster_sizes_shows_the_largest_clusters_largest_first():
    rng = np.random.default_rng(3)
    sizes = rng.permutation(np.arange(1, 71))
    clusters = pd.DataFrame({"size": sizes, "jaccard_mean": np.linspace(0, 1, 70)})
    fig = vp.cluster_sizes(clusters)
    shown = np.asarray(fig.data[0].y)
    assert shown.tolist() == sorted(sizes.tolist(), reverse=True)[:60]
    assert [int(x) for x in fig.data[0].x] == [int(i) for i in np.argsort(-sizes, kind="stable")[:60]]
    assert fig.layout.xaxis.title.text == "cluster (the largest 60 of 70)"
    # all shown: the axis does not speak of "the largest 60" (it did for a one-cluster matrix)
    assert vp.cluster_sizes(clusters.head(3)).layout.xaxis.title.text == "cluster"


def test_kernel_mix_adds_up_the_given_weights_per_kernel():
    fig = vk.kernel_mix(["CSC", "CSC", "DIA"], weights=[1, 2, 10])
    bars = dict(zip(fig.data[0].y, fig.data[0].x))
    assert bars == {"CSC": 3.0, "DIA": 10.0}
    assert fig.layout.title.text == "Kernel mix, by nonzeros"


def test_pareto_front_hover_labels_follow_their_points():
    fig = vk.pareto_front([0.1, 0.0, 0.5], [0.5, 1.0, 0.1], labels=["a", "b", "c"])
    front = fig.data[0]
    assert list(front.x) == [0.1, 0.5, 1.0]
    assert list(front.text) == ["c", "a", "b"]
    np.testing.assert_allclose(front.y, [50.0, 10.0, 0.0])


def test_sweep_scatter_hover_lists_the_configuration_of_its_own_point():
    df = pd.DataFrame({"tile": [8, 16, 32, 64], "cycles": [400.0, 300.0, 200.0, 100.0],
                       "error_pct": [1.0, 2.0, 3.0, 4.0], "energy_pj": [4e6, 1e6, 3e6, 2e6]})
    fig = vd.sweep_scatter(df, hover=["tile"])
    pts = fig.data[0]
    own = dict(zip(df["cycles"], df["tile"]))
    for x, text in zip(pts.x, pts.text):
        assert text.startswith(f"tile={own[x]};"), (x, text)


def test_matrix_maps_draw_row_zero_at_the_top():
    A = akfviz.generate("clustered", n=64, seed=1)
    pa = akfviz.analyze(A, tile=16)
    plan = akfviz.select(pa)
    figs = [vm.spy_density(A), vp.cluster_map(pa.tiles, 4, 4, 16),
            vk.kernel_map(pa.tiles, plan.tile_kernels, 4, 4, 16)]
    for fig in figs:
        assert fig.layout.yaxis.autorange == "reversed"


# --------------------------------------------------------------------------- pages (AppTest)
def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _spec(app, title_start):
    return next(s for s in (json.loads(c.proto.spec) for c in app.get("plotly_chart"))
                if (s["layout"].get("title") or {}).get("text", "").startswith(title_start))


def _specs(app):
    return [json.loads(c.proto.spec) for c in app.get("plotly_chart")]


def test_patterns_highlight_toggle_greys_the_other_clusters_on_the_map(app):
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    _ok(app)
    grey = len(CLUSTER_PALETTE)
    z = typed_array(_spec(app, "LSH clusters")["data"][0]["z"]).astype(float)
    assert not (z == grey).any()
    app.toggle(key="cluster_highlight").set_value(True).run()
    _ok(app)
    z = typed_array(_spec(app, "LSH clusters")["data"][0]["z"]).astype(float)
    assert (z == grey).any() and ((z < grey) & np.isfinite(z)).any()


def test_kernels_mix_counts_the_nonzeros_of_the_matrix(app):
    from akfviz.workloads.samples import DEFAULT_SAMPLE, load_sample

    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    spec = _spec(app, "Kernel mix")
    assert spec["layout"]["title"]["text"] == "Kernel mix, by nonzeros"
    assert sum(typed_array(spec["data"][0]["x"])) == load_sample(DEFAULT_SAMPLE).nnz


def test_kernels_relative_error_metric_is_the_plans_error_in_percent(app):
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    star = next(t for s in _specs(app) for t in s["data"] if t.get("name") == "current plan")
    err_pct = float(typed_array(star["y"])[0])
    metric = next(m for m in app.metric if m.label == "relative error")
    assert metric.value == f"{err_pct:.3g} %"


def test_kernels_fit_plot_follows_the_chosen_measure(app):
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)

    def dots():
        spec = next(s for s in _specs(app) if any(t.get("name") == "calibration" for t in s["data"]))
        return typed_array(next(t for t in spec["data"] if t.get("name") == "calibration")["y"]).astype(float)

    sel = app.selectbox(key="pt_measure")
    first, second = sel.options[0], sel.options[1]
    assert sel.value == first
    a = dots()
    sel.set_value(second).run()
    _ok(app)
    b = dots()
    assert a.shape != b.shape or not np.allclose(a, b)


def test_compare_cpu_chart_labels_each_time_and_uses_the_repeats_slider(app, monkeypatch):
    calls = []

    def fake_time_matvec(plan, x, repeats, A=None):
        calls.append(int(repeats))
        return {"plan_ms": 1.0, "scipy_ms": 4.0}

    monkeypatch.setattr("akfviz.execute.cpu.time_matvec", fake_time_matvec)
    app.run()
    app.switch_page("pages/4_Compare.py").run()
    _ok(app)
    app.slider(key="cpu_reps").set_value(7).run()
    _ok(app)
    assert calls and calls[-1] == 7
    spec = _spec(app, "Real CPU time")
    bars = dict(zip(spec["data"][0]["y"], typed_array(spec["data"][0]["x"]).astype(float)))
    assert bars == {"AKF plan.matvec (numba)": 1.0, "scipy CSR A @ x": 4.0}


def test_design_space_scatter_puts_the_chosen_columns_on_their_axes(app):
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    _ok(app)
    spec = _spec(app, "Sweep:")
    x, y = app.selectbox(key="dse_x").value, app.selectbox(key="dse_y").value
    assert x != y
    assert spec["layout"]["xaxis"]["title"]["text"] == vd.column_label(x)
    assert spec["layout"]["yaxis"]["title"]["text"] == vd.column_label(y)


def test_design_space_bad_sweep_file_shows_an_error_not_a_traceback(app):
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    app.file_uploader(key="sweep_upload").set_value(("bad.csv", b"this,is\nnot,a sweep\n", "text/csv")).run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.error


def test_kernels_page_says_why_some_costs_are_infinite(app):
    """UX review: with a resource budget that does not bind (tile mode, 0.3 or 1.5 × Dense on the default
    sample) the explanation table's C column read "Infinity" for every lossy kernel, unexplained."""
    app.query_params.update({"mode": "resource", "rbudget": "1.5", "gran": "tile"})
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    assert not app.exception, [e.value for e in app.exception]
    table = next(d.value for d in app.dataframe if "C" in d.value.columns and "rank" in d.value.columns)
    C = table["C"].to_numpy(np.float64)
    assert np.isinf(C).any() and np.isfinite(C[table["chosen"].to_numpy(bool)]).all()
    captions = " ".join(c.value for c in app.caption)
    assert "α/β = ∞" in captions and "only the kernels with the least E compete" in captions


def test_kernels_page_has_no_infinity_note_with_finite_weights(app):
    """The note above is shown only when some C is infinite: with α = β = 1 every C is finite."""
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    assert not app.exception, [e.value for e in app.exception]
    table = next(d.value for d in app.dataframe if "C" in d.value.columns and "rank" in d.value.columns)
    assert np.isfinite(table["C"].to_numpy(np.float64)).all()
    assert "α/β = ∞" not in " ".join(c.value for c in app.caption)


@pytest.mark.parametrize("query, merged", [({}, True), ({"sample": "uniform_2048", "gran": "tile"}, False)])
def test_kernels_pareto_caption_names_the_method_that_drew_the_dots(app, query, merged):
    """The caption described both ways of filling between corners whatever the selection; it now says
    the one used: the merged front for the default sample's 2 clusters, the switch path for 4,061 tiles."""
    app.query_params.update(query)
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    assert not app.exception, [e.value for e in app.exception]
    captions = " ".join(c.value for c in app.caption)
    assert ("merging the units' fronts" in captions) is merged
    assert ("with more than 2,000 tiles, plans on the way from one corner" in captions) is not merged


def test_tile_density_map_of_one_density_puts_it_mid_scale_and_says_so():
    """N:M 2:4: every tile has density 0.5. The colour bar once ran from 0.5 to 0.5 + 1e-6 with one
    tick at its bottom, every cell its darkest colour; now the value sits mid-scale (a decade around
    it), is the one tick, and the title says every tile has it."""
    pa = akfviz.analyze(akfviz.generate("nm", n=128, seed=0), tile=32)
    assert np.unique(pa.tiles["density"]).size == 1
    d = float(pa.tiles["density"].iat[0])
    fig = vp.tile_density_map(pa.tiles, pa.tileset.n_brows, pa.tileset.n_bcols, 32)
    hm = fig.data[0]
    z = typed_array(hm.z)
    assert hm.zmin == pytest.approx(np.log10(d) - 0.5) and hm.zmax == pytest.approx(np.log10(d) + 0.5)
    assert np.allclose(z[np.isfinite(z)], (hm.zmin + hm.zmax) / 2, atol=1e-6)
    assert list(hm.colorbar.ticktext) == [f"{d:.2g}"]
    assert f"every tile has density {d:.3g}" in fig.layout.title.text
    # two densities: the usual scale from the smallest to the largest, no such note
    two = pa.tiles.copy()
    two.loc[0, "density"] = d / 4
    fig2 = vp.tile_density_map(two, pa.tileset.n_brows, pa.tileset.n_bcols, 32)
    assert fig2.data[0].zmin == pytest.approx(np.log10(d / 4), abs=1e-6) and "every tile" not in fig2.layout.title.text


def test_density_bin_caption_writes_100_percent_without_an_exponent():
    """Bin -1 at 2 bins per decade is 0.32 ≤ d < 1: "32 % to 100 %" (it read "1e+02 %")."""
    cap = vp.density_bin_caption([-1, -1], 2)
    assert "32 % to 100 % of the tile's entries nonzero" in cap and "e+" not in cap
    assert "3.2 % to 10 %" in vp.density_bin_caption([-3], 2)


def test_pattern_titles_count_one_tile_and_one_cluster_in_the_singular():
    A = sp.csr_array(([1.0], ([0], [0])), shape=(8, 8))
    pa = akfviz.analyze(A, tile=8)
    tiles = pa.tiles
    assert vp.tile_density_map(tiles, 1, 1, 8).layout.title.text.startswith("Tile density — 1 nonempty tile of")
    assert vp.cluster_map(tiles, 1, 1, 8).layout.title.text == "LSH clusters — 1 cluster"
    assert vp.density_histogram(tiles).layout.title.text.startswith(
        "Tile density histogram — 1 tile")
