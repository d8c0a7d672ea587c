"""LOWRANK's closed forms (``_closed_form_errors``): scaled permutations (one entry per nonempty row
and column) and tiles of two nonempty rows or columns, against numpy's SVD, through
``lowrank_errors`` and ``batch_error``."""
import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.analysis.tiling import build_tiles
from akfviz.kernels import get_kernel
from akfviz.kernels.lowrank import lowrank_errors


def _tiles_of(blocks, T=16):
    """One tile per block (each block at most T×T, placed on the block diagonal)."""
    rows, cols, vals = [], [], []
    for i, b in enumerate(blocks):
        r, c = np.nonzero(b)
        rows.append(r + i * T)
        cols.append(c + i * T)
        vals.append(b[r, c])
    n = len(blocks) * T
    A = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    ts = build_tiles(A, T)
    assert ts.n_tiles == len(blocks)
    return ts


def _random_two_line_blocks(rng, n):
    out = []
    for i in range(n):
        k = int(rng.integers(2, 17))
        a = rng.standard_normal(k) * 10.0 ** rng.integers(-4, 5)
        kind = i % 4
        if kind == 0:
            b = rng.standard_normal(k)
        elif kind == 1:   # nearly parallel: σ₂ ≪ σ₁
            b = 3.0 * a + 1e-7 * np.abs(a).max() * rng.standard_normal(k)
        elif kind == 2:   # very different scales
            b = rng.standard_normal(k) * 1e-6
        else:             # sparse lines with gaps
            b = rng.standard_normal(k) * (rng.random(k) < 0.5)
            b[0] = 1.0
        a[a == 0] = 1.0
        blk = np.zeros((16, 16))
        rows = rng.choice(16, 2, replace=False)
        cols = rng.choice(16, k, replace=False)
        blk[rows[0], cols] = a
        blk[rows[1], cols] = b
        out.append(blk.T.copy() if rng.random() < 0.5 else blk)  # two rows or two columns
    return out


def test_two_line_tail_equals_svd():
    rng = np.random.default_rng(7)
    blocks = _random_two_line_blocks(rng, 200)
    ts = _tiles_of(blocks)
    got = lowrank_errors(ts, np.arange(ts.n_tiles), [1, 2, 4])
    for u, blk in enumerate(blocks):
        s = np.linalg.svd(blk, compute_uv=False)
        assert got[u, 0] == pytest.approx(s[1] ** 2, rel=1e-7, abs=1e-14 * s[0] ** 2)
        assert got[u, 1] == 0.0 and got[u, 2] == 0.0
    # and through the kernel, against the reconstruction of approx()
    k = get_kernel("LOWRANK1")
    np.testing.assert_allclose(k.batch_error(ts), k.approx(ts).err, rtol=1e-7,
                               atol=1e-14 * float(np.max(ts.v ** 2)))


def test_two_line_tail_keeps_relative_accuracy_when_sigma2_is_tiny():
    """M = diag(1, ε) rotated: σ₂² = ε². The difference form m − sqrt(m² − det) would lose it all."""
    blocks = []
    for eps, th in [(1e-3, 0.3), (1e-5, 1.1), (1e-7, 2.0)]:
        c, s = np.cos(th), np.sin(th)
        M = np.array([[c, s], [-eps * s, eps * c]])  # rows (c, s) and ε·(−s, c): orthogonal
        blk = np.zeros((16, 16))
        blk[3, [2, 9]] = M[0]
        blk[11, [2, 9]] = M[1]
        blocks.append(blk)
    ts = _tiles_of(blocks)
    got = lowrank_errors(ts, np.arange(3), [1])[:, 0]
    np.testing.assert_allclose(got, [1e-6, 1e-10, 1e-14], rtol=1e-8)


def test_exactly_parallel_lines_give_zero():
    a = np.array([1.0, -2.0, 0.5, 4.0])
    blk = np.zeros((16, 16))
    blk[0, 1:5] = a
    blk[7, 1:5] = -2.0 * a
    ts = _tiles_of([blk, blk.T.copy()])
    np.testing.assert_array_equal(lowrank_errors(ts, np.arange(2), [1, 2]), 0.0)


def test_only_rank_one_uses_the_closed_form():
    """Ranks above 1 of a two-line tile are exact (0); without rank 1 nothing is computed."""
    rng = np.random.default_rng(1)
    ts = _tiles_of(_random_two_line_blocks(rng, 12))
    np.testing.assert_array_equal(lowrank_errors(ts, np.arange(12), [2, 8]), 0.0)
    assert (lowrank_errors(ts, np.arange(12), [8, 1])[:, 1] > 0).all()


def _random_permutation_blocks(rng, n):
    out = []
    for i in range(n):
        k = int(rng.integers(1, 17))
        blk = np.zeros((16, 16))
        rows = rng.choice(16, k, replace=False)
        cols = rng.choice(16, k, replace=False)
        vals = rng.standard_normal(k) * 10.0 ** rng.integers(-6, 6, k)
        if i % 3 == 0:
            vals = rng.choice([-1.0, 1.0, 2.0], k)   # ties between singular values
        blk[rows, cols] = vals
        out.append(blk)
    return out


def test_scaled_permutations_equal_svd():
    rng = np.random.default_rng(5)
    blocks = _random_permutation_blocks(rng, 200)
    ts = _tiles_of(blocks)
    ranks = [1, 2, 4, 8]
    got = lowrank_errors(ts, np.arange(ts.n_tiles), ranks)
    for u, blk in enumerate(blocks):
        s = np.linalg.svd(blk, compute_uv=False)
        for q, r in enumerate(ranks):
            assert got[u, q] == pytest.approx(np.sum(s[r:] ** 2), rel=1e-12, abs=1e-14 * s[0] ** 2)
    # the tail of the squared |v|, smallest first: exact for a diagonal of 1 … 16
    d = np.zeros((16, 16))
    d[np.arange(16), np.arange(16)[::-1]] = np.arange(1.0, 17.0)
    ts = _tiles_of([d])
    np.testing.assert_array_equal(lowrank_errors(ts, np.arange(1), ranks)[0],
                                  [sum(i * i for i in range(1, 17 - r)) for r in ranks])


def test_mixed_batch_matches_one_tile_at_a_time():
    """Closed-form tiles, SVD tiles (three lines and more) and tiles of low rank in one batch, in any
    order: each tile's errors do not depend on the others in the batch."""
    rng = np.random.default_rng(9)
    blocks = _random_permutation_blocks(rng, 20) + _random_two_line_blocks(rng, 20)
    for _ in range(20):   # general tiles: 3–16 lines
        blk = np.zeros((16, 16))
        h, w = rng.integers(3, 17, 2)
        blk[:h, :w] = rng.standard_normal((h, w)) * (rng.random((h, w)) < 0.6)
        blk[np.arange(3), np.arange(3)] = 1.0
        blocks.append(blk)
    ts = _tiles_of(blocks)
    idx = rng.permutation(ts.n_tiles)
    both = lowrank_errors(ts, idx, [1, 2, 4, 8])
    for u, t in enumerate(idx):
        np.testing.assert_array_equal(both[u], lowrank_errors(ts, np.array([t]), [1, 2, 4, 8])[0])
        s = np.linalg.svd(blocks[t], compute_uv=False)
        np.testing.assert_allclose(both[u], [np.sum(s[r:] ** 2) for r in (1, 2, 4, 8)], rtol=1e-9,
                                   atol=1e-13 * s[0] ** 2)


def test_one_entry_per_row_is_not_enough():
    """Rows of one entry that share columns are no permutation: a column of 5 (rank 1, E = 0), and
    three rows over two columns (the two-line form)."""
    col = np.zeros((16, 16))
    col[[1, 4, 6, 9, 15], 3] = [1.0, -2.0, 3.0, 0.5, 4.0]
    three = np.zeros((16, 16))
    three[[0, 5, 8], [2, 2, 7]] = [3.0, 4.0, 1.0]
    ts = _tiles_of([col, three, col.T.copy()])
    got = lowrank_errors(ts, np.arange(3), [1, 2])
    np.testing.assert_array_equal(got[[0, 2]], 0.0)
    s = np.linalg.svd(three, compute_uv=False)
    assert got[1, 0] == pytest.approx(s[1] ** 2, rel=1e-12) and got[1, 1] == 0.0


def test_identical_tiles_share_one_svd_and_near_copies_do_not(monkeypatch):
    """Copies of a tile (a stencil's tridiagonal blocks) take the errors of its first copy, from one
    SVD; a tile that differs in one value by one ulp, or in one position, gets its own."""
    rng = np.random.default_rng(4)
    base = np.zeros((16, 16))
    base[:6, :5] = rng.standard_normal((6, 5))
    ulp = base.copy()
    ulp[2, 3] = np.nextafter(ulp[2, 3], np.inf)
    moved = np.zeros((16, 16))
    moved[:6, 1:6] = base[:6, :5]                      # the same values one column over
    other = np.zeros((16, 16))
    other[:4, :4] = rng.standard_normal((4, 4))
    blocks = [base, other, base, ulp, base, moved, other]
    ts = _tiles_of(blocks)
    stacked = []
    real = np.linalg.svd
    monkeypatch.setattr(np.linalg, "svd", lambda a, *k, **kw: stacked.append(a.shape[0]) or real(a, *k, **kw))
    idx = np.arange(len(blocks))
    got = lowrank_errors(ts, idx, [1, 2, 4])
    assert sum(stacked) == 3   # base (and moved: the same compact matrix), ulp, other
    for u in range(len(blocks)):
        np.testing.assert_array_equal(got[u], lowrank_errors(ts, np.array([u]), [1, 2, 4])[0])
    np.testing.assert_array_equal(got[0], got[2])
    np.testing.assert_array_equal(got[0], got[5])       # compacting drops the empty first column
    s = np.linalg.svd(ulp, compute_uv=False)
    np.testing.assert_allclose(got[3], [np.sum(s[r:] ** 2) for r in (1, 2, 4)], rtol=1e-12)
