"""Matrix figures: an honest spy plot (aggregated density) and nnz histograms (akf-spec §1, §10)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import empty_figure, fit_grid, grid_axes, grid_height, log_ticks, styled


def density_grid(A, max_bins: int = 512) -> tuple[np.ndarray, int, int]:
    """Fraction of nonzeros in each bin of a ``≤ max_bins × max_bins`` grid over ``A``.

    Bin ``(p, q)`` covers rows ``p*sr … (p+1)*sr`` and columns ``q*sc … (q+1)*sc`` with
    ``sr = ceil(n_rows / max_bins)``; its value is ``nnz_in_bin / (bin rows × bin columns)``
    (edge bins use their true, smaller area). A matrix smaller than the cap gets one bin
    per entry: the exact spy plot. O(nnz).

    Returns
    -------
    density : float64 (gr, gc), sr, sc
    """
    n, m = A.shape
    sr = max(1, -(-n // max_bins))
    sc = max(1, -(-m // max_bins))
    gr, gc = -(-n // sr), -(-m // sc)
    indptr = np.asarray(A.indptr, np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    cols = np.asarray(A.indices, np.int64)
    counts = np.bincount((rows // sr) * gc + cols // sc, minlength=gr * gc).reshape(gr, gc)
    h = np.full(gr, sr, np.float64)
    h[-1] = n - sr * (gr - 1)
    w = np.full(gc, sc, np.float64)
    w[-1] = m - sc * (gc - 1)
    return counts / np.outer(h, w), sr, sc


def spy_density(A, max_bins: int = 512, title: str | None = None, height: int = 460) -> go.Figure:
    """Spy plot that stays honest for large matrices: one heatmap of bin densities, log colour.

    Empty bins are blank (not the lowest colour), so a sparse matrix never looks dense.
    The colour is log10 of the density, the colour bar and the hover read in density itself
    (the hover's value travels as ``customdata``). The payload is at most ``2 · max_bins²``
    float32 values.
    """
    n, m = A.shape
    if A.nnz == 0:
        return empty_figure(f"The {n}×{m} matrix has no nonzeros.", height)
    dens, sr, sc = density_grid(A, max_bins)
    z = np.where(dens > 0, np.log10(np.maximum(dens, 1e-300)), np.nan).astype(np.float32)
    lo = float(np.nanmin(z))
    hi = max(float(np.nanmax(z)), lo + 1e-6)
    ticks = np.asarray(log_ticks(lo, hi))
    exact = sr == 1 and sc == 1
    what = "nonzero" if exact else "density (nonzeros / bin area)"
    fig = go.Figure(go.Heatmap(
        z=z, x0=(sc - 1) / 2, dx=sc, y0=(sr - 1) / 2, dy=sr,
        colorscale="Viridis", zmin=lo, zmax=hi,
        # the density itself, as the colour bar is labelled (the colour is its log10)
        customdata=dens.astype(np.float32) if not exact else None,
        colorbar=dict(title=dict(text="density", side="right"),
                      tickvals=ticks.tolist(), ticktext=[f"{10 ** t:.2g}" for t in ticks]),
        hovertemplate=("row %{y:.0f}, column %{x:.0f}: nonzero" if exact else
                       f"rows ≈ %{{y:.0f}}, columns ≈ %{{x:.0f}}<br>{what} %{{customdata:.3g}}") + "<extra></extra>",
        showscale=not exact,
    ))
    stretched = grid_axes(fig, n, m, "row", "column")   # very tall/wide: stretched, and the title says so
    sub = "exact (one bin per entry)" if exact else f"{sr}×{sc} entries per bin"
    sub += ", aspect stretched" if stretched else ""
    # the details on a second, smaller line: on one line the title was cut at a 900-px window
    fig = styled(fig, title or f"Spy plot — {n}×{m}, nnz {A.nnz:,}<br><span style='font-size:12px'>{sub}</span>",
                 height=grid_height(n, m, height))
    return fit_grid(fig, n, m, legend_px=0 if exact else 90)


def nnz_histograms(A, height: int = 300) -> go.Figure:
    """Histograms of nonzeros per row and per column (log count axis)."""
    row_nnz, col_nnz = _row_col_nnz(A)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("per row", "per column"),
                        horizontal_spacing=0.14)
    for k, (vals, color, what) in enumerate(((row_nnz, "#2e86c1", "rows"), (col_nnz, "#e67e22", "columns")),
                                            start=1):
        fig.add_trace(go.Histogram(x=vals, marker_color=color, nbinsx=min(60, int(vals.max()) + 1 if vals.size else 1),
                                   name=f"nonzeros per {what[:-1]}", showlegend=False,
                                   hovertemplate=f"%{{x}} nonzeros: %{{y:,}} {what}<extra></extra>"), row=1, col=k)
        # few ticks, never rotated: four labels ran together in a 180-px panel
        fig.update_xaxes(title_text="nonzeros", nticks=4, tickangle=0, row=1, col=k)
        fig.update_yaxes(title_text=f"{what} (count)", type="log", dtick=1, row=1, col=k)
    fig.update_annotations(font_size=12)
    return styled(fig, "Nonzeros per row and per column", height=height + 30, bargap=0.05)


def _row_col_nnz(A) -> tuple[np.ndarray, np.ndarray]:
    """Stored entries per row and per column of a CSR matrix."""
    return np.diff(np.asarray(A.indptr)), np.bincount(np.asarray(A.indices, np.int64), minlength=A.shape[1])


def nnz_counts(A) -> pd.DataFrame:
    """The data of :func:`nnz_histograms`: one row per matrix row and per column,
    ``axis`` ("row" / "column"), ``index``, ``nnz``."""
    row_nnz, col_nnz = _row_col_nnz(A)
    return pd.concat([pd.DataFrame({"axis": "row", "index": np.arange(row_nnz.size), "nnz": row_nnz}),
                      pd.DataFrame({"axis": "column", "index": np.arange(col_nnz.size), "nnz": col_nnz})],
                     ignore_index=True)


def matrix_summary(A) -> dict:
    """Summary statistics shown beside the spy plot (all computed from ``A``)."""
    n, m = A.shape
    row_nnz = np.diff(np.asarray(A.indptr))
    data = np.asarray(A.data)
    big = float(np.abs(data).max()) if data.size else 0.0
    # scaled: sqrt(Σ a²) under- or overflows for entries beyond about 1e∓154
    fro = big * float(np.sqrt(np.dot(data / big, data / big))) if big > 0 else 0.0
    return {
        "rows": n, "columns": m, "nnz": int(A.nnz),
        "density": A.nnz / (n * m),
        "empty rows": int(np.count_nonzero(row_nnz == 0)),
        "max nnz per row": int(row_nnz.max()) if n else 0,
        "mean nnz per row": float(row_nnz.mean()) if n else 0.0,
        "‖A‖_F": fro,
        "max |a_ij|": big,
        "symmetric": bool((A != A.T).nnz == 0) if n == m and A.nnz < 5_000_000 else False,
    }
