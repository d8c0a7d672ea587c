"""DENSE: every cell of the tile stored as a value (akf-spec §3).

Payload ``h·w`` fp32 values (+ one routing entry per column: a dense-format tile receives
every input event of its column block). Per event ``j``: ``h`` MACs over column ``j``.
Exact on every tile.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import (ROUTE_BYTES, VALUE_BYTES, Kernel, all_columns, approx_from_mask, as_index,
                   as_tile, make_tilework)


@dataclass(frozen=True, eq=False)
class DensePayload:
    """The tile's values, row-major ``(h, w)``."""

    values: np.ndarray


class DenseKernel(Kernel):
    """Dense storage: ``h·w`` values, ``h`` MACs per input event."""

    name = "DENSE"
    family = "DENSE"
    lossless = True
    precision = "fp32"
    description = "Every cell stored, zeros included: h MACs per input event, no index overhead."
    exec_format = "dense"
    entry_format = False

    def encode(self, tile) -> DensePayload:
        return DensePayload(values=as_tile(tile).copy())

    def decode(self, payload: DensePayload) -> np.ndarray:
        return payload.values.astype(np.float64).copy()

    def payload_bytes(self, payload: DensePayload) -> int:
        h, w = payload.values.shape
        return int(dense_layout_bytes(h, w, "fp32"))

    def approx(self, ts, idx=None):
        return approx_from_mask(ts, as_index(ts, idx))

    def npu_work(self, ts, idx=None):
        return dense_layout_work(self.name, ts, as_index(ts, idx), "fp32")


def dense_layout_bytes(h, w, precision, extra_bytes=0):
    """Payload of a dense-layout tile (scalars or arrays): ``h·w`` values of ``precision``
    + ``extra_bytes`` (e.g. a scale) + one routing entry per column. The one formula of
    :meth:`DenseKernel.payload_bytes`, QUANT8D's, and the batch :func:`dense_layout_work`."""
    return h * w * VALUE_BYTES[precision] + extra_bytes + w * ROUTE_BYTES


def dense_layout_work(name, ts, idx, precision, extra_bytes=0):
    """TileWork of a dense-layout tile: every column routed, ``h`` MACs per event reading
    ``h`` values; payload ``h·w`` values (+ ``extra_bytes``, e.g. a scale) + routing."""
    h, w = ts.h[idx], ts.w[idx]
    col_ptr, col_local = all_columns(w)
    hc = np.repeat(h, w)
    vb = VALUE_BYTES[precision]
    return make_tilework(
        name, ts, idx, col_ptr, col_local,
        ev_macs=hc, ev_decodes=np.zeros(hc.shape[0], dtype=np.int64), ev_sram_bytes=hc * vb,
        payload_bytes=dense_layout_bytes(h, w, precision, extra_bytes), out_rows=h,
        int8=precision == "int8",
    )


DENSE = DenseKernel()
