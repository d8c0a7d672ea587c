"""NPU simulator benchmark: simulated events per wall second, speed vs the Python reference,
annealing time for ~10k tiles. Prints ratios measured in one run on the same inputs.

Definitions. A *synaptic event* (SNN terms) is one spike delivered to one synapse, i.e. one
nonzero weight touched by one input event = one MAC; "syn-ev/s" = SimResult.macs / wall s.
A *delivery* is one input event arriving at one tile (it touches that tile's nonzeros of the
column); "deliv/s" = SimResult.events / wall s. "engine kernel" = the numba phase kernels on
prepared inputs (_run_engine); "simulate()" = the whole public call with a given placement
(validation, phase preparation, DRAM attribution, SimResult), record=False.

    .venv/bin/python bench/bench_sim.py [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "npu"))

from akfviz.npu import _engine  # noqa: E402
import importlib  # noqa: E402

S = importlib.import_module("akfviz.npu.simulate")
from akfviz.npu.hardware import HardwareConfig  # noqa: E402
from akfviz.npu.mapping import map_tiles  # noqa: E402
from akfviz.npu.tilework_builders import csc_tilework  # noqa: E402
from cache_state import median_time  # noqa: E402
from npu_reference import ref_simulate  # noqa: E402


def llm_like(n, keep, seed=1):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n, n)) * np.exp(rng.standard_normal(n))[None, :]
    thr = np.quantile(np.abs(W), 1 - keep)
    W[np.abs(W) < thr] = 0
    return sp.csr_array(W)


def uniform(n, nnz, seed=1):
    rng = np.random.default_rng(seed)
    A = sp.csr_array((rng.standard_normal(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))),
                     shape=(n, n))
    A.sum_duplicates()
    return A


def engine_only(tw, hw, mp, n_cols, tile):
    wa = S._WorkArrays(tw)
    phases = [S._Phase(wa, np.arange(tw.n_tiles, dtype=np.int64), mp, hw.n_pes)]
    active = np.ones(n_cols, bool)
    streams = np.zeros(tw.n_tiles, np.int64)

    def run():
        cnt, _, _, _ = S._run_engine(phases, wa, hw, mp, active, 1, tile, n_cols, streams, True, False)
        return int(cnt[1].sum()), int(cnt[2].sum() + cnt[3].sum())
    run()
    return run


def throughput(name, A, tile, hw, repeats):
    tw = csc_tilework(A, tile)
    nb = -(-A.shape[0] // tile)
    mp = map_tiles(tw, hw, method="greedy", n_brows=nb, n_bcols=-(-A.shape[1] // tile))
    S.simulate(tw, hw, shape=A.shape, tile=tile, mapping=mp, record=False)  # warm
    t_sim, res = median_time(lambda: S.simulate(tw, hw, shape=A.shape, tile=tile, mapping=mp,
                                                record=False), repeats)
    t_eng, (nd, macs) = median_time(engine_only(tw, hw, mp, A.shape[1], tile), repeats + 2)
    t_map0 = time.perf_counter()
    S.simulate(tw, hw, shape=A.shape, tile=tile, record=False)  # default "anneal", fills the cache
    t_map0 = time.perf_counter() - t_map0
    t_cached, _ = median_time(lambda: S.simulate(tw, hw, shape=A.shape, tile=tile, record=False),
                              repeats)
    print(f"[{name}] {A.shape[0]}x{A.shape[1]} nnz={A.nnz:,} tiles={tw.n_tiles:,} "
          f"grid={hw.rows}x{hw.cols}")
    print(f"  deliveries = {res.events:,}   synaptic events (MACs) = {res.macs:,}   "
          f"makespan = {res.cycles:,} cycles")
    print(f"  engine kernel : {t_eng * 1e3:8.1f} ms  -> {nd / t_eng / 1e6:6.1f} M deliv/s, "
          f"{macs / t_eng / 1e6:6.1f} M syn-ev/s")
    print(f"  simulate()    : {t_sim * 1e3:8.1f} ms  -> {res.events / t_sim / 1e6:6.1f} M deliv/s, "
          f"{res.macs / t_sim / 1e6:6.1f} M syn-ev/s (placement given)")
    print(f"  simulate() default mapping: first call {t_map0:.2f} s (anneal + hash), "
          f"repeat {t_cached * 1e3:.1f} ms (content-keyed cache hit)")
    return dict(name=name, t_eng=t_eng, t_sim=t_sim, events=res.events, macs=res.macs, tw=tw, mp=mp,
                A=A, tile=tile)


def vs_reference_large(case, hw):
    """The Python reference on the 1M-nnz input itself (one run; slow)."""
    A, tw, mp, tile = case["A"], case["tw"], case["mp"], case["tile"]
    x = np.ones(A.shape[1])
    t = time.perf_counter()
    cyc, _, _ = ref_simulate(tw, hw, mp.pe, mp.red, mp.src, (x != 0)[:, None], A.shape, tile)
    t_ref = time.perf_counter() - t
    res = S.simulate(tw, hw, x=x, shape=A.shape, tile=tile, mapping=mp, record=False)
    assert cyc == res.cycles, (cyc, res.cycles)
    print(f"[vs reference, {case['name']}] python reference {t_ref:.2f} s (same cycles {cyc:,}) | "
          f"simulate() {case['t_sim'] * 1e3:.1f} ms -> {t_ref / case['t_sim']:.0f}x | "
          f"engine kernel {case['t_eng'] * 1e3:.1f} ms -> {t_ref / case['t_eng']:.0f}x")


def vs_reference(repeats):
    A = sp.random(384, 384, density=0.06, random_state=2, format="csr")
    tile = 16
    tw = csc_tilework(A, tile)
    hw = HardwareConfig(rows=8, cols=8)
    nb = 384 // tile
    mp = map_tiles(tw, hw, method="greedy", n_brows=nb, n_bcols=nb)
    x = np.ones(384)
    S.simulate(tw, hw, x=x, shape=A.shape, tile=tile, mapping=mp)
    t_fast, res = median_time(lambda: S.simulate(tw, hw, x=x, shape=A.shape, tile=tile, mapping=mp,
                                                 record=False), repeats)
    t_eng, _ = median_time(engine_only(tw, hw, mp, 384, tile), repeats)
    t_ref, (cyc, _, _) = median_time(lambda: ref_simulate(tw, hw, mp.pe, mp.red, mp.src,
                                                          (x != 0)[:, None], A.shape, tile),
                                     max(1, repeats // 2))
    assert cyc == res.cycles, (cyc, res.cycles)
    print(f"[vs reference] 384x384 nnz={A.nnz:,} tiles={tw.n_tiles} deliveries={res.events:,} "
          f"(same cycles: {cyc})")
    print(f"  python reference {t_ref * 1e3:8.1f} ms | simulate() {t_fast * 1e3:7.2f} ms "
          f"-> {t_ref / t_fast:6.0f}x | engine kernel {t_eng * 1e3:6.2f} ms -> {t_ref / t_eng:6.0f}x")


def annealing(n, density, repeats):
    A = sp.random(n, n, density=density, random_state=3, format="csr")
    tw = csc_tilework(A, 32)
    hw = HardwareConfig()
    nb = -(-n // 32)
    map_tiles(tw, hw, n_brows=nb, n_bcols=nb, iterations=1000)  # warm
    t, m = median_time(lambda: map_tiles(tw, hw, n_brows=nb, n_bcols=nb, seed=0), repeats)
    print(f"[annealing] tiles={tw.n_tiles:,} on {hw.rows}x{hw.cols}: wall {t:.2f} s "
          f"(anneal loop {m.seconds:.2f} s), {m.iterations:,} iterations, "
          f"{m.iterations_per_s / 1e6:.2f} M it/s, objective greedy {m.greedy_objective:,.1f} -> "
          f"{m.objective:,.1f} ({100 * m.improvement:.1f} % better)")
    # the objective is an estimate: what the engine says of the two placements
    g = map_tiles(tw, hw, method="greedy", n_brows=nb, n_bcols=nb)
    sims = [S.simulate(tw, hw, shape=A.shape, tile=32, record=False, mapping=mp) for mp in (g, m)]
    print(f"  engine: greedy {sims[0].cycles:,} cycles / {sims[0].energy_total_pj / 1e6:.3f} µJ, annealed "
          f"{sims[1].cycles:,} cycles / {sims[1].energy_total_pj / 1e6:.3f} µJ "
          f"(cycles ×{sims[1].cycles / sims[0].cycles:.3f}, energy ×{sims[1].energy_total_pj / sims[0].energy_total_pj:.3f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small inputs, few repeats")
    a = ap.parse_args()
    hw = HardwareConfig()
    rep = 2 if a.quick else 3
    import numba
    print(time.strftime("%Y-%m-%d %H:%M"), "quick" if a.quick else "full",
          f"| load average {os.getloadavg()[0]:.1f} | numba threads {numba.get_num_threads()}")
    if a.quick:
        throughput("LLM-like 94 % pruned", llm_like(1024, 0.06), 32, hw, rep)
        vs_reference(rep)
        annealing(2048, 0.0009, 1)
    else:
        llm = throughput("LLM-like 94 % pruned", llm_like(4096, 0.06), 32, hw, rep)
        throughput("uniform random", uniform(100_000, 1_000_000), 32, hw, rep)
        vs_reference(rep)
        vs_reference_large(llm, hw)
        annealing(4096, 0.0009, rep)


if __name__ == "__main__":
    main()
