"""Details of the NPU model that the broader tests could not tell apart (found by a second mutation
probe of the simulator): the injection interval, the cost model's final phase under rho_x, seconds at
the configured clock, the placement cache keyed by payload, the Dense baseline's routing bytes.

Each test was checked to fail on a library edit that breaks the detail it names.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.npu.costmodel import unit_costs
from akfviz.npu.hardware import HardwareConfig
from akfviz.npu.mapping import map_tiles
from akfviz.npu.simulate import simulate
from akfviz.npu.tilework_builders import csc_tilework
from akfviz.npu.work import TileWork


def _a64(v):
    return np.asarray(v, dtype=np.int64)


def test_a_slow_event_source_makes_the_pe_wait_for_each_injection():
    # inject_cycles (akf-spec §7: a source PE injects one event every inject_cycles cycles) must
    # set the injection times. 1 × 1 grid, one 4 × 4 CSC tile (the identity: 1 MAC per column),
    # x = ones(4): the source is PE 0 itself (0 hops), setup 0, work per event
    # event_cycles 1 + ceil(1 / 4 lanes) + 1 decode · 0 cycles = 2.
    # inject_cycles = 5: events at 0, 5, 10, 15 -> done 2, 7, 12, 17; 4 partial sums reduced on
    # PE 0 itself at 1 cycle each: engine makespan 17 + 4 = 21 (with injections 1 cycle apart it
    # would be 8 + 4 = 12).
    tw = csc_tilework(sp.identity(4, format="csr"), 4)
    base = dict(rows=1, cols=1, setup_cycles=0, mac_lanes=4, decode_cycles=0, event_cycles=1,
                reduce_cycles=1, hop_latency_cycles=0)
    for inject, engine in ((1, 12), (5, 21)):
        hw = HardwareConfig(**base, inject_cycles=inject)
        res = simulate(tw, hw, x=np.ones(4), shape=(4, 4), tile=4, mapping="greedy")
        assert res.per_iteration.iloc[0].engine_cycles == engine, inject
        assert res.counters["busy"].tolist() == [4 * 2 + 4]   # waiting is idle, not busy


def test_unit_costs_scale_event_macs_with_rho_but_not_the_final_phase():
    # akf-spec §7 / costmodel: a tile's final phase (e.g. LOWRANK's r·h tail) runs once after its
    # last event, whatever rho_x; only the per-event MACs are expected values rho_x · Σ ev_macs.
    # One tile, 2 routed columns with 3 and 5 MACs per event, final_macs 8; rho_x = 0.5:
    # macs = 0.5 · (3 + 5) + 8 = 12 (not 0.5 · (8 + 8) = 8).
    tw = TileWork(kernel_names=("K",), kernel_id=_a64([0]), tile_index=_a64([0]), bi=_a64([0]),
                  bj=_a64([0]), h=_a64([4]), w=_a64([4]), col_ptr=_a64([0, 2]),
                  col_local=_a64([0, 1]), ev_macs=_a64([3, 5]), ev_decodes=_a64([0, 0]),
                  ev_sram_bytes=_a64([0, 0]), payload_bytes=_a64([10]), out_rows=_a64([4]),
                  final_macs=_a64([8]), final_sram_bytes=_a64([0]),
                  int8=np.zeros(1, bool)).validate()
    hw = HardwareConfig(rows=1, cols=1)
    for rho, macs in ((1.0, 16.0), (0.5, 12.0), (0.0, 8.0)):
        row = unit_costs(tw, hw, rho_x=rho).iloc[0]
        assert row.macs == pytest.approx(macs), rho
        # compute energy: those MACs at fp32 plus the 4 reduction adds
        assert row.e_compute == pytest.approx((macs + 4) * hw.energy["mac_fp32"]), rho


@pytest.mark.parametrize("clock_hz", [1e9, 2.5e9, 5e8])
def test_seconds_are_cycles_at_the_configured_clock(clock_hz):
    # SimResult.seconds = cycles / clock_hz (akf-spec §7: makespan in cycles and seconds); the
    # default clock is 1 GHz, so only another clock tells a fixed 1e9 apart.
    tw = csc_tilework(sp.identity(8, format="csr"), 4)
    hw = HardwareConfig(rows=2, cols=2, clock_hz=clock_hz)
    res = simulate(tw, hw, shape=(8, 8), tile=4)
    assert res.seconds == pytest.approx(res.cycles / clock_hz, rel=1e-15)
    assert res.to_dict()["seconds"] == pytest.approx(res.cycles / clock_hz, rel=1e-15)


def test_the_placement_cache_tells_tileworks_apart_by_their_payload():
    # Two TileWorks equal in everything but payload bytes: on a 2-PE grid with 100 B of SRAM the
    # first fits and the second overflows. The cached placement (and the mapping summary the
    # simulation reports) must be the second one's own, not the first one's reused.
    def work(payload):
        return TileWork(kernel_names=("K",), kernel_id=_a64([0, 0]), tile_index=_a64([0, 1]),
                        bi=_a64([0, 0]), bj=_a64([0, 1]), h=_a64([2, 2]), w=_a64([2, 2]),
                        col_ptr=_a64([0, 1, 2]), col_local=_a64([0, 0]), ev_macs=_a64([1, 1]),
                        ev_decodes=_a64([0, 0]), ev_sram_bytes=_a64([1, 1]),
                        payload_bytes=_a64(payload), out_rows=_a64([1, 1]),
                        final_macs=_a64([0, 0]), final_sram_bytes=_a64([0, 0]),
                        int8=np.zeros(2, bool)).validate()

    hw = HardwareConfig(rows=1, cols=2, sram_bytes_per_pe=100)
    small, big = work([10, 10]), work([900, 700])
    r_small = simulate(small, hw, shape=(2, 4), tile=2, mapping="greedy")
    r_big = simulate(big, hw, shape=(2, 4), tile=2, mapping="greedy")
    fresh = map_tiles(big, hw, method="greedy", n_brows=1, n_bcols=2)
    assert r_small.mapping["overflow_bytes"] == 0
    assert fresh.components["overflow_bytes"] > 0
    assert r_big.mapping["overflow_bytes"] == fresh.components["overflow_bytes"]
    assert r_big.mapping["objective"] == pytest.approx(fresh.objective)


def test_the_dense_baseline_payload_counts_its_routing_entries():
    # akf-spec §7/§8: a dense tile stores every column, and "the routing entries count in its
    # payload": 4 B per fp32 value + 1 B per routed column. Shape 5 × 6, T = 4: tiles 4×4, 4×2,
    # 1×4, 1×2 -> 64 + 4 = 68, 32 + 2 = 34, 16 + 4 = 20, 8 + 2 = 10 bytes.
    import akfviz
    from akfviz.execute import FusionPlan
    from akfviz.npu.tilework_builders import dense_tilework

    dw = dense_tilework((5, 6), 4)
    assert dw.payload_bytes.tolist() == [68, 34, 20, 10]
    # and the same bytes as the DENSE kernel's own work for those tiles (all of them nonempty)
    A = sp.csr_matrix(np.arange(1, 31, dtype=np.float64).reshape(5, 6))
    pa = akfviz.analyze(A, tile=4)
    kw = FusionPlan(pa, ["DENSE"] * pa.n_tiles).npu_work()
    got = {(int(b), int(c)): int(p) for b, c, p in zip(kw.bi, kw.bj, kw.payload_bytes)}
    want = {(int(b), int(c)): int(p) for b, c, p in zip(dw.bi, dw.bj, dw.payload_bytes)}
    assert got == want
