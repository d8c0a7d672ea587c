"""Numba kernels of the selection package, kept in one module so that numba's on-disk cache never
mixes a kernel with a stale copy of a function it calls (structure classes, Horner evaluation)."""
import numpy as np
from .._jit import njit_cached

#: Thresholds of the structure-class rule (documented in :mod:`.structure`).
DIAG_FILL = 0.6
NM_MIN_DENSITY = 0.3
BLOCK_FILL = 0.5


@njit_cached
def _class_of(hi, wi, k, nd, nm4, s, grid):
    """Structure class id of one tile (rule in :mod:`.structure`)."""
    m = min(hi, wi)
    area = hi * wi
    if nd > 0 and nd * 2 <= m and k >= DIAG_FILL * nd * m:
        return 0
    if nm4 <= 2 and k >= NM_MIN_DENSITY * area:
        return 1
    cells = 0
    while s:
        s &= s - np.uint64(1)
        cells += 1
    gh = min(grid, hi)
    gw = min(grid, wi)
    cell_area = area / (gh * gw)
    if cells > 0 and k >= BLOCK_FILL * cells * cell_area:
        return 2
    return 3


@njit_cached
def _classify_kernel(h, w, nnz, n_diag, nm4, sig, grid, out):
    for i in range(h.shape[0]):
        out[i] = _class_of(h[i], w[i], nnz[i], n_diag[i], nm4[i], sig[i], grid)


@njit_cached
def _horner_matrix(coef, lo, hi, cls, x, scale, kids, out):
    """out[i, j] = scale[i] · max(0, p_{kids[j], cls[i]}(clip(x[i], lo, hi))) by Horner's rule."""
    n = x.shape[0]
    nk = kids.shape[0]
    nd = coef.shape[2]
    for i in range(n):
        c = cls[i]
        xi = min(max(x[i], lo[c]), hi[c])
        for j in range(nk):
            k = kids[j]
            acc = coef[k, c, 0]
            for d in range(1, nd):
                acc = acc * xi + coef[k, c, d]
            out[i, j] = scale[i] * max(acc, 0.0)


@njit_cached
def _horner_chosen(coef, lo, hi, cls, x, scale, kid, out):
    """out[i] = scale[i] · max(0, p_{kid[i], cls[i]}(clip(x[i]))) — one kernel per tile."""
    n = x.shape[0]
    nd = coef.shape[2]
    for i in range(n):
        c = cls[i]
        k = kid[i]
        xi = min(max(x[i], lo[c]), hi[c])
        acc = coef[k, c, 0]
        for d in range(1, nd):
            acc = acc * xi + coef[k, c, d]
        out[i] = scale[i] * max(acc, 0.0)


@njit_cached
def _horner_group_sums(coef, lo, hi, cls, x, scale, kids, group, out):
    """out[group[i], j] += scale[i] · max(0, p_{kids[j], cls[i]}(clip(x[i]))) (per-cluster sums)."""
    n = x.shape[0]
    nk = kids.shape[0]
    nd = coef.shape[2]
    for i in range(n):
        c = cls[i]
        g = group[i]
        xi = min(max(x[i], lo[c]), hi[c])
        for j in range(nk):
            k = kids[j]
            acc = coef[k, c, 0]
            for d in range(1, nd):
                acc = acc * xi + coef[k, c, d]
            out[g, j] += scale[i] * max(acc, 0.0)


@njit_cached
def _horner_1d(coef, x, out):
    """out[i] = p(x[i]) by Horner's rule (no clamping)."""
    nd = coef.shape[0]
    for i in range(x.shape[0]):
        acc = coef[0]
        for d in range(1, nd):
            acc = acc * x[i] + coef[d]
        out[i] = acc


@njit_cached
def _chosen_total(coef, mweight, lo, hi, h, w, nnz, n_diag, nm4, sig, grid, unit_of_tile, kid_of_unit,
                  T2, n_chunks):
    """Σ_t Σ_m mweight[m] · (h_t w_t / T²) · max(0, p_{m, k(t), s(t)}(clip(d_t))) over all tiles, with the
    class s(t) and density d_t computed on the fly and k(t) = kid_of_unit[unit_of_tile[t]].

    Summed in a fixed number of chunks whose partial sums are added in order (serial: the pass is
    memory-bound, and on a loaded 2-core machine a parallel region cost more than it saved)."""
    n = h.shape[0]
    nd = coef.shape[3]
    nm = coef.shape[0]
    part = np.zeros(n_chunks)
    step = (n + n_chunks - 1) // n_chunks
    for ch in range(n_chunks):
        acc_c = 0.0
        for i in range(ch * step, min(n, (ch + 1) * step)):
            area = h[i] * w[i]
            c = _class_of(h[i], w[i], nnz[i], n_diag[i], nm4[i], sig[i], grid)
            x = min(max(nnz[i] / area, lo[c]), hi[c])
            k = kid_of_unit[unit_of_tile[i]]
            val = 0.0
            for m in range(nm):
                acc = coef[m, k, c, 0]
                for d in range(1, nd):
                    acc = acc * x + coef[m, k, c, d]
                val += mweight[m] * max(acc, 0.0)
            acc_c += val * area / T2
        part[ch] = acc_c
    tot = 0.0
    for ch in range(n_chunks):
        tot += part[ch]
    return tot
