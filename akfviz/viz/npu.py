"""NPU figures (akf-spec §6–§7): utilisation heatmap, PE timeline, energy, hops, annealing, fused vs unfused."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import plotly.colors as pcolors

from .colors import kernel_color

# Inferno with its first colour written as #000000: the browser build parses plotly's "#000004"
# as a short #RGBA colour and draws idle PEs purple (seen in the screenshots).
UTIL_SCALE = [[i / (len(pcolors.sequential.Inferno) - 1), c]
              for i, c in enumerate(["#000000"] + list(pcolors.sequential.Inferno[1:]))]
from .layout import empty_figure, styled


def utilization_heatmap(util, height: int = 520, title: str | None = None) -> go.Figure:
    """PE utilisation (busy / makespan) over the whole grid as ONE heatmap trace.

    The grid is sent as float32 (a 256×256 grid = 65,536 values, typed-array encoded,
    ≈ 350 kB of JSON), never downsampled: every PE is one cell.
    """
    u = np.asarray(util, np.float32)
    if u.ndim != 2 or u.size == 0:
        return empty_figure("No utilisation grid.", height)
    used = float(np.mean(u > 0))
    top = max(float(u.max()), 1e-9)      # colour range 0 … busiest PE, so sparse use stays visible
    fig = go.Figure(go.Heatmap(
        z=u, colorscale=UTIL_SCALE, zmin=0.0, zmax=top, colorbar=dict(title="busy / makespan"),
        hovertemplate="PE (%{y}, %{x})<br>utilisation %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title="PE row", scaleanchor="x", constrain="domain")
    fig.update_xaxes(title="PE column", constrain="domain")
    return styled(fig, title or f"PE utilisation — {u.shape[0]}×{u.shape[1]} grid, "
                                f"{100 * used:.1f} % of PEs used, mean {float(u.mean()):.4f}, max {top:.3f}", height)


def pe_timeline(intervals, makespan: float | None = None, height: int = 380) -> go.Figure:
    """Gantt chart of busy intervals for a set of PEs.

    ``intervals``: DataFrame with ``pe`` (label), ``start``, ``end`` and optionally ``kernel``
    (colours by kernel family). Drawn as one line-segment trace per kernel (fast for many bars).
    """
    if intervals is None or len(intervals) == 0:
        return empty_figure("These PEs are idle for the whole run (no busy intervals).", height)
    df = intervals
    labels = [str(p) for p in dict.fromkeys(df["pe"].tolist())]
    ypos = {p: i for i, p in enumerate(labels)}
    key = "kernel" if "kernel" in df else None
    fig = go.Figure()
    groups = df.groupby(key, sort=True) if key else [("busy", df)]
    for name, g in groups:
        n = len(g)
        xs = np.empty(3 * n)
        ys = np.empty(3 * n)
        xs[0::3], xs[1::3], xs[2::3] = g["start"].to_numpy(), g["end"].to_numpy(), np.nan
        y = np.array([ypos[str(p)] for p in g["pe"]], np.float64)
        ys[0::3], ys[1::3], ys[2::3] = y, y, np.nan
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=str(name), connectgaps=False,
                                 line=dict(width=max(4, min(18, 240 // max(len(labels), 1))),
                                           color=PHASE_COLORS.get(str(name), kernel_color(str(name))) if key
                                           else "#2e86c1"),
                                 hovertemplate="cycle %{x:,.0f}<extra>" + str(name) + "</extra>"))
    if makespan:
        fig.add_vline(x=makespan, line=dict(color="#e6194b", dash="dash"), annotation_text="makespan")
    # tick labels already read "PE row,col": an axis title would sit on top of them
    # no zero line: on the categorical PE axis it is a stray rule through the first PE's row
    fig.update_yaxes(tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed", zeroline=False)
    fig.update_xaxes(title="cycle")
    return styled(fig, "PE timeline (busy intervals)", max(height, 22 * len(labels) + 120),
                  legend=dict(orientation="h", y=1.08, x=1, xanchor="right"))


PHASE_COLORS = {"setup": "#9aa5b1", "reduce": "#111111"}
ENERGY_COLORS = {"compute": "#1f4e79", "sram": "#2e86c1", "dram": "#c0392b", "noc": "#d4ac0d",
                 "decode": "#7d3c98", "setup": "#7d3c98", "static": "#95a5a6", "leakage": "#95a5a6"}


def energy_breakdown(energy: dict, height: int = 320, title: str = "Energy breakdown") -> go.Figure:
    """Horizontal bars of energy by component (pJ), with the share of the total."""
    items = [(k, float(v)) for k, v in energy.items() if k not in ("total",)]
    if not items:
        return empty_figure("No energy counted.", height)
    tot = sum(v for _, v in items) or 1.0
    names = [k for k, _ in items]
    vals = [v for _, v in items]
    colors = [next((c for key, c in ENERGY_COLORS.items() if key in k.lower()), "#5d6d7e") for k in names]
    fig = go.Figure(go.Bar(y=names, x=vals, orientation="h", marker_color=colors,
                           text=[f"{100 * v / tot:.1f} %" for v in vals], textposition="auto",
                           hovertemplate="%{y}: %{x:.4g} pJ<extra></extra>"))
    fig.update_xaxes(title="energy (pJ)")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return styled(fig, f"{title} — total {tot:.4g} pJ", height, margin=dict(l=110, r=20, t=50, b=50))


def hop_histogram(counts, height: int = 300) -> go.Figure:
    """Histogram of NoC hop distances (flits × hops), index = number of hops."""
    counts = np.asarray(counts, np.float64)
    if counts.size == 0 or counts.sum() == 0:
        return empty_figure("No flits crossed the NoC.", height)
    last = int(np.nonzero(counts)[0].max()) + 1
    fig = go.Figure(go.Bar(x=np.arange(last), y=counts[:last], marker_color="#d4ac0d",
                           hovertemplate="%{x} hops: %{y:,.0f}<extra></extra>"))
    fig.update_xaxes(title="Manhattan hops")
    fig.update_yaxes(title="messages")
    return styled(fig, "NoC hop histogram", height)


def annealing_trajectory(step, objective, greedy: float | None = None, height: int = 320) -> go.Figure:
    """Simulated-annealing objective per step (akf-spec §6), greedy start as a reference line."""
    step = np.asarray(step)
    if step.size == 0:
        return empty_figure("No annealing trajectory recorded.", height)
    fig = go.Figure(go.Scatter(x=step, y=objective, mode="lines", line=dict(color="#7d3c98"), name="objective",
                               hovertemplate="step %{x}: makespan + γ·hops + δ·overflow = %{y:,.1f}"
                                             "<extra></extra>"))
    if greedy is not None:
        fig.add_hline(y=greedy, line=dict(color="#888", dash="dash"), annotation_text="greedy start")
    fig.update_xaxes(title="annealing step")
    # the formula is in the hover text and the page caption: a long rotated title overflows the plot
    fig.update_yaxes(title="objective")
    return styled(fig, "Mapping: simulated-annealing trajectory", height)


def fused_vs_unfused(rows: dict, height: int = 320) -> go.Figure:
    """Side-by-side bars of cycles and energy for the fused and the unfused execution.

    ``rows``: ``{"fused": {"cycles": .., "energy_pj": ..}, "unfused": {...}}``.
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=("cycles", "energy (pJ)"))
    names = list(rows)
    colors = ["#17a589", "#95a5a6", "#2e86c1", "#e67e22"]
    for j, metric in enumerate(("cycles", "energy_pj"), start=1):
        vals = [float(rows[n][metric]) for n in names]
        fig.add_trace(go.Bar(x=names, y=vals, marker_color=colors[:len(names)], showlegend=False,
                             text=[f"{v:.4g}" for v in vals], textposition="auto"), 1, j)
    return styled(fig, "Fused vs unfused execution", height)
