import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture
def app():
    """A fresh AppTest of the whole app (navigation + sidebar + the default page)."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=600)


@pytest.fixture
def session(monkeypatch):
    """app_state's st.session_state as a plain dict (its functions use nothing else of st)."""
    import types

    from akfviz import app_state as S

    ss = {}
    monkeypatch.setattr(S, "st", types.SimpleNamespace(session_state=ss))
    return ss
