"""Design-space figures: Pareto scatter (error vs cycles vs energy) and parallel coordinates."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .layout import empty_figure, styled


#: Sweep columns where more is better (speedup over Dense); every other column is minimised.
MAXIMISED = frozenset({"speedup"})


def pareto_mask(*objectives, maximise=()) -> np.ndarray:
    """True for rows not dominated by any other row. O(n²), n small.

    Every objective is minimised, except those whose position is in ``maximise`` (e.g. a
    speedup), which are negated first."""
    pts = np.column_stack([(-1.0 if k in maximise else 1.0) * np.asarray(o, np.float64)
                           for k, o in enumerate(objectives)])
    n = pts.shape[0]
    keep = np.ones(n, bool)
    for i in range(n):
        dom = np.all(pts <= pts[i], axis=1) & np.any(pts < pts[i], axis=1)
        keep[i] = not dom.any()
    return keep


def pareto_caption(x: str, y: str, color: str) -> str:
    """The scatter's "how to read this" line, naming which way each axis counts as better."""
    up = [c for c in dict.fromkeys((x, y, color)) if c in MAXIMISED]
    down = [c for c in dict.fromkeys((x, y, color)) if c not in MAXIMISED]
    rule = f"lower {', '.join(down)}" if down else ""
    if up:
        rule += ("; " if rule else "") + f"higher {', '.join(up)}"
    return ("How to read this: one dot per configuration; red rings = Pareto-optimal: no other point is "
            f"at least as good on all of x, y and colour and better on one ({rule} is better).")


def sweep_scatter(df, x: str = "cycles", y: str = "error_pct", color: str = "energy_pj",
                  hover: list | None = None, height: int = 420) -> go.Figure:
    """Scatter of sweep points (x vs y, colour = third objective), Pareto-optimal points ringed."""
    if df is None or len(df) == 0 or any(c not in df for c in (x, y, color)):
        return empty_figure("No sweep results with these columns yet.", height)
    front = pareto_mask(df[x], df[y], df[color],
                        maximise=[k for k, c in enumerate((x, y, color)) if c in MAXIMISED])
    hover = [c for c in (hover or []) if c in df]
    text = df[hover].astype(str).agg(", ".join, axis=1) if hover else None
    fig = go.Figure(go.Scatter(x=df[x], y=df[y], mode="markers", text=text, name="configurations",
                               marker=dict(color=df[color], colorscale="Viridis", size=9,
                                           colorbar=dict(title=color)),
                               hovertemplate=f"{x} %{{x:.4g}}<br>{y} %{{y:.4g}}<br>%{{text}}<extra></extra>"))
    fig.add_trace(go.Scatter(x=df[x][front], y=df[y][front], mode="markers", name="Pareto-optimal",
                             marker=dict(size=15, color="rgba(0,0,0,0)", line=dict(color="#e6194b", width=2))))
    fig.update_xaxes(title=x)
    fig.update_yaxes(title=y)
    return styled(fig, f"Sweep: {y} vs {x} (colour: {color})", height,
                  legend=dict(orientation="h", y=1.1, x=1, xanchor="right"))


def parallel_coordinates(df, columns: list, color: str, height: int = 400) -> go.Figure:
    """Parallel-coordinates plot over the sweep's parameters and objectives."""
    cols = [c for c in columns if c in df and np.issubdtype(df[c].dtype, np.number)]
    if df is None or len(df) == 0 or not cols:
        return empty_figure("No numeric sweep columns to draw.", height)
    dims = [dict(label=c, values=df[c]) for c in cols]
    fig = go.Figure(go.Parcoords(line=dict(color=df[color] if color in df else None, colorscale="Viridis",
                                           showscale=True), dimensions=dims))
    return styled(fig, "Parallel coordinates", height, margin=dict(l=60, r=60, t=110, b=30))
