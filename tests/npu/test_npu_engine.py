"""The event-driven engine against hand arithmetic, a Python reference and invariants."""
import json
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.errors import InputError
from akfviz.npu.costmodel import unit_costs
from akfviz.npu.hardware import HardwareConfig
from akfviz.npu.mapping import Mapping, map_tiles, source_pes
from akfviz.npu.simulate import ps_completion, simulate, simulate_dense, tile_overflow
from akfviz.npu.tilework_builders import csc_tilework
from akfviz.npu.work import TileWork
from npu_reference import ps_completion as ref_ps, random_tilework, ref_simulate


def given_mapping(pe, red, src):
    return Mapping(pe=np.asarray(pe, np.int64), red=np.asarray(red, np.int64),
                   src=np.asarray(src, np.int64), trajectory=np.zeros(1), greedy_objective=0.0,
                   objective=0.0, iterations=0, iterations_per_s=0.0, seconds=0.0, method="given")


def two_tiles():
    a = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return TileWork(kernel_names=("K",), kernel_id=a([0, 0]), tile_index=a([0, 1]), bi=a([0, 1]),
                    bj=a([0, 1]), h=a([2, 2]), w=a([2, 2]), col_ptr=a([0, 2, 3]),
                    col_local=a([0, 1, 0]), ev_macs=a([2, 1, 3]), ev_decodes=a([1, 1, 0]),
                    ev_sram_bytes=a([4, 2, 6]), payload_bytes=a([10, 10]), out_rows=a([2, 3]),
                    final_macs=a([0, 0]), final_sram_bytes=a([0, 0]),
                    int8=np.zeros(2, bool)).validate()


HW22 = HardwareConfig(rows=2, cols=2, setup_cycles=2, mac_lanes=2, hop_latency_cycles=1,
                      dram_bytes_per_cycle=8, flit_bytes=8, event_cycles=1, decode_cycles=1,
                      reduce_cycles=1, inject_cycles=1)


def test_hand_computed_2x2_grid():
    # Grid 2x2: PE0=(0,0) PE1=(0,1) PE2=(1,0) PE3=(1,1). Tile A (bi=0,bj=0) on PE1, tile B
    # (bi=1,bj=1) on PE2; reduction PEs red=[0,3]; sources src=red=[0,3]. x = ones(4).
    # x load: 4 events * 8 B / 8 B/cycle = 4 cycles.
    # Injection: PE0 injects col0 at 0, col1 at 1; PE3 injects col2 at 0 (col3 is not routed).
    # Tile A: dist(PE0,PE1)=1 -> arrivals 1,2; work col0 = 1 + ceil(2/2) + 1*1 = 3, col1 = 1+1+1 = 3.
    #   setup 2 -> t=2; max(2,1)+3=5; max(5,2)+3=8 -> done 8; 2 flits to PE0 (1 hop): arrive 9;
    #   PE0 reduces: max(0,9) + 2*1 = 11.
    # Tile B: dist(PE3,PE2)=1 -> arrival 1; work = 1 + ceil(3/2) + 0 = 3; setup 2 -> max(2,1)+3 = 5;
    #   3 flits to PE3 (1 hop): arrive 6; 6 + 3 = 9.
    # Engine makespan 11; y write-back 2 row blocks * 2 rows * 8 B / 8 = 4 cycles. Total 4+11+4 = 19.
    work = two_tiles()
    res = simulate(work, HW22, x=np.ones(4), mapping=given_mapping([1, 2], [0, 3], [0, 3]),
                   shape=(4, 4), tile=2)
    assert res.cycles == 19
    row = res.per_iteration.iloc[0]
    assert (row.load_cycles, row.engine_cycles, row.writeback_cycles) == (4, 11, 4)
    assert res.counters["busy"].tolist() == [2, 8, 5, 3]
    assert res.events == 3 and res.macs == 6 and res.total("reduce_adds") == 5
    assert res.total("flit_hops") == 3 + 2 + 3          # events 3x1 hop + partial sums 2x1 + 3x1
    assert res.dram_bytes == 32 + 32                    # x in + y out
    assert res.total("sram_bytes") == 12 and res.total("decodes") == 2
    e = HW22.energy
    expected = (11 * e["mac_fp32"] + 12 * e["sram_read"] + 64 * e["dram"] + 8 * e["noc_hop"]
                + 2 * e["index_decode"] + 3 * e["event_receive"] + 0.05 * 4 * 19)
    assert res.energy_total_pj == pytest.approx(expected, rel=1e-12)
    assert res.utilization[0, 1] == pytest.approx(8 / 19)
    tl = res.timeline([1])
    assert tl["start"].min() == 4 and tl["end"].max() == 4 + 8
    assert res.hop_histogram.tolist() == [0, 3 + 5]


def _random_case(seed, k=1, rho=1.0, fused=True, persistent=True, sram=300):
    rng = np.random.default_rng(seed)
    tile = 4
    nbr, nbc = 3, 4
    work = random_tilework(rng, nbr, nbc, tile)
    hw = HardwareConfig(rows=3, cols=3, setup_cycles=int(rng.integers(0, 4)), mac_lanes=2,
                        hop_latency_cycles=int(rng.integers(0, 3)), dram_bytes_per_cycle=16,
                        sram_bytes_per_pe=sram, reconfig_cycles=7, barrier_cycles=5,
                        launch_cycles=11, decode_cycles=2, inject_cycles=int(rng.integers(1, 3)))
    shape = (nbr * tile - 1, nbc * tile - 2)
    work = TileWork(**{**work.__dict__, "h": np.minimum(work.h, shape[0] - work.bi * tile),
                       "w": np.minimum(work.w, shape[1] - work.bj * tile)})
    keep = np.zeros(work.n_routes, bool)
    for u in range(work.n_tiles):
        sl = slice(work.col_ptr[u], work.col_ptr[u + 1])
        keep[sl] = work.col_local[sl] < work.w[u]
    # drop routed columns beyond the edge (rebuild ptr)
    cnt = np.array([keep[work.col_ptr[u]:work.col_ptr[u + 1]].sum() for u in range(work.n_tiles)])
    d = dict(work.__dict__)
    d["col_ptr"] = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)
    for f in ("col_local", "ev_macs", "ev_decodes", "ev_sram_bytes"):
        d[f] = d[f][keep]
    work = TileWork(**d).validate()
    pe = rng.integers(0, 9, work.n_tiles)
    red = rng.integers(0, 9, nbr)
    src = source_pes(red, nbc, hw.cols)
    X = rng.standard_normal((shape[1], k)) * (rng.random((shape[1], k)) < rho)
    return work, hw, pe, red, src, X, shape, tile


@pytest.mark.parametrize("record", [True, False])
@pytest.mark.parametrize("seed", range(12))
def test_engine_matches_python_reference(seed, record):
    # record=True: the serial kernel that also logs intervals; record=False: the parallel one
    k = 1 + seed % 3
    fused = seed % 4 != 1
    persistent = seed % 3 != 2
    work, hw, pe, red, src, X, shape, tile = _random_case(seed, k=k, rho=0.7, fused=fused,
                                                          persistent=persistent)
    _assert_matches_reference(work, hw, pe, red, src, X, shape, tile, fused, persistent, record)


def _assert_matches_reference(work, hw, pe, red, src, X, shape, tile, fused, persistent, record):
    """``simulate`` with the given placement equals the plain-Python reference: cycles and every counter."""
    res = simulate(work, hw, x=X, mapping=given_mapping(pe, red, src), shape=shape, tile=tile,
                   fused=fused, persistent=persistent, record=record)
    cyc, C, _ = ref_simulate(work, hw, pe, red, src, X != 0, shape, tile, fused, persistent)
    assert res.cycles == cyc
    for name, v in C.items():
        assert res.counters[name].tolist() == v, name


def test_ps_completion_matches_round_simulation():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 1000, 40)
    s[::7] = 0
    got = ps_completion(s, 13)
    ref = ref_ps({p: int(v) for p, v in enumerate(s)}, 13)
    assert all(got[p] == ref.get(p, 0) for p in range(40))


def test_tile_overflow_fills_sram_in_order():
    # PE 0 holds tiles 0 (60 B), 2 (50 B), 3 (30 B); SRAM 100 -> 0, 10, 30 overflow; PE 1 tile 1 fits.
    ovf = tile_overflow(np.array([60, 40, 50, 30]), np.array([0, 1, 0, 0]), 100)
    assert ovf.tolist() == [0, 0, 10, 30]


def test_unit_costs_equal_engine_single_tile_on_1x1():
    A = sp.random(32, 32, density=0.3, random_state=4, format="csr")
    tw = csc_tilework(A, 32)
    assert tw.n_tiles == 1
    for sram in (1 << 16, 100):  # fits, then overflows (DRAM streaming before use)
        hw = HardwareConfig(rows=1, cols=1, sram_bytes_per_pe=sram)
        uc = unit_costs(tw, hw, rho_x=1.0).iloc[0]
        res = simulate(tw, hw, shape=(32, 32), tile=32)
        row = res.per_iteration.iloc[0]
        assert uc.cycles == row.engine_cycles
        assert uc.macs == res.macs and uc.events == res.events
        e = hw.energy
        x_y_bytes = res.dram_bytes - uc.dram_bytes
        outside = row.load_cycles + row.writeback_cycles
        assert uc.energy_pj == pytest.approx(
            res.energy_total_pj - x_y_bytes * e["dram"] - e["leakage"] * outside, rel=1e-12)


def test_unit_costs_expected_events_scale_with_rho():
    A = sp.random(64, 64, density=0.2, random_state=5, format="csr")
    tw = csc_tilework(A, 32)
    full, half = unit_costs(tw, rho_x=1.0), unit_costs(tw, rho_x=0.5)
    assert np.allclose(half.events, full.events / 2)
    assert np.all(half.cycles < full.cycles)
    with pytest.raises(InputError):
        unit_costs(tw, rho_x=1.5)


@pytest.mark.parametrize("kwargs", [dict(persistent="no"), dict(fused=None), dict(record=1),
                                    dict(persistent=0)])
def test_switches_must_be_true_or_false(kwargs):
    # persistent="no" once ran as persistent (a non-empty string is truthy)
    tw = csc_tilework(sp.random(64, 64, density=0.2, random_state=5, format="csr"), 32)
    name = next(iter(kwargs))
    with pytest.raises(InputError, match=f"{name} must be True or False"):
        simulate(tw, HardwareConfig(), shape=(64, 64), tile=32, **kwargs)
    assert simulate(tw, HardwareConfig(), shape=(64, 64), tile=32, **{name: np.bool_(False)}).cycles > 0


def _plan_case(seed=0, n=96, density=0.08):
    A = sp.random(n, n, density=density, random_state=seed, format="csr")
    return A, csc_tilework(A, 16)


def test_counts_match_tilework_and_x():
    A, tw = _plan_case()
    rng = np.random.default_rng(1)
    X = rng.standard_normal((96, 3)) * (rng.random((96, 3)) < 0.4)
    res = simulate(tw, HardwareConfig(rows=8, cols=8), x=X, shape=A.shape, tile=16)
    # events: per routed column, number of nonzero x[j, b]; MACs: ev_macs times that
    nzc = (X != 0).sum(axis=1)
    j = np.repeat(tw.bj * 16, np.diff(tw.col_ptr)) + tw.col_local
    assert res.events == int(nzc[j].sum())
    assert res.macs == int((tw.ev_macs * nzc[j]).sum())
    # CSC: MACs = Σ_b nnz of A in the active columns = nnz(A @ diag(active)) per batch column
    assert res.macs == sum(int(A[:, X[:, b] != 0].nnz) for b in range(3))


def test_energy_is_actions_times_table_and_utilisation_bounded():
    A, tw = _plan_case(2)
    hw = HardwareConfig(rows=4, cols=4, sram_bytes_per_pe=256)
    res = simulate(tw, hw, shape=A.shape, tile=16, iterations=3, persistent=False, fused=False)
    e = hw.energy
    t = res.total
    manual = (t("macs") * e["mac_fp32"] + t("macs_int8") * e["mac_int8"]
              + t("reduce_adds") * e["mac_fp32"] + t("sram_bytes") * e["sram_read"]
              + t("dram_bytes") * e["dram"] + t("flit_hops") * e["noc_hop"]
              + t("decodes") * e["index_decode"] + t("events") * e["event_receive"]
              + e["leakage"] * hw.n_pes * res.cycles)
    assert res.energy_total_pj == pytest.approx(manual, rel=1e-12)
    u = res.utilization
    assert u.shape == (4, 4) and u.min() >= 0 and u.max() <= 1 and u.max() > 0
    assert set(res.energy_pj) == {"compute", "sram", "dram", "noc", "decode_setup", "static"}


def test_int8_macs_are_priced_at_the_int8_mac_energy():
    # QUANT8 tiles do int8 MACs (akf-spec §6): the energy table's mac_int8, not mac_fp32
    import akfviz
    from akfviz.execute import FusionPlan

    A = akfviz.generate("uniform", n=96, density=0.1, seed=2)
    pa = akfviz.analyze(A, tile=16)
    plan = FusionPlan(pa, ["QUANT8"] * pa.n_tiles)
    hw = HardwareConfig(rows=4, cols=4)
    res = akfviz.simulate(plan, hw)
    t = res.total
    assert t("macs_int8") > 0 and t("macs") == 0
    e = hw.energy
    assert e["mac_int8"] < e["mac_fp32"] / 10
    want = t("macs_int8") * e["mac_int8"] + t("reduce_adds") * e["mac_fp32"]
    assert res.energy_pj["compute"] == pytest.approx(want, rel=1e-12)


def test_utilisation_of_a_non_square_grid_is_row_major():
    A, tw = _plan_case(2)
    hw = HardwareConfig(rows=2, cols=4)
    res = simulate(tw, hw, shape=A.shape, tile=16)
    u = res.utilization
    busy = res.counters["busy"]
    assert u.shape == (2, 4)
    for p in range(8):                                   # PE p sits at row p // cols, column p % cols
        assert u[p // 4, p % 4] == busy[p] / res.cycles
    assert len(set(np.round(u.ravel(), 12))) > 1          # the check above can fail


def test_same_seed_same_result_and_pickle():
    A, tw = _plan_case(3)
    hw = HardwareConfig(rows=8, cols=8)
    r1 = simulate(tw, hw, shape=A.shape, tile=16, rho_x=0.5, seed=7)
    r2 = simulate(tw, hw, shape=A.shape, tile=16, rho_x=0.5, seed=7)
    r3 = simulate(tw, hw, shape=A.shape, tile=16, rho_x=0.5, seed=8)
    assert r1.cycles == r2.cycles and r1.energy_total_pj == r2.energy_total_pj
    assert all(np.array_equal(r1.counters[k], r2.counters[k]) for k in r1.counters)
    # another seed: another x (exactly half its entries nonzero either way) and another mapping
    assert any(not np.array_equal(r1.counters[k], r3.counters[k]) for k in r1.counters)
    r4 = pickle.loads(pickle.dumps(r1))
    assert r4.cycles == r1.cycles and r4.energy_pj == r1.energy_pj
    json.dumps(r1.to_dict())
    assert "counters" not in r1.to_dict() and "counters" in r1.to_dict(arrays=True)


@pytest.mark.parametrize("seed", range(4))
def test_more_sram_never_slower(seed):
    A, tw = _plan_case(seed, n=128, density=0.15)
    prev = None
    for sram in (64, 256, 1024, 4096, 1 << 16):
        hw = HardwareConfig(rows=4, cols=4, sram_bytes_per_pe=sram, dram_bytes_per_cycle=8)
        mp = map_tiles(tw, hw, method="greedy", n_brows=8, n_bcols=8)
        c = simulate(tw, hw, shape=A.shape, tile=16, mapping=mp).cycles
        if prev is not None:
            assert c <= prev
        prev = c


@pytest.mark.parametrize("seed", range(6))
def test_fused_never_slower_than_unfused(seed):
    work, hw, pe, red, src, X, shape, tile = _random_case(100 + seed)
    mp = given_mapping(pe, red, src)
    for pers in (True, False):
        f = simulate(work, hw, x=X, mapping=mp, shape=shape, tile=tile, fused=True, persistent=pers)
        u = simulate(work, hw, x=X, mapping=mp, shape=shape, tile=tile, fused=False, persistent=pers)
        assert f.cycles <= u.cycles
        assert f.events == u.events and f.macs == u.macs


def test_persistent_never_more_dram_than_non_persistent():
    A, tw = _plan_case(4, n=128, density=0.2)
    for sram in (100, 1 << 16):
        hw = HardwareConfig(rows=4, cols=4, sram_bytes_per_pe=sram)
        for it in (1, 2, 5):
            p = simulate(tw, hw, shape=A.shape, tile=16, iterations=it, persistent=True)
            q = simulate(tw, hw, shape=A.shape, tile=16, iterations=it, persistent=False)
            assert p.dram_bytes <= q.dram_bytes and p.cycles <= q.cycles
            assert len(p.per_iteration) == it


def test_dense_baseline_counts_and_merging():
    hw = HardwareConfig(rows=4, cols=4)
    d = simulate_dense((70, 50), 16, hw)
    assert d.macs == 70 * 50 and d.events == 5 * 50          # every tile, every column
    assert d.meta["dense_merge"] == (1, 1)
    import akfviz.npu.simulate as S

    old = S.DENSE_MAX_ROUTES, S.DENSE_MAX_TILES
    try:
        S.DENSE_MAX_ROUTES, S.DENSE_MAX_TILES = 100, 4
        m = simulate_dense((70, 50), 16, hw)
        gr, gc = m.meta["dense_merge"]
        assert gr > 1 and gc > 1
        assert m.macs == 70 * 50                              # MACs unchanged by merging
        with pytest.raises(InputError, match="columns"):
            simulate_dense((10, 101), 16, hw)
    finally:
        S.DENSE_MAX_ROUTES, S.DENSE_MAX_TILES = old


def test_input_errors_are_readable():
    A, tw = _plan_case()
    with pytest.raises(InputError, match="96 rows"):
        simulate(tw, x=np.ones(5), shape=A.shape, tile=16)
    with pytest.raises(InputError, match="either x or rho_x"):
        simulate(tw, x=np.ones(96), rho_x=0.5, shape=A.shape, tile=16)
    with pytest.raises(InputError, match="iterations"):
        simulate(tw, iterations=0, shape=A.shape, tile=16)
    with pytest.raises(InputError, match="FusionPlan"):
        simulate("not a plan")
    with pytest.raises(InputError, match="NaN"):
        simulate(tw, x=np.full(96, np.nan), shape=A.shape, tile=16)
    with pytest.raises(InputError, match="mapping"):
        simulate(tw, mapping="magic", shape=A.shape, tile=16)
    for bad in (True, False, 0, 2.5):
        with pytest.raises(InputError, match="batch"):
            simulate(tw, batch=bad, shape=A.shape, tile=16)
    import scipy.sparse as sp
    with pytest.raises(InputError, match=r"sparse csr array; pass x.toarray\(\)"):
        simulate(tw, x=sp.csr_array(np.ones((96, 1))), shape=A.shape, tile=16)
    with pytest.raises(InputError, match="complex"):
        simulate(tw, x=np.ones(96, complex), shape=A.shape, tile=16)
    # a boolean x is an activity mask: the same events as its 0/1 float twin
    mask = np.arange(96) % 2 == 0
    assert (simulate(tw, x=mask, shape=A.shape, tile=16).events
            == simulate(tw, x=mask.astype(float), shape=A.shape, tile=16).events)


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_parallel_engine_path_matches_reference(seed, monkeypatch):
    # force the prange path (several PE chunks) even on tiny inputs; results must be identical
    import akfviz.npu.simulate as S

    monkeypatch.setattr(S, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(S, "_n_chunks", lambda P: 5)
    k = 1 + seed % 3
    fused = seed != 1
    work, hw, pe, red, src, X, shape, tile = _random_case(seed, k=k, rho=0.7, fused=fused,
                                                          persistent=True)
    res = simulate(work, hw, x=X, mapping=given_mapping(pe, red, src), shape=shape, tile=tile,
                   fused=fused, record=False)
    cyc, C, _ = ref_simulate(work, hw, pe, red, src, X != 0, shape, tile, fused, True)
    assert res.cycles == cyc
    for name, v in C.items():
        assert res.counters[name].tolist() == v, name
    rec = simulate(work, hw, x=X, mapping=given_mapping(pe, red, src), shape=shape, tile=tile,
                   fused=fused, record=True)
    a, b = rec.to_dict(arrays=True), res.to_dict(arrays=True)
    assert (a["meta"].pop("recorded"), b["meta"].pop("recorded")) == (True, False)   # the only difference
    assert a == b


def test_mapping_cache_keyed_by_content():
    import akfviz.npu.simulate as S

    A, tw = _plan_case(4)
    hw = HardwareConfig(rows=4, cols=4)
    r1 = simulate(tw, hw, shape=A.shape, tile=16, seed=3)
    # an equal TileWork built again (other objects, same content) hits the cache
    tw2 = csc_tilework(A.copy(), 16)
    geo = (A.shape, 16, 16)   # the run's geometry: the engine check of the placement runs with it
    k1 = S.mapping_key(tw, hw, 1.0, "anneal", 3, 6, 6, *geo)
    assert k1 == S.mapping_key(tw2, hw, 1.0, "anneal", 3, 6, 6, *geo)
    assert k1 in S._MAPPING_CACHE
    r2 = simulate(tw2, hw, shape=A.shape, tile=16, seed=3)
    assert r2.to_dict(arrays=True) == r1.to_dict(arrays=True)
    # any change of content, seed, activation density or hardware changes the key
    assert k1 != S.mapping_key(tw, hw, 1.0, "anneal", 4, 6, 6, *geo)
    assert k1 != S.mapping_key(tw, hw, 0.3, "anneal", 3, 6, 6, *geo)
    assert k1 != S.mapping_key(tw, HardwareConfig(rows=4, cols=8), 1.0, "anneal", 3, 6, 6, *geo)
    assert k1 != S.mapping_key(tw, hw, 1.0, "anneal", 3, 6, 6, (A.shape[0] + 1, A.shape[1]), 16, 16)
    A3 = A.tolil()
    A3[0, 0] = 5.0
    A3[0, 1] = 5.0
    assert k1 != S.mapping_key(csc_tilework(A3.tocsr(), 16), hw, 1.0, "anneal", 3, 6, 6, *geo)
    # cached placement equals a fresh one
    fresh = map_tiles(tw, hw, rho_x=1.0, seed=3, n_brows=6, n_bcols=6)
    assert np.array_equal(S._MAPPING_CACHE[k1].pe, fresh.pe)
    # the placement at rho_x = 0.3 does not depend on whether rho_x = 1 ran before it
    S._MAPPING_CACHE.clear()
    def placement(res):             # what the placement scored and the per-PE work it led to (not its time)
        m = res.mapping
        return ([m[k] for k in ("objective", "greedy_objective", "makespan_est", "hops", "pes_used")],
                res.cycles, res.counters["busy"].tolist())

    alone = placement(simulate(tw, hw, shape=A.shape, tile=16, seed=3, rho_x=0.3))
    S._MAPPING_CACHE.clear()
    simulate(tw, hw, shape=A.shape, tile=16, seed=3, rho_x=1.0)
    after = placement(simulate(tw, hw, shape=A.shape, tile=16, seed=3, rho_x=0.3))
    assert after == alone


def test_lazy_views_and_multi_iteration_rows():
    A, tw = _plan_case(5)
    hw = HardwareConfig(rows=4, cols=4)
    res = simulate(tw, hw, shape=A.shape, tile=16, iterations=4)
    pi = res.per_iteration
    assert list(pi["iteration"]) == [0, 1, 2, 3]
    assert pi["load_cycles"].iloc[0] > 0 and (pi["load_cycles"].iloc[1:] == 0).all()
    assert (pi["writeback_cycles"].iloc[:3] == 0).all() and pi["writeback_cycles"].iloc[3] > 0
    assert int(pi["cycles"].sum()) == res.cycles
    assert res.tile_kernels == ("CSC",) * tw.n_tiles
    one = simulate(tw, hw, shape=A.shape, tile=16, iterations=1)
    assert res.events == 4 * one.events and res.macs == 4 * one.macs
    assert pickle.loads(pickle.dumps(res)).per_iteration.equals(pi)


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 100, 304, 1500])
@pytest.mark.parametrize("hi", [1, 3, 300, 30_000, 2**36])
def test_stable_order_equals_numpy_stable_argsort(n, hi):
    # the engine's queue order (ranks of the composite keys for short queues, radix sort on (key, position)
    # for long ones) must be exactly numpy's stable argsort: ties keep their position order
    from akfviz.npu._engine import _stable_order

    rng = np.random.default_rng(n * 7 + hi % 1000)
    for trial in range(5):
        keys = rng.integers(0, hi, n).astype(np.int64)
        if trial == 4:
            keys.sort()  # already sorted: the early exit
        perm = np.full(n, -1, np.int64)
        ck = np.full(n, -1, np.int64)
        _stable_order(keys, n, perm, ck)
        np.testing.assert_array_equal(perm, np.argsort(keys, kind="stable"))


def test_pe_frame_matches_counters():
    # one row per PE of the grid, in PE order: position, every counter, idle cycles, utilisation
    import akfviz
    from akfviz.npu.results import COUNTERS, EXPORTED

    A = akfviz.generate("banded", n=200, bandwidth=3, seed=1)
    hw = HardwareConfig(rows=6, cols=5)
    res = simulate(akfviz.select(akfviz.analyze(A, tile=16), hw=hw), hw)
    pf = res.pe_frame()
    assert list(pf.columns) == ["pe", "row", "col", *(EXPORTED[k] for k in COUNTERS), "idle", "utilization"]
    assert EXPORTED["macs"] == "macs_fp32"
    assert len(pf) == 30 and pf["pe"].tolist() == list(range(30))
    assert pf["row"].tolist() == [p // 5 for p in range(30)] and pf["col"].tolist() == [p % 5 for p in range(30)]
    for k in COUNTERS:
        np.testing.assert_array_equal(pf[EXPORTED[k]].to_numpy(), res.counters[k])
    np.testing.assert_array_equal(pf["idle"].to_numpy(), res.cycles - res.counters["busy"])
    np.testing.assert_array_equal(pf["utilization"].to_numpy(), res.utilization.ravel())
    assert pf["busy"].sum() > 0


def test_a_fusion_plan_keeps_its_own_tile_side_and_shape():
    import akfviz

    A = akfviz.generate("uniform", n=128, density=0.05, seed=0)
    plan = akfviz.select(akfviz.analyze(A, tile=32))
    hw = HardwareConfig(rows=4, cols=4)
    x = np.zeros(128)
    x[32:48] = 1.0
    base = simulate(plan, hw, x=x, mapping="greedy")
    # its own values are accepted and change nothing
    same = simulate(plan, hw, x=x, mapping="greedy", tile=32, shape=(128, 128))
    assert same.events == base.events and same.cycles == base.cycles
    with pytest.raises(InputError, match="tile=16 does not match the plan"):
        simulate(plan, hw, x=x, tile=16)
    with pytest.raises(InputError, match="tile_rows=8 does not match"):
        simulate(plan, hw, x=x, tile_rows=8)
    with pytest.raises(InputError, match=r"shape=\(500, 500\) does not match the plan's matrix"):
        simulate(plan, hw, x=np.ones(500), shape=(500, 500))
    with pytest.raises(InputError, match="shape must be"):
        simulate(plan, hw, x=x, shape=5)


def test_y_write_back_covers_every_row_even_without_a_tile():
    """A held-out probe: y was written back only for row blocks holding a tile (rows 4..7 of this
    matrix were never written, and an all-SKIP plan wrote no y), a discount against the Dense
    baseline, which writes every row. docs/model.md: y out is ``rows · k · flit_bytes``."""
    import akfviz

    D = np.zeros((8, 8))
    D[0, 0], D[1, 5] = 1.0, 2.0                                  # only row block 0 holds tiles
    pa = akfviz.analyze(sp.csr_array(D), tile=4)
    hw = HardwareConfig(rows=1, cols=1, dram_bytes_per_cycle=8)
    x = np.ones(8)
    for kernels in (["CSC"], ["SKIP"]):
        plan = akfviz.select(pa, kernels=kernels, hw=hw)
        res = simulate(plan, hw, x=x)
        cols = res.per_iteration_columns
        y_bytes = 8 * hw.flit_bytes                              # 8 rows of y, one flit each
        assert int(cols["writeback_cycles"][0]) == -(-y_bytes // 8)
        x_bytes = 8 * hw.flit_bytes
        assert res.dram_bytes == x_bytes + y_bytes + int(res.meta["overflow_bytes"])
    dense = simulate_dense((8, 8), 4, hw, x=x)
    assert int(dense.per_iteration_columns["writeback_cycles"][0]) == int(cols["writeback_cycles"][0])


@pytest.mark.parametrize("lanes", [1, 3, 5, 6, 8])
@pytest.mark.parametrize("record", [True, False])
def test_engine_matches_reference_for_any_lane_count(lanes, record):
    # ceil(m / mac_lanes) is a shift for a power of two and a division otherwise: both paths
    work, hw, pe, red, src, X, shape, tile = _random_case(40 + lanes, k=2, rho=0.8)
    _assert_matches_reference(work, hw.replace(mac_lanes=lanes), pe, red, src, X, shape, tile, True, True, record)


def test_grid_coordinates_and_lane_ceiling_match_divmod():
    from akfviz.npu import _engine

    rng = np.random.default_rng(5)
    for cols in (1, 3, 7, 256):
        src = rng.integers(0, cols * 5, 11)
        red = rng.integers(0, cols * 5, 4)
        rc = _engine.grid_coordinates(src, red, cols)
        assert rc[0, :11].tolist() == (src // cols).tolist() and rc[1, :11].tolist() == (src % cols).tolist()
        assert rc[2, :4].tolist() == (red // cols).tolist() and rc[3, :4].tolist() == (red % cols).tolist()
    ceil_lanes = _engine._ceil_lanes.py_func
    shift = _engine._lane_shift.py_func
    for lanes in range(1, 70):
        sh = shift(lanes)
        assert (sh >= 0) == (lanes & (lanes - 1) == 0) and (sh < 0 or 1 << sh == lanes)
        for m in (0, 1, lanes - 1, lanes, lanes + 1, 10 * lanes + 3, 2**40 + 1):
            assert ceil_lanes(m, lanes, sh) == -(-m // lanes)
