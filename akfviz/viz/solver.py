"""Iterative-solver figures (akf-spec §7, iterative mode): convergence and per-iteration traffic."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import BAR_TEXT, empty_figure, log_ticks, styled


#: Each method's residual, exactly as :mod:`akfviz.npu.iterative` computes it (both runs measured with
#: the exact A): Jacobi and CG the relative residual of A x = b; power iteration the eigen-residual of
#: its unit-norm iterate x_k with the Rayleigh quotient λ_k = x_kᵀ A x_k (|λ_k| taken as 1 when λ_k = 0).
RESIDUALS = {"jacobi": "‖b − A x_k‖ / ‖b‖", "cg": "‖b − A x_k‖ / ‖b‖", "power": "‖A x_k − λ_k x_k‖ / |λ_k|"}


#: The methods' names as the Solver page writes them.
METHOD_NAMES = {"jacobi": "Jacobi", "cg": "conjugate gradients", "power": "power iteration"}


def residual_label(method: str) -> str:
    """The convergence plot's y-axis title for ``method`` ("jacobi", "cg", "power").

    >>> residual_label("power")
    'eigen-residual ‖A x_k − λ_k x_k‖ / |λ_k|'
    """
    if method == "power":
        return f"eigen-residual {RESIDUALS['power']}"
    return f"relative residual {RESIDUALS[method]}"


def residual_caption(method: str) -> str:
    """How to read the convergence plot of ``method``: what its residual is, in words."""
    if method == "power":
        return ("How to read this: the residual of power iteration is "
                f"{RESIDUALS['power']}, where x_k is the k-th iterate scaled to length 1 and "
                "λ_k = x_kᵀ A x_k its Rayleigh quotient (|λ_k| taken as 1 when λ_k = 0); it is 0 when x_k is an "
                "eigenvector of A. Both curves are measured with the exact A: the lossy plan's iterates come from "
                "Â, their residual from A, so the approximation error can stop its curve falling.")
    return (f"How to read this: the residual {RESIDUALS[method]} per iteration (b the right-hand side, x_k the "
            "k-th iterate), both measured against the exact A; the lossy plan's iterates come from Â, so its "
            "approximation error can stop the lossy curve falling.")


#: The lossy curve's last residual within this factor of the exact one's: "still together".
TOGETHER = 1.15


def convergence_note(exact, lossy, iterations=None) -> str:
    """What the convergence plot shows for these curves, in words (computed, not assumed): the two
    curves still falling together, the lossy one levelled off above the exact one, or the lossy one
    growing again. The caption said "the lossy curve flattens" on runs where it visibly did not
    (the default: 30 Jacobi iterations, both near 0.1)."""
    e, a = np.asarray(exact, np.float64), np.asarray(lossy, np.float64)
    n = min(e.size, a.size)
    it = np.arange(1, n + 1) if iterations is None else np.asarray(iterations)[:n]
    ok = np.isfinite(e[:n]) & np.isfinite(a[:n])
    if not ok.any():
        return ""
    last = int(np.flatnonzero(ok)[-1])
    ee, aa, k = float(e[last]), float(a[last]), int(it[last])
    lo = int(np.nanargmin(np.where(np.isfinite(a[:n]), a[:n], np.nan)))
    if aa > 2 * float(a[lo]) and lo < last:
        return (f"Here the lossy plan's residual stops falling and grows again: lowest {a[lo]:.3g} at "
                f"iteration {int(it[lo])}, {aa:.3g} at iteration {k}, where the exact A reaches {ee:.3g}.")
    # a climb on the way that has come back down by the end (CG on the default plan over 200
    # iterations: 0.131 → 9.44 and back to 0.102) is said too, not only the end state
    finite = np.where(np.isfinite(a[:n]), a[:n], np.inf)
    low_so_far = np.minimum.accumulate(finite)
    climb = np.where(np.isfinite(a[:n]), a[:n], 0.0) / np.maximum(low_so_far, 1e-300)
    j = int(np.argmax(climb))
    rise = ""
    if climb[j] > 2:
        i = int(np.flatnonzero(finite[:j + 1] == low_so_far[j])[0])
        rise = (f" On the way it climbed from {a[i]:.3g} (iteration {int(it[i])}) to {a[j]:.3g} "
                f"(iteration {int(it[j])}) before falling again.")
    if aa <= TOGETHER * ee and not rise:
        return (f"Here the two curves still fall together (at iteration {k}: exact {ee:.3g}, lossy {aa:.3g}): "
                "the plan's error has not yet limited the lossy one, which happens only once the residual "
                "falls to the level that error allows.")
    return (f"Here the lossy plan's curve ends above the exact one: at iteration {k} {aa:.3g} against "
            f"{ee:.3g} ({aa / ee:.3g}×), the approximation error holding it back." + rise)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def log_tick_text(t: float) -> str:
    """The label of a log axis' tick at log10 value ``t`` (from :func:`.layout.log_ticks`): the
    value itself from 0.001 to 10⁴ (``0.2``, ``0.45``, ``5000``), else a power of ten, with its
    factor if any (``10⁻⁶``, ``2×10⁻⁷``). Plotly labels the minor ticks of a range under a decade
    with bare digits ("2", "9 8 7 6 5 4 3 2", "10⁻¹"), which no one can read as values.

    >>> [log_tick_text(t) for t in (np.log10(0.2), np.log10(0.45), 4.0, -6.0, np.log10(2e-7))]
    ['0.2', '0.45', '10000', '10⁻⁶', '2×10⁻⁷']
    """
    v = float(f"{10.0 ** t:.2g}")
    if 1e-3 <= v < 1e5:
        return f"{v:g}"
    k = int(np.floor(np.log10(v) + 1e-9))
    m = float(f"{v / 10.0 ** k:.2g}")
    power = "10" + str(k).translate(_SUPERSCRIPT)
    return power if m == 1 else f"{m:g}×{power}"


def convergence(curves: dict, height: int = 380, ylabel: str = "relative residual ‖b − A x_k‖ / ‖b‖",
                iterations=None) -> go.Figure:
    """Residual per iteration for several plans (log scale). ``curves``: name -> residual array.

    ``iterations`` numbers the entries (default ``1, 2, …``: entry k is the residual after
    iteration k + 1, as in :attr:`SolverResult.curves`)."""
    if not curves:
        return empty_figure("No convergence data.", height)
    colors = ["#1f4e79", "#e67e22", "#17a589", "#c0392b"]
    fig = go.Figure()
    for i, (name, r) in enumerate(curves.items()):
        r = np.asarray(r, np.float64)
        x = np.arange(1, r.size + 1) if iterations is None else np.asarray(iterations)[:r.size]
        fig.add_trace(go.Scatter(x=x, y=r, mode="lines", name=name,
                                 line=dict(color=colors[i % len(colors)], dash="solid" if i == 0 else "dash")))
    ys = np.concatenate([np.asarray(r, np.float64) for r in curves.values()])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size:   # the shared log ticks (1-2-5, finer on a short range), each labelled with its value
        ticks = log_ticks(float(np.log10(ys.min())), float(np.log10(ys.max())))
        fig.update_yaxes(type="log", title=ylabel, tickvals=[10.0 ** t for t in ticks],
                         ticktext=[log_tick_text(t) for t in ticks])
    else:
        fig.update_yaxes(type="log", title=ylabel, exponentformat="power")
    fig.update_xaxes(title="iteration")
    return styled(fig, "Convergence: exact vs lossy plan", height,
                  legend=dict(orientation="h", y=1.1, x=1, xanchor="right"))


def persistence_bars(rows: dict, height: int = 320) -> go.Figure:
    """DRAM bytes and cycles per iteration, persistent vs non-persistent.

    ``rows``: ``{"persistent": {"dram_bytes_per_iter": .., "cycles_per_iter": ..}, ...}``.
    """
    # two-line panel titles: on one line they ran into each other at a 900-px window
    fig = make_subplots(rows=1, cols=2, subplot_titles=("DRAM bytes<br>per iteration", "cycles<br>per iteration"),
                        horizontal_spacing=0.16)
    names = list(rows)
    # the app's accent for the persistent run, neutral grey for the baseline (red read as "an error")
    colors = ["#0e7c66", "#83888d"]
    for j, (metric, unit) in enumerate((("dram_bytes_per_iter", "DRAM bytes"), ("cycles_per_iter", "cycles")),
                                       start=1):
        vals = [float(rows[n][metric]) for n in names]
        fig.add_trace(go.Bar(x=names, y=vals, marker_color=colors[:len(names)], showlegend=False,
                             name=f"{unit} per iteration",
                             hovertemplate=f"%{{x}}: %{{y:,.0f}} {unit} per iteration<extra></extra>",
                             text=[f"{v:,.0f}" for v in vals], textposition="outside", cliponaxis=False,
                             textangle=0, textfont=dict(size=BAR_TEXT)), 1, j)
    fig.update_xaxes(tickangle=0, tickfont=dict(size=12))
    fig.update_annotations(font_size=12)
    fig.update_yaxes(rangemode="tozero")
    for ax in ("yaxis", "yaxis2"):
        top = max(float(v) for n in names for v in [rows[n]["dram_bytes_per_iter" if ax == "yaxis" else "cycles_per_iter"]])
        fig.layout[ax].range = [0, 1.18 * top if top > 0 else 1]
    # bar labels keep their size: plotly shrank them to the bar's width (about 5 px in a narrow column)
    return styled(fig, "Persistent vs non-persistent iterations", height + 60, margin=dict(l=50, r=10, t=90, b=40),
                  uniformtext=dict(minsize=BAR_TEXT, mode="show"))


def npu_cost_table(npu) -> pd.DataFrame:
    """The solver's NPU cost table (``SolverResult.npu``) in display units: seconds per
    iteration as µs, energy as µJ, readable column names; the index is kept."""
    return pd.DataFrame({
        "cycles": npu["cycles"].astype(np.int64),
        "cycles / iteration": npu["cycles_per_iteration"].to_numpy(np.float64),
        "µs / iteration": 1e6 * npu["seconds_per_iteration"].to_numpy(np.float64),
        "DRAM bytes": npu["dram_bytes"].astype(np.int64),
        "DRAM bytes / iteration": npu["dram_bytes_per_iteration"].to_numpy(np.float64),
        "energy (µJ)": 1e-6 * npu["energy_pj"].to_numpy(np.float64),
    }, index=npu.index)


def reached_text(iteration, iterations_run: int) -> str:
    """'after 12 iterations' / 'not within the 30 iterations run' (``iteration`` None: never)."""
    if iteration is None:
        return f"not within the {iterations_run} iterations run"
    k = int(iteration)
    return f"after {k} iteration{'' if k == 1 else 's'}"


def percent_text(fraction: float) -> str:
    """A relative error as a percentage: 3 significant digits below 1,000 %, whole percent with
    thousands separators up to 10⁷ %, then powers of ten; "n/a" when it is NaN.

    >>> percent_text(0.0123), percent_text(11.8), percent_text(8.97e91), percent_text(float("nan"))
    ('1.23 %', '1,180 %', '8.97e+93 %', 'n/a')
    """
    if not np.isfinite(fraction):
        return "n/a"
    pct = 100 * float(fraction)
    if 1000 <= abs(pct) < 1e7:
        return f"{pct:,.0f} %"
    return f"{pct:.3g} %"
