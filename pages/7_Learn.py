"""Learn: step through the event-driven execution of a tiny SpMV on a tiny PE grid (akf-spec §7)."""
import pandas as pd
import streamlit as st

from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.viz import learn as vl
from akfviz.app_shell import page_end, page_start

page_start("Learn",
           "A tiny matrix on a tiny NPU, one action at a time: events are injected, travel over the NoC, wait in "
           "a PE's queue, are processed by the tile's kernel, and partial sums are reduced (akf-spec §7). "
           "This trace is plain Python and is tested to give the same makespan and counters as the numba engine.")
trace_mod = S.stage("npu.trace")


@st.cache_data(max_entries=16, show_spinner="Tracing the tiny case…")
def build(n, tile, rows, cols, density, x_density, kernel, seed, hw_key, _hw):
    return trace_mod.tiny_case(n=n, tile=tile, grid=(rows, cols), density=density, x_density=x_density,
                               kernel=None if kernel == "selector's choice" else kernel, seed=seed, hw=_hw)


hw, hwk = S.hardware()
if hw is None:
    st.stop()


names = S.stage("kernels.registry", "kernel_names")()
FIRST = ["CSC", "DENSE", "BITMAP", "DIA", "LOWRANK1", "selector's choice"]
KERNELS = FIRST + [k for k in names if k not in FIRST and k != "SKIP"]
CHOICES = {"ln": [8, 12, 16], "lT": [4, 8]}   # a link value outside them: S.widget warns and takes the nearest
with st.expander("The tiny case", expanded=False):
    # two rows of three: six columns in a row cut the labels on a narrow page
    c = [*st.columns(3), *st.columns(3)]
    n = S.widget(c[0].selectbox, "n (matrix side)", "ln", options=CHOICES["ln"])
    tile = S.widget(c[1].selectbox, "T (tile side)", "lT", options=CHOICES["lT"])
    grid = S.widget(c[2].selectbox, "PE grid", "lgrid", options=["2×2", "1×2", "2×3", "3×3"])
    density = S.widget(c[3].slider, "density of A", "ldens", 0.05, 1.0, step=0.05)
    xd = S.widget(c[4].slider, "density of x", "lxd", 0.05, 1.0, step=0.05)
    kernel = S.widget(c[5].selectbox, "kernel", "lkernel", options=KERNELS)
    seed = S.widget(st.number_input, "seed", "lseed", 0, 10_000)
rows, cols = (int(v) for v in grid.split("×"))
hw_name = S.hardware_label()
st.caption(f"This page builds its own tiny case from the settings above: the sidebar's sample workload and tile "
           f"size do not apply here. The sidebar's hardware ({hw_name}) gives the timing and energy "
           f"parameters, on the PE grid chosen above."
           + (" **Selector's choice**: the kernels that minimise α·error + β·resource with α = β = 1, tile by "
              "tile, priced for that hardware and for this x's density (the Kernels page's α, β and budgets apply "
              "to the sample workload)." if kernel == "selector's choice" else ""))
try:
    tc = build(int(n), int(tile), rows, cols, float(density), float(xd), kernel, int(seed), hwk, hw)
    tck = f"{int(n)}|{int(tile)}|{rows}|{cols}|{float(density)}|{float(xd)}|{kernel}|{int(seed)}|{hwk}"
except (InputError, ValueError) as exc:
    S.show_error(exc)
    st.stop()
tr = tc.trace
n_steps = len(tr.steps)

cur = min(int(S.get("lstep")), n_steps)
if cur != int(S.get("lstep")):
    S.note(f"Step {int(S.get('lstep')):,} is beyond this case's {n_steps} steps; showing the last one.")
st.header("Step through the run")
# the buttons in a row, each as wide as its label (in fixed columns they read "S…", "B…", "N…");
# the slider takes the rest of the row, or a row of its own on a narrow page
with st.container(horizontal=True, vertical_alignment="bottom", key="learn_buttons"):
    st.button("Start", key="learn_first", width="content", on_click=S.step_to, args=("lstep", 0, 0, n_steps, True))
    st.button("Back", key="learn_prev", width="content", on_click=S.step_to, args=("lstep", -1, 0, n_steps))
    st.button("Next", key="learn_next", width="content", on_click=S.step_to, args=("lstep", 1, 0, n_steps))
    if cur != S.get("lstep"):
        S.put("lstep", cur)
    with st.container(width="stretch", key="learn_slider"):
        i = S.widget(st.slider, "Step", "lstep", 0, n_steps, help="Steps done so far (0 = nothing yet).")
step = tr.steps[i - 1] if i > 0 else None
state = tr.state_at(i)

if step is None:
    cyc = tc.transfer_cycles()
    st.info(f"{n_steps} steps in all; the makespan is {tr.makespan} cycles on a {rows}×{cols} grid with the "
            f"timing of the sidebar's hardware ({hw_name}). Press **Next** to start.")
    st.caption("The whole run as `akfviz.simulate` counts it adds the DRAM transfers around these steps: x in, "
               f"{cyc['formulas']['load_cycles']}; y out, {cyc['formulas']['writeback_cycles']}; in all "
               f"{cyc['formulas']['cycles']} cycles.")
else:
    st.markdown(f"**Step {i} / {n_steps} — {step.kind}** at cycle {step.start}"
                f"{f' → {step.end}' if step.end != step.start else ''}: {step.text}")
    st.code(step.formula, language=None, wrap_lines=True)   # long formulas wrap, not clipped

# the matrix and the grid at a fixed width side by side where the page is wide enough, one under the
# other where it is not (a wrapping row): the figures are sized for that width, so their labels fit
W = vl.PANEL_WIDTH
with st.container(horizontal=True, gap="medium", key="learn_figs"):
    with st.container(width=W):
        S.chart(S.figure_cached(f"lm|{tck}|{i}|{W}", lambda: vl.learn_matrix(
            tc.A_hat, tc.x, tr.tile, tc.work.bi, tc.work.bj, tr.tile_pe, step, width=W)), key="lm", width=W)
        st.caption("How to read this: the matrix the PEs hold (after the kernel: Â), each tile framed in its PE's "
                   "colour and tagged with its PE id (the PE boxes list their tiles); the shaded column is the "
                   "input x_j of the current event.")
    with st.container(width=W):
        S.chart(S.figure_cached(f"lg|{tck}|{i}|{W}", lambda: vl.learn_grid(state, tr, step, width=W)),
                key="lg", width=W)
        st.caption("How to read this: each box is a PE after the steps done so far, at the cycle of the last one: "
                   "its clock (when it is next free) and the events injected by those steps that have arrived but "
                   "wait to be processed; the arrow shows where the current message travels.")
S.chart(S.figure_cached(f"lt|{tck}|{i}", lambda: vl.learn_timeline(tr, i)), key="lt")
st.caption("How to read this: what each PE has been busy with so far; the dashed line is the final makespan "
           "(its value is in the axis title).")

st.header("Partial sums per tile (so far)")
rows_ps = []
for u, ps in enumerate(state["partial"]):
    rows_ps.append({"tile": u, "(bi, bj)": f"({tc.work.bi[u]}, {tc.work.bj[u]})", "PE": int(tr.tile_pe[u]),
                    # u counts the work's tiles; SKIP tiles are not in it, so the plan's tile is tile_index[u]
                    "kernel": str(tc.plan.tile_kernels[int(tc.work.tile_index[u])]),
                    "partial sums": "[" + ", ".join(f"{v:.3g}" for v in ps) + "]"})
# the whole page's width, the short columns small: the partial sums (up to T numbers) get the room
small = st.column_config.Column(width="small")
st.dataframe(pd.DataFrame(rows_ps), hide_index=True, width="stretch",
             column_config={"tile": small, "(bi, bj)": small, "PE": small, "kernel": small,
                            "partial sums": st.column_config.TextColumn("partial sums", width="large",
                                                                        help="p_u: tile u's sums, one per row")})
# y and the formulas: side by side where the page is wide enough, one under the other where it is not
with st.container(horizontal=True, gap="large", key="learn_bottom"):
    with st.container(width=300):
        st.header("y so far vs Â x", help="y: the output reduced so far; Â x: the exact product it ends at.")
        y_tab = pd.DataFrame({"y so far": state["y"], "Â x": tc.A_hat @ tc.x})
        y_tab.index.name = "row i"
        # one row per i (not transposed): n = 16 columns would need sideways scrolling in half the page
        st.dataframe(y_tab, width="stretch", height=35 * (len(y_tab) + 1) + 3)
        st.caption(vl.kernel_error_text(tc.A, tc.A_hat, tc.x, tc.plan.relative_error))
    with st.container(width=480):
        # the long formulas on two lines: one line ran past a half-page column's edge
        st.header("The formulas of each stage")
        st.markdown("0. Setup: each PE sets up its tiles once, from ready (0, or the end of its DRAM stream "
                    "when its tiles overflow its SRAM):")
        st.latex(r"t_p = \mathrm{ready}_p + \mathrm{tiles}_p \cdot \mathrm{setup\_cycles}")
        st.markdown("1. Injection: source PE of column block ⌊j/T⌋ sends its k-th event at")
        st.latex(r"t_{\mathrm{inject}}(j) = k \cdot \mathrm{inject\_cycles}")
        st.markdown("2. Delivery to the tiles that store column j:")
        st.latex(r"\begin{aligned} t_{\mathrm{arrive}} &= t_{\mathrm{inject}} \\ "
                 r"&\quad + \mathrm{hop} \cdot (|r_s - r_p| + |c_s - c_p|) \end{aligned}")
        st.markdown("3. Processing in arrival order, with the kernel's per-event work:")
        st.latex(r"t \leftarrow \max(t, t_{\mathrm{arrive}}) + w,")
        st.latex(r"\begin{aligned} w = {} & \mathrm{event} + \lceil \mathrm{MACs}/\mathrm{lanes} \rceil \\ "
                 r"& + \mathrm{decodes}\cdot \mathrm{decode} \end{aligned}")
        st.latex(r"p_u \mathrel{+}= \hat A_{u}[:, j]\, x_j")
        st.markdown("A tile's last event (or, for a tile that gets no event, the setup) is followed by its "
                    "kernel's final phase, e.g. LOWRANK's r·h MACs:")
        st.latex(r"t \leftarrow t + \lceil \mathrm{final\ MACs}/\mathrm{lanes} \rceil")
        st.markdown("4. Reduction of each finished tile's partial sums at its row block's reduction PE:")
        st.latex(r"\begin{aligned} t_q \leftarrow \max(&t_q,\ t_{\mathrm{done}} + \mathrm{hop}\cdot d) \\ "
                 r"& + \mathrm{rows}\cdot\mathrm{reduce} \end{aligned}")
        st.latex(r"\mathrm{makespan} = \max_p t_p")

with st.expander(f"All {n_steps} steps"):
    st.dataframe(pd.DataFrame([{"#": k + 1, "kind": s.kind, "PE": s.pe, "start": s.start, "end": s.end,
                                "tile": s.tile, "column": s.column, "what": s.text} for k, s in enumerate(tr.steps)]),
                 hide_index=True, width="stretch", row_height=56,   # 780 px, "what" on two lines (869 px on one)
                 column_config={"#": st.column_config.NumberColumn("#", width=45),
                                "kind": st.column_config.TextColumn("kind", width=80),
                                "PE": st.column_config.NumberColumn("PE", width=55),
                                "start": st.column_config.NumberColumn("start", width=65, help="cycle"),
                                "end": st.column_config.NumberColumn("end", width=65, help="cycle"),
                                "tile": st.column_config.NumberColumn("tile", width=55),
                                "column": st.column_config.NumberColumn("column", width=65),
                                "what": st.column_config.TextColumn("what", width=350)})
ctr = pd.DataFrame({k: v for k, v in tr.counters.items()})
ctr.index.name = "PE"
with st.expander("Counters per PE (equal to akfviz.simulate on the same case)"):
    st.dataframe(ctr, width="stretch")

page_end()
