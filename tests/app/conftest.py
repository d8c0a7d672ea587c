import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture
def app():
    """A fresh AppTest of the whole app (navigation + sidebar + the default page)."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=600)
