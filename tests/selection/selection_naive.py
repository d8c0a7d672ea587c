"""Slow, obvious references for the selection tests (plain Python / numpy loops)."""
import numpy as np

from akfviz.kernels.registry import get_kernel
from akfviz.selection.structure import classify_dense


def naive_table_value(table, kernel, cls, density, scale, measure):
    """np.polyval of the stored coefficients at the density clipped to the class's domain (or its log10),
    at least the fit's floor, times the scale; plus, for energy and cycles, the payload bytes beyond the
    SRAM priced at DRAM energy / bandwidth (perftable's module docstring)."""
    import math

    i = table.kernels.index(kernel)
    lo, hi = table.domain[cls]
    d = min(max(density, lo), hi)

    def part(meas):
        m = table.measures.index(meas)
        x = d if table.linear[i, cls, m] else math.log10(d)
        return scale * max(float(np.polyval(table.coef[i, cls, m], x)), float(table.floor[i, cls, m]))

    value = part(measure)
    if measure == "bytes":
        return value
    sram, bw, e_dram, leak = (float(v) for v in table.overflow)
    over = part("bytes") - sram
    if over > 0:
        stream = math.ceil(over / bw)
        value += over * e_dram + stream * leak if measure == "energy" else stream
    return value


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
