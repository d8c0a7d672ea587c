"""PRUNE: keep the top fraction ``q`` of a tile's nonzeros by magnitude, as CSC (akf-spec §3).

The tile keeps ``ceil(q·k)`` of its ``k`` nonzeros (at least one, so a nonempty tile is
never dropped entirely): the largest ``|v|``, ties broken by the lower row-major position
``(r, c)``. The kept entries are stored and executed exactly like CSC. Lossy.
"""
from __future__ import annotations

import numpy as np

from .base import Kernel, approx_from_mask, as_index, as_tile, rank_within_groups
from .csc import CSCPayload, csc_bytes, csc_decode, csc_encode, csc_work


class PruneKernel(Kernel):
    """Magnitude pruning inside the tile, the survivors stored as CSC."""

    family = "PRUNE"
    lossless = False
    precision = "fp32"
    exec_format = "csc"
    entry_format = True

    def __init__(self, percent: int):
        self.percent = int(percent)
        self.q = self.percent / 100.0
        self.name = f"PRUNE{self.percent}"
        self.description = (f"Keep the largest {self.percent} % of the tile's nonzeros by magnitude "
                            f"(stored as CSC); the rest are dropped.")

    def kept_count(self, k):
        """Number of entries kept out of ``k`` nonzeros: ``ceil(q·k)`` (integer arithmetic)."""
        return -(-np.asarray(k, dtype=np.int64) * self.percent // 100)

    def encode(self, tile) -> CSCPayload:
        t = as_tile(tile)
        r, c = np.nonzero(t)  # row-major order
        keep = int(self.kept_count(r.size))
        order = np.argsort(-np.abs(t[r, c]), kind="stable")[:keep]
        kept = np.zeros_like(t)
        kept[r[order], c[order]] = t[r[order], c[order]]
        return csc_encode(kept)

    def decode(self, payload: CSCPayload) -> np.ndarray:
        return csc_decode(payload)

    def payload_bytes(self, payload: CSCPayload) -> int:
        return csc_bytes(payload, "fp32")

    def approx(self, ts, idx=None):
        idx = as_index(ts, idx)

        def keep(ptr, pos):
            seg = np.repeat(np.arange(idx.shape[0], dtype=np.int64), np.diff(ptr))
            rank = rank_within_groups(seg, np.abs(ts.v[pos]), np.arange(pos.shape[0]))
            return rank < np.repeat(self.kept_count(np.diff(ptr)), np.diff(ptr))

        return approx_from_mask(ts, idx, keep_fn=keep)

    def npu_work(self, ts, idx=None):
        return csc_work(self.name, ts, self.approx(ts, idx), "fp32")


PRUNE50 = PruneKernel(50)
PRUNE25 = PruneKernel(25)
