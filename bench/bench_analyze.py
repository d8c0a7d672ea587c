"""Benchmark: akfviz.analyze vs one scipy SpMV of the same matrix (issue 2, akf-spec §2).

Target: analyze on a 1M-nnz uniform random 100k×100k matrix (T = 32) costs at most
10 SpMVs (``A @ x``, scipy), medians over repeats after a warm-up (numba compiled).
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


def median_time(fn, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def measure(name, A, tile, repeats, spmv_repeats):
    x = np.random.default_rng(1).standard_normal(A.shape[1])
    akfviz.analyze(A, tile=tile).tiles  # warm-up (JIT / caches)
    A @ x
    spmv_a = median_time(lambda: A @ x, spmv_repeats)
    stages = []
    totals = []
    with_tiles = []
    sys_times = []
    for _ in range(repeats):
        r0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
        t = time.perf_counter()
        pa = akfviz.analyze(A, tile=tile)
        t1 = time.perf_counter()
        sys_times.append(resource.getrusage(resource.RUSAGE_SELF).ru_stime - r0)
        pa.tiles  # first access builds the DataFrame (cached afterwards)
        t2 = time.perf_counter()
        totals.append(t1 - t)
        with_tiles.append(t2 - t)
        stages.append(pa.timings)
    spmv_b = median_time(lambda: A @ x, spmv_repeats)
    spmv = float(np.median([spmv_a, spmv_b]))
    an = float(np.median(totals))
    an_t = float(np.median(with_tiles))
    stage_med = {k: float(np.median([s[k] for s in stages])) for k in stages[0]}
    print(f"\n{name}: shape={A.shape} nnz={A.nnz} T={tile} tiles={pa.n_tiles} "
          f"clusters={pa.n_clusters}")
    print(f"  scipy SpMV median {spmv * 1e3:8.2f} ms   analyze median {an * 1e3:8.2f} ms   "
          f"ratio {an / spmv:6.1f} SpMVs")
    print(f"  per run: " + " ".join(f"{v * 1e3:.0f}" for v in totals) + " ms; kernel (system) CPU "
          f"time per run: " + " ".join(f"{v * 1e3:.0f}" for v in sys_times) + " ms (page faults on "
          f"fresh memory; summed over threads)")
    print(f"  analyze + first pa.tiles median {an_t * 1e3:8.2f} ms   ratio {an_t / spmv:6.1f} SpMVs")
    print("  stages (ms): " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in stage_med.items()))
    return an / spmv


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small matrices, few repeats")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args()
    if args.quick:
        n, nnz, reps, spmv_reps = 20_000, 200_000, 3, 20
    else:
        n, nnz, reps, spmv_reps = 100_000, 1_000_000, 7, 50
    reps = args.repeats or reps
    print(f"bench_analyze  {time.strftime('%Y-%m-%d %H:%M')}  numba threads="
          f"{__import__('numba').get_num_threads()}  cpus={os.cpu_count()}  "
          f"load average {os.getloadavg()[0]:.1f}")
    ratio = measure("uniform random", uniform(n, nnz), 32, reps, spmv_reps)
    print(f"  target <= 10 SpMVs: {'MET' if ratio <= 10 else 'MISSED'}")
    side = int(np.sqrt(n))
    measure("uniform random, T=8", uniform(n, nnz), 8, reps, spmv_reps)
    measure("banded (41 diagonals)", banded(n // 2 if args.quick else n), 32, reps, spmv_reps)
    measure("2-D 5-point stencil", stencil5(side), 32, reps, spmv_reps)
    measure("block diagonal 64x64 @ 50%", block_diag(n // 2), 32, reps, spmv_reps)
    llm_n = 1024 if args.quick else 4096
    measure(f"LLM-like {llm_n}x{llm_n} pruned to 6 % (magnitude)",
            akfviz.generate("llm", n=llm_n, sparsity=0.94, seed=0), 32, reps, spmv_reps)


if __name__ == "__main__":
    main()
