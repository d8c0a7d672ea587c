"""Baseline comparison figures (akf-spec §8): measured vs the paper's claimed values."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .colors import NEUTRAL_DARK, NEUTRAL_MID, TEXT_DARK, text_color_on
from .dse import format_value
from .layout import BAR_TEXT, styled

# two-line panel titles: on one line the three ran into each other in a 650 px wide column
METRICS = (("speedup", "speedup<br>over Dense (×)", "×"), ("energy_rel", "energy<br>relative to Dense", "× Dense"),
           ("error_pct", "approximation<br>error (%)", "%"))
# neutral, none a kernel family's colour (Dense's bar was DENSE's navy): the plans are told apart by
# their row and label, AKF is the darker; the "measured" legend swatch (the first bar's colour) is
# then a neutral one that stands for every bar
PLAN_COLORS = {"Dense": NEUTRAL_MID, "BlockSparse": NEUTRAL_MID, "StaticSparse": NEUTRAL_MID, "AKF": NEUTRAL_DARK}
#: Where the paper's claim sits in a plan's row: above its bar (rows count downwards), so a claim
#: equal to the measured value does not cover the bar's value label (Dense "1" was hidden under it).
CLAIM_OFFSET = -0.36


def compare_bars(measured, claimed=None, height: int = 360) -> go.Figure:
    """Three panels (speedup, energy, error) of horizontal bars, one row per plan, plan names
    once on the left: measured bars with their value past the end, the paper's claims as hollow
    markers just above the plan's bar.

    Horizontal, because three panels of upright bars left 130 px each at a 900-px window: the
    plan names were cut ("BlockSp") and the value labels shrank to 7 px.

    ``measured``: DataFrame indexed by plan with the columns of ``akfviz.compare``.
    ``claimed``: DataFrame with the same index/columns holding the paper's values (NaN = none).
    """
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t, _ in METRICS], horizontal_spacing=0.05,
                        shared_yaxes=True)
    plans = [str(p) for p in measured.index]
    pos = np.arange(len(plans), dtype=np.float64)
    cv_all = claimed.reindex(measured.index) if claimed is not None else None
    for j, (col, title, unit) in enumerate(METRICS, start=1):
        vals = measured[col].to_numpy(dtype=float)
        what = title.replace("<br>", " ")
        fig.add_trace(go.Bar(y=pos, x=vals, orientation="h", width=0.5,
                             marker_color=[PLAN_COLORS.get(p, NEUTRAL_MID) for p in plans],
                             name="measured", showlegend=j == 1, legendgroup="m", customdata=plans,
                             text=[f"{v:.3g}" for v in vals], textposition="outside", textangle=0,
                             textfont=dict(size=BAR_TEXT), cliponaxis=False,
                             hovertemplate=f"%{{customdata}}: {what} %{{x:.4g}}<extra>measured</extra>"), 1, j)
        top = np.nanmax(vals) if np.isfinite(vals).any() else 1.0
        if cv_all is not None and col in cv_all:
            cv = cv_all[col].to_numpy(dtype=float)
            ok = np.isfinite(cv)
            fig.add_trace(go.Scatter(y=pos[ok] + CLAIM_OFFSET, x=cv[ok], mode="markers", name="paper's claim",
                                     marker=dict(symbol="diamond-open", size=11, color="#e6194b", line=dict(width=2)),
                                     showlegend=j == 1, legendgroup="c", customdata=np.array(plans)[ok],
                                     hovertemplate=f"%{{customdata}}: {what} %{{x:.4g}}<extra>paper</extra>"), 1, j)
            if ok.any():
                top = max(top, float(np.nanmax(cv[ok])))
        # room past the longest bar for its label
        fig.update_xaxes(range=[0, 1.3 * top if top > 0 else 1], row=1, col=j)
    fig.update_yaxes(tickvals=pos.tolist(), ticktext=plans, autorange="reversed", showgrid=False, zeroline=False,
                     automargin=True)
    fig.update_xaxes(nticks=4, tickangle=0)
    fig.update_annotations(font_size=12)
    return styled(fig, "Baselines on the same matrix and hardware", height + 30,
                  legend=dict(orientation="h", y=-0.12, yanchor="top", x=0.5, xanchor="center"),
                  margin=dict(l=10, r=20, t=100, b=60))


def cpu_timings(names, medians_ms, height: int = 280) -> go.Figure:
    """Measured CPU time per SpMV (median of repeats), horizontal bars."""
    # neutral (no kernel family's colour), the first (AKF's) darker; white text on both (≥ 6.8:1;
    # #444 on the teal bar was 3.1:1)
    colors = ([NEUTRAL_DARK] + [NEUTRAL_MID] * len(names))[:len(names)]
    fig = go.Figure(go.Bar(y=list(names), x=list(medians_ms), orientation="h",
                           marker_color=colors, insidetextfont=dict(color=[text_color_on(c) for c in colors]),
                           outsidetextfont=dict(color=TEXT_DARK),
                           text=[f"{v:.3g} ms" for v in medians_ms], textposition="auto",
                           name="median time per call", hovertemplate="%{y}: %{x:.4g} ms per call<extra></extra>"))
    fig.update_xaxes(title="median time per call (ms)")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return styled(fig, "Real CPU time, same matrix and vector", height,
                  margin=dict(l=20, r=20, t=50, b=50))   # the y axis's automargin fits the names


def measure_text(value) -> str:
    """One measured value as the on-its-side table writes it: as :func:`.dse.format_value` (whole
    numbers with thousands separators, others to 4 significant digits), except reals of 1,000 and
    more to two decimals (an energy of 6,496,183.16 pJ, not 6.496e+06) and a missing one "—".

    >>> [measure_text(v) for v in (12765280.0, 6496183.16, 0.508895, 9.38e-07, float("nan"), "CSC 100 %")]
    ['12,765,280', '6,496,183.16', '0.5089', '9.38e-07', '—', 'CSC 100 %']
    """
    if isinstance(value, str):
        return value
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "—"
    if math.isfinite(v) and abs(v) >= 1000 and not v.is_integer():
        return f"{v:,.2f}"
    return format_value(v)


#: The rows of the "Measured vs claimed" table: a column of :func:`akfviz.compare.paper_comparison`,
#: its title, and the title's tooltip.
CLAIM_ROWS = (
    ("speedup_measured", "speedup — measured", "Dense cycles ÷ this plan's cycles (same hardware)."),
    ("speedup_claimed", "speedup — paper", "The paper's table: speedup over Dense."),
    ("energy_rel_measured", "energy ÷ Dense — measured", "This plan's energy ÷ Dense's energy."),
    ("energy_claimed_table", "energy — paper's table",
     "The paper's table row, labelled \"Watts\" but read here as relative to Dense."),
    ("energy_claimed_text", "energy — paper's text", "The paper's text: \"20 % lower energy\" for AKF, i.e. 0.8× Dense."),
    ("error_pct_measured", "error % — measured", "100 · ‖A − Â‖_F / ‖A‖_F."),
    ("error_pct_claimed", "error % — paper", "The paper's table: approximation error in %."),
)


def claims_by_plan(pc: pd.DataFrame) -> pd.DataFrame:
    """:func:`akfviz.compare.paper_comparison` (one row per plan, seven columns of measured and
    claimed values: 872 px, its last column cut off at a 1280-px window) on its side: one row per
    quantity, measured and claimed next to each other, one text column per plan; a claim the paper
    does not make is "—". The ``note`` column is for the page to write out.

    >>> pc = pd.DataFrame({"speedup_measured": [1.0, 1.2916], "speedup_claimed": [1.0, 3.5]},
    ...                   index=pd.Index(["Dense", "AKF"], name="plan"))
    >>> claims_by_plan(pc).values.tolist()
    [['speedup — measured', '1', '1.292'], ['speedup — paper', '1', '3.5']]
    """
    rows = [(col, title) for col, title, _ in CLAIM_ROWS if col in pc]
    out = pd.DataFrame({"quantity": [title for _, title in rows]})
    for plan in pc.index:
        out[str(plan)] = ["—" if pd.isna(pc.at[plan, col]) else f"{pc.at[plan, col]:.4g}" for col, _ in rows]
    return out


def measured_by_plan(df: pd.DataFrame, leave_out=("kernel_mix",)) -> pd.DataFrame:
    """The comparison (one row per plan, a dozen measured columns: too wide for the page) on its
    side: one row per measured column, named in ``measured``, and one text column per plan.
    ``leave_out`` columns (the kernel mix, a sentence per plan) are for the page to write out.

    >>> t = measured_by_plan(pd.DataFrame({"cycles": [938.0, 726.0], "kernel_mix": ["DENSE 100 %", "CSC 100 %"]},
    ...                                   index=pd.Index(["Dense", "AKF"], name="plan")))
    >>> t.columns.tolist(), t.iloc[0].tolist()
    (['measured', 'Dense', 'AKF'], ['cycles', '938', '726'])
    """
    cols = [c for c in df.columns if c not in leave_out]
    out = pd.DataFrame({"measured": cols})
    for plan in df.index:
        out[str(plan)] = [measure_text(df.at[plan, c]) for c in cols]
    return out


def same_makespan_note(df: pd.DataFrame, static_kernel: str) -> str:
    """A sentence when AKF and Static-sparse finish in the same number of cycles (else ""): AKF's
    kernels then change the energy and the error, not the makespan. A student followed the Kernels
    page's hint to a mixed plan, saw the NPU page's fused run 6× faster than unfused, and read that
    as what AKF gains — Compare's equal cycles against one kernel everywhere said nothing."""
    if not {"AKF", "StaticSparse"} <= set(df.index) or "cycles" not in df:
        return ""
    a, s = df.loc["AKF"], df.loc["StaticSparse"]
    if float(a["cycles"]) != float(s["cycles"]):
        return ""
    text = (f"AKF and Static-sparse ({static_kernel} on every tile) finish in the same {float(a['cycles']):,.0f} "
            "cycles here: AKF's choice of kernels changes the energy")
    if "energy_rel" in df:
        text += f" ({float(a['energy_rel']):.3g}× against {float(s['energy_rel']):.3g}× Dense's)"
    if "error_pct" in df:
        text += f" and the error ({float(a['error_pct']):.3g} % against {float(s['error_pct']):.3g} %)"
    return (text + ", not the makespan, which the slowest PE sets. The NPU page's fused-vs-unfused gap is "
            "another comparison: the same mixed plan run in one phase or one phase per kernel.")
