"""Helpers shared by AppTest files: walk the element tree to a keyed container; decode a chart's arrays;
check a run; open a page."""
import base64

import numpy as np


def block(app, key):
    """The container with ``key`` (its Streamlit id ends with the key), or None."""
    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None and getattr(proto, "id", "").endswith("-" + key):
            return node
        for child in (node.children.values() if isinstance(getattr(node, "children", None), dict) else ()):
            found = walk(child)
            if found is not None:
                return found
        return None
    return walk(app.main)


def typed_array(value) -> np.ndarray:
    """A figure array as the browser gets it: plotly writes numeric arrays as typed arrays
    (``{"bdata": base64, "dtype": …, "shape": "r, c"}``), short lists as they are."""
    if not isinstance(value, dict):
        return np.asarray(value)
    arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return arr.reshape([int(k) for k in str(value["shape"]).split(",")]) if "shape" in value else arr


def ok(at):
    """No exception and no error shown in the last run of ``at``."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def open_page(app, page, **query):
    """Run ``app`` with ``query`` in its URL, then switch to ``page`` (a path such as
    ``pages/4_Compare.py``; ``app.py`` stays on the Matrix page)."""
    app.query_params.update(query)
    app.run()
    if page != "app.py":
        app.switch_page(page).run()
    return app


def sweep_table(at):
    """The Design space page's sweep as it shows it (in tabs of a few columns, each led by the swept
    ones), put back together."""
    import pandas as pd

    parts = [d.value for d in at.dataframe if "meaning" not in d.value.columns]   # not the parameter list
    assert any("cycles" in p.columns for p in parts)
    whole = pd.concat(parts, axis=1)
    return whole.loc[:, ~whole.columns.duplicated()]
