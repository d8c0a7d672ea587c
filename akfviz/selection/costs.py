"""The selection problem: the cost matrices of the Dynamic Fuse Selector (akf-spec §5).

For the chosen *units* — every nonempty tile (granularity ``"tile"``) or each LSH cluster's
representative (granularity ``"cluster"``) — and every candidate kernel ``k``:

* ``E[u, k] = ‖t_u − decode(encode_k(t_u))‖_F²`` exactly, from ``kernel.batch_error`` (0 without
  computing it for kernels flagged ``lossless``);
* ``R[u, k]`` the resource from the performance table (:mod:`.perftable`) in the chosen measure —
  for a tile of fewer than ``T`` rows or columns (the matrix's last block row or column) the exact
  closed-form price instead (:mod:`.edgecost`);
* normalised shares ``En = E / ‖A‖_F²`` and ``Rn = R / R_dense``, where ``R_dense`` is the whole
  matrix under DENSE, empty tiles included (:func:`.perftable.dense_resource`); for the ``mix``
  measure ``R`` is already ``Σ_m w_m R_m / R_dense,m`` and ``R_dense = 1``;
* ``C[u, k] = alpha · En[u, k] + beta · Rn[u, k]``.

In cluster mode a lossy kernel that is exact on a representative (``E = 0``) of a cluster of
several tiles, and that is not beaten in both resource and payload bytes by a lossless candidate,
gets instead the mean exact error of the cluster's members estimated from up to
:data:`MEMBER_SAMPLE` of its (signature, density bin) pairs
(:meth:`SelectionProblem._estimate_where_the_representative_is_exact`).

The plan-level error and resource of a choice (one kernel per unit, applied to every member of a
cluster) are *measured on every member*: :meth:`SelectionProblem.evaluate` sums the exact member
errors (computed lazily per (cluster, kernel) and cached) and the table's resource of every member.
"""
from __future__ import annotations

import time

import numba
import numpy as np

from ..arguments import choice
from ..errors import InputError
from ..kernels.lowrank import LowRankKernel, lowrank_errors
from ._kernels import (ARGMIN_PARALLEL_MIN, _sample_means, _sample_pairs, _weighted_argmin,
                       _weighted_argmin_serial)
from .edgecost import edge_prices
from .member_errors import tile_errors
from .perftable import (MEASURE_NAMES, MIX_WEIGHTS, check_resource, check_rho_x, dense_resource,
                        measure_weights, performance_table)

#: Granularities of the selector: name -> one-line description.
GRANULARITIES = {
    "cluster": "kernel chosen on each LSH cluster's representative and applied to every member",
    "tile": "exact argmin per tile (the reference)",
}


def check_granularity(g) -> str:
    """The granularity's canonical name: ``"cluster"`` or ``"tile"``, in any case (as kernel names)."""
    # a list or set is unhashable: ``in`` raised TypeError (probe); ``choice`` refuses all but strings
    key = choice(g, GRANULARITIES)
    if key is None:
        raise InputError(f"Unknown granularity {g!r}; choose one of {', '.join(GRANULARITIES)}.")
    return key


def resolve_candidates(kernels) -> tuple:
    """Candidate kernel names (default ``DEFAULT_CANDIDATES``), validated, duplicates removed.

    Names are matched ignoring case, spaces, ``_`` and ``-``; a family name of akf-spec §3
    (``"NM"``, ``"PRUNE"``, ``"QUANT"``, ``"LOWRANK"``) stands for all its variants
    (:func:`akfviz.kernels.registry.expand_kernel_names`)."""
    from ..kernels.registry import DEFAULT_CANDIDATES, expand_kernel_names

    if kernels is None:
        names = list(DEFAULT_CANDIDATES)
    else:
        if isinstance(kernels, str):
            kernels = [kernels]
        try:
            names = list(kernels)
        except TypeError:
            raise InputError(f"kernels must be a list of kernel names, got {kernels!r}.") from None
    out = []
    for n in names:
        for name in expand_kernel_names(n):  # raises InputError listing the valid names
            if name not in out:
                out.append(name)
    if not out:
        raise InputError("The list of candidate kernels is empty; give at least one kernel name.")
    return tuple(out)


def check_pa(pa, who: str = "select()"):
    for attr in ("tiles", "tileset", "fro_norm", "tile", "clusters"):
        # looked up on the class first: hasattr(pa, "tiles") would build the tiles table
        if not (hasattr(type(pa), attr) or attr in getattr(pa, "__dict__", {}) or hasattr(pa, attr)):
            raise InputError(
                f"{who} needs a PatternAnalysis from akfviz.analyze(A, tile); "
                f"got a {type(pa).__name__} without {attr!r}."
            )
    return pa


def tie_break(alpha, beta, En, Rn, lossless=None):
    """The second key on exact ties of ``C = alpha·En + beta·Rn`` (None: the first candidate):
    with beta = 0 the resource decides between kernels of equal error share, with alpha = 0 the
    error decides between kernels of equal resource. ``alpha = inf`` already ranks by resource
    within the least error (:meth:`CostProblem.cost`).

    ``lossless`` (K,) bool, given in cluster mode: with beta = 0, a lossless kernel wins a tie over a lossy
    one before the resource decides. A lossy kernel can have zero error on the representative (QUANT8 on
    a one-nonzero tile, LOWRANK1 on a single dense row) and not on the members it is applied to: a held-out
    probe asked for error only (beta = 0) and got a 5 % error plan while CSC was a candidate.

    A *subnormal* weight (``0 < beta < 2.2e-308``, the smallest normal float) counts as 0 here: its
    products with the shares underflow to exactly 0 (``5e-324 · 0.01``), so ``C`` ties every exact kernel
    and the first candidate (DENSE) won, where beta = 0 gives the cheapest exact one (a probe)."""
    tiny = np.finfo(np.float64).tiny
    if beta < tiny and not np.isinf(alpha):
        if lossless is None or np.all(lossless) or not np.any(lossless):
            return Rn
        Rn = np.asarray(Rn, dtype=np.float64)
        offset = (float(np.max(Rn)) if Rn.size else 0.0) + 1.0
        return Rn + np.where(np.asarray(lossless, dtype=bool), 0.0, offset)
    if alpha < tiny:
        return En
    return None


#: Pairs (distinct signature and density bin) of a cluster whose first tiles measure a lossy kernel
#: exact on the representative (:meth:`SelectionProblem._estimate_where_the_representative_is_exact`).
MEMBER_SAMPLE = 32


class SelectionProblem:
    """Cost matrices of one selection (see the module docstring).

    Parameters
    ----------
    pa : PatternAnalysis
    candidates : tuple of str
    hw : HardwareConfig
    resource : {"energy", "cycles", "bytes", "mix"}
    granularity : {"cluster", "tile"}
    rho_x : float
    seed : int
        Seed of the performance table's calibration tiles.
    """

    def __init__(self, pa, candidates, hw, resource="energy", granularity="cluster", rho_x=1.0, seed=0):
        from ..kernels.registry import get_kernel

        t0 = time.perf_counter()
        self.timings = {}
        self.pa = pa
        self.ts = pa.tileset
        self.hw = hw
        self.names = tuple(candidates)
        self.kernels = [get_kernel(n) for n in self.names]
        self.lossless = np.array([bool(k.lossless) for k in self.kernels])
        self.resource = check_resource(resource)
        self.granularity = check_granularity(granularity)
        self.rho_x = check_rho_x(rho_x)
        self.T = int(pa.tile)
        self.hw_hash = hw.config_hash()
        self.table = performance_table(hw, self.T, rho_x=self.rho_x, seed=seed, hw_hash=self.hw_hash)
        self.R_dense_by_measure = dense_resource(pa.tileset.shape, self.T, hw, rho_x=self.rho_x,
                                                 hw_hash=self.hw_hash, seed=seed)
        self.R_dense = 1.0 if resource == "mix" else self.R_dense_by_measure[resource]
        #: exact prices of the edge tiles (:mod:`.edgecost`), shared by every selection on ``pa``
        self.edges = edge_prices(pa, hw, self.rho_x, self.hw_hash)
        self.fro2 = float(pa.fro_norm) ** 2
        self.timings["table"] = time.perf_counter() - t0

        t1 = time.perf_counter()
        # the analysis' own arrays, never the user's pa.tiles (which they may have edited); the
        # compact per-tile arrays of the eager pass suffice here, so a cluster-mode selection
        # never waits for the full pass (every entry moved to its tile: pa.tileset.r / .c / .v)
        comp = pa.compact
        n = int(pa.n_tiles)
        self.n_tiles = n
        self.grid = int(getattr(getattr(pa, "lsh", None), "grid", 8))
        self._tile_arrays = None
        self._tiles = None
        if self.granularity == "cluster":
            clusters = pa.cluster_arrays()      # the analysis' own (read-only) columns
            self.units = clusters["representative"]
            self._unit_of_tile = None           # = comp.cluster, made on first use
            self.unit_cluster = np.arange(self.units.size, dtype=np.int64)
            self.unit_size = clusters["size"]
        else:
            self.units = np.arange(n, dtype=np.int64)
            self._unit_of_tile = self.units
            self.unit_cluster = np.asarray(comp.cluster, dtype=np.int64)
            self.unit_size = np.ones(n, dtype=np.int64)
        nu = self.units.size
        self.n_units = nu
        self.unit_density = comp.density_of(self.units)
        self.unit_scale = comp.area(self.units).astype(np.float64) / float(self.T * self.T)
        self.unit_cls = comp.cls[self.units].astype(np.int64)
        self._tile_cls = None
        self.timings["units"] = time.perf_counter() - t1

        t2 = time.perf_counter()
        self.E = self.errors_of(self.units)
        if self.granularity == "cluster" and nu:
            self.E *= self.cluster_mass_ratio()[:, None]
        self.timings["errors"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        self.R = self.edges.overwrite(self.units, self.names, self.measure_weights(),
                                      self.resource_matrix(self.unit_density, self.unit_scale, self.unit_cls))
        self.bytes = self.edges.overwrite(self.units, self.names, {"bytes": 1.0}, self.table.evaluate(
            self.names, self.unit_cls, self.unit_density, self.unit_scale, measure="bytes"))
        self.Rn = self.R / self.R_dense if self.R_dense > 0 else np.zeros_like(self.R)
        self.timings["resources"] = time.perf_counter() - t3
        t4 = time.perf_counter()
        #: (n_units, K) bool: the entries of ``E`` estimated on sampled members (akf-spec §5)
        self.sampled = np.zeros(self.E.shape, dtype=bool)
        if self.granularity == "cluster" and nu:
            self._estimate_where_the_representative_is_exact()
        self.timings["errors"] += time.perf_counter() - t4
        self.En = self.E / self.fro2 if self.fro2 > 0 else np.zeros_like(self.E)
        self._Esum = None  # (n_units, K) exact member error sums, NaN = not computed yet
        self._Rsum = None
        self._members = None

    # ---------------------------------------------------------------- matrices
    @property
    def unit_of_tile(self) -> np.ndarray:
        """Decision unit of every tile (its cluster in cluster mode, itself in tile mode)."""
        if self._unit_of_tile is None:
            self._unit_of_tile = self.pa.compact.cluster
        return self._unit_of_tile

    def _tile_units(self, kid_of_unit):
        """``(unit_of_tile, kid_of_unit)`` for a per-tile pass; in cluster mode through the tiles'
        pairs (``pair → cluster → kernel``), which the analysis has per tile already."""
        if self.granularity == "cluster":
            comp = self.pa.compact
            return comp.pair, np.asarray(kid_of_unit)[comp.pairs["cluster"]]
        return self.unit_of_tile, kid_of_unit

    @property
    def tiles(self):
        """The analysis' tiles table (``pa.tiles_as_analysed()``; built, with the full pass, on first
        use: explanations and tile-level checks read it, the selection itself does not)."""
        if self._tiles is None:
            self._tiles = self.pa.tiles_as_analysed()
        return self._tiles

    def cluster_mass_ratio(self) -> np.ndarray:
        """Per cluster unit: the members' mean ``||t||_F²`` over the representative's (1 for a
        one-tile cluster, and where the representative's is 0).

        A unit's ``E`` is its representative's error scaled by this ratio: the representative's
        relative error ``E(rep, k) / ||rep||²`` times the mean member's ``||t||²`` — the expected
        error of a member (akf-spec §5: chosen on the representative, applied to every member).
        Clusters group tiles by pattern and density, not by magnitude; without the scaling a
        cluster whose representative is one of its smallest tiles looked nearly free to SKIP, and a
        row-scaled banded matrix lost all of its mass (relative error 1.0; 0.033 in tile mode)."""
        comp = self.pa.compact
        # Σ ||t||² per cluster, as np.bincount(cluster, fro2) sums it: the analysis summed it
        mean = comp.cluster_fro2[self.unit_cluster] / self.unit_size
        rep = comp.fro2[self.units]
        ratio = np.ones(self.units.size)
        ok = (rep > 0) & (self.unit_size > 1)
        ratio[ok] = mean[ok] / rep[ok]
        return ratio

    def errors_of(self, idx, cols=None) -> np.ndarray:
        """Exact ``E`` (len(idx), K); zero for lossless kernels without computing.

        ``cols`` (candidate indices, default all) limits the kernels computed; the other columns
        are 0. While the analysis' full pass has not run (cluster mode), the tiles are read straight
        from the matrix (:meth:`TileSet.subset`): the representatives do not need every entry of
        the matrix moved to its tile."""
        idx = np.asarray(idx, dtype=np.int64)
        E = np.zeros((idx.size, len(self.names)))
        if idx.size == 0:
            return E
        cols = range(len(self.names)) if cols is None else {int(j) for j in cols}
        ts = self.ts
        if not ts.entries_ready and idx.size * 4 < max(ts.n_tiles, 1):
            ts, idx = ts.subset(idx), np.arange(idx.size, dtype=np.int64)
        # the LOWRANK ranks share one pass of singular values
        lr = [j for j, k in enumerate(self.kernels) if isinstance(k, LowRankKernel) and j in cols]
        if lr:
            E[:, lr] = lowrank_errors(ts, idx, [self.kernels[j].r for j in lr])
        for j, k in enumerate(self.kernels):
            if not self.lossless[j] and j not in lr and j in cols:
                E[:, j] = np.maximum(np.asarray(k.batch_error(ts, idx), dtype=np.float64), 0.0)
        return E

    def member_sample(self, rows) -> np.ndarray:
        """Pair ids ``(len(rows), MEMBER_SAMPLE)``: up to :data:`MEMBER_SAMPLE` of the pairs of each
        cluster unit ``rows[r]``, spread evenly through them in pair order.

        Parameters
        ----------
        rows : array of int
            Distinct cluster units (= cluster ids in cluster mode).

        Returns
        -------
        ndarray of int64
            ``out[r, i]`` = the cluster's pair of rank ``⌊(2i + 1)·s / (2m)⌋`` among its ``s``
            pairs (``m`` = :data:`MEMBER_SAMPLE`: the midpoints of ``m`` equal parts), every pair
            when ``s ≤ m``, ``-1`` past ``min(m, s)``; a row of ``pa.compact.pairs``, whose
            ``first`` is a member tile and ``count`` the members it stands for.

        Notes
        -----
        A pair holds the cluster's tiles of one signature and density bin, so the sample covers
        the cluster's patterns and densities, not only its most common tile (a cluster of one-nonzero
        tiles with a few of two: sixteen members spread in tile order missed them all, uniform
        20,000², T = 8, 4.5 % error at alpha = 1e12). Pairs are numbered by first appearance in
        tile order (:func:`akfviz.analyze`): the same analysis gives the same sample whatever the
        thread count. :func:`._kernels._sample_pairs`, two passes over the pairs.
        """
        rows = np.asarray(rows, dtype=np.int64)
        pc = np.ascontiguousarray(self.pa.compact.pairs["cluster"], dtype=np.int64)
        row_of = np.full(self.n_units, -1, dtype=np.int64)
        row_of[self.unit_cluster[rows]] = np.arange(rows.size, dtype=np.int64)
        out = np.empty((rows.size, MEMBER_SAMPLE), dtype=np.int64)
        _sample_pairs(pc, row_of, np.int64(MEMBER_SAMPLE), out)
        return out

    def representative_claims(self) -> np.ndarray:
        """(n_units, K) bool: the lossy kernels whose error on a cluster's representative says
        nothing about its other members and could decide the plan.

        An entry ``(u, k)`` is claimed when ``k`` is lossy, ``E[u, k] = 0`` on the representative,
        the cluster has more than one tile, and no lossless candidate ``j`` of the unit has both
        ``Rn[u, j] < Rn[u, k]`` and ``bytes[u, j] < bytes[u, k]``. Such a ``j`` costs less than
        ``k`` whatever ``k``'s error (``C = alpha·En + beta·Rn``, ``En ≥ 0``; at ``beta = 0`` a
        lossless kernel wins the tie, :func:`tie_break`), is allowed wherever ``k`` is (budget
        masks keep the lossless kernels; the fusion weights allow kernels no less accurate than
        the argmin) and also needs fewer SRAM bytes, so ``k``'s ``E`` never decides a choice
        (akf-spec §5). Reads the representatives' ``E``: called before
        :meth:`_estimate_where_the_representative_is_exact` replaces the claimed entries. Empty in
        tile mode."""
        nu, K = self.E.shape
        claimed = np.zeros((nu, K), dtype=bool)
        if self.granularity != "cluster" or nu == 0 or not (~self.lossless).any():
            return claimed
        claimed = (self.E == 0.0) & ~self.lossless[None, :] & (self.unit_size > 1)[:, None]
        rows = np.flatnonzero(claimed.any(axis=1))
        if rows.size and self.lossless.any():
            Rn, B = self.Rn[rows], self.bytes[rows]
            RL, BL = Rn[:, self.lossless], B[:, self.lossless]
            beaten = np.zeros((rows.size, K), dtype=bool)
            for j in range(RL.shape[1]):
                beaten |= (RL[:, j:j + 1] < Rn) & (BL[:, j:j + 1] < B)
            claimed[rows] &= ~beaten
        return claimed

    def _estimate_where_the_representative_is_exact(self):
        """Cluster mode: every claimed entry (:meth:`representative_claims`) gets as ``E[u, k]`` the
        mean error of the members estimated on the sampled pairs ``S_u`` (:meth:`member_sample`),
        each pair's first tile ``f_p`` standing for its ``c_p`` tiles:

        .. math::

            E(u, k) = \\frac{\\sum_{p \\in S_u} c_p \\, \\lVert f_p - \\mathrm{decode}_k(\\mathrm{encode}_k(f_p))
                      \\rVert_F^2}{\\sum_{p \\in S_u} c_p},

        the expected error of a member (akf-spec §5: the kernel is chosen per cluster from
        estimates, applied to every member, and the plan measures every member's error).

        The mass-ratio scaling of :meth:`cluster_mass_ratio` cannot move an error of 0, and a
        lossy kernel exact on a representative of one nonzero (PRUNE25, NM1:4, LOWRANK1) drops
        entries of the cluster's members of two: the plan stayed at 16–30 % error however large
        alpha was, and raising alpha could raise the error (adversarial probe of the selector,
        forty-third session: powerlaw 64², T = 4, alpha = 1, 100, 1e6 gave 10.9 %, 0.28 %, 30 %).
        Where every sampled tile is exact, ``E`` stays 0. The sums run in sample order
        (:func:`._kernels._sample_means`): the same inputs give the same ``E`` bit for bit.
        Sets :attr:`sampled`.
        """
        claimed = self.representative_claims()
        rows = np.flatnonzero(claimed.any(axis=1))
        if rows.size == 0:
            return
        picks = self.member_sample(rows)
        count = (picks >= 0).sum(axis=1).astype(np.int64)
        pairs = self.pa.compact.pairs
        chosen = picks[picks >= 0]                        # row by row, each row's pairs in order
        cols = np.flatnonzero(claimed[rows].any(axis=0))
        Es = self.errors_of(np.asarray(pairs["first"], dtype=np.int64)[chosen], cols)
        weight = np.asarray(pairs["count"], dtype=np.float64)[chosen]
        mean = np.empty((rows.size, Es.shape[1]))
        _sample_means(np.ascontiguousarray(Es), weight, count, mean)
        sub = claimed[rows]
        E = self.E[rows]
        E[sub] = mean[sub]
        self.E[rows] = E
        self.sampled = claimed

    def tile_arrays(self):
        """(class, density, scale) of every tile (computed once, on demand, from the eager pass); the
        scale of an edge tile is 0, so the table adds nothing for it (:meth:`member_resource_sums`
        adds its exact price)."""
        if self._tile_arrays is None:
            comp = self.pa.compact
            scale = comp.area().astype(np.float64) / float(self.T * self.T)
            scale[self.edges.idx] = 0.0
            self._tile_arrays = (comp.cls.astype(np.int64), comp.density, scale)
        return self._tile_arrays

    def resource_matrix(self, density, scale, cls) -> np.ndarray:
        """``R`` (n, K) in the selector's measure (``mix`` = weighted shares of Dense)."""
        if self.resource != "mix":
            return self.table.evaluate(self.names, cls, density, scale, measure=self.resource)
        R = np.zeros((len(cls), len(self.names)))
        for m in MEASURE_NAMES:
            d = self.R_dense_by_measure[m]
            if d > 0:
                R += MIX_WEIGHTS[m] * self.table.evaluate(self.names, cls, density, scale, measure=m) / d
        return R

    def measure_weights(self) -> dict:
        """Weights of the table's measures that make up the selector's resource
        (:func:`.perftable.measure_weights`)."""
        return measure_weights(self.resource, self.R_dense_by_measure)

    def cost(self, alpha, beta) -> np.ndarray:
        """``C = alpha·En + beta·Rn`` (n_units, K); alpha = inf means "error first, resource breaks ties"."""
        if np.isinf(alpha):
            return np.where(self.En == self.En.min(axis=1, keepdims=True), self.Rn, np.inf) \
                if self.n_units else self.En.copy()
        return alpha * self.En + beta * self.Rn

    def argmin(self, alpha, beta, mask=None) -> np.ndarray:
        """Per-unit argmin of the cost (first candidate on exact ties); ``mask`` restricts the
        candidates: (K,) bool for every unit, or (n_units, K) per unit."""
        key = tie_break(alpha, beta, self.En, self.Rn,
                        lossless=self.lossless if self.granularity == "cluster" else None)
        if key is None and np.isfinite(alpha) and np.isfinite(beta) and self.n_units:
            # one numba pass, no (n_units, K) temporaries (tile mode of a large matrix: 31 argmins of
            # 950,626 × 17 costs took 3 s of a Pareto front)
            m = np.ones((1, self.En.shape[1]), dtype=np.bool_) if mask is None else \
                np.ascontiguousarray(mask if mask.ndim == 2 else mask[None, :], dtype=np.bool_)
            out = np.empty(self.n_units, dtype=np.int64)
            fn = _weighted_argmin if self.n_units >= ARGMIN_PARALLEL_MIN and numba.get_num_threads() > 1 \
                else _weighted_argmin_serial
            k = max(1, min(self.n_units // 4096, 8 * numba.get_num_threads()))
            fn(self.En, self.Rn, float(alpha), float(beta), m,
               np.linspace(0, self.n_units, k + 1).round().astype(np.int64), out)
            return out
        C = self.cost(alpha, beta)
        if mask is not None:
            C = np.where(mask if mask.ndim == 2 else mask[None, :], C, np.inf)
        if key is not None:
            C = np.where(C == C.min(axis=1, keepdims=True), key, np.inf)
        return np.argmin(C, axis=1).astype(np.int64) if self.n_units else np.zeros(0, np.int64)

    # ---------------------------------------------------------------- member sums
    def _member_order(self):
        if self._members is None:
            order = np.argsort(self.unit_of_tile, kind="stable").astype(np.int64)
            starts = np.zeros(self.n_units + 1, dtype=np.int64)
            starts[1:] = np.cumsum(self.unit_size)
            self._members = (order, starts)
        return self._members

    def members(self, u) -> np.ndarray:
        order, starts = self._member_order()
        return order[starts[u]:starts[u + 1]]

    def member_error_sums(self, choice) -> np.ndarray:
        """Exact ``Σ_{t ∈ unit} E(t, choice[unit])`` for every unit (cached per (unit, kernel))."""
        choice = np.asarray(choice, dtype=np.int64)
        nu = self.n_units
        if self.granularity == "tile":
            return self.E[np.arange(nu), choice]
        self._esum_table()
        got = self._Esum[np.arange(nu), choice]
        missing = np.isnan(got)
        if missing.any():
            order, starts = self._member_order()
            for k in np.unique(choice[missing]):
                us = np.nonzero(missing & (choice == k))[0]
                segs = [order[starts[u]:starts[u + 1]] for u in us]
                lens = np.array([s.size for s in segs], dtype=np.int64)
                tiles = np.concatenate(segs)
                e = tile_errors(self.pa, self.kernels[k], tiles)   # remembered per analysis
                # each unit's sum over its own members in tile order (bincount adds in input
                # order), so it does not depend on which other units share the batch: a
                # difference of prefix sums did, and the Pareto front's thinning then kept
                # other plans depending on the order of earlier calls
                seg = np.repeat(np.arange(us.size, dtype=np.int64), lens)
                self._Esum[us, k] = np.bincount(seg, weights=e, minlength=us.size)
            got = self._Esum[np.arange(nu), choice]
        return got

    def _esum_table(self) -> np.ndarray:
        """The cluster-mode cache of member error sums, made on first use: zeros for the lossless
        kernels, the representative's errors for one-member units, NaN elsewhere."""
        if self._Esum is None:
            self._Esum = np.full((self.n_units, len(self.names)), np.nan)
            self._Esum[:, self.lossless] = 0.0
            single = self.unit_size == 1  # the representative is the only member
            self._Esum[single] = self.E[single]
        return self._Esum

    def known_member_error_sums(self) -> np.ndarray:
        """``Σ_{t ∈ unit} E(t, k)`` (n_units, K) where already known, NaN elsewhere — no kernel runs.
        ``E`` in tile mode; in cluster mode the sums computed so far (:meth:`member_error_sums`).
        A read-only view: the budget modes' exchange step reads it (:mod:`.budgets`)."""
        out = self.E if self.granularity == "tile" else self._esum_table()
        view = out.view()
        view.setflags(write=False)
        return view

    def member_error_matrix(self) -> np.ndarray:
        """``Σ_{t ∈ unit} E(t, k)`` (n_units, K) for every (unit, kernel): ``E`` in tile mode; in cluster
        mode every kernel's exact error on every member tile (about what tile mode's errors cost)."""
        if self.granularity == "tile":
            return self.E
        for k in range(len(self.names)):
            self.member_error_sums(np.full(self.n_units, k, dtype=np.int64))
        return self._Esum

    def member_resource_sums(self) -> np.ndarray:
        """``Σ_{t ∈ unit} R(t, k)`` (n_units, K) over every member: the table's for full tiles, the
        exact prices of the edge tiles (:mod:`.edgecost`) added in tile order."""
        if self.granularity == "tile":
            return self.R
        if self._Rsum is None:
            cls, dens, scale = self.tile_arrays()
            weights = self.measure_weights()
            R = np.zeros((self.n_units, len(self.names)))
            for m, wgt in weights.items():
                R += wgt * self.table.group_sums(self.names, cls, dens, scale, self.unit_of_tile,
                                                 self.n_units, measure=m)
            if self.edges.n:
                np.add.at(R, self.unit_of_tile[self.edges.idx], self.edges.weighted(self.names, weights))
            self._Rsum = R
        return self._Rsum

    def evaluate(self, choice) -> tuple:
        """(relative error, total resource) of a choice, both measured on every member tile."""
        choice = np.asarray(choice, dtype=np.int64)
        if self.n_units == 0:
            return 0.0, 0.0
        err2 = float(self.member_error_sums(choice).sum())
        # every kernel's E(t) ≤ ‖t‖²_F (SKIP's is equal), so err2 > ‖A‖² only by rounding: the
        # all-SKIP plan summed to 1.0000000000000002 in cluster mode and missed error_budget = 1
        rel = float(np.sqrt(min(err2, self.fro2) / self.fro2)) if self.fro2 > 0 else 0.0
        res = float(self.member_resource_sums()[np.arange(self.n_units), choice].sum())
        return rel, res

    # ---------------------------------------------------------------- per tile
    def tile_choice(self, choice) -> np.ndarray:
        """Kernel index per tile (a unit's choice applied to every member)."""
        return np.asarray(choice, dtype=np.int64)[self.unit_of_tile] if self.n_tiles else \
            np.zeros(0, np.int64)

    def plan_resource(self, choice) -> float:
        """Total table resource of a choice over every tile (one numba pass, no per-tile arrays)."""
        if self.n_tiles == 0:
            return 0.0
        kid = self.table.kernel_ids(self.names)[np.asarray(choice, dtype=np.int64)]
        return self.table.chosen_pass(self.pa, *self._tile_units(kid), self.measure_weights(),
                                      edges=self.edges)[0]

    def expand(self, choice):
        """The plan of a choice in one numba pass over the tiles: ``(total resource, tile_kernels)``.

        ``total`` equals :meth:`plan_resource`; ``tile_kernels`` is a ``pandas.Categorical`` (int8 codes,
        categories = the chosen kernels in order of first appearance) equal to
        ``names[tile_choice(choice)]`` — what ``FusionPlan`` takes without hashing a string per tile.
        """
        import pandas as pd

        if self.n_tiles == 0:
            return 0.0, np.zeros(0, dtype=object)
        kids = self.table.kernel_ids(self.names)
        kid = kids[np.asarray(choice, dtype=np.int64)]
        total, codes, order = self.table.chosen_pass(self.pa, *self._tile_units(kid), self.measure_weights(),
                                                     codes=True, edges=self.edges)
        name_of_kid = {int(k): n for k, n in zip(kids, self.names)}
        cats = [name_of_kid[int(k)] for k in order]
        # object categories, as plan.tile_kernels_categorical: a list of str became an arrow-backed
        # index (pandas 3), which took 3× as long to build for 1-17 names
        return total, pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object), validate=False)
