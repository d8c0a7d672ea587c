"""Parameter sweeps over the AKF pipeline (design-space exploration).

A sweep is the cartesian product of a few parameters, each over a short list of values
(``expand_grid``). Every point runs the pipeline stages that depend on it —
``analyze`` (per tile size), ``select`` (per selector setting), ``simulate`` (per hardware
setting) — and records the plan's measured error and the simulated cycles and energy, plus
the Dense baseline of the same hardware so speedups are comparable (akf-spec §8).

Work that several points share is computed once: one analysis per tile size, one Dense
baseline per (tile size, hardware). Points run in order locally, or as Dask tasks on a
local threaded scheduler (numba kernels release the GIL) with ``scheduler="dask"``.
"""
from __future__ import annotations

import io
import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..arguments import check_seed
from ..errors import InputError


@dataclass(frozen=True)
class SweepParameter:
    """One sweepable parameter: where it goes and what values are allowed."""

    name: str
    stage: str  # "analysis", "selection" or "hardware"
    kind: type
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    help: str = ""

    def check(self, value):
        """Return ``value`` converted to the parameter's type, or raise InputError."""
        if self.choices is not None:
            if value not in self.choices:
                raise InputError(
                    f"Sweep parameter '{self.name}' cannot be {value!r}; choose from {list(self.choices)}."
                )
            return value
        if isinstance(value, (bool, np.bool_)):
            raise InputError(f"Sweep parameter '{self.name}' needs a number, got {value!r}.")
        if self.kind is int and isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise InputError(f"Sweep parameter '{self.name}' needs a whole number, got {value!r}.")
        try:
            v = self.kind(value)
        except (TypeError, ValueError):
            raise InputError(f"Sweep parameter '{self.name}' needs a number, got {value!r}.") from None
        if self.kind is float and not np.isfinite(v):
            raise InputError(f"Sweep parameter '{self.name}' must be finite, got {value!r}.")
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            raise InputError(
                f"Sweep parameter '{self.name}' = {value!r} is outside [{self.low}, {self.high}]."
            )
        return v


SWEEP_PARAMETERS: dict[str, SweepParameter] = {
    p.name: p
    for p in [
        SweepParameter("tile", "analysis", int, 4, 256, help="tile side T"),
        SweepParameter("alpha", "selection", float, 0.0, 1e12, help="weight of the error term"),
        SweepParameter("beta", "selection", float, 0.0, 1e12, help="weight of the resource term"),
        SweepParameter("error_budget", "selection", float, 0.0, 1.0,
                       help="maximum relative error (replaces alpha/beta when set)"),
        SweepParameter("granularity", "selection", str, choices=("cluster", "tile")),
        SweepParameter("resource", "selection", str, choices=("energy", "cycles", "bytes", "mix")),
        SweepParameter("rho_x", "simulation", float, 1e-6, 1.0, help="activation density of x"),
        SweepParameter("rows", "hardware", int, 1, 4096, help="PE grid rows"),
        SweepParameter("cols", "hardware", int, 1, 4096, help="PE grid columns"),
        SweepParameter("sram_bytes_per_pe", "hardware", int, 1, 2**40, help="SRAM per PE (bytes)"),
        SweepParameter("mac_lanes", "hardware", int, 1, 4096, help="MACs per cycle per PE"),
        SweepParameter("dram_bytes_per_cycle", "hardware", float, 1e-6, 1e9,
                       help="shared DRAM bandwidth (bytes/cycle)"),
        SweepParameter("hop_latency_cycles", "hardware", int, 0, 10**6, help="NoC hop latency"),
    ]
}

RESULT_COLUMNS = ["cycles", "energy_pj", "error_pct", "speedup", "energy_rel", "payload_bytes",
                  "n_kernels", "kernel_mix", "wall_s"]


def expand_grid(grid: Mapping[str, Sequence], *, max_points: int = 400) -> list[dict]:
    """Cartesian product of the parameter lists, validated, in a deterministic order.

    Parameters
    ----------
    grid : mapping of parameter name -> sequence of values
        Names from :data:`SWEEP_PARAMETERS`.
    max_points : int
        Refuse sweeps with more points than this (they would take too long interactively).

    Returns
    -------
    list of dict
        One dict per point, keys in the order of ``grid``.
    """
    if not grid:
        raise InputError("A sweep needs at least one parameter with at least one value.")
    names, values = [], []
    for name, vals in grid.items():
        if name not in SWEEP_PARAMETERS:
            raise InputError(
                f"'{name}' is not a sweepable parameter; choose from {sorted(SWEEP_PARAMETERS)}."
            )
        vals = list(vals) if not isinstance(vals, (str, bytes)) else [vals]
        if not vals:
            raise InputError(f"Sweep parameter '{name}' has no values.")
        names.append(name)
        values.append([SWEEP_PARAMETERS[name].check(v) for v in vals])
    n = int(np.prod([len(v) for v in values]))
    if n > max_points:
        raise InputError(
            f"This sweep has {n} points, more than the limit of {max_points}; use fewer values."
        )
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def _split(point: Mapping) -> tuple[dict, dict, dict, dict]:
    stages = {"analysis": {}, "selection": {}, "hardware": {}, "simulation": {}}
    for k, v in point.items():
        stages[SWEEP_PARAMETERS[k].stage][k] = v
    return stages["analysis"], stages["selection"], stages["hardware"], stages["simulation"]


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
) -> pd.DataFrame:
    """Run the AKF pipeline at every point of a parameter grid.

    Parameters
    ----------
    A : sparse matrix or array
        The workload (validated by :func:`akfviz.workloads.validate.as_csr`).
    grid : mapping
        Parameter name -> list of values (see :data:`SWEEP_PARAMETERS`).
    base : mapping, optional
        Values for parameters not swept (default tile 32, alpha 1, beta 1, cluster granularity,
        energy resource, rho_x 1).
    hw : HardwareConfig, optional
        Base hardware; hardware parameters of a point are applied with ``hw.replace``.
    seed : int
        Seed for the input vector and the annealing placement (same seed, same table).
    scheduler : {"local", "dask"}
        Run points in order, or as Dask delayed tasks on the local threaded scheduler.
    progress : callable(done, total, point), optional
        Called after each point (local scheduler) — the app's progress bar.

    Returns
    -------
    pandas.DataFrame
        One row per point: the parameters, then ``cycles, energy_pj, error_pct, speedup,
        energy_rel, payload_bytes, n_kernels, kernel_mix, wall_s``. ``speedup`` and
        ``energy_rel`` are relative to the Dense baseline on the same hardware.
    """
    from ..analysis.pattern import analyze
    from ..npu.hardware import HardwareConfig
    from ..npu.simulate import simulate, simulate_dense
    from ..selection.selector import select
    from ..workloads.validate import as_csr

    seed = check_seed(seed)
    A = as_csr(A)
    points = expand_grid(grid, max_points=max_points)
    defaults = {"tile": 32, "alpha": 1.0, "beta": 1.0, "error_budget": None,
                "granularity": "cluster", "resource": "energy", "rho_x": 1.0}
    if base:
        for k, v in base.items():
            if k not in SWEEP_PARAMETERS:
                raise InputError(f"'{k}' is not a sweep parameter; choose from {sorted(SWEEP_PARAMETERS)}.")
            defaults[k] = None if v is None else SWEEP_PARAMETERS[k].check(v)
    if scheduler not in ("local", "dask"):
        raise InputError(f"scheduler must be 'local' or 'dask', not {scheduler!r}.")
    hw0 = hw if hw is not None else HardwareConfig()

    analyses: dict = {}
    dense: dict = {}

    def full(point):
        p = dict(defaults)
        p.update(point)
        return p

    def get_pa(tile):
        if tile not in analyses:
            analyses[tile] = analyze(A, tile=tile)
        return analyses[tile]

    def get_hw(hw_changes):
        return hw0.replace(**hw_changes) if hw_changes else hw0

    def get_dense(tile, hwp, rho_x):
        key = (tile, hwp.config_hash(), rho_x)
        if key not in dense:
            dense[key] = simulate_dense(A.shape, tile, hwp, rho_x=rho_x, seed=seed)
        return dense[key]

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
        plan = select(pa, **kw)
        res = simulate(plan, hwp, rho_x=p["rho_x"], seed=seed)
        base_res = get_dense(ana["tile"], hwp, p["rho_x"])
        counts = pd.Series(plan.tile_kernels).value_counts()
        mix = ", ".join(f"{k}:{int(v)}" for k, v in counts.items())
        row = dict(point)
        row.update(
            cycles=float(res.cycles),
            energy_pj=float(res.energy_total_pj),
            error_pct=100.0 * float(plan.relative_error),
            speedup=float(base_res.cycles) / float(res.cycles) if res.cycles else float("nan"),
            energy_rel=float(res.energy_total_pj) / float(base_res.energy_total_pj)
            if base_res.energy_total_pj else float("nan"),
            payload_bytes=float(getattr(plan, "payload_bytes", float("nan"))),
            n_kernels=int(len(counts)),
            kernel_mix=mix,
            wall_s=time.perf_counter() - t0,
        )
        return row

    rows = []
    if scheduler == "local":
        for i, point in enumerate(points):
            rows.append(run_point(point))
            if progress is not None:
                progress(i + 1, len(points), point)
    else:
        import dask

        # Shared stages first (they are cached and reused by every task).
        for point in points:
            p = full(point)
            ana, _, hwc, _ = _split(p)
            get_pa(ana["tile"])
            get_dense(ana["tile"], get_hw(hwc), p["rho_x"])
        tasks = [dask.delayed(run_point, pure=False)(p) for p in points]
        rows = list(dask.compute(*tasks, scheduler="threads"))
        if progress is not None:
            progress(len(points), len(points), points[-1])
    df = pd.DataFrame(rows)
    df.attrs["akfviz_sweep"] = {"grid": {k: list(map(_jsonable, v)) for k, v in grid.items()},
                                "base": {k: _jsonable(v) for k, v in defaults.items()},
                                "seed": seed, "shape": list(A.shape), "nnz": int(A.nnz)}
    return df


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


def save_sweep(df: pd.DataFrame, path: str | Path) -> Path:
    """Write a sweep table as ``.csv`` or ``.parquet`` (chosen by the file name)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        df.to_csv(path, index=False)
    elif path.suffix.lower() in (".parquet", ".pq"):
        df.to_parquet(path, index=False)
    else:
        raise InputError(f"Cannot write a sweep to '{path.name}': use a .csv or .parquet file name.")
    return path


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

    Raises
    ------
    InputError
        Unknown format, unreadable file, or a table without the result columns.
    """
    if hasattr(path_or_bytes, "read"):
        name = name or getattr(path_or_bytes, "name", None)
        data = path_or_bytes.read()
    elif isinstance(path_or_bytes, (bytes, bytearray)):
        data = bytes(path_or_bytes)
    else:
        p = Path(path_or_bytes)
        if not p.is_file():
            raise InputError(f"No sweep file at '{p}'.")
        name = name or p.name
        data = p.read_bytes()
    if not data:
        raise InputError("The sweep file is empty.")
    if fmt is None:
        if data[:4] == b"PAR1" or (name or "").endswith((".parquet", ".pq")):
            fmt = "parquet"
        else:
            fmt = "csv"
    try:
        if fmt == "parquet":
            df = pd.read_parquet(io.BytesIO(data))
        elif fmt == "csv":
            df = pd.read_csv(io.BytesIO(data))
        else:
            raise InputError(f"Unknown sweep format {fmt!r}; use 'csv' or 'parquet'.")
    except InputError:
        raise
    except Exception as exc:  # parser errors of pandas/pyarrow
        raise InputError(f"Could not read the sweep file ({type(exc).__name__}: {exc}).") from None
    missing = [c for c in ("cycles", "energy_pj", "error_pct") if c not in df.columns]
    if missing:
        raise InputError(
            f"This table is not an akfviz sweep: it lacks the column(s) {missing}. "
            "Produce one with the Design space page or `python -m akfviz sweep`."
        )
    return df


def describe_grid(grid: Mapping[str, Sequence]) -> str:
    """One-line JSON description of a grid (for file names and bundles)."""
    return json.dumps({k: list(map(_jsonable, v)) for k, v in grid.items()}, sort_keys=True)
