"""Fused CPU executor vs scipy CSR ``A @ x`` (issue 3, performance).

For every matrix: analyze (tiles), choose per tile the exact kernel whose CPU executor
layout streams the fewest bytes (:func:`cpu_bytes`; a simple rule local to this benchmark),
build the FusionPlan, check ``plan.matvec(x) == A @ x`` (rel. 1e-12), and time both
(alternating calls, same x, same run). The column ``select ε=0`` times the plan the library
itself gives, ``akfviz.select(pa, error_budget=0)``, the same way: the selector picks exact
kernels by their NPU cost, not by the CPU layout's bytes, so it can trail the first column. Also reports the bytes the executor streams per nonzero against
the CSR bound (12 B/nnz + 20 B/row: float64 values, int32 indices, x and y).

Run:  .venv/bin/python bench/bench_matvec.py [--quick] [--threads-always]
numba uses its default thread count (here: all cores) for the wall-clock columns; the
executor itself falls back to one thread when the load average is at least the number of
cores (column ``mode``). Times are medians of alternating scipy / fused calls; speedups are
medians of the per-pair ratios (robust to a shared machine's load drift).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from akfviz.analysis.pattern import analyze  # noqa: E402
from akfviz.selection.selector import select  # noqa: E402
from akfviz.execute import FusionPlan, fused, threads  # noqa: E402
from akfviz.kernels import LOSSLESS, get_kernel  # noqa: E402
from akfviz.kernels.block import tile_blocks  # noqa: E402
from akfviz.workloads.generators import generate  # noqa: E402


def dia_run_slots(ts):
    """Per tile: number of occupied diagonals and the summed run length (first to last
    stored entry of each diagonal) — what the executor's compact DIA format stores."""
    seg = np.repeat(np.arange(ts.n_tiles, dtype=np.int64), np.diff(ts.ptr))
    T = int(ts.tile)
    key = seg * (2 * T) + (ts.c - ts.r + T)
    order = np.argsort(key, kind="stable")  # entries of a diagonal: ascending r
    k = key[order]
    first = np.r_[True, k[1:] != k[:-1]]
    last = np.r_[k[1:] != k[:-1], True]
    r = ts.r[order]
    dseg = k[first] // (2 * T)
    ndiag = np.bincount(dseg, minlength=ts.n_tiles)
    slots = np.bincount(dseg, weights=r[last] - r[first] + 1, minlength=ts.n_tiles)
    return ndiag, slots


def cpu_bytes(name, ts):
    """Bytes the fused CPU executor streams for every tile under exact kernel ``name``
    (mirrors :func:`akfviz.execute.fused.pack_plan`).

    Residual (compressed rows: float64 value + uint16 column, uint32 beyond 65 536 columns):
    hyper-sparse tiles (``nnz < w``, DENSE ones too; DIA: ``2·nnz < min(h, w)``), every CSC tile, BITMAP tiles below 75 % density.
    Otherwise, plus a 56-byte tile record: DENSE ``8·h·w``; BITMAP ``8·h·ceil(w/64) +
    8·nnz``; DIA ``8·(run slots) + 4·d`` (a uint32 word per diagonal run); BLOCK ``nb·(128 + 16)``; NM ``9·h·ceil(w/M)·N``.
    """
    k = get_kernel(name)
    h, w = ts.h, ts.w
    nnz = np.diff(ts.ptr)
    res = (10 if ts.shape[1] <= 1 << 16 else 12) * nnz
    if name == "DENSE":  # exact DENSE tiles with fewer entries than columns run from the residual
        b = np.where(nnz < w, res, 8 * h * w + 56)
    elif name == "CSC":
        b = res
    elif name == "BITMAP":
        b = np.where(nnz < 0.75 * h * w, res, 8 * h * (-(-w // 64)) + 8 * nnz + 56)
    elif name == "DIA":
        ndiag, slots = dia_run_slots(ts)
        b = 8 * slots + 4 * ndiag + 56
    elif name == "BLOCK":
        b = np.diff(tile_blocks(ts, k.approx(ts))[0]) * (128 + 16) + 56
    else:  # N:M
        b = 9 * h * (-(-w // k.m)) * k.n + 56
    if name == "DIA":
        b = np.where(2 * nnz < np.minimum(h, w), res, b)
    elif k.entry_format:
        b = np.where(nnz < w, res, b)
    return b


def fewest_bytes_kernels(pa):
    """Per tile, among the kernels exact on it (E = 0: the lossless ones, and N:M on
    complying tiles), the one whose executor streams the fewest bytes."""
    ts = pa.tileset
    # CSC first: on a tie (a hyper-sparse tile runs from the residual under CSC and DENSE
    # alike) the plan names the sparse kernel
    cands = ["CSC"] + [k for k in LOSSLESS if k != "CSC"] + ["NM2:4", "NM1:4", "NM4:8"]
    table = np.stack([cpu_bytes(k, ts) for k in cands]).astype(float)
    for i, k in enumerate(cands):
        if not get_kernel(k).lossless:
            table[i, get_kernel(k).batch_error(ts) != 0.0] = np.inf
    return np.asarray(cands, dtype=object)[np.argmin(table, axis=0)]


def paired_times(fa, fb, repeats, clock=time.perf_counter):
    """Alternate ``fa`` and ``fb`` ``repeats`` times (after a warm-up of each) → (median time
    of a, median time of b, median of the per-pair ratios a/b). Pairing cancels most of the
    drift of a shared machine's load."""
    fa()
    fb()
    ta, tb = [], []
    for _ in range(repeats):
        t0 = clock()
        fa()
        t1 = clock()
        fb()
        t2 = clock()
        ta.append(t1 - t0)
        tb.append(t2 - t1)
    ta, tb = np.asarray(ta), np.asarray(tb)
    return float(np.median(ta)), float(np.median(tb)), float(np.median(ta / tb))


def median_time(fn, repeats, clock=time.perf_counter):
    """Median over ``repeats`` calls (after one warm-up) measured with ``clock``."""
    fn()
    ts = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    return float(np.median(ts))


def suite(quick: bool):
    s = 8 if quick else 1
    yield "unstructured (uniform)", "uniform", generate("uniform", n=100_000 // s, density=1e-4 * s, seed=0)
    yield "banded (bw 8)", "banded", generate("banded", n=60_000 // s, bandwidth=8, density=1.0, seed=0)
    yield "2-D stencil 5-pt", "stencil5", generate("stencil5", n=200_000 // s, seed=0)
    yield "block-diagonal 32", "block", generate("block_diagonal", n=32_768 // s, block=32, density=1.0, seed=0)
    yield "N:M 2:4", "nm", generate("nm", n=1448 // (2 if quick else 1), pattern="2:4", seed=0)
    yield "N:M 1:4", "nm", generate("nm", n=2048 // (2 if quick else 1), pattern="1:4", seed=0)
    yield "N:M 4:8", "nm", generate("nm", n=1448 // (2 if quick else 1), pattern="4:8", seed=0)
    for f in ("minilm_ffn0_mag50", "minilm_ffn0_nm24", "minilm_ffn0_mag90"):
        p = ROOT / "sample_data" / f"{f}.npz"
        if p.exists():
            yield f"MiniLM {f[7:]}", "llm", sp.csr_array(sp.load_npz(p)).astype(np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small matrices, few repeats")
    ap.add_argument("--tile", type=int, default=32)
    ap.add_argument("--threads-always", action="store_true",
                    help="use the worker threads even when the load average says the cores are "
                         "busy (the executor's default is to fall back to one thread then)")
    args = ap.parse_args(argv)
    repeats = 7 if args.quick else 61
    if args.threads_always:
        threads.cores_have_room = lambda: True
    print(f"numba threads: {numba.get_num_threads()} (default) for the wall-clock columns; "
          f"'cpu' columns: thread CPU time, fused run with 1 thread   "
          f"tile T={args.tile}   repeats={repeats} (median)")
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    except OSError:
        pass
    hdr = (f"{'matrix':28s} {'shape':>15s} {'nnz':>9s} {'scipy ms':>9s} {'fused ms':>9s} mode "
           f"{'speedup':>8s} {'scipy cpu':>9s} {'1thr cpu':>8s} {'speedup':>8s} {'B/nnz':>6s} {'CSR B/nnz':>9s} {'build ms':>8s} "
           f"{'select ε=0':>10s}  kernels / executor formats; select's kernels")
    print(hdr)
    rows = []
    for label, kind, A in suite(args.quick):
        A = sp.csr_array(A)
        A.sum_duplicates()
        A.eliminate_zeros()
        A.indices = A.indices.astype(np.int32)
        A.indptr = A.indptr.astype(np.int32)
        pa = analyze(A, tile=args.tile)
        # a Categorical, as the selector passes it (no hashing of one string per tile)
        names = pd.Categorical(fewest_bytes_kernels(pa))
        FusionPlan(pa, names)  # warm-up (numba compilation / cache load)
        build = median_time(lambda: FusionPlan(pa, names), 3 if args.quick else 5)
        plan = FusionPlan(pa, names)
        x = np.random.default_rng(0).standard_normal(A.shape[1])
        ref = A @ x
        y = plan.matvec(x)
        err = np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-300)
        assert err <= 1e-12, (label, err)
        t_sp, t_fu, r_wall = paired_times(lambda: A @ x, lambda: plan.matvec(x), repeats)
        # single-threaded CPU time (time.thread_time): robust when other processes share
        # the cores, and a like-for-like comparison with scipy's single-threaded kernel
        nthreads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            c_sp, c_fu, r_cpu = paired_times(lambda: A @ x, lambda: plan.matvec(x), repeats,
                                             time.thread_time)
        finally:
            numba.set_num_threads(nthreads)
        par = "2thr" if plan._packed._parallel() else "1thr"
        n_rows, n_cols = A.shape
        moved = plan._packed.bytes_moved() + 8 * (n_rows + n_cols)
        bpn = moved / max(A.nnz, 1)
        csr_bound = (12 * A.nnz + 20 * n_rows) / max(A.nnz, 1)
        fmts = {k: v for k, v in plan._packed.format_tiles().items() if v}
        kc = plan.kernel_counts.to_dict()
        # the library's own exact plan, timed the same way (wall clock, default threads)
        sel = select(pa, error_budget=0)
        y_sel = sel.matvec(x)
        assert np.max(np.abs(y_sel - ref)) / max(np.max(np.abs(ref)), 1e-300) <= 1e-12, (label, "select")
        _, _, r_sel = paired_times(lambda: A @ x, lambda: sel.matvec(x), repeats)
        print(f"{label:28s} {str(A.shape):>15s} {A.nnz:9d} {t_sp*1e3:9.3f} {t_fu*1e3:9.3f} {par} "
              f"{r_wall:7.2f}x {c_sp*1e3:9.3f} {c_fu*1e3:8.3f} {r_cpu:7.2f}x {bpn:6.2f} {csr_bound:9.2f} {build*1e3:8.1f} "
              f"{r_sel:9.2f}x  {kc} / {fmts}; {sel.kernel_counts.to_dict()}")
        rows.append((label, kind, r_wall, r_cpu, r_sel))
    try:
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
    except OSError:
        pass
    return rows


if __name__ == "__main__":
    main()
