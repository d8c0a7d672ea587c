"""The structure rule's block test reads cells of at least 8 entries — the BLOCK kernel's 4×4 blocks
where the grid lines up with them (forty-eighth session). With the signature's cells of T / 8
entries, below T = 16 a cell of one entry was always full, so the rule called every scattered tile
of T = 8 ``block``. Cells of fractional size (T = 12) are left as they were."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.selection.structure import CLASS_NAMES, classify_dense, classify_tiles

BLOCK = CLASS_NAMES.index("block")


@pytest.mark.parametrize("T", [4, 6, 8])
def test_scattered_small_tiles_are_not_block(T):
    pa = akfviz.analyze(akfviz.generate("uniform", n=480, density=0.03, seed=1), tile=T)
    cls = np.asarray(pa.compact.cls)
    assert not (cls == BLOCK).any()          # before: 99.9-100 % of them


@pytest.mark.parametrize("T", [8, 16, 32])
def test_tiles_of_whole_4x4_blocks_are_block(T):
    # (T = 12 or 24 is left out: signature cells of 1.5 or 3 entries do not line up with the 4-grid, so
    # merged cells of 6×6 entries split a 4×4 block; docs/decisions.md)
    rng = np.random.default_rng(0)
    n = 8 * T
    A = np.zeros((n, n))
    for _ in range(n // 4):   # scattered whole 4×4 blocks on the 4-grid
        r, c = rng.integers(0, n // 4, size=2) * 4
        A[r:r + 4, c:c + 4] = rng.uniform(1.0, 2.0, (4, 4))
    pa = akfviz.analyze(sp.csr_array(A), tile=T)
    tab = pa.tiles_as_analysed()
    one_block = (tab["nnz"] == 16).to_numpy()
    assert one_block.any()
    assert (np.asarray(pa.compact.cls)[one_block] == BLOCK).all()


@pytest.mark.parametrize("T, grid", [(4, 8), (5, 8), (6, 3), (8, 8), (8, 5), (12, 8), (16, 8), (20, 5),
                                     (32, 8), (33, 7)])
def test_the_rule_agrees_with_its_slow_reference(T, grid):
    """Every tile, edge tiles included (n is no multiple of T): the analysis' own pass, the
    features' classification and the dense reference give one class."""
    rng = np.random.default_rng(T * 31 + grid)
    n, m = 5 * T + 3, 4 * T + 1
    A = sp.random(n, m, density=0.04, random_state=rng, format="lil")
    for _ in range(6):   # some whole 4×4 and 2×2 blocks, some diagonals
        r, c = rng.integers(0, n - 4), rng.integers(0, m - 4)
        b = int(rng.choice([2, 4]))
        A[r:r + b, c:c + b] = 1.5
    A[:2 * T, :2 * T] = 0.0          # tile (0, 0): one diagonal; tile (1, 1): one whole 4×4 block
    for d in range(T):
        A[d, d] = 1.0
    A[T:T + 4, T:T + 4] = 2.0
    pa = akfviz.analyze(sp.csr_array(A), tile=T, lsh={"grid": grid})
    tab = pa.tiles_as_analysed()
    dense = A.toarray()
    want = [classify_dense(dense[bi * T:(bi + 1) * T, bj * T:(bj + 1) * T], grid=grid)
            for bi, bj in zip(tab["bi"], tab["bj"])]
    assert np.asarray(pa.compact.cls).tolist() == want
    assert classify_tiles(tab, grid=grid).tolist() == want
    assert len(set(want)) >= 2


def test_fractional_cells_are_not_merged():
    """T = 12: cells of 1.5 entries; merged cells of 3 or 6 entries would split the 4×4 blocks (the
    exact tile-mode plan of the MiniLM sample then cost 2.8-3.1× all-CSC's energy, against 1.44×)."""
    t = np.zeros((12, 12))
    t[[0, 1], [0, 1]] = 1.0          # two entries in one 1.5-entry cell pair: the unmerged rule's block
    t[5, 9] = 1.0
    assert classify_dense(t) == BLOCK
    t8 = np.zeros((8, 8))
    t8[[0, 1], [0, 1]] = 1.0
    t8[5, 6] = 1.0
    assert classify_dense(t8) == CLASS_NAMES.index("random")   # merged to 4×4: 3 entries in 32
