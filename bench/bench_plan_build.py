"""Benchmark: FusionPlan construction time against one scipy SpMV (issue 3, akf-spec §5, §9).

For each input the Dynamic Fuse Selector (``akfviz.select``, cluster mode, α = β = 1) picks the
kernels once; then ``FusionPlan(pa, kernels)`` is timed — given as a ``pandas.Categorical`` (no
per-tile strings to hash) and as the object array of names — next to a scipy ``A @ x`` on the
same matrix. Medians of several repeats after a warm-up (numba compiled), measured in one run.

    .venv/bin/python bench/bench_plan_build.py            # 1M-nnz uniform + structured inputs
    .venv/bin/python bench/bench_plan_build.py --quick    # small matrices
"""
import argparse
import os
import sys
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import akfviz  # noqa: E402
from akfviz.execute import FusionPlan  # noqa: E402


def median_time(f, repeats):
    """(median, min) seconds of ``repeats`` calls after one warm-up."""
    f()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), float(np.min(ts))


def inputs(quick):
    s = 8 if quick else 1
    A = akfviz.generate("uniform", n=100_000 // s, density=1e-4 * s, seed=0)
    yield f"uniform ({A.nnz / 1e6:.3g}M nnz)", A      # 1M nnz; --quick 125k
    yield "banded (bw 8)", akfviz.generate("banded", n=60_000 // s, bandwidth=8, density=1.0, seed=0)
    yield "2-D stencil 5-pt", akfviz.generate("stencil5", n=200_000 // s, seed=0)
    yield "block-diagonal 32", akfviz.generate("block_diagonal", n=32_768 // s, block=32, density=1.0, seed=0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small matrices, few repeats")
    ap.add_argument("--tile", type=int, default=32)
    args = ap.parse_args(argv)
    repeats = 5 if args.quick else 21
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
              f"T={args.tile}; medians of {repeats}")
    except OSError:
        pass
    print(f"{'matrix':22s} {'nnz':>9s} {'tiles':>9s} {'SpMV ms':>8s} {'plan ms':>8s} {'(min)':>7s} "
          f"{'SpMVs':>6s} {'obj ms':>8s} {'SpMVs':>6s}  kernels")
    for label, A in inputs(args.quick):
        A = sp.csr_array(A)
        pa = akfviz.analyze(A, tile=args.tile)
        plan = akfviz.select(pa)
        names = np.asarray(plan.tile_kernels, dtype=object)
        cat = pd.Categorical(names)
        x = np.random.default_rng(0).standard_normal(A.shape[1])
        spmv = median_time(lambda: A @ x, 5 * repeats)[0]
        t_cat, t_min = median_time(lambda: FusionPlan(pa, cat), repeats)
        t_obj = median_time(lambda: FusionPlan(pa, names), repeats)[0]
        spmv = min(spmv, median_time(lambda: A @ x, 5 * repeats)[0])
        mix = ", ".join(f"{k} {v}" for k, v in plan.kernel_counts.items())
        print(f"{label:22s} {A.nnz:9,d} {pa.n_tiles:9,d} {1e3 * spmv:8.2f} {1e3 * t_cat:8.2f} "
              f"{1e3 * t_min:7.2f} {t_cat / spmv:6.1f} {1e3 * t_obj:8.2f} {t_obj / spmv:6.1f}  {mix}")


if __name__ == "__main__":
    main()
