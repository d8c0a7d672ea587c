"""Findings of the fiftieth session's determinism probe: the app's sweep export carried the wall
time of each point, so the same sweep downloaded twice gave different bytes (the CLI drops it)."""
import pytest

from akfviz import app_state as S
from akfviz.cli import WALL_CLOCK_COLUMNS

from apptest_tree import ok, open_page


@pytest.fixture
def exports(monkeypatch):
    """label -> the DataFrame the page's CSV / Parquet buttons would write."""
    got = {}
    real = S.export_buttons

    def capture(label, frame_fn, *args, **kwargs):
        got[label] = frame_fn
        return real(label, frame_fn, *args, **kwargs)

    monkeypatch.setattr(S, "export_buttons", capture)
    return got


def test_sweep_export_leaves_out_the_wall_time_and_gives_the_same_bytes(app, exports):
    open_page(app, "pages/5_Design_space.py")
    ok(app)
    shown = next(d.value for d in app.dataframe if "wall_s" in d.value.columns)   # still shown, as measured
    assert (shown["wall_s"] > 0).all()
    first = exports["Sweep"]()
    assert not set(WALL_CLOCK_COLUMNS) & set(first.columns)
    assert {"cycles", "energy_pj", "error_pct", "speedup"} <= set(first.columns)
    csv = S.frame_bytes(first, "csv")
    # the same sweep computed again (a fresh run of the page, its caches cleared): the same bytes
    import streamlit as st
    st.cache_data.clear()
    from streamlit.testing.v1 import AppTest
    again = AppTest.from_file(app._script_path, default_timeout=600)
    open_page(again, "pages/5_Design_space.py")
    ok(again)
    assert S.frame_bytes(exports["Sweep"](), "csv") == csv
    assert any("not the wall time" in c.value for c in again.caption)
