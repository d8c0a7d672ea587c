"""Sparse pattern analysis: ``akfviz.analyze`` (akf-spec §2, §9; paper §3).

``analyze(A, tile, lsh)`` runs one eager pass over the nonzeros (:mod:`.scanpass`: the
nonempty tiles, their compact features and (signature, density bin) pairs), clusters the
tiles by MinHash LSH over their coarse occupancy signatures split by log-density bin
(:mod:`.pairclust`, :mod:`.minhash`, :mod:`.lsh`), and returns a :class:`PatternAnalysis`
holding the clusters, their representatives, the density histogram and the time spent per
stage. The tiles' entries and the full feature table (:mod:`.tilepass`, the definitions of
:mod:`.tiling` and :mod:`.features`) are built on first use of ``pa.tiles`` / ``pa.tileset``.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .features import FLOAT_FEATURES, INT_FEATURES
from .lsh import LSHConfig
from .pairclust import cluster_scan
from .scanpass import scan_tiles
from .tilepass import _index, canonical_csr, csr_source, tiles_and_features
from .tiling import TileSet, check_tile
from ..errors import InputError, checked_call
from ..memory import check_memory

#: Column order of ``PatternAnalysis.tiles`` (the contract in docs/architecture.md).
TILE_COLUMNS = ("bi", "bj", "h", "w", "nnz", "density", "rows_nonempty", "cols_nonempty",
                "max_row_nnz", "max_col_nnz", "n_diagonals", "bandwidth", "nm4", "nm8",
                "fro2", "top_mass", "signature", "density_bin", "cluster")
#: Columns of ``PatternAnalysis.clusters`` (index: cluster id).
CLUSTER_COLUMNS = ("size", "representative", "density_bin", "mean_density", "jaccard_mean")
#: ``‖A‖_F`` must lie in ``[FRO_MIN, FRO_MAX]`` (or be 0 for a matrix without nonzeros): kernel
#: errors are squared Frobenius norms (akf-spec §3, §5), which overflow float64 above ≈ 1e154
#: and lose every digit below ≈ 1e-154; the margin leaves room for sums and error ratios.
FRO_MIN, FRO_MAX = 1e-140, 1e140
#: Columns of ``PatternAnalysis.density_hist``.
HIST_COLUMNS = ("bin_left", "bin_right", "count")


class FullPass:
    """The deferred full pass of an analysis: every entry moved to its tile and every feature.

    :func:`analyze` computes eagerly only what clustering and the selector's cluster mode read
    (:mod:`.scanpass`). The rest — the TileSet's ``ptr``, ``r``, ``c``, ``v`` and the feature
    columns of ``pa.tiles`` — comes from :func:`.tilepass.tiles_and_features`, run here once, on
    first use, under a lock (an analysis is shared between the app's sessions). Same arrays,
    bit for bit, as an eager run (tested).
    """

    def __init__(self, M, rb_count, T, cfg):
        self._args = (M, rb_count, int(T), int(cfg.grid), float(cfg.top_q), int(cfg.bins_per_decade))
        self._result = None
        self.seconds = None   # how long the pass took, once it has run
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"_args": self._args, "_result": self._result, "seconds": self.seconds}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        """Whether the pass has run."""
        return self._result is not None

    def _run(self) -> dict:
        if self._result is None:
            with self._lock:
                if self._result is None:
                    t0 = time.perf_counter()
                    M, rb_count, T, grid, top_q, bpd = self._args
                    ts, ints, floats, sig, dbin = tiles_and_features(
                        M, _index(M.indptr), _index(M.indices), rb_count, T, grid, top_q, bpd)
                    res = {k: getattr(ts, k) for k in TileSet._GEOMETRY + TileSet._ENTRIES}
                    res.update(ints=ints, floats=floats, sig=sig, dbin=dbin)
                    for arr in res.values():
                        arr.setflags(write=False)
                    self.seconds = time.perf_counter() - t0
                    self._result = res
        return self._result

    def csr(self) -> tuple:
        """``(indptr, indices, data)`` of the analysed canonical matrix (``pa.A``)."""
        M = self._args[0]
        return M.indptr, M.indices, M.data

    def entries(self) -> dict:
        """``bi, bj, h, w, ptr, r, c, v`` of the TileSet."""
        return self._run()

    def features(self) -> tuple:
        """``(ints (n, 9), floats (n, 3), signature, density_bin)`` as
        :func:`.tilepass.tiles_and_features` returns them."""
        res = self._run()
        return res["ints"], res["floats"], res["sig"], res["dbin"]


@dataclass(frozen=True, eq=False)
class CompactTiles:
    """Per-tile arrays of the eager pass (:mod:`.scanpass`), in tile order.

    Attributes
    ----------
    col_block : int32 (or int64 for ≥ 2³¹ column blocks)
        ``bj``.
    nnz : int32
    cls : int8
        Structure class (:mod:`akfviz.selection.structure`, grid of the analysis' LSH settings).
    fro2 : float64
        ``Σ v²`` (``tiles.fro2``).
    top_multi : float64
        ``tiles.top_mass`` of the tiles of several entries (the others' entries are not
        written: :attr:`top`).
    shape, tile, rb_ptr
        Matrix shape, tile side and the tiles of each row block (for ``h`` and ``w``).
    cluster : int64
        (Derived on first use.)
    pair : int32
        Row of ``pairs`` (the tile's distinct signature and density bin).
    pairs : dict
        Per pair: ``sig``, ``bin``, ``first`` tile, ``count``, ``cluster``, ``dens``/``tm`` of its
        first tile and ``uniform``.
    cluster_fro2 : float64 (n_clusters,)
        ``Σ fro2`` over each cluster's tiles, in tile order (``np.bincount(cluster, fro2)``).
    """

    col_block: np.ndarray
    nnz: np.ndarray
    cls: np.ndarray
    fro2: np.ndarray
    top_multi: np.ndarray
    pair: np.ndarray
    shape: tuple = (0, 0)
    tile: int = 1
    rb_ptr: np.ndarray = field(repr=False, default=None)
    pairs: dict = field(repr=False, default_factory=dict)
    cluster_fro2: np.ndarray = field(repr=False, default=None)

    def area(self, idx=None) -> np.ndarray:
        """``h·w`` (int64) of the tiles ``idx`` (all for None)."""
        T = int(self.tile)
        n_rows, n_cols = self.shape
        idx = np.arange(self.nnz.shape[0]) if idx is None else np.asarray(idx, dtype=np.int64)
        bi = np.searchsorted(self.rb_ptr, idx, side="right") - 1
        h = np.minimum(T, n_rows - bi * T)
        w = np.minimum(T, n_cols - self.col_block[idx].astype(np.int64) * T)
        return h * w

    def density_of(self, idx) -> np.ndarray:
        """``nnz / (h·w)`` of the tiles ``idx`` (the features' arithmetic)."""
        idx = np.asarray(idx, dtype=np.int64)
        return self.nnz[idx].astype(np.int64) / self.area(idx)

    @cached_property
    def density(self) -> np.ndarray:
        """``nnz / (h·w)`` of every tile (float64, read-only; made on first use)."""
        out = self.density_of(np.arange(self.nnz.shape[0]))
        out.setflags(write=False)
        return out

    @cached_property
    def top(self) -> np.ndarray:
        """``top_mass`` of every tile (float64, read-only; made on first use): ``top_multi`` for
        tiles of several entries, 1 for one-entry tiles (0 when their ``v²`` underflows)."""
        out = np.where(self.nnz > 1, self.top_multi, np.where(self.fro2 > 0.0, 1.0, 0.0))
        out.setflags(write=False)
        return out

    @cached_property
    def cluster(self) -> np.ndarray:
        """Cluster of every tile (int64, read-only): ``pairs["cluster"][pair]``, made on first use
        (the selector's cluster mode reads the pairs instead)."""
        out = np.asarray(self.pairs["cluster"], dtype=np.int64)[self.pair] if self.pair.size \
            else np.zeros(0, np.int64)
        out.setflags(write=False)
        return out


@dataclass(frozen=True, eq=False)
class PatternAnalysis:
    """Result of :func:`analyze` (picklable, so Streamlit can cache it).

    Attributes
    ----------
    A : scipy.sparse.csr_array
        Canonical float64 copy of the analysed matrix.
    tile : int
        Tile side T.
    tileset : TileSet
        The nonempty tiles and their entries (deferred: the entries are moved to their tiles
        on first use, see :class:`FullPass`).
    tiles : pandas.DataFrame
        One row per nonempty tile in TileSet order, columns :data:`TILE_COLUMNS`
        (int64, except ``density``, ``fro2``, ``top_mass`` float64 and ``signature``
        uint64). Built on first access from the arrays computed by :func:`analyze`, then
        cached. It is a copy-on-write view (pandas): editing it copies the edited column,
        so the analysis's own arrays, and what :func:`akfviz.select` reads
        (:meth:`tiles_as_analysed`), never change.
    clusters : pandas.DataFrame
        Indexed by cluster id ``0 … n_clusters − 1``: ``size``, ``representative`` (row of
        ``tiles``), ``density_bin``, ``mean_density``, ``jaccard_mean``. A copy-on-write
        view, like ``tiles``: edits stay in it (:meth:`clusters_as_analysed` is what
        :func:`akfviz.select` reads).
    n_clusters : int
    signatures : ndarray of uint64
        Per-tile coarse occupancy signature (same as ``tiles.signature``; from the full pass).
    lsh : LSHConfig
    fro_norm : float
        ``‖A‖_F``.
    density_hist : pandas.DataFrame
        ``bin_left``, ``bin_right`` (log10 density) and ``count`` of tiles, one row per
        log-density bin from the lowest to the highest occupied bin.
    timings : dict
        Seconds per stage, and ``total`` (the eager work of :func:`analyze`; ``summary()`` adds
        ``full_pass`` once the deferred full pass has run).
    cluster_order, cluster_ptr : ndarray of int64
        Tile indices grouped by cluster: members of ``c`` are
        ``cluster_order[cluster_ptr[c]:cluster_ptr[c+1]]`` (in tile order).
    compact : CompactTiles
        The eager per-tile arrays (what the selector's cluster mode and the plan read without
        running the full pass).
    """

    A: object
    tile: int
    tileset: TileSet
    _cluster_cols: dict = field(repr=False)
    n_clusters: int
    lsh: LSHConfig
    fro_norm: float
    _hist_cols: dict = field(repr=False)
    timings: dict
    cluster_order: np.ndarray = field(repr=False)
    cluster_ptr: np.ndarray = field(repr=False)
    compact: CompactTiles = field(repr=False, default=None)
    _full: FullPass = field(repr=False, default=None)

    @property
    def signatures(self) -> np.ndarray:
        """Per-tile coarse occupancy signature (uint64; runs the full pass on first use)."""
        return self._full.features()[2]

    @property
    def _features(self) -> tuple:
        """Feature arrays behind ``tiles``: (int features (n, 9), float features (n, 3),
        density_bin, cluster)."""
        ints, floats, _, dbin = self._full.features()
        return ints, floats, dbin, self.compact.cluster

    @cached_property
    def _table(self) -> pd.DataFrame:
        """The tiles table over the analysis's own arrays (no copies). Never handed out
        itself: :attr:`tiles` and :meth:`tiles_as_analysed` are copy-on-write views of it."""
        ts = self.tileset
        ints, floats, dbin, cluster = self._features
        cols = {"bi": ts.bi, "bj": ts.bj, "h": ts.h, "w": ts.w}
        for k, name in enumerate(INT_FEATURES):
            cols[name] = ints[:, k]
        for k, name in enumerate(FLOAT_FEATURES):
            cols[name] = floats[:, k]
        cols.update(signature=self.signatures, density_bin=dbin, cluster=cluster)
        return pd.DataFrame({name: cols[name] for name in TILE_COLUMNS}, copy=False)

    @cached_property
    def tiles(self) -> pd.DataFrame:
        """The per-tile table (see the class docstring): the user's copy-on-write view,
        built once on first access; edits to it stay in it."""
        return self._table.copy(deep=False)

    @cached_property
    def _clusters(self) -> pd.DataFrame:
        """The clusters table over :meth:`cluster_arrays` (built on first use: :func:`analyze` and
        the selector read the arrays). Never handed out itself."""
        return pd.DataFrame(dict(self._cluster_cols), index=pd.RangeIndex(self.n_clusters, name="cluster"))

    @checked_call
    def cluster_arrays(self) -> dict:
        """The clusters table's columns as :func:`analyze` computed them (read-only arrays, one
        entry per cluster id): what the selector reads, without a DataFrame."""
        return dict(self._cluster_cols)

    @cached_property
    def density_hist(self) -> pd.DataFrame:
        """``bin_left``, ``bin_right`` (log10 density) and ``count`` of tiles, one row per
        log-density bin from the lowest to the highest occupied bin (built on first use)."""
        return pd.DataFrame(dict(self._hist_cols))

    @cached_property
    def clusters(self) -> pd.DataFrame:
        """The clusters table (see the class docstring): the user's copy-on-write view."""
        return self._clusters.copy(deep=False)

    @checked_call
    def clusters_as_analysed(self) -> pd.DataFrame:
        """The clusters table exactly as :func:`analyze` computed it (a fresh copy-on-write
        view), whatever was edited in :attr:`clusters`."""
        return self._clusters.copy(deep=False)

    @checked_call
    def tiles_as_analysed(self) -> pd.DataFrame:
        """The per-tile table exactly as :func:`analyze` computed it, whatever was edited in
        :attr:`tiles` (a fresh copy-on-write view, no data copied). The selector, the plan
        and the explanations read this one, so an edited ``pa.tiles`` cannot change (or
        break) a selection."""
        return self._table.copy(deep=False)

    @property
    def shape(self) -> tuple:
        """Matrix shape."""
        return tuple(int(s) for s in self.A.shape)

    @property
    def nnz(self) -> int:
        """Stored nonzeros of ``A``."""
        return int(self.A.nnz)

    @property
    def n_tiles(self) -> int:
        """Number of nonempty tiles."""
        return self.tileset.n_tiles

    @checked_call
    def cluster_members(self, c) -> np.ndarray:
        """Tile indices (rows of ``tiles``) of cluster ``c``, in tile order."""
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
            raise InputError(f"A cluster id must be an integer, got {c!r}.")
        if not 0 <= int(c) < self.n_clusters:
            raise InputError(
                f"Cluster {c} does not exist; valid ids are 0..{self.n_clusters - 1}"
                if self.n_clusters else f"Cluster {c} does not exist; this matrix has no tiles."
            )
        c = int(c)
        return self.cluster_order[self.cluster_ptr[c]:self.cluster_ptr[c + 1]].copy()

    @checked_call
    def summary(self) -> dict:
        """Plain-number summary for display and JSON.

        ``jaccard_mean`` is the tile-weighted mean of the clusters' within-cluster Jaccard
        over clusters with at least two tiles (``None`` when there is none).
        """
        cl = self.clusters_as_analysed()
        sizes = cl["size"].to_numpy() if self.n_clusters else np.empty(0, np.int64)
        multi = sizes >= 2
        if multi.any():
            jm = cl["jaccard_mean"].to_numpy()[multi]
            jaccard = float(np.average(jm, weights=sizes[multi]))
        else:
            jaccard = None

        def stat(f):
            return float(f(sizes)) if sizes.size else 0.0

        return {
            "shape": list(self.shape),
            "nnz": self.nnz,
            "tile": int(self.tile),
            "n_tiles": int(self.n_tiles),
            "n_clusters": int(self.n_clusters),
            "tiles_per_cluster": {
                "min": stat(np.min), "median": stat(np.median),
                "mean": stat(np.mean), "max": stat(np.max),
            },
            "jaccard_mean": jaccard,
            "n_density_bins": int(len(self._hist_cols["count"])),
            "fro_norm": float(self.fro_norm),
            "lsh": self.lsh.to_dict(),
            # with the deferred full pass (every entry to its tile, every feature) once it has run
            "timings": {**{k: float(v) for k, v in self.timings.items()},
                        **({"full_pass": float(self._full.seconds)} if self._full is not None and self._full.done
                           else {})},
        }


def _check_scale(fro_norm: float, M) -> None:
    """Refuse matrices whose squared entries leave float64's range (see :data:`FRO_MAX`)."""
    if FRO_MIN <= fro_norm <= FRO_MAX:
        return
    big = float(np.abs(M.data).max())
    if fro_norm > FRO_MAX:
        what = (f"its entries are as large as {big:.3g} (squared norm overflows)"
                if not math.isfinite(fro_norm) else f"its Frobenius norm is {fro_norm:.3g}")
    else:
        what = f"its largest entry is only {big:.3g}, so squared errors underflow to zero"
    hint = f"e.g. divide it by {10.0 ** round(math.log10(big)):.0e}, its order of magnitude"
    raise InputError(
        f"This matrix is outside the range akfviz can analyse: {what}. Kernel errors are "
        f"squared Frobenius norms, which float64 can hold only for ‖A‖_F between "
        f"{FRO_MIN:g} and {FRO_MAX:g}. Scale the matrix first ({hint}); relative errors, "
        f"densities and the kernel choice do not change with the scale.")


@checked_call
def analyze(A, tile: int = 32, lsh=None) -> PatternAnalysis:
    """Analyse the sparsity pattern of ``A`` tile by tile (akf-spec §2).

    1. Tiling into T×T tiles, only nonempty ones kept (O(nnz), numba).
    2. Per-tile features (:mod:`akfviz.analysis.features`), incl. the g×g occupancy
       signature and the log-density bin ``floor(log10(density) · bins_per_decade)``.
    3. MinHash (K hashes, ``(a·x + b) mod (2^61 − 1)``) of each unique signature; tiles
       colliding on all rows of any of the b bands are joined (union-find).
    4. "Modified histogram": each LSH component is split by log-density bin; cluster ids
       follow first appearance in tile order.
    5. Per cluster: medoid representative (exact Jaccard distance) and within-cluster
       Jaccard on sampled pairs.

    Parameters
    ----------
    A : scipy.sparse matrix/array or 2-D numpy array
        The matrix (any shape).
    tile : int
        Tile side T, 4..256 (the app offers 8–128).
    lsh : None, LSHConfig or dict
        LSH settings (see :class:`LSHConfig`); ``None`` uses the defaults.

    Returns
    -------
    PatternAnalysis

    Raises
    ------
    InputError
        Invalid matrix, tile side or LSH settings, or ``‖A‖_F`` outside
        ``[FRO_MIN, FRO_MAX]`` (squared errors would overflow or underflow float64).

    Examples
    --------
    >>> import numpy as np
    >>> pa = analyze(np.eye(64), tile=16)
    >>> pa.n_tiles, pa.n_clusters, pa.tiles["nnz"].tolist()
    (4, 1, [16, 16, 16, 16])
    """
    t_start = time.perf_counter()
    T = check_tile(tile)
    cfg = LSHConfig.from_any(lsh)
    M, indptr, indices, data, rb_count, deferred = csr_source(A, T)
    t0 = time.perf_counter()
    if deferred:  # canonical indices: the scan checks the values and copies the arrays
        check_memory(indices.nbytes + data.nbytes + indptr.nbytes, "A copy of the matrix",
                     "Free memory or analyse a smaller matrix.")
        scan = scan_tiles(None, indptr, indices, rb_count, T, cfg.grid, cfg.top_q, cfg.bins_per_decade,
                          copy_of=(data, A.shape))
        if scan.bad:  # a zero or non-finite value: scipy's canonical form, and the scan again
            M, indptr, indices, rb_count = canonical_csr(A, T)
            scan = scan_tiles(M, indptr, indices, rb_count, T, cfg.grid, cfg.top_q, cfg.bins_per_decade)
        else:
            M = sp.csr_array((scan.data, scan.indices, indptr.copy()), shape=A.shape, copy=False)
            M.has_canonical_format = True
    else:
        scan = scan_tiles(M, indptr, indices, rb_count, T, cfg.grid, cfg.top_q, cfg.bins_per_decade)
    t1 = time.perf_counter()
    cl = cluster_scan(scan, cfg)
    t3 = time.perf_counter()

    n = int(scan.bj.shape[0])
    nc = cl["n_clusters"]
    cptr = cl["cptr"]
    size = np.diff(cptr)
    rep = cl["representative"]
    mean_density = cl["density_sum"] / size if nc else np.empty(0, np.float64)
    # the tables themselves are built on first use (pa.clusters, pa.density_hist): a DataFrame costs
    # ≈ 0.2 ms, which the analysis and the selector do not need
    cluster_cols = {"size": size.astype(np.int64), "representative": rep.astype(np.int64),
                    "density_bin": cl["density_bin"].astype(np.int64), "mean_density": mean_density,
                    "jaccard_mean": cl["jaccard_mean"]}

    bpd = cfg.bins_per_decade
    if n:
        bmin = cl["bin_min"]
        counts = cl["bin_counts"]
        edges = np.arange(bmin, bmin + counts.size + 1, dtype=np.float64) / bpd
    else:
        counts = np.empty(0, np.int64)
        edges = np.zeros(1)
    hist_cols = {"bin_left": edges[:-1], "bin_right": edges[1:], "count": np.asarray(counts, dtype=np.int64)}
    fro_norm = math.sqrt(float(scan.fro2.sum())) if n else 0.0
    if n:
        _check_scale(fro_norm, M)
    t4 = time.perf_counter()
    timings = {"validate": t0 - t_start, "tiling_features": t1 - t0}
    timings.update(cl["timings"])
    timings.update(clustering=t3 - t1, tables=t4 - t3, total=t4 - t_start)
    compact = CompactTiles(col_block=scan.bj, nnz=scan.nnz, cls=scan.cls, fro2=scan.fro2,
                           top_multi=scan.top, pair=scan.pid, shape=tuple(int(x) for x in M.shape), tile=T,
                           rb_ptr=scan.rb_ptr, pairs=cl["pairs"], cluster_fro2=cl["fro2_sum"])
    full = FullPass(M, rb_count, T, cfg)
    ts = TileSet(shape=M.shape, tile=T, n_brows=rb_count.shape[0], n_bcols=-(-M.shape[1] // T),
                 rb_ptr=scan.rb_ptr, n_tiles=n, nnz=int(M.nnz), col_block=scan.bj, source=full)
    # everything a plan reads later (pa.A for output_error and packing, the tiles, the clusters) is
    # read-only: analyses are shared through caches, and an edit would change later selections and
    # plans already built (held-out probe); ``arr.copy()`` gives a writable copy. pa.A is a copy of
    # the input (canonical_csr), so the caller's own arrays stay writable.
    for arr in (M.data, M.indices, M.indptr, cl["order"], cptr, scan.rb_ptr, scan.bj, scan.nnz,
                scan.cls, scan.fro2, scan.top, scan.pid, rb_count):
        arr.setflags(write=False)
    for arr in (*cl["pairs"].values(), cl["fro2_sum"], *cluster_cols.values(), *hist_cols.values()):
        arr.setflags(write=False)
    return PatternAnalysis(A=M, tile=T, tileset=ts, _cluster_cols=cluster_cols,
                           n_clusters=int(nc), lsh=cfg, fro_norm=fro_norm,
                           _hist_cols=hist_cols, timings=timings,
                           cluster_order=cl["order"], cluster_ptr=cptr,
                           compact=compact, _full=full)
