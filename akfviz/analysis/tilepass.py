"""One O(nnz) pass that builds the nonempty tiles *and* their features (akf-spec §2).

:func:`tiles_and_features` is what :func:`akfviz.analyze` runs. It produces exactly what
:func:`akfviz.analysis.tiling.build_tiles` followed by
:func:`akfviz.analysis.features.tile_features` produce (same arrays, same order, bit for
bit; the tests check it), but reads the matrix only twice and never re-reads the tiles:

1. **count** (per row block): the number of distinct column blocks ``col // T`` — a
   stamp array of ``n_bcols`` words per chunk, no sort. The same loop checks that the CSR
   arrays are canonical (indices strictly increasing per row, in range; values finite and
   nonzero), so :func:`canonical_csr` can skip scipy's canonicalisation passes.
2. **fill** (per row block): counting sort of the block's entries by column block
   (stable, so entries stay ordered by (r, c)), written straight to their final place,
   then the features of the block's tiles while its entries are still in cache. Tiles with
   one nonzero (≈ all tiles of a hyper-sparse matrix) take a short path: every count is 1,
   ``bandwidth = |c − r|``, ``fro2 = v²``, ``top_mass = 1``.

Both passes run over chunks of row blocks in parallel when the matrix is large enough
(:data:`PARALLEL_MIN_NNZ`); every output is a function of its tile only, so the result does
not depend on the number of threads or chunks.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse as sp

from .._jit import njit_cached, njit_inline, njit_parallel
from ..workloads.validate import as_csr
from ..memory import check_memory
from .arena import Arena
from .features import (FLOAT_FEATURES, GRID_MAX, INT_FEATURES, TOP_SMALL, _top_sum, _top_sum_small,
                       top_count)
from .tiling import TileSet, _insertion_sort, _popcount64

#: Below this many nonzeros the serial kernels are used: a parallel launch (and, on a
#: shared 2-core machine, waiting for a busy core) costs more than it saves.
PARALLEL_MIN_NNZ = 400_000


def _n_chunks(nnz: int, n_brows: int) -> int:
    threads = numba.get_num_threads()
    if nnz < PARALLEL_MIN_NNZ or threads < 2:
        return 1
    return max(1, min(n_brows, 4 * threads))


# --------------------------------------------------------------------------- pass 1

@njit_inline
def _count_blocks(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count, ind_out, dat_out,
                  check_data, copy, pow2):
    """The body of :func:`_count_range`, inlined there once per combination of the flags
    ``check_data`` / ``copy`` / ``pow2`` (``sh >= 0``), which are constants at each call site: the
    entry loop then carries no test of them (20 % of its time)."""
    nnz = indices.shape[0]
    ush = np.uint64(sh if sh >= 0 else 0)
    uT = np.uint64(T)
    un = np.uint64(n_cols)
    for b in range(b0, b1):
        r0 = b * T
        r1 = min(r0 + T, n_rows)
        ub = np.uint64(b)
        for row in range(r0, r1):
            s = indptr[row]
            e = indptr[row + 1]
            if e < s or s < 0 or e > nnz:
                return False
        k0 = np.uint64(indptr[r0])
        k1 = np.uint64(indptr[r1])
        # starts of nonempty rows after the block's first entry: an index not above the previous
        # row's last is allowed there
        allowed = 0
        for row in range(r0 + 1, r1):
            s = np.uint64(indptr[row])
            if s > k0 and np.uint64(indptr[row + 1]) > s:   # (so 1 <= s < nnz: both reads in range)
                allowed += indices[s] <= indices[s - np.uint64(1)]
        d = 0
        bad = False
        drops = 0
        prev = np.int64(-1)
        for k in range(k0, k1):
            col = np.int64(indices[k])
            drops += col <= prev
            prev = col
            uc = np.uint64(col)
            bad |= uc >= un
            if check_data:
                x = data[k]
                bad |= (x == 0.0) | (not (x - x == 0.0))
                if copy:
                    ind_out[k] = indices[k]
                    dat_out[k] = x
            uc = uc if uc < un else np.uint64(0)  # (bad already)
            j = (uc >> ush) if pow2 else uc // uT
            d += stamp[j] != ub
            stamp[j] = ub
        if bad or drops != allowed:
            return False
        rb_count[b] = d
    return True


@njit_cached
def _count_range(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count,
                 ind_out, dat_out):
    """Distinct column blocks of row blocks ``b0:b1``; returns False if not canonical.

    When ``ind_out`` / ``dat_out`` are non-empty the entries are copied there on the way (the
    analysis keeps a copy of the matrix: one read serves the check, the count and the copy). With
    ``data`` empty only the indices are checked: :func:`akfviz.analyze` checks and copies the
    values in its scan pass, which reads them anyway.

    A row block's entries are read in one flat loop (a loop per row of about ten entries cost
    a mispredicted exit per row). The loop counts the places where an index is not above the one
    before it; within a row that is an error, at the start of a row it is allowed, and those
    starts are counted apart (one test per row): the indices are strictly increasing in every row
    exactly when the two counts agree. An unsigned comparison with ``n_cols`` catches negative
    indices too. The checks are branch-free (``bad`` accumulates them) and the loops index with
    unsigned integers, which lets numba skip its negative-index test."""
    if data.shape[0] == 0:
        if sh >= 0:
            return _count_blocks(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count, ind_out,
                                 dat_out, False, False, True)
        return _count_blocks(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count, ind_out,
                             dat_out, False, False, False)
    if ind_out.shape[0] == 0:
        if sh >= 0:
            return _count_blocks(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count, ind_out,
                                 dat_out, True, False, True)
        return _count_blocks(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count, ind_out,
                             dat_out, True, False, False)
    if sh >= 0:
        return _count_blocks(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count, ind_out,
                             dat_out, True, True, True)
    return _count_blocks(indptr, indices, data, n_rows, n_cols, T, sh, b0, b1, stamp, rb_count, ind_out,
                         dat_out, True, True, False)


@njit_parallel
def _count_tiles(indptr, indices, data, n_rows, n_cols, T, sh, n_brows, n_bcols, n_chunks,
                 rb_count, ok, ind_out, dat_out):
    for ch in numba.prange(n_chunks):
        stamp = np.full(n_bcols, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
        ok[ch] = _count_range(indptr, indices, data, n_rows, n_cols, T, sh,
                              ch * n_brows // n_chunks, (ch + 1) * n_brows // n_chunks,
                              stamp, rb_count, ind_out, dat_out)


# --------------------------------------------------------------------------- pass 2

@njit_cached
def _cells(cell, n, g):
    """``cell[i] = (i·g) // n`` for ``i < n``: the coarse cell of a local row or column."""
    for i in range(n):
        cell[i] = (i * g) // n


@njit_cached
def _features_one(t, s, e, r, c, v, hh, ww, T, g, top_q, bpd, colcnt, diag, sq,
                  iout, fout, sig, dbin, memo, rcell, ccell):
    """Features of tile ``t`` (entries ``s:e``); same definitions as features.py.

    ``rcell[r] = (r·g) // hh`` and ``ccell[c] = (c·g) // ww`` (coarse cell of a local row /
    column, see :func:`_cells`): two table reads instead of two integer divisions per entry."""
    one = np.uint64(1)
    ug = np.uint64(g)
    k = e - s
    area = hh * ww
    dens = k / area
    if k == 1:
        rr = r[s]
        cc = c[s]
        x = v[s] * v[s]
        dd = cc - rr
        iout[t, 0] = 1
        iout[t, 1] = 1
        iout[t, 2] = 1
        iout[t, 3] = 1
        iout[t, 4] = 1
        iout[t, 5] = 1
        iout[t, 6] = dd if dd >= 0 else -dd
        iout[t, 7] = 1
        iout[t, 8] = 1
        fout[t, 0] = dens
        fout[t, 1] = x
        fout[t, 2] = 1.0 if x > 0.0 else 0.0
        sig[t] = one << (np.uint64(rcell[rr]) * ug + np.uint64(ccell[cc]))
    else:
        rows_ne = 0
        max_row = 0
        cols_ne = 0
        max_col = 0
        ndiag = 0
        band = 0
        nm4 = 0
        nm8 = 0
        fro2 = 0.0
        vmax2 = 0.0
        bits = np.uint64(0)
        prev_r = -1
        run_r = 0
        prev_g4 = -1
        run4 = 0
        prev_g8 = -1
        run8 = 0
        # branch-free: with a few entries per row, "new row?", "new column group?", "first
        # entry of this column / diagonal?" are coin flips a branch predictor loses
        for p in range(s, e):
            rr = r[p]
            cc = c[p]
            x = v[p] * v[p]
            fro2 += x
            vmax2 = max(vmax2, x)
            nr = np.int64(rr != prev_r)
            prev_r = rr
            rows_ne += nr
            run_r = run_r * (1 - nr) + 1
            max_row = max(max_row, run_r)
            g4 = cc >> 2
            n4 = nr | np.int64(g4 != prev_g4)  # a new row starts new groups too
            prev_g4 = g4
            run4 = run4 * (1 - n4) + 1
            nm4 = max(nm4, run4)
            g8 = cc >> 3
            n8 = nr | np.int64(g8 != prev_g8)
            prev_g8 = g8
            run8 = run8 * (1 - n8) + 1
            nm8 = max(nm8, run8)
            cnt = colcnt[cc] + 1
            colcnt[cc] = cnt
            cols_ne += np.int64(cnt == 1)
            max_col = max(max_col, cnt)
            dd = cc - rr
            d0 = diag[dd + T]
            ndiag += np.int64(d0 == 0)
            diag[dd + T] = d0 + 1
            band = max(band, abs(dd))
            bits |= one << (np.uint64(rcell[rr]) * ug + np.uint64(ccell[cc]))
        for p in range(s, e):
            colcnt[c[p]] = 0
            diag[c[p] - r[p] + T] = 0
        ntop = top_count(k, top_q)
        if ntop == 1:
            top = vmax2
        elif ntop <= TOP_SMALL:
            top = _top_sum_small(v, s, k, ntop, sq)
        else:
            for p in range(k):
                sq[p] = v[s + p] * v[s + p]
            top = _top_sum(sq, k, ntop)
        iout[t, 0] = k
        iout[t, 1] = rows_ne
        iout[t, 2] = cols_ne
        iout[t, 3] = max_row
        iout[t, 4] = max_col
        iout[t, 5] = ndiag
        iout[t, 6] = band
        iout[t, 7] = nm4
        iout[t, 8] = nm8
        fout[t, 0] = dens
        fout[t, 1] = fro2
        fout[t, 2] = top / fro2 if fro2 > 0.0 else 0.0
        sig[t] = bits
    # log-density bin, memoised on (k, area): neighbouring tiles usually agree
    if k != memo[0] or area != memo[1]:
        memo[0] = k
        memo[1] = area
        memo[2] = int(math.floor(math.log10(dens) * bpd))
    dbin[t] = memo[2]


@njit_cached
def _fill_range(indptr, indices, data, n_rows, n_cols, T, sh, n_bcols, g, top_q, bpd,
                b0, b1, rb_ptr, bi, bj, h, w, ptr, r_out, c_out, v_out,
                iout, fout, sig, dbin):
    """Tiles, entries and features of row blocks ``b0:b1`` (serial)."""
    one = np.uint64(1)
    ug = np.uint64(g)
    n_words = (n_bcols + 63) // 64
    count = np.zeros(n_bcols, dtype=np.int64)
    offs = np.empty(n_bcols, dtype=np.int64)
    bits = np.zeros(n_words, dtype=np.uint64)
    dl = np.empty(min(n_bcols, indices.shape[0]) + 1, dtype=np.int64)
    colcnt = np.zeros(T, dtype=np.int64)
    diag = np.zeros(2 * T, dtype=np.int64)
    sq = np.empty(T * T, dtype=np.float64)
    memo = np.array([-1, -1, 0], dtype=np.int64)
    rcell = np.empty(T, dtype=np.int64)
    ccell = np.empty(T, dtype=np.int64)
    rc_for = -1  # the tile height rcell is built for
    cc_for = -1  # the tile width ccell is built for
    for b in range(b0, b1):
        r0 = b * T
        r1 = min(r0 + T, n_rows)
        hh = r1 - r0
        if hh != rc_for:
            _cells(rcell, hh, g)
            rc_for = hh
        s = indptr[r0]
        e = indptr[r1]
        d = rb_ptr[b + 1] - rb_ptr[b]
        if d == 0:
            continue
        q = 0
        for k in range(s, e):
            col = indices[k]
            j = (col >> sh) if sh >= 0 else col // T
            if count[j] == 0:
                dl[q] = j
                q += 1
            count[j] += 1
        # order the d distinct column blocks: O(min(d log d, n_bcols / 64))
        lg = 1
        while (1 << lg) < d:
            lg += 1
        if d <= 16:
            _insertion_sort(dl, 0, d)
        elif d * lg < 2 * n_words:
            dl[:d].sort()
        else:
            for q in range(d):
                j = dl[q]
                bits[j >> 6] |= one << np.uint64(j & 63)
            q = 0
            for wd in range(n_words):
                x = bits[wd]
                if x != 0:
                    bits[wd] = 0
                    while x != 0:
                        low = x & (~x + one)
                        dl[q] = wd * 64 + _popcount64(low - one)
                        q += 1
                        x ^= low
        t0 = rb_ptr[b]
        run = s
        for q in range(d):
            j = dl[q]
            t = t0 + q
            bi[t] = b
            bj[t] = j
            h[t] = hh
            w[t] = min(T, n_cols - j * T)
            ptr[t] = run
            offs[j] = run
            run += count[j]
            count[j] = 0
        for row in range(r0, r1):
            lr = row - r0
            for k in range(indptr[row], indptr[row + 1]):
                col = indices[k]
                j = (col >> sh) if sh >= 0 else col // T
                p = offs[j]
                offs[j] = p + 1
                r_out[p] = lr
                c_out[p] = col - j * T
                v_out[p] = data[k]
        for q in range(d):
            t = t0 + q
            ts = ptr[t]
            te = ptr[t + 1] if q + 1 < d else e
            ww = w[t]
            if ww != cc_for:
                _cells(ccell, ww, g)
                cc_for = ww
            if te - ts > 1:
                _features_one(t, ts, te, r_out, c_out, v_out, hh, ww, T, g, top_q, bpd,
                              colcnt, diag, sq, iout, fout, sig, dbin, memo, rcell, ccell)
                continue
            # one nonzero (inlined: a call per tile would cost more than the tile)
            rr = r_out[ts]
            cc = c_out[ts]
            x = v_out[ts] * v_out[ts]
            dd = cc - rr
            area = hh * ww
            iout[t, 0] = 1
            iout[t, 1] = 1
            iout[t, 2] = 1
            iout[t, 3] = 1
            iout[t, 4] = 1
            iout[t, 5] = 1
            iout[t, 6] = dd if dd >= 0 else -dd
            iout[t, 7] = 1
            iout[t, 8] = 1
            fout[t, 0] = 1 / area
            fout[t, 1] = x
            fout[t, 2] = 1.0 if x > 0.0 else 0.0
            sig[t] = one << (np.uint64(rcell[rr]) * ug + np.uint64(ccell[cc]))
            if memo[0] != 1 or area != memo[1]:
                memo[0] = 1
                memo[1] = area
                memo[2] = int(math.floor(math.log10(1 / area) * bpd))
            dbin[t] = memo[2]


@njit_parallel
def _fill_tiles(indptr, indices, data, n_rows, n_cols, T, sh, n_brows, n_bcols, g, top_q,
                bpd, n_chunks, rb_ptr, bi, bj, h, w, ptr, r_out, c_out, v_out,
                iout, fout, sig, dbin):
    for ch in numba.prange(n_chunks):
        _fill_range(indptr, indices, data, n_rows, n_cols, T, sh, n_bcols, g, top_q, bpd,
                    ch * n_brows // n_chunks, (ch + 1) * n_brows // n_chunks, rb_ptr,
                    bi, bj, h, w, ptr, r_out, c_out, v_out, iout, fout, sig, dbin)


# --------------------------------------------------------------------------- drivers

def _index(a: np.ndarray) -> np.ndarray:
    """Index array as int32 or int64, contiguous (the numba passes are compiled for both:
    converting a 1M-entry int32 array to int64 would cost more than the count pass)."""
    if a.dtype in (np.int32, np.int64):
        return np.ascontiguousarray(a)
    return a.astype(np.int64)


def _shift(T: int) -> int:
    return T.bit_length() - 1 if T & (T - 1) == 0 else -1


def _count(M_indptr, M_indices, data, shape, T, ind_out=None, dat_out=None):
    n_rows, n_cols = shape
    n_brows = -(-n_rows // T)
    n_bcols = -(-n_cols // T)
    n_chunks = _n_chunks(int(M_indices.shape[0]), n_brows)
    # both passes keep per-thread work arrays over the column blocks (≈ 17 bytes each); on a very
    # wide matrix they, not the nonzeros, are the memory (1e11 columns at T = 32: 3.1e9 blocks)
    check_memory(17 * n_bcols * min(n_chunks, max(numba.get_num_threads(), 1)),
                 f"Analysing a matrix of {n_cols:,} columns with T = {T} ({n_bcols:,} column blocks, each "
                 f"with per-thread work counters)",
                 "Use a larger tile side T, or drop the empty columns first (A[:, cols] with "
                 "cols = np.unique(A.indices)) when most of them are empty.")
    rb_count = np.zeros(n_brows, dtype=np.int64)
    ok = np.zeros(n_chunks, dtype=np.bool_)
    if ind_out is None:
        ind_out = np.zeros(0, dtype=M_indices.dtype)
        dat_out = np.zeros(0, dtype=np.float64)
    if n_chunks > 1:
        _count_tiles(M_indptr, M_indices, data, n_rows, n_cols, T, _shift(T), n_brows,
                     n_bcols, n_chunks, rb_count, ok, ind_out, dat_out)
    else:
        stamp = np.full(n_bcols, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
        ok[0] = _count_range(M_indptr, M_indices, data, n_rows, n_cols, T, _shift(T), 0,
                             n_brows, stamp, rb_count, ind_out, dat_out)
    return bool(ok.all()), rb_count


def _plain_float_csr(A) -> bool:
    """A float64 CSR matrix/array, at least 1 × 1, whose pointer array is the right length and
    spans its index and value arrays (its indices are then worth checking as they are)."""
    return (sp.issparse(A) and A.format == "csr" and A.ndim == 2 and A.dtype == np.float64
            and A.shape[0] >= 1 and A.shape[1] >= 1
            and A.indptr.shape[0] == A.shape[0] + 1 and A.indptr[0] == 0
            and A.indptr[-1] == A.indices.shape[0] == A.data.shape[0])


def csr_source(A, T: int):
    """What :func:`akfviz.analyze` reads: ``(M, indptr, indices, data, rb_count, deferred)``.

    When ``A`` is a float64 CSR matrix/array whose indices are canonical (strictly increasing in
    every row and in range: checked here, with the tiles per row block counted on the way),
    ``M`` is None and ``deferred`` True: its values are checked (finite, nonzero) and its arrays
    copied by the scan pass, and :func:`canonical_csr` is the fallback if a value fails. Anything
    else gives ``M = canonical_csr(A, T)``'s matrix and ``deferred`` False.
    """
    if _plain_float_csr(A):
        indptr = _index(A.indptr)
        indices = _index(A.indices)
        ok, rb_count = _count(indptr, indices, np.zeros(0), A.shape, T)
        if ok:
            return None, indptr, indices, np.asarray(A.data), rb_count, True
    M, indptr, indices, rb_count = canonical_csr(A, T)
    return M, indptr, indices, M.data, rb_count, False


def canonical_csr(A, T: int):
    """``as_csr(A)`` with a fast path, plus the tile count of every row block.

    When ``A`` is a CSR matrix/array with float64 values whose arrays are already
    canonical (checked in the numba count pass: indices strictly increasing in every row
    and in range, values finite and nonzero), the result is a copy of its arrays — the
    same matrix :func:`akfviz.workloads.validate.as_csr` would return — without scipy's
    canonicalisation passes. Anything else goes through ``as_csr``.

    Returns
    -------
    M : scipy.sparse.csr_array
        Canonical float64 copy.
    indptr, indices : ndarray of int32 or int64
        ``M``'s own index arrays.
    rb_count : ndarray of int64, shape (n_brows,)
        Number of nonempty tiles per row block.
    """
    if _plain_float_csr(A):
        indptr = _index(A.indptr)
        indices = _index(A.indices)
        check_memory(indptr.nbytes + indices.nbytes + A.data.nbytes, "A copy of the matrix",
                     "Free memory or analyse a smaller matrix.")
        ind_out = np.empty_like(indices)
        dat_out = np.empty_like(A.data)
        ok, rb_count = _count(indptr, indices, A.data, A.shape, T, ind_out, dat_out)
        if ok:
            M = sp.csr_array((dat_out, ind_out, indptr.copy()), shape=A.shape, copy=False)
            M.has_canonical_format = True
            return M, M.indptr, M.indices, rb_count
        del ind_out, dat_out
    M = as_csr(A)
    indptr = _index(M.indptr)
    indices = _index(M.indices)
    ok, rb_count = _count(indptr, indices, M.data, M.shape, T)
    assert ok, "as_csr returned a non-canonical matrix"
    return M, indptr, indices, rb_count


def row_block_pointers(rb_count) -> np.ndarray:
    """``rb_ptr`` (int64, ``n_brows + 1``): the tiles of row block ``b`` are ``rb_ptr[b]:rb_ptr[b+1]``."""
    rb_ptr = np.empty(rb_count.shape[0] + 1, dtype=np.int64)
    rb_ptr[0] = 0
    np.cumsum(rb_count, out=rb_ptr[1:])
    return rb_ptr


def tiles_and_features(M, indptr, indices, rb_count, T: int, grid: int = 8,
                       top_q: float = 0.1, bins_per_decade: int = 2):
    """Tiles of a canonical CSR matrix and their features, in one pass (see module doc).

    Parameters
    ----------
    M : scipy.sparse.csr_array
        Canonical float64 matrix; ``indptr``, ``indices``, ``rb_count`` as returned by
        :func:`canonical_csr`.
    T, grid, top_q, bins_per_decade
        As in :func:`build_tiles` and :func:`tile_features` (validated by the caller).

    Returns
    -------
    (TileSet, ints, floats, signature, density_bin)
        Identical to ``build_tiles(M, T)`` and ``tile_features(ts, grid, top_q, bpd)``.
    """
    if not 1 <= grid <= GRID_MAX:
        raise ValueError("grid out of range")
    n_rows, n_cols = M.shape
    n_brows = rb_count.shape[0]
    n_bcols = -(-n_cols // T)
    nnz = int(M.nnz)
    rb_ptr = row_block_pointers(rb_count)
    n = int(rb_ptr[-1])
    # this pass's outputs (8 bytes per item) plus the clustering's four per-tile arrays
    check_memory(8 * (19 * n + 3 * nnz) + 32 * n,
                 f"Analysing this matrix with T = {T} ({n:,} nonempty tiles, {nnz:,} nonzeros)",
                 "A larger tile side gives fewer, fuller tiles; or analyse a smaller matrix.")
    arena = Arena([n] * 4 + [n + 1] + [nnz] * 3 + [n * len(INT_FEATURES),
                                                     n * len(FLOAT_FEATURES), n, n])
    bi, bj, h, w = (arena.take(n, np.int64) for _ in range(4))
    ptr = arena.take(n + 1, np.int64)
    ptr[n] = nnz
    r = arena.take(nnz, np.int64)
    c = arena.take(nnz, np.int64)
    v = arena.take(nnz, np.float64)
    iout = arena.take(n * len(INT_FEATURES), np.int64).reshape(len(INT_FEATURES), n).T
    fout = arena.take(n * len(FLOAT_FEATURES), np.float64).reshape(len(FLOAT_FEATURES), n).T
    sig = arena.take(n, np.uint64)
    dbin = arena.take(n, np.int64)
    args = (indptr, indices, M.data, n_rows, n_cols, T, _shift(T))
    n_chunks = _n_chunks(nnz, n_brows)
    if n_chunks > 1:
        _fill_tiles(*args, n_brows, n_bcols, int(grid), float(top_q), float(bins_per_decade),
                    n_chunks, rb_ptr, bi, bj, h, w, ptr, r, c, v, iout, fout, sig, dbin)
    elif n:
        _fill_range(*args, n_bcols, int(grid), float(top_q), float(bins_per_decade),
                    0, n_brows, rb_ptr, bi, bj, h, w, ptr, r, c, v, iout, fout, sig, dbin)
    ts = TileSet(shape=(int(n_rows), int(n_cols)), tile=T, n_brows=n_brows, n_bcols=n_bcols,
                 bi=bi, bj=bj, h=h, w=w, ptr=ptr, r=r, c=c, v=v, rb_ptr=rb_ptr)
    return ts, iout, fout, sig, dbin
