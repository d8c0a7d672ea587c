"""The fused CPU executor: every tile in its kernel's format, one numba pass (akf-spec §3, §9).

Packing (:func:`pack_plan`)
---------------------------
Tiles are grouped by *executor format* (``Kernel.exec_format``) and packed
structure-of-arrays. Every format keeps its tiles in TileSet order (row-major by
``(bi, bj)``) with a per-row-block pointer ``rbp`` (``n_brows + 1``) and a tile table
``meta`` (int64, ``(n, 7)``: global first row, global first column, ``h``, ``w`` and three
format-specific offsets). Formats:

========== ===================================================================
residual   compressed rows (CSR): uint16/uint32 columns, float64 values; when it holds fewer
           entries than the matrix has rows: COO (uint32 row, column, value) with a pointer
           per row block instead of per row (no per-row loop exits to mispredict)
dense      ``h·w`` float64 values column-major                    (DENSE)
dense_i8   ``h·w`` int8 codes (column-major) + per-tile scale     (QUANT8D)
csc        ``w+1`` absolute column pointers, uint8 rows, float64  (CSC, PRUNE)
csc_i8     as csc with int8 codes + per-tile scale                (QUANT8)
bitmap     ``h·ceil(w/64)`` uint64 words (row-major), values in row order  (BITMAP)
dia        one uint32 per diagonal run (first local row, offset, length; see
           :func:`pack_dia`), float64 slots, the tile's first slot in ``meta``  (DIA)
block      per 4×4 block: block row/col and 16 float64 values     (BLOCK)
nm         ``h·ceil(w/M)·N`` slots of (uint8 in-group index, float64 value)  (NM)
lowrank    ``U·diag s`` (h×k) and ``V`` (w×k) float64             (LOWRANK)
========== ===================================================================

Hyper-sparse tiles (HYB / Cocktail idea): a tile whose kernel's ``Â`` is a set of entries
(CSC, BITMAP, DIA, BLOCK exactly; PRUNE, NM, QUANT8 after their approximation) and that
keeps fewer entries than it has columns (``kept < w``, i.e. density below ``1/T`` for a
full tile: less than one entry per column, so a per-column loop would mostly visit
nothing; DIA: fewer than ``min(h, w)/2``) is not packed in its format: its entries are
merged into the ``residual`` compressed-row part of its row block, paying no per-tile
overhead. Exact CSC tiles, QUANT8 tiles (as their dequantised entries ``q·scale``) and
BITMAP tiles below 75 % density go there too (see
:func:`to_residual`): the same entries, executed as whole CSR rows, run faster on a CPU
than per-tile column scatters or bit scans. The NPU payload and work of a tile
(``Kernel.npu_work``) do not depend on this CPU layout.

Execution
---------
:func:`_residual_matvec` writes the residual rows (this also zero-initialises ``y``),
then :func:`_tiles_matvec` adds every packed tile's contribution, format by format; both
run ``prange`` over chunks of consecutive row blocks balanced by streamed bytes.
:func:`_fused_matmat` runs ``prange`` over row blocks, residual first. A row block owns
its output rows: no two threads write the same output row, so there are no races and the
result is deterministic (independent of the thread count and of the chunking).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from .._jit import njit_cached, njit_inline, njit_parallel, serial_twin
from ..kernels.base import gather_entries
from ..kernels.quant import quant_value, tile_scale

# numba's on-disk cache of this module's kernels is keyed on this file, not on the helpers inlined
# from kernels/quant.py: edit this file (e.g. this comment) when those helpers change. Last change:
# tile_scale's floor of 5e-324 (tiles of tiny subnormals divided by a zero scale).

# Per-format tile kernels are ``njit_inline``: inlined into the drivers (a call per tile
# costs more than a small tile's work).

FORMATS = ("dense", "dense_i8", "csc", "csc_i8", "bitmap", "dia", "block", "nm", "lowrank")
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


def pack_csc(ts, e: Entries, int8: bool):
    w = ts.w[e.tid]
    cpo = _starts(w + 1)
    seg = _seg(e.ptr)
    key = cpo[seg] + e.c
    order = np.argsort(key, kind="stable")
    colptr = np.cumsum(np.bincount(key + 1, minlength=int(cpo[-1]))).astype(np.int64)
    if colptr.shape[0] == 0:
        colptr = np.zeros(0, dtype=np.int64)
    rows = e.r[order].astype(np.uint8)
    out = dict(meta=_meta(ts, e.tid, cpo[:-1]), colptr=colptr, row=rows)
    if int8:
        out["val"] = e.q[order].astype(np.int8)
        out["scale"] = e.scale.astype(np.float64)
    else:
        out["val"] = e.v[order].astype(np.float64)
    return out


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


@njit_cached
def _dia_count_range(ptr, r, c, T, u0, u1, nd, slots):
    """Occupied diagonals and summed run lengths of tiles ``u0:u1`` (serial)."""
    lo = np.full(2 * T, -1, dtype=np.int64)
    hi = np.zeros(2 * T, dtype=np.int64)
    for u in range(u0, u1):
        d = 0
        sl = 0
        for k in range(ptr[u], ptr[u + 1]):
            o = c[k] - r[k] + T
            if lo[o] < 0:
                lo[o] = r[k]  # entries are ordered by (r, c): first seen = first row
                d += 1
            hi[o] = r[k] + 1
        for k in range(ptr[u], ptr[u + 1]):  # visit only the tile's diagonals
            o = c[k] - r[k] + T
            if lo[o] >= 0:
                sl += hi[o] - lo[o]
                lo[o] = -1
        nd[u] = d
        slots[u] = sl


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
    par = pack_parallel(int(r.shape[0]) + n)
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
    block owns its rows, no races). QUANT8 tiles count their entries with ``v̂ ≠ 0`` and
    write their error ``err[t] = Σ (v − v̂)²`` (a dropped entry contributes ``v²``)."""
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
                    vh = quant_value(v, sc)[0]
                    if vh != 0.0:
                        counts[r0 + ts_r[k]] += 1
                        d = v - vh
                        e += d * d
                    else:
                        e += v * v
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
    entries ``v̂ = q·s ≠ 0`` (:func:`akfviz.kernels.quant.quant_value`)."""
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
            if s == SRC_QUANT8:  # v̂ = q·s (the arithmetic of quant_approx), zeros dropped
                sc = tile_scale(ts_v, k0, k1)
                for k in range(k0, k1):
                    vh = quant_value(ts_v[k], sc)[0]
                    if vh != 0.0:
                        lr = ts_r[k]
                        p = fill[lr]
                        res_col[p] = c0 + ts_c[k]
                        res_val[p] = vh
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
        tile's own entries quantised (``v̂ = q·s``, entries with ``v̂ = 0`` dropped).
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
    par = pack_parallel(ts.n_tiles + ts.nnz + m_v.shape[0] + o_v.shape[0])
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
        "csc": dict(meta=m, colptr=z64, row=np.zeros(0, np.uint8), val=zf),
        "csc_i8": dict(meta=m, colptr=z64, row=np.zeros(0, np.uint8), val=np.zeros(0, np.int8), scale=zf),
        "bitmap": dict(meta=m, words=np.zeros(0, np.uint64), val=zf),
        "dia": dict(meta=m, run=np.zeros(0, np.uint32), val=zf),
        "block": dict(meta=m, br=z64, bc=z64, val=zf),
        "nm": dict(meta=m, idx=np.zeros(0, np.uint8), val=zf),
        "lowrank": dict(meta=m, us=zf, v=zf),
    }[fmt]


# =========================================================================== matvec
# The matvec kernels index with *unsigned* integers (pointer/metadata arrays are viewed as
# uint64, columns are uint32, local indices uint8): numba then emits no negative-index
# wraparound in the inner loops. Constants are typed uint64 so that no expression mixes
# signed and unsigned integers (numba would promote that to float64).
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U3 = np.uint64(3)
_U4 = np.uint64(4)
_U5 = np.uint64(5)
_U6 = np.uint64(6)
_U7 = np.uint64(7)
_U8 = np.uint64(8)
_U9 = np.uint64(9)
_U10 = np.uint64(10)
_U11 = np.uint64(11)
_U12 = np.uint64(12)
_U13 = np.uint64(13)
_U14 = np.uint64(14)
_U15 = np.uint64(15)
_U16 = np.uint64(16)
_U17 = np.uint64(17)
_U255 = np.uint64(255)
_U511 = np.uint64(511)
_UBIAS = np.uint64(DIA_OFFSET_BIAS)
_UWORD = np.uint64(WORD)


#: A compressed-row residual averaging at least this many entries per row uses four
#: partial sums per row (breaks the floating-point add chain); on short rows the plain loop
#: is faster. Decided once per plan (no per-row branch).
LONG_ROW = 16
RES_CSR, RES_COO, RES_CSR_LONG = 0, 1, 2


@njit_inline
def _mv_residual_rows(r0, r1, ptr, col, val, x, y):
    """Plain CSR rows ``r0 … r1−1`` (writes ``y``: also its zero-initialisation)."""
    for i in range(r0, r1):
        s = 0.0
        for k in range(ptr[i], ptr[i + _U1]):
            s += val[k] * x[col[k]]
        y[i] = s


@njit_inline
def _mv_residual_long_rows(r0, r1, ptr, col, val, x, y):
    """CSR rows with four partial sums (long rows)."""
    for i in range(r0, r1):
        k0 = ptr[i]
        k1 = ptr[i + _U1]
        k4 = k0 + ((k1 - k0) >> _U2 << _U2)
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for k in range(k0, k4, _U4):
            s0 += val[k] * x[col[k]]
            s1 += val[k + _U1] * x[col[k + _U1]]
            s2 += val[k + _U2] * x[col[k + _U2]]
            s3 += val[k + _U3] * x[col[k + _U3]]
        for k in range(k4, k1):
            s0 += val[k] * x[col[k]]
        y[i] = (s0 + s1) + (s2 + s3)


@njit_inline
def _mv_dense(meta, t, val, scale, x, y, acc):
    """Column-major tile: ``acc[0:h] += val[:, j] · x_j`` column by column (contiguous
    axpy, vectorises; each row is summed in column order, as scipy's CSR loop does), then
    ``y`` is written once per row."""
    r0, c0, h, w, base = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4]
    for i in range(h):
        acc[i] = 0.0
    for j in range(w):
        xj = x[c0 + j]
        for i in range(h):
            acc[i] += (val[base + i] * scale) * xj
        base += h
    for i in range(h):
        y[r0 + i] += acc[i]


@njit_inline
def _mv_csc(meta, t, colptr, row, val, scale, x, y):
    r0, c0, w, cpo = meta[t, 0], meta[t, 1], meta[t, 3], meta[t, 4]
    for j in range(w):
        xj = x[c0 + j]
        for k in range(colptr[cpo + j], colptr[cpo + j + _U1]):
            y[r0 + row[k]] += (val[k] * scale) * xj


@njit_inline
def _mv_bitmap(meta, t, words, val, x, y):
    r0, c0, h, woff, k, nw = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 4], meta[t, 5], meta[t, 6]
    p = woff
    for i in range(h):
        s0 = 0.0
        s1 = 0.0  # two accumulators: halves the floating-point add chain
        for q in range(nw):
            bits = words[p]
            p += _U1
            base = c0 + q * _UWORD
            while bits != _U0:
                s0 += val[k] * x[base + trailing_zeros(bits)]
                k += _U1
                bits &= bits - _U1
                if bits == _U0:
                    break
                s1 += val[k] * x[base + trailing_zeros(bits)]
                k += _U1
                bits &= bits - _U1
        y[r0 + i] += s0 + s1


@njit_inline
def _mv_dia(meta, t, run, val, x, y):
    r0, c0, d0, d1, vo = meta[t, 0], meta[t, 1], meta[t, 4], meta[t, 5], meta[t, 6]
    for d in range(d0, d1):
        wd = np.uint64(run[d])
        lo = wd & _U255
        yo = r0 + lo
        xo = c0 + lo + ((wd >> _U8) & _U511) - _UBIAS
        n = (wd >> _U17) + _U1
        for i in range(n):  # contiguous in y, x and the values: vectorises
            y[yo + i] += val[vo + i] * x[xo + i]
        vo += n


@njit_inline
def _mv_block(meta, t, br, bc, val, x, y):
    """4×4 blocks ordered by (block row, block column): the four row sums of a block row
    stay in registers and ``y`` is written once per block row."""
    r0, c0, h, w, q, b1 = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5]
    while q < b1:
        rb = br[q]
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        while q < b1 and br[q] == rb:
            cc = bc[q] * _U4
            p = q * _U16
            if cc + _U4 <= w:
                xb = c0 + cc
                x0 = x[xb]
                x1 = x[xb + _U1]
                x2 = x[xb + _U2]
                x3 = x[xb + _U3]
                a0 += val[p] * x0 + val[p + _U1] * x1 + val[p + _U2] * x2 + val[p + _U3] * x3
                a1 += val[p + _U4] * x0 + val[p + _U5] * x1 + val[p + _U6] * x2 + val[p + _U7] * x3
                a2 += val[p + _U8] * x0 + val[p + _U9] * x1 + val[p + _U10] * x2 + val[p + _U11] * x3
                a3 += val[p + _U12] * x0 + val[p + _U13] * x1 + val[p + _U14] * x2 + val[p + _U15] * x3
            else:  # right edge tile: fewer than 4 columns
                for j in range(w - cc):
                    xj = x[c0 + cc + j]
                    a0 += val[p + j] * xj
                    a1 += val[p + _U4 + j] * xj
                    a2 += val[p + 8 + j] * xj
                    a3 += val[p + 12 + j] * xj
            q += _U1
        ro = r0 + rb * _U4
        nr = h - rb * _U4
        y[ro] += a0
        if nr > _U1:
            y[ro + _U1] += a1
        if nr > _U2:
            y[ro + _U2] += a2
        if nr > _U3:
            y[ro + _U3] += a3


@njit_inline
def _mv_nm(meta, t, idx, val, x, y):
    r0, c0, h, w, p, N, M = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5], meta[t, 6]
    G = (w + M - _U1) // M
    if N == _U2:  # 2:M — two groups per step, four accumulators, no inner slot loop
        G2 = G - G % _U2
        for i in range(h):
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            cg = c0
            for g in range(_U0, G2, _U2):
                s0 += val[p] * x[cg + idx[p]]
                s1 += val[p + _U1] * x[cg + idx[p + _U1]]
                s2 += val[p + _U2] * x[cg + M + idx[p + _U2]]
                s3 += val[p + _U3] * x[cg + M + idx[p + _U3]]
                p += _U4
                cg += M + M
            if G2 < G:
                s0 += val[p] * x[cg + idx[p]]
                s1 += val[p + _U1] * x[cg + idx[p + _U1]]
                p += _U2
            y[r0 + i] += (s0 + s1) + (s2 + s3)
    else:
        for i in range(h):
            s = 0.0
            cg = c0
            for g in range(G):
                for _ in range(N):
                    s += val[p] * x[cg + idx[p]]
                    p += _U1
                cg += M
            y[r0 + i] += s


@njit_inline
def _mv_lowrank(meta, t, us, v, x, y):
    r0, c0, h, w, uo, vo, k = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5], meta[t, 6]
    z = np.zeros(k)
    for j in range(w):
        xj = x[c0 + j]
        for q in range(k):
            z[q] += v[vo + j * k + q] * xj
    for i in range(h):
        s = 0.0
        for q in range(k):
            s += us[uo + i * k + q] * z[q]
        y[r0 + i] += s


@njit_parallel
def _residual_matvec(x, y, chunks, T, n_rows, res_mode, res_ptr, res_row, res_col, res_val):
    """First pass of ``y = Â x``: the residual (this also initialises every row of ``y``).

    ``prange`` over chunks of consecutive row blocks; a small function of its own, so that
    the compressed-row loop compiles as tightly as scipy's."""
    for ch in numba.prange(chunks.shape[0] - 1):
        r0c = chunks[ch] * T
        r1c = min(chunks[ch + 1] * T, n_rows)
        mode = res_mode[0]
        if mode == RES_COO:  # hyper-sparse residual: zero the rows, then one loop of entries
            for i in range(r0c, r1c):
                y[i] = 0.0
            for k in range(res_ptr[chunks[ch]], res_ptr[chunks[ch + 1]]):
                y[res_row[k]] += res_val[k] * x[res_col[k]]
        elif mode == RES_CSR_LONG:
            _mv_residual_long_rows(r0c, r1c, res_ptr, res_col, res_val, x, y)
        else:
            _mv_residual_rows(r0c, r1c, res_ptr, res_col, res_val, x, y)


@njit_parallel
def _tiles_matvec(x, y, chunks, T, n_rows,
                  dn_rbp, dn_meta, dn_val,
                  d8_rbp, d8_meta, d8_val, d8_scale,
                  cs_rbp, cs_meta, cs_colptr, cs_row, cs_val,
                  c8_rbp, c8_meta, c8_colptr, c8_row, c8_val, c8_scale,
                  bm_rbp, bm_meta, bm_words, bm_val,
                  dg_rbp, dg_meta, dg_run, dg_val,
                  bk_rbp, bk_meta, bk_br, bk_bc, bk_val,
                  nm_rbp, nm_meta, nm_idx, nm_val,
                  lr_rbp, lr_meta, lr_us, lr_v):
    """Second pass of ``y = Â x``: every packed tile adds ``Â_t x`` to its rows.

    ``prange`` over chunks of consecutive row blocks (balanced by work); row block ``b``
    owns rows ``b·T … b·T+h−1`` — no two chunks write the same row, and the arithmetic of a
    row does not depend on the chunking (deterministic for any thread count). Index arrays
    are unsigned (see above).

    Within a chunk the loops go format by format over all its tiles (tiles of one format are
    stored in row-block order, so a chunk's are ``rbp[b0] … rbp[b1]``). Every row still gets
    its contributions in the same order (the formats in this order, then tile order), so the
    result is the same, bit for bit, as a loop over row blocks with the formats inside — and
    4–18 % faster on one thread (paired runs, banded DIA plans): one short loop nest per
    format compiles tighter than nine interleaved ones."""
    for ch in numba.prange(chunks.shape[0] - 1):
        acc = np.empty(T, dtype=np.float64)  # per-thread row accumulator of a dense tile
        b0 = chunks[ch]
        b1 = chunks[ch + 1]
        for t in range(dn_rbp[b0], dn_rbp[b1]):
            _mv_dense(dn_meta, t, dn_val, 1.0, x, y, acc)
        for t in range(d8_rbp[b0], d8_rbp[b1]):
            _mv_dense(d8_meta, t, d8_val, d8_scale[t], x, y, acc)
        for t in range(cs_rbp[b0], cs_rbp[b1]):
            _mv_csc(cs_meta, t, cs_colptr, cs_row, cs_val, 1.0, x, y)
        for t in range(c8_rbp[b0], c8_rbp[b1]):
            _mv_csc(c8_meta, t, c8_colptr, c8_row, c8_val, c8_scale[t], x, y)
        for t in range(bm_rbp[b0], bm_rbp[b1]):
            _mv_bitmap(bm_meta, t, bm_words, bm_val, x, y)
        for t in range(dg_rbp[b0], dg_rbp[b1]):
            _mv_dia(dg_meta, t, dg_run, dg_val, x, y)
        for t in range(bk_rbp[b0], bk_rbp[b1]):
            _mv_block(bk_meta, t, bk_br, bk_bc, bk_val, x, y)
        for t in range(nm_rbp[b0], nm_rbp[b1]):
            _mv_nm(nm_meta, t, nm_idx, nm_val, x, y)
        for t in range(lr_rbp[b0], lr_rbp[b1]):
            _mv_lowrank(lr_meta, t, lr_us, lr_v, x, y)


# =========================================================================== matmat
@njit_inline
def _mm_dense(meta, t, val, scale, X, Y):
    r0, c0, h, w, off = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4]
    k = X.shape[1]
    for j in range(w):
        base = off + j * h  # column-major
        for i in range(h):
            a = val[base + i] * scale
            for q in range(k):
                Y[r0 + i, q] += a * X[c0 + j, q]


@njit_inline
def _mm_csc(meta, t, colptr, row, val, scale, X, Y):
    r0, c0, w, cpo = meta[t, 0], meta[t, 1], meta[t, 3], meta[t, 4]
    kk = X.shape[1]
    for j in range(w):
        for p in range(colptr[cpo + j], colptr[cpo + j + 1]):
            a = val[p] * scale
            rr = r0 + row[p]
            for q in range(kk):
                Y[rr, q] += a * X[c0 + j, q]


@njit_inline
def _mm_bitmap(meta, t, words, val, X, Y):
    r0, c0, h, woff, k, nw = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 4], meta[t, 5], meta[t, 6]
    kk = X.shape[1]
    for i in range(h):
        for q in range(nw):
            bits = words[woff + i * nw + q]
            base = c0 + q * WORD
            while bits != 0:
                tz = np.int64(trailing_zeros(bits))
                a = val[k]
                for z in range(kk):
                    Y[r0 + i, z] += a * X[base + tz, z]
                k += 1
                bits &= bits - np.uint64(1)


@njit_inline
def _mm_dia(meta, t, run, val, X, Y):
    r0, c0, d0, d1, vo = meta[t, 0], meta[t, 1], meta[t, 4], meta[t, 5], meta[t, 6]
    kk = X.shape[1]
    for d in range(d0, d1):
        wd = np.int64(run[d])
        lo = wd & 255
        ro = r0 + lo
        xo = c0 + lo + ((wd >> 8) & 511) - DIA_OFFSET_BIAS
        n = (wd >> 17) + 1
        for i in range(n):
            a = val[vo + i]
            for q in range(kk):
                Y[ro + i, q] += a * X[xo + i, q]
        vo += n


@njit_inline
def _mm_block(meta, t, br, bc, val, X, Y):
    r0, c0, h, w, b0, b1 = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5]
    kk = X.shape[1]
    for p in range(b0, b1):
        rr = br[p] * 4
        cc = bc[p] * 4
        for i in range(min(4, h - rr)):
            for j in range(min(4, w - cc)):
                a = val[p * 16 + i * 4 + j]
                for q in range(kk):
                    Y[r0 + rr + i, q] += a * X[c0 + cc + j, q]


@njit_inline
def _mm_nm(meta, t, idx, val, X, Y):
    r0, c0, h, w, off, N, M = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5], meta[t, 6]
    G = (w + M - 1) // M
    kk = X.shape[1]
    p = off
    for i in range(h):
        for g in range(G):
            for _ in range(N):
                a = val[p]
                col = c0 + g * M + idx[p]
                for q in range(kk):
                    Y[r0 + i, q] += a * X[col, q]
                p += 1


@njit_inline
def _mm_lowrank(meta, t, us, v, X, Y):
    r0, c0, h, w, uo, vo, k = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5], meta[t, 6]
    kk = X.shape[1]
    Z = np.zeros((k, kk))
    for j in range(w):
        for a in range(k):
            f = v[vo + j * k + a]
            for q in range(kk):
                Z[a, q] += f * X[c0 + j, q]
    for i in range(h):
        for a in range(k):
            f = us[uo + i * k + a]
            for q in range(kk):
                Y[r0 + i, q] += f * Z[a, q]


@njit_parallel
def _fused_matmat(X, Y, T, n_rows, n_brows,
                  res_mode, res_ptr, res_row, res_col, res_val,
                  dn_rbp, dn_meta, dn_val,
                  d8_rbp, d8_meta, d8_val, d8_scale,
                  cs_rbp, cs_meta, cs_colptr, cs_row, cs_val,
                  c8_rbp, c8_meta, c8_colptr, c8_row, c8_val, c8_scale,
                  bm_rbp, bm_meta, bm_words, bm_val,
                  dg_rbp, dg_meta, dg_run, dg_val,
                  bk_rbp, bk_meta, bk_br, bk_bc, bk_val,
                  nm_rbp, nm_meta, nm_idx, nm_val,
                  lr_rbp, lr_meta, lr_us, lr_v):
    """Y = Â X for X of shape (n_cols, k): ``prange`` over row blocks, each writes its
    residual rows then adds its tiles (same formats as :func:`_tiles_matvec`)."""
    kk = X.shape[1]
    for b in numba.prange(n_brows):
        r0 = b * T
        r1 = min(r0 + T, n_rows)
        if res_mode[0] == RES_COO:
            for i in range(r0, r1):
                for q in range(kk):
                    Y[i, q] = 0.0
            for p in range(res_ptr[b], res_ptr[b + 1]):
                a = res_val[p]
                col = res_col[p]
                i = res_row[p]
                for q in range(kk):
                    Y[i, q] += a * X[col, q]
        else:
            for i in range(r0, r1):
                for q in range(kk):
                    Y[i, q] = 0.0
                for p in range(res_ptr[i], res_ptr[i + 1]):
                    a = res_val[p]
                    col = res_col[p]
                    for q in range(kk):
                        Y[i, q] += a * X[col, q]
        for t in range(dn_rbp[b], dn_rbp[b + 1]):
            _mm_dense(dn_meta, t, dn_val, 1.0, X, Y)
        for t in range(d8_rbp[b], d8_rbp[b + 1]):
            _mm_dense(d8_meta, t, d8_val, d8_scale[t], X, Y)
        for t in range(cs_rbp[b], cs_rbp[b + 1]):
            _mm_csc(cs_meta, t, cs_colptr, cs_row, cs_val, 1.0, X, Y)
        for t in range(c8_rbp[b], c8_rbp[b + 1]):
            _mm_csc(c8_meta, t, c8_colptr, c8_row, c8_val, c8_scale[t], X, Y)
        for t in range(bm_rbp[b], bm_rbp[b + 1]):
            _mm_bitmap(bm_meta, t, bm_words, bm_val, X, Y)
        for t in range(dg_rbp[b], dg_rbp[b + 1]):
            _mm_dia(dg_meta, t, dg_run, dg_val, X, Y)
        for t in range(bk_rbp[b], bk_rbp[b + 1]):
            _mm_block(bk_meta, t, bk_br, bk_bc, bk_val, X, Y)
        for t in range(nm_rbp[b], nm_rbp[b + 1]):
            _mm_nm(nm_meta, t, nm_idx, nm_val, X, Y)
        for t in range(lr_rbp[b], lr_rbp[b + 1]):
            _mm_lowrank(lr_meta, t, lr_us, lr_v, X, Y)


# serial twins (``prange`` runs as ``range``): small plans skip the thread launch
_residual_matvec_serial = serial_twin(_residual_matvec)
_tiles_matvec_serial = serial_twin(_tiles_matvec)
_fused_matmat_serial = serial_twin(_fused_matmat)

#: Plans that stream fewer bytes than this run serially when called from a thread other
#: than the main one: waking the worker threads costs more than the work, and OpenMP gives
#: every calling thread a thread team of its own, so a thread that lives for one call (a
#: Streamlit script run) starts a new team. Measured: the 90 %-pruned MiniLM FFN (606 kB)
#: called from a fresh thread per batch took 76 µs on two threads against 44 µs on one; in
#: the app (chromium busy on the same 2 cores) one call took 8.4 ms against 0.034 ms.
PARALLEL_MIN_BYTES = 1 << 20
#: The same threshold for calls from the main thread, whose team persists between calls:
#: plans of 265 kB / 516 kB / 1 MB (random 1536², 25k / 50k / 100k nonzeros) took 0.92 /
#: 0.89 / 0.62 of their one-thread time on two threads, MiniLM FFN 90 % (606 kB) 0.64.
PARALLEL_MIN_BYTES_MAIN = 1 << 18
_MAIN_THREAD = threading.main_thread().ident


def _min_parallel_bytes() -> int:
    """:data:`PARALLEL_MIN_BYTES_MAIN` on the main thread, else :data:`PARALLEL_MIN_BYTES`."""
    return PARALLEL_MIN_BYTES_MAIN if threading.get_ident() == _MAIN_THREAD else PARALLEL_MIN_BYTES


#: Largest share of the work one thread may get for the parallel path to be used (with two
#: threads: at least a 1.4× split; below that the launch and the wait cost more than they gain).
PARALLEL_MAX_SHARE = 0.7

#: Seconds for which :func:`cores_have_room` reuses its last answer (reading the load
#: average is a system call of a few µs — a tenth of a small matvec).
LOAD_CHECK_PERIOD = 0.5
_load_check = [-1.0, True]  # (time of the last check, answer)


def cores_have_room() -> bool:
    """False when the machine is oversubscribed (1-minute load average ≥ number of cores).

    A parallel region ends when its slowest worker does; on a saturated machine a worker
    is often descheduled for a whole time slice (several ms, ten times a 1M-nonzero SpMV),
    so the executor then runs on the calling thread. The result is the same either way
    (the arithmetic does not depend on the chunking). The answer is reused for
    :data:`LOAD_CHECK_PERIOD` seconds (the 1-minute average moves slowly)."""
    now = time.monotonic()
    if now - _load_check[0] < LOAD_CHECK_PERIOD:
        return _load_check[1]
    try:
        room = os.getloadavg()[0] < (os.cpu_count() or 1)
    except OSError:  # pragma: no cover - platforms without a load average
        room = True
    _load_check[0] = now
    _load_check[1] = room
    return room


# =========================================================================== driver
@dataclass(eq=False)
class PackedPlan:
    """Every tile of a plan packed for the fused executor (picklable: plain arrays)."""

    shape: tuple
    tile: int
    n_brows: int
    residual: dict
    packs: dict  # fmt -> dict(rbp=..., meta=..., arrays...)
    block_work: np.ndarray  # cumulative streamed bytes per row block (n_brows + 1), for chunking

    def _arrays(self):
        p = self.packs
        r = self.residual
        return (r["mode"], r["ptr"], r["row"], r["col"], r["val"],
                p["dense"]["rbp"], p["dense"]["meta"], p["dense"]["val"],
                p["dense_i8"]["rbp"], p["dense_i8"]["meta"], p["dense_i8"]["val"], p["dense_i8"]["scale"],
                p["csc"]["rbp"], p["csc"]["meta"], p["csc"]["colptr"], p["csc"]["row"], p["csc"]["val"],
                p["csc_i8"]["rbp"], p["csc_i8"]["meta"], p["csc_i8"]["colptr"], p["csc_i8"]["row"],
                p["csc_i8"]["val"], p["csc_i8"]["scale"],
                p["bitmap"]["rbp"], p["bitmap"]["meta"], p["bitmap"]["words"], p["bitmap"]["val"],
                p["dia"]["rbp"], p["dia"]["meta"], p["dia"]["run"], p["dia"]["val"],
                p["block"]["rbp"], p["block"]["meta"], p["block"]["br"], p["block"]["bc"], p["block"]["val"],
                p["nm"]["rbp"], p["nm"]["meta"], p["nm"]["idx"], p["nm"]["val"],
                p["lowrank"]["rbp"], p["lowrank"]["meta"], p["lowrank"]["us"], p["lowrank"]["v"])

    def _mm_args(self):
        """Arguments of :func:`_fused_matmat` after ``(X, Y)``."""
        return (np.int64(self.tile), np.int64(self.shape[0]), np.int64(self.n_brows), *self._arrays())

    def _mv_args(self, n_chunks):
        """Arguments after ``(x, y)`` of :func:`_residual_matvec` and :func:`_tiles_matvec`
        (``None`` when the plan has no packed tile): int64 index arrays viewed as uint64 (all
        non-negative), chunks of row blocks balanced by streamed bytes."""
        cache = self.__dict__.setdefault("_mv_cache", {})
        if n_chunks not in cache:
            u = tuple(a.view(np.uint64) if a.dtype == np.int64 else a for a in self._arrays())
            head = (self._chunks(n_chunks), np.uint64(self.tile), np.uint64(self.shape[0]))
            has_tiles = any(pk["meta"].shape[0] for pk in self.packs.values())
            cache[n_chunks] = (head + u[:5], head + u[5:] if has_tiles else None)
        return cache[n_chunks]

    def run_matvec(self, x, y, n_chunks, parallel):
        """``y = Â x`` with ``n_chunks`` chunks of row blocks (``parallel``: ``prange``
        over them; the result is the same, bit for bit, for any ``n_chunks``)."""
        res_args, tile_args = self._mv_args(n_chunks)
        (_residual_matvec if parallel else _residual_matvec_serial)(x, y, *res_args)
        if tile_args is not None:
            (_tiles_matvec if parallel else _tiles_matvec_serial)(x, y, *tile_args)
        return y

    def _chunks(self, n_chunks):
        """Row-block boundaries of ``n_chunks`` consecutive ranges with about equal work."""
        cw = self.block_work
        n_chunks = max(1, min(int(n_chunks), self.n_brows))
        if n_chunks == 1 or cw[-1] == 0:
            bounds = np.linspace(0, self.n_brows, n_chunks + 1).round().astype(np.int64)
        else:
            goal = cw[-1] * np.arange(1, n_chunks) / n_chunks
            inner = np.searchsorted(cw, goal, side="left")
            bounds = np.concatenate([[0], inner, [self.n_brows]]).astype(np.int64)
            bounds = np.maximum.accumulate(np.minimum(bounds, self.n_brows))
        return bounds.view(np.uint64)

    def _parallel(self, k=1, n_threads=None) -> bool:
        """Whether ``k`` right-hand sides run on the worker threads (``n_threads``: numba's
        thread count, when the caller has it already — asking costs ≈ 1.5 µs)."""
        nt = numba.get_num_threads() if n_threads is None else n_threads
        return (k * self.bytes_moved() >= _min_parallel_bytes() and self.n_brows > 1
                and nt > 1 and self._splits_well(nt) and cores_have_room())

    def _splits_well(self, n_chunks) -> bool:
        """True when ``n_chunks`` row-block ranges share the work well enough for threads to
        pay off: the largest range holds at most :data:`PARALLEL_MAX_SHARE` of it. A wide,
        short matrix (say 40 × 300,000) has two row blocks of very unequal weight; run in
        parallel it was slower than one thread."""
        memo = self.__dict__.setdefault("_split_memo", {})
        if n_chunks not in memo:
            cw = self.block_work
            b = self._chunks(n_chunks).view(np.int64)
            total = float(cw[-1])
            memo[n_chunks] = total > 0 and float(np.max(np.diff(cw[b]))) <= PARALLEL_MAX_SHARE * total
        return memo[n_chunks]

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``y = Â x`` (x: float64, contiguous, length n_cols)."""
        y = np.empty(self.shape[0], dtype=np.float64)
        if self.bytes_moved() < _min_parallel_bytes():  # small plan: serial, no thread/load checks
            return self.run_matvec(x, y, 1, False)
        nt = numba.get_num_threads()
        par = self._parallel(1, nt)
        return self.run_matvec(x, y, nt if par else 1, par)

    def matmat(self, X: np.ndarray) -> np.ndarray:
        """``Y = Â X`` (X: float64, C-contiguous, shape (n_cols, k))."""
        Y = np.empty((self.shape[0], X.shape[1]), dtype=np.float64)
        fn = _fused_matmat if self._parallel(X.shape[1]) else _fused_matmat_serial
        fn(X, Y, *self._mm_args())
        return Y

    def bytes_moved(self) -> int:
        """Bytes of every packed array the executor streams (excluding x and y)."""
        if getattr(self, "_bytes", None) is not None:
            return self._bytes
        total = sum(a.nbytes for a in self.residual.values())
        for pk in self.packs.values():
            total += sum(a.nbytes for a in pk.values())
        self._bytes = int(total)
        return self._bytes

    def format_tiles(self) -> dict:
        """Number of tiles per executor format (residual: number of stored entries)."""
        out = {f: int(pk["meta"].shape[0]) for f, pk in self.packs.items()}
        out["residual_entries"] = int(self.residual["val"].shape[0])
        return out


# =========================================================================== plan packing
_residual_counts_serial = serial_twin(_residual_counts)
_residual_fill_serial = serial_twin(_residual_fill)

#: The residual builder uses the worker threads from this many tiles + entries on (and when
#: the cores are not busy, :func:`cores_have_room`): below, or on a loaded machine, waking
#: the threads costs more than the work (a busy core delays a parallel region by a time slice).
PACK_PARALLEL_MIN = 1 << 17


def pack_parallel(work) -> bool:
    """Run a packing pass of ``work`` tiles + entries on the worker threads?"""
    return numba.get_num_threads() > 1 and work >= PACK_PARALLEL_MIN and cores_have_room()


def ragged_take(ptr, order, *arrays):
    """Reorder the segments of ragged arrays (``ptr``) into ``order``; returns new ptr + arrays."""
    lens = np.diff(ptr)[order]
    new_ptr = _starts(lens)
    pos = np.arange(new_ptr[-1], dtype=np.int64) + np.repeat(ptr[:-1][order] - new_ptr[:-1], lens)
    return (new_ptr, *[a[pos] for a in arrays])


def _merge_entries(parts):
    """Concatenate Entries of several kernels and order them by tile index."""
    if len(parts) == 1:
        return parts[0]
    tid = np.concatenate([p.tid for p in parts])
    ptr = _starts(np.concatenate([np.diff(p.ptr) for p in parts]))
    r = np.concatenate([p.r for p in parts])
    c = np.concatenate([p.c for p in parts])
    v = np.concatenate([p.v for p in parts])
    has_q = parts[0].q is not None
    q = np.concatenate([p.q for p in parts]) if has_q else np.zeros(0, np.int8)
    scale = np.concatenate([p.scale for p in parts]) if has_q else None
    order = np.argsort(tid, kind="stable")
    ptr2, r, c, v = ragged_take(ptr, order, r, c, v)
    q = ragged_take(ptr, order, q)[1] if has_q else None
    return Entries(tid=tid[order], ptr=ptr2, r=r, c=c, v=v, q=q,
                   scale=scale[order] if has_q else None)


#: Entry-based formats → their packer (NM needs per-tile N, M and is packed separately).
_ENTRY_PACKERS = {
    "dense": lambda ts, e: pack_dense(ts, e, False),
    "dense_i8": lambda ts, e: pack_dense(ts, e, True),
    "csc": lambda ts, e: pack_csc(ts, e, False),
    "csc_i8": lambda ts, e: pack_csc(ts, e, True),
    "bitmap": pack_bitmap,
    "dia": pack_dia,
    "block": pack_block,
}


#: Row-entry formats whose tiles the CPU executes from the compressed-row residual: a CSC
#: tile scatters into ``y`` entry by entry, and a bitmap tile pays a mispredicted loop exit
#: per row segment of ``w`` columns; merged into whole CSR rows (one exit per matrix row)
#: the same entries run as fast as scipy's loop. A BITMAP tile stays a bitmap only when it
#: is nearly full (density ≥ ``BITMAP_MIN_DENSITY``: few bit-loop exits per entry).
ROW_MERGED_FORMATS = ("csc", "bitmap")
BITMAP_MIN_DENSITY = 0.75


def to_residual(fmt, kept, h, w):
    """Which tiles of executor format ``fmt`` go to the residual (bool per tile).

    Hyper-sparse tiles (``kept < w``: less than one entry per column) of every entry format
    and of exact DENSE tiles, except DIA, whose tiles go there below ``min(h, w) / 2`` entries
    (a diagonal run of half a tile side is worth its vectorised loop); every exact CSC-format
    tile; BITMAP tiles
    below ``BITMAP_MIN_DENSITY``. (Vectorised statement of the rule :func:`_route_tiles`
    applies during packing.)
    """
    if fmt == "dia":  # a diagonal run is contiguous: worth its own loop from half a tile side
        return 2 * kept < np.minimum(h, w)
    hyper = kept < w
    if fmt in ("csc", "csc_i8"):
        # QUANT8 tiles run from their dequantised entries q·scale (float64, the same products
        # the int8 loop forms): whole CSR rows beat per-tile column scatters on a CPU.
        return np.ones(kept.shape[0], dtype=bool)
    if fmt == "bitmap":
        return hyper | (kept < BITMAP_MIN_DENSITY * h * w)
    return hyper


#: Rule codes of :func:`_route_tiles` (one per executor format, see :func:`to_residual`).
RULE_NEVER, RULE_ALWAYS, RULE_HYPER, RULE_BITMAP, RULE_DIA = 0, 1, 2, 3, 4
#: Formats with their own rule. ``dense`` (exact DENSE tiles, whose entries are the tile's own)
#: goes to the residual when hyper-sparse, like the entry formats: an all-DENSE plan of a
#: hyper-sparse matrix would otherwise pack a mostly-zero h×w block per tile (951k one-entry
#: tiles at T = 32: 7.8 GB).
_FORMAT_RULES = {"csc": RULE_ALWAYS, "csc_i8": RULE_ALWAYS, "bitmap": RULE_BITMAP, "dia": RULE_DIA,
                 "dense": RULE_HYPER}


def residual_rule(kernel) -> int:
    """Rule code of a kernel's tiles: a format with its own rule in :data:`_FORMAT_RULES`;
    other formats that are sets of entries follow :func:`to_residual` (hyper-sparse tiles);
    the rest never go to the residual."""
    rule = _FORMAT_RULES.get(kernel.exec_format)
    if rule is not None:
        return rule
    return RULE_HYPER if kernel.entry_format else RULE_NEVER


@njit_cached
def _route_tiles(idx, kptr, tptr, h, w, rule, code, off, src, lo, hi, keep):
    """Route the tiles ``idx`` of one group: residual tiles get ``src[t] = code`` (and, for
    approximated entries, ``lo/hi[t] = off + kptr[u], off + kptr[u+1]``); the positions
    ``u`` of the other tiles are written to ``keep``. Returns how many were kept.

    Rule (:func:`to_residual`, ``kept`` = entries of the tile's ``Â``, of the tile itself
    when they are read from the TileSet): ``RULE_ALWAYS``;
    ``RULE_HYPER`` ``kept < w``; ``RULE_BITMAP`` also ``kept < BITMAP_MIN_DENSITY·h·w``;
    ``RULE_DIA`` ``2·kept < min(h, w)``.
    """
    nk = 0
    own = code != SRC_MAIN and code != SRC_OTHER  # entries read from the TileSet
    for u in range(idx.shape[0]):
        t = idx[u]
        kept = tptr[t + 1] - tptr[t] if own else kptr[u + 1] - kptr[u]
        if rule == RULE_ALWAYS:
            res = True
        elif rule == RULE_DIA:
            res = 2 * kept < min(h[t], w[t])
        else:
            res = kept < w[t]
            if rule == RULE_BITMAP and not res:
                res = kept < BITMAP_MIN_DENSITY * h[t] * w[t]
        if res:
            src[t] = code
            if not own:
                lo[t] = off + kptr[u]
                hi[t] = off + kptr[u + 1]
        else:
            keep[nk] = u
            nk += 1
    return nk


def _entries_of(ts, fmt, idx, ap, keep):
    """Entries of the tiles ``idx[keep]`` of one group (``keep`` None: all of them)."""
    if ap is None:
        sub = idx if keep is None else idx[keep]
        ptr, pos = gather_entries(ts, sub)
        return Entries(tid=sub, ptr=ptr, r=ts.r[pos], c=ts.c[pos], v=ts.v[pos])
    quant = fmt in ("csc_i8", "dense_i8")
    if keep is None:
        return Entries(tid=idx, ptr=ap.ptr, r=ap.r, c=ap.c, v=ap.v,
                       q=ap.extra["q"] if quant else None, scale=ap.extra["scale"] if quant else None)
    ptr, r, c, v = ragged_take(ap.ptr, keep, ap.r, ap.c, ap.v)
    q = scale = None
    if quant:
        q = ragged_take(ap.ptr, keep, ap.extra["q"])[1]
        scale = ap.extra["scale"][keep]
    return Entries(tid=idx[keep], ptr=ptr, r=r, c=c, v=v, q=q, scale=scale)


def _approx_arrays(ap):
    return (np.ascontiguousarray(ap.r, dtype=np.int64), np.ascontiguousarray(ap.c, dtype=np.int64),
            np.ascontiguousarray(ap.v, dtype=np.float64))


def pack_plan(ts, groups, A=None, errors=None) -> PackedPlan:
    """Pack a plan for the executor.

    Parameters
    ----------
    ts : TileSet
    groups : list of (kernel, idx, approx)
        Tiles ``idx`` (ascending) use ``kernel``; ``approx`` is its TileApprox, or None for
        an exact entry kernel (``Â`` = the tile's own entries) and for a kernel of
        :data:`INLINE_RESIDUAL` (``Â`` computed while the residual is built).
    A : scipy CSR, optional
        The canonical matrix the TileSet was built from (``pa.A``). When every tile goes
        to the residual with its own entries, the residual *is* ``A``'s CSR: its arrays
        are reused instead of regathered (the common case of an unstructured matrix).
    errors : float64 (n_tiles,), optional
        Receives ``E_t`` of the tiles of :data:`INLINE_RESIDUAL` kernels (computed while
        their residual entries are counted; other slots are left as they are).

    Notes
    -----
    One numba pass per group routes its tiles (:func:`_route_tiles`). Residual tiles are
    read where their entries already are: the TileSet (exact entry kernels), the largest
    approximation in place (``SRC_MAIN``), the other approximations concatenated
    (``SRC_OTHER``). A group none of whose tiles stays packed builds no ``Entries``.
    """
    n = ts.n_tiles
    src = np.zeros(n, dtype=np.int8)
    lo = np.empty(n, dtype=np.int64)  # read only where src is SRC_MAIN / SRC_OTHER
    hi = np.empty(n, dtype=np.int64)
    z = np.zeros(0, dtype=np.int64)
    # the approximation read in place: the largest one whose tiles may go to the residual
    routed = [(kernel, idx, ap) for kernel, idx, ap in groups
              if kernel.exec_format != "none" and idx.shape[0]]
    cands = [ap for kernel, _, ap in routed if ap is not None and residual_rule(kernel) != RULE_NEVER]
    main = max(cands, key=lambda a: a.v.shape[0]) if cands else None
    other, o_off = [], 0
    n_own = 0
    per_fmt: dict = {f: [] for f in FORMATS}
    nm_meta: list = []
    lr_parts: list = []
    for kernel, idx, ap in routed:
        fmt = kernel.exec_format
        if fmt == "lowrank":
            ex = ap.extra
            lr_parts.append((idx, ex["rank"], ex["us_ptr"], ex["us"], ex["v_ptr"], ex["v"]))
            continue
        rule = residual_rule(kernel)
        if rule == RULE_NEVER:
            keep, nk = None, idx.shape[0]
        else:
            if ap is None:
                code = INLINE_RESIDUAL.get(kernel.name, SRC_OWN)
                if code != SRC_OWN and rule != RULE_ALWAYS:  # pragma: no cover - registry misuse
                    raise ValueError(f"{kernel.name}: inline residual kernels must route every tile there")
            else:
                code = SRC_MAIN if ap is main else SRC_OTHER
            keep = np.empty(idx.shape[0], dtype=np.int64)
            nk = int(_route_tiles(idx, z if ap is None else ap.ptr, ts.ptr, ts.h, ts.w, np.int64(rule),
                                  np.int64(code), np.int64(o_off if code == SRC_OTHER else 0),
                                  src, lo, hi, keep))
            if code == SRC_OWN:
                n_own += idx.shape[0] - nk
            elif code == SRC_OTHER and nk < idx.shape[0]:
                other.append(_approx_arrays(ap))
                o_off += ap.v.shape[0]
            keep = None if nk == idx.shape[0] else keep[:nk]
        if nk == 0:
            continue
        per_fmt[fmt].append(_entries_of(ts, fmt, idx, ap, keep))
        if fmt == "nm":
            nm_meta.append((np.full(nk, kernel.n, np.int64), np.full(nk, kernel.m, np.int64)))

    if (A is not None and n and n_own == n and A.nnz == ts.nnz
            and tuple(A.shape) == tuple(ts.shape)):
        residual = residual_layout(ts, np.asarray(A.indptr, dtype=np.int64),
                                   A.indices.astype(residual_col_dtype(ts.shape[1])),
                                   np.asarray(A.data, dtype=np.float64))
    else:
        o = tuple(np.concatenate([x[i] for x in other]) for i in range(3)) if other else None
        residual = build_residual(ts, src, lo, hi, None if main is None else _approx_arrays(main), o,
                                  errors)
    packs = {}
    for fmt in FORMATS:
        parts = per_fmt[fmt]
        if fmt == "lowrank":
            if lr_parts:
                tid = np.concatenate([p[0] for p in lr_parts])
                rank = np.concatenate([p[1] for p in lr_parts])
                us_ptr = _starts(np.concatenate([np.diff(p[2]) for p in lr_parts]))
                v_ptr = _starts(np.concatenate([np.diff(p[4]) for p in lr_parts]))
                us = np.concatenate([p[3] for p in lr_parts])
                vv = np.concatenate([p[5] for p in lr_parts])
                order = np.argsort(tid, kind="stable")
                us_ptr, us = ragged_take(us_ptr, order, us)
                v_ptr, vv = ragged_take(v_ptr, order, vv)
                pk = pack_lowrank(ts, tid[order], rank[order], us_ptr, us, v_ptr, vv)
                pk["rbp"] = _rbp(ts.bi[tid[order]], ts.n_brows)
            else:
                pk = None
        elif parts:
            e = _merge_entries(parts)
            if fmt == "nm":
                tid = np.concatenate([p.tid for p in parts])
                order = np.argsort(tid, kind="stable")
                nn = np.concatenate([a for a, _ in nm_meta])[order]
                mm = np.concatenate([b for _, b in nm_meta])[order]
                pk = pack_nm(ts, e, nn, mm)
            else:
                pk = _ENTRY_PACKERS[fmt](ts, e)
            pk["rbp"] = _rbp(ts.bi[e.tid], ts.n_brows)
        else:
            pk = None
        if pk is None:
            pk = empty_pack(fmt)
            pk["rbp"] = np.zeros(ts.n_brows + 1, dtype=np.int64)
        packs[fmt] = pk
    return PackedPlan(shape=tuple(ts.shape), tile=int(ts.tile), n_brows=int(ts.n_brows),
                      residual=residual, packs=packs, block_work=_block_work(ts, residual, packs))


def _block_work(ts, residual, packs):
    """Cumulative bytes streamed per row block: 12 B per residual entry, and each format's
    bytes shared equally by its tiles (tiles of one format have similar sizes)."""
    T = int(ts.tile)
    rows = np.minimum(np.arange(ts.n_brows + 1, dtype=np.int64) * T, ts.shape[0])
    entries = residual["ptr"] if residual["mode"][0] == RES_COO else residual["ptr"][rows]
    work = entries.astype(np.float64) * 12.0 + rows * 8.0
    for pk in packs.values():
        n = pk["meta"].shape[0]
        if n:
            per_tile = sum(a.nbytes for a in pk.values()) / n
            work = work + pk["rbp"].astype(np.float64) * per_tile
    return work
