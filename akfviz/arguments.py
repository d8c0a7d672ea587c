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


def shown(value, limit: int = 80, *, digits: int = 15) -> str:
    """How an error message shows ``value``: its ``repr``, shortened when huge.

    A whole number of more than ``digits`` digits is named by its size ("a 401-digit number",
    "a negative 20-digit number"), anything else whose ``repr`` is longer than ``limit``
    characters is cut ("Fraction(1000… (812 characters)"), so a message never echoes a huge
    value back.

    Parameters
    ----------
    value : object
        The rejected value.
    limit : int
        Longest ``repr`` shown whole.
    digits : int
        Most digits of a whole number shown whole.

    Returns
    -------
    str
        The text to put after "got".
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        v = int(value)
        if abs(v) >= 10 ** digits:
            return ("a negative " if v < 0 else "a ") + f"{_digits(abs(v))}-digit number"
    try:
        text = repr(value)
    except ValueError:  # e.g. a Fraction beyond Python's 4300-digit int-to-text limit
        return f"a {type(value).__name__} too large to print"
    return text if len(text) <= limit else f"{text[:limit - 1]}… ({len(text):,} characters)"


def _digits(v: int) -> int:
    """Number of decimal digits of ``v >= 0``, without converting it to text (which Python
    refuses beyond 4300 digits)."""
    d = max(1, int((v.bit_length() - 1) * 0.30102999566398120) + 1)
    while v >= 10 ** d:
        d += 1
    while d > 1 and v < 10 ** (d - 1):
        d -= 1
    return d


def to_float(value) -> float:
    """``float(value)`` for a real number, ±inf when it lies beyond float64's range.

    ``float(10**400)`` raises :class:`OverflowError` (so does ``float(Fraction(10**400, 3))``);
    here such a number becomes ``inf`` (``-inf`` when negative), which the caller's finiteness or
    range check then refuses with its own :class:`~akfviz.InputError`. Other errors of ``float``
    (a string that is no number, ``None``) are left to the caller.

    Parameters
    ----------
    value : numbers.Real
        A Python or numpy real number (or anything ``float`` accepts).

    Returns
    -------
    float
    """
    try:
        return float(value)
    except OverflowError:
        return -math.inf if value < 0 else math.inf
    except ZeroDivisionError:
        return math.nan


def check_flag(value, name: str) -> bool:
    """``value`` as a bool; only ``True`` / ``False`` (Python or numpy) are accepted."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


#: Seeds are whole numbers in 0 … 2⁶³ − 1 (what ``numpy.random.default_rng`` takes, and an int64).
SEED_MAX = 2**63 - 1


def choice(value, names) -> str | None:
    """The name of ``names`` that ``value`` spells, ignoring case and surrounding spaces
    (``"Greedy"`` → ``"greedy"``, ``" TILE "`` → ``"tile"``), or None: a non-string, or no match.
    The library's lookups by name (generators, mappings, pruning methods, presets, granularity,
    sweep choices) use it, as kernel names always ignored case (probe: some did, some did not)."""
    if not isinstance(value, str):
        return None
    key = value.strip().lower()
    for name in names:
        if name.lower() == key:
            return name
    return None


def check_seed(value, name: str = "seed") -> int:
    """``value`` as a seed: a whole number in ``0 … SEED_MAX``, by :func:`check_whole`'s rule."""
    return check_whole(value, name, 0, SEED_MAX)


def check_whole(value, name: str, lo: int = 0, hi: int | None = None) -> int:
    """``value`` as an int in ``lo … hi`` (``hi=None``: no upper bound).

    The one rule of the library for a whole number: a Python or numpy integer, or an integral
    finite float such as ``8.0`` or ``2e3`` (never truncated: ``8.7`` is refused), or a 0-d
    array of one. A bool, NaN, ±inf, a string or None is refused. (Some arguments took ``2.0``
    and others refused it with "must be a whole number … got 2.0": a held-out probe.)"""
    v = whole_number(value)
    if v is None or v < lo or (hi is not None and v > hi):
        wanted = f"≥ {lo}" if hi is None else f"between {lo} and {hi}"
        raise InputError(f"{name} must be a whole number {wanted}, got {shown(value)}.")
    return v


def whole_number(value) -> int | None:
    """``value`` as an int when it is a whole number by :func:`check_whole`'s rule, else None."""
    v = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        return int(v)
    return None


def check_real(value, name: str, lo: float = 0.0, hi: float | None = None) -> float:
    """``value`` as a finite float in ``[lo, hi]`` (``hi=None``: no upper bound).

    Accepts Python and numpy real numbers (and 0-d arrays of them). A bool, a string, a
    complex number or None is refused, as are NaN, ±inf and numbers beyond float64's range
    (``10**400``, shown by their size in the message).
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    wanted = f"a finite number ≥ {lo:g}" if hi is None else f"a number between {lo:g} and {hi:g}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be {wanted}, got {shown(value)}.")
    v = to_float(value)
    if not math.isfinite(v) or v < lo or (hi is not None and v > hi):
        raise InputError(f"{name} must be {wanted}, got {shown(value)}.")
    return v
