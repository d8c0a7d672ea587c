"""Design space page, held-out UX report: baselines per point, constant parallel-coordinate axes,
stacked scatter points, the plan definition of the other pages, and a caption without swept settings."""
import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from akfviz.viz import dse
from apptest_tree import sweep_table

PAGE = "pages/5_Design_space.py"
#: The designer's sweep on the sample where every tile slot is nonempty (so Block-sparse = Dense).
DESIGNER = {"sample": "minilm_ffn0_nm24", "sweep": "rows=32,64,256;sram_bytes_per_pe=8192,65536"}


def _designer_frame():
    """The designer's six configurations as the report gives them: one spot, energy by grid size."""
    return pd.DataFrame({"rows": [32, 32, 64, 64, 256, 256], "sram_bytes_per_pe": [8192, 65536] * 3,
                         "cycles": [938.0] * 6, "error_pct": [0.780599] * 6, "speedup": [1.0] * 6,
                         "energy_pj": [7.98e6, 7.98e6, 5.67e6, 5.67e6, 5.29e6, 5.29e6],
                         "kernel_mix": ["QUANT8D 100 %"] * 6})


# --------------------------------------------------------------------------- 4: constant axes
def test_constant_parallel_coordinate_axes_show_their_single_value():
    df = _designer_frame()
    fig = dse.parallel_coordinates(df, ["rows", "sram_bytes_per_pe", "cycles", "energy_pj", "error_pct",
                                        "speedup"], "energy_pj")
    # axes titled in short words with units, energy in µJ
    dims = {d.label.split("<br>(constant)")[0]: d for d in fig.data[0].dimensions}
    assert set(dims) == {"PE rows", "SRAM/PE (B)", "cycles", "energy (µJ)", "error (%)", "speedup (×)"}
    for name, text in (("cycles", "938"), ("error (%)", "0.7806"), ("speedup (×)", "1")):
        d = dims[name]
        # ticks given: plotly draws only these and no invented range labels at the axis ends
        assert list(d.ticktext) == [text] and len(d.tickvals) == 1, name
        assert d.range[0] < d.tickvals[0] < d.range[1]
        assert "constant" in d.label
    np.testing.assert_allclose(dims["energy (µJ)"].values, df["energy_pj"] * 1e-6)
    assert fig.data[0].line.colorbar.title.text == "energy<br>(µJ)"
    for name in ("PE rows", "energy (µJ)"):          # varying axes keep plotly's own range and ticks
        assert dims[name].tickvals is None and dims[name].range is None and "constant" not in dims[name].label


# --------------------------------------------------------------------------- 5: stacked points
def test_optimal_points_are_drawn_on_top_and_stacked_points_are_counted():
    df = _designer_frame()
    fig = dse.sweep_scatter(df, "cycles", "error_pct", "energy_pj", hover=["rows", "sram_bytes_per_pe"])
    dots, rings = fig.data[0], fig.data[1]
    # the two least-energy configurations are the optimal ones, and they are drawn last (on top)
    assert list(rings.x) == [938.0, 938.0]
    np.testing.assert_allclose(dots.marker.color[-2:], [5.29, 5.29])    # energy in µJ
    np.testing.assert_allclose(dots.marker.color[:2], [7.98, 7.98])
    # the hover of the spot lists all six configurations, the optimal ones first and marked
    text = dots.text[-1]
    assert text.startswith("6 configurations at this spot")
    for r, s in zip(df["rows"], df["sram_bytes_per_pe"]):
        assert f"rows={r}, sram_bytes_per_pe={s};" in text
    assert text.count("(Pareto-optimal)") == 2 and text.index("rows=256") < text.index("rows=32")
    # a count label at the spot, and no invented positions
    labels = fig.data[2]
    assert list(labels.text) == ["×6"] and list(labels.x) == [938.0] and list(labels.y) == [0.780599]
    assert sorted(dots.x) == sorted(df["cycles"]) and sorted(dots.y) == sorted(df["error_pct"])


def test_a_crowded_spot_lists_the_first_configurations_and_counts_the_rest():
    k = dse.HOVER_LIST + 3
    df = pd.DataFrame({"cycles": [5.0] * k, "error_pct": [1.0] * k, "energy_pj": np.arange(k, dtype=float) * 1e6,
                       "tile": np.arange(k)})
    text = dse.sweep_scatter(df, hover=["tile"]).data[0].text[0]
    assert text.startswith(f"{k} configurations at this spot")
    assert text.count("tile=") == dse.HOVER_LIST and text.endswith("… and 3 more")
    # the least energy first: tiles 0 … HOVER_LIST − 1 are listed, the last three are counted
    assert "tile=0;" in text and f"tile={dse.HOVER_LIST};" not in text


def test_scatter_without_stacked_points_has_no_count_labels():
    df = pd.DataFrame({"cycles": [1.0, 2.0, 3.0], "error_pct": [3.0, 2.0, 1.0], "energy_pj": [1.0, 1.0, 1.0]})
    fig = dse.sweep_scatter(df)
    assert len(fig.data) == 2 and len(fig.data[1].x) == 3
    assert all(not t.startswith("1 configurations") for t in fig.data[0].text)


# --------------------------------------------------------------------------- app
@pytest.fixture
def app():
    import pathlib

    app_py = pathlib.Path(__file__).resolve().parents[2] / "app.py"   # this checkout's app
    return AppTest.from_file(str(app_py), default_timeout=600)


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _sweep_table(at) -> pd.DataFrame:
    return sweep_table(at)


def test_the_designers_sweep_shows_each_baseline_and_says_why_nothing_changes(app):
    """3 + 14: no Block-sparse / Static-sparse columns, no word on which baseline, nothing on why SRAM has
    no effect; the caption listed swept settings as fixed."""
    app.query_params.update(DESIGNER)
    app.run()
    app.switch_page(PAGE).run()
    _ok(app)
    df = _sweep_table(app)
    assert len(df) == 6
    for col in ("blocksparse_cycles", "blocksparse_energy_pj", "staticsparse_cycles", "staticsparse_energy_pj",
                "speedup_vs_blocksparse", "energy_rel_vs_blocksparse", "speedup_vs_staticsparse",
                "energy_rel_vs_staticsparse"):
        assert col in df.columns and df[col].notna().all(), col
    assert (df["blocksparse_cycles"] == df["dense_cycles"]).all()
    captions = [c.value for c in app.caption]
    said = next(c for c in captions if c.startswith("Baselines"))
    assert "against **Dense**" in said and "against **Block-sparse**" in said and "against **Static-sparse**" in said
    notes = " ".join(m.value for m in app.markdown)
    assert "Block-sparse = Dense at every point" in notes and "every tile slot of this matrix is nonempty" in notes
    assert "SRAM per PE does not change" in notes
    assert len(app.get("plotly_chart")) >= 3          # scatter, AKF against each baseline, parallel coordinates
    fixed = next(c for c in captions if c.startswith("6 points: ")).split("Same at every point:")[1]
    assert "SRAM" not in fixed and "256×256" not in fixed and "256 PE columns" in fixed
    # the export holds the same columns (the table the buttons write)
    assert "speedup_vs_blocksparse" in df.columns and "static_kernel" in df.columns


def test_the_sweep_uses_the_selection_mode_budget_and_rho_x_of_the_other_pages(app):
    """6 + 14: with mode=error&budget=0.001 the sweep ran α = 1, β = 1 (0.4654 % error, over the budget),
    ignored ρ_x, and its caption said 'Other settings: T = 32' while T was swept."""
    app.query_params.update({"mode": "error", "budget": "0.001", "xdens": "0.5"})
    app.run()
    app.switch_page(PAGE).run()
    _ok(app)
    df = _sweep_table(app)
    assert len(df) == 6 and (df["error_pct"] <= 0.1 + 1e-12).all(), df["error_pct"].tolist()
    caption = next(c.value for c in app.caption if c.value.startswith("6 points: "))
    fixed = caption.split("Same at every point:")[1]
    assert "error budget 0.001" in fixed and "ρ_x = 0.5" in fixed
    assert "T = " not in fixed and "β =" not in fixed   # tile and beta are swept, not fixed
    # sweeping β under an error budget changes nothing, and the page says so
    assert any("replaces α and β" in i.value for i in app.info)
    # the plan of the other pages at this point is the sweep's point with T = 32
    import akfviz
    from akfviz.workloads.samples import DEFAULT_SAMPLE, load_sample

    pa = akfviz.analyze(load_sample(DEFAULT_SAMPLE), tile=32)
    plan = akfviz.select(pa, error_budget=0.001, rho_x=0.5)
    row = df[(df["tile"] == 32) & (df["beta"] == 1.0)]
    assert np.isclose(row["error_pct"].item(), 100 * plan.relative_error, rtol=0, atol=1e-12)


def test_the_baselines_checkbox_travels_in_the_link(app):
    """Seen in the fifteenth session: the checkbox was not a link setting, so a shared link of a sweep
    without baselines re-ran them (about twice the time) and showed other columns."""
    from akfviz import app_state

    assert app_state.parse_query({"sweep_base": "false"})[0]["sweep_base"] is False
    assert app_state.parse_query({"sweep_base": "1"})[0]["sweep_base"] is True
    assert app_state.parse_query({"sweep_base": "maybe"})[1]            # rejected, with a message
    assert app_state.to_query({"sweep_base": False}) == {"sweep_base": "false"}
    assert app_state.to_query({"sweep_base": True}) == {}               # the default is not written

    app.query_params.update({"sweep_base": "false", "sweep": "tile=16,32"})
    app.run()
    app.switch_page(PAGE).run()
    _ok(app)
    box = next(c for c in app.checkbox if c.label.startswith("Also simulate the Block-sparse"))
    assert box.value is False
    df = _sweep_table(app)
    assert len(df) == 2 and "blocksparse_cycles" not in df.columns
    assert app.query_params.get("sweep_base") in ("false", ["false"])
    box.check().run()
    _ok(app)
    df = _sweep_table(app)
    assert "blocksparse_cycles" in df.columns
    assert "sweep_base" not in app.query_params


# --------------------------------------------------------------------------- held-out mutation probe (dse)
def test_an_axis_that_varies_by_under_one_percent_is_not_called_constant():
    """Cycles of 1000 and 1005 differ (0.5 %): the axis must show its range, not one "constant" value."""
    df = pd.DataFrame({"cycles": [1000.0, 1005.0], "energy_pj": [5.0e6, 5.0e6], "speedup": [2.0, 2.0]})
    fig = dse.parallel_coordinates(df, ["cycles", "energy_pj", "speedup"], "cycles")
    dims = {d.label.split("<br>")[0]: d for d in fig.data[0].dimensions}
    assert "constant" not in dims["cycles"].label and dims["cycles"].tickvals is None
    assert "constant" in dims["energy (µJ)"].label and "constant" in dims["speedup (×)"].label


def test_baseline_bars_draw_each_baselines_own_speedup_and_energy_ratio():
    """Each baseline's bars (by legend name) in the upper panel are its speedup column, in the lower
    panel its energy-ratio column, with distinct values per baseline so a swap shows."""
    df = pd.DataFrame({"rows": [4, 8], "speedup": [2.0, 2.5], "energy_rel": [0.5, 0.4],
                       "speedup_vs_blocksparse": [1.5, 1.6], "energy_rel_vs_blocksparse": [0.7, 0.6],
                       "speedup_vs_staticsparse": [1.1, 1.2], "energy_rel_vs_staticsparse": [0.9, 0.95]})
    fig = dse.baseline_bars(df, ["rows"])
    want = {("vs Dense", "y"): "speedup", ("vs Dense", "y2"): "energy_rel",
            ("vs Block-sparse", "y"): "speedup_vs_blocksparse", ("vs Block-sparse", "y2"): "energy_rel_vs_blocksparse",
            ("vs Static-sparse", "y"): "speedup_vs_staticsparse",
            ("vs Static-sparse", "y2"): "energy_rel_vs_staticsparse"}
    got = {(t.name, t.yaxis): list(t.y) for t in fig.data if t.type == "bar"}
    assert set(got) == set(want)
    for key, col in want.items():
        assert got[key] == df[col].tolist(), key


def test_a_one_point_sweep_says_point_in_the_singular(app):
    app.query_params["sweep"] = "tile=16"
    app.run()
    app.switch_page(PAGE).run()
    _ok(app)
    assert any(c.value.startswith("1 point: tile 16.") for c in app.caption), [c.value[:40] for c in app.caption]
    assert not any("point(s)" in c.value for c in app.caption)


def test_design_space_counts_points_not_swept_parameters(app):
    """Mutation probe: one swept parameter with two values is '2 points' (the plural must come
    from the points, not from the number of parameters)."""
    app.query_params["sweep"] = "tile=16,32"
    app.run()
    app.switch_page(PAGE).run()
    _ok(app)
    assert any(c.value.startswith("2 points: ") for c in app.caption), [c.value[:40] for c in app.caption]


# --------------------------------------------------------------------------- app probe, 42nd session
def test_parallel_coordinates_skip_text_columns_of_pandas_string_dtype():
    # a swept granularity / resource column is pandas' string dtype, on which np.issubdtype raised
    df = pd.DataFrame({"granularity": pd.array(["tile", "cluster"], dtype="string"), "cycles": [1.0, 2.0],
                       "energy_pj": [3.0, 4.0], "flag": [True, False]})
    fig = dse.parallel_coordinates(df, ["granularity", "cycles", "energy_pj", "flag"], "granularity")
    assert [d.label for d in fig.data[0].dimensions] == ["cycles", "energy (µJ)"]


@pytest.mark.parametrize("spec", ["granularity=tile,cluster", "resource=energy;tile=16,32"])
def test_a_swept_text_setting_draws_the_page(app, spec):
    app.switch_page(PAGE).run()
    app.text_input(key="w:sweep").set_value(spec).run()
    _ok(app)
    assert len(_sweep_table(app)) == 2
