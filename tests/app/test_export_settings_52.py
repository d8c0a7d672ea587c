"""Exports name what made them (export audit, fifty-second session): apart from the NPU page's
Simulation JSON and the run bundle, no download recorded the settings behind it — the Compare table,
the Kernels plan, the Patterns tiles carried no preset, T, α, β, LSH or matrix. Now every table
export's Parquet keeps the settings, workload and model code in its metadata, every table file
name ends in the settings' stamp that the bundle records, and a sweep also exports as JSON with
the hardware, LSH and matrix digest that rerun it; a loaded sweep file says what it records."""
import io
import json
import re

import pandas as pd
import pytest
import streamlit.testing.v1.app_test as app_test_module
from streamlit.testing.v1 import AppTest

from akfviz import app_state as S
from akfviz.dse.sweep import run_sweep
from akfviz.viz import dse as vd

from apptest_tree import open_page
from conftest import APP
from test_run_bundle import _RecordingManager


@pytest.fixture
def recording_app(monkeypatch):
    monkeypatch.setattr(app_test_module, "MediaFileManager", _RecordingManager)
    _RecordingManager.made = []
    return AppTest.from_file(APP, default_timeout=600)


def _button(at, label):
    [button] = [b for b in at.get("download_button") if b.proto.label == label]
    return button


def _file_name(at, label) -> str:
    mgr = _RecordingManager.made[-1]
    return mgr._deferred_callables[_button(at, label).proto.deferred_file_id]["filename"]


def _data(at, label) -> bytes:
    mgr = _RecordingManager.made[-1]
    data = mgr._deferred_callables[_button(at, label).proto.deferred_file_id]["callable"]()
    return data.encode() if isinstance(data, str) else data


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_a_table_export_records_its_settings_and_the_bundle_links_them(recording_app):
    at = open_page(recording_app, "pages/2_Kernels.py", sample="minilm_attnq0_mag90", alpha="10", tile="16")
    _ok(at)
    meta = pd.read_parquet(io.BytesIO(_data(at, "Plan (Parquet)"))).attrs["akfviz_settings"]
    assert meta["workload"]["label"] == "minilm_attnq0_mag90"
    assert meta["workload"]["shape"] == [384, 384]
    assert meta["state"]["alpha"] == 10 and meta["state"]["tile"] == 16
    assert meta["state"]["preset"] == "horowitz-45nm"
    assert re.fullmatch(r"[0-9a-f]{16}", meta["model_source"])
    bundle = json.loads(_data(at, "Download run bundle (JSON)"))
    assert bundle["settings_sha256"] == meta["settings_sha256"]
    assert bundle["model_source"] == meta["model_source"]
    assert meta["workload"]["sha256"] == bundle["workload"]["sha256"]
    tag = meta["settings_sha256"][:8]
    for label in ("Plan (CSV)", "Plan (Parquet)"):
        assert _file_name(at, label).endswith(f"-{tag}.{label[6:-1].lower()}"), label
    # the CSV is the table alone, as before
    csv = pd.read_csv(io.BytesIO(_data(at, "Plan (CSV)")))
    assert list(csv.columns)[:3] == ["tile", "bi", "bj"]


def test_another_setting_names_another_file(recording_app):
    at = recording_app
    at.run()
    at.switch_page("pages/4_Compare.py").run()
    _ok(at)
    first = _file_name(at, "Comparison (CSV)")
    at.switch_page("pages/2_Kernels.py").run()
    at.select_slider(key="w:beta").set_value(0.1).run()
    at.switch_page("pages/4_Compare.py").run()
    _ok(at)
    second = _file_name(at, "Comparison (CSV)")
    assert first.startswith("akfviz-compare-") and second.startswith("akfviz-compare-")
    assert first != second


def test_the_sweep_json_reruns_the_sweep(recording_app):
    at = open_page(recording_app, "pages/5_Design_space.py", sample="minilm_attnq0_mag90", sweep="beta=0.1,10")
    _ok(at)
    doc = json.loads(_data(at, "Sweep (JSON)"))
    meta = doc["attrs"]["akfviz_sweep"]
    settings = doc["attrs"]["akfviz_settings"]
    assert meta["matrix_sha256"] == settings["workload"]["sha256"]
    assert meta["hardware"]["preset"] == "horowitz-45nm"
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.workloads.samples import load_sample
    A = load_sample("minilm_attnq0_mag90")
    again = run_sweep(A, meta["grid"], base=meta["base"], hw=HardwareConfig.from_plain(meta["hardware"]),
                      lsh=meta["lsh"], seed=meta["seed"], baselines=meta["baselines"],
                      static_kernel=meta["static_kernel"])
    rows = pd.DataFrame.from_dict(doc["rows"], orient="index")
    for col in ("cycles", "energy_pj", "error_pct", "speedup"):
        assert list(again[col]) == list(rows[col]), col


def test_a_loaded_sweep_says_what_it_records(recording_app):
    at = open_page(recording_app, "pages/5_Design_space.py", sample="minilm_attnq0_mag90", sweep="beta=0.1,10")
    parquet = _data(at, "Sweep (Parquet)")
    csv = _data(at, "Sweep (CSV)")
    at.file_uploader(key="sweep_upload").set_value(("s.parquet", parquet, "application/octet-stream")).run()
    _ok(at)
    said = " ".join(c.value for c in at.caption)
    assert "Recorded in the file: matrix 384×384" in said and "the current workload" in said
    assert "not the current workload" not in said and "LSH 32 hashes" in said
    at.file_uploader(key="sweep_upload").set_value(("s.csv", csv, "text/csv")).run()
    _ok(at)
    said = " ".join(c.value for c in at.caption)
    assert "This file records no settings" in said


def test_recorded_settings_of_an_older_file_say_what_is_missing():
    text = vd.recorded_settings({"akfviz_sweep": {"grid": {"beta": [1]}, "base": {"tile": 32, "beta": 1},
                                                  "seed": 0, "shape": [4, 5], "nnz": 3}}, "ab")
    assert "matrix 4×5, 3 nonzeros" in text and "T = 32" in text and "β" not in text
    assert "Not recorded: the hardware, the LSH settings, the matrix's sha256 (an older or edited file)" in text


def test_recorded_settings_read_any_metadata_without_an_error():
    odd = [{"akfviz_sweep": {"shape": ["a", "b"], "nnz": "x", "base": {"tile": "9" * 500}, "grid": 3,
                             "hardware": {"preset": "p" * 300, "rows": [1]}, "lsh": "no", "seed": {"a": 1},
                             "baselines": "yes", "matrix_sha256": 7}},
           {"akfviz_sweep": {}}, {"akfviz_sweep": 5}, None, "text"]
    for attrs in odd:
        text = vd.recorded_settings(attrs, "ab")
        assert text and len(text) < 1000


def test_a_generated_workload_records_the_parameters_it_ran_with(recording_app):
    at = recording_app
    at.query_params.update({"src": "gen", "gen": "uniform"})
    at.run()
    _ok(at)
    bundle = json.loads(_data(at, "Download run bundle (JSON)"))
    made = bundle["workload"]["generator"]
    assert made["kind"] == "uniform"
    assert isinstance(made["params"]["n"], int) and made["params"]["seed"] == 0   # defaults, typed
    assert bundle["seeds"]["generator_seed"] == 0          # was null: the default seed was not recorded
    import akfviz
    from akfviz.workloads.validate import matrix_sha256
    assert matrix_sha256(akfviz.generate("uniform", **made["params"])) == bundle["workload"]["sha256"]


def test_the_simulation_json_names_its_settings_and_matrix(recording_app):
    at = open_page(recording_app, "pages/3_NPU.py", sample="minilm_attnq0_mag90", xdens="0.5")
    _ok(at)
    doc = json.loads(_data(at, "Simulation (JSON)"))
    settings = doc["akfviz_settings"]
    assert settings["workload"]["label"] == "minilm_attnq0_mag90"
    assert settings["state"]["xdens"] == 0.5
    assert "cycles" in doc and "energy_pj" in json.dumps(doc)      # the simulation itself is still there
    assert _file_name(at, "Simulation (JSON)") == f"akfviz-simulation-{settings['settings_sha256'][:8]}.json"
