"""Shared figure layout: margins, fonts and the grid helper used by every map."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

GRID = "#e6eaf0"
ZERO = "#c9d0da"
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=12, color="#444")
_PLASMA = [[0.0, "#0d0887"], [0.111, "#46039f"], [0.222, "#7201a8"], [0.333, "#9c179e"],
           [0.444, "#bd3786"], [0.556, "#d8576b"], [0.667, "#ed7953"], [0.778, "#fb9f3a"],
           [0.889, "#fdca26"], [1.0, "#f0f921"]]
#: Left padding of every figure title (px): it sat flush against the white panel's edge.
TITLE_PAD = 8
#: Smallest text drawn on or beside bars (px): plotly shrinks bar text to fit a narrow bar
#: (down to about 5 px on a 900-px window) unless a minimum is set.
BAR_TEXT = 12
_AXIS = dict(ticks="", title=dict(standoff=15), automargin=True, zerolinewidth=2)
_COLORBAR = dict(outlinewidth=0, ticks="")
#: The few defaults of plotly's own "plotly" template that the figures rely on. Without a
#: template of their own, every figure carries the full "plotly" template (≈ 7 kB), and
#: ``st.plotly_chart`` re-validates it on every rerun: 25.6 ms per figure against 1.2 ms
#: (measured, a 20-bar chart), i.e. most of a cached slider re-render on a page of six charts.
TEMPLATE = go.layout.Template(
    layout=dict(colorway=["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3",
                          "#FF6692", "#B6E880", "#FF97FF", "#FECB52"],
                hovermode="closest", hoverlabel=dict(align="left"), autotypenumbers="strict",
                coloraxis=dict(colorbar=_COLORBAR), colorscale=dict(sequential=_PLASMA),
                xaxis=_AXIS, yaxis=_AXIS),
    data=dict(heatmap=[go.Heatmap(colorbar=_COLORBAR, colorscale=_PLASMA)],
              bar=[go.Bar(marker=dict(line=dict(color="white", width=0.5)))]),
)


def styled(fig: go.Figure, title: str | None = None, height: int = 380, **layout) -> go.Figure:
    """Apply the common look (a small template, compact margins, readable fonts).

    The title sits a few pixels in from the panel's left edge (flush against it, it read as cut
    off), and every ``<br>`` in it gets 18 px more of top margin (a title wrapped by hand for a
    narrow page must not run into the plot)."""
    lines = 1 + (title or "").count("<br>")
    layout.setdefault("margin", dict(l=60, r=20, t=(32 + 18 * lines) if title else 20, b=50))
    fig.update_layout(template=TEMPLATE)
    fig.update_xaxes(gridcolor=GRID, zerolinecolor=ZERO, linecolor=ZERO)
    fig.update_yaxes(gridcolor=GRID, zerolinecolor=ZERO, linecolor=ZERO)
    fig.update_layout(
        paper_bgcolor="white", plot_bgcolor="white", font=FONT, height=height,
        # from the top edge down (not centred in the top margin): a figure's legend or notes can
        # then sit at a known distance under it
        title=dict(text=title, x=0.0, xanchor="left", y=1.0, yref="container", yanchor="top",
                   pad=dict(l=TITLE_PAD, t=12), font=dict(size=14)) if title else None,
        **layout,
    )
    return fig


def coarse_grid(rows, cols, values, shape, cap: int = 512, how: str = "mean",
                fill=np.nan) -> tuple[np.ndarray, int, int]:
    """Scatter per-cell values into a dense grid of at most ``cap × cap`` bins.

    Parameters
    ----------
    rows, cols : int arrays
        Cell coordinates (e.g. tile ``bi, bj``).
    values : float array
        Value of each cell.
    shape : (int, int)
        Full grid shape.
    cap : int
        Maximum number of bins per axis; when the grid is larger, ``s = ceil(n / cap)``
        cells are aggregated into one bin.
    how : {"mean", "max", "first", "sum"}
        Aggregation inside a bin ("mean" counts absent cells as 0, i.e. it is the mean
        over the whole bin area).
    fill : float
        Value of bins with no cell.

    Returns
    -------
    grid : float64 array (ceil(n_r/s_r), ceil(n_c/s_c)), s_r, s_c
    """
    nr, nc = int(shape[0]), int(shape[1])
    sr = max(1, -(-nr // cap))
    sc = max(1, -(-nc // cap))
    gr, gc = -(-nr // sr), -(-nc // sc)
    rows = np.asarray(rows, np.int64) // sr
    cols = np.asarray(cols, np.int64) // sc
    values = np.asarray(values, np.float64)
    flat = rows * gc + cols
    if how == "sum" or how == "mean":
        acc = np.bincount(flat, weights=values, minlength=gr * gc)
        cnt = np.bincount(flat, minlength=gr * gc)
        grid = acc / (sr * sc) if how == "mean" else acc
        grid = np.where(cnt > 0, grid, fill)
    elif how == "max":
        grid = np.full(gr * gc, -np.inf)
        np.maximum.at(grid, flat, values)
        grid[np.isneginf(grid)] = fill
    elif how == "first":
        grid = np.full(gr * gc, fill, dtype=np.float64)
        order = np.argsort(flat, kind="stable")[::-1]      # last write wins -> first cell
        grid[flat[order]] = values[order]
    else:
        raise ValueError(f"unknown aggregation {how!r}")
    return grid.reshape(gr, gc), sr, sc


def aggregation_note(sr: int, sc: int, what: str) -> str:
    """Title suffix of a grid whose cells each stand for ``sr × sc`` cells of the full grid
    ("" when exact); ``what`` says what a cell's colour shows then."""
    return "" if sr == 1 and sc == 1 else f" (each cell: {sr}×{sc} tiles, {what})"


def occupancy(rows, cols, shape, cap: int, sr: int, sc: int) -> tuple[np.ndarray | None, str]:
    """Nonempty tiles per cell of a map aggregated by :func:`coarse_grid`, as an integer grid to
    pass as a heatmap's ``text`` (typed-array encoded: 2 or 4 bytes per cell, where strings took
    ≈ 25: 1.6 MB more per 256² map), and the hover line that shows it ("" and None when the map
    is exact)."""
    if sr == 1 and sc == 1:
        return None, ""
    count, _, _ = coarse_grid(rows, cols, np.ones(len(rows)), shape, cap, "sum", fill=0)
    small = sr * sc < 2**15
    return count.astype(np.int16 if small else np.int32), f"<br>%{{text}} of {sr * sc} tiles nonempty"


def empty_figure(message: str, height: int = 300) -> go.Figure:
    """A figure that says, in words, why there is nothing to draw.

    It holds one empty, invisible trace: ``st.plotly_chart`` validates figures with plotly's
    ``return_figure_from_figure_or_data``, which rejects a figure whose data list is empty.
    """
    fig = go.Figure(go.Scatter(x=[], y=[], mode="markers", hoverinfo="skip", showlegend=False))
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False, font=dict(size=14, color="#555"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return styled(fig, height=height)


#: Grids up to this ratio of rows to columns (or columns to rows) are drawn with square cells; a
#: transformer's FFN weight (4d × d, e.g. MiniLM's 1536 × 384) is 4 : 1. Beyond it, stretched.
SQUARE_ASPECT = 4.5

#: The most a tall grid's figure grows to (px), so its square cells are not a thin column.
TALL_HEIGHT = 820


def grid_height(n_rows: int, n_cols: int, height: int, max_aspect: float = SQUARE_ASPECT) -> int:
    """Figure height for a grid drawn by :func:`grid_axes`: ``height · √(rows / cols)``, between
    ``height`` and :data:`TALL_HEIGHT` for a tall grid, down to 300 px for a wide one.

    Square cells fit the grid into the smaller of the panel's width and height, so a 4 : 1 tall
    grid at the default height is a strip a quarter as wide as it is tall; the taller figure gives
    it width. A stretched grid (beyond ``max_aspect``) keeps ``height``.
    """
    r = n_rows / max(n_cols, 1)
    if not 1 / max_aspect <= r <= max_aspect:
        return int(height)
    scaled = int(round(height * r ** 0.5))
    return max(height, min(TALL_HEIGHT, scaled)) if r >= 1 else max(min(300, height), scaled)


def fit_grid(fig: go.Figure, n_rows: int, n_cols: int, legend_px: int = 0,
             max_aspect: float = SQUARE_ASPECT, min_width: int = 380) -> go.Figure:
    """Give a styled square-cell grid the width its cells need (``layout.width``).

    Square cells in a panel wider than the grid leave the plot centred in blank space, its colour
    bar at the panel's far edge (a 4 : 1 map, and a square one in a page-wide panel: the layout
    review saw the bar 170–190 px from a square map at 1280 px); with the width the cells need
    (the plot height × cols / rows, plus the margins and ``legend_px`` for a colour bar),
    ``S.chart`` draws it at that width (``width="content"``), never wider than its container, so
    a wide grid still fills it. Stretched grids are left to fill their container. ``min_width``
    keeps room for the title.
    """
    r = n_rows / max(n_cols, 1)
    if not 1 / max_aspect <= r <= max_aspect:
        return fig
    m = fig.layout.margin
    plot_h = fig.layout.height - (m.t or 0) - (m.b or 0)
    plot_w = plot_h * n_cols / n_rows
    fig.update_layout(width=int(max(min_width, round((m.l or 0) + plot_w + (m.r or 0) + legend_px))))
    return fig


def cell_gap(n_rows: int, n_cols: int) -> int:
    """A 1-px gap between the cells of a grid of at most 64 cells along both axes, else none: a gap
    along one axis only (48 columns, 192 rows at T = 8) drew the tiles as stripes."""
    return 1 if max(n_rows, n_cols) <= 64 else 0


def grid_axes(fig: go.Figure, n_rows: int, n_cols: int, ytitle: str, xtitle: str,
              max_aspect: float = SQUARE_ASPECT) -> bool:
    """Reversed-y grid axes with square cells, unless the grid is very tall or wide (then stretched).

    Returns True when stretched (callers say so in the title). Give the figure the height of
    :func:`grid_height` so a tall grid's square cells are not drawn in a thin strip, and once
    styled pass it through :func:`fit_grid` for the width its cells need.
    """
    stretched = not (1 / max_aspect <= n_rows / max(n_cols, 1) <= max_aspect)
    # grid and zero lines would show through the gaps between cells as stray rules
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False)
    # a few cells along an axis: whole-number ticks (plotly would label a single row -0.4 … 0.4)
    if n_rows <= 10:
        fig.update_yaxes(tick0=0, dtick=1)
    if n_cols <= 10:
        fig.update_xaxes(tick0=0, dtick=1)
    if stretched:
        fig.update_yaxes(autorange="reversed", title=ytitle)
        fig.update_xaxes(title=xtitle)
    else:
        fig.update_yaxes(autorange="reversed", title=ytitle, scaleanchor="x", constrain="domain")
        fig.update_xaxes(title=xtitle, constrain="domain")
    return stretched


#: Mantissas of log ticks, coarsest first: 1-2-5, then finer steps for ranges under a decade.
LOG_TICK_STEPS = ((1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9))


def _steps_within(lo: float, hi: float, mantissas) -> list:
    """log10 values ``k + log10(m)`` inside [lo, hi] for every decade k and mantissa m."""
    out = []
    for k in range(int(np.floor(lo)) - 1, int(np.ceil(hi)) + 1):
        for m in mantissas:
            t = k + np.log10(m)
            if lo - 1e-9 <= t <= hi + 1e-9:
                out.append(float(t))
    return out


def log_ticks(lo: float, hi: float) -> list:
    """log10 tick positions covering [lo, hi] (both log10 values).

    The coarsest steps of :data:`LOG_TICK_STEPS` that put at least three ticks inside: 1-2-5 over
    a decade or more, 1-1.5-2-3-5-7 or the finer steps on a shorter range (a residual from 0.5 to
    0.12 reads 0.15, 0.2, 0.3, 0.5 instead of 0.2 and 0.5 alone). When even the finest steps leave
    fewer than three, the ends ``lo`` and ``hi`` are added (unless within 5 % of the range from a
    tick), so an axis or colour bar always reads from one end to the other. More than eight 1-2-5
    steps keep the decades alone, and more than eight decades every second, third … decade.

    >>> [round(10 ** t, 3) for t in log_ticks(np.log10(0.12), np.log10(0.5))]
    [0.15, 0.2, 0.3, 0.5]
    >>> [round(10 ** t, 3) for t in log_ticks(np.log10(0.3), np.log10(0.45))]
    [0.3, 0.4, 0.45]
    """
    for mantissas in LOG_TICK_STEPS:
        out = _steps_within(lo, hi, mantissas)
        if len(out) >= 3:
            break
    if len(out) > 8:
        out = [t for t in out if abs(t - round(t)) < 1e-9] or out[::2]
    if len(out) > 8:   # still crowded (a solver's residual down to 1e-16): every second, third … decade
        every = -(-len(out) // 8)
        out = [t for t in out if round(t) % every == 0] or out[::every]
    if len(out) < 3 and hi - lo > 1e-3:
        # ends not within 5 % of the range from a step already there
        ends = [t for t in (lo, hi) if all(abs(t - u) > 0.05 * (hi - lo) for u in out)]
        out = sorted(out + ends)
    return [float(t) for t in out] or [float(lo)]
