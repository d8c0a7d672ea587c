"""Design space: sweep parameters × ranges, Pareto scatter, parallel coordinates, CSV/Parquet export."""
import pandas as pd
import streamlit as st

from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.viz import dse as vd
from akfviz.app_shell import page_end, page_start

page_start("Design space",
           "Run the whole pipeline (analyze → select → simulate, with the Dense baseline of each hardware point) "
           "over a small grid of parameters, or load a sweep made by `python -m akfviz sweep`.")
sweep = S.stage("dse.sweep")
wl = S.require_workload()
hw, hwk = S.hardware()
if hw is None:
    st.stop()

params = sweep.SWEEP_PARAMETERS
with st.expander("Sweepable parameters", expanded=False):
    st.dataframe(pd.DataFrame([{"name": p.name, "stage": p.stage, "range / choices":
                                (", ".join(map(str, p.choices)) if p.choices else f"{p.low:g} … {p.high:g}"),
                                "meaning": p.help} for p in params.values()]), hide_index=True, width="stretch")
spec = S.widget(st.text_input, "Sweep (name=v1,v2;name=…)", "sweep",
                help="Every combination is one point; e.g. tile=16,32;beta=0.1,1,10;rows=64,256.")
LIMIT = 60
#: A grid this small on a matrix this small runs by itself when the page opens (about a second
#: for the default grid on the default sample), so the first visit shows a real sweep.
AUTO_POINTS, AUTO_NNZ = 12, 300_000
#: …and on PE grids no larger than the default 256 × 256 (a 1024² grid takes seconds per point).
AUTO_PES = 256 * 256
grid = None
points = []
try:
    raw = S.parse_sweep_spec(spec)
    for k in raw:
        if k not in params:
            raise InputError(f"'{k}' is not a sweepable parameter; choose from {', '.join(params)}.")

    def conv(p, v):
        if p.choices:
            return v
        try:
            return float(v)
        except ValueError:
            raise InputError(f"Sweep parameter '{p.name}' needs numbers, got {v!r}.") from None

    grid = {k: [params[k].check(conv(params[k], v)) for v in vals] for k, vals in raw.items()}
    for side in ("rows", "cols"):
        if max(grid.get(side, [0])) > S.MAX_GRID_SIDE:
            raise InputError(f"Sweep parameter '{side}' goes up to {S.MAX_GRID_SIDE} in the app, as on the NPU "
                             f"page (got {max(grid[side]):g}); larger grids: python -m akfviz sweep.")
    points = sweep.expand_grid(grid, max_points=LIMIT)
    st.caption(f"{len(points)} point(s): {sweep.describe_grid(grid)}. Other settings: T = {S.get('tile')}, "
               f"α = {S.get('alpha'):g}, β = {S.get('beta'):g}, R = {S.get('resource')}, preset {hw.preset}.")
except (InputError, ValueError) as exc:
    st.error(str(exc))

store = st.session_state.setdefault("_akf_sweeps", {})
key = f"{wl.digest}|{spec}|{hwk}|{S.get('tile')}|{S.get('alpha')}|{S.get('beta')}|{S.get('resource')}|{S.get('gran')}"
c1, c2 = st.columns([1, 3])
empty = wl.A.nnz == 0   # nothing to select or simulate: every page says so, and so does this one
run = c1.button("Run sweep", type="primary", disabled=grid is None or empty)
if empty:
    st.info("This matrix has no nonzeros, so there is nothing to sweep: every point would compare Dense with "
            "a plan that does no work. Pick another workload on the Matrix page, or load a sweep file.")
tried = st.session_state.setdefault("_akf_sweeps_auto", set())
auto = (not run and grid is not None and key not in store and key not in tried
        and st.session_state.get("sweep_upload") is None
        and 0 < len(points) <= AUTO_POINTS and 0 < wl.A.nnz <= AUTO_NNZ
        and max(int(p.get("rows", hw.rows)) * int(p.get("cols", hw.cols)) for p in points) <= AUTO_PES)
if run:
    tried.discard(key)
if auto:
    tried.add(key)  # once per setting: a failed automatic run is not retried on every rerun
source = None
if (run or auto) and grid is not None and not empty:
    bar = st.progress(0.0, text="Starting the sweep…")

    def progress(done, total, point):
        bar.progress(done / total, text=f"Point {done} / {total}: {point}")

    base = {"tile": int(S.get("tile")), "alpha": float(S.get("alpha")), "beta": float(S.get("beta")),
            "resource": S.get("resource"), "granularity": S.get("gran")}
    try:
        store[key] = sweep.run_sweep(wl.A, grid, base={k: v for k, v in base.items() if k not in grid}, hw=hw,
                                     progress=progress, max_points=LIMIT)
    except (InputError, ValueError) as exc:
        st.error(str(exc))
    bar.empty()
upload = c2.file_uploader("…or load a sweep file (CSV or Parquet from the CLI)", type=["csv", "parquet"],
                          key="sweep_upload")
df = None
if upload is not None:
    try:
        df = sweep.load_sweep(upload.getvalue(), name=upload.name)
        source = f"loaded from {upload.name}"
    except InputError as exc:
        st.error(str(exc))
if df is None and key in store:
    df, source = store[key], ("run automatically: small grid, small matrix" if key in tried
                              else "run in this session")
if df is None:
    big = (f" Grids over {AUTO_POINTS} points or {AUTO_PES:,} PEs, or matrices over {AUTO_NNZ:,} nonzeros, "
           "wait for the button."
           if grid is not None else "")
    st.info("Press **Run sweep** to compute the grid above (each point runs analyze → select → simulate), "
            "or load a sweep file." + big)
    st.stop()

st.subheader(f"{len(df)} configurations ({source})")
swept = [c for c in df.columns if c in params]
numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
c1, c2, c3 = st.columns(3)
xcol = c1.selectbox("x axis", numeric, index=numeric.index("cycles") if "cycles" in numeric else 0, key="dse_x")
ycol = c2.selectbox("y axis", numeric, index=numeric.index("error_pct") if "error_pct" in numeric else 0, key="dse_y")
ccol = c3.selectbox("colour", numeric, index=numeric.index("energy_pj") if "energy_pj" in numeric else 0, key="dse_c")
S.chart(vd.sweep_scatter(df, xcol, ycol, ccol, hover=swept + ["kernel_mix"]), key="dse_scatter")
st.caption(vd.pareto_caption(xcol, ycol, ccol))
S.chart(vd.parallel_coordinates(df, swept + ["cycles", "energy_pj", "error_pct", "speedup"], ccol),
                key="dse_parcoords")
st.caption("How to read this: each line is one configuration crossing every axis; drag on an axis to filter.")
st.dataframe(df, hide_index=True, width="stretch")
S.export_buttons("Sweep", lambda: df, "sweep", "exp_sweep",
                  "one row per configuration: the swept parameters and every measured column")

page_end()
