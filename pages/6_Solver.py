"""Solver: Jacobi / CG / power iteration through the AKF plan; persistent vs non-persistent (akf-spec §7)."""
import streamlit as st

from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.viz import solver as vs
from akfviz.app_shell import figure_pair, flex_row, metric_row, page_end, page_start

page_start("Solver",
           "Iterative methods apply y = A x many times: the plan's error shows up in convergence, and a "
           "persistent kernel keeps payloads and vector slices on chip between iterations (akf-spec §7).")
hw, hwk = S.hardware()
if hw is None:
    st.stop()

OPERATORS = {"sample": "Poisson 5-point stencil sample (stencil5_64x64, SPD)",
             "stencil9": "generated 9-point stencil, 48×48 grid (SPD)",
             "current": "the current workload (must be square)"}
# wrapping, each at least wide enough for its value: in st.columns([2, 1, 1, 1]) at a 900-px
# window the selects read "Poisson 5-point ster" and "Jaco"
c = flex_row("solver_controls", (300, 190, 160, 200), grow=(2, 1, 1, 1))
op = S.widget(c[0].selectbox, "Operator", "sop", options=list(OPERATORS), format_func=OPERATORS.get)
method = S.widget(c[1].selectbox, "Method", "solver", options=["jacobi", "cg", "power"],
                  format_func=vs.METHOD_NAMES.get)
iters = S.widget(c[2].slider, "Iterations", "iters", *S.bounds("iters"), step=5)
eps = S.widget(c[3].slider, "Lossy plan: error budget ε (a fraction: 0.01 = 1 %)", "seps", *S.bounds("seps"),
               step=0.005, format="%.3f",
               help="The plan is chosen with this relative-error budget (least resource within ε). ε is a "
                    "fraction of ‖A‖_F, while the plan's error beside it is given in %.")

try:
    if op == "sample":
        A = S.sample_cached("stencil5_64x64")
        label = "stencil5_64x64"
    elif op == "stencil9":
        A = S.generate_cached("stencil9", (("n", 2304), ("nx", 48)))
        label = "stencil9 48×48"
    else:
        wl = S.require_workload()
        A, label = wl.A, wl.label
except (InputError, ValueError) as exc:
    S.show_error(exc)
    st.stop()
if A.shape[0] != A.shape[1]:
    st.error(f"The current workload is {A.shape[0]}×{A.shape[1]}; iterative solvers need a square matrix. "
             "Pick the stencil operator above.")
    st.stop()
digest = S.matrix_digest(A)
tile = int(S.get("tile"))
try:
    pa = S.analyze_cached(digest, A, tile, S.lsh_tuple())
    key = S.analysis_key(digest, tile)
    plan = S.select_cached(key, pa, 1.0, 1.0, float(eps), S.get("gran"), hwk, hw, (("resource", S.get("resource")),))
    skey = f"{key}|{eps}|{S.get('gran')}|{S.get('resource')}"
    res = S.solver_cached(skey, plan, hwk, hw, method, int(iters))
except (InputError, ValueError) as exc:
    S.show_error(exc)
    st.stop()
S.record_result("solver", {"operator": label, "method": method, "iterations": int(iters),
                           "relative_error": res.relative_error, "solution_error": res.solution_error,
                           "iterations_to_tol": res.iterations_to_tol})
m = metric_row(5)
m[0].metric("operator size", f"{A.shape[0]:,}²", help=f"{label}: {A.shape[0]:,}×{A.shape[1]:,}, nnz {A.nnz:,}")
m[1].metric("plan's relative error", f"{100 * res.relative_error:.3g} %",
            help="‖A − Â‖_F / ‖A‖_F of the lossy plan (akf-spec §5), chosen within ε and priced for a dense x "
                 "(ρ_x = 1): the iterates x_k are dense.")
if res.exact_diverges:   # two diverged iterates: their difference says nothing about the plan
    m[4].metric("answer's error", "n/a: diverges",
                help=f"{vs.METHOD_NAMES.get(method, method).capitalize()} diverges on this matrix with the exact A too (see the note "
                     "below), so the two last iterates are not answers and their difference "
                     f"({vs.percent_text(res.solution_error)}) says nothing about the lossy plan. Choose another method "
                     "or operator.")
else:
    m[4].metric("answer's error", vs.percent_text(res.solution_error),
                help="‖x_Â − x_A‖ / ‖x_A‖: how far the lossy plan's last iterate is from the exact run's after "
                     "the same iterations" + (" (eigenvector sign matched)" if method == "power" else "")
                     + ". A small operator error can give a large answer error when A is ill-conditioned.")
if float(S.get("xdens")) != 1.0:
    st.caption(f"This plan is selected and simulated for a dense x (ρ_x = 1): every iterate x_k is dense. The "
               f"Kernels, NPU and Compare pages price theirs at the NPU page's ρ_x = {float(S.get('xdens')):g}, "
               "so with the same budget their plan, its error and its kernels can differ from this one.")
# an average: the student saw 738 at 30 iterations and 724 at 200 with no word on why
PER_ITER_HELP = ("The whole run's cycles ÷ the iterations. The first iteration takes longer than the ones after "
                 "it, and the average spreads that over every iteration, so it falls a little as the iterations "
                 "grow.")
m[2].metric("persistent: cycles / iteration", f"{res.npu.loc['persistent', 'cycles_per_iteration']:,.0f}",
            help=PER_ITER_HELP)
m[3].metric("non-persistent: cycles / iteration", f"{res.npu.loc['non-persistent', 'cycles_per_iteration']:,.0f}",
            help=PER_ITER_HELP)
for note in res.notes:
    st.warning(note, icon="⚠️")
cur = res.curves
left, right = figure_pair("solver_figs", grow=(3, 2))
with left:
    fkey = f"{skey}|{hwk}|{method}|{int(iters)}"      # what solver_cached was called with
    S.chart(S.figure_cached(f"conv|{fkey}", lambda: vs.convergence(
        {"exact A": cur["residual_exact"], f"lossy plan Â (ε = {eps:g})": cur["residual_approx"]},
        ylabel=vs.residual_label(method), iterations=cur["iteration"])),
        key="conv")
    st.caption(vs.residual_caption(method) + " "
               + vs.convergence_note(cur["residual_exact"], cur["residual_approx"], cur["iteration"]))
with right:
    rows = {("non-pers." if k == "non-persistent" else k): {"dram_bytes_per_iter": res.npu.loc[k, "dram_bytes_per_iteration"],
                "cycles_per_iter": res.npu.loc[k, "cycles_per_iteration"]} for k in res.npu.index}
    S.chart(S.figure_cached(f"persist|{fkey}", lambda: vs.persistence_bars(rows)), key="persist")
    st.caption("How to read this: a persistent kernel keeps payloads and vector slices on chip (a barrier between "
               "iterations); non-persistent reloads everything from DRAM and pays a kernel launch each iteration.")
cost = vs.npu_cost_table(res.npu)
# the means over the iterations shown whole, as the bars and metrics above show them (738, not 738.067),
# with separators like the totals beside them ("145,896", not "145896"); display only: the export keeps every digit
for c in ("cycles / iteration", "DRAM bytes / iteration"):
    cost[c] = cost[c].round()
st.dataframe(cost, width="stretch",
             column_config={"cycles": st.column_config.NumberColumn(format="localized"),
                            "cycles / iteration": st.column_config.NumberColumn(format="localized"),
                            "µs / iteration": st.column_config.NumberColumn(format="%.3f"),
                            "DRAM bytes": st.column_config.NumberColumn(format="localized"),
                            "DRAM bytes / iteration": st.column_config.NumberColumn(format="localized"),
                            "energy (µJ)": st.column_config.NumberColumn(format="%.4g")})
tol = res.iterations_to_tol
st.caption(f"Kernels of the lossy plan: {', '.join(sorted(plan.kernel_counts.index))}. Residual below {res.tol:g}: "
           f"exact A {vs.reached_text(tol['exact'], int(iters))}, lossy plan {vs.reached_text(tol['approx'], int(iters))}.")

st.header("Export")
S.export_buttons("Convergence", lambda: res.curves, f"solver-{method}-curves", "exp_solver_curves",
                 "one row per iteration: residual with the exact A and with the lossy plan Â")
S.export_buttons("Solutions", res.solutions, f"solver-{method}-solutions", "exp_solver_x",
                 "one row per unknown: the last iterate with the exact A, with the lossy plan Â, and their difference")
S.export_buttons("NPU cost", lambda: res.npu.reset_index(names="kernel_mode"), f"solver-{method}-npu",
                 "exp_solver_npu", "persistent and non-persistent runs: cycles, DRAM bytes and energy, "
                 "in all and per iteration, in the library's units (seconds, pJ; the table above shows µs, µJ)")

page_end()
