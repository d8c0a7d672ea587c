"""The fused executor's numba kernels: per-format tile products and the row-block drivers (akf-spec §9).

:func:`_residual_matvec` writes the residual rows (this also zero-initialises ``y``),
then :func:`_tiles_matvec` adds every packed tile's contribution, format by format; both
run ``prange`` over chunks of consecutive row blocks balanced by streamed bytes.
:func:`_fused_matmat` runs ``prange`` over row blocks, residual first. A row block owns
its output rows: no two threads write the same output row, so there are no races and the
result is deterministic (independent of the thread count and of the chunking). Each driver
has a one-thread twin (``*_serial``); :mod:`akfviz.execute.threads` decides which runs.
The arrays they read are laid out in :mod:`akfviz.execute.packing`.
"""
from __future__ import annotations

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from .._jit import njit_inline, njit_parallel, serial_twin
from .packing import DIA_OFFSET_BIAS, RES_COO, RES_CSR_LONG, WORD

# Per-format tile kernels are ``njit_inline``: inlined into the drivers (a call per tile
# costs more than a small tile's work).


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
    format compiles tighter than interleaved ones. CSC, PRUNE and QUANT8 tiles have no loop
    here: they run from the residual (:data:`akfviz.execute.packing.RESIDUAL_ONLY_FORMATS`)."""
    for ch in numba.prange(chunks.shape[0] - 1):
        acc = np.empty(T, dtype=np.float64)  # per-thread row accumulator of a dense tile
        b0 = chunks[ch]
        b1 = chunks[ch + 1]
        for t in range(dn_rbp[b0], dn_rbp[b1]):
            _mv_dense(dn_meta, t, dn_val, 1.0, x, y, acc)
        for t in range(d8_rbp[b0], d8_rbp[b1]):
            _mv_dense(d8_meta, t, d8_val, d8_scale[t], x, y, acc)
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
