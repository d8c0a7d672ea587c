"""Numba kernels of the selection package, kept in one module so that numba's on-disk cache never
mixes a kernel with a stale copy of a function it calls (structure classes, Horner evaluation)."""
import math

import numba
import numpy as np
from .._jit import njit_cached, njit_inline, njit_parallel, serial_twin

#: Thresholds of the structure-class rule (documented in :mod:`.structure`).
DIAG_FILL = 0.6
DIAG_MAX_SHARE = 0.75
NM_MIN_DENSITY = 0.3
BLOCK_FILL = 0.5
BLOCK_MAX_SHARE = 0.8
#: The block rule reads cells of at least this many entries: smaller signature cells of whole entries
#: (T = 4, 6, 8, 16 with the 8×8 grid, small edge tiles) are merged f×f first, to the BLOCK kernel's
#: 4×4 blocks where the grid lines up with them. A cell of one entry is always full, so the rule
#: called every scattered tile of T = 8 ``block``. Cells of fractional size (T = 12: 1.5 entries)
#: are not merged: merged cells of 3 or 6 entries split the 4×4 blocks (docs/decisions.md).
BLOCK_MIN_CELL_AREA = 8.0


@njit_cached
def _merged_cells(s, hi, wi, grid, f):
    """Occupied cells of signature ``s`` after merging its cells f×f (rule in :mod:`.structure`): the
    units are the rows (columns) themselves when there are at most ``grid`` of them, else the grid's
    cells. Its own function, called only for small cells, so that the eager pass's inlined
    :func:`_class_of` stays as small as before."""
    merged = np.uint64(0)
    while s:
        low = s & (~s + np.uint64(1))
        s ^= low
        b = 0
        while low > np.uint64(1):
            low >>= np.uint64(1)
            b += 1
        ur = b // grid
        uc = b % grid
        if hi <= grid:
            ur = (ur * hi + grid - 1) // grid
        if wi <= grid:
            uc = (uc * wi + grid - 1) // grid
        merged |= np.uint64(1) << np.uint64((ur // f) * 8 + uc // f)
    cells = 0
    while merged:
        merged &= merged - np.uint64(1)
        cells += 1
    return cells


@njit_cached
def _class_of(hi, wi, k, nd, nm4, s, grid):
    """Structure class id of one tile (rule in :mod:`.structure`)."""
    m = min(hi, wi)
    area = hi * wi
    if nd > 0 and nd <= DIAG_MAX_SHARE * m and k >= DIAG_FILL * nd * m:
        return 0
    if nm4 <= 2 and k >= NM_MIN_DENSITY * area:
        return 1
    gh = min(grid, hi)
    gw = min(grid, wi)
    cell_area = area / (gh * gw)
    f = 1
    # (the area first: on the eager pass's path, T ≥ 32, no integer division per tile)
    if cell_area < BLOCK_MIN_CELL_AREA and (hi <= grid or hi % grid == 0) and (wi <= grid or wi % grid == 0):
        while cell_area * f * f < BLOCK_MIN_CELL_AREA and (f < gh or f < gw):   # cells of whole entries
            f *= 2
    cells = 0
    if f == 1:
        while s:
            s &= s - np.uint64(1)
            cells += 1
    else:
        cells = _merged_cells(s, hi, wi, grid, f)
        gh = (gh + f - 1) // f
        gw = (gw + f - 1) // f
        cell_area = area / (gh * gw)
    if cells > 0 and k >= BLOCK_FILL * cells * cell_area and cells <= BLOCK_MAX_SHARE * gh * gw:
        return 2
    return 3


@njit_cached
def _classify_kernel(h, w, nnz, n_diag, nm4, sig, grid, out):
    for i in range(h.shape[0]):
        out[i] = _class_of(h[i], w[i], nnz[i], n_diag[i], nm4[i], sig[i], grid)


#: Index of the payload-bytes measure in the table's measure axis (energy, cycles, bytes); the overflow
#: term of the other two measures is computed from it.
BYTES = 2


@njit_cached
def _poly(coef, k, c, m, x):
    """``p_{k, c, m}(x)`` by Horner's rule; ``coef`` is (kernels, classes, measures, degree + 1)."""
    acc = coef[k, c, m, 0]
    for d in range(1, coef.shape[3]):
        acc = acc * x + coef[k, c, m, d]
    return acc


@njit_cached
def _value(coef, lin, floor, ovf, k, c, m, xd, xl, scale):
    """One tile's predicted resource in measure ``m`` (see :mod:`.perftable`):

    ``scale · max(p_m(x), floor_m) + overflow term``, with ``x`` the clipped density ``xd`` for the fits
    flagged in ``lin`` and its log10 ``xl`` for the others, where the overflow term prices the payload bytes that
    do not fit in one PE's SRAM, ``o = max(0, scale · max(p_bytes(x), floor_bytes) − ovf[0])``: for energy
    ``o · ovf[2] + ceil(o / ovf[1]) · ovf[3]`` (DRAM bytes and the leakage while they stream), for cycles
    ``ceil(o / ovf[1])``, none for bytes. ``ovf = (sram bytes per PE, DRAM bytes per cycle, DRAM pJ per
    byte, leakage pJ per PE-cycle)``."""
    v = scale * max(_poly(coef, k, c, m, xd if lin[k, c, m] else xl), floor[k, c, m])
    if m == BYTES:
        return v
    o = scale * max(_poly(coef, k, c, BYTES, xd if lin[k, c, BYTES] else xl), floor[k, c, BYTES]) - ovf[0]
    if o > 0.0:
        stream = math.ceil(o / ovf[1])
        if m == 0:
            v += o * ovf[2] + stream * ovf[3]
        else:
            v += stream
    return v


@njit_cached
def _horner_matrix(coef, lin, floor, ovf, m, lo, hi, cls, x, scale, kids, out):
    """out[i, j] = :func:`_value` of kernel ``kids[j]`` on tile ``i`` at log10 of its clipped density (the
    polynomials are in log10 density, see :mod:`.perftable`)."""
    n = x.shape[0]
    nk = kids.shape[0]
    for i in range(n):
        c = cls[i]
        xd = min(max(x[i], lo[c]), hi[c])
        xl = math.log10(xd)
        for j in range(nk):
            out[i, j] = _value(coef, lin, floor, ovf, kids[j], c, m, xd, xl, scale[i])


@njit_inline
def _full_tile_nnz(x, scale, T2):
    """``k`` when a tile is full (``scale == 1``) and its density is exactly ``k / T²`` (its value is
    then row ``k`` of the full-tile table), else -1."""
    if scale == 1.0:
        k = int(round(x * T2))
        if 0 <= k <= T2 and k / T2 == x:
            return k
    return -1


@njit_cached
def _full_tile_marks(cls, x, scale, T2, used):
    """Mark ``used[c, k]`` for every full tile of class ``c`` with ``k`` nonzeros
    (:func:`_full_tile_nnz`); returns how many rows are such tiles."""
    hits = 0
    for i in range(x.shape[0]):
        k = _full_tile_nnz(x[i], scale[i], T2)
        if k >= 0:
            used[cls[i], k] = True
            hits += 1
    return hits


@njit_parallel
def _fill_full_tile_rows(coef, lin, floor, ovf, m, lo, hi, kids, T2, used, lut):
    """``lut[c, k, j]`` = :func:`_value` of kernel ``kids[j]`` on a full tile (scale 1) of class ``c``
    with ``k`` nonzeros, for the marked ``used[c, k]`` only (``prange``)."""
    nk = kids.shape[0]
    nc, nkk = used.shape
    for q in numba.prange(nc * nkk):
        c = q // nkk
        k = q % nkk
        if used[c, k]:
            xd = min(max(k / T2, lo[c]), hi[c])
            xl = math.log10(xd)
            for j in range(nk):
                lut[c, k, j] = _value(coef, lin, floor, ovf, kids[j], c, m, xd, xl, 1.0)


@njit_parallel
def _horner_matrix_lut(coef, lin, floor, ovf, m, lo, hi, cls, x, scale, kids, T2, used, lut, bounds, out):
    """:func:`_horner_matrix` for many tiles: the rows of full tiles (``scale == 1``, density
    ``k / T²``) are copied from ``lut[c, k]``, filled first for the marked ``(c, k)`` only
    (:func:`_full_tile_marks`) with the same arithmetic, so every row has the same bits; ``prange``
    over the chunks ``bounds`` of rows (each row on its own)."""
    nk = kids.shape[0]
    _fill_full_tile_rows(coef, lin, floor, ovf, m, lo, hi, kids, T2, used, lut)
    for ch in numba.prange(bounds.shape[0] - 1):
        for i in range(bounds[ch], bounds[ch + 1]):
            c = cls[i]
            k = _full_tile_nnz(x[i], scale[i], T2)
            if k >= 0:
                for j in range(nk):
                    out[i, j] = lut[c, k, j]
                continue
            xd = min(max(x[i], lo[c]), hi[c])
            xl = math.log10(xd)
            for j in range(nk):
                out[i, j] = _value(coef, lin, floor, ovf, kids[j], c, m, xd, xl, scale[i])


@njit_cached
def _horner_chosen(coef, lin, floor, ovf, m, lo, hi, cls, x, scale, kid, out):
    """out[i] = :func:`_value` of kernel ``kid[i]`` on tile ``i`` — one kernel per tile."""
    for i in range(x.shape[0]):
        c = cls[i]
        xd = min(max(x[i], lo[c]), hi[c])
        out[i] = _value(coef, lin, floor, ovf, kid[i], c, m, xd, math.log10(xd), scale[i])


@njit_cached
def _horner_group_sums(coef, lin, floor, ovf, m, lo, hi, cls, x, scale, kids, group, out):
    """out[group[i], j] += :func:`_value` of kernel ``kids[j]`` on tile ``i`` (per-cluster sums)."""
    n = x.shape[0]
    nk = kids.shape[0]
    for i in range(n):
        c = cls[i]
        g = group[i]
        xd = min(max(x[i], lo[c]), hi[c])
        xl = math.log10(xd)
        for j in range(nk):
            out[g, j] += _value(coef, lin, floor, ovf, kids[j], c, m, xd, xl, scale[i])


@njit_parallel
def _horner_group_sums_lut(coef, lin, floor, ovf, m, lo, hi, cls, x, scale, kids, group, T2, used, lut,
                           kbounds, out):
    """:func:`_horner_group_sums` for many tiles: full tiles' values from ``lut`` (as in
    :func:`_horner_matrix_lut`), and ``prange`` over blocks ``kbounds`` of the kernels, each block
    reading every tile in order: every sum ``out[g, j]`` adds the same values in the same (tile)
    order as the serial kernel, so it has the same bits."""
    _fill_full_tile_rows(coef, lin, floor, ovf, m, lo, hi, kids, T2, used, lut)
    n = x.shape[0]
    for b in numba.prange(kbounds.shape[0] - 1):
        j0 = kbounds[b]
        j1 = kbounds[b + 1]
        for i in range(n):
            c = cls[i]
            g = group[i]
            k = _full_tile_nnz(x[i], scale[i], T2)
            if k >= 0:
                for j in range(j0, j1):
                    out[g, j] += lut[c, k, j]
                continue
            xd = min(max(x[i], lo[c]), hi[c])
            xl = math.log10(xd)
            for j in range(j0, j1):
                out[g, j] += _value(coef, lin, floor, ovf, kids[j], c, m, xd, xl, scale[i])


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
def _chosen_value(coef, lin, floor, ovf, mweight, lo, hi, kid, c, k, area, T2):
    """``Σ_m mweight[m] · value_m`` of one tile with ``k`` nonzeros in ``area`` cells (:func:`_value` at
    ``scale = area / T²``; ``mweight`` has one weight per measure of the table, 0 = unused)."""
    xd = min(max(k / area, lo[c]), hi[c])
    xl = math.log10(xd)
    scale = area / T2
    val = 0.0
    for m in range(mweight.shape[0]):
        if mweight[m] != 0.0:
            val += mweight[m] * _value(coef, lin, floor, ovf, kid, c, m, xd, xl, scale)
    return val


@njit_cached
def _full_tile_lut(coef, lin, floor, ovf, mweight, lo, hi, kids, T, T2, lut):
    """lut[j, c, k] = :func:`_chosen_value` of a full ``T×T`` tile with ``k`` nonzeros, class ``c`` and
    table kernel ``kids[j]`` (the same float operations, so a lookup equals the direct evaluation)."""
    area = T * T
    for j in range(kids.shape[0]):
        for c in range(lut.shape[1]):
            for k in range(lut.shape[2]):
                lut[j, c, k] = _chosen_value(coef, lin, floor, ovf, mweight, lo, hi, kids[j], c, k, area, T2)


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
def _chosen_chunk(coef, lin, floor, ovf, mweight, lo, hi, rb_ptr, col_block, nnz, cls, n_rows, n_cols,
                  unit_of_tile, kid_of_unit, T, lut, slot_of_kid, i0, i1, codes, code_of_kid, one_kid,
                  skip_edges):
    """Σ over tiles ``i0:i1`` (in order) of one tile's value (see :func:`_chosen_total`). A ``lut``
    holding NaN is a memo filled on the way: a full tile whose entry is NaN is evaluated and its value
    stored (serial calls only). With ``skip_edges`` the tiles of fewer than ``T`` rows or columns add
    nothing (their code is still written): the caller prices them exactly (:mod:`.edgecost`)."""
    use_lut = lut.shape[0] > 0
    write = codes.shape[0] == nnz.shape[0]
    T2 = float(T) ** 2
    ui0 = np.uint64(i0)
    ui1 = np.uint64(i1)
    acc = 0.0
    if i0 >= i1:
        return acc
    b = np.searchsorted(rb_ptr, i0, side="right") - 1
    last_full = np.int64(n_cols // T)   # column blocks below this are T wide
    nk = np.uint64(lut.shape[2])
    nck = np.uint64(lut.shape[1]) * nk
    flat = lut.reshape(-1)
    while ui0 < ui1:
        hi_ = min(T, n_rows - b * T)
        end = min(ui1, np.uint64(rb_ptr[b + 1]))
        full_row = use_lut and hi_ == T
        for i in range(ui0, end):
            k = one_kid if one_kid >= 0 else kid_of_unit[np.uint64(unit_of_tile[i])]
            if write:
                codes[i] = code_of_kid[k]
            j = np.int64(col_block[i])
            kn = nnz[i]
            c = cls[i]
            if full_row and j < last_full:   # a full T×T tile
                at = np.uint64(slot_of_kid[k]) * nck + np.uint64(c) * nk + np.uint64(kn)
                val = flat[at]
                if val != val:   # not evaluated yet (a memo)
                    val = _chosen_value(coef, lin, floor, ovf, mweight, lo, hi, k, c, kn, T * T, T2)
                    flat[at] = val
                acc += val
            else:
                wi_ = min(T, n_cols - j * T)
                if skip_edges and (hi_ < T or wi_ < T):
                    continue
                acc += _chosen_value(coef, lin, floor, ovf, mweight, lo, hi, k, c, kn, hi_ * wi_, T2)
        ui0 = end
        b += 1
    return acc


@njit_parallel
def _chosen_total(coef, lin, floor, ovf, mweight, lo, hi, rb_ptr, col_block, nnz, cls, n_rows, n_cols,
                  unit_of_tile, kid_of_unit, T, lut, slot_of_kid, n_chunks, codes, code_of_kid, one_kid,
                  skip_edges):
    """Σ_t Σ_m mweight[m] · value_m(t, k(t)) (:func:`_chosen_value`) over all tiles of an analysis, from
    its compact per-tile arrays: class ``cls``, ``nnz``, ``h`` from the row block (``rb_ptr``) and ``w``
    from ``col_block``; ``k(t) = kid_of_unit[unit_of_tile[t]]``, or ``one_kid`` for every tile when it is
    ≥ 0 (a plan of one kernel: no per-tile lookups; 1.95 → 1.4 ms on 950k tiles).

    Full ``T×T`` tiles take their value from ``lut[slot_of_kid[k], s, nnz]`` (:func:`_full_tile_lut`)
    when ``lut`` is not empty — or, where it holds NaN, evaluate it and store it there (a memo, for
    the serial twin only: the threads would race on it); other tiles are evaluated directly. When
    ``codes`` has one entry per tile it receives ``code_of_kid[k(t)]``. Summed in ``n_chunks`` chunks
    of ``ceil(n / n_chunks)`` consecutive tiles (``prange`` over them) whose partial sums are then added
    in order: the same total for any number of threads. With ``skip_edges`` the edge tiles (fewer than
    ``T`` rows or columns) are left out of the sum (:func:`_chosen_chunk`)."""
    n = nnz.shape[0]
    step = (n + n_chunks - 1) // n_chunks
    part = np.zeros(n_chunks)
    for ch in numba.prange(n_chunks):
        part[ch] = _chosen_chunk(coef, lin, floor, ovf, mweight, lo, hi, rb_ptr, col_block, nnz, cls, n_rows,
                                 n_cols, unit_of_tile, kid_of_unit, T, lut, slot_of_kid, ch * step,
                                 min((ch + 1) * step, n), codes, code_of_kid, one_kid, skip_edges)
    tot = 0.0
    for ch in range(n_chunks - 1):
        tot += part[ch]
    return tot + part[n_chunks - 1]


_chosen_total_serial = serial_twin(_chosen_total)
#: From this many tiles the chosen pass runs its chunks on the worker threads.
CHOSEN_PARALLEL_MIN = 100_000


@njit_parallel
def _weighted_argmin(En, Rn, alpha, beta, mask, bounds, out):
    """``out[i] = argmin_k C[i, k]`` with ``C = alpha·En + beta·Rn`` over the kernels that ``mask``
    allows (``mask`` is (1, K) for every unit or (n, K) per unit), the first on ties, 0 when none is
    allowed or every allowed cost is infinite — what ``np.argmin(np.where(mask, C, inf), axis=1)``
    returns, without the (n, K) temporaries. Each ``C[i, k]`` is the same two products and one
    sum as numpy's, so the choice is the same. ``prange`` over the chunks ``bounds`` of units."""
    K = En.shape[1]
    per_unit = mask.shape[0] > 1
    for ch in numba.prange(bounds.shape[0] - 1):
        for i in range(bounds[ch], bounds[ch + 1]):
            mrow = i if per_unit else 0
            best = np.inf
            arg = 0
            for k in range(K):
                if mask[mrow, k]:
                    c = alpha * En[i, k] + beta * Rn[i, k]
                    if c < best:
                        best = c
                        arg = k
            out[i] = arg


_weighted_argmin_serial = serial_twin(_weighted_argmin)
#: From this many units the weighted argmin runs on the worker threads.
ARGMIN_PARALLEL_MIN = 50_000


@njit_cached
def _sample_pairs(pair_cluster, row_of, m, out):
    """Up to ``m`` pairs of each wanted cluster, spread evenly through its pairs in pair order.

    ``pair_cluster[p]`` is the cluster of pair ``p`` (the analysis' distinct (signature, density
    bin) pairs, numbered by first appearance in tile order); ``row_of[c]`` the output row of
    cluster ``c``, or ``-1`` when it is not wanted. With ``s`` the number of pairs of the cluster,
    ``out[r, i]`` is its pair of rank

    .. math:: \\rho_i = \\lfloor (2i + 1)\\, s / (2m) \\rfloor, \\qquad i = 0, \\dots, m - 1,

    the midpoints of ``m`` equal parts (strictly increasing, as ``s > m``), or of rank ``i`` when
    ``s ≤ m`` (every pair); ``-1`` for ``i ≥ min(m, s)``. Two passes over the pairs, none over the
    tiles. Used by :meth:`.costs.SelectionProblem.member_sample` (akf-spec §5).
    """
    nr = out.shape[0]
    size = np.zeros(nr, dtype=np.int64)
    for p in range(pair_cluster.shape[0]):
        r = row_of[pair_cluster[p]]
        if r >= 0:
            size[r] += 1
    for r in range(nr):
        for i in range(m):
            out[r, i] = -1
    seen = np.zeros(nr, dtype=np.int64)
    nxt = np.zeros(nr, dtype=np.int64)
    for p in range(pair_cluster.shape[0]):
        r = row_of[pair_cluster[p]]
        if r < 0:
            continue
        s = size[r]
        i = nxt[r]
        if i < min(m, s):
            target = i if s <= m else ((2 * i + 1) * s) // (2 * m)
            if seen[r] == target:
                out[r, i] = p
                nxt[r] = i + 1
        seen[r] += 1


@njit_cached
def _sample_means(E, weight, count, out):
    """Weighted mean of each row's sampled errors,

    .. math:: \\mathrm{out}[r, k] = \\frac{\\sum_{i < n_r} w_{o_r + i}\\, E[o_r + i, k]}{\\sum_{i < n_r} w_{o_r + i}},

    with ``n_r = count[r]`` and ``o_r = Σ_{q < r} count[q]`` (the rows' samples stacked in order),
    both sums left to right in sample order, so the result does not depend on the thread count or
    on the other rows (akf-spec §5, :meth:`.costs.SelectionProblem._estimate_where_the_representative_is_exact`).
    A row without samples or weight gets 0."""
    o = 0
    for r in range(count.shape[0]):
        n = count[r]
        wsum = 0.0
        for i in range(n):
            wsum += weight[o + i]
        for k in range(E.shape[1]):
            acc = 0.0
            for i in range(n):
                acc += weight[o + i] * E[o + i, k]
            out[r, k] = acc / wsum if wsum > 0 else 0.0
        o += n
