#!/usr/bin/env python
"""Workload benchmarks: akfviz loaders / generators / pruning against plain scipy / numpy.

Prints, for each case, the median time (of several repeats, same inputs, one run) of our code
and of the reference, and their ratio (ours / reference; < 1 means we are faster). Our loaders do
more than the references (header checks against limits, index validation, canonical form), so
a ratio a little above 1 is the price of that safety.

    .venv/bin/python bench/bench_workloads.py           # full sizes
    .venv/bin/python bench/bench_workloads.py --quick   # small sizes, a few seconds
"""
from __future__ import annotations

import argparse
import io
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse as sp
from safetensors.numpy import load as st_load, save as st_save

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from akfviz.workloads import generate, load, prune  # noqa: E402


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def row(name, ours, ref, ref_name):
    print(f"{name:44s} ours {ours * 1e3:9.2f} ms   {ref_name:28s} {ref * 1e3:9.2f} ms   ratio {ours / ref:5.2f}")


def naive_magnitude(W, s):
    """Reference: a full stable sort of |w| (what one writes first)."""
    k = int(round((1 - s) * W.size))
    order = np.argsort(-np.abs(W).ravel(), kind="stable")[:k]
    out = np.zeros(W.size)
    out[order] = W.ravel()[order]
    return sp.csr_array(out.reshape(W.shape))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes")
    args = ap.parse_args(argv)
    n_big = 20_000 if args.quick else 100_000
    dense_n = 1024 if args.quick else 2048
    reps = 3 if args.quick else 5
    print(f"# bench_workloads ({'quick' if args.quick else 'full'}): median of {reps} repeats")

    A = generate("uniform", n=n_big, density=1e6 / n_big**2 if not args.quick else 1e-3, seed=0)
    print(f"# uniform matrix {A.shape}, nnz={A.nnz}")
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        sp.save_npz(d / "a.npz", A)
        row("load .npz (csr)", median_time(lambda: load(d / "a.npz"), reps),
            median_time(lambda: sp.csr_array(sp.load_npz(d / "a.npz")), reps), "scipy.sparse.load_npz")
        scipy.io.mmwrite(d / "a.mtx", A)
        row("load .mtx (coordinate real)", median_time(lambda: load(d / "a.mtx"), reps),
            median_time(lambda: sp.csr_array(scipy.io.mmread(d / "a.mtx")), reps), "scipy.io.mmread+tocsr")
        W = generate("llm", n=dense_n // 4, m=dense_n // 4, sparsity=0.0, seed=0).toarray()
        np.save(d / "w.npy", W)
        row(f"load .npy dense {W.shape}", median_time(lambda: load(d / "w.npy"), reps),
            median_time(lambda: sp.csr_array(np.load(d / "w.npy")), reps), "np.load+csr_array")
        blob = st_save({"w": W.astype(np.float32), "b": np.zeros(W.shape[0], np.float32)})
        (d / "w.safetensors").write_bytes(blob)
        row(f"load .safetensors F32 {W.shape}", median_time(lambda: load(blob, tensor="w"), reps),
            median_time(lambda: sp.csr_array(st_load(blob)["w"].astype(np.float64)), reps),
            "safetensors.numpy.load+csr")

    density = 1e6 / n_big**2 if not args.quick else 1e-3
    row(f"generate uniform {n_big}² density {density:.0e}",
        median_time(lambda: generate("uniform", n=n_big, density=density, seed=1), reps),
        median_time(lambda: sp.random_array((n_big, n_big), density=density, rng=1, format="csr"), reps),
        "scipy.sparse.random_array")
    Wd = np.random.default_rng(0).standard_normal((dense_n, dense_n))
    row(f"prune magnitude 90% {dense_n}²", median_time(lambda: prune(Wd, "magnitude", sparsity=0.9), reps),
        median_time(lambda: naive_magnitude(Wd, 0.9), reps), "stable argsort of |w|")
    S = sp.csr_array(Wd)
    row(f"prune nm 2:4 dense {dense_n}²", median_time(lambda: prune(Wd, "nm", pattern="2:4"), reps),
        median_time(lambda: prune(S, "nm", pattern="2:4"), reps), "same on csr input")
    for kind in ("stencil5", "banded", "powerlaw", "nm", "llm"):
        n = 512 if kind == "llm" else (dense_n * 4 if not args.quick else dense_n)
        t = median_time(lambda: generate(kind, n=n, seed=0), reps)
        B = generate(kind, n=n, seed=0)
        print(f"generate {kind:10s} n={n:6d}: {t * 1e3:8.2f} ms, nnz={B.nnz}")


if __name__ == "__main__":
    main()
