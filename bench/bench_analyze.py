"""Benchmark: akfviz.analyze vs one scipy SpMV of the same matrix (issue 2, akf-spec §2).

Target: analyze on a 1M-nnz uniform random 100k×100k matrix (T = 32) costs at most
10 SpMVs (``A @ x``, scipy), medians over repeats after a warm-up (numba compiled, then
``cache_state.WARMUP_CALLS`` calls while the process first-touches its heap; their times are printed).
Both sides are timed warm (each in its own loop) and cold (caches flushed before every call,
see cache_state.py); the verdict takes the larger ratio. Before the fortieth session the analyses
were timed each after the previous one's ``pa.tiles`` (which writes ≈ 170 MB and evicts the
matrix) against a warm SpMV; that figure is still printed as "older protocol".
Also reports T = 32 on structured matrices and the time per stage.

    .venv/bin/python bench/bench_analyze.py            # full run
    .venv/bin/python bench/bench_analyze.py --quick    # small matrices
"""
import argparse
import os
import resource
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import akfviz  # noqa: E402
from cache_state import FLUSH_MB, Flusher, median_time, runs_ms, warm_up  # noqa: E402


def uniform(n, nnz, seed=0):
    return sp.random_array((n, n), density=nnz / n / n, format="csr",
                           rng=np.random.default_rng(seed))


def banded(n, half_bw=40, seed=0):
    rng = np.random.default_rng(seed)
    offs = list(range(-half_bw, half_bw + 1, 4))
    return sp.csr_array(sp.diags_array([rng.standard_normal(n - abs(k)) for k in offs],
                                       offsets=offs, shape=(n, n)))


def stencil5(side):
    one = sp.diags_array([-np.ones(side - 1), 2 * np.ones(side), -np.ones(side - 1)],
                         offsets=[-1, 0, 1])
    eye = sp.eye_array(side)
    return sp.csr_array(sp.kron(one, eye) + sp.kron(eye, one))


def block_diag(n, b=64, density=0.5, seed=0):
    rng = np.random.default_rng(seed)
    blocks = [sp.random_array((b, b), density=density, rng=rng) for _ in range(n // b)]
    return sp.csr_array(sp.block_diag(blocks))


def measure(name, A, tile, repeats, spmv_repeats, flusher):
    """Ratios analyze / SpMV, warm and cold (see cache_state.py), and the older protocol's
    figure: analyze right after the previous analysis' ``pa.tiles`` (≈ 170 MB written on the
    hyper-sparse matrix), against a warm SpMV. Returns the larger of the warm and cold ratios."""
    x = np.random.default_rng(1).standard_normal(A.shape[1])
    akfviz.analyze(A, tile=tile).tiles  # warm-up (JIT / caches)
    first = warm_up(lambda: akfviz.analyze(A, tile=tile))  # the heap reaches its working size
    A @ x
    spmv = lambda: A @ x  # noqa: E731
    an = lambda: akfviz.analyze(A, tile=tile)  # noqa: E731
    # warm: each side in its own tight loop (SpMV before and after the analyses)
    spmv_a, _ = median_time(spmv, spmv_repeats)
    warm_runs, sys_times, stages = [], [], []

    def analyze_warm():
        r0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
        pa = an()
        sys_times.append(resource.getrusage(resource.RUSAGE_SELF).ru_stime - r0)
        stages.append(pa.timings)
        return pa

    an_warm, pa = median_time(analyze_warm, repeats, runs=warm_runs)
    spmv_b, _ = median_time(spmv, spmv_repeats)
    spmv_warm = float(np.median([spmv_a, spmv_b]))
    # cold: the caches flushed before every call of either side
    cold_reps = max(5, repeats)
    spmv_cold, _ = median_time(spmv, cold_reps, before=flusher.flush)
    cold_runs = []
    an_cold, _ = median_time(an, cold_reps, before=flusher.flush, runs=cold_runs)
    # the older protocol: each analysis after the previous one's pa.tiles
    old_runs, with_tiles = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        pa = an()
        t1 = time.perf_counter()
        pa.tiles  # first access builds the DataFrame (and runs the deferred full pass)
        old_runs.append(t1 - t)
        with_tiles.append(time.perf_counter() - t)
    an_old = float(np.median(old_runs))
    an_t = float(np.median(with_tiles))
    stage_med = {k: float(np.median([s[k] for s in stages])) for k in stages[0]}
    warm, cold = an_warm / spmv_warm, an_cold / spmv_cold
    print(f"\n{name}: shape={A.shape} nnz={A.nnz} T={tile} tiles={pa.n_tiles} "
          f"clusters={pa.n_clusters}")
    print(f"  warm: scipy SpMV median {spmv_warm * 1e3:6.2f} ms   analyze median {an_warm * 1e3:7.2f} ms   "
          f"ratio {warm:5.1f} SpMVs")
    print(f"        warm-up calls (untimed by the medians, after the first, compiling one): {runs_ms(first)} ms")
    print(f"        runs: {runs_ms(warm_runs)} ms; kernel (system) CPU time per run: {runs_ms(sys_times)} ms "
          f"(page faults on fresh memory, summed over threads: the first runs of a process)")
    print(f"  cold: scipy SpMV median {spmv_cold * 1e3:6.2f} ms   analyze median {an_cold * 1e3:7.2f} ms   "
          f"ratio {cold:5.1f} SpMVs   (caches flushed before each call; runs {runs_ms(cold_runs)} ms)")
    print(f"  older protocol (each analysis after the previous pa.tiles, against the warm SpMV): "
          f"{an_old * 1e3:.2f} ms = {an_old / spmv_warm:.1f} SpMVs; runs {runs_ms(old_runs)} ms")
    print(f"  analyze + first pa.tiles median {an_t * 1e3:8.2f} ms   ratio {an_t / spmv_warm:6.1f} SpMVs (warm)")
    print("  stages, warm (ms): " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in stage_med.items()))
    return max(warm, cold)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small matrices, few repeats")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--flush-mb", type=int, default=FLUSH_MB,
                    help="megabytes written before each cold call (default %(default)s)")
    args = ap.parse_args()
    if args.quick:
        n, nnz, reps, spmv_reps = 20_000, 200_000, 3, 20
    else:
        n, nnz, reps, spmv_reps = 100_000, 1_000_000, 15, 50
    reps = args.repeats or reps
    flusher = Flusher(args.flush_mb)
    print(f"bench_analyze  {time.strftime('%Y-%m-%d %H:%M')}  numba threads="
          f"{__import__('numba').get_num_threads()}  cpus={os.cpu_count()}  "
          f"load average {os.getloadavg()[0]:.1f}")
    ratio = measure("uniform random", uniform(n, nnz), 32, reps, spmv_reps, flusher)
    print(f"  target <= 10 SpMVs (the larger of the warm and cold ratios): {'MET' if ratio <= 10 else 'MISSED'}")
    side = int(np.sqrt(n))
    measure("uniform random, T=8", uniform(n, nnz), 8, reps, spmv_reps, flusher)
    measure("banded (41 diagonals)", banded(n // 2 if args.quick else n), 32, reps, spmv_reps, flusher)
    measure("2-D 5-point stencil", stencil5(side), 32, reps, spmv_reps, flusher)
    measure("block diagonal 64x64 @ 50%", block_diag(n // 2), 32, reps, spmv_reps, flusher)
    llm_n = 1024 if args.quick else 4096
    measure(f"LLM-like {llm_n}x{llm_n} pruned to 6 % (magnitude)",
            akfviz.generate("llm", n=llm_n, sparsity=0.94, seed=0), 32, reps, spmv_reps, flusher)


if __name__ == "__main__":
    main()
