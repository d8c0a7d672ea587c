"""Structure classes of tiles: the second index of the performance table (akf-spec §4).

The performance table is a polynomial in tile density per (kernel, structure class). Density alone
does not say what a tile looks like — a 10 % tile can be a band, a few dense 4×4 blocks, an N:M
pattern or scattered entries — and the kernels' costs differ between these shapes. Each tile is
therefore put in one of four classes, decided from the features of
:class:`~akfviz.analysis.pattern.PatternAnalysis` ``tiles`` by the first rule that holds:

==========  ==================================================================================
class       rule (checked in this order)
==========  ==================================================================================
diagonal    ``nnz / (n_diagonals · min(h, w)) ≥ 0.6`` and ``n_diagonals ≤ 0.75 · min(h, w)``:
            the nonzeros fill a few diagonals (bands, stencils, diagonal blocks).
nm          ``nm4 ≤ 2`` and ``density ≥ 0.3``: every group of 4 consecutive columns in a row has at
            most 2 nonzeros, and the tile is full enough for that to be a pattern, not chance.
block       ``nnz / (occupied coarse cells · cell area) ≥ 0.5`` and at most 80 % of the g×g cells
            occupied: the entries sit in few, well-filled cells of the occupancy signature (for T = 32,
            g = 8 the cells are 4×4 blocks). A tile above 50 % density whose entries are scattered fills
            every cell about equally; it is ``random`` (the BLOCK kernel then stores every block, as DENSE
            does — a held-out probe found such tiles priced as sparse blocks, 38 % too cheap).
            Cells of fewer than 8 entries made of whole rows and columns (T = 4, 6, 8, 16 with
            g = 8; small edge tiles) are first merged f×f (f a power of two) up to the BLOCK
            kernel's 4×4 blocks: a cell of one entry is always full, and every scattered tile of
            T = 8 was ``block``. Cells of fractional size (T = 12: 1.5 entries) are not merged.
random      everything else (scattered, unstructured entries).
==========  ==================================================================================

For each class there is also a seeded generator of synthetic T×T tiles at a requested density; the
calibration of the performance table uses them (:func:`synthetic_tile`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import InputError
from ._kernels import (BLOCK_FILL, BLOCK_MAX_SHARE, BLOCK_MIN_CELL_AREA, DIAG_FILL, DIAG_MAX_SHARE,
                       NM_MIN_DENSITY, _classify_kernel)



@dataclass(frozen=True)
class StructureClass:
    """One structure class: its id, a one-line description, its calibration generator and the
    density range it is calibrated on (the table is not extrapolated beyond it)."""

    cid: int
    name: str
    description: str
    generator: Callable
    max_density: float
    min_density: Callable  # T -> the smallest density the class's rule admits


def _k_of(density: float, T: int) -> int:
    return int(min(T * T, max(1, round(density * T * T))))


def _values(rng, k):
    return rng.uniform(0.5, 1.5, size=k) * rng.choice(np.array([-1.0, 1.0]), size=k)


def _gen_random(T, density, rng):
    k = _k_of(density, T)
    flat = np.sort(rng.choice(T * T, size=k, replace=False))
    return flat // T, flat % T


def _gen_diagonal(T, density, rng):
    k = _k_of(density, T)
    rows, cols = [], []
    offsets = [0]
    for o in range(1, T):
        offsets += [o, -o]
    left = k
    for o in offsets:
        if left <= 0:
            break
        r = np.arange(max(0, -o), min(T, T - o))
        r = r[:left]
        rows.append(r)
        cols.append(r + o)
        left -= r.size
    return np.concatenate(rows), np.concatenate(cols)


def _gen_block(T, density, rng, b=4):
    nbs = -(-T // b)
    nb = int(min(nbs * nbs, max(1, round(density * T * T / (b * b)))))
    slots = np.sort(rng.choice(nbs * nbs, size=nb, replace=False))
    # every cell of every chosen b×b block, block by block in row-major order; cells past
    # the tile's edge (T not a multiple of b) dropped
    dr, dc = np.divmod(np.arange(b * b), b)
    rows = ((slots // nbs) * b)[:, None] + dr[None, :]
    cols = ((slots % nbs) * b)[:, None] + dc[None, :]
    inside = (rows < T) & (cols < T)
    return rows[inside], cols[inside]


def _gen_nm(T, density, rng, n=2, m=4):
    # every group of m consecutive columns in each row holds at most n nonzeros
    ng = -(-T // m)
    gsize = np.minimum(m, T - np.arange(ng) * m)  # group widths (last may be short)
    slots_per_group = np.minimum(n, gsize)
    # slot list: (row, group) repeated slots_per_group times
    g_of_slot = np.repeat(np.arange(ng), slots_per_group)
    n_slots_row = g_of_slot.size
    k = int(min(T * n_slots_row, _k_of(density, T)))
    chosen = np.sort(rng.choice(T * n_slots_row, size=k, replace=False))
    row = chosen // n_slots_row
    grp = g_of_slot[chosen % n_slots_row]
    # positions inside each (row, group): the cnt smallest of m random keys (columns past
    # a short last group never win), all pairs at once
    key = row * ng + grp
    uniq, counts = np.unique(key, return_counts=True)
    r, g = uniq // ng, uniq % ng
    keys = rng.random((uniq.size, m))
    keys[np.arange(m)[None, :] >= gsize[g][:, None]] = np.inf
    pick = np.argsort(keys, axis=1, kind="stable")
    take = np.arange(m)[None, :] < counts[:, None]
    pos = np.sort(np.where(take, pick, m), axis=1)[take]  # ascending within each pair
    return np.repeat(r, counts), np.repeat(g * m, counts) + pos


#: The registry of structure classes, in the order their rules are checked (``random`` last).
STRUCTURE_CLASSES: dict[str, StructureClass] = {
    "diagonal": StructureClass(0, "diagonal", "nonzeros fill a few diagonals (band, stencil)",
                               _gen_diagonal, 0.55, lambda T: min(1.0, 1.0 / T)),
    "nm": StructureClass(1, "nm", "at most 2 nonzeros per group of 4 columns, density ≥ 0.3 (N:M)",
                         _gen_nm, 0.5, lambda T: NM_MIN_DENSITY),
    "block": StructureClass(2, "block", "entries packed in few well-filled coarse cells (dense blocks)",
                            _gen_block, 0.75, lambda T: 1.0 / (T * T)),
    "random": StructureClass(3, "random", "scattered, unstructured nonzeros", _gen_random, 1.0,
                             lambda T: 1.0 / (T * T)),
}
CLASS_NAMES: tuple = tuple(sorted(STRUCTURE_CLASSES, key=lambda k: STRUCTURE_CLASSES[k].cid))


def class_id(name: str) -> int:
    """Id of a structure class by name (InputError listing the valid names otherwise)."""
    try:
        return STRUCTURE_CLASSES[name].cid
    except KeyError:
        raise InputError(
            f"Unknown structure class {name!r}; valid classes are {', '.join(CLASS_NAMES)}."
        ) from None


def synthetic_tile(cls: str, T: int, density: float, seed: int = 0) -> np.ndarray:
    """A seeded synthetic T×T tile of a structure class at (about) the requested density.

    Values are ±U(0.5, 1.5) (never zero). The realised density can differ from the requested one
    (at least one nonzero; block tiles come in whole 4×4 blocks; the class's maximum density caps it).

    Examples
    --------
    >>> t = synthetic_tile("diagonal", 8, 0.125, seed=1)
    >>> int((t != 0).sum()), int((t.diagonal() != 0).sum())
    (8, 8)
    """
    sc = STRUCTURE_CLASSES.get(cls)
    if sc is None:
        class_id(cls)
    if not (isinstance(T, (int, np.integer)) and T >= 1):
        raise InputError(f"Tile side must be a positive integer, got {T!r}.")
    if not (np.isfinite(density) and 0 < density <= 1):
        raise InputError(f"Density must be in (0, 1], got {density!r}.")
    rng = np.random.default_rng(seed)
    r, c = sc.generator(int(T), min(float(density), sc.max_density), rng)
    tile = np.zeros((T, T))
    tile[r, c] = _values(rng, r.size)
    return tile


def classify_arrays(h, w, nnz, n_diagonals, nm4, signature, grid: int = 8) -> np.ndarray:
    """Structure class id (int64) of each tile from its feature arrays (rule in the module docstring)."""
    arrs = [np.ascontiguousarray(a, dtype=np.int64) for a in (h, w, nnz, n_diagonals, nm4)]
    sig = np.ascontiguousarray(signature, dtype=np.uint64)
    out = np.empty(arrs[0].shape[0], dtype=np.int64)
    _classify_kernel(*arrs, sig, np.int64(grid), out)
    return out


def classify_tiles(tiles, grid: int = 8, idx=None) -> np.ndarray:
    """Structure class id of the rows ``idx`` (default: all) of a ``PatternAnalysis.tiles`` frame."""
    cols = ("h", "w", "nnz", "n_diagonals", "nm4", "signature")
    arrs = [tiles[c].to_numpy() for c in cols]
    if idx is not None:
        arrs = [a[idx] for a in arrs]
    return classify_arrays(*arrs, grid=grid)


def classify_dense(tile: np.ndarray, grid: int = 8) -> int:
    """Structure class id of one dense tile: the rule of :func:`classify_arrays`, written the
    slow, obvious way (akf-spec §4, structure classes of the performance table).

    Reference for tests: no library code calls it (the selector classifies through
    :func:`classify_arrays` / :func:`classify_tiles` on the tile features); the tests check
    that both give the same class on every tile.

    Returns
    -------
    int
        0 diagonal, 1 N:M, 2 block, 3 random (the order of ``CLASS_NAMES``).
    """
    tile = np.asarray(tile)
    h, w = tile.shape
    r, c = np.nonzero(tile)
    k = r.size
    m = min(h, w)
    nd = np.unique(c - r).size
    if nd > 0 and nd <= DIAG_MAX_SHARE * m and k >= DIAG_FILL * nd * m:
        return 0
    nm4 = 0
    for i in range(h):
        for g in range(0, w, 4):
            nm4 = max(nm4, int(np.count_nonzero(tile[i, g:g + 4])))
    if nm4 <= 2 and k >= NM_MIN_DENSITY * h * w:
        return 1
    # units: the rows (columns) themselves when there are at most `grid` of them, else the grid's cells
    gh, gw = min(grid, h), min(grid, w)
    unit_r = r if h <= grid else r * grid // h
    unit_c = c if w <= grid else c * grid // w
    f = 1   # merge f×f units until a cell holds at least BLOCK_MIN_CELL_AREA entries (or one cell is left),
    if (h <= grid or h % grid == 0) and (w <= grid or w % grid == 0):   # when the units are whole entries
        while h * w / (gh * gw) * f * f < BLOCK_MIN_CELL_AREA and (f < gh or f < gw):
            f *= 2
    gh, gw = -(-gh // f), -(-gw // f)
    cells = {(ur // f, uc // f) for ur, uc in zip(unit_r, unit_c)}
    if cells and k >= BLOCK_FILL * len(cells) * (h * w / (gh * gw)) and len(cells) <= BLOCK_MAX_SHARE * gh * gw:
        return 2
    return 3
