"""Kernel base class, byte conventions and the shared batch machinery (akf-spec §3).

A *kernel* is one way of storing and multiplying a tile. Every kernel offers

* a **single-tile API** for tests and teaching: ``encode(tile) -> payload`` (a small
  dataclass of arrays), ``decode(payload) -> ndarray (h, w)``, ``error(tile)`` and
  ``payload_bytes(payload)``;
* a **batch API** over a :class:`~akfviz.analysis.tiling.TileSet` and an index array of
  tiles, vectorised (numpy / numba, no Python loop per tile): ``batch_error(ts, idx)``,
  ``npu_work(ts, idx) -> TileWork`` and ``approx(ts, idx) -> TileApprox`` (the entries of
  the approximated tiles ``Â``, plus format-specific arrays the fused executor packs).

Error (akf-spec §3): ``E(t, k) = ||t − decode(encode_k(t))||_F²``.

Byte conventions (NPU payload, akf-spec §3 and §7)
-------------------------------------------------
On the CPU every value is computed in float64 (so exact kernels equal scipy to rounding);
the *NPU byte model* counts what the accelerator would store:

============================  =====================================================
item                          bytes
============================  =====================================================
fp32 value                    ``VALUE_BYTES["fp32"] = 4``
int8 value                    ``VALUE_BYTES["int8"] = 1``
per-tile int8 scale           ``SCALE_BYTES = 4`` (one fp32)
local row/column index        ``INDEX_BYTES = 1`` (``T <= 256``)
column pointer                ``POINTER_BYTES = 2``
diagonal offset (DIA)         ``DIAG_OFFSET_BYTES = 2`` (signed, ``-(T-1)..T-1``)
block coordinates (BLOCK)     ``BLOCK_INDEX_BYTES = 2`` (block row + block column)
bitmap                        1 bit per cell, ``ceil(h/8)`` bytes per column
N:M slot index                ``ceil(log2 M)`` bits per slot (2 bits for M = 4)
routing entry                 ``ROUTE_BYTES = 1`` per routed column (local column id)
============================  =====================================================

Routing (akf-spec §7): an input event ``x_j`` reaches the tiles of column block ``j // T``
that *store* column ``j``. A dense-format tile (DENSE, QUANT8D, NM, LOWRANK) stores every
column ``0..w-1``; a compressed tile (CSC, PRUNE, QUANT8, BITMAP, DIA, BLOCK) only the
columns its payload touches. Routing entries are part of the payload.

Per-event work (per routed column ``j``; see each kernel module for the derivation):

* DENSE: ``h`` MACs, reads the ``h`` values of column ``j``.
* CSC / PRUNE / QUANT8: ``nnz_j`` MACs (kept entries in column ``j``) + 1 pointer read
  (counted as one decode), reads ``nnz_j`` values and row indices and 2 pointers.
* BITMAP: ``ceil(h/64)`` 64-bit word decodes + ``nnz_j`` MACs.
* DIA: one MAC per occupied diagonal crossing column ``j`` (``d`` for interior columns).
* BLOCK (b = 4): ``b`` MACs per nonempty block in column ``j``'s band of ``b`` columns.
* NM (N:M): ``ceil(h·N/M)`` MACs — the tile stores ``h·ceil(w/M)·N`` slots, i.e. on
  average ``h·N/M`` per column; a structured-sparse MAC array processes that many slots
  per event (one index decode per slot).
* LOWRANK (rank r): ``r`` MACs per event (``z += V[j,:]·x_j``) and ``r·h`` MACs once at
  the end (``y = (U·diag s)·z``).
* SKIP: no work, no routing (the tile is not placed).

Partial-sum rows ``out_rows``: ``h`` for dense-format kernels (they produce every row),
the rows holding stored entries for compressed ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._jit import njit_cached
from ..errors import InputError
from ..memory import check_memory
from ..npu.work import TileWork

VALUE_BYTES = {"fp32": 4, "int8": 1}
SCALE_BYTES = 4
INDEX_BYTES = 1
POINTER_BYTES = 2
DIAG_OFFSET_BYTES = 2
BLOCK_INDEX_BYTES = 2
ROUTE_BYTES = 1
WORD_BITS = 64


# --------------------------------------------------------------------------- helpers
def as_tile(tile) -> np.ndarray:
    """Validate a single tile: a finite, real 2-D array with at least one cell → float64."""
    t = np.asarray(tile)
    if t.ndim != 2:
        raise InputError(f"A tile must be a 2-D array (h × w), got shape {t.shape}.")
    if t.shape[0] < 1 or t.shape[1] < 1:
        raise InputError(f"A tile needs at least one row and one column, got shape {t.shape}.")
    if t.shape[0] > 256 or t.shape[1] > 256:
        raise InputError(f"Tiles are at most 256 × 256 (1-byte local indices), got {t.shape}.")
    if t.dtype.kind not in "fiub":
        raise InputError(f"A tile must hold real numbers, got values of type {t.dtype}.")
    t = t.astype(np.float64)
    if not np.all(np.isfinite(t)):
        raise InputError("A tile contains NaN or infinite values; every entry must be finite.")
    return t


def as_index(ts, idx) -> np.ndarray:
    """Validate an index array of tiles of ``ts`` → int64 1-D array."""
    if idx is None:
        return np.arange(ts.n_tiles, dtype=np.int64)
    a = np.asarray(idx)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise InputError(f"Tile indices must be a 1-D array, got shape {a.shape}.")
    if a.size and a.dtype.kind not in "iu":
        raise InputError(f"Tile indices must be integers, got dtype {a.dtype}.")
    a = a.astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= ts.n_tiles):
        raise InputError(
            f"Tile indices must lie in 0..{ts.n_tiles - 1}; got values from {a.min()} to {a.max()}."
        )
    return a


def gather_entries(ts, idx):
    """Entries of the selected tiles, concatenated in ``idx`` order.

    Returns ``(ptr, pos)`` where ``ptr`` (len(idx)+1) delimits each selected tile's
    entries and ``pos`` indexes ``ts.r / ts.c / ts.v``.
    """
    starts = ts.ptr[idx]
    lens = ts.ptr[idx + 1] - starts
    ptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    pos = np.arange(ptr[-1], dtype=np.int64) + np.repeat(starts - ptr[:-1], lens)
    return ptr, pos


def segment_sum(values, ptr) -> np.ndarray:
    """Sum of ``values[ptr[i]:ptr[i+1]]`` for every segment (0 for empty segments)."""
    n = ptr.shape[0] - 1
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    seg = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    return np.bincount(seg, weights=values, minlength=n).astype(np.float64)


def rank_within_groups(gid, key_desc, tie):
    """Rank of every element within its group when sorted by ``key_desc`` descending.

    Ties are broken by ascending ``tie``, then by position. ``gid`` must be
    non-decreasing (groups are contiguous). Returns int64 ranks (0 = largest). Same result
    as a ``lexsort((tie, -key_desc, gid))`` (:func:`rank_within_groups_reference`), in
    O(Σ g²) for small groups and O(Σ g log g) for large ones, without a global sort.
    """
    n = gid.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return _rank_within_groups(np.ascontiguousarray(gid, dtype=np.int64),
                               np.ascontiguousarray(key_desc, dtype=np.float64),
                               np.ascontiguousarray(tie, dtype=np.int64))


def rank_within_groups_reference(gid, key_desc, tie):
    """Slow, obvious reference of :func:`rank_within_groups` (one global lexsort)."""
    n = gid.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((tie, -key_desc, gid))
    start = np.r_[0, np.flatnonzero(np.diff(gid)) + 1]
    first = np.repeat(start, np.diff(np.r_[start, n]))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64) - first
    return rank


@njit_cached
def _rank_within_groups(gid, key, tie):
    n = gid.shape[0]
    rank = np.empty(n, dtype=np.int64)
    a = 0
    while a < n:
        b = a + 1
        while b < n and gid[b] == gid[a]:
            b += 1
        if b - a <= 16:  # pairwise: count the elements ordered before each one
            for i in range(a, b):
                ki, ti = key[i], tie[i]
                r = 0
                for j in range(a, b):
                    kj, tj = key[j], tie[j]
                    if kj > ki or (kj == ki and (tj < ti or (tj == ti and j < i))):
                        r += 1
                rank[i] = r
        else:  # stable sorts: by tie ascending, then by key descending
            o1 = np.argsort(tie[a:b], kind="mergesort")
            neg = np.empty(b - a, dtype=np.float64)
            for q in range(b - a):
                neg[q] = -key[a + o1[q]]
            o2 = np.argsort(neg, kind="mergesort")
            for q in range(b - a):
                rank[a + o1[o2[q]]] = q
        a = b
    return rank


@njit_cached
def _occupied_columns(ptr, c, w, weight):
    """Per tile: its occupied columns (ascending) and the summed ``weight`` in each.

    Entries of tile ``u`` are ``ptr[u]:ptr[u+1]`` with local columns ``c`` (< w[u]).
    Returns ``(col_ptr, col_local, col_count)``. O(nnz + Σ d log d).
    """
    n = ptr.shape[0] - 1
    wmax = 1
    for u in range(n):
        if w[u] > wmax:
            wmax = w[u]
    counts = np.zeros(wmax, dtype=np.int64)
    seen = np.zeros(wmax, dtype=np.bool_)
    tmp = np.empty(wmax, dtype=np.int64)
    m = ptr[n] - ptr[0]
    col_ptr = np.zeros(n + 1, dtype=np.int64)
    col_local = np.empty(m, dtype=np.int64)
    col_count = np.empty(m, dtype=np.int64)
    q = 0
    for u in range(n):
        d = 0
        for k in range(ptr[u], ptr[u + 1]):
            j = c[k]
            if not seen[j]:
                seen[j] = True
                tmp[d] = j
                d += 1
            counts[j] += weight[k]
        tmp[:d].sort()
        for s in range(d):
            j = tmp[s]
            col_local[q] = j
            col_count[q] = counts[j]
            counts[j] = 0
            seen[j] = False
            q += 1
        col_ptr[u + 1] = q
    return col_ptr, col_local[:q].copy(), col_count[:q].copy()


def occupied_columns(ptr, c, w, weight=None):
    """Occupied columns of each tile (see :func:`_occupied_columns`); weight defaults to 1."""
    if weight is None:
        weight = np.ones(c.shape[0], dtype=np.int64)
    return _occupied_columns(ptr.astype(np.int64), c.astype(np.int64), w.astype(np.int64),
                             weight.astype(np.int64))


def count_distinct_rows(ptr, r) -> np.ndarray:
    """Number of distinct local rows per tile (entries sorted by (r, c) within a tile)."""
    n = ptr.shape[0] - 1
    if r.shape[0] == 0:
        return np.zeros(n, dtype=np.int64)
    seg = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    new = np.ones(r.shape[0], dtype=bool)
    new[1:] = (seg[1:] != seg[:-1]) | (r[1:] != r[:-1])
    return np.bincount(seg[new], minlength=n).astype(np.int64)


# --------------------------------------------------------------------------- approx
@dataclass(eq=False)
class TileApprox:
    """The approximated tiles ``Â`` of a batch, as entries (COO per tile).

    Attributes
    ----------
    idx : int64 (n,)
        Tile indices (into the TileSet).
    ptr : int64 (n+1,)
        Entries of tile ``u`` are ``ptr[u]:ptr[u+1]``, ordered by (r, c).
    r, c : int64 (m,)
        Local row / column.
    v : float64 (m,)
        Values of ``Â`` (nonzero; dropped entries are absent).
    err : float64 (n,)
        ``E = ||t − Â_t||_F²`` per tile.
    extra : dict
        Format-specific arrays for the executor (e.g. int8 codes and scales, factors).
    """

    idx: np.ndarray
    ptr: np.ndarray
    r: np.ndarray
    c: np.ndarray
    v: np.ndarray
    err: np.ndarray
    extra: dict = field(default_factory=dict)


def approx_from_mask(ts, idx, keep_fn=None, value_fn=None) -> TileApprox:
    """Build a :class:`TileApprox` whose ``Â`` keeps (a subset of) the original entries.

    ``keep_fn(ptr, pos) -> bool mask`` selects kept entries (default: all), and
    ``value_fn(ptr, pos, keep) -> values`` gives their approximated values (default: the
    originals). The error sums ``(v − v̂)²`` over every original entry (dropped → ``v²``).
    """
    ptr, pos = gather_entries(ts, idx)
    v = ts.v[pos]
    keep = np.ones(pos.shape[0], dtype=bool) if keep_fn is None else keep_fn(ptr, pos)
    vhat = np.where(keep, v, 0.0) if value_fn is None else value_fn(ptr, pos, keep)
    keep = keep & (vhat != 0.0)
    if keep_fn is None and value_fn is None:
        err = np.zeros(idx.shape[0], dtype=np.float64)
    else:
        err = segment_sum((v - np.where(keep, vhat, 0.0)) ** 2, ptr)
    seg = np.repeat(np.arange(idx.shape[0], dtype=np.int64), np.diff(ptr))
    kptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(seg[keep], minlength=idx.shape[0]), out=kptr[1:])
    return TileApprox(idx=idx, ptr=kptr, r=ts.r[pos][keep], c=ts.c[pos][keep],
                      v=vhat[keep].astype(np.float64), err=err)


#: Tiles per call of ``kernel.approx`` in :func:`reproduces_exactly`.
REPRODUCE_CHUNK = 8192


def reproduces_exactly(kernel, ts, idx=None) -> np.ndarray:
    """Per tile of ``idx``: True when ``decode(encode(t))`` equals ``t`` entry for entry —
    the same positions and the same values, bit for bit.

    Stricter than ``E(t, k) == 0``: E can be 0 while ``Â ≠ t`` when the squares underflow
    (entries below ≈ 1e-154 square to 0) or when a kernel computes E by a formula that holds
    in exact arithmetic only (LOWRANK: the tail of the singular values, while the SVD product
    carries rounding). A lossless kernel reproduces every tile.
    """
    idx = as_index(ts, idx)
    if kernel.lossless:
        return np.ones(idx.shape[0], dtype=bool)
    if idx.shape[0] > REPRODUCE_CHUNK:  # bounded memory: some kernels decode tiles densely
        return np.concatenate([reproduces_exactly(kernel, ts, idx[i:i + REPRODUCE_CHUNK])
                               for i in range(0, idx.shape[0], REPRODUCE_CHUNK)])
    ap = kernel.approx(ts, idx)
    ptr, pos = gather_entries(ts, idx)
    n0, n1 = np.diff(ptr), np.diff(ap.ptr)
    same = n0 == n1
    # entries of the tiles with as many entries in Â as in t: aligned, both ordered by (r, c)
    p0 = pos[np.repeat(same, n0)]
    s1 = np.repeat(same, n1)
    eq = (ts.r[p0] == ap.r[s1]) & (ts.c[p0] == ap.c[s1]) & (ts.v[p0] == ap.v[s1])
    seg = np.repeat(np.flatnonzero(same), n0[same])
    ok = same.copy()
    ok[seg[~eq]] = False
    return ok


# --------------------------------------------------------------------------- TileWork
def make_tilework(kernel_name, ts, idx, col_ptr, col_local, ev_macs, ev_decodes,
                  ev_sram_bytes, payload_bytes, out_rows, final_macs=None,
                  final_sram_bytes=None, int8=False) -> TileWork:
    """Assemble a validated :class:`TileWork` for one kernel over tiles ``idx``."""
    n = idx.shape[0]
    z = np.zeros(n, dtype=np.int64)
    i64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
    return TileWork(
        kernel_names=(kernel_name,),
        kernel_id=np.zeros(n, dtype=np.int64),
        tile_index=idx.astype(np.int64),
        bi=ts.bi[idx].astype(np.int64), bj=ts.bj[idx].astype(np.int64),
        h=ts.h[idx].astype(np.int64), w=ts.w[idx].astype(np.int64),
        col_ptr=i64(col_ptr), col_local=i64(col_local), ev_macs=i64(ev_macs),
        ev_decodes=i64(ev_decodes), ev_sram_bytes=i64(ev_sram_bytes),
        payload_bytes=i64(payload_bytes), out_rows=i64(out_rows),
        final_macs=z.copy() if final_macs is None else i64(final_macs),
        final_sram_bytes=z.copy() if final_sram_bytes is None else i64(final_sram_bytes),
        int8=np.full(n, bool(int8)),
    ).validate()


#: Bytes held per routed column while a dense-layout TileWork is built (its four per-column
#: arrays and the temporaries beside them), for :func:`all_columns`' memory check.
ROUTE_WORK_BYTES = 64


def all_columns(w):
    """Routing of dense-format tiles: every column ``0..w-1`` of each tile.

    Refused (:class:`~akfviz.errors.ResourceLimitError`) before allocating when the work list
    would not fit in memory: on a hyper-sparse matrix every one-entry tile still routes all
    its ``w`` columns (951k tiles at T = 32: 30M routes)."""
    w = np.asarray(w, dtype=np.int64)
    col_ptr = np.zeros(w.shape[0] + 1, dtype=np.int64)
    np.cumsum(w, out=col_ptr[1:])
    check_memory(ROUTE_WORK_BYTES * int(col_ptr[-1]),
                 f"The NPU work of {w.shape[0]:,} dense-layout tiles (DENSE, QUANT8D, LOWRANK: "
                 f"every column of a tile receives events, {int(col_ptr[-1]):,} in all)",
                 "Use sparse kernels for these tiles, or a smaller matrix.")
    col_local = np.empty(int(col_ptr[-1]), dtype=np.int64)
    _count_up(col_ptr, col_local)
    return col_ptr, col_local


@njit_cached
def _count_up(ptr, out):
    """``out[ptr[t] + j] = j`` for ``j < ptr[t+1] − ptr[t]``: the local column of every route.

    One pass, no temporaries; numpy's ``arange(total) − repeat(ptr[:-1], w)`` held three
    route-sized arrays at once (≈ 730 MB for the 30M routes of a hyper-sparse 1M-nonzero
    matrix)."""
    for t in range(ptr.shape[0] - 1):
        s = ptr[t]
        for j in range(ptr[t + 1] - s):
            out[s + j] = j


# --------------------------------------------------------------------------- Kernel
class Kernel:
    """Base class of every kernel (akf-spec §3).

    Attributes
    ----------
    name : str
        Registry name (``"CSC"``, ``"NM2:4"``, …).
    family : str
        Kernel family (one fixed colour per family in the app).
    lossless : bool
        Exact on every tile.
    precision : str
        ``"fp32"`` or ``"int8"`` (MAC precision on the NPU).
    description : str
        One line for users.
    exec_format : str
        The fused executor's storage format (``"dense"``, ``"csc"``, …, ``"none"``).
    entry_format : bool
        Its ``Â`` is a set of entries that the executor may merge into the residual
        compressed-row part when the tile is hyper-sparse.
    """

    name = "?"
    family = "?"
    lossless = False
    precision = "fp32"
    description = ""
    exec_format = "none"
    entry_format = False

    def __repr__(self):
        return f"<Kernel {self.name} ({self.family}, {'exact' if self.lossless else 'lossy'})>"

    # single tile ---------------------------------------------------------------
    def encode(self, tile):  # pragma: no cover - abstract
        """Store one tile in this kernel's format (akf-spec §3, ``encode(tile) -> payload``).

        Parameters
        ----------
        tile : array_like (h, w)
            One dense tile, ``1 <= h, w <= 256`` (an edge tile of a tiling may be smaller
            than ``T``). Implementations pass it through :func:`as_tile`, which refuses
            anything else with an InputError.

        Returns
        -------
        payload
            A small frozen dataclass of arrays (and scalars such as an int8 scale) holding
            exactly what the format stores, so that :meth:`payload_bytes` can count its bytes
            and :meth:`decode` can rebuild ``Â``. A lossy kernel stores its approximation
            (e.g. the kept top-q entries, the int8 codes, the rank-r factors).
        """
        raise NotImplementedError

    def decode(self, payload) -> np.ndarray:  # pragma: no cover - abstract
        """The dense tile ``Â`` a payload stands for (for tests and teaching).

        Parameters
        ----------
        payload
            What :meth:`encode` returned.

        Returns
        -------
        ndarray (h, w), float64
            ``Â = decode(encode(t))``, same shape as ``t``; equal to ``t`` for a lossless
            kernel (to rounding), and the basis of the error
            ``E(t, k) = ||t − decode(encode_k(t))||_F²`` (akf-spec §3, :meth:`error`).
        """
        raise NotImplementedError

    def payload_bytes(self, payload) -> int:  # pragma: no cover - abstract
        """NPU payload bytes of one encoded tile (akf-spec §3 table, §7; module docstring).

        Parameters
        ----------
        payload
            What :meth:`encode` returned.

        Returns
        -------
        int
            Bytes the tile keeps in its PE's SRAM under the byte conventions of this module
            (:data:`VALUE_BYTES` by :attr:`precision`, :data:`INDEX_BYTES`,
            :data:`POINTER_BYTES`, …), routing entries (:data:`ROUTE_BYTES` per routed column)
            included. It must equal ``npu_work(ts, [t]).payload_bytes[0]`` for the same tile:
            the single-tile count and the batch count of :meth:`npu_work` are two
            implementations of one formula (``tests/kernels/test_kernels_batch.py`` checks
            every registered kernel).
        """
        raise NotImplementedError

    def error(self, tile) -> float:
        """``E = ||tile − decode(encode(tile))||_F²`` (akf-spec §3)."""
        t = as_tile(tile)
        d = t - self.decode(self.encode(t))
        return float(np.sum(d * d))

    # batch ------------------------------------------------------------------
    def approx(self, ts, idx=None) -> TileApprox:  # pragma: no cover - abstract
        """The approximated tiles ``Â`` of a batch, vectorised (no Python loop per tile).

        Parameters
        ----------
        ts : TileSet
            The tiled matrix (:func:`akfviz.analysis.tiling.build_tiles`).
        idx : array_like of int, optional
            Indices of the tiles into ``ts``, in any order (validated by :func:`as_index`:
            a 1-D integer array in ``0 … ts.n_tiles − 1``, else InputError). ``None`` means
            every tile of ``ts``, ``0 … ts.n_tiles − 1``.

        Returns
        -------
        TileApprox
            One entry per tile of ``idx``, in ``idx`` order: the entries of ``Â_t`` (ordered by
            ``(r, c)``, zeros absent) equal ``decode(encode(ts.dense(t)))``, and ``err[u]`` is
            ``E = ||t − Â_t||_F²`` (akf-spec §3). ``extra`` carries the arrays the fused
            executor packs for :attr:`exec_format` (int8 codes and scales, factors, …).
        """
        raise NotImplementedError

    def batch_error(self, ts, idx=None) -> np.ndarray:
        """``E`` for every tile in ``idx`` (float64, equals ``error(ts.dense(t))``)."""
        idx = as_index(ts, idx)
        if self.lossless:
            return np.zeros(idx.shape[0], dtype=np.float64)
        return self.approx(ts, idx).err

    def npu_work(self, ts, idx=None) -> TileWork:  # pragma: no cover - abstract
        """Per-tile NPU work of a batch, vectorised (akf-spec §3 table "NPU work per input
        event j", §7; the per-kernel derivation in each kernel module).

        Parameters
        ----------
        ts : TileSet
            The tiled matrix.
        idx : array_like of int, optional
            As in :meth:`approx`: tile indices in any order; ``None`` means every tile.

        Returns
        -------
        TileWork
            One tile per entry of ``idx``, in ``idx`` order, with ``kernel_names == (name,)``
            and ``tile_index = idx``: the routed columns (every column ``0 … w−1`` for a
            dense-layout kernel, the stored ones for a compressed one), per-event
            ``ev_macs``, ``ev_decodes`` and ``ev_sram_bytes``, ``payload_bytes``,
            ``out_rows``, ``final_macs`` / ``final_sram_bytes`` and ``int8`` (from
            :attr:`precision`), counted on what the format stores for the tile (for a lossy
            kernel: its approximation, not the original entries). ``payload_bytes[u]`` must equal
            ``payload_bytes(encode(ts.dense(idx[u])))``: the batch and single-tile payloads
            agree. A kernel whose tiles are not placed (SKIP, ``exec_format = "none"``)
            returns an empty TileWork.
        """
        raise NotImplementedError
