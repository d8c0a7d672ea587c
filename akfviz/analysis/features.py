"""Per-tile features (akf-spec §2, "Per-tile features").

One numba pass over the entries of every tile (parallel over chunks of tiles) computes
everything the selector and the app need to know about a tile's sparsity pattern:

==================  ==========================================================================
``nnz``             number of nonzeros ``k``
``density``         ``k / (h·w)``
``rows_nonempty``   rows holding at least one nonzero
``cols_nonempty``   columns holding at least one nonzero
``max_row_nnz``     most nonzeros in one row
``max_col_nnz``     most nonzeros in one column
``n_diagonals``     distinct occupied diagonals ``c − r``
``bandwidth``       ``max |c − r|``
``nm4``, ``nm8``    most nonzeros in any group of M = 4 / 8 consecutive local columns
                    (``c // M``) of one row: the smallest N for which the tile is N:M along
                    the reduction dimension. Groups are tile-local: they line up with
                    the matrix's own N:M groups when T is a multiple of M (every power
                    of two ≥ 8); with e.g. T = 6 or 10 a 2:4 matrix can show nm4 = 3 or 4
``fro2``            ``Σ v²`` (squared Frobenius norm)
``top_mass``        share of ``Σ v²`` held by the ``max(1, floor(q·k))`` largest ``|v|``
``signature``       g×g coarse occupancy grid as uint64 bits: cell
                    ``(r·g // h, c·g // w)`` is bit ``cell_row·g + cell_col``
==================  ==========================================================================
"""
from __future__ import annotations

import math

import numba
import numpy as np

from .._jit import njit_cached, njit_inline, njit_parallel
from ..errors import InputError

#: Integer feature columns, in the order of :func:`tile_features`' int matrix.
INT_FEATURES = ("nnz", "rows_nonempty", "cols_nonempty", "max_row_nnz", "max_col_nnz",
                "n_diagonals", "bandwidth", "nm4", "nm8")
#: Float feature columns, in the order of :func:`tile_features`' float matrix.
FLOAT_FEATURES = ("density", "fro2", "top_mass")

GRID_MAX = 8
#: Below this many tiles (or entries) the serial kernel is used: on a shared machine a
#: parallel launch costs more than it saves on small inputs.
PARALLEL_MIN = 20_000


#: Slack added to ``q·k`` before the floor in :func:`top_count`, so that e.g. ``0.7 · 90``
#: (62.99999999999999 in floating point) counts 63 values, not 62.
TOP_COUNT_EPS = 1e-9


@njit_inline
def top_count(nnz, top_q):
    """Number of values counted in ``top_mass`` (akf-spec §2, "Per-tile features").

    ``ntop = max(1, floor(q·k + TOP_COUNT_EPS))`` for ``k = nnz`` entries and ``q = top_q``.
    The one definition of the count: the numba feature passes (:func:`tile_features` here and
    the fused pass of :mod:`akfviz.analysis.tilepass`) call it, inlined; it can also be
    called from Python.

    Parameters
    ----------
    nnz : int
        Nonzeros ``k`` of the tile.
    top_q : float
        Share ``q`` of the nonzeros counted as "top", in ``(0, 1]``.

    Returns
    -------
    int
        ``ntop >= 1``.
    """
    ntop = int(math.floor(top_q * nnz + TOP_COUNT_EPS))
    if ntop < 1:
        ntop = 1
    return ntop


#: Up to this many top values, :func:`_top_sum_small` keeps them in a sorted buffer instead of
#: running a quickselect over a copy of all the squares.
TOP_SMALL = 16


@njit_cached
def _top_sum_small(v, s, k, ntop, best):
    """Sum of the ``ntop`` largest of ``v[s:s+k]²`` (``ntop ≤ TOP_SMALL``).

    One pass keeping the ``ntop`` largest squares seen so far in ``best`` (ascending); the
    sum is taken over that sorted buffer, so it does not depend on the order of the values.
    O(k) plus O(ntop) per value that enters the buffer (about ``ntop·ln(k/ntop)`` of them
    for values in random order)."""
    m = 0
    for p in range(s, s + k):
        x = v[p] * v[p]
        if m < ntop:
            i = m
            m += 1
            while i > 0 and best[i - 1] > x:
                best[i] = best[i - 1]
                i -= 1
            best[i] = x
        elif x > best[0]:
            i = 0
            while i + 1 < ntop and best[i + 1] < x:
                best[i] = best[i + 1]
                i += 1
            best[i] = x
    tot = 0.0
    for i in range(ntop):
        tot += best[i]
    return tot


@njit_cached
def _top_sum(a, k, ntop):
    """Sum of the ``ntop`` largest of ``a[:k]`` (in-place quickselect, O(k) expected)."""
    lo = 0
    hi = k - 1
    target = k - ntop  # a[target:k] must hold the ntop largest
    while lo < hi:
        pivot = a[(lo + hi) // 2]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                tmp = a[i]
                a[i] = a[j]
                a[j] = tmp
                i += 1
                j -= 1
        if target <= j:
            hi = j
        elif target >= i:
            lo = i
        else:
            break
    tot = 0.0
    for p in range(target, k):
        tot += a[p]
    return tot


@njit_cached
def _tile_range_features(ptr, r, c, v, h, w, T, g, top_q, bpd, t0, t1, iout, fout, sig, dbin):
    """Features of tiles ``t0:t1`` (serial); scratch is O(T) and reset via touched lists."""
    colcnt = np.zeros(T, dtype=np.int64)
    diag = np.zeros(2 * T, dtype=np.int64)
    sq = np.empty(T * T, dtype=np.float64)
    one = np.uint64(1)
    last_k = -1
    last_area = -1
    last_bin = 0
    ug = np.uint64(g)
    for t in range(t0, t1):
        s = ptr[t]
        e = ptr[t + 1]
        k = e - s
        hh = h[t]
        ww = w[t]
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
        for p in range(s, e):
            rr = r[p]
            cc = c[p]
            x = v[p] * v[p]
            fro2 += x
            if x > vmax2:
                vmax2 = x
            # rows (entries sorted by (r, c))
            if rr != prev_r:
                rows_ne += 1
                prev_r = rr
                run_r = 0
                prev_g4 = -1
                prev_g8 = -1
            run_r += 1
            if run_r > max_row:
                max_row = run_r
            # N:M groups of consecutive local columns within the row
            g4 = cc >> 2
            if g4 != prev_g4:
                prev_g4 = g4
                run4 = 0
            run4 += 1
            if run4 > nm4:
                nm4 = run4
            g8 = cc >> 3
            if g8 != prev_g8:
                prev_g8 = g8
                run8 = 0
            run8 += 1
            if run8 > nm8:
                nm8 = run8
            # columns
            cnt = colcnt[cc] + 1
            colcnt[cc] = cnt
            if cnt == 1:
                cols_ne += 1
            if cnt > max_col:
                max_col = cnt
            # diagonals
            dd = cc - rr
            if diag[dd + T] == 0:
                ndiag += 1
            diag[dd + T] += 1
            ad = dd if dd >= 0 else -dd
            if ad > band:
                band = ad
            # coarse occupancy signature
            bits |= one << (np.uint64((rr * g) // hh) * ug + np.uint64((cc * g) // ww))
        for p in range(s, e):
            colcnt[c[p]] = 0
            diag[c[p] - r[p] + T] = 0
        # top-q mass
        ntop = top_count(k, top_q)
        if ntop == 1:
            top = vmax2
        elif ntop <= TOP_SMALL:
            top = _top_sum_small(v, s, k, ntop, sq)
        else:
            for p in range(k):
                sq[p] = v[s + p] * v[s + p]
            top = _top_sum(sq, k, ntop)
        dens = k / (hh * ww)
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
        area = hh * ww
        if k != last_k or area != last_area:  # memo: neighbouring tiles often agree
            last_k = k
            last_area = area
            last_bin = int(math.floor(math.log10(dens) * bpd))
        dbin[t] = last_bin


@njit_parallel
def _tile_features(ptr, r, c, v, h, w, T, g, top_q, bpd, n_chunks, iout, fout, sig, dbin):
    n = h.shape[0]
    for ch in numba.prange(n_chunks):
        _tile_range_features(ptr, r, c, v, h, w, T, g, top_q, bpd,
                             ch * n // n_chunks, (ch + 1) * n // n_chunks,
                             iout, fout, sig, dbin)


def tile_features(ts, grid: int = 8, top_q: float = 0.1, bins_per_decade: int = 2):
    """Compute every tile's features in one pass over the entries.

    Parameters
    ----------
    ts : TileSet
        The tiles (from :func:`akfviz.analysis.tiling.build_tiles`).
    grid : int
        Side ``g`` of the coarse occupancy grid, 1..8 (g² ≤ 64 bits).
    top_q : float
        Share of a tile's nonzeros counted as "top" for ``top_mass``, in (0, 1].
    bins_per_decade : int
        Resolution of the log-density bin ``floor(log10(density) · bins_per_decade)``.

    Returns
    -------
    ints : ndarray of int64, shape (n_tiles, 9), Fortran order
        Columns :data:`INT_FEATURES`.
    floats : ndarray of float64, shape (n_tiles, 3), Fortran order
        Columns :data:`FLOAT_FEATURES`.
    signature : ndarray of uint64, shape (n_tiles,)
        Occupancy bits, cell ``(r·g // h, c·g // w)`` → bit ``cell_row·g + cell_col``.
    density_bin : ndarray of int64, shape (n_tiles,)
        ``floor(log10(density) · bins_per_decade)`` (≤ 0).
    """
    if not isinstance(grid, (int, np.integer)) or isinstance(grid, bool) or not 1 <= grid <= GRID_MAX:
        raise InputError(f"The signature grid must be an integer from 1 to {GRID_MAX}, got {grid!r}.")
    if not (0.0 < float(top_q) <= 1.0):
        raise InputError(f"top_q must be a share in (0, 1], got {top_q!r}.")
    n = ts.n_tiles
    iout = np.empty((n, len(INT_FEATURES)), dtype=np.int64, order="F")
    fout = np.empty((n, len(FLOAT_FEATURES)), dtype=np.float64, order="F")
    sig = np.empty(n, dtype=np.uint64)
    dbin = np.empty(n, dtype=np.int64)
    if n > PARALLEL_MIN:
        n_chunks = 8 * numba.get_num_threads()
        _tile_features(ts.ptr, ts.r, ts.c, ts.v, ts.h, ts.w, int(ts.tile), int(grid),
                       float(top_q), float(bins_per_decade), n_chunks, iout, fout, sig, dbin)
    elif n:
        _tile_range_features(ts.ptr, ts.r, ts.c, ts.v, ts.h, ts.w, int(ts.tile), int(grid),
                             float(top_q), float(bins_per_decade), 0, n, iout, fout, sig, dbin)
    return iout, fout, sig, dbin
