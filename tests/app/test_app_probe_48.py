"""Findings of the forty-eighth session's app probe (docs/decisions.md, "Forty-eighth session"):
a file left in the uploader took the workload back from every other choice, a bundle loaded again
did nothing, the NPU page's zoom choice was lost on a page switch, a chart without its caption,
"1 configurations", and a bundle with a byte-order mark refused."""
import io

import numpy as np
import pytest

from akfviz import app_state as S


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _rows(at):
    return {m.label: m.value for m in at.metric}["rows"]


def _eye5():
    buf = io.BytesIO()
    np.save(buf, np.eye(5))
    return buf.getvalue()


def _upload_eye(at):
    at.file_uploader(key="matrix_upload").set_value(("e.npy", _eye5(), "application/octet-stream")).run()
    _ok(at)
    assert _rows(at) == "5" and at.session_state["src"] == "upload"


def _sidebar_back(at):
    next(b for b in at.sidebar.button if b.label == "Back to the default sample").click().run()


def _use_sample(at):
    at.selectbox(key="matrix_sample_pick").set_value("banded_2048").run()
    at.button(key="use_sample").click().run()


@pytest.mark.parametrize("switch, rows", [(_sidebar_back, "1,536"), (_use_sample, "2,048")])
def test_a_file_left_in_the_uploader_does_not_take_the_workload_back(app, switch, rows):
    app.run()
    _upload_eye(app)
    switch(app)
    _ok(app)
    assert app.session_state["src"] == "sample"
    assert _rows(app) == rows
    app.run()                                     # and it stays so on the next rerun
    assert app.session_state["src"] == "sample" and _rows(app) == rows
    assert any("is still in the box above" in c.value for c in app.caption)
    # the file can be made the workload again with one click
    app.button(key="reuse_upload").click().run()
    _ok(app)
    assert app.session_state["src"] == "upload" and _rows(app) == "5"


def test_a_generated_matrix_replaces_an_upload_still_in_the_box(app):
    app.run()
    _upload_eye(app)
    app.selectbox(key="gen_kind").set_value("stencil5").run()
    next(b for b in app.button if b.label == "Generate").click().run()
    _ok(app)
    assert app.session_state["src"] == "gen"
    assert _rows(app) != "5"


def test_a_new_upload_still_becomes_the_workload(app):
    app.run()
    _upload_eye(app)
    _sidebar_back(app)
    buf = io.BytesIO()
    np.save(buf, np.eye(7))
    app.file_uploader(key="matrix_upload").set_value(("e7.npy", buf.getvalue(), "application/octet-stream")).run()
    _ok(app)
    assert app.session_state["src"] == "upload" and _rows(app) == "7"


def _bundle(tile):
    values = {k: f.default for k, f in S.FIELDS.items()}
    values["tile"] = tile
    return S.make_bundle(values, {}, {}).encode()


def test_loading_the_same_bundle_again_restores_its_settings(app):
    text = _bundle(48)
    app.run()
    upload = app.sidebar.file_uploader(key="bundle_upload")
    upload.set_value(("run.json", text, "application/json")).run()
    assert app.slider(key="w:tile").value == 48
    app.slider(key="w:tile").set_value(16).run()
    assert app.slider(key="w:tile").value == 16
    app.sidebar.file_uploader(key="bundle_upload").set_value(None).run()
    app.sidebar.file_uploader(key="bundle_upload").set_value(("run.json", text, "application/json")).run()
    _ok(app)
    assert app.slider(key="w:tile").value == 48
    # while the same upload stays in the box, later changes are kept (it is applied once per upload)
    app.slider(key="w:tile").set_value(24).run()
    app.run()
    assert app.slider(key="w:tile").value == 24


def test_a_bundle_with_a_byte_order_mark_loads(app):
    app.run()
    app.sidebar.file_uploader(key="bundle_upload").set_value(
        ("run.json", b"\xef\xbb\xbf" + _bundle(48), "application/json")).run()
    _ok(app)
    assert app.slider(key="w:tile").value == 48
    assert S.parse_bundle("\ufeff" + _bundle(40).decode())["state"]["tile"] == 40


def test_the_npu_zoom_choice_survives_a_visit_to_another_page(app):
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    first = app.toggle(key="util_zoom").value
    app.toggle(key="util_zoom").set_value(not first).run()
    app.switch_page("pages/4_Compare.py").run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    assert app.toggle(key="util_zoom").value == (not first)
    assert not app.warning or all("default value" not in w.value for w in app.warning)


def test_every_patterns_chart_has_its_caption(app):
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    _ok(app)
    charts = len(app.get("plotly_chart"))
    how = sum(c.value.startswith("How to read this") for c in app.caption)
    assert charts == how == 6


def test_one_configuration_is_singular(app):
    app.query_params["sweep"] = "tile=16"
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    _ok(app)
    assert [h.value for h in app.header][0].startswith("1 configuration (")
