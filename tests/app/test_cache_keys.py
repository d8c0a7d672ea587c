"""The app's result caches (akfviz/app_cache.py) against a stale result: each cached function is
keyed by a content key plus the arguments Streamlit hashes (a leading underscore means "not
hashed"). Calling it twice with one setting changed must give that setting's result, not the
first call's. (A mutation probe renamed single arguments to ``_name``: nothing failed.)"""
import numpy as np
import pytest

import akfviz
from akfviz import app_cache as C
from akfviz import app_state as S
from akfviz.npu.simulate import random_input

HW = akfviz.HardwareConfig(rows=8, cols=8)


@pytest.fixture(scope="module")
def case():
    A = akfviz.generate("stencil5", n=16, seed=0)
    pa = C.analyze_cached(S.matrix_digest(A), A, 16, (32, 8, 8, 0))
    # two plans of one analysis: β = 1 picks QUANT8, β = 0 (error only) DIA
    p1 = C.select_cached("case", pa, 1.0, 1.0, None, "cluster", "hw8", HW)
    p2 = C.select_cached("case", pa, 1.0, 0.0, None, "cluster", "hw8", HW)
    assert p1.resource != p2.resource
    return A, pa, p1, p2


def test_simulation_cache_keeps_fused_and_unfused_apart(case):
    _, _, p1, _ = case
    x = random_input(p1.shape[1], 1.0, 0)
    fused = C.simulate_cached("p1", p1, "hw8", HW, "x", x, fused=True)
    unfused = C.simulate_cached("p1", p1, "hw8", HW, "x", x, fused=False)
    assert fused.meta["fused"] is True and unfused.meta["fused"] is False
    for fz in (True, False):
        runs = [C.simulate_cached("p1", p1, "hw8", HW, "x", x, fused=fz, iterations=3, persistent=p)
                for p in (True, False)]
        assert [r.meta["persistent"] for r in runs] == [True, False]
        assert runs[0].dram_bytes < runs[1].dram_bytes      # persistent: payloads stay on chip


def test_performance_table_cache_follows_the_tile_side():
    assert [C.perftable_cached("hw8", HW, t).tile for t in (16, 32, 16)] == [16, 32, 16]


def test_pareto_cache_follows_the_resource_measure(case):
    _, pa, _, _ = case
    got = [C.pareto_cached("case", pa, "hw8", HW, m, "cluster").measure for m in ("energy", "cycles", "bytes")]
    assert got == ["energy", "cycles", "bytes"]


def test_prediction_error_cache_follows_rho_x(case):
    _, pa, _, _ = case
    dense_x = C.prediction_error_cached("case", pa, "hw8", HW, 1.0)
    sparse_x = C.prediction_error_cached("case", pa, "hw8", HW, 0.3)
    assert not dense_x.equals(sparse_x)


def test_solver_cache_follows_the_iterations(case):
    _, _, p1, _ = case
    assert [len(C.solver_cached("p1", p1, "hw8", HW, "jacobi", k).curves) for k in (5, 7)] == [5, 7]


def test_compare_rows_follow_the_plan_and_use_the_documented_x(case):
    A, pa, p1, p2 = case
    rho = 0.5
    t1 = C.compare_cached("case", "p1", "hw8", HW, "CSC", rho, pa, p1)
    t2 = C.compare_cached("case", "p2", "hw8", HW, "CSC", rho, pa, p2)
    # x of density ρ_x drawn with seed 0, as the docstring says (and the Compare page tells)
    for plan, table in ((p1, t1), (p2, t2)):
        want = akfviz.simulate(plan, HW, x=random_input(A.shape[1], rho, 0), record=False).cycles
        assert table.loc["AKF", "cycles"] == want
    assert t1.loc["AKF", "cycles"] != t2.loc["AKF", "cycles"]
    other_x = akfviz.simulate(p1, HW, x=random_input(A.shape[1], rho, 1), record=False).cycles
    assert other_x != t1.loc["AKF", "cycles"]        # the seed matters for this case
