"""LOWRANK: rank-r truncated SVD of the tile (akf-spec §3).

``t ≈ (U·diag s)[:, :r] · V[:, :r]ᵀ`` (Eckart–Young: the best rank-r approximation in
Frobenius norm, ``E = Σ_{i>r} σ_i²`` up to rounding). The payload stores ``U·diag(s)``
(``h×r``) and ``V`` (``w×r``): ``(h+w)·r`` fp32 values, plus a routing entry per column
(dense-format: ``V`` has a row for every column). Per event ``j``: ``r`` MACs
(``z += V[j,:]·x_j``); once at the end, ``r·h`` MACs (``y = (U·diag s)·z``). Exact (up to
rounding) when the tile's rank is at most ``r``; the stored rank is ``min(r, h, w)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import njit_cached, njit_inline
from .base import (ROUTE_BYTES, VALUE_BYTES, Kernel, TileApprox, all_columns, as_index, as_tile,
                   gather_entries, make_tilework)

#: Cells per SVD batch (bounds the memory of the stacked tiles).
SVD_BATCH_CELLS = 1 << 21


@dataclass(frozen=True, eq=False)
class LowRankPayload:
    """``us`` = ``U·diag(s)`` (h, k) and ``v`` (w, k), ``k = min(r, h, w)``."""

    us: np.ndarray
    v: np.ndarray


#: Lists up to this long are sorted by insertion in :func:`_sort_prefix` (a tile's few distinct
#: columns, a hyper-sparse tile's squares): numba's ``sort`` on a slice costs ≈ 0.2 µs a call.
INSERTION_MAX = 16


@njit_inline
def _sort_prefix(a, n):
    """Sort ``a[:n]`` ascending in place."""
    if n > INSERTION_MAX:
        a[:n].sort()
        return
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit_cached
def _compact_coords(ptr, r, c, wmax):
    """Entries of each tile renumbered onto its nonempty rows × nonempty columns.

    Tile ``u`` holds entries ``ptr[u]:ptr[u+1]`` sorted by (row, column). Returns
    ``(ri, ci, nr, nc)``: each entry's rank among its tile's distinct rows / columns
    (columns in ascending order) and each tile's number of distinct rows / columns.
    Dropping empty rows and columns keeps every nonzero singular value (akf-spec §3).
    """
    n = ptr.shape[0] - 1
    m = r.shape[0]
    ri = np.empty(m, dtype=np.int64)
    ci = np.empty(m, dtype=np.int64)
    nr = np.zeros(n, dtype=np.int64)
    nc = np.zeros(n, dtype=np.int64)
    slot = np.full(wmax, -1, dtype=np.int64)
    cols = np.empty(wmax, dtype=np.int64)
    for u in range(n):
        s, e = ptr[u], ptr[u + 1]
        d = 0
        for k in range(s, e):
            j = c[k]
            if slot[j] < 0:
                slot[j] = 0
                cols[d] = j
                d += 1
        _sort_prefix(cols, d)
        for q in range(d):
            slot[cols[q]] = q
        rows = 0
        prev = -1
        for k in range(s, e):
            if r[k] != prev:
                prev = r[k]
                rows += 1
            ri[k] = rows - 1
            ci[k] = slot[c[k]]
        for q in range(d):
            slot[cols[q]] = -1
        nr[u] = rows
        nc[u] = d
    return ri, ci, nr, nc


@njit_inline
def _two_line_tail(ptr, ri, ci, v, u, rows, k, a, b):
    """``σ₂²`` of tile ``u`` whose compact matrix has exactly two rows (``rows``) or two columns,
    ``k`` long (``a``, ``b``: zeroed work arrays, zeroed again on return): its rank-1 error.

    With the two lines ``a``, ``b``: ``σ₁² + σ₂² = ‖a‖² + ‖b‖²`` and ``σ₁²·σ₂² = det(G) =
    Σ_{i<j} (a_i b_j − a_j b_i)²`` (the Gram determinant by Cauchy–Binet, a sum of squares: no
    cancellation between terms). ``σ₁² = m + sqrt(d² + (a·b)²)`` with ``m = (‖a‖² + ‖b‖²)/2``,
    ``d = (‖a‖² − ‖b‖²)/2`` adds positive terms only, and ``σ₂² = det(G) / σ₁²`` keeps its relative
    accuracy when ``σ₂ ≪ σ₁`` (where ``m − sqrt(…)`` would cancel). Computed on the lines scaled by
    a power of two near ``1 / max|v|`` (exact), so ``det`` neither overflows nor underflows."""
    # the lines are scaled by a power of two near 1 / max|v| (exact): ``det`` sums squares of
    # products of four entries, which overflow from |v| ≈ 1e77 (NaN from inf/inf) and underflow
    # to 0 below ≈ 1e-77, well inside the range of matrices analyse() accepts (probe 43)
    big = 0.0
    for p in range(ptr[u], ptr[u + 1]):
        big = max(big, abs(v[p]))
    if big == 0.0:
        return 0.0
    e2 = np.floor(np.log2(big))
    h2 = np.floor(0.5 * e2)
    d1 = 2.0 ** (-h2)  # 2^−e2 in two factors: 2^1074 (subnormal max|v|) is not a float64
    d2 = 2.0 ** (h2 - e2)
    for p in range(ptr[u], ptr[u + 1]):
        line, pos = (ri[p], ci[p]) if rows else (ci[p], ri[p])
        if line == 0:
            a[pos] = v[p] * d1 * d2
        else:
            b[pos] = v[p] * d1 * d2
    aa = 0.0
    bb = 0.0
    ab = 0.0
    for i in range(k):
        aa += a[i] * a[i]
        bb += b[i] * b[i]
        ab += a[i] * b[i]
    det = 0.0
    for i in range(k):
        for j in range(i + 1, k):
            m2 = a[i] * b[j] - a[j] * b[i]
            det += m2 * m2
    half = 0.5 * (aa - bb)
    s1 = 0.5 * (aa + bb) + np.sqrt(half * half + ab * ab)
    for i in range(k):
        a[i] = 0.0
        b[i] = 0.0
    if not s1 > 0.0:
        return 0.0
    return det / s1 / (d1 * d1) / (d2 * d2)  # scaled back (σ₂² ≤ ‖A‖_F², in range)


@njit_cached
def _closed_form_errors(ptr, ri, ci, v, nr, nc, ranks, err, solved):
    """``E_r = Σ_{i>r} σ_i²`` without an SVD for the tiles whose singular values have a closed form;
    ``solved[u]`` tells which (their row ``err[u]`` is written; the others are left alone).

    * One entry in every nonempty row and column (``nnz = nr = nc``: a scaled permutation, e.g. a
      tile crossed by one diagonal, or a hyper-sparse tile whose entries share no row or column):
      the singular values are the ``|v|``. ``E_r`` sums the ``k − r`` smallest squares, smallest first.
    * Exactly two nonempty rows or columns: rank ≤ 2, so ``E_r = 0`` for ``r ≥ 2`` and ``E_1 = σ₂²``
      (:func:`_two_line_tail`).

    Hyper-sparse tiles are nearly all of these kinds, and stencil and banded tiles off the main
    diagonal are scaled permutations; an SVD call per tile costs a thousand times more."""
    n = ptr.shape[0] - 1
    kmax = 1
    for u in range(n):
        kmax = max(kmax, nr[u], nc[u])
    a = np.zeros(kmax)
    b = np.zeros(kmax)
    sq = np.empty(kmax)
    for u in range(n):
        k = ptr[u + 1] - ptr[u]
        if k == nr[u] and k == nc[u]:
            for p in range(k):
                x = v[ptr[u] + p]
                sq[p] = x * x
            _sort_prefix(sq, k)              # ascending
            for q in range(ranks.shape[0]):
                tail = 0.0
                for i in range(k - ranks[q]):  # the k − r smallest
                    tail += sq[i]
                err[u, q] = tail
            solved[u] = True
        elif min(nr[u], nc[u]) == 2:
            rows = nr[u] == 2
            s2 = 0.0
            for q in range(ranks.shape[0]):
                if ranks[q] == 1:
                    s2 = _two_line_tail(ptr, ri, ci, v, u, rows, nc[u] if rows else nr[u], a, b)
                    break
            for q in range(ranks.shape[0]):
                err[u, q] = s2 if ranks[q] == 1 else 0.0
            solved[u] = True


@njit_inline
def _mix(h, x):
    """One step of a 64-bit hash (splitmix64's finaliser over ``h ^ x``)."""
    z = (h ^ x) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit_cached
def _first_identical(ptr, ri, ci, vbits, nr, nc, need):
    """For each tile ``need[q]``: the position ``p ≤ q`` in ``need`` of the first tile with the same
    compact matrix (shape, entries, value bits), so that one SVD serves every copy (a stencil's or a
    constant-diagonal band's tiles repeat). Hashed, then compared entry by entry."""
    m = need.shape[0]
    first = np.empty(m, dtype=np.int64)
    size = 1
    while size < 2 * m:
        size *= 2
    slots = np.full(size, -1, dtype=np.int64)
    hashes = np.empty(m, dtype=np.uint64)
    mask = np.uint64(size - 1)
    for q in range(m):
        u = need[q]
        h = _mix(np.uint64(nr[u]), np.uint64(nc[u]))
        for p in range(ptr[u], ptr[u + 1]):
            h = _mix(h, np.uint64(ri[p] * 65536 + ci[p]))
            h = _mix(h, vbits[p])
        hashes[q] = h
        s = h & mask
        first[q] = q
        while slots[s] >= 0:
            o = slots[s]
            w = need[o]
            if hashes[o] == h and nr[w] == nr[u] and nc[w] == nc[u] and ptr[w + 1] - ptr[w] == ptr[u + 1] - ptr[u]:
                same = True
                d = ptr[w] - ptr[u]
                for p in range(ptr[u], ptr[u + 1]):
                    if ri[p] != ri[p + d] or ci[p] != ci[p + d] or vbits[p] != vbits[p + d]:
                        same = False
                        break
                if same:
                    first[q] = o
                    break
            s = (s + np.uint64(1)) & mask
        if first[q] == q:
            slots[s] = q
    return first


def lowrank_errors(ts, idx, ranks) -> np.ndarray:
    """``E = Σ_{i>r} σ_i²`` (Eckart–Young) of the tiles ``idx`` for every rank in ``ranks``,
    shape (len(idx), len(ranks)), from one pass of singular values (akf-spec §3).

    Each tile is first reduced to its nonempty rows × nonempty columns (same nonzero
    singular values): a hyper-sparse 64×64 tile with three nonzeros becomes at most 3×3.
    A tile with at most ``r`` nonempty rows or columns has rank ≤ r and is exact for that
    ``r`` (E = 0; an SVD would give rounding noise only). A scaled permutation (one entry per
    nonempty row and column) and a tile of exactly two nonempty rows or columns get their errors
    in closed form (:func:`_closed_form_errors`); the others are stacked by compact shape for
    ``np.linalg.svd``, one SVD for every set of identical tiles (:func:`_first_identical`). Equals
    ``‖t − decode(encode(t))‖_F²`` up to rounding (the tests check it against decode).
    """
    ranks = [int(r) for r in ranks]
    err = np.zeros((idx.shape[0], len(ranks)), dtype=np.float64)
    ptr, pos = gather_entries(ts, idx)
    if pos.size == 0 or not ranks:
        return err
    wmax = int(ts.w[idx].max())
    ri, ci, nr, nc = _compact_coords(ptr, ts.r[pos].astype(np.int64),
                                     ts.c[pos].astype(np.int64), wmax)
    low = np.minimum(nr, nc)
    solved = np.zeros(low.size, dtype=np.bool_)
    _closed_form_errors(ptr, ri, ci, ts.v[pos], nr, nc, np.asarray(ranks, dtype=np.int64), err, solved)
    need = np.flatnonzero((low > min(ranks)) & ~solved)  # the rest by SVD, grouped by shape
    if need.size == 0:
        return err
    copies = None
    if need.size > 1:  # identical tiles: one SVD each (the copies take its row below)
        first = _first_identical(ptr, ri, ci, ts.v[pos].view(np.uint64), nr, nc, need)
        own = first == np.arange(need.size)
        if not own.all():
            copies = (need[~own], need[first[~own]])
            need = need[own]
    # needed tiles ordered by compact shape; their entries in the same order
    keys = nr[need] * 4096 + nc[need]
    order = need[np.argsort(keys, kind="stable")]
    keys = nr[order] * 4096 + nc[order]
    counts = np.diff(ptr)[order]
    ecum = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(counts, out=ecum[1:])
    tile_of = np.repeat(np.arange(order.size, dtype=np.int64), counts)
    ent = np.repeat(ptr[order] - ecum[:-1], counts) + np.arange(ecum[-1])
    starts = np.r_[0, np.flatnonzero(np.diff(keys)) + 1, order.size]
    for a0, a1 in zip(starts[:-1], starts[1:]):
        hh, ww = int(nr[order[a0]]), int(nc[order[a0]])
        step = max(1, SVD_BATCH_CELLS // (hh * ww))
        for a in range(a0, a1, step):
            b = min(a + step, a1)
            e = ent[ecum[a]:ecum[b]]
            stack = np.zeros((b - a, hh, ww))
            stack[tile_of[ecum[a]:ecum[b]] - a, ri[e], ci[e]] = ts.v[pos[e]]
            sq = np.linalg.svd(stack, compute_uv=False) ** 2
            for q, r in enumerate(ranks):
                if r < min(hh, ww):
                    err[order[a:b], q] = np.sum(sq[:, r:], axis=1)
    if copies is not None:
        err[copies[0]] = err[copies[1]]
    return err


def lowrank_bytes(h, w, k):
    """Payload (scalars or arrays): ``U·diag s`` (h×k) and ``V`` (w×k) in fp32, a routing entry
    per column. The one formula of :meth:`LowRankKernel.payload_bytes` and
    :meth:`LowRankKernel.npu_work`."""
    return (h + w) * k * VALUE_BYTES["fp32"] + w * ROUTE_BYTES


class LowRankKernel(Kernel):
    """Truncated SVD of rank r."""

    family = "LOWRANK"
    lossless = False
    precision = "fp32"
    exec_format = "lowrank"
    entry_format = False

    def __init__(self, r: int):
        self.r = int(r)
        self.name = f"LOWRANK{self.r}"
        self.description = (f"Rank-{self.r} truncated SVD: (h+w)·{self.r} values, {self.r} MACs per "
                            f"event; exact when the tile has rank ≤ {self.r}.")

    def encode(self, tile) -> LowRankPayload:
        t = as_tile(tile)
        U, s, Vt = np.linalg.svd(t, full_matrices=False)
        k = min(self.r, s.size)
        return LowRankPayload(us=U[:, :k] * s[:k], v=Vt[:k].T.copy())

    def decode(self, payload: LowRankPayload) -> np.ndarray:
        return payload.us @ payload.v.T

    def payload_bytes(self, payload: LowRankPayload) -> int:
        (h, k), w = payload.us.shape, payload.v.shape[0]
        return int(lowrank_bytes(h, w, k))

    def ranks(self, ts, idx):
        """Stored rank per tile, ``min(r, h, w)``."""
        return np.minimum(self.r, np.minimum(ts.h[idx], ts.w[idx])).astype(np.int64)

    def factors(self, ts, idx):
        """Batched truncated SVD of the tiles ``idx``.

        Returns ``(rank, us_ptr, us, v_ptr, v)``: tile ``u``'s ``U·diag s`` is
        ``us[us_ptr[u]:us_ptr[u+1]].reshape(h, k)`` and ``V`` is
        ``v[v_ptr[u]:v_ptr[u+1]].reshape(w, k)`` (row-major).
        """
        idx = as_index(ts, idx)
        n = idx.shape[0]
        h, w = ts.h[idx], ts.w[idx]
        k = self.ranks(ts, idx)
        us_ptr = np.zeros(n + 1, dtype=np.int64)
        v_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(h * k, out=us_ptr[1:])
        np.cumsum(w * k, out=v_ptr[1:])
        us = np.zeros(us_ptr[-1])
        vv = np.zeros(v_ptr[-1])
        # stacked SVDs per tile shape (h, w): the same LAPACK call as the single-tile
        # encode on the same data, so both paths pick the same singular vectors
        shapes = h * 1024 + w
        for key in np.unique(shapes):
            grp = np.flatnonzero(shapes == key)
            hh, ww = int(key // 1024), int(key % 1024)
            kk = min(self.r, hh, ww)
            step = max(1, SVD_BATCH_CELLS // (hh * ww))
            for s0 in range(0, grp.size, step):
                g = grp[s0:s0 + step]
                ptr, pos = gather_entries(ts, idx[g])
                stack = np.zeros((g.size, hh, ww))
                seg = np.repeat(np.arange(g.size), np.diff(ptr))
                stack[seg, ts.r[pos], ts.c[pos]] = ts.v[pos]
                U, s, Vt = np.linalg.svd(stack, full_matrices=False)
                a = (U[:, :, :kk] * s[:, None, :kk]).reshape(g.size, -1)
                b = np.transpose(Vt[:, :kk, :], (0, 2, 1)).reshape(g.size, -1)
                us[(us_ptr[g][:, None] + np.arange(hh * kk)).ravel()] = a.ravel()
                vv[(v_ptr[g][:, None] + np.arange(ww * kk)).ravel()] = b.ravel()
        return k, us_ptr, us, v_ptr, vv

    def approx(self, ts, idx=None) -> TileApprox:
        idx = as_index(ts, idx)
        n = idx.shape[0]
        h, w = ts.h[idx], ts.w[idx]
        k, us_ptr, us, v_ptr, vv = self.factors(ts, idx)
        # dense reconstruction of every tile, grouped by shape
        cells = h * w
        cptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(cells, out=cptr[1:])
        vals = np.zeros(cptr[-1])
        for hh, ww, kk in set(zip(h.tolist(), w.tolist(), k.tolist())):
            m = np.flatnonzero((h == hh) & (w == ww) & (k == kk))
            A = us[(us_ptr[m][:, None] + np.arange(hh * kk)).ravel()].reshape(m.size, hh, kk)
            B = vv[(v_ptr[m][:, None] + np.arange(ww * kk)).ravel()].reshape(m.size, ww, kk)
            rec = A @ np.transpose(B, (0, 2, 1))
            vals[(cptr[m][:, None] + np.arange(hh * ww)).ravel()] = rec.ravel()
        seg = np.repeat(np.arange(n, dtype=np.int64), cells)
        loc = np.arange(cptr[-1], dtype=np.int64) - cptr[seg]
        rr, cc = loc // w[seg], loc % w[seg]
        # error: Σ over cells (t − Â)²; t's entries subtracted at their cells
        ptr, pos = gather_entries(ts, idx)
        tseg = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        diff = -vals.copy()
        at = cptr[tseg] + ts.r[pos] * w[tseg] + ts.c[pos]
        diff[at] += ts.v[pos]
        err = np.bincount(seg, weights=diff * diff, minlength=n).astype(np.float64)
        keep = vals != 0.0
        kptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(seg[keep], minlength=n), out=kptr[1:])
        return TileApprox(idx=idx, ptr=kptr, r=rr[keep], c=cc[keep], v=vals[keep], err=err,
                          extra=dict(rank=k, us_ptr=us_ptr, us=us, v_ptr=v_ptr, v=vv))

    def batch_error(self, ts, idx=None) -> np.ndarray:
        """``E = Σ_{i>r} σ_i²`` per tile, see :func:`lowrank_errors`."""
        return lowrank_errors(ts, as_index(ts, idx), [self.r])[:, 0]

    def npu_work(self, ts, idx=None):
        idx = as_index(ts, idx)
        h, w = ts.h[idx], ts.w[idx]
        k = self.ranks(ts, idx)
        col_ptr, col_local = all_columns(w)
        ev = np.repeat(k, w)
        return make_tilework(
            self.name, ts, idx, col_ptr, col_local,
            ev_macs=ev, ev_decodes=np.zeros(ev.shape[0], dtype=np.int64),
            ev_sram_bytes=ev * VALUE_BYTES["fp32"],
            payload_bytes=lowrank_bytes(h, w, k),
            out_rows=h, final_macs=k * h, final_sram_bytes=k * h * VALUE_BYTES["fp32"],
        )


LOWRANK1 = LowRankKernel(1)
LOWRANK2 = LowRankKernel(2)
LOWRANK4 = LowRankKernel(4)
LOWRANK8 = LowRankKernel(8)
