"""Baseline comparison figures (akf-spec §8): measured vs the paper's claimed values."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import styled

# two-line panel titles: on one line the three ran into each other in a 650 px wide column
METRICS = (("speedup", "speedup<br>over Dense (×)"), ("energy_rel", "energy<br>relative to Dense"),
           ("error_pct", "approximation<br>error (%)"))
PLAN_COLORS = {"Dense": "#1f4e79", "BlockSparse": "#5d6d7e", "StaticSparse": "#2e86c1", "AKF": "#17a589"}


def compare_bars(measured, claimed=None, height: int = 360) -> go.Figure:
    """Three panels (speedup, energy, error): measured bars, the paper's claims as hollow markers.

    ``measured``: DataFrame indexed by plan with the columns of ``akfviz.compare``.
    ``claimed``: DataFrame with the same index/columns holding the paper's values (NaN = none).
    """
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in METRICS], horizontal_spacing=0.08)
    plans = [str(p) for p in measured.index]
    for j, (col, _) in enumerate(METRICS, start=1):
        vals = measured[col].to_numpy(dtype=float)
        fig.add_trace(go.Bar(x=plans, y=vals, marker_color=[PLAN_COLORS.get(p, "#888") for p in plans],
                             name="measured", showlegend=j == 1, legendgroup="m",
                             text=[f"{v:.3g}" for v in vals], textposition="outside", textangle=0,
                             textfont=dict(size=10), cliponaxis=False,
                             hovertemplate="%{x}: %{y:.4g}<extra>measured</extra>"), 1, j)
        if claimed is not None and col in claimed:
            cv = claimed.reindex(measured.index)[col].to_numpy(dtype=float)
            ok = np.isfinite(cv)
            fig.add_trace(go.Scatter(x=np.array(plans)[ok], y=cv[ok], mode="markers", name="paper's claim",
                                     marker=dict(symbol="diamond-open", size=13, color="#e6194b", line=dict(width=2)),
                                     showlegend=j == 1, legendgroup="c",
                                     hovertemplate="%{x}: %{y:.4g}<extra>paper</extra>"), 1, j)
    return styled(fig, "Baselines on the same matrix and hardware", height + 30,
                  legend=dict(orientation="h", y=-0.25, x=0.5, xanchor="center"), margin=dict(l=50, r=20, t=100, b=90))


def cpu_timings(names, medians_ms, height: int = 280) -> go.Figure:
    """Measured CPU time per SpMV (median of repeats), horizontal bars."""
    fig = go.Figure(go.Bar(y=list(names), x=list(medians_ms), orientation="h",
                           marker_color=["#17a589", "#2e86c1", "#95a5a6"][:len(names)],
                           text=[f"{v:.3g} ms" for v in medians_ms], textposition="auto"))
    fig.update_xaxes(title="median time per call (ms)")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return styled(fig, "Real CPU time, same matrix and vector", height,
                  margin=dict(l=190, r=20, t=50, b=50))
