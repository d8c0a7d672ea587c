"""The Solver's convergence caption says what its curves do (student probe): it said "the lossy plan's
curve flattens where its approximation error stops further progress" on the default run, where
both curves still fall together (30 Jacobi iterations, 0.103 and 0.107)."""
import numpy as np

from akfviz.viz import solver as vs
from apptest_tree import ok, open_page


def test_curves_falling_together_are_said_to():
    e = np.geomspace(0.5, 0.1, 30)
    text = vs.convergence_note(e, e * 1.04)
    assert text.startswith("Here the two curves still fall together (at iteration 30: exact 0.1, lossy 0.104)")


def test_a_lossy_curve_held_above_is_said_to_be():
    e = np.geomspace(0.5, 0.03, 200)
    a = np.maximum(np.geomspace(0.5, 0.03, 200), 0.05)
    text = vs.convergence_note(e, a)
    assert "ends above the exact one: at iteration 200 0.05 against 0.03 (1.67×)" in text


def test_a_lossy_curve_that_grows_again_is_said_to():
    e = np.geomspace(0.5, 0.08, 30)
    a = np.concatenate([np.geomspace(0.5, 0.1, 15), np.geomspace(0.12, 2.0, 15)])
    text = vs.convergence_note(e, a, iterations=np.arange(1, 31))
    assert "grows again: lowest 0.1 at iteration 15, 2 at iteration 30" in text


def test_nan_tail_reads_the_last_finite_iteration():
    e = np.array([0.5, 0.1, 1e-3, np.nan])
    a = np.array([0.5, 0.2, 0.1, 0.1])
    assert "at iteration 3 0.1 against 0.001" in vs.convergence_note(e, a)


def test_the_default_solver_page_says_its_curves_fall_together(app):
    at = open_page(app, "pages/6_Solver.py")
    ok(at)
    said = " ".join(c.value for c in at.caption)
    assert "still fall together (at iteration 30" in said
    assert "curve flattens where" not in said
    at.slider(key="w:iters").set_value(200).run()
    ok(at)
    said = " ".join(c.value for c in at.caption)
    assert "ends above the exact one: at iteration 200" in said


def test_a_climb_that_came_back_down_is_said_too():
    # CG on the default plan over 200 iterations: 0.131 → 9.44, then back to 0.102 (student re-probe)
    e = np.geomspace(0.5, 1e-8, 200)
    a = np.concatenate([np.geomspace(0.5, 0.131, 50), np.geomspace(0.2, 9.44, 20), np.geomspace(5, 0.102, 130)])
    text = vs.convergence_note(e, a)
    assert "ends above the exact one: at iteration 200 0.102" in text
    assert "climbed from 0.131 (iteration 50) to 9.44 (iteration 70) before falling again" in text


def test_cycles_per_iteration_says_it_is_an_average_that_falls(app):
    import akfviz
    from akfviz.workloads.samples import load_sample
    # the claim the help makes, on the Solver's default operator and plan: the first iteration is the
    # longest, so the average over more iterations is lower
    pa = akfviz.analyze(load_sample("stencil5_64x64"), tile=32)
    plan = akfviz.select(pa, error_budget=0.02)
    c = [akfviz.simulate(plan, akfviz.HardwareConfig(), iterations=k, persistent=True, record=False).cycles
         for k in (1, 2, 3)]
    assert c[0] > c[1] - c[0] == c[2] - c[1]
    at = open_page(app, "pages/6_Solver.py")
    ok(at)
    [m] = [m for m in at.metric if m.label == "persistent: cycles / iteration"]
    assert "falls a little as the iterations grow" in m.proto.help
