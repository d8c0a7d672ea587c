"""Design space: sweep parameters × ranges, Pareto scatter, parallel coordinates, CSV/Parquet export."""
import pandas as pd
import streamlit as st

from akfviz import app_state as S
from akfviz.cli import without_wall_clock
from akfviz.errors import InputError
from akfviz.viz import dse as vd
from akfviz.app_shell import flex_row, page_end, page_start

page_start("Design space",
           "Run the whole pipeline (analyze → select → simulate, with the Dense, Block-sparse and Static-sparse "
           "baselines of each hardware point) over a small grid of parameters, for the plan the Kernels page "
           "defines, or load a sweep made by `python -m akfviz sweep`.")
sweep = S.stage("dse.sweep")
wl = S.require_workload()
hw, hwk = S.hardware()
if hw is None:
    st.stop()

params = sweep.SWEEP_PARAMETERS
with st.expander("Sweepable parameters", expanded=False):
    st.dataframe(pd.DataFrame([{"name": p.name, "stage": p.stage, "range / choices":
                                (", ".join(map(str, p.choices)) if p.choices else f"{p.low:g} … {p.high:g}"),
                                "meaning": p.help} for p in params.values()]), hide_index=True, width="stretch",
                 row_height=56,   # 780 px, the meaning on two lines: 942 px on one (the expander at 1280: 784)
                 column_config={"name": st.column_config.TextColumn("name", width=140),
                                "stage": st.column_config.TextColumn("stage", width=80),
                                "range / choices": st.column_config.TextColumn("range / choices", width=170),
                                "meaning": st.column_config.TextColumn("meaning", width=388)})
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
    grid, points = S.sweep_grid(spec, LIMIT)
except (InputError, ValueError) as exc:
    S.show_error(exc)
swept_names = set(grid or {})

# The plan definition every other page uses (Kernels: mode, budgets, R, granularity; NPU: ρ_x), so a
# point with the page's settings is the plan Kernels, NPU and Compare show.
args = S.selection_args()
extra = dict(args["extra"])
mode = S.get("mode")
base = {"tile": int(S.get("tile")), "alpha": args["alpha"], "beta": args["beta"],
        "error_budget": args["budget"], "resource_budget": extra.get("resource_budget"),
        "resource": extra.get("resource", S.get("resource")), "granularity": args["granularity"],
        "rho_x": float(extra.get("rho_x", S.get("xdens")))}
if "error_budget" in swept_names:          # a swept budget replaces the other one
    base["resource_budget"] = None
if "resource_budget" in swept_names:
    base["error_budget"] = None
base = {k: v for k, v in base.items() if k not in swept_names}
static = S.get("static")
if static not in S.known_names().get("static", [static]):
    static = "CSC"


def fixed_settings() -> str:
    """The settings every point shares, in words (swept ones are not fixed, so not listed)."""
    parts = []
    if "tile" in base:
        parts.append(f"T = {base['tile']}")
    if base.get("error_budget") is not None:
        parts.append(f"error budget {base['error_budget']:g} (Kernels page; α, β not used)")
    elif base.get("resource_budget") is not None:
        parts.append(f"resource budget {base['resource_budget']:g} of Dense (Kernels page; α, β not used)")
    else:
        parts += [f"{n} = {base[k]:g}" for k, n in (("alpha", "α"), ("beta", "β")) if k in base]
    parts += [f"{n} {base[k]}" for k, n in (("resource", "R ="), ("granularity", "granularity")) if k in base]
    if "rho_x" in base:
        parts.append(f"ρ_x = {base['rho_x']:g} (NPU page)")
    grid_txt = (f", {hw.rows}×{hw.cols} PEs" if not ({"rows", "cols"} & swept_names)
                else f", {hw.cols} PE columns" if "cols" not in swept_names
                else f", {hw.rows} PE rows" if "rows" not in swept_names else "")
    sram_txt = "" if "sram_bytes_per_pe" in swept_names else f", {hw.sram_bytes_per_pe:,} B SRAM per PE"
    parts.append(f"hardware {hw.preset}{grid_txt}{sram_txt}")
    lsh_now = S.lsh_tuple()
    if lsh_now != tuple(S.FIELDS[k].default for k in ("lsh_k", "lsh_b", "lsh_g", "lsh_seed")):
        k, b, g, sd = lsh_now   # changed on the Patterns page: the clusters, so cluster-mode plans, follow it
        parts.append(f"LSH {k} hashes, {b} bands, {g}×{g} grid, seed {sd} (Patterns page)")
    if baselines:
        parts.append(f"Static-sparse kernel {static} (Compare page)")
    return "; ".join(parts)


baselines = S.widget(st.checkbox, "Also simulate the Block-sparse and Static-sparse baselines at every point",
                     "sweep_base",
                     help="akf-spec §8: Block-sparse skips empty tiles and runs the rest DENSE; Static-sparse "
                          "runs one kernel on every nonempty tile. Simulated as on the Compare page, once per "
                          "tile size and hardware; about twice the time of a sweep without them.")
if grid is not None:
    st.caption(f"{len(points)} point{'s' if len(points) != 1 else ''}: {sweep.grid_in_words(grid)}. "
               f"Same at every point: {fixed_settings()}.")
    if mode in ("error", "resource") and {"alpha", "beta"} & swept_names and not (
            {"error_budget", "resource_budget"} & swept_names):
        st.info(f"The Kernels page selects with a{'n error' if mode == 'error' else ' resource'} budget, which "
                "replaces α and β, so sweeping them changes nothing; sweep error_budget (or resource_budget) "
                "instead, or switch the Kernels page to weights.")

store = st.session_state.setdefault("_akf_sweeps", {})
lsh_now = S.lsh_tuple()   # the Patterns page's LSH: the analysis every point selects on
lsh = dict(zip(("num_hashes", "bands", "grid", "seed"), lsh_now))
key = f"{wl.digest}|{spec}|{hwk}|{sorted(base.items())}|{baselines}|{static if baselines else ''}|{lsh_now}"
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

    try:
        store[key] = sweep.run_sweep(wl.A, grid, base=base, hw=hw, progress=progress, max_points=LIMIT, lsh=lsh,
                                     baselines=baselines, static_kernel=static)
    except (InputError, ValueError) as exc:
        S.show_error(exc)
    bar.empty()
upload = c2.file_uploader("…or load a sweep file (CSV or Parquet from the CLI)", type=["csv", "parquet"],
                          key="sweep_upload")
df = None
if upload is not None:
    try:
        df = sweep.load_sweep(upload.getvalue(), name=upload.name)
        source = f"loaded from {upload.name}"
    except InputError as exc:
        S.show_error(exc)
if df is None and key in store:
    df, source = store[key], ("run automatically: small grid, small matrix" if key in tried
                              else "run in this session")
if df is None:
    big = (f" Grids over {AUTO_POINTS} points or {AUTO_PES:,} PEs, or matrices over {AUTO_NNZ:,} nonzeros, "
           "wait for the button."
           if grid is not None else "")
    if grid is None:   # the button is disabled: the message above says what to fix
        st.info("Correct the sweep above to enable **Run sweep**, or load a sweep file.")
    elif not empty:
        st.info("Press **Run sweep** to compute the grid above (each point runs analyze → select → simulate), "
                "or load a sweep file." + big)
    st.stop()

st.header(f"{len(df)} configuration{'' if len(df) == 1 else 's'} ({source})")
if upload is not None and source and source.startswith("loaded"):
    # the sweep settings above are this page's grid; the file's own are what it records
    st.caption(vd.recorded_settings(df.attrs, wl.digest))
swept = [c for c in df.columns if c in params]
numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
has_baselines = all(c in df for c in ("speedup_vs_blocksparse", "speedup_vs_staticsparse"))
kernel_used = (str(df["static_kernel"].iloc[0]) if "static_kernel" in df and len(df) else static)
st.caption("Baselines (akf-spec §8, on the same hardware and x as each point): `speedup`, `energy_rel` are against "
           "**Dense** (every tile slot, empty ones too, as DENSE)"
           + (f"; `speedup_vs_blocksparse`, `energy_rel_vs_blocksparse` against **Block-sparse** (empty tiles "
              f"skipped, the rest DENSE); `speedup_vs_staticsparse`, `energy_rel_vs_staticsparse` against "
              f"**Static-sparse** ({kernel_used} on every nonempty tile). "
              "speedup = baseline cycles / AKF cycles; energy ratio = AKF energy / baseline energy."
              if has_baselines else ". This sweep has no Block-sparse / Static-sparse columns "
              "(tick the box above and run it again, or load a sweep made with them)."))
notes = []
if has_baselines and {"dense_cycles", "blocksparse_cycles"} <= set(df.columns) and \
        (df["dense_cycles"] == df["blocksparse_cycles"]).all() and \
        (df["dense_energy_pj"] == df["blocksparse_energy_pj"]).all():
    slots = ""
    if not (source or "").startswith("loaded") and "n_tiles" in df and ("tile" in df or "tile" in base):
        sides = df["tile"] if "tile" in df else [base["tile"]] * len(df)
        if sweep.every_slot_nonempty(df["n_tiles"], sides, wl.A.shape):
            slots = " every tile slot of this matrix is nonempty, so skipping empty tiles saves nothing;"
    notes.append(f"**Block-sparse = Dense at every point**:{slots} AKF's speedup and energy ratio against "
                 "Block-sparse are the same as against Dense.")
same = [c for c in ("cycles", "error_pct", "speedup", "energy_pj") if c in df and len(df) > 1
        and df[c].nunique(dropna=False) == 1]
if same:
    notes.append("Same at every point: " + ", ".join(f"{c} {vd.format_value(df[c].iloc[0])}" for c in same) + ".")
if "sram_bytes_per_pe" in swept and "overflow_bytes" in df and (df["overflow_bytes"] == 0).all():
    notes.append(sweep.sram_note(df))
if "sram_bytes_per_pe" in swept:
    notes.append("Payloads that fit in SRAM count as already resident (preloaded before the run, neither timed "
                 "nor charged energy: the steady state of a persistent kernel), and only the overflow streams "
                 "from DRAM, at every point and for every baseline. A larger SRAM therefore saves the overflow's "
                 "DRAM time and energy; the first load of the weights is outside the model (docs/model.md).")
if {"rows", "cols"} & set(swept) and "energy_pj" not in same and "cycles" in same:
    notes.append("Energy changes with the PE grid although cycles do not: static energy is leakage × PEs × "
                 "cycles, so idle PEs of a larger grid still cost energy.")
if notes:
    st.markdown("\n".join(f"- {n}" for n in notes))
# wrapping, each wide enough for a column's title ("speedup over Static-sparse (×)")
c1, c2, c3 = flex_row("dse_axes", (250, 250, 250))


def _column_choice(col):
    """A column as the select shows it: its title in the figure ("energy (µJ)"; the table's column,
    in the export's unit, says which it is in its tooltip)."""
    return vd.column_label(col)


xcol = c1.selectbox("x axis", numeric, index=numeric.index("cycles") if "cycles" in numeric else 0, key="dse_x",
                    format_func=_column_choice)
ycol = c2.selectbox("y axis", numeric, index=numeric.index("error_pct") if "error_pct" in numeric else 0, key="dse_y",
                    format_func=_column_choice)
ccol = c3.selectbox("colour", numeric, index=numeric.index("energy_pj") if "energy_pj" in numeric else 0, key="dse_c",
                    format_func=_column_choice)
dkey = S.frame_digest(df)   # the sweep shown: figures are cached by its content and the chosen columns
S.chart(S.figure_cached(f"dse_scatter|{dkey}|{xcol}|{ycol}|{ccol}|{swept}", lambda: vd.sweep_scatter(
    df, xcol, ycol, ccol, hover=swept + ["kernel_mix"])), key="dse_scatter")
st.caption(vd.pareto_caption(xcol, ycol, ccol) + " Configurations at the same spot are counted (×n); the hover "
           "lists each of them, and a ringed dot shows an optimal one's colour.")
if has_baselines:
    S.chart(S.figure_cached(f"dse_baselines|{dkey}|{swept}", lambda: vd.baseline_bars(df, swept)),
            key="dse_baselines_chart")
    st.caption("How to read this: one group of bars per configuration (the swept settings below it), one bar per "
               "baseline; top: above the dotted line = AKF is faster than that baseline, bottom: below it = AKF "
               "uses less energy. Hover for the values; every number is also in the table.")
S.chart(S.figure_cached(f"dse_parcoords|{dkey}|{ccol}|{swept}", lambda: vd.parallel_coordinates(
    df, swept + ["cycles", "energy_pj", "error_pct", "speedup"], ccol)), key="dse_parcoords")
st.caption("How to read this: each line is one configuration crossing every axis; drag on an axis to filter. "
           "An axis marked (constant) has one value at every point.")
help_of = getattr(sweep, "COLUMN_HELP", {})
# in parts of a few columns, each led by the swept settings and as wide as the page (24 columns in one
# grid were 2607 px wide at a 1440-px window: kernel_mix and the baselines scrolled out of sight)
sweep_parts = vd.table_parts(df, swept) or [("All columns", list(df.columns))]
# energies stay in the export's pJ (the column names say so), as whole numbers with separators
# ("9,160,443", not "9160442.96"); the tooltip names the figures' title in µJ
column_help = {c: (st.column_config.NumberColumn(help=f"{h} In the figures: {vd.column_label(c)}.", format="localized")
                   if c.endswith("energy_pj") else st.column_config.Column(help=h))
               for c, h in help_of.items() if c in df}
for tab, (_, cols) in zip(st.tabs([title for title, _ in sweep_parts]), sweep_parts):
    with tab:
        shown = df[cols].copy()
        for c in [c for c in cols if c.endswith("energy_pj")]:
            shown[c] = shown[c].round()          # display only: the export keeps every digit
        st.dataframe(shown, hide_index=True, width="stretch", column_config=column_help)
# without the wall-clock column (as `python -m akfviz sweep --out` writes it): the same sweep gives the same bytes
S.export_buttons("Sweep", lambda: without_wall_clock(df), "sweep", "exp_sweep",
                  "one row per configuration: the swept parameters, AKF's measured columns and, with the baselines, "
                  "each baseline's cycles and energy and AKF's speedup / energy ratio against it; not the wall "
                  "time of each point (shown above), which differs from run to run. Parquet and JSON also keep "
                  "what reruns it: the grid, the fixed settings, the hardware, the LSH settings, the seed and "
                  "the matrix's sha256", json_too=True)

page_end()
