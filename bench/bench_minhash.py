"""Benchmark: akfviz's numba MinHash vs datasketch.MinHash on the same tile signatures.

Both hash the set of occupied coarse cells of every tile (akf-spec §2). Reported: the
speed ratio (target ≥ 50×) and the error distributions of the Jaccard estimates
(``estimate − exact``, over sampled pairs of tiles) of both implementations, which should
agree statistically (both unbiased with spread ≈ sqrt(J(1 − J)/K)). datasketch is a
benchmark-only dependency.

    .venv/bin/python bench/bench_minhash.py            # full run
    .venv/bin/python bench/bench_minhash.py --quick
"""
import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from akfviz.analysis import analyze  # noqa: E402
from akfviz.analysis.minhash import minhash_signatures  # noqa: E402


def tile_signatures(n, seed):
    """Signatures of the tiles of a mixed matrix (random + banded + blocks), T = 32."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=0.01, format="lil", rng=rng)
    for k in range(-20, 21, 5):
        idx = np.arange(max(0, -k), min(n, n - k))
        A[idx, idx + k] = 1.0
    A = sp.csr_array(A)
    return analyze(A, tile=32).signatures


def cells(sig):
    s = int(sig)
    return [x for x in range(64) if (s >> x) & 1]


def popj(a, b):
    a, b = int(a), int(b)
    return bin(a & b).count("1") / bin(a | b).count("1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from datasketch import MinHash

    n = 2000 if args.quick else 8000
    n_pairs = 2000 if args.quick else 10000
    K = 32
    sigs = tile_signatures(n, 0)
    sets = [[x.to_bytes(1, "little") for x in cells(s)] for s in sigs]
    print(f"bench_minhash  {time.strftime('%Y-%m-%d %H:%M')}  tiles={sigs.size} "
          f"unique signatures={np.unique(sigs).size} K={K}")

    minhash_signatures(sigs[:10], K, seed=1)  # warm-up
    ours_t = []
    for _ in range(7):
        t = time.perf_counter()
        mh = minhash_signatures(sigs, K, seed=1)
        ours_t.append(time.perf_counter() - t)
    ds_t = []
    for rep in range(3):
        t = time.perf_counter()
        ds = MinHash.bulk(sets, num_perm=K, seed=1)
        ds_t.append(time.perf_counter() - t)
    ours, theirs = float(np.median(ours_t)), float(np.median(ds_t))
    print(f"  numba MinHash (all tiles, not deduplicated): {ours * 1e3:9.2f} ms "
          f"({ours / sigs.size * 1e9:.0f} ns/tile)")
    print(f"  datasketch MinHash.bulk:                     {theirs * 1e3:9.2f} ms "
          f"({theirs / sigs.size * 1e6:.1f} us/tile)")
    print(f"  speed ratio {theirs / ours:.0f}x   target >= 50x: "
          f"{'MET' if theirs / ours >= 50 else 'MISSED'}")

    rng = np.random.default_rng(5)
    # pairs of tiles with overlapping signatures (random pairs are mostly disjoint)
    i = rng.integers(0, sigs.size, 4 * n_pairs)
    j = rng.integers(0, sigs.size, 4 * n_pairs)
    keep = (i != j) & ((sigs[i] & sigs[j]) != 0)
    i, j = i[keep][:n_pairs], j[keep][:n_pairs]
    exact = np.array([popj(sigs[a], sigs[b]) for a, b in zip(i, j)])
    est_ours = (mh[i] == mh[j]).mean(axis=1)
    est_ds = np.array([ds[a].jaccard(ds[b]) for a, b in zip(i, j)])
    theory = np.sqrt(np.mean(exact * (1 - exact) / K))
    print(f"  {len(i)} overlapping tile pairs, exact Jaccard mean {exact.mean():.3f}")
    for name, est in (("numba", est_ours), ("datasketch", est_ds)):
        err = est - exact
        q = np.quantile(err, [0.05, 0.5, 0.95])
        print(f"  {name:10s} error: bias {err.mean():+.4f}  RMSE {np.sqrt(np.mean(err**2)):.4f} "
              f"(binomial theory {theory:.4f})  5/50/95% {q[0]:+.3f}/{q[1]:+.3f}/{q[2]:+.3f}")
    d = np.abs(est_ours - exact) - np.abs(est_ds - exact)
    print(f"  |err| numba − |err| datasketch: mean {d.mean():+.4f} ± {d.std() / np.sqrt(d.size):.4f} (s.e.)")


if __name__ == "__main__":
    main()
