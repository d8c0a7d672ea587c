"""Findings of the forty-ninth session's UX review at 1280 and 1024 px (docs/decisions.md,
"Forty-ninth session"); the table widths at 1280 px are checked in test_ui_layout_44.py."""
import json
import pathlib

import numpy as np
import pytest

from streamlit.testing.v1 import AppTest

from akfviz.viz import dse as vd
from akfviz.viz import kernels as vk
from akfviz.viz import solver as vs

from apptest_tree import ok as _ok
from apptest_tree import open_page as _open

APP = str(pathlib.Path(__file__).resolve().parents[2] / "app.py")   # (not from conftest: several test dirs have one)




# ---------------------------------------------------------------- charts
def _ticks(lo, hi):
    """The convergence chart's ticks over ``lo … hi``: (values, labels)."""
    fig = vs.convergence({"r": np.geomspace(hi, lo, 20)})
    return list(fig.layout.yaxis.tickvals), list(fig.layout.yaxis.ticktext)


@pytest.mark.parametrize("lo, hi, want", [
    (0.08, 2.5, ["0.1", "0.2", "0.5", "1", "2"]),               # CG on the Solver page: under two decades
    (3e-7, 0.9, ["10⁻⁶", "10⁻⁵", "10⁻⁴", "0.001", "0.01", "0.1"]),  # more than eight steps: the decades
    (2e-7, 3e-6, ["2×10⁻⁷", "5×10⁻⁷", "10⁻⁶", "2×10⁻⁶"]),
    (0.3, 0.45, ["0.3", "0.4", "0.45"]),                        # the finest steps and the end
    (0.12, 0.5, ["0.15", "0.2", "0.3", "0.5"]),                 # default Jacobi: 1-1.5-2-3-5-7 steps
])
def test_log_ticks_label_every_tick_with_its_value(lo, hi, want):
    vals, text = _ticks(lo, hi)
    assert text == want
    assert all(lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9) for v in vals) and vals == sorted(vals)
    assert [_label_value(t) for t in text] == pytest.approx(vals, rel=0.02)   # each label is its tick's value


_SUP = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def _label_value(text: str) -> float:
    """'0.2' → 0.2, '10⁻⁶' → 1e-6, '2×10⁻⁷' → 2e-7."""
    mant, _, power = text.rpartition("10") if text[-1] in "⁻⁰¹²³⁴⁵⁶⁷⁸⁹" else ("", "", "")
    if not power:
        return float(text)
    return float(mant.rstrip("×") or 1) * 10.0 ** int(power.translate(_SUP))


def test_the_convergence_chart_labels_minor_ticks_with_values():
    """Before: a CG curve from 0.08 to 2.5 had the ticks "2", "1", "9 8 7 6 5 4 3 2", "10⁻¹"."""
    fig = vs.convergence({"exact": np.geomspace(2.5, 0.08, 30), "lossy": np.geomspace(2.0, 0.1, 30)})
    assert list(fig.layout.yaxis.ticktext) == ["0.1", "0.2", "0.5", "1", "2"]
    assert fig.layout.yaxis.type == "log"


def test_fusion_trajectory_entropy_ticks_are_round_and_the_winner_is_named():
    steps = np.arange(60)
    w = {"QUANT8": np.linspace(0.4, 0.0, 60), "QUANT8D": np.linspace(0.4, 1.0, 60), "CSC": np.linspace(0.2, 0, 60)}
    fig = vk.fusion_trajectory(steps, np.linspace(3, 1, 60), np.linspace(2.1, 0.15, 60), w)
    ax = fig.layout.yaxis2
    assert ax.tickmode == "linear" and ax.tick0 == 0 and ax.dtick == 0.5    # 0, 0.5, 1, … (was 1.708, 1.207, …)
    named = [a.text for a in fig.layout.annotations if "QUANT8" in (a.text or "")]
    assert named == ["<b>QUANT8D</b>"]                # QUANT8 and QUANT8D share the family's colour


def test_parallel_coordinates_round_their_axis_ends():
    import pandas as pd
    df = pd.DataFrame({"cycles": [1292.01, 1178.13], "energy_pj": [6.42891e6, 9.16044e6], "error_pct": [0.1, 0.4]})
    fig = vd.parallel_coordinates(df, ["cycles", "energy_pj", "error_pct"], "energy_pj")
    assert all(d.tickformat == ".4~g" for d in fig.data[0].dimensions)


# ---------------------------------------------------------------- pages
def test_kernels_why_table_puts_the_answer_first(app):
    _open(app, "pages/2_Kernels.py")
    _ok(app)
    why = next(d for d in app.dataframe if "chosen" in d.value.columns)
    assert list(why.proto.column_order)[:4] == ["kernel", "chosen", "rank", "C"]
    assert set(why.proto.column_order) == set(why.value.columns)         # nothing hidden
    label = next(m.label for m in app.metric if "÷ Dense" in m.label)
    assert label.startswith("kernel-only ") and "estimate" in label


def test_design_space_does_not_ask_to_press_a_disabled_button(app):
    _open(app, "pages/5_Design_space.py", sweep="tile=16,abc;beta=2")
    assert not app.exception
    assert any("abc" in e.value for e in app.error)
    assert not any("Press **Run sweep**" in i.value for i in app.info)
    assert any("Correct the sweep above" in i.value for i in app.info)
    assert next(b for b in app.button if b.label == "Run sweep").disabled


def test_design_space_axis_choices_are_titles_only(app):
    _open(app, "pages/5_Design_space.py")
    _ok(app)
    colour = app.selectbox(key="dse_c")
    assert colour.value == "energy_pj"
    shown = colour.proto.options[colour.proto.default]
    assert shown == "energy (µJ)", shown                   # was "energy (µJ) · energy_pj"


def test_sidebar_preset_reads_modified_while_the_npu_page_changes_apply(app):
    _open(app, "app.py")
    box = app.sidebar.selectbox(key="w:preset")
    assert not any("(modified)" in o for o in box.proto.options)
    app = _open(AppTest.from_file(APP, default_timeout=600), "app.py", hw_rows="64", hw_cols="64")
    _ok(app)
    box = app.sidebar.selectbox(key="w:preset")
    chosen = box.proto.options[box.proto.default]
    assert chosen == f"{box.value} (modified)"
    assert sum("(modified)" in o for o in box.proto.options) == 1          # the chosen one only
    assert any("Changed on the NPU page" in c.value for c in app.sidebar.caption)


def test_npu_page_utilisation_in_percent_and_pe_counters_in_tabs(app):
    _open(app, "pages/3_NPU.py")
    _ok(app)
    util = next(m for m in app.metric if m.label == "mean utilisation")
    assert util.value.endswith(" %")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in app.get("plotly_chart")]
    heat = next(t for t in titles if t.startswith("PE utilisation"))
    assert f"mean utilisation {util.value}" in heat, heat          # the same number, the same unit
    pe_tables = [d for d in app.dataframe if list(d.value.columns[:3]) == ["pe", "row", "col"]]
    assert len(pe_tables) == 3
    shown = set().union(*(set(d.value.columns) for d in pe_tables))
    assert {"busy", "idle", "utilization", "events", "macs_fp32", "sram_bytes", "dram_bytes", "flit_hops"} <= shown
    busy = pe_tables[0].value["busy"].to_numpy()
    assert (np.diff(busy) <= 0).all()                                        # busiest first


def test_solver_per_iteration_columns_are_whole(app):
    _open(app, "pages/6_Solver.py")
    _ok(app)
    cost = next(d for d in app.dataframe if "cycles / iteration" in d.value.columns)
    cfg = json.loads(cost.proto.columns)
    # whole (rounded for display) and with separators like the totals beside them (fiftieth session)
    for c in ("cycles / iteration", "DRAM bytes / iteration"):
        assert cfg[c]["type_config"]["format"] == "localized"
        assert (cost.value[c] == cost.value[c].round()).all()
    per_iter = cost.value["cycles"] / cost.value["cycles / iteration"]
    assert np.allclose(per_iter, per_iter.iloc[0], rtol=1e-3)            # the same number of iterations


# ---------------------------------------------------------------- edges the mutation probe found untested
def test_log_ticks_edges():
    # plain numbers below 10⁵, powers of ten from it
    assert _ticks(1, 1e6)[1] == ["1", "10", "100", "1000", "10000", "10⁵", "10⁶"]
    # a residual down to machine precision: every second decade, not seventeen crowded labels
    vals, text = _ticks(2e-16, 1.0)
    assert len(text) <= 8 and text[-1] == "1" and text[0] == "10⁻¹⁴"
    assert [_label_value(t) for t in text] == pytest.approx(vals)
    # the shared ticks of the density axes keep their decades below eight
    from akfviz.viz.layout import log_ticks
    assert log_ticks(-6.0, 0.0) == [-6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0]


def test_convergence_keeps_a_log_axis_and_ignores_an_exact_zero():
    fig = vs.convergence({"a": np.full(5, np.nan)})                      # nothing to tick: plotly's own
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.ticktext is None
    fig = vs.convergence({"cg": np.r_[np.geomspace(2.5, 0.08, 29), 0.0]})   # converged to exactly 0
    assert list(fig.layout.yaxis.ticktext) == ["0.1", "0.2", "0.5", "1", "2"]


@pytest.mark.parametrize("top, dtick", [(2.1, 0.5), (0.9, 0.25), (0.3, 0.1)])
def test_entropy_ticks_follow_its_range(top, dtick):
    fig = vk.fusion_trajectory(np.arange(10), np.ones(10), np.linspace(top, 0.0, 10))
    assert fig.layout.yaxis2.dtick == dtick and fig.layout.yaxis2.range[0] == 0
    assert fig.layout.yaxis2.range[1] == pytest.approx(max(top, 0.1) * 1.05)


def test_fusion_trajectory_without_steps_or_entropy_draws_without_error():
    vk.fusion_trajectory(np.array([]), np.array([]), np.array([]), {"CSC": np.array([])})
    fig = vk.fusion_trajectory(np.arange(3), np.ones(3), np.full(3, np.nan), {"CSC": np.array([])})
    assert fig.layout.yaxis2.range[0] == 0


def test_heatmap_title_gives_mean_and_max_utilisation_in_percent():
    from akfviz.viz import npu as vn

    title, _ = vn._utilization_title(np.array([[0.5, 0.0]]), 1, 1, False)
    assert "mean utilisation 25 %" in title and "max 50 %" in title


def test_sweep_scheduler_any_case_still_runs_point_by_point():
    """``scheduler="LOCAL"`` is the local scheduler (progress after each point), not dask."""
    import importlib

    import akfviz
    dse = importlib.import_module("akfviz.dse")
    calls = []
    dse.run_sweep(akfviz.generate("uniform", n=64, seed=0), {"alpha": [1.0, 2.0]}, scheduler="LOCAL",
                  base={"tile": 16}, progress=lambda done, total, point: calls.append(done))
    assert calls == [1, 2]


def test_design_space_with_an_empty_matrix_does_not_ask_to_press_run(app):
    _open(app, "pages/5_Design_space.py", src="gen", gen="uniform", g_density="0", g_n="500")
    assert not app.exception
    assert any("no nonzeros" in i.value for i in app.info)
    assert not any("Press **Run sweep**" in i.value for i in app.info)


def test_design_space_table_energies_whole_and_localized(app):
    _open(app, "pages/5_Design_space.py")
    _ok(app)
    parts = [d for d in app.dataframe if any(c.endswith("energy_pj") for c in d.value.columns)]
    assert {"energy_pj", "dense_energy_pj", "staticsparse_energy_pj"} <= set().union(*(d.value.columns for d in parts))
    for d in parts:
        cfg = json.loads(d.proto.columns)
        for c in [c for c in d.value.columns if c.endswith("energy_pj")]:
            assert (d.value[c].dropna() % 1 == 0).all(), c
            assert cfg[c]["type_config"]["format"] == "localized", c
            assert "µJ" in cfg[c]["help"], c
