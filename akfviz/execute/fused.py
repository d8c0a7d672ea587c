"""The fused CPU executor: every tile in its kernel's format, one numba pass (akf-spec §3, §9).

Packing (:func:`pack_plan`)
---------------------------
Tiles are grouped by *executor format* (``Kernel.exec_format``) and packed
structure-of-arrays. Every format keeps its tiles in TileSet order (row-major by
``(bi, bj)``) with a per-row-block pointer ``rbp`` (``n_brows + 1``) and a tile table
``meta`` (int64, ``(n, 7)``: global first row, global first column, ``h``, ``w`` and three
format-specific offsets). Formats:

========== ===================================================================
residual   compressed rows (CSR): uint32 columns (unsigned: no wraparound check), float64
dense      ``h·w`` float64 values row-major                       (DENSE)
dense_i8   ``h·w`` int8 codes + per-tile scale                    (QUANT8D)
csc        ``w+1`` absolute column pointers, uint8 rows, float64  (CSC, PRUNE)
csc_i8     as csc with int8 codes + per-tile scale                (QUANT8)
bitmap     ``h·ceil(w/64)`` uint64 words (row-major), values in row order  (BITMAP)
dia        per diagonal: offset and ``h`` float64 slots           (DIA)
block      per 4×4 block: block row/col and 16 float64 values     (BLOCK)
nm         ``h·ceil(w/M)·N`` slots of (uint8 in-group index, float64 value)  (NM)
lowrank    ``U·diag s`` (h×k) and ``V`` (w×k) float64             (LOWRANK)
========== ===================================================================

Hyper-sparse tiles (HYB / Cocktail idea): a tile whose kernel's ``Â`` is a set of entries
(CSC, BITMAP, DIA, BLOCK exactly; PRUNE, NM, QUANT8 after their approximation) and that
keeps fewer entries than it has columns (``kept < w``, i.e. density below ``1/T`` for a
full tile: less than one entry per column, so a per-column or per-diagonal loop would
mostly visit nothing) is not packed in its format: its entries are merged into the
``residual`` compressed-row part of its row block, paying no per-tile overhead.

Execution
---------
:func:`_fused_matvec` / :func:`_fused_matmat` run ``prange`` over row blocks. A row block
owns its output rows: it first writes the residual rows (this also zero-initialises
them), then adds the contribution of each of its tiles, format by format. No two threads
write the same output row, so there are no races and the result is deterministic
(independent of the thread count).
"""
from __future__ import annotations

import types
from dataclasses import dataclass

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from .._jit import JIT_OPTIONS, njit_cached, njit_parallel

#: Per-format tile kernels are inlined into the drivers (a call per tile costs more than
#: a small tile's work).
njit_inline = numba.njit(**JIT_OPTIONS, inline="always")

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


def pack_dense(ts, e: Entries, int8: bool):
    h, w = ts.h[e.tid], ts.w[e.tid]
    off = _starts(h * w)
    seg = _seg(e.ptr)
    pos = off[seg] + e.r * w[seg] + e.c
    if int8:
        val = np.zeros(off[-1], dtype=np.int8)
        val[pos] = e.q
        return dict(meta=_meta(ts, e.tid, off[:-1]), val=val, scale=e.scale.astype(np.float64))
    val = np.zeros(off[-1], dtype=np.float64)
    val[pos] = e.v
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


def pack_dia(ts, e: Entries):
    T = int(ts.tile)
    h = ts.h[e.tid]
    seg = _seg(e.ptr)
    ekey = seg * (2 * T) + (e.c - e.r + T)
    dkey = np.unique(ekey)
    dseg = dkey // (2 * T)
    doff = dkey % (2 * T) - T
    dptr = _starts(np.bincount(dseg, minlength=e.tid.shape[0]))
    dh = h[dseg]
    vstart = _starts(dh)
    didx = np.searchsorted(dkey, ekey)
    val = np.zeros(vstart[-1], dtype=np.float64)
    val[vstart[didx] + e.r] = e.v
    return dict(meta=_meta(ts, e.tid, dptr[:-1], dptr[1:]), doff=doff.astype(np.int64),
                dstart=vstart[:-1].astype(np.int64), val=val)


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


def pack_nm(ts, e: Entries, n_of_tile, m_of_tile):
    h, w = ts.h[e.tid], ts.w[e.tid]
    G = -(-w // m_of_tile)
    off = _starts(h * G * n_of_tile)
    seg = _seg(e.ptr)
    M = m_of_tile[seg]
    g = e.c // M
    key = (seg * 256 + e.r) * 256 + g
    if key.size:
        start = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
        first = np.repeat(start, np.diff(np.r_[start, key.size]))
        rank = np.arange(key.size) - first
    else:
        rank = key
    pos = off[seg] + (e.r * G[seg] + g) * n_of_tile[seg] + rank
    idx = np.zeros(off[-1], dtype=np.uint8)
    val = np.zeros(off[-1], dtype=np.float64)
    idx[pos] = (e.c % M).astype(np.uint8)
    val[pos] = e.v
    return dict(meta=_meta(ts, e.tid, off[:-1], n_of_tile, m_of_tile), idx=idx, val=val)


def pack_lowrank(ts, tid, rank, us_ptr, us, v_ptr, v):
    return dict(meta=_meta(ts, tid, us_ptr[:-1], v_ptr[:-1], rank), us=us.astype(np.float64),
                v=v.astype(np.float64))


@njit_parallel
def _residual_counts(n_brows, T, rb_ptr, bi, src, lo, hi, ts_r, ap_r, counts):
    for b in numba.prange(n_brows):
        for t in range(rb_ptr[b], rb_ptr[b + 1]):
            s = src[t]
            if s == 0:
                continue
            r0 = bi[t] * T
            for k in range(lo[t], hi[t]):
                if s == 1:
                    counts[r0 + ts_r[k] + 1] += 1
                else:
                    counts[r0 + ap_r[k] + 1] += 1


@njit_parallel
def _residual_fill(n_brows, T, rb_ptr, bi, bj, src, lo, hi, ts_r, ts_c, ts_v, ap_r, ap_c, ap_v,
                   res_ptr, res_col, res_val, n_rows):
    for b in numba.prange(n_brows):
        r0b = b * T
        r1b = min(r0b + T, n_rows)
        fill = res_ptr[r0b:r1b].copy()
        for t in range(rb_ptr[b], rb_ptr[b + 1]):
            s = src[t]
            if s == 0:
                continue
            c0 = bj[t] * T
            for k in range(lo[t], hi[t]):
                if s == 1:
                    lr, col, val = ts_r[k], ts_c[k], ts_v[k]
                else:
                    lr, col, val = ap_r[k], ap_c[k], ap_v[k]
                p = fill[lr]
                res_col[p] = c0 + col
                res_val[p] = val
                fill[lr] = p + 1


def build_residual(ts, src, lo, hi, ap_r, ap_c, ap_v):
    """Compressed-row residual of the tiles with ``src[t] != 0``.

    ``src[t] == 1``: the tile's own entries ``ts.*[lo[t]:hi[t]]``; ``src[t] == 2``: entries
    ``ap_*[lo[t]:hi[t]]`` of an approximation. Within a row, entries are ordered by
    column (tiles in ``bj`` order, entries by column inside a tile).
    """
    n_rows = int(ts.shape[0])
    T = np.int64(ts.tile)
    counts = np.zeros(n_rows + 1, dtype=np.int64)
    _residual_counts(ts.n_brows, T, ts.rb_ptr, ts.bi, src, lo, hi, ts.r, ap_r, counts)
    res_ptr = np.cumsum(counts).astype(np.int64)
    m = int(res_ptr[-1])
    res_col = np.empty(m, dtype=np.uint32)
    res_val = np.empty(m, dtype=np.float64)
    _residual_fill(ts.n_brows, T, ts.rb_ptr, ts.bi, ts.bj, src, lo, hi, ts.r, ts.c, ts.v,
                   ap_r, ap_c, ap_v, res_ptr, res_col, res_val, n_rows)
    return dict(ptr=res_ptr, col=res_col, val=res_val)


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
        "dia": dict(meta=m, doff=z64, dstart=z64, val=zf),
        "block": dict(meta=m, br=z64, bc=z64, val=zf),
        "nm": dict(meta=m, idx=np.zeros(0, np.uint8), val=zf),
        "lowrank": dict(meta=m, us=zf, v=zf),
    }[fmt]


# =========================================================================== matvec
@njit_inline
def _mv_dense(meta, t, val, x, y):
    r0, c0, h, w, off = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4]
    w4 = w - w % 4
    for i in range(h):
        base = off + i * w
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for j in range(0, w4, 4):  # four partial sums: lets LLVM vectorise
            s0 += val[base + j] * x[c0 + j]
            s1 += val[base + j + 1] * x[c0 + j + 1]
            s2 += val[base + j + 2] * x[c0 + j + 2]
            s3 += val[base + j + 3] * x[c0 + j + 3]
        for j in range(w4, w):
            s0 += val[base + j] * x[c0 + j]
        y[r0 + i] += (s0 + s1) + (s2 + s3)


@njit_inline
def _mv_dense_i8(meta, t, val, scale, x, y):
    r0, c0, h, w, off = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4]
    for i in range(h):
        s = 0.0
        base = off + i * w
        for j in range(w):
            s += (val[base + j] * scale) * x[c0 + j]
        y[r0 + i] += s


@njit_inline
def _mv_csc(meta, t, colptr, row, val, scale, x, y):
    r0, c0, w, cpo = meta[t, 0], meta[t, 1], meta[t, 3], meta[t, 4]
    for j in range(w):
        xj = x[c0 + j]
        for k in range(colptr[cpo + j], colptr[cpo + j + 1]):
            y[r0 + row[k]] += (val[k] * scale) * xj


@njit_inline
def _mv_bitmap(meta, t, words, val, x, y):
    r0, c0, h, woff, k, nw = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 4], meta[t, 5], meta[t, 6]
    for i in range(h):
        s = 0.0
        for q in range(nw):
            bits = words[woff + i * nw + q]
            base = c0 + q * WORD
            while bits != 0:
                tz = np.int64(trailing_zeros(bits))
                s += val[k] * x[base + tz]
                k += 1
                bits &= bits - np.uint64(1)
        y[r0 + i] += s


@njit_inline
def _mv_dia(meta, t, doff, dstart, val, x, y):
    r0, c0, h, w, d0, d1 = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5]
    for d in range(d0, d1):
        o = doff[d]
        s = dstart[d]
        for i in range(max(0, -o), min(h, w - o)):
            y[r0 + i] += val[s + i] * x[c0 + i + o]


@njit_inline
def _mv_block(meta, t, br, bc, val, x, y):
    r0, c0, h, w, b0, b1 = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5]
    for q in range(b0, b1):
        rr = br[q] * 4
        cc = bc[q] * 4
        base = q * 16
        nr = min(4, h - rr)
        nc = min(4, w - cc)
        if nc == 4:
            x0 = x[c0 + cc]
            x1 = x[c0 + cc + 1]
            x2 = x[c0 + cc + 2]
            x3 = x[c0 + cc + 3]
            for i in range(nr):
                p = base + i * 4
                y[r0 + rr + i] += val[p] * x0 + val[p + 1] * x1 + val[p + 2] * x2 + val[p + 3] * x3
        else:
            for i in range(nr):
                s = 0.0
                for j in range(nc):
                    s += val[base + i * 4 + j] * x[c0 + cc + j]
                y[r0 + rr + i] += s


@njit_inline
def _mv_nm(meta, t, idx, val, x, y):
    r0, c0, h, w, off, N, M = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5], meta[t, 6]
    G = (w + M - 1) // M
    p = off
    for i in range(h):
        s = 0.0
        for g in range(G):
            cg = c0 + g * M
            for _ in range(N):
                s += val[p] * x[cg + idx[p]]
                p += 1
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
def _fused_matvec(x, y, T, n_rows, n_brows,
                  res_ptr, res_col, res_val,
                  dn_rbp, dn_meta, dn_val,
                  d8_rbp, d8_meta, d8_val, d8_scale,
                  cs_rbp, cs_meta, cs_colptr, cs_row, cs_val,
                  c8_rbp, c8_meta, c8_colptr, c8_row, c8_val, c8_scale,
                  bm_rbp, bm_meta, bm_words, bm_val,
                  dg_rbp, dg_meta, dg_doff, dg_dstart, dg_val,
                  bk_rbp, bk_meta, bk_br, bk_bc, bk_val,
                  nm_rbp, nm_meta, nm_idx, nm_val,
                  lr_rbp, lr_meta, lr_us, lr_v):
    """y = Â x: ``prange`` over row blocks; each block owns rows ``b·T … b·T+h−1``."""
    for b in numba.prange(n_brows):
        r0 = b * T
        r1 = min(r0 + T, n_rows)
        for i in range(r0, r1):
            s = 0.0
            for k in range(res_ptr[i], res_ptr[i + 1]):
                s += res_val[k] * x[res_col[k]]
            y[i] = s
        for t in range(dn_rbp[b], dn_rbp[b + 1]):
            _mv_dense(dn_meta, t, dn_val, x, y)
        for t in range(d8_rbp[b], d8_rbp[b + 1]):
            _mv_dense_i8(d8_meta, t, d8_val, d8_scale[t], x, y)
        for t in range(cs_rbp[b], cs_rbp[b + 1]):
            _mv_csc(cs_meta, t, cs_colptr, cs_row, cs_val, 1.0, x, y)
        for t in range(c8_rbp[b], c8_rbp[b + 1]):
            _mv_csc(c8_meta, t, c8_colptr, c8_row, c8_val, c8_scale[t], x, y)
        for t in range(bm_rbp[b], bm_rbp[b + 1]):
            _mv_bitmap(bm_meta, t, bm_words, bm_val, x, y)
        for t in range(dg_rbp[b], dg_rbp[b + 1]):
            _mv_dia(dg_meta, t, dg_doff, dg_dstart, dg_val, x, y)
        for t in range(bk_rbp[b], bk_rbp[b + 1]):
            _mv_block(bk_meta, t, bk_br, bk_bc, bk_val, x, y)
        for t in range(nm_rbp[b], nm_rbp[b + 1]):
            _mv_nm(nm_meta, t, nm_idx, nm_val, x, y)
        for t in range(lr_rbp[b], lr_rbp[b + 1]):
            _mv_lowrank(lr_meta, t, lr_us, lr_v, x, y)


# =========================================================================== matmat
@njit_inline
def _mm_dense(meta, t, val, scale, X, Y):
    r0, c0, h, w, off = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4]
    k = X.shape[1]
    for i in range(h):
        base = off + i * w
        for j in range(w):
            a = val[base + j] * scale
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
def _mm_dia(meta, t, doff, dstart, val, X, Y):
    r0, c0, h, w, d0, d1 = meta[t, 0], meta[t, 1], meta[t, 2], meta[t, 3], meta[t, 4], meta[t, 5]
    kk = X.shape[1]
    for d in range(d0, d1):
        o = doff[d]
        s = dstart[d]
        for i in range(max(0, -o), min(h, w - o)):
            a = val[s + i]
            for q in range(kk):
                Y[r0 + i, q] += a * X[c0 + i + o, q]


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
                  res_ptr, res_col, res_val,
                  dn_rbp, dn_meta, dn_val,
                  d8_rbp, d8_meta, d8_val, d8_scale,
                  cs_rbp, cs_meta, cs_colptr, cs_row, cs_val,
                  c8_rbp, c8_meta, c8_colptr, c8_row, c8_val, c8_scale,
                  bm_rbp, bm_meta, bm_words, bm_val,
                  dg_rbp, dg_meta, dg_doff, dg_dstart, dg_val,
                  bk_rbp, bk_meta, bk_br, bk_bc, bk_val,
                  nm_rbp, nm_meta, nm_idx, nm_val,
                  lr_rbp, lr_meta, lr_us, lr_v):
    """Y = Â X for X of shape (n_cols, k); same structure as :func:`_fused_matvec`."""
    kk = X.shape[1]
    for b in numba.prange(n_brows):
        r0 = b * T
        r1 = min(r0 + T, n_rows)
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
            _mm_dia(dg_meta, t, dg_doff, dg_dstart, dg_val, X, Y)
        for t in range(bk_rbp[b], bk_rbp[b + 1]):
            _mm_block(bk_meta, t, bk_br, bk_bc, bk_val, X, Y)
        for t in range(nm_rbp[b], nm_rbp[b + 1]):
            _mm_nm(nm_meta, t, nm_idx, nm_val, X, Y)
        for t in range(lr_rbp[b], lr_rbp[b + 1]):
            _mm_lowrank(lr_meta, t, lr_us, lr_v, X, Y)


# serial twins (``prange`` runs as ``range``): small plans skip the thread launch
def _serial_twin(dispatcher, name):
    """The same Python function compiled without ``parallel`` (own name → own cache entry)."""
    f = dispatcher.py_func
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__qualname__ = name
    g.__doc__ = f.__doc__
    return njit_cached(g)


_fused_matvec_serial = _serial_twin(_fused_matvec, "_fused_matvec_serial")
_fused_matmat_serial = _serial_twin(_fused_matmat, "_fused_matmat_serial")

#: Plans that stream fewer bytes than this run serially: waking the worker threads costs
#: more than the work (and much more when the cores are shared with other processes).
PARALLEL_MIN_BYTES = 4 << 20


# =========================================================================== driver
@dataclass(eq=False)
class PackedPlan:
    """Every tile of a plan packed for the fused executor (picklable: plain arrays)."""

    shape: tuple
    tile: int
    n_brows: int
    residual: dict
    packs: dict  # fmt -> dict(rbp=..., meta=..., arrays...)

    def _args(self):
        p = self.packs
        r = self.residual
        return (np.int64(self.tile), np.int64(self.shape[0]), np.int64(self.n_brows),
                r["ptr"], r["col"], r["val"],
                p["dense"]["rbp"], p["dense"]["meta"], p["dense"]["val"],
                p["dense_i8"]["rbp"], p["dense_i8"]["meta"], p["dense_i8"]["val"], p["dense_i8"]["scale"],
                p["csc"]["rbp"], p["csc"]["meta"], p["csc"]["colptr"], p["csc"]["row"], p["csc"]["val"],
                p["csc_i8"]["rbp"], p["csc_i8"]["meta"], p["csc_i8"]["colptr"], p["csc_i8"]["row"],
                p["csc_i8"]["val"], p["csc_i8"]["scale"],
                p["bitmap"]["rbp"], p["bitmap"]["meta"], p["bitmap"]["words"], p["bitmap"]["val"],
                p["dia"]["rbp"], p["dia"]["meta"], p["dia"]["doff"], p["dia"]["dstart"], p["dia"]["val"],
                p["block"]["rbp"], p["block"]["meta"], p["block"]["br"], p["block"]["bc"], p["block"]["val"],
                p["nm"]["rbp"], p["nm"]["meta"], p["nm"]["idx"], p["nm"]["val"],
                p["lowrank"]["rbp"], p["lowrank"]["meta"], p["lowrank"]["us"], p["lowrank"]["v"])

    def _parallel(self, k=1) -> bool:
        return (numba.get_num_threads() > 1 and self.n_brows > 1
                and k * self.bytes_moved() >= PARALLEL_MIN_BYTES)

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``y = Â x`` (x: float64, contiguous, length n_cols)."""
        y = np.empty(self.shape[0], dtype=np.float64)
        fn = _fused_matvec if self._parallel() else _fused_matvec_serial
        fn(x, y, *self._args())
        return y

    def matmat(self, X: np.ndarray) -> np.ndarray:
        """``Y = Â X`` (X: float64, C-contiguous, shape (n_cols, k))."""
        Y = np.empty((self.shape[0], X.shape[1]), dtype=np.float64)
        fn = _fused_matmat if self._parallel(X.shape[1]) else _fused_matmat_serial
        fn(X, Y, *self._args())
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
def ragged_take(ptr, order, *arrays):
    """Reorder the segments of ragged arrays (``ptr``) into ``order``; returns new ptr + arrays."""
    lens = np.diff(ptr)[order]
    new_ptr = _starts(lens)
    pos = np.arange(new_ptr[-1], dtype=np.int64) + np.repeat(ptr[:-1][order] - new_ptr[:-1], lens)
    return (new_ptr, *[a[pos] for a in arrays])


def _merge_entries(parts):
    """Concatenate Entries of several kernels and order them by tile index."""
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


def pack_plan(ts, groups) -> PackedPlan:
    """Pack a plan for the executor.

    Parameters
    ----------
    ts : TileSet
    groups : list of (kernel, idx, approx)
        Tiles ``idx`` (ascending) use ``kernel``; ``approx`` is its TileApprox, or None for
        an exact entry kernel (``Â`` = the tile's own entries).
    """
    n = ts.n_tiles
    src = np.zeros(n, dtype=np.int64)
    lo = np.zeros(n, dtype=np.int64)
    hi = np.zeros(n, dtype=np.int64)
    ap_r, ap_c, ap_v, ap_off = [], [], [], 0
    per_fmt: dict = {f: [] for f in FORMATS}
    nm_meta: list = []
    lr_parts: list = []
    for kernel, idx, ap in groups:
        fmt = kernel.exec_format
        if fmt == "none" or idx.shape[0] == 0:
            continue
        if fmt == "lowrank":
            ex = ap.extra
            lr_parts.append((idx, ex["rank"], ex["us_ptr"], ex["us"], ex["v_ptr"], ex["v"]))
            continue
        if ap is None:
            kept = ts.ptr[idx + 1] - ts.ptr[idx]
        else:
            kept = np.diff(ap.ptr)
        hyper = kept < ts.w[idx] if kernel.entry_format else np.zeros(idx.shape[0], bool)
        hid = np.flatnonzero(hyper)
        if hid.size:
            t = idx[hid]
            if ap is None:
                src[t] = 1
                lo[t], hi[t] = ts.ptr[t], ts.ptr[t + 1]
            else:
                src[t] = 2
                lo[t], hi[t] = ap_off + ap.ptr[hid], ap_off + ap.ptr[hid + 1]
        if ap is not None:
            ap_r.append(ap.r)
            ap_c.append(ap.c)
            ap_v.append(ap.v)
            ap_off += ap.v.shape[0]
        keep = np.flatnonzero(~hyper)
        if keep.size == 0:
            continue
        if ap is None:
            from ..kernels.base import gather_entries
            sub = idx[keep]
            ptr, pos = gather_entries(ts, sub)
            e = Entries(tid=sub, ptr=ptr, r=ts.r[pos], c=ts.c[pos], v=ts.v[pos])
        else:
            ptr, r, c, v = ragged_take(ap.ptr, keep, ap.r, ap.c, ap.v)
            q = scale = None
            if fmt in ("csc_i8", "dense_i8"):
                q = ragged_take(ap.ptr, keep, ap.extra["q"])[1]
                scale = ap.extra["scale"][keep]
            e = Entries(tid=idx[keep], ptr=ptr, r=r, c=c, v=v, q=q, scale=scale)
        per_fmt[fmt].append(e)
        if fmt == "nm":
            nm_meta.append((np.full(keep.size, kernel.n, np.int64), np.full(keep.size, kernel.m, np.int64)))

    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
    residual = build_residual(ts, src, lo, hi, cat(ap_r, np.int64), cat(ap_c, np.int64),
                              cat(ap_v, np.float64))
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
                      residual=residual, packs=packs)
