"""Fixes from a browser probe of the app (forty-third session): each test fails on the code before it."""

import types

import numpy as np
import pytest

import akfviz
from akfviz import app_state as S
from akfviz.errors import InputError


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# ---------------------------------------------------------------- quick clicks (Learn "Next" twice)
def test_a_change_callback_without_its_widget_copy_keeps_the_state(monkeypatch):
    """Two quick clicks: the first click's put() dropped "w:lstep", then the slider's callback read
    it: KeyError, and the whole app was replaced by an error box."""
    fake = types.SimpleNamespace(session_state={"lstep": 4})
    monkeypatch.setattr(S, "st", fake)
    S._commit("lstep")                       # no "w:lstep": nothing to copy, nothing raised
    assert fake.session_state["lstep"] == 4
    fake.session_state["w:lstep"] = 7
    S._commit("lstep")
    assert fake.session_state["lstep"] == 7


def test_each_step_button_callback_counts_and_stays_in_range(monkeypatch):
    fake = types.SimpleNamespace(session_state={"lstep": 2, "w:lstep": 2})
    monkeypatch.setattr(S, "st", fake)
    for _ in range(3):                       # three callbacks before any page run: three steps
        S.step_to("lstep", 1, 0, 4)
    assert fake.session_state["lstep"] == 4 and "w:lstep" not in fake.session_state
    S.step_to("lstep", -1, 0, 4)
    assert fake.session_state["lstep"] == 3
    S.step_to("lstep", 0, 0, 4, absolute=True)
    assert fake.session_state["lstep"] == 0
    S.step_to("lstep", -1, 0, 4)
    assert fake.session_state["lstep"] == 0


def test_learn_buttons_step_through_callbacks(app):
    app.run()
    app.switch_page("pages/7_Learn.py").run()
    _ok(app)
    for want in (1, 2, 3):
        next(b for b in app.button if b.key == "learn_next").click().run()
        _ok(app)
        assert app.session_state["lstep"] == want and app.slider(key="w:lstep").value == want
    next(b for b in app.button if b.key == "learn_prev").click().run()
    assert app.slider(key="w:lstep").value == 2
    next(b for b in app.button if b.key == "learn_first").click().run()
    assert app.slider(key="w:lstep").value == 0


# ---------------------------------------------------------------- energy edits carry "edited, assumed"
def test_an_edited_energy_value_is_marked_edited_and_assumed():
    from akfviz.npu.energy import EnergyTable

    base = akfviz.HardwareConfig().energy
    f = base.to_frame().reset_index()
    f.loc[f["action"] == "mac_fp32", "value"] = 46.0
    f.loc[f["action"] == "mac_int8", "value"] = 3.0
    f.loc[f["action"] == "mac_int8", "source"] = "my lab's chip"
    t = EnergyTable.from_frame(f, name="custom").marked_against(base)
    assert t.mac_fp32.value == 46.0 and t.mac_fp32.grade == "assumed"
    assert t.mac_fp32.source.startswith("edited by the user (was 4.6 pJ")
    assert t.mac_int8.source == "my lab's chip" and t.mac_int8.grade == base.mac_int8.grade
    assert t.sram_read == base.sram_read and t.name == "custom"
    same = EnergyTable.from_frame(base.to_frame().reset_index(), name="custom")
    assert same.marked_against(base) is same
    with pytest.raises(InputError, match="EnergyTable"):
        same.marked_against({"mac_fp32": 1})


# ---------------------------------------------------------------- hardware form: a message, not silence
def test_hardware_form_values_are_checked_with_the_fields_named():
    with pytest.raises(InputError) as e:
        S.check_hardware_form({"PE rows": 1, "PE columns": 5000, "SRAM per PE (B)": 10,
                               "Clock (MHz)": 0.0, "DRAM (B/cycle)": 0})
    msg = str(e.value)
    assert msg.startswith("The hardware was not changed.")
    for part in ("PE columns: 5,000 is outside 1 … 1,024", "SRAM per PE (B): 10 is outside 64",
                 "Clock (MHz): 0 is outside", "DRAM (B/cycle): 0 is outside"):
        assert part in msg, msg
    assert "PE rows" not in msg
    ok = S.check_hardware_form({"PE rows": 16, "PE columns": 8, "SRAM per PE (B)": 4096,
                                "Clock (MHz)": 500.0, "DRAM (B/cycle)": 64})
    assert ok == {"rows": 16, "cols": 8, "sram_bytes_per_pe": 4096, "clock_hz": 5e8, "dram_bytes_per_cycle": 64}
    with pytest.raises(InputError, match="not a whole number"):
        S.check_hardware_form({**{k: v for k, v in zip([f[0] for f in S.HW_FORM], (16, 8, 4096, 500.0, 64))},
                               "PE rows": 2.5})


def test_the_npu_page_says_why_apply_did_nothing(app):
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    inputs = {n.label: n for n in app.number_input}
    inputs["PE rows"].set_value(1)
    inputs["PE columns"].set_value(5000)
    next(b for b in app.button if b.label == "Apply").click().run()
    assert not app.exception
    assert any("PE columns: 5,000 is outside 1 … 1,024" in e.value for e in app.error), [e.value for e in app.error]
    assert app.session_state["hw_rows"] is None          # nothing applied
    inputs = {n.label: n for n in app.number_input}
    inputs["PE columns"].set_value(16)
    next(b for b in app.button if b.label == "Apply").click().run()
    _ok(app)                                             # the old error is gone
    assert app.session_state["hw_rows"] == 1 and app.session_state["hw_cols"] == 16


# ---------------------------------------------------------------- generator form: a seed beyond 2**53
def test_a_seed_beyond_the_form_limit_is_a_message_in_a_text_box(app):
    gens = __import__("akfviz.workloads.generators", fromlist=["generator_specs"])
    seed = next(s for s in gens.generator_specs("uniform") if s.name == "seed")
    assert S.form_wants_text(seed) and "in this form up to 9,007,199,254,740,991" in S.form_help(seed)
    n = next(s for s in gens.generator_specs("uniform") if s.name == "n")
    assert not S.form_wants_text(n)
    app.run()
    boxes = {t.label.split(" — ")[0]: t for t in app.text_input}
    assert "seed" in boxes, list(boxes)
    boxes["seed"].set_value("9223372036854775807")
    next(b for b in app.button if b.label == "Generate").click().run()
    assert not app.exception
    assert any("seed" in e.value and "9,007,199,254,740,991" in e.value for e in app.error), \
        [e.value for e in app.error]
    boxes = {t.label.split(" — ")[0]: t for t in app.text_input}
    boxes["seed"].set_value("12")
    next(b for b in app.button if b.label == "Generate").click().run()
    _ok(app)                                             # the stale error went with the next submit
    assert app.session_state["gen_params"]["seed"] == 12


# ---------------------------------------------------------------- solver: a diverging method
def test_a_diverging_method_is_not_given_an_answer_error():
    from akfviz.npu.iterative import run_solver
    from akfviz.viz.solver import percent_text

    A = akfviz.load("sample_data/banded_2048.npz")
    plan = akfviz.select(akfviz.analyze(A, tile=32), alpha=1, beta=1, error_budget=0.02)
    r = run_solver(plan, method="jacobi", iterations=30)
    assert r.exact_diverges and r.to_dict()["exact_diverges"] is True
    A = akfviz.load("sample_data/stencil5_64x64.mtx")
    plan = akfviz.select(akfviz.analyze(A, tile=32), alpha=1, beta=1, error_budget=0.02)
    assert not run_solver(plan, method="jacobi", iterations=30).exact_diverges
    assert percent_text(11.8) == "1,180 %" and percent_text(0.0123) == "1.23 %"
    assert percent_text(8.97e91) == "8.97e+93 %" and percent_text(float("nan")) == "n/a"


def test_the_solver_page_says_the_method_diverges(app):
    app.query_params.update({"sample": "banded_2048", "sop": "current", "solver": "jacobi"})
    app.run()
    app.switch_page("pages/6_Solver.py").run()
    _ok(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["answer's error"] == "n/a: diverges", metrics


# ---------------------------------------------------------------- a flat calibration on a sane axis
def test_a_flat_calibration_is_drawn_on_a_sane_axis():
    from akfviz.selection.perftable import performance_table
    from akfviz.viz import kernels as vk

    table = performance_table(akfviz.HardwareConfig(), tile=32)
    curves = vk.perftable_curves(table, "DENSE", "energy")
    fig = vk.perftable_fits(curves)
    ys = [ax for name, ax in fig.layout.to_plotly_json().items() if name.startswith("yaxis")]
    flat = [ax for ax in ys if ax.get("range") is not None]
    assert flat and all(ax["tickformat"] == "~g" for ax in flat)
    for c, ax in zip(curves, ys):
        lo, hi = ax["range"]
        v = float(np.median(c["measured"]))
        assert lo < v < hi and (hi - lo) == pytest.approx(0.1 * v)
    assert vk.flat_range([1.0, 2.0]) is None and vk.flat_range([0.0, 0.0]) == [-1.0, 1.0]
    assert vk.flat_range([np.nan]) is None


# ---------------------------------------------------------------- the "why" box: one tile's shares
def test_the_why_text_says_its_shares_are_one_tiles():
    from akfviz.selection.explain import explain

    A = akfviz.load("sample_data/banded_2048.npz")
    pa = akfviz.analyze(A)
    t = explain(akfviz.select(pa, alpha=1, beta=1), cluster=0)
    assert "on the cluster's representative tile, resource" in t[t.chosen].reason.iloc[0]
    assert "of the whole matrix's Dense" in t[t.chosen].reason.iloc[0]
    t = explain(akfviz.select(pa, alpha=1, beta=1, granularity="tile"), tile=0)
    assert "on this tile, resource" in t[t.chosen].reason.iloc[0]


def test_a_plan_that_drops_the_tile_is_not_shown_as_a_success(app):
    app.query_params.update({"alpha": "0"})
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    assert not app.exception
    assert any(w.value.startswith("SKIP: lowest cost") for w in app.warning), [w.value for w in app.warning]
    assert not any(s.value.startswith("SKIP") for s in app.success)


# ---------------------------------------------------------------- NPU timeline: row and axis
def test_the_timeline_starts_at_cycle_zero():
    import pandas as pd

    from akfviz.viz import npu as vn

    iv = pd.DataFrame({"pe": ["0,1", "0,1"], "start": [1150.0, 1500.0], "end": [1400.0, 1800.0],
                       "kernel": ["QUANT8", "QUANT8"]})
    fig = vn.pe_timeline(iv, makespan=1898.0)
    lo, hi = fig.layout.xaxis.range
    assert lo == 0 and 1898.0 <= hi < 2000


def test_the_timeline_row_follows_the_busiest_row_until_the_user_moves_it(app):
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    first = app.session_state["perow"]
    assert first == app.session_state["_akf_perow_auto"]
    app.slider(key="w:tile").set_value(128).run()
    _ok(app)
    auto = app.session_state["_akf_perow_auto"]
    assert auto != first                                 # T = 128 keeps another row busiest
    assert app.session_state["perow"] == auto and app.slider(key="w:perow").value == auto
    assert not any("idle for the whole run" in str(c.value) for c in app.caption)
    mine = (auto + 3) % 256
    app.slider(key="w:perow").set_value(mine).run()
    app.slider(key="w:tile").set_value(32).run()
    _ok(app)
    assert app.session_state["perow"] == mine            # the user's row stays


# ---------------------------------------------------------------- uploads: unloading, the sidebar, pruning
def _npy(rows=24, cols=16, seed=3):
    import io

    a = np.random.default_rng(seed).standard_normal((rows, cols))
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_an_upload_can_be_unloaded_and_its_pruning_controls_follow_the_method(app):
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("w.npy", _npy(), "application/octet-stream")).run()
    _ok(app)
    assert app.slider(key="w:up_sparsity").disabled and app.selectbox(key="w:up_pattern").disabled
    app.selectbox(key="w:up_prune").set_value("nm").run()
    _ok(app)
    assert app.slider(key="w:up_sparsity").disabled and not app.selectbox(key="w:up_pattern").disabled
    assert "pruned by nm (pattern 2:4)" in app.session_state["_akf_workload"].provenance
    app.selectbox(key="w:up_prune").set_value("magnitude").run()
    assert not app.slider(key="w:up_sparsity").disabled and app.selectbox(key="w:up_pattern").disabled
    prov = app.session_state["_akf_workload"].provenance
    assert "pruned by magnitude (sparsity" in prov and "pattern" not in prov
    app.switch_page("pages/1_Patterns.py").run()
    app.switch_page("app.py").run()                      # the uploader is empty again
    unload = next(b for b in app.button if b.key == "unload_upload")
    assert unload.label == "Unload w.npy (back to the sample)"
    unload.click().run()
    _ok(app)
    assert app.session_state["src"] == "sample" and "_akf_upload" not in app.session_state
    assert {m.label: m.value for m in app.metric}["rows"] != "24"


def test_an_upload_link_without_its_file_is_told_alike_in_sidebar_and_page(app):
    app.query_params.update({"src": "upload"})
    app.run()
    assert not app.exception
    side = " ".join(m.value for m in app.sidebar.markdown)
    assert "**Workload:** sample" in side and "not in this session" in side
    assert "(none in this session)" not in side
    assert any("Showing the default sample instead" in w.value for w in app.warning)


# ---------------------------------------------------------------- small things a user reads
def test_numbers_a_user_reads_are_grouped_and_markers_visible():
    from akfviz import LoadLimits
    from akfviz.viz import learn as vl

    with pytest.raises(InputError, match=r"shape 2,000,000 × 3, over the limit of 1,048,576 rows"):
        LoadLimits(max_rows=1_048_576).check_shape(2_000_000, 3)
    with pytest.raises(InputError, match=r"declares 6,000,000 stored entries, over the limit of 5,000,000"):
        LoadLimits(max_nnz=5_000_000).check_nnz(6_000_000)
    # every instant step kind has a filled marker (a line symbol with a white outline is invisible)
    assert all(not sym.startswith("line") for sym in vl.KIND_SYMBOLS.values())
    assert "final" in vl.KIND_SYMBOLS
    assert S.pruning_text("magnitude", 0.7, "2:4") == ", pruned by magnitude (sparsity 0.7)"
    assert S.pruning_text("block", 0.5, "2:4") == ", pruned by block (sparsity 0.5)"


def test_the_llm_form_says_which_fields_its_pruning_reads(app):
    app.run()
    app.selectbox(key="gen_kind").set_value("llm").run()
    _ok(app)
    assert any("Which fields the pruning reads" in c.value and "**nm** — pattern" in c.value for c in app.caption)
    app.selectbox(key="gen_kind").set_value("uniform").run()
    assert not any("Which fields the pruning reads" in c.value for c in app.caption)
