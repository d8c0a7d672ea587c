"""MinHash of coarse occupancy signatures (akf-spec §2, "LSH").

A tile's signature (see :mod:`akfviz.analysis.features`) is the set ``S`` of its occupied
coarse cells, ``S ⊆ {0, …, g²−1}``, stored as the bits of a uint64. Its MinHash under
``K`` hash functions is

    ``m_k(S) = min_{x ∈ S} h_k(x)``,  ``h_k(x) = (a_k·x + b_k) mod p``,  ``p = 2^61 − 1``,

the universal family of Carter & Wegman, with ``a_k ∈ [1, p)`` and ``b_k ∈ [0, p)`` drawn
from ``numpy.random.default_rng(seed)``. ``P[m_k(S) = m_k(S')] ≈ J(S, S')`` (Jaccard).

Because the universe has only g² ≤ 64 elements, the values ``h_k(x)`` are tabulated once,
exactly, with Python integers (no 64-bit overflow). For a set of few elements the numba
kernel takes the minimum of the table entries over its set bits; for a larger set it walks
the universe in ascending order of ``h_k`` (also tabulated) and stops at the first element
of the set — about ``g² / (|S| + 1)`` steps instead of ``|S|``, the same value. MinHashes
are computed once per *unique* signature and broadcast to tiles (many tiles share a
signature).
"""
from __future__ import annotations

import functools

import numba
import numpy as np

from .._jit import njit_cached, njit_parallel
from .tiling import _popcount64

#: The Mersenne prime modulus of the hash family.
MERSENNE_P = (1 << 61) - 1
#: Below this many signatures the serial kernel is used (a parallel launch costs more).
PARALLEL_MIN = 20_000


def hash_parameters(num_hashes: int, seed: int):
    """The ``(a_k, b_k)`` of the K hash functions, as Python ints.

    ``a = rng.integers(1, p, K)``, ``b = rng.integers(0, p, K)`` with
    ``rng = numpy.random.default_rng(seed)``.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(1, MERSENNE_P, size=num_hashes, dtype=np.int64)
    b = rng.integers(0, MERSENNE_P, size=num_hashes, dtype=np.int64)
    return [int(x) for x in a], [int(x) for x in b]


@functools.lru_cache(maxsize=32)
def hash_table(num_hashes: int, universe: int, seed: int) -> np.ndarray:
    """``H[k, x] = (a_k·x + b_k) mod p`` for ``x < universe``, exact, as uint64 (K, universe).

    Cached per ``(num_hashes, universe, seed)``; the returned array is read-only.
    """
    a, b = hash_parameters(num_hashes, seed)
    out = np.empty((num_hashes, universe), dtype=np.uint64)
    for k in range(num_hashes):
        for x in range(universe):
            out[k, x] = (a[k] * x + b[k]) % MERSENNE_P
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=32)
def hash_order(num_hashes: int, universe: int, seed: int) -> np.ndarray:
    """``O[k]``: the elements ``0 … universe−1`` in ascending order of ``h_k`` (stable),
    int64 (K, universe), read-only; ``min_{x∈S} h_k(x) = h_k(first x of O[k] in S)``."""
    order = np.argsort(hash_table(num_hashes, universe, seed), axis=1, kind="stable").astype(np.int64)
    order.flags.writeable = False
    return order


@njit_cached
def _minhash_range(sigs, table, order, u0, u1, out):
    """MinHashes of ``sigs[u0:u1]`` into ``out`` (see the module docstring); ``table`` is
    ``H`` (K, 64), ``order`` the ascending-hash walk (K, universe)."""
    K = table.shape[0]
    tab_t = np.ascontiguousarray(table.T)   # (64, K): a set bit's K hashes side by side
    U = order.shape[1]
    one = np.uint64(1)
    big = np.uint64(0xFFFFFFFFFFFFFFFF)
    for u in range(u0, u1):
        x = sigs[u]
        pc = _popcount64(x)
        if pc > 0 and pc * (pc + 1) > U:
            # many elements: the first one met in ascending-hash order holds the minimum
            for k in range(K):
                for j in range(U):
                    bit = order[k, j]
                    if (x >> np.uint64(bit)) & one:
                        out[u, k] = table[k, bit]
                        break
            continue
        for k in range(K):
            out[u, k] = big
        while x != 0:
            low = x & (~x + one)
            # index of the lowest set bit; its K hashes are one row of tab_t (one vectorised min,
            # where the columns of ``table`` cost a cache line per hash: 0.47 -> 0.1 ms for 3.6k sets)
            bit = _popcount64(low - one)
            for k in range(K):
                out[u, k] = min(out[u, k], tab_t[bit, k])
            x ^= low


@njit_parallel
def _minhash(sigs, table, order, n_chunks, out):
    n = sigs.shape[0]
    for ch in numba.prange(n_chunks):
        _minhash_range(sigs, table, order, ch * n // n_chunks, (ch + 1) * n // n_chunks, out)


def minhash_signatures(sigs: np.ndarray, num_hashes: int = 32, seed: int = 0,
                       universe: int = 64) -> np.ndarray:
    """MinHash of each signature's set of set bits.

    Parameters
    ----------
    sigs : ndarray of uint64, shape (n,)
        Bit sets (bit ``x`` set ⇔ ``x ∈ S``); pass the *unique* signatures.
    num_hashes : int
        ``K``.
    seed : int
        Seed of ``default_rng`` drawing the hash parameters.
    universe : int
        Number of possible elements (``g²``); bits at or above it must be clear.

    Returns
    -------
    ndarray of uint64, shape (n, K)
        ``m_k(S)``; an empty set gets ``2^64 − 1`` in every column.
    """
    sigs = np.ascontiguousarray(sigs, dtype=np.uint64)
    table = hash_table(num_hashes, universe, seed)
    if universe < 64 and sigs.size and np.any(sigs >> np.uint64(universe)):
        raise ValueError("signature bits beyond the universe")
    table64 = np.zeros((num_hashes, 64), dtype=np.uint64)
    table64[:, :universe] = table
    order = hash_order(num_hashes, universe, seed)
    out = np.empty((sigs.shape[0], num_hashes), dtype=np.uint64)
    n = sigs.shape[0]
    if n > PARALLEL_MIN:
        _minhash(sigs, table64, order, 8 * numba.get_num_threads(), out)
    elif n:
        _minhash_range(sigs, table64, order, 0, n, out)
    return out
