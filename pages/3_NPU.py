"""NPU: hardware configuration, energy table, mapping, event-driven simulation (akf-spec §6–§7)."""
import streamlit as st

from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.viz import npu as vn
from akfviz.app_shell import field_grid, figure_pair, metric_row, page_end, page_start

page_start("NPU",
           "The fused plan placed on a PE grid (greedy + simulated annealing) and simulated event by event: "
           "every nonzero x_j is an event sent to each tile that stores column j (akf-spec §6–§7).")
wl = S.require_workload()
hw, hwk = S.hardware()
if hw is None:
    st.stop()

with st.expander("Hardware configuration", expanded=False):
    with st.form("hw_form"):
        start = {"rows": int(hw.rows), "cols": int(hw.cols), "sram_bytes_per_pe": int(hw.sram_bytes_per_pe),
                 "clock_hz": float(hw.clock_hz) / 1e6, "dram_bytes_per_cycle": int(hw.dram_bytes_per_cycle)}
        why = {"rows": "PEs per column of the grid. ", "cols": "PEs per row of the grid. ",
               "sram_bytes_per_pe": "Local SRAM of each PE, in bytes; payload beyond it streams from DRAM. ",
               "clock_hz": "Turns cycles into seconds. Energies are charged per action and leakage per PE-cycle "
                           "(akf-spec §7), so the energy in pJ does not change with the clock, but the power in "
                           "watts (energy / seconds) grows with it. ",
               "dram_bytes_per_cycle": "Bytes per cycle of the off-chip DRAM link, shared by every PE. "}
        boxes = {}
        # as many boxes to a row as fit (five at 1440 px, two at 800 px): st.columns(5) left 68 px each at
        # 800 px and broke the labels over up to four lines
        with field_grid("hw_fields", 150):
            for label, attr, lo, hi, _ in S.HW_FORM:
                # no min/max in the browser: a value outside them was refused there without a word
                boxes[label] = st.number_input(label, value=start[attr],
                                               step=1024 if attr == "sram_bytes_per_pe" else None,
                                               help=f"{why.get(attr, '')}From {lo:,g} to {hi:,}.")
        with st.container(horizontal=True):     # each button as wide as its label ("Ap…" at 800 px)
            apply = st.form_submit_button("Apply", type="primary")
            reset = st.form_submit_button("Reset to the preset")
    if apply:
        try:
            S.set_hardware(hw, **S.check_hardware_form(boxes))
        except InputError as exc:
            S.show_error(exc)
        else:
            st.rerun()
    if reset:
        for key in S.HW_OVERRIDES:
            S.put(key, None)
        S.clear_energy_override()
        st.rerun()
    st.caption(f"Preset {hw.preset!r}: {hw.rows}×{hw.cols} = {hw.n_pes:,} PEs, {hw.sram_bytes_per_pe:,} B SRAM each, "
               f"{hw.mac_lanes} MAC lanes, hop {hw.hop_latency_cycles} cycle(s), setup {hw.setup_cycles}, barrier "
               f"{hw.barrier_cycles}, reconfiguration {hw.reconfig_cycles} cycles.")

with st.expander("Energy table (editable, with provenance)", expanded=False):
    from akfviz.npu.energy import EnergyTable
    # edits are measured against the preset's own table; hw.energy already is the edited table (so
    # comparing with it undid every edit on the next run)
    preset_table = S.preset_energy()
    frame = preset_table.to_frame().reset_index()
    current = S.energy_override()
    shown = frame if current is None else current.to_frame().reset_index()   # e.g. a run bundle's table
    # fixed widths, 782 px in all (the expander at a 1280-px window), the sources on up to four lines: a
    # source (up to 220 characters) on one line made the editor 1278 px wide at a 1440-px window, with
    # node, grade and description off to the right. The descriptions (not editable) are in the list
    # under the table.
    CC = st.column_config
    edited = st.data_editor(
        shown, key="energy_editor", hide_index=True, width="stretch", disabled=["action", "unit", "description"],
        row_height=86, height=36 + 86 * len(shown) + 3, column_order=["action", "value", "unit", "grade", "node", "source"],
        column_config={"action": CC.TextColumn("action", width=105, help="What is charged (each one described "
                                                                          "under the table)."),
                       "value": CC.NumberColumn("value", width=70, help="Energy per action, in the row's unit."),
                       "unit": CC.TextColumn("unit", width=80),
                       "grade": CC.TextColumn("grade", width=75, help="measured / simulated / assumed"),
                       "node": CC.TextColumn("node", width=85, help="Technology node of the figure."),
                       "source": CC.TextColumn("source", width=365, help="Where the figure comes from.")})
    try:
        # a value typed without its provenance is marked "edited by the user", grade assumed
        table = EnergyTable.from_frame(edited, name="custom").marked_against(preset_table)
    except InputError as exc:
        S.show_error(exc)
    else:
        changed = not edited.equals(frame)
        if changed and (current is None or current.to_plain() != table.to_plain()):
            S.set_energy_override(table)
            st.rerun()
        if not changed and current is not None:
            S.clear_energy_override()
            st.rerun()
    st.caption("Every number carries its source, technology node and grade (measured / simulated / assumed). "
               "Edits apply to this session and the run bundle, not to the link.")
    st.caption("What each action is, and the source of its figure:\n"
               + "\n".join(f"- **{r.action}** ({r.description}): {r.source}" for r in edited.itertuples()))

c1 = st.container(width=360)   # a fixed width up to the page's: a quarter of it was 110 px at 900 px
with c1:
    S.widget(st.slider, "Activation density ρ_x of x", "xdens", *S.bounds("xdens"), step=0.05,
             help="Fraction of nonzero inputs; only nonzero x_j produce events.")
pa = S.analysis(wl)
if pa is not None:
    S.require_tiles(pa)
plan = S.plan_for(wl, pa, hw, hwk) if pa is not None else None
if plan is None:
    st.stop()
res = S.simulation(wl, plan, hw, hwk, fused=True)
res_unfused = S.simulation(wl, plan, hw, hwk, fused=False)
if res is None:
    st.stop()
summary = res.to_dict()
S.record_result("npu", {k: summary[k] for k in ("cycles", "seconds", "energy_total_pj", "events", "macs",
                                                "dram_bytes", "utilization_mean", "pes_busy")})
m = metric_row(6)
m[0].metric("makespan (cycles)", f"{res.cycles:,}", help=f"{res.seconds * 1e6:.3g} µs at {hw.clock_hz / 1e6:g} MHz")
m[1].metric("energy", f"{res.energy_total_pj / 1e6:#.4g} µJ".replace(". µJ", " µJ"), help=vn.power_in_words(res, hw))
m[2].metric("events", f"{res.events:,}")
m[3].metric("MACs", f"{res.macs:,}")
m[4].metric(f"PEs busy (of {hw.n_pes:,})", f"{summary['pes_busy']:,}")
# in %, as the page's other shares (0.0017 sat beside the heatmap's "PEs used (0.94 %)": UX review)
m[5].metric("mean utilisation", f"{100 * summary['utilization_mean']:.3g} %",
            help="Busy cycles ÷ makespan, averaged over every PE of the grid, idle ones included; "
                 "not the share of PEs used, which the heatmap's title gives.")

sim_key = f"{S.plan_key(wl, pa, hwk)}|{S.get('xdens')}"  # what the simulation depends on
r0, r1, c0, c1 = vn.used_window(res.utilization)
# on by default when the busy PEs fill under a quarter of the grid: the default sample's 614 busy PEs
# of 65,536 were a purple speck in a black square (the first visit decides; the user's choice stays)
zoom = S.sticky_toggle("Zoom to the PEs in use", "util_zoom",
                       default=(r1 - r0) * (c1 - c0) < 0.25 * hw.n_pes,
                       help="Draw only the smallest window of the grid that holds every busy PE (the counts in "
                            "the title stay over the whole grid).")
S.chart(S.figure_cached(f"util|{zoom}|{sim_key}",
                        lambda: vn.utilization_heatmap(res.utilization, height=560, zoom=zoom)),
        key="util_heatmap")
st.caption("How to read this: one cell per PE of the grid (over 256 PEs per side, the mean of a block of PEs, "
           "as the title says); colour = busy cycles / makespan as a fraction (the title gives the busiest "
           "PE's in %), the colour bar running from 0 to the busiest PE's value rather than to 1, so light use "
           "stays visible. Black = idle. A few bright "
           "PEs mean the makespan is set by them (load imbalance).")

busy_rows, default_row = vn.busy_rows(res.counters["busy"], hw.rows, hw.cols)
# the busiest row until the user picks one: a row chosen for an earlier matrix or plan follows the
# new busiest row (it stayed at the first visit's row, often idle now)
if S.get("perow") is None or S.get("perow") >= hw.rows or S.get("perow") == st.session_state.get("_akf_perow_auto"):
    if S.get("perow") != default_row:
        S.put("perow", default_row)
    st.session_state["_akf_perow_auto"] = default_row
left, right = figure_pair("npu_timeline_energy", grow=(3, 2))
with left:
    if hw.rows > 1:
        row = S.widget(st.slider, "PE row for the timeline", "perow", 0, hw.rows - 1,
                       help=f"Rows with busy PEs: {', '.join(map(str, busy_rows[:20]))}"
                            f"{' …' if busy_rows.size > 20 else ''}")
    else:  # a one-row grid: nothing to choose (a slider needs min < max)
        row = 0
        st.caption("PE row for the timeline: 0 (the grid has one row)")

    if res.meta["recorded"]:
        S.chart(S.figure_cached(f"timeline|{sim_key}|{row}", lambda: vn.pe_timeline(
            vn.row_intervals(res, row, hw.cols), makespan=res.cycles)), key="timeline")
        st.caption(f"How to read this: busy intervals of the busy PEs of row {row} (up to {vn.TIMELINE_MAX_PES}), "
                   "coloured by kernel family; gaps are waits for events or partial sums.")
    else:
        st.info(f"No timeline for this run: it would record more than {S.MAX_RECORDED_INTERVALS:,} busy intervals, "
                "so the simulation ran without them (the same counters, cycles and energy). A larger tile side T "
                "or a lower activation density ρ_x gives fewer.")
with right:
    S.chart(S.figure_cached(f"energy|{sim_key}", lambda: vn.energy_breakdown(res.energy_pj)), key="energy")
    st.caption("How to read this: energy = Σ actions × the energy table; static = leakage per PE-cycle × every PE "
               "× the makespan in cycles, so a faster clock leaves these pJ as they are and raises the watts.")

left, right = figure_pair("npu_hops_anneal")
with left:
    S.chart(S.figure_cached(f"hops|{sim_key}", lambda: vn.hop_histogram(res.hop_histogram)), key="hops")
    st.caption("How to read this: flits (events and partial sums) by Manhattan distance travelled; "
               "short hops = good locality of the placement.")
with right:
    # the same entry S.simulation placed the plan with (same key)
    mp = S.mapping_cached(S.plan_key(wl, pa, hwk), plan, hwk, hw, float(S.get("xdens")))
    S.chart(S.figure_cached(f"anneal|{sim_key}", lambda: vn.annealing_trajectory(
        mp.trajectory_proposals, mp.trajectory, mp.greedy_objective, mp.objective)), key="anneal")
    eng = mp.engine_check
    if eng.get("kept") == "greedy":
        found = 100 * (1 - eng["anneal_objective"] / mp.greedy_objective)
        kept = (f"annealing found a placement {found:.1f} % better in this objective, but the engine ran it in "
                f"{eng['anneal_cycles']:,} cycles against the greedy start's {eng['greedy_cycles']:,} (the objective "
                "does not see when events arrive), so the greedy placement is kept")
    elif mp.objective < mp.greedy_objective:
        kept = (f"the placement kept is the best one visited, {100 * mp.improvement:.1f} % better than the greedy "
                "start" + (f"; in the engine {eng['anneal_cycles']:,} cycles against the greedy start's "
                           f"{eng['greedy_cycles']:,}" if eng else ""))
    else:
        kept = "annealing found nothing better than the greedy start, so the greedy placement is kept"
    if mp.iterations == 0:
        st.caption("How to read this: the placement objective (makespan + γ·hops + δ·overflow, lower is better). "
                   f"Annealing made no proposals: with {hw.rows * hw.cols:,} PE{'s' if hw.rows * hw.cols > 1 else ''} "
                   f"and {pa.tileset.n_tiles:,} tile{'s' if pa.tileset.n_tiles != 1 else ''} there is no "
                   "other placement to try, so the greedy placement is kept.")
    else:
        tr = mp.trajectory
        # "climbs" only when it shows: from the hop-scale temperature most searches fall from the start
        course = ("it climbs above its start while the temperature is high and accepts worse moves"
                  if len(tr) and float(tr.max()) > 1.01 * float(tr[0]) else
                  "worse moves are accepted less and less as the temperature falls")
        st.caption(f"How to read this: the placement objective (makespan + γ·hops + δ·overflow, lower is better) "
                   f"of the annealer's current placement ({mp.iterations:,} proposals); {course}. "
                   f"{kept[0].upper() + kept[1:]}.")

if res_unfused is not None:
    S.chart(S.figure_cached(f"fused|{sim_key}", lambda: vn.fused_vs_unfused(
        {"fused": {"cycles": res.cycles, "energy_pj": res.energy_total_pj},
         "unfused": {"cycles": res_unfused.cycles, "energy_pj": res_unfused.energy_total_pj}})), key="fused")
    st.caption("How to read this: unfused runs one phase per distinct kernel (events re-broadcast, a barrier and a "
               "reconfiguration each); fused runs every PE's own kernel in one phase. The gap is what fusion buys this "
               "mix of kernels; Compare sets the plan against one kernel everywhere (Static-sparse)."
               + vn.one_kernel_caption(S.running_kernels(plan), S.mix_hint(wl, pa, hw, hwk, plan) is not None))
with st.expander("Per-iteration breakdown and per-PE counters"):
    st.dataframe(res.per_iteration, hide_index=True, width="stretch")
    pes = res.busiest_pes(200)
    # in three tabs, each led by the PE's id and place: fourteen columns in one grid were 970 px wide,
    # cut off in the expander at a 1280-px window (784 px)
    lead = ["pe", "row", "col"]
    parts = [("Time", ["busy", "idle", "utilization"]),
             ("Work", ["events", "macs_fp32", "macs_int8", "decodes", "reduce_adds"]),
             ("Memory and network", ["sram_bytes", "dram_bytes", "flit_hops"])]
    rest = [c for c in pes.columns if c not in lead and all(c not in cols for _, cols in parts)]
    if rest:
        parts.append(("Other", rest))
    st.caption(f"Counters of the {len(pes):,} busiest PEs (of {int((res.counters['busy'] > 0).sum()):,} that "
               "worked), busiest first; the export has every PE.")
    for tab, (_, cols) in zip(st.tabs([t for t, _ in parts]), parts):
        with tab:
            st.dataframe(pes[lead + [c for c in cols if c in pes]], hide_index=True, width="stretch",
                         column_config={"utilization": st.column_config.NumberColumn(format="%.3f")})

st.header("Export")
e1, e2 = st.columns([2, 3], vertical_alignment="center")
e2.caption("cycles, energy by component, totals, utilisation, mapping, per-iteration counters, hop histogram, "
           "hardware hash and settings, and under akfviz_settings the page's settings, workload (sha256) and model code")
settings = S.export_settings()   # read now: the download runs outside the script, where the session is empty
e1.download_button("Simulation (JSON)", data=lambda: S.json_download({**res.to_dict(), S.SETTINGS_ATTR: settings}),
                   file_name=f"akfviz-simulation-{settings['settings_sha256'][:8]}.json", mime="application/json",
                   on_click="ignore", key="exp_sim_json")
S.export_buttons("PE counters", lambda: res.pe_frame(), "pe-counters", "exp_pes",
                  "one row per PE of the grid: busy and idle cycles, events, MACs, decodes, SRAM / DRAM bytes, hops, utilisation")

page_end()
