"""Checks of the scalar arguments the public functions share (akf-spec §9: every rejected input
raises :class:`~akfviz.InputError` with a readable message).

Booleans are refused where a number is meant and numbers where a switch is meant: Python would
take ``alpha=True`` as 1.0 and ``persistent="no"`` as True, silently.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import InputError


def check_flag(value, name: str) -> bool:
    """``value`` as a bool; only ``True`` / ``False`` (Python or numpy) are accepted."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


#: Seeds are whole numbers in 0 … 2⁶³ − 1 (what ``numpy.random.default_rng`` takes, and an int64).
SEED_MAX = 2**63 - 1


def check_seed(value, name: str = "seed") -> int:
    """``value`` as a seed: a Python or numpy integer in ``0 … SEED_MAX`` (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not 0 <= value <= SEED_MAX:
        raise InputError(f"{name} must be a whole number between 0 and {SEED_MAX}, got {value!r}.")
    return int(value)


def check_whole(value, name: str, lo: int = 0, hi: int | None = None, *, floats: bool = False) -> int:
    """``value`` as an int in ``lo … hi`` (``hi=None``: no upper bound): a Python or numpy
    integer (not a bool, a fraction or NaN); with ``floats=True`` also an integral finite float
    such as ``8.0`` (never truncated: ``8.7`` is refused). 0-d arrays are unwrapped."""
    v = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    whole = not isinstance(v, (bool, np.bool_)) and (
        isinstance(v, (int, np.integer))
        or (floats and isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer()))
    if not whole or int(v) < lo or (hi is not None and int(v) > hi):
        wanted = f"≥ {lo}" if hi is None else f"between {lo} and {hi}"
        raise InputError(f"{name} must be a whole number {wanted}, got {value!r}.")
    return int(v)


def check_real(value, name: str, lo: float = 0.0, hi: float | None = None) -> float:
    """``value`` as a finite float in ``[lo, hi]`` (``hi=None``: no upper bound).

    Accepts Python and numpy real numbers (and 0-d arrays of them). A bool, a string, a
    complex number or None is refused, as are NaN and ±inf.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    wanted = f"a finite number ≥ {lo:g}" if hi is None else f"a number between {lo:g} and {hi:g}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be {wanted}, got {value!r}.")
    v = float(value)
    if not math.isfinite(v) or v < lo or (hi is not None and v > hi):
        raise InputError(f"{name} must be {wanted}, got {value!r}.")
    return v
