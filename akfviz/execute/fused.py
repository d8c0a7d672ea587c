"""The fused CPU executor: every tile in its kernel's format, one numba pass (akf-spec §3, §9).

Packing (:func:`pack_plan`)
---------------------------
Tiles are grouped by *executor format* (``Kernel.exec_format``) and packed
structure-of-arrays, one packer per format in :mod:`akfviz.execute.packing` (whose
docstring lists the formats and their arrays). The executor formats of
:data:`RESIDUAL_ONLY_FORMATS` (``csc``: CSC, PRUNE; ``csc_i8``: QUANT8) have no layout of
their own: every tile of theirs runs from the residual (below).

Hyper-sparse tiles (HYB / Cocktail idea): a tile whose kernel's ``Â`` is a set of entries
(CSC, BITMAP, DIA, BLOCK exactly; PRUNE, NM, QUANT8 after their approximation) and that
keeps fewer entries than it has columns (``kept < w``, i.e. density below ``1/T`` for a
full tile: less than one entry per column, so a per-column loop would mostly visit
nothing; DIA: fewer than ``min(h, w)/2``) is not packed in its format: its entries are
merged into the ``residual`` compressed-row part of its row block, paying no per-tile
overhead. Every CSC and PRUNE tile, every QUANT8 tile (as its dequantised entries
``q·scale``) and BITMAP tiles below 75 % density go there too (see :func:`to_residual`):
the same entries, executed as whole CSR rows, run faster on a CPU than per-tile column
scatters or bit scans. QUANT8 tiles whose entries lie on a few long diagonal runs
(:func:`diagonal_tiles`) run in the DIA layout instead, with the same ``q·scale``. The NPU
payload and work of a tile (``Kernel.npu_work``) do not depend on this CPU layout.

Execution
---------
:class:`PackedPlan` runs the numba drivers of :mod:`akfviz.execute.tile_kernels` over
chunks of row blocks; :mod:`akfviz.execute.threads` decides whether on the worker threads.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._jit import njit_cached
from ..kernels.base import gather_entries
from .packing import (EXEC_FORMATS, Entries, FORMATS, INLINE_RESIDUAL, RES_COO, RESIDUAL_ONLY_FORMATS,
                      SRC_MAIN, SRC_OTHER, SRC_OWN, _rbp, _starts, build_residual, build_residual_from_csr,
                      empty_pack,
                      long_diagonal_runs, long_diagonal_runs_serial, pack_bitmap, pack_block, pack_dense,
                      pack_dia, pack_lowrank, pack_nm, residual_col_dtype, residual_layout)
from .tile_kernels import (_fused_matmat, _fused_matmat_serial, _residual_matvec,
                           _residual_matvec_serial, _tiles_matvec, _tiles_matvec_serial)
from . import threads


# =========================================================================== driver
@dataclass(eq=False)
class PackedPlan:
    """Every tile of a plan packed for the fused executor (picklable: plain arrays)."""

    shape: tuple
    tile: int
    n_brows: int
    residual: dict
    packs: dict  # fmt -> dict(rbp=..., meta=..., arrays...), one per format of FORMATS
    block_work: np.ndarray  # cumulative streamed bytes per row block (n_brows + 1), for chunking

    def _arrays(self):
        p = self.packs
        r = self.residual
        return (r["mode"], r["ptr"], r["row"], r["col"], r["val"],
                p["dense"]["rbp"], p["dense"]["meta"], p["dense"]["val"],
                p["dense_i8"]["rbp"], p["dense_i8"]["meta"], p["dense_i8"]["val"], p["dense_i8"]["scale"],
                p["bitmap"]["rbp"], p["bitmap"]["meta"], p["bitmap"]["words"], p["bitmap"]["val"],
                p["dia"]["rbp"], p["dia"]["meta"], p["dia"]["run"], p["dia"]["val"],
                p["block"]["rbp"], p["block"]["meta"], p["block"]["br"], p["block"]["bc"], p["block"]["val"],
                p["nm"]["rbp"], p["nm"]["meta"], p["nm"]["idx"], p["nm"]["val"],
                p["lowrank"]["rbp"], p["lowrank"]["meta"], p["lowrank"]["us"], p["lowrank"]["v"])

    def _mm_args(self):
        """Arguments of :func:`_fused_matmat` after ``(X, Y)``."""
        return (np.int64(self.tile), np.int64(self.shape[0]), np.int64(self.n_brows), *self._arrays())

    def _mv_args(self, n_chunks):
        """Arguments after ``(x, y)`` of :func:`_residual_matvec` and :func:`_tiles_matvec`
        (``None`` when the plan has no packed tile; the first ``None`` when it has tiles and no
        residual entry): int64 index arrays viewed as uint64 (all
        non-negative), chunks of row blocks balanced by streamed bytes."""
        cache = self.__dict__.setdefault("_mv_cache", {})
        if n_chunks not in cache:
            u = tuple(a.view(np.uint64) if a.dtype == np.int64 else a for a in self._arrays())
            head = (self._chunks(n_chunks), np.uint64(self.tile), np.uint64(self.shape[0]))
            has_tiles = any(pk["meta"].shape[0] for pk in self.packs.values())
            # no residual entry (an N:M or dense plan): y is zeroed here and the residual pass,
            # which would only write those zeros, is not launched (≈ 6 µs of a 72 µs matvec)
            no_residual = has_tiles and self.residual["val"].shape[0] == 0
            cache[n_chunks] = (None if no_residual else head + u[:5], head + u[5:] if has_tiles else None)
        return cache[n_chunks]

    def run_matvec(self, x, y, n_chunks, parallel):
        """``y = Â x`` with ``n_chunks`` chunks of row blocks (``parallel``: ``prange``
        over them; the result is the same, bit for bit, for any ``n_chunks``)."""
        res_args, tile_args = self._mv_args(n_chunks)
        if res_args is None:   # every entry is in a packed tile: the residual pass would write zeros
            y.fill(0.0)
        else:
            (_residual_matvec if parallel else _residual_matvec_serial)(x, y, *res_args)
        if tile_args is not None:
            (_tiles_matvec if parallel else _tiles_matvec_serial)(x, y, *tile_args)
        return y

    def _chunks(self, n_chunks):
        """Row-block boundaries of ``n_chunks`` consecutive ranges with about equal work."""
        cw = self.block_work
        n_chunks = max(1, min(int(n_chunks), self.n_brows))
        if n_chunks == 1 or cw[-1] == 0:
            bounds = np.linspace(0, self.n_brows, n_chunks + 1).round().astype(np.int64)
        else:
            goal = cw[-1] * np.arange(1, n_chunks) / n_chunks
            inner = np.searchsorted(cw, goal, side="left")
            bounds = np.concatenate([[0], inner, [self.n_brows]]).astype(np.int64)
            bounds = np.maximum.accumulate(np.minimum(bounds, self.n_brows))
        return bounds.view(np.uint64)

    def _parallel(self, k=1, n_threads=None) -> bool:
        """Whether ``k`` right-hand sides run on the worker threads (``n_threads``: numba's
        thread count, when the caller has it already — asking costs ≈ 1.5 µs)."""
        nt = numba.get_num_threads() if n_threads is None else n_threads
        return (k * self.bytes_moved() >= threads.min_parallel_bytes() and self.n_brows > 1
                and nt > 1 and self._splits_well(nt) and threads.cores_have_room())

    def _splits_well(self, n_chunks) -> bool:
        """True when ``n_chunks`` row-block ranges share the work well enough for threads to
        pay off: the largest range holds at most :data:`threads.PARALLEL_MAX_SHARE` of it. A wide,
        short matrix (say 40 × 300,000) has two row blocks of very unequal weight; run in
        parallel it was slower than one thread."""
        memo = self.__dict__.setdefault("_split_memo", {})
        if n_chunks not in memo:
            cw = self.block_work
            b = self._chunks(n_chunks).view(np.int64)
            total = float(cw[-1])
            memo[n_chunks] = total > 0 and float(np.max(np.diff(cw[b]))) <= threads.PARALLEL_MAX_SHARE * total
        return memo[n_chunks]

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``y = Â x`` (x: float64, contiguous, length n_cols)."""
        y = np.empty(self.shape[0], dtype=np.float64)
        if self.bytes_moved() < threads.min_parallel_bytes():  # small plan: serial, no thread/load checks
            return self.run_matvec(x, y, 1, False)
        nt = numba.get_num_threads()
        par = self._parallel(1, nt)
        return self.run_matvec(x, y, nt if par else 1, par)

    def matmat(self, X: np.ndarray) -> np.ndarray:
        """``Y = Â X`` (X: float64, C-contiguous, shape (n_cols, k))."""
        Y = np.empty((self.shape[0], X.shape[1]), dtype=np.float64)
        fn = _fused_matmat if self._parallel(X.shape[1]) else _fused_matmat_serial
        fn(X, Y, *self._mm_args())
        return Y

    def bytes_moved(self) -> int:
        """Bytes of every packed array the executor streams (excluding x and y)."""
        if getattr(self, "_bytes", None) is not None:
            return self._bytes
        total = sum(a.nbytes for a in self.residual.values())
        for pk in self.packs.values():
            total += sum(a.nbytes for a in pk.values())
        self._bytes = int(total)
        return self._bytes

    def format_tiles(self) -> dict:
        """Number of tiles per executor format (residual: number of stored entries); the
        formats of :data:`RESIDUAL_ONLY_FORMATS` count 0 (their tiles are residual entries)."""
        out = {f: int(self.packs[f]["meta"].shape[0]) if f in self.packs else 0 for f in EXEC_FORMATS}
        out["residual_entries"] = int(self.residual["val"].shape[0])
        return out


# =========================================================================== plan packing



def ragged_take(ptr, order, *arrays):
    """Reorder the segments of ragged arrays (``ptr``) into ``order``; returns new ptr + arrays."""
    lens = np.diff(ptr)[order]
    new_ptr = _starts(lens)
    pos = np.arange(new_ptr[-1], dtype=np.int64) + np.repeat(ptr[:-1][order] - new_ptr[:-1], lens)
    return (new_ptr, *[a[pos] for a in arrays])


def _merge_entries(parts):
    """Concatenate Entries of several kernels and order them by tile index."""
    if len(parts) == 1:
        return parts[0]
    tid = np.concatenate([p.tid for p in parts])
    ptr = _starts(np.concatenate([np.diff(p.ptr) for p in parts]))
    r = np.concatenate([p.r for p in parts])
    c = np.concatenate([p.c for p in parts])
    v = np.concatenate([p.v for p in parts])
    has_q = parts[0].q is not None
    q = np.concatenate([p.q for p in parts]) if has_q else np.zeros(0, np.int8)
    scale = np.concatenate([p.scale for p in parts]) if has_q else None
    order = np.argsort(tid, kind="stable")
    ptr2, r, c, v = ragged_take(ptr, order, r, c, v)
    q = ragged_take(ptr, order, q)[1] if has_q else None
    return Entries(tid=tid[order], ptr=ptr2, r=r, c=c, v=v, q=q,
                   scale=scale[order] if has_q else None)


#: Entry-based formats → their packer (NM needs per-tile N, M and is packed separately).
_ENTRY_PACKERS = {
    "dense": lambda ts, e: pack_dense(ts, e, False),
    "dense_i8": lambda ts, e: pack_dense(ts, e, True),
    "bitmap": pack_bitmap,
    "dia": pack_dia,
    "block": pack_block,
}


#: A BITMAP tile pays a mispredicted loop exit per row segment of ``w`` columns: it stays a
#: bitmap only when it is nearly full (density ≥ ``BITMAP_MIN_DENSITY``: few bit-loop exits per
#: entry), else its entries run from the residual as whole CSR rows.
BITMAP_MIN_DENSITY = 0.75
#: N of the N:M tiles that keep the ``nm`` format's own loop (unrolled for N = 2). Other N:M
#: tiles run from the residual: N = 1's loop of one accumulator over ``w / M`` slots per tile row
#: ran a 1:4 matrix at 0.3× scipy's speed, and 4:8 at 0.5–0.8× on one thread (held-out audit);
#: as whole CSR rows the same entries run as scipy's loop does.
NM_OWN_LOOP_N = (2,)
#: Inline-residual tiles (QUANT8) whose entries lie on a few long diagonal runs run in the DIA
#: layout instead, as their dequantised values ``q·scale``: at most ``min(h, w) / 4``
#: occupied diagonals, at least ``min(h, w) / 2`` entries, and runs at least 2/3 full
#: (``3·nnz ≥ 2·slots``, so a DIA slot costs no more bytes than a CSR entry). The 5-point
#: stencil's exact plan (QUANT8 wherever the values are equal) ran at 1.40× scipy's speed
#: from the residual and 1.70× with its 31-entry diagonal runs in the DIA layout (bench_matvec,
#: 2 threads; docs/benchmarks.md).
DIAGONAL_MAX_DIAGS_PER_SIDE = 0.25
DIAGONAL_MIN_FILL = 2.0 / 3.0


def diagonal_tiles(ts, idx):
    """Which tiles ``idx`` (entries of the TileSet) lie on a few long diagonal runs (bool per
    tile; rule and constants: :data:`DIAGONAL_MIN_FILL`). Only tiles with at least
    ``min(h, w) / 2`` entries are looked at (one pass over their entries)."""
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    work = idx.shape[0] + (int(ts.ptr[idx[-1] + 1] - ts.ptr[idx[0]]) if idx.shape[0] else 0)
    par = threads.pack_parallel(work)
    run = long_diagonal_runs if par else long_diagonal_runs_serial
    return run(ts.ptr, ts.r, ts.c, ts.h, ts.w, idx, np.int64(ts.tile), DIAGONAL_MAX_DIAGS_PER_SIDE,
               DIAGONAL_MIN_FILL, np.int64(4 * numba.get_num_threads() if par else 1))


def to_residual(fmt, kept, h, w, n=None):
    """Which tiles of executor format ``fmt`` go to the residual (bool per tile).

    Hyper-sparse tiles (``kept < w``: less than one entry per column) of every entry format
    and of exact DENSE tiles, except DIA, whose tiles go there below ``min(h, w) / 2`` entries
    (a diagonal run of half a tile side is worth its vectorised loop); every tile of a format
    of :data:`RESIDUAL_ONLY_FORMATS` (CSC, PRUNE, QUANT8); BITMAP tiles below
    ``BITMAP_MIN_DENSITY``; every N:M tile whose ``n`` (N) is not in :data:`NM_OWN_LOOP_N`.
    (Vectorised statement of the rule :func:`_route_tiles` applies during packing.)
    """
    if fmt == "nm" and n is not None and int(n) not in NM_OWN_LOOP_N:
        return np.ones(kept.shape[0], dtype=bool)
    if fmt == "dia":  # a diagonal run is contiguous: worth its own loop from half a tile side
        return 2 * kept < np.minimum(h, w)
    hyper = kept < w
    if fmt in RESIDUAL_ONLY_FORMATS:
        # QUANT8 tiles run from their dequantised entries q·scale (float64): whole CSR rows beat
        # per-tile column scatters on a CPU.
        return np.ones(kept.shape[0], dtype=bool)
    if fmt == "bitmap":
        return hyper | (kept < BITMAP_MIN_DENSITY * h * w)
    return hyper


#: Rule codes of :func:`_route_tiles` (one per executor format, see :func:`to_residual`).
RULE_NEVER, RULE_ALWAYS, RULE_HYPER, RULE_BITMAP, RULE_DIA = 0, 1, 2, 3, 4
#: Formats with their own rule. Every tile of a format of :data:`RESIDUAL_ONLY_FORMATS` goes to
#: the residual: a per-tile column loop would scatter into ``y`` entry by entry, whole CSR rows
#: (one loop exit per matrix row) run as fast as scipy's loop. ``dense`` (exact DENSE tiles,
#: whose entries are the tile's own) goes to the residual when hyper-sparse, like the entry
#: formats: an all-DENSE plan of a hyper-sparse matrix would otherwise pack a mostly-zero h×w
#: block per tile (951k one-entry tiles at T = 32: 7.8 GB).
_FORMAT_RULES = {**dict.fromkeys(RESIDUAL_ONLY_FORMATS, RULE_ALWAYS), "bitmap": RULE_BITMAP,
                 "dia": RULE_DIA, "dense": RULE_HYPER}


def residual_rule(kernel) -> int:
    """Rule code of a kernel's tiles: a format with its own rule in :data:`_FORMAT_RULES`;
    other formats that are sets of entries follow :func:`to_residual` (hyper-sparse tiles);
    the rest never go to the residual. N:M kernels without a loop of their own
    (:data:`NM_OWN_LOOP_N`) route every tile there."""
    if kernel.exec_format == "nm" and int(kernel.n) not in NM_OWN_LOOP_N:
        return RULE_ALWAYS
    rule = _FORMAT_RULES.get(kernel.exec_format)
    if rule is not None:
        return rule
    return RULE_HYPER if kernel.entry_format else RULE_NEVER


@njit_cached
def _route_tiles(idx, kptr, tptr, h, w, rule, code, off, src, lo, hi, keep):
    """Route the tiles ``idx`` of one group: residual tiles get ``src[t] = code`` (and, for
    approximated entries, ``lo/hi[t] = off + kptr[u], off + kptr[u+1]``); the positions
    ``u`` of the other tiles are written to ``keep``. Returns how many were kept.

    Rule (:func:`to_residual`, ``kept`` = entries of the tile's ``Â``, of the tile itself
    when they are read from the TileSet): ``RULE_ALWAYS``;
    ``RULE_HYPER`` ``kept < w``; ``RULE_BITMAP`` also ``kept < BITMAP_MIN_DENSITY·h·w``;
    ``RULE_DIA`` ``2·kept < min(h, w)``.
    """
    nk = 0
    own = code != SRC_MAIN and code != SRC_OTHER  # entries read from the TileSet
    for u in range(idx.shape[0]):
        t = idx[u]
        kept = tptr[t + 1] - tptr[t] if own else kptr[u + 1] - kptr[u]
        if rule == RULE_ALWAYS:
            res = True
        elif rule == RULE_DIA:
            res = 2 * kept < min(h[t], w[t])
        else:
            res = kept < w[t]
            if rule == RULE_BITMAP and not res:
                res = kept < BITMAP_MIN_DENSITY * h[t] * w[t]
        if res:
            src[t] = code
            if not own:
                lo[t] = off + kptr[u]
                hi[t] = off + kptr[u + 1]
        else:
            keep[nk] = u
            nk += 1
    return nk


def _entries_of(ts, fmt, idx, ap, keep):
    """Entries of the tiles ``idx[keep]`` of one group (``keep`` None: all of them)."""
    if ap is None:
        sub = idx if keep is None else idx[keep]
        ptr, pos = gather_entries(ts, sub)
        return Entries(tid=sub, ptr=ptr, r=ts.r[pos], c=ts.c[pos], v=ts.v[pos])
    quant = fmt == "dense_i8"
    if keep is None:
        return Entries(tid=idx, ptr=ap.ptr, r=ap.r, c=ap.c, v=ap.v,
                       q=ap.extra["q"] if quant else None, scale=ap.extra["scale"] if quant else None)
    ptr, r, c, v = ragged_take(ap.ptr, keep, ap.r, ap.c, ap.v)
    q = scale = None
    if quant:
        q = ragged_take(ap.ptr, keep, ap.extra["q"])[1]
        scale = ap.extra["scale"][keep]
    return Entries(tid=idx[keep], ptr=ptr, r=r, c=c, v=v, q=q, scale=scale)


def _approx_arrays(ap):
    return (np.ascontiguousarray(ap.r, dtype=np.int64), np.ascontiguousarray(ap.c, dtype=np.int64),
            np.ascontiguousarray(ap.v, dtype=np.float64))


@njit_cached
def _rule_holds_for_all(rb_ptr, col_block, kept, idx, T, n_rows, n_cols, rule, bitmap_min):
    """Whether every tile ``idx[u]`` (ascending) with ``kept[u]`` entries goes to the residual under
    ``rule`` (:func:`_route_tiles`'s test, with ``h`` and ``w`` from the row block and column
    block). ``rule = -1``: the test of :func:`diagonal_tiles` instead — True when no tile has
    ``min(h, w) / 2`` entries or more (none may take the DIA layout)."""
    b = 0
    for u in range(idx.shape[0]):
        t = idx[u]
        while rb_ptr[b + 1] <= t:
            b += 1
        h = min(T, n_rows - b * T)
        w = min(T, n_cols - col_block[t] * T)
        k = kept[u]
        if rule == -1:
            ok = 2 * k < min(h, w)
        elif rule == RULE_ALWAYS:
            ok = True
        elif rule == RULE_DIA:
            ok = 2 * k < min(h, w)
        elif rule == RULE_NEVER:
            ok = False
        else:
            ok = k < w
            if rule == RULE_BITMAP and not ok:
                ok = k < bitmap_min * h * w
        if not ok:
            return False
    return True


def _compact_route(ts, groups, compact):
    """``(src, approx)`` when the whole plan runs from a residual computed straight from the matrix
    (:func:`build_residual_from_csr`), else None.

    That is when every tile of every routed group goes to the residual under its kernel's rule
    (:func:`residual_rule`, decided from the analysis' compact ``nnz`` or the approximation's entry
    counts): exact entry kernels with their own entries (``SRC_OWN``), inline-residual kernels
    (QUANT8, ``SRC_QUANT8``) none of whose tiles may take the DIA layout (fewer than ``min(h, w) /
    2`` entries, the least :func:`diagonal_tiles` looks at), and approximations (``SRC_MAIN``: their
    entries, concatenated, are ``approx``). No TileSet entries are read."""
    if compact is None:
        return None
    n = ts.n_tiles
    src = np.zeros(n, dtype=np.int8)
    T = int(ts.tile)
    n_rows, n_cols = ts.shape
    lo = hi = None
    parts = []
    off = 0
    for kernel, idx, ap in groups:
        if kernel.exec_format == "none" or not idx.shape[0]:
            continue
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        rule = residual_rule(kernel)
        every = idx.shape[0] == n  # every tile (groups are ascending and disjoint)
        if ap is None and kernel.name in INLINE_RESIDUAL:
            kept, rule, code = (compact.nnz if every else compact.nnz[idx]), -1, INLINE_RESIDUAL[kernel.name]
        elif ap is None:
            kept, code = (compact.nnz if every else compact.nnz[idx]), SRC_OWN
        else:
            kept, code = np.diff(ap.ptr), SRC_MAIN
        if rule == RULE_NEVER:
            return None
        # the DIA test holds for every tile when the fullest has fewer than half the shortest side
        shortest = min(T, n_rows - (ts.n_brows - 1) * T, n_cols - (ts.n_bcols - 1) * T)
        if not (rule in (-1, RULE_DIA) and 2 * int(kept.max()) < shortest) and not _rule_holds_for_all(
                ts.rb_ptr, compact.col_block, kept, idx, T, n_rows, n_cols, np.int64(rule), BITMAP_MIN_DENSITY):
            return None
        if every:
            src[:] = code
        else:
            src[idx] = code
        if code == SRC_MAIN:
            if lo is None:
                lo = np.zeros(n, dtype=np.int64)
                hi = np.zeros(n, dtype=np.int64)
            lo[idx] = off + ap.ptr[:-1]
            hi[idx] = off + ap.ptr[1:]
            parts.append(_approx_arrays(ap))
            off += ap.v.shape[0]
    if not parts:
        return src, None
    r, c, v = (np.concatenate([p[i] for p in parts]) for i in range(3))
    return src, (lo, hi, r, c, v)


def pack_plan(ts, groups, A=None, errors=None, compact=None) -> PackedPlan:
    """Pack a plan for the executor.

    Parameters
    ----------
    ts : TileSet
    groups : list of (kernel, idx, approx)
        Tiles ``idx`` (ascending) use ``kernel``; ``approx`` is its TileApprox, or None for
        an exact entry kernel (``Â`` = the tile's own entries) and for a kernel of
        :data:`INLINE_RESIDUAL` (``Â`` computed while the residual is built).
    A : scipy CSR, optional
        The canonical matrix the TileSet was built from (``pa.A``). When every tile goes
        to the residual with its own entries, the residual *is* ``A``'s CSR: its arrays
        are reused instead of regathered (the common case of an unstructured matrix).
    errors : float64 (n_tiles,), optional
        Receives ``E_t`` of the tiles of :data:`INLINE_RESIDUAL` kernels (computed while
        their residual entries are counted; other slots are left as they are).

    Notes
    -----
    One numba pass per group routes its tiles (:func:`_route_tiles`). Residual tiles are
    read where their entries already are: the TileSet (exact entry kernels), the largest
    approximation in place (``SRC_MAIN``), the other approximations concatenated
    (``SRC_OTHER``). A group none of whose tiles stays packed builds no ``Entries``.
    Tiles of an inline-residual kernel on long diagonal runs (:func:`diagonal_tiles`) have
    their ``Â`` and ``E_t`` computed by ``kernel.approx`` and are packed as DIA.
    """
    n = ts.n_tiles
    if A is not None and n and not ts.entries_ready:
        route = _compact_route(ts, groups, compact)
        if route is not None:
            src, approx = route
            if approx is None and np.all(src == SRC_OWN) and A.nnz == ts.nnz:   # the residual is A itself
                residual = residual_layout(ts, np.asarray(A.indptr, dtype=np.int64),
                                           A.indices.astype(residual_col_dtype(ts.shape[1])),
                                           np.asarray(A.data, dtype=np.float64))
            else:
                residual = build_residual_from_csr(ts, A, compact.col_block, compact.nnz, src, errors, approx)
            packs = {}
            for fmt in FORMATS:
                packs[fmt] = empty_pack(fmt)
                packs[fmt]["rbp"] = np.zeros(ts.n_brows + 1, dtype=np.int64)
            return PackedPlan(shape=tuple(ts.shape), tile=int(ts.tile), n_brows=int(ts.n_brows),
                              residual=residual, packs=packs, block_work=_block_work(ts, residual, packs))
    src = np.zeros(n, dtype=np.int8)
    lo = np.empty(n, dtype=np.int64)  # read only where src is SRC_MAIN / SRC_OTHER
    hi = np.empty(n, dtype=np.int64)
    z = np.zeros(0, dtype=np.int64)
    # the approximation read in place: the largest one whose tiles may go to the residual
    routed = [(kernel, idx, ap) for kernel, idx, ap in groups
              if kernel.exec_format != "none" and idx.shape[0]]
    cands = [ap for kernel, _, ap in routed if ap is not None and residual_rule(kernel) != RULE_NEVER]
    main = max(cands, key=lambda a: a.v.shape[0]) if cands else None
    other, o_off = [], 0
    n_own = 0
    per_fmt: dict = {f: [] for f in FORMATS}
    nm_meta: list = []
    lr_parts: list = []
    for kernel, idx, ap in routed:
        fmt = kernel.exec_format
        if fmt == "lowrank":
            ex = ap.extra
            lr_parts.append((idx, ex["rank"], ex["us_ptr"], ex["us"], ex["v_ptr"], ex["v"]))
            continue
        rule = residual_rule(kernel)
        if ap is None and kernel.name in INLINE_RESIDUAL:
            diag = diagonal_tiles(ts, idx)
            if diag.any():  # these run as DIA with their Â (and E_t) computed here
                dap = kernel.approx(ts, idx[diag])
                if errors is not None:
                    errors[dap.idx] = dap.err
                per_fmt["dia"].append(Entries(tid=dap.idx, ptr=dap.ptr, r=dap.r, c=dap.c, v=dap.v))
                idx = idx[~diag]
                if not idx.shape[0]:
                    continue
        if rule == RULE_NEVER:
            keep, nk = None, idx.shape[0]
        else:
            if ap is None:
                code = INLINE_RESIDUAL.get(kernel.name, SRC_OWN)
                if code != SRC_OWN and rule != RULE_ALWAYS:  # pragma: no cover - registry misuse
                    raise ValueError(f"{kernel.name}: inline residual kernels must route every tile there")
            else:
                code = SRC_MAIN if ap is main else SRC_OTHER
            keep = np.empty(idx.shape[0], dtype=np.int64)
            nk = int(_route_tiles(idx, z if ap is None else ap.ptr, ts.ptr, ts.h, ts.w, np.int64(rule),
                                  np.int64(code), np.int64(o_off if code == SRC_OTHER else 0),
                                  src, lo, hi, keep))
            if code == SRC_OWN:
                n_own += idx.shape[0] - nk
            elif code == SRC_OTHER and nk < idx.shape[0]:
                other.append(_approx_arrays(ap))
                o_off += ap.v.shape[0]
            keep = None if nk == idx.shape[0] else keep[:nk]
        if nk == 0:  # every tile in the residual (always so for RESIDUAL_ONLY_FORMATS)
            continue
        if fmt == "bitmap":
            # a full bitmap tile (every bit set) is a dense tile: the dense loop runs the same products
            # without the bit scan (block-diagonal 32: BITMAP tiles at 1.4× scipy's speed, 2.6× as dense)
            pos = np.arange(idx.shape[0], dtype=np.int64) if keep is None else keep
            cnt = np.diff(ts.ptr)[idx[pos]] if ap is None else np.diff(ap.ptr)[pos]
            full = cnt == ts.h[idx[pos]].astype(np.int64) * ts.w[idx[pos]]
            if full.any():
                per_fmt["dense"].append(_entries_of(ts, "dense", idx, ap, pos[full]))
                if full.all():
                    continue
                keep = pos[~full]
        per_fmt[fmt].append(_entries_of(ts, fmt, idx, ap, keep))
        if fmt == "nm":
            nm_meta.append((np.full(nk, kernel.n, np.int64), np.full(nk, kernel.m, np.int64)))

    if (A is not None and n and n_own == n and A.nnz == ts.nnz
            and tuple(A.shape) == tuple(ts.shape)):
        residual = residual_layout(ts, np.asarray(A.indptr, dtype=np.int64),
                                   A.indices.astype(residual_col_dtype(ts.shape[1])),
                                   np.asarray(A.data, dtype=np.float64))
    else:
        o = tuple(np.concatenate([x[i] for x in other]) for i in range(3)) if other else None
        residual = build_residual(ts, src, lo, hi, None if main is None else _approx_arrays(main), o,
                                  errors)
    packs = {}
    for fmt in FORMATS:
        parts = per_fmt[fmt]
        if fmt == "lowrank":
            if lr_parts:
                tid = np.concatenate([p[0] for p in lr_parts])
                rank = np.concatenate([p[1] for p in lr_parts])
                us_ptr = _starts(np.concatenate([np.diff(p[2]) for p in lr_parts]))
                v_ptr = _starts(np.concatenate([np.diff(p[4]) for p in lr_parts]))
                us = np.concatenate([p[3] for p in lr_parts])
                vv = np.concatenate([p[5] for p in lr_parts])
                order = np.argsort(tid, kind="stable")
                us_ptr, us = ragged_take(us_ptr, order, us)
                v_ptr, vv = ragged_take(v_ptr, order, vv)
                pk = pack_lowrank(ts, tid[order], rank[order], us_ptr, us, v_ptr, vv)
                pk["rbp"] = _rbp(ts.bi[tid[order]], ts.n_brows)
            else:
                pk = None
        elif parts:
            e = _merge_entries(parts)
            if fmt == "nm":
                tid = np.concatenate([p.tid for p in parts])
                order = np.argsort(tid, kind="stable")
                nn = np.concatenate([a for a, _ in nm_meta])[order]
                mm = np.concatenate([b for _, b in nm_meta])[order]
                pk = pack_nm(ts, e, nn, mm)
            else:
                pk = _ENTRY_PACKERS[fmt](ts, e)
            pk["rbp"] = _rbp(ts.bi[e.tid], ts.n_brows)
        else:
            pk = None
        if pk is None:
            pk = empty_pack(fmt)
            pk["rbp"] = np.zeros(ts.n_brows + 1, dtype=np.int64)
        packs[fmt] = pk
    return PackedPlan(shape=tuple(ts.shape), tile=int(ts.tile), n_brows=int(ts.n_brows),
                      residual=residual, packs=packs, block_work=_block_work(ts, residual, packs))


def _block_work(ts, residual, packs):
    """Cumulative bytes streamed per row block: 12 B per residual entry, and each format's
    bytes shared equally by its tiles (tiles of one format have similar sizes)."""
    T = int(ts.tile)
    rows = np.minimum(np.arange(ts.n_brows + 1, dtype=np.int64) * T, ts.shape[0])
    entries = residual["ptr"] if residual["mode"][0] == RES_COO else residual["ptr"][rows]
    work = entries.astype(np.float64) * 12.0 + rows * 8.0
    for pk in packs.values():
        n = pk["meta"].shape[0]
        if n:
            per_tile = sum(a.nbytes for a in pk.values()) / n
            work = work + pk["rbp"].astype(np.float64) * per_tile
    return work
