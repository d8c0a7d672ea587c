"""Tiling of a sparse matrix into square T×T blocks (akf-spec §2, "Tiling").

:func:`build_tiles` buckets the nonzeros of a canonical CSR matrix by tile in one O(nnz)
numba pass, parallel over row blocks. Only nonempty tiles are materialised, so nothing of
size ``n_brows × n_bcols`` is ever allocated (a 100k×100k matrix at T = 8 has 1.5e8 tile
slots but at most nnz nonempty tiles).
"""
from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._jit import njit_cached, njit_parallel, serial_twin
from ..arguments import shown, whole_number
from ..errors import InputError
from ..workloads.validate import as_csr

#: Tile sides accepted by :func:`build_tiles` (the UI offers 8–128).
TILE_MIN, TILE_MAX = 4, 256


class TileSet:
    """The nonempty tiles of a canonical CSR matrix.

    Tile ``t`` covers rows ``bi[t]*T … bi[t]*T + h[t] - 1`` and columns
    ``bj[t]*T … bj[t]*T + w[t] - 1``; edge tiles are smaller when ``T`` does not divide
    the shape. Tiles are ordered row-major by ``(bi, bj)``; the entries of a tile are
    ``ptr[t]:ptr[t+1]``, ordered by local ``(r, c)``.

    Attributes
    ----------
    shape : tuple of int
        Matrix shape ``(n_rows, n_cols)``.
    tile : int
        Tile side ``T``.
    n_brows, n_bcols : int
        Number of row / column blocks, ``ceil(n_rows / T)`` and ``ceil(n_cols / T)``.
    bi, bj, h, w : ndarray of int64, shape (n_tiles,)
        Block coordinates and tile height / width.
    ptr : ndarray of int64, shape (n_tiles + 1,)
        Entry pointer per tile.
    r, c : ndarray of int64, shape (nnz,)
        Local row / column of every entry (``0 <= r < h``, ``0 <= c < w``).
    v : ndarray of float64, shape (nnz,)
        Values.
    rb_ptr : ndarray of int64, shape (n_brows + 1,)
        The tiles of row block ``b`` are ``rb_ptr[b]:rb_ptr[b+1]``.

    Notes
    -----
    A TileSet made by :func:`akfviz.analyze` is *deferred*: it knows the tiles (``rb_ptr`` and
    the column blocks) from the analysis' eager pass, derives ``bi``, ``bj``, ``h``, ``w`` on
    first access, and moves the entries to their tiles (``ptr``, ``r``, ``c``, ``v``) only when
    one of those is first read (:class:`akfviz.analysis.pattern.FullPass`). Geometry —
    ``shape``, ``tile``, ``n_brows``, ``n_bcols``, ``rb_ptr``, ``n_tiles``, ``nnz`` — never
    triggers that work. Instances are immutable; every array is read-only once handed out by
    an analysis.
    """

    _GEOMETRY = ("bi", "bj", "h", "w")
    _ENTRIES = ("ptr", "r", "c", "v")

    def __init__(self, shape, tile, n_brows, n_bcols, bi=None, bj=None, h=None, w=None, ptr=None,
                 r=None, c=None, v=None, rb_ptr=None, *, n_tiles=None, nnz=None, col_block=None,
                 source=None):
        d = self.__dict__
        d["shape"] = tuple(int(x) for x in shape)
        d["tile"] = int(tile)
        d["n_brows"] = int(n_brows)
        d["n_bcols"] = int(n_bcols)
        d["rb_ptr"] = rb_ptr
        d["_source"] = source
        d["_col_block"] = col_block  # a narrower copy of bj (deferred TileSets)
        for name, arr in (("bi", bi), ("bj", bj), ("h", h), ("w", w), ("ptr", ptr), ("r", r),
                          ("c", c), ("v", v)):
            if arr is not None:
                d[name] = arr
        if n_tiles is None:
            n_tiles = (bj if bj is not None else col_block).shape[0]
        if nnz is None:
            nnz = v.shape[0]
        d["_n_tiles"] = int(n_tiles)
        d["_nnz"] = int(nnz)

    def __setattr__(self, name, value):
        raise AttributeError(f"TileSet is immutable (cannot set {name!r})")

    def __getattr__(self, name):
        # called only for attributes not yet in __dict__: the deferred arrays
        d = self.__dict__
        if name in self._GEOMETRY and d.get("_col_block") is not None:
            self._derive_geometry()
            return d[name]
        if name in self._GEOMETRY + self._ENTRIES and d.get("_source") is not None:
            arrays = d["_source"].entries()
            for key in self._GEOMETRY + self._ENTRIES:
                d.setdefault(key, arrays[key])
            return d[name]
        raise AttributeError(f"'TileSet' object has no attribute {name!r}")

    def _derive_geometry(self):
        """``bi``, ``bj``, ``h``, ``w`` from ``rb_ptr`` and the column blocks (int64, read-only)."""
        d = self.__dict__
        T = d["tile"]
        n_rows, n_cols = d["shape"]
        bj = d.get("bj")
        if bj is None:
            bj = d["_col_block"].astype(np.int64)
        bi = np.repeat(np.arange(d["n_brows"], dtype=np.int64), np.diff(d["rb_ptr"]))
        h = np.minimum(T, n_rows - bi * T)
        w = np.minimum(T, n_cols - bj * T)
        for name, arr in (("bi", bi), ("bj", bj), ("h", h), ("w", w)):
            arr.setflags(write=False)
            d.setdefault(name, arr)

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        return (f"<TileSet {self.shape[0]}×{self.shape[1]} T={self.tile} tiles={self.n_tiles} "
                f"nnz={self.nnz}>")

    @property
    def entries_ready(self) -> bool:
        """Whether the entries (``ptr``, ``r``, ``c``, ``v``) are in place (reading them from a
        deferred TileSet runs the full pass; once it has run, for any reason, they are)."""
        d = self.__dict__
        src = d.get("_source")
        return "v" in d or (src is not None and src.done)

    @property
    def n_tiles(self) -> int:
        """Number of nonempty tiles."""
        return self.__dict__["_n_tiles"]

    @property
    def nnz(self) -> int:
        """Number of stored nonzeros (over all tiles)."""
        return self.__dict__["_nnz"]

    def subset(self, idx) -> "TileSet":
        """A TileSet of the tiles ``idx`` only, in that order (``rb_ptr`` is None: the order need
        not be by row block). Same shape and tile side; ``subset(idx).dense(i) ==
        dense(idx[i])``. On a deferred TileSet the entries are read from the matrix's rows
        (a bisection per tile row), without the full pass: what the selector's cluster mode
        does for the representatives."""
        idx = _tile_indices(idx, self.n_tiles)
        d = self.__dict__
        if "h" in d or d.get("_col_block") is None:
            bi, bj, h, w = self.bi[idx], self.bj[idx], self.h[idx], self.w[idx]
        else:  # the geometry of these tiles only (deriving every tile's costs ~10 ms per million)
            T = self.tile
            bi = np.searchsorted(self.rb_ptr, idx, side="right") - 1
            bj = d["_col_block"][idx].astype(np.int64)
            h = np.minimum(T, self.shape[0] - bi * T)
            w = np.minimum(T, self.shape[1] - bj * T)
        src = d.get("_source")
        if self.entries_ready or src is None:
            from ..kernels.base import gather_entries

            ptr, pos = gather_entries(self, idx)
            r, c, v = self.r[pos], self.c[pos], self.v[pos]
        else:
            indptr, indices, data = src.csr()
            T = self.tile
            cnt = np.zeros(idx.size, dtype=np.int64)
            read = _csr_tile_entries if _subset_parallel(h) else _csr_tile_entries_serial
            read(indptr, indices, data, T, bi, bj, h, w, np.zeros(1, np.int64), cnt,
                 np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
            ptr = np.zeros(idx.size + 1, dtype=np.int64)
            np.cumsum(cnt, out=ptr[1:])
            r = np.empty(ptr[-1], dtype=np.int64)
            c = np.empty(ptr[-1], dtype=np.int64)
            v = np.empty(ptr[-1], dtype=np.float64)
            read(indptr, indices, data, T, bi, bj, h, w, ptr, cnt, r, c, v)
        return TileSet(shape=self.shape, tile=self.tile, n_brows=self.n_brows, n_bcols=self.n_bcols,
                       bi=bi, bj=bj, h=h, w=w, ptr=ptr, r=r, c=c, v=v, rb_ptr=None)

    def _check_index(self, t) -> int:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
            raise InputError(f"A tile index must be an integer, got {t!r}.")
        t = int(t)
        if not 0 <= t < self.n_tiles:
            raise InputError(
                f"Tile index {t} is out of range; this tiling has {self.n_tiles} nonempty "
                f"tiles (valid indices 0..{self.n_tiles - 1})."
            )
        return t

    def entries(self, t):
        """Local rows, local columns and values of tile ``t`` (views, ordered by (r, c))."""
        t = self._check_index(t)
        s, e = self.ptr[t], self.ptr[t + 1]
        return self.r[s:e], self.c[s:e], self.v[s:e]

    def dense(self, t) -> np.ndarray:
        """Tile ``t`` as a dense ``(h, w)`` float64 array (for tests and teaching)."""
        t = self._check_index(t)
        out = np.zeros((int(self.h[t]), int(self.w[t])), dtype=np.float64)
        r, c, v = self.entries(t)
        out[r, c] = v
        return out


def _tile_indices(idx, n_tiles: int) -> np.ndarray:
    """``idx`` as a flat int64 array of tile indices in ``0..n_tiles - 1`` (for
    :meth:`TileSet.subset`).

    Only integer indices are accepted: a float ``0.7`` used to be truncated to tile 0, and a
    boolean mask ``[True, False]`` read as the indices ``[1, 0]`` (probe 43); text, ``None`` or a
    number beyond int64 raised TypeError / ValueError / OverflowError.

    Raises
    ------
    InputError
        Not a list/array of whole numbers, or an index out of range.
    """
    rng = f"0..{n_tiles - 1}" if n_tiles else "none: this tiling has no tiles"
    try:
        arr = np.asarray(idx)
    except (TypeError, ValueError, OverflowError):
        arr = None
    if arr is None or (arr.size and arr.dtype.kind not in "iu"):
        kind = "" if arr is None else f" of {'booleans' if arr.dtype.kind == 'b' else arr.dtype}"
        raise InputError(
            f"Tile indices must be whole numbers (a list or an integer array of tile rows, valid "
            f"indices {rng}), got {shown(idx)}{kind}.")
    if arr.size and arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:
        raise InputError(f"Tile indices must lie in {rng}.")
    arr = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)
    if arr.size and (arr.min() < 0 or arr.max() >= n_tiles):
        raise InputError(f"Tile indices must lie in {rng}.")
    return arr


@njit_parallel
def _csr_tile_entries(indptr, indices, data, T, bi, bj, h, w, ptr, cnt, r, c, v):
    """Entries of the tiles ``(bi, bj, h, w)`` read from a canonical CSR matrix: with ``r`` empty,
    count them into ``cnt``; else write them at ``ptr`` in (r, c) order (one bisection per
    tile row for its first column). ``prange`` over the tiles (each writes its own slots): the
    rows are scattered over the matrix, so the reads wait on memory, and two threads wait in
    parallel."""
    fill = r.shape[0] > 0 or ptr.shape[0] > 1
    for t in numba.prange(bi.shape[0]):
        c0 = bj[t] * T
        c1 = c0 + w[t]
        p = ptr[t] if fill else 0
        k = 0
        for lr in range(h[t]):
            row = bi[t] * T + lr
            lo = indptr[row]
            hi = indptr[row + 1]
            while lo < hi:          # first entry with column >= c0
                mid = (lo + hi) // 2
                if indices[mid] < c0:
                    lo = mid + 1
                else:
                    hi = mid
            q = lo
            while q < indptr[row + 1] and indices[q] < c1:
                if fill:
                    r[p + k] = lr
                    c[p + k] = indices[q] - c0
                    v[p + k] = data[q]
                k += 1
                q += 1
        cnt[t] = k


_csr_tile_entries_serial = serial_twin(_csr_tile_entries)

#: :meth:`TileSet.subset` reads the rows on the worker threads from this many tile rows on
#: (measured: the 144 representatives of a uniform 1M-nonzero 100k² matrix, 4,608 rows,
#: took 0.38 ms serially after ``analyze``, most of it waiting for rows not in cache).
SUBSET_PARALLEL_ROWS = 1024


def _subset_parallel(h) -> bool:
    from ..execute import threads  # (execute imports analysis: import here)

    return int(h.sum()) >= SUBSET_PARALLEL_ROWS and numba.get_num_threads() > 1 and threads.cores_have_room()


def check_tile(tile) -> int:
    """Validate a tile side: an integer in ``TILE_MIN..TILE_MAX`` (4..256)."""
    side = whole_number(tile)   # the library's one rule: 8, 8.0, np.int64(8), np.array(8)
    if side is None:
        raise InputError(f"The tile side must be a whole number between {TILE_MIN} and {TILE_MAX}, "
                         f"got {shown(tile)}.")
    if not TILE_MIN <= side <= TILE_MAX:
        raise InputError(
            f"The tile side must be between {TILE_MIN} and {TILE_MAX} (the app offers 8–128), "
            f"got {shown(tile)}."
        )
    return side


@njit_cached
def _popcount64(x):
    """Number of set bits of a uint64 (SWAR bit count)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit_cached
def _insertion_sort(a, s, e):
    """Sort ``a[s:e]`` in place (small ranges)."""
    for i in range(s + 1, e):
        x = a[i]
        k = i - 1
        while k >= s and a[k] > x:
            a[k + 1] = a[k]
            k -= 1
        a[k + 1] = x


@njit_parallel
def _bucket_row_blocks(indptr, indices, data, n_rows, T, n_brows, n_bcols, n_chunks,
                       tmp_bj, tmp_cnt, rb_count, r_out, c_out, v_out):
    """Counting-sort the entries of every row block by column block (stable).

    For row block ``b`` with entries ``s:e`` (CSR order, i.e. by (row, col)), the
    distinct column blocks are collected into ``tmp_bj[s:s+d]`` in increasing order,
    their entry counts go to ``tmp_cnt[s:s+d]``, and the entries are scattered to
    ``s:e`` of the outputs ordered by (bj, local row, local col). Scratch per chunk is
    O(n_bcols). The distinct column blocks are put in order either by sorting the
    touched list (few tiles) or by scanning a bitmap of ``n_bcols / 64`` words (many
    tiles), whichever is cheaper, so the work is O(nnz + min(d log d, n_bcols / 64)).
    """
    one = np.uint64(1)
    n_words = (n_bcols + 63) // 64
    for ch in numba.prange(n_chunks):
        b0 = ch * n_brows // n_chunks
        b1 = (ch + 1) * n_brows // n_chunks
        count = np.zeros(n_bcols, dtype=np.int64)
        offs = np.empty(n_bcols, dtype=np.int64)
        bits = np.zeros(n_words, dtype=np.uint64)
        for b in range(b0, b1):
            r0 = b * T
            r1 = min(r0 + T, n_rows)
            s = indptr[r0]
            e = indptr[r1]
            d = 0
            for k in range(s, e):
                j = indices[k] // T
                if count[j] == 0:
                    tmp_bj[s + d] = j
                    d += 1
                count[j] += 1
            # order the d distinct column blocks
            lg = 1
            while (1 << lg) < d:
                lg += 1
            if d <= 16:
                _insertion_sort(tmp_bj, s, s + d)
            elif d * lg < 2 * n_words:
                tmp_bj[s:s + d].sort()
            else:
                for q in range(d):
                    j = tmp_bj[s + q]
                    bits[j >> 6] |= one << np.uint64(j & 63)
                q = 0
                for wd in range(n_words):
                    x = bits[wd]
                    if x != 0:
                        bits[wd] = 0
                        while x != 0:
                            low = x & (~x + one)
                            tmp_bj[s + q] = wd * 64 + _popcount64(low - one)
                            q += 1
                            x ^= low
            run = s
            for q in range(d):
                j = tmp_bj[s + q]
                tmp_cnt[s + q] = count[j]
                offs[j] = run
                run += count[j]
                count[j] = 0
            for row in range(r0, r1):
                lr = row - r0
                for k in range(indptr[row], indptr[row + 1]):
                    col = indices[k]
                    j = col // T
                    p = offs[j]
                    offs[j] = p + 1
                    r_out[p] = lr
                    c_out[p] = col - j * T
                    v_out[p] = data[k]
            rb_count[b] = d


@njit_cached
def _compact_range(indptr, n_rows, n_cols, T, b0, b1, tmp_bj, tmp_cnt, rb_ptr,
                   bi, bj, h, w, ptr):
    """Gather the tile lists of row blocks ``b0:b1`` into the flat (bi, bj)-ordered arrays."""
    for b in range(b0, b1):
        r0 = b * T
        s = indptr[r0]
        hh = min(T, n_rows - r0)
        run = s
        t0 = rb_ptr[b]
        for q in range(rb_ptr[b + 1] - t0):
            t = t0 + q
            j = tmp_bj[s + q]
            bi[t] = b
            bj[t] = j
            h[t] = hh
            w[t] = min(T, n_cols - j * T)
            ptr[t] = run
            run += tmp_cnt[s + q]


@njit_parallel
def _compact_tiles(indptr, n_rows, n_cols, T, n_brows, n_chunks, tmp_bj, tmp_cnt, rb_ptr,
                   bi, bj, h, w, ptr):
    for ch in numba.prange(n_chunks):
        _compact_range(indptr, n_rows, n_cols, T, ch * n_brows // n_chunks,
                       (ch + 1) * n_brows // n_chunks, tmp_bj, tmp_cnt, rb_ptr,
                       bi, bj, h, w, ptr)


def _tiles_of_csr(A: sp.csr_array, T: int) -> TileSet:
    n_rows, n_cols = A.shape
    n_brows = -(-n_rows // T)
    n_bcols = -(-n_cols // T)
    nnz = A.nnz
    indptr = A.indptr.astype(np.int64, copy=False)
    indices = A.indices.astype(np.int64, copy=False)
    data = A.data.astype(np.float64, copy=False)
    tmp_bj = np.empty(nnz, dtype=np.int64)
    tmp_cnt = np.empty(nnz, dtype=np.int64)
    rb_count = np.zeros(n_brows, dtype=np.int64)
    r = np.empty(nnz, dtype=np.int64)
    c = np.empty(nnz, dtype=np.int64)
    v = np.empty(nnz, dtype=np.float64)
    # small inputs: one chunk (a parallel launch costs more than it saves)
    n_chunks = min(n_brows, 8 * numba.get_num_threads()) if nnz > 100_000 else 1
    _bucket_row_blocks(indptr, indices, data, n_rows, T, n_brows, n_bcols, n_chunks,
                       tmp_bj, tmp_cnt, rb_count, r, c, v)
    rb_ptr = np.zeros(n_brows + 1, dtype=np.int64)
    np.cumsum(rb_count, out=rb_ptr[1:])
    n_tiles = int(rb_ptr[-1])
    bi = np.empty(n_tiles, dtype=np.int64)
    bj = np.empty(n_tiles, dtype=np.int64)
    h = np.empty(n_tiles, dtype=np.int64)
    w = np.empty(n_tiles, dtype=np.int64)
    ptr = np.empty(n_tiles + 1, dtype=np.int64)
    ptr[n_tiles] = nnz
    if n_chunks > 1:
        _compact_tiles(indptr, n_rows, n_cols, T, n_brows, n_chunks, tmp_bj, tmp_cnt, rb_ptr,
                       bi, bj, h, w, ptr)
    else:
        _compact_range(indptr, n_rows, n_cols, T, 0, n_brows, tmp_bj, tmp_cnt, rb_ptr,
                       bi, bj, h, w, ptr)
    return TileSet(shape=(int(n_rows), int(n_cols)), tile=T, n_brows=n_brows, n_bcols=n_bcols,
                   bi=bi, bj=bj, h=h, w=w, ptr=ptr, r=r, c=c, v=v, rb_ptr=rb_ptr)


def build_tiles(A, tile: int = 32) -> TileSet:
    """Split ``A`` into T×T tiles and keep the nonempty ones (akf-spec §2).

    Tile ``(bi, bj)`` covers rows ``bi·T … min((bi+1)·T, n_rows) − 1`` and columns
    ``bj·T … min((bj+1)·T, n_cols) − 1``. One O(nnz) pass: each row block's entries are
    counting-sorted by column block ``col // T`` (stable, so entries stay ordered by
    (r, c) inside a tile).

    Parameters
    ----------
    A : scipy.sparse matrix/array or 2-D numpy array
        The matrix (validated and canonicalised by :func:`akfviz.workloads.validate.as_csr`).
    tile : int
        Tile side ``T``, 4..256.

    Returns
    -------
    TileSet

    Raises
    ------
    InputError
        Invalid matrix or tile side.

    Examples
    --------
    >>> import numpy as np
    >>> ts = build_tiles(np.eye(10), tile=4)
    >>> ts.n_tiles, ts.bi.tolist(), ts.bj.tolist(), ts.h.tolist()
    (3, [0, 1, 2], [0, 1, 2], [4, 4, 2])
    """
    T = check_tile(tile)
    return _tiles_of_csr(as_csr(A), T)
