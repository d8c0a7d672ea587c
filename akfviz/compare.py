"""Baselines and the paper's table (akf-spec §8): Dense, BlockSparse, StaticSparse and AKF on the same
matrix, input vector and hardware.

* **Dense** — every tile slot, empty ones included, as a DENSE tile (dense computation with a sparse
  mask), simulated with :func:`akfviz.npu.simulate.simulate_dense`.
* **BlockSparse** — empty tiles skipped, every nonempty tile DENSE.
* **StaticSparse** — one fixed kernel for every nonempty tile (default CSC; e.g. ``"NM2:4"``, whose
  projection error is then reported).
* **AKF** — the Dynamic Fuse Selector's plan (:func:`akfviz.select`).

``speedup = cycles(Dense) / cycles``, ``energy_rel = energy / energy(Dense)``,
``error_pct = 100 · ‖A − Â‖_F / ‖A‖_F``. The paper's claimed values are in :data:`PAPER_CLAIMS`;
:func:`paper_comparison` puts them beside measured ones with a note computed from the numbers.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd

from .arguments import check_real, check_seed
from .errors import InputError, checked_call

PLANS = ("Dense", "BlockSparse", "StaticSparse", "AKF")
#: The labelled steps :func:`compare` reports to its ``progress`` callback, in order.
STEPS = ("Simulating Dense (every tile slot)", "Simulating BlockSparse (nonempty tiles, DENSE)",
         "Simulating StaticSparse (one kernel)", "Selecting the AKF plan", "Simulating AKF")
COLUMNS = ["cycles", "speedup", "energy_pj", "energy_rel", "error_pct", "output_error_pct", "dram_bytes",
           "macs", "events", "payload_bytes", "seconds", "busiest_pe_busy", "busiest_pe_reduce", "static_energy_pj",
           "kernel_mix"]
#: How the ``kernel_mix`` of a Dense row that was not simulated begins (its reason follows).
DENSE_NOT_SIMULATED = "not simulated"

#: The paper's §5 table and its text. ``energy_table`` is the row labelled "Energy Consumption (Watts)"
#: (a power unit, and above Dense for every sparse plan); ``energy_text`` is the abstract's and results'
#: "20 % lower energy" for AKF; the paper reports no error for Dense ("N/A").
PAPER_CLAIMS = pd.DataFrame(
    {"speedup": [1.0, 1.8, 2.5, 3.5],
     "error_pct": [np.nan, 2.1, 3.5, 1.8],
     "energy_table": [1.0, 1.3, 1.6, 1.2],
     "energy_text": [1.0, np.nan, np.nan, 0.8]},
    index=pd.Index(PLANS, name="plan"),
)


def _check_x(x, n_cols, rho_x, seed):
    if x is None:
        from .npu.simulate import random_input

        return random_input(n_cols, rho_x, seed)
    from .workloads.validate import dense_operand

    arr = dense_operand(x, "x")
    if arr.ndim != 1 or arr.shape[0] != n_cols:
        raise InputError(f"x must be a 1-D numeric vector of length {n_cols} (the matrix's columns); "
                         f"got shape {getattr(arr, 'shape', None)} and type {arr.dtype}.")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise InputError("x contains NaN or infinite values; every entry must be a finite number.")
    return arr


def kernel_mix_of(plan) -> str:
    """The plan's kernel mix label from its per-kernel tile counts (names in alphabetical order,
    so equal shares are listed alphabetically)."""
    from .selection.pareto import kernel_mix

    counts = plan.kernel_counts.sort_index()
    return kernel_mix(list(counts.index), counts.to_numpy())


def _row(res, plan=None, payload=None, mix=""):
    """One plan's row of :func:`compare`; ``res=None``: a plan that was not simulated (NaN counters)."""
    if res is None:
        res = SimpleNamespace(cycles=np.nan, energy_total_pj=np.nan)
    out = {
        "cycles": float(res.cycles),
        "energy_pj": float(res.energy_total_pj),
        "error_pct": 100.0 * float(plan.relative_error) if plan is not None else 0.0,
        "dram_bytes": float(getattr(res, "dram_bytes", np.nan)),
        "macs": float(getattr(res, "macs", np.nan)),
        "events": float(getattr(res, "events", np.nan)),
        "payload_bytes": float(plan.payload_bytes) if plan is not None else float(payload),
        "seconds": float(getattr(res, "seconds", np.nan)),
        # leakage of every PE of the grid over the makespan (akf-spec §7): the part of the energy
        # that the selector's per-tile prices (each tile's own PE time) do not see
        "static_energy_pj": float(getattr(res, "energy_pj", {}).get("static", np.nan)),
        "kernel_mix": mix,
    }
    out.update(_busiest_pe(res))
    return out


def _busiest_pe(res) -> dict:
    """What sets a plan's makespan: the busiest PE's busy cycles (``busiest_pe_busy``) and, of
    those, the cycles it spends adding other PEs' partial sums (``busiest_pe_reduce``: its
    reduction adds × ``reduce_cycles``, akf-spec §7) — work that sparsity does not remove."""
    counters = getattr(res, "counters", None)
    hw = getattr(res, "hw", None)
    if not counters or hw is None or "busy" not in counters or "reduce_adds" not in counters:
        return {"busiest_pe_busy": np.nan, "busiest_pe_reduce": np.nan}
    busy = np.asarray(counters["busy"])
    if busy.size == 0:
        return {"busiest_pe_busy": np.nan, "busiest_pe_reduce": np.nan}
    k = int(np.argmax(busy))
    return {"busiest_pe_busy": float(busy[k]),
            "busiest_pe_reduce": float(np.asarray(counters["reduce_adds"])[k]) * float(hw.reduce_cycles)}


def _check_same_matrix(A, M, what: str) -> None:
    """Refuse a matrix ``A`` other than the analysed ``M`` (canonical CSR): ``compare(B, plan=plan_of_A)``
    used to check the shape only and report A's results under B's name (probe). O(nnz)."""
    from .workloads.validate import as_csr

    B = as_csr(A, name="matrix A", copy=False)
    if tuple(B.shape) != tuple(M.shape):
        raise InputError(f"A has shape {B.shape}, but the {what} is of a {tuple(M.shape)} matrix.")
    B = B.copy()
    B.sum_duplicates()
    B.eliminate_zeros()
    if B.nnz != M.nnz or (B != M).nnz:
        raise InputError(f"A is not the matrix the {what} was made from (same shape, other entries); pass "
                         f"that matrix, or leave {what}= out to analyse A.")


class _DefaultTile(int):
    """The default tile side (32), told apart from a 32 the caller passes: with ``analysis=`` and no
    ``tile=``, :func:`compare` takes the analysis' own tile (a probe: ``compare(A, analysis=pa8)``
    was refused as "asked for tile=32"). It prints as 32, so the signature reads as spec §9's."""

    __slots__ = ()


DEFAULT_TILE = _DefaultTile(32)


@checked_call
def compare(A, hw=None, alpha=1.0, beta=1.0, tile=DEFAULT_TILE, *, static_kernel="CSC", x=None, rho_x=1.0, seed=0,
            granularity="cluster", analysis=None, mapping="anneal", progress=None, plan=None) -> pd.DataFrame:
    """Simulate the four plans of akf-spec §8 on the same matrix, vector and hardware.

    Parameters
    ----------
    A : sparse matrix or 2-D array (or None when ``analysis`` is given)
    hw : HardwareConfig, optional (default ``HardwareConfig()``)
    alpha, beta : float
        The selector's weights for the AKF plan.
    tile : int
        Tile side T (default 32; the plan's own when ``plan`` is given, the analysis' own when
        ``analysis`` is given without ``tile``).
    static_kernel : str
        Kernel of the StaticSparse plan (any registered kernel, e.g. ``"CSC"``, ``"NM2:4"``).
    x : 1-D array, optional
        Input vector; default a seeded standard-normal vector with a fraction ``rho_x`` of nonzeros.
    rho_x : float in (0, 1]
        Activation density for the default ``x`` and for the selector's costs.
    seed : int
        Seed of ``x``, of the selector's table calibration and of the simulator's mapping.
    granularity : {"cluster", "tile"}
        The selector's granularity.
    analysis : PatternAnalysis, optional
        Reuse an existing analysis of ``A`` (same tile side).
    mapping : str
        Passed to :func:`akfviz.simulate`.
    progress : callable(done, total, step), optional
        Called before each of the :data:`STEPS` steps (``done`` steps finished, ``step`` its
        label) and once at the end with ``done == total`` — the app's progress bar. On a
        1M-nonzero matrix the four simulations take seconds each.
    plan : FusionPlan, optional
        An AKF plan already selected on this analysis (e.g. with an error budget): it is
        simulated as it is, and ``alpha``, ``beta`` and ``granularity`` are not used. The app
        passes the plan its other pages show, so every page simulates the same plan.

    Returns
    -------
    DataFrame
        Indexed ``Dense, BlockSparse, StaticSparse, AKF`` with ``cycles, speedup, energy_pj, energy_rel,
        error_pct`` and the counters behind them: ``output_error_pct`` (on ``x``), ``dram_bytes, macs,
        events, payload_bytes, seconds, busiest_pe_busy, busiest_pe_reduce, static_energy_pj`` (the
        leakage of every PE over the makespan), ``kernel_mix``. ``df.attrs`` holds the AKF plan's
        selection summary.
        A matrix with more columns than the engine's Dense baseline takes
        (:data:`~akfviz.npu.simulate.DENSE_MAX_ROUTES`) gets a Dense row of NaN counters, its reason in
        its ``kernel_mix`` and in ``df.attrs["dense_skipped"]``; the other three plans are simulated.
    """
    from .analysis.pattern import PatternAnalysis, analyze
    from .analysis.tiling import check_tile
    from .execute.plan import FusionPlan
    from .kernels.registry import get_kernel
    from .npu.hardware import as_hardware
    from .selection.perftable import check_rho_x
    from .selection.selector import select

    hw = as_hardware(hw)
    rho_x = check_rho_x(rho_x)
    static = get_kernel(static_kernel).name
    seed = check_seed(seed)
    if plan is None:  # the selector's settings: refused before the three baselines are simulated
        from .selection.costs import check_granularity

        a, b = check_real(alpha, "alpha"), check_real(beta, "beta")
        if a == 0 and b == 0:
            # (the CLI printed three baseline steps, seconds of work, before select refused this)
            raise InputError("alpha and beta are both 0, so every kernel costs nothing; make at least one > 0.")
        check_granularity(granularity)
    if plan is not None:
        if not isinstance(plan, FusionPlan):
            raise InputError(f"plan must be an akfviz FusionPlan (from akfviz.select), got {type(plan).__name__}.")
        if analysis is not None and plan.pa is not analysis:
            raise InputError("plan was selected on another analysis than the one given; pass the plan's "
                             "own (plan.pa) or leave analysis= out.")
        analysis = plan.pa
        tile = plan.pa.tile
    if analysis is None:
        if A is None:
            raise InputError("Give a matrix A (or an existing analysis=).")
        pa = analyze(A, tile=tile)
    else:
        pa = analysis
        if not isinstance(pa, PatternAnalysis):
            raise InputError(f"analysis must be an akfviz PatternAnalysis (from akfviz.analyze), "
                             f"got {type(pa).__name__}.")
        if tile is DEFAULT_TILE:
            tile = int(pa.tile)
        if check_tile(tile) != int(pa.tile):
            raise InputError(f"The analysis was made with tile={pa.tile}, but compare was asked for tile={tile}.")
        if A is not None:
            _check_same_matrix(A, pa.A, "plan" if plan is not None else "analysis")
    shape = tuple(pa.shape)
    xv = _check_x(x, shape[1], rho_x, seed)

    if progress is not None and not callable(progress):
        raise InputError(f"progress must be a function (done, total, step), got {type(progress).__name__}.")

    def report(k):
        if progress is not None:
            progress(k, len(STEPS), STEPS[k] if k < len(STEPS) else "Done")

    report(0)
    rows = {"Dense": plan_row("Dense", pa, hw, xv, seed=seed, mapping=mapping)}
    report(1)
    rows["BlockSparse"] = plan_row("BlockSparse", pa, hw, xv, seed=seed, mapping=mapping)
    report(2)
    rows["StaticSparse"] = plan_row("StaticSparse", pa, hw, xv, seed=seed, mapping=mapping, static_kernel=static)
    report(3)
    akf = plan if plan is not None else select(pa, alpha, beta, granularity=granularity, hw=hw,
                                               rho_x=rho_x, seed=seed)
    report(4)
    rows["AKF"] = plan_row("AKF", pa, hw, xv, seed=seed, mapping=mapping, plan=akf)
    report(len(STEPS))
    return table_from_rows(rows, static_kernel=static, hw=hw, akf=akf)


def plan_row(which, pa, hw, x, *, seed=0, mapping="anneal", static_kernel="CSC", plan=None) -> dict:
    """Simulate one of the four plans of :func:`compare` (akf-spec §8) and return its row.

    :func:`compare` is these four calls and :func:`table_from_rows`; the app calls them one by
    one so that a change of the Static-sparse kernel re-simulates that plan alone.

    Parameters
    ----------
    which : {"Dense", "BlockSparse", "StaticSparse", "AKF"}
    pa : PatternAnalysis
    hw : HardwareConfig
    x : 1-D float64 array
        The input vector, already checked (length ``pa.shape[1]``).
    seed : int
        Seed of the simulator's mapping.
    mapping : str
        Passed to :func:`akfviz.simulate`.
    static_kernel : str
        The StaticSparse plan's kernel (``which="StaticSparse"`` only).
    plan : FusionPlan
        The AKF plan (``which="AKF"`` only).

    Returns
    -------
    dict
        The row's counters (``cycles, energy_pj, error_pct, output_error_pct, dram_bytes, macs, events,
        payload_bytes, seconds, busiest_pe_busy, busiest_pe_reduce, static_energy_pj, kernel_mix``), before the ratios
        to Dense. A Dense baseline too wide for the engine is a row of NaN counters with its reason
        in ``kernel_mix``.
    """
    from .execute.plan import FusionPlan
    from .npu.simulate import DENSE_MAX_ROUTES, simulate, simulate_dense

    if which not in PLANS:
        raise InputError(f"which must be one of {', '.join(PLANS)}, got {which!r}.")
    n = int(pa.n_tiles)
    if which == "Dense":
        shape = tuple(pa.shape)
        if shape[1] > DENSE_MAX_ROUTES:
            # one event stream per column: beyond the engine's limit, the other three plans still run
            row = _row(None, payload=np.nan, mix=(
                f"{DENSE_NOT_SIMULATED}: {shape[1]:,} columns, over the simulator's limit of "
                f"{DENSE_MAX_ROUTES:,} for the Dense baseline (one event stream per column); "
                "ratios to Dense are NaN"))
        else:
            # the same mapping method and seed as the other three plans (akf-spec §8: same terms for all)
            dres = simulate_dense(shape, pa.tile, hw, x=x, seed=seed, mapping=mapping, record=False)
            # the simulator's own payload count (exact for edge tiles; the table scales them by h·w/T²)
            row = _row(dres, payload=float(dres.meta["payload_bytes"]),
                       mix="DENSE 100 % (every tile slot, empty ones too)")
        row["output_error_pct"] = 0.0
        return row
    if which == "AKF":
        if not isinstance(plan, FusionPlan):
            raise InputError(f"plan must be an akfviz FusionPlan (from akfviz.select), got {type(plan).__name__}.")
    else:
        kernel = "DENSE" if which == "BlockSparse" else static_kernel
        plan = FusionPlan(pa, np.full(n, kernel, dtype=object))
    # record=False: only the counters are needed (no timeline), and the engine may use the
    # worker threads (same counters, bit for bit)
    res = simulate(plan, hw, x=x, seed=seed, mapping=mapping, record=False)
    row = _row(res, plan=plan, mix=kernel_mix_of(plan))
    row["output_error_pct"] = 100.0 * float(plan.output_error(x)) if n else 0.0
    return row


def table_from_rows(rows: dict, *, static_kernel: str, hw, akf=None) -> pd.DataFrame:
    """:func:`compare`'s table from the four rows of :func:`plan_row`: ``speedup = cycles(Dense) /
    cycles`` and ``energy_rel = energy / energy(Dense)`` (akf-spec §8), columns in :data:`COLUMNS`
    order, and ``df.attrs`` (``static_kernel``, the AKF plan's ``akf_selection``, ``hw_hash``,
    ``dense_skipped`` when the Dense baseline was not simulated)."""
    df = pd.DataFrame.from_dict({name: dict(rows[name]) for name in PLANS}, orient="index")
    df.index.name = "plan"
    dc, de = df.loc["Dense", "cycles"], df.loc["Dense", "energy_pj"]
    df["speedup"] = dc / df["cycles"] if dc > 0 else np.nan
    df["energy_rel"] = df["energy_pj"] / de if de > 0 else np.nan
    df = df[COLUMNS]
    df.attrs["static_kernel"] = static_kernel
    sel = getattr(akf, "selection", None)
    df.attrs["akf_selection"] = sel.to_dict() if sel is not None else {}
    df.attrs["hw_hash"] = hw.config_hash()
    if str(rows["Dense"].get("kernel_mix", "")).startswith(DENSE_NOT_SIMULATED):
        df.attrs["dense_skipped"] = rows["Dense"]["kernel_mix"]
    return df


def paper_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """Measured values beside the paper's claims, with a note per plan computed from the numbers.

    Parameters
    ----------
    df : DataFrame
        The output of :func:`compare`.

    Returns
    -------
    DataFrame indexed like :data:`PAPER_CLAIMS`: ``speedup_measured, speedup_claimed, energy_rel_measured,
    energy_claimed_table, energy_claimed_text, error_pct_measured, error_pct_claimed, note``.
    """
    missing = [c for c in ("cycles", "speedup", "energy_rel", "error_pct") if c not in df.columns]
    if missing or not all(p in df.index for p in PLANS):
        raise InputError("paper_comparison needs the DataFrame returned by akfviz.compare "
                         f"(index {', '.join(PLANS)}; columns speedup, energy_rel, error_pct).")
    out = pd.DataFrame(index=PAPER_CLAIMS.index)
    out["speedup_measured"] = df.loc[list(PLANS), "speedup"].to_numpy(np.float64)
    out["speedup_claimed"] = PAPER_CLAIMS["speedup"]
    out["energy_rel_measured"] = df.loc[list(PLANS), "energy_rel"].to_numpy(np.float64)
    out["energy_claimed_table"] = PAPER_CLAIMS["energy_table"]
    out["energy_claimed_text"] = PAPER_CLAIMS["energy_text"]
    out["error_pct_measured"] = df.loc[list(PLANS), "error_pct"].to_numpy(np.float64)
    out["error_pct_claimed"] = PAPER_CLAIMS["error_pct"]
    out["note"] = [_note(p, df, out.loc[p]) for p in PLANS]
    return out


def _share(df, plan, col):
    if col not in df.columns:
        return None
    d = float(df.loc["Dense", col])
    v = float(df.loc[plan, col])
    return v / d if d > 0 and np.isfinite(v) else None


def _leakage_text(df) -> list:
    """Why AKF can use more energy than a baseline: the selector prices each tile's own work (its
    PE's time included), while every PE of the grid leaks for the whole makespan (akf-spec §7). Empty
    unless AKF's energy exceeds a simulated baseline's."""
    if "static_energy_pj" not in df.columns:
        return []
    e = float(df.loc["AKF", "energy_pj"])
    beaten = [(float(df.loc[b, "energy_pj"]), b) for b in ("BlockSparse", "StaticSparse")
              if np.isfinite(float(df.loc[b, "energy_pj"])) and float(df.loc[b, "energy_pj"]) < e]
    st = float(df.loc["AKF", "static_energy_pj"])
    if not beaten or not (np.isfinite(e) and e > 0 and np.isfinite(st)):
        return []
    eb, b = min(beaten)
    cyc, cyc_b = float(df.loc["AKF", "cycles"]), float(df.loc[b, "cycles"])
    return [f"it uses {100 * (e / eb - 1):.2g} % more energy than {b} here: {100 * st / e:.0f} % of AKF's energy "
            "is static, "
            f"the leakage of every PE of the grid over its makespan ({cyc:,.0f} cycles against {b}'s "
            f"{cyc_b:,.0f}), which the selector's per-tile prices do not include (they count each tile's own "
            "PE time) — the resource 'cycles' or 'mix' on the Kernels page weighs the time instead"]


def _makespan_text(df, plan) -> str:
    """Why fewer MACs need not mean fewer cycles: the makespan against the busiest PE's work."""
    if not {"busiest_pe_busy", "busiest_pe_reduce", "cycles"} <= set(df.columns):
        return ""
    cyc, busy, red = (float(df.loc[plan, c]) for c in ("cycles", "busiest_pe_busy", "busiest_pe_reduce"))
    if not (np.isfinite(busy) and np.isfinite(red) and cyc > 0):
        return ""
    text = (f"of its makespan of {cyc:,.0f} cycles, the busiest PE works {busy:,.0f} cycles "
            f"({100 * red / busy if busy else 0:.0f} % of them adding partial sums from other PEs, which "
            f"sparsity does not remove)")
    if cyc > busy:
        text += "; the rest is loading x, events travelling the network and writing y back"
    return text


def _note(plan, df, r) -> str:
    if plan == "Dense" and not np.isfinite(float(df.loc["Dense", "cycles"])):
        return f"Dense baseline {df.loc['Dense', 'kernel_mix']}"
    if plan == "Dense":
        return ("reference: speedup and energy are 1 by definition; the paper gives no error for Dense and "
                f"ours is {r.error_pct_measured:.3g} %")
    parts = []
    s, c = r.speedup_measured, r.speedup_claimed
    if np.isfinite(s) and s > 0:
        rel = s / c
        how = "matches" if abs(rel - 1) < 0.1 else ("exceeds" if rel > 1 else "falls short of")
        parts.append(f"speedup {s:.3g}× {how} the claimed {c:.3g}× ({rel:.2g}× the claim)")
    why = []
    for col, label in (("macs", "MACs"), ("dram_bytes", "DRAM bytes"), ("payload_bytes", "payload bytes"),
                       ("events", "events")):
        sh = _share(df, plan, col)
        if sh is not None:
            why.append(f"{100 * sh:.3g} % of Dense's {label}")
    if why:
        parts.append("it does " + ", ".join(why))
    limit = _makespan_text(df, plan)
    if limit:
        parts.append(limit)
    e = r.energy_rel_measured
    if np.isfinite(e):
        t = r.energy_claimed_table
        txt = f"energy {e:.3g}× Dense vs the table's {t:.3g} (labelled Watts — a power, not an energy"
        txt += ", and above Dense)" if t > 1 else ")"
        if np.isfinite(r.energy_claimed_text):
            txt += f" and the text's {r.energy_claimed_text:.3g}× (\"20 % lower energy\")"
        parts.append(txt)
        if plan == "AKF":
            parts.extend(_leakage_text(df))
    em, ec = r.error_pct_measured, r.error_pct_claimed
    if em == 0:
        parts.append(f"error 0 % (every kernel used is exact) vs the claimed {ec:.3g} %, which an exact plan "
                     "cannot have")
    else:
        parts.append(f"error {em:.3g} % vs the claimed {ec:.3g} % ({'lower' if em < ec else 'higher'})")
    return "; ".join(parts)


# ``akfviz.compare`` is both this module and the function of akf-spec §9. Which object the package
# attribute holds depends on import order (``from akfviz.compare import X`` binds the module). So that
# ``akfviz.compare(A)`` and ``akfviz.compare.PAPER_CLAIMS`` work either way, the module is callable
# (it forwards to :func:`compare`) and the function carries the module's public names.
class _CallableModule(sys.modules[__name__].__class__):
    def __call__(self, *args, **kwargs):
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
compare.PAPER_CLAIMS = PAPER_CLAIMS
compare.paper_comparison = paper_comparison
compare.PLANS = PLANS
compare.COLUMNS = COLUMNS
