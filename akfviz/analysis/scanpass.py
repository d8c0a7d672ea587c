"""The eager pass of :func:`akfviz.analyze`: tiles, compact features and pairs in one O(nnz) pass.

:mod:`akfviz.analysis.tilepass` builds everything ``pa.tiles`` shows: the :class:`TileSet` (every
entry moved to its tile) and 14 int64 / float64 features per tile. On a hyper-sparse matrix (about
one nonzero per tile: 951k tiles for 1M nonzeros at T = 32) that is ≈ 170 MB written, 14× what one
SpMV reads, and it is what made ``analyze`` cost 30–40 SpMVs. Clustering and the selector's cluster
mode need far less. This pass writes, per tile,

==========  =======  =================================================================================
``bj``      int32    column block (the row block is implied by ``rb_ptr``)
``nnz``     int32    nonzeros ``k``
``cls``     int8     structure class of the performance table (:mod:`akfviz.selection.structure`)
``fro2``    float64  ``Σ v²``
``top``     float64  share of ``Σ v²`` in the ``max(1, ⌊q·k⌋)`` largest ``|v|`` (``top_mass``), written
                     for tiles of two or more entries only: a one-entry tile's is 1 (0 if its ``v²``
                     underflows), see :func:`tile_top`
``pid``     int32    the tile's (signature, density bin) pair, numbered within its chunk
==========  =======  =================================================================================

≈ 21 bytes per tile (plus ``top`` where written), and per *pair* (distinct signature and log-density
bin, tens of thousands at most on such a matrix) its signature, bin, first tile, and the first tile's
density and ``top`` with a flag saying whether every later tile of the pair matches them. A row
block's entries are grouped by tile only when one of its tiles is too large for its class and
``top`` to follow from counters, and then only in a per-worker buffer (cache-resident), never
written out. The definitions are those of :mod:`akfviz.analysis.features` and the arithmetic is the
same, so the values are those of the full pass bit for bit (tested); the full pass
(:func:`akfviz.analysis.tilepass.tiles_and_features`) runs only when something asks for the entries
or the other features (``pa.tileset``, ``pa.tiles``). With ``copy_of`` the pass also checks the
values (finite, nonzero) and copies the matrix's arrays, which :func:`akfviz.analyze` keeps.

Chunks are fixed ranges of row blocks (:func:`chunk_bounds`, independent of the thread count), so
the pair numbering — and everything computed from it — is the same on any machine.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from numba.cpython.unsafe.numbers import trailing_zeros

from .._jit import njit_cached, njit_inline, njit_parallel, serial_twin
from ..selection._kernels import DIAG_FILL, NM_MIN_DENSITY, _class_of
from .features import TOP_SMALL, _top_sum, _top_sum_small, top_count
from .lsh import _mix64
from .tilepass import _cells, row_block_pointers
from .tiling import _insertion_sort, _popcount64

#: Row blocks are cut into at most this many chunks of consecutive row blocks (pairs are numbered
#: per chunk, then merged): enough for load balance on a few cores, few enough that the per-chunk
#: work arrays over the column blocks stay small.
MAX_CHUNKS = 64
#: Below this many nonzeros one chunk is used (and no thread is started).
PARALLEL_MIN_NNZ = 200_000
#: Bytes per tile of the pass's outputs (``bj``, ``nnz``, ``cls``, ``fro2``, ``top``, ``pid``); its
#: pair slots are touched only for the pairs that exist.
EAGER_BYTES_PER_TILE = 29


def chunk_bounds(n_brows: int, nnz: int) -> np.ndarray:
    """Row-block boundaries of the chunks (int64, ``n_chunks + 1``): ``MAX_CHUNKS`` equal ranges
    of row blocks for a large matrix, one for a small one. Depends on the matrix only."""
    n_chunks = 1 if nnz < PARALLEL_MIN_NNZ else max(1, min(n_brows, MAX_CHUNKS))
    return (np.arange(n_chunks + 1, dtype=np.int64) * n_brows) // n_chunks


#: Sentinel of the density-bin table (no tile has this bin).
NO_BIN = -(1 << 40)
#: Pairs of two-bit signatures (a tile whose entries fall in two coarse cells: most tiles of two
#: entries) are found in a direct table of 64·64 bit pairs per density bin — by the eager pass and by
#: :func:`akfviz.analysis.pairclust.merge_pairs` — when there are at most this many bins (≤ 1.2 MB
#: of int64; the defaults have 9); else, as signatures of three bits or more, by hashing.
DIRECT2_MAX_BINS = 36


@njit_inline
def two_bit_key(x, bb, bmin, nbins):
    """Slot of the pair (two-bit signature ``x``, bin ``bb``) in a direct table of ``4096·nbins``:
    ``(lo·64 + hi)·nbins + bb − bmin`` with ``lo`` / ``hi`` the signature's bits."""
    lo = np.uint64(trailing_zeros(x))
    hi = np.uint64(trailing_zeros(x & (x - np.uint64(1))))
    return (lo * np.uint64(64) + hi) * np.uint64(nbins) + np.uint64(bb - bmin)


def bin_floor(T: int, bpd: int) -> int:
    """A log-density bin at or below every tile's: ``floor(log10(1/T²)·bpd) − 1`` (a tile's
    density is at least ``1/(h·w) ≥ 1/T²``; the − 1 absorbs rounding of the logarithm)."""
    return int(math.floor(math.log10(1.0 / (T * T)) * bpd)) - 1


@njit_inline
def tile_top(t, nnz, fro2, top):
    """``top_mass`` of tile ``t`` from the pass's arrays: ``top[t]`` for a tile of several entries;
    a one-entry tile's top entry is all of it (1, or 0 when its ``v²`` underflows), which the pass
    does not write."""
    if nnz[t] > 1:
        return top[t]
    return 1.0 if fro2[t] > 0.0 else 0.0


@njit_inline
def tile_density(t, nnz, col_block, last_rb_start, T, h_last, w_last, j_last):
    """``nnz / (h·w)`` of tile ``t`` (the features' arithmetic): a tile is ``T`` high unless it is in
    the last row block (tiles from ``last_rb_start`` on, ``h_last`` high) and ``T`` wide unless it is
    in the last column block (``j_last``, ``w_last`` wide)."""
    hh = h_last if t >= last_rb_start else T
    if w_last == T:   # every column block is T wide: the tile's own is not read (a cache line
        return nnz[t] / (hh * T)   # per tile when the tiles are read at random, as a cluster's)
    ww = w_last if col_block[t] == j_last else T
    return nnz[t] / (hh * ww)


@njit_cached
def _pair_slot(x, bb, a, psig, pbin, slot, mask):
    """Position in ``slot`` of the pair (signature ``x``, bin ``bb``) of a chunk whose pairs start
    at ``psig/pbin[a]`` (open addressing, linear probing); ``slot[pos] < 0`` when absent."""
    one = np.uint64(1)
    pos = _mix64(x ^ _mix64(np.uint64(bb))) & mask
    while True:
        q = slot[pos]
        if q < 0 or (psig[a + q] == x and pbin[a + q] == bb):
            return pos
        pos = (pos + one) & mask


@njit_inline
def _small_tile_class(hh, ww, k, sig, grid):
    """Structure class of a tile whose ``k`` is below the diagonal and N:M rules' minimum counts
    (``k < DIAG_FILL·min(h, w)``, ``k < NM_MIN_DENSITY·h·w``): those rules fail whatever its
    diagonals and N:M groups, so only the block rule, read from the signature, is evaluated
    (``n_diagonals = 1``, ``nm4 = 3`` are stand-ins that fail the first two rules as the real
    values do)."""
    return _class_of(hh, ww, k, 1, 3, sig, grid)


@njit_cached
def _rb_count(r0, r1, indptr, indices, data, sh, T, g, rcell, ccell, ecell, j_last, bits, count, words, dl,
              first_cell, first_v, acc_f2, acc_vm, acc_sig, ind_out, dat_out):
    """Step 1 of a row block (rows ``r0:r1``) of :func:`_scan_range`: count the entries of every
    column block; a block's first entry keeps its value and coarse cell, from the second on it
    accumulates ``Σ v²``, ``max v²`` and the signature; new column blocks go to ``dl`` (or, with
    ``bits``, to the bitmap ``words``). With ``ind_out`` non-empty the entries are copied there,
    their values checked. Returns (distinct blocks listed in ``dl``, largest count, a value
    failed). Its own function, as each step of the row block: inlined into one kernel the loops
    ran slower (register spills)."""
    one = np.uint64(1)
    zero = np.uint64(0)
    ug = np.uint64(g)
    uT = np.uint64(T)
    ush = np.uint64(sh if sh >= 0 else 0)
    copy = ind_out.shape[0] > 0
    bad = False
    q = zero
    maxk = 1
    for row in range(r0, r1):
        rbit = np.uint64(rcell[row - r0]) * ug
        for k in range(np.uint64(indptr[row]), np.uint64(indptr[row + 1])):
            col = np.uint64(indices[k])
            if copy:   # the analysis' copy of the matrix, values checked on the way
                xv = data[k]
                bad |= (xv == 0.0) | (not (xv - xv == 0.0))
                ind_out[k] = indices[k]
                dat_out[k] = xv
            j = (col >> ush) if sh >= 0 else col // uT
            c = count[j] + 1
            count[j] = c
            cc = col - j * uT
            cell = rbit + np.uint64(ccell[cc] if j != j_last else ecell[cc])
            if c == 1:
                if bits:
                    words[j >> np.uint64(6)] |= one << (j & np.uint64(63))
                else:
                    dl[q] = j
                    q += one
                first_cell[j] = cell
                first_v[j] = data[k]
            else:
                x = data[k] * data[k]
                if c == 2:
                    f = first_v[j] * first_v[j]
                    acc_f2[j] = f + x
                    acc_vm[j] = max(f, x)
                    acc_sig[j] = (one << first_cell[j]) | (one << cell)
                else:
                    acc_f2[j] += x
                    acc_vm[j] = max(acc_vm[j], x)
                    acc_sig[j] |= one << cell
                maxk = max(maxk, c)
    return q, maxk, bad


@njit_cached
def _rb_order(d, bits, n_words, words, dl):
    """Step 2: the row block's ``d`` column blocks in ascending order in ``dl`` (from the bitmap
    ``words``, cleared on the way, when ``bits``)."""
    one = np.uint64(1)
    zero = np.uint64(0)
    if bits:
        # a word's set bits, eight at a time whatever their number (its slots past the last bit
        # get garbage, overwritten next): a row block's words have a few bits each, and a loop
        # ending after the last one mispredicted its exit on nearly every word
        q = zero
        for wd in range(n_words):
            x = words[wd]
            if x != 0:
                words[wd] = zero
                base = np.uint64(wd) * np.uint64(64)
                cnt = np.uint64(_popcount64(x))
                end = q + cnt
                while True:
                    for _ in range(8):
                        dl[q] = base + np.uint64(trailing_zeros(x))
                        q += one
                        x &= x - one
                    if q >= end:
                        break
                q = end
    elif d <= 16:
        _insertion_sort(dl, 0, d)
    else:
        dl[:d].sort()


@njit_cached
def _rb_group(r0, r1, d, indptr, indices, data, sh, T, dl, count, offs, lr, lc, lv):
    """Step 3, for a row block with large tiles: its entries grouped by tile in the local buffers
    ``lr`` / ``lc`` / ``lv`` (stable: a tile's entries in (r, c) order); ``offs[j]`` ends at the
    end of tile ``j``'s entries."""
    one = np.uint64(1)
    zero = np.uint64(0)
    uT = np.uint64(T)
    ush = np.uint64(sh if sh >= 0 else 0)
    run = zero
    for i in range(d):
        j = dl[i]
        offs[j] = run
        run += np.uint64(count[j])
    for row in range(r0, r1):
        rr = row - r0
        for k in range(np.uint64(indptr[row]), np.uint64(indptr[row + 1])):
            col = np.uint64(indices[k])
            j = (col >> ush) if sh >= 0 else col // uT
            p = offs[j]
            offs[j] = p + one
            lr[p] = rr
            lc[p] = np.int64(col - j * uT)
            lv[p] = data[k]


@njit_cached
def _rb_plain(t0, d, full_rb, j_last, dl, count, first_v, first_cell, direct, unb, plain_off, plain_cls,
              bj, nnz, fro2, cls, pid, slow):
    """Step 4: every tile of the row block gets its column block and nnz; the *plain* ones — one
    entry, a full T×T tile, top = 1, in a pair whose first tile was plain (``direct``'s low bit) —
    their Σv², class and pair too. The others are listed in ``slow``; returns how many."""
    ns = 0
    for i in range(d):
        j = dl[i]
        k = count[j]
        t = t0 + np.uint64(i)
        bj[t] = j
        nnz[t] = k
        if k == 1 and full_rb and j != j_last:
            f2 = first_v[j] * first_v[j]
            v = direct[first_cell[j] * unb + plain_off]
            if f2 > 0.0 and v >= 0 and (v & 1) == 1:
                fro2[t] = f2
                cls[t] = plain_cls
                pid[t] = v >> 1
                count[j] = 0
                continue
        slow[ns] = i
        ns += 1
    return ns


@njit_cached
def _scan_range(indptr, indices, data, n_rows, n_cols, T, sh, n_bcols, g, top_q, bpd, grid,
                bmin, nbins, c0, c1, bounds, rb_ptr, buf_size,
                bj, nnz, cls, fro2, top, pid,
                psig, pbin, pfirst, pdens, ptm, pmixed, m_out, ind_out, dat_out, bad_out):
    """Chunks ``c0:c1`` (row blocks ``bounds[ch]:bounds[ch + 1]``): per-tile outputs at the
    tiles' places, chunk ``ch``'s pairs at ``a = rb_ptr[bounds[ch]]`` onwards (first appearance
    in tile order) and their number in ``m_out[ch]``. The work arrays are allocated once for all
    the chunks of the call.

    Every entry of a row block is read once to count the entries of each column block, keeping
    the first one's value and coarse cell: a one-entry tile (every tile of a hyper-sparse matrix,
    nearly) needs nothing else. Tiles of several entries get ``Σ v²``, ``max v²`` and their
    signature from a second read (entries of a tile arrive in its (r, c) order, so the sums are
    those of features.py). When a tile is too large for its class and ``top`` to follow from
    those (``top_count(k) > 1``, or ``k`` reaching the diagonal or N:M rules' counts), the row
    block's entries are also grouped by tile in a local buffer for the diagonals, N:M groups
    and top-q sums.

    Hot loops index with unsigned integers: numba then skips the negative-index check, which
    was a third of the time of the counting loop."""
    one = np.uint64(1)
    n_words = (n_bcols + 63) // 64
    count = np.zeros(n_bcols, dtype=np.int64)
    acc_f2 = np.empty(n_bcols, dtype=np.float64)   # set by a tile's second entry
    acc_vm = np.empty(n_bcols, dtype=np.float64)
    acc_sig = np.empty(n_bcols, dtype=np.uint64)
    offs = np.empty(n_bcols, dtype=np.uint64)
    first_cell = np.empty(n_bcols, dtype=np.uint64)
    first_v = np.empty(n_bcols, dtype=np.float64)
    words = np.zeros(n_words, dtype=np.uint64)
    dl = np.empty(min(n_bcols, max(buf_size, 1)) + 9, dtype=np.uint64)   # + 8: _rb_order's slack
    lr = np.empty(max(buf_size, 1), dtype=np.int64)
    lc = np.empty(max(buf_size, 1), dtype=np.int64)
    lv = np.empty(max(buf_size, 1), dtype=np.float64)
    diag = np.zeros(2 * T, dtype=np.int64)
    sq = np.empty(T * T, dtype=np.float64)
    rcell = np.empty(T, dtype=np.int64)
    ccell = np.empty(T, dtype=np.int64)   # coarse cell of a local column, tiles of width T
    ecell = np.empty(T, dtype=np.int64)   # the same for the last column block (narrower)
    j_last = np.uint64(n_bcols - 1)
    w_last = n_cols - (n_bcols - 1) * T
    _cells(ccell, T, g)
    _cells(ecell, w_last, g)
    w_min = min(T, w_last)
    full_area = T * T
    bintab = np.full(full_area + 1, NO_BIN, dtype=np.int64)  # density bin of k entries in a T×T tile
    direct = np.empty(64 * nbins, dtype=np.int64)  # one-bit signatures: (bit, bin) -> 2·pair + plain
    # two-bit signatures: (bit, bit, bin) -> (chunk + 1) << 32 | pair; the chunk stamp replaces a
    # reset per chunk (295 kB with the defaults)
    use2 = nbins <= DIRECT2_MAX_BINS
    direct2 = np.zeros(0, dtype=np.int64)   # allocated at the first two-bit signature
    unb = np.uint64(nbins)
    plain_off = np.uint64(int(math.floor(math.log10(1 / full_area) * bpd)) - bmin)
    plain_cls = _class_of(T, T, 1, 1, 1, one, grid)
    slow = np.empty(min(n_bcols, max(buf_size, 1)) + 1, dtype=np.int64)
    rc_for = -1
    memo_k = -1      # density bin memo on (k, area), for edge tiles
    memo_area = -1
    memo_bin = 0
    one_h = -1       # class memo of one-nonzero tiles on (h, w)
    one_w = -1
    one_cls = 0
    copy = ind_out.shape[0] > 0
    bad = False
    for ch in range(c0, c1):
        b0 = bounds[ch]
        a = np.uint64(rb_ptr[b0])
        direct[:] = -1   # pairs are numbered per chunk
        size = 1024
        mask = np.uint64(size - 1)
        slot = np.full(size, -1, dtype=np.int64)
        n_hashed = 0
        m = np.uint64(0)
        for b in range(b0, bounds[ch + 1]):
            r0 = b * T
            r1 = min(r0 + T, n_rows)
            hh = r1 - r0
            if hh != rc_for:
                _cells(rcell, hh, g)
                rc_for = hh
            d = rb_ptr[b + 1] - rb_ptr[b]
            if d == 0:
                continue
            # 1. count the entries of every column block, keeping the first entry's value and cell;
            #    from its second entry on a tile accumulates Σ v², max v² and its signature (its
            #    entries arrive in its (r, c) order, so the sums are those of features.py)
            lg = 1
            while (1 << lg) < d:
                lg += 1
            bits = d > 16 and d * lg >= 2 * n_words   # order the column blocks by a bitmap
            q, maxk, bad_rb = _rb_count(r0, r1, indptr, indices, data, sh, T, g, rcell, ccell, ecell, j_last,
                                        bits, count, words, dl, first_cell, first_v, acc_f2, acc_vm, acc_sig,
                                        ind_out, dat_out)
            bad |= bad_rb
            # 2. the distinct column blocks in order: O(min(d log d, n_bcols / 64))
            _rb_order(d, bits, n_words, words, dl)
            # 3. large tiles need their entries grouped (local buffer, stable by (r, c)) for their
            #    diagonals, N:M groups and top-q sums
            small = (top_count(maxk, top_q) == 1 and maxk < DIAG_FILL * min(hh, w_min)
                     and maxk < NM_MIN_DENSITY * hh * w_min)
            if not small:
                _rb_group(r0, r1, d, indptr, indices, data, sh, T, dl, count, offs, lr, lc, lv)
            # 4. plain tiles — one entry, a full T×T tile, top = 1, in a pair whose first tile was
            #    plain — in a tight loop; the others (a hyper-sparse matrix has few) after it
            t0 = np.uint64(rb_ptr[b])
            ns = _rb_plain(t0, d, hh == T, j_last, dl, count, first_v, first_cell, direct, unb, plain_off,
                           plain_cls, bj, nnz, fro2, cls, pid, slow)
            for si in range(ns):
                i = slow[si]
                j = dl[i]
                k = count[j]
                count[j] = 0
                t = t0 + np.uint64(i)
                ww = T if j != j_last else w_last
                area = hh * ww
                if k == 1:
                    f2 = first_v[j] * first_v[j]
                    sig = one << first_cell[j]
                    tm = 1.0 if f2 > 0.0 else 0.0
                    if hh != one_h or ww != one_w:
                        one_h = hh
                        one_w = ww
                        one_cls = _class_of(hh, ww, 1, 1, 1, sig, grid)
                    cl = one_cls
                else:
                    f2 = acc_f2[j]
                    sig = acc_sig[j]
                    if small:
                        tm = acc_vm[j] / f2 if f2 > 0.0 else 0.0
                        cl = _small_tile_class(hh, ww, k, sig, grid)
                    else:
                        # diagonals, N:M groups and top-q sum of the grouped entries (features.py)
                        ts = np.int64(offs[j]) - k
                        te = ts + k
                        ndiag = 0
                        nm4 = 0
                        prev_r = -1
                        prev_g4 = -1
                        run4 = 0
                        for p in range(ts, te):
                            rr = lr[p]
                            cc = lc[p]
                            nr = np.int64(rr != prev_r)
                            prev_r = rr
                            g4 = cc >> 2
                            n4 = nr | np.int64(g4 != prev_g4)
                            prev_g4 = g4
                            run4 = run4 * (1 - n4) + 1
                            nm4 = max(nm4, run4)
                            dd = cc - rr + T
                            d0 = diag[dd]
                            ndiag += np.int64(d0 == 0)
                            diag[dd] = d0 + 1
                        for p in range(ts, te):
                            diag[lc[p] - lr[p] + T] = 0
                        ntop = top_count(k, top_q)
                        if ntop == 1:
                            tv = acc_vm[j]
                        elif ntop <= TOP_SMALL:
                            tv = _top_sum_small(lv, ts, k, ntop, sq)
                        else:
                            for p in range(k):
                                sq[p] = lv[ts + p] * lv[ts + p]
                            tv = _top_sum(sq, k, ntop)
                        tm = tv / f2 if f2 > 0.0 else 0.0
                        cl = _class_of(hh, ww, k, ndiag, nm4, sig, grid)
                fro2[t] = f2
                if k > 1:
                    top[t] = tm
                cls[t] = cl
                if area == full_area:
                    bb = bintab[k]
                    if bb == NO_BIN:
                        bb = int(math.floor(math.log10(k / area) * bpd))
                        bintab[k] = bb
                else:
                    if k != memo_k or area != memo_area:
                        memo_k = k
                        memo_area = area
                        memo_bin = int(math.floor(math.log10(k / area) * bpd))
                    bb = memo_bin
                # the pair (signature, density bin), numbered by first appearance in the chunk: pairs
                # are only created here, in tile order (a plain tile above only joins a pair made in
                # an earlier row block). The direct table of one-bit signatures keeps, beside the
                # pair, whether its first tile was plain.
                plain = k == 1 and area == full_area and tm == 1.0
                s2 = sig & (sig - one)
                if s2 == 0:  # one coarse cell (every one-nonzero tile)
                    key = np.uint64(trailing_zeros(sig)) * unb + np.uint64(bb - bmin)
                    v = direct[key]
                    if v < 0:
                        pp = np.int64(m)
                        direct[key] = 2 * pp + (1 if plain else 0)
                    else:
                        pp = v >> 1
                elif use2 and (s2 & (s2 - one)) == 0:   # two coarse cells
                    if direct2.shape[0] == 0:
                        direct2 = np.zeros(4096 * nbins, dtype=np.int64)
                    key = two_bit_key(sig, bb, bmin, nbins)
                    v = direct2[key]
                    if (v >> 32) == ch + 1:
                        pp = v & 0xFFFFFFFF
                    else:
                        pp = np.int64(m)
                        direct2[key] = ((ch + 1) << 32) | pp
                else:
                    pos = _pair_slot(sig, bb, a, psig, pbin, slot, mask)
                    pp = slot[pos]
                    if pp < 0:
                        pp = np.int64(m)
                        slot[pos] = pp
                        n_hashed += 1
                up = np.uint64(pp)
                ap = a + up
                if up == m:  # a new pair
                    psig[ap] = sig
                    pbin[ap] = bb
                    pfirst[ap] = t
                    pdens[ap] = k / area
                    ptm[ap] = tm
                    pmixed[ap] = 0
                    m += one
                    if 2 * n_hashed > size:
                        size *= 2
                        mask = np.uint64(size - 1)
                        slot = np.full(size, -1, dtype=np.int64)
                        for q2 in range(m):
                            y = psig[a + q2]
                            y2 = y & (y - one)
                            if y2 == 0 or (use2 and (y2 & (y2 - one)) == 0):
                                continue  # one- and two-bit signatures live in `direct` / `direct2`
                            slot[_pair_slot(y, pbin[a + q2], a, psig, pbin, slot, mask)] = q2
                elif k / area != pdens[ap] or tm != ptm[ap]:
                    pmixed[ap] = 1
                pid[t] = pp
        m_out[ch] = np.int64(m)
    if copy and bad:
        bad_out[c0] = True



@njit_parallel
def _scan_chunks(indptr, indices, data, n_rows, n_cols, T, sh, n_bcols, g, top_q, bpd, grid,
                 bmin, nbins, bounds, wbounds, rb_ptr, buf_size,
                 bj, nnz, cls, fro2, top, pid,
                 psig, pbin, pfirst, pdens, ptm, pmixed, m, ind_out, dat_out, bad_out):
    """:func:`_scan_range` on the chunks ``wbounds[w]:wbounds[w + 1]`` of each worker ``w``
    (``prange``); ``m[ch]`` receives chunk ``ch``'s number of pairs."""
    for w in numba.prange(wbounds.shape[0] - 1):
        _scan_range(indptr, indices, data, n_rows, n_cols, T, sh, n_bcols, g, top_q, bpd,
                    grid, bmin, nbins, wbounds[w], wbounds[w + 1], bounds, rb_ptr, buf_size,
                    bj, nnz, cls, fro2, top, pid, psig, pbin, pfirst, pdens, ptm, pmixed, m,
                    ind_out, dat_out, bad_out)


_scan_chunks_serial = serial_twin(_scan_chunks)


class ScanResult:
    """What :func:`scan_tiles` returns: per-tile compact arrays and the chunks' pair tables.

    Attributes
    ----------
    rb_ptr : int64 (n_brows + 1)
    bj, nnz : int32 (n_tiles,)
    cls : int8 (n_tiles,)
    fro2, top : float64 (n_tiles,)
        ``Σ v²`` and the top-q mass share (``top`` written for tiles of several entries only:
        :func:`tile_top`).
    pid : int32 (n_tiles,)
        Pair of each tile, numbered within its chunk (see :func:`akfviz.analysis.pairclust.merge_pairs`).
    bounds : int64 (n_chunks + 1,)
        Row-block boundaries of the chunks.
    m : int64 (n_chunks,)
        Pairs per chunk; chunk ``ch``'s are at ``rb_ptr[bounds[ch]]`` onwards in the pair arrays.
    psig, pbin, pfirst
        Pair tables: signature, density bin, first tile (the tiles per pair are counted later,
        while the tiles get their cluster: :mod:`akfviz.analysis.pairclust`).
    pdens, ptm, pmixed
        The first tile's density and ``top``; ``pmixed`` 1 when another tile of the pair (in the
        chunk) differs in one of them, else 0.
    indices, data, bad
        With ``copy_of``: the copies of the matrix's arrays, and whether a value failed the check.
    """

    def __init__(self, **arrays):
        self.__dict__.update(arrays)


def scan_tiles(M, indptr, indices, rb_count, T: int, grid: int = 8, top_q: float = 0.1,
               bins_per_decade: int = 2, copy_of=None) -> ScanResult:
    """Run the eager pass over a canonical CSR matrix (see the module docstring).

    Parameters
    ----------
    M : scipy.sparse.csr_array or None
        Canonical float64 matrix; ``indptr``, ``indices``, ``rb_count`` as returned by
        :func:`akfviz.analysis.tilepass.canonical_csr`. None with ``copy_of``.
    T, grid, top_q, bins_per_decade
        Tile side and the LSH settings of the features (validated by the caller).
    copy_of : (data, shape), optional
        A CSR matrix whose indices are canonical but whose values are not checked yet
        (:func:`akfviz.analysis.tilepass.csr_source`): its values are checked (finite, nonzero) and
        its ``indices`` and ``data`` copied on the way, into ``ScanResult.indices`` / ``.data``;
        ``ScanResult.bad`` says whether a value failed (then nothing else of the result counts).
    """
    from ..memory import check_memory

    data, shape = (M.data, M.shape) if copy_of is None else copy_of
    n_rows, n_cols = (int(s) for s in shape)
    n_brows = rb_count.shape[0]
    n_bcols = -(-n_cols // T)
    nnz = int(data.shape[0])
    rb_ptr = row_block_pointers(rb_count)
    n = int(rb_ptr[-1])
    rows = np.minimum(np.arange(n_brows + 1, dtype=np.int64) * T, n_rows)
    buf_size = int(np.diff(np.asarray(indptr)[rows]).max()) if n_brows else 0
    bounds = chunk_bounds(n_brows, nnz)
    n_chunks = bounds.shape[0] - 1
    par = n_chunks > 1 and numba.get_num_threads() > 1
    workers = min(n_chunks, numba.get_num_threads()) if par else 1
    # the per-tile outputs; per worker the column-block counters and one row block's entries
    check_memory(EAGER_BYTES_PER_TILE * n + 64 * workers * n_bcols + 24 * workers * buf_size,
                 f"Analysing this matrix with T = {T} ({n:,} nonempty tiles, {nnz:,} nonzeros)",
                 "A larger tile side gives fewer, fuller tiles; or analyse a smaller matrix.")
    bj = np.empty(n, dtype=np.int32 if n_bcols < 2**31 else np.int64)
    tnnz = np.empty(n, dtype=np.int32)
    cls = np.empty(n, dtype=np.int8)
    fro2 = np.empty(n, dtype=np.float64)
    top = np.empty(n, dtype=np.float64)
    pid = np.empty(n, dtype=np.int32)
    # pair slots: chunk ch writes its m[ch] pairs from rb_ptr[bounds[ch]] (never more than its
    # tiles); untouched slots cost no memory (np.empty does not touch its pages)
    psig = np.empty(n, dtype=np.uint64)
    pbin = np.empty(n, dtype=np.int64)
    pfirst = np.empty(n, dtype=np.int64)
    pdens = np.empty(n, dtype=np.float64)
    ptm = np.empty(n, dtype=np.float64)
    pmixed = np.empty(n, dtype=np.int8)
    m = np.zeros(n_chunks, dtype=np.int64)
    # workers: consecutive chunks, one group per thread (chunks, not workers, number the pairs)
    wbounds = (np.arange(workers + 1, dtype=np.int64) * n_chunks) // workers
    bmin = bin_floor(T, bins_per_decade)
    nbins = 1 - bmin
    sh = T.bit_length() - 1 if T & (T - 1) == 0 else -1
    if copy_of is not None:
        ind_out, dat_out = np.empty_like(indices), np.empty(nnz, dtype=np.float64)
    else:
        ind_out, dat_out = np.zeros(0, dtype=indices.dtype), np.zeros(0)
    bad = np.zeros(n_chunks, dtype=np.bool_)
    if n:
        (_scan_chunks if par else _scan_chunks_serial)(
            indptr, indices, data, n_rows, n_cols, T, sh, n_bcols, int(grid), float(top_q),
            float(bins_per_decade), int(grid), bmin, nbins, bounds, wbounds, rb_ptr, buf_size,
            bj, tnnz, cls, fro2, top, pid, psig, pbin, pfirst, pdens, ptm, pmixed, m, ind_out, dat_out,
            bad)
    return ScanResult(shape=(n_rows, n_cols), tile=T, rb_ptr=rb_ptr, bj=bj, nnz=tnnz, cls=cls, fro2=fro2, top=top,
                      pid=pid,
                      bounds=bounds, m=m, psig=psig, pbin=pbin, pfirst=pfirst,
                      pdens=pdens, ptm=ptm, pmixed=pmixed, indices=ind_out, data=dat_out,
                      bad=bool(bad.any()))
