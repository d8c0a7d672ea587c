"""Numba kernels of the selection package, kept in one module so that numba's on-disk cache never
mixes a kernel with a stale copy of a function it calls (structure classes, Horner evaluation)."""
import math

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
    """out[i, j] = scale[i] · max(0, p_{kids[j], cls[i]}(log10 clip(x[i], lo, hi))) by Horner's rule
    (the polynomials are in log10 density, see :mod:`.perftable`)."""
    n = x.shape[0]
    nk = kids.shape[0]
    nd = coef.shape[2]
    for i in range(n):
        c = cls[i]
        xi = math.log10(min(max(x[i], lo[c]), hi[c]))
        for j in range(nk):
            k = kids[j]
            acc = coef[k, c, 0]
            for d in range(1, nd):
                acc = acc * xi + coef[k, c, d]
            out[i, j] = scale[i] * max(acc, 0.0)


@njit_cached
def _horner_chosen(coef, lo, hi, cls, x, scale, kid, out):
    """out[i] = scale[i] · max(0, p_{kid[i], cls[i]}(log10 clip(x[i]))) — one kernel per tile."""
    n = x.shape[0]
    nd = coef.shape[2]
    for i in range(n):
        c = cls[i]
        k = kid[i]
        xi = math.log10(min(max(x[i], lo[c]), hi[c]))
        acc = coef[k, c, 0]
        for d in range(1, nd):
            acc = acc * xi + coef[k, c, d]
        out[i] = scale[i] * max(acc, 0.0)


@njit_cached
def _horner_group_sums(coef, lo, hi, cls, x, scale, kids, group, out):
    """out[group[i], j] += scale[i] · max(0, p_{kids[j], cls[i]}(log10 clip(x[i]))) (per-cluster sums)."""
    n = x.shape[0]
    nk = kids.shape[0]
    nd = coef.shape[2]
    for i in range(n):
        c = cls[i]
        g = group[i]
        xi = math.log10(min(max(x[i], lo[c]), hi[c]))
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
def _random_below(hi, wi, grid):
    """A tile with fewer nonzeros than this is class 3 (random) whatever its ``n_diagonals``, ``nm4`` and
    signature: each rule's bound at its smallest admissible count (one diagonal, one occupied cell) —
    ``DIAG_FILL·1·m``, ``NM_MIN_DENSITY·area``, ``BLOCK_FILL·1·cell_area``, the same float products the rule
    compares with, which only grow with the count. Lets the per-tile passes skip three feature reads."""
    m = min(hi, wi)
    area = hi * wi
    gh = min(grid, hi)
    gw = min(grid, wi)
    cell_area = area / (gh * gw)
    return min(DIAG_FILL * 1 * m, min(NM_MIN_DENSITY * area, BLOCK_FILL * 1 * cell_area))


@njit_cached
def _chosen_value(coef, mweight, lo, hi, kid, c, k, area, T2):
    """``Σ_m mweight[m] · max(0, p_{m, kid, c}(log10 clip(k / area))) · area / T²`` (one tile's weighted
    resource)."""
    nd = coef.shape[3]
    x = math.log10(min(max(k / area, lo[c]), hi[c]))
    val = 0.0
    for m in range(coef.shape[0]):
        acc = coef[m, kid, c, 0]
        for d in range(1, nd):
            acc = acc * x + coef[m, kid, c, d]
        val += mweight[m] * max(acc, 0.0)
    return val * area / T2


@njit_cached
def _full_tile_lut(coef, mweight, lo, hi, kids, T, T2, lut):
    """lut[j, c, k] = :func:`_chosen_value` of a full ``T×T`` tile with ``k`` nonzeros, class ``c`` and
    table kernel ``kids[j]`` (the same float operations, so a lookup equals the direct evaluation)."""
    area = T * T
    for j in range(kids.shape[0]):
        for c in range(lut.shape[1]):
            for k in range(lut.shape[2]):
                lut[j, c, k] = _chosen_value(coef, mweight, lo, hi, kids[j], c, k, area, T2)


@njit_cached
def _first_codes(unit_of_tile, kid_of_unit, n_used, code_of_kid):
    """code_of_kid[k] = rank of kernel k's first appearance along the tiles (``pandas.factorize(sort=False)``
    order; -1 if absent); the scan stops once ``n_used`` kernels are seen. Returns how many were seen."""
    seen = 0
    for i in range(unit_of_tile.shape[0]):
        k = kid_of_unit[unit_of_tile[i]]
        if code_of_kid[k] < 0:
            code_of_kid[k] = seen
            seen += 1
            if seen == n_used:
                break
    return seen


@njit_cached
def _chosen_total(coef, mweight, lo, hi, h, w, nnz, n_diag, nm4, sig, grid, unit_of_tile, kid_of_unit,
                  T, lut, slot_of_kid, n_chunks, codes, code_of_kid):
    """Σ_t Σ_m mweight[m] · (h_t w_t / T²) · max(0, p_{m, k(t), s(t)}(log10 clip(d_t))) over all tiles, with the
    class s(t) and density d_t computed on the fly and k(t) = kid_of_unit[unit_of_tile[t]].

    Full ``T×T`` tiles take their value from ``lut[slot_of_kid[k], s, nnz]`` (:func:`_full_tile_lut`) when
    ``lut`` is not empty; other tiles are evaluated directly (:func:`_chosen_value`). The class reads
    ``n_diag``, ``nm4`` and ``sig`` only when the nonzero count allows a structured class
    (:func:`_random_below`). When ``codes`` has one entry per tile it receives ``code_of_kid[k(t)]``.

    Summed in a fixed number of chunks whose partial sums are added in order (serial: the pass is
    memory-bound, and on a loaded 2-core machine a parallel region cost more than it saved); one flat loop
    with a chunk boundary counter (a nested chunk loop ran ~30 % slower)."""
    n = h.shape[0]
    use_lut = lut.shape[0] > 0
    write = codes.shape[0] == n
    T2 = float(T) ** 2
    below_full = _random_below(T, T, grid)
    step = (n + n_chunks - 1) // n_chunks
    tot = 0.0
    acc = 0.0
    nxt = step
    for i in range(n):
        if i == nxt:  # chunk boundary: add the finished chunk's partial sum
            tot += acc
            acc = 0.0
            nxt += step
        k = kid_of_unit[unit_of_tile[i]]
        if write:
            codes[i] = code_of_kid[k]
        hi_ = h[i]
        wi_ = w[i]
        kn = nnz[i]
        if use_lut and hi_ == T and wi_ == T:
            c = 3 if kn < below_full else _class_of(hi_, wi_, kn, n_diag[i], nm4[i], sig[i], grid)
            acc += lut[slot_of_kid[k], c, kn]
        else:
            c = 3 if kn < _random_below(hi_, wi_, grid) else \
                _class_of(hi_, wi_, kn, n_diag[i], nm4[i], sig[i], grid)
            acc += _chosen_value(coef, mweight, lo, hi, k, c, kn, hi_ * wi_, T2)
    return tot + acc
