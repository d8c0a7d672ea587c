"""Design-space figures: Pareto scatter (error vs cycles vs energy) and parallel coordinates."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..errors import shown
from .colors import VIRIDIS_ON_WHITE
from .layout import empty_figure, styled
from .tables import PAGE_PX_1280, grid_px


#: Sweep columns where more is better (speedup over Dense, Block-sparse or Static-sparse); every
#: other column is minimised (the two baseline speedups were once minimised: the Pareto rings
#: picked the slowest plans).
MAXIMISED = frozenset({"speedup", "speedup_vs_blocksparse", "speedup_vs_staticsparse"})

#: Axis, colour-bar and hover titles of sweep columns: words and units instead of the column
#: names ("energy_pj" read "6.5M" on its axis). Energy columns (``…energy_pj``) are drawn in µJ,
#: as the NPU page gives energy; the table and the exports keep the library's pJ.
COLUMN_LABELS = {
    "cycles": "cycles (AKF)", "energy_pj": "energy (µJ)", "error_pct": "error (%)",
    "speedup": "speedup over Dense (×)", "energy_rel": "energy ÷ Dense",
    "payload_bytes": "payload (bytes)", "overflow_bytes": "SRAM overflow (bytes)", "n_tiles": "nonempty tiles",
    "n_kernels": "kernels used", "wall_s": "wall time (s)",
    "dense_cycles": "Dense cycles", "dense_energy_pj": "Dense energy (µJ)",
    "blocksparse_cycles": "Block-sparse cycles", "blocksparse_energy_pj": "Block-sparse energy (µJ)",
    "staticsparse_cycles": "Static-sparse cycles", "staticsparse_energy_pj": "Static-sparse energy (µJ)",
    "speedup_vs_blocksparse": "speedup over Block-sparse (×)", "energy_rel_vs_blocksparse": "energy ÷ Block-sparse",
    "speedup_vs_staticsparse": "speedup over Static-sparse (×)",
    "energy_rel_vs_staticsparse": "energy ÷ Static-sparse",
    "tile": "tile side T", "alpha": "α", "beta": "β", "rows": "PE rows", "cols": "PE columns",
    "sram_bytes_per_pe": "SRAM per PE (bytes)", "rho_x": "ρ_x (density of x)", "error_budget": "error budget",
    "resource_budget": "resource budget (÷ Dense)", "mac_lanes": "MAC lanes per PE",
    "dram_bytes_per_cycle": "DRAM bandwidth (bytes/cycle)", "hop_latency_cycles": "NoC hop latency (cycles)",
}


#: Shorter titles for the parallel-coordinate axes (about 60 px apart on a narrow page; a title
#: on two lines ran into the axis's top value).
SHORT_LABELS = {"cycles": "cycles", "speedup": "speedup (×)", "tile": "T", "sram_bytes_per_pe": "SRAM/PE (B)",
                "rho_x": "ρ_x", "resource_budget": "R budget", "error_budget": "ε budget", "cols": "PE cols",
                "overflow_bytes": "overflow (B)", "payload_bytes": "payload (B)",
                "speedup_vs_blocksparse": "speedup ÷ BS (×)", "speedup_vs_staticsparse": "speedup ÷ SS (×)",
                "energy_rel_vs_blocksparse": "energy ÷ BS", "energy_rel_vs_staticsparse": "energy ÷ SS",
                "mac_lanes": "MAC lanes", "dram_bytes_per_cycle": "DRAM (B/cyc)", "hop_latency_cycles": "hop (cyc)"}


def column_label(col: str, short: bool = False, wrap: bool = False) -> str:
    """Title of a sweep column in words with its unit ("energy_pj" → "energy (µJ)"); a column
    without one keeps its name. ``short``: the compact form of a parallel-coordinate axis;
    ``wrap``: the unit on a second line (a colour bar's title).

    >>> column_label("energy_pj"), column_label("speedup", short=True), column_label("error_pct", wrap=True)
    ('energy (µJ)', 'speedup (×)', 'error<br>(%)')
    >>> column_label("mystery")
    'mystery'
    """
    label = (SHORT_LABELS.get(col) if short else None) or COLUMN_LABELS.get(col, col)
    if wrap and " (" in label:
        head, unit = label.split(" (", 1)
        label = f"{head}<br>({unit}"
    return label


#: The sweep table in parts, shown one at a time: (title, columns). All 24 columns in one grid were
#: 2607 px wide at a 1440-px window (978 px for the page), with ``kernel_mix`` and every baseline
#: off to the right. The swept parameters begin every part; the exports keep one table.
TABLE_PARTS = (
    ("AKF plan", ("cycles", "energy_pj", "error_pct", "speedup", "energy_rel", "kernel_mix")),
    ("Plan size and time", ("n_tiles", "n_kernels", "payload_bytes", "overflow_bytes", "static_kernel", "wall_s")),
    ("Baselines: cycles", ("dense_cycles", "blocksparse_cycles", "staticsparse_cycles", "speedup_vs_blocksparse",
                           "speedup_vs_staticsparse")),
    ("Baselines: energy", ("dense_energy_pj", "blocksparse_energy_pj", "staticsparse_energy_pj",
                           "energy_rel_vs_blocksparse", "energy_rel_vs_staticsparse")),
)


def table_parts(df, swept, limit_px: int = PAGE_PX_1280) -> list[tuple[str, list]]:
    """The sweep's columns as :data:`TABLE_PARTS` (those ``df`` has), then its other columns (a
    loaded file's own) in a part "Other columns"; each part led by the ``swept`` columns and, where
    it would be wider than ``limit_px`` (:func:`akfviz.viz.tables.grid_px`), cut in two, "(1/2)",
    "(2/2)", until it fits or holds one column.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"tile": [16], "cycles": [640.0], "kernel_mix": ["CSC 100 %"], "mine": [1]})
    >>> table_parts(df, ["tile"])
    [('AKF plan', ['tile', 'cycles', 'kernel_mix']), ('Other columns', ['tile', 'mine'])]
    """
    swept = [c for c in swept if c in df.columns]
    placed = set(swept)
    groups = []
    for title, cols in TABLE_PARTS:
        have = [c for c in cols if c in df.columns and c not in placed]
        placed.update(have)
        if have:
            groups.append((title, have))
    rest = [c for c in df.columns if c not in placed]
    if rest:
        groups.append(("Other columns", rest))
    out = []
    for title, cols in groups:
        pieces = [cols]
        while True:
            wide = [i for i, p in enumerate(pieces)
                    if len(p) > 1 and grid_px(df[swept + p], hide_index=True) > limit_px]
            if not wide:
                break
            i = wide[0]
            half = (len(pieces[i]) + 1) // 2
            pieces[i:i + 1] = [pieces[i][:half], pieces[i][half:]]
        out += [(title if len(pieces) == 1 else f"{title} ({k + 1}/{len(pieces)})", swept + p)
                for k, p in enumerate(pieces)]
    return out


def column_values(df, col: str) -> np.ndarray:
    """The values of a sweep column as the figures draw them: energies (``…energy_pj``) in µJ."""
    v = df[col].to_numpy(np.float64)
    return v * 1e-6 if col.endswith("energy_pj") else v


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
    up = [column_label(c) for c in dict.fromkeys((x, y, color)) if c in MAXIMISED]
    down = [column_label(c) for c in dict.fromkeys((x, y, color)) if c not in MAXIMISED]
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


def _said(v) -> str:
    """A value from a loaded file's metadata, as a label shows it: numbers by :func:`format_value`,
    anything else as text cut to 40 characters (a file may carry any metadata)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return format_value(v)
    return shown(v, width=40, quote=False)


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def recorded_settings(attrs, digest: str | None = None) -> str:
    """What a loaded sweep file says about the settings its points share, in words.

    ``attrs``: the table's metadata (``run_sweep``'s ``akfviz_sweep``, kept by Parquet and the
    JSON export; a CSV keeps none). ``digest``: the current workload's sha256, to say whether the
    file was run on it. Files from before the hardware, LSH and matrix digest were recorded say so.
    The metadata is read as untrusted: parts of another type than ``run_sweep`` writes are left
    out (and said to be), never an error.
    """
    meta = attrs.get("akfviz_sweep") if isinstance(attrs, dict) else None
    if not isinstance(meta, dict):
        return ("This file records no settings (a CSV holds the table only; the Parquet and JSON "
                "exports also keep them): the matrix, hardware and fixed settings of its points are "
                "not known here, and the sweep settings above describe this page's own grid, not this file.")
    parts, missing = [], []
    shape, nnz, sha = meta.get("shape"), meta.get("nnz"), meta.get("matrix_sha256")
    if isinstance(shape, list) and len(shape) == 2 and all(_whole(v) for v in shape):
        m = f"matrix {shape[0]:,}×{shape[1]:,}" + (f", {nnz:,} nonzeros" if _whole(nnz) else "")
        if isinstance(sha, str):
            m += f" (sha256 {_said(sha[:12])}…, " + ("the current workload)" if sha == digest
                                                     else "not the current workload)")
        parts.append(m)
    grid = meta.get("grid") if isinstance(meta.get("grid"), dict) else {}
    base = meta.get("base") if isinstance(meta.get("base"), dict) else {}
    words = {"tile": "T", "alpha": "α", "beta": "β", "rho_x": "ρ_x"}
    fixed = [f"{words.get(k, _said(k))} = {_said(v)}" for k, v in list(base.items())[:20]
             if k not in grid and v is not None]
    if fixed:
        parts.append("fixed " + ", ".join(fixed))
    described = {   # metadata part → (its name when missing, its words when there)
        "hardware": ("the hardware", lambda d: f"hardware {_said(d.get('preset'))} ({_said(d.get('rows'))}×"
                                               f"{_said(d.get('cols'))} PEs, {_said(d.get('sram_bytes_per_pe'))} B "
                                               "SRAM per PE)"),
        "lsh": ("the LSH settings", lambda d: f"LSH {_said(d.get('num_hashes'))} hashes, {_said(d.get('bands'))} "
                                              f"bands, {_said(d.get('grid'))}×{_said(d.get('grid'))} grid, seed "
                                              f"{_said(d.get('seed'))}"),
    }
    for key, (name, words_of) in described.items():
        part = meta.get(key)
        if isinstance(part, dict):
            parts.append(words_of(part))
        else:
            missing.append(name)
    if not isinstance(sha, str):
        missing.append("the matrix's sha256")
    if "seed" in meta:
        parts.append(f"seed {_said(meta['seed'])}")
    if meta.get("baselines") is True:
        parts.append(f"baselines simulated (Static-sparse kernel {_said(meta.get('static_kernel'))})")
    text = "Recorded in the file: " + ("; ".join(parts) if parts else "nothing this page can read") + "."
    if missing:
        text += f" Not recorded: {', '.join(missing)} (an older or edited file)."
    return text


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
    xs, ys, cs = column_values(df, x), column_values(df, y), column_values(df, color)
    xl, yl, cl = column_label(x), column_label(y), column_label(color)
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
        lines = [f"{desc[i]}; {cl} {format_value(cs[i])}" + (" (Pareto-optimal)" if front[i] else "")
                 for i in members[:HOVER_LIST]]
        if len(members) > HOVER_LIST:
            lines.append(f"… and {len(members) - HOVER_LIST} more")
        head = f"{len(members)} configurations at this spot:<br>" if len(members) > 1 else ""
        for i in members:
            text[i] = head + "<br>".join(lines)
    fig = go.Figure(go.Scatter(x=xs[order], y=ys[order], mode="markers", text=text[order], name="configurations",
                               marker=dict(color=cs[order], colorscale=VIRIDIS_ON_WHITE, size=9,
                                           colorbar=dict(title=dict(text=column_label(color, wrap=True)))),
                               hovertemplate=f"{xl} %{{x:.4g}}<br>{yl} %{{y:.4g}}<br>%{{text}}<extra></extra>"))
    fig.add_trace(go.Scatter(x=xs[front], y=ys[front], mode="markers", name="Pareto-optimal",
                             hoverinfo="skip",
                             marker=dict(size=15, color="rgba(0,0,0,0)", line=dict(color="#e6194b", width=2))))
    stacked = [m for m in spots.values() if len(m) > 1]
    if stacked:
        fig.add_trace(go.Scatter(x=[xs[m[0]] for m in stacked], y=[ys[m[0]] for m in stacked], mode="text",
                                 text=[f"×{len(m)}" for m in stacked], textposition="top right",
                                 textfont=dict(size=12, color="#333"), hoverinfo="skip",
                                 name="configurations at the same spot", showlegend=False))
    fig.update_xaxes(title=xl)
    fig.update_yaxes(title=yl)
    # the legend under the plot: at the top right it ran into the title on a narrow page
    return styled(fig, f"Sweep: {yl} vs {xl}<br><span style='font-size:12px'>colour: {cl}</span>", height + 40,
                  legend=dict(orientation="h", y=-0.2, yanchor="top", x=1, xanchor="right"),
                  margin=dict(l=60, r=20, t=68, b=90))


def _is_constant(values) -> bool:
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return v.size > 0 and bool(np.all(np.abs(v - v[0]) <= 1e-12 * max(abs(v[0]), 1e-300)))


def _numeric(column) -> bool:
    """Whether a column holds numbers (not booleans); pandas' own test, since ``np.issubdtype``
    raises on pandas' string dtype (a swept ``granularity`` or ``resource`` column)."""
    import pandas as pd

    return pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype)


def parallel_coordinates(df, columns: list, color: str, height: int = 400) -> go.Figure:
    """Parallel-coordinates plot over the sweep's parameters and objectives.

    An axis whose column has one value at every point shows that value alone (no invented
    range), and its label says it is constant."""
    if df is None or len(df) == 0:
        return empty_figure("No numeric sweep columns to draw.", height)
    cols = [c for c in columns if c in df and _numeric(df[c])]
    if not cols:
        return empty_figure("No numeric sweep columns to draw.", height)
    dims = []
    for c in cols:
        vals = column_values(df, c)
        label = column_label(c, short=True)
        if _is_constant(vals):
            v = float(vals[~np.isnan(vals)][0])
            pad = abs(v) * 0.5 if v else 1.0
            # tick values make plotly draw only those ticks and no range labels at the axis ends
            dims.append(dict(label=f"{label}<br>(constant)", values=vals, range=[v - pad, v + pad],
                             tickvals=[v], ticktext=[format_value(v)]))
        else:
            # 4 significant digits at the axis ends and ticks ("1.292", not "1.29201")
            dims.append(dict(label=label, values=vals, tickformat=".4~g"))
    colored = color in df and _numeric(df[color])
    fig = go.Figure(go.Parcoords(line=dict(color=column_values(df, color) if colored else None,
                                           colorscale=VIRIDIS_ON_WHITE, showscale=True,
                                           # clear of the last axis' title and tick labels, which
                                           # reach past the plot's edge (they met at 1024 px)
                                           colorbar=dict(title=dict(text=column_label(color, wrap=True)),
                                                         x=1.0, xanchor="left", xpad=60)),
                                 dimensions=dims))
    return styled(fig, "Parallel coordinates", height, margin=dict(l=60, r=150, t=100, b=30))


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
    # two-line panel titles: on one line the lower one was cut at a 900-px window
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.16,
                        subplot_titles=("AKF speedup = baseline cycles / AKF cycles<br>(above 1: AKF is faster)",
                                        "AKF energy ratio = AKF energy / baseline energy<br>"
                                        "(below 1: AKF uses less)"))
    for name, sp, er, colour in series:
        for row, column, what in ((1, sp, "speedup"), (2, er, "energy ratio")):
            fig.add_trace(go.Bar(x=labels, y=df[column].to_numpy(np.float64), name=name, marker_color=colour,
                                 legendgroup=name, showlegend=row == 1,
                                 hovertemplate=f"%{{x}}<br>AKF {what} {name}: %{{y:.4g}}<extra></extra>"),
                          row=row, col=1)
    for row in (1, 2):
        fig.add_hline(y=1.0, line=dict(color="#555", width=1, dash="dot"), row=row, col=1)
    fig.update_layout(barmode="group")
    fig.update_annotations(font=dict(size=12), xanchor="left", x=0.0)
    # the legend on a line of its own under the title (pixels from the top, whatever the height),
    # with room for two lines: at the plot's top it wrapped over the first panel's title
    return styled(fig, "AKF against each baseline, per configuration", height,
                  legend=dict(orientation="h", yref="container", y=1 - 34 / height, yanchor="top", x=0,
                              xanchor="left"),
                  margin=dict(l=60, r=20, t=140, b=60))
