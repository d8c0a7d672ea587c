"""LSH clustering of tiles and the "modified histogram" (akf-spec §2, paper §3).

Pipeline (all numba, O(n_tiles) expected):

1. unique signatures (hash map, first-appearance order) and each tile's unique id;
2. MinHash of each unique signature (:mod:`akfviz.analysis.minhash`), K = ``num_hashes``;
3. banding: the K values are cut into ``bands`` bands of ``r = K / bands`` rows; two
   signatures whose MinHashes agree on *all* rows of *any* band are joined (union-find);
4. the modified histogram: every LSH component is split by the log-density bin
   ``floor(log10(density) · bins_per_decade)``, so a 1 % tile and a 60 % tile never share
   a cluster; cluster ids ``0 … n_clusters − 1`` follow first appearance in tile order;
5. per cluster: the representative (medoid under the exact Jaccard distance
   ``1 − |S∩S'| / |S∪S'|`` of the occupancy sets) and the mean within-cluster Jaccard.

Exact Jaccard uses popcounts on the uint64 signatures. Medoid and Jaccard mean work on the
cluster's *distinct* signatures weighted by their multiplicity, which is exact; only when
a cluster has too many distinct signatures are seeded samples used (see
:func:`cluster_tiles`). Random numbers inside numba come from a splitmix64 stream seeded
per cluster from ``LSHConfig.seed``, so results do not depend on thread scheduling.

From :data:`PARALLEL_MIN_TILES` tiles the pair ids are computed on one chunk of tiles per
thread; the chunks' pair ids are renumbered so that every output is the same bit for bit as
one serial pass (:func:`_merge_chunk_pairs`; tested for many chunkings). Steps 2–5 work on
the pairs and are shared with :func:`akfviz.analyze`, which gets its pairs from its eager pass
(:func:`akfviz.analysis.pairclust.cluster_pairs`).
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

import numba
import numpy as np

from .._jit import njit_cached, njit_parallel, serial_twin
from ..arguments import shown
from ..errors import InputError, checked_init
from .tiling import _popcount64

#: From this many tiles the per-tile clustering passes run on the worker threads.
PARALLEL_MIN_TILES = 100_000


@checked_init
@dataclass(frozen=True)
class LSHConfig:
    """Parameters of the MinHash LSH clustering (validated on construction).

    Parameters
    ----------
    num_hashes : int
        K, MinHash functions (1..1024).
    bands : int
        b, LSH bands; must divide ``num_hashes`` (rows per band ``r = K / b``).
    grid : int
        g, side of the coarse occupancy grid (1..8, g² ≤ 64 bits).
    seed : int
        Seed of the hash parameters and of every sample (≥ 0).
    bins_per_decade : int
        Log-density bins per factor 10 of density (1..20).
    top_q : float
        Share of nonzeros counted in a tile's ``top_mass`` (0 < q ≤ 1).
    jaccard_pairs : int
        Pairs sampled per cluster for the within-cluster Jaccard (1..100000).
    """

    num_hashes: int = 32
    bands: int = 8
    grid: int = 8
    seed: int = 0
    bins_per_decade: int = 2
    top_q: float = 0.1
    jaccard_pairs: int = 256

    def __post_init__(self):
        def _int(name, lo, hi):
            val = getattr(self, name)
            # a float holding a whole number (32.0, from JSON or a form) is that number, as the
            # tile side is (probe 43: num_hashes=32.0 was refused as "not a whole number")
            if (isinstance(val, (float, np.floating)) and not isinstance(val, (bool, np.bool_))
                    and np.isfinite(val) and float(val).is_integer()):
                val = int(val)
            if isinstance(val, (bool, np.bool_)) or not isinstance(val, (int, np.integer)):
                raise InputError(
                    f"LSH setting '{name}' must be a whole number between {lo} and {hi}, "
                    f"got {shown(val)}.")
            if not lo <= int(val) <= hi:
                raise InputError(
                    f"LSH setting '{name}' must be between {lo} and {hi}, got {shown(int(val))}."
                )
            object.__setattr__(self, name, int(val))

        _int("num_hashes", 1, 1024)
        _int("bands", 1, 1024)
        _int("grid", 1, 8)
        _int("seed", 0, 2**63 - 1)
        _int("bins_per_decade", 1, 20)
        _int("jaccard_pairs", 1, 100_000)
        if self.num_hashes % self.bands:
            raise InputError(
                f"LSH bands ({self.bands}) must divide the number of hashes "
                f"({self.num_hashes}) so that every band has the same number of rows."
            )
        q = self.top_q
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, (int, float, np.integer, np.floating)):
            raise InputError(f"LSH setting 'top_q' must be a number in (0, 1], got {shown(q)}.")
        if not (np.isfinite(q) and 0.0 < float(q) <= 1.0):
            raise InputError(f"LSH setting 'top_q' must be a share in (0, 1], got {shown(q)}.")
        object.__setattr__(self, "top_q", float(q))

    @property
    def rows_per_band(self) -> int:
        """``r = num_hashes / bands``."""
        return self.num_hashes // self.bands

    def to_dict(self) -> dict:
        """Plain dict of the fields."""
        return asdict(self)

    @classmethod
    def from_any(cls, lsh) -> "LSHConfig":
        """``None`` → defaults; an ``LSHConfig`` as is; a dict of its fields."""
        if lsh is None:
            return cls()
        if isinstance(lsh, cls):
            return lsh
        if type(lsh).__name__ == cls.__name__ and callable(getattr(lsh, "to_dict", None)):
            # an LSHConfig of an earlier import of this module (a reloaded module in a long-lived
            # app session): its settings, validated again (was: "got LSHConfig", refused)
            lsh = lsh.to_dict()
        if isinstance(lsh, Mapping):
            known = [f.name for f in fields(cls)]
            # a key that is not text cannot name a setting (a key object printing as 'grid' would
            # reach ``cls(**lsh)`` and fail there with a TypeError)
            unknown = list(dict.fromkeys(shown(k, 40) for k in lsh
                                         if not isinstance(k, str) or k not in known))
            if unknown:
                raise InputError(
                    f"Unknown LSH setting(s) {', '.join(unknown)}; the settings are "
                    f"{', '.join(known)}."
                )
            return cls(**{str(k): v for k, v in lsh.items()})
        raise InputError(
            f"lsh must be None, an LSHConfig or a dict of its settings, got {type(lsh).__name__}."
        )


# --------------------------------------------------------------------------- numba helpers

@njit_cached
def _mix64(x):
    """splitmix64 finaliser (a bijection on uint64)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit_cached
def _table_size(n):
    size = 16
    while size < 2 * n:
        size *= 2
    return size


@njit_cached
def _first_appearance(keys):
    """Ids of ``keys`` numbered by first appearance; returns (ids, first index of each id).

    Open addressing (linear probing) in a table that starts small and doubles when half
    full, so it stays cache-resident when there are few distinct keys.
    """
    n = keys.shape[0]
    size = 1024
    mask = np.uint64(size - 1)
    slot_id = np.full(size, -1, dtype=np.int64)
    ids = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        key = keys[i]
        pos = _mix64(key) & mask
        while True:
            sid = slot_id[pos]
            if sid < 0:
                slot_id[pos] = m
                ids[i] = m
                first[m] = i
                m += 1
                if 2 * m > size:
                    size *= 2
                    mask = np.uint64(size - 1)
                    slot_id = np.full(size, -1, dtype=np.int64)
                    for q in range(m):
                        p2 = _mix64(keys[first[q]]) & mask
                        while slot_id[p2] >= 0:
                            p2 = (p2 + np.uint64(1)) & mask
                        slot_id[p2] = q
                break
            if keys[first[sid]] == key:
                ids[i] = sid
                break
            pos = (pos + np.uint64(1)) & mask
    return ids, first[:m].copy()


@njit_cached
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit_cached
def _band_components(mh, bands):
    """Union-find over rows of ``mh`` (U, K): join rows equal on every column of any band.

    Returns the root of each row; a root is the smallest row index of its component.
    """
    U, K = mh.shape
    rpb = K // bands
    parent = np.arange(U)
    size = _table_size(U)
    mask = np.uint64(size - 1)
    slot = np.empty(size, dtype=np.int64)
    mh_t = np.ascontiguousarray(mh.T)   # (K, U): a band's hashes of every row, column by column
    hsh = np.empty(U, dtype=np.uint64)
    for band in range(bands):
        k0 = band * rpb
        slot[:] = -1
        # every row's band hash first, in flat loops over the rows (vectorised; chained in the
        # probe loop, each row's four dependent mixes were most of its time)
        hsh[:] = np.uint64(band)
        for k in range(k0, k0 + rpb):
            for u in range(U):
                hsh[u] = _mix64(hsh[u] ^ mh_t[k, u])
        for u in range(U):
            pos = hsh[u] & mask
            while True:
                other = slot[pos]
                if other < 0:
                    slot[pos] = u
                    break
                same = True
                for k in range(k0, k0 + rpb):
                    if mh[other, k] != mh[u, k]:
                        same = False
                        break
                if same:
                    ra = _find(parent, u)
                    rb = _find(parent, other)
                    if ra != rb:
                        if ra < rb:
                            parent[rb] = ra
                        else:
                            parent[ra] = rb
                    break
                pos = (pos + np.uint64(1)) & mask
    root = np.empty(U, dtype=np.int64)
    for u in range(U):
        root[u] = _find(parent, u)
    return root


@njit_cached
def _jaccard(a, b):
    """Exact Jaccard similarity of two bit sets (1.0 for two empty sets)."""
    un = _popcount64(a | b)
    if un == 0:
        return 1.0
    return _popcount64(a & b) / un


@njit_cached
def _rand_next(state):
    """One splitmix64 step: returns (new state, 64-bit output)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    return state, _mix64(state)


@njit_cached
def _rand_below(state, n):
    state, x = _rand_next(state)
    return state, np.int64(x % np.uint64(n))


#: A signature whose mean Jaccard distance to the cluster is within this of the medoid's is a
#: near-medoid; the representative is the near-medoid tile most typical in values (see
#: :func:`cluster_tiles`, Notes).
NEAR_MEDOID = 0.05


@njit_cached
def _cluster_keys(root, uid, dbin, bmin, nbins):
    n = uid.shape[0]
    keys = np.empty(n, dtype=np.uint64)
    for t in range(n):
        keys[t] = np.uint64(root[uid[t]] * nbins + (dbin[t] - bmin))
    return keys


@njit_cached
def _pair_ids_range(sig, dbin, bmin, nbins, a, b, pid, first):
    """First-appearance ids of the distinct (signature, density bin) pairs of tiles ``a:b``.

    Writes each tile's id (counted from 0 within the range) into ``pid[a:b]`` and the first
    tile of each of the range's ``m`` pairs into ``first[a:a + m]``; returns ``m``. Pairs
    whose signature has one bit (every tile with one nonzero) are looked up in a direct
    64 × nbins table; the others in an open-addressing hash table. Ids follow first
    appearance in tile order either way.
    """
    one = np.uint64(1)
    direct = np.full(64 * nbins, -1, dtype=np.int64)
    size = 1024
    mask = np.uint64(size - 1)
    slot = np.full(size, -1, dtype=np.int64)
    n_hashed = 0
    m = 0
    for t in range(a, b):
        x = sig[t]
        bb = dbin[t] - bmin
        if x != 0 and (x & (x - one)) == 0:
            key = _popcount64(x - one) * nbins + bb
            p = direct[key]
            if p < 0:
                p = m
                direct[key] = m
                first[a + m] = t
                m += 1
        else:
            p = -1
            pos = _mix64(x ^ _mix64(np.uint64(bb))) & mask
            while True:
                q = slot[pos]
                if q < 0:
                    p = m
                    slot[pos] = m
                    first[a + m] = t
                    m += 1
                    n_hashed += 1
                    break
                f = first[a + q]
                if sig[f] == x and dbin[f] == dbin[t]:
                    p = q
                    break
                pos = (pos + one) & mask
            if 2 * n_hashed > size:
                size *= 2
                mask = np.uint64(size - 1)
                slot = np.full(size, -1, dtype=np.int64)
                for q in range(m):
                    f = first[a + q]
                    y = sig[f]
                    if y != 0 and (y & (y - one)) == 0:
                        continue
                    p2 = _mix64(y ^ _mix64(np.uint64(dbin[f] - bmin))) & mask
                    while slot[p2] >= 0:
                        p2 = (p2 + one) & mask
                    slot[p2] = q
        pid[t] = p
    return m


def _pair_ids(sig, dbin, bmin, nbins, pid):
    """:func:`_pair_ids_range` over all tiles; returns the first tile of each pair."""
    first = np.empty(sig.shape[0], dtype=np.int64)  # only its first m entries are touched
    m = _pair_ids_range(sig, dbin, bmin, nbins, 0, sig.shape[0], pid, first)
    return first[:m].copy()


@njit_parallel
def _pair_ids_chunks(sig, dbin, bmin, nbins, bounds, pid, first, m):
    """:func:`_pair_ids_range` on each chunk ``bounds[ch]:bounds[ch + 1]`` (``prange``);
    ``m[ch]`` receives the chunk's number of pairs."""
    for ch in numba.prange(bounds.shape[0] - 1):
        m[ch] = _pair_ids_range(sig, dbin, bmin, nbins, bounds[ch], bounds[ch + 1], pid, first)


_pair_ids_chunks_serial = serial_twin(_pair_ids_chunks)


def _tile_chunks(n: int):
    """``(parallel, number of chunks)`` for the per-tile passes of :func:`cluster_tiles` over
    ``n`` tiles (the results do not depend on it)."""
    par = n >= PARALLEL_MIN_TILES and numba.get_num_threads() > 1
    return par, (numba.get_num_threads() if par else 1)


def _merge_chunk_pairs(sig, dbin, bmin, nbins, bounds, pid, par):
    """Pair ids of every chunk of tiles, and their numbering over all tiles.

    Each chunk numbers its distinct (signature, density bin) pairs by first appearance
    (``pid[t]``, local to the chunk). Listing the chunks' pairs chunk after chunk, each in
    its local order, and numbering that short list by first appearance gives every pair the
    id it would get from one pass over all tiles: a pair is listed first by the earliest
    chunk holding it, at its first tile there, and the list is in the order of those first
    tiles. So the ids do not depend on the chunking.

    Returns
    -------
    pfirst : int64 (n_pairs,)
        First tile of each pair, in id order.
    goff, gid : int64
        Chunk ``ch``'s local pair ``j`` has the global id ``gid[goff[ch] + j]``.
    """
    n_chunks = bounds.shape[0] - 1
    first = np.empty(sig.shape[0], dtype=np.int64)  # each chunk touches its first m entries
    m = np.zeros(n_chunks, dtype=np.int64)
    (_pair_ids_chunks if par else _pair_ids_chunks_serial)(sig, dbin, bmin, nbins, bounds, pid,
                                                           first, m)
    goff = np.zeros(n_chunks + 1, dtype=np.int64)
    np.cumsum(m, out=goff[1:])
    if n_chunks == 1:
        return first[:m[0]].copy(), goff, np.arange(m[0], dtype=np.int64)
    listed = np.concatenate([first[bounds[c]:bounds[c] + m[c]] for c in range(n_chunks)])
    gid = np.empty(listed.shape[0], dtype=np.int64)
    gfirst = _pair_ids(sig[listed], dbin[listed], bmin, nbins, gid)
    return listed[gfirst], goff, gid


# --------------------------------------------------------------------------- public

def cluster_tiles(signature: np.ndarray, density_bin: np.ndarray, cfg: LSHConfig,
                  density: np.ndarray | None = None, top_mass: np.ndarray | None = None,
                  fro2: np.ndarray | None = None) -> dict:
    """Cluster tiles by MinHash LSH on their occupancy signatures, split by density bin.

    Parameters
    ----------
    signature : ndarray of uint64, shape (n,)
        Occupancy bit sets (:func:`akfviz.analysis.features.tile_features`).
    density_bin : ndarray of int64, shape (n,)
        Log-density bins.
    cfg : LSHConfig
    density : ndarray of float64, shape (n,), optional
        Tile densities; when given, ``density_sum`` per cluster is computed in the same pass.
    top_mass : ndarray of float64, shape (n,), optional
        Tiles' share of mass in their top-q values; with ``density``, it picks which of the
        tiles carrying the medoid signature represents the cluster (see Notes).
    fro2 : ndarray of float64, shape (n,), optional
        Tiles' ``Σ v²`` (what :func:`akfviz.analyze` passes): the first content tie-break among
        equally typical tiles (see Notes), and ``fro2_sum`` per cluster.

    Returns
    -------
    dict
        ``cluster`` (n,) int64 ids by first appearance; ``n_clusters``; ``order``/``cptr``
        (tile indices grouped by cluster, in tile order); ``representative`` and
        ``jaccard_mean`` per cluster; ``unique_signatures`` and ``minhash`` (U, K) of the
        unique signatures, ``tile_unique`` (n,) each tile's row in them; ``component``
        (U,) LSH component root of each unique signature; ``density_sum`` (per cluster,
        zeros without ``density``); ``bin_min`` and ``bin_counts`` (tiles per density bin
        ``bin_min + i``, counted over the distinct (signature, bin) pairs); ``timings``.

    Notes
    -----
    Medoid: with d distinct signatures in a cluster of m tiles, if d ≤ 128 the medoid is
    exact, ``argmin_i Σ_j n_j (1 − J(S_i, S_j))``; otherwise candidates are the most
    frequent signature plus 64 seeded draws, each scored against 256 seeded member
    tiles. Jaccard mean: exact over all m(m−1)/2 tile pairs when ``d(d+1)/2`` or
    ``m(m−1)/2`` is at most ``jaccard_pairs``, else the mean over ``jaccard_pairs``
    seeded random pairs of distinct tiles. A one-tile cluster has Jaccard 1.
    Ties in the exact medoid (within :data:`~akfviz.analysis.pairclust.TIE_RTOL` relative) go
    to the smaller signature; in the sampled one, to the signature seen first in tile order. With ``density`` and
    ``top_mass`` given, the representative is chosen among the near-medoid tiles — those whose
    signature's mean Jaccard distance to the cluster (over the same members or samples as the
    medoid's) is within :data:`NEAR_MEDOID` of the medoid's, the medoid's own tiles included —
    as the one nearest the cluster's mean density and mean top-q mass share (L1 in
    standard deviations), so that the kernel errors measured on it are
    those of a typical member: the selector prices the whole cluster from it (akf-spec §5).
    Without them, or when every member has the same density and top-q share (one nonzero per
    tile), it is the first tile in tile order carrying the medoid signature. (That one
    could be an outlier in values: on a 512² LLM-like matrix at T = 16, relabelling the tile
    blocks gave plans with 0.96 % or 23 % error, by which tile the medoid sample found.)
    Ties in that distance (within :data:`~akfviz.analysis.pairclust.TIE_RTOL` relative, as
    both members of a two-tile cluster always are) go by content, not position: the larger
    ``Σ v²`` (``fro2``, when given: the member whose kernel errors weigh most in the cluster's),
    then the smaller signature, density and top share; tile order only among tiles alike in all
    of these. A permutation of the tile blocks then keeps every representative. (By position,
    it did not: on a power-law 256² matrix at T = 16, 18 two-tile clusters took whichever
    member came first, and a block permutation turned a plan of 2.05 % error into one of
    0.81 %.)
    """
    from .pairclust import cluster_pairs

    t0 = time.perf_counter()
    n = signature.shape[0]
    signature = np.ascontiguousarray(signature, dtype=np.uint64)
    density_bin = np.ascontiguousarray(density_bin, dtype=np.int64)
    pid = np.empty(n, dtype=np.int64)
    # pair ids per chunk of tiles, in parallel for large inputs; every result is the same bit for
    # bit for any number of chunks (see _merge_chunk_pairs)
    par, n_chunks = _tile_chunks(n)
    bounds = np.arange(n_chunks + 1, dtype=np.int64) * n // n_chunks
    if n:
        bmin = int(density_bin.min())
        nbins = int(density_bin.max()) - bmin + 1
        pfirst, goff, gid = _merge_chunk_pairs(signature, density_bin, bmin, nbins, bounds, pid, par)
    else:
        pfirst = np.empty(0, np.int64)
        goff = np.zeros(n_chunks + 1, np.int64)
        gid = np.empty(0, np.int64)
    dens = np.empty(0, np.float64) if density is None else np.ascontiguousarray(density, dtype=np.float64)
    top = np.empty(0, np.float64) if top_mass is None else np.ascontiguousarray(top_mass, dtype=np.float64)
    pairs = dict(sig=signature[pfirst], bin=density_bin[pfirst], first=pfirst,
                 dens=dens[pfirst] if dens.size else np.zeros(pfirst.size),
                 tm=top[pfirst] if top.size else np.zeros(pfirst.size),
                 uniform=np.ones(pfirst.size, dtype=np.bool_))
    if dens.size and top.size and n:
        _pair_uniform(bounds, goff, gid, pid, dens, top, pairs["dens"], pairs["tm"], pairs["uniform"])
    res = cluster_pairs(pairs, goff, gid, pid, bounds, cfg, dens, top,
                        fro2=None if fro2 is None else np.ascontiguousarray(fro2, dtype=np.float64),
                        t_start=t0)
    res["tile_unique"] = res["pairs"]["uid"][pid] if n else np.empty(0, np.int64)
    res["cluster"] = res["pairs"]["cluster"][pid] if n else np.empty(0, np.int64)
    res["timings"]["unique"] = res["timings"].pop("pairs")
    return res


@njit_cached
def _pair_uniform(bounds, goff, gid, pid, dens, top, pdens, ptm, uniform):
    """``uniform[p]`` False when a tile of pair ``p`` differs from its first tile in density or
    top share (tile ``t`` of chunk ``ch`` is pair ``gid[goff[ch] + pid[t]]``)."""
    for ch in range(bounds.shape[0] - 1):
        for t in range(bounds[ch], bounds[ch + 1]):
            p = gid[goff[ch] + pid[t]]
            if dens[t] != pdens[p] or top[t] != ptm[p]:
                uniform[p] = False
