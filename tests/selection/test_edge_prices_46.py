"""Edge tiles (fewer than T rows or columns) are priced exactly, in every cost path (akf-spec §4, §5).

The slow reference here is ``unit_costs`` of one tile at a time — the closed form the performance
table is calibrated on. Before, the table priced an edge tile as a full tile scaled by ``h·w/T²``:
LOWRANK's energy on 32×4 tiles was under-predicted by 78-80 % and every kernel's cycles by 40-80 %,
so a 5×5 matrix got LOWRANK2 (11.7 % error) and a 1×1 matrix LOWRANK1 at 1.05× DENSE's cost.
"""
import gc

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.kernels.registry import DEFAULT_CANDIDATES, get_kernel
from akfviz.npu.costmodel import unit_costs
from akfviz.npu.hardware import HardwareConfig
from akfviz.selection import perftable as ptab
from akfviz.selection.edgecost import EdgePrices, edge_prices, edge_tile_index
from akfviz.selection.explain import explain

HW = HardwareConfig()
COLS = ("energy_pj", "cycles", "bytes")


def _one_tile_costs(pa, t, name, hw=HW, rho_x=1.0):
    """(energy, cycles, bytes) of tile ``t`` alone under kernel ``name``: the slow reference."""
    work = get_kernel(name).npu_work(pa.tileset, np.array([t], dtype=np.int64))
    if work.n_tiles == 0:
        return np.zeros(3)
    uc = unit_costs(work, hw, rho_x)
    return np.array([float(uc[c].sum()) for c in COLS])


def _rect(n=70, m=45, density=0.3, seed=0):
    return sp.csr_array(sp.random_array((n, m), density=density, rng=np.random.default_rng(seed)))


@pytest.mark.parametrize("shape,T", [((70, 45), 32), ((64, 64), 32), ((5, 5), 32), ((1, 1), 8), ((64, 37), 32),
                                     ((37, 64), 32), ((100, 1), 16)])
def test_edge_tile_index_lists_the_tiles_shorter_or_narrower_than_T(shape, T):
    pa = akfviz.analyze(_rect(*shape, density=0.5), tile=T)
    ts = pa.tileset
    want = np.flatnonzero((ts.h < T) | (ts.w < T))
    got = edge_tile_index(pa)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64


@pytest.mark.parametrize("rho_x", [1.0, 0.3])
@pytest.mark.parametrize("full_pass", [False, True])
def test_edge_prices_are_each_tiles_unit_costs(rho_x, full_pass):
    """Every default kernel, all three edge shapes (32×13, 6×32, 6×13); read from the matrix before the
    analysis' full pass (cluster mode) or after it."""
    pa = akfviz.analyze(_rect(70, 45), tile=32)
    if full_pass:
        pa.tiles_as_analysed()
    assert pa.tileset.entries_ready == full_pass
    ep = EdgePrices(pa, HW, rho_x)
    assert ep.n == 4   # 32×13 twice, 6×32, 6×13
    for name in DEFAULT_CANDIDATES:
        got = ep.of(name)
        assert got.shape == (4, 3) and not got.flags.writeable
        for e, t in enumerate(ep.idx):
            np.testing.assert_allclose(got[e], _one_tile_costs(pa, int(t), name, rho_x=rho_x), rtol=1e-12,
                                       err_msg=f"{name} tile {t}")


def test_edge_prices_are_shared_per_analysis_hardware_and_rho_x_and_dropped_with_the_analysis():
    pa = akfviz.analyze(_rect(70, 45), tile=32)
    a = edge_prices(pa, HW, 1.0)
    assert edge_prices(pa, HW, 1.0) is a
    assert edge_prices(pa, HW, 0.5) is not a
    assert edge_prices(pa, HW.replace(mac_lanes=HW.mac_lanes * 2), 1.0) is not a
    import weakref

    from akfviz.selection import edgecost

    ref = weakref.ref(pa)
    assert pa in edgecost._MEMO
    del pa, a
    gc.collect()
    assert ref() is None   # the memo does not keep the analysis alive


@pytest.mark.parametrize("resource", ["energy", "cycles", "bytes"])
@pytest.mark.parametrize("granularity", ["tile", "cluster"])
def test_a_matrix_smaller_than_a_tile_is_priced_by_the_closed_form(resource, granularity):
    """5×5 at T = 32: the one tile is an edge tile, so the report's R is the closed form of every
    candidate and the plan's resource the chosen one's; R_dense is DENSE's closed form."""
    A = akfviz.generate("uniform", n=5, density=0.6, seed=0)
    pa = akfviz.analyze(A, tile=32)
    plan = akfviz.select(pa, resource=resource, granularity=granularity)
    rep = plan.selection
    m = COLS.index({"energy": "energy_pj", "cycles": "cycles", "bytes": "bytes"}[resource])
    want = np.array([_one_tile_costs(pa, 0, k)[m] for k in rep.candidates])
    np.testing.assert_allclose(rep.R[0], want, rtol=1e-12)
    assert plan.resource == pytest.approx(want[rep.chosen[0]], rel=1e-12)
    assert rep.R_dense == pytest.approx(_one_tile_costs(pa, 0, "DENSE")[m], rel=1e-12)


def test_tiny_matrices_no_longer_get_a_low_rank_kernel_dearer_than_dense():
    """The probe's cases: a 1×1 matrix got LOWRANK1 at 1.046× DENSE's energy, a 5×5 one LOWRANK2 with
    11.7 % error. Now the chosen kernel is the cheapest by the closed form at equal error, and not
    dearer than DENSE."""
    one = akfviz.analyze(sp.csr_array(np.array([[0.7]])), tile=32)
    plan = akfviz.select(one)
    k = str(plan.tile_kernels[0])
    exact = {n: _one_tile_costs(one, 0, n)[0] for n in plan.selection.candidates}
    assert exact[k] <= exact["DENSE"]
    assert not k.startswith("LOWRANK")
    assert plan.selection.resource_share <= 1.0
    five = akfviz.analyze(akfviz.generate("uniform", n=5, density=0.6, seed=0), tile=32)
    plan5 = akfviz.select(five)
    assert not str(plan5.tile_kernels[0]).startswith("LOWRANK")
    assert plan5.relative_error < 0.02


def test_prediction_error_of_edge_tiles_is_zero_and_of_full_tiles_unchanged():
    # 5×5: every tile is an edge tile, priced exactly; 64×64: no edge tile, the table as before
    five = akfviz.analyze(akfviz.generate("uniform", n=5, density=0.6, seed=0), tile=32)
    pe = ptab.prediction_error(five, HW, kernels=["LOWRANK2", "CSC", "DENSE"])
    assert len(pe) and np.all(pe["max_rel"] == 0.0) and np.all(pe["total_rel"] == 0.0)
    full = akfviz.analyze(akfviz.generate("uniform", n=64, density=0.6, seed=0), tile=32)
    pe = ptab.prediction_error(full, HW, kernels=["CSC"])
    assert (pe["max_rel"] > 0).any()   # the polynomials are fits, not the closed form


def test_cluster_mode_member_sums_and_explanations_use_the_exact_edge_prices():
    pa = akfviz.analyze(_rect(70, 45, density=0.3), tile=32)
    plan = akfviz.select(pa, granularity="cluster", resource="energy")
    rep = plan.selection
    ts = pa.tileset
    edge = np.flatnonzero((ts.h < 32) | (ts.w < 32))
    for t in edge:
        row = explain(plan, tile=int(t)).set_index("kernel")
        for name in rep.candidates:
            assert row.loc[name, "R"] == pytest.approx(_one_tile_costs(pa, int(t), name)[0], rel=1e-12)
    # the plan's resource: the table's full tiles plus the chosen kernels' exact edge prices
    full = np.flatnonzero((ts.h == 32) & (ts.w == 32))
    tab = rep.table
    from akfviz.selection.structure import classify_tiles

    tiles = pa.tiles_as_analysed()
    cls = classify_tiles(tiles)
    dens = tiles["density"].to_numpy(float)
    want = 0.0
    for t in full:
        want += tab.evaluate([str(plan.tile_kernels[t])], cls[[t]], dens[[t]], measure="energy")[0, 0]
    for t in edge:
        want += _one_tile_costs(pa, int(t), str(plan.tile_kernels[t]))[0]
    assert plan.resource == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("shape", [(33, 33), (70, 45), (5, 3)])
def test_all_dense_plan_still_has_share_one_with_exact_edges(shape):
    pa = akfviz.analyze(sp.csr_array(np.ones(shape)), tile=32)
    for resource in ("energy", "cycles", "bytes", "mix"):
        plan = akfviz.select(pa, kernels=["DENSE"], resource=resource, fusion=False)
        assert plan.selection.resource_share == pytest.approx(1.0, rel=1e-12)
