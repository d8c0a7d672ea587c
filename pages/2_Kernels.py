"""Kernels: the Dynamic Fuse Selector — cost weights, budgets, kernel map, explanations, Pareto, table fits."""
import streamlit as st

from akfviz import app_state as S
from akfviz.viz import kernels as vk
from akfviz.app_shell import figure_pair, flex_row, metric_row, page_end, page_start
from akfviz.selection.perftable import MEASURE_UNITS
from akfviz.selection.pareto import MERGE_MAX_UNITS

page_start("Kernels",
           "Per tile or LSH cluster, the selector picks the kernel minimising "
           "C = α·E/‖A‖²_F + β·R/R_dense (akf-spec §5); budgets search α/β by bisection, then improve the plan within the budget.")
wl = S.require_workload()
hw, hwk = S.hardware()
if hw is None:
    st.stop()
pa = S.analysis(wl)
if pa is None:
    st.stop()
S.require_tiles(pa)

WEIGHTS = [0.0, 0.001, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0, 10000.0]


def weight_options(key):
    """The slider's stops: the grid plus the current value when a link or bundle set another one
    (kept exactly, so a shared link shows and computes what it says)."""
    return sorted(set(WEIGHTS) | {float(S.get(key))})


# wrapping, each wide enough for its widget: in st.columns([1.2, 1.2, 1, 1]) at a 900-px window the
# resource select read "energ" and the mode radio broke every option over three lines
c1, c2, c3, c4 = flex_row("kernels_controls", (200, 200, 170, 190), grow=(1.2, 1.2, 1, 1))
with c3:
    mode = S.widget(st.radio, "Mode", "mode", options=["weights", "error", "resource"],
                    format_func={"weights": "α / β weights", "error": "error budget",
                                 "resource": "resource budget"}.get)
with c4:
    S.widget(st.radio, "Granularity", "gran", options=["cluster", "tile"], horizontal=True,
             help="cluster: decide on each cluster's representative (fast); tile: exact argmin per tile.")
    _mixw = S.stage("selection.perftable", "MIX_WEIGHTS")
    S.widget(st.selectbox, "Resource measure R", "resource", options=["energy", "cycles", "bytes", "mix"],
             help="What β weighs: the performance table's energy (pJ), cycles or payload bytes of each tile's "
                  "kernel; mix = the three as shares of Dense, averaged: "
                  + " + ".join(f"{w:.2g}·{m}/{m}_Dense" for m, w in _mixw.items()) + ". A tile's energy counts its own PE's time only; "
                  "on a matrix much smaller than the grid the chip's static energy (every PE over the whole "
                  "run) can be most of the total, and cycles or mix may then choose better (the Compare page "
                  "says when AKF uses more energy than a baseline).")
with c1:
    if mode == "weights":
        S.widget(st.select_slider, "α (error weight)", "alpha", options=weight_options("alpha"),
                 help="Weighs the error term α·E/‖A‖²_F of each tile's cost C. E/‖A‖²_F is the share of the "
                      "whole matrix's squared norm that the tile's kernel loses, tiny for an 8-bit kernel, so α "
                      "must be large before an exact kernel wins; the error-budget mode sets the error directly.")
    elif mode == "error":
        # steps of 0.001 (0.1 %): plans' errors are mostly under 1 %, and a step of 0.005 left only 0 and 0.5 % there
        S.widget(st.slider, "Error budget ε (relative error ‖A−Â‖_F/‖A‖_F as a fraction: 0.01 = 1 %)", "budget",
                 *S.bounds("budget"), step=0.001, format="%.3f")
    else:
        S.widget(st.slider, "Resource budget (share of Dense)", "rbudget", *S.bounds("rbudget"), step=0.01)
with c2:
    if mode == "weights":
        S.widget(st.select_slider, "β (resource weight)", "beta", options=weight_options("beta"),
                 help="Weighs the resource term β·R/R_dense: the tile's kernel cost (the measure R below) as a "
                      "share of running every tile as DENSE. β = 0 picks the most accurate kernel; a larger β "
                      "favours cheaper, lossier ones.")
    else:
        st.caption("In budget modes the selector bisects on the multiplier α/β, then improves the plan within the budget (below: which step gave it); the sliders are not used.")

plan = S.plan_for(wl, pa, hw, hwk)
if plan is None:
    st.stop()
rep = plan.selection
kernels = plan.tile_kernels_categorical  # codes + names: no per-tile strings on a 1M-tile plan
used_kernels = sorted(plan.kernel_counts.index)
S.record_result("selection", {"relative_error": plan.relative_error, "resource": plan.resource,
                              "resource_share": rep.resource_share, "measure": rep.measure,
                              "kernels_used": used_kernels})

if rep.budget_trace is not None and len(rep.budget_trace):
    st.caption(vk.budget_search_caption(rep.budget_trace))

m = metric_row(5)
m[0].metric("relative error", f"{100 * plan.relative_error:.3g} %", help="Measured ‖A − Â‖_F / ‖A‖_F.")
# "kernel-only … estimate" in the label itself: Compare's simulated "energy ÷ Dense" of the same plan
# can be several times larger (a student read 0.0655× here against 0.509× there as a contradiction)
m[1].metric(f"kernel-only {rep.measure} ÷ Dense (estimate)", f"{rep.resource_share:.3g}×",
            help=f"The selector's estimate R / R_dense (R = {plan.resource:.4g}): the performance table's "
                 f"{rep.measure} of every tile's kernel alone on one PE, against all tiles as DENSE — the "
                 "quantity β weighs. It leaves out what every plan pays alike (moving x and y over the "
                 "network and through DRAM, streaming payloads that overflow a PE's SRAM) and the whole chip's "
                 "static energy, every PE leaking for the whole run — which grows with the busiest PE's time, so "
                 "a kernel cheaper per tile but slower can cost more in all (R = cycles or mix weighs the time). "
                 "The simulated ratio on the NPU and Compare pages can be far from this estimate.")
m[2].metric("kernels used", f"{len(used_kernels)}")
st.caption(f"The {rep.measure} ratio is the selector's kernel-only estimate (what β weighs); the simulated "
           "ratio, with the network, x and y through DRAM, payloads that overflow SRAM streaming from DRAM, "
           "and static power, is on the NPU and Compare pages (payloads that fit in SRAM are preloaded, "
           "neither timed nor charged energy there: docs/model.md).")
if len(S.running_kernels(plan)) == 1:
    # the first open's plan (MiniLM, α = β = 1) is QUANT8 everywhere: say why nothing is fused, and
    # where this matrix mixes kernels (computed: the selections the page runs in budget mode)
    st.info(vk.one_kernel_note(S.running_kernels(plan)[0], mode, float(S.get("alpha")), float(S.get("beta")),
                               S.get("gran"), int(plan.kernel_counts.get("SKIP", 0)),
                               S.mix_hint(wl, pa, hw, hwk, plan)))
m[3].metric("decision units", f"{rep.units.size:,}", help="clusters (cluster mode) or tiles (tile mode)")
sel_t = sum(float(v) for k, v in rep.timings.items() if k != "total") if "total" not in rep.timings \
    else float(rep.timings["total"])
tab_t = float(rep.timings.get("table", 0.0))
gap_t = float(rep.timings.get("cost_gap", 0.0))   # the tile-mode run for the comparison below
# the selector's own work: building the table is a one-off per hardware and tile size (on a fresh server
# it also waits for the compiled kernels to load), which made a 1 s selection read "49524 ms"
own_t = max(sel_t - tab_t - gap_t, 0.0)
m[4].metric("selection time", f"{1000 * own_t:.0f} ms",
            help=f"akfviz.select on this analysis, without the {1000 * tab_t:.0f} ms spent getting the "
                 "performance table and R_dense for this hardware and tile size (built on first use, then "
                 "cached)" + (f" and the {1000 * gap_t:.0f} ms of the tile-mode run it is compared with"
                              if gap_t else "") + ". Wall time measured when this plan was first computed, "
                 "on a machine other users share.")
if rep.cost_gap:
    gap = rep.cost_gap
    more = (f"so cluster mode costs {100 * gap['gap']:.2g} % more" if gap["gap"] > 1e-9 else
            "the same cost (to rounding)" if abs(gap["gap"]) <= 1e-9 else
            f"so cluster mode costs {100 * -gap['gap']:.2g} % less")
    st.caption(f"Cluster vs tile mode on this matrix (akf-spec §5): total cost C = {gap['cluster_cost']:.4g} "
               f"with one kernel per cluster against {gap['tile_cost']:.4g} for the exact per-tile argmin, "
               f"{more}; {int(gap['tiles_differing']):,} of "
               f"{len(pa.tiles):,} tiles get a different kernel. Tile mode took {1000 * gap_t:.0f} ms "
               f"against cluster mode's {1000 * own_t:.0f} ms.")
for note in rep.notes:
    st.caption(f"Note: {note}")

families = {k: S.stage("kernels.registry", "get_kernel")(k).family for k in used_kernels}
ts = pa.tileset
left, right = figure_pair("kernels_map_mix", grow=(3, 2))
with left:
    pkey = S.plan_key(wl, pa, hwk)
    S.chart(S.figure_cached(f"kernel_map|{pkey}", lambda: vk.kernel_map(
        pa.tiles, kernels, ts.n_brows, ts.n_bcols, pa.tile, families=families)), key="kernel_map")
    st.caption("How to read this: each tile coloured by the family of its chosen kernel; the colours are the "
               "same on every page (e.g. NM dark gold, LOWRANK pink, SKIP grey = dropped; the hover names the kernel).")
with right:
    S.chart(S.figure_cached(f"kernel_mix|{pkey}", lambda: vk.kernel_mix(
        kernels, pa.tiles["nnz"].to_numpy(), families=families, height=340)), key="kernel_mix")
    st.caption("How to read this: nonzeros of A handled by each kernel (with their share), in the order of the "
               "map's colour bar.")
# what the names mean (a student met QUANT8D with no word on what it is)
st.markdown(vk.used_kernels_markdown(used_kernels))
with st.expander("The whole kernel catalogue (akf-spec §3)"):
    st.dataframe(vk.kernel_catalogue(used_kernels), hide_index=True, width="stretch",
                 column_config={"what it stores": st.column_config.TextColumn(width="large")})

S.export_buttons("Plan", plan.tile_table, f"plan-T{pa.tile}", "exp_plan",
                  "one row per tile: position, nnz, cluster, chosen kernel and its squared error sq_error = ‖t − Â_t‖²_F")

per_unit = rep.per_unit
units_label = "cluster" if rep.granularity == "cluster" else "tile"
st.header(f"Why each {units_label} got its kernel")
if rep.granularity == "cluster":
    csel = S.widget(st.number_input, "Cluster", "csel", min_value=0, max_value=max(pa.n_clusters - 1, 0), step=1)
    table = S.explain_cached(pkey, plan, cluster=int(min(csel, pa.n_clusters - 1)))
else:
    tsel = S.widget(st.number_input, "Tile", "tsel", min_value=0, max_value=max(len(pa.tiles) - 1, 0), step=1)
    table = S.explain_cached(pkey, plan, tile=int(min(tsel, len(pa.tiles) - 1)))
reason = table.loc[table["chosen"], "reason"]
if len(reason):
    ch = table.loc[table["chosen"]].iloc[0]
    # a kernel that drops the tile is the cheapest answer, not a good one: not in a green box
    (st.warning if ch["family"] == "SKIP" else st.success)(str(reason.iloc[0]))
r_unit = S.stage("selection.perftable", "MEASURE_UNITS").get(rep.measure, "weighted shares of Dense")
why = table.drop(columns=["reason"])
# the answer first (which kernel won, each one's rank and cost), then the terms of C: at a narrow window
# the columns that scroll out of sight are the details, not "chosen" and "rank"
first = [c for c in ("kernel", "chosen", "rank", "C") if c in why]
st.dataframe(why, hide_index=True, width="stretch", column_order=first + [c for c in why if c not in first],
             column_config={"E": st.column_config.NumberColumn(format="%.3e"),
                            "E_norm": st.column_config.NumberColumn(format="%.3e"),
                            "R": st.column_config.NumberColumn(f"R ({r_unit})", format="%.4g"),
                            "R_norm": st.column_config.NumberColumn(format="%.3e"),
                            "C": st.column_config.NumberColumn(format="%.3e")})
st.caption(f"How to read this: E = squared Frobenius error on the tile(s), R = predicted resource ({r_unit}), "
           "C = α·E_norm + β·R_norm; the lowest C wins (rank 1)."
           + (" Here α/β = ∞ (the budget search ended at its error-only end: no error allowed, or a budget "
              "that does not bind), so only the kernels with the least E compete, on R; the others' C is "
              "infinite (Infinity)." if (table["C"] == float("inf")).any() else ""))
with st.expander(f"All {per_unit.shape[0]} decision units ({units_label}s)"):
    st.dataframe(per_unit, hide_index=True, width="stretch")

# the x density the selector priced this plan at (the NPU page's): the front and table below use it too
rho_x = float(rep.rho_x)
left, right = figure_pair("kernels_fusion_pareto")
with left:
    traj = rep.fusion_trajectory
    if len(traj):
        weights = vk.top_fusion_weights(rep, len(traj))
        S.chart(S.figure_cached(f"fusion|{pkey}", lambda: vk.fusion_trajectory(
            traj["step"], traj["cost"], traj["entropy"], weights)), key="fusion_traj")
        st.caption("How to read this: the softmax fusion weights (paper eq. 1) descend on expected cost; the "
                   "entropy term's temperature anneals to 0, so the weights end one-hot (entropy → 0).")
        S.export_buttons("Trajectory", lambda: traj, f"fusion-trajectory-T{pa.tile}", "exp_fusion",
                         what="one row per recorded step")
    else:
        st.info(vk.no_fusion_reason(rep.mode, rep.notes))
with right:
    try:
        pf = S.pareto_cached(S.analysis_key(wl.digest, pa.tile), pa, hwk, hw, rep.measure, rep.granularity,
                             rho_x=rho_x)
    except (ValueError,) as exc:
        S.show_error(exc)
    else:
        pts = pf.front
        S.chart(S.figure_cached(f"pareto|{pkey}", lambda: vk.pareto_front(
            pts["error"], pts["resource_share"], current=(plan.relative_error, rep.resource_share),
            labels=pts["kernel_mix"], resource_name=f"{rep.measure} / Dense (selector's estimate)",
            between=pts["between"])), key="pareto")
        st.caption("How to read this: each step is a plan that no other plan found beats on both error and "
                   "resource; the star is the current plan. Large markers are the multiplier sweep's plans "
                   "(the front's corners), small dots plans between two corners (column `between` of the export): "
                   + ("every plan no other plan beats, found by merging the units' fronts one unit at a time "
                      "(thinned to a few thousand points). " if rep.units.size <= MERGE_MAX_UNITS else
                      f"with more than {MERGE_MAX_UNITS:,} {units_label}s, plans on the way from one corner to "
                      "the next, where units switch from one corner's kernel to the other's, so a budget mode "
                      "can land a little below the line. ")
                   + "In cluster "
                   "mode the sweep is run twice, the second time without kernels that are exact on a "
                   "cluster's representative but not on all its members (column `restricted`). Plans over "
                   "50 % error (most of A dropped) are left off the axes when others remain; the note above "
                   "the chart counts them and the export has every plan.")
        S.export_buttons("Pareto front", lambda: pts, f"pareto-{rep.measure}-T{pa.tile}", "exp_pareto",
                         what="one row per plan on the front")

st.header("Performance table")
table_pt = S.perftable_cached(hwk, hw, pa.tile, rho_x)
fit_err = table_pt.fit_error
# the left box wide enough for the fit table's five columns (372 px): at (240, 400) it was 315 px
# wide at a 1440-px window and max_rel was cut off
kc1, kc2 = flex_row("kernels_perftable", (380, 400), grow=(1, 3))
#: the prediction check's table: relative errors to three significant digits (1e-16 showed as "0000000000")
CHECK_COLUMNS = {
    **{c: st.column_config.NumberColumn(c, format="%.3g") for c in ("rel_rms", "max_rel", "bias", "total_rel")},
    **{c: st.column_config.NumberColumn(c, format="localized") for c in ("total_pred", "total_true")},
}
#: The fit table's columns, 372 px in all (the export "Fits" has every column).
FIT_COLUMNS = {
    "class": st.column_config.TextColumn("class", width=72, help="Structure class whose fit this is (below T = 16 its points are the tiles the structure rule puts in the class; from T = 16 the tiles made for it)."),
    "variable": st.column_config.TextColumn("variable", width=96, help="What the polynomial is in: the tile's "
                                            "density or its log10."),
    "degree": st.column_config.NumberColumn("degree", width=60, help="Degree of the fitted polynomial."),
    "rel_rms": st.column_config.NumberColumn("rel_rms", width=72, format="%.3g",
                                             help="Root-mean-square relative error of the fit on its calibration points."),
    "max_rel": st.column_config.NumberColumn("max_rel", width=72, format="%.3g",
                                             help="Largest relative error of the fit on its calibration points."),
}
with kc1:
    names = list(table_pt.kernels)
    used = [k for k in names if k in used_kernels]
    kname = st.selectbox("Kernel", names, index=names.index(used[0]) if used else 0, key="pt_kernel")
    meas = st.selectbox("Measure", list(table_pt.measures), index=0, key="pt_measure")
    fe = fit_err[(fit_err["kernel"] == kname) & (fit_err["measure"] == meas)]
    # three significant digits: a fit exact up to rounding (1.6e-16) showed as "00000000"
    st.dataframe(fe[["class", "variable", "degree", "rel_rms", "max_rel"]], hide_index=True, width="stretch",
                 column_config=FIT_COLUMNS)
with kc2:
    fig = S.figure_cached(f"fits|{hwk}|{pa.tile}|{rho_x}|{kname}|{meas}", lambda: vk.perftable_fits(
        vk.perftable_curves(table_pt, kname, meas), y_title=MEASURE_UNITS.get(meas, meas), cols=2))
    # two plots a row: three left 110 px each at a 900-px window, and their log ticks overlapped
    S.chart(fig, key="perftable")
    st.caption(f"How to read this: dots = {meas} of synthetic calibration tiles priced by the NPU cost model, "
               "line = the fitted polynomial per structure class (in the density or its log10: the table's "
               "variable column), evaluated by Horner's rule, plus the DRAM cost of payload beyond a PE's SRAM"
               + (f"; priced at x density ρ_x = {rho_x:g}, the NPU page's, as the selector prices this plan."
                  if rho_x != 1.0 else "."))
    S.export_buttons("Fits", table_pt.fits_frame, f"perftable-fits-T{pa.tile}", "exp_fits",
                     what="one row per (kernel, class, measure): coefficients and fit error")
    S.export_buttons("Calibration points", lambda: table_pt.calibration, f"perftable-calibration-T{pa.tile}",
                     "exp_calibration", what="one row per synthetic tile and fit using it, priced by the cost model (class = the fit, tile = the synthetic tile's number, repeat = its seeded repeat at that density, made_as = the generator's class, classified_as = the rule's; energy in pJ, cycles, bytes)")
if st.toggle("Check the table against exact pricing on this matrix", key="pt_check"):
    pe = S.prediction_error_cached(S.analysis_key(wl.digest, pa.tile), pa, hwk, hw, rho_x)
    st.dataframe(pe[pe["measure"] == meas], hide_index=True, width="stretch", column_config=CHECK_COLUMNS)
    n_edge = int(S.stage("selection.edgecost", "edge_tile_index")(pa).size)
    edge_note = (f"This matrix has {n_edge:,} of them among its {int(pa.n_tiles):,} nonempty tiles "
                 f"(T = {pa.tile} does not divide {pa.shape[0]:,} × {pa.shape[1]:,})." if n_edge else
                 f"This matrix has none (T = {pa.tile} divides {pa.shape[0]:,} × {pa.shape[1]:,}).")
    st.caption("rel_rms / max_rel: relative error of the table per tile (up to 500 sampled tiles per kernel); "
               "total_rel: error of the sum (what the selector's totals see). Edge tiles — fewer than T rows "
               "or columns, where T does not divide the matrix — are not priced by the table: the selector "
               "prices them exactly with the cost model, so their error here is 0. " + edge_note)

st.header("CPU check: fused execution vs scipy")
chk = S.cpu_check_cached(pkey, plan, wl.A)
cc = metric_row(3)
cc[0].metric("‖plan.matvec(x) − Â x‖ / ‖Â x‖", f"{chk['vs_approx']:.2e}",
             help="The fused numba executor against scipy on the plan's own approximation (rounding only).")
# an exact plan's output error is float rounding: "3.11e-14 %" read as a real, tiny error (student probe)
out_err = float(chk["output_error"])
cc[1].metric("output error ‖(A − Â) x‖ / ‖A x‖",
             f"{100 * out_err:.3g} %" if out_err >= vk.ROUNDING_LEVEL else "0 % (rounding)",
             help="On the dense x below. Compare's output_error_pct multiplies the NPU page's x (a share ρ_x "
                  "of it nonzero), so the two differ when ρ_x < 1."
                  + (f" Measured {100 * out_err:.3g} %: float64 rounding of an exact plan, not an error of a "
                     "kernel." if out_err < vk.ROUNDING_LEVEL else ""))
cc[2].metric("max |y − A x| (exact A)", f"{chk['max_abs']:.3g}",
             help="The largest entry-wise difference between plan.matvec(x) and scipy's A @ x on the exact "
                  "matrix: what the lossy kernels change in y (0 up to rounding for an exact plan).")
st.caption("x is a seeded standard-normal vector (seed 0); scipy computes A x and Â x with its own CSR SpMV: "
           "the first metric compares the plan with Â x (rounding only), the other two with A x.")

page_end()
