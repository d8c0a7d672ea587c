"""DIA: the tile's occupied diagonals stored as dense vectors (akf-spec §3).

A diagonal is identified by its offset ``o = c − r`` (``-(h-1) … w-1``). For each of the
``d`` occupied diagonals the payload stores ``h`` fp32 values (slot ``i`` holds
``t[i, i+o]``, zero when out of range or empty) and a 2-byte offset, plus a routing entry
per column crossed by an occupied diagonal. Per event ``j``: one MAC per occupied
diagonal crossing column ``j`` (``0 <= j − o < h``), i.e. ``d`` MACs for interior
columns — the hardware multiplies stored zeros too. Exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import njit_cached
from .base import (DIAG_OFFSET_BYTES, ROUTE_BYTES, VALUE_BYTES, Kernel, approx_from_mask,
                   as_index, as_tile, make_tilework, occupied_columns)


@dataclass(frozen=True, eq=False)
class DiaPayload:
    """``offsets`` (d,) ascending; ``values`` (d, h) with ``values[k, i] = t[i, i+offsets[k]]``."""

    shape: tuple
    offsets: np.ndarray
    values: np.ndarray


def tile_diagonals(ts, ap):
    """Occupied diagonal offsets of every tile of a TileApprox: ``(d_ptr, offsets)``."""
    idx = ap.idx
    h = ts.h[idx]
    key = ap.c - ap.r + np.repeat(h - 1, np.diff(ap.ptr))  # in 0 .. h+w-2
    d_ptr, dkey, _ = occupied_columns(ap.ptr, key, h + ts.w[idx] - 1)
    return d_ptr, dkey - np.repeat(h - 1, np.diff(d_ptr))


@njit_cached
def _dia_columns(h, w, d_ptr, offs):
    """Per tile: columns crossed by occupied diagonals, MACs per column, rows covered."""
    n = h.shape[0]
    col_ptr = np.zeros(n + 1, dtype=np.int64)
    tot = 0
    for u in range(n):
        tot += w[u]
    col_local = np.empty(tot, dtype=np.int64)
    macs = np.empty(tot, dtype=np.int64)
    rows = np.zeros(n, dtype=np.int64)
    q = 0
    for u in range(n):
        cnt = np.zeros(w[u], dtype=np.int64)
        rcov = np.zeros(h[u], dtype=np.bool_)
        for k in range(d_ptr[u], d_ptr[u + 1]):
            o = offs[k]
            for i in range(max(0, -o), min(h[u], w[u] - o)):
                cnt[i + o] += 1
                rcov[i] = True
        for j in range(w[u]):
            if cnt[j] > 0:
                col_local[q] = j
                macs[q] = cnt[j]
                q += 1
        col_ptr[u + 1] = q
        rows[u] = np.count_nonzero(rcov)
    return col_ptr, col_local[:q].copy(), macs[:q].copy(), rows


def dia_bytes(h, d, routed):
    """Payload (scalars or arrays): ``d`` stored diagonals of ``h`` fp32 slots and an offset
    each, a routing entry per column a diagonal crosses. The one formula of
    :meth:`DiaKernel.payload_bytes` and :meth:`DiaKernel.npu_work`."""
    return d * h * VALUE_BYTES["fp32"] + d * DIAG_OFFSET_BYTES + routed * ROUTE_BYTES


class DiaKernel(Kernel):
    """Diagonal storage: no per-nonzero index; ideal for banded and stencil tiles; exact."""

    name = "DIA"
    family = "DIA"
    lossless = True
    precision = "fp32"
    description = "Occupied diagonals stored as dense vectors: no indices, d MACs per event; exact."
    exec_format = "dia"
    entry_format = True

    def encode(self, tile) -> DiaPayload:
        t = as_tile(tile)
        h, w = t.shape
        r, c = np.nonzero(t)
        offs = np.unique(c - r).astype(np.int64)
        vals = np.zeros((offs.size, h), dtype=np.float64)
        for k, o in enumerate(offs):
            i = np.arange(max(0, -o), min(h, w - o))
            vals[k, i] = t[i, i + o]
        return DiaPayload(shape=t.shape, offsets=offs, values=vals)

    def decode(self, payload: DiaPayload) -> np.ndarray:
        h, w = payload.shape
        out = np.zeros((h, w), dtype=np.float64)
        for k, o in enumerate(payload.offsets):
            i = np.arange(max(0, -o), min(h, w - o))
            out[i, i + o] = payload.values[k, i]
        return out

    def payload_bytes(self, payload: DiaPayload) -> int:
        h, w = payload.shape
        cols = np.zeros(w, dtype=bool)
        for o in payload.offsets:
            cols[max(0, o):min(w, h + o)] = True
        return int(dia_bytes(h, payload.offsets.size, cols.sum()))

    def approx(self, ts, idx=None):
        return approx_from_mask(ts, as_index(ts, idx))

    def npu_work(self, ts, idx=None):
        ap = self.approx(ts, idx)
        idx = ap.idx
        h, w = ts.h[idx], ts.w[idx]
        d_ptr, offs = tile_diagonals(ts, ap)
        col_ptr, col_local, macs, rows = _dia_columns(h, w, d_ptr, offs)
        d = np.diff(d_ptr)
        return make_tilework(
            self.name, ts, idx, col_ptr, col_local,
            ev_macs=macs, ev_decodes=np.zeros(macs.shape[0], dtype=np.int64),
            ev_sram_bytes=macs * VALUE_BYTES["fp32"],
            payload_bytes=dia_bytes(h, d, np.diff(col_ptr)),
            out_rows=rows,
        )


DIA = DiaKernel()
