"""Exact prices of a matrix's edge tiles (akf-spec §4, §5).

The performance table's polynomials price full ``T×T`` tiles. When ``T`` does not divide the
matrix, the last block row and the last block column hold *edge tiles* of ``h < T`` rows or
``w < T`` columns. The table used to price such a tile as a full tile of the same density scaled
by its area, ``h·w/T²``. That is right for what grows with the area (DENSE's values) and wrong
for what does not:

* per-event costs grow with ``w`` (one event per routed column), final and reduction work with ``h``;
* LOWRANK's payload and work are ``r·(h + w)``, not ``∝ h·w``;
* the per-event cycle (``event_cycles``) and the ``ceil`` of MACs over the lanes do not shrink
  with the tile.

On uniform 100×100 matrices at T = 32 (edge tiles 32×4, 4×32 and 4×4) the area scaling
under-predicted every kernel's edge tiles: cycles by 40–80 %, LOWRANK's energy by 78–80 %. The
selector then chose LOWRANK2 for a 5×5 matrix (11.7 % error) and LOWRANK1 for a 1×1 matrix at
1.05× the cost of DENSE.

There are at most ``n_block_rows + n_block_cols − 1`` edge tiles, so they are priced exactly:
``unit_costs`` of each kernel's ``npu_work`` — the closed form the table is calibrated on
(:func:`akfviz.npu.costmodel.unit_costs`). Every cost path of the selector uses these prices for
edge tiles and the table for full tiles: the units' ``R`` and payload bytes, the member sums, the
chosen pass of a plan, ``R_dense`` (DENSE on each edge shape, :func:`dense_shape_prices`), the
explanation tables and :func:`.perftable.prediction_error`.
"""
from __future__ import annotations

import numpy as np

from .analysis_memo import AnalysisMemo
from .perftable import MEASURE_NAMES, _price


def edge_tile_index(pa) -> np.ndarray:
    """Sorted indices (int64) of the nonempty tiles of ``pa`` with fewer than ``T`` rows or columns.

    Read from the analysis' compact arrays (no full pass): the tiles of the last row block when
    ``T`` does not divide the rows, and those of the last column block when it does not divide
    the columns."""
    comp = pa.compact
    T = int(pa.tile)
    n_rows, n_cols = (int(x) for x in pa.shape)
    rb_ptr = np.asarray(comp.rb_ptr, dtype=np.int64)
    parts = []
    if n_rows % T:
        parts.append(np.arange(rb_ptr[-2], rb_ptr[-1], dtype=np.int64))
    if n_cols % T:
        parts.append(np.flatnonzero(np.asarray(comp.col_block) == (n_cols - 1) // T).astype(np.int64))
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(parts))


class EdgePrices:
    """Exact energy, cycles and payload bytes of one analysis' edge tiles, per kernel (made on
    first use and kept).

    Parameters
    ----------
    pa : PatternAnalysis
    hw : HardwareConfig
    rho_x : float
        Activation density (each routed column fires with this probability, as in the table).

    Attributes
    ----------
    idx : ndarray of int64
        The edge tiles (:func:`edge_tile_index`), sorted.
    """

    def __init__(self, pa, hw, rho_x: float):
        self.idx = edge_tile_index(pa)
        self.idx.setflags(write=False)
        self.hw = hw
        self.rho_x = float(rho_x)
        self._ts = pa.tileset.subset(self.idx) if self.idx.size else None
        self._by_kernel = {}

    @property
    def n(self) -> int:
        """Number of edge tiles."""
        return int(self.idx.size)

    def of(self, name: str) -> np.ndarray:
        """``(n, 3)`` read-only: energy (pJ), cycles and payload bytes of every edge tile under the
        kernel ``name`` (:data:`.perftable.MEASURE_NAMES` order)."""
        got = self._by_kernel.get(name)
        if got is None:
            from ..kernels.registry import get_kernel

            if self.n == 0:
                got = np.zeros((0, len(MEASURE_NAMES)))
            else:
                got = _price(get_kernel(name), self._ts, np.arange(self.n, dtype=np.int64), self.hw, self.rho_x)
            got.setflags(write=False)
            with _MEMO.lock:   # a module lock: a plan's report holds this object and is pickled
                got = self._by_kernel.setdefault(name, got)
        return got

    def weighted(self, names, weights: dict) -> np.ndarray:
        """``(n, len(names))``: ``Σ_m weights[m] · price_m`` of every edge tile under each kernel."""
        out = np.zeros((self.n, len(names)))
        for j, name in enumerate(names):
            p = self.of(name)
            for meas, wt in weights.items():
                out[:, j] += float(wt) * p[:, MEASURE_NAMES.index(meas)]
        return out

    def locate(self, tiles) -> tuple:
        """``(rows, pos)``: the positions in ``tiles`` that are edge tiles and their rows in :attr:`idx`."""
        tiles = np.asarray(tiles, dtype=np.int64)
        if self.n == 0 or tiles.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        pos = np.minimum(np.searchsorted(self.idx, tiles), self.n - 1)
        rows = np.flatnonzero(self.idx[pos] == tiles)
        return rows, pos[rows]

    def overwrite(self, tiles, names, weights: dict, R: np.ndarray) -> np.ndarray:
        """Set the rows of ``R`` (``(len(tiles), len(names))``) that are edge tiles to their exact
        prices (:meth:`weighted`); returns ``R``."""
        rows, pos = self.locate(tiles)
        if rows.size:
            R[rows] = self.weighted(names, weights)[pos]
        return R


#: pa -> {(hw hash, rho_x): EdgePrices}; dropped with the analysis.
_MEMO = AnalysisMemo()


def edge_prices(pa, hw, rho_x: float, hw_hash: str | None = None) -> EdgePrices:
    """The :class:`EdgePrices` of an analysis for a hardware and ``rho_x``, shared by every selection
    on it (each kernel is priced once)."""
    key = (hw_hash or hw.config_hash(), float(rho_x))
    per_pa = _MEMO.of(pa)
    got = per_pa.get(key)
    if got is None:
        made = EdgePrices(pa, hw, rho_x)
        with _MEMO.lock:
            got = per_pa.setdefault(key, made)
    return got


def dense_shape_prices(T: int, h: int, w: int, hw, rho_x: float) -> np.ndarray:
    """Energy, cycles and payload bytes (length 3) of one ``h×w`` tile (``h, w ≤ T``) under DENSE,
    exactly (``unit_costs``): DENSE's work depends on the tile's shape only, so ``R_dense`` prices
    its edge tiles — empty ones included — with it, as the selector prices edge tiles."""
    import scipy.sparse as sp

    from ..analysis.pattern import analyze
    from ..kernels.registry import get_kernel

    pa = analyze(sp.csr_array(np.ones((int(h), int(w)))), tile=int(T))
    return _price(get_kernel("DENSE"), pa.tileset, np.zeros(1, dtype=np.int64), hw, rho_x)[0]
