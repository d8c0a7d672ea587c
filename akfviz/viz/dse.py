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


def format_value(v) -> str:
    """A measured value for a label: 4 significant digits (whole numbers with separators)."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not np.isfinite(v):
        return str(v)
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.4g}"


#: Most configurations listed in one hover box (the rest are counted).
HOVER_LIST = 12


def sweep_scatter(df, x: str = "cycles", y: str = "error_pct", color: str = "energy_pj",
                  hover: list | None = None, height: int = 420) -> go.Figure:
    """Scatter of sweep points (x vs y, colour = third objective), Pareto-optimal points ringed.

    Configurations often coincide in x and y (they differ only in the colour, or not at all).
    Within each spot the Pareto-optimal ones and then the best colour are drawn last (on top), so
    a ringed dot shows an optimal configuration's colour; a label ``×n`` counts the configurations
    at a spot, and the hover box lists every one of them (its parameters, colour value and
    whether it is optimal).

    Traces: ``data[0]`` every configuration (in drawing order), ``data[1]`` the rings of the
    Pareto-optimal ones, ``data[2]`` (only when some coincide) the count labels."""
    if df is None or len(df) == 0 or any(c not in df for c in (x, y, color)):
        return empty_figure("No sweep results with these columns yet.", height)
    front = pareto_mask(df[x], df[y], df[color],
                        maximise=[k for k, c in enumerate((x, y, color)) if c in MAXIMISED])
    hover = [c for c in (hover or []) if c in df and c not in (x, y, color)]
    xs = df[x].to_numpy(np.float64)
    ys = df[y].to_numpy(np.float64)
    cs = df[color].to_numpy(np.float64)
    n = len(df)
    # worse colour first: it is drawn underneath; Pareto-optimal points last of all
    bad = np.where(np.isnan(cs), np.inf, -cs if color in MAXIMISED else cs)
    order = np.lexsort((-bad, front))
    cells = {c: [f"{c}={v}" for v in df[c].tolist()] for c in hover}
    desc = [", ".join(cells[c][i] for c in hover) if hover else f"configuration {i + 1}" for i in range(n)]
    spots: dict = {}
    for i in range(n):
        spots.setdefault((xs[i].tobytes(), ys[i].tobytes()), []).append(i)
    text = np.empty(n, dtype=object)
    for members in spots.values():
        members = sorted(members, key=lambda i: (not front[i], bad[i]))  # optimal and best first
        lines = [f"{desc[i]}; {color} {format_value(cs[i])}" + (" (Pareto-optimal)" if front[i] else "")
                 for i in members[:HOVER_LIST]]
        if len(members) > HOVER_LIST:
            lines.append(f"… and {len(members) - HOVER_LIST} more")
        head = f"{len(members)} configurations at this spot:<br>" if len(members) > 1 else ""
        for i in members:
            text[i] = head + "<br>".join(lines)
    fig = go.Figure(go.Scatter(x=xs[order], y=ys[order], mode="markers", text=text[order], name="configurations",
                               marker=dict(color=cs[order], colorscale="Viridis", size=9,
                                           colorbar=dict(title=color)),
                               hovertemplate=f"{x} %{{x:.4g}}<br>{y} %{{y:.4g}}<br>%{{text}}<extra></extra>"))
    fig.add_trace(go.Scatter(x=df[x][front], y=df[y][front], mode="markers", name="Pareto-optimal",
                             hoverinfo="skip",
                             marker=dict(size=15, color="rgba(0,0,0,0)", line=dict(color="#e6194b", width=2))))
    stacked = [m for m in spots.values() if len(m) > 1]
    if stacked:
        fig.add_trace(go.Scatter(x=[xs[m[0]] for m in stacked], y=[ys[m[0]] for m in stacked], mode="text",
                                 text=[f"×{len(m)}" for m in stacked], textposition="top right",
                                 textfont=dict(size=12, color="#333"), hoverinfo="skip",
                                 name="configurations at the same spot", showlegend=False))
    fig.update_xaxes(title=x)
    fig.update_yaxes(title=y)
    return styled(fig, f"Sweep: {y} vs {x} (colour: {color})", height,
                  legend=dict(orientation="h", y=1.1, x=1, xanchor="right"))


def _is_constant(values) -> bool:
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return v.size > 0 and bool(np.all(np.abs(v - v[0]) <= 1e-12 * max(abs(v[0]), 1e-300)))


def parallel_coordinates(df, columns: list, color: str, height: int = 400) -> go.Figure:
    """Parallel-coordinates plot over the sweep's parameters and objectives.

    An axis whose column has one value at every point shows that value alone (no invented
    range), and its label says it is constant."""
    cols = [c for c in columns if c in df and np.issubdtype(df[c].dtype, np.number)]
    if df is None or len(df) == 0 or not cols:
        return empty_figure("No numeric sweep columns to draw.", height)
    dims = []
    for c in cols:
        vals = df[c].to_numpy(np.float64)
        if _is_constant(vals):
            v = float(vals[~np.isnan(vals)][0])
            pad = abs(v) * 0.5 if v else 1.0
            # tick values make plotly draw only those ticks and no range labels at the axis ends
            dims.append(dict(label=f"{c}<br>(constant)", values=vals, range=[v - pad, v + pad],
                             tickvals=[v], ticktext=[format_value(v)]))
        else:
            dims.append(dict(label=c, values=vals))
    fig = go.Figure(go.Parcoords(line=dict(color=df[color] if color in df else None, colorscale="Viridis",
                                           showscale=True), dimensions=dims))
    return styled(fig, "Parallel coordinates", height, margin=dict(l=60, r=60, t=110, b=30))


#: The baselines AKF is measured against in a sweep with baselines: (label, speedup column,
#: energy-ratio column, colour). ``speedup`` / ``energy_rel`` are the ones against Dense.
BASELINE_SERIES = (("vs Dense", "speedup", "energy_rel", "#636efa"),
                   ("vs Block-sparse", "speedup_vs_blocksparse", "energy_rel_vs_blocksparse", "#EF553B"),
                   ("vs Static-sparse", "speedup_vs_staticsparse", "energy_rel_vs_staticsparse", "#00cc96"))


def configuration_labels(df, swept: list) -> list[str]:
    """One short label per sweep row from its swept parameters ("rows=32, sram_bytes_per_pe=8192")."""
    swept = [c for c in swept if c in df]
    if not swept:
        return [f"#{i + 1}" for i in range(len(df))]
    return [", ".join(f"{c}={format_value(v) if not isinstance(v, str) else v}" for c, v in zip(swept, row))
            for row in df[swept].itertuples(index=False, name=None)]


def baseline_bars(df, swept: list, height: int = 560) -> go.Figure:
    """AKF's speedup (top) and energy ratio (bottom) against each baseline, one bar group per
    configuration; the dotted line at 1 is "as good as the baseline"."""
    from plotly.subplots import make_subplots

    series = [s for s in BASELINE_SERIES if s[1] in df and s[2] in df]
    if df is None or len(df) == 0 or len(series) < 2:
        return empty_figure("This sweep has no Block-sparse / Static-sparse columns.", height)
    labels = configuration_labels(df, swept)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("AKF speedup = baseline cycles / AKF cycles (above 1: AKF is faster)",
                                        "AKF energy ratio = AKF energy / baseline energy (below 1: AKF uses less)"))
    for name, sp, er, colour in series:
        for row, column in ((1, sp), (2, er)):
            fig.add_trace(go.Bar(x=labels, y=df[column].to_numpy(np.float64), name=name, marker_color=colour,
                                 legendgroup=name, showlegend=row == 1,
                                 hovertemplate=f"%{{x}}<br>AKF {name}: %{{y:.4g}}<extra></extra>"),
                          row=row, col=1)
    for row in (1, 2):
        fig.add_hline(y=1.0, line=dict(color="#555", width=1, dash="dot"), row=row, col=1)
    fig.update_layout(barmode="group")
    fig.update_annotations(font=dict(size=12), xanchor="left", x=0.0)
    return styled(fig, "AKF against each baseline, per configuration", height,
                  legend=dict(orientation="h", y=1.12, x=1, xanchor="right"),
                  margin=dict(l=60, r=20, t=90, b=60))
