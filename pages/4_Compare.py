"""Compare: Dense / Block-sparse / Static-sparse / AKF on the same matrix and hardware (akf-spec §8)."""
import pandas as pd
import streamlit as st

from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.viz import compare as vc
from akfviz.app_shell import flex_row, page_end, page_start

page_start("Compare",
           "Four plans on the same matrix, input vector and hardware, simulated by the same NPU model; "
           "the paper's claimed values beside the measured ones (akf-spec §8).")
wl = S.require_workload()
hw, hwk = S.hardware()
if hw is None:
    st.stop()
pa = S.analysis(wl)
if pa is None:
    st.stop()
S.require_tiles(pa)
cmp_mod = S.stage("compare")
names = S.stage("kernels.registry", "kernel_names")()
c1, c2 = flex_row("compare_controls", (220, 360), grow=(1, 3))
with c1:
    static = S.widget(st.selectbox, "Static-sparse kernel", "static", options=[k for k in names if k != "SKIP"],
                      help="The one kernel the Static-sparse baseline uses for every nonempty tile.")
with c2:
    mode = {"weights": f"α = {S.get('alpha'):g}, β = {S.get('beta'):g}",
            "error": f"error budget {S.get('budget'):g}",
            "resource": f"resource budget {S.get('rbudget'):g}"}.get(S.get("mode"), S.get("mode"))
    st.caption(f"AKF is the plan the Kernels and NPU pages show ({mode}, R = {S.get('resource')}, "
               f"T = {S.get('tile')}, granularity {S.get('gran')}); all four plans see the same x "
               f"(ρ_x = {S.get('xdens'):g}) — change these on Kernels / NPU. Hardware: {S.hardware_text(hw)}.")
plan = S.plan_for(wl, pa, hw, hwk)
if plan is None:
    st.stop()
extra = (("static_kernel", static), ("rho_x", float(S.get("xdens"))))
try:
    df = S.compare_cached(S.analysis_key(wl.digest, pa.tile), S.plan_key(wl, pa, hwk), hwk, hw, static,
                          float(S.get("xdens")), pa, plan)
except (InputError, ValueError) as exc:
    S.show_error(exc)
    st.stop()
S.record_result("compare", df[["cycles", "speedup", "energy_pj", "energy_rel", "error_pct"]].to_dict("index"))
claimed = cmp_mod.PAPER_CLAIMS.rename(columns={"energy_table": "energy_rel"})
S.chart(S.figure_cached(f"compare_bars|{S.plan_key(wl, pa, hwk)}|{extra}", lambda: vc.compare_bars(df, claimed)),
        key="compare_bars")
st.caption("How to read this: bars = measured here, value past the end; red diamonds just above a bar = the paper's table (its energy row is labelled "
           "\"Watts\" but read here as relative to Dense). Speedup and energy are relative to Dense on the same hardware.")
same = vc.same_makespan_note(df, static)
if same:
    st.info(same)

st.header("Measured vs claimed")
pc = cmp_mod.paper_comparison(df)
# on its side, measured next to claimed: one column per plan (seven columns of values were 872 px wide
# and cut off the paper's error at a 1280-px window); 561 px, so whole at 1024 px too (564 px of page)
claims = vc.claims_by_plan(pc)
tips = "; ".join(f"{title}: {why}" for _, title, why in vc.CLAIM_ROWS)
st.dataframe(claims, hide_index=True, width="stretch", height=35 * (len(claims) + 1) + 3,
             column_config={"quantity": st.column_config.TextColumn("quantity", width=175, help=tips),
                            **{str(p): st.column_config.TextColumn(str(p), width=96, alignment="right")
                               for p in pc.index}})
st.caption("\"paper\" rows are the paper's claims, \"measured\" rows are computed here on this matrix and "
           "hardware; \"—\" where the paper makes no claim (the quantity's tooltip says more).")
if "note" in pc:
    # the per-plan explanation is the point of this table: a list anyone can read, not a column off-screen
    st.subheader("Where and why they differ")
    st.markdown("\n".join(f"- **{name}**: {note}" for name, note in
                                                                   pc["note"].items() if isinstance(note, str) and note))
st.caption("The paper's energy row (1.0 / 1.3 / 1.6 / 1.2 \"Watts\") contradicts its own text (\"20 % lower "
           "energy\" for AKF, the row \"energy — paper's text\"); both are shown, neither is tuned to.")
with st.expander("All measured columns"):
    # on its side: one row per measured column, one column per plan (a dozen columns, 1465 px wide, with
    # kernel_mix last and off-screen at a 1440-px window); the export keeps one row per plan
    by_plan = vc.measured_by_plan(df)
    plan_px = max(110, min(150, 600 // max(len(df.index), 1)))   # 772 px with 4 plans: the expander at 1280 px
    st.dataframe(by_plan, hide_index=True, width="stretch", height=35 * (len(by_plan) + 1) + 3,   # every row
                 column_config={"measured": st.column_config.TextColumn(
                                    "measured", width=170, help="The column's name in the export (CSV / Parquet)."),
                                **{str(p): st.column_config.TextColumn(str(p), width=plan_px, alignment="right")
                                   for p in df.index}})
    if "kernel_mix" in df:
        st.markdown("**kernel_mix** — share of the plan's nonempty tiles per kernel (Dense: every tile slot; "
                    "the Kernels page's mix chart counts nonzeros instead):\n"
                    + "\n".join(f"- {p}: {mix}" for p, mix in df["kernel_mix"].items()))
S.export_buttons("Comparison", lambda: df.reset_index(), "compare", "exp_compare",
                  "one row per plan (Dense, BlockSparse, StaticSparse, AKF): every measured column")

st.header("Real CPU time of one SpMV")
if plan is not None:
    x = S.input_vector(wl.A.shape[1], 1.0)
    reps = st.slider("Repeats", 5, 101, 21, step=2, key="cpu_reps")
    cpu = S.stage("execute.cpu", "time_matvec")(plan, x, reps, wl.A)
    chk = S.cpu_check_cached(S.plan_key(wl, pa, hwk), plan, wl.A)   # once per plan, not per rerun
    names_t = ["AKF plan.matvec (numba)", "scipy CSR A @ x"]
    times = [cpu["plan_ms"], cpu["scipy_ms"]]
    S.chart(vc.cpu_timings(names_t, times), key="cpu")
    S.export_buttons("CPU timings", lambda: pd.DataFrame({"method": names_t, "median_ms": times, "repeats": reps}),
                     "cpu-timings", "exp_cpu", what="median wall time of one call, measured now on this machine")
    st.caption(f"How to read this: median of {reps} calls on this machine, measured now on the same x "
               f"(scipy / AKF = {cpu['scipy_ms'] / cpu['plan_ms']:.2f}×). The plan computes Â x (relative error "
               f"{100 * plan.relative_error:.3g} % in A); on a seeded x its result "
               + ("equals scipy's Â x bit for bit." if chk["vs_approx"] == 0 else
                  f"agrees with scipy's Â x to a relative {chk['vs_approx']:.1e}."))

page_end()
