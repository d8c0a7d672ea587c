"""``FusionPlan``: one kernel per tile, every tile encoded, executed in one fused pass (akf-spec §3, §9).

A plan is what the Dynamic Fuse Selector returns: the pattern analysis it was made for,
the kernel chosen for every nonempty tile (aligned with ``pa.tiles``), the measured error
of that choice, and the packed executor (:mod:`akfviz.execute.fused`) that computes
``y = Â x`` on the CPU.

Error (akf-spec §3): ``E_t = ||t − Â_t||_F²`` per tile, ``relative_error =
sqrt(Σ_t E_t) / ||A||_F`` (0 for the zero matrix), equal to ``||A − Â||_F / ||A||_F``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._jit import njit_cached
from ..errors import InputError, checked_call
from ..memory import check_memory
from ..kernels.base import gather_entries
from ..kernels.registry import KERNELS, get_kernel
from ..npu.work import TileWork
from ..workloads.validate import dense_operand
from .fused import INLINE_RESIDUAL, pack_plan


#: Up to this many tiles, :func:`all_tiles` keeps its index array for the next plan (8 bytes a tile).
ALL_TILES_KEEP = 4_000_000
_ALL_TILES = {"iota": None}


def all_tiles(n: int) -> np.ndarray:
    """``np.arange(n)`` as int64, read-only, shared by the plans of up to :data:`ALL_TILES_KEEP`
    tiles (a fresh array beyond): a one-kernel plan's tile list. Writing a fresh 7.6 MB arange
    for the 951k tiles of the 1M-nonzero uniform matrix took 1–2 ms of each ``select``."""
    n = int(n)
    iota = _ALL_TILES["iota"]
    if n > ALL_TILES_KEEP:
        return np.arange(n, dtype=np.int64)
    if iota is None or iota.shape[0] < n:
        have = 0 if iota is None else iota.shape[0]
        iota = np.arange(max(n, min(2 * have, ALL_TILES_KEEP)), dtype=np.int64)
        iota.setflags(write=False)
        _ALL_TILES["iota"] = iota
    return iota[:n]


def _factorize(names, n_tiles):
    """Validate ``tile_kernels`` → (object array of str, or None when it is left to be built
    from the codes; integer codes; unique names)."""
    cat = getattr(names, "cat", None) if isinstance(names, pd.Series) else None
    if isinstance(names, pd.Categorical) or cat is not None:
        # fast path for the selector: codes are already there (no hashing of n strings)
        c = names if isinstance(names, pd.Categorical) else names.array
        if len(c) != n_tiles:
            raise InputError(
                f"tile_kernels has {len(c)} entries but the pattern analysis has {n_tiles} "
                f"nonempty tiles; give exactly one kernel name per row of pa.tiles.")
        cats = list(c.categories)
        bad = [u for u in cats if not isinstance(u, str) or u not in KERNELS]
        if bad:
            raise InputError(f"Unknown kernel name(s) {bad[:5]!r} in tile_kernels. "
                             f"Valid kernels: {', '.join(KERNELS)}.")
        codes = np.asarray(c.codes)  # int8 for a few categories: no int64 copy
        if codes.size and codes.min() < 0:
            raise InputError("tile_kernels contains missing values; every tile needs a kernel name.")
        return None, codes, cats
    if isinstance(names, str):
        raise InputError("tile_kernels must be a sequence of kernel names (one per tile), "
                         "not a single string.")
    try:
        arr = np.asarray(names, dtype=object).reshape(-1) if not isinstance(names, pd.Series) \
            else names.to_numpy(dtype=object)
    except (TypeError, ValueError):
        raise InputError("tile_kernels must be a sequence of kernel names.") from None
    if np.asarray(names, dtype=object).ndim > 1:
        raise InputError("tile_kernels must be a 1-D sequence of kernel names.")
    if arr.shape[0] != n_tiles:
        raise InputError(
            f"tile_kernels has {arr.shape[0]} entries but the pattern analysis has {n_tiles} "
            f"nonempty tiles; give exactly one kernel name per row of pa.tiles."
        )
    codes, uniq = pd.factorize(arr, sort=False)
    uniq = list(uniq)
    bad = [u for u in uniq if not isinstance(u, str) or u not in KERNELS]
    if bad:
        raise InputError(
            f"Unknown kernel name(s) {bad[:5]!r} in tile_kernels. Valid kernels: {', '.join(KERNELS)}."
        )
    return arr, codes, uniq


@njit_cached
def _first_non_finite(a):
    """Index of the first NaN / ±inf of the float64 1-D array ``a``, or −1.

    One pass over the bits: a double is NaN or ±inf exactly when its 11 exponent bits are all
    set, and an integer max-reduction of the masked exponents vectorises (a float reduction
    would not, without fastmath); ``a`` is searched only when that pass finds one."""
    bits = a.view(np.uint64)
    expo = np.uint64(0x7FF0000000000000)
    m = np.uint64(0)
    for i in range(bits.shape[0]):
        m = max(m, bits[i] & expo)
    if m != expo:
        return -1
    for i in range(a.shape[0]):
        if not math.isfinite(a[i]):
            return i
    return -1


def _refuse_non_finite(a: np.ndarray, what: str, n_cols: int | None = None) -> None:
    """Raise :class:`InputError` when the contiguous float64 operand holds NaN or ±inf."""
    i = int(_first_non_finite(a.reshape(-1)))
    if i < 0:
        return
    where = f"{what}[{i}]" if n_cols is None else f"{what}[{i // n_cols}, {i % n_cols}]"
    raise InputError(
        f"{where} is {a.reshape(-1)[i]}; the plan needs finite values. Its dense-layout tiles "
        "(DENSE, DIA, BLOCK, LOWRANK …) multiply the zeros they store as well, and 0 × nan = nan, "
        "so a NaN or inf would spread to rows that scipy's A @ x leaves finite.")


@njit_cached
def _counting_order(codes, k):
    """Counting sort of ``codes`` (values ``0 … k−1``): ``order`` lists the positions of
    code 0 ascending, then code 1, …; ``bounds`` (k + 1) delimits them. Equals
    ``np.argsort(codes, kind="stable")`` in two O(n) passes."""
    nxt = np.zeros(k + 1, dtype=np.int64)
    for i in range(codes.shape[0]):
        nxt[codes[i] + 1] += 1
    for j in range(k):
        nxt[j + 1] += nxt[j]
    bounds = nxt.copy()
    order = np.empty(codes.shape[0], dtype=np.int64)
    for i in range(codes.shape[0]):
        c = codes[i]
        order[nxt[c]] = i
        nxt[c] += 1
    return order, bounds


def _group_tiles(codes, k):
    """Tiles of each code ``0 … k−1``, ascending: ``(order, bounds)`` with the tiles of code
    ``j`` at ``order[bounds[j]:bounds[j+1]]``."""
    codes = np.ascontiguousarray(codes)
    if codes.dtype not in (np.int8, np.int16, np.int32):
        codes = codes.astype(np.int64, copy=False)
    return _counting_order(codes, np.int64(k))


def _approximate(kernel, ts, idx, compact=None):
    """``kernel.approx(ts, idx)``; while the analysis' full pass has not run and the tiles are few
    (their rows read from the matrix cost less than moving every entry to its tile), on a
    :meth:`TileSet.subset` of them — the same TileApprox, with ``idx`` the tiles' own indices.
    SKIP keeps nothing and its error is the tile's ``Σ v²``, which the analysis has
    (``compact.fro2``, summed in the same order)."""
    if not ts.entries_ready and compact is not None and kernel.name == "SKIP":
        from ..kernels.base import TileApprox

        z = np.zeros(0, dtype=np.int64)
        idx = np.asarray(idx, dtype=np.int64)
        return TileApprox(idx=idx, ptr=np.zeros(idx.shape[0] + 1, dtype=np.int64), r=z, c=z,
                          v=np.zeros(0), err=compact.fro2[idx].astype(np.float64))
    if not ts.entries_ready and idx.shape[0] * ts.tile * 4 < ts.nnz:
        ap = kernel.approx(ts.subset(idx), np.arange(idx.shape[0], dtype=np.int64))
        return dataclasses.replace(ap, idx=np.asarray(idx, dtype=np.int64))
    return kernel.approx(ts, idx)


def relative_norm(diff, ref) -> float:
    """``‖diff‖₂ / ‖ref‖₂`` without overflow or underflow in the squares.

    Both vectors are divided by ``m = max(max|diff|, max|ref|)`` before their norms are taken (the
    ratio is unchanged), so entries of 1e160 or 1e-200 give the same ratio as entries of 1.

    Returns
    -------
    float
        0 when both are zero, ``inf`` when only ``ref`` is zero.
    """
    diff = np.asarray(diff, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    m = max(float(np.max(np.abs(diff))) if diff.size else 0.0, float(np.max(np.abs(ref))) if ref.size else 0.0)
    if m == 0.0:
        return 0.0
    den = float(np.linalg.norm(ref / m))
    num = float(np.linalg.norm(diff / m))
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / den


class FusionPlan:
    """A fused execution plan: one kernel per nonempty tile (akf-spec §5, §9).

    Parameters
    ----------
    pa : PatternAnalysis
        Uses ``pa.tileset``, ``pa.A``, ``pa.fro_norm`` and ``pa.tiles``.
    tile_kernels : sequence of str
        Kernel name per tile, aligned with ``pa.tiles`` (names from
        :func:`akfviz.kernels.kernel_names`). A ``pandas.Categorical`` (or a categorical
        Series) is accepted and avoids hashing one string per tile.
    resource : float
        Total resource ``R`` of the plan (set by the selector; NaN when unknown).
    selection : object, optional
        The selector's report.

    Attributes
    ----------
    pa, shape, tile, tile_kernels (object array of str), tile_errors (float64 per tile),
    relative_error, kernel_counts (pandas Series), resource, selection, payload_bytes.

    Notes
    -----
    Construction encodes every tile (vectorised per kernel) and packs the executor;
    there is no Python loop per tile. Hyper-sparse tiles are merged into a compressed-row
    residual (see :mod:`akfviz.execute.fused`).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from akfviz.analysis.pattern import analyze          # doctest: +SKIP
    >>> pa = analyze(sp.eye(64, format="csr"), tile=16)      # doctest: +SKIP
    >>> plan = FusionPlan(pa, ["DIA"] * len(pa.tiles))        # doctest: +SKIP
    >>> float(plan.relative_error)                             # doctest: +SKIP
    0.0
    """

    def __init__(self, pa, tile_kernels, *, resource=float("nan"), selection=None):
        ts = pa.tileset
        arr, codes, uniq = _factorize(tile_kernels, ts.n_tiles)
        self.pa = pa
        self.shape = tuple(int(s) for s in ts.shape)
        self.tile = int(ts.tile)
        self._names = (arr, codes, uniq)  # the object array is built on first use
        try:
            self.resource = float(resource)
        except (TypeError, ValueError):
            raise InputError(f"resource must be a number, got {resource!r}.") from None
        self.selection = selection
        self._payload_total = None  # set by npu_work()
        # a plan of one inline-residual kernel (QUANT8) has every tile's E_t written while its residual
        # is packed (both routes of pack_plan; tested with a NaN-filled array), so the array is not
        # zeroed first (7.6 MB, 0.35 ms for a million tiles); any other plan has tiles of error 0
        every_inline = len(uniq) == 1 and uniq[0] in INLINE_RESIDUAL
        self.tile_errors = (np.empty if every_inline else np.zeros)(ts.n_tiles, dtype=np.float64)
        groups = []
        if ts.n_tiles:
            if len(uniq) == 1:  # one kernel: every tile, in order (no sort of a million codes)
                order, bounds = all_tiles(ts.n_tiles), np.array([0, ts.n_tiles])
            else:
                order, bounds = _group_tiles(codes, len(uniq))
            for k, name in enumerate(uniq):
                kernel = get_kernel(name)
                idx = order[bounds[k]:bounds[k + 1]]  # ascending (stable sort)
                if kernel.lossless and kernel.entry_format:
                    ap = None
                elif name in INLINE_RESIDUAL:  # Â and E_t computed while packing the residual
                    ap = None
                else:
                    ap = _approximate(kernel, ts, idx, getattr(pa, "compact", None))
                    self.tile_errors[idx] = ap.err
                groups.append((kernel, idx, ap))
        self._groups = groups
        self._packed = pack_plan(ts, groups, A=pa.A, errors=self.tile_errors,
                                 compact=getattr(pa, "compact", None))
        # the plan is what was packed: an edited tile_errors made relative_error and tile_table()
        # disagree with matvec and kernel_counts (``.copy()`` gives a writable copy)
        self.tile_errors.setflags(write=False)

    # ------------------------------------------------------------------ summaries
    @property
    def tile_kernels(self) -> np.ndarray:
        """Kernel name per tile (object array of str, aligned with ``pa.tiles``)."""
        arr, codes, uniq = self._names
        if arr is None:
            arr = np.asarray(uniq, dtype=object)[codes] if codes.size else np.zeros(0, dtype=object)
            arr.setflags(write=False)  # as tile_errors: the packed plan does not follow edits
            self._names = (arr, codes, uniq)
        return arr

    @property
    def tile_kernels_categorical(self) -> pd.Categorical:
        """``tile_kernels`` as a :class:`pandas.Categorical` (codes + the kernel names in use):
        the cheap form for counting or colouring a million tiles, no per-tile strings."""
        _, codes, uniq = self._names
        return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64),
                                         categories=pd.Index(list(uniq), dtype=object))

    @checked_call
    def tile_table(self) -> pd.DataFrame:
        """One row per tile (aligned with ``pa.tiles``): ``tile, bi, bj, nnz, density, cluster``,
        the chosen ``kernel`` and its squared error ``sq_error`` = ``E = ||t − Â_t||_F²``
        (akf-spec §3, in the matrix's units squared; ``sqrt(Σ sq_error) / ||A||_F`` is
        ``relative_error``) — the plan as a table, e.g. to export."""
        t = self.pa.tiles_as_analysed()
        return pd.DataFrame({
            "tile": np.arange(len(t), dtype=np.int64), "bi": t["bi"].to_numpy(), "bj": t["bj"].to_numpy(),
            "nnz": t["nnz"].to_numpy(), "density": t["density"].to_numpy(),
            "cluster": t["cluster"].to_numpy(), "kernel": self.tile_kernels_categorical,
            "sq_error": self.tile_errors.copy()})

    @property
    def relative_error(self) -> float:
        """``sqrt(Σ E_t) / ||A||_F`` (0 for a zero matrix). ``Σ E_t`` (``np.sum`` of the read-only
        ``tile_errors``) is summed on the first access only: pages, exports and the selector's
        report each ask, and on a million tiles one sum costs ≈ 0.3–0.5 ms."""
        fro = float(self.pa.fro_norm)
        if fro == 0.0:
            return 0.0
        total = self.__dict__.get("_error_sum")
        if total is None:
            total = float(np.sum(self.tile_errors))
            self._error_sum = total
        return math.sqrt(total) / fro

    @property
    def kernel_counts(self) -> pd.Series:
        """Number of tiles per kernel (registry order, kernels in use only)."""
        _, codes, uniq = self._names
        n = np.bincount(codes, minlength=len(uniq)) if codes.size else np.zeros(len(uniq), np.int64)
        count = {name: int(n[j]) for j, name in enumerate(uniq) if n[j]}
        order = [k for k in KERNELS if k in count]
        return pd.Series([count[k] for k in order], index=pd.Index(order),
                         dtype=np.int64, name="tiles")

    @property
    def payload_bytes(self) -> int:
        """Total NPU payload bytes of the non-SKIP tiles (values, indices, routing).

        Remembered from the last :meth:`npu_work` (a simulation builds it anyway): on a
        hyper-sparse matrix the per-column work arrays run to tens of millions of entries."""
        if self._payload_total is None:
            self.npu_work()
        return self._payload_total

    def __repr__(self):
        return (f"<FusionPlan {self.shape[0]}×{self.shape[1]} T={self.tile} "
                f"tiles={len(self.tile_kernels)} rel.error={self.relative_error:.3g}>")

    # ------------------------------------------------------------------ execution
    def _check_vector(self, x, what="x"):
        return dense_operand(x, what)

    @checked_call
    def matvec(self, x) -> np.ndarray:
        """``y = Â x`` with the fused executor (float64).

        Parameters
        ----------
        x : array_like, shape (n_cols,)
            float64 or float32 (computed in float64); integers and booleans (0/1) are accepted
            too, as by scipy's ``A @ x``. Every value must be finite: NaN or ±inf raise
            :class:`InputError` (dense-layout tiles multiply their stored zeros too, so
            ``0 × nan`` would reach rows that scipy leaves finite).
        """
        if (type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 1
                and x.shape[0] == self.shape[1] and x.flags.c_contiguous):
            _refuse_non_finite(x, "x")
            return self._packed.matvec(x)  # the common case, checked without copies
        arr = self._check_vector(x)
        if arr.ndim != 1 or arr.shape[0] != self.shape[1]:
            hint = (" For a column of shape (n, 1) use plan.matmat(x) (an (m, 1) result, as scipy's A @ x) "
                    "or plan.matvec(x.ravel())." if arr.ndim == 2 and arr.shape == (self.shape[1], 1) else "")
            raise InputError(
                f"x must be a 1-D vector of length {self.shape[1]} (the number of columns), "
                f"got shape {arr.shape}.{hint}"
            )
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        _refuse_non_finite(arr, "x")
        return self._packed.matvec(arr)

    @checked_call
    def matmat(self, X) -> np.ndarray:
        """``Y = Â X`` for ``X`` of shape ``(n_cols, k)`` (float64 result; ``X`` finite, as in
        :meth:`matvec`).

        Each column is the same whatever ``k`` and the order of the columns, bit for bit. It may
        differ from :meth:`matvec` of that column in the last bits (about 1e-15 of ``max|y|``):
        ``matvec`` adds a tile row's products in a different order — several accumulators in the
        BITMAP and N:M loops, a row accumulator per dense tile — so the two round differently.
        Both are exact to rounding against ``A @ X`` for an exact plan."""
        arr = self._check_vector(X, "X")
        if arr.ndim != 2 or arr.shape[0] != self.shape[1]:
            raise InputError(
                f"X must be a 2-D array with {self.shape[1]} rows (the number of columns of A), "
                f"got shape {arr.shape}."
            )
        k = arr.shape[1]
        copy = 0 if (arr.dtype == np.float64 and arr.flags.c_contiguous) else arr.shape[0] * k * 8
        check_memory(copy + self.shape[0] * k * 8, f"Y = Â X with X of {k:,} columns",
                     "Multiply fewer columns at a time (X[:, i:j]).")
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        _refuse_non_finite(arr, "X", arr.shape[1])
        return self._packed.matmat(arr)

    # ------------------------------------------------------------------ Â and errors
    @checked_call
    def approx_matrix(self) -> sp.csr_array:
        """``Â`` as a canonical ``csr_array`` (what the plan computes with)."""
        ts = self.pa.tileset
        rows, cols, vals = [], [], []
        T = self.tile
        for kernel, idx, ap in self._groups:
            if ap is None and kernel.name in INLINE_RESIDUAL:
                ap = kernel.approx(ts, idx)
            if ap is None:
                ptr, pos = gather_entries(ts, idx)
                r, c, v = ts.r[pos], ts.c[pos], ts.v[pos]
            else:
                ptr, r, c, v = ap.ptr, ap.r, ap.c, ap.v
            seg = np.repeat(idx, np.diff(ptr))
            rows.append(ts.bi[seg] * T + r)
            cols.append(ts.bj[seg] * T + c)
            vals.append(v)
        if rows:
            r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        else:
            r = c = np.zeros(0, np.int64)
            v = np.zeros(0)
        M = sp.csr_array(sp.coo_array((v, (r, c)), shape=self.shape))
        M.sum_duplicates()
        M.eliminate_zeros()
        M.sort_indices()
        return M

    @checked_call
    def output_error(self, x) -> float:
        """``||(A − Â) x|| / ||A x||`` on a probe vector (0 when ``A x`` = 0 and ``Â x`` = 0).

        Independent of the scale of ``x`` (see :func:`relative_norm`): ``x · 1e155`` used to give NaN
        and ``x · 1e-200`` 0 (probe). An ``x`` for which ``A x`` overflows is refused."""
        arr = self._check_vector(x)
        if arr.ndim != 1 or arr.shape[0] != self.shape[1]:
            raise InputError(f"x must be a 1-D vector of length {self.shape[1]}, got shape {arr.shape}.")
        xf = arr.astype(np.float64)
        ax = self.pa.A @ xf
        y = self.matvec(xf)
        if not (np.all(np.isfinite(ax)) and np.all(np.isfinite(y))):
            raise InputError("A x overflows float64 for this x (its entries are too large); scale x down: "
                             "the relative output error does not depend on the scale of x.")
        return relative_norm(ax - y, ax)

    # ------------------------------------------------------------------ NPU
    @checked_call
    def npu_work(self) -> TileWork:
        """:class:`TileWork` of every non-SKIP tile, ordered by tile index (``tile_index``
        = row in ``pa.tiles``)."""
        ts = self.pa.tileset
        parts = [kernel.npu_work(ts, idx) for kernel, idx, _ in self._groups
                 if kernel.exec_format != "none"]
        work = parts[0] if len(parts) == 1 else TileWork.concat(parts)
        self._payload_total = int(work.payload_bytes.sum())
        if work.n_tiles == 0 or np.all(work.tile_index[1:] > work.tile_index[:-1]):
            return work.validate()  # already in tile order (e.g. one kernel group)
        order = np.argsort(work.tile_index, kind="stable")
        lens = np.diff(work.col_ptr)[order]
        col_ptr = np.zeros(order.shape[0] + 1, dtype=np.int64)
        np.cumsum(lens, out=col_ptr[1:])
        pos = np.arange(col_ptr[-1], dtype=np.int64) + np.repeat(work.col_ptr[:-1][order] - col_ptr[:-1], lens)
        per_tile = {f: getattr(work, f)[order] for f in TileWork._PER_TILE}
        per_col = {f: getattr(work, f)[pos] for f in TileWork._PER_COLUMN}
        return TileWork(kernel_names=work.kernel_names, col_ptr=col_ptr, **per_tile, **per_col).validate()

    # ------------------------------------------------------------------ export
    @checked_call
    def to_dict(self, timings: bool = False) -> dict:
        """A plain, JSON-able summary of the plan: the same plan gives the same dict, bit for bit.

        ``timings=True`` adds the selection's wall-clock seconds (``selection.timings``)."""
        work = self.npu_work()
        return {
            "shape": list(self.shape),
            "tile": self.tile,
            "n_tiles": int(len(self.tile_kernels)),
            "nnz": int(self.pa.tileset.nnz),
            "kernel_counts": {k: int(v) for k, v in self.kernel_counts.items()},
            "relative_error": float(self.relative_error),
            "sum_error": float(np.sum(self.tile_errors)),
            "fro_norm": float(self.pa.fro_norm),
            "resource": None if math.isnan(self.resource) else float(self.resource),
            "payload_bytes": int(work.payload_bytes.sum()),
            "npu_tiles": int(work.n_tiles),
            "npu_routes": int(work.n_routes),
            "executor": self._packed.format_tiles(),
            "executor_bytes": self._packed.bytes_moved(),
            **self._selection_dict(timings),
        }

    def _selection_dict(self, timings: bool = False) -> dict:
        """``{"selection": …}`` when the plan carries a selection report (``select`` attaches one) that can
        say itself as JSON; empty otherwise (a hand-built plan)."""
        sel = getattr(self, "selection", None)
        if hasattr(sel, "to_dict"):
            return {"selection": sel.to_dict(timings=timings)}
        return {"selection": sel} if isinstance(sel, dict) else {}
