"""BITMAP: one occupancy bit per cell plus the nonzero values (akf-spec §3).

Payload: ``w·ceil(h/8)`` bytes of bitmap (one bit per cell, column-major), ``k`` fp32
values, and one routing entry per occupied column. Per event ``j``: ``ceil(h/64)``
64-bit word decodes (find the set bits of column ``j``) and ``nnz_j`` MACs. Exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import (ROUTE_BYTES, VALUE_BYTES, WORD_BITS, Kernel, approx_from_mask, as_index,
                   as_tile, count_distinct_rows, make_tilework, occupied_columns)


@dataclass(frozen=True, eq=False)
class BitmapPayload:
    """``bits``: packed column-major occupancy (``np.packbits`` of ``mask.T``); ``values``
    in column-major order of the set bits."""

    shape: tuple
    bits: np.ndarray
    values: np.ndarray


def bitmap_bytes(h, w, k, routed):
    """Payload (scalars or arrays): one bit per cell (``w`` columns of ``ceil(h/8)`` bytes),
    ``k`` fp32 values and a routing entry per occupied column. The one formula of
    :meth:`BitmapKernel.payload_bytes` and :meth:`BitmapKernel.npu_work`."""
    return w * (-(-h // 8)) + k * VALUE_BYTES["fp32"] + routed * ROUTE_BYTES


class BitmapKernel(Kernel):
    """Bitmap + values: 1 bit per cell instead of an index per nonzero; exact."""

    name = "BITMAP"
    family = "BITMAP"
    lossless = True
    precision = "fp32"
    description = "One bit per cell marks the nonzeros, values packed: cheap indices for mid densities; exact."
    exec_format = "bitmap"
    entry_format = True

    def encode(self, tile) -> BitmapPayload:
        t = as_tile(tile)
        mask_cm = (t != 0).T  # (w, h): column-major
        bits = np.packbits(mask_cm, axis=1)  # ceil(h/8) bytes per column
        return BitmapPayload(shape=t.shape, bits=bits, values=t.T[mask_cm].copy())

    def decode(self, payload: BitmapPayload) -> np.ndarray:
        h, w = payload.shape
        mask_cm = np.unpackbits(payload.bits, axis=1, count=h).astype(bool)
        out_t = np.zeros((w, h), dtype=np.float64)
        out_t[mask_cm] = payload.values
        return out_t.T.copy()

    def payload_bytes(self, payload: BitmapPayload) -> int:
        h, w = payload.shape
        routed = int(np.count_nonzero(payload.bits.any(axis=1)))
        return int(bitmap_bytes(h, w, payload.values.size, routed))

    def approx(self, ts, idx=None):
        return approx_from_mask(ts, as_index(ts, idx))

    def npu_work(self, ts, idx=None):
        ap = self.approx(ts, idx)
        idx = ap.idx
        h, w = ts.h[idx], ts.w[idx]
        col_ptr, col_local, cnt = occupied_columns(ap.ptr, ap.c, w)
        nc = np.diff(col_ptr)
        words = np.repeat(-(-h // WORD_BITS), nc)
        k = np.diff(ap.ptr)
        return make_tilework(
            self.name, ts, idx, col_ptr, col_local,
            ev_macs=cnt, ev_decodes=words, ev_sram_bytes=words * 8 + cnt * VALUE_BYTES["fp32"],
            payload_bytes=bitmap_bytes(h, w, k, nc),
            out_rows=count_distinct_rows(ap.ptr, ap.r),
        )


BITMAP = BitmapKernel()
