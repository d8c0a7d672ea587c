"""NPU figures (akf-spec §6–§7): utilisation heatmap, PE timeline, energy, hops, annealing, fused vs unfused."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.colors as pcolors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .colors import NEUTRAL_DARK, NEUTRAL_MID, TEXT_DARK, kernel_color, text_color_on
from .layout import BAR_TEXT, coarse_grid, empty_figure, fit_grid, grid_axes, grid_height, styled

# Inferno with its first colour written as #000000: the browser build parses plotly's "#000004"
# as a short #RGBA colour and draws idle PEs purple (seen in the screenshots).
UTIL_SCALE = [[i / (len(pcolors.sequential.Inferno) - 1), c]
              for i, c in enumerate(["#000000"] + list(pcolors.sequential.Inferno[1:]))]

#: Most cells per axis of the utilisation heatmap; larger grids are averaged into blocks.
HEATMAP_CAP = 256
#: Shortest drawn bar of the PE timeline, as a fraction of the cycle axis (≈ 2 px at 900 px).
MIN_BAR_FRACTION = 1 / 400


def _share(k: int, n: int) -> str:
    """``k`` of ``n`` as a percentage that never reads 0.0 % for ``k > 0`` (two significant digits below 1 %)."""
    pct = 100.0 * k / max(n, 1)
    return f"{pct:.2g} %" if 0 < pct < 1 else f"{pct:.1f} %"


def block_means(u: np.ndarray, cap: int = HEATMAP_CAP) -> tuple[np.ndarray, int, int]:
    """Mean of ``u`` over blocks of ``sr × sc`` cells, at most ``cap`` blocks per axis.

    ``sr = ceil(rows / cap)`` (same for columns), as :func:`~akfviz.viz.layout.coarse_grid`;
    an edge block that is cut short is the mean of the cells it has. A grid within the cap is
    returned unchanged (``sr = sc = 1``).

    Returns
    -------
    grid : float64 array, sr, sc
    """
    if max(u.shape) <= cap:
        return u.astype(np.float64), 1, 1
    rows, cols = np.indices(u.shape).reshape(2, -1)
    total, sr, sc = coarse_grid(rows, cols, u.ravel(), u.shape, cap, "sum")
    count, _, _ = coarse_grid(rows, cols, np.ones(u.size), u.shape, cap, "sum")
    return total / count, sr, sc


def used_window(u: np.ndarray, pad: int = 1) -> tuple[int, int, int, int]:
    """Rows ``r0:r1`` and columns ``c0:c1`` of the smallest window holding every busy PE (``u > 0``),
    widened by ``pad`` PEs on each side where the grid allows; the whole grid when no PE is busy."""
    rows = np.flatnonzero((u > 0).any(axis=1))
    cols = np.flatnonzero((u > 0).any(axis=0))
    if rows.size == 0:
        return 0, u.shape[0], 0, u.shape[1]
    return (max(int(rows[0]) - pad, 0), min(int(rows[-1]) + 1 + pad, u.shape[0]),
            max(int(cols[0]) - pad, 0), min(int(cols[-1]) + 1 + pad, u.shape[1]))


def _utilization_title(u: np.ndarray, sr: int, sc: int, stretched: bool,
                       window: tuple | None = None) -> tuple[str, int]:
    """Title of :func:`utilization_heatmap` (how cells are drawn, PEs used) and its line count.

    ``u`` is the whole grid (the counts are over all PEs); ``window`` the part drawn, if not all."""
    notes = [f"{sr}×{sc} PEs per cell, mean"] if sr * sc > 1 else []
    if window is not None:
        r0, r1, c0, c1 = window
        notes.insert(0, f"zoomed to rows {r0}–{r1 - 1}, columns {c0}–{c1 - 1}: every busy PE")
    notes += ["aspect stretched"] if stretched else []
    used = int(np.count_nonzero(u > 0))
    stats = (f"{used:,} of {u.size:,} PEs used ({_share(used, u.size)}), "
             f"mean utilisation {100 * float(u.mean()):.3g} %, max {100 * float(u.max()):.3g} %")
    lines = [f"PE utilisation — {u.shape[0]}×{u.shape[1]} grid"] + (["; ".join(notes)] if notes else []) + [stats]
    small = [f"<span style='font-size:12px'>{t}</span>" for t in lines[1:]]
    return "<br>".join(lines[:1] + small), len(lines)


def utilization_heatmap(util, height: int = 520, title: str | None = None, zoom: bool = False) -> go.Figure:
    """PE utilisation (busy / makespan) over the whole grid as ONE heatmap trace.

    With ``zoom``, only the window of :func:`used_window` (every busy PE, one idle PE around it)
    is drawn, at the PEs' own row and column numbers; the title's counts stay over the whole grid.

    Up to ``HEATMAP_CAP`` (256) PEs per axis every PE is one cell (a 256×256 grid = 65,536
    float32 values, ≈ 350 kB of JSON). A larger grid is averaged into blocks of ``sr × sc``
    PEs (:func:`block_means`) and the title says so. A very wide or tall grid is stretched
    rather than drawn with square cells (:func:`~akfviz.viz.layout.grid_axes`).
    """
    u = np.asarray(util, np.float64)
    if u.ndim != 2 or u.size == 0:
        return empty_figure("No utilisation grid.", height)
    whole = u
    window = used_window(u) if zoom else (0, u.shape[0], 0, u.shape[1])
    r0, r1, c0, c1 = window
    u = u[r0:r1, c0:c1]
    z, sr, sc = block_means(u)
    exact = sr == sc == 1
    hover = ("PE (%{y}, %{x})<br>utilisation %{z:.3g}" if exact else
             f"{sr}×{sc} PEs around (%{{y}}, %{{x}})<br>mean utilisation %{{z:.3g}}")
    fig = go.Figure(go.Heatmap(
        z=z.astype(np.float32), x0=c0 + (sc - 1) / 2, dx=sc, y0=r0 + (sr - 1) / 2, dy=sr, colorscale=UTIL_SCALE,
        zmin=0.0, zmax=max(float(z.max()), 1e-9),    # 0 … brightest cell, so sparse use stays visible
        colorbar=dict(title="busy / makespan"),
        hovertemplate=hover + "<extra></extra>"))
    stretched = grid_axes(fig, *u.shape, "PE row", "PE column")
    auto, n_lines = _utilization_title(whole, sr, sc, stretched,
                                       window if u.shape != whole.shape else None)
    fig = styled(fig, title or auto, grid_height(*u.shape, height), margin=dict(l=60, r=20, t=32 + 18 * n_lines, b=50))
    return fit_grid(fig, *u.shape, legend_px=100)


def merge_touching(intervals: pd.DataFrame) -> pd.DataFrame:
    """Join the busy intervals of one PE and one kind that touch (``end == next start``).

    Intervals are the same "kind" when they agree on every column of ``kernel`` and ``kind``
    that the frame has. Returns ``pe, start, end`` (and those columns) plus ``parts``, the
    number of intervals joined; busy cycles per PE are unchanged.
    """
    keys = ["pe"] + [k for k in ("kernel", "kind") if k in intervals]
    df = intervals.sort_values(keys + ["start"], kind="stable")
    same = np.ones(len(df), bool)
    for k in keys:
        col = df[k].to_numpy()
        same[1:] &= col[1:] == col[:-1]
    same[0] = False
    same[1:] &= df["start"].to_numpy()[1:] == df["end"].to_numpy()[:-1]
    run = np.cumsum(~same)
    out = df.groupby(run, sort=False).agg(**{k: (k, "first") for k in keys}, start=("start", "first"),
                                          end=("end", "last"), parts=("start", "size"))
    return out.reset_index(drop=True)


def _bar_trace(g: pd.DataFrame, ypos: dict, min_len: float, name: str, color: str) -> go.Scatter:
    """One line-segment trace for the bars of ``g`` (merged intervals), at least ``min_len`` long.

    The hover text gives each bar's true length and says when it is drawn longer.
    """
    start = g["start"].to_numpy(np.float64)
    end = g["end"].to_numpy(np.float64)
    drawn = np.maximum(end, start + min_len)
    text = [f"{pe}: busy {e - s:,.0f} cycles ({s:,.0f}–{e:,.0f})"
            + (f", {k} intervals back to back" if k > 1 else "")
            + (f"<br>drawn {d - s:,.1f} cycles long to stay visible" if d > e else "")
            for pe, s, e, d, k in zip(g["pe"], start, end, drawn, g["parts"])]
    n = len(g)
    xs, ys, tx = np.full(3 * n, np.nan), np.full(3 * n, np.nan), np.full(3 * n, None, dtype=object)
    xs[0::3], xs[1::3] = start, drawn
    ys[0::3] = ys[1::3] = [ypos[str(p)] for p in g["pe"]]
    tx[0::3] = tx[1::3] = text
    width = max(4, min(18, 240 // max(len(ypos), 1)))
    return go.Scatter(x=xs, y=ys, text=tx, mode="lines", name=name, connectgaps=False,
                      line=dict(width=width, color=color), hovertemplate="%{text}<extra>" + name + "</extra>")


def busy_rows(busy, rows: int, cols: int) -> tuple[np.ndarray, int]:
    """The PE rows with a busy PE, and the row of the busiest PE (the timeline's first row).

    Parameters
    ----------
    busy : array of shape (rows * cols,)
        Busy cycles per PE (``SimResult.counters["busy"]``, PE id = ``row * cols + col``).
    rows, cols : int
        The PE grid.

    Returns
    -------
    rows_busy : ndarray of int
        Rows with at least one busy PE, ascending.
    default_row : int
        The row holding the busiest PE (the first such row; 0 when no PE is busy).
    """
    grid = np.asarray(busy).reshape(rows, cols)
    return np.flatnonzero(grid.sum(axis=1) > 0), int(np.argmax(grid.max(axis=1)))


#: Most PEs of one row the NPU page's timeline shows.
TIMELINE_MAX_PES = 24


def row_intervals(res, row: int, cols: int, max_pes: int = TIMELINE_MAX_PES) -> pd.DataFrame | None:
    """Busy intervals of the first ``max_pes`` busy PEs of PE row ``row``, labelled for
    :func:`pe_timeline`.

    Parameters
    ----------
    res : SimResult
        A simulation that recorded its intervals.
    row : int
        The PE row.
    cols : int
        PEs per row of the grid.
    max_pes : int
        Most PEs shown.

    Returns
    -------
    pandas.DataFrame or None
        ``res.timeline`` of those PEs with ``pe`` as ``"PE r,c"`` and ``kernel`` as the kernel
        of a compute interval, ``"setup"`` or ``"reduce"``; None when no PE of the row is busy.
    """
    pes = np.arange(row * cols, (row + 1) * cols)
    busy_pes = pes[res.counters["busy"][pes] > 0][:max_pes]
    tl = res.timeline(pes=busy_pes) if busy_pes.size else None
    if tl is not None and len(tl):
        kind_label = np.where(tl["kind"] == "setup", "setup",
                              np.where(tl["kind"] == "reduce", "reduce", tl["kernel"]))
        tl = tl.assign(pe=[f"PE {p // cols},{p % cols}" for p in tl["pe"]], kernel=kind_label)
    return tl


def pe_timeline(intervals, makespan: float | None = None, height: int = 380) -> go.Figure:
    """Gantt chart of busy intervals for a set of PEs.

    ``intervals``: DataFrame with ``pe`` (label), ``start``, ``end`` and optionally ``kernel``
    (colours by kernel family) and ``kind``. Intervals of one PE and kind that touch are drawn as
    one bar (:func:`merge_touching`); every bar is drawn at least ``MIN_BAR_FRACTION`` of the
    cycle axis long, so a PE busy in many short pieces does not look idle, and its hover text
    gives the true busy cycles. One line-segment trace per kernel (fast for many bars).
    """
    if intervals is None or len(intervals) == 0:
        return empty_figure("These PEs are idle for the whole run (no busy intervals).", height)
    labels = [str(p) for p in dict.fromkeys(intervals["pe"].tolist())]
    ypos = {p: i for i, p in enumerate(labels)}
    df = merge_touching(intervals)
    span = float(makespan) if makespan else float(df["end"].max())
    min_len = span * MIN_BAR_FRACTION
    fig = go.Figure()
    groups = df.groupby("kernel", sort=True) if "kernel" in df else [("busy", df)]
    for name, g in groups:
        color = PHASE_COLORS.get(str(name), kernel_color(str(name))) if "kernel" in df else NEUTRAL_MID
        fig.add_trace(_bar_trace(g, ypos, min_len, str(name), color))
    if makespan:
        # a legend entry rather than an annotation: the annotation sat under the legend
        fig.add_trace(go.Scatter(x=[makespan, makespan], y=[-0.5, len(labels) - 0.5], mode="lines",
                                 name="makespan", line=dict(color="#e6194b", dash="dash", width=1.5),
                                 hovertemplate=f"makespan {makespan:,.0f} cycles<extra></extra>"))
    # tick labels already read "PE row,col": an axis title would sit on top of them
    # no zero line: on the categorical PE axis it is a stray rule through the first PE's row
    fig.update_yaxes(tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed", zeroline=False)
    # from cycle 0: autoscale started at the first bar, hiding the wait for DRAM before it (60 % of
    # a run with a slow DRAM), where the caption says "gaps are waits"
    fig.update_xaxes(title="cycle", range=[0, span * 1.02], rangemode="nonnegative")
    return styled(fig, "PE timeline (busy intervals)", max(height, 22 * len(labels) + 120),
                  legend=dict(orientation="h", xref="container", yref="container", yanchor="bottom", y=0, x=0))


# setup and reduce beside the kernel families in the PE timeline: grey (3.7:1 on white) and black,
# both ΔE00 ≥ 12 from every family colour (but SKIP's grey: SKIP has no busy interval) under
# simulated CVD
PHASE_COLORS = {"setup": "#83888d", "reduce": "#111111"}
# energy components are labelled by name: neutral colours, none a kernel family's (the dram bar
# was QUANT8's red beside the timeline's QUANT8 bars), static energy the darker one
ENERGY_COLORS = {"compute": NEUTRAL_MID, "sram": NEUTRAL_MID, "dram": NEUTRAL_MID, "noc": NEUTRAL_MID,
                 "decode": NEUTRAL_MID, "setup": NEUTRAL_MID, "static": NEUTRAL_DARK, "leakage": NEUTRAL_DARK}


def power_in_words(res, hw) -> str:
    """Average power of a run, total and static: ``P = E / (cycles / clock_hz)`` (akf-spec §7).

    Leakage is charged per PE-cycle, so the static share of the energy does not depend on the
    clock while its power does; said here because the NPU page's clock input changes only this.
    """
    if res.seconds <= 0:
        return "The run took no cycles: no power to report."
    static = float(res.energy_pj.get("static", 0.0))
    return (f"Average power {res.energy_total_pj * 1e-12 / res.seconds:.4g} W over {res.seconds * 1e6:.4g} µs at "
            f"{hw.clock_hz / 1e6:g} MHz, of which static (leakage) {static * 1e-12 / res.seconds:.4g} W. "
            "Energy in pJ does not depend on the clock; watts do.")


def energy_breakdown(energy: dict, height: int = 320, title: str = "Energy breakdown") -> go.Figure:
    """Horizontal bars of energy by component, labelled with the share of the total (pJ in the hover).

    Made for a narrow column: no energy axis (its ticks rotated and overlapped), the share
    printed past each bar's end, the total on a second title line.
    """
    items = [(k, float(v)) for k, v in energy.items() if k not in ("total",)]
    if not items:
        return empty_figure("No energy counted.", height)
    tot = sum(v for _, v in items) or 1.0
    names = [k for k, _ in items]
    vals = [v for _, v in items]
    colors = [next((c for key, c in ENERGY_COLORS.items() if key in k.lower()), NEUTRAL_MID) for k in names]
    fig = go.Figure(go.Bar(y=names, x=vals, orientation="h", marker_color=colors, width=0.42, offset=0.04,
                           text=[f"{100 * v / tot:.1f} %" for v in vals], textposition="outside",
                           cliponaxis=False, hovertemplate="%{y}: %{x:.4g} pJ<extra></extra>"))
    # from 0: autorange would pad the left end for the tick labels drawn inside the plot
    fig.update_xaxes(visible=False, range=[0, max(max(vals), 1e-30)], autorange=False)
    # component names above their bars: a left margin for them left no room for the bars
    fig.update_yaxes(autorange="reversed", ticklabelposition="inside top", showgrid=False)
    # the right margin holds the share printed past the longest bar
    # in µJ as the page's energy metric, with the pJ of the hover and the exports beside it
    pj = f"{tot:,.0f}" if tot >= 1 else f"{tot:.3g}"
    return styled(fig, f"{title}<br><span style='font-size:12px'>total {tot / 1e6:.4g} µJ = {pj} pJ</span>", height,
                  margin=dict(l=10, r=50, t=60, b=10))


def hop_histogram(counts, height: int = 300) -> go.Figure:
    """Histogram of NoC hop distances (flits × hops), index = number of hops."""
    counts = np.asarray(counts, np.float64)
    if counts.size == 0 or counts.sum() == 0:
        return empty_figure("No flits crossed the NoC.", height)
    last = int(np.nonzero(counts)[0].max()) + 1
    fig = go.Figure(go.Bar(x=np.arange(last), y=counts[:last], marker_color=NEUTRAL_MID,
                           hovertemplate="%{x} hops: %{y:,.0f}<extra></extra>"))
    fig.update_xaxes(title="Manhattan hops")
    fig.update_yaxes(title="flits")
    return styled(fig, "NoC hop histogram", height)


def annealing_trajectory(proposals, objective, greedy: float | None = None, kept: float | None = None,
                         height: int = 320) -> go.Figure:
    """Simulated-annealing objective against the proposals evaluated (akf-spec §6).

    ``proposals``, ``objective``: ``Mapping.trajectory_proposals`` and ``Mapping.trajectory`` — the
    search's current placement, which can climb above its start while the temperature is high.
    The greedy start is a reference line; ``kept`` (``Mapping.objective``), the placement kept
    (the best visited, or the greedy start when annealing found nothing better), is another,
    so the chart does not read as "annealing made it worse".
    """
    objective = np.asarray(objective, np.float64)
    if objective.size == 0:
        return empty_figure("No annealing trajectory recorded.", height)
    fig = go.Figure(go.Scatter(x=np.asarray(proposals), y=objective, mode="lines", line=dict(color=NEUTRAL_DARK),
                               name="objective", hovertemplate="after %{x:,} proposals: "
                                                               "makespan + γ·hops + δ·overflow = %{y:,.1f}<extra></extra>"))
    if greedy is not None:
        fig.add_hline(y=greedy, line=dict(color="#888", dash="dash"), annotation_text="greedy start")
    if kept is not None and (greedy is None or kept < greedy):
        # below the greedy line; its label under the line so the two labels do not overlap
        fig.add_hline(y=kept, line=dict(color="#0e7c66", dash="dot"), annotation_text="placement kept",
                      annotation_position="bottom right")
    fig.update_xaxes(title="annealing proposals")
    # the formula is in the hover text and the page caption: a long rotated title overflows the plot
    fig.update_yaxes(title="objective")
    return styled(fig, "Annealing trajectory", height)


def fused_vs_unfused(rows: dict, height: int = 320) -> go.Figure:
    """Side-by-side bars of cycles and energy for the fused and the unfused execution.

    ``rows``: ``{"fused": {"cycles": .., "energy_pj": ..}, "unfused": {...}}``. Energy is drawn
    in µJ, as the page's energy metric and the energy breakdown give it (pJ in the hover).
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=("cycles", "energy (µJ)"))
    names = list(rows)
    # neutral (no kernel family's colour); the text inside a bar in the colour that contrasts more
    # with it (≥ 4.5:1; #444 on the teal bar was 3.1:1)
    colors = ([NEUTRAL_DARK] + [NEUTRAL_MID] * len(names))[:len(names)]
    inside = dict(size=BAR_TEXT, color=[text_color_on(c) for c in colors])
    outside = dict(size=BAR_TEXT, color=TEXT_DARK)
    cycles = [float(rows[n]["cycles"]) for n in names]
    pj = np.array([float(rows[n]["energy_pj"]) for n in names])
    fig.add_trace(go.Bar(x=names, y=cycles, marker_color=colors, showlegend=False, name="cycles",
                         text=[f"{v:,.0f}" for v in cycles], textposition="auto", textfont=dict(size=BAR_TEXT),
                         insidetextfont=inside, outsidetextfont=outside,
                         hovertemplate="%{x}: %{y:,.0f} cycles<extra></extra>"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=pj * 1e-6, marker_color=colors, showlegend=False, name="energy",
                         text=[f"{v:.4g} µJ" for v in pj * 1e-6], textposition="auto", textfont=dict(size=BAR_TEXT),
                         insidetextfont=inside, outsidetextfont=outside,
                         customdata=pj,
                         hovertemplate="%{x}: %{y:.4g} µJ = %{customdata:,.0f} pJ<extra></extra>"), 1, 2)
    fig.update_yaxes(title_text="cycles", row=1, col=1)
    fig.update_yaxes(title_text="µJ", row=1, col=2)
    fig.update_annotations(font_size=12)
    return styled(fig, "Fused vs unfused execution", height, uniformtext=dict(minsize=BAR_TEXT, mode="show"),
                  margin=dict(l=60, r=20, t=70, b=50))


def one_kernel_caption(kernels: list, mixable: bool) -> str:
    """The fused-vs-unfused caption's note for a plan that runs one kernel ("" otherwise);
    ``mixable``: the Kernels page has found an error budget at which this matrix mixes kernels."""
    if len(kernels) != 1:
        return ""
    return (f" This plan runs one kernel ({kernels[0]}), so the unfused run is one phase too: fused and "
            "unfused are the same run, with no gap."
            + (" The Kernels page gives an error budget at which this matrix mixes kernels." if mixable else ""))
