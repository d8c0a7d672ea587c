"""Figures of the Learn page: the tiny matrix, the PE grid state at a step, and the step timeline."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .layout import styled

KIND_COLORS = {"inject": "#d4ac0d", "setup": "#95a5a6", "final": "#7d3c98", "event": "#2e86c1",
               "send": "#e67e22", "reduce": "#17a589"}
PE_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")


def learn_matrix(A, x, tile: int, bi, bj, tile_pe, step=None, height: int = 360) -> go.Figure:
    """The tiny matrix: values as text, each tile framed in the colour of its PE, x on top.

    The current step's tile is framed thick and its input column highlighted.
    """
    A = np.asarray(A, np.float64)
    n, m = A.shape
    z = np.where(A != 0, np.abs(A), np.nan)
    text = [[f"{v:.2g}" if v != 0 else "" for v in row] for row in A]
    # plotly shrinks heatmap text to fit; a fixed size keeps the values readable (12 px for 8×8)
    size = max(8, min(13, 100 // max(n, m, 1)))
    fig = go.Figure(go.Heatmap(z=z, text=text, texttemplate="%{text}", textfont=dict(size=size),
                               colorscale="Blues", showscale=False,
                               hovertemplate="A[%{y},%{x}] = %{text}<extra></extra>", xgap=1, ygap=1))
    for u in range(len(bi)):
        c = PE_COLORS[int(tile_pe[u]) % len(PE_COLORS)]
        cur = step is not None and step.tile == u and step.kind in ("event", "final", "send", "reduce")
        fig.add_shape(type="rect", x0=bj[u] * tile - 0.5, x1=min((bj[u] + 1) * tile, m) - 0.5,
                      y0=bi[u] * tile - 0.5, y1=min((bi[u] + 1) * tile, n) - 0.5,
                      line=dict(color=c, width=5 if cur else 2))
    if step is not None and step.column >= 0:
        fig.add_vrect(x0=step.column - 0.5, x1=step.column + 0.5, fillcolor="#e6194b", opacity=0.15, line_width=0)
    fig.update_yaxes(autorange="reversed", title="row i", dtick=1, scaleanchor="x", range=[n - 0.5, -0.5],
                     showgrid=False, zeroline=False)
    fig.update_xaxes(title="column j", dtick=1, range=[-0.5, m - 0.5], constrain="domain",
                     showgrid=False, zeroline=False)
    xs = ", ".join(f"{v:.2g}" if v != 0 else "0" for v in np.asarray(x))
    return styled(fig, f"Â, tiles framed in their PE's colour<br><span style='font-size:12px'>x = [{xs}]</span>",
                  height,
                  margin=dict(l=50, r=10, t=70, b=40))


def learn_grid(state: dict, trace, step=None, height: int = 360) -> go.Figure:
    """The PE grid after the current step: clock, queue and role of each PE; the step as an arrow."""
    R, C = trace.grid
    fig = go.Figure()
    for p in range(R * C):
        r, c = divmod(p, C)
        col = PE_COLORS[p % len(PE_COLORS)]
        active = step is not None and step.pe == p
        fig.add_shape(type="rect", x0=c + 0.05, x1=c + 0.95, y0=r + 0.05, y1=r + 0.95,
                      line=dict(color=col, width=5 if active else 2), fillcolor="rgba(255,255,255,0.9)")
        tiles = [str(u) for u in np.flatnonzero(trace.tile_pe == p)]
        roles = []
        if p in set(trace.red_pe.tolist()):
            roles.append("reduces row block " + ",".join(str(b) for b in np.flatnonzero(trace.red_pe == p)))
        if p in set(trace.src_pe.tolist()):
            roles.append("source of col block " + ",".join(str(b) for b in np.flatnonzero(trace.src_pe == p)))
        q = state["queues"][p]
        qtxt = ", ".join(f"x[{j}]@{a}" for _, j, a in q[:6]) + (" …" if len(q) > 6 else "") if q else "empty"
        lines = [f"<b>PE {p}</b> ({r},{c}) · clock {int(state['pe_clock'][p])}",
                 f"tiles: {', '.join(tiles) or '—'}", *roles, f"queue: {qtxt}"]
        fig.add_annotation(x=c + 0.5, y=r + 0.5, text="<br>".join(lines), showarrow=False,
                           font=dict(size=11), align="center")
    if step is not None:
        tgt = step.pe
        if step.kind == "event":
            src = int(trace.src_pe[step.column // trace.tile])
        elif step.kind == "reduce":
            src = int(trace.tile_pe[step.tile])
        else:
            src = tgt
        if src != tgt:
            (r0, c0), (r1, c1) = divmod(src, C), divmod(tgt, C)
            fig.add_annotation(x=c1 + 0.5, y=r1 + 0.85, ax=c0 + 0.5, ay=r0 + 0.85, xref="x", yref="y", axref="x",
                               ayref="y", showarrow=True, arrowhead=3, arrowsize=1.5, arrowwidth=2,
                               arrowcolor=KIND_COLORS.get(step.kind, "#333"))
    fig.update_xaxes(range=[0, C], visible=False)
    fig.update_yaxes(range=[R, 0], visible=False, scaleanchor="x")
    return styled(fig, f"PE grid {R}×{C} at cycle {state['time']}", height, margin=dict(l=10, r=10, t=50, b=10))


def learn_timeline(trace, upto: int, height: int = 260) -> go.Figure:
    """Steps done so far as bars per PE (start → end), coloured by kind.

    Steps that take no cycles (an injection, a send) are drawn as ticks on top of the bars,
    so they stay visible where they coincide with a setup or an event on the same PE.
    """
    R, C = trace.grid
    fig = go.Figure()
    done = trace.steps[:upto]
    ticks = []
    for kind, color in KIND_COLORS.items():
        bars = [s for s in done if s.kind == kind and s.end > s.start]
        instant = [s for s in done if s.kind == kind and s.end <= s.start]
        if bars:
            xs, ys = [], []
            for s in bars:
                xs += [s.start, s.end, None]
                ys += [s.pe, s.pe, None]
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=kind, legendgroup=kind,
                                     line=dict(color=color, width=14),
                                     hovertemplate=f"{kind}<br>cycle %{{x}}<extra></extra>"))
        if instant:
            ticks.append(go.Scatter(x=[s.start for s in instant], y=[s.pe for s in instant], mode="markers",
                                    name=kind, legendgroup=kind, showlegend=not bars,
                                    marker=dict(symbol="line-ns", size=20, line=dict(color=color, width=4)),
                                    hovertemplate=f"{kind} at cycle %{{x}}<extra></extra>"))
    for tick in ticks:       # after every bar: on top
        fig.add_trace(tick)
    fig.add_vline(x=trace.makespan, line=dict(color="#e6194b", dash="dash"), annotation_text="makespan")
    # no zero line: on a categorical PE axis it is a stray rule through PE 0's row
    fig.update_yaxes(tickvals=list(range(R * C)), ticktext=[f"PE {p}" for p in range(R * C)], autorange="reversed",
                     zeroline=False)
    fig.update_xaxes(title="cycle", range=[0, trace.makespan * 1.05 + 1])
    return styled(fig, "Timeline of the steps done so far", height,
                  legend=dict(orientation="h", y=1.2, x=1, xanchor="right"))
