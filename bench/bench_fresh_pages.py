"""Benchmark: freed memory kept for reuse (akfviz.allocator) against the C library's defaults.

Two child processes, one with ``AKFVIZ_KEEP_FREED_MEMORY=0``, each time ``analyze`` and ``select``
(cluster mode) of the 1M-nnz uniform 100k×100k matrix (T = 32) and one scipy SpMV of it, and count
the page faults (``ru_minflt``) and kernel CPU time of every call. The processes alternate, so both
see the machine in the same state; the ratio is taken between their medians.

    .venv/bin/python bench/bench_fresh_pages.py            # 9 calls per process, 2 rounds
    .venv/bin/python bench/bench_fresh_pages.py --quick    # a 200k-nnz matrix
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
import numpy as np, scipy.sparse as sp
import akfviz
from akfviz.allocator import keeps_freed_memory
n, nnz, repeats = {n}, {nnz}, {repeats}
A = sp.random_array((n, n), density=nnz / n / n, format="csr", rng=np.random.default_rng(0))
x = np.random.default_rng(1).standard_normal(n)
pa = akfviz.analyze(A, tile=32)
akfviz.select(pa)
out = {{"active": keeps_freed_memory()}}
for name, f in (("spmv", lambda: A @ x), ("analyze", lambda: akfviz.analyze(A, tile=32)),
                ("select", lambda: akfviz.select(pa))):
    ms, faults, sys_ms = [], [], []
    for _ in range(repeats if name != "spmv" else 10 * repeats):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        f()
        ms.append(1e3 * (time.perf_counter() - t0))
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        faults.append(r1.ru_minflt - r0.ru_minflt)
        sys_ms.append(1e3 * (r1.ru_stime - r0.ru_stime))
    out[name] = {{"ms": ms, "faults": faults, "sys_ms": sys_ms}}
print(json.dumps(out))
"""


def child(keep, n, nnz, repeats):
    env = dict(os.environ, AKFVIZ_KEEP_FREED_MEMORY="1" if keep else "0")
    code = CHILD.format(root=ROOT, n=n, nnz=nnz, repeats=repeats)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def median(v):
    v = sorted(v)
    k = len(v)
    return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    n, nnz, repeats = (40_000, 200_000, 7) if args.quick else (100_000, 1_000_000, 9)
    print(f"uniform {n}x{n}, nnz={nnz:,}, T=32; {repeats} calls per process, {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        res = {keep: child(keep, n, nnz, repeats) for keep in (True, False)}
        print(f"round {r + 1}")
        for name in ("spmv", "analyze", "select"):
            on, off = res[True][name], res[False][name]
            print(f"  {name:8s} kept: {median(on['ms']):7.2f} ms, faults/call {median(on['faults']):6.0f} | "
                  f"defaults: {median(off['ms']):7.2f} ms, faults/call {median(off['faults']):6.0f} | "
                  f"defaults / kept {median(off['ms']) / median(on['ms']):5.2f}x")
        a_on, a_off = res[True], res[False]
        for label, d in (("kept", a_on), ("defaults", a_off)):
            ratio = median(d["analyze"]["ms"]) / median(d["spmv"]["ms"])
            both = (median(d["analyze"]["ms"]) + median(d["select"]["ms"])) / median(d["spmv"]["ms"])
            print(f"  {label:8s} analyze = {ratio:5.1f} SpMVs, analyze + select = {both:5.1f} SpMVs "
                  f"(policy active: {d['active']}); analyze per call: "
                  + " ".join(f"{t:.0f}" for t in d["analyze"]["ms"]) + " ms")


if __name__ == "__main__":
    main()
