"""Parameter sweeps over the AKF pipeline (design-space exploration).

A sweep is the cartesian product of a few parameters, each over a short list of values
(``expand_grid``). Every point runs the pipeline stages that depend on it —
``analyze`` (per tile size), ``select`` (per selector setting), ``simulate`` (per hardware
setting) — and records the plan's measured error and the simulated cycles and energy, plus
the Dense baseline of the same hardware so speedups are comparable (akf-spec §8). With
``baselines=True`` it also records the Block-sparse and Static-sparse baselines of akf-spec §8,
simulated by :func:`akfviz.compare.compare` itself (so a sweep point and the Compare page agree),
and AKF's speedup and energy ratio against each.

Work that several points share is computed once: one analysis per tile size, one set of
baselines per (tile size, hardware, ρ_x). Points run in order locally, or as Dask tasks on a
local threaded scheduler (numba kernels release the GIL) with ``scheduler="dask"``.
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import math
import numbers
import os
import time
from collections.abc import Mapping as _MappingABC
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..arguments import check_seed, check_whole, choice, shown, to_float
from ..errors import InputError, checked_call
from ..npu.hardware import _INT_LIMITS as _HW_INT_LIMITS
from ..npu.hardware import as_hardware
from ..plain import to_plain

#: ``run_sweep``'s schedulers (any case, as every name the library takes).
SCHEDULERS = ("local", "dask")


def _fmt(v) -> str:
    """A bound for a message: whole numbers exactly (2**34, not 1.71799e+10), others compactly."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(int(v))
    return f"{v:g}"


def _value_word(v) -> str:
    """A grid value as a reader writes it: ``none`` for no budget, text as it is, numbers by :func:`_fmt`."""
    return ("none" if v is None else str(v) if isinstance(v, (str, bool))
            else _fmt(v) if isinstance(v, (int, float, np.integer, np.floating)) else str(v))


@dataclass(frozen=True)
class SweepParameter:
    """One sweepable parameter: where it goes and what values are allowed.

    Attributes
    ----------
    name : str
        The parameter's name (a key of :data:`SWEEP_PARAMETERS`).
    stage : str
        ``"analysis"``, ``"selection"``, ``"simulation"`` or ``"hardware"``.
    kind : type
        ``int``, ``float`` or ``str``.
    low, high : float or None
        Allowed range (inclusive) of a number.
    choices : tuple or None
        Allowed values of a choice.
    help : str
        One-line meaning, shown by the app.
    optional : bool
        ``None`` is a valid value (for ``error_budget``: no budget, alpha/beta decide).
    """

    name: str
    stage: str  # "analysis", "selection", "simulation" or "hardware"
    kind: type
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    help: str = ""
    optional: bool = False

    def check(self, value, label: str | None = None):
        """Return ``value`` converted to the parameter's type, or raise InputError; ``label``
        names the value in messages (default ``"Sweep parameter 'NAME'"``; the command line
        passes ``"--tile"`` for its base tile)."""
        who = label or f"Sweep parameter '{self.name}'"
        if value is None:
            if self.optional:
                return None
            raise InputError(f"{who} needs a value, got None.")
        if self.choices is not None:
            name = choice(value, self.choices)
            if name is None:
                raise InputError(f"{who} cannot be {value!r}; choose from {list(self.choices)}.")
            return name
        if isinstance(value, (bool, np.bool_)):
            raise InputError(f"{who} needs a number, got {shown(value)}.")
        if self.kind is int and isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise InputError(f"{who} needs a whole number, got {shown(value)}.")
        what = "a whole number" if self.kind is int else "a number"
        try:
            # to_float: a real number beyond float64 (10**400) is ±inf, refused below as out of range
            v = to_float(value) if self.kind is float and isinstance(value, numbers.Real) else self.kind(value)
        except (TypeError, ValueError, OverflowError, ArithmeticError):
            raise InputError(f"{who} needs {what}, got {shown(value)}.") from None
        if self.kind is int and isinstance(value, numbers.Number) and not isinstance(value, numbers.Integral) \
                and value != v:
            # int(Fraction(17, 2)) and int(Decimal("8.7")) are 8: never truncate silently
            raise InputError(f"{who} needs a whole number, got {shown(value)}.")
        if self.kind is float and math.isnan(v):
            raise InputError(f"{who} must be finite, got {shown(value)}.")
        if self.kind is float and math.isinf(v) and isinstance(value, (float, np.floating, str)):
            raise InputError(f"{who} must be finite, got {shown(value)}.")
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            # the converted value: a whole-number parameter read as 3.0 is echoed as 3 (a huge one,
            # or one beyond float64, as the caller wrote it: 1e30 rather than its 31 digits)
            got = _fmt(v) if abs(v) < 1e15 else shown(value)
            raise InputError(
                f"{who} = {got} is outside [{_fmt(self.low)}, {_fmt(self.high)}] (the allowed range)."
            )
        return v


def _hardware_parameter(name: str) -> SweepParameter:
    """A hardware sweep parameter whose range is HardwareConfig's own (so the two cannot drift)."""
    lo, hi, what = _HW_INT_LIMITS[name]
    return SweepParameter(name, "hardware", int, lo, hi, help=what)


#: Parameters a sweep can vary. The hardware ones take their ranges from
#: :class:`~akfviz.npu.hardware.HardwareConfig`; ``tile`` matches
#: :func:`akfviz.analysis.tiling.check_tile` (4 … 256).
SWEEP_PARAMETERS: dict[str, SweepParameter] = {
    p.name: p
    for p in [
        SweepParameter("tile", "analysis", int, 4, 256, help="tile side T"),
        SweepParameter("alpha", "selection", float, 0.0, 1e12, help="weight of the error term"),
        SweepParameter("beta", "selection", float, 0.0, 1e12, help="weight of the resource term"),
        SweepParameter("error_budget", "selection", float, 0.0, 1.0, optional=True,
                       help="maximum relative error (replaces alpha/beta when set; None = no budget)"),
        SweepParameter("resource_budget", "selection", float, 0.0, 1e6, optional=True,
                       help="maximum resource as a share of Dense's (replaces alpha/beta when set; "
                            "None = no budget)"),
        SweepParameter("granularity", "selection", str, choices=("cluster", "tile")),
        SweepParameter("resource", "selection", str, choices=("energy", "cycles", "bytes", "mix")),
        SweepParameter("rho_x", "simulation", float, 1e-6, 1.0, help="activation density of x"),
        *(_hardware_parameter(name) for name in ("rows", "cols", "sram_bytes_per_pe", "mac_lanes",
                                                   "dram_bytes_per_cycle", "hop_latency_cycles")),
    ]
}

RESULT_COLUMNS = ["cycles", "energy_pj", "error_pct", "speedup", "energy_rel", "payload_bytes",
                  "overflow_bytes", "n_tiles", "n_kernels", "kernel_mix", "wall_s"]
#: The baselines ``run_sweep(..., baselines=True)`` adds (akf-spec §8), as
#: {column prefix: plan name in :func:`akfviz.compare.compare`}.
BASELINES = {"dense": "Dense", "blocksparse": "BlockSparse", "staticsparse": "StaticSparse"}
#: Columns ``baselines=True`` adds: each baseline's cycles and energy, AKF's speedup
#: (baseline cycles / AKF cycles) and energy ratio (AKF energy / baseline energy) against
#: Block-sparse and Static-sparse (``speedup`` and ``energy_rel`` are those against Dense), and the
#: Static-sparse kernel.
BASELINE_COLUMNS = [f"{b}_{m}" for b in BASELINES for m in ("cycles", "energy_pj")] + [
    f"{m}_vs_{b}" for b in ("blocksparse", "staticsparse") for m in ("speedup", "energy_rel")] + ["static_kernel"]
_TEXT_COLUMNS = ("kernel_mix", "static_kernel")
#: Result columns that hold numbers (``kernel_mix`` and ``static_kernel`` are text), and those every
#: sweep row has.
NUMERIC_RESULT_COLUMNS = [c for c in RESULT_COLUMNS + BASELINE_COLUMNS if c not in _TEXT_COLUMNS]
#: What each result column means (the app's column help and table headers).
COLUMN_HELP = {
    "cycles": "AKF plan: simulated cycles of one SpMV",
    "energy_pj": "AKF plan: simulated energy (pJ)",
    "error_pct": "AKF plan: 100 · ‖A − Â‖_F / ‖A‖_F",
    "speedup": "vs Dense: Dense cycles / AKF cycles (Dense = every tile slot as DENSE, same hardware)",
    "energy_rel": "vs Dense: AKF energy / Dense energy (below 1 = AKF uses less)",
    "payload_bytes": "AKF plan: bytes of all encoded tiles",
    "overflow_bytes": "AKF plan: payload bytes that do not fit in their PE's SRAM (streamed from DRAM)",
    "n_tiles": "nonempty tiles of the matrix at this tile side",
    "n_kernels": "AKF plan: number of different kernels used",
    "kernel_mix": "AKF plan: share of the nonempty tiles per kernel (as in the comparison table)",
    "wall_s": "seconds this point took on this machine",
    "dense_cycles": "Dense baseline: cycles (every tile slot, empty ones too, as DENSE)",
    "dense_energy_pj": "Dense baseline: energy (pJ)",
    "blocksparse_cycles": "Block-sparse baseline: cycles (empty tiles skipped, every nonempty tile DENSE)",
    "blocksparse_energy_pj": "Block-sparse baseline: energy (pJ)",
    "staticsparse_cycles": "Static-sparse baseline: cycles (one kernel, static_kernel, for every nonempty tile)",
    "staticsparse_energy_pj": "Static-sparse baseline: energy (pJ)",
    "speedup_vs_blocksparse": "vs Block-sparse: Block-sparse cycles / AKF cycles",
    "energy_rel_vs_blocksparse": "vs Block-sparse: AKF energy / Block-sparse energy",
    "speedup_vs_staticsparse": "vs Static-sparse: Static-sparse cycles / AKF cycles",
    "energy_rel_vs_staticsparse": "vs Static-sparse: AKF energy / Static-sparse energy",
    "static_kernel": "the one kernel of the Static-sparse baseline",
}
REQUIRED_COLUMNS = ["cycles", "energy_pj", "error_pct"]


#: The largest ``max_points`` accepted: far beyond any sweep that could run (each point is a
#: simulation), and small enough for ``itertools.islice`` (a ``max_points`` of 2**63 raised its
#: plain ValueError instead of an InputError — held-out CLI probe).
MAX_POINTS_LIMIT = 10**9


def _check_max_points(max_points) -> int:
    return check_whole(max_points, "max_points", 1, MAX_POINTS_LIMIT)


def _value_list(name: str, vals, max_points: int) -> list:
    """The values of one grid entry as a list (not yet checked), or InputError."""
    example = f"{{'{name}': [v1, v2, …]}}"
    if isinstance(vals, (str, bytes, bytearray)):
        raise InputError(
            f"Sweep parameter '{name}' needs a list of values, got the text {vals!r}; "
            f"write {example} (a one-value sweep is a list of one value)."
        )
    if isinstance(vals, (set, frozenset, _MappingABC)):
        raise InputError(
            f"Sweep parameter '{name}' needs a list of values, got a {type(vals).__name__} "
            f"(which has no fixed order); write {example}."
        )
    if isinstance(vals, np.ndarray) and vals.ndim != 1:
        raise InputError(
            f"Sweep parameter '{name}' needs a flat list of values, got a {vals.ndim}-d array."
        )
    try:
        it = iter(vals)
    except TypeError:
        raise InputError(
            f"Sweep parameter '{name}' needs a list of values, got {vals!r}; write {example} "
            "(a one-value sweep is a list of one value)."
        ) from None
    # never materialise more values than a sweep may have points (range(10**12) must not hang)
    out = list(itertools.islice(it, max_points + 1))
    if len(out) > max_points:
        raise InputError(
            f"Sweep parameter '{name}' has more than {max_points} values, so the sweep would have "
            f"more than the limit of {max_points} points; use fewer values."
        )
    return out


def _checked_grid(grid, max_points: int) -> dict[str, list]:
    """``grid`` as {name: list of checked values}; the number of points is counted (exactly)
    and refused above ``max_points`` before any value is checked or any point is built."""
    if not isinstance(grid, _MappingABC):
        raise InputError(
            "The sweep grid must be a dict of parameter name -> list of values, "
            f"e.g. {{'alpha': [0.1, 1, 10]}}; got a {type(grid).__name__}."
        )
    if not grid:
        raise InputError("A sweep needs at least one parameter with at least one value.")
    lists: dict[str, list] = {}
    for name, vals in grid.items():
        if not isinstance(name, str) or name not in SWEEP_PARAMETERS:
            raise InputError(
                f"'{name}' is not a sweepable parameter; choose from {sorted(SWEEP_PARAMETERS)}."
            )
        vals = _value_list(name, vals, max_points)
        if not vals:
            raise InputError(f"Sweep parameter '{name}' has no values.")
        lists[name] = vals
    n = math.prod(len(v) for v in lists.values())  # Python integers: exact, never overflow
    if n > max_points:
        raise InputError(
            f"This sweep has {n} points, more than the limit of {max_points}; use fewer values."
        )
    checked = {name: [SWEEP_PARAMETERS[name].check(v) for v in vals] for name, vals in lists.items()}
    for name, vals in checked.items():
        _refuse_repeats(name, vals)
    return checked


def _refuse_repeats(name: str, vals: list) -> None:
    """InputError when a checked value list holds a value twice (``[1, 1.0, 10]``, ``[32, 32]``):
    a sweep is deterministic, so the repeat would run the same points again and add identical rows."""
    seen = []
    for v in vals:
        if v in seen:
            listed = ", ".join(_value_word(u) for u in vals)
            raise InputError(
                f"Sweep parameter '{name}' lists {_value_word(v)} more than once ({listed}); each value is "
                "swept once (the same value would give the same results again): remove the repeat."
            )
        seen.append(v)


@checked_call
def expand_grid(grid: Mapping[str, Sequence], *, max_points: int = 400) -> list[dict]:
    """Cartesian product of the parameter lists, validated, in a deterministic order.

    Parameters
    ----------
    grid : mapping of parameter name -> list of values
        Names from :data:`SWEEP_PARAMETERS`; each value list is a list, tuple, range or 1-d
        array (a single value is a list of one value; a string is refused).
        ``error_budget`` may hold ``None``, meaning "no budget" (alpha and beta decide).
    max_points : int ≥ 1
        Refuse sweeps with more points than this (they would take too long interactively).
        The count is exact and is checked before any point is built.

    Returns
    -------
    list of dict
        One dict per point, keys in the order of ``grid``.

    Raises
    ------
    InputError
        A grid that is not a mapping, an unknown name, an empty or non-list value list, a value
        out of its range, or more than ``max_points`` points.
    """
    values = _checked_grid(grid, _check_max_points(max_points))
    names = list(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*values.values())]


#: How a grid is written as text: parts ``name=v1,v2`` separated by ``;``.
GRID_EXAMPLE = "tile=16,32;beta=0.1,1,10"
#: Words that stand for ``None`` (no budget) in an optional parameter's values.
_NONE_WORDS = ("none", "null")


def _value_from_text(param: SweepParameter, text: str):
    """One value of ``param`` written as text, converted and checked (InputError if not valid)."""
    if param.choices is not None:
        return param.check(text)
    if param.optional and text.lower() in _NONE_WORDS:
        return None
    try:
        value = float(text)
    except ValueError:
        what = "a whole number" if param.kind is int else "a number"
        raise InputError(f"Sweep parameter '{param.name}' needs {what}, got {text!r}.") from None
    return param.check(value)


@checked_call
def parse_grid(spec: str | Sequence[str]) -> dict[str, list]:
    """A sweep grid written as text, as ``{name: [checked values]}`` in the order written.

    The one parser of the Design space page's sweep field and of the command line's
    ``--vary`` options.

    Parameters
    ----------
    spec : str or sequence of str
        Parts ``name=v1,v2,…`` separated by ``;`` (``"tile=16,32;beta=0.1,1,10"``), or a
        sequence of such texts (one per ``--vary``). Numbers are read with :func:`float` (and
        checked as :meth:`SweepParameter.check` does, so ``tile=16`` is the integer 16); a
        choice (``granularity``, ``resource``) is its text; ``none`` or ``null`` is ``None`` (no
        budget) for ``error_budget`` and ``resource_budget``. Empty values are skipped.

    Returns
    -------
    dict
        Parameter name -> list of checked values, ready for :func:`expand_grid` or
        :func:`run_sweep` (which count the points against their limit).

    Raises
    ------
    InputError
        A part that is not ``name=v1,…``, a name that is not in :data:`SWEEP_PARAMETERS`, a
        name given twice, a value that is not valid, or no part at all.

    Examples
    --------
    >>> parse_grid("tile=16,32; beta=0.1,1")
    {'tile': [16, 32], 'beta': [0.1, 1.0]}
    """
    texts = [spec] if isinstance(spec, str) else spec
    if not isinstance(texts, Sequence) or not all(isinstance(t, str) for t in texts):
        raise InputError(f"A sweep grid is text such as {GRID_EXAMPLE!r} (or a list of such texts); "
                         f"got {spec!r}.")
    grid: dict[str, list] = {}
    for part in (p.strip() for text in texts for p in text.split(";")):
        if not part:
            continue
        name, sep, vals = part.partition("=")
        name = name.strip()
        values = [v.strip() for v in vals.split(",") if v.strip()]
        if not sep or not name or not values:
            raise InputError(f"Sweep part {part!r} is not of the form name=value1,value2 "
                             f"(e.g. {GRID_EXAMPLE}).")
        if name not in SWEEP_PARAMETERS:
            raise InputError(f"'{name}' is not a sweepable parameter; choose from {', '.join(SWEEP_PARAMETERS)}.")
        if name in grid:
            raise InputError(f"Sweep parameter '{name}' is given twice; list all its values once: "
                             f"{name}=v1,v2,….")
        grid[name] = [_value_from_text(SWEEP_PARAMETERS[name], v) for v in values]
    if not grid:
        raise InputError(f"The sweep is empty; write e.g. {GRID_EXAMPLE}.")
    return grid


def tile_slots(shape: Sequence[int], tile: int) -> int:
    """Number of ``tile × tile`` slots covering a matrix of ``shape``.

    Parameters
    ----------
    shape : (int, int)
        The matrix's ``(m, n)``.
    tile : int
        The tile side T.

    Returns
    -------
    int
        ``ceil(m / T) · ceil(n / T)``, empty slots included.
    """
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 2:
        raise InputError(f"shape must be a matrix's (rows, columns), got {shown(shape)}.")
    m, n = (check_whole(s, "A shape's size", 0) for s in shape)
    # (a tile of 0 raised ZeroDivisionError, 'a' numpy's ValueError)
    tile = check_whole(tile, "tile", 1)
    return -(-m // tile) * -(-n // tile)


def sram_note(df: pd.DataFrame) -> str:
    """What a sweep over SRAM per PE shows when no point's plan overflows its PEs' SRAM
    (``overflow_bytes`` 0 everywhere): that SRAM does not change AKF's cycles only when the
    cycles and the kernel mix are indeed the same at every point. The selector prices the
    hardware, so the plan itself can differ between sizes.

    >>> sram_note(pd.DataFrame({"cycles": [645, 651], "kernel_mix": ["QUANT8 100%", "QUANT8 90%, PRUNE25 10%"],
    ...                         "overflow_bytes": [0, 0]})).split("; ")[1]
    "yet AKF's cycles still range from 645 to 651: the selector prices the hardware and chose other kernels at some sizes (see kernel_mix)."
    """
    cycles_vary = "cycles" in df and df["cycles"].nunique(dropna=False) > 1
    mix_varies = "kernel_mix" in df and df["kernel_mix"].nunique(dropna=False) > 1
    if not cycles_vary and not mix_varies:
        return ("**SRAM per PE does not change AKF's cycles here**: at every point the plan's payload fits in "
                "the SRAM of the PEs it is placed on (overflow_bytes = 0), so nothing streams from DRAM "
                "whatever the size.")
    why = ("the selector prices the hardware and chose other kernels at some sizes (see kernel_mix)" if mix_varies
           else "which tiles get which kernel, or where they are placed, differs between sizes")
    span = (f"AKF's cycles still range from {df['cycles'].min():,.0f} to {df['cycles'].max():,.0f}"
            if cycles_vary else "the plan still changes")
    return ("**The payload fits in SRAM at every point** (overflow_bytes = 0), so nothing streams from DRAM; "
            f"yet {span}: {why}.")


def every_slot_nonempty(n_tiles: Sequence[int], tiles: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether every tile slot is nonempty at each sweep row's tile side.

    Then skipping empty tiles (Block-sparse) saves nothing against Dense.

    Parameters
    ----------
    n_tiles : sequence of int
        Nonempty tiles per sweep row (the ``n_tiles`` column).
    tiles : sequence of int
        The tile side of each row.
    shape : (int, int)
        The matrix's ``(m, n)``.

    Returns
    -------
    bool
        True when each row's ``n_tiles`` equals :func:`tile_slots` of ``shape`` at its side.
    """
    n_tiles, tiles = list(n_tiles), list(tiles)
    if len(n_tiles) != len(tiles):  # zip stopped at the shorter one and answered for part of the rows
        raise InputError(f"every_slot_nonempty needs one tile side per row: {len(n_tiles)} n_tiles values, "
                         f"{len(tiles)} tile sides.")
    return all(check_whole(k, "n_tiles", 0) == tile_slots(shape, t) for k, t in zip(n_tiles, tiles))


def _split(point: Mapping) -> tuple[dict, dict, dict, dict]:
    stages = {"analysis": {}, "selection": {}, "hardware": {}, "simulation": {}}
    for k, v in point.items():
        stages[SWEEP_PARAMETERS[k].stage][k] = v
    return stages["analysis"], stages["selection"], stages["hardware"], stages["simulation"]


def _hw_key(hw_changes: Mapping) -> tuple:
    return tuple(sorted(hw_changes.items()))


def _hardware_configs(hw0, defaults: Mapping, values: Mapping, points) -> dict:
    """The HardwareConfig of every point, built before any point runs: {_hw_key: config}.

    Each hardware value of ``base`` and of the grid is first tried alone with ``replace`` so that
    a refusal names the parameter and the value; then every combination the grid uses is built.
    """
    base_hw = {k: v for k, v in defaults.items() if SWEEP_PARAMETERS[k].stage == "hardware"}
    for k, v in base_hw.items():
        try:
            hw0.replace(**{k: v})
        except InputError as exc:
            raise InputError(f"base value {k} = {v!r} is not a valid hardware setting: {exc}") from None
    for k, vals in values.items():
        if SWEEP_PARAMETERS[k].stage != "hardware":
            continue
        for v in vals:
            try:
                hw0.replace(**{**base_hw, k: v})
            except InputError as exc:
                raise InputError(
                    f"Sweep parameter '{k}' = {v!r} is not a valid hardware setting: {exc}"
                ) from None
    configs: dict = {}
    for point in points:
        _, _, hwc, _ = _split({**defaults, **point})
        key = _hw_key(hwc)
        if key not in configs:
            try:
                configs[key] = hw0.replace(**hwc) if hwc else hw0
            except InputError as exc:
                raise InputError(f"The sweep point {point} has no valid hardware: {exc}") from None
    return configs


def _checked_sweep(grid, *, base=None, hw=None, seed=0, scheduler="local", progress=None, max_points=400,
                   baselines=False, static_kernel="CSC"):
    """Every check of :func:`run_sweep` that does not need the matrix: ``(seed, points, values,
    defaults, hw_configs, static)``, ``static`` None without baselines."""
    from ..arguments import check_flag
    from ..kernels.registry import get_kernel

    seed = check_seed(seed)
    if choice(scheduler, SCHEDULERS) is None:
        raise InputError(f"scheduler must be 'local' or 'dask', not {scheduler!r}.")
    if progress is not None and not callable(progress):
        raise InputError(
            f"progress must be a function called as progress(done, total, point), or None; "
            f"got {progress!r}."
        )
    max_points = _check_max_points(max_points)
    baselines = check_flag(baselines, "baselines")
    # checked with or without baselines: a misspelt --static was silently ignored (exit 0)
    static = get_kernel(static_kernel).name
    if not baselines:
        static = None
    hw0 = as_hardware(hw)
    values = _checked_grid(grid, max_points)
    points = [dict(zip(values, combo)) for combo in itertools.product(*values.values())]
    defaults = {"tile": 32, "alpha": 1.0, "beta": 1.0, "error_budget": None, "resource_budget": None,
                "granularity": "cluster", "resource": "energy", "rho_x": 1.0}
    if base is not None:
        if not isinstance(base, _MappingABC):
            raise InputError(
                "base must be a dict of parameter name -> one value, e.g. {'tile': 16}; "
                f"got a {type(base).__name__}."
            )
        for k, v in base.items():
            if not isinstance(k, str) or k not in SWEEP_PARAMETERS:
                raise InputError(f"'{k}' is not a sweep parameter; choose from {sorted(SWEEP_PARAMETERS)}.")
            defaults[k] = SWEEP_PARAMETERS[k].check(v)
    hw_configs = _hardware_configs(hw0, defaults, values, points)
    for point in points:
        p = {**defaults, **point}
        if p["error_budget"] is not None and p["resource_budget"] is not None:
            raise InputError(
                f"At the sweep point {point}, both an error_budget and a resource_budget are set; "
                "the selector takes one of the two (set the other to None)."
            )
        if p["alpha"] == 0 and p["beta"] == 0 and p["error_budget"] is None and p["resource_budget"] is None:
            raise InputError(
                f"At the sweep point {point}, alpha and beta are both 0 (and there is no "
                "error_budget), so every kernel would cost nothing; make alpha or beta > 0 there."
            )
    return seed, points, values, defaults, hw_configs, static


@checked_call
def check_sweep(grid: Mapping[str, Sequence], *, base: Mapping | None = None, hw=None,
                max_points: int = 400, baselines: bool = False, static_kernel: str = "CSC") -> int:
    """Check a sweep's settings as :func:`run_sweep` does, without a matrix: the command line
    calls it before loading or generating one, so a grid of too many points or a misspelt
    kernel is refused at once (it came after seconds of generating — held-out CLI probe).

    Returns
    -------
    int
        The number of points of the grid.

    Raises
    ------
    InputError
        As :func:`run_sweep` for these arguments.
    """
    return len(_checked_sweep(grid, base=base, hw=hw, max_points=max_points, baselines=baselines,
                              static_kernel=static_kernel)[1])


@checked_call
def run_sweep(
    A,
    grid: Mapping[str, Sequence],
    *,
    base: Mapping | None = None,
    hw=None,
    seed: int = 0,
    scheduler: str = "local",
    progress: Callable[[int, int, dict], None] | None = None,
    max_points: int = 400,
    baselines: bool = False,
    static_kernel: str = "CSC",
    lsh=None,
) -> pd.DataFrame:
    """Run the AKF pipeline at every point of a parameter grid.

    Every argument, every value of the grid and of ``base``, and the hardware configuration of
    every point are checked before the first point runs, so a bad value never throws away the
    points already computed.

    Parameters
    ----------
    A : sparse matrix or array
        The workload (validated by :func:`akfviz.workloads.validate.as_csr`).
    grid : mapping
        Parameter name -> list of values (see :data:`SWEEP_PARAMETERS` and :func:`expand_grid`).
        ``error_budget`` and ``resource_budget`` may list ``None`` (no budget: alpha and beta decide).
    base : mapping, optional
        Values for parameters not swept (default tile 32, alpha 1, beta 1, no error or resource
        budget, cluster granularity, energy resource, rho_x 1). Checked like grid values.
    hw : HardwareConfig, optional
        Base hardware; hardware parameters of ``base`` and of a point are applied with
        ``hw.replace``.
    seed : int
        Seed for the input vector and the annealing placement (same seed, same table).
    scheduler : {"local", "dask"}
        Run points in order, or as Dask delayed tasks on the local threaded scheduler.
    progress : callable(done, total, point), optional
        Called after each point (local scheduler) — the app's progress bar.
    max_points : int ≥ 1
        Refuse grids with more points than this.
    baselines : bool
        Also simulate the Block-sparse and Static-sparse baselines (akf-spec §8) with
        :func:`akfviz.compare.compare`, once per (tile size, hardware, rho_x), and add
        :data:`BASELINE_COLUMNS`. Costs about two more simulations per distinct hardware and tile
        size (≈ 0.1–0.3 s each on the app's samples); the app turns it on.
    static_kernel : str
        Kernel of the Static-sparse baseline (as ``compare(static_kernel=…)``).
    lsh : None, LSHConfig or dict
        The LSH settings of every point's analysis, as :func:`akfviz.analyze` takes them (default
        ``LSHConfig()``). In cluster mode they decide the clusters, hence the plan.

    Returns
    -------
    pandas.DataFrame
        One row per point: the parameters, then ``cycles, energy_pj, error_pct, speedup,
        energy_rel, payload_bytes, overflow_bytes, n_tiles, n_kernels, kernel_mix`` (see
        :data:`COLUMN_HELP`), with ``baselines=True`` the :data:`BASELINE_COLUMNS`, and ``wall_s``.
        ``speedup`` and ``energy_rel`` are relative to the Dense baseline on the same hardware;
        ``kernel_mix`` is written as in :func:`akfviz.compare.compare` (``"CSC 61 %, DENSE 39 %"``).

    Raises
    ------
    InputError
        A bad argument, grid, base value or hardware value (before any point runs).
    """
    from ..analysis.lsh import LSHConfig
    from ..analysis.pattern import analyze
    from ..compare import kernel_mix_of
    from ..compare import compare as compare_plans
    from ..npu.simulate import simulate, simulate_dense
    from ..selection.selector import select
    from ..npu.hardware import as_hardware
    from ..workloads.validate import as_csr, matrix_sha256

    # ---- every check first: nothing below may fail half-way through the sweep
    seed, points, values, defaults, hw_configs, static = _checked_sweep(
        grid, base=base, hw=hw, seed=seed, scheduler=scheduler, progress=progress,
        max_points=max_points, baselines=baselines, static_kernel=static_kernel)
    baselines = static is not None
    lsh_cfg = LSHConfig.from_any(lsh)    # checked before the first point, as every other argument
    A = as_csr(A)

    analyses: dict = {}
    dense: dict = {}
    # {(tile, hardware, rho_x): {baseline prefix: (cycles, energy)}} — two numbers per baseline,
    # never a whole SimResult (≈ 1 GB of per-PE counters at 4096² PEs)
    reference: dict = {}

    def full(point):
        p = dict(defaults)
        p.update(point)
        return p

    def get_pa(tile):
        if tile not in analyses:
            analyses[tile] = analyze(A, tile=tile, lsh=lsh_cfg)
        return analyses[tile]

    def get_hw(hw_changes):
        return hw_configs[_hw_key(hw_changes)]

    def get_dense(tile, hwp, rho_x):
        key = (tile, hwp.config_hash(), rho_x)
        if key not in dense:
            # only the two totals: a whole SimResult keeps per-PE counters (≈ 1 GB at 4096² PEs)
            res = simulate_dense(A.shape, tile, hwp, rho_x=rho_x, seed=seed, record=False)
            dense[key] = (float(res.cycles), float(res.energy_total_pj))
        return dense[key]

    def get_reference(tile, hwp, rho_x, plan):
        """The three baselines of this (tile, hardware, rho_x), simulated once by ``compare``
        (on this point's plan; only its Dense, BlockSparse and StaticSparse rows are kept)."""
        key = (tile, hwp.config_hash(), rho_x)
        if key not in reference:
            table = compare_plans(None, hw=hwp, plan=plan, static_kernel=static, rho_x=rho_x, seed=seed)
            reference[key] = {b: (float(table.loc[name, "cycles"]), float(table.loc[name, "energy_pj"]))
                              for b, name in BASELINES.items()}
            dense[key] = reference[key]["dense"]
        return reference[key]

    def ratio(num, den):
        return num / den if den else float("nan")

    def run_point(point):
        t0 = time.perf_counter()
        p = full(point)
        ana, sel, hwc, sim = _split(p)
        pa = get_pa(ana["tile"])
        hwp = get_hw({k: v for k, v in hwc.items()})
        kw = dict(alpha=p["alpha"], beta=p["beta"], granularity=p["granularity"], hw=hwp,
                  resource=p["resource"], rho_x=p["rho_x"], seed=seed)
        if p["error_budget"] is not None:
            kw["error_budget"] = p["error_budget"]
        if p["resource_budget"] is not None:
            kw["resource_budget"] = p["resource_budget"]
        plan = select(pa, **kw)
        res = simulate(plan, hwp, rho_x=p["rho_x"], seed=seed, record=False)
        cycles, energy = float(res.cycles), float(res.energy_total_pj)
        overflow = float(res.meta.get("overflow_bytes", float("nan")))
        del res
        if baselines:
            ref = get_reference(ana["tile"], hwp, p["rho_x"], plan)
            dense_cycles, dense_energy = ref["dense"]
        else:
            dense_cycles, dense_energy = get_dense(ana["tile"], hwp, p["rho_x"])
        row = dict(point)
        row.update(
            cycles=cycles,
            energy_pj=energy,
            error_pct=100.0 * float(plan.relative_error),
            speedup=ratio(dense_cycles, cycles),
            energy_rel=ratio(energy, dense_energy),
            payload_bytes=float(getattr(plan, "payload_bytes", float("nan"))),
            overflow_bytes=overflow,
            n_tiles=int(pa.n_tiles),
            n_kernels=int(len(plan.kernel_counts)),
            # the comparison table's format (shares, not counts: "NM2:4:576" would be ambiguous)
            kernel_mix=kernel_mix_of(plan),
        )
        if baselines:
            for b, (bc, be) in ref.items():
                row[f"{b}_cycles"], row[f"{b}_energy_pj"] = bc, be
            for b in ("blocksparse", "staticsparse"):
                bc, be = ref[b]
                row[f"speedup_vs_{b}"] = ratio(bc, cycles)
                row[f"energy_rel_vs_{b}"] = ratio(energy, be)
            row["static_kernel"] = static
        row["wall_s"] = time.perf_counter() - t0
        return row

    rows: list = [None] * len(points)
    if choice(scheduler, SCHEDULERS) == "local":
        for i, point in enumerate(points):
            rows[i] = run_point(point)
            if progress is not None:
                progress(i + 1, len(points), point)
    else:
        import dask

        # Shared stages first (they are cached and reused by every task): the analyses, and the
        # baselines of each (tile, hardware, rho_x) — with ``baselines`` by running the first point
        # of each here, since compare needs a plan.
        for i, point in enumerate(points):
            p = full(point)
            ana, _, hwc, _ = _split(p)
            get_pa(ana["tile"])
            hwp = get_hw(hwc)
            if not baselines:
                get_dense(ana["tile"], hwp, p["rho_x"])
            elif (ana["tile"], hwp.config_hash(), p["rho_x"]) not in reference:
                rows[i] = run_point(point)
        rest = [i for i, r in enumerate(rows) if r is None]
        tasks = [dask.delayed(run_point, pure=False)(points[i]) for i in rest]
        for i, r in zip(rest, dask.compute(*tasks, scheduler="threads")):
            rows[i] = r
        if progress is not None:
            progress(len(points), len(points), points[-1])
    df = pd.DataFrame(rows)
    hw0 = as_hardware(hw)
    # everything that reruns the sweep: run_sweep(A, grid, base=…, hw=HardwareConfig.from_plain(
    # hardware), lsh=…, seed=…, baselines=…, static_kernel=…) on the matrix of this sha256
    df.attrs["akfviz_sweep"] = {"grid": {k: list(map(to_plain, v)) for k, v in values.items()},
                                "base": {k: to_plain(v) for k, v in defaults.items()},
                                "seed": seed, "shape": list(A.shape), "nnz": int(A.nnz),
                                "matrix_sha256": matrix_sha256(A),
                                "hardware": to_plain(hw0.to_plain()), "hardware_sha256": hw0.config_hash(),
                                "lsh": to_plain(lsh_cfg.to_dict()),
                                "baselines": baselines, "static_kernel": static}
    return df


@checked_call
def save_sweep(df: pd.DataFrame, path: str | Path) -> Path:
    """Write a sweep table as ``.csv`` or ``.parquet`` (chosen by the file name).

    Parameters
    ----------
    df : pandas.DataFrame
        The table :func:`run_sweep` returned.
    path : str or path-like
        File name ending in ``.csv``, ``.parquet`` or ``.pq``, in a folder that exists.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        ``df`` is not a DataFrame, the file name has another ending, the folder does not exist,
        or the file cannot be written.
    """
    if not isinstance(df, pd.DataFrame):
        raise InputError(
            f"save_sweep needs the table run_sweep returned (a pandas DataFrame), "
            f"got a {type(df).__name__}."
        )
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"save_sweep needs a file name such as 'sweep.csv', got {path!r}.")
    path = Path(path)
    # by the name's ending, as the command line checks it: Path('.csv').suffix is '' (a hidden
    # file), so '--out DIR/.csv' ran every point and then failed with a self-contradicting message
    suffix = next((s for s in (".csv", ".parquet", ".pq") if path.name.lower().endswith(s)), "")
    if not suffix:
        raise InputError(f"Cannot write a sweep to '{path.name}': use a .csv or .parquet file name.")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(
            f"Cannot write the sweep to '{path}': the folder '{folder}' does not exist. "
            "Create it first or choose another folder."
        )
    try:
        if suffix == ".csv":
            df.to_csv(path, index=False)
        else:
            df.to_parquet(path, index=False)
    except OSError as exc:
        raise InputError(f"Could not write the sweep to '{path}': {exc.strerror or exc}.") from None
    return path


#: Largest sweep table :func:`load_sweep` reads: 12× the rows of the largest sweep one run makes
#: (``max_points`` 400), and far more columns than a sweep writes (about 30). A 200 KB CSV header of
#: 100,000 columns took pandas 214 s, and a 200,000-row file froze the Design space page (app probe).
MAX_SWEEP_ROWS = 5_000
MAX_SWEEP_COLUMNS = 200


def _check_table_size(rows: int, cols: int) -> None:
    if cols > MAX_SWEEP_COLUMNS:
        raise InputError(f"This table has {cols:,} columns; an akfviz sweep has about 30 (at most "
                         f"{MAX_SWEEP_COLUMNS}), so it is not a sweep file.")
    if rows > MAX_SWEEP_ROWS:
        raise InputError(f"This table has {rows:,} rows; the Design space reads sweeps of at most "
                         f"{MAX_SWEEP_ROWS:,} points (one sweep makes at most 400). Split it, or keep the "
                         f"points you want to compare.")


def _check_csv_rows(data: bytes) -> None:
    """Refuse a CSV whose rows have fewer fields than its header (e.g. a file cut off mid-row) or
    more (pandas then read the extra leading fields as the index and shifted every value: a row
    ``1,2,3,4,5`` under ``cycles,energy_pj,error_pct`` loaded as cycles 3 — held-out CLI probe)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("The sweep file is not UTF-8 text, so it is not a CSV sweep file.") from None
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if not header:
            return
        _check_table_size(text.count("\n") - 1, len(header))   # (an upper bound of the rows: quoted
        seen = set()                                         # newlines are counted too)
        for name in header:
            if name in seen:
                raise InputError(f"The sweep file's header names the column {name[:40]!r} twice; a sweep "
                                 "table names each column once. Save the sweep again.")
            seen.add(name)
        for row in reader:
            if row and len(row) < len(header):
                raise InputError(
                    f"Line {reader.line_num} of the sweep file has {len(row)} of the {len(header)} "
                    "columns: the file looks cut off or damaged. Save the sweep again."
                )
            if len(row) > len(header):
                raise InputError(
                    f"Line {reader.line_num} of the sweep file has {len(row)} fields, more than the "
                    f"{len(header)} columns of its header: the file is damaged or not a sweep table."
                )
    except csv.Error as exc:
        raise InputError(f"Could not read the sweep file (CSV error: {exc}).") from None


def _check_numeric_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Refuse text in the numeric columns of a loaded sweep (and empty required cells); return
    the table with those columns as numbers."""
    numeric = NUMERIC_RESULT_COLUMNS + [p.name for p in SWEEP_PARAMETERS.values() if p.kind is not str]
    for c in numeric:
        if c not in df.columns:
            continue
        s = df[c]
        if not (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)):
            conv = pd.to_numeric(s, errors="coerce")
            bad = np.flatnonzero((conv.isna() & s.notna()).to_numpy())
            if bad.size:
                i = int(bad[0])
                raise InputError(
                    f"Column '{c}' of this sweep file should hold numbers, but row {i + 1} holds "
                    f"{s.iloc[i]!r}. The file was damaged or edited; save the sweep again."
                )
            df[c] = conv
        if c in REQUIRED_COLUMNS:
            empty = np.flatnonzero(df[c].isna().to_numpy())
            if empty.size:
                raise InputError(
                    f"Column '{c}' of this sweep file is empty in row {int(empty[0]) + 1}: the file "
                    "looks cut off or damaged. Save the sweep again."
                )
    return df


@checked_call
def load_sweep(path_or_bytes, fmt: str | None = None, *, name: str | None = None) -> pd.DataFrame:
    """Read a sweep table written by :func:`save_sweep` or ``python -m akfviz sweep``.

    Parameters
    ----------
    path_or_bytes : str, Path, bytes or binary file-like
        The file.
    fmt : {"csv", "parquet"}, optional
        Format; guessed from the file name or the Parquet magic bytes when omitted.
    name : str, optional
        File name for bytes input (used to guess the format).

    Returns
    -------
    pandas.DataFrame
        The sweep, its numeric columns as numbers.

    Raises
    ------
    InputError
        Not a file name, bytes or file; unknown format; an unreadable, empty or cut-off file; a
        table without the result columns, or with text where a numeric column needs a number.
    """
    if fmt is not None and fmt not in ("csv", "parquet"):
        raise InputError(f"Unknown sweep format {fmt!r}; use 'csv' or 'parquet'.")
    if name is not None and not isinstance(name, str):
        raise InputError(f"name must be a file name (text), got {name!r}.")
    try:
        if hasattr(path_or_bytes, "read"):
            file_name = getattr(path_or_bytes, "name", None)
            name = name or (file_name if isinstance(file_name, str) else None)
            data = path_or_bytes.read()
            if isinstance(data, str):
                data = data.encode("utf-8")
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            data = bytes(path_or_bytes)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            p = Path(path_or_bytes)
            if not p.is_file():
                raise InputError(f"No sweep file at '{p}'.")
            name = name or p.name
            data = p.read_bytes()
        else:
            raise InputError(
                "load_sweep needs a file name, a path, the file's bytes or an open binary file; "
                f"got {path_or_bytes!r}."
            )
    except OSError as exc:
        raise InputError(f"Could not read the sweep file: {exc.strerror or exc}.") from None
    if not isinstance(data, bytes):
        raise InputError(f"The file object gave {type(data).__name__}, not bytes; open it in binary mode.")
    if not data:
        raise InputError("The sweep file is empty.")
    if fmt is None:
        if data[:4] == b"PAR1" or (name or "").lower().endswith((".parquet", ".pq")):
            fmt = "parquet"
        else:
            fmt = "csv"
    if fmt == "csv":
        _check_csv_rows(data)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(io.BytesIO(data)).metadata   # sizes before the columns are read
            _check_table_size(meta.num_rows, meta.num_columns)
            df = pd.read_parquet(io.BytesIO(data))
        else:
            df = pd.read_csv(io.BytesIO(data))
    except InputError:
        raise
    except Exception as exc:  # parser errors of pandas/pyarrow
        detail = f"{type(exc).__name__}: {exc}"
        if fmt == "parquet":  # Arrow's texts quote its buffers and footers
            detail = "it is not a complete Parquet file: damaged, cut off, or another kind of file"
        raise InputError(f"Could not read the sweep file ({detail}).") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(
            f"This table is not an akfviz sweep: it lacks the column(s) {missing}. "
            "Produce one with the Design space page or `python -m akfviz sweep`."
        )
    return _check_numeric_columns(df)


def grid_in_words(grid: Mapping[str, Sequence]) -> str:
    """The grid as a reader writes it, in the order given: every combination of the values.

    >>> grid_in_words({"tile": [16, 32], "beta": [0.1, 1.0, 10.0]})
    'tile 16, 32 × beta 0.1, 1, 10'
    """
    return " × ".join(f"{k} " + ", ".join(_value_word(v) for v in vals) for k, vals in grid.items())


def describe_grid(grid: Mapping[str, Sequence]) -> str:
    """One-line JSON description of a grid (for file names and bundles)."""
    return json.dumps({k: list(map(to_plain, v)) for k, v in grid.items()}, sort_keys=True)
