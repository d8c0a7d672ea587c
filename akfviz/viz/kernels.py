"""Selector figures (akf-spec §4–§5): kernel choice map, fusion-weight trajectory, Pareto front, table fits."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .colors import NEUTRAL_DARK, family_color, family_dash, families_in, kernel_color, kernel_family
from .layout import (BAR_TEXT, aggregation_note, cell_gap, coarse_grid, empty_figure, fit_grid, grid_axes, grid_height,
                     log_ticks, occupancy, styled)


def factorize_kernels(tile_kernels) -> tuple[np.ndarray, list]:
    """``(codes, names)``: one int code per tile and the distinct kernel names.

    A :class:`pandas.Categorical` (``FusionPlan.tile_kernels_categorical``) is used as it is;
    any other sequence of names is factorised once, so per-tile work stays in numpy.
    """
    if isinstance(tile_kernels, pd.Categorical):
        return np.asarray(tile_kernels.codes, dtype=np.int64), [str(c) for c in tile_kernels.categories]
    codes, uniq = pd.factorize(np.asarray(tile_kernels, dtype=object).astype(str))
    return np.asarray(codes, dtype=np.int64), [str(u) for u in uniq]


#: Relative errors below this are float64 rounding (the unit roundoff is 1.1e-16; a sum over a
#: row of thousands of terms stays well under it), shown as "0 % (rounding)".
ROUNDING_LEVEL = 1e-12


def kernel_map(tiles, tile_kernels, n_brows: int, n_bcols: int, tile: int,
               families: dict | None = None, cap: int = 256, height: int = 440) -> go.Figure:
    """Tiles coloured by the family of their chosen kernel — one fixed colour per family.

    The colour scale is a step scale over the families present, so a family's colour is the
    same here as in every other figure (``colors.FAMILY_COLORS``). ``tile_kernels``: names
    per tile, or a :class:`pandas.Categorical` of them.
    """
    if len(tiles) == 0:
        return empty_figure("No nonempty tiles.", height)
    codes, uniq = factorize_kernels(tile_kernels)
    present = [u for u, c in zip(uniq, np.bincount(codes, minlength=len(uniq))) if c]
    order = families_in(present, families)
    fam_code = np.array([order.index(kernel_family(u, (families or {}).get(u))) if u in present
                         else 0 for u in uniq], dtype=np.float64)
    vals = fam_code[codes]
    grid, sr, sc = coarse_grid(tiles["bi"].to_numpy(), tiles["bj"].to_numpy(), vals,
                               (n_brows, n_bcols), cap, "first")
    kname = np.array(uniq, dtype=object)
    k = len(order)
    scale = []
    for i, f in enumerate(order):
        scale += [[i / k, family_color(f)], [(i + 1) / k, family_color(f)]]
    labels = np.full(grid.shape, "", dtype=object)
    idx, _, _ = coarse_grid(tiles["bi"].to_numpy(), tiles["bj"].to_numpy(), np.arange(len(tiles)),
                            (n_brows, n_bcols), cap, "first", fill=-1)
    ok = idx >= 0
    labels[ok] = kname[codes[idx[ok].astype(np.int64)]]
    text, text_hover = occupancy(tiles["bi"].to_numpy(), tiles["bj"].to_numpy(), (n_brows, n_bcols), cap, sr, sc)
    fig = go.Figure(go.Heatmap(
        z=grid.astype(np.float32), customdata=labels, x0=(sc - 1) / 2, dx=sc, y0=(sr - 1) / 2, dy=sr,
        colorscale=scale if k > 1 else [[0, family_color(order[0])], [1, family_color(order[0])]],
        zmin=-0.5, zmax=k - 0.5, xgap=cell_gap(n_brows, n_bcols), ygap=cell_gap(n_brows, n_bcols),
        colorbar=dict(title="kernel family", tickvals=list(range(k)), ticktext=order, len=min(1.0, 0.1 * k + 0.3)),
        text=text, hovertemplate="bi %{y:.0f}, bj %{x:.0f}<br>%{customdata}" + text_hover + "<extra></extra>",
    ))
    stretched = grid_axes(fig, n_brows, n_bcols, f"tile row bi (×{tile})", f"tile column bj (×{tile})")
    note = aggregation_note(sr, sc, "the kernel of its first nonempty tile")
    note += " (aspect stretched)" if stretched else ""
    fig = styled(fig, "Kernel choice per tile" + note, grid_height(n_brows, n_bcols, height))
    return fit_grid(fig, n_brows, n_bcols, legend_px=40 + 7 * max(len(f) for f in order))


def kernel_mix(tile_kernels, weights=None, families: dict | None = None, height: int = 300) -> go.Figure:
    """Horizontal bars: number of tiles (or ``weights``, e.g. nnz) per chosen kernel
    (``tile_kernels``: names per tile, or a :class:`pandas.Categorical`).

    Bars run bottom to top in the kernel map's colour-bar order (the families of
    ``colors.FAMILY_ORDER``, then by name within a family), and every bar is labelled with its
    value and share, so a bar too short to see still reads (e.g. 12 nonzeros of 600,000)."""
    codes, names = factorize_kernels(tile_kernels)
    if codes.size == 0:
        return empty_figure("No tiles.", height)
    w = np.ones(codes.size) if weights is None else np.asarray(weights, np.float64)
    sums = np.bincount(codes, weights=w, minlength=len(names))
    used = np.bincount(codes, minlength=len(names)) > 0
    uniq = mix_order([n for n, u in zip(names, used) if u], families)
    tot = [float(sums[names.index(u)]) for u in uniq]
    what = "tiles" if weights is None else "nonzeros"
    total = sum(tot) or 1.0
    fig = go.Figure(go.Bar(y=uniq, x=tot, orientation="h", name=what,
                           marker_color=[kernel_color(u, (families or {}).get(u)) for u in uniq],
                           text=[f"{v:,.0f} ({share_text(v / total)})" for v in tot],
                           textposition="outside", cliponaxis=False, textfont=dict(size=BAR_TEXT),
                           hovertemplate=f"%{{y}}: %{{x:,.0f}} {what}<extra></extra>"))
    # first family at the bottom, as on the kernel map's colour bar beside it (not reversed)
    # room past the longest bar for its label
    fig.update_xaxes(title=what, range=[0, 1.45 * max(max(tot), 1e-30)], nticks=4)
    return styled(fig, f"Kernel mix, by {what}", height, uniformtext=dict(minsize=BAR_TEXT, mode="show"))


def share_text(f: float) -> str:
    """A share for a bar label: "45 %", "0.3 %", "< 0.1 %", "> 99 %" (never a rounded "0 %" for a kernel
    in use, nor "100 %" for one that is not the whole).

    >>> share_text(0.45), share_text(0.003), share_text(1e-5), share_text(0.0), share_text(0.997), share_text(1.0)
    ('45 %', '0.3 %', '< 0.1 %', '0 %', '> 99 %', '100 %')
    """
    p = 100 * f
    if p == 0:
        return "0 %"
    if p < 0.1:
        return "< 0.1 %"
    text = f"{p:.2g}" if p < 10 else f"{p:.0f}"
    return "> 99 %" if text == "100" and p < 100 else f"{text} %"


def mix_order(names, families: dict | None = None) -> list[str]:
    """Kernel names in the kernel map's colour-bar order: by family as :func:`colors.families_in`
    orders them (``FAMILY_ORDER``, unknown families last), then by name within a family.

    >>> mix_order(["SKIP", "PRUNE50", "BLOCK4", "CSC", "QUANT8"])
    ['CSC', 'BLOCK4', 'PRUNE50', 'QUANT8', 'SKIP']
    """
    names = list(names)
    fam = {n: kernel_family(n, (families or {}).get(n)) for n in names}
    order = families_in(names, families)
    return sorted(names, key=lambda n: (order.index(fam[n]), n))


def no_fusion_reason(mode: str, notes=()) -> str:
    """Why a plan has no fusion-weight trajectory, in words for the Kernels page: the selector's
    own note when it left the descent out (e.g. "fusion descent skipped: … fits in SRAM"), else
    the mode.

    >>> no_fusion_reason("weights", ["fusion descent skipped: 9216 tiles and the argmin plan fits in SRAM"])
    'The fusion-weight descent was skipped for this plan: 9216 tiles and the argmin plan fits in SRAM.'
    >>> no_fusion_reason("error_budget")[:53]
    'No fusion-weight descent for this plan: budget modes '
    """
    from ..selection.selector import FUSION_SKIPPED as skipped  # the note's own prefix

    for note in notes or ():
        if str(note).startswith(skipped):
            return f"The fusion-weight descent was skipped for this plan: {str(note)[len(skipped):].strip()}."
    if mode != "weights":
        return ("No fusion-weight descent for this plan: budget modes pick the kernels by bisection on α/β "
                "(the budget is the constraint); the descent runs in α / β mode.")
    return "No fusion-weight trajectory was recorded for this plan (no decision units)."


def budget_search_caption(trace) -> str:
    """One line for the Kernels page in budget modes: how many plans the search measured, and which
    step gave the plan kept (:data:`akfviz.selection.budgets.STEP_NAMES`).

    >>> import pandas as pd
    >>> tr = pd.DataFrame({"lambda": [0.0, float("inf"), 1.0, float("nan")], "error": [0.3, 0.0, 0.1, 0.1],
    ...                    "resource": [1.0, 3.0, 2.0, 1.9], "feasible": [False, True, True, True],
    ...                    "step": ["search", "search", "search", "exchange"], "kept": [False, False, False, True]})
    >>> budget_search_caption(tr)[:80]
    'Budget search: 4 plans measured (3 multipliers, then exchange); the plan kept ca'
    """
    from ..selection.budgets import STEP_NAMES, kept_step

    n = len(trace)
    steps = list(trace["step"]) if "step" in trace.columns else ["search"] * n
    n_mult = sum(s == "search" for s in steps)
    later = list(dict.fromkeys(s for s in steps if s != "search"))
    head = (f"Budget search: {n} plan{'s' if n != 1 else ''} measured ({n_mult} multiplier{'s' if n_mult != 1 else ''}"
            + (", then " + ", ".join(later) if later else "") + ")")
    step = kept_step(trace)
    if step is None:
        return head + "."
    tail = f"; the plan kept came from {STEP_NAMES.get(step, step)}"
    if step != "search":
        tail += (", so some units need not hold the kernel of least C at the reported α/β "
                 "(the explanation below says why for the selected tile)")
    return head + tail + "."


def fusion_trajectory(steps, cost, entropy, weights: dict | None = None, height: int = 360) -> go.Figure:
    """Fusion-weight optimisation (paper eq. 1): expected cost and entropy per step, and weights.

    ``weights`` maps a kernel name to its mean weight per step (optional).
    """
    steps = np.asarray(steps)
    if steps.size == 0:
        return empty_figure("No fusion-weight trajectory recorded.", height)
    n_rows = 2 if weights else 1
    fig = make_subplots(rows=n_rows, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        specs=[[{"secondary_y": True}]] + ([[{}]] if weights else []))
    # cost in a neutral colour: it is not a kernel family's weight
    fig.add_trace(go.Scatter(x=steps, y=cost, name="expected cost", line=dict(color=NEUTRAL_DARK)), 1, 1)
    # entropy in neutral grey: no kernel family is grey-dotted, so it is not read as a weight
    fig.add_trace(go.Scatter(x=steps, y=entropy, name="entropy", line=dict(color="#7f8c8d", dash="dot")),
                  1, 1, secondary_y=True)
    fig.update_yaxes(title_text="cost", row=1, col=1)
    # natural logarithm (fusion_weights: log w), so nats
    # round ticks from 0 (plotly synced them to the cost axis' grid: 1.708, 1.207, 0.705, 0.204), no grid
    # of its own over the cost axis' grid
    ent = np.asarray(entropy, np.float64)
    ent = ent[np.isfinite(ent)]
    top = float(ent.max()) if ent.size else 1.0
    fig.update_yaxes(title_text="entropy (nats)", row=1, col=1, secondary_y=True, tickmode="linear", tick0=0,
                     dtick=0.5 if top > 1 else 0.25 if top > 0.4 else 0.1, range=[0, max(top, 0.1) * 1.05],
                     showgrid=False)
    if weights:
        for name, w in weights.items():
            style = line_by_family(name, weights)
            marker = style.pop("marker", None)
            fig.add_trace(go.Scatter(x=steps, y=w, name=f"w[{name}]", line=style,
                                     mode="lines+markers" if marker else "lines", marker=marker), 2, 1)
        # the winner named at the end of its line: two kernels of one family share a colour
        last = {name: float(np.asarray(w, np.float64)[-1]) for name, w in weights.items() if np.size(w)}
        if last:
            win = max(last, key=last.get)
            fig.add_annotation(x=steps[-1], y=last[win], text=f"<b>{win}</b>", showarrow=False, xanchor="right",
                               yanchor="top" if last[win] > 0.8 else "bottom", font=dict(color=kernel_color(win)), row=2, col=1)
        fig.update_yaxes(title_text="mean weight", range=[0, 1.02], row=2, col=1)
    fig.update_xaxes(title_text="gradient step", row=n_rows, col=1)
    # a right margin for the entropy axis' title (cut to "entropy (nats" in the default 20 px)
    return styled(fig, "Fusion-weight trajectory", height if not weights else height + 140,
                  legend=dict(orientation="h", y=-0.18), margin=dict(l=60, r=60, t=50, b=50))


#: Most kernels whose mean fusion weight the trajectory figure draws.
TOP_WEIGHTS = 6


def top_fusion_weights(selection, n_steps: int, top: int = TOP_WEIGHTS) -> dict | None:
    """The fusion weights to draw under the trajectory: mean weight per step of the ``top``
    kernels heaviest at the last step.

    Parameters
    ----------
    selection : SelectionReport
        ``plan.selection``; its ``fusion.weights_trajectory`` has shape (steps, units, kernels)
        and ``candidates`` names the kernels.
    n_steps : int
        Steps of the recorded cost trajectory (the figure's x axis).
    top : int
        Most kernels returned.

    Returns
    -------
    dict or None
        Kernel name -> mean weight per step (heaviest at the last step first), for
        :func:`fusion_trajectory`; None without a weight trajectory or when its steps are not
        the cost trajectory's.
    """
    wtraj = getattr(getattr(selection, "fusion", None), "weights_trajectory", None)
    if wtraj is None or not wtraj.size:
        return None
    mean_w = wtraj.mean(axis=1)            # (steps, K)
    if n_steps != mean_w.shape[0]:
        return None
    order = np.argsort(mean_w[-1])[::-1][:top]
    return {selection.candidates[k]: mean_w[:, k] for k in order}


def perftable_curves(table, kernel: str, measure: str, n_points: int = 60) -> list[dict]:
    """The curves :func:`perftable_fits` draws for one kernel and measure of a performance table:
    per structure class with calibration points, those points and the fit on a log-spaced
    density grid over the class's domain.

    Parameters
    ----------
    table : PerformanceTable
        The calibrated table (``calibration``, ``classes``, ``domain``, ``predict``).
    kernel : str
        The kernel.
    measure : str
        One of ``table.measures``.
    n_points : int
        Points of each fitted curve.

    Returns
    -------
    list of dict
        Keys ``kernel``, ``label``, ``density``, ``measured``, ``grid`` and ``fit``.
    """
    cal = table.calibration
    curves = []
    for j, cls in enumerate(table.classes):
        pts = cal[(cal["kernel"] == kernel) & (cal["class"] == cls)]
        if not len(pts):
            continue
        lo, hi = table.domain[j]
        grid = np.logspace(np.log10(max(lo, 1e-6)), np.log10(max(hi, lo * 1.0001, 1e-6)), n_points)
        curves.append({"kernel": kernel, "label": f"{kernel} · {cls}", "density": pts["density"],
                       "measured": pts[measure], "grid": grid,
                       "fit": table.predict(kernel, cls, grid, measure=measure)})
    return curves


#: Marker symbols for the second, third … kernel of one family in a figure (the first has none).
VARIANT_SYMBOLS: tuple = ("circle", "square", "diamond", "triangle-up", "x")


def line_by_family(name: str, names) -> dict:
    """Line style of kernel ``name`` among ``names``: its family's colour and dash pattern
    (colour is not the only cue: families that look alike to a colour-blind reader still
    differ in dash), and, for the second, third … kernel of one family in ``names``, a
    ``marker`` (plotly marker dict) that tells it from the first (QUANT8 plain, QUANT8D with
    circles)."""
    fam = kernel_family(name)
    same = [n for n in names if kernel_family(n) == fam]
    style = dict(color=kernel_color(name), dash=family_dash(fam))
    k = same.index(name)
    if k:
        style["marker"] = dict(symbol=VARIANT_SYMBOLS[(k - 1) % len(VARIANT_SYMBOLS)], size=7,
                               color=style["color"], maxdisplayed=12)
    return style


PARETO_CUT_PCT = 50.0
"""Pareto plans with a relative error above this (in %) are cut off the chart when two others remain."""


def _span(name: str, values: np.ndarray, unit: str) -> str:
    """``"error 99.3–100 %"`` for several distinct values, ``"error 100 %"`` for one."""
    lo, hi = float(np.min(values)), float(np.max(values))
    if f"{lo:.3g}" == f"{hi:.3g}":
        return f"{name} {hi:.3g}{unit}"
    return f"{name} {lo:.3g}–{hi:.3g}{unit}"


def pareto_front(error, resource, current=None, labels=None, resource_name: str = "resource",
                 height: int = 380, between=None) -> go.Figure:
    """Error–resource Pareto front from the multiplier sweep, with the current plan marked.

    The front usually ends in plans that drop nearly everything (all SKIP: error ≈ 100 % at almost
    no resource), which flattened every useful plan into a line at 0 % and, on the resource axis,
    squeezed them into a sliver at its right end (``powerlaw`` 4096², T = 16: every plan under
    23 % error between 0.069 and 0.072 × Dense, on an axis from 0). Such plans are cut off the
    chart when at least two others remain: a largest error more than 10× the next one, and every
    error over :data:`PARETO_CUT_PCT` (the plan lost more than half of ‖A‖_F). Both axes then span
    the plans left in view and the current plan, and a note at the top says where the cut-off
    plans are. The current plan is never cut. Every point stays in the trace (hover, export).
    ``between`` (bool per point): plans between two corners of the multiplier sweep, drawn as small
    dots; the corners as larger markers."""
    error = np.asarray(error, np.float64)
    resource = np.asarray(resource, np.float64)
    if error.size == 0:
        return empty_figure("No Pareto points.", height)
    order = np.argsort(resource)
    size = 7 if between is None else np.where(np.asarray(between, dtype=bool)[order], 3, 7)
    fig = go.Figure(go.Scatter(x=resource[order], y=100 * error[order], mode="lines+markers", name="front",
                               # sizes per point make plotly.js draw "bubbles": opacity 0.7 and a
                               # white 1-px outline, which turned a thousand 3-px dots between
                               # corners into a pale band over the line; solid, unoutlined dots here
                               line=dict(color=NEUTRAL_DARK, shape="hv"),
                               marker=dict(size=size, color=NEUTRAL_DARK, opacity=1.0, line=dict(width=0)),
                               text=None if labels is None else np.asarray(labels, dtype=object)[order],
                               hovertemplate=f"{resource_name} %{{x:.4g}}, error %{{y:.3g}} %<br>"
                                             "tiles per kernel: %{text}<extra></extra>"))
    if current is not None:
        fig.add_trace(go.Scatter(x=[current[1]], y=[100 * current[0]], mode="markers", name="current plan",
                                 marker=dict(symbol="star", size=16, color="#e6194b")))
    fig.update_xaxes(title=resource_name)
    fig.update_yaxes(title="relative error ‖A−Â‖_F/‖A‖_F (%)")
    finite = np.isfinite(error)
    levels = np.unique(100 * error[finite])
    keep = np.inf  # the largest error level left in view
    if levels.size >= 3 and levels[-2] > 0 and levels[-1] > 10 * levels[-2]:
        keep = levels[-2]
    useful = levels[levels <= PARETO_CUT_PCT]
    if useful.size >= 2 and useful[-1] > 0:
        keep = min(keep, useful[-1])
    # the axes keep the current plan in view: when it is among the cut-off plans, fewer are cut
    top = 1.15 * max(keep, 100 * current[0] if current is not None else 0.0)
    far = finite & (100 * error > top)
    if far.any():
        fig.update_yaxes(range=[-0.03 * top, top])
        near = resource[~far & np.isfinite(resource)]
        if current is not None and np.isfinite(current[1]):
            near = np.append(near, current[1])
        if near.size:
            lo, hi = float(near.min()), float(near.max())
            pad = 0.04 * (hi - lo) if hi > lo else 0.05 * max(abs(hi), 1e-12)
            fig.update_xaxes(range=[lo - pad, hi + pad])
        fig.add_annotation(x=0, xref="paper", y=1, yref="paper", xanchor="left", yanchor="bottom",
                           showarrow=False, font=dict(size=11, color="#555"), align="left",
                           text=f"↑ {int(far.sum())} plan{'s' if far.sum() > 1 else ''} off the chart<br>"
                                f"({_span('error', 100 * error[far], ' %')}, "
                                f"{_span('resource', resource[far], '')})")
    # the legend below the axis title: at the top it ran into the cut-off note
    return styled(fig, "Error–resource Pareto front", height + 50,
                  legend=dict(orientation="h", y=-0.22, yanchor="top", x=1, xanchor="right"),
                  margin=dict(l=60, r=20, t=70 if far.any() else 50, b=80))


def flat_range(values, rel: float = 1e-9, pad: float = 0.05):
    """A y-axis range ``[v − pad·|v|, v + pad·|v|]`` (``[-1, 1]`` at ``v = 0``) for values that are one
    number up to rounding (spread ≤ ``rel`` · their magnitude), else None (plotly's own range).

    A constant measure (DENSE costs the same at every density) fitted in floating point varies by
    ~1e-12; plotly scaled the axis to that noise: a zig-zag line, ticks "10.07440000000000069k".

    >>> flat_range([200.0, 200.00000000000003]), flat_range([1.0, 2.0])
    ([190.0, 210.0], None)
    """
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    lo, hi = float(v.min()), float(v.max())
    mag = max(abs(lo), abs(hi))
    if hi - lo > rel * mag:
        return None
    mid = (lo + hi) / 2
    half = pad * abs(mid) if mid != 0 else 1.0
    return [mid - half, mid + half]


def perftable_fits(curves: list[dict], height_per_row: int = 210, cols: int = 3,
                   y_title: str | None = None) -> go.Figure:
    """Performance-table fits against their calibration points, density on a log axis.

    ``curves``: dicts with ``kernel``, ``label``, ``density`` and ``measured`` (calibration
    points), ``grid`` and ``fit`` (the polynomial evaluated by Horner's rule). ``y_title``
    labels the first plot of every row (the measure and its unit).
    """
    if not curves:
        return empty_figure("No performance-table fits available.")
    rows = -(-len(curves) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[c["label"] for c in curves],
                        horizontal_spacing=0.08, vertical_spacing=0.35 / max(rows, 1) + 0.02)
    for i, c in enumerate(curves):
        r, k = i // cols + 1, i % cols + 1
        col = kernel_color(c["kernel"])
        fig.add_trace(go.Scatter(x=c["density"], y=c["measured"], mode="markers", marker=dict(color=col, size=6),
                                 name="calibration", showlegend=i == 0, legendgroup="cal"), r, k)
        fig.add_trace(go.Scatter(x=c["grid"], y=c["fit"], mode="lines", line=dict(color="#333", width=1.5),
                                 name="polynomial fit", showlegend=i == 0, legendgroup="fit"), r, k)
    # ticks from log_ticks: plotly's own log ticks label 2 and 5 of every decade, which run
    # together in a 200-pixel plot, and a fixed one-per-decade step leaves a narrow range
    # (the N:M class spans 0.3–0.5) without any label
    fig.update_xaxes(title_text="density", title_standoff=2, type="log")
    for i, c in enumerate(curves):
        d = np.concatenate([np.asarray(c["density"], np.float64), np.asarray(c["grid"], np.float64)])
        d = d[np.isfinite(d) & (d > 0)]
        if d.size:
            ticks = [10 ** t for t in log_ticks(float(np.log10(d.min())), float(np.log10(d.max())))]
            fig.update_xaxes(tickvals=ticks, ticktext=[f"{t:.2g}" for t in ticks], row=i // cols + 1,
                             col=i % cols + 1)
    for i, c in enumerate(curves):
        span = flat_range(np.concatenate([np.asarray(c["measured"], np.float64), np.asarray(c["fit"], np.float64)]))
        if span is not None:
            fig.update_yaxes(range=span, tickformat="~g", row=i // cols + 1, col=i % cols + 1)
    if y_title:
        for r in range(1, rows + 1):
            fig.update_yaxes(title_text=y_title, title_standoff=4, row=r, col=1)
    fig.update_annotations(font_size=11)
    return styled(fig, height=rows * height_per_row + 80, legend=dict(orientation="h", y=0.995, yanchor="top",
                                                                       x=1, xanchor="right", yref="container"),
                  margin=dict(l=60, r=20, t=70, b=40))


def one_kernel_note(kernel: str, mode: str, alpha: float, beta: float, granularity: str,
                    dropped: int = 0, hint: dict | None = None) -> str:
    """Markdown for a plan that runs one kernel: why nothing is fused, and (``hint``, from
    :func:`akfviz.app_state.mix_hint`) an error budget at which this matrix mixes kernels."""
    from ..kernels.registry import KERNELS

    who = "Every tile" if not dropped else f"Every tile not dropped ({dropped:,} SKIP)"
    unit = "cluster" if granularity == "cluster" else "tile"
    exact = kernel in KERNELS and KERNELS[kernel].lossless
    # an exact kernel wins because no cheaper one's error is worth its saving; a lossy one because
    # no more accurate one's saving in error is worth its cost
    trade = ("no cheaper kernel's error is worth what it saves" if exact else
             "no other kernel's smaller error is worth its larger resource")
    why = (f"at α = {alpha:g}, β = {beta:g} {trade} on any {unit}" if mode == "weights"
           else f"{kernel} is the cheapest kernel within this budget on every {unit}")
    text = (f"**{who} runs {kernel}**: {why}. With one kernel there is nothing to fuse: on the NPU page the "
            "fused and unfused runs are the same.")
    if hint:
        mix = ", ".join(f"{k} on {n:,} tiles" for k, n in sorted(hint["counts"].items(), key=lambda kv: -kv[1]))
        b = hint["budget"]
        text += (f" To see kernels mixed on this matrix, set Mode to **error budget** with ε = {b:g} "
                 f"({100 * b:g} %) and Granularity to **{hint['granularity']}**: that plan uses "
                 f"{len(hint['counts'])} kernels ({mix}; relative error {100 * hint['relative_error']:.3g} %).")
    return text


def kernel_catalogue(used=()) -> pd.DataFrame:
    """The kernel catalogue (akf-spec §3) as a table, from the registry: ``kernel, family, exact,
    MACs`` (the precision) and ``what it stores``, the kernels in ``used`` first (in registry
    order), then the rest — so a name on the page (QUANT8D, BITMAP, …) can be looked up there."""
    from ..kernels.registry import KERNELS

    names = [k for k in KERNELS if k in set(used)] + [k for k in KERNELS if k not in set(used)]
    return pd.DataFrame({
        "kernel": names,
        "used here": [k in set(used) for k in names],
        "family": [KERNELS[k].family for k in names],
        "exact": [bool(KERNELS[k].lossless) for k in names],
        "MACs": [KERNELS[k].precision for k in names],
        "what it stores": [KERNELS[k].description for k in names],
    })


def used_kernels_markdown(used) -> str:
    """One line per kernel the plan uses: its name and what it stores (the registry's words)."""
    from ..kernels.registry import KERNELS

    return "\n".join(f"- **{k}**: {KERNELS[k].description}" for k in KERNELS if k in set(used))
