"""Small tables for display: one object's properties as readable text; how wide a table is drawn."""
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
    """The tile table to download: ``pa.tiles`` led by a ``tile`` column, the tile number (as the
    map's hover, the clusters' ``representative`` and the plan export use it: the row's position),
    with a ``signature_hex`` column beside the ``signature`` integer, written as the page shows it
    (``0x`` and 16 hex digits, one bit per coarse cell, akf-spec §2) — spreadsheets read a
    20-digit integer as a rounded float.

    >>> tiles_export(pd.DataFrame({"bi": [0], "signature": np.array([5], np.uint64)}))["signature_hex"][0]
    '0x0000000000000005'
    """
    out = tiles.copy(deep=False)
    if "tile" not in out.columns:
        out.insert(0, "tile", np.arange(len(out), dtype=np.int64))
    if "signature" in out.columns:
        sig = out["signature"].to_numpy().astype(np.uint64, copy=False)
        hexes = pd.Series([f"0x{v:016x}" for v in sig.tolist()], index=out.index, dtype=object)
        out.insert(out.columns.get_loc("signature") + 1, "signature_hex", hexes)
    return out


# ---------------------------------------------------------------- how wide st.dataframe draws a table
#: Pixels per character of the grid's 14-px Source Sans, rounded up from Chromium's measures
#: (digits and lower case 6.0–6.6 px, capitals up to 8): an estimate, on the wide side.
CHAR_PX = 7.0
#: A cell's padding, 8 px each side; the grid's limits on a column it sizes itself.
CELL_PAD, MIN_COLUMN_PX, MAX_AUTO_PX = 16, 50, 500
#: Streamlit's named column widths.
NAMED_PX = {"small": 75, "medium": 200, "large": 400}
#: Width of the page's main column at a 1440-px window with the sidebar open (measured in
#: Chromium), and inside an expander or a form there: a grid wider than this scrolls sideways.
PAGE_PX_1440, EXPANDER_PX_1440 = 978, 944
#: The same at a 1280-px window (a common laptop), the width the pages' tables are made to fit.
PAGE_PX_1280, EXPANDER_PX_1280 = 818, 784


def cell_text(value, fmt: str | None = None) -> str:
    """``value`` about as the grid writes it: a printf-style ``fmt`` ("%.4g"), ``"localized"``
    (thousands separators), else integers whole and reals to at most 4 decimals.

    >>> cell_text(9160442.96), cell_text(0.37830612), cell_text(12765280.0, "localized"), cell_text(1.2345e-7, "%.3g")
    ('9160442.96', '0.3783', '12,765,280', '1.23e-07')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "✓" if value else ""
    if isinstance(value, (int, float, np.integer, np.floating)):
        v = float(value)
        if fmt == "localized":
            return f"{v:,.0f}" if v.is_integer() else f"{v:,.4f}".rstrip("0").rstrip(".")
        if fmt and "%" in fmt:
            try:
                return fmt % v
            except (TypeError, ValueError):
                pass
        if isinstance(value, (int, np.integer)) or v.is_integer():
            return str(int(v)) if math.isfinite(v) else str(v)
        return f"{v:.4f}".rstrip("0").rstrip(".") if abs(v) >= 1e-4 else f"{v:.4g}"
    if isinstance(value, (list, tuple, np.ndarray)):
        return ", ".join(cell_text(v) for v in value)
    return str(value)


def column_px(label: str, values=(), width=None, fmt: str | None = None) -> int:
    """Estimated drawn width of one grid column: ``width`` when set (pixels or a Streamlit name),
    else as the grid sizes it, to its longest text (the header included) plus padding."""
    if isinstance(width, str):
        return NAMED_PX[width]
    if width:
        return int(width)
    longest = max([len(str(label))] + [len(cell_text(v, fmt)) for v in values])
    return int(min(max(math.ceil(longest * CHAR_PX) + CELL_PAD, MIN_COLUMN_PX), MAX_AUTO_PX))


def grid_px(frame: pd.DataFrame, columns: dict | None = None, hide_index: bool = False,
            column_order=None) -> int:
    """Estimated width of ``st.dataframe(frame, column_config=columns, hide_index=...)``, borders
    included: compare it with :data:`PAGE_PX_1440` to know whether every column shows without
    sideways scrolling. ``columns`` maps a column name (``"_index"`` for the index) to its
    settings, as ``st.column_config`` makes them or as the page's message carries them
    (``label``, ``width``, ``hidden``, ``type_config.format``)."""
    columns = columns or {}

    def one(name, label, values):
        cfg = columns.get(name) or {}
        if isinstance(cfg, str):                 # st.dataframe also takes a bare label
            cfg = {"label": cfg}
        if cfg.get("hidden"):
            return 0
        fmt = (cfg.get("type_config") or {}).get("format")
        return column_px(cfg.get("label") or label, values, cfg.get("width"), fmt)

    names = list(frame.columns) if column_order is None else [c for c in column_order if c in frame.columns]
    total = sum(one(c, str(c), frame[c].tolist()) for c in names)
    if not hide_index:
        idx_label = frame.index.name or ""
        total += one("_index", idx_label, frame.index.tolist())
    return total + 2
