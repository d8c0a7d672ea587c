"""SKIP: the tile is dropped (akf-spec §3).

Nothing is stored, nothing is routed, no work: ``E = ||t||_F²``. Exact only on an empty
tile (the TileSet holds nonempty tiles only, so SKIP is lossy wherever it is chosen).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._jit import njit_parallel, serial_twin
from ..npu.work import TileWork
from .base import Kernel, TileApprox, as_index, as_tile, gather_entries, segment_sum
from .error_pass import run_error_pass


@njit_parallel
def _skip_error(tptr, tr, tc, tv, idx, bounds, err):
    """``E = Σ v²`` over each tile's entries, in their order (:mod:`.error_pass`)."""
    for ch in numba.prange(bounds.shape[0] - 1):
        for u in range(bounds[ch], bounds[ch + 1]):
            t = idx[u]
            e = 0.0
            for p in range(tptr[t], tptr[t + 1]):
                e += tv[p] * tv[p]
            err[u] = e


_skip_error_serial = serial_twin(_skip_error)


@dataclass(frozen=True, eq=False)
class SkipPayload:
    """Only the tile's shape."""

    shape: tuple


class SkipKernel(Kernel):
    """Drop the tile."""

    name = "SKIP"
    family = "SKIP"
    lossless = False
    precision = "fp32"
    description = "Drop the tile: no storage, no work; its whole mass becomes error."
    exec_format = "none"
    entry_format = False

    def encode(self, tile) -> SkipPayload:
        return SkipPayload(shape=as_tile(tile).shape)

    def decode(self, payload: SkipPayload) -> np.ndarray:
        return np.zeros(payload.shape)

    def payload_bytes(self, payload: SkipPayload) -> int:
        return 0

    def approx(self, ts, idx=None) -> TileApprox:
        idx = as_index(ts, idx)
        ptr, pos = gather_entries(ts, idx)
        z = np.zeros(0, dtype=np.int64)
        return TileApprox(idx=idx, ptr=np.zeros(idx.shape[0] + 1, dtype=np.int64), r=z, c=z,
                          v=np.zeros(0), err=segment_sum(ts.v[pos] ** 2, ptr))

    def batch_error(self, ts, idx=None) -> np.ndarray:
        """``E = ‖t‖_F²`` per tile of ``idx`` (:func:`_skip_error`), equal bit for bit to
        ``approx(ts, idx).err``."""
        return run_error_pass(_skip_error, _skip_error_serial, ts, as_index(ts, idx))

    def npu_work(self, ts, idx=None) -> TileWork:
        """An empty TileWork: SKIP tiles are not placed."""
        as_index(ts, idx)
        return TileWork.concat([])


SKIP = SkipKernel()
