"""Error-only passes: ``E(t, k) = ‖t − decode(encode_k(t))‖_F²`` of a batch of tiles without
building the approximation (akf-spec §3, §5).

The selector needs ``E`` for every candidate kernel on its decision units (the clusters'
representatives, or every tile in tile mode), and on every member of a cluster when it
measures a plan. :meth:`Kernel.approx` builds ``Â`` as arrays of entries, which the executor
needs and the selector does not. A kernel whose ``Â`` keeps a subset of the original values
(N:M, PRUNE) or re-quantises them (QUANT8) can sum its error in one pass over the tile's
entries instead; this module runs such a pass over chunks of a batch, on the worker threads
for large batches.

Every error pass sums ``(v − v̂)²`` over the tile's entries in their stored order, as
:func:`akfviz.kernels.base.approx_from_mask` does through ``np.bincount`` (a sequential sum
per tile): the two agree bit for bit, which ``tests/kernels/test_error_pass.py`` checks.
"""
from __future__ import annotations

import numba
import numpy as np

#: Chunks per worker thread in a pass (every tile is computed on its own, so the result does
#: not depend on the chunking).
CHUNKS_PER_THREAD = 8


def pass_bounds(n: int) -> np.ndarray:
    """Boundaries of about ``8 × threads`` equal chunks of ``n`` tiles."""
    k = max(1, min(n, CHUNKS_PER_THREAD * numba.get_num_threads()))
    return np.linspace(0, n, k + 1).round().astype(np.int64)


def run_error_pass(parallel_fn, serial_fn, ts, idx, *params) -> np.ndarray:
    """``E`` of the tiles ``idx`` (validated int64 indices into ``ts``) from a numba pass
    ``fn(tptr, tr, tc, tv, idx, bounds, err, *params)``; the ``prange`` version runs for large
    batches on free cores, the serial twin otherwise (same arithmetic, same result)."""
    from ..execute import threads  # (execute imports kernels: import here)

    idx = np.ascontiguousarray(idx, dtype=np.int64)
    n = idx.shape[0]
    err = np.zeros(n, dtype=np.float64)
    if n == 0:
        return err
    span = abs(int(ts.ptr[idx[-1] + 1] - ts.ptr[idx[0]]))  # ≈ the entries, as the packers estimate
    if threads.pack_parallel(n + span):
        parallel_fn(ts.ptr, ts.r, ts.c, ts.v, idx, pass_bounds(n), err, *params)
    else:  # one chunk
        serial_fn(ts.ptr, ts.r, ts.c, ts.v, idx, np.array([0, n], dtype=np.int64), err, *params)
    return err
