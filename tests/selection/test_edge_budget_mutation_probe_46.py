"""Gaps found by mutation testing of the exact edge prices and the exact small-budget step (akf-spec §4, §5).

The slow references: ``unit_costs`` of one tile at a time for an edge tile (fewer than T rows or
columns), the performance table at scale 1 for a full tile, and brute force over every plan of a
small budget problem."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.kernels.registry import get_kernel
from akfviz.npu.costmodel import unit_costs
from akfviz.npu.hardware import HardwareConfig
from akfviz.selection import budgets
from akfviz.selection.budgets import solve_error_budget, solve_resource_budget
from akfviz.selection.costs import SelectionProblem, resolve_candidates
from akfviz.selection.edgecost import EdgePrices
from akfviz.selection.explain import explain
from akfviz.selection.perftable import MEASURE_NAMES, MIX_WEIGHTS
from akfviz.selection.structure import classify_tiles
from selection_naive import BudgetToy as _Toy
from selection_naive import budget_brute as _brute
from selection_naive import budget_toy as _toy

HW = HardwareConfig()
COLS = {"energy": "energy_pj", "cycles": "cycles", "bytes": "bytes"}


def _one_tile_costs(pa, t, name, rho_x=1.0):
    """{measure: price} of tile ``t`` alone under kernel ``name``: the closed form, one tile at a time."""
    work = get_kernel(name).npu_work(pa.tileset, np.array([t], dtype=np.int64))
    if work.n_tiles == 0:
        return dict.fromkeys(COLS, 0.0)
    uc = unit_costs(work, HW, rho_x)
    return {m: float(uc[c].sum()) for m, c in COLS.items()}


def _reference_prices(pa, table, names, weights):
    """(n_tiles, K): the price of every tile as the selector should use it — the table at scale 1 for a
    full T×T tile, the closed form for an edge tile — weighted by ``weights`` (measure -> weight)."""
    ts = pa.tileset
    T = int(pa.tile)
    tiles = pa.tiles_as_analysed()
    cls = classify_tiles(tiles)
    dens = tiles["density"].to_numpy(float)
    out = np.zeros((ts.n_tiles, len(names)))
    for t in range(ts.n_tiles):
        edge = ts.h[t] < T or ts.w[t] < T
        for j, k in enumerate(names):
            exact = _one_tile_costs(pa, t, k) if edge else None
            for m, wt in weights.items():
                p = exact[m] if edge else table.evaluate([k], cls[[t]], dens[[t]], measure=m)[0, 0]
                out[t, j] += wt * p
    return out


def _last_tile_full():
    """64×37 at T = 32: tiles (0,0) full, (0,1) 32×5 edge, (1,0) full — the last tile is not an edge
    tile, so a lookup past the last edge tile must not read beyond the edge list."""
    A = np.zeros((64, 37))
    A[:32, :32] = np.random.default_rng(1).random((32, 32)) * (np.random.default_rng(2).random((32, 32)) < 0.4)
    A[3, 34] = 0.8
    A[40:60, 2:20] = np.random.default_rng(3).random((20, 18))
    return akfviz.analyze(sp.csr_array(A), tile=32)


def test_locate_finds_exactly_the_edge_tiles_among_any_tiles():
    """``locate`` must report only tiles that are edge tiles, with their row in ``idx`` — also for tiles
    before the first and after the last edge tile (a full tile there got the next edge tile's price, or
    the lookup read past the edge list)."""
    pa = _last_tile_full()
    ep = EdgePrices(pa, HW, 1.0)
    np.testing.assert_array_equal(ep.idx, [1])
    rows, pos = ep.locate(np.array([0, 1, 2]))
    np.testing.assert_array_equal(rows, [1])
    np.testing.assert_array_equal(pos, [0])
    pa2 = akfviz.analyze(sp.csr_array(sp.random_array((70, 45), density=0.3, rng=np.random.default_rng(0))),
                         tile=32)
    ep2 = EdgePrices(pa2, HW, 1.0)
    tiles = np.arange(pa2.tileset.n_tiles)[::-1].copy()
    rows, pos = ep2.locate(tiles)
    want = np.flatnonzero(np.isin(tiles, ep2.idx))
    np.testing.assert_array_equal(rows, want)
    np.testing.assert_array_equal(ep2.idx[pos], tiles[want])


@pytest.mark.parametrize("resource", ["energy", "cycles", "bytes", "mix"])
def test_tile_mode_R_and_payload_bytes_are_the_table_on_full_tiles_and_the_closed_form_on_edges(resource):
    """Tile mode: every unit's ``R`` row (the selector's weights: 1, or each measure over R_dense for mix)
    and its payload bytes (``sram_bytes``, read by the SRAM penalty) against the slow reference. A
    full tile must keep the table's price, an edge tile must get the closed form in both."""
    pa = akfviz.analyze(sp.csr_array(sp.random_array((70, 45), density=0.3, rng=np.random.default_rng(4))),
                        tile=32)
    plan = akfviz.select(pa, granularity="tile", resource=resource, fusion=False)
    rep = plan.selection
    names = list(rep.candidates)
    assert rep.R.shape[0] == pa.tileset.n_tiles
    if resource == "mix":
        weights = {m: MIX_WEIGHTS[m] / rep.R_dense_by_measure[m] for m in MEASURE_NAMES}
    else:
        weights = {resource: 1.0}
    np.testing.assert_allclose(rep.R, _reference_prices(pa, rep.table, names, weights), rtol=1e-12)
    np.testing.assert_allclose(rep.sram_bytes, _reference_prices(pa, rep.table, names, {"bytes": 1.0}),
                               rtol=1e-12)


def test_tile_mode_R_when_the_last_tile_is_full():
    """The matrix whose last tile is full after the only edge tile (see :func:`_last_tile_full`)."""
    pa = _last_tile_full()
    plan = akfviz.select(pa, granularity="tile", resource="energy", fusion=False)
    rep = plan.selection
    np.testing.assert_allclose(rep.R, _reference_prices(pa, rep.table, list(rep.candidates), {"energy": 1.0}),
                               rtol=1e-12)


def _ones_rect():
    """100×45 of ones at T = 16: identical tiles share a pair, so a tile's pair index differs from its
    tile index; two clusters, one of them holding several edge tiles."""
    return akfviz.analyze(sp.csr_array(np.ones((100, 45))), tile=16)


def _random_rect():
    return akfviz.analyze(sp.csr_array(sp.random_array((200, 45), density=0.3, rng=np.random.default_rng(0))),
                          tile=16)


@pytest.mark.parametrize("make", [_ones_rect, _random_rect])
@pytest.mark.parametrize("resource", ["energy", "mix"])
def test_cluster_member_sums_and_plan_resources_use_each_edge_tile_once(make, resource):
    """Cluster mode: ``member_resource_sums`` is Σ over the members of the table (full tiles) plus the
    closed form (edge tiles, each counted once even when a cluster holds several); ``evaluate`` (read
    by the budget modes), ``plan_resource`` and ``expand`` of any plan equal the reference total."""
    pa = make()
    prob = SelectionProblem(pa, resolve_candidates(None), HW, resource=resource, granularity="cluster")
    e = prob.edges.idx
    assert np.bincount(prob.unit_of_tile[e]).max() >= 2   # some cluster holds several edge tiles
    ref = _reference_prices(pa, prob.table, list(prob.names), prob.measure_weights())
    want = np.zeros((prob.n_units, len(prob.names)))
    np.add.at(want, prob.unit_of_tile, ref)
    np.testing.assert_allclose(prob.member_resource_sums(), want, rtol=1e-12)
    rng = np.random.default_rng(5)
    K = len(prob.names)
    for choice in [np.zeros(prob.n_units, np.int64), np.arange(prob.n_units) % K,
                   rng.integers(0, K, prob.n_units), rng.integers(0, K, prob.n_units)]:
        total = float(ref[np.arange(prob.n_tiles), choice[prob.unit_of_tile]].sum())
        assert prob.evaluate(choice)[1] == pytest.approx(total, rel=1e-12)
        assert prob.plan_resource(choice) == pytest.approx(total, rel=1e-12)
        assert prob.expand(choice)[0] == pytest.approx(total, rel=1e-12)


def test_tile_mode_plan_resource_prices_edges_exactly():
    """Tile mode: ``plan_resource`` of a plan that mixes kernels on the edge tiles is the reference
    total (full tiles by the table, edge tiles by the closed form)."""
    pa = _random_rect()
    prob = SelectionProblem(pa, resolve_candidates(None), HW, resource="cycles", granularity="tile")
    ref = _reference_prices(pa, prob.table, list(prob.names), {"cycles": 1.0})
    K = len(prob.names)
    for seed in range(3):
        choice = np.random.default_rng(seed).integers(0, K, prob.n_units)
        total = float(ref[np.arange(prob.n_tiles), choice[prob.unit_of_tile]].sum())
        assert prob.plan_resource(choice) == pytest.approx(total, rel=1e-12)


def test_cluster_mode_mix_explanations_weigh_each_measure_by_its_dense_total():
    """``explain`` of one tile of a cluster-mode mix plan computes the tile's own R on the spot: each
    candidate's Σ_m w_m · price_m / R_dense,m, with the table's price for a full tile and the closed
    form for an edge tile (the same weights as the report's R)."""
    pa = akfviz.analyze(sp.csr_array(sp.random_array((70, 45), density=0.3, rng=np.random.default_rng(4))),
                        tile=32)
    plan = akfviz.select(pa, granularity="cluster", resource="mix", fusion=False)
    rep = plan.selection
    weights = {m: MIX_WEIGHTS[m] / rep.R_dense_by_measure[m] for m in MEASURE_NAMES}
    ref = _reference_prices(pa, rep.table, list(rep.candidates), weights)
    ts = pa.tileset
    full = int(np.flatnonzero((ts.h == 32) & (ts.w == 32))[0])
    for t in (full, *(int(e) for e in rep.edges.idx)):
        row = explain(plan, tile=t).set_index("kernel")
        for j, name in enumerate(rep.candidates):
            assert row.loc[name, "R"] == pytest.approx(ref[t, j], rel=1e-12), (t, name)


# ------------------------------------------------------------------------------ small budget problems
@pytest.mark.parametrize("seed", range(12))
def test_exact_step_keeps_to_the_mask(seed):
    """With a mask (the eps = 0 and honest-pairs searches pass one), the exact step's plan uses only
    allowed (unit, kernel) pairs and is the least-resource masked plan within the budget — a cheap
    forbidden pair (a lossy kernel that only looks exact) must never be chosen."""
    prob = _toy(seed)
    rng = np.random.default_rng(100 + seed)
    mask2 = rng.random(prob.E.shape) < 0.6
    mask2[:, 0] = True
    mask1 = np.array([True, False, True, True, False])
    for mask in (mask2, mask1):
        err, res, _ = _brute(prob, mask)
        for eps in (0.1, 0.3, 0.6):
            feasible = lambda e, r, eps=eps: e <= eps  # noqa: E731
            got = budgets._exact_small(prob, feasible, False, mask)
            assert got is not None
            assert np.broadcast_to(mask, prob.E.shape)[np.arange(prob.n_units), got].all()
            assert prob.evaluate(got)[1] == pytest.approx(res[err <= eps + 1e-12].min(), abs=1e-9)
            best, _, _ = budgets._search(prob, feasible, lambda a, b: (a[1], a[0]) < (b[1], b[0]), mask=mask)
            assert np.broadcast_to(mask, prob.E.shape)[np.arange(prob.n_units), best[0]].all()
            assert best[2] == pytest.approx(res[err <= eps + 1e-12].min(), abs=1e-9)


def test_exact_step_size_limits_are_inclusive():
    """``EXACT_MAX_UNITS`` units and ``EXACT_MAX_TILES`` tiles are still solved exactly; one more of
    either is not (the step enumerates the front and every member's errors)."""
    nu = budgets.EXACT_MAX_UNITS
    E = np.tile([0.0, 1.0], (nu, 1))
    R = np.tile([2.0, 1.0], (nu, 1))
    feasible = lambda e, r: e <= 0.5  # noqa: E731
    at_limit = _Toy(E, R, fro2=float(nu), n_tiles=budgets.EXACT_MAX_TILES)
    got = budgets._exact_small(at_limit, feasible, False)
    assert got is not None
    # relative error ≤ 0.5 allows a quarter of the units on the cheap lossy kernel
    assert int(got.sum()) == nu // 4
    assert budgets._exact_small(_Toy(E, R, fro2=float(nu), n_tiles=budgets.EXACT_MAX_TILES + 1),
                                feasible, False) is None
    assert budgets._exact_small(_Toy(np.vstack([E, E[:1]]), np.vstack([R, R[:1]]), fro2=float(nu + 1)),
                                feasible, False) is None


def test_exact_step_keeps_the_search_multiplier_and_adds_no_duplicate_trace_row(monkeypatch):
    """The exact step changes the plan, never the reported multiplier (the selector's argmin and cost
    read it: NaN would make them NaN); and when it finds the plan the search already had, the trace
    gets no second row for it."""
    runs = {}
    for exact_on in (True, False):
        monkeypatch.setattr(budgets, "EXACT_MAX_UNITS", 64 if exact_on else 0)
        # the exact step alone differs between the runs (the thinned front would run on these 4
        # units in its place, and the exchange step adds rows of its own)
        monkeypatch.setattr(budgets, "FRONT_MAX_UNITS", 256 if exact_on else 0)
        monkeypatch.setattr(budgets, "EXCHANGE_MAX_MOVES", 0)
        runs[exact_on] = [(solve_error_budget(_toy(s), eps), solve_resource_budget(_toy(s), share))
                          for s in range(20) for eps, share in ((0.15, 0.6), (0.3, 0.8), (0.5, 0.9))]
    changed = same = 0
    for with_exact, without in zip(runs[True], runs[False]):
        for a, b in zip(with_exact, without):
            assert not np.isnan(a.multiplier)
            assert a.multiplier == b.multiplier
            if np.array_equal(a.choice, b.choice):
                same += 1
                assert len(a.trace) == len(b.trace)
            else:
                changed += 1
                assert len(a.trace) == len(b.trace) + 1
    assert changed > 0 and same > 0


class _RepToy(_Toy):
    """Cluster mode's shape: the multiplier decides on the representatives' errors ``E_rep`` while
    plans are measured on the members' ``E_mem``."""

    def __init__(self, E_rep, E_mem, R, fro2, lossless):
        super().__init__(E_mem, R, fro2)
        self.En = np.asarray(E_rep, dtype=np.float64) / self.fro2
        self.lossless = np.asarray(lossless, dtype=bool)


def test_a_plan_only_the_exact_step_finds_reports_a_multiplier_not_nan():
    """The probe's reproducer: kernel 1 looks exact on the representative and both ends of the search
    pick it, but its member error (0.224) breaks the budget; only the exact step finds kernel 2
    (0.141). The multiplier reported was NaN, and select's report then had every cost NaN. Now the
    search's end nearest the budget, error first (λ = ∞). (Under a resource budget λ = 0 always has a
    feasible plan if any plan is, so the exact step never finds the only one there.)"""
    p = _RepToy(E_rep=[[0, 0, 2]], E_mem=[[0, 5, 2]], R=[[30, 1, 10]], fro2=100, lossless=[True, False, False])
    got = solve_error_budget(p, 0.2)
    assert got.choice.tolist() == [2] and got.error == pytest.approx(np.sqrt(0.02))
    assert got.multiplier == np.inf
