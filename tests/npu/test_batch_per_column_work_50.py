"""A batch's per-output-column work (fiftieth session, a spec audit): for k input columns the final
phase and the partial-sum trains are done k times (docs/model.md, Batches). Before, they were counted
once whatever k: an all-LOWRANK2 plan at k = 8 reported 44 % fewer MACs than the kernels imply."""
import numpy as np
import pytest

import akfviz
from akfviz.npu.simulate import random_input


@pytest.fixture(scope="module")
def lowrank_plan():
    A = akfviz.generate("uniform", n=96, density=0.3, seed=11)
    plan = akfviz.select(akfviz.analyze(A, tile=32), kernels=["LOWRANK2", "CSC"], granularity="tile",
                         alpha=1, beta=10)
    work = plan.npu_work()
    assert set(plan.tile_kernels) == {"LOWRANK2"} and int(work.final_macs.sum()) > 0
    return plan, work


@pytest.mark.parametrize("k", [1, 2, 3, 8])
def test_counts_are_those_the_kernels_imply_for_k_columns(lowrank_plan, k):
    plan, work = lowrank_plan
    X = random_input(96, 0.7, seed=4, batch=k)
    r = akfviz.simulate(plan, x=X, mapping="greedy", seed=3)
    # slow reference of the counts: per routed column, its nonzero X[j, b]; per tile, k outputs
    nz = (X.reshape(96, -1) != 0).sum(axis=1)
    j = np.repeat(work.bj * 32, np.diff(work.col_ptr)) + work.col_local
    assert r.total("events") == int(nz[j].sum())
    assert r.macs == int((work.ev_macs * nz[j]).sum()) + k * int(work.final_macs.sum())
    assert r.total("reduce_adds") == k * int(work.out_rows.sum())
    assert r.total("sram_bytes") == int((work.ev_sram_bytes * nz[j]).sum()) + k * int(work.final_sram_bytes.sum())


def test_k_identical_columns_cost_at_least_k_times_the_reduction_of_one(lowrank_plan):
    plan, work = lowrank_plan
    x = random_input(96, 1.0, seed=5)
    one = akfviz.simulate(plan, x=x, mapping="greedy", seed=3)
    four = akfviz.simulate(plan, x=np.repeat(x[:, None], 4, axis=1), mapping="greedy", seed=3)
    assert four.total("reduce_adds") == 4 * one.total("reduce_adds")
    assert four.macs == 4 * one.macs and four.total("events") == 4 * one.total("events")
    assert four.cycles > one.cycles
    e1, e4 = one.energy_pj, four.energy_pj
    assert e4["compute"] == pytest.approx(4 * e1["compute"], rel=1e-12)
