"""Pattern-analysis figures (akf-spec §2): tile density map, LSH cluster map, representatives, histogram."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from ..analysis.features import top_count
from ..analysis.lsh import LSHConfig
from .colors import BLUES_OFF_WHITE, CLUSTER_PALETTE, VIRIDIS_ON_WHITE
from .layout import (aggregation_note, cell_gap, coarse_grid, empty_figure, fit_grid, grid_axes, grid_height, log_ticks,
                     occupancy, styled)
from .tables import property_table


# --------------------------------------------------------------------------- words for the raw names
def density_bin_range(b: int, bins_per_decade: int) -> tuple[float, float]:
    """The densities ``lo ≤ d < hi`` of log-density bin ``b = floor(log10(d) · bins_per_decade)``
    (akf-spec §2): ``lo = 10^(b / bins_per_decade)``, ``hi = 10^((b + 1) / bins_per_decade)``, capped
    at 1 (a density is at most 1, so bin 0 holds the full tiles only).

    >>> density_bin_range(-2, 2)[0], round(density_bin_range(-2, 2)[1], 4), density_bin_range(-1, 2)[1]
    (0.1, 0.3162, 1.0)
    """
    bpd = int(bins_per_decade)
    return 10.0 ** (int(b) / bpd), min(1.0, 10.0 ** ((int(b) + 1) / bpd))


def density_bin_span(b: int, bins_per_decade: int) -> str:
    """Bin ``b``'s densities in words: ``"0.1 ≤ d < 0.32"``, or ``"d = 1"`` for the full tiles' bin."""
    lo, hi = density_bin_range(b, bins_per_decade)
    if lo >= 1.0:
        return "d = 1"
    return f"{lo:.2g} ≤ d < {hi:.2g}"


def density_bin_formula(bins_per_decade: int) -> str:
    """The analysis' log-density bin as a formula, e.g. ``"b = ⌊2 · log10 d⌋"``."""
    return f"b = ⌊{int(bins_per_decade)} · log10 d⌋"


def _pct(x: float) -> str:
    """A percentage with two significant digits, never in exponent form (100, not "1e+02")."""
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def density_bin_caption(bins, bins_per_decade: int, weights=None) -> str:
    """What the density bins of the Patterns page mean: the formula with the analysis' bins per
    decade, and one of ``bins`` (the most common, counting each entry ``weights`` times) as a range
    of densities and of percentages. The page passes the clusters' bins weighted by their sizes —
    the same count as the tiles' bins, without a pass over every tile on each rerun."""
    bpd = int(bins_per_decade)
    bins = np.asarray(bins, np.int64)
    text = (f"Density bin {density_bin_formula(bpd)}, d = nnz / tile area ({bpd} bin{'s' if bpd != 1 else ''} "
            f"per factor 10 of density): bin b holds the tiles with 10^(b/{bpd}) ≤ d < 10^((b+1)/{bpd}).")
    if bins.size:
        vals, inv = np.unique(bins, return_inverse=True)
        counts = np.bincount(inv.ravel(), weights=None if weights is None else np.asarray(weights, np.float64))
        b = int(vals[np.argmax(counts)])
        lo, hi = density_bin_range(b, bpd)
        pct = (f"every entry nonzero" if lo >= 1.0 else
               f"{_pct(100 * lo)} % to {_pct(100 * hi)} % of the tile's entries nonzero")
        text += f" E.g. bin {b} (the most common here): {density_bin_span(b, bpd)}, {pct}."
    return text


def _nm_group(name: str) -> int:
    return int(name[2:])


def feature_notes(lsh: LSHConfig | None = None, tile: int | None = None, row=None) -> dict:
    """Plain-language label and meaning of every column of ``pa.tiles`` (akf-spec §2).

    ``name -> (label, meaning)``. The numbers in the words come from the analysis: ``lsh``
    (its ``top_q``, ``grid``, ``bins_per_decade``; default :class:`LSHConfig`'s), ``tile`` (T)
    and, when given, ``row`` (one tile's values: its own top count and density range).
    """
    cfg = lsh if lsh is not None else LSHConfig()
    q, g, bpd = float(cfg.top_q), int(cfg.grid), int(cfg.bins_per_decade)
    T = f"T = {int(tile)}" if tile is not None else "T"
    qtxt = f"{100 * q:.3g} %"
    top = f"the max(1, ⌊q·nnz⌋) largest |v|, q = {q:g}"
    span = f"10^(b/{bpd}) ≤ d < 10^((b+1)/{bpd})"
    if row is not None:
        if "nnz" in row:
            k = int(row["nnz"])
            top += f" (here {top_count(k, q)} of {k})"
        if "density_bin" in row:
            span += f" (here {density_bin_span(int(row['density_bin']), bpd)})"
    notes = {
        "bi": ("tile row", f"block row: rows bi·T … bi·T + T − 1 of the matrix ({T})"),
        "bj": ("tile column", f"block column: columns bj·T … bj·T + T − 1 of the matrix ({T})"),
        "h": ("rows", f"rows in the tile ({T}; fewer in the last block row)"),
        "w": ("columns", f"columns in the tile ({T}; fewer in the last block column)"),
        "nnz": ("nonzeros", "nonzero entries in the tile"),
        "density": ("density d", "nnz / (rows × columns): the share of the tile's entries that are nonzero"),
        "rows_nonempty": ("nonempty rows", "rows holding at least one nonzero"),
        "cols_nonempty": ("nonempty columns", "columns holding at least one nonzero"),
        "max_row_nnz": ("most nonzeros in a row", "nonzeros of the fullest row"),
        "max_col_nnz": ("most nonzeros in a column", "nonzeros of the fullest column"),
        "n_diagonals": ("occupied diagonals", "distinct diagonals c − r (local column c, row r) holding a nonzero"),
        "bandwidth": ("bandwidth", "largest |c − r| of a nonzero: how far the tile reaches from its diagonal"),
        "fro2": ("squared Frobenius norm", "Σ v²: the sum of the squared values"),
        "top_mass": (f"top-{qtxt} mass", f"share of Σ v² held by {top}; near 1: a few values carry the tile"),
        "signature": ("occupancy signature", f"{g}×{g} coarse grid of the tile, one bit per cell, set when the "
                                             "cell holds a nonzero (hex); LSH hashes these bits"),
        "density_bin": ("density bin b", f"{density_bin_formula(bpd)}: the tile's density lies in {span}; "
                                         "tiles of different bins never share a cluster"),
        "cluster": ("LSH cluster", "cluster id: tiles whose signatures collide in an LSH band, within one "
                                   "density bin"),
    }
    for name in ("nm4", "nm8"):
        m = _nm_group(name)
        notes[name] = (f"N of N:{m}", f"most nonzeros in any group of {m} consecutive columns of one row: "
                                      f"the smallest N for which the tile is N:{m} sparse")
    return notes


def cluster_notes(lsh: LSHConfig | None = None, row=None) -> dict:
    """Plain-language label and meaning of every column of ``pa.clusters`` (see :func:`feature_notes`)."""
    bpd = int((lsh if lsh is not None else LSHConfig()).bins_per_decade)
    span = f"10^(b/{bpd}) ≤ d < 10^((b+1)/{bpd})"
    if row is not None and "density_bin" in row:
        span += f" (here {density_bin_span(int(row['density_bin']), bpd)})"
    return {
        "size": ("member tiles", "tiles in the cluster"),
        "representative": ("representative tile", "tile number of the medoid tile, the one the selector "
                                                   "evaluates for the whole cluster"),
        "density_bin": ("density bin b", f"{density_bin_formula(bpd)}: every member's density lies in {span}"),
        "mean_density": ("mean density", "mean of the members' densities d = nnz / area"),
        "jaccard_mean": ("within-cluster Jaccard", "mean Jaccard similarity of members' occupancy signatures "
                                                   "on sampled pairs (1 = identical outlines)"),
    }


def explained_table(frame, pos, key: str, notes: dict, by_label: bool = False):
    """:func:`akfviz.viz.tables.property_table` with words: ``key`` is the plain-language label
    followed by the raw column name (as in ``pa.tiles`` and the export) where they differ, then
    ``value`` and ``meaning``. ``notes``: :func:`feature_notes` or :func:`cluster_notes`."""
    t = property_table(frame, pos, key, by_label=by_label)
    names = list(t[key])
    labels = []
    for name in names:
        label = notes.get(name, (name, ""))[0]
        labels.append(label if label == name else f"{label} ({name})")
    t[key] = labels
    t["meaning"] = [notes.get(name, (name, ""))[1] for name in names]
    return t


def meanings_markdown(table, key: str) -> str:
    """The ``meaning`` column of an :func:`explained_table` as a markdown list, one line per row."""
    return "\n".join(f"- **{label}**: {meaning}" for label, meaning in zip(table[key], table["meaning"]) if meaning)


def _tile_axes(fig: go.Figure, n_brows: int, n_bcols: int, tile: int) -> str:
    """Square-cell tile axes; returns the title note ``"aspect stretched"`` when the grid is too
    tall or wide for square cells (else "")."""
    stretched = grid_axes(fig, n_brows, n_bcols, f"tile row bi (×{tile} rows)", f"tile column bj (×{tile} cols)")
    return "aspect stretched" if stretched else ""


def tile_density_map(tiles, n_brows: int, n_bcols: int, tile: int, cap: int = 256,
                     selected: int | None = None, height: int = 420) -> go.Figure:
    """Heatmap of tile density (nnz / tile area), log colour, empty tiles blank.

    One cell per tile ``(bi, bj)``; beyond ``cap`` tiles per axis, neighbouring tiles are
    averaged (area-weighted). Hover shows the tile index used by the detail panel, and a click
    selects it (an invisible marker layer, :func:`_click_layer`).
    """
    if len(tiles) == 0:
        return empty_figure("No nonempty tiles.", height)
    bi, bj = tiles["bi"].to_numpy(), tiles["bj"].to_numpy()
    grid, sr, sc = coarse_grid(bi, bj, tiles["density"].to_numpy(), (n_brows, n_bcols), cap, "mean")
    z = np.where(grid > 0, np.log10(np.where(grid > 0, grid, 1.0)), np.nan).astype(np.float32)
    idx, _, _ = coarse_grid(bi, bj, np.arange(len(tiles)), (n_brows, n_bcols), cap, "first", fill=-1)
    lo, hi = float(np.nanmin(z)), float(np.nanmax(z))
    same = hi - lo < 1e-6
    if same:  # one density everywhere (N:M, a stencil): its colour mid-scale, one decade around it
        ticks = np.array([lo])
        lo, hi = lo - 0.5, lo + 0.5
    else:
        ticks = np.asarray(log_ticks(lo, hi))
    fig = go.Figure(go.Heatmap(
        z=z, x0=(sc - 1) / 2, dx=sc, y0=(sr - 1) / 2, dy=sr,
        colorscale="Viridis", zmin=lo, zmax=hi, xgap=cell_gap(n_brows, n_bcols), ygap=cell_gap(n_brows, n_bcols),
        colorbar=dict(title=dict(text="density", side="right"), tickvals=ticks.tolist(),
                      ticktext=[f"{10 ** t:.2g}" for t in ticks]),
        hoverinfo="skip",
    ))
    _click_layer(fig, idx, grid, sr, sc)
    _mark(fig, tiles, selected)
    aspect = _tile_axes(fig, n_brows, n_bcols, tile)
    # the extent of the tiles, not of the markers (autorange would pad for their size)
    fig.update_xaxes(range=[-0.5, n_bcols - 0.5], autorange=False)
    fig.update_yaxes(range=[n_brows - 0.5, -0.5], autorange=False)
    notes = [aggregation_note(sr, sc, "mean density over its area").strip()]
    notes += [f"every tile has density {10 ** ticks[0]:.3g}"] if same else []
    note = "; ".join(n for n in notes + [aspect] if n)
    fig = styled(fig, f"Tile density — {len(tiles):,} nonempty tile{'s' if len(tiles) != 1 else ''} of "
                      f"{n_brows}×{n_bcols}"
                      + (f"<br><span style='font-size:12px'>{note}</span>" if note else ""),
                 grid_height(n_brows, n_bcols, height))
    return fit_grid(fig, n_brows, n_bcols, legend_px=90)


def _click_layer(fig: go.Figure, idx, density, sr: int, sc: int) -> None:
    """Invisible markers on the nonempty cells, carrying the tile index as ``customdata`` and the
    density itself as the (unseen) marker colour, which the hover shows as the colour bar is
    labelled (the heatmap's colour is its log10). ``customdata`` stays a 1-D integer array: a
    2-D typed array reached the page's selection event as an object, not a list, and a click
    no longer selected the tile (the browser test).

    Plotly heatmaps fire no click events once the chart is in selection mode (as
    ``st.plotly_chart(on_select=...)`` puts it; plotly.js issue 7685), so a click on a cell
    selects this layer's point instead; it also carries the hover text.
    """
    r, c = np.nonzero(idx >= 0)
    side = max(idx.shape)
    fig.add_trace(go.Scattergl(  # float32 / int32 typed arrays: ≈ 16 bytes per cell in the JSON
        x=(c * sc + (sc - 1) / 2).astype(np.float32), y=(r * sr + (sr - 1) / 2).astype(np.float32),
        mode="markers", customdata=idx[r, c].astype(np.int32),
        marker=dict(symbol="square", size=max(3, min(14, 360 // max(side, 1))), opacity=0,
                    color=density[r, c].astype(np.float32)),
        hovertemplate="bi %{y:.0f}, bj %{x:.0f}<br>density %{marker.color:.3g}<br>"
                      "tile #%{customdata}<extra></extra>",
        showlegend=False, name="tiles"))


def picked_tile(event, n_tiles: int):
    """The tile number a click on :func:`tile_density_map` selected, from Streamlit's selection
    ``event`` (``{"selection": {"points": [{"customdata": ...}, ...]}}``).

    Returns ``None`` when nothing is selected (no event, no points, or a click on the heatmap
    itself, whose points carry no ``customdata``). Raises ``ValueError`` when a point's
    ``customdata`` is not a tile number from 0 to ``n_tiles - 1``: the page says so instead of
    ignoring the click (a typed 2-D ``customdata`` once reached the page as an object, and the
    click silently did nothing).
    """
    sel = event.get("selection") if isinstance(event, dict) else getattr(event, "selection", None)
    if sel is None:
        return None
    points = sel.get("points") if isinstance(sel, dict) else getattr(sel, "points", None)
    points = [p for p in (points or []) if isinstance(p, dict) and p.get("customdata") is not None]
    if not points:
        return None
    cd = points[0]["customdata"]
    if isinstance(cd, dict):   # a typed array can arrive as {"0": v, "1": ...}
        cd = cd.get("0", cd.get(0))
    if isinstance(cd, (list, tuple)):
        cd = cd[0] if cd else None
    if isinstance(cd, bool) or not isinstance(cd, (int, float, np.integer, np.floating)) \
            or not float(cd).is_integer() or not 0 <= int(cd) < n_tiles:
        raise ValueError(f"the clicked point carries {points[0]['customdata']!r}, not a tile number "
                         f"from 0 to {n_tiles - 1}")
    return int(cd)


def _mark(fig: go.Figure, tiles, selected) -> None:
    if selected is None or not (0 <= int(selected) < len(tiles)):
        return
    row = tiles.iloc[int(selected)]
    fig.add_shape(type="rect", x0=row["bj"] - 0.5, x1=row["bj"] + 0.5, y0=row["bi"] - 0.5, y1=row["bi"] + 0.5,
                  line=dict(color="#e6194b", width=3))


def cluster_map(tiles, n_brows: int, n_bcols: int, tile: int, cap: int = 256,
                selected_cluster: int | None = None, height: int = 420) -> go.Figure:
    """Tiles coloured by LSH cluster (a cycled qualitative palette; hover gives the cluster id).

    With a cluster selected, its members keep their colour and all other tiles turn grey.
    """
    if len(tiles) == 0:
        return empty_figure("No nonempty tiles.", height)
    bi, bj = tiles["bi"].to_numpy(), tiles["bj"].to_numpy()
    cl = tiles["cluster"].to_numpy().astype(np.int64)
    cid, sr, sc = coarse_grid(bi, bj, cl, (n_brows, n_bcols), cap, "first", fill=-1)
    k = len(CLUSTER_PALETTE)
    z = np.where(cid >= 0, np.mod(cid, k), np.nan)
    scale = []
    for i, c in enumerate(CLUSTER_PALETTE):
        scale += [[i / (k + 1), c], [(i + 1) / (k + 1), c]]
    scale += [[k / (k + 1), "#d9d9d9"], [1.0, "#d9d9d9"]]
    if selected_cluster is not None:
        z = np.where((cid >= 0) & (cid != int(selected_cluster)), k, z)
    hover = "bi %{y:.0f}, bj %{x:.0f}<br>cluster %{customdata}"
    text, text_hover = occupancy(bi, bj, (n_brows, n_bcols), cap, sr, sc)
    fig = go.Figure(go.Heatmap(
        z=z.astype(np.float32), customdata=cid.astype(np.int32), x0=(sc - 1) / 2, dx=sc, y0=(sr - 1) / 2, dy=sr,
        colorscale=scale, zmin=-0.5, zmax=k + 0.5, showscale=False, text=text,
        xgap=cell_gap(n_brows, n_bcols), ygap=cell_gap(n_brows, n_bcols),
        hovertemplate=hover + text_hover + "<extra></extra>",
    ))
    aspect = _tile_axes(fig, n_brows, n_bcols, tile)
    n_cl = int(cl.max()) + 1 if cl.size else 0
    # the details on a second, smaller line: on one line the title was cut at a 900-px window;
    # the palette's repeat is said only when some colour stands for two clusters
    details = ((f"colours repeat every {k}" if n_cl > k else "")
               + aggregation_note(sr, sc, "the cluster of its first nonempty tile")).strip()
    details = "; ".join(d for d in (details, aspect) if d)
    title = f"LSH clusters — {n_cl} cluster{'s' if n_cl != 1 else ''}"
    if details:
        title += f"<br><span style='font-size:12px'>{details}</span>"
    return fit_grid(styled(fig, title, grid_height(n_brows, n_bcols, height)), n_brows, n_bcols)


def representative_gallery(dense_tiles: list, labels: list[str], cols: int = 4,
                           height_per_row: int = 170) -> go.Figure:
    """Small heatmaps of cluster representatives (|value|, zeros blank), one per panel."""
    if not dense_tiles:
        return empty_figure("No clusters to show.")
    n = len(dense_tiles)
    rows = -(-n // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=labels, horizontal_spacing=0.03,
                        vertical_spacing=0.12 / max(rows, 1) + 0.04)
    for i, t in enumerate(dense_tiles):
        a = np.abs(np.asarray(t, np.float64))
        nz = a[a > 0]
        # float32 halves the figure's bytes, but only where it holds the values (|a| up to
        # 1e±140 pass the analysis; float32 would show them as inf or 0)
        small = nz.size == 0 or (nz.max() < 1e38 and nz.min() > 1e-37)
        z = np.where(a > 0, a, np.nan).astype(np.float32 if small else np.float64)
        # Blues off white: small |a| must not pass for a blank (zero) cell
        fig.add_trace(go.Heatmap(z=z, colorscale=BLUES_OFF_WHITE, showscale=False,
                                 hovertemplate="r %{y}, c %{x}: |a| %{z:.3g}<extra></extra>"),
                      row=i // cols + 1, col=i % cols + 1)
    # no grid or zero lines: through the blank (zero) cells they read as structure of the tile
    fig.update_yaxes(autorange="reversed", showticklabels=False, showgrid=False, zeroline=False)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    # square entries: each panel's y axis scaled to its own x axis (a 32×32 tile was drawn 232×200,
    # or 100×185 with six panels in a row: layout review)
    for i in range(n):
        suffix = "" if i == 0 else str(i + 1)
        fig.update_layout({f"yaxis{suffix}": dict(scaleanchor=f"x{suffix}", constrain="domain"),
                           f"xaxis{suffix}": dict(constrain="domain")})
    fig.update_annotations(font_size=11)
    # room above the first row for panel titles of two lines (a label with <br>)
    top = 20 + 14 * max((str(t).count("<br>") for t in labels), default=0)
    return styled(fig, height=max(220, rows * height_per_row + 40),
                  margin=dict(l=60, r=20, t=top + 12, b=50))


def density_histogram(tiles, height: int = 320, bins_per_decade: int | None = None) -> go.Figure:
    """Histogram of tile densities on log-spaced bins, stacked by the analysis' density bin.

    The bins are laid out in log10 density from the smallest to the largest density exactly, so
    every tile is counted (bar heights add up to the number of tiles). Each bar is split by the
    log-density bin ``floor(log10(density) · bins_per_decade)`` the clustering uses (akf-spec §2):
    tiles of different colours never share a cluster. The legend gives each bin's densities
    (``"0.1–0.32: bin -2"``) and its title the formula; ``bins_per_decade`` is the analysis'
    (``pa.lsh.bins_per_decade``; default :class:`LSHConfig`'s).
    """
    bpd = int(bins_per_decade if bins_per_decade is not None else LSHConfig().bins_per_decade)
    if len(tiles) == 0:
        return empty_figure("No nonempty tiles.", height)
    logd = np.log10(tiles["density"].to_numpy(dtype=np.float64))
    lo, hi = float(logd.min()), float(logd.max())
    one = hi - lo < 1e-9
    if one:  # one density only (N:M, a stencil): one bar in the middle of a decade
        log_edges = np.array([lo - 0.04, lo + 0.04])
        lo, hi = lo - 0.5, hi + 0.5
    else:
        n_bins = min(40, max(5, int(np.sqrt(len(logd))) + 1))
        log_edges = np.linspace(lo, hi, n_bins + 1)
    edges = 10.0 ** log_edges
    centers = 10.0 ** ((log_edges[:-1] + log_edges[1:]) / 2)
    groups = tiles["density_bin"].to_numpy() if "density_bin" in tiles else np.zeros(len(logd), np.int64)
    fig = go.Figure()
    kinds = np.unique(groups)
    # Viridis by bin, low density dark, as the tile density map beside it (not the cluster palette:
    # a bin is not a cluster)
    shades = sample_colorscale("Viridis", list(np.linspace(0.1, 0.9, len(kinds))) if len(kinds) > 1 else [0.5])
    for i, g in enumerate(kinds):
        counts, _ = np.histogram(logd[groups == g], bins=log_edges)
        d_lo, d_hi = density_bin_range(int(g), bpd)        # this bin's densities (lo, hi: the data's log10)
        span = "1" if d_lo >= 1.0 else f"{d_lo:.2g}–{d_hi:.2g}"
        fig.add_trace(go.Bar(x=centers, y=counts, width=np.diff(edges), name=f"{span}: bin {int(g)}",
                             marker_color=shades[i],
                             hovertemplate=f"density bin {int(g)}: {density_bin_span(int(g), bpd)}"
                                           "<br>density ≈ %{x:.3g}: %{y} tiles<extra></extra>"))
    ticks = log_ticks(lo, hi)
    # a little room at both ends: with the axis ending exactly at the largest density, plotly
    # dropped the tick there (a narrow range then read "0.67" alone, at its left end)
    pad = 0.0 if one else 0.03 * (hi - lo)
    fig.update_xaxes(type="log", title="tile density (nnz / area)", tickvals=[10.0 ** t for t in ticks],
                     ticktext=[f"{10.0 ** t:.2g}" for t in ticks], range=[lo - pad, hi + pad])
    fig.update_yaxes(title="tiles")
    return styled(fig, f"Tile density histogram — {len(logd):,} tile{'s' if len(logd) != 1 else ''}", height, barmode="stack",
                  showlegend=len(kinds) > 1,
                  legend=dict(title=dict(text=f"d range: bin b<br>{density_bin_formula(bpd)}", side="top")))


def cluster_sizes(clusters, height: int = 320) -> go.Figure:
    """Bar chart of cluster sizes, coloured by within-cluster Jaccard similarity.

    The scale is sequential and readable with colour-vision deficiency (Viridis from dark purple
    to teal, every bar ≥ 3:1 on white); a red–green scale was one olive ramp for deutans."""
    if len(clusters) == 0:
        return empty_figure("No clusters.", height)
    c = clusters.sort_values("size", ascending=False).head(60)
    jac = c["jaccard_mean"].to_numpy(dtype=float) if "jaccard_mean" in c else np.full(len(c), np.nan)
    fig = go.Figure(go.Bar(
        x=[str(i) for i in c.index], y=c["size"], marker=dict(color=jac, colorscale=VIRIDIS_ON_WHITE, cmin=0, cmax=1,
                                                             colorbar=dict(title="Jaccard")),
        hovertemplate="cluster %{x}: %{y} tiles<br>Jaccard %{marker.color:.2f}<extra></extra>"))
    shown = "cluster" if len(clusters) <= 60 else f"cluster (the largest 60 of {len(clusters):,})"
    fig.update_xaxes(title=shown, type="category")
    fig.update_yaxes(title="tiles")
    return styled(fig, "Cluster sizes and quality", height)


#: A size-weighted within-cluster Jaccard below this gets :func:`loose_clusters_note`.
LOOSE_JACCARD = 0.2


def loose_clusters_note(clusters, tiles, jaccard_mean, tile: int, num_hashes: int, bands: int, grid: int) -> str:
    """Why members of the clusters look little alike, when they do (size-weighted within-cluster
    Jaccard under :data:`LOOSE_JACCARD`, some cluster of two or more tiles); "" otherwise.

    MiniLM's FFN at T = 8 gives clusters of 4,344 tiles at Jaccard 0.04: LSH joins two tiles
    that agree in any band, union-find chains the joins, and outlines of ~6 nonzeros overlap little.
    """
    if jaccard_mean is None or not np.isfinite(jaccard_mean) or jaccard_mean >= LOOSE_JACCARD \
            or len(clusters) == 0 or int(clusters["size"].max()) < 2:
        return ""
    big = clusters.sort_values("size", ascending=False, kind="stable").iloc[0]
    rows = num_hashes // max(bands, 1)
    g = min(grid, tile)
    cells = " (one entry per cell)" if g == tile else ""
    return (f"Loose clusters: members share few occupied cells (within-cluster Jaccard {jaccard_mean:.2f}; "
            f"the largest cluster, {int(big['size']):,} tiles, {float(big['jaccard_mean']):.2f}). LSH joins two "
            f"tiles when all {rows} hashes of any of its {bands} bands agree, and union-find chains these joins, "
            "so tiles that are not alike can share a cluster through others. The outlines here hold "
            f"{float(tiles['nnz'].mean()):.1f} nonzeros on average in {g}×{g} cells{cells} (a tile's outline: "
            "which of those cells hold a nonzero). More rows per band (fewer bands for the same K) make a join "
            "demand more likeness, but too few bands leave most tiles alone in their cluster (then the selector "
            "decides per tile, and the clusters save nothing); a larger T gives each outline more nonzeros to "
            "compare.")
