"""Solver and Learn-trace details a mutation probe found untested (akf-spec §7): the NPU cost per
iteration after early convergence, the stopping rule at tol = 0, iteration numbers from one, the
plan's error and the requested mode reaching the result, the trace's final-phase MACs and write-back
rows (checked against the engine), and the Solver / Learn figures showing the series they name."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.errors import InputError
from akfviz.npu.iterative import diverging_notes, run_solver

HW = akfviz.HardwareConfig(rows=4, cols=4)


@pytest.fixture(scope="module")
def stencil_plan():
    A = akfviz.generate("stencil5", n=32, seed=0)
    return akfviz.select(akfviz.analyze(A, tile=16))


@pytest.fixture(scope="module")
def lossy_plan():
    A = akfviz.generate("stencil5", n=32, seed=0)
    plan = akfviz.select(akfviz.analyze(A, tile=16), error_budget=0.1)
    assert plan.relative_error > 0.01
    return plan


def test_convergence_curves_number_iterations_from_one(stencil_plan):
    r = run_solver(stencil_plan, HW, method="jacobi", iterations=6, tol=0.0)
    assert r.curves["iteration"].tolist() == [1, 2, 3, 4, 5, 6]


def test_npu_cost_per_iteration_uses_the_requested_iterations_after_early_convergence(stencil_plan):
    # the run converges after a few iterations; the NPU is still simulated for all `iterations`
    # and the per-iteration cost is that simulation divided by `iterations` (not the run's length)
    k = 30
    r = run_solver(stencil_plan, HW, method="jacobi", iterations=k, tol=0.5)
    assert len(r.curves) < k
    for mode, pers in (("persistent", True), ("non-persistent", False)):
        s = akfviz.simulate(stencil_plan, HW, iterations=k, persistent=pers, seed=0, record=False)
        row = r.npu.loc[mode]
        assert row.cycles == s.cycles and row.cycles_per_iteration == s.cycles / k
        assert row.dram_bytes == s.dram_bytes and row.dram_bytes_per_iteration == s.dram_bytes / k


def test_solver_reports_the_lossy_plans_relative_error(lossy_plan):
    r = run_solver(lossy_plan, HW, method="jacobi", iterations=5)
    assert r.relative_error == lossy_plan.relative_error
    assert r.to_dict()["relative_error"] == lossy_plan.relative_error


@pytest.mark.parametrize("persistent", [True, False])
def test_sim_keeps_the_simulation_of_the_requested_mode(stencil_plan, persistent):
    mode = "persistent" if persistent else "non-persistent"
    r = run_solver(stencil_plan, HW, method="jacobi", iterations=5, persistent=persistent)
    assert list(r.sim) == [mode]
    assert r.sim[mode].cycles == r.npu.loc[mode, "cycles"]
    assert r.sim[mode].dram_bytes == r.npu.loc[mode, "dram_bytes"]


def test_cg_names_the_first_iteration_with_negative_curvature_one_based():
    # symmetric, positive diagonal, eigenvalues 3 and -1; b = (1, -1, ...) gives pᵀAp = -2 at iteration 1
    blk = np.array([[1.0, 2.0], [2.0, 1.0]])
    A = sp.csr_array(sp.block_diag([blk, blk, blk, blk]))
    plan = akfviz.select(akfviz.analyze(A, tile=4), error_budget=0)
    b = np.array([1.0, -1.0] * 4)
    with pytest.raises(InputError, match=r"at iteration 1 CG met"):
        run_solver(plan, akfviz.HardwareConfig(rows=2, cols=2), method="cg", b=b, iterations=5)


def test_tol_zero_runs_every_iteration_even_when_the_residual_is_exactly_zero():
    # A = 2 I: Jacobi lands on x = b / 2 exactly after one iteration; tol = 0 means "run every
    # iteration" and a residual of 0 is not below 0
    A = sp.csr_array(sp.diags_array(np.full(16, 2.0)))
    plan = akfviz.select(akfviz.analyze(A, tile=8), error_budget=0)
    r = run_solver(plan, akfviz.HardwareConfig(rows=2, cols=2), method="jacobi", tol=0.0, iterations=5)
    c = r.curves["residual_exact"].to_numpy()
    assert c.size == 5 and (c == 0).all()
    assert r.iterations_to_tol == {"exact": None, "approx": None}


def test_a_residual_climbing_exactly_tenfold_is_not_reported():
    # the note is for a climb to *over* 10× the lowest value so far
    assert diverging_notes([1.0, 10.0], "x") == []
    assert len(diverging_notes([1.0, 10.5], "x")) == 1


# --------------------------------------------------------------------------- the Learn page's trace
def _tiny_sparse_x(kernel, hw=None):
    from akfviz.npu.trace import tiny_case
    # x_density 0.1: most tiles get no event and run their final phase only
    return tiny_case(n=12, tile=4, grid=(2, 2), kernel=kernel, x_density=0.1, seed=0, hw=hw)


def test_trace_counts_the_final_phase_macs_of_tiles_without_events():
    tc = _tiny_sparse_x("LOWRANK2")
    got_event = {s.tile for s in tc.trace.steps if s.kind == "event"}
    idle = [u for u in range(tc.work.n_tiles) if u not in got_event]
    assert idle and tc.work.final_macs[idle].sum() > 0
    res = akfviz.simulate(tc.plan, tc.hw, x=tc.x, mapping=tc.mapping)
    np.testing.assert_array_equal(tc.trace.counters["macs"], res.counters["macs"])
    # every tile's final phase runs once, with or without events
    w, col0 = tc.work, tc.trace.meta["col0"]
    ev_macs = 0
    for s in tc.trace.steps:
        if s.kind == "event":
            routes = range(w.col_ptr[s.tile], w.col_ptr[s.tile + 1])
            (r,) = [r for r in routes if col0[s.tile] + w.col_local[r] == s.column]
            ev_macs += int(w.ev_macs[r])
    total = tc.trace.counters["macs"].sum() + tc.trace.counters["macs_int8"].sum()
    assert total == ev_macs + int(tc.work.final_macs.sum())


def test_writeback_counts_every_row_of_y_even_rows_that_are_zero():
    from akfviz.npu.trace import transfer_cycles
    hw = akfviz.HardwareConfig(dram_bytes_per_cycle=4)
    tc = _tiny_sparse_x("CSC", hw=hw)
    assert (tc.trace.y == 0).sum() > 0
    t = transfer_cycles(tc)
    fb = int(tc.hw.flit_bytes)
    assert t["y_bytes"] == 12 * fb
    assert t["writeback_cycles"] == -(-12 * fb // 4)
    res = akfviz.simulate(tc.plan, tc.hw, x=tc.x, mapping=tc.mapping)
    assert t["writeback_cycles"] == int(res.per_iteration.iloc[0]["writeback_cycles"])
    assert t["cycles"] == res.cycles


def test_tiny_case_x_density_rounds_to_the_nearest_count():
    from akfviz.npu.trace import tiny_case
    tc = tiny_case(n=8, tile=4, x_density=0.35, seed=0)     # 0.35 × 8 = 2.8 → 3 nonzero inputs
    assert np.count_nonzero(tc.x) == 3


def test_convergence_figure_numbers_its_default_x_axis_from_one():
    from akfviz.viz.solver import convergence
    fig = convergence({"exact A": [1.0, 0.1, 0.01]})
    assert list(fig.data[0].x) == [1, 2, 3]


def test_npu_cost_table_shows_dram_bytes_per_iteration_not_the_total():
    import pandas as pd
    from akfviz.viz.solver import npu_cost_table
    npu = pd.DataFrame({"cycles": [1000, 5000], "cycles_per_iteration": [100.0, 500.0],
                        "seconds_per_iteration": [1e-7, 5e-7], "dram_bytes": [4000, 90000],
                        "dram_bytes_per_iteration": [400.0, 9000.0], "energy_pj": [1e6, 2e6]},
                       index=["persistent", "non-persistent"])
    t = npu_cost_table(npu)
    assert t["DRAM bytes / iteration"].tolist() == [400.0, 9000.0]
    assert t["DRAM bytes"].tolist() == [4000, 90000]
    assert t["cycles / iteration"].tolist() == [100.0, 500.0]
    np.testing.assert_allclose(t["µs / iteration"], [0.1, 0.5])


def test_persistence_bars_put_dram_bytes_left_and_cycles_right():
    from akfviz.viz.solver import persistence_bars
    rows = {"persistent": {"dram_bytes_per_iter": 400.0, "cycles_per_iter": 7.0},
            "non-pers.": {"dram_bytes_per_iter": 9000.0, "cycles_per_iter": 11.0}}
    fig = persistence_bars(rows)
    dram, cyc = fig.data
    assert list(dram.y) == [400.0, 9000.0] and dram.xaxis == "x" and "DRAM" in dram.name
    assert list(cyc.y) == [7.0, 11.0] and cyc.xaxis == "x2" and "cycles" in cyc.name
    assert fig.layout.yaxis.range[1] >= 9000.0 and fig.layout.yaxis2.range[1] >= 11.0


def test_learn_timeline_draws_the_makespan_line_at_the_makespan_from_the_first_step():
    from akfviz.npu.trace import tiny_case
    from akfviz.viz.learn import learn_timeline
    tr = tiny_case(seed=1).trace
    fig = learn_timeline(tr, 1)
    (line,) = [s for s in fig.layout.shapes if s.type == "line"]
    assert line.x0 == line.x1 == tr.makespan


@pytest.mark.parametrize("kind", ["event", "final", "send", "reduce"])
def test_learn_matrix_frames_the_current_steps_tile_thick_for_every_tile_step(kind):
    # the tile a step works on is framed 5 px wide, every other tile 2 px, whatever the step's kind
    from akfviz.npu.trace import tiny_case
    from akfviz.viz.learn import learn_matrix
    # a "final" step is a tile that got no event and runs its final phase only: a sparse x and LOWRANK
    tc = _tiny_sparse_x("LOWRANK2") if kind == "final" else tiny_case(seed=1)
    tr = tc.trace
    step = next(s for s in tr.steps if s.kind == kind)
    fig = learn_matrix(tc.A_hat, tc.x, tr.tile, tc.work.bi, tc.work.bj, tr.tile_pe, step)
    frames = [s for s in fig.layout.shapes if s.line.width is not None and s.line.width > 0][:tc.work.n_tiles]
    assert [f.line.width for f in frames] == [5 if u == step.tile else 2 for u in range(tc.work.n_tiles)]
