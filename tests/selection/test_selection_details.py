"""Selector details a mutation probe found untested (akf-spec §4, §5): the structure-class thresholds at
their boundaries, the Dense normaliser's cache, edge-tile scaling on rectangular matrices, tie-breaks
of equal costs, the SRAM capacity check in cluster mode, the reported cluster/tile cost gap, and the
annealing schedule of the fusion weights. Each expected value is worked out by hand or from the
report's own matrices, not from the code under test."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.kernels.registry import get_kernel
from akfviz.npu.hardware import HardwareConfig
from akfviz.selection import perftable as ptab
from akfviz.selection.fusion_weights import optimize_fusion_weights
from akfviz.selection.selector import GAP_MAX_TILES, compare_granularity, plan_cost, select
from akfviz.selection.structure import CLASS_NAMES, classify_tiles

HW = HardwareConfig()


def _class_of_single_tile(T, rows, cols):
    """The structure class name the selector gives a matrix of one T×T tile with these nonzeros."""
    A = sp.csr_array((np.ones(len(rows)), (np.asarray(rows), np.asarray(cols))), shape=(T, T))
    pa = akfviz.analyze(A, tile=T)
    assert pa.n_tiles == 1
    return CLASS_NAMES[int(classify_tiles(pa.tiles_as_analysed())[0])]


def test_diagonal_class_needs_sixty_percent_fill_of_its_diagonals():
    # one diagonal of a 32×32 tile: the rule is nnz ≥ 0.6 · 1 · 32 = 19.2, so 20 entries are a
    # diagonal tile and 19 are not (5 sparse 4×4 cells: random)
    T = 32
    assert _class_of_single_tile(T, np.arange(20), np.arange(20)) == "diagonal"
    assert _class_of_single_tile(T, np.arange(19), np.arange(19)) != "diagonal"
    # the same at T = 8: 5 of 8 (0.625) is diagonal, 4 of 8 (0.5) is not
    assert _class_of_single_tile(8, np.arange(5), np.arange(5)) == "diagonal"
    assert _class_of_single_tile(8, np.arange(4), np.arange(4)) != "diagonal"


def test_diagonal_class_allows_exactly_three_quarters_of_the_diagonals():
    # an 8×8 tile with the 6 full diagonals at offsets 0, ±1, ±2, +3: 39 nonzeros, n_diagonals = 6 =
    # 0.75 · 8 (allowed, ≤) and 39 ≥ 0.6 · 6 · 8 = 28.8, so it is diagonal; adding the full offset −3
    # (7 diagonals > 6) makes it not diagonal
    def band(offsets):
        r = np.concatenate([np.arange(max(0, -o), min(8, 8 - o)) for o in offsets])
        c = np.concatenate([np.arange(max(0, -o), min(8, 8 - o)) + o for o in offsets])
        return r, c

    assert _class_of_single_tile(8, *band([0, 1, -1, 2, -2, 3])) == "diagonal"
    assert _class_of_single_tile(8, *band([0, 1, -1, 2, -2, 3, -3])) != "diagonal"


def test_dense_resource_cache_keeps_rho_x_apart():
    # Dense's cost depends on the input density (fewer columns fire): asking for rho_x = 0.5 after
    # rho_x = 1 on the same shape must not return the cached rho_x = 1 value
    shape, T = (96, 96), 32
    full = ptab.dense_resource(shape, T, HW, rho_x=1.0)
    half = ptab.dense_resource(shape, T, HW, rho_x=0.5)
    want = ptab._dense_resource(96, 96, T, ptab.performance_table(HW, T, rho_x=0.5), HW, 0.5)
    assert half == pytest.approx(want, rel=1e-12)
    assert half["energy"] < full["energy"]


@pytest.mark.parametrize("resource", ["energy", "cycles", "bytes"])
def test_rectangular_edge_tiles_are_priced_exactly_in_tile_mode(resource):
    # 70×40 at T = 32: the right block column holds 32×8 tiles and the bottom row 6×32 and 6×8 ones.
    # The report's R of a full tile is the table's; of an edge tile its own unit_costs, priced here one
    # tile at a time (the table scaled by h·w/T² under-predicted LOWRANK there by 78-80 %); the plan's
    # resource is the sum of the chosen R
    from akfviz.npu.costmodel import unit_costs

    rng = np.random.default_rng(0)
    A = sp.random_array((70, 40), density=0.2, rng=rng, format="csr")
    pa = akfviz.analyze(A, tile=32)
    tiles = pa.tiles_as_analysed()
    assert (tiles["w"] == 8).any() and (tiles["h"] == 6).any()
    plan = select(pa, granularity="tile", fusion=False, resource=resource)
    rep = plan.selection
    u = rep.units
    h, w = tiles["h"].to_numpy()[u], tiles["w"].to_numpy()[u]
    full = (h == 32) & (w == 32)
    assert full.any() and (~full).any()
    want = rep.table.evaluate(rep.candidates, classify_tiles(tiles)[u], tiles["density"].to_numpy(float)[u],
                              measure=resource)
    col = {"energy": "energy_pj", "cycles": "cycles", "bytes": "bytes"}[resource]
    for i in np.flatnonzero(~full):
        for j, name in enumerate(rep.candidates):
            work = get_kernel(name).npu_work(pa.tileset, np.array([u[i]]))
            want[i, j] = float(unit_costs(work, HW)[col].sum()) if work.n_tiles else 0.0
    np.testing.assert_allclose(rep.R, want, rtol=1e-9)
    assert plan.resource == pytest.approx(rep.R[np.arange(u.size), rep.chosen].sum(), rel=1e-9)


@pytest.mark.parametrize("granularity", ["tile", "cluster"])
def test_resource_only_weights_break_equal_resource_ties_by_the_lower_error(granularity):
    # with alpha = 0 the cost is the cycles share alone, and QUANT8 and CSC cost the same cycles on
    # these tiles (the table prices both by the nonzeros streamed): the tie goes to the lower error,
    # CSC, even though QUANT8 is listed first
    A = akfviz.generate("uniform", n=128, density=0.05, seed=0)
    pa = akfviz.analyze(A, tile=32)
    plan = select(pa, alpha=0.0, beta=1.0, resource="cycles", kernels=["QUANT8", "CSC"],
                  granularity=granularity, fusion=False)
    rep = plan.selection
    tied = rep.R[:, 0] == rep.R[:, 1]
    assert tied.any()
    assert np.all(rep.chosen[tied] == 1)
    if tied.all():
        assert plan.relative_error == 0.0


def test_resource_budget_with_room_takes_the_cheapest_least_error_plan():
    # a budget of the whole Dense resource: the least-error plans (error 0) are DENSE and CSC
    # everywhere; within the least error the resource decides, so the plan is CSC, never DENSE
    A = akfviz.generate("uniform", n=128, density=0.05, seed=0)
    pa = akfviz.analyze(A, tile=32)
    plan = select(pa, resource_budget=1.0, kernels=["DENSE", "CSC", "SKIP"], granularity="tile")
    assert plan.relative_error == 0.0
    assert set(plan.tile_kernels) == {"CSC"}
    assert plan.selection.resource_share < 0.5


def test_cluster_mode_counts_every_member_against_the_sram():
    # banded 512×512 at T = 32: 46 tiles in 3 clusters. On a 1×1 chip of 4096 B the argmin plan needs
    # the bytes of every member (≈ 19.9 kB) and so does the smallest plan no less accurate; one tile
    # per cluster (≈ 1.3 kB) would fit. The capacity cannot be met without accuracy: the penalty is off
    A = akfviz.generate("banded", n=512, seed=0)
    pa = akfviz.analyze(A, tile=32)
    hw = HW.replace(rows=1, cols=1, sram_bytes_per_pe=4096)
    rep = select(pa, hw=hw, fusion=False).selection
    u = np.arange(rep.units.size)
    assert rep.unit_size.max() > 1
    e_arg = rep.E[u, rep.argmin][:, None]
    allowed = rep.E <= e_arg + 1e-12 * np.maximum(np.abs(e_arg), 1e-300)
    floor = float((rep.unit_size * np.where(allowed, rep.sram_bytes, np.inf).min(axis=1)).sum())
    per_rep = float(rep.sram_bytes[u, rep.argmin].sum())
    assert per_rep < 4096 < floor                      # the case this test is about
    plan = select(pa, hw=hw)
    assert any("so meeting it would cost accuracy" in n for n in plan.selection.notes)
    np.testing.assert_array_equal(plan.selection.chosen, plan.selection.argmin)


@pytest.mark.parametrize("resource", ["energy", "cycles", "mix"])
def test_cost_gap_reports_the_tile_plans_cost_and_differences(resource):
    A = akfviz.generate("uniform", n=128, density=0.05, seed=0)
    pa = akfviz.analyze(A, tile=32)
    cl = select(pa, fusion=False, cost_gap=True, resource=resource)
    tl = select(pa, granularity="tile", fusion=False, resource=resource)
    gap = cl.selection.cost_gap
    rep = tl.selection
    # the cost by hand: error share + resource share of the measure's Dense
    dense = 1.0 if resource == "mix" else rep.R_dense_by_measure[resource]
    hand = float(np.sum(tl.tile_errors)) / rep.fro2 + float(tl.resource) / dense
    assert plan_cost(tl) == pytest.approx(hand, rel=1e-9)
    assert gap["tile_cost"] == pytest.approx(hand, rel=1e-9)
    assert gap["cluster_cost"] == pytest.approx(plan_cost(cl), rel=1e-12)
    assert gap["gap"] == pytest.approx((gap["cluster_cost"] - hand) / hand, rel=1e-9, abs=1e-15)
    differing = int(np.count_nonzero(np.asarray(cl.tile_kernels, dtype=object)
                                     != np.asarray(tl.tile_kernels, dtype=object)))
    assert gap["tiles_differing"] == differing
    df = compare_granularity(pa, resource=resource)
    assert df.loc["tile", "cost"] == pytest.approx(hand, rel=1e-9)


def test_cost_gap_reports_a_positive_gap_relative_to_the_tile_cost():
    # a matrix where cluster mode costs more than tile mode: the gap is (cluster − tile) / tile
    A = akfviz.generate("banded", n=512, seed=0)
    B = sp.csr_array(sp.diags_array(np.logspace(0, 3, 512)) @ A)
    pa = akfviz.analyze(B, tile=32)
    gap = select(pa, fusion=False, cost_gap=True).selection.cost_gap
    assert gap["cluster_cost"] > gap["tile_cost"] > 0
    assert gap["gap"] == pytest.approx((gap["cluster_cost"] - gap["tile_cost"]) / gap["tile_cost"], rel=1e-12)
    assert gap["tiles_differing"] > 0


def test_cost_gap_is_automatic_up_to_exactly_gap_max_tiles():
    n = 32 * int(np.sqrt(GAP_MAX_TILES))                 # a 16 × 16 grid of nonempty tiles
    A = akfviz.generate("uniform", n=n, density=0.05, seed=0)
    pa = akfviz.analyze(A, tile=32)
    assert pa.n_tiles == GAP_MAX_TILES
    assert select(pa, fusion=False).selection.cost_gap is not None


def test_fusion_temperature_is_zero_for_the_last_quarter_of_the_steps():
    # 120 steps: the temperature anneals over the first 90 and is exactly 0 from step 90 on, so the
    # weights end one-hot (akf-spec §5)
    rng = np.random.default_rng(1)
    C = rng.uniform(0, 1, (10, 4))
    res = optimize_fusion_weights(C, np.ones(10), np.ones((10, 4)), 1e9, steps=120, record_every=2)
    traj = res.trajectory
    assert (traj.loc[traj["step"] >= 90, "temperature"] == 0.0).all()
    assert (traj.loc[traj["step"] < 90, "temperature"] > 0.0).all()
    assert traj["temperature"].is_monotonic_decreasing
    np.testing.assert_array_equal(res.choice, np.argmin(C, axis=1))
