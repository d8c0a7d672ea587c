"""The teaching trace (akf-spec §7): argument checks, the tile side, state_at, hardware presets."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.errors import InputError
from akfviz.execute.plan import FusionPlan
from akfviz.npu.hardware import HardwareConfig
from akfviz.npu.mapping import map_tiles
from akfviz.npu.trace import TinyCase, tiny_case, trace_spmv, transfer_cycles

NAN, INF = float("nan"), float("inf")


# --------------------------------------------------------------------------- tiny_case arguments
@pytest.mark.parametrize("kwargs,fragment", [
    (dict(n=NAN), r"n \(the matrix side.*between 4 and 32, got nan"),
    (dict(n=INF), r"n \(the matrix side.*got inf"),
    (dict(n=None), r"n \(the matrix side.*got None"),
    (dict(n=8.7), r"n \(the matrix side.*got 8\.7"),
    (dict(n=True), r"n \(the matrix side.*got True"),
    (dict(n="8"), r"n \(the matrix side.*got '8'"),
    (dict(n=3), r"between 4 and 32, got 3"),
    (dict(n=33), r"between 4 and 32, got 33"),
    (dict(grid=(2,)), r"grid must be a pair.*got \(2,\)"),
    (dict(grid=(2, 2, 2)), r"grid must be a pair.*got \(2, 2, 2\)"),
    (dict(grid="2x2"), r"grid must be a pair.*got '2x2'"),
    (dict(grid=None), r"grid must be a pair.*got None"),
    (dict(grid=(1.5, 2)), r"grid must be a pair.*from 1 to 4.*got \(1\.5, 2\)"),
    (dict(grid=(0, 2)), r"grid must be a pair.*got \(0, 2\)"),
    (dict(grid=(8, 8)), r"at most 4×4.*got \(8, 8\)"),
    (dict(grid=(True, 2)), r"grid must be a pair"),
    (dict(x_density=None), r"x_density.*\(0, 1\], got None"),
    (dict(x_density="0.5"), r"x_density.*got '0\.5'"),
    (dict(x_density=0.0), r"x_density.*\(0, 1\], got 0\.0"),
    (dict(x_density=NAN), r"x_density.*got nan"),
    (dict(x_density=1.5), r"x_density.*got 1\.5"),
    (dict(density=NAN), r"density must be a number between 0 and 1, got nan"),
    (dict(density=None), r"density must be .*got None"),
    (dict(density=-0.1), r"density must be .*got -0\.1"),
    (dict(seed=NAN), r"seed must be a whole number.*got nan"),
    (dict(seed=1.5), r"seed must be a whole number.*got 1\.5"),
    (dict(seed=-1), r"seed must be a whole number.*got -1"),
    (dict(tile=NAN), r"tile \(the tile side T\) must be a whole number between 4 and 256, got nan"),
    (dict(tile=None), r"tile \(the tile side T\).*got None"),
    (dict(tile=4.5), r"tile \(the tile side T\).*got 4\.5"),
    (dict(tile=2), r"tile \(the tile side T\).*got 2"),
    (dict(kernel="csc"), r"kernel must be a registered kernel.*CSC.*got 'csc'"),
    (dict(kernel=3), r"kernel must be .*got 3"),
    (dict(kind="nope"), r"kind must be a matrix generator.*uniform.*got 'nope'"),
    (dict(kind=None), r"kind must be .*got None"),
    (dict(hw="loihi-like"), r"hw must be a HardwareConfig"),
    (dict(nn=8), r"tiny_case\(\).*Its parameters are"),
])
def test_tiny_case_refuses_bad_arguments(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        tiny_case(**kwargs)


def test_tiny_case_takes_numpy_integers_and_whole_floats():
    ref = tiny_case(n=8, tile=4, grid=(2, 2), seed=2)
    got = tiny_case(n=np.int64(8), tile=4.0, grid=(np.int32(2), 2.0), density=np.float64(0.35),
                    x_density=np.float32(1.0), seed=np.int64(2))
    assert got.trace.makespan == ref.trace.makespan
    np.testing.assert_array_equal(got.x, ref.x)
    np.testing.assert_array_equal(got.trace.y, ref.trace.y)


# --------------------------------------------------------------------------- state_at
@pytest.fixture(scope="module")
def small_case():
    return tiny_case(kernel="CSC", x_density=1.0, seed=5)


@pytest.mark.parametrize("i", [-1, 10**12, NAN, INF, None, 1.5, True, "3", np.int64(-2)])
def test_state_at_refuses_steps_outside_the_trace(small_case, i):
    n = len(small_case.trace.steps)
    with pytest.raises(InputError, match=rf"state_at: i .*between 0 and {n}, got"):
        small_case.trace.state_at(i)


def test_state_at_takes_every_step_including_numpy_integers(small_case):
    tr = small_case.trace
    n = len(tr.steps)
    assert tr.state_at(np.int64(0))["time"] == tr.steps[0].start
    assert len(tr.state_at(np.int32(3))["done"]) == 3
    last = tr.state_at(n)
    assert last["time"] == tr.makespan and len(last["done"]) == n
    np.testing.assert_allclose(last["y"], small_case.A_hat @ small_case.x, atol=1e-12)


# --------------------------------------------------------------------------- the tile side
def _edge_case():
    """Only the bottom-right 4×4 edge tile of a 12×12 matrix at T = 8 is nonempty."""
    A = np.zeros((12, 12))
    A[9, 10], A[11, 8] = 2.0, 3.0
    pa = akfviz.analyze(sp.csr_array(A), tile=8)
    plan = FusionPlan(pa, ["CSC"] * pa.tileset.n_tiles)
    w = plan.npu_work()
    hw = HardwareConfig(rows=2, cols=2)
    mp = map_tiles(w, hw, method="greedy", n_brows=2, n_bcols=2)
    return plan.approx_matrix().toarray(), np.arange(1.0, 13.0), w, hw, mp


def test_a_lone_edge_tile_asks_for_tile_and_gives_the_right_y_with_it():
    """The widest-tile guess gave T = 4 here and y[8:] = 0; one tile away from block (0, 0) does not
    tell T (as in simulate), so tile= is required, and with it y is right."""
    A_hat, x, w, hw, mp = _edge_case()
    with pytest.raises(InputError, match=r"single tile away from block \(0, 0\).*pass tile="):
        trace_spmv(A_hat, x, w, hw, mp.pe, mp.red, mp.src)
    tr = trace_spmv(A_hat, x, w, hw, mp.pe, mp.red, mp.src, tile=8)
    assert tr.tile == 8
    np.testing.assert_allclose(tr.y, A_hat @ x)
    np.testing.assert_allclose(tr.y[8:], [0, 22, 0, 27])


def test_tile_side_is_told_by_the_tiles_except_for_a_lone_tile_off_the_corner():
    _, _, w, _, _ = _edge_case()
    assert w.tile_side() is None
    tc = tiny_case(n=12, tile=8, density=0.9, kernel="DENSE")
    assert tc.work.n_tiles == 4 and tc.work.tile_side() == 8      # edge tiles are 8×4, 4×8 and 4×4


@pytest.mark.parametrize("tile,fragment", [
    (0, r"tile \(the tile side T\) must be a whole number between 1 and"),
    (-8, r"tile \(the tile side T\).*got -8"),
    (NAN, r"tile \(the tile side T\).*got nan"),
    (8.5, r"tile \(the tile side T\).*got 8\.5"),
    (3, r"tile=3 does not match the work: its tile 0 .* is 4×4.* 3×3"),
    (4, r"nonzero entry at \(9, 10\).*none of the work's tiles \(tile side 4\)"),
    (16, r"tile=16 does not match the work.*outside the matrix"),
])
def test_a_tile_side_that_does_not_match_the_work_is_refused(tile, fragment):
    A_hat, x, w, hw, mp = _edge_case()
    with pytest.raises(InputError, match=fragment):
        trace_spmv(A_hat, x, w, hw, mp.pe, mp.red, mp.src, tile=tile)


def test_the_deduced_tile_side_equals_the_given_one_on_a_normal_case(small_case):
    tc = small_case
    tr = trace_spmv(tc.A_hat, tc.x, tc.work, tc.hw, tc.mapping.pe, tc.mapping.red, tc.mapping.src)
    assert tr.tile == 4 and tr.makespan == tc.trace.makespan
    np.testing.assert_array_equal(tr.y, tc.trace.y)


# --------------------------------------------------------------------------- trace_spmv arguments
@pytest.mark.parametrize("change,fragment", [
    (dict(tile_pe=[-1]),
     r"tile_pe must hold values between 0 and 3 \(PE indices of the 2×2 grid\), got tile_pe\[0\] = -1"),
    (dict(tile_pe=[4]), r"tile_pe must hold values between 0 and 3.*got tile_pe\[0\] = 4"),
    (dict(tile_pe=[0, 1]), r"tile_pe must have 1 entries.*got 2"),
    (dict(tile_pe=[0.5]), r"tile_pe must be a 1-D array of whole numbers"),
    (dict(tile_pe=None), r"tile_pe must be a 1-D array of whole numbers"),
    (dict(red_pe=[0, 7]), r"red_pe must hold values between 0 and 3.*red_pe\[1\] = 7"),
    (dict(red_pe=[0, -1]), r"red_pe must hold values.*red_pe\[1\] = -1"),
    (dict(red_pe=[0]), r"red_pe must have 2 entries.*got 1"),
    (dict(red_pe=[0, 0, 0]), r"red_pe must have 2 entries.*got 3"),
    (dict(src_pe=[0, 4]), r"src_pe must hold values between 0 and 3.*src_pe\[1\] = 4"),
    (dict(src_pe=[0]), r"src_pe must have 2 entries.*got 1"),
    (dict(x=np.arange(5.0)), r"x must be a vector of 12 entries.*got shape \(5,\)"),
    (dict(x=np.ones((12, 2))), r"x must be a vector of 12 entries.*got shape \(12, 2\)"),
    (dict(x=np.r_[np.ones(11), np.nan]), r"x contains NaN or infinite values"),
    (dict(x=np.r_[np.ones(11), np.inf]), r"x contains NaN or infinite values"),
    (dict(x=["a"] * 12), r"x must hold"),
    (dict(A=np.zeros((12, 10))), r"x must be a vector of 10 entries"),
    (dict(A=np.zeros((10, 12))), r"do not fit the 10×12 matrix|does not match"),
    (dict(A=np.full((12, 12), np.nan)), r"NaN or infinite"),
    (dict(A=np.zeros((70, 70)), x=np.ones(70)), r"at most 4096 matrix entries"),
    (dict(hw=None), r"hw must be a HardwareConfig"),
    (dict(hw=HardwareConfig(rows=80, cols=80)), r"at most 4096 PEs"),
    (dict(work="work"), r"work must be a TileWork"),
    (dict(ready=[0, 0]), r"ready must have 4 entries"),
    (dict(ready=[0, 0, 0, -5]), r"ready must hold values between 0"),
])
def test_trace_spmv_refuses_bad_arguments(change, fragment):
    A_hat, x, w, hw, mp = _edge_case()
    args = dict(A=A_hat, x=x, work=w, hw=hw, tile_pe=mp.pe, red_pe=mp.red, src_pe=mp.src, tile=8)
    args.update(change)
    with pytest.raises(InputError, match=fragment):
        trace_spmv(**args)


def test_trace_spmv_unknown_keyword_is_an_input_error():
    A_hat, x, w, hw, mp = _edge_case()
    with pytest.raises(InputError, match=r"trace_spmv\(\).*Its parameters are"):
        trace_spmv(A_hat, x, w, hw, mp.pe, mp.red, mp.src, tiles=8)


# --------------------------------------------------------------------------- hardware presets
def _engine(tc):
    res = akfviz.simulate(tc.plan, tc.hw, x=tc.x, mapping=tc.mapping)
    return res, res.per_iteration.iloc[0]


def test_default_hardware_is_unchanged():
    tc = tiny_case(seed=1)
    assert tc.hw == HardwareConfig(rows=2, cols=2)


@pytest.mark.parametrize("changes", [dict(mac_lanes=1), dict(hop_latency_cycles=50),
                                     dict(setup_cycles=2, event_cycles=3, decode_cycles=2, reduce_cycles=2,
                                          inject_cycles=2)])
def test_hardware_timing_is_used_and_equals_the_engine(changes):
    base = tiny_case(n=12, tile=4, grid=(2, 3), kernel="CSC", seed=1)
    hw = HardwareConfig(rows=64, cols=64, **changes)
    tc = tiny_case(n=12, tile=4, grid=(2, 3), kernel="CSC", seed=1, hw=hw)
    assert (tc.hw.rows, tc.hw.cols) == (2, 3)
    for name, value in changes.items():
        assert getattr(tc.hw, name) == value
    assert tc.trace.makespan != base.trace.makespan
    res, it = _engine(tc)
    assert tc.trace.makespan == int(it["engine_cycles"])
    for name in ("busy", "events", "flit_hops", "reduce_adds"):
        np.testing.assert_array_equal(tc.trace.counters[name], res.counters[name], err_msg=name)


@pytest.mark.parametrize("preset", ["loihi-like", "edge-32x32", "horowitz-45nm"])
def test_hardware_presets_are_respected(preset):
    hw = HardwareConfig.from_preset(preset)
    tc = tiny_case(n=12, tile=4, grid=(2, 2), kernel="CSC", x_density=0.75, seed=3, hw=hw)
    assert (tc.hw.rows, tc.hw.cols) == (2, 2)
    assert (tc.hw.mac_lanes, tc.hw.dram_bytes_per_cycle, tc.hw.energy) == \
        (hw.mac_lanes, hw.dram_bytes_per_cycle, hw.energy)
    res, it = _engine(tc)
    assert tc.trace.makespan == int(it["engine_cycles"])
    t = transfer_cycles(tc)
    assert t == tc.transfer_cycles()
    assert (t["load_cycles"], t["writeback_cycles"], t["cycles"]) == \
        (int(it["load_cycles"]), int(it["writeback_cycles"]), res.cycles)


def test_loihi_like_changes_the_makespan():
    ref = tiny_case(n=12, tile=4, grid=(2, 2), kernel="CSC", seed=3)
    lo = tiny_case(n=12, tile=4, grid=(2, 2), kernel="CSC", seed=3, hw=HardwareConfig.from_preset("loihi-like"))
    assert lo.hw.mac_lanes == 1 and lo.trace.makespan > ref.trace.makespan


def test_edge_preset_pays_more_for_transfers():
    # edge-32x32 has a quarter of the default DRAM bandwidth: same engine part, longer x load / y write
    ref = tiny_case(n=12, tile=4, grid=(2, 2), kernel="CSC", seed=3)
    edge = tiny_case(n=12, tile=4, grid=(2, 2), kernel="CSC", seed=3, hw=HardwareConfig.from_preset("edge-32x32"))
    a, b = transfer_cycles(ref), transfer_cycles(edge)
    assert a["engine_cycles"] == b["engine_cycles"]
    assert b["load_cycles"] > a["load_cycles"] and b["writeback_cycles"] > a["writeback_cycles"]
    assert "ceil(" in b["formulas"]["load_cycles"]


def test_sram_overflow_streams_before_the_engine_starts():
    # no SRAM: every PE first streams its payload from DRAM, as the engine does
    hw = HardwareConfig(rows=8, cols=8, sram_bytes_per_pe=0, dram_bytes_per_cycle=4)
    tc = tiny_case(n=12, tile=4, grid=(2, 2), kernel="CSC", seed=2, hw=hw)
    assert tc.trace.meta["ready"].max() > 0
    _, it = _engine(tc)
    assert tc.trace.makespan == int(it["engine_cycles"])


def test_transfer_cycles_needs_a_tiny_case():
    with pytest.raises(InputError, match="TinyCase"):
        transfer_cycles("case")
    assert isinstance(tiny_case(), TinyCase)


def test_simulate_refuses_to_guess_the_tile_side_of_a_lone_edge_tile():
    """simulate(TileWork) guessed T as the widest tile; a lone 4×4 edge tile of a T = 8 grid was
    placed at rows 4..8 instead of 8..12. Now it asks for tile=."""
    A = np.zeros((12, 12))
    A[9, 10], A[11, 8] = 2.0, 3.0
    A = sp.csr_array(A)
    plan = FusionPlan(akfviz.analyze(A, tile=8), ["CSC"])
    work = plan.npu_work()
    x = np.arange(1.0, 13.0)
    hw = HardwareConfig(rows=2, cols=2)
    with pytest.raises(InputError, match="pass tile="):
        akfviz.simulate(work, hw, x=x, shape=(12, 12))
    res = akfviz.simulate(work, hw, x=x, shape=(12, 12), tile=8)
    assert res.macs == 2            # one event per occupied column (8 and 10), one MAC each
    assert res.cycles == akfviz.simulate(plan, hw, x=x).cycles   # the plan knows its own T


# --------------------------------------------------------------------------- trace = engine, broadly
# The tests above compare one CSC case; CSC has no final phase and its events rarely queue, so a
# trace that timed deliveries by tile instead of arrival, or dropped the final phase, went unseen
# (a mutation probe). Kernels with a final phase (LOWRANK1), queues (long hops), several grids.
_SWEEP = [dict(n=n, grid=g, kernel=k, seed=s, hop=h, xd=1.0)
          for n in (8, 12) for g in ((1, 2), (2, 3)) for k in ("CSC", "DENSE", "LOWRANK1", "DIA", None)
          for s in (0, 1) for h in (1, 50)] + [
    # sparse inputs, int8 tiles and a 3 × 3 grid (the case the Learn page opens with is 2 × 2)
    dict(n=8, grid=(2, 2), kernel="CSC", seed=3, hop=1, xd=0.75),
    dict(n=8, grid=(1, 2), kernel="LOWRANK2", seed=1, hop=1, xd=0.5),
    dict(n=8, grid=(2, 3), kernel="QUANT8", seed=2, hop=1, xd=1.0),
    dict(n=12, grid=(3, 3), kernel=None, seed=4, hop=1, xd=0.75)]


def test_trace_equals_the_engine_across_kernels_grids_and_hop_latencies():
    mismatched = []
    for c in _SWEEP:
        tc = tiny_case(n=c["n"], tile=4, grid=c["grid"], kernel=c["kernel"], seed=c["seed"],
                       x_density=c["xd"], hw=HardwareConfig(hop_latency_cycles=c["hop"]))
        res, it = _engine(tc)
        if tc.trace.makespan != int(it["engine_cycles"]):
            mismatched.append((c, tc.trace.makespan, int(it["engine_cycles"])))
            continue
        # every counter the trace keeps, int8 MACs apart as in the engine (the Learn page says "equal")
        assert set(tc.trace.counters) == {"busy", "events", "macs", "macs_int8", "decodes", "sram_bytes",
                                          "flit_hops", "reduce_adds"}
        for name, v in tc.trace.counters.items():
            np.testing.assert_array_equal(v, res.counters[name], err_msg=f"{name} {c}")
        np.testing.assert_allclose(tc.trace.y, tc.A_hat @ tc.x, rtol=1e-12, atol=1e-12)
    assert not mismatched, mismatched[:5]


def test_int8_macs_are_counted_apart_as_in_the_engine():
    tc = tiny_case(kernel="QUANT8", seed=0)
    res, _ = _engine(tc)
    assert tc.trace.counters["macs_int8"].sum() > 0 and tc.trace.counters["macs"].sum() == 0
    np.testing.assert_array_equal(tc.trace.counters["macs_int8"], res.counters["macs_int8"])


def test_steps_are_in_the_documented_order():
    from akfviz.npu.trace import KINDS

    for c in _SWEEP[::7]:
        tr = tiny_case(n=c["n"], tile=4, grid=c["grid"], kernel=c["kernel"], seed=c["seed"],
                       hw=HardwareConfig(hop_latency_cycles=c["hop"])).trace
        keys = [(s.start, KINDS.index(s.kind), s.pe, s.tile, s.column) for s in tr.steps]
        assert keys == sorted(keys), c


def test_the_seed_draws_x_as_documented():
    # "seed: of the matrix, of x and of the selection": x comes from default_rng(seed + 1)
    xs = [tiny_case(seed=s).x for s in (0, 3)]
    assert not np.array_equal(xs[0], xs[1])
    rng = np.random.default_rng(3 + 1)
    x = np.round(rng.uniform(-2, 2, size=8), 1)
    x[x == 0] = 0.5
    np.testing.assert_array_equal(xs[1], x)      # x_density = 1: every input kept
