"""What the pages used to compute themselves, now library functions the pages call: the CPU check and
timing (Kernels, Compare), fusion weights and table fits (Kernels), busy rows and timeline labels and the
hardware form (NPU), the sweep field (Design space); and warm_up no longer hides errors."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import akfviz
from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.execute.cpu import matvec_check, median_seconds, time_matvec
from akfviz.npu.hardware import HardwareConfig
from akfviz.viz import kernels as vk
from akfviz.viz import npu as vn


@pytest.fixture(scope="module")
def small():
    A = akfviz.generate("clustered", n=256, seed=1)
    plan = akfviz.select(akfviz.analyze(A, tile=32))
    return A, plan


# --------------------------------------------------------------------------- CPU check and timing
def test_matvec_check_is_the_plans_output_error_and_scipys_approximation(small):
    A, plan = small
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    chk = matvec_check(plan, x, A)
    y, y_hat, y_exact = plan.matvec(x), plan.approx_matrix() @ x, A @ x
    assert chk["output_error"] == plan.output_error(x)
    assert chk["output_error"] == pytest.approx(np.linalg.norm(y - y_exact) / np.linalg.norm(y_exact))
    assert chk["vs_approx"] == pytest.approx(np.linalg.norm(y - y_hat) / np.linalg.norm(y_hat))
    assert chk["vs_approx"] < 1e-12
    assert chk["max_abs"] == pytest.approx(np.max(np.abs(y - y_exact)))
    assert matvec_check(plan, x) == chk            # the plan's own matrix by default


def test_time_matvec_reports_both_medians_and_nothing_else(small):
    """Only the timing is redone on every rerun of the Compare page; building Â for the accuracy
    check is cached per plan (cpu_check_cached)."""
    A, plan = small
    x = np.ones(A.shape[1])
    out = time_matvec(plan, x, 3, A)
    assert set(out) == {"plan_ms", "scipy_ms", "repeats"}
    assert out["repeats"] == 3 and out["plan_ms"] > 0 and out["scipy_ms"] > 0


def test_median_seconds_takes_the_median_and_refuses_no_repeats():
    calls = []
    assert median_seconds(lambda: calls.append(1), 5) >= 0 and len(calls) == 5
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="repeats"):
            median_seconds(lambda: None, bad)


def test_cpu_check_cached_is_matvec_check_on_the_seeded_vector(small):
    A, plan = small
    S.cpu_check_cached.clear()
    got = S.cpu_check_cached("k", plan, A)
    assert got == matvec_check(plan, np.random.default_rng(0).standard_normal(A.shape[1]), A)


# --------------------------------------------------------------------------- Kernels page
def test_top_fusion_weights_are_the_heaviest_at_the_last_step():
    rng = np.random.default_rng(3)
    w = rng.random((5, 4, 8))                       # steps, units, kernels
    rep = SimpleNamespace(fusion=SimpleNamespace(weights_trajectory=w), candidates=list("ABCDEFGH"))
    got = vk.top_fusion_weights(rep, 5)
    mean = w.mean(axis=1)
    order = np.argsort(mean[-1])[::-1][:6]
    assert list(got) == [rep.candidates[k] for k in order]
    for k in order:
        np.testing.assert_array_equal(got[rep.candidates[k]], mean[:, k])
    assert list(vk.top_fusion_weights(rep, 5, top=2)) == [rep.candidates[k] for k in order[:2]]
    assert vk.top_fusion_weights(rep, 4) is None                       # steps that are not the cost's
    assert vk.top_fusion_weights(SimpleNamespace(fusion=None, candidates=[]), 5) is None
    empty = SimpleNamespace(fusion=SimpleNamespace(weights_trajectory=np.zeros((0, 1, 2))), candidates=["A", "B"])
    assert vk.top_fusion_weights(empty, 0) is None


def test_perftable_curves_sample_each_classs_domain_on_a_log_grid():
    cal = pd.DataFrame({"kernel": ["CSC", "CSC", "CSC", "DIA"], "class": ["a", "a", "b", "a"],
                        "density": [0.1, 0.2, 0.5, 0.3], "energy": [1.0, 2.0, 3.0, 4.0]})
    table = SimpleNamespace(calibration=cal, classes=["a", "b", "c"], domain=[(0.01, 1.0), (0.0, 0.5), (0.1, 0.2)],
                            predict=lambda k, c, grid, measure: np.full(grid.size, len(c) + len(measure), float))
    curves = vk.perftable_curves(table, "CSC", "energy", n_points=7)
    assert [c["label"] for c in curves] == ["CSC · a", "CSC · b"]   # class c has no calibration point
    np.testing.assert_allclose(curves[0]["grid"], np.logspace(-2, 0, 7))
    np.testing.assert_allclose(curves[1]["grid"], np.logspace(-6, np.log10(0.5), 7))  # lo = 0: from 1e-6
    assert curves[0]["measured"].tolist() == [1.0, 2.0] and curves[1]["density"].tolist() == [0.5]
    assert curves[0]["fit"].tolist() == [7.0] * 7
    assert vk.perftable_fits(curves).data                                   # what the page draws


# --------------------------------------------------------------------------- NPU page
@pytest.fixture(scope="module")
def sim(small):
    _, plan = small
    hw = HardwareConfig(rows=4, cols=4)
    return hw, akfviz.simulate(plan, hw)


def test_busy_rows_and_the_default_row(sim):
    hw, res = sim
    rows, default = vn.busy_rows(res.counters["busy"], hw.rows, hw.cols)
    grid = res.counters["busy"].reshape(hw.rows, hw.cols)
    assert rows.tolist() == [r for r in range(hw.rows) if grid[r].sum() > 0]
    assert grid[default].max() == grid.max()
    busy = np.zeros(6)
    busy[4] = 3.0                                    # PE (2, 0) of a 3 × 2 grid
    assert [r.tolist() if isinstance(r, np.ndarray) else r for r in vn.busy_rows(busy, 3, 2)] == [[2], 2]


def test_row_intervals_label_the_pes_and_the_phases(sim):
    hw, res = sim
    row = vn.busy_rows(res.counters["busy"], hw.rows, hw.cols)[1]
    tl = vn.row_intervals(res, row, hw.cols)
    raw = res.timeline(pes=[p for p in range(row * hw.cols, (row + 1) * hw.cols) if res.counters["busy"][p] > 0])
    assert len(tl) == len(raw) and set(tl["pe"]) == {f"PE {p // hw.cols},{p % hw.cols}" for p in raw["pe"]}
    assert (tl["kernel"][raw["kind"] == "setup"] == "setup").all()
    compute = ~raw["kind"].isin(["setup", "reduce"])
    assert (tl["kernel"][compute] == raw["kernel"][compute]).all()
    assert vn.row_intervals(res, row, hw.cols, max_pes=1)["pe"].nunique() == 1
    idle = [r for r in range(hw.rows) if res.counters["busy"][r * hw.cols:(r + 1) * hw.cols].sum() == 0]
    if idle:
        assert vn.row_intervals(res, idle[0], hw.cols) is None
    assert vn.pe_timeline(tl, makespan=res.cycles).data


def _hardware_form_script():
    import streamlit as st

    from akfviz import app_state as S
    from akfviz.errors import InputError

    S.init_session()
    hw, _ = S.hardware()
    S.set_hardware(hw, rows=16, cols=8, sram_bytes_per_pe=8192, clock_hz=5e8, dram_bytes_per_cycle=32)
    st.session_state["stored"] = {k: st.session_state[k] for k in S.HW_OVERRIDES}
    st.session_state["changes"] = S.hardware_changes()
    for bad in ({"rows": 0}, {"mac_lanes": 4}):
        try:
            S.set_hardware(hw, **bad)
        except InputError as exc:
            st.session_state.setdefault("refused", []).append(str(exc))
    st.session_state["after_refusal"] = S.get("hw_rows")


def test_the_hardware_form_is_stored_through_hw_overrides():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_hardware_form_script, default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    stored = at.session_state["stored"]
    assert stored == {"hw_rows": 16, "hw_cols": 8, "hw_sram": 8192, "hw_clock": 5e8, "hw_bw": 32}
    assert type(stored["hw_rows"]) is int and type(stored["hw_clock"]) is float
    assert at.session_state["changes"] == ["16×8 PEs", "8,192 B SRAM per PE", "500 MHz", "32 DRAM B/cycle"]
    refused = at.session_state["refused"]
    assert len(refused) == 2 and "mac_lanes" in refused[1]
    assert at.session_state["after_refusal"] == 16          # a refused form stores nothing


def test_hardware_change_formats_cover_every_override_but_the_grid():
    assert set(S.HW_CHANGE_FORMATS) == set(S.HW_OVERRIDES) - {"hw_rows", "hw_cols"}


# --------------------------------------------------------------------------- Design space page
def test_sweep_grid_parses_checks_the_apps_grid_limit_and_expands():
    grid, points = S.sweep_grid("tile=16,32;beta=0.1,1", 60)
    assert grid == {"tile": [16, 32], "beta": [0.1, 1.0]} and len(points) == 4
    for spec, words in (("tile=16;tile=32", "'tile' is given twice"), ("rows=4096", "goes up to 1024"),
                        ("tile=8,16,32;beta=1,2,3", "more than the limit of 5"), ("tile", "name=value1")):
        with pytest.raises(InputError, match=words):
            S.sweep_grid(spec, 5)


def test_design_space_refuses_a_parameter_given_twice(app):
    """The page let beta=1;beta=100 silently become beta=100 (and ran that sweep)."""
    app.query_params["sweep"] = "beta=1;beta=100"
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    assert not app.exception
    assert any("'beta' is given twice" in e.value for e in app.error)
    assert not app.get("plotly_chart")


def test_design_space_cannot_run_a_grid_it_refused(app):
    """After refusing rows=4096 the Run button stayed enabled and ran the refused grid."""
    app.query_params["sweep"] = "rows=4096;cols=4096"
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    assert any("goes up to 1024 in the app" in e.value for e in app.error)
    assert next(b for b in app.button if b.label == "Run sweep").disabled


# --------------------------------------------------------------------------- warm_up
def test_warm_up_lets_an_error_of_a_stage_through(monkeypatch):
    """warm_up swallowed ImportError and AttributeError, so a missing function looked like nothing to do."""
    def broken(*args, **kwargs):
        raise AttributeError("simulate is broken")

    monkeypatch.setattr(akfviz, "simulate", broken)
    S.warm_up.clear()
    try:
        with pytest.raises(AttributeError, match="simulate is broken"):
            S.warm_up()
    finally:
        S.warm_up.clear()


def test_npu_page_applies_its_hardware_form(app):
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    assert not app.exception
    inputs = {n.label: n for n in app.number_input}
    inputs["PE rows"].set_value(16)
    inputs["Clock (MHz)"].set_value(500.0)
    next(b for b in app.button if b.label == "Apply").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.session_state["hw_rows"] == 16 and app.session_state["hw_clock"] == 5e8
    q = dict(app.query_params)
    assert q["hw_rows"] in ("16", ["16"])
    assert any("16×" in c.value and "500 MHz" in c.value for c in app.caption), [c.value for c in app.caption][:5]
