"""LSH clustering from the pairs of the eager pass (akf-spec §2; used by :func:`akfviz.analyze`).

:func:`akfviz.analysis.lsh.cluster_tiles` clusters tiles from per-tile signature and density-bin
arrays. Every step after its first pass works on the distinct (signature, density bin) *pairs*,
and :mod:`akfviz.analysis.scanpass` already produces those pairs, chunk by chunk, without writing a
signature per tile. :func:`cluster_scan` takes them from there and returns the same clusters, ids,
representatives, Jaccard means and histogram as ``cluster_tiles`` on the full pass's arrays, bit
for bit (tested):

1. the chunks' pairs are numbered over all tiles by first appearance (:func:`merge_pairs`);
2. MinHash of the distinct signatures, LSH bands, union-find, split by density bin — on pairs, as
   in :mod:`.lsh`;
3. one pass over the tiles gives each its global pair and cluster and counts the tiles per pair;
   a second one sorts the tiles by cluster (``cluster_order``);
4. per cluster: medoid, representative and Jaccard mean from the cluster's pairs (its distinct
   signatures, with the tiles per pair as multiplicities). The members' density and ``top``
   sums that pick the representative among near-medoid tiles (:func:`.lsh.cluster_tiles`,
   Notes) are taken over the members in tile order, as before — except where every member has
   the same nnz, area and ``top`` and those sums are exact (dyadic values: one-nonzero tiles of a
   power-of-two T), whose result is then known without the pass: the members are alike.
"""
from __future__ import annotations

import time

import numba
import numpy as np

from .._jit import njit_cached, njit_inline, njit_parallel, serial_twin
from ..memory import check_memory
from .lsh import NEAR_MEDOID, _band_components, _first_appearance, _jaccard, _mix64, _rand_below
from .tiling import _popcount64
from .minhash import minhash_signatures
from .scanpass import DIRECT2_MAX_BINS, tile_density, tile_top, two_bit_key


@njit_cached
def _merge_kernel(starts, m, psig, pbin, pfirst, pdens, ptm, pmixed,
                  gid, g_sig, g_bin, g_first, g_dens, g_tm, g_uni):
    """Number the chunks' pairs by first appearance (see :func:`merge_pairs`); returns how
    many distinct pairs there are. Pairs of one-bit signatures are looked up in a direct table (by
    bit, and bin from the lowest bin listed up to 0), those of two-bit signatures in another (by
    both bits and bin: :func:`akfviz.analysis.scanpass.two_bit_key`, with at most
    :data:`~akfviz.analysis.scanpass.DIRECT2_MAX_BINS` bins), the others in an open-addressing hash
    table sized for them."""
    one = np.uint64(1)
    bmin = np.int64(0)
    seen = False
    n_two = 0     # entries of two-bit signatures
    n_more = 0    # of three bits or more
    for ch in range(starts.shape[0]):
        for j in range(m[ch]):
            p = starts[ch] + j
            bb = pbin[p]
            if not seen or bb < bmin:
                bmin = bb
                seen = True
            x = psig[p]
            x2 = x & (x - one)
            if x2 != 0:
                if (x2 & (x2 - one)) == 0:
                    n_two += 1
                else:
                    n_more += 1
    nbins = 1 - bmin
    use2 = nbins <= DIRECT2_MAX_BINS
    if not use2:
        n_more += n_two
    direct = np.full(64 * nbins, -1, dtype=np.int64)
    direct2 = np.full(4096 * nbins if use2 and n_two > 0 else 0, -1, dtype=np.int64)
    size = 1024
    while size < 2 * n_more:
        size *= 2
    mask = np.uint64(size - 1)
    slot = np.full(size if n_more > 0 else 0, -1, dtype=np.int64)
    n = 0
    li = 0
    for ch in range(starts.shape[0]):
        a = starts[ch]
        for j in range(m[ch]):
            p = a + j
            x = psig[p]
            bb = pbin[p]
            x2 = x & (x - one)
            if x2 == 0:
                key = _popcount64(x - one) * nbins + (bb - bmin)
                q = direct[key]
                if q < 0:
                    q = n
                    direct[key] = n
            elif use2 and (x2 & (x2 - one)) == 0:
                key2 = two_bit_key(x, bb, bmin, nbins)
                q = direct2[key2]
                if q < 0:
                    q = n
                    direct2[key2] = n
            else:
                pos = _mix64(x ^ _mix64(np.uint64(bb))) & mask
                while True:
                    q = slot[pos]
                    if q < 0:
                        q = n
                        slot[pos] = n
                        break
                    if g_sig[q] == x and g_bin[q] == bb:
                        break
                    pos = (pos + one) & mask
            if q == n:  # first listed: the earliest chunk holding the pair, at its first tile
                g_sig[n] = x
                g_bin[n] = bb
                g_first[n] = pfirst[p]
                g_dens[n] = pdens[p]
                g_tm[n] = ptm[p]
                g_uni[n] = pmixed[p] == 0
                n += 1
            elif pmixed[p] != 0 or pdens[p] != g_dens[q] or ptm[p] != g_tm[q]:
                g_uni[q] = False
            gid[li] = q
            li += 1
    return n


def merge_pairs(scan):
    """Number the chunks' pairs over all tiles by first appearance.

    Listing every chunk's pairs in its own order (first appearance in its tiles), chunk after
    chunk, and numbering that list by first appearance gives each pair the id one pass over all
    tiles would: a pair is listed first by the earliest chunk holding it, at its first tile there.

    Returns
    -------
    pairs : dict
        ``sig`` (uint64), ``bin``, ``first`` (first tile), ``dens``, ``tm`` (float64: the first
        tile's density and ``top``) and ``uniform`` (bool: every tile of the pair has them), one
        entry per pair in id order.
    goff, gid : int64
        Chunk ``ch``'s local pair ``j`` is pair ``gid[goff[ch] + j]``.
    """
    bounds, m, rb_ptr = scan.bounds, scan.m, scan.rb_ptr
    n_chunks = bounds.shape[0] - 1
    goff = np.zeros(n_chunks + 1, dtype=np.int64)
    np.cumsum(m, out=goff[1:])
    starts = np.ascontiguousarray(rb_ptr[bounds[:-1]], dtype=np.int64)
    total = int(goff[-1])
    gid = np.empty(total, dtype=np.int64)
    out = dict(sig=np.empty(total, np.uint64), bin=np.empty(total, np.int64),
               first=np.empty(total, np.int64), dens=np.empty(total, np.float64),
               tm=np.empty(total, np.float64), uniform=np.empty(total, np.bool_))
    if total:
        n = _merge_kernel(starts, m, scan.psig, scan.pbin, scan.pfirst, scan.pdens, scan.ptm,
                          scan.pmixed, gid, out["sig"], out["bin"], out["first"], out["dens"],
                          out["tm"], out["uniform"])
        out = {key: arr[:n].copy() for key, arr in out.items()}
    return out, goff, gid


@njit_parallel
def _gather_groups(gbounds, tbounds, goff, gid, pid, pcount):
    """Per tile its global pair (``pid`` rewritten in place); tiles per pair counted into row ``g``
    of ``pcount`` for group ``g`` of chunks (chunk ``ch`` holds tiles ``tbounds[ch]:tbounds[ch +
    1]``; ``prange`` over the groups)."""
    for g in numba.prange(gbounds.shape[0] - 1):
        row = np.uint64(g)
        for ch in range(gbounds[g], gbounds[g + 1]):
            g0 = np.uint64(goff[ch])
            for t in range(np.uint64(tbounds[ch]), np.uint64(tbounds[ch + 1])):
                p = np.uint64(gid[g0 + np.uint64(pid[t])])
                pid[t] = p
                pcount[row, p] += 1


@njit_parallel
def _scatter_groups(gbounds, tbounds, pid, pcluster, pos, order):
    """Stable counting sort of the tiles by cluster (``pcluster[pid[t]]``): ``pos[g, c]`` is where
    group ``g``'s first tile of cluster ``c`` goes (``prange`` over the groups). The position of
    the current run's cluster is kept in a register: consecutive tiles mostly share a cluster, and
    incrementing ``pos`` in memory for each made every tile wait for the previous one's store."""
    for g in numba.prange(gbounds.shape[0] - 1):
        row = np.uint64(g)
        last = np.uint64(0)
        at = pos[row, last]
        for t in range(np.uint64(tbounds[gbounds[g]]), np.uint64(tbounds[gbounds[g + 1]])):
            c = np.uint64(pcluster[pid[t]])
            if c != last:
                pos[row, last] = at
                last = c
                at = pos[row, c]
            order[at] = t
            at += 1
        pos[row, last] = at


_gather_groups_serial = serial_twin(_gather_groups)
_scatter_groups_serial = serial_twin(_scatter_groups)


@njit_cached
def _count_tables(pcount_g, pcluster, pbin, bmin, pcount, cptr, pos, bin_counts, cpairs, cpp):
    """From the tiles counted per pair and group (``pcount_g``): tiles per pair (``pcount``), the
    clusters' tile ranges in the cluster order (``cptr``), each group's first slot per cluster for
    the counting sort (``pos``), tiles per density bin (``bin_counts``), and each cluster's pairs in
    id order — first appearance among its tiles — (``cpairs`` from ``cpp[c]``: a stable counting
    sort). Integer sums: the numbers of bincount / cumsum / a stable argsort."""
    groups = pcount_g.shape[0]
    n_pairs = pcluster.shape[0]
    n_clusters = cptr.shape[0] - 1
    for p in range(n_pairs):
        tot = 0
        for g in range(groups):
            tot += pcount_g[g, p]
        pcount[p] = tot
        c = pcluster[p]
        cptr[c + 1] += tot
        cpp[c + 1] += 1
        bin_counts[pbin[p] - bmin] += tot
        for g in range(groups):
            pos[g, c] += pcount_g[g, p]   # per-group tiles of cluster c, for now
    for c in range(n_clusters):
        cptr[c + 1] += cptr[c]
        cpp[c + 1] += cpp[c]
        run = cptr[c]
        for g in range(groups):   # group g's first slot: after the earlier groups' tiles of c
            k = pos[g, c]
            pos[g, c] = run
            run += k
    fill = cpp[:n_clusters].copy()
    for p in range(n_pairs):
        c = pcluster[p]
        cpairs[fill[c]] = p
        fill[c] += 1


@njit_cached
def _exact_repeat(x, m):
    """True when adding ``x`` to itself ``m`` times, left to right, gives exactly ``m·x`` (every
    partial sum representable): ``x = N·2^e`` with ``N`` odd and ``N·m < 2^53``."""
    if x == 0.0:
        return True
    u = np.abs(np.array([x])).view(np.uint64)[0]
    e = (u >> np.uint64(52)) & np.uint64(0x7FF)
    man = u & np.uint64(0xFFFFFFFFFFFFF)
    if e == 0:
        return False  # subnormal: not worth the care
    man |= np.uint64(1) << np.uint64(52)
    while (man & np.uint64(1)) == 0:
        man >>= np.uint64(1)
    bits = 0
    while man != 0:
        man >>= np.uint64(1)
        bits += 1
    mb = 0
    mm = m
    while mm != 0:
        mm >>= 1
        mb += 1
    return bits + mb <= 53


@njit_cached
def _fro2_sum(order, s, e, fro2):
    """``Σ fro2`` over the members ``order[s:e]``, in tile order."""
    fs = 0.0
    for i in range(s, e):
        fs += fro2[order[i]]
    return fs


#: Two medoid costs, or two members' distances to the means (in standard deviations), within this
#: fraction of ``1 + the least`` tie (:func:`_typical_member`, :func:`_stats_range`): the sums behind
#: them run in tile order, so a permutation of the tiles can move them by a few ulps.
TIE_RTOL = 1e-9


@njit_inline
def _outranks(t, a, w, b, usig, puid, pid, fro2, mdn, mtv):
    """Whether member ``t`` (values at ``mdn[a]``, ``mtv[a]``) goes before member ``w`` (at ``b``)
    among members tied as the most typical: the larger ``Σ v²`` (when ``fro2`` is given), then the
    smaller signature, density and top share; on a full tie, neither (tile order decides)."""
    if fro2.shape[0] > 0 and fro2[t] != fro2[w]:
        return fro2[t] > fro2[w]
    st = usig[puid[pid[t]]]
    sw = usig[puid[pid[w]]]
    if st != sw:
        return st < sw
    if mdn[a] != mdn[b]:
        return mdn[a] < mdn[b]
    return mtv[a] < mtv[b]


@njit_cached
def _typical_member(order, s, e, pid, puid, near, mdn, mtv, dn_mu, dn_sd, tm_mu, tm_sd, usig, fro2):
    """The member carrying a near-medoid signature (``near[puid[pid[t]]]``) whose density and top
    share (``mdn`` / ``mtv``, aligned with ``order[s:e]``) lie nearest the means, in standard
    deviations (L1); -1 if none. Members within :data:`TIE_RTOL` of the least distance are
    tied (both members of a two-tile cluster always are) and ranked by content
    (:func:`_outranks`), so that the choice does not depend on where the tiles sit; the first in
    tile order only when they are alike in all of it."""
    best_d = np.inf
    for i in range(s, e):
        t = order[i]
        if near[puid[pid[t]]] != 0:
            dist = abs(mdn[i - s] - dn_mu) / dn_sd + abs(mtv[i - s] - tm_mu) / tm_sd
            if dist < best_d:
                best_d = dist
    who = -1
    wi = 0
    if best_d == np.inf:
        return who
    limit = best_d + TIE_RTOL * (1.0 + best_d)
    for i in range(s, e):
        t = order[i]
        if near[puid[pid[t]]] == 0:
            continue
        dist = abs(mdn[i - s] - dn_mu) / dn_sd + abs(mtv[i - s] - tm_mu) / tm_sd
        if dist <= limit and (who < 0 or _outranks(t, i - s, who, wi, usig, puid, pid, fro2, mdn, mtv)):
            who = t
            wi = i - s
    return who


@njit_cached
def _member_sums(order, s, e, dens, top, fro2, nnz, col_block, geo, values, sum_fro2, mdn, mtv):
    """A cluster's members ``order[s:e]``, in tile order: their density and top share into
    ``mdn`` / ``mtv`` and the sums ``Σ dens, Σ fro2, Σ dens, Σ dens², Σ top, Σ top²`` (the density
    twice: the mean density and the representative's statistics, as before). The values come from
    ``dens`` / ``top`` (``geo[0] == 0``) or from the eager pass's arrays: ``nnz``, ``col_block``,
    ``fro2`` and ``top`` of tiles of several entries, ``geo = (1, last_rb_start, T, h_last, w_last,
    j_last)`` (:func:`akfviz.analysis.scanpass.tile_density`, :func:`~akfviz.analysis.scanpass.tile_top`).
    Its own function: inlined into the statistics kernel, the loop ran 4× slower (register spills)."""
    compact = geo[0] != 0
    last_rb_start, T, h_last, w_last, j_last = geo[1], geo[2], geo[3], geo[4], geo[5]
    ds = 0.0
    fs = 0.0
    dn_sum = 0.0
    dn_sq = 0.0
    tm_sum = 0.0
    tm_sq = 0.0
    if compact:   # analyze's case (``fro2`` always given: one-entry tiles' top share reads it); its
        # own loop: with the other case's branches in the same loop it took 2×
        for i in range(s, e):
            t = order[i]
            dn = tile_density(t, nnz, col_block, last_rb_start, T, h_last, w_last, j_last)
            tv = tile_top(t, nnz, fro2, top)
            mdn[i - s] = dn
            mtv[i - s] = tv
            ds += dn
            fs += fro2[t]
            dn_sum += dn
            dn_sq += dn * dn
            tm_sum += tv
            tm_sq += tv * tv
        return ds, fs, dn_sum, dn_sq, tm_sum, tm_sq
    for i in range(s, e):   # per-tile arrays (lsh.cluster_tiles)
        t = order[i]
        dn = dens[t]
        tv = top[t] if values else 0.0
        mdn[i - s] = dn
        mtv[i - s] = tv
        ds += dn
        if sum_fro2:
            fs += fro2[t]
        if values:
            dn_sum += dn
            dn_sq += dn * dn
            tm_sum += tv
            tm_sq += tv * tv
    return ds, fs, dn_sum, dn_sq, tm_sum, tm_sq


@njit_cached
def _stats_range(c0, c1, clist, cptr, cpp, cpairs, puid, pcount, pfirst, pdens, ptm, puniform,
                 order, pid, usig, seed, jpairs, dens, top, fro2, nnz, col_block, geo, rep, jmean, dsum, fsum,
                 mark, firstt,
                 dlist, near):
    """Medoid, representative, Jaccard mean and density sum of clusters ``clist[c0:c1]`` (rules in
    :func:`akfviz.analysis.lsh.cluster_tiles`, Notes), each cluster's distinct signatures and
    their multiplicities read from its pairs. Without densities and top shares (``dens`` /
    ``top`` empty) the representative is the medoid's first tile and the density sums stay 0."""
    ccost = np.empty(129, dtype=np.float64)
    mdn_buf = np.empty(0, dtype=np.float64)   # members' densities and top shares, reused (grown)
    mtv_buf = np.empty(0, dtype=np.float64)
    cid = np.empty(129, dtype=np.int64)
    compact = geo[0] != 0   # densities and top shares from the eager pass's arrays (:func:`_member_values`)
    has_dens = compact or dens.shape[0] > 0
    sum_fro2 = fro2.shape[0] > 0
    values = compact or (has_dens and top.shape[0] > 0)   # densities and top shares: the typical member
    for ii in range(c0, c1):   # a cluster's results depend on nothing but the cluster (seeded by its id)
        cl = clist[ii]
        s = cptr[cl]
        e = cptr[cl + 1]
        m = e - s
        d = 0
        uniform = True
        p0 = cpairs[cpp[cl]]
        for q in range(cpp[cl], cpp[cl + 1]):
            p = cpairs[q]
            u = puid[p]
            dlist[d] = u
            firstt[u] = pfirst[p]
            mark[u] = pcount[p]
            d += 1
            uniform = uniform and puniform[p] and pdens[p] == pdens[p0] and ptm[p] == ptm[p0]
        dens0 = pdens[p0]
        fast = not values or uniform and _exact_repeat(dens0, m) and _exact_repeat(dens0 * dens0, m) \
            and _exact_repeat(ptm[p0], m) and _exact_repeat(ptm[p0] * ptm[p0], m)
        ds = fs = dn_sum = dn_sq = tm_sum = tm_sq = 0.0
        if not has_dens or (fast and values):
            if has_dens:
                ds = m * dens0   # = the left-to-right sum of the m equal densities (exact)
            if sum_fro2:
                fs = _fro2_sum(order, s, e, fro2)
        else:
            # the members' values, once (read again below for the typical member): in tile order
            if m > mdn_buf.shape[0]:
                mdn_buf = np.empty(max(m, 2 * mdn_buf.shape[0]), dtype=np.float64)
                mtv_buf = np.empty(max(m, 2 * mtv_buf.shape[0]), dtype=np.float64)
            mdn = mdn_buf[:m]
            mtv = mtv_buf[:m]
            ds, fs, dn_sum, dn_sq, tm_sum, tm_sq = _member_sums(order, s, e, dens, top, fro2, nnz, col_block,
                                                                geo, values, sum_fro2, mdn, mtv)
        state = _mix64(seed ^ _mix64(np.uint64(cl) + np.uint64(0x632BE59BD9B4E019)))
        best = -1
        best_cost = np.inf
        nc = 0
        scale = 0.0
        if d <= 128:
            scale = m
            for i in range(d):
                si = usig[dlist[i]]
                cost = 0.0
                for j in range(d):
                    cost += mark[dlist[j]] * (1.0 - _jaccard(si, usig[dlist[j]]))
                ccost[nc] = cost
                cid[nc] = dlist[i]
                nc += 1
                if cost < best_cost:
                    best_cost = cost
            # ties (to rounding: the sums run in first-appearance order) to the smaller signature
            limit = best_cost + TIE_RTOL * (1.0 + best_cost)
            for k in range(nc):
                if ccost[k] <= limit and (best < 0 or usig[cid[k]] < usig[best]):
                    best = cid[k]
        else:
            scale = 256.0
            top_u = dlist[0]
            for i in range(d):
                if mark[dlist[i]] > mark[top_u]:
                    top_u = dlist[i]
            others = np.empty(256, dtype=np.uint64)
            for j in range(256):
                state, q = _rand_below(state, m)
                others[j] = usig[puid[pid[order[s + q]]]]
            for i in range(65):
                if i == 0:
                    cand = top_u
                else:
                    state, q = _rand_below(state, d)
                    cand = dlist[q]
                si = usig[cand]
                cost = 0.0
                for j in range(256):
                    cost += 1.0 - _jaccard(si, others[j])
                ccost[nc] = cost
                cid[nc] = cand
                nc += 1
                if cost < best_cost or (cost == best_cost and firstt[cand] < firstt[best]):
                    best_cost = cost
                    best = cand
        rep[cl] = firstt[best]
        if values and m > 1 and not fast:
            # the near-medoid tile nearest the members' mean density and top share (lsh.py)
            for k in range(nc):
                if ccost[k] <= best_cost + NEAR_MEDOID * scale:
                    near[cid[k]] = 1
            dn_mu = dn_sum / m
            tm_mu = tm_sum / m
            dn_sd = np.sqrt(max(dn_sq / m - dn_mu * dn_mu, 0.0))
            tm_sd = np.sqrt(max(tm_sq / m - tm_mu * tm_mu, 0.0))
            if dn_sd <= 1e-6 * abs(dn_mu):
                dn_sd = np.inf
            if tm_sd <= 1e-6 * abs(tm_mu):
                tm_sd = np.inf
            if not (dn_sd == np.inf and tm_sd == np.inf):
                who = _typical_member(order, s, e, pid, puid, near, mdn, mtv, dn_mu, dn_sd, tm_mu, tm_sd,
                                       usig, fro2)
                if who >= 0:
                    rep[cl] = who
            for k in range(nc):
                near[cid[k]] = 0
        dsum[cl] = ds
        if sum_fro2:
            fsum[cl] = fs
        if m == 1:
            jmean[cl] = 1.0
        elif d * (d + 1) // 2 <= jpairs or m * (m - 1) // 2 <= jpairs:
            tot = 0.0
            for i in range(d):
                si = usig[dlist[i]]
                ni = mark[dlist[i]]
                tot += ni * (ni - 1.0)
                for j in range(i + 1, d):
                    tot += 2.0 * ni * mark[dlist[j]] * _jaccard(si, usig[dlist[j]])
            jmean[cl] = tot / (m * (m - 1.0))
        else:
            tot = 0.0
            for q in range(jpairs):
                state, i = _rand_below(state, m)
                state, j = _rand_below(state, m - 1)
                if j >= i:
                    j += 1
                tot += _jaccard(usig[puid[pid[order[s + i]]]], usig[puid[pid[order[s + j]]]])
            jmean[cl] = tot / jpairs
        for i in range(d):
            mark[dlist[i]] = 0


@njit_parallel
def _stats_chunks(cbounds, clist, cptr, cpp, cpairs, puid, pcount, pfirst, pdens, ptm, puniform,
                  order, pid, usig, seed, jpairs, dens, top, fro2, nnz, col_block, geo, rep, jmean, dsum, fsum):
    """:func:`_stats_range` on the clusters ``clist[cbounds[ch]:cbounds[ch + 1]]`` of each chunk
    (``prange``)."""
    U = usig.shape[0]
    for ch in numba.prange(cbounds.shape[0] - 1):
        mark = np.zeros(U, dtype=np.int64)
        firstt = np.empty(U, dtype=np.int64)
        dlist = np.empty(U, dtype=np.int64)
        near = np.zeros(U, dtype=np.int8)
        _stats_range(cbounds[ch], cbounds[ch + 1], clist, cptr, cpp, cpairs, puid, pcount, pfirst, pdens, ptm,
                     puniform, order, pid, usig, seed, jpairs, dens, top, fro2, nnz, col_block, geo, rep, jmean,
                     dsum, fsum,
                     mark, firstt, dlist, near)


_stats_chunks_serial = serial_twin(_stats_chunks)


#: Estimated cost of a member of a cluster whose members are read one by one (their densities and
#: top shares: a cache line per array and member, at random), in members of a cluster whose pairs
#: are all alike (one sequential sum): ≈ 30 on the 1M-nonzero uniform matrix of the benchmarks
#: (44,370 members read: 1.1–1.4 ms; 902,876 members summed: 0.9–1.0 ms).
MEMBER_READ_COST = 30


def stats_schedule(cptr, cpp, cpairs, pairs, workers):
    """Clusters per worker for the statistics pass: ``(cbounds, clist)``, worker ``w`` takes the
    clusters ``clist[cbounds[w]:cbounds[w + 1]]``. A cluster's cost is estimated as its members,
    times :data:`MEMBER_READ_COST` unless its pairs are all alike (uniform, with the first pair's
    density and top share: the members are then summed, not read one by one). The costliest
    clusters go one by one to the least loaded worker (longest processing time first); the rest,
    in id order, fill the workers up to an equal share. Only the speed depends on this: each
    cluster's results depend on the cluster alone."""
    n_clusters = cptr.shape[0] - 1
    size = np.diff(cptr).astype(np.float64)
    first = cpairs[cpp[:-1]]                                   # each cluster's first pair
    cl_of = np.repeat(np.arange(n_clusters), np.diff(cpp))     # cluster of cpairs[q]
    alike = (pairs["uniform"][cpairs].astype(bool) & (pairs["dens"][cpairs] == pairs["dens"][first][cl_of])
             & (pairs["tm"][cpairs] == pairs["tm"][first][cl_of]))
    uniform = np.bincount(cl_of, weights=(~alike).astype(np.float64), minlength=n_clusters) == 0
    cost = size * np.where(uniform, 1.0, MEMBER_READ_COST) + np.diff(cpp)
    k = min(n_clusters, 8 * workers)
    top = np.argpartition(-cost, k - 1)[:k] if k < n_clusters else np.arange(n_clusters)
    heavy = top[np.lexsort((top, -cost[top]))]                 # costliest first, ties by id
    is_heavy = np.zeros(n_clusters, dtype=bool)
    is_heavy[heavy] = True
    load = np.zeros(workers)
    owner = np.empty(heavy.size, dtype=np.int64)
    for i, c in enumerate(heavy):
        owner[i] = np.argmin(load)
        load[owner[i]] += cost[c]
    rest = np.flatnonzero(~is_heavy)
    room = np.maximum(cost.sum() / workers - load, 0.0)
    cut = np.searchsorted(np.cumsum(cost[rest]), np.cumsum(room)[:-1], side="left")
    parts = [np.concatenate([heavy[owner == w], part]) for w, part in enumerate(np.split(rest, cut))]
    clist = np.concatenate(parts).astype(np.int64)
    cbounds = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
    return cbounds, clist


def cluster_scan(scan, cfg) -> dict:
    """Cluster the tiles of an eager pass (see the module docstring).

    Parameters
    ----------
    scan : akfviz.analysis.scanpass.ScanResult
        Its ``pid`` is rewritten in place with the global pair ids.
    cfg : LSHConfig

    Returns
    -------
    dict
        As :func:`cluster_pairs`.
    """
    t0 = time.perf_counter()
    pairs, goff, gid = merge_pairs(scan)
    n_brows = scan.rb_ptr.shape[0] - 1
    n_rows, n_cols = scan.shape
    T = scan.tile
    geo = np.array([1, scan.rb_ptr[max(n_brows - 1, 0)], T, n_rows - (n_brows - 1) * T,
                    n_cols - (-(-n_cols // T) - 1) * T, -(-n_cols // T) - 1], dtype=np.int64)
    return cluster_pairs(pairs, goff, gid, scan.pid, scan.rb_ptr[scan.bounds], cfg, np.zeros(0), scan.top,
                         scan.fro2, t_start=t0, compact=(scan.nnz, scan.bj, geo))


def cluster_pairs(pairs, goff, gid, pid, tbounds, cfg, dens, top, fro2=None, t_start=None,
                  compact=None) -> dict:
    """LSH clusters of tiles given their (signature, density bin) pairs.

    Parameters
    ----------
    pairs : dict
        As :func:`merge_pairs` returns it (``sig``, ``bin``, ``first``, ``dens``, ``tm``,
        ``uniform``).
    goff, gid, pid
        Tile ``t`` of chunk ``ch`` (tiles ``tbounds[ch]:tbounds[ch + 1]``) is pair
        ``gid[goff[ch] + pid[t]]``; ``pid`` is rewritten in place with that.
    cfg : LSHConfig
    dens, top : float64 (n,) or empty
        Tiles' densities (empty: no density sums) and top-q mass shares (either empty: the
        representative is the medoid's first tile).
    fro2 : float64 (n,), optional
        Tiles' ``Σ v²``: summed per cluster in tile order (``fro2_sum``, what ``np.bincount`` over
        the tiles gives, bit for bit).
    compact : (nnz, col_block, geo), optional
        Densities and top shares from the eager pass's arrays instead of ``dens`` / ``top``
        (``top`` then holds the shares of tiles of several entries: :func:`_member_values`).
    t_start : float, optional
        ``time.perf_counter()`` when the pairs began to be made (the ``pairs`` timing).

    Returns
    -------
    dict
        ``n_clusters``; ``order`` / ``cptr`` (tiles grouped by cluster); ``representative``,
        ``jaccard_mean``, ``density_sum``, ``fro2_sum`` (zeros without ``fro2``) and ``density_bin``
        per cluster; ``bin_min``,
        ``bin_counts``; ``pairs`` (the pair table with ``count``, ``uid`` and ``cluster`` per
        pair: a tile's cluster is ``pairs["cluster"][pid[t]]``); ``unique_signatures``,
        ``minhash``, ``component``; ``timings``.
    """
    timings = {}
    t0 = time.perf_counter() if t_start is None else t_start
    n = int(pid.shape[0])
    psig, pbin = pairs["sig"], pairs["bin"]
    puid, ufirst = _first_appearance(psig)
    usig = psig[ufirst]
    t1 = time.perf_counter()
    check_memory(8 * usig.size * cfg.num_hashes + 16 * usig.size,
                 f"The MinHash values of {usig.size:,} distinct tile outlines × {cfg.num_hashes} hashes",
                 "Use fewer hashes (lsh num_hashes), a coarser grid (lsh grid) or a larger tile side T.")
    mh = minhash_signatures(usig, cfg.num_hashes, cfg.seed, universe=cfg.grid * cfg.grid)
    t2 = time.perf_counter()
    n_pairs = psig.size
    order = np.empty(n, dtype=np.int64)
    if fro2 is None:
        fro2 = np.empty(0, np.float64)
    if n:
        root = _band_components(mh, cfg.bands)
        bmin = int(pbin.min())
        nbins = int(pbin.max()) - bmin + 1
        keys = (root[puid] * nbins + (pbin - bmin)).astype(np.uint64)
        pcluster, _ = _first_appearance(keys)
        n_clusters = int(pcluster.max()) + 1
        n_chunks = tbounds.shape[0] - 1
        groups = min(n_chunks, numba.get_num_threads()) if n_chunks > 1 else 1
        par = groups > 1
        # per-group count rows while they are small beside the tiles; else one row, serially
        if par and groups * (n_pairs + n_clusters) > n:
            par, groups = False, 1
        gb = (np.arange(groups + 1, dtype=np.int64) * n_chunks) // groups
        pcount_g = np.zeros((groups, n_pairs + 8), np.int64)  # rows padded: no shared cache line
        (_gather_groups if par else _gather_groups_serial)(gb, tbounds, goff, gid, pid, pcount_g)
        pcount = np.empty(n_pairs, np.int64)
        cptr = np.zeros(n_clusters + 1, np.int64)
        pos = np.zeros((groups, n_clusters + 8), np.int64)  # padded as pcount_g
        bin_counts = np.zeros(nbins, np.int64)
        cpairs = np.empty(n_pairs, np.int64)
        cpp = np.zeros(n_clusters + 1, np.int64)
        _count_tables(pcount_g, pcluster, pbin, bmin, pcount, cptr, pos, bin_counts, cpairs, cpp)
        (_scatter_groups if par else _scatter_groups_serial)(gb, tbounds, pid, pcluster, pos, order)
    else:
        root = np.empty(0, np.int64)
        pcluster = np.empty(0, np.int64)
        pcount = np.empty(0, np.int64)
        n_clusters = 0
        cptr = np.zeros(1, np.int64)
        bmin = 0
        bin_counts = np.empty(0, np.int64)
    t3 = time.perf_counter()
    rep = np.empty(n_clusters, dtype=np.int64)
    jmean = np.empty(n_clusters, dtype=np.float64)
    dsum = np.zeros(n_clusters, dtype=np.float64)
    fsum = np.zeros(n_clusters, dtype=np.float64)
    cbin = np.empty(n_clusters, dtype=np.int64)
    if n_clusters:
        cbin[:] = pbin[cpairs[cpp[:-1]]]
        seed = np.uint64(np.random.default_rng(cfg.seed).integers(0, 2**63, dtype=np.int64))
        args = (cptr, cpp, cpairs, puid, pcount, pairs["first"], pairs["dens"], pairs["tm"],
                pairs["uniform"], order, pid, usig, seed, int(cfg.jaccard_pairs),
                np.ascontiguousarray(dens, dtype=np.float64), np.ascontiguousarray(top, dtype=np.float64),
                np.ascontiguousarray(fro2, dtype=np.float64), *(compact if compact is not None else (
                    np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(6, np.int64))), rep, jmean, dsum, fsum)
        threads = numba.get_num_threads()
        if n_clusters > 1 and threads > 1 and n >= 100_000:
            cb, clist = stats_schedule(cptr, cpp, cpairs, pairs, threads)
            _stats_chunks(cb, clist, *args)
        else:
            _stats_chunks_serial(np.array([0, n_clusters], dtype=np.int64), np.arange(n_clusters), *args)
    t4 = time.perf_counter()
    pairs = dict(pairs, count=pcount, uid=puid, cluster=pcluster)
    timings.update(pairs=t1 - t0, minhash=t2 - t1, lsh=t3 - t2, medoid_jaccard=t4 - t3)
    return dict(n_clusters=n_clusters, order=order, cptr=cptr,
                representative=rep, jaccard_mean=jmean, density_sum=dsum, fro2_sum=fsum, density_bin=cbin,
                bin_min=bmin, bin_counts=bin_counts, pairs=pairs, unique_signatures=usig,
                minhash=mh, component=root, timings=timings)
