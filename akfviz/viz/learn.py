"""Figures of the Learn page: the tiny matrix, the PE grid state at a step, and the step timeline.

The matrix and the grid are drawn for a panel of known width (``width`` px, the Learn page places them
at that fixed width): the cell size, the value labels' font and the grid boxes' text follow from it, so
labels never overlap their neighbours. Where the cells are too small for a readable label, the labels are
left out and each value is in the hover.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .colors import BLUES_UNDER_TEXT, TEXT_DARK
from .layout import styled

# Step kinds: every pair ΔE00 ≥ 12.5 in normal vision and under simulated protan / deutan / tritan
# CVD, each ≥ 3:1 on white; the two instant kinds also differ in marker (KIND_SYMBOLS).
KIND_COLORS = {"inject": "#b9870d", "setup": "#8a8f94", "final": "#642b74", "event": "#0072b2",
               "send": "#ad4f07", "reduce": "#00a070"}
#: Marker of the steps that take no cycles (drawn as markers on the timeline).
#: A line symbol ("line-ns") is drawn by its outline only: with the white outline "final" was invisible.
KIND_SYMBOLS = {"inject": "triangle-down", "send": "diamond", "final": "star"}
# PE colours: Okabe–Ito's blue, vermillion (darkened), bluish green and reddish purple first (the
# 2×2 default), then black and four more; any two ΔE00 ≥ 11.5 in normal vision and under
# simulated CVD, each ≥ 3:1 on white. Colour is not the only link: every tile frame carries its
# PE's id (``pe_label``).
PE_COLORS = ("#0072b2", "#b15200", "#009e73", "#cc79a7", "#000000", "#aa921f", "#2a96ff", "#7d3300", "#592e8c")
#: The width (px) the Learn page gives the matrix and the grid figures.
PANEL_WIDTH = 440
#: Value labels smaller than this (px) are not drawn; the hover still gives the value.
MIN_LABEL_FONT = 9
_MATRIX_MARGIN = dict(l=50, r=10, b=40)
# glyph widths in em, a little above Arial's / Inter's (digits 0.556 / 0.6): a label that fits by these fits
_EM = {".": 0.3, "-": 0.4, "+": 0.62, "e": 0.6}
_EM_DIGIT = 0.62


def text_em(label: str) -> float:
    """The width of a number's label in em (see ``_EM``)."""
    return sum(_EM.get(ch, _EM_DIGIT) for ch in label)


def label_font(cell_px: float, labels, cap: int = 13) -> int:
    """The largest font size (px, at most ``cap``) at which every label fits a cell ``cell_px`` wide.

    >>> label_font(46, ["-0.67", "0.094"]), label_font(31, ["-0.67", "0.094"]), label_font(23, ["0.094"])
    (13, 9, 6)
    """
    widest = max((text_em(t) for t in labels), default=0.0)
    if widest == 0:
        return cap
    return int(max(0, min(cap, (cell_px - 4) / widest)))


def short_label(v: float) -> str:
    """A value's label in a matrix cell: 2 significant digits, no leading zero (``-.67``, ``.094``, ``1.5``).

    >>> [short_label(v) for v in (-0.671, 0.0937, 1.5, -0.0045, 120.0)]
    ['-.67', '.094', '1.5', '-.0045', '1.2e+02']
    """
    t = f"{v:.2g}"
    if t.startswith("0."):
        return t[1:]
    if t.startswith("-0."):
        return "-" + t[2:]
    return t


def pe_label(p: int) -> str:
    """The label of PE ``p`` on its tiles' frames in the Learn matrix."""
    return f"PE {p}"


def _wrap_list(values: list[str], per_line: int) -> list[str]:
    return [", ".join(values[k:k + per_line]) for k in range(0, len(values), per_line)]


def learn_matrix(A, x, tile: int, bi, bj, tile_pe, step=None, height: int | None = None,
                 width: int = PANEL_WIDTH) -> go.Figure:
    """The tiny matrix: values as text (without the leading zero where the cells are small), each tile
    framed in the colour of its PE and tagged with the PE's id, x on top.

    The current step's tile is framed thick and its input column highlighted. The cells are square and as
    large as ``width`` allows (at most 46 px); the value labels get the largest font (≤ 13 px) at which
    the longest one fits its cell. Where that is below ``MIN_LABEL_FONT``, they are drawn at that size
    and the few that still do not fit are left out; if more than a quarter would be, all are (the
    values are always in the hover).
    ``height`` defaults to what the cells need.
    """
    A = np.asarray(A, np.float64)
    n, m = A.shape
    z = np.where(A != 0, np.abs(A), np.nan)
    plot_w = width - _MATRIX_MARGIN["l"] - _MATRIX_MARGIN["r"]
    cell = max(4, min(46, plot_w // max(m, 1)))
    # the plain labels (-0.67) where they fit at 11 px or more, else the short ones (-.67)
    text = [[f"{v:.2g}" if v != 0 else "" for v in row] for row in A]
    labels = [t for row in text for t in row if t]
    size = label_font(cell, labels)
    if size < 11:
        text = [[short_label(v) if v != 0 else "" for v in row] for row in A]
        labels = [t for row in text for t in row if t]
        size = label_font(cell, labels)
    omitted = 0
    show = size >= MIN_LABEL_FONT
    if not show and labels:
        # a few long labels (-.0045) must not hide all the others: at the smallest readable size,
        # the ones that still do not fit are left out (their value is in the hover) — if they are few
        fits = [[t if t and text_em(t) * MIN_LABEL_FONT <= cell - 4 else "" for t in row] for row in text]
        omitted = sum(1 for row, frow in zip(text, fits) for t, f in zip(row, frow) if t and not f)
        if omitted <= len(labels) // 4:
            size, text, show = MIN_LABEL_FONT, fits, True
        else:
            omitted = 0
    hover = [[f"{v:.4g}" for v in row] for row in A]
    # Blues off white and only to a mid blue: every value label, in TEXT_DARK, keeps ≥ 5.5:1
    # (on plotly's full Blues the mid blues failed with either text colour)
    heat = dict(z=z, customdata=hover, colorscale=BLUES_UNDER_TEXT, showscale=False,
                hovertemplate="Â[%{y},%{x}] = %{customdata}<extra></extra>", xgap=1, ygap=1)
    if show:
        heat.update(text=text, texttemplate="%{text}", textfont=dict(size=size, color=TEXT_DARK))
    fig = go.Figure(go.Heatmap(**heat))
    # the frames and tags as two lists set once: one add_shape / add_annotation per tile re-validates
    # the whole list each time (0.2 s for a 16 × 16 matrix of 16 tiles, paid on every Learn step)
    shapes, notes = [], []
    for u in range(len(bi)):
        c = PE_COLORS[int(tile_pe[u]) % len(PE_COLORS)]
        cur = step is not None and step.tile == u and step.kind in ("event", "final", "send", "reduce")
        x0, y0 = float(bj[u] * tile - 0.5), float(bi[u] * tile - 0.5)
        shapes.append(dict(type="rect", x0=x0, x1=float(min((bj[u] + 1) * tile, m) - 0.5),
                           y0=y0, y1=float(min((bi[u] + 1) * tile, n) - 0.5),
                           line=dict(color=c, width=5 if cur else 2)))
        # the PE's id on the frame's top edge, at its left corner: colour is not the only link
        # from a tile to its PE (the grid's boxes are "PE 0", "PE 1", …)
        notes.append(dict(x=x0, y=y0, xanchor="left", yanchor="middle", xshift=2, text=pe_label(int(tile_pe[u])),
                          showarrow=False, font=dict(size=9 if cell < 30 else 10, color=TEXT_DARK),
                          bgcolor="#ffffff", bordercolor=c, borderwidth=1, borderpad=0))
    if step is not None and step.column >= 0:
        # the input column of the event, shaded over the plot's whole height (what add_vrect draws)
        shapes.append(dict(type="rect", xref="x", yref="y domain", x0=step.column - 0.5, x1=step.column + 0.5,
                           y0=0, y1=1, fillcolor="#e6194b", opacity=0.15, line_width=0, layer="above"))
    fig.update_layout(shapes=shapes, annotations=notes)
    # both axes constrained to their domain: the ranges stay [-0.5, n - 0.5] (no stray "−1" / "n" ticks)
    tick = 1 if cell >= 16 else 2
    fig.update_yaxes(autorange=False, title="row i", dtick=tick, scaleanchor="x", range=[n - 0.5, -0.5],
                     constrain="domain", showgrid=False, zeroline=False)
    fig.update_xaxes(title="column j", dtick=tick, range=[-0.5, m - 0.5], constrain="domain",
                     showgrid=False, zeroline=False)
    # x, at most 8 values a line, so it fits above the matrix
    xs = [f"{v:.2g}" if v != 0 else "0" for v in np.asarray(x)]
    per = 8
    x_lines = [f"x[{k}:{min(k + per, len(xs))}] = [{', '.join(xs[k:k + per])}]" if len(xs) > per
               else f"x = [{', '.join(xs)}]" for k in range(0, len(xs), per)]
    sub = "<br>".join(f"<span style='font-size:12px'>{t}</span>" for t in x_lines)
    if not show:
        sub += "<br><span style='font-size:12px'>(values in the hover: the cells are too small for labels)</span>"
    elif omitted:
        sub += (f"<br><span style='font-size:12px'>({omitted} value{'s' if omitted > 1 else ''} too long for "
                f"{'their cells' if omitted > 1 else 'its cell'}: in the hover)</span>")
    # plotly spaces every title line as a 14 px one (≈ 20 px), whatever its own font size
    top = 27 + 19 * (1 + len(x_lines) + (not show or omitted > 0))
    if height is None:
        height = cell * n + top + _MATRIX_MARGIN["b"] + 10
    fig = styled(fig, f"Â, tiles framed in their PE's colour<br>{sub}", height, width=width,
                 margin=dict(_MATRIX_MARGIN, t=top))
    # the title's lines downwards from the top: centred in the margin, its last line ran into row 0
    fig.update_layout(title=dict(yref="container", y=1 - 17 / height, yanchor="top"))
    return fig


def learn_grid(state: dict, trace, step=None, height: int | None = None, width: int = PANEL_WIDTH) -> go.Figure:
    """The PE grid after the current step: clock, queue and role of each PE; the step as an arrow.

    The boxes are square and as large as ``width`` allows (at most 190 px); on a 3-wide grid the text is
    a size smaller and the queue is listed two events a line.
    """
    R, C = trace.grid
    box = max(60, min(190, (width - 20) // max(C, 1)))
    font = 12 if box >= 170 else 10
    per_line = 3 if box >= 170 else 2
    fig = go.Figure()
    shapes, notes = [], []       # set once at the end (see learn_matrix)
    reducers, sources = set(trace.red_pe.tolist()), set(trace.src_pe.tolist())
    for p in range(R * C):
        r, c = divmod(p, C)
        col = PE_COLORS[p % len(PE_COLORS)]
        active = step is not None and step.pe == p
        shapes.append(dict(type="rect", x0=c + 0.05, x1=c + 0.95, y0=r + 0.05, y1=r + 0.95,
                           line=dict(color=col, width=5 if active else 2), fillcolor="rgba(255,255,255,0.9)"))
        held = np.flatnonzero(trace.tile_pe == p)
        # "tile #0", not "tiles: 0", which a student reads as "no tiles"
        tiles = ("holds no tile" if held.size == 0 else
                 ("holds tile " if held.size == 1 else "holds tiles ") + ", ".join(f"#{u}" for u in held))
        roles = []
        if p in reducers:
            roles.append("reduces row block " + ",".join(str(b) for b in np.flatnonzero(trace.red_pe == p)))
        if p in sources:
            roles.append("source of col block " + ",".join(str(b) for b in np.flatnonzero(trace.src_pe == p)))
        q = state["queues"][p]
        if q:
            qlines = _wrap_list([f"x[{j}]@{a}" for _, j, a in q[:6]], per_line)
            if len(q) > 6:
                qlines.append(f"… (+{len(q) - 6} more)")
            qtxt = ["queue: " + qlines[0], *qlines[1:]]
        else:
            qtxt = ["queue: empty"]
        lines = [f"<b>PE {p}</b> ({r},{c})", f"clock {int(state['pe_clock'][p])}",
                 tiles, *roles, *qtxt]
        notes.append(dict(x=c + 0.5, y=r + 0.5, text="<br>".join(lines), showarrow=False,
                          font=dict(size=font), align="center"))
    if step is not None:
        src = tgt = step.pe
        if step.kind == "event":      # the event came from its column block's source PE
            src = int(trace.src_pe[step.column // trace.tile])
        elif step.kind == "reduce":   # the partial sums came from the tile's PE
            src = int(trace.tile_pe[step.tile])
        elif step.kind == "send":     # the partial sums leave for the tile's row block's reduction PE
            tgt = int(trace.red_pe[int(trace.meta["row0"][step.tile]) // trace.tile])
        if src != tgt:
            (r0, c0), (r1, c1) = divmod(src, C), divmod(tgt, C)
            notes.append(dict(x=c1 + 0.5, y=r1 + 0.85, ax=c0 + 0.5, ay=r0 + 0.85, xref="x", yref="y", axref="x",
                              ayref="y", showarrow=True, arrowhead=3, arrowsize=1.5, arrowwidth=2,
                              arrowcolor=KIND_COLORS.get(step.kind, "#333")))
    fig.update_layout(shapes=shapes, annotations=notes)
    fig.update_xaxes(range=[0, C], visible=False)
    fig.update_yaxes(range=[R, 0], visible=False, scaleanchor="x")
    if height is None:
        height = box * R + 60
    fig.update_layout(width=width)
    # which step the picture is after, not only its cycle: the first steps all start at cycle 0, and
    # "at cycle 0" over several Next presses read as if the grid had not moved (student probe)
    done = len(state.get("done", ()))
    when = (f"before step 1, cycle {state['time']}" if not done else
            f"after step {done} of {len(trace.steps)}, cycle {state['time']}")
    return styled(fig, f"PE grid {R}×{C} {when}", height, margin=dict(l=10, r=10, t=50, b=10))


def learn_timeline(trace, upto: int, height: int | None = None) -> go.Figure:
    """Steps done so far as bars per PE (start → end), coloured by kind.

    Steps that take no cycles (an injection, a send) are drawn as ticks on top of the bars,
    so they stay visible where they coincide with a setup or an event on the same PE.
    Every PE of the grid has its row from step 0 on (the axes do not change while stepping);
    the legend sits under the title, left-aligned, so it fits a narrow page.
    """
    R, C = trace.grid
    n_pe = R * C
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
                                    marker=dict(symbol=KIND_SYMBOLS.get(kind, "circle"), size=13, color=color,
                                                line=dict(color="white", width=1)),
                                    hovertemplate=f"{kind} at cycle %{{x}}<extra></extra>"))
    # after every bar: on top; "final" last, over the "send" diamonds at the same cycle and PE
    for tick in sorted(ticks, key=lambda t: t.name == "final"):
        fig.add_trace(tick)
    # the line's value in the axis title: a label at the line ran past the plot's edge ("makespar")
    # or over PE 0's bars
    fig.add_vline(x=trace.makespan, line=dict(color="#e6194b", dash="dash"))
    # no zero line: on a categorical PE axis it is a stray rule through PE 0's row;
    # a fixed range lists every PE of the grid from the first step on
    fig.update_yaxes(tickvals=list(range(n_pe)), ticktext=[f"PE {p}" for p in range(n_pe)],
                     range=[n_pe - 0.5, -0.5], autorange=False, zeroline=False)
    fig.update_xaxes(title=f"cycle (dashed line: makespan = {trace.makespan})",
                     range=[0, trace.makespan * 1.05 + 1])
    if height is None:
        height = 150 + 26 * n_pe
    fig = styled(fig, "Timeline of the steps done so far", height,
                 legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom"),
                 margin=dict(l=60, r=20, t=66, b=50))
    fig.update_layout(title=dict(yref="container", y=1.0, yanchor="top", pad=dict(t=10)))
    return fig


def kernel_error_text(A, A_hat, x, matrix_error: float) -> str:
    """What the kernels cost in accuracy on the tiny case: the matrix error ``‖A − Â‖_F / ‖A‖_F``
    (the plan's ``relative_error``, akf-spec §5) and the output error ``‖Âx − Ax‖₂ / ‖Ax‖₂`` for
    this x; "exact" when Â = A. The y table shows Â x, which the run ends at, not A x.

    >>> import scipy.sparse as sp
    >>> A = sp.csr_array(np.array([[1.0, 2.0], [0.0, 4.0]]))
    >>> kernel_error_text(A, A.toarray(), np.ones(2), 0.0)
    'The kernels are exact here: Â = A, so Â x = A x.'
    >>> kernel_error_text(A, np.array([[1.0, 2.0], [0.0, 3.0]]), np.ones(2), 1 / np.sqrt(21))
    'The kernels are lossy: ‖A − Â‖_F / ‖A‖_F = 21.8 %; for this x, ‖Âx − Ax‖ / ‖Ax‖ = 20 %.'
    """
    dense = A.toarray() if hasattr(A, "toarray") else np.asarray(A, np.float64)
    A_hat = np.asarray(A_hat, np.float64)
    x = np.asarray(x, np.float64)
    if np.array_equal(dense, A_hat):
        return "The kernels are exact here: Â = A, so Â x = A x."
    y, y_hat = dense @ x, A_hat @ x
    ny = float(np.linalg.norm(y))
    out = f"{100 * float(np.linalg.norm(y_hat - y)) / ny:.3g} %" if ny > 0 else \
        f"n/a (A x = 0, ‖Âx‖ = {float(np.linalg.norm(y_hat)):.3g})"
    return (f"The kernels are lossy: ‖A − Â‖_F / ‖A‖_F = {100 * float(matrix_error):.3g} %; "
            f"for this x, ‖Âx − Ax‖ / ‖Ax‖ = {out}.")
