"""Layout fixes from a browser look at 1440 and 800 px (forty-fourth session): wide tables cut off at
the page's edge, form labels broken over several lines. Each check fails on the code before it.

The grid draws on a canvas, so the tests estimate a table's width from its columns' settings (as the
page's message carries them) and contents with :func:`akfviz.viz.tables.grid_px`, which errs on
the wide side (7 px a character; Chromium measures 6.0–6.6 for the grid's font).
"""
import json
import re

import numpy as np
import pandas as pd
import pytest

from akfviz import app_state as S
from akfviz.viz import compare as vc
from akfviz.viz import dse as vd
from akfviz.viz import tables as vt

from apptest_tree import ok as _ok
from apptest_tree import open_page

PAGES = ["app.py", "pages/1_Patterns.py", "pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py",
         "pages/5_Design_space.py", "pages/6_Solver.py", "pages/7_Learn.py"]


def _open(app, page, **query):
    open_page(app, page, **query)
    _ok(app)
    return app


def _config(d) -> dict:
    return json.loads(d.proto.columns or "{}")


def _width(d) -> int:
    """Estimated drawn width of the grid ``d`` (an AppTest dataframe or data editor)."""
    cfg = _config(d)
    return vt.grid_px(d.value, cfg, hide_index=bool(cfg.get("_index", {}).get("hidden")),
                      column_order=list(d.proto.column_order) or None)


def _titles(d) -> dict:
    """Column name -> the title the grid shows."""
    cfg = _config(d)
    return {c: (cfg.get(c) or {}).get("label") or c for c in d.value.columns}


def _style(app, key: str) -> str:
    return next(h.proto.body for h in app.get("html") if f".st-key-{key}" in h.proto.body)


# ---------------------------------------------------------------- the estimate itself
def test_the_width_estimate_follows_fixed_widths_contents_and_hidden_columns():
    df = pd.DataFrame({"a": [1, 22, 333], "long_text": ["x" * 40, "y", "z"]}, index=pd.Index([0, 1, 2], name="i"))
    auto = vt.grid_px(df)
    assert auto == vt.column_px("i", [0, 1, 2]) + vt.column_px("a", [1, 22, 333]) + 40 * 7 + 16 + 2
    assert vt.grid_px(df, {"long_text": {"width": 90}}, hide_index=True) == vt.column_px("a", [1]) + 90 + 2
    assert vt.grid_px(df, {"long_text": {"hidden": True}, "_index": {"hidden": True}}) == 50 + 2
    assert vt.column_px("x", width="medium") == 200 and vt.column_px("y" * 200) == vt.MAX_AUTO_PX
    assert vt.cell_text(0.000336, "%.3g") == "0.000336" and vt.cell_text([1536, 384]) == "1536, 384"


# ---------------------------------------------------------------- 1: every column on screen at 1440 px
@pytest.mark.parametrize("page", PAGES)
def test_no_table_on_a_page_is_wider_than_the_page_at_1280_px(app, page):
    """Before: the samples list (1736 px), Compare's two tables (991 and 1465 px), the energy editor
    (1278 px) and the sweep (2607 px) scrolled sideways in a 978-px page (1440-px window). Forty-ninth
    session, a 1280-px window (818 px; 784 in an expander): nine tables of 840–970 px did."""
    _open(app, page)
    for d in app.dataframe:
        assert _width(d) <= vt.PAGE_PX_1280, (page, list(d.value.columns), _width(d))


def test_compare_claims_table_on_its_side_measured_next_to_claimed(app):
    """Forty-ninth session: seven value columns (872 px) cut off the paper's error at a 1280-px
    window; now one row per quantity, one column per plan."""
    _open(app, "pages/4_Compare.py")
    claims = next(d for d in app.dataframe if "quantity" in d.value.columns)
    t = claims.value
    assert list(t.columns) == ["quantity", "Dense", "BlockSparse", "StaticSparse", "AKF"]
    assert list(t["quantity"]) == [title for _, title, _ in vc.CLAIM_ROWS]
    assert _config(claims)["quantity"].get("help")
    assert _width(claims) <= vt.PAGE_PX_1280 - 100                    # the last column well inside
    # the values are the measured and claimed ones, unchanged; "—" where the paper claims nothing
    row = dict(zip(t["quantity"], t["AKF"]))
    assert row["error % — paper"] == "1.8" and row["energy — paper's text"] == "0.8"
    assert dict(zip(t["quantity"], t["BlockSparse"]))["energy — paper's text"] == "—"


def test_compare_measured_columns_on_their_side_and_the_kernel_mix_in_words(app):
    _open(app, "pages/4_Compare.py")
    by_plan = next(d for d in app.dataframe if "measured" in d.value.columns)
    t = by_plan.value
    assert list(t.columns) == ["measured", "Dense", "BlockSparse", "StaticSparse", "AKF"]
    cmp_mod = S.stage("compare")
    assert list(t["measured"]) == [c for c in cmp_mod.COLUMNS if c != "kernel_mix"]
    assert _width(by_plan) <= vt.EXPANDER_PX_1280
    mix = next(m.value for m in app.markdown if m.value.startswith("**kernel_mix**"))
    for plan in ("Dense", "BlockSparse", "StaticSparse", "AKF"):
        assert f"- {plan}: " in mix
    assert "- Dense: DENSE 100 %" in mix


def test_measured_by_plan_keeps_every_value():
    df = pd.DataFrame({"cycles": [938.0, np.nan], "energy_pj": [12765280.0, 6496183.16], "seconds": [9.38e-7, 7.26e-7],
                       "kernel_mix": ["DENSE 100 %", "QUANT8 100 %"]}, index=pd.Index(["Dense", "AKF"], name="plan"))
    t = vc.measured_by_plan(df)
    assert t.to_dict("list") == {"measured": ["cycles", "energy_pj", "seconds"], "Dense": ["938", "12,765,280", "9.38e-07"],
                                 "AKF": ["—", "6,496,183.16", "7.26e-07"]}


def test_kernels_fit_table_fits_its_box(app):
    """Before: five auto-sized columns (357 px) in a 315-px box at 1440 px; max_rel was cut off."""
    _open(app, "pages/2_Kernels.py")
    fit = next(d for d in app.dataframe if "max_rel" in d.value.columns and "variable" in d.value.columns)
    cfg = _config(fit)
    assert all(isinstance(cfg[c].get("width"), int) for c in fit.value.columns)
    rule = _style(app, "kernels_perftable")
    left = int(re.search(r"nth-child\(1\) \{ flex: [\d.]+ 1 (\d+)px", rule).group(1))
    assert _width(fit) <= left, (_width(fit), left)
    assert cfg["max_rel"]["type_config"]["format"] == "%.3g" and cfg["max_rel"].get("help")


def test_design_space_table_is_in_parts_each_led_by_the_swept_settings(app):
    _open(app, "pages/5_Design_space.py", sweep="tile=16,32;beta=0.1,1,10")
    parts = [d for d in app.dataframe if "meaning" not in d.value.columns]
    assert len(parts) >= 4
    for d in parts:
        assert list(d.value.columns[:2]) == ["tile", "beta"] and _width(d) <= vt.PAGE_PX_1280
    shown = set().union(*(d.value.columns for d in parts))
    assert {"kernel_mix", "speedup_vs_staticsparse", "energy_rel_vs_staticsparse", "static_kernel", "wall_s"} <= shown
    first = parts[0].value
    assert "kernel_mix" in first.columns and "cycles" in first.columns          # the results first


def test_table_parts_cut_a_part_that_is_too_wide_and_keep_every_column():
    cols = {f"a_rather_long_column_name_{k}": [1.5] for k in range(8)}
    df = pd.DataFrame({"tile": [16], "rows": [64], **cols, "cycles": [1.0]})
    parts = vd.table_parts(df, ["tile", "rows"], limit_px=500)
    assert parts[0] == ("AKF plan", ["tile", "rows", "cycles"])
    others = [(t, c) for t, c in parts if t.startswith("Other columns")]
    assert len(others) > 1 and others[0][0] == f"Other columns (1/{len(others)})"
    assert [c for _, cs in others for c in cs[2:]] == list(cols)
    for _, c in parts:
        assert c[:2] == ["tile", "rows"] and vt.grid_px(df[c], hide_index=True) <= 500


def test_energy_editor_fits_and_each_row_is_written_out_in_full(app):
    _open(app, "pages/3_NPU.py")
    ed = next(d for d in app.dataframe if "source" in d.value.columns and "grade" in d.value.columns)
    cfg = _config(ed)
    order = list(ed.proto.column_order)
    assert order[:2] == ["action", "value"] and "source" in order and "grade" in order and "node" in order
    assert all(isinstance(cfg[c].get("width"), int) for c in order)
    assert _width(ed) <= vt.EXPANDER_PX_1280
    listing = next(c.value for c in app.caption if c.value.startswith("What each action is"))
    for row in ed.value.itertuples():
        assert f"**{row.action}** ({row.description}): {row.source}" in listing


def test_samples_list_fits_and_names_every_source_and_licence(app):
    _open(app, "app.py")
    listing = S.stage("workloads.samples").list_samples()
    table = next(d for d in app.dataframe if "pruning" in d.value.columns)
    assert list(table.value["name"]) == list(listing["name"]) and _width(table) <= vt.EXPANDER_PX_1280
    assert table.proto.row_height > 64                                   # long titles wrap, not cut
    sources = next(c.value for c in app.caption if c.value.startswith("Sources and licences"))
    for r in listing.itertuples():
        assert f"`{r.name}`" in sources and r.source in sources and r.licence in sources


# ---------------------------------------------------------------- 2: form labels at 800 px
def _min_px(rule: str) -> int:
    return int(re.search(r"minmax\((\d+)px", rule).group(1))


def test_hardware_form_labels_fit_one_line_of_their_box(app):
    """Before: st.columns(5) gave each box 68 px at 800 px; "DRAM bytes / cycle (shared)" took four lines."""
    _open(app, "pages/3_NPU.py")
    box = _min_px(_style(app, "hw_fields"))
    boxes = [n for n in app.number_input if n.proto.form_id == "hw_form"]
    assert [n.label for n in boxes] == [f[0] for f in S.HW_FORM]
    for n in boxes:
        assert len(n.label) * vt.CHAR_PX + 24 <= box, n.label           # 24 px: the tooltip's icon
        assert n.help and "From " in n.help
    assert next(n for n in boxes if n.label == "DRAM (B/cycle)").help.startswith("Bytes per cycle")


@pytest.mark.parametrize("kind", ["llm", "clustered", "stencil5"])
def test_generator_form_titles_are_the_names_and_the_meaning_is_the_tooltip(app, kind):
    """Before: "outlier_frac — fraction of rows and of columns that are outliers" in a 135-px column."""
    app.run()
    app.selectbox(key="gen_kind").set_value(kind).run()
    _ok(app)
    box = _min_px(_style(app, "gen_fields"))
    specs = {s.name: s for s in S.stage("workloads.generators").generator_specs(kind)}
    fields = [w for w in (*app.number_input, *app.text_input, *app.selectbox) if w.proto.form_id == "gen_form"]
    assert {w.label for w in fields} >= set(specs)
    for w in fields:
        assert len(w.label) * vt.CHAR_PX + 24 <= box, w.label
        spec = specs.get(w.label) or S.stage("workloads.generators")._m_spec()
        assert w.help.startswith(spec.help[:1].upper() + spec.help[1:].rstrip(".")) and "Accepted:" in w.help


def test_form_tooltip_says_meaning_then_what_is_accepted():
    spec = next(s for s in S.stage("workloads.generators").generator_specs("uniform") if s.name == "density")
    assert S.form_label(spec) == "density"
    assert S.form_tooltip(spec) == f"Fraction of nonzero entries. {S.form_help(spec)}"


@pytest.mark.parametrize("page", ["app.py", "pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py",
                                  "pages/5_Design_space.py"])
def test_changed_pages_run(app, page):
    _open(app, page)
