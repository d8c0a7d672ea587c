"""Fast paths of the selector's per-tile stages against slow, obvious references (akf-spec §5).

* the plan's resource (one numba pass: class shortcut, full-tile lookup table, chunked sum) equals a plain
  Python loop over the tiles with ``classify_dense`` and ``numpy.polyval``, summed in the same chunks;
* ``tile_kernels`` (a ``pandas.Categorical`` built from codes) equals the string array
  ``names[choice[unit_of_tile]]`` and keeps ``pandas.factorize(sort=False)`` category order;
* the class shortcut of the analysis' eager pass (``scanpass._small_tile_class``) never changes a class.
"""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.kernels.registry import DEFAULT_CANDIDATES
from akfviz.npu.hardware import HardwareConfig
from akfviz.analysis.scanpass import _small_tile_class
from akfviz.selection._kernels import DIAG_FILL, NM_MIN_DENSITY, _class_of
from akfviz.selection.costs import SelectionProblem, resolve_candidates
from akfviz.selection.perftable import MEASURE_NAMES
from akfviz.selection.structure import classify_dense
from selection_naive import naive_table_value

HW = HardwareConfig()


def _structured(n=120, m=90, seed=0):
    """Rectangular (partial edge tiles), with a band, a dense block and scattered entries."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, m), density=0.03, rng=rng, format="lil")
    for i in range(min(n, m)):
        A[i, i] = 1.0 + rng.random()
    A[8:16, 40:48] = rng.standard_normal((8, 8))
    return sp.csr_array(A)


MATRICES = {
    "structured_rect": lambda: (_structured(), 8),
    "uniform_lut": lambda: (sp.csr_array(sp.random_array((160, 150), density=0.08,
                                                         rng=np.random.default_rng(1))), 4),
    "single_tile": lambda: (sp.csr_array(([1.5, -2.0, 0.5], ([1, 3, 4], [2, 0, 4])), shape=(6, 5)), 8),
}


@pytest.fixture(scope="module", params=sorted(MATRICES))
def pa(request):
    A, T = MATRICES[request.param]()
    return akfviz.analyze(A, tile=T)


def _ref_total(prob, choice):
    """Σ_t Σ_m w_m · max(0, polyval(p_{m,k,s}, log10 clip(d))) over the full tiles, tile by tile in plain
    Python, with the class from the dense tile and the same 64 chunks as the fast pass; then the edge
    tiles (h < T or w < T), each at its exact price ``Σ_m w_m · prob.edges.of(k)[e, m]``, added in tile
    order (``test_edge_prices_are_each_tiles_unit_costs`` checks those prices one tile at a time)."""
    ts, tab = prob.ts, prob.table
    kid = tab.kernel_ids(prob.names)[np.asarray(choice)]
    wts = prob.measure_weights()
    n = prob.n_tiles
    step = -(-n // 64)
    total, acc = 0.0, 0.0
    edge_vals = []
    for t in range(n):
        if t and t % step == 0:
            total, acc = total + acc, 0.0
        h, w = int(ts.h[t]), int(ts.w[t])
        k = tab.kernels[kid[prob.unit_of_tile[t]]]
        if h < prob.T or w < prob.T:
            e = int(np.searchsorted(prob.edges.idx, t))
            assert prob.edges.idx[e] == t
            price = prob.edges.of(k)[e]
            edge_vals.append(sum(float(wt) * price[MEASURE_NAMES.index(m)] for m, wt in wts.items()))
            continue
        nnz = int(ts.ptr[t + 1] - ts.ptr[t])
        c = classify_dense(ts.dense(t), grid=prob.grid)
        acc += sum(wt * naive_table_value(tab, k, c, nnz / (h * w), 1.0, m) for m, wt in wts.items() if wt != 0)
    assert len(edge_vals) == prob.edges.n
    return total + acc + (float(np.sum(np.array(edge_vals))) if edge_vals else 0.0)


@pytest.mark.parametrize("granularity", ["cluster", "tile"])
@pytest.mark.parametrize("resource", ["energy", "mix"])
def test_expand_matches_reference(pa, granularity, resource):
    prob = SelectionProblem(pa, resolve_candidates(None), HW, resource=resource, granularity=granularity)
    for a, b in ((1.0, 1.0), (50.0, 1.0), (1.0, 50.0)):
        choice = prob.argmin(a, b)
        total, cat = prob.expand(choice)
        assert total == _ref_total(prob, choice)
        assert total == prob.plan_resource(choice)
        names = np.asarray(prob.names, dtype=object)[choice[prob.unit_of_tile]]
        assert isinstance(cat, pd.Categorical)
        assert np.array_equal(np.asarray(cat.categories, dtype=object)[cat.codes], names)
        _, uniq = pd.factorize(names, sort=False)
        assert list(cat.categories) == list(uniq)


@pytest.mark.parametrize("kernel", ["QUANT8", "CSC", "DENSE"])
def test_one_kernel_plans_match_reference(pa, kernel):
    """Every unit on one kernel: the pass reads that kernel once instead of per tile (and sets every
    code at once); the total is still the tile-by-tile sum and the categorical holds that one name."""
    prob = SelectionProblem(pa, resolve_candidates(None), HW, granularity="cluster")
    choice = np.full(prob.n_units, prob.names.index(kernel), dtype=np.int64)
    total, cat = prob.expand(choice)
    assert total == _ref_total(prob, choice)
    assert list(cat.categories) == [kernel] and np.all(cat.codes == 0) and len(cat) == prob.n_tiles


@pytest.mark.parametrize("resource", ["energy", "bytes", "mix"])
def test_member_resource_sums_are_the_members_resources_added_up(pa, resource):
    prob = SelectionProblem(pa, resolve_candidates(None), HW, resource=resource, granularity="cluster")
    cls, dens, scale = prob.tile_arrays()
    edge = (pa.tileset.h < pa.tile) | (pa.tileset.w < pa.tile)
    np.testing.assert_array_equal(prob.edges.idx, np.flatnonzero(edge))
    assert np.all(scale[edge] == 0.0) and np.all(scale[~edge] == 1.0)  # the table adds nothing for edges
    per_tile = prob.resource_matrix(dens, scale, cls)          # (n_tiles, K) in the selector's measure
    per_tile[edge] = prob.edges.weighted(prob.names, prob.measure_weights())   # their exact prices
    want = np.zeros((prob.n_units, len(prob.names)))
    for t in range(prob.n_tiles):
        want[prob.unit_of_tile[t]] += per_tile[t]
    np.testing.assert_allclose(prob.member_resource_sums(), want, rtol=1e-12)


def test_lookup_table_path_is_taken_and_exact():
    A, T = MATRICES["uniform_lut"]()
    pa = akfviz.analyze(A, tile=T)
    prob = SelectionProblem(pa, resolve_candidates(None), HW)
    choice = prob.argmin(1.0, 1.0)
    used = np.unique(choice).size
    assert used * 4 * (T * T + 1) <= prob.n_tiles // 4  # so chosen_pass builds the full-tile table
    total, _ = prob.expand(choice)
    assert total == _ref_total(prob, choice)


def test_remembered_full_tile_table_follows_the_measure_and_the_choice(monkeypatch):
    """The full-tile values are remembered on the (shared) table per kernel and measure weights:
    problems with other measures and choices, asked in turn, still get the direct totals; the
    memory is bounded (cleared when a new entry would pass FULL_TILE_MEMO_BYTES)."""
    from akfviz.selection import perftable as ptab_mod

    A, T = MATRICES["uniform_lut"]()
    pa = akfviz.analyze(A, tile=T)
    for resource in ("energy", "cycles", "mix", "energy"):
        prob = SelectionProblem(pa, resolve_candidates(None), HW, resource=resource)
        for a, b in ((1.0, 1.0), (1.0, 1e-3), (1e-3, 1.0)):
            choice = prob.argmin(a, b)
            total, _ = prob.expand(choice)
            assert total == _ref_total(prob, choice), (resource, a, b)
    memo = prob.table.__dict__["_full_tile_memo"]
    assert len(memo) >= 2
    one = next(iter(memo.values())).nbytes
    memo.clear()
    monkeypatch.setattr(ptab_mod, "FULL_TILE_MEMO_BYTES", one)   # room for one entry
    for resource in ("cycles", "energy", "mix"):
        prob = SelectionProblem(pa, resolve_candidates(None), HW, resource=resource)
        # two kernels, so that the pass takes the full tables (few kernels beside the tiles)
        choice = np.where(np.arange(prob.n_units) % 2, prob.names.index("CSC"), prob.names.index("QUANT8"))
        assert prob.expand(choice)[0] == _ref_total(prob, choice), resource
        assert len(memo) == 1


def test_all_tiles_is_a_shared_read_only_arange(monkeypatch):
    from akfviz.execute import plan as plan_mod

    monkeypatch.setattr(plan_mod, "_ALL_TILES", {"iota": None})
    monkeypatch.setattr(plan_mod, "ALL_TILES_KEEP", 100)
    for n in (0, 5, 3, 40, 100, 7):
        got = plan_mod.all_tiles(n)
        np.testing.assert_array_equal(got, np.arange(n))
        assert got.dtype == np.int64 and not got.flags.writeable
    assert plan_mod._ALL_TILES["iota"].shape[0] == 100
    np.testing.assert_array_equal(plan_mod.all_tiles(250), np.arange(250))   # beyond the limit: not kept
    assert plan_mod._ALL_TILES["iota"].shape[0] == 100


def test_class_shortcut_never_changes_the_class():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        h, w = int(rng.integers(1, 33)), int(rng.integers(1, 33))
        grid = int(rng.choice([1, 4, 8]))
        k = int(rng.integers(1, h * w + 1))
        nd = int(rng.integers(1, h + w))
        nm4 = int(rng.integers(0, 5))
        sig = np.uint64(int(rng.integers(0, 2 ** 63)) >> int(rng.integers(0, 64)))
        full = _class_of(h, w, k, nd, nm4, sig, grid)
        if k < DIAG_FILL * min(h, w) and k < NM_MIN_DENSITY * h * w:  # when the scan uses it
            assert full == _small_tile_class(h, w, k, sig, grid), (h, w, k, nd, nm4, sig, grid)


@pytest.mark.parametrize("kw", [
    dict(), dict(granularity="tile"), dict(error_budget=0.0), dict(error_budget=0.05),
    dict(resource_budget=0.3), dict(kernels=["CSC", "LOWRANK1", "QUANT8"]), dict(kernels=["DENSE"]),
    dict(resource="cycles", fusion=False), dict(resource_budget=0.5, granularity="tile"),
])
def test_select_plan_matches_string_reference(pa, kw):
    plan = akfviz.select(pa, **kw)
    rep = plan.selection
    prob = SelectionProblem(pa, rep.candidates, HW, resource=rep.measure, granularity=rep.granularity)
    names = np.asarray(rep.candidates, dtype=object)[rep.chosen[prob.unit_of_tile]]
    assert plan.tile_kernels.dtype == object
    assert np.array_equal(plan.tile_kernels, names)
    assert plan.resource == _ref_total(prob, rep.chosen)
    assert rep.resource == plan.resource
    assert sorted(plan.kernel_counts.index) == sorted(pd.unique(names))
    assert rep.resource_share == plan.resource / rep.R_dense


def test_empty_matrix_plan():
    pa = akfviz.analyze(sp.csr_array((40, 24)), tile=8)
    plan = akfviz.select(pa)
    assert plan.resource == 0.0
    assert len(plan.tile_kernels) == 0


def test_expand_deterministic(pa):
    prob = SelectionProblem(pa, tuple(DEFAULT_CANDIDATES), HW, resource="mix")
    ch = prob.argmin(1.0, 1.0)
    t1, c1 = prob.expand(ch)
    t2, c2 = prob.expand(ch)
    assert t1 == t2 and np.array_equal(c1.codes, c2.codes) and list(c1.categories) == list(c2.categories)
    assert set(MEASURE_NAMES) == set(prob.measure_weights())


def test_serial_pass_fills_a_memo_for_few_full_tiles(monkeypatch):
    """Too few tiles for the full tables (a stencil's thousands): the serial pass fills a memo for the
    (class, nonzeros) pairs its full tiles have, and the total is still the tile-by-tile sum; the
    memo holds exactly the direct values of those pairs and NaN elsewhere."""
    from akfviz.selection import perftable as ptab_mod

    seen = []
    real = ptab_mod._chosen_total_serial

    def spy(*args):
        out = real(*args)
        seen.append(np.array(args[16]))   # lut, after the pass
        return out

    monkeypatch.setattr(ptab_mod, "_chosen_total_serial", spy)
    side = 40   # 5-point stencil on a 40×40 grid, T = 8: 1,600² with full and partial tiles
    one = sp.diags_array([-np.ones(side - 1), 2 * np.ones(side), -np.ones(side - 1)], offsets=[-1, 0, 1])
    A = sp.csr_array(sp.kron(one, sp.eye_array(side)) + sp.kron(sp.eye_array(side), one))
    A = sp.csr_array(A[:1598, :1597])   # partial last row and column blocks
    pa = akfviz.analyze(A, tile=8)
    for granularity in ("cluster", "tile"):
        prob = SelectionProblem(pa, resolve_candidates(None), HW, resource="mix", granularity=granularity)
        for a, b in ((1.0, 1.0), (1.0, 1e-3), (1e-3, 1.0)):
            choice = prob.argmin(a, b)
            seen.clear()
            total, cat = prob.expand(choice)
            assert total == _ref_total(prob, choice), (granularity, a, b)
            (lut,) = seen
            filled = ~np.isnan(lut)
            assert lut.shape[0] == np.unique(choice).size and 0 < filled.sum() < lut.size
            kids = np.unique(prob.table.kernel_ids(prob.names)[choice])
            mw = np.zeros(len(prob.table.measures))
            for meas, wt in prob.measure_weights().items():
                mw[prob.table._measure_index(meas)] = wt
            for j, kid in enumerate(kids):
                full = prob.table._full_tile_values(int(kid), mw)
                assert np.array_equal(lut[j][filled[j]], full[filled[j]])
