"""The pre-computed performance table (akf-spec §4; paper §3 "pre-computed performance table",
"Horner's method").

For one hardware configuration, tile side ``T`` and activation density ``rho_x``, every kernel's
resource cost on a tile is modelled as a polynomial in the tile's density or its logarithm, one
polynomial per (kernel, structure class, measure):

.. math::  R_m(t, k) \\approx \\frac{h_t w_t}{T^2}\\; \\max\\big(p_{k, s(t), m}(x_t),\\;
           f_{k, s(t), m}\\big) + \\mathrm{overflow}_m(t, k)

with ``s(t)`` the structure class of the tile (:mod:`.structure`), ``x_t`` its density clipped to the
density range the class was calibrated on — or the log10 of that, per fit (see below) — the factor
``h·w/T²`` (1 for a full tile), and ``f`` the fit's floor: the smallest cost among its
calibration points (a quartic can dip between its points; at T = 5 one went below zero and made CSC
free). The polynomials price a tile whose payload fits in the PE's SRAM; the payload that does not fit is priced exactly from the predicted
payload bytes ``b`` (the ``bytes`` polynomial): with ``o = max(0, b − sram_bytes_per_pe)``, energy adds
``o · e_dram + ceil(o / dram_bytes_per_cycle) · e_leakage`` and cycles add
``ceil(o / dram_bytes_per_cycle)`` — the terms of :func:`akfviz.npu.costmodel.unit_costs`. (A single
polynomial cannot follow the step where the payload stops fitting: with 2 KB of SRAM it priced a full
CSC tile at 47,188 pJ against 526,647.)

Why log10 density (the spec says "a polynomial in density"): the calibration densities span three
decades, and costs that saturate (DIA's occupied diagonals, BLOCK's occupied blocks) rise
steeply below 10 % and stay flat above. A quartic in the density itself fits the 12 calibration
points but swings between them — on 40 held-out densities it was off by up to 221 % (DIA, random
tiles, energy: 32,000 pJ predicted at density 0.8 where the cost is 10,000); in log10 density the
worst held-out error is 61 % and the mean worst error per fit 4 % instead of 10 % (docs/decisions.md).
Costs affine in the nonzero count (CSC's bytes) are the opposite case: exact in the density, bent in
its log (the quartic in log10 density missed CSC's bytes at density 1 by 21 %). So each fit takes the
variable, log10 density (degree ≤ 6) or the density itself (degree ≤ 2, too low to swing), whose fit is
closer at its calibration points (:attr:`PerformanceTable.linear`). Degree 6 in log10 density, not 4: the
quartic could not follow the bend where a compressed format's occupied columns saturate (CSC on
random tiles, energy: 1,627 pJ predicted at density 0.1 where uniform tiles cost 1,496), so the table
over-predicted CSC, BITMAP, PRUNE and QUANT8 by 7–10 % on the MiniLM samples at T = 32 and by up to 21 %
at T = 64; with degree 6 the largest error of a total there is 4–8 %, and the mean error on 40 held-out
densities falls from 1.1 % to 0.8 % (T = 32) and from 1.6 % to 0.7 % (T = 64) (docs/decisions.md).
Measures: ``energy`` (pJ), ``cycles`` and ``bytes`` (payload bytes) — the columns
``energy_pj``, ``cycles``, ``bytes`` of :func:`akfviz.npu.costmodel.unit_costs`.

Calibration (hardware-driven, no user samples): for each class and a grid of 12 densities
log-spaced over the class's density range (``1/T²`` … 1 for ``random``, ``1/T²`` … 0.75 for
``block``, ``1/T`` … 0.55 for ``diagonal``, 0.3 … 0.5 for ``nm``), 3 seeded synthetic ``T×T`` tiles are made
(:func:`.structure.synthetic_tile`), laid on the diagonal of one matrix and tiled by
:func:`akfviz.analyze`. Each class is fitted on the tiles generated for it — except **below
2×2-entry coarse cells (T < 2·grid, i.e. T < 16)**, where a tile's class comes from the rule of
:mod:`.structure` and each class is fitted on the tiles the rule puts in it: a one-entry cell is
always full, so the rule calls most scattered tiles ``block``, and the fit on the generator's
4×4-block tiles priced them up to 8× too dear (a probe: tile-mode plans at T = 4 and 8 cost about
7× the energy of all-CSC). From 2×2 cells the rule and the generator agree on all but a few
calibration tiles. Below 2×2-entry cells, a class with fewer than :data:`MIN_FIT_DENSITIES` distinct
densities among the tiles the rule puts in it also takes the tiles generated for it (``random`` up to
T = 10 with seeds 0 and 1: the rule leaves it one density there). From T = 16 every class is fitted
on the 12 densities generated for it, so this fallback never applies.
Each kernel's :meth:`npu_work` of those tiles is priced by
``unit_costs`` — the closed form of the NPU engine for one tile alone on a PE, with each routed
column firing with probability ``rho_x``. The polynomial (degree ≤ 6) is fitted by *relative* least
squares (each point weighted by ``1/|y|``) to the on-chip part of the cost (the overflow terms
subtracted), so that cheap low-density tiles are fitted as well as expensive ones; the relative RMS
and largest error of the whole prediction (overflow included) at the calibration points are kept in
:attr:`PerformanceTable.fit_error`. Evaluation is Horner's rule in numba, vectorised over tiles (and
kernels).

Lossy kernels' *errors* are not in the table: the selector computes them exactly with
``batch_error``.

Edge tiles (fewer than ``T`` rows or columns, in the last block row or column) are not priced by the
table in the selector: the area factor ``h·w/T²`` under-predicted them (LOWRANK's ``r·(h + w)`` work,
the per-event cycle, the ``ceil`` over the MAC lanes), so the selector prices them exactly with
``unit_costs`` (:mod:`.edgecost`). :meth:`PerformanceTable.evaluate` itself still takes a scale, the
table's own estimate for such a shape.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..arguments import shown, to_float
from ..errors import InputError, checked_call
from ..frozen import read_only
from ..npu.hardware import as_hardware
from ._kernels import (CHOSEN_PARALLEL_MIN, _chosen_total, _chosen_total_serial, _first_codes, _full_tile_lut,
                       _full_tile_marks, _horner_1d, _horner_chosen, _horner_group_sums,
                       _horner_group_sums_lut, _horner_matrix, _horner_matrix_lut)
from .structure import CLASS_NAMES, STRUCTURE_CLASSES, classify_tiles, synthetic_tile

#: Resource measures: name -> column of ``unit_costs``.
MEASURES: dict = {"energy": "energy_pj", "cycles": "cycles", "bytes": "bytes"}
MEASURE_NAMES: tuple = tuple(MEASURES)
#: Axis labels: what one table value is (one tile's pass over one input vector).
MEASURE_UNITS: dict = {"energy": "pJ per tile", "cycles": "cycles per tile", "bytes": "payload bytes per tile"}
#: ``mix`` = Σ_m MIX_WEIGHTS[m] · R_m / R_dense,m  (each measure as a share of Dense, averaged).
MIX_WEIGHTS: dict = {"energy": 1 / 3, "cycles": 1 / 3, "bytes": 1 / 3}
RESOURCES: tuple = MEASURE_NAMES + ("mix",)


def measure_weights(resource: str, dense_by_measure: dict) -> dict:
    """Weight of each table measure in the selector's resource ``R``: ``{resource: 1}``, or for ``mix``
    ``MIX_WEIGHTS[m] / R_dense,m`` (each measure as a share of Dense), measures with ``R_dense,m = 0`` left
    out. ``R`` of a tile is ``Σ_m weight_m · R_m``."""
    if resource != "mix":
        return {resource: 1.0}
    return {m: MIX_WEIGHTS[m] / dense_by_measure[m] for m in MEASURE_NAMES if dense_by_measure[m] > 0}
#: Largest degree of a fit in log10 density (6 since the forty-sixth session; 4 before, module docstring).
MAX_DEGREE = 6
N_DENSITIES = 12
#: A class's fit takes the tiles the rule puts in it; with fewer distinct densities than this among
#: them it also takes the tiles generated for the class (module docstring).
MIN_FIT_DENSITIES = 3
N_REPEATS = 3


def check_resource(resource) -> str:
    """A resource measure's canonical name (one of ``RESOURCES``, given in any case)."""
    key = resource.strip().lower() if isinstance(resource, str) else resource
    if key not in RESOURCES:
        raise InputError(
            f"Unknown resource measure {resource!r}; choose one of {', '.join(RESOURCES)} "
            "(mix = the average of energy, cycles and bytes, each as a share of Dense)."
        )
    return key


def horner(coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Evaluate one polynomial (coefficients highest power first, as ``numpy.polyval``) at ``x``
    by Horner's rule in numba (akf-spec §4): ``p(x) = (…(c₀·x + c₁)·x + …)·x + c_d``.

    The one-polynomial form of the rule the table's kernels (``evaluate``, ``group_sums``,
    ``chosen_pass``) apply inline; no library code calls it, the tests call it as API and
    check it against ``numpy.polyval``. An empty ``coef`` gives zeros."""
    c = np.ascontiguousarray(coef, dtype=np.float64).ravel()
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty(x.size)
    if c.size == 0:
        out[:] = 0.0
        return out
    _horner_1d(c, x, out)
    return out


def _array_or_none(values):
    """``np.asarray(values)``, or None when numpy cannot make an array of it (a ragged list)."""
    try:
        return np.asarray(values)
    except (TypeError, ValueError):
        return None


def _described(value, arr) -> str:
    """How a message names a rejected array argument: its shape and dtype when it became an array,
    else its (shortened) repr."""
    if arr is not None and arr.dtype.kind not in "OUS":
        return f"shape {arr.shape} of {arr.dtype}"
    return shown(value)


def _float_array(values, name: str) -> np.ndarray:
    """``values`` as a contiguous 1-D float64 array of finite numbers (InputError otherwise: the numba
    evaluations take them unchecked; a 2-D array failed in numba's type inference, a string with
    "could not convert string to float")."""
    arr = _array_or_none(values)
    if arr is None or arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iuf"):
        raise InputError(f"{name} must be a 1-D array of numbers, got {_described(values, arr)}.")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.size and not np.all(np.isfinite(arr)):
        raise InputError(f"{name} must be finite numbers (got NaN or infinity).")
    return arr


def _id_array(values, n_valid: int, name: str, what: str, size: int | None = None, *,
              keep_dtype: bool = False) -> np.ndarray:
    """``values`` as a 1-D integer array of indices in ``0 … n_valid − 1``.

    The numba evaluations of the table index its coefficient arrays with such ids without bounds
    checks, so an id out of range read memory beyond them (wrong numbers, or the process crashed).

    Parameters
    ----------
    values : array-like of int
    n_valid : int
        How many things the ids index.
    name, what : str
        The argument's name and what one id is (for messages).
    size : int, optional
        The number of entries required (one per tile).
    keep_dtype : bool
        Keep an integer array's own dtype (the numba kernel is compiled for it) instead of int64.

    Returns
    -------
    ndarray
        Contiguous; int64 unless ``keep_dtype``.

    Raises
    ------
    InputError
        Not a 1-D array of whole numbers, the wrong number of entries, or an id out of range.
    """
    arr = _array_or_none(values)
    if arr is None or arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InputError(f"{name} must be a 1-D array of whole numbers ({what}), got {_described(values, arr)}.")
    if size is not None and arr.size != size:
        raise InputError(f"{name} must have one entry per tile ({size:,}), got {arr.size:,}.")
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= n_valid:
            allowed = f"from 0 to {n_valid - 1}" if n_valid > 0 else "— there are none to index"
            raise InputError(f"{name} must hold {what} {allowed}, got {lo if lo < 0 else hi}.")
    if keep_dtype and arr.size:
        return np.ascontiguousarray(arr)
    return np.ascontiguousarray(arr, dtype=np.int64)


#: Most bytes of full-tile values a table remembers (:meth:`PerformanceTable._full_tile_values`).
FULL_TILE_MEMO_BYTES = 32 << 20
#: :meth:`PerformanceTable.evaluate` takes the rows of full tiles from a table per (class, nonzeros),
#: on the worker threads, from this many tiles on (tile mode of a large matrix: 950,626 tiles × 17
#: kernels took 0.5 s per measure, one evaluation of two polynomials per cell).
MATRIX_LUT_MIN_ROWS = 8192
#: Most cells (kernels in use × classes × (T² + 1)) of the memo a serial chosen pass fills for full
#: tiles (:meth:`PerformanceTable.chosen_pass`): 8 MB of NaN to set, ≈ 1 ms, beside the ≈ 130 ns
#: per tile it saves.
CHOSEN_MEMO_MAX_CELLS = 1 << 20


# --------------------------------------------------------------------------- the table
@dataclass(frozen=True, eq=False)
class PerformanceTable:
    """Fitted resource polynomials per (kernel, structure class, measure).

    Attributes
    ----------
    hw_hash : str
        ``HardwareConfig.config_hash()`` of the hardware it was calibrated for.
    tile, rho_x, seed : int, float, int
        Tile side, activation density and calibration seed.
    kernels, classes, measures : tuple of str
        Axis labels of :attr:`coef`.
    coef : ndarray (n_kernels, n_classes, n_measures, MAX_DEGREE + 1)
        Coefficients of the polynomials, highest power first (``numpy.polyval`` order; unused leading
        coefficients are 0), in ``log10`` density or, where :attr:`linear` is set, in the density itself
        (:func:`density_variable` gives the log10).
    linear : ndarray of bool (n_kernels, n_classes, n_measures)
        Fits whose variable is the density (a polynomial of degree ≤ 2), not its log10.
    domain : ndarray (n_classes, 2)
        Density range calibrated per class; evaluation clips the density into it.
    floor : ndarray (n_kernels, n_classes, n_measures)
        Smallest on-chip cost among each fit's calibration points; a prediction never goes below it.
    overflow : ndarray (4,)
        ``(sram_bytes_per_pe, dram_bytes_per_cycle, DRAM pJ per byte, leakage pJ per PE-cycle)`` of the
        hardware: the payload beyond the SRAM is priced with them (module docstring).
    calibration : DataFrame
        One row per (kernel, calibration tile, fit using it): ``kernel, class`` (the fit),
        ``tile`` (the synthetic tile's number) and ``repeat`` (its seeded repeat at that nominal
        density), ``density, energy`` (pJ), ``cycles, bytes, classified_as`` (the class the rule of :mod:`.structure`
        gives the synthetic tile) and ``made_as`` (the class it was generated for). A tile is in
        one fit (these rows come first, in tile order) and, when a class has too few
        of its own, in the fit of the class it was made for (rows after those). Its fit is the class
        it was made for, except at T < 2·grid, where it is its rule class (module docstring).
    fit_error : DataFrame
        One row per fit: ``kernel, class, measure, variable`` (density or log10 density), ``degree,
        n_points, rel_rms, max_rel``.
    source : str
        What the calibration points were priced with.
    build_seconds : float
    """

    hw_hash: str
    tile: int
    rho_x: float
    seed: int
    kernels: tuple
    classes: tuple
    measures: tuple
    coef: np.ndarray
    linear: np.ndarray
    domain: np.ndarray
    floor: np.ndarray
    overflow: np.ndarray
    calibration: pd.DataFrame
    fit_error: pd.DataFrame
    source: str = "akfviz.npu.costmodel.unit_costs"
    build_seconds: float = 0.0

    def kernel_ids(self, names) -> np.ndarray:
        """Indices of kernel names in :attr:`kernels` (InputError for a name not in the table); one
        name may be given as a string (it was read letter by letter: "Kernel 'C' is not in the table")."""
        if isinstance(names, str):
            names = [names]
        lut = {k: i for i, k in enumerate(self.kernels)}
        out = []
        for n in names:
            if n not in lut:
                raise InputError(
                    f"Kernel {n!r} is not in the performance table; it has {', '.join(self.kernels)}."
                )
            out.append(lut[n])
        return np.asarray(out, dtype=np.int64)

    def _measure_index(self, measure) -> int:
        if not isinstance(measure, str) or measure not in self.measures:
            raise InputError(f"Unknown measure {measure!r}; the table has {', '.join(self.measures)}.")
        return self.measures.index(measure)

    def _args(self):
        """The arrays every numba evaluation takes: coefficients, floors, overflow prices, domain."""
        return (np.ascontiguousarray(self.coef), np.ascontiguousarray(self.linear),
                np.ascontiguousarray(self.floor),
                np.ascontiguousarray(self.overflow, dtype=np.float64),
                self.domain[:, 0].copy(), self.domain[:, 1].copy())

    @staticmethod
    def _densities(density) -> np.ndarray:
        """Tile densities as a contiguous 1-D float64 array of finite numbers."""
        return _float_array(density, "Tile densities")

    def _tile_arrays(self, cls, density, scale):
        """``(cls, density, scale)`` of :meth:`evaluate` and its siblings, checked: one entry per
        tile in each, class ids in ``0 … n_classes − 1`` (the numba kernels index the coefficients
        with them unchecked: a class id of 10**9 crashed the process), scale finite (default ones)."""
        x = self._densities(density)
        cls = _id_array(cls, len(self.classes), "cls", "structure class ids", x.size)
        if scale is None:
            return cls, x, np.ones(x.size)
        s = _float_array(scale, "scale (h·w/T² per tile, 1 for a full tile)")
        if s.size != x.size:
            raise InputError(f"scale (h·w/T² per tile) must have one entry per tile ({x.size:,}), got {s.size:,}.")
        return cls, x, s

    def evaluate(self, kernels, cls, density, scale=None, measure: str = "energy") -> np.ndarray:
        """Predicted resource of every tile under every kernel: array ``(n_tiles, len(kernels))``.

        Parameters
        ----------
        kernels : sequence of str
        cls : int array (n,)
            Structure class ids (:func:`.structure.classify_tiles`).
        density : float array (n,)
        scale : float array (n,), optional
            ``h·w/T²`` (1 for full tiles; default all ones).
        measure : {"energy", "cycles", "bytes"}

        Raises
        ------
        InputError
            A kernel not in the table, an unknown measure, arrays of different lengths, a class id
            outside ``0 … n_classes − 1``, or densities that are not finite numbers. (The numba
            kernels read the arrays unchecked; a class id of 10**9 crashed the process.)
        """
        cls, x, s = self._tile_arrays(cls, density, scale)
        kids = self.kernel_ids(kernels)
        m = self._measure_index(measure)
        coef, lin, floor, ovf, lo, hi = self._args()
        out = np.empty((x.size, kids.size))
        lut_args = self._full_tile_table(cls, x, s, kids.size)
        if lut_args is not None:   # many tiles (tile mode): full tiles share a row per (class, nonzeros)
            T2, used, lut = lut_args
            k = max(1, min(x.size // 4096, 8 * numba.get_num_threads()))
            bounds = np.linspace(0, x.size, k + 1).round().astype(np.int64)
            _horner_matrix_lut(coef, lin, floor, ovf, m, lo, hi, cls, x, s, kids, T2, used, lut, bounds, out)
        else:
            _horner_matrix(coef, lin, floor, ovf, m, lo, hi, cls, x, s, kids, out)
        return out

    def evaluate_chosen(self, kernel_index, cls, density, scale=None, measure: str = "energy"):
        """Predicted resource of each tile under its own kernel (``kernel_index`` into :attr:`kernels`).

        The arguments are checked as in :meth:`evaluate`; ``kernel_index`` must hold one index in
        ``0 … len(kernels) − 1`` per tile (InputError otherwise)."""
        cls, x, s = self._tile_arrays(cls, density, scale)
        kid = _id_array(kernel_index, len(self.kernels), "kernel_index", "indices into the table's kernels",
                        x.size)
        m = self._measure_index(measure)
        coef, lin, floor, ovf, lo, hi = self._args()
        out = np.empty(x.size)
        _horner_chosen(coef, lin, floor, ovf, m, lo, hi, cls, x, s, kid, out)
        return out

    def group_sums(self, kernels, cls, density, scale, group, n_groups, measure="energy"):
        """Σ over the tiles of each group (e.g. cluster) of the predicted resource, per kernel.

        The arguments are checked as in :meth:`evaluate`; ``group`` must hold one id in
        ``0 … n_groups − 1`` per tile and ``n_groups`` be a whole number ≥ 0 (InputError otherwise)."""
        from ..arguments import check_whole

        kids = self.kernel_ids(kernels)
        m = self._measure_index(measure)
        coef, lin, floor, ovf, lo, hi = self._args()
        cls, x, s = self._tile_arrays(cls, density, scale)
        n_groups = check_whole(n_groups, "n_groups (the number of groups)", 0)
        group = _id_array(group, n_groups, "group", "group ids", x.size)
        out = np.zeros((n_groups, kids.size))
        lut_args = self._full_tile_table(cls, x, s, kids.size)
        if lut_args is not None:
            T2, used, lut = lut_args
            k = max(1, min(kids.size, numba.get_num_threads()))
            kbounds = np.linspace(0, kids.size, k + 1).round().astype(np.int64)
            _horner_group_sums_lut(coef, lin, floor, ovf, m, lo, hi, cls, x, s, kids, group, T2, used, lut,
                                   kbounds, out)
        else:
            _horner_group_sums(coef, lin, floor, ovf, m, lo, hi, cls, x, s, kids, group, out)
        return out

    def _full_tile_table(self, cls, x, s, nk):
        """``(T², used, lut)`` for the table paths of :meth:`evaluate` and :meth:`group_sums` when
        there are many tiles (:data:`MATRIX_LUT_MIN_ROWS`, and four per table row): the
        ``(class, nonzeros)`` pairs of the full tiles marked in ``used``, ``lut`` to be filled
        for them. None for few tiles."""
        T2 = float(int(self.tile) ** 2)
        if x.size < MATRIX_LUT_MIN_ROWS or x.size < 4 * len(self.classes) * (T2 + 1):
            return None
        used = np.zeros((len(self.classes), int(T2) + 1), dtype=np.bool_)
        _full_tile_marks(cls, x, s, T2, used)
        return T2, used, np.empty(used.shape + (nk,))

    def _full_tile_values(self, kid: int, mw: np.ndarray) -> np.ndarray:
        """``(n_classes, T² + 1)``: the chosen-pass value of a full ``T×T`` tile of every class and
        nonzero count under table kernel ``kid`` and measure weights ``mw`` (:func:`_full_tile_lut`),
        remembered on the table per (kernel, weights): each ``select`` asked for it again."""
        memo = self.__dict__.get("_full_tile_memo")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_full_tile_memo", memo)
        key = (kid, mw.tobytes())
        got = memo.get(key)
        if got is None:
            T = int(self.tile)
            coef, lin, floor, ovf, lo, hi = self._args()
            got = np.empty((1, len(self.classes), T * T + 1))
            _full_tile_lut(coef, lin, floor, ovf, mw, lo, hi, np.array([kid], dtype=np.int64), np.int64(T),
                           float(T) ** 2, got)
            got = got[0]
            got.setflags(write=False)
            if sum(a.nbytes for a in memo.values()) + got.nbytes > FULL_TILE_MEMO_BYTES:
                memo.clear()   # the weights of the ``mix`` measure differ per matrix: keep it bounded
            memo[key] = got
        return got

    def chosen_pass(self, pa, unit_of_tile, kernel_of_unit, weights: dict, codes: bool = False, edges=None):
        """``Σ_t Σ_m weights[m] · R_m(t, kernel(t))`` over every tile of an analysis, where
        ``kernel(t) = kernel_of_unit[unit_of_tile[t]]`` (indices into :attr:`kernels`), and with
        ``codes=True`` each tile's kernel as a code, in one numba pass over the analysis' compact
        per-tile arrays (``pa.compact``: class, nnz, column block; no full pass).

        With ``edges`` (the analysis' :class:`.edgecost.EdgePrices`) the tiles of fewer than ``T`` rows
        or columns are priced exactly, as the selector prices them: the pass leaves them out and their
        exact prices are added after it, in tile order. Without it they are priced by the table scaled
        by ``h·w/T²``.

        Returns
        -------
        total : float
        codes : ndarray of int8 (n,) or None
            Code of tile ``t``'s kernel, codes numbered in order of first appearance
            (``pandas.factorize(sort=False)`` order).
        kernels : ndarray of int64 or None
            Table kernel index of each code (``kernels[codes[t]] == kernel_of_unit[unit_of_tile[t]]``).

        Raises
        ------
        InputError
            ``unit_of_tile`` without one entry per tile of ``pa``, or with a unit outside
            ``kernel_of_unit``, or ``kernel_of_unit`` with an index outside :attr:`kernels` (the
            pass reads them unchecked: such indices summed memory beyond the arrays).

        Notes
        -----
        Summed in 64 chunks of tiles whose partial sums are added in order (deterministic). Full
        ``T×T`` tiles read their value from a table over (kernel, class, nnz) built with the same
        float operations when that table is small beside the number of tiles, so the result is the
        same bits as a direct evaluation of every tile."""
        comp = pa.compact
        n = int(comp.nnz.shape[0])
        if n == 0:
            return 0.0, (np.zeros(0, np.int8) if codes else None), (np.zeros(0, np.int64) if codes else None)
        mw = np.zeros(len(self.measures))
        for meas, wt in weights.items():
            mw[self._measure_index(meas)] = float(wt)
        coef, lin, floor, ovf, lo, hi = self._args()
        # the numba pass indexes with both unchecked: a unit or kernel out of range read beyond the arrays
        kou = _id_array(kernel_of_unit, len(self.kernels), "kernel_of_unit", "indices into the table's kernels")
        uot = np.ascontiguousarray(_id_array(unit_of_tile, kou.size, "unit_of_tile",
                                             "indices into kernel_of_unit", n, keep_dtype=True))
        T = int(self.tile)
        used = np.unique(kou)
        slot = np.zeros(len(self.kernels), dtype=np.int64)
        slot[used] = np.arange(used.size)
        parallel = n >= CHOSEN_PARALLEL_MIN and numba.get_num_threads() > 1
        cells = used.size * len(self.classes) * (T * T + 1)
        if cells <= n // 4:   # the full tables (remembered per kernel and weights)
            lut = np.stack([self._full_tile_values(int(k), mw) for k in used])
        elif not parallel and cells <= CHOSEN_MEMO_MAX_CELLS:
            # few tiles (a stencil's 9,712): the pass fills a memo for the (class, nonzeros) pairs its
            # full tiles have, a handful, instead of evaluating each tile (1.3 → 0.1 ms)
            lut = np.full((used.size, len(self.classes), T * T + 1), np.nan)
        else:
            lut = np.empty((0, len(self.classes), 1))
        if len(self.kernels) > 127:  # pragma: no cover - int8 codes hold 127 kernels
            raise InputError("chosen_pass codes are int8; the table has more than 127 kernels.")
        # one kernel in use: the pass reads it once (not per tile), and every tile's code is 0, set
        # at once instead of tile by tile in the pass
        one_kid = int(used[0]) if used.size == 1 else -1
        one_code = codes and one_kid >= 0
        out = np.empty(n if codes and not one_code else 0, dtype=np.int8)
        code_of_kid = np.full(len(self.kernels), -1, dtype=np.int8)
        n_codes = _first_codes(uot, kou, np.int64(used.size), code_of_kid) if codes else 0
        n_rows, n_cols = (int(x) for x in pa.shape)
        run = _chosen_total if parallel else _chosen_total_serial
        exact = edges is not None and edges.n > 0
        total = run(coef, lin, floor, ovf, mw, lo, hi, pa.tileset.rb_ptr, comp.col_block,
                    comp.nnz, comp.cls, n_rows, n_cols, uot, kou, np.int64(T), lut, slot,
                    np.int64(64), out, code_of_kid, np.int64(one_kid), exact)
        if exact:
            kid_e = kou[uot[edges.idx]]
            vals = np.zeros(edges.n)
            for k in np.unique(kid_e):
                at = kid_e == k
                vals[at] = edges.weighted([self.kernels[int(k)]], weights)[at, 0]
            total = total + float(vals.sum())
        if not codes:
            return float(total), None, None
        if one_code:
            out = np.zeros(n, dtype=np.int8)
        kernels = np.zeros(int(n_codes), dtype=np.int64)
        seen = np.flatnonzero(code_of_kid >= 0)
        kernels[code_of_kid[seen].astype(np.int64)] = seen
        return float(total), out, kernels

    def predict(self, kernel: str, cls: str, density, measure: str = "energy") -> np.ndarray:
        """Predicted resource of full ``T×T`` tiles of one kernel and class at the given densities.

        Parameters
        ----------
        kernel : str
            A kernel of :attr:`kernels`.
        cls : str
            A structure class (:data:`.structure.CLASS_NAMES`).
        density : float or 1-D array of float
            Densities in ``[0, 1]``; clipped into the class's calibrated range before evaluation.
        measure : {"energy", "cycles", "bytes"}

        Returns
        -------
        ndarray (n,)
            One prediction per density (``n = 1`` for a single number).

        Raises
        ------
        InputError
            An unknown kernel, class or measure, or a density that is not a number in ``[0, 1]``
            (a density of 5 was priced as a full tile; a 2-D array failed inside numba).
        """
        from .structure import class_id

        d = _array_or_none(density)
        if d is None or d.ndim > 1 or (d.size and d.dtype.kind not in "iuf"):
            raise InputError(f"density must be a number or a 1-D array of numbers between 0 and 1, got "
                             f"{_described(density, d)}.")
        d = np.atleast_1d(d.astype(np.float64))
        outside = ~np.isfinite(d) | (d < 0.0) | (d > 1.0 + 1e-9)   # a rounding above 1 is let through (clipped)
        if np.any(outside):
            bad = d[np.flatnonzero(outside)[0]]
            raise InputError(f"density must be between 0 and 1 (a tile's share of nonzero entries), "
                             f"got {float(bad)!r}.")
        return self.evaluate([kernel], np.full(d.size, class_id(cls)), d, measure=measure)[:, 0]

    def fits_frame(self) -> pd.DataFrame:
        """One row per fit: ``kernel, class, measure, variable`` (density or log10 density), ``c6 … c0``
        (coefficient of variable**p, highest first), the fit's ``floor``, the class's calibrated density
        range ``d_min, d_max``, and ``degree, n_points, rel_rms, max_rel``."""
        rows = []
        for i, k in enumerate(self.kernels):
            for j, c in enumerate(self.classes):
                for m, meas in enumerate(self.measures):
                    rows.append((k, c, meas, *self.coef[i, j, m], self.floor[i, j, m], *self.domain[j]))
        cols = (["kernel", "class", "measure"] + [f"c{p}" for p in range(MAX_DEGREE, -1, -1)]
                + ["floor", "d_min", "d_max"])
        df = pd.DataFrame(rows, columns=cols).merge(self.fit_error, on=["kernel", "class", "measure"], how="left")
        return df[cols[:3] + ["variable"] + [c for c in df.columns if c not in cols[:3] + ["variable"]]]

    fits = fits_frame


# --------------------------------------------------------------------------- calibration
def _calibration_set(T: int, seed: int):
    """The synthetic calibration tiles: list of (class, nominal density, repeat, tile)."""
    items = []
    for cname in CLASS_NAMES:
        sc = STRUCTURE_CLASSES[cname]
        grid = np.geomspace(max(sc.min_density(T), 1.0 / (T * T)), sc.max_density, N_DENSITIES)
        for i, d in enumerate(grid):
            for rep in range(N_REPEATS):
                s = np.random.SeedSequence([int(seed), sc.cid, i, rep]).generate_state(1)[0]
                items.append((cname, float(d), rep, synthetic_tile(cname, T, float(d), seed=int(s))))
    return items


def _price(kernel, ts, idx, hw, rho_x, overflow: bool = False) -> np.ndarray:
    """(len(idx), 3) energy, cycles, bytes of each tile under ``kernel`` (0 for tiles it does not place);
    with ``overflow=True`` a fourth column: the payload bytes beyond the PE's SRAM."""
    from ..npu.costmodel import unit_costs

    cols = list(MEASURES.values()) + (["dram_bytes"] if overflow else [])
    work = kernel.npu_work(ts, idx)
    out = np.zeros((len(idx), len(cols)))
    if work.n_tiles == 0:
        return out
    uc = unit_costs(work, hw, rho_x)
    pos = np.full(ts.n_tiles, -1, dtype=np.int64)
    pos[idx] = np.arange(len(idx))
    rows = pos[np.asarray(work.tile_index, dtype=np.int64)]
    for m, col in enumerate(cols):
        np.add.at(out[:, m], rows, uc[col].to_numpy(dtype=np.float64))
    return out


def overflow_prices(hw) -> np.ndarray:
    """``(sram_bytes_per_pe, dram_bytes_per_cycle, DRAM pJ per byte, leakage pJ per PE-cycle)``: what the
    table needs to price the payload that does not fit in a PE's SRAM (module docstring)."""
    return np.array([float(hw.sram_bytes_per_pe), float(hw.dram_bytes_per_cycle),
                     float(hw.energy["dram"]), float(hw.energy["leakage"])])


def _on_chip(P: np.ndarray, ovf: np.ndarray) -> np.ndarray:
    """The calibration costs without their overflow terms (``P`` from ``_price(..., overflow=True)``)."""
    stream = np.ceil(P[:, 3] / ovf[1])
    out = P[:, :3].copy()
    out[:, 0] -= P[:, 3] * ovf[2] + stream * ovf[3]
    out[:, 1] -= stream
    return np.maximum(out, 0.0)


#: Largest degree of a fit in the density itself (low, so that it cannot swing between its points).
LINEAR_DEGREE = 2


def _fit_in(x, y, max_degree):
    """Relative least-squares polynomial of degree ≤ ``max_degree`` in ``x``; returns (coef padded to
    MAX_DEGREE+1, degree, worst relative error at the points after the floor ``min(y)``)."""
    coef = np.zeros(MAX_DEGREE + 1)
    ymax = float(np.max(np.abs(y))) if y.size else 0.0
    if ymax == 0.0:
        return coef, 0, 0.0
    deg = int(min(max_degree, np.unique(x).size - 1))
    denom = np.maximum(np.abs(y), 1e-9 * ymax)
    V = np.vander(x, deg + 1)
    c, *_ = np.linalg.lstsq(V / denom[:, None], y / denom, rcond=None)
    coef[MAX_DEGREE - deg:] = c
    pred = np.maximum(np.polyval(c, x), float(np.min(y)))
    return coef, deg, float(np.max(np.abs(pred - y) / denom))


def _fit(density, y):
    """The fit of one (kernel, class, measure): a polynomial of degree ≤ :data:`MAX_DEGREE` in log10 density, or one of degree ≤ 2
    in the density itself when that is closer at the calibration points (costs that are affine in the
    nonzero count — CSC's bytes, PRUNE's work — are exact in the density and bend in its log: the quartic
    in log10 density missed CSC's bytes at density 1 by 21 %). Returns (coef, degree, linear)."""
    c_log, d_log, e_log = _fit_in(density_variable(density), y, MAX_DEGREE)
    c_lin, d_lin, e_lin = _fit_in(np.asarray(density, dtype=np.float64), y, LINEAR_DEGREE)
    if e_lin < e_log:
        return c_lin, d_lin, True
    return c_log, d_log, False


def density_variable(density) -> np.ndarray:
    """The table's polynomial variable: ``log10`` of the (already clipped) density."""
    return np.log10(np.asarray(density, dtype=np.float64))


@checked_call
def calibrate(hw=None, tile: int = 32, *, rho_x: float = 1.0, seed: int = 0, kernels=None) -> PerformanceTable:
    """Build a :class:`PerformanceTable` from scratch (no cache); see the module docstring.

    Parameters
    ----------
    hw : HardwareConfig, optional (default ``HardwareConfig()``)
    tile : int
        Tile side T.
    rho_x : float in (0, 1]
        Activation density of the input vector (probability that a routed column fires).
    seed : int
        Seed of the synthetic calibration tiles.
    kernels : str or sequence of str, optional
        Kernels to calibrate (default: every registered kernel). Names are matched as
        :func:`akfviz.select` matches them (any case; a family name such as ``"NM"`` stands for its
        variants; duplicates dropped); the table keeps the registry spelling, so that
        :meth:`PerformanceTable.kernel_ids` finds ``"CSC"`` in a table asked for as ``["csc"]``.

    Returns
    -------
    PerformanceTable

    Raises
    ------
    InputError
        A bad argument: ``hw`` not a HardwareConfig, ``tile`` outside 4 … 256, ``rho_x`` outside
        (0, 1], ``seed`` not a whole number ≥ 0, ``kernels`` empty or naming no registered kernel.
    """
    from ..analysis.pattern import analyze
    from ..analysis.tiling import check_tile
    from ..arguments import check_seed
    from ..kernels.registry import get_kernel, kernel_names

    t0 = time.perf_counter()
    hw = as_hardware(hw)
    T = check_tile(tile)
    rho_x = check_rho_x(rho_x)
    seed = check_seed(seed)
    names = tuple(kernel_names()) if kernels is None else _calibration_kernels(kernels)
    items = _calibration_set(T, seed)
    A = sp.block_diag([sp.coo_array(it[3]) for it in items], format="csr")
    pa = analyze(A, tile=T)
    ts = pa.tileset
    if ts.n_tiles != len(items):  # every calibration tile has at least one nonzero
        raise RuntimeError("calibration tiles were not all found by build_tiles")
    idx = np.arange(ts.n_tiles, dtype=np.int64)
    nnz = np.diff(ts.ptr)
    density = nnz / (ts.h * ts.w)
    cls_name = np.array([it[0] for it in items], dtype=object)
    repeat = np.array([it[2] for it in items], dtype=np.int64)
    cls_id = np.array([STRUCTURE_CLASSES[c].cid for c in cls_name], dtype=np.int64)
    grid = int(getattr(pa.lsh, "grid", 8))
    classified = classify_tiles(pa.tiles_as_analysed(), grid=grid)
    # the points of each class's fit (module docstring): below 2×2-entry coarse cells the tiles the
    # rule puts in the class (and those made for it when the rule gives it too few distinct
    # densities), else the tiles made for it
    by_rule = T < 2 * grid
    members = []
    for j in range(len(CLASS_NAMES)):
        m = classified == j if by_rule else cls_id == j
        if np.unique(density[m]).size < MIN_FIT_DENSITIES:
            m = m | (cls_id == j)
        members.append(m)
    # rows of the calibration frame: every tile under its first fit, then the extra memberships
    first = classified.astype(np.int64) if by_rule else cls_id
    extra = [(np.flatnonzero(members[j] & (first != j)), j) for j in range(len(CLASS_NAMES))]
    row_tile = np.concatenate([idx] + [t for t, _ in extra])
    row_class = np.concatenate([first] + [np.full(t.size, j, dtype=np.int64) for t, j in extra])
    class_names = np.asarray(CLASS_NAMES, dtype=object)

    ovf = overflow_prices(hw)
    priced = {k: _price(get_kernel(k), ts, idx, hw, rho_x, overflow=True) for k in names}
    coef = np.zeros((len(names), len(CLASS_NAMES), len(MEASURES), MAX_DEGREE + 1))
    linear = np.zeros((len(names), len(CLASS_NAMES), len(MEASURES)), dtype=np.bool_)
    floor = np.zeros((len(names), len(CLASS_NAMES), len(MEASURES)))
    domain = np.zeros((len(CLASS_NAMES), 2))
    degrees = {}
    cal_frames = []
    for j, cname in enumerate(CLASS_NAMES):
        sel = members[j]
        domain[j] = (density[sel].min(), density[sel].max())
    for i, k in enumerate(names):
        P = priced[k]
        on_chip = _on_chip(P, ovf)
        # ``tile`` and ``repeat`` name the synthetic tile: a row's kernel, class and prices alone
        # repeat wherever the seeded repeats of a structured class price the same (export audit)
        cal_frames.append(pd.DataFrame({
            "kernel": k, "class": class_names[row_class], "tile": row_tile, "repeat": repeat[row_tile],
            "density": density[row_tile],
            "energy": P[row_tile, 0], "cycles": P[row_tile, 1], "bytes": P[row_tile, 2],
            "classified_as": class_names[classified[row_tile]], "made_as": cls_name[row_tile]}))
        for j, cname in enumerate(CLASS_NAMES):
            sel = members[j]
            for m, meas in enumerate(MEASURES):
                c, degrees[k, cname, meas], linear[i, j, m] = _fit(density[sel], on_chip[sel, m])
                coef[i, j, m] = c
                floor[i, j, m] = float(on_chip[sel, m].min())
    table = PerformanceTable(
        hw_hash=hw.config_hash(), tile=T, rho_x=rho_x, seed=int(seed), kernels=names, classes=CLASS_NAMES,
        measures=MEASURE_NAMES, coef=coef, linear=linear, domain=domain, floor=floor, overflow=ovf,
        calibration=pd.concat(cal_frames, ignore_index=True),
        fit_error=pd.DataFrame(),
    )
    # the fit error of the whole prediction (overflow included), as `predict` gives it at the points
    fit_rows = []
    for i, k in enumerate(names):
        for j, cname in enumerate(CLASS_NAMES):
            sel = members[j]
            as_j = np.full(int(sel.sum()), j, dtype=np.int64)
            for m, meas in enumerate(MEASURES):
                pred = table.evaluate([k], as_j, density[sel], measure=meas)[:, 0]
                y = priced[k][sel, m]
                ymax = float(np.max(np.abs(y))) if y.size else 0.0
                denom = np.maximum(np.abs(y), 1e-9 * ymax) if ymax > 0 else np.ones(y.size)
                rel = (pred - y) / denom
                fit_rows.append((k, cname, meas, "density" if linear[i, j, m] else "log10 density",
                                 degrees[k, cname, meas], int(sel.sum()),
                                 float(np.sqrt(np.mean(rel ** 2))) if rel.size else 0.0,
                                 float(np.max(np.abs(rel))) if rel.size else 0.0))
    fit_error = pd.DataFrame(fit_rows, columns=["kernel", "class", "measure", "variable", "degree",
                                                "n_points", "rel_rms", "max_rel"])
    return dataclasses.replace(table, fit_error=fit_error, build_seconds=time.perf_counter() - t0)


def _calibration_kernels(kernels) -> tuple:
    """The registry names of the kernels asked for in :func:`calibrate` (InputError for an empty list,
    an unknown name or something that is not a list of names).

    Before, ``kernels`` was taken as given: ``"CSC"`` was split into ``"C", "S", "C"``, ``[]`` ended in
    pandas' "No objects to concatenate", ``5`` in a TypeError, and ``["csc"]`` built a table whose
    kernel was ``"csc"``, which no caller asking for ``"CSC"`` found."""
    from ..kernels.base import Kernel
    from .costs import resolve_candidates

    if isinstance(kernels, Kernel):
        kernels = [kernels]
    if not isinstance(kernels, str) and np.iterable(kernels):
        kernels = [k.name if isinstance(k, Kernel) else k for k in kernels]
    try:
        return resolve_candidates(kernels)
    except InputError as exc:
        if "candidate kernels is empty" in str(exc):
            raise InputError("kernels is empty: give at least one kernel name to calibrate, or leave "
                             "kernels=None for every registered kernel.") from None
        raise


def check_rho_x(rho_x) -> float:
    """Validate an activation density in (0, 1]."""
    if isinstance(rho_x, (bool, np.bool_, str, bytes)):  # float() reads "0.5" and True (probe)
        raise InputError(f"rho_x (activation density) must be a number in (0, 1], got {shown(rho_x)}.")
    try:
        r = to_float(rho_x)
    except (TypeError, ValueError):
        raise InputError(f"rho_x (activation density) must be a number in (0, 1], got {shown(rho_x)}.") from None
    if r == 0.0:
        # simulate accepts 0 (no events: a run of setup and reductions only); pricing kernels and
        # comparing plans at no events would rank every kernel by its setup alone
        raise InputError("rho_x (activation density) must be in (0, 1] to select or compare plans: at 0 no "
                         "x_j fires, so no kernel does any work to compare. akfviz.simulate accepts 0 "
                         "(a run of setups and reductions only).")
    if not (0.0 < r <= 1.0):
        raise InputError(f"rho_x (activation density) must be in (0, 1], got {shown(rho_x)}.")
    return r


# --------------------------------------------------------------------------- caches
_LOCK = threading.Lock()
_TABLES: "OrderedDict[tuple, PerformanceTable]" = OrderedDict()        # by the configuration
_CALIBRATED: "OrderedDict[tuple, PerformanceTable]" = OrderedDict()    # by what the table reads (pricing_hash)
_DENSE: "OrderedDict[tuple, dict]" = OrderedDict()
CACHE_SIZE = 16


def _lru_get(store, key, build):
    with _LOCK:
        if key in store:
            store.move_to_end(key)
            return store[key]
    value = build()
    with _LOCK:
        store[key] = value
        store.move_to_end(key)
        while len(store) > CACHE_SIZE:
            store.popitem(last=False)
    return value


#: The hardware fields a performance table depends on: those :func:`.costmodel.unit_costs` reads
#: (the energy table, the cycles of an event, a decode, a tile's setup and a reduction, the MAC
#: lanes, a PE's SRAM and the DRAM bandwidth of what overflows it). The PE grid, the clock, the NoC's
#: latencies and the preset's name do not change the table, so changing them reuses a cached one
#: (rebuilding it took 0.13–0.18 s at T = 32 on every Apply of the NPU page's form).
PRICED_FIELDS = ("energy", "event_cycles", "decode_cycles", "setup_cycles", "reduce_cycles", "mac_lanes",
                 "sram_bytes_per_pe", "dram_bytes_per_cycle")


def pricing_hash(hw) -> str:
    """sha256 (hex) of the :data:`PRICED_FIELDS` of ``hw``: equal for configurations whose
    performance tables are equal (the tests change every other field and compare the tables)."""
    plain = as_hardware(hw).to_plain()
    text = json.dumps({f: plain[f] for f in PRICED_FIELDS}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@checked_call
def performance_table(hw=None, tile: int = 32, *, rho_x: float = 1.0, seed: int = 0,
                      hw_hash: str | None = None) -> PerformanceTable:
    """The performance table for a hardware configuration, cached in-process (LRU, 16 entries) by
    ``(hw.config_hash(), tile, rho_x, seed)`` over a cache of the calibrations by
    ``(pricing_hash(hw), tile, rho_x, seed)``: a change of a field the table reads
    (:data:`PRICED_FIELDS`) rebuilds it; another grid or clock reuses it, relabelled with this
    configuration's hash. ``hw_hash`` may pass an already computed ``hw.config_hash()``. The table's
    arrays are shared by every later call, so they are read-only (:mod:`akfviz.frozen`)."""
    from ..analysis.tiling import check_tile
    from ..arguments import check_seed

    hw = as_hardware(hw)
    tile, rho_x, seed = check_tile(tile), check_rho_x(rho_x), check_seed(seed)
    hw_hash = hw_hash or hw.config_hash()

    def build():
        base = _lru_get(_CALIBRATED, (pricing_hash(hw), tile, rho_x, seed),
                        lambda: read_only(calibrate(hw, tile, rho_x=rho_x, seed=seed)))
        # calibrated for a configuration that prices alike: the same arrays, this one's label
        return base if base.hw_hash == hw_hash else dataclasses.replace(base, hw_hash=hw_hash)

    return _lru_get(_TABLES, (hw_hash, tile, rho_x, seed), build)


def dense_resource(shape, tile: int, hw=None, *, rho_x: float = 1.0, hw_hash: str | None = None,
                   seed: int = 0) -> dict:
    """``R_dense``: the resource of the whole matrix with every tile — empty ones included — as DENSE.

    Priced as the selector prices the tiles: full ``T×T`` tiles by the performance table
    (:func:`performance_table` of ``hw``, ``tile``, ``rho_x``, ``seed``), edge tiles exactly
    (:func:`.edgecost.dense_shape_prices`, as :mod:`.edgecost` prices every edge tile), so that a plan
    with every tile DENSE on a matrix without empty tiles has a resource share of exactly 1 (up to
    rounding) whatever its shape. Computed without enumerating tiles: DENSE's cost does not depend on
    a tile's contents, and a matrix has at most four tile shapes (``T×T``, the last block row, the last
    block column, the corner), each priced once and multiplied by its count. (When the table scaled
    edge tiles by ``h·w/T²`` and this normaliser priced them exactly, an all-DENSE 33×33 plan had a
    share of 0.72: both sides must price edges the same way.)

    Returns
    -------
    dict
        ``{"energy": pJ, "cycles": cycles, "bytes": bytes}`` (sums over all tile slots); a copy of
        the cached value, so editing it changes nothing else.
    """
    hw = as_hardware(hw)
    n, m = (int(shape[0]), int(shape[1]))
    T = int(tile)
    hw_hash = hw_hash or hw.config_hash()
    key = (hw_hash, n, m, T, float(rho_x), int(seed))
    return dict(_lru_get(_DENSE, key, lambda: _dense_resource(
        n, m, T, performance_table(hw, T, rho_x=rho_x, seed=seed, hw_hash=hw_hash), hw, float(rho_x))))


def _dense_resource(n, m, T, table, hw, rho_x):
    from .edgecost import dense_shape_prices
    from .structure import class_id

    nbr, nbc = -(-n // T), -(-m // T)
    hl, wl = n - (nbr - 1) * T, m - (nbc - 1) * T
    rows = [(T, nbr - 1)] if nbr > 1 else []
    rows.append((hl, 1))
    cols = [(T, nbc - 1)] if nbc > 1 else []
    cols.append((wl, 1))
    shapes = [(h, w, rc * cc) for h, rc in rows for w, cc in cols]
    per_shape = np.empty((len(shapes), len(MEASURES)))
    for i, (h, w, _) in enumerate(shapes):
        if h == T and w == T:
            for j, meas in enumerate(MEASURES):
                per_shape[i, j] = table.evaluate(["DENSE"], np.full(1, class_id("random"), dtype=np.int64),
                                                 np.ones(1), measure=meas)[0, 0]
        else:
            per_shape[i] = dense_shape_prices(T, h, w, hw, rho_x)
    counts = np.array([c for _, _, c in shapes], dtype=np.float64)
    return {meas: float(counts @ per_shape[:, j]) for j, meas in enumerate(MEASURES)}


# --------------------------------------------------------------------------- accuracy on a matrix
def tile_scale(tiles, T: int) -> np.ndarray:
    """``h·w/T²`` per row of a tiles frame (1 for full tiles)."""
    return (tiles["h"].to_numpy(np.float64) * tiles["w"].to_numpy(np.float64)) / float(T * T)


@checked_call
def prediction_error(pa, hw=None, *, table: PerformanceTable | None = None, kernels=None,
                     rho_x: float = 1.0, max_tiles: int = 2000, seed: int = 0,
                     against: str = "unit_costs") -> pd.DataFrame:
    """The table's prediction error on the tiles of a PatternAnalysis.

    For each kernel, up to ``max_tiles`` tiles (a seeded sample when there are more) are priced exactly
    and compared with the prices the selector uses: the table's for full ``T×T`` tiles, the exact
    closed form for the tiles of fewer than ``T`` rows or columns (:mod:`.edgecost`; so their error
    against ``unit_costs`` is 0). ``against="unit_costs"`` prices them with
    ``unit_costs(kernel.npu_work(tiles))``; ``against="simulator"`` runs :func:`akfviz.simulate` on each
    tile alone on a 1×1 PE grid with every input nonzero, minus the same run without the tile
    (``rho_x`` must then be 1; slow — one simulation per tile and kernel, so keep ``max_tiles`` small).

    Parameters
    ----------
    pa : PatternAnalysis
        The analysed matrix.
    hw : HardwareConfig, optional
        Hardware (default ``HardwareConfig()``).
    table : PerformanceTable, optional
        The table to check (default: :func:`performance_table` of ``hw``, ``pa.tile``, ``rho_x``).
    kernels : list of str, optional
        Kernel names (default: all registered kernels).
    rho_x : float in (0, 1]
        Activation density of x.
    max_tiles : int ≥ 1
        Most tiles priced per kernel.
    seed : int ≥ 0
        Seed of the tile sample.
    against : {"unit_costs", "simulator"}
        How the true costs are priced.

    Returns
    -------
    DataFrame
        One row per (kernel, class, measure): ``n_tiles, rel_rms, max_rel, bias`` (mean signed relative
        error; > 0 means the table over-predicts), ``total_pred``, ``total_true``, ``total_rel`` (the
        error of the sum over the sampled tiles, which is what the selector's totals see).

    Raises
    ------
    InputError
        A bad argument, checked before any tile is priced: ``max_tiles`` not a whole number ≥ 1,
        ``seed`` not a whole number ≥ 0, ``rho_x`` outside (0, 1] (or not 1 with
        ``against="simulator"``), an unknown ``against``, ``hw`` not a HardwareConfig.
    """
    from ..arguments import check_seed, check_whole
    from ..kernels.registry import get_kernel
    from .costs import check_pa, resolve_candidates
    from .edgecost import edge_prices

    check_pa(pa, "prediction_error()")
    max_tiles = check_whole(max_tiles, "max_tiles (how many tiles to price per kernel)", 1)
    seed = check_seed(seed)
    rho_x = check_rho_x(rho_x)
    if not isinstance(against, str) or against not in _PRICERS:
        raise InputError(f"against must be one of {', '.join(_PRICERS)}, got {against!r}.")
    if against == "simulator" and rho_x != 1.0:
        raise InputError("The simulator check runs with every input nonzero; use rho_x=1.")
    hw = as_hardware(hw)
    if table is None:
        table = performance_table(hw, pa.tile, rho_x=rho_x)
    elif not isinstance(table, PerformanceTable):
        raise InputError(f"table must be a PerformanceTable (from performance_table), got {type(table).__name__}.")
    elif (table.tile, table.rho_x, table.hw_hash) != (int(pa.tile), rho_x, hw.config_hash()):
        raise InputError(
            f"This table was calibrated for T = {table.tile}, rho_x = {table.rho_x:g} and hardware "
            f"{table.hw_hash[:12]}…; the check needs one for T = {pa.tile}, rho_x = {rho_x:g} and this "
            f"hardware ({hw.config_hash()[:12]}…). Leave table=None to use the right one.")
    names = list(table.kernels) if kernels is None else list(resolve_candidates(kernels))
    table.kernel_ids(names)  # every name must be in the table
    tiles = pa.tiles_as_analysed()
    n = tiles.shape[0]
    cols = ["kernel", "class", "measure", "n_tiles", "rel_rms", "max_rel", "bias",
            "total_pred", "total_true", "total_rel"]
    if n == 0:
        return pd.DataFrame(columns=cols)
    idx = np.arange(n, dtype=np.int64)
    if n > max_tiles:
        idx = np.sort(np.random.default_rng(seed).choice(n, size=max_tiles, replace=False))
    grid = int(getattr(getattr(pa, "lsh", None), "grid", 8))
    cls = classify_tiles(tiles, grid=grid, idx=idx)
    dens = tiles["density"].to_numpy(np.float64)[idx]
    scale = tile_scale(tiles, pa.tile)[idx]
    rows = []
    pricer = _PRICERS[against]
    edges = edge_prices(pa, hw, rho_x)
    for k in names:
        true = pricer(get_kernel(k), pa, idx, hw, rho_x)
        for m, meas in enumerate(MEASURES):
            pred = edges.overwrite(idx, [k], {meas: 1.0}, table.evaluate([k], cls, dens, scale, measure=meas))[:, 0]
            for j, cname in enumerate(CLASS_NAMES):
                sel = cls == j
                if not sel.any():
                    continue
                y, p = true[sel, m], pred[sel]
                ymax = float(np.max(np.abs(y)))
                denom = np.maximum(np.abs(y), 1e-9 * ymax) if ymax > 0 else np.ones(y.size)
                rel = (p - y) / denom
                tt, tp = float(y.sum()), float(p.sum())
                rows.append((k, cname, meas, int(sel.sum()), float(np.sqrt(np.mean(rel ** 2))),
                             float(np.max(np.abs(rel))), float(np.mean(rel)), tp, tt,
                             (tp - tt) / tt if tt > 0 else 0.0))
    return pd.DataFrame(rows, columns=cols)


def _price_unit_costs(kernel, pa, idx, hw, rho_x):
    return _price(kernel, pa.tileset, idx, hw, rho_x)


def _price_simulator(kernel, pa, idx, hw, rho_x):
    """Each tile alone on a 1×1 grid, x = all ones (every routed column fires once), minus the same run
    without any tile: the input vector's DRAM load, the barrier and the write-back of y (every row of
    it, its bytes at DRAM energy, its cycles and their leakage) belong to the matrix, not to the tile's
    kernel, and the table does not price them (a held-out probe found every kernel's energy
    "over-estimated" by 80-99 % when the write-back was left in)."""
    from ..npu.simulate import simulate
    from ..npu.work import TileWork

    hw1 = hw.replace(rows=1, cols=1)
    x = np.ones(pa.shape[1])
    run = lambda w: simulate(w, hw1, x=x, shape=pa.shape, tile=pa.tile, mapping="greedy",  # noqa: E731
                             record=False)
    empty = run(TileWork.concat([]))
    base = (float(empty.energy_total_pj), float(empty.cycles))
    out = np.zeros((len(idx), len(MEASURES)))
    for i, t in enumerate(idx):
        work = kernel.npu_work(pa.tileset, np.array([t], dtype=np.int64))
        if work.n_tiles == 0:
            continue
        res = run(work)
        out[i] = (float(res.energy_total_pj) - base[0], float(res.cycles) - base[1],
                  float(work.payload_bytes.sum()))
    return out


#: How :func:`prediction_error` prices the true costs.
_PRICERS = {"unit_costs": _price_unit_costs, "simulator": _price_simulator}
