"""Cached library calls of the app, keyed by content hash (akf-spec §9 calls, at the edge).

Library calls are cached, keyed by the matrix's content hash (sha256 of ``indptr``,
``indices``, ``data``; :func:`matrix_digest`) plus the parameters, with bounded
``max_entries``, so a widget change recomputes only what depends on it. The large results —
the matrix, ``PatternAnalysis``, ``FusionPlan``, ``SimResult`` — use ``st.cache_resource``:
returned as they are, not unpickled into a new copy on every rerun (on a 1M-nonzero matrix
that copy was most of a rerun, and a plan's pickle carried its analysis a second time).
Pages only read them. Small tables and figures use ``st.cache_data``; the numba warm-up
(:func:`warm_up`) lives in ``st.cache_resource`` too. Stages are imported lazily
(:func:`stage`), so opening a page does not load the code of stages it does not use.

:mod:`akfviz.app_state` re-exports these names for the pages.
"""
from __future__ import annotations

import hashlib
import json
import importlib
import time
import weakref
from typing import Any

import numpy as np
import streamlit as st

from .app_url import MAX_APP_SIDE, MAX_GENERATED_DENSE, MAX_GENERATED_NNZ


# --------------------------------------------------------------------------- library availability


def stage(module: str, attr: str | None = None):
    """Import ``akfviz.<module>`` lazily (and fetch ``attr``).

    Lazy so that opening a page does not import (and JIT-load) stages it does not use. A
    missing module or attribute is a bug and raises, never a silent "not available".
    """
    mod = importlib.import_module(f"akfviz.{module}")
    return getattr(mod, attr) if attr else mod


# --------------------------------------------------------------------------- content hashing


#: id(matrix) -> (weak reference, digest): the cached matrices are the same objects from one
#: rerun to the next (``st.cache_resource``), so their content is hashed once, not per rerun.
_DIGESTS: dict = {}


def matrix_digest(A) -> str:
    """sha256 of the matrix content (shape, indptr, indices, data), hex (memoised per object:
    the matrices handed to pages come from ``st.cache_resource`` and are never modified)."""
    hit = _DIGESTS.get(id(A))
    if hit is not None and hit[0]() is A:
        return hit[1]
    digest = _matrix_digest(A)
    key = id(A)
    try:
        _DIGESTS[key] = (weakref.ref(A, lambda _ref, k=key: _DIGESTS.pop(k, None)), digest)
    except TypeError:  # an object without weak references: not memoised
        pass
    return digest


def _matrix_digest(A) -> str:
    from .workloads.validate import matrix_sha256

    return matrix_sha256(A)


def _cell_text(obj):
    """JSON of a table cell json cannot write itself: arrays and numpy numbers as lists and Python
    numbers (every digit), anything else as its text."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def frame_digest(df) -> str:
    """sha256 of a DataFrame's values, index and column names (a sweep's table is small: this is
    far cheaper than the figures it keys)."""
    import pandas as pd

    try:
        h = hashlib.sha256(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes())
    except TypeError:  # a column of unhashable cells (lists, arrays): its JSON text instead, every float
        # in full (to_json keeps 10 decimals and repr of an array 8 digits: different tables shared a key)
        h = hashlib.sha256(json.dumps(df.to_dict(orient="split"), sort_keys=True, default=_cell_text).encode())
    h.update(repr(list(df.columns)).encode())
    return h.hexdigest()


def bytes_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- cached library calls


@st.cache_resource(max_entries=16, show_spinner="Generating the matrix…")
def generate_cached(kind: str, params: tuple) -> Any:
    """``akfviz.generate`` within the app's limits (:data:`MAX_GENERATED_NNZ`,
    :data:`MAX_GENERATED_DENSE`), cached across sessions."""
    import akfviz
    from .workloads.limits import LoadLimits
    limits = LoadLimits(max_nnz=MAX_GENERATED_NNZ, max_dense_elements=MAX_GENERATED_DENSE,
                        max_rows=MAX_APP_SIDE, max_cols=MAX_APP_SIDE)
    return akfviz.generate(kind, limits=limits, **dict(params))


@st.cache_resource(max_entries=8, show_spinner="Loading the sample…")
def sample_cached(name: str):
    from .workloads import samples
    return samples.load_sample(name)


@st.cache_resource(max_entries=4, show_spinner="Reading the uploaded file…")
def load_cached(digest: str, _data: bytes, fmt: str | None, tensor: str | None, prune: tuple,
                name: str | None = None):
    import akfviz
    from .workloads.limits import LoadLimits
    A = akfviz.load(_data, fmt=fmt, tensor=tensor or None, name=name,
                    limits=LoadLimits(max_rows=MAX_APP_SIDE, max_cols=MAX_APP_SIDE))
    method = prune[0]
    if method and method != "none":
        from .workloads.prune import prune as do_prune
        A = do_prune(A, method=method, sparsity=prune[1], pattern=prune[2])
    return A


@st.cache_data(max_entries=4, show_spinner=False)
def matrix_choices_cached(digest: str, _data: bytes, name: str):
    """:func:`akfviz.workloads.loaders.matrix_choices` of an upload (its headers only)."""
    from .workloads.loaders import matrix_choices
    return matrix_choices(_data, name=name)


@st.cache_resource(max_entries=8, show_spinner="Analysing tiles and LSH clusters…")
def analyze_cached(key: str, _A, tile: int, lsh: tuple):
    import akfviz
    _analysis_code_loaded()
    return akfviz.analyze(_A, tile=tile, lsh=_lsh_config(lsh))


@st.cache_resource(show_spinner=False)
def _analysis_code_loaded() -> bool:
    """Load the analysis's numba code on a tiny matrix before the first real analysis, so the
    timings the Patterns page shows (cached for every later visitor) are the analysis's own,
    not the ≈ 0.8 s of loading machine code on a cold server (:func:`warm_up` runs only after
    the first page has drawn)."""
    import akfviz
    akfviz.analyze(akfviz.generate("uniform", n=64, density=0.05, seed=0), tile=32)
    return True


def _lsh_config(lsh: tuple):
    if not lsh:
        return None
    LSHConfig = stage("analysis.lsh", "LSHConfig")
    k, b, g, seed = lsh
    return LSHConfig(num_hashes=k, bands=b, grid=g, seed=seed)


@st.cache_resource(show_spinner=False)
def _selection_code_loaded() -> bool:
    """Load the selector's and the plan builder's numba code (both granularities, a budget) on a tiny
    matrix before the first real selection, so the "selection time" the Kernels page shows is the
    selection's own: on a fresh server the first one read 90 ms for a 23 ms selection of the default
    sample (the performance table, built per hardware, is timed apart and excluded there). At the
    default T = 32 and hardware, so the table it builds is the one the default page then uses (a
    T = 16 table cost 0.34 s of its own)."""
    import akfviz
    pa = akfviz.analyze(akfviz.generate("uniform", n=64, density=0.05, seed=0), tile=32)
    for granularity in ("cluster", "tile"):
        akfviz.select(pa, granularity=granularity)
    akfviz.select(pa, error_budget=0.05)
    return True


@st.cache_resource(max_entries=16, show_spinner="Selecting kernels…")
def select_cached(key: str, _pa, alpha: float, beta: float, budget, granularity: str,
                  hw_key: str, _hw, extra: tuple = ()):
    import akfviz
    _selection_code_loaded()
    return akfviz.select(_pa, alpha=alpha, beta=beta, error_budget=budget, granularity=granularity,
                         hw=_hw, **dict(extra))


@st.cache_data(max_entries=8, show_spinner="Sweeping the multiplier for the Pareto front…")
def pareto_cached(key: str, _pa, hw_key: str, _hw, resource: str, granularity: str, n_points: int = 25,
                  rho_x: float = 1.0):
    """The Pareto front priced as the current plan is (its ρ_x: the star must sit on the same scale)."""
    from .selection.pareto import pareto_front
    return pareto_front(_pa, hw=_hw, resource=resource, granularity=granularity, n_points=n_points,
                        rho_x=rho_x)


@st.cache_data(max_entries=4, show_spinner="Calibrating the performance table…")
def perftable_cached(hw_key: str, _hw, tile: int, rho_x: float = 1.0):
    from .selection.perftable import performance_table
    return performance_table(_hw, tile, rho_x=rho_x)


@st.cache_data(max_entries=4, show_spinner="Pricing the tiles exactly to check the table…")
def prediction_error_cached(key: str, _pa, hw_key: str, _hw, rho_x: float = 1.0):
    from .selection.perftable import prediction_error
    return prediction_error(_pa, _hw, max_tiles=500, rho_x=rho_x)


def simulate_cached(key: str, _plan, hw_key: str, _hw, x_key: str, _x, fused: bool = True,
                    iterations: int = 1, persistent: bool = True, _mapping="anneal"):
    """The simulation of the app's pages; the fused run records the busy intervals (the NPU page's
    timeline) up to :data:`MAX_RECORDED_INTERVALS` of them. The unfused run, drawn only as totals
    beside the fused one, keeps no intervals and has a cache of its own, so eight settings stay
    cached for both (one shared cache of eight held four)."""
    cached = _simulate_recorded_cached if fused else _simulate_counters_cached
    return cached(key, _plan, hw_key, _hw, x_key, _x, iterations, persistent, _mapping)


@st.cache_resource(max_entries=8, show_spinner="Simulating the NPU event by event…")
def _simulate_recorded_cached(key: str, _plan, hw_key: str, _hw, x_key: str, _x, iterations: int,
                              persistent: bool, _mapping):
    import akfviz
    return akfviz.simulate(_plan, _hw, x=_x, iterations=iterations, persistent=persistent, fused=True,
                           mapping=_mapping, record_limit=MAX_RECORDED_INTERVALS)


@st.cache_resource(max_entries=8, show_spinner="Simulating the unfused plan…")
def _simulate_counters_cached(key: str, _plan, hw_key: str, _hw, x_key: str, _x, iterations: int,
                              persistent: bool, _mapping):
    import akfviz
    return akfviz.simulate(_plan, _hw, x=_x, iterations=iterations, persistent=persistent, fused=False,
                           mapping=_mapping, record=False)


#: Most busy intervals a simulation in the app records for the timeline (≈ 160 bytes each while
#: recording); above it the app simulates without them — the same counters, cycles and energy.
MAX_RECORDED_INTERVALS = 5_000_000


@st.cache_data(max_entries=32, show_spinner=False)
def _compare_row_cached(key: str, which: str, _pa, hw_key: str, _hw, rho_x: float, static_kernel: str,
                        _plan=None) -> dict:
    """One plan's row of the comparison (:func:`akfviz.compare.plan_row`), cached by what that plan
    depends on (``key``): the Dense and Block-sparse rows by the analysis, the Static-sparse row
    also by its kernel, the AKF row by the plan."""
    from .compare import plan_row
    from .npu.simulate import random_input

    x = random_input(_pa.shape[1], rho_x, 0)
    return plan_row(which, _pa, _hw, x, static_kernel=static_kernel, plan=_plan)


def compare_cached(analysis_key: str, plan_key: str, hw_key: str, _hw, static_kernel: str, rho_x: float,
                   _pa, _plan):
    """:func:`akfviz.compare` of the page's analysis and plan (``x`` of density ``rho_x``, seed 0),
    built from the four plans' rows, each cached on its own: picking another Static-sparse
    kernel re-simulates that plan alone. A progress bar runs over the four plans (seconds each
    on a 1M-nonzero matrix; a cached row passes at once); it is not part of any cached result."""
    from .compare import PLANS, STEPS, table_from_rows

    static_kernel = stage("kernels.registry", "get_kernel")(static_kernel).name
    keys = {"Dense": analysis_key, "BlockSparse": analysis_key,
            "StaticSparse": f"{analysis_key}|{static_kernel}", "AKF": plan_key}
    labels = dict(zip(PLANS, (STEPS[0], STEPS[1], STEPS[2], STEPS[4])))
    bar = st.progress(0.0, text="Running the four baselines…")
    try:
        rows = {}
        for done, which in enumerate(PLANS):
            bar.progress(done / len(PLANS), text=f"Step {done + 1} of {len(PLANS)}: {labels[which]}…")
            rows[which] = _compare_row_cached(
                f"{keys[which]}|{hw_key}|{rho_x!r}", which, _pa, hw_key, _hw, float(rho_x),
                static_kernel if which == "StaticSparse" else "", _plan if which == "AKF" else None)
        return table_from_rows(rows, static_kernel=static_kernel, hw=_hw, akf=_plan)
    finally:
        bar.empty()


@st.cache_data(max_entries=32, show_spinner=False)
def explain_cached(key: str, _plan, cluster: int | None = None, tile: int | None = None):
    """:func:`akfviz.selection.explain.explain` of one cluster or tile, once per plan (``key``) and
    unit: in a cluster-mode budget it sums two kernels over every member tile (≈ 170 ms for the
    largest cluster of the 1M-nonzero uniform matrix), which every rerun of the Kernels page paid."""
    return stage("selection.explain", "explain")(_plan, cluster=cluster, tile=tile)


@st.cache_data(max_entries=16, show_spinner=False)
def cpu_check_cached(key: str, _plan, _A) -> dict:
    """:func:`akfviz.execute.cpu.matvec_check` of the plan on a seeded standard-normal ``x``
    (seed 0), once per plan (``key``): ``vs_approx``, ``output_error``, ``max_abs``."""
    x = np.random.default_rng(0).standard_normal(_A.shape[1])
    return stage("execute.cpu", "matvec_check")(_plan, x, _A)


@st.cache_data(max_entries=8, show_spinner="Placing tiles on the PE grid (annealing)…")
def mapping_cached(key: str, _plan, hw_key: str, _hw, rho_x: float):
    from .npu.simulate import plan_mapping
    return plan_mapping(_plan, _hw, rho_x=rho_x)


@st.cache_data(max_entries=8, show_spinner="Running the solver and simulating its iterations…")
def solver_cached(key: str, _plan, hw_key: str, _hw, method: str, iterations: int):
    from .npu.iterative import run_solver
    return run_solver(_plan, _hw, method=method, iterations=iterations)


def input_vector(m: int, rho_x: float, seed: int = 0) -> np.ndarray:
    """Seeded input ``x`` of density ``rho_x``: the library's
    :func:`akfviz.npu.simulate.random_input`, the same vector ``compare`` draws."""
    return stage("npu.simulate", "random_input")(m, rho_x, seed)




@st.cache_resource(show_spinner="Loading the numba kernels (first run only)…")
def warm_up() -> float:
    """Load (or compile) the numba kernels of every stage once per server process, on a tiny
    matrix; returns seconds.

    Called after the first page's body, so the first chart does not wait for it. Without the
    selector, simulator and baselines here, the first visit to Kernels reported a
    "selection time" of ≈ 0.5–1 s, nearly all of it loading cached machine code and building
    the default hardware's performance table at T = 32 (the selection itself takes ≈ 10 ms on
    the default sample).
    """
    # Nothing here is optional: every stage is part of the package, and the input is a fixed,
    # valid matrix, so an error (a missing module or attribute included, as in :func:`stage`)
    # is a bug and raises.
    import akfviz
    from .execute.plan import FusionPlan

    t0 = time.perf_counter()
    A = akfviz.generate("uniform", n=64, density=0.05, seed=0)
    pa = akfviz.analyze(A, tile=32)
    FusionPlan(pa, ["CSC"] * pa.tileset.n_tiles).matvec(np.ones(A.shape[1]))
    # the default preset at the default T: this also builds its performance table
    plan = akfviz.select(pa, hw=akfviz.HardwareConfig())
    plan.matvec(np.ones(A.shape[1]))
    # a budget mode: the greedy fill's hull chains and the exchange search's kernel
    akfviz.select(pa, hw=akfviz.HardwareConfig(), error_budget=0.1)
    akfviz.simulate(plan, akfviz.HardwareConfig(), rho_x=0.5)
    akfviz.compare(A, tile=32)
    from .selection.pareto import pareto_front
    pareto_front(pa, hw=akfviz.HardwareConfig(), n_points=2)  # the front's merge kernels
    return time.perf_counter() - t0
