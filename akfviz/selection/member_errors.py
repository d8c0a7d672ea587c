"""Per-tile kernel errors remembered per analysis (akf-spec §5, the budget modes' member sums).

A budget selection in cluster mode sums a kernel's exact error over a cluster's member tiles
(:meth:`.costs.SelectionProblem.member_error_sums`); the small-problem steps of :mod:`.budgets` need
the sums of most (cluster, kernel) pairs, and LOWRANK's need an SVD per member tile. A tile's error
under a kernel depends on the tile and the kernel only, not on the budget, the weights or the
hardware, yet every selection built a new problem and computed them again: on the MiniLM sample
(two clusters of 576 tiles) each new error budget spent 63 of its 71 ms on the same SVDs.

:func:`tile_errors` keeps them per analysis (weakly: the memo goes with the analysis) and kernel
name, one float64 array per kernel with NaN where not computed yet, and computes only the tiles it
has not seen. The values are the kernel's own ``batch_error`` on those tiles, clipped at 0, exactly
what the sums used before: a tile's error does not depend on which other tiles share the batch (the
member sums already relied on that), so the memo changes no bit of any result. Analyses of more
than :data:`MEMO_MAX_TILES` tiles are not remembered (each kernel's array would take 8 bytes a tile).
"""
from __future__ import annotations

import numpy as np

from .analysis_memo import AnalysisMemo

#: Analyses with more nonempty tiles than this are not remembered (8 bytes a tile per kernel).
MEMO_MAX_TILES = 250_000

#: pa -> {kernel name: float64 (n_tiles,), NaN where not computed}
_MEMO = AnalysisMemo()


def tile_errors(pa, kernel, tiles) -> np.ndarray:
    """``max(E(t, kernel), 0)`` for the tiles ``tiles`` of the analysis ``pa`` (float64, in the order
    given), computed by ``kernel.batch_error`` for the tiles not remembered yet (see the module
    docstring)."""
    tiles = np.asarray(tiles, dtype=np.int64)
    n = int(pa.n_tiles)
    if n > MEMO_MAX_TILES:
        return np.maximum(np.asarray(kernel.batch_error(pa.tileset, tiles), dtype=np.float64), 0.0)
    per_pa = _MEMO.of(pa)
    with _MEMO.lock:
        known = per_pa.get(kernel.name)
        if known is None:
            known = per_pa[kernel.name] = np.full(n, np.nan)
    got = known[tiles]
    miss = np.isnan(got)
    if miss.any():
        todo = np.unique(tiles[miss])
        e = np.maximum(np.asarray(kernel.batch_error(pa.tileset, todo), dtype=np.float64), 0.0)
        known[todo] = e       # another thread may write the same values: the same bits
        got = known[tiles]
    return got
