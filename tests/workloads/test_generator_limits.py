"""Generators at the edges of their accepted parameters (akf-spec §1).

Large N:M patterns (no enumeration of position combinations), power-law exponents close to 1
(no overflow, mean row length as requested), wide banded matrices and many clustered blocks
(work linear in the nonzeros, not one Python step per diagonal or block), block pruning with a
block as large as the matrix (refused, not an all-zero matrix). Ordinary calls keep the output
of the original algorithms, checked bit for bit against slow loop references here.
"""
import importlib
import itertools
import warnings
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.errors import InputError
from akfviz.workloads import generate

gen_mod = importlib.import_module("akfviz.workloads.generators")


def _same(A, B):
    return (A.shape == B.shape and np.array_equal(A.indptr, B.indptr)
            and np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data))


def _csr(rows, cols, vals, shape):
    return akfviz.workloads.validate.as_csr(sp.coo_array((vals, (rows, cols)), shape=shape))


class _CountingNumpy:
    """Stands in for ``numpy`` inside the generators module and counts calls by name."""

    def __init__(self):
        self.calls = Counter()

    def __getattr__(self, name):
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, type):
            return attr

        def counted(*args, **kwargs):
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


@pytest.fixture
def counting_np(monkeypatch):
    proxy = _CountingNumpy()
    monkeypatch.setattr(gen_mod, "np", proxy)
    return proxy


# --------------------------------------------------------------------------- N:M
def _nm_counts(A, group):
    D = A.toarray() != 0
    n, m = D.shape
    return np.array([[D[i, g:g + group].sum() for g in range(0, m, group)] for i in range(n)])


@pytest.mark.parametrize("pattern, n, m", [("16:32", 4, 32), ("16:32", 6, 70), ("12:24", 4, 32),
                                           ("128:256", 3, 256), ("128:256", 2, 456),
                                           ("2:256", 3, 300)])
def test_large_nm_patterns_are_exact_and_compliant(pattern, n, m):
    N, M = map(int, pattern.split(":"))
    A = generate("nm", n=n, m=m, pattern=pattern, seed=3)
    widths = [min(M, m - g) for g in range(0, m, M)]
    expected = np.array([min(N, w) for w in widths])
    assert (_nm_counts(A, M) == expected[None, :]).all()
    assert A.nnz == n * expected.sum()
    assert _same(A, generate("nm", n=n, m=m, pattern=pattern, seed=3))
    assert not _same(A, generate("nm", n=n, m=m, pattern=pattern, seed=4))


def test_nm_never_enumerates_a_huge_number_of_combinations(monkeypatch):
    """The original method listed all C(M, N) position sets: C(32, 16) ≈ 6·10⁸ for 16:32."""
    real = itertools.combinations

    def bounded(iterable, r):
        for count, combo in enumerate(real(iterable, r)):
            if count > 200_000:
                raise AssertionError("N:M positions enumerated beyond 200 000 combinations")
            yield combo

    monkeypatch.setattr(gen_mod.itertools, "combinations", bounded)
    for pattern, m in (("16:32", 32), ("128:256", 256), ("8:16", 16), ("2:4", 8)):
        A = generate("nm", n=3, m=m, pattern=pattern, seed=0)
        assert A.nnz == 3 * m * int(pattern.split(":")[0]) // int(pattern.split(":")[1])


def test_large_nm_positions_are_uniform():
    A = generate("nm", n=2000, m=32, pattern="16:32", seed=0)
    freq = (A.toarray() != 0).mean(axis=0)  # each column is kept with probability 1/2
    assert np.all(np.abs(freq - 0.5) < 0.06)
    thin = generate("nm", n=40, m=64, pattern="16:32", density=0.25, seed=1)
    assert thin.nnz == round(0.25 * 40 * 64)
    assert _nm_counts(thin, 32).max() <= 16


def _nm_enumerating_reference(n, m, pattern, seed):
    """The original N:M method: one enumerated combination picked per group."""
    n_keep, group = map(int, pattern.split(":"))
    rng = np.random.default_rng(seed)
    n_full, rest = divmod(m, group)
    rows, cols = [], []
    for width, count, offset in ((group, n_full, 0), (rest, 1 if rest else 0, n_full * group)):
        if count == 0 or width == 0:
            continue
        k = min(n_keep, width)
        combos = np.array(list(itertools.combinations(range(width), k)), dtype=np.int64)
        pos = combos[rng.integers(0, combos.shape[0], size=(n, count))]
        gcol = offset + np.arange(count, dtype=np.int64)[None, :, None] * group + pos
        rows.append(np.broadcast_to(np.arange(n, dtype=np.int64)[:, None, None], gcol.shape).ravel())
        cols.append(gcol.ravel())
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return _csr(rows, cols, rng.standard_normal(rows.size), (n, m))


@pytest.mark.parametrize("pattern, m", [("2:4", 66), ("1:4", 64), ("4:8", 70), ("8:16", 40),
                                        ("3:7", 30)])
def test_small_nm_patterns_keep_their_output(pattern, m):
    assert _same(generate("nm", n=20, m=m, pattern=pattern, seed=2),
                 _nm_enumerating_reference(20, m, pattern, 2))


# --------------------------------------------------------------------------- power law
@pytest.mark.parametrize("exponent", [1.0001, 1.001, 1.01, 1.05, 1.1, 1.5, 2.0])
def test_powerlaw_heavy_tails_no_warnings_and_requested_mean(exponent):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        A = generate("powerlaw", n=1000, exponent=exponent, seed=0)
    lengths = np.diff(A.indptr)
    assert lengths.min() >= 1 and lengths.max() <= 1000
    # rows jump between lengths 1 and m for exponents near 1: the mean is then a multiple of
    # 999/1000 away from 1, within half a step of 8
    assert abs(lengths.mean() - 8.0) < 0.5
    assert lengths.max() > 8 * np.median(lengths)  # still heavy-tailed
    assert _same(A, generate("powerlaw", n=1000, exponent=exponent, seed=0))


@pytest.mark.parametrize("n, m, avg", [(1, 1000, 8.0), (5, 3, 8.0), (200, 50, 40.0),
                                       (300, 1, 2.0), (64, 1000, 0.5)])
def test_powerlaw_heavy_tail_lengths_clipped_to_the_shape(n, m, avg):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        A = generate("powerlaw", n=n, m=m, avg_nnz=avg, exponent=1.01, seed=1)
    lengths = np.diff(A.indptr)
    assert A.shape == (n, m)
    assert lengths.min() >= 1 and lengths.max() <= m
    target = min(max(avg, 1.0), m)
    assert abs(lengths.mean() - target) <= max(0.5, (m - 1) / n)


def _powerlaw_classic_reference(n, m, avg_nnz, exponent, seed):
    """The original method: Pareto draws rescaled by their sample mean, columns with repeats."""
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    raw = (1.0 - u) ** (-1.0 / (exponent - 1.0))
    lengths = np.clip(np.round(raw / raw.mean() * avg_nnz), 1, m).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    cols = rng.integers(0, m, size=rows.size, dtype=np.int64)
    key = np.unique(rows * m + cols)
    return _csr(key // m, key % m, rng.standard_normal(key.size), (n, m))


@pytest.mark.parametrize("n, m, exponent", [(4096, 4096, 2.5), (2000, 1000, 2.5), (500, 300, 6.0),
                                            (300, 200, 4.0)])
def test_powerlaw_default_and_steeper_exponents_keep_their_output(n, m, exponent):
    # the classic rescaling lands within 5 % of the requested mean here, and is kept
    assert _same(generate("powerlaw", n=n, m=m, exponent=exponent, seed=0),
                 _powerlaw_classic_reference(n, m, 8.0, exponent, 0))


@pytest.mark.parametrize("n, m, exponent", [(128, 96, 2.5), (33, 33, 2.5), (1000, 10, 3.0)])
def test_powerlaw_narrow_matrices_reach_the_requested_mean(n, m, exponent):
    # the classic rescaling gives 6.9, 4.9 and 4.9 entries a row here (rows clipped at m, repeated
    # columns merged): the exact-length path takes over and reaches the requested 8
    classic = _powerlaw_classic_reference(n, m, 8.0, exponent, 0)
    assert classic.nnz / n < 0.95 * 8.0
    A = generate("powerlaw", n=n, m=m, exponent=exponent, seed=0)
    u = np.random.default_rng(0).random(n)  # the generator's first draw
    expected = importlib.import_module("akfviz.workloads.generators")._powerlaw_lengths(
        -np.log1p(-u) / (exponent - 1.0), 8.0 * n, m)
    assert np.array_equal(np.diff(A.indptr), expected)
    assert abs(A.nnz / n - 8.0) <= 0.05 * 8.0


# --------------------------------------------------------------------------- banded
def _banded_reference(n, m, bandwidth, density, seed):
    """The original per-diagonal loop."""
    rng = np.random.default_rng(seed)
    bw = min(bandwidth, max(n, m) - 1)
    rows, cols = [], []
    for d in range(-bw, bw + 1):
        i0, i1 = max(0, -d), min(n, m - d)
        if i1 > i0:
            i = np.arange(i0, i1, dtype=np.int64)
            rows.append(i)
            cols.append(i + d)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    keep = (rng.random(rows.size) < density) | (rows == cols)
    rows, cols = rows[keep], cols[keep]
    return _csr(rows, cols, rng.standard_normal(rows.size), (n, m))


@pytest.mark.parametrize("n, m, bw, density", [(1, 3000, 10**9, 1.0), (3, 2000, 10**9, 0.5),
                                               (2000, 2, 10**9, 0.5), (40, 700, 25, 0.7),
                                               (700, 40, 25, 0.7), (50, 50, 0, 0.3),
                                               (60, 45, 100, 0.4)])
def test_banded_matches_the_loop_reference(n, m, bw, density):
    A = generate("banded", n=n, m=m, bandwidth=bw, density=density, seed=7)
    assert _same(A, _banded_reference(n, m, bw, density, 7))


def test_banded_wide_is_not_built_diagonal_by_diagonal(counting_np):
    A = generate("banded", n=1, m=20_000, bandwidth=10**9, seed=0)
    assert A.nnz == 20_000
    assert counting_np.calls["arange"] <= 5  # the loop made one per diagonal: 20 000


# --------------------------------------------------------------------------- clustered
def _clustered_reference(n, m, blocks, min_block, max_block, density, noise, seed):
    """The original per-block loop (noise drawn by the module's own helper)."""
    rng = np.random.default_rng(seed)
    lo, hi = min(min_block, max_block), max(min_block, max_block)
    heights = np.minimum(rng.integers(lo, hi + 1, size=blocks), n)
    widths = np.minimum(rng.integers(lo, hi + 1, size=blocks), m)
    r0 = rng.integers(0, n - heights + 1)
    c0 = rng.integers(0, m - widths + 1)
    rows, cols = [], []
    for h, w, r, c in zip(heights, widths, r0, c0):
        flat = np.flatnonzero(rng.random(h * w) < density)
        rows.append(r + flat // w)
        cols.append(c + flat % w)
    keys = gen_mod._distinct_keys(rng, n * m, int(round(noise * n * m)),
                                  akfviz.workloads.LoadLimits(), "clustered")
    rows.append(keys // m)
    cols.append(keys % m)
    key = np.unique(np.concatenate(rows).astype(np.int64) * m + np.concatenate(cols))
    return _csr(key // m, key % m, rng.standard_normal(key.size), (n, m))


@pytest.mark.parametrize("n, m, blocks, lo, hi, density, noise", [
    (512, 512, 6, 20, 40, 0.8, 0.0), (300, 50, 30, 8, 64, 0.6, 0.001), (200, 200, 3000, 1, 3, 0.5, 0.0),
    (64, 64, 5, 100, 100, 0.9, 0.01)])
def test_clustered_matches_the_loop_reference(n, m, blocks, lo, hi, density, noise):
    A = generate("clustered", n=n, m=m, blocks=blocks, min_block=lo, max_block=hi, density=density,
                 noise=noise, seed=5)
    assert _same(A, _clustered_reference(n, m, blocks, lo, hi, density, noise, 5))


def test_clustered_many_blocks_is_not_one_step_per_block(counting_np, monkeypatch):
    monkeypatch.setattr(gen_mod, "_CLUSTER_DRAWS_PER_STEP", 1000)  # several steps, same result
    A = generate("clustered", n=1000, blocks=50_000, min_block=1, max_block=2, density=1.0,
                 noise=0.0, seed=1)
    assert 0 < A.nnz <= 50_000 * 4
    assert counting_np.calls["flatnonzero"] <= 250  # the loop made one per block: 50 000
    monkeypatch.setattr(gen_mod, "np", np)
    monkeypatch.setattr(gen_mod, "_CLUSTER_DRAWS_PER_STEP", 1 << 22)
    assert _same(A, generate("clustered", n=1000, blocks=50_000, min_block=1, max_block=2,
                             density=1.0, noise=0.0, seed=1))


def test_clustered_estimate_clips_blocks_to_the_matrix():
    """Blocks are clipped to the matrix, so a 1×1 matrix with huge or many blocks holds at most
    one entry; the size check used to refuse it, quoting 4 096 000 001 (or 1e36) entries."""
    assert generate("clustered", n=1, blocks=1_000_000, seed=0).nnz == 1
    assert generate("clustered", n=1, min_block=10**18, max_block=10**18, density=1.0, seed=0).nnz == 1
    assert generate("clustered", n=3, m=2, max_block=10**18, density=1.0, noise=0.0, seed=0).nnz == 6
    with pytest.raises(akfviz.errors.ResourceLimitError, match="10,000,000,000 stored entries"):
        generate("clustered", n=100_000, blocks=1_000_000, min_block=5000, max_block=5000, density=1.0)


def test_clustered_total_block_area_is_bounded_whatever_the_density(monkeypatch):
    """Held-out probe: every position of every block gets a fill draw even at density 0, so
    10 000 blocks of 1000 × 1000 took a minute (a million: hours). The total area Σ h·w is now
    refused over LoadLimits.max_dense_elements before any fill draw; up to it, nothing changes."""
    small = akfviz.workloads.LoadLimits(max_dense_elements=10_000)
    with pytest.raises(akfviz.errors.ResourceLimitError,
                       match=r"the 2 blocks cover 20,000 positions.*limit of 10,000.*max_dense_elements"):
        generate("clustered", n=100, blocks=2, min_block=100, max_block=100, density=0.0, limits=small)
    at_bound = generate("clustered", n=100, blocks=1, min_block=100, max_block=100, density=0.5,
                        noise=0.0, seed=3, limits=small)
    assert _same(at_bound, _clustered_reference(100, 100, 1, 100, 100, 0.5, 0.0, 3))
    monkeypatch.setattr(gen_mod, "_CLUSTER_DRAWS_PER_STEP", None)  # a fill draw would fail
    for blocks in (10_000, 1_000_000):
        with pytest.raises(akfviz.errors.ResourceLimitError, match=r"positions in total"):
            generate("clustered", n=1000, blocks=blocks, min_block=1000, max_block=1000, density=0.0)


# --------------------------------------------------------------------------- block pruning
@pytest.mark.parametrize("kind, extra", [("llm_block", {}), ("llm", {"prune": "block"})])
def test_block_larger_than_the_matrix_is_refused(kind, extra):
    with pytest.raises(InputError, match=r"block=4096 is not smaller than the 100×100 matrix"):
        generate(kind, n=100, m=100, block=4096, **extra)
    with pytest.raises(InputError, match="all-zero matrix"):
        generate(kind, n=100, m=100, block=64, **extra)  # 4 blocks, 10 % of them: none
    with pytest.raises(InputError, match="smaller than the matrix"):
        generate(kind, n=100, m=30, block=100, sparsity=0.5, **extra)


def test_block_pruning_that_keeps_blocks_is_unchanged():
    A = generate("llm_block", n=100, m=100, block=64, sparsity=0.5, seed=0)  # 2 of 4 blocks
    assert A.nnz > 0
    B = generate("llm_block", n=64, m=48, block=8, sparsity=0.75, seed=0)
    D = (B.toarray() != 0).reshape(8, 8, 6, 8).any(axis=(1, 3))
    assert D.sum() == 12
    assert generate("llm", n=100, m=100, block=4096, seed=0).nnz > 0  # magnitude: block unused
    assert generate("llm_block", n=2, seed=0).shape == (2, 2)  # defaults on a tiny matrix
