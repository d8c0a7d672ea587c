"""Packing a plan's tiles for the fused executor, format by format (akf-spec §3, §9).

Every format keeps its tiles in TileSet order (row-major by ``(bi, bj)``) with a per-row-block
pointer ``rbp`` (``n_brows + 1``) and a tile table ``meta`` (int64, ``(n, 7)``: global first
row, global first column, ``h``, ``w`` and three format-specific offsets). Formats:

========== ===================================================================
residual   compressed rows (CSR): uint16/uint32 columns, float64 values; when it holds fewer
           entries than the matrix has rows: COO (uint32 row, column, value) with a pointer
           per row block instead of per row (no per-row loop exits to mispredict)
dense      ``h·w`` float64 values column-major                    (DENSE)
dense_i8   ``h·w`` int8 codes (column-major) + per-tile scale     (QUANT8D)
bitmap     ``h·ceil(w/64)`` uint64 words (row-major), values in row order  (BITMAP)
dia        one uint32 per diagonal run (first local row, offset, length; see
           :func:`pack_dia`), float64 slots, the tile's first slot in ``meta``  (DIA)
block      per 4×4 block: block row/col and 16 float64 values     (BLOCK)
nm         ``h·ceil(w/M)·N`` slots of (uint8 in-group index, float64 value)  (NM)
lowrank    ``U·diag s`` (h×k) and ``V`` (w×k) float64             (LOWRANK)
========== ===================================================================

The executor formats ``csc`` (CSC, PRUNE) and ``csc_i8`` (QUANT8) have no layout here
(:data:`RESIDUAL_ONLY_FORMATS`): their tiles always run from the residual (QUANT8 tiles on a
few long diagonal runs from ``dia``). Which tiles go to the residual, and the plan as a whole:
:mod:`akfviz.execute.fused`. The kernels that read these arrays:
:mod:`akfviz.execute.tile_kernels`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._jit import njit_cached, njit_inline, njit_parallel, serial_twin
from ..kernels.quant import quant_value, tile_scale
from . import threads

# numba's on-disk cache of this module's kernels is keyed on this file, not on the helpers inlined
# from kernels/quant.py: edit this file (e.g. this comment) when those helpers change. Last change:
# tile_scale's floor of 5e-324 (tiles of tiny subnormals divided by a zero scale).


#: Executor formats with a packed layout (the keys of ``PackedPlan.packs``, in the order the
#: drivers of :mod:`akfviz.execute.tile_kernels` add their tiles).
FORMATS = ("dense", "dense_i8", "bitmap", "dia", "block", "nm", "lowrank")
#: Executor formats without a layout: every tile of a kernel with one of these ``exec_format``
#: runs from the compressed-row residual (routing: :mod:`akfviz.execute.fused`).
RESIDUAL_ONLY_FORMATS = ("csc", "csc_i8")
#: Every executor format a kernel may name other than ``"none"``, in the order of the
#: executor's tile counts (``PackedPlan.format_tiles``, ``FusionPlan.to_dict()["executor"]``).
EXEC_FORMATS = ("dense", "dense_i8", "csc", "csc_i8", "bitmap", "dia", "block", "nm", "lowrank")
BLOCK_B = 4
WORD = 64


# =========================================================================== packing
def _rbp(bi, n_brows):
    return np.searchsorted(bi, np.arange(n_brows + 1), side="left").astype(np.int64)


def _meta(ts, tid, *extra):
    n = tid.shape[0]
    m = np.zeros((n, 7), dtype=np.int64)
    T = int(ts.tile)
    m[:, 0] = ts.bi[tid] * T
    m[:, 1] = ts.bj[tid] * T
    m[:, 2] = ts.h[tid]
    m[:, 3] = ts.w[tid]
    for i, col in enumerate(extra):
        m[:, 4 + i] = col
    return m


def _starts(sizes):
    out = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def _seg(ptr):
    return np.repeat(np.arange(ptr.shape[0] - 1, dtype=np.int64), np.diff(ptr))


@dataclass(eq=False)
class Entries:
    """Entries of a list of tiles: tile ``u``'s are ``ptr[u]:ptr[u+1]``, ordered by (r, c)."""

    tid: np.ndarray
    ptr: np.ndarray
    r: np.ndarray
    c: np.ndarray
    v: np.ndarray
    q: np.ndarray | None = None      # int8 codes (quantised formats)
    scale: np.ndarray | None = None  # per tile


@njit_cached
def _scatter_dense(ptr, r, c, vals, off, h, out):
    """``out[off[u] + c·h[u] + r] = vals`` for every entry of tile ``u`` (column-major cells)."""
    for u in range(ptr.shape[0] - 1):
        base = off[u]
        hh = h[u]
        for k in range(ptr[u], ptr[u + 1]):
            out[base + c[k] * hh + r[k]] = vals[k]


def pack_dense(ts, e: Entries, int8: bool):
    """Column-major cells of every tile (the executor's axpy order), zeros where no entry."""
    h, w = ts.h[e.tid], ts.w[e.tid]
    off = _starts(h * w)
    i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731 (no copy when int64)
    args = (i64(e.ptr), i64(e.r), i64(e.c))
    if int8:
        val = np.zeros(off[-1], dtype=np.int8)
        _scatter_dense(*args, np.ascontiguousarray(e.q, dtype=np.int8), off, i64(h), val)
        return dict(meta=_meta(ts, e.tid, off[:-1]), val=val, scale=e.scale.astype(np.float64))
    val = np.zeros(off[-1], dtype=np.float64)
    _scatter_dense(*args, np.ascontiguousarray(e.v, dtype=np.float64), off, i64(h), val)
    return dict(meta=_meta(ts, e.tid, off[:-1]), val=val)


def pack_bitmap(ts, e: Entries):
    """Row-major bitmap on the CPU: row ``i`` of a tile owns ``ceil(w/64)`` words, and the
    values follow in (r, c) order — the order the TileSet already has. (The NPU model's
    bitmap is column-major because events arrive by column; same bits, same bytes.)"""
    h, w = ts.h[e.tid], ts.w[e.tid]
    nw = -(-w // WORD)
    woff = _starts(h * nw)
    seg = _seg(e.ptr)
    wi = woff[seg] + e.r * nw[seg] + e.c // WORD
    words = np.zeros(woff[-1], dtype=np.uint64)
    np.bitwise_or.at(words, wi, np.left_shift(np.uint64(1), (e.c % WORD).astype(np.uint64)))
    return dict(meta=_meta(ts, e.tid, woff[:-1], e.ptr[:-1], nw), words=words,
                val=e.v.astype(np.float64))


@njit_inline
def _dia_shape(r, c, k0, k1, T, lo, hi):
    """Occupied diagonals ``d`` and summed run length ``sl`` (first to last stored entry of
    each diagonal) of one tile's entries ``k0:k1`` (ordered by (r, c)); ``lo`` / ``hi`` are
    ``2T`` scratch slots, ``lo`` all −1 on entry and on return."""
    d = 0
    sl = 0
    for k in range(k0, k1):
        o = c[k] - r[k] + T
        if lo[o] < 0:
            lo[o] = r[k]  # entries are ordered by (r, c): first seen = first row
            d += 1
        hi[o] = r[k] + 1
    for k in range(k0, k1):  # visit only the tile's diagonals
        o = c[k] - r[k] + T
        if lo[o] >= 0:
            sl += hi[o] - lo[o]
            lo[o] = -1
    return d, sl


@njit_cached
def _dia_count_range(ptr, r, c, T, u0, u1, nd, slots):
    """Occupied diagonals and summed run lengths of tiles ``u0:u1`` (serial)."""
    lo = np.full(2 * T, -1, dtype=np.int64)
    hi = np.zeros(2 * T, dtype=np.int64)
    for u in range(u0, u1):
        nd[u], slots[u] = _dia_shape(r, c, ptr[u], ptr[u + 1], T, lo, hi)


@njit_parallel
def long_diagonal_runs(tptr, tr, tc, th, tw, idx, T, max_diags_per_side, min_fill, n_chunks):
    """Per tile of ``idx`` (bool): at least ``min(h, w) / 2`` entries, at most
    ``max_diags_per_side · min(h, w)`` occupied diagonals and ``nnz ≥ min_fill · slots``
    (:func:`_dia_shape`, read in place); tiles with too few entries are not scanned. Each tile
    on its own, ``prange`` over ``n_chunks`` chunks of ``idx``."""
    n = idx.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    for ch in numba.prange(n_chunks):
        lo = np.full(2 * T, -1, dtype=np.int64)
        hi = np.zeros(2 * T, dtype=np.int64)
        for u in range(ch * n // n_chunks, (ch + 1) * n // n_chunks):
            t = idx[u]
            k0 = tptr[t]
            k1 = tptr[t + 1]
            side = min(th[t], tw[t])
            if 2 * (k1 - k0) >= side:
                d, sl = _dia_shape(tr, tc, k0, k1, T, lo, hi)
                out[u] = d <= max_diags_per_side * side and k1 - k0 >= min_fill * sl
    return out


long_diagonal_runs_serial = serial_twin(long_diagonal_runs)


#: Bit layout of a DIA run word (uint32): first local row in bits 0–7, offset ``o + 256``
#: (``o = c − r``, −255…255) in bits 8–16, run length − 1 in bits 17–24 — so tiles up to
#: 256 × 256 fit, and a run costs 4 bytes instead of four int64 (1 MB less to stream on a
#: banded 1M-nonzero matrix, ≈ 10 % of its bytes).
DIA_OFFSET_BIAS = 256


@njit_cached
def _dia_word(lo, o, n):
    """Run word of a run starting at local row ``lo`` on diagonal ``o``, ``n`` long."""
    return np.uint32(lo | ((o + DIA_OFFSET_BIAS) << 8) | ((n - 1) << 17))


@njit_cached
def _dia_fill_range(ptr, r, c, v, T, u0, u1, dptr, sptr, run, val):
    """Run words (ascending offset) and values of tiles ``u0:u1`` at ``dptr[u]`` / ``sptr[u]``."""
    lo = np.full(2 * T, -1, dtype=np.int64)
    hi = np.zeros(2 * T, dtype=np.int64)
    where = np.empty(2 * T, dtype=np.int64)
    for u in range(u0, u1):
        for k in range(ptr[u], ptr[u + 1]):
            o = c[k] - r[k] + T
            if lo[o] < 0:
                lo[o] = r[k]
            hi[o] = r[k] + 1
        q = dptr[u]
        vs = sptr[u]
        for o in range(2 * T):
            if lo[o] >= 0:
                run[q] = _dia_word(lo[o], o - T, hi[o] - lo[o])
                where[o] = vs - lo[o]
                vs += hi[o] - lo[o]
                lo[o] = -1
                q += 1
        for k in range(ptr[u], ptr[u + 1]):
            val[where[c[k] - r[k] + T] + r[k]] = v[k]


@njit_parallel
def _dia_count(ptr, r, c, T, n_chunks, nd, slots):
    n = ptr.shape[0] - 1
    for ch in numba.prange(n_chunks):
        _dia_count_range(ptr, r, c, T, ch * n // n_chunks, (ch + 1) * n // n_chunks, nd, slots)


@njit_parallel
def _dia_fill(ptr, r, c, v, T, n_chunks, dptr, sptr, run, val):
    n = ptr.shape[0] - 1
    for ch in numba.prange(n_chunks):
        _dia_fill_range(ptr, r, c, v, T, ch * n // n_chunks, (ch + 1) * n // n_chunks,
                        dptr, sptr, run, val)


def _pack_dia(ptr, r, c, v, T):
    """DIA packing in two passes over the tiles (count, then fill at prefix-sum offsets),
    parallel over chunks of tiles for large inputs: O(nnz + n·T), the same arrays for any
    chunking."""
    n = ptr.shape[0] - 1
    nd = np.zeros(n, dtype=np.int64)
    slots = np.zeros(n, dtype=np.int64)
    par = threads.pack_parallel(int(r.shape[0]) + n)
    chunks = 4 * numba.get_num_threads() if par else 1
    if par:
        _dia_count(ptr, r, c, T, chunks, nd, slots)
    elif n:
        _dia_count_range(ptr, r, c, T, 0, n, nd, slots)
    dptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nd, out=dptr[1:])
    sptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(slots, out=sptr[1:])
    run = np.empty(dptr[n], dtype=np.uint32)
    val = np.zeros(sptr[n], dtype=np.float64)
    if par:
        _dia_fill(ptr, r, c, v, T, chunks, dptr, sptr, run, val)
    elif n:
        _dia_fill_range(ptr, r, c, v, T, 0, n, dptr, sptr, run, val)
    return dptr, sptr, run, val


def pack_dia(ts, e: Entries):
    """Per occupied diagonal ``o = c − r`` of a tile (ascending ``o``): the run of rows
    ``i = lo … lo+n−1`` from its first to its last stored entry, as one uint32 word
    (:func:`_dia_word`: ``lo``, ``o``, ``n``) and ``n`` float64 slots. A tile's runs are
    ``run[meta[t, 4]:meta[t, 5]]``, its slots start at ``meta[t, 6]`` and follow one another;
    run ``(lo, o)`` reads ``x`` from column ``c0 + lo + o`` on."""
    T = int(ts.tile)
    if T > DIA_OFFSET_BIAS:
        raise ValueError(f"DIA run words hold tiles up to {DIA_OFFSET_BIAS}, got T = {T}")
    i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731 (no copy when int64)
    dptr, sptr, run, val = _pack_dia(i64(e.ptr), i64(e.r), i64(e.c),
                                     np.ascontiguousarray(e.v, dtype=np.float64), np.int64(T))
    return dict(meta=_meta(ts, e.tid, dptr[:-1], dptr[1:], sptr[:-1]), run=run, val=val)


def pack_block(ts, e: Entries):
    B = BLOCK_B
    w = ts.w[e.tid]
    seg = _seg(e.ptr)
    nbc = -(-w // B)
    K = 4096  # (256 / 4)²: block ids of one tile are below K
    gkey = seg * K + (e.r // B) * nbc[seg] + e.c // B
    uniq, inv = np.unique(gkey, return_inverse=True)
    useg = uniq // K
    ub = uniq % K
    bptr = _starts(np.bincount(useg, minlength=e.tid.shape[0]))
    val = np.zeros(uniq.shape[0] * B * B, dtype=np.float64)
    val[inv.reshape(-1) * (B * B) + (e.r % B) * B + e.c % B] = e.v
    return dict(meta=_meta(ts, e.tid, bptr[:-1], bptr[1:]),
                br=(ub // nbc[useg]).astype(np.int64), bc=(ub % nbc[useg]).astype(np.int64), val=val)


@njit_cached
def _pack_nm(ptr, r, c, v, off, w, N, M):
    """Numba packer of :func:`pack_nm`: slot of an entry = its tile's offset +
    ``(r·G + c // M)·N`` + its rank among the kept entries of its group (column order)."""
    idx = np.zeros(off[-1], dtype=np.uint8)
    val = np.zeros(off[-1], dtype=np.float64)
    for u in range(ptr.shape[0] - 1):
        m = M[u]
        G = (w[u] + m - 1) // m
        prev = -1
        rank = 0
        for k in range(ptr[u], ptr[u + 1]):
            g = c[k] // m
            key = r[k] * G + g
            rank = rank + 1 if key == prev else 0
            prev = key
            p = off[u] + key * N[u] + rank
            idx[p] = c[k] - g * m
            val[p] = v[k]
    return idx, val


def pack_nm(ts, e: Entries, n_of_tile, m_of_tile):
    """``h·ceil(w/M)·N`` slots per tile (row-major by row, group, slot): uint8 in-group
    index and float64 value (unused slots: index 0, value 0)."""
    h, w = ts.h[e.tid], ts.w[e.tid]
    G = -(-w // m_of_tile)
    off = _starts(h * G * n_of_tile)
    idx, val = _pack_nm(e.ptr, e.r.astype(np.int64), e.c.astype(np.int64), e.v.astype(np.float64),
                        off, w.astype(np.int64), n_of_tile.astype(np.int64), m_of_tile.astype(np.int64))
    return dict(meta=_meta(ts, e.tid, off[:-1], n_of_tile, m_of_tile), idx=idx, val=val)


def pack_lowrank(ts, tid, rank, us_ptr, us, v_ptr, v):
    return dict(meta=_meta(ts, tid, us_ptr[:-1], v_ptr[:-1], rank), us=us.astype(np.float64),
                v=v.astype(np.float64))


#: Where a tile's residual entries come from (``src`` codes of :func:`build_residual`):
#: packed elsewhere, its own entries, an approximation's entries (the largest one read in
#: place, the others concatenated), or its own entries quantised on the fly (QUANT8).
SRC_PACKED, SRC_OWN, SRC_MAIN, SRC_OTHER, SRC_QUANT8 = 0, 1, 2, 3, 4

#: Kernels whose ``Â`` is a map of the tile's own entries (one per-tile parameter computed
#: from them) and whose tiles all go to the residual: the residual builder computes their
#: entries (and their errors ``E_t``) while it copies them, ``Â`` is never materialised
#: (kernel name → ``src`` code).
INLINE_RESIDUAL = {"QUANT8": SRC_QUANT8}


@njit_inline
def _residual_span(s, t, tptr, lo, hi):
    """Entry range of tile ``t`` in its source (its own entries: ``tptr``; else ``lo/hi``)."""
    if s == SRC_OWN or s == SRC_QUANT8:
        return tptr[t], tptr[t + 1]
    return lo[t], hi[t]


@njit_parallel
def _residual_counts(n_brows, T, rb_ptr, src, lo, hi, tptr, ts_r, ts_v, m_r, o_r, counts, err):
    """``counts[i + 1]`` = residual entries of row ``i`` (``prange`` over row blocks: a row
    block owns its rows, no races). QUANT8 tiles count every entry (one whose ``v̂`` rounds to 0 is
    a stored 0) and write their error ``err[t] = Σ (v − v̂)²``."""
    for b in numba.prange(n_brows):
        r0 = b * T + 1
        for t in range(rb_ptr[b], rb_ptr[b + 1]):
            s = src[t]
            if s == SRC_PACKED:
                continue
            k0, k1 = _residual_span(s, t, tptr, lo, hi)
            if s == SRC_QUANT8:  # the loop of kernels.quant.tile_quant, counting per row
                sc = tile_scale(ts_v, k0, k1)
                e = 0.0
                for k in range(k0, k1):
                    v = ts_v[k]
                    d = v - quant_value(v, sc)[0]
                    counts[r0 + ts_r[k]] += 1
                    e += d * d
                err[t] = e
                continue
            rr = ts_r if s == SRC_OWN else (m_r if s == SRC_MAIN else o_r)
            for k in range(k0, k1):
                counts[r0 + rr[k]] += 1


@njit_parallel
def _residual_fill(n_brows, T, rb_ptr, bj, src, lo, hi, tptr, ts_r, ts_c, ts_v, m_r, m_c, m_v,
                   o_r, o_c, o_v, res_ptr, res_col, res_val, n_rows):
    """Entries of every residual tile at their row's next free slot (tiles in ``bj`` order,
    entries by column inside a tile: rows end up ordered by column). QUANT8 tiles: their
    entries ``v̂ = q·s`` (:func:`akfviz.kernels.quant.quant_value`), zeros included."""
    for b in numba.prange(n_brows):
        r0b = b * T
        r1b = min(r0b + T, n_rows)
        fill = res_ptr[r0b:r1b].copy()
        for t in range(rb_ptr[b], rb_ptr[b + 1]):
            s = src[t]
            if s == SRC_PACKED:
                continue
            c0 = bj[t] * T
            k0, k1 = _residual_span(s, t, tptr, lo, hi)
            if s == SRC_QUANT8:  # v̂ = q·s (the arithmetic of quant_approx), stored zeros kept
                sc = tile_scale(ts_v, k0, k1)
                for k in range(k0, k1):
                    lr = ts_r[k]
                    p = fill[lr]
                    res_col[p] = c0 + ts_c[k]
                    res_val[p] = quant_value(ts_v[k], sc)[0]
                    fill[lr] = p + 1
                continue
            if s == SRC_OWN:
                rr, cc, vv = ts_r, ts_c, ts_v
            elif s == SRC_MAIN:
                rr, cc, vv = m_r, m_c, m_v
            else:
                rr, cc, vv = o_r, o_c, o_v
            for k in range(k0, k1):
                lr = rr[k]
                p = fill[lr]
                res_col[p] = c0 + cc[k]
                res_val[p] = vv[k]
                fill[lr] = p + 1

_residual_counts_serial = serial_twin(_residual_counts)
_residual_fill_serial = serial_twin(_residual_fill)

#: A compressed-row residual averaging at least this many entries per row uses four
#: partial sums per row (breaks the floating-point add chain); on short rows the plain loop
#: is faster. Decided once per plan (no per-row branch).
LONG_ROW = 16
RES_CSR, RES_COO, RES_CSR_LONG = 0, 1, 2


def residual_col_dtype(n_cols):
    """Unsigned column index type of the residual: uint16 up to 65 536 columns, else uint32."""
    return np.uint16 if n_cols <= 1 << 16 else np.uint32


def build_residual(ts, src, lo, hi, main=None, other=None, errors=None):
    """Compressed-row residual of the tiles with ``src[t] != SRC_PACKED``.

    Parameters
    ----------
    ts : TileSet
    src : int8 (n_tiles,)
        ``SRC_OWN``: the tile's own entries ``ts.*[ts.ptr[t]:ts.ptr[t+1]]``; ``SRC_MAIN`` /
        ``SRC_OTHER``: entries ``lo[t]:hi[t]`` of the ``main`` / ``other`` approximation
        arrays ``(r, c, v)`` (int64, int64, float64; ``None``: empty); ``SRC_QUANT8``: the
        tile's own entries quantised (``v̂ = q·s``; one that rounds to 0 is kept, a stored 0).
    lo, hi : int64 (n_tiles,)
        Read only where ``src`` is ``SRC_MAIN`` or ``SRC_OTHER``.
    errors : float64 (n_tiles,), optional
        Receives ``E_t`` of the ``SRC_QUANT8`` tiles (the numbers of
        ``quant_approx(ts, idx).err``).

    Within a row, entries are ordered by column (tiles in ``bj`` order, entries by column
    inside a tile).
    """
    n_rows = int(ts.shape[0])
    T = np.int64(ts.tile)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    m_r, m_c, m_v = empty if main is None else main
    o_r, o_c, o_v = empty if other is None else other
    counts = np.zeros(n_rows + 1, dtype=np.int64)
    if errors is None:
        errors = np.empty(ts.n_tiles if np.any(src == SRC_QUANT8) else 0, dtype=np.float64)
    par = threads.pack_parallel(ts.n_tiles + ts.nnz + m_v.shape[0] + o_v.shape[0])
    (_residual_counts if par else _residual_counts_serial)(
        ts.n_brows, T, ts.rb_ptr, src, lo, hi, ts.ptr, ts.r, ts.v, m_r, o_r, counts, errors)
    res_ptr = np.cumsum(counts, out=counts)
    m = int(res_ptr[-1])
    res_col = np.empty(m, dtype=residual_col_dtype(ts.shape[1]))
    res_val = np.empty(m, dtype=np.float64)
    (_residual_fill if par else _residual_fill_serial)(
        ts.n_brows, T, ts.rb_ptr, ts.bj, src, lo, hi, ts.ptr, ts.r, ts.c, ts.v,
        m_r, m_c, m_v, o_r, o_c, o_v, res_ptr, res_col, res_val, n_rows)
    return residual_layout(ts, res_ptr, res_col, res_val)


#: ``val`` of an entry left out of the residual (its tile packed elsewhere, or approximated): NaN, which
#: no kept value is (the analysis refuses non-finite values), so a kept 0 stays apart from it.
LEFT_OUT = np.nan
#: ``tmap`` code of a QUANT8 tile of one entry (``SRC_QUANT8 | ONE_ENTRY``): its scale is its value's
#: ``|v| / 127``, no pass over the tile's entries is needed for it.
ONE_ENTRY = 16
#: Above this ``|v|`` a one-entry QUANT8 tile's code is ``±127`` without computing it: ``v / s`` with
#: ``s = fl(|v| / 127)`` is within an ulp of ``±127`` (both are normal numbers), and ``rint`` then the
#: clip give ``±127``. Below, ``s`` may be subnormal and the general formula runs.
ONE_ENTRY_NORMAL = 1e-290


@njit_cached
def _rb_tile_map(t0, t1, col_block, src, tile_nnz, tmap, mx, acc, multi):
    """``tmap[j] = t << 8 | code`` for the tiles ``t0:t1`` of a row block (a one-entry QUANT8 tile's
    code is ``SRC_QUANT8 | ONE_ENTRY``); the QUANT8 tiles of several entries get ``mx`` / ``acc``
    zeroed and are listed in ``multi``. Returns how many were listed."""
    q8one = SRC_QUANT8 | ONE_ENTRY
    nm = 0
    for t in range(t0, t1):
        j = np.uint64(col_block[t])
        s = np.int64(src[t])
        if s == SRC_QUANT8:
            if tile_nnz[t] == 1:
                s = q8one
            else:
                mx[j] = 0.0
                acc[j] = 0.0
                multi[nm] = t
                nm += 1
        tmap[j] = (np.int64(t) << 8) | s
    return nm


@njit_inline
def _leave_out(k, row, nxt, indptr, dropped):
    """Count entry ``k`` as left out of its row: ``row`` is a cursor at or before that row (``nxt`` its
    end, ``indptr[row + 1]``), moved forward to it; returns the cursor. Entries come in increasing
    ``k``, so the cursor walks each row once however many entries are left out."""
    while k >= nxt:
        row += 1
        nxt = np.uint64(indptr[row + 1])
    dropped[row + 1] += 1
    return row, nxt


@njit_cached
def _rb_values(r0, r1, indptr, indices, data, sh, T, tmap, mx, acc, dropped, err, val, pk):
    """Residual values of a row block's entries (rows ``r0:r1``) that need no tile scale — own,
    one-entry QUANT8 (its error written at once), left out (:data:`LEFT_OUT`) — and
    ``dropped[row + 1]`` counts the entries each row leaves out (``dropped`` starts at zero); the
    entries of QUANT8 tiles of several entries only update their tile's ``max |v|`` (``mx``) and are
    listed (``pk``, in the row block's order) for :func:`_rb_pending`. Returns how many were listed. The row block's entries are read
    once (a pass for the scales and a pass for the values took 7 % longer), in one flat loop: the
    rows matter only for the entries left out, whose row a cursor finds (a loop per row of about
    ten entries cost a third more)."""
    ush = np.uint64(sh if sh >= 0 else 0)
    uT = np.uint64(T)
    q8one = SRC_QUANT8 | ONE_ENTRY
    npend = 0
    row = r0
    nxt = np.uint64(indptr[r0 + 1])
    for k in range(np.uint64(indptr[r0]), np.uint64(indptr[r1])):
        uc = np.uint64(indices[k])
        j = (uc >> ush) if sh >= 0 else uc // uT
        x = tmap[j]
        s = x & 255
        v = data[k]
        if s == SRC_OWN:
            val[k] = v
        elif s == q8one:
            a = abs(v)
            if a > ONE_ENTRY_NORMAL:
                vh = (127.0 if v > 0.0 else -127.0) * (a / 127.0)
            else:
                vh = quant_value(v, max(a / 127.0, 5e-324))[0]
            dv = v - vh
            err[x >> 8] = dv * dv
            val[k] = vh
        elif s == SRC_QUANT8:
            mx[j] = max(mx[j], abs(v))
            pk[npend] = k
            npend += 1
        else:  # SRC_PACKED, or an approximated tile's (merged in later)
            val[k] = LEFT_OUT
            row, nxt = _leave_out(k, row, nxt, indptr, dropped)
    return npend


@njit_cached
def _rb_pending(npend, pk, indices, data, sh, T, mx, acc, val):
    """The listed entries of QUANT8 tiles of several entries (:func:`_rb_values`) of a row block,
    in its order — a tile's in its (r, c) order: ``v̂ = q·s`` with the tile's scale ``mx[j]`` (a
    stored 0 when it rounds to 0), ``acc[j] += (v − v̂)²``."""
    ush = np.uint64(sh if sh >= 0 else 0)
    uT = np.uint64(T)
    for i in range(npend):
        k = np.uint64(pk[i])
        uc = np.uint64(indices[k])
        j = (uc >> ush) if sh >= 0 else uc // uT
        v = data[k]
        vh = quant_value(v, mx[j])[0]
        dv = v - vh
        acc[j] += dv * dv
        val[k] = vh


@njit_cached
def _csr_residual_range(indptr, indices, data, n_rows, T, sh, b0, b1, rb_ptr, col_block, tile_nnz, src,
                        tmap, mx, acc, dropped, err, val, pk, multi):
    """Row blocks ``b0:b1`` of :func:`build_residual_from_csr`: ``val[k]`` is entry ``k``'s residual
    value (its own for ``SRC_OWN``, ``v̂ = q·s`` for ``SRC_QUANT8`` — 0 included —, :data:`LEFT_OUT`
    for an entry left out: a ``SRC_PACKED`` tile's or an approximated tile's), ``dropped[row + 1]``
    counts the entries a row leaves out, ``err[t]`` is a QUANT8 tile's error. A row block maps each column block to its tile and source code (``tmap``: ``t << 8 |
    code``); one read of its entries writes every value that needs no scale and finds the
    scales of its QUANT8 tiles of several entries (``mx``, from their ``max |v|``), whose entries
    it lists (``pk``, at most ``rb_max`` of a row block) and quantises afterwards; a
    one-entry tile's scale is its value's, and its error is written at once. A tile's entries
    arrive in its (r, c) order, so its error ``Σ (v − v̂)²`` is the one of the tile-order builder.
    (Unsigned indices: numba then skips its negative-index test.)"""
    for b in range(b0, b1):
        r0 = b * T
        r1 = min(r0 + T, n_rows)
        t0 = np.uint64(rb_ptr[b])
        t1 = np.uint64(rb_ptr[b + 1])
        nm = _rb_tile_map(t0, t1, col_block, src, tile_nnz, tmap, mx, acc, multi)
        npend = _rb_values(r0, r1, indptr, indices, data, sh, T, tmap, mx, acc, dropped, err, val, pk)
        if nm:   # the QUANT8 tiles of several entries: their scales, their entries, their errors
            for i in range(nm):
                j = np.uint64(col_block[multi[i]])
                m = mx[j]
                mx[j] = max(m / 127.0, 5e-324) if m > 0.0 else 1.0
            _rb_pending(npend, pk, indices, data, sh, T, mx, acc, val)
            for i in range(nm):
                t = multi[i]
                err[t] = acc[np.uint64(col_block[t])]


@njit_parallel
def _csr_residual(indptr, indices, data, n_rows, T, sh, n_bcols, bounds, rb_ptr, col_block, tile_nnz, src,
                  dropped, err, val, rb_max):
    for ch in numba.prange(bounds.shape[0] - 1):
        tmap = np.empty(n_bcols, dtype=np.int64)
        mx = np.empty(n_bcols, dtype=np.float64)
        acc = np.empty(n_bcols, dtype=np.float64)
        pk = np.empty(rb_max, dtype=np.int64)
        multi = np.empty(n_bcols, dtype=np.uint64)
        _csr_residual_range(indptr, indices, data, n_rows, T, sh, bounds[ch], bounds[ch + 1], rb_ptr,
                            col_block, tile_nnz, src, tmap, mx, acc, dropped, err, val, pk, multi)


_csr_residual_serial = serial_twin(_csr_residual)


@njit_parallel
def _drop_left_out(indptr, indices, val, res_ptr, res_col, res_val, n_chunks):
    """Copy the entries not :data:`LEFT_OUT` (``val`` is not NaN) to their rows' new places (row
    order kept; ``prange`` over ``n_chunks`` ranges of rows). The entries of a range of rows are consecutive, and so are
    their places from ``res_ptr`` of its first row: one flat loop per range, unsigned indices
    (no negative-index tests): 3.4× faster than a loop per row."""
    n_rows = indptr.shape[0] - 1
    one = np.uint64(1)
    for ch in numba.prange(n_chunks):
        r0 = ch * n_rows // n_chunks
        r1 = (ch + 1) * n_rows // n_chunks
        p = np.uint64(res_ptr[r0])
        for k in range(np.uint64(indptr[r0]), np.uint64(indptr[r1])):
            v = val[k]
            if v == v:   # not LEFT_OUT
                res_col[p] = indices[k]
                res_val[p] = v
                p += one


_drop_left_out_serial = serial_twin(_drop_left_out)


@njit_cached
def _merge_approx(indptr, indices, val, n_rows, T, rb_ptr, col_block, src, lo, hi, ar, ac, av,
                  cur, res_ptr, res_col, res_val):
    """Rows of the residual when some tiles bring approximated entries (``src == SRC_MAIN``: entries
    ``lo[t]:hi[t]`` of ``(ar, ac, av)``, ordered by (r, c)): with ``res_val`` empty, count each row's
    entries into ``res_ptr[row + 1]``; else write them, the row's own entries (``val`` not
    :data:`LEFT_OUT`) and the approximated tiles' merged by column. A row block's approximated tiles are walked in column-block
    order with one cursor each (``cur``), so their entries of a row come out ordered by column."""
    fill = res_val.shape[0] > 0
    n_brows = rb_ptr.shape[0] - 1
    for b in range(n_brows):
        r0 = b * T
        r1 = min(r0 + T, n_rows)
        t0 = rb_ptr[b]
        t1 = rb_ptr[b + 1]
        na = 0
        for t in range(t0, t1):
            if src[t] == SRC_MAIN:
                cur[t] = lo[t]
                na += 1
        for row in range(r0, r1):
            lr = row - r0
            if not fill:
                n = 0
                for k in range(indptr[row], indptr[row + 1]):
                    if val[k] == val[k]:   # not LEFT_OUT
                        n += 1
                if na:
                    for t in range(t0, t1):
                        if src[t] == SRC_MAIN:
                            while cur[t] < hi[t] and ar[cur[t]] == lr:
                                cur[t] += 1
                                n += 1
                res_ptr[row + 1] = n
                continue
            p = res_ptr[row]
            k = indptr[row]
            k1 = indptr[row + 1]
            if na:
                for t in range(t0, t1):  # tiles in column-block order
                    if src[t] != SRC_MAIN:
                        continue
                    c0 = col_block[t] * T
                    while cur[t] < hi[t] and ar[cur[t]] == lr:
                        col = c0 + ac[cur[t]]
                        while k < k1 and indices[k] < col:   # own entries before it
                            if val[k] == val[k]:
                                res_col[p] = indices[k]
                                res_val[p] = val[k]
                                p += 1
                            k += 1
                        res_col[p] = col
                        res_val[p] = av[cur[t]]
                        p += 1
                        cur[t] += 1
            while k < k1:
                if val[k] == val[k]:
                    res_col[p] = indices[k]
                    res_val[p] = val[k]
                    p += 1
                k += 1


def build_residual_from_csr(ts, A, col_block, tile_nnz, src, errors=None, approx=None):
    """:func:`build_residual` computed in row order straight from the canonical matrix ``A``
    (``pa.A``) — no TileSet entries, hence no full pass of the analysis — with the same entries
    in the same order and the same QUANT8 errors, bit for bit (tested).

    One pass writes every entry's residual value where ``A`` has it: its own (``SRC_OWN``), its
    quantised ``v̂ = q·s`` (``SRC_QUANT8``; an entry below ``max|v| / 254`` of its tile rounds to
    0 and is kept as a stored 0, as the tile-order builder keeps it), or :data:`LEFT_OUT` when its
    tile is not in the residual (``SRC_PACKED``) or brings approximated entries (``SRC_MAIN``).
    When nothing is left out and no tile brings approximated entries — every plan of exact entry
    kernels and QUANT8 — the residual shares ``A``'s row pointers and column indices. Otherwise a
    count and a fill pass close the gaps and merge in the approximated tiles' entries
    (``SRC_MAIN``), by column. (Dropping the stored zeros instead cost a copy of the whole
    residual — 0.6–1 ms for the ≈ 200 of a million entries that round to 0 in the 1M-nonzero
    benchmark — and they cost the matrix-vector product nothing: ``x`` is finite.)

    Parameters
    ----------
    ts : TileSet
        Only its geometry (``shape``, ``tile``, ``n_brows``, ``n_bcols``, ``rb_ptr``) is read.
    A : scipy CSR
        The canonical matrix the TileSet was built from.
    col_block, tile_nnz : int arrays (n_tiles,)
        Column block and nonzeros of every tile (``pa.compact.col_block``, ``pa.compact.nnz``).
    src : int8 (n_tiles,)
        ``SRC_PACKED`` (not in the residual), ``SRC_OWN``, ``SRC_QUANT8`` or ``SRC_MAIN``.
    errors : float64 (n_tiles,), optional
        Receives ``E_t`` of the ``SRC_QUANT8`` tiles.
    approx : (lo, hi, r, c, v), optional
        Entries of the ``SRC_MAIN`` tiles: ``lo[t]:hi[t]`` of ``(r, c, v)`` (local rows and
        columns, ordered by (r, c)).
    """
    n_rows = int(ts.shape[0])
    T = int(ts.tile)
    sh = T.bit_length() - 1 if T & (T - 1) == 0 else -1
    indptr = np.asarray(A.indptr)
    indices = np.asarray(A.indices)
    data = np.asarray(A.data, dtype=np.float64)
    if errors is None:
        errors = np.empty(ts.n_tiles, dtype=np.float64)
    n_brows = int(ts.n_brows)
    # like the analysis passes (and unlike the executor's many small calls), one large pass: on the
    # worker threads whatever the load average, which counts this process's own threads too
    par = numba.get_num_threads() > 1 and ts.n_tiles + ts.nnz >= threads.PACK_PARALLEL_MIN and n_brows > 1
    n_chunks = min(n_brows, 4 * numba.get_num_threads()) if par else 1
    bounds = (np.arange(n_chunks + 1, dtype=np.int64) * n_brows) // n_chunks
    dropped = np.zeros(n_rows + 1, dtype=np.int64)
    val = np.empty(data.shape[0], dtype=np.float64)
    col_block = np.ascontiguousarray(col_block)
    rows = np.minimum(np.arange(n_brows + 1, dtype=np.int64) * T, n_rows)
    rb_max = max(int(np.diff(indptr[rows]).max()), 1) if n_brows else 1   # most entries of a row block
    (_csr_residual if par else _csr_residual_serial)(
        indptr, indices, data, n_rows, T, sh, int(ts.n_bcols), bounds, ts.rb_ptr, col_block,
        np.ascontiguousarray(tile_nnz), src, dropped, errors, val, rb_max)
    cdt = residual_col_dtype(ts.shape[1])
    if approx is None and not dropped.any():
        res_col = indices.view(cdt) if indices.dtype.itemsize == np.dtype(cdt).itemsize else indices.astype(cdt)
        return residual_layout(ts, indptr.astype(np.int64), res_col, val)
    if approx is None:
        res_ptr = indptr.astype(np.int64) - np.cumsum(dropped)
        m = int(res_ptr[-1])
        res_col = np.empty(m, dtype=cdt)
        res_val = np.empty(m, dtype=np.float64)
        (_drop_left_out if par else _drop_left_out_serial)(indptr, indices, val, res_ptr, res_col,
                                                           res_val, n_chunks)
        return residual_layout(ts, res_ptr, res_col, res_val)
    lo, hi, ar, ac, av = approx
    cur = np.empty(ts.n_tiles, dtype=np.int64)
    res_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    args = (indptr, indices, val, n_rows, T, ts.rb_ptr, col_block, src, lo, hi, ar, ac, av, cur, res_ptr)
    _merge_approx(*args, np.zeros(0, cdt), np.zeros(0))
    np.cumsum(res_ptr, out=res_ptr)
    m = int(res_ptr[-1])
    res_col = np.empty(m, dtype=cdt)
    res_val = np.empty(m, dtype=np.float64)
    if m:
        _merge_approx(*args, res_col, res_val)
    return residual_layout(ts, res_ptr, res_col, res_val)


def residual_layout(ts, res_ptr, res_col, res_val):
    """The residual dict from compressed rows: COO with per-row-block pointers when there
    are fewer entries than rows, else CSR (with four partial sums when rows are long)."""
    n_rows = int(ts.shape[0])
    m = int(res_val.shape[0])
    if m < n_rows:  # fewer entries than rows: row-block-pointed COO (see module docstring)
        bounds = np.minimum(np.arange(ts.n_brows + 1, dtype=np.int64) * int(ts.tile), n_rows)
        row = np.repeat(np.arange(n_rows, dtype=np.uint32), np.diff(res_ptr))
        return dict(ptr=res_ptr[bounds].copy(), row=row, col=res_col, val=res_val,
                    mode=np.full(1, RES_COO, dtype=np.int64))
    mode = RES_CSR_LONG if m >= LONG_ROW * n_rows else RES_CSR
    return dict(ptr=res_ptr, row=np.zeros(0, np.uint32), col=res_col, val=res_val,
                mode=np.full(1, mode, dtype=np.int64))


# =========================================================================== empty packs
def empty_pack(fmt):
    """A pack with no tiles (keeps the executor's signature stable)."""
    m = np.zeros((0, 7), dtype=np.int64)
    z64, zf = np.zeros(0, np.int64), np.zeros(0, np.float64)
    return {
        "dense": dict(meta=m, val=zf),
        "dense_i8": dict(meta=m, val=np.zeros(0, np.int8), scale=zf),
        "bitmap": dict(meta=m, words=np.zeros(0, np.uint64), val=zf),
        "dia": dict(meta=m, run=np.zeros(0, np.uint32), val=zf),
        "block": dict(meta=m, br=z64, bc=z64, val=zf),
        "nm": dict(meta=m, idx=np.zeros(0, np.uint8), val=zf),
        "lowrank": dict(meta=m, us=zf, v=zf),
    }[fmt]
