"""Small tables for display: one object's properties as readable text."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd


def readable(value, name: str = "") -> str:
    """``value`` as a short string: integers as they are, reals to 4 significant digits,
    the 64-bit occupancy ``signature`` in hex (one bit per coarse cell, akf-spec §2), NaN as n/a.

    >>> readable(0.11460658482142858), readable(np.int64(127)), readable(np.uint64(5), "signature")
    ('0.1146', '127', '0x0000000000000005')
    """
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        if name == "signature":
            return f"0x{int(value) & 0xFFFF_FFFF_FFFF_FFFF:016x}"
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return "n/a" if math.isnan(v) else f"{v:.4g}"
    return str(value)


def property_table(frame: pd.DataFrame, pos: int, key: str, by_label: bool = False) -> pd.DataFrame:
    """Row ``pos`` of ``frame`` (a label with ``by_label``) turned on its side: one line per column,
    ``key`` naming the first column ("feature", "property"), values as :func:`readable` text."""
    # column by column: a whole row of mixed dtypes would be cast to float64 (a uint64
    # signature would lose its low bits)
    vals = [frame[c].loc[pos] if by_label else frame[c].iat[pos] for c in frame.columns]
    return pd.DataFrame({key: list(frame.columns), "value": [readable(v, c) for v, c in zip(vals, frame.columns)]})


def tiles_export(tiles: pd.DataFrame) -> pd.DataFrame:
    """The tile table to download: ``pa.tiles`` with a ``signature_hex`` column beside the
    ``signature`` integer, written as the page shows it (``0x`` and 16 hex digits, one bit per
    coarse cell, akf-spec §2) — spreadsheets read a 20-digit integer as a rounded float.

    >>> tiles_export(pd.DataFrame({"bi": [0], "signature": np.array([5], np.uint64)}))["signature_hex"][0]
    '0x0000000000000005'
    """
    out = tiles.copy(deep=False)
    if "signature" in out.columns:
        sig = out["signature"].to_numpy().astype(np.uint64, copy=False)
        hexes = pd.Series([f"0x{v:016x}" for v in sig.tolist()], index=out.index, dtype=object)
        out.insert(out.columns.get_loc("signature") + 1, "signature_hex", hexes)
    return out
