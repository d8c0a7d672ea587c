"""Slow, obvious references for the selection tests (plain Python / numpy loops)."""
import numpy as np

from akfviz.kernels.registry import get_kernel
from akfviz.selection.structure import classify_dense


def naive_table_value(table, kernel, cls, density, scale, measure):
    """np.polyval of the stored coefficients at log10 of the density clipped to the class's domain,
    clamped at 0."""
    import math

    i = table.kernels.index(kernel)
    m = table.measures.index(measure)
    lo, hi = table.domain[cls]
    x = math.log10(min(max(density, lo), hi))
    return scale * max(0.0, float(np.polyval(table.coef[i, cls, m], x)))


def naive_tile_costs(pa, table, names, alpha, beta, R_dense, measure="energy"):
    """E, R, C (n_tiles, K) by a Python loop over tiles and kernels, from dense tiles."""
    ts = pa.tileset
    fro2 = float(pa.fro_norm) ** 2
    n = ts.n_tiles
    E = np.zeros((n, len(names)))
    R = np.zeros((n, len(names)))
    for t in range(n):
        tile = ts.dense(t)
        h, w = tile.shape
        cls = classify_dense(tile, grid=8)
        dens = np.count_nonzero(tile) / (h * w)
        scale = h * w / pa.tile ** 2
        for j, k in enumerate(names):
            E[t, j] = get_kernel(k).error(tile)
            R[t, j] = naive_table_value(table, k, cls, dens, scale, measure)
    C = alpha * E / fro2 + beta * R / R_dense
    return E, R, C
