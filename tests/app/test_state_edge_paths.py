"""Edge paths of the page shell (akfviz/app_shell.py) that the page tests did not reach: the run
bundle's matrix fingerprint check, and the link written by a page that stops early after a
setting changed (mutation probe: each could be broken with every app test passing)."""
import json

from streamlit.testing.v1 import AppTest

from akfviz import app_state as S

from conftest import APP

FINGERPRINT = "matrix fingerprint differs"


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _load_bundle(at, state: dict, workload: dict | None = None):
    text = json.dumps({"format": S.BUNDLE_FORMAT, "version": S.BUNDLE_VERSION, "state": state,
                       "workload": workload or {}})
    at.sidebar.file_uploader(key="bundle_upload").set_value(("run.json", text.encode(), "application/json")).run()
    return at


def test_the_fingerprint_warning_appears_only_for_another_matrix():
    """The warning that the bundle was made from another matrix: absent when its sha256 is the
    current matrix's, present when it is not."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    digest = at.session_state["_akf_workload"].digest
    _load_bundle(at, {"tile": 16}, {"sha256": digest})    # the matrix the bundle was made from
    _ok(at)
    assert any("Bundle settings applied" in s.value for s in at.success)
    assert not any(FINGERPRINT in w.value for w in at.warning), [w.value for w in at.warning]

    _load_bundle(at, {"tile": 24}, {"sha256": "ab" * 32})      # a bundle made from another matrix
    _ok(at)
    assert at.sidebar.slider(key="w:tile").value == 24
    assert any(FINGERPRINT in w.value for w in at.warning)


def test_a_page_that_stops_early_still_writes_its_settings_into_the_link():
    """A workload that fails stops the page before page_end(); the link must still hold what the
    user just set, so it reproduces the view (here a tile size chosen beside the error). The link
    test in test_app_pages only reopens an unchanged link, which stays right without any sync."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params.update({"src": "gen", "gen": "banded", "g_n": "abc"})
    at.run()
    assert not at.exception
    assert any("abc" in e.value for e in at.error), [e.value for e in at.error]
    at.sidebar.slider(key="w:tile").set_value(16).run()
    assert not at.exception
    assert at.error                                      # the page still stops at the workload
    q = dict(at.query_params)
    assert (q.get("tile"), q.get("src"), q.get("gen"), q.get("g_n")) == ("16", "gen", "banded", "abc")
