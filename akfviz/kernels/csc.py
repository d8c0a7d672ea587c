"""CSC: compressed sparse columns inside the tile (akf-spec §3).

Payload: ``k`` values, ``k`` 1-byte row indices, one 2-byte pointer per stored column
plus one, and one routing entry per stored (occupied) column. Per event ``j``: ``nnz_j``
MACs and one pointer read (counted as a decode); it reads ``nnz_j`` values and row
indices and the column's two pointers. Exact on every tile.

This module also holds the CSC machinery reused by PRUNE (kept entries as CSC) and
QUANT8 (int8 values over CSC).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import (INDEX_BYTES, POINTER_BYTES, ROUTE_BYTES, SCALE_BYTES, VALUE_BYTES, Kernel,
                   approx_from_mask, as_index, as_tile, count_distinct_rows, make_tilework,
                   occupied_columns)


@dataclass(frozen=True, eq=False)
class CSCPayload:
    """Compressed columns of a tile.

    ``cols`` are the occupied local columns (ascending); the entries of ``cols[q]`` are
    ``rows[colptr[q]:colptr[q+1]]`` / ``values[…]`` with rows ascending. ``scale`` is the
    int8 dequantisation scale (1.0 for fp32 values).
    """

    shape: tuple
    cols: np.ndarray
    colptr: np.ndarray
    rows: np.ndarray
    values: np.ndarray
    scale: float = 1.0


def csc_encode(t: np.ndarray, values_of=None, scale: float = 1.0) -> CSCPayload:
    """CSC of the nonzeros of dense tile ``t`` (column by column, rows ascending)."""
    cols, ptr, rows, vals = [], [0], [], []
    src = t if values_of is None else values_of
    for j in range(t.shape[1]):
        nz = np.flatnonzero(src[:, j])
        if nz.size:
            cols.append(j)
            rows.extend(nz.tolist())
            vals.extend(src[nz, j].tolist())
            ptr.append(len(rows))
    dtype = src.dtype if values_of is not None else np.float64
    return CSCPayload(shape=t.shape, cols=np.array(cols, np.int64), colptr=np.array(ptr, np.int64),
                      rows=np.array(rows, np.int64), values=np.array(vals, dtype=dtype), scale=scale)


def csc_decode(p: CSCPayload) -> np.ndarray:
    out = np.zeros(p.shape, dtype=np.float64)
    for q, j in enumerate(p.cols):
        s, e = p.colptr[q], p.colptr[q + 1]
        out[p.rows[s:e], j] = p.values[s:e].astype(np.float64) * p.scale
    return out


def csc_layout_bytes(k, nc, precision: str):
    """Payload of ``k`` kept entries in ``nc`` occupied columns, CSC (scalars or arrays): a value
    and a row index per entry, ``nc + 1`` column pointers, a routing entry per occupied column,
    and an int8 tile's scale. The one formula of :func:`csc_bytes` and :func:`csc_work`."""
    extra = SCALE_BYTES if precision == "int8" else 0
    return k * (VALUE_BYTES[precision] + INDEX_BYTES) + (nc + 1) * POINTER_BYTES + nc * ROUTE_BYTES + extra


def csc_bytes(p: CSCPayload, precision: str) -> int:
    return int(csc_layout_bytes(p.rows.shape[0], p.cols.shape[0], precision))


def csc_work(name, ts, ap, precision: str):
    """TileWork of CSC-stored kept entries ``ap`` (a TileApprox)."""
    idx = ap.idx
    col_ptr, col_local, cnt = occupied_columns(ap.ptr, ap.c, ts.w[idx])
    nc = np.diff(col_ptr)
    k = np.diff(ap.ptr)
    vb = VALUE_BYTES[precision]
    return make_tilework(
        name, ts, idx, col_ptr, col_local,
        ev_macs=cnt, ev_decodes=np.ones_like(cnt),
        ev_sram_bytes=cnt * (vb + INDEX_BYTES) + 2 * POINTER_BYTES,
        payload_bytes=csc_layout_bytes(k, nc, precision),
        out_rows=count_distinct_rows(ap.ptr, ap.r), int8=(precision == "int8"),
    )


class CSCKernel(Kernel):
    """Compressed sparse columns: exact, pays a row index per nonzero and a pointer per column."""

    name = "CSC"
    family = "CSC"
    lossless = True
    precision = "fp32"
    description = "Compressed columns: values + 1-byte row indices + column pointers; exact."
    exec_format = "csc"
    entry_format = True

    def encode(self, tile) -> CSCPayload:
        return csc_encode(as_tile(tile))

    def decode(self, payload: CSCPayload) -> np.ndarray:
        return csc_decode(payload)

    def payload_bytes(self, payload: CSCPayload) -> int:
        return csc_bytes(payload, "fp32")

    def approx(self, ts, idx=None):
        return approx_from_mask(ts, as_index(ts, idx))

    def npu_work(self, ts, idx=None):
        return csc_work(self.name, ts, self.approx(ts, idx), "fp32")


CSC = CSCKernel()
