"""N:M structured sparsity (akf-spec §3; seeds: N:M sparsity kernels).

Along the reduction dimension (the columns) every row is cut into groups of ``M``
consecutive columns (starting at the tile's column 0; the last group may be shorter).
Each group keeps its ``N`` largest ``|v|`` (ties broken by the lower column); the tile is
reproduced exactly when it complies (at most ``N`` nonzeros per group), otherwise this is
the magnitude projection onto the N:M set (lossy).

Payload: ``h·ceil(w/M)·N`` slots, each an fp32 value and a ``ceil(log2 M)``-bit in-group
index (2 bits for M = 4), plus a routing entry per column (a fixed-size, dense-format
layout: every column can be referenced). Per event: ``ceil(h·N/M)`` MACs and as many
index decodes — the tile's ``h·G·N`` slots are shared by the ``M`` columns of each group,
so a structured-sparse MAC array processes ``h·N/M`` slots per input column on average.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from .._jit import njit_cached, njit_inline, njit_parallel, serial_twin
from .base import (ROUTE_BYTES, VALUE_BYTES, Kernel, all_columns, approx_from_mask, as_index,
                   as_tile, make_tilework)
from .error_pass import run_error_pass


@njit_inline
def _group_end(r, c, a, end, m):
    """End of the (row, column group) that starts at entry ``a`` (entries ordered by (r, c))."""
    b = a + 1
    while b < end and r[b] == r[a] and c[b] // m == c[a] // m:
        b += 1
    return b


@njit_inline
def _rank_in_group(c, v, a, b, i):
    """Rank of entry ``i`` in its group ``a:b``: ``|v|`` descending, ties by the lower column, then
    the position."""
    ki, ci = abs(v[i]), c[i]
    rank = 0
    for j in range(a, b):
        kj, cj = abs(v[j]), c[j]
        if kj > ki or (kj == ki and (cj < ci or (cj == ci and j < i))):
            rank += 1
    return rank


@njit_cached
def _nm_keep(ptr, r, c, v, m, n):
    """Keep mask of the N:M projection: in every (tile, row, column group) the ``n`` largest
    ``|v|`` (ties: lower column, then position) — equals ``rank_within_groups(...) < n``."""
    out = np.zeros(r.shape[0], dtype=np.bool_)
    for u in range(ptr.shape[0] - 1):
        a = ptr[u]
        end = ptr[u + 1]
        while a < end:
            b = _group_end(r, c, a, end, m)
            for i in range(a, b):
                out[i] = _rank_in_group(c, v, a, b, i) < n
            a = b
    return out


@njit_parallel
def _nm_error(tptr, tr, tc, tv, idx, bounds, err, m, n):
    """``E`` of the N:M projection of the tiles ``idx`` (:mod:`.error_pass`): the sum of
    ``v²`` over the entries that :func:`_nm_keep` drops (the same ranking: ``|v|`` descending,
    ties by the lower column, then the position), in the tile's entry order."""
    for ch in numba.prange(bounds.shape[0] - 1):
        for u in range(bounds[ch], bounds[ch + 1]):
            t = idx[u]
            end = tptr[t + 1]
            a = tptr[t]
            e = 0.0
            while a < end:
                b = _group_end(tr, tc, a, end, m)
                if b - a > n:  # a group of at most n entries keeps them all
                    for i in range(a, b):
                        if _rank_in_group(tc, tv, a, b, i) >= n:
                            e += tv[i] * tv[i]
                a = b
            err[u] = e


_nm_error_serial = serial_twin(_nm_error)


@dataclass(frozen=True, eq=False)
class NMPayload:
    """``values`` and ``index`` of shape ``(h, G, N)``; slot ``s`` of row ``i``, group ``g``
    holds ``t[i, g·M + index[i,g,s]]`` (unused slots: value 0, index 0)."""

    shape: tuple
    n: int
    m: int
    values: np.ndarray
    index: np.ndarray


class NMKernel(Kernel):
    """N:M structured sparsity, magnitude projection when the tile does not comply."""

    family = "NM"
    lossless = False
    precision = "fp32"
    exec_format = "nm"
    entry_format = True

    def __init__(self, n: int, m: int):
        self.n, self.m = int(n), int(m)
        self.name = f"NM{self.n}:{self.m}"
        self.index_bits = max(1, math.ceil(math.log2(self.m)))
        self.description = (f"{self.n}:{self.m} structured sparsity: keep the {self.n} largest of every "
                            f"{self.m} columns per row; exact if the tile complies, else a projection.")

    def encode(self, tile) -> NMPayload:
        t = as_tile(tile)
        h, w = t.shape
        G = -(-w // self.m)
        vals = np.zeros((h, G, self.n))
        index = np.zeros((h, G, self.n), dtype=np.int64)
        for i in range(h):
            for g in range(G):
                grp = t[i, g * self.m:(g + 1) * self.m]
                nz = np.flatnonzero(grp)
                # largest |v| first, ties by lower column (stable sort on -|v|)
                order = nz[np.argsort(-np.abs(grp[nz]), kind="stable")][: self.n]
                order = np.sort(order)
                vals[i, g, :order.size] = grp[order]
                index[i, g, :order.size] = order
        return NMPayload(shape=t.shape, n=self.n, m=self.m, values=vals, index=index)

    def decode(self, payload: NMPayload) -> np.ndarray:
        h, w = payload.shape
        out = np.zeros((h, w))
        G = payload.values.shape[1]
        for i in range(h):
            for g in range(G):
                for s in range(payload.n):
                    if payload.values[i, g, s] != 0:
                        out[i, g * payload.m + payload.index[i, g, s]] = payload.values[i, g, s]
        return out

    def _slots(self, h, w):
        return h * (-(-w // self.m)) * self.n

    def _bytes(self, h, w):
        """Payload (scalars or arrays): ``s`` slots of a value and an in-group index of
        ``index_bits`` bits, one routing entry per column. The one formula of
        :meth:`payload_bytes` and :meth:`npu_work`."""
        s = self._slots(h, w)
        return s * VALUE_BYTES["fp32"] + -(-s * self.index_bits // 8) + w * ROUTE_BYTES

    def payload_bytes(self, payload: NMPayload) -> int:
        return int(self._bytes(*payload.shape))

    def approx(self, ts, idx=None):
        idx = as_index(ts, idx)
        n, m = self.n, self.m

        def keep(ptr, pos):
            # groups (tile, row, column group) are contiguous in entry order
            return _nm_keep(ptr, ts.r[pos], ts.c[pos], ts.v[pos], np.int64(m), np.int64(n))

        return approx_from_mask(ts, idx, keep_fn=keep)

    def batch_error(self, ts, idx=None):
        """``E`` per tile of ``idx`` from one pass over the entries (:func:`_nm_error`), equal bit
        for bit to ``approx(ts, idx).err``."""
        return run_error_pass(_nm_error, _nm_error_serial, ts, as_index(ts, idx),
                              np.int64(self.m), np.int64(self.n))

    def npu_work(self, ts, idx=None):
        idx = as_index(ts, idx)
        h, w = ts.h[idx], ts.w[idx]
        col_ptr, col_local = all_columns(w)
        per_ev = -(-h * self.n // self.m)
        ev = np.repeat(per_ev, w)
        return make_tilework(
            self.name, ts, idx, col_ptr, col_local,
            ev_macs=ev, ev_decodes=ev,
            ev_sram_bytes=ev * VALUE_BYTES["fp32"] + -(-ev * self.index_bits // 8),
            payload_bytes=self._bytes(h, w),
            out_rows=h,
        )


NM2_4 = NMKernel(2, 4)
NM1_4 = NMKernel(1, 4)
NM4_8 = NMKernel(4, 8)
