"""Plain JSON-able values from results that hold numpy scalars and arrays (one rule for the CLI's
JSON and the app's run bundles and downloads)."""
from __future__ import annotations

import math

import numpy as np


def to_plain(obj):
    """``obj`` as JSON-able Python values.

    Dicts (keys as text), lists, tuples and numpy arrays element by element; numpy scalars as
    Python numbers; NaN and ±inf as None (JSON has no such numbers); str, int, bool and None as
    they are; anything else as its text.

    >>> to_plain({"a": np.float64("nan"), 1: (np.int64(2), np.array([0.5]))})
    {'a': None, '1': [2, [0.5]]}
    """
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return str(obj)
