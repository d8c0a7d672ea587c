"""PRUNE: keep the top fraction ``q`` of a tile's nonzeros by magnitude, as CSC (akf-spec §3).

The tile keeps ``ceil(q·k)`` of its ``k`` nonzeros (at least one, so a nonempty tile is
never dropped entirely): the largest ``|v|``, ties broken by the lower row-major position
``(r, c)``. The kept entries are stored and executed exactly like CSC. Lossy.
"""
from __future__ import annotations

import numba
import numpy as np

from .._jit import njit_parallel, serial_twin
from .base import Kernel, approx_from_mask, as_index, as_tile, rank_within_groups
from .csc import CSCPayload, csc_bytes, csc_decode, csc_encode, csc_work
from .error_pass import run_error_pass

#: Tiles of at most this many entries are ranked pairwise in :func:`_prune_error` (as
#: :func:`akfviz.kernels.base.rank_within_groups` ranks small groups), larger ones by a sort.
PAIRWISE_MAX = 16


@njit_parallel
def _prune_error(tptr, tr, tc, tv, idx, bounds, err, percent):
    """``E`` of PRUNE (keep ``ceil(percent·k / 100)`` of a tile's ``k`` entries, the largest
    ``|v|``, ties by the lower position) for the tiles ``idx`` (:mod:`.error_pass`): the sum of
    ``v²`` over the dropped entries, in the tile's entry order."""
    for ch in numba.prange(bounds.shape[0] - 1):
        for u in range(bounds[ch], bounds[ch + 1]):
            t = idx[u]
            s0, s1 = tptr[t], tptr[t + 1]
            k = s1 - s0
            keep = -(-k * percent // 100)
            e = 0.0
            if keep >= k:
                err[u] = e
                continue
            if k <= PAIRWISE_MAX:
                for i in range(s0, s1):
                    ki = abs(tv[i])
                    rank = 0
                    for j in range(s0, s1):
                        kj = abs(tv[j])
                        if kj > ki or (kj == ki and j < i):
                            rank += 1
                    if rank >= keep:
                        e += tv[i] * tv[i]
            else:
                neg = np.empty(k, dtype=np.float64)
                for q in range(k):
                    neg[q] = -abs(tv[s0 + q])
                order = np.argsort(neg, kind="mergesort")  # stable: ties by position
                dropped = np.zeros(k, dtype=np.bool_)
                for q in range(keep, k):
                    dropped[order[q]] = True
                for q in range(k):
                    if dropped[q]:
                        e += tv[s0 + q] * tv[s0 + q]
            err[u] = e


_prune_error_serial = serial_twin(_prune_error)


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

    def batch_error(self, ts, idx=None):
        """``E`` per tile of ``idx`` from one pass over the entries (:func:`_prune_error`), equal
        bit for bit to ``approx(ts, idx).err``."""
        return run_error_pass(_prune_error, _prune_error_serial, ts, as_index(ts, idx),
                              np.int64(self.percent))

    def npu_work(self, ts, idx=None):
        return csc_work(self.name, ts, self.approx(ts, idx), "fp32")


PRUNE50 = PruneKernel(50)
PRUNE25 = PruneKernel(25)
