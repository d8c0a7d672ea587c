"""The run bundle says the truth: only results computed for the current settings, and the NPU
page's edited energy table, which a loaded bundle brings back (held-out export probe)."""
import json

import pytest
import streamlit.testing.v1.app_test as app_test_module
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from akfviz import app_state as S
from akfviz.npu.energy import EnergyTable

from conftest import APP

BUNDLE = "Download run bundle (JSON)"


class _RecordingManager(MediaFileManager):
    """Keeps the AppTest's media file manager: a deferred download's data function is
    registered there (the browser fetches it; AppTest has no other way to reach it)."""
    made: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _RecordingManager.made.append(self)


@pytest.fixture
def recording_app(monkeypatch):
    monkeypatch.setattr(app_test_module, "MediaFileManager", _RecordingManager)
    _RecordingManager.made = []
    return AppTest.from_file(APP, default_timeout=600)


def download(at, label: str) -> str:
    mgr = _RecordingManager.made[-1]
    [button] = [b for b in at.get("download_button") if b.proto.label == label]
    data = mgr._deferred_callables[button.proto.deferred_file_id]["callable"]()
    return data.decode() if isinstance(data, bytes) else data


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_bundle_leaves_out_results_of_another_matrix(recording_app):
    at = recording_app
    at.query_params["sample"] = "minilm_attnq0_mag90"
    at.run()
    at.switch_page("pages/3_NPU.py").run()
    _ok(at)
    first = json.loads(download(at, BUNDLE))
    assert first["results"]["npu"]["macs"] == first["workload"]["nnz"]
    at.switch_page("app.py").run()
    [pick] = [s for s in at.selectbox if s.label == "Sample workload"]
    pick.set_value("banded_2048").run()
    at.switch_page("pages/1_Patterns.py").run()
    _ok(at)
    doc = json.loads(download(at, BUNDLE))
    assert doc["state"]["sample"] == "banded_2048"
    assert doc["results"]["matrix"]["nnz"] == doc["workload"]["nnz"] != first["workload"]["nnz"]
    assert "patterns" in doc["results"]
    assert "npu" not in doc["results"]           # computed for the MiniLM matrix, not this one
    assert doc["energy_table"] is None


def test_bundle_carries_the_edited_energy_table_and_brings_it_back(recording_app):
    at = recording_app
    at.query_params["hw_rows"] = "64"
    at.query_params["hw_cols"] = "64"
    at.run()
    table = EnergyTable.preset("horowitz-45nm").replace(dram=100.0).replace(name="custom")
    at.session_state["_akf_energy_override"] = table
    at.switch_page("pages/4_Compare.py").run()
    _ok(at)
    akf = at.session_state[S.RESULTS]["compare"][1]["AKF"]["energy_pj"]
    doc = json.loads(download(at, BUNDLE))
    assert doc["results"]["compare"]["AKF"]["energy_pj"] == akf
    assert doc["energy_table"]["dram"]["value"] == 100.0
    parsed = S.parse_bundle(json.dumps(doc))
    assert parsed["energy_table"] == table

    fresh = AppTest.from_file(APP, default_timeout=600)
    fresh.run()
    fresh.sidebar.file_uploader(key="bundle_upload").set_value(
        ("run.json", json.dumps(doc).encode(), "application/json")).run()
    _ok(fresh)
    assert fresh.session_state["_akf_energy_override"] == table
    fresh.switch_page("pages/4_Compare.py").run()
    _ok(fresh)
    assert fresh.session_state[S.RESULTS]["compare"][1]["AKF"]["energy_pj"] == akf   # the bundle reproduces it


def test_bundle_with_a_bad_energy_table_is_refused():
    vals = {k: f.default for k, f in S.FIELDS.items()}
    doc = json.loads(S.make_bundle(vals, {}, {}, EnergyTable.preset("horowitz-45nm").to_plain()))
    assert S.parse_bundle(json.dumps(doc))["energy_table"] == EnergyTable.preset("horowitz-45nm")
    del doc["energy_table"]["dram"]
    with pytest.raises(S.InputError, match="energy table is not accepted.*dram"):
        S.parse_bundle(json.dumps(doc))
    doc["energy_table"] = [1, 2]
    with pytest.raises(S.InputError, match="energy table is not accepted"):
        S.parse_bundle(json.dumps(doc))


def test_an_edited_energy_table_is_dropped_when_the_preset_changes():
    """Review: after switching presets, the previous preset's whole edited table stayed in use (its
    other entries were the old preset's numbers) while the sidebar named the new preset."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.session_state["_akf_energy_override"] = EnergyTable.preset("horowitz-45nm").replace(dram=100.0)
    at.switch_page("pages/3_NPU.py").run()
    _ok(at)
    assert any("edited energy table" in c.value for c in at.sidebar.caption)
    at.sidebar.selectbox(key="w:preset").set_value("loihi-like").run()
    _ok(at)
    assert "_akf_energy_override" not in at.session_state
    assert any("no longer applies" in i.value for i in at.sidebar.info)
    assert not any("edited energy table" in c.value for c in at.sidebar.caption)
    summary = at.session_state[S.RESULTS]["npu"][1]
    at2 = AppTest.from_file(APP, default_timeout=600)
    at2.query_params["preset"] = "loihi-like"
    at2.run()
    at2.switch_page("pages/3_NPU.py").run()
    assert at2.session_state[S.RESULTS]["npu"][1]["energy_total_pj"] == summary["energy_total_pj"]


def test_display_only_settings_keep_earlier_results_in_the_bundle(recording_app):
    """Review: the NPU page sets the timeline's PE row after recording its result, and the stamp
    counted it, so the next run's bundle lost every result recorded before (matrix, patterns)."""
    at = recording_app
    at.run()
    at.switch_page("pages/1_Patterns.py").run()
    at.number_input(key="w:tsel").set_value(3).run()         # a display-only change
    at.switch_page("pages/3_NPU.py").run()
    at.run()
    _ok(at)
    doc = json.loads(download(at, BUNDLE))
    assert {"matrix", "patterns", "npu"} <= set(doc["results"])


def test_results_of_another_activation_density_are_left_out(recording_app):
    """The selection, the simulation and the comparison depend on ρ_x: after it changes on the NPU
    page, the Compare result computed at the old ρ_x is not the current one (mutation probe)."""
    at = recording_app
    at.run()
    at.switch_page("pages/4_Compare.py").run()
    _ok(at)
    assert "compare" in json.loads(download(at, BUNDLE))["results"]
    at.switch_page("pages/3_NPU.py").run()
    at.slider(key="w:xdens").set_value(0.5).run()
    _ok(at)
    doc = json.loads(download(at, BUNDLE))
    assert doc["state"]["xdens"] == 0.5
    assert "npu" in doc["results"] and "compare" not in doc["results"]
