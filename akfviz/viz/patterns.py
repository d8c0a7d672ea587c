"""Pattern-analysis figures (akf-spec §2): tile density map, LSH cluster map, representatives, histogram."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from .colors import BLUES_OFF_WHITE, CLUSTER_PALETTE, VIRIDIS_ON_WHITE
from .layout import aggregation_note, coarse_grid, empty_figure, grid_axes, log_ticks, occupancy, styled


def _tile_axes(fig: go.Figure, n_brows: int, n_bcols: int, tile: int) -> None:
    grid_axes(fig, n_brows, n_bcols, f"tile row bi (×{tile} rows)", f"tile column bj (×{tile} cols)")


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
    hi = max(hi, lo + 1e-6)
    ticks = np.asarray(log_ticks(lo, hi))
    fig = go.Figure(go.Heatmap(
        z=z, x0=(sc - 1) / 2, dx=sc, y0=(sr - 1) / 2, dy=sr,
        colorscale="Viridis", zmin=lo, zmax=hi, xgap=1 if n_bcols <= 64 else 0, ygap=1 if n_brows <= 64 else 0,
        colorbar=dict(title=dict(text="density", side="right"), tickvals=ticks.tolist(),
                      ticktext=[f"{10 ** t:.2g}" for t in ticks]),
        hoverinfo="skip",
    ))
    _click_layer(fig, idx, grid, sr, sc)
    _mark(fig, tiles, selected)
    _tile_axes(fig, n_brows, n_bcols, tile)
    # the extent of the tiles, not of the markers (autorange would pad for their size)
    fig.update_xaxes(range=[-0.5, n_bcols - 0.5], autorange=False)
    fig.update_yaxes(range=[n_brows - 0.5, -0.5], autorange=False)
    note = aggregation_note(sr, sc, "mean density over its area")
    return styled(fig, f"Tile density — {len(tiles):,} nonempty tiles of {n_brows}×{n_bcols}"
                       + (f"<br><span style='font-size:12px'>{note.strip()}</span>" if note else ""), height)


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
        xgap=1 if n_bcols <= 64 else 0, ygap=1 if n_brows <= 64 else 0,
        hovertemplate=hover + text_hover + "<extra></extra>",
    ))
    _tile_axes(fig, n_brows, n_bcols, tile)
    n_cl = int(cl.max()) + 1 if cl.size else 0
    # the details on a second, smaller line: on one line the title was cut at a 900-px window
    return styled(fig, f"LSH clusters — {n_cl} clusters<br><span style='font-size:12px'>colours repeat every {k}"
                       + aggregation_note(sr, sc, "the cluster of its first nonempty tile") + "</span>", height)


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
    fig.update_yaxes(autorange="reversed", showticklabels=False, scaleanchor=None, showgrid=False, zeroline=False)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_annotations(font_size=11)
    return styled(fig, height=max(220, rows * height_per_row + 40))


def density_histogram(tiles, height: int = 320) -> go.Figure:
    """Histogram of tile densities on log-spaced bins, stacked by the analysis' density bin.

    The bins are laid out in log10 density from the smallest to the largest density exactly, so
    every tile is counted (bar heights add up to the number of tiles). Each bar is split by the
    log-density bin ``floor(log10(density) · bins_per_decade)`` the clustering uses (akf-spec §2):
    tiles of different colours never share a cluster.
    """
    if len(tiles) == 0:
        return empty_figure("No nonempty tiles.", height)
    logd = np.log10(tiles["density"].to_numpy(dtype=np.float64))
    lo, hi = float(logd.min()), float(logd.max())
    hi = max(hi, lo + 1e-4)                    # one density only: one narrow bar
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
        fig.add_trace(go.Bar(x=centers, y=counts, width=np.diff(edges), name=f"bin {int(g)}",
                             marker_color=shades[i],
                             hovertemplate=f"density bin {int(g)}<br>density ≈ %{{x:.3g}}: %{{y}} tiles"
                                           "<extra></extra>"))
    ticks = log_ticks(lo, hi)
    fig.update_xaxes(type="log", title="tile density (nnz / area)", tickvals=[10.0 ** t for t in ticks],
                     ticktext=[f"{10.0 ** t:.2g}" for t in ticks])
    fig.update_yaxes(title="tiles")
    return styled(fig, f"Tile density histogram — {len(logd):,} tiles", height, barmode="stack",
                  showlegend=len(kinds) > 1, legend=dict(title="density bin"))


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
    fig.update_xaxes(title="cluster (largest 60)", type="category")
    fig.update_yaxes(title="tiles")
    return styled(fig, "Cluster sizes and quality", height)
