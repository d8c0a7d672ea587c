"""Fused CPU executor vs scipy CSR ``A @ x`` (issue 3, performance).

For every matrix: analyze (tiles), choose per tile the exact kernel with the fewest NPU
payload bytes (a simple rule local to this benchmark — the selector is elsewhere), build the
FusionPlan, check ``plan.matvec(x) == A @ x`` (rel. 1e-12), and time both (median of
repeats, same x, same run). Also reports the bytes the executor streams per nonzero against
the CSR bound (12 B/nnz + 20 B/row: float64 values, int32 indices, x and y).

Run:  .venv/bin/python bench/bench_matvec.py [--quick]
numba uses its default thread count (here: all cores).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba
import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from akfviz.analysis.pattern import analyze  # noqa: E402
from akfviz.execute import FusionPlan  # noqa: E402
from akfviz.kernels import LOSSLESS, get_kernel  # noqa: E402
from akfviz.kernels.block import tile_blocks  # noqa: E402
from akfviz.kernels.dia import tile_diagonals  # noqa: E402
from akfviz.workloads.generators import generate  # noqa: E402


def cpu_bytes(name, ts):
    """Bytes the fused CPU executor streams for every tile under exact kernel ``name``.

    Hyper-sparse tiles (``nnz < w``) of entry formats go to the residual: 12 B per entry
    (float64 value + uint32 column). Otherwise: DENSE ``8·h·w``; CSC ``9·nnz + 8·(w+1)``;
    BITMAP ``8·w·ceil(h/64) + 8·nnz``; DIA ``d·(8·h + 16)``; BLOCK ``nb·(128 + 16)``;
    NM ``9·h·ceil(w/M)·N``.
    """
    k = get_kernel(name)
    h, w = ts.h, ts.w
    nnz = np.diff(ts.ptr)
    ap = k.approx(ts)
    if name == "DENSE":
        b = 8 * h * w
    elif name == "CSC":
        b = 9 * nnz + 8 * (w + 1)
    elif name == "BITMAP":
        b = 8 * w * (-(-h // 64)) + 8 * nnz
    elif name == "DIA":
        b = np.diff(tile_diagonals(ts, ap)[0]) * (8 * h + 16)
    elif name == "BLOCK":
        b = np.diff(tile_blocks(ts, ap)[0]) * (128 + 16)
    else:  # N:M
        b = 9 * h * (-(-w // k.m)) * k.n
    if k.entry_format:
        b = np.where(nnz < w, 12 * nnz, b)
    return b


def fewest_bytes_kernels(pa):
    """Per tile, among the kernels exact on it (E = 0: the lossless ones, and N:M on
    complying tiles), the one whose executor streams the fewest bytes."""
    ts = pa.tileset
    cands = list(LOSSLESS) + ["NM2:4", "NM1:4", "NM4:8"]
    table = np.stack([cpu_bytes(k, ts) for k in cands]).astype(float)
    for i, k in enumerate(cands):
        if not get_kernel(k).lossless:
            table[i, get_kernel(k).batch_error(ts) != 0.0] = np.inf
    return np.asarray(cands, dtype=object)[np.argmin(table, axis=0)]


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
    for f in ("minilm_ffn0_mag50", "minilm_ffn0_nm24", "minilm_ffn0_mag90"):
        p = ROOT / "sample_data" / f"{f}.npz"
        if p.exists():
            yield f"MiniLM {f[7:]}", "llm", sp.csr_array(sp.load_npz(p)).astype(np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small matrices, few repeats")
    ap.add_argument("--tile", type=int, default=32)
    args = ap.parse_args(argv)
    repeats = 7 if args.quick else 31
    print(f"numba threads: {numba.get_num_threads()} (default) for the wall-clock columns; "
          f"'cpu' columns: thread CPU time, fused run with 1 thread   "
          f"tile T={args.tile}   repeats={repeats} (median)")
    try:
        import os
        print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    except OSError:
        pass
    hdr = (f"{'matrix':28s} {'shape':>15s} {'nnz':>9s} {'scipy ms':>9s} {'fused ms':>9s} "
           f"{'speedup':>8s} {'scipy cpu':>9s} {'1thr cpu':>8s} {'speedup':>8s} {'B/nnz':>6s} {'CSR B/nnz':>9s} {'build ms':>8s}  kernels / executor formats")
    print(hdr)
    rows = []
    for label, kind, A in suite(args.quick):
        A = sp.csr_array(A)
        A.sum_duplicates()
        A.eliminate_zeros()
        A.indices = A.indices.astype(np.int32)
        A.indptr = A.indptr.astype(np.int32)
        pa = analyze(A, tile=args.tile)
        names = fewest_bytes_kernels(pa)
        t0 = time.perf_counter()
        plan = FusionPlan(pa, names)
        build = time.perf_counter() - t0
        x = np.random.default_rng(0).standard_normal(A.shape[1])
        ref = A @ x
        y = plan.matvec(x)
        err = np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-300)
        assert err <= 1e-12, (label, err)
        t_sp = median_time(lambda: A @ x, repeats)
        t_fu = median_time(lambda: plan.matvec(x), repeats)
        t_sp = min(t_sp, median_time(lambda: A @ x, repeats))  # interleaved second round:
        t_fu = min(t_fu, median_time(lambda: plan.matvec(x), repeats))  # less load noise
        # single-threaded CPU time (time.thread_time): robust when other processes share
        # the cores, and a like-for-like comparison with scipy's single-threaded kernel
        nthreads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            c_sp = median_time(lambda: A @ x, repeats, time.thread_time)
            c_fu = median_time(lambda: plan.matvec(x), repeats, time.thread_time)
        finally:
            numba.set_num_threads(nthreads)
        n_rows, n_cols = A.shape
        moved = plan._packed.bytes_moved() + 8 * (n_rows + n_cols)
        bpn = moved / max(A.nnz, 1)
        csr_bound = (12 * A.nnz + 20 * n_rows) / max(A.nnz, 1)
        fmts = {k: v for k, v in plan._packed.format_tiles().items() if v}
        kc = plan.kernel_counts.to_dict()
        print(f"{label:28s} {str(A.shape):>15s} {A.nnz:9d} {t_sp*1e3:9.3f} {t_fu*1e3:9.3f} "
              f"{t_sp/t_fu:7.2f}x {c_sp*1e3:9.3f} {c_fu*1e3:8.3f} {c_sp/c_fu:7.2f}x {bpn:6.2f} {csr_bound:9.2f} {build*1e3:8.1f}  {kc} / {fmts}")
        rows.append((label, kind, t_sp / t_fu, c_sp / c_fu))
    return rows


if __name__ == "__main__":
    main()
