"""Slow, obvious references for the analysis kernels (plain Python / numpy)."""
import math

import numpy as np

P61 = (1 << 61) - 1


def naive_tiles(dense, T):
    """[(bi, bj, h, w, r, c, v)] for every nonempty tile, by slicing the dense matrix."""
    n, m = dense.shape
    out = []
    for bi in range(-(-n // T)):
        for bj in range(-(-m // T)):
            blk = dense[bi * T:(bi + 1) * T, bj * T:(bj + 1) * T]
            r, c = np.nonzero(blk)  # row-major: ordered by (r, c)
            if r.size:
                out.append((bi, bj, blk.shape[0], blk.shape[1], r, c, blk[r, c]))
    return out


def naive_features(blk, g=8, top_q=0.1, bpd=2):
    """Every feature of one dense tile, from its definition."""
    h, w = blk.shape
    r, c = np.nonzero(blk)
    v = blk[r, c]
    k = len(v)
    nm = {}
    for M in (4, 8):
        best = 0
        for i in range(h):
            for j0 in range(0, w, M):
                best = max(best, int(np.count_nonzero(blk[i, j0:j0 + M])))
        nm[M] = best
    sq = sorted((x * x for x in v), reverse=True)
    ntop = max(1, int(math.floor(top_q * k + 1e-9)))
    fro2 = float(np.sum(v * v))
    sig = 0
    for rr, cc in zip(r, c):
        sig |= 1 << ((int(rr) * g // h) * g + (int(cc) * g // w))
    dens = k / (h * w)
    return {
        "nnz": k,
        "density": dens,
        "rows_nonempty": int(np.count_nonzero(blk.any(axis=1))),
        "cols_nonempty": int(np.count_nonzero(blk.any(axis=0))),
        "max_row_nnz": int(np.count_nonzero(blk, axis=1).max()),
        "max_col_nnz": int(np.count_nonzero(blk, axis=0).max()),
        "n_diagonals": len(set((c - r).tolist())),
        "bandwidth": int(np.abs(c - r).max()),
        "nm4": nm[4],
        "nm8": nm[8],
        "fro2": fro2,
        "top_mass": sum(sq[:ntop]) / fro2,
        "signature": sig,
        "density_bin": int(math.floor(math.log10(dens) * bpd)),
    }


def naive_minhash(bits, num_hashes, seed):
    """MinHash of the set of set bits, hash family (a·x + b) mod (2^61 − 1), Python ints."""
    rng = np.random.default_rng(seed)
    a = [int(x) for x in rng.integers(1, P61, size=num_hashes, dtype=np.int64)]
    b = [int(x) for x in rng.integers(0, P61, size=num_hashes, dtype=np.int64)]
    elems = [x for x in range(64) if (int(bits) >> x) & 1]
    return [min((a[k] * x + b[k]) % P61 for x in elems) for k in range(num_hashes)]


def jaccard(a, b):
    a, b = int(a), int(b)
    u = bin(a | b).count("1")
    return 1.0 if u == 0 else bin(a & b).count("1") / u


def naive_components(mh, bands):
    """Components of 'equal on all rows of any band' by repeated pairwise merging."""
    U, K = mh.shape
    r = K // bands
    label = list(range(U))
    changed = True
    while changed:
        changed = False
        for i in range(U):
            for j in range(i + 1, U):
                if label[i] != label[j] and any(
                        np.array_equal(mh[i, b * r:(b + 1) * r], mh[j, b * r:(b + 1) * r])
                        for b in range(bands)):
                    lo, hi = min(label[i], label[j]), max(label[i], label[j])
                    label = [lo if x == hi else x for x in label]
                    changed = True
    return np.array(label)


def naive_cluster_stats(sig, dens, top, cluster, n_clusters, near=0.05, fro2=None, tie=1e-9):
    """Representative, within-cluster Jaccard and density sum of every cluster, written the slow
    way (akf-spec §2; rules in akfviz.analysis.lsh.cluster_tiles, Notes), for clusters of at most
    128 distinct signatures whose Jaccard mean is exact (d(d+1)/2 ≤ 256 or m(m−1)/2 ≤ 256).

    The medoid minimises Σ_j n_j (1 − J(S_i, S_j)) over the distinct signatures (costs within
    ``tie · (1 + least)`` tie: the smaller signature); near-medoids are within ``near · m`` of it; the representative is the near-medoid
    tile nearest the members' mean density and top share in standard deviations (a feature
    with a spread under a millionth of its mean does not count; both: the medoid's first
    tile); distances within ``tie · (1 + least)`` of the least tie, and tied tiles go by content:
    the larger ``fro2`` (when given), the smaller signature, density, top share, then tile
    order. Sums run over the members in tile order, as the kernel's do."""
    reps, jms, dsums = [], [], []
    for c in range(n_clusters):
        members = [t for t in range(len(cluster)) if cluster[t] == c]
        m = len(members)
        distinct, count, first = [], {}, {}
        for t in members:
            s = int(sig[t])
            if s not in count:
                distinct.append(s)
                count[s] = 0
                first[s] = t
            count[s] += 1
        costs = []
        for si in distinct:
            cost = 0.0
            for sj in distinct:
                cost += count[sj] * (1.0 - jaccard(si, sj))
            costs.append(cost)
        least = min(costs)
        best = min((i for i in range(len(distinct)) if costs[i] <= least + tie * (1.0 + least)),
                   key=lambda i: distinct[i])
        rep = first[distinct[best]]
        ds = 0.0
        dn_sum = dn_sq = tm_sum = tm_sq = 0.0
        for t in members:
            ds += dens[t]
            dn_sum += dens[t]
            dn_sq += dens[t] * dens[t]
            tm_sum += top[t]
            tm_sq += top[t] * top[t]
        if m > 1:
            nearset = {distinct[i] for i in range(len(distinct)) if costs[i] <= least + near * m}
            dn_mu, tm_mu = dn_sum / m, tm_sum / m
            dn_sd = max(dn_sq / m - dn_mu * dn_mu, 0.0) ** 0.5
            tm_sd = max(tm_sq / m - tm_mu * tm_mu, 0.0) ** 0.5
            dn_sd = float("inf") if dn_sd <= 1e-6 * abs(dn_mu) else dn_sd
            tm_sd = float("inf") if tm_sd <= 1e-6 * abs(tm_mu) else tm_sd
            if not (dn_sd == float("inf") and tm_sd == float("inf")):
                cand = [t for t in members if int(sig[t]) in nearset]
                dist = {t: abs(dens[t] - dn_mu) / dn_sd + abs(top[t] - tm_mu) / tm_sd for t in cand}
                least = min(dist.values())
                tied = [t for t in cand if dist[t] <= least + tie * (1.0 + least)]
                rep = min(tied, key=lambda t: (-fro2[t] if fro2 is not None else 0.0, int(sig[t]), dens[t],
                                               top[t], t))
        if m == 1:
            jm = 1.0
        else:
            tot = 0.0
            for i, si in enumerate(distinct):
                ni = count[si]
                tot += ni * (ni - 1.0)
                for sj in distinct[i + 1:]:
                    tot += 2.0 * ni * count[sj] * jaccard(si, sj)
            jm = tot / (m * (m - 1.0))
        reps.append(rep)
        jms.append(jm)
        dsums.append(ds)
    return np.array(reps, dtype=np.int64), np.array(jms), np.array(dsums)
