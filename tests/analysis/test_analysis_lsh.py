"""MinHash, LSH clustering and LSHConfig against references (akf-spec §2)."""
import numpy as np
import pytest

import akfviz
from akfviz.analysis.lsh import LSHConfig, _band_components, _first_appearance, cluster_tiles
from akfviz.analysis.minhash import minhash_signatures
from akfviz.errors import InputError
from analysis_naive import jaccard, naive_components, naive_minhash


def _random_sigs(n, seed, p=0.3):
    rng = np.random.default_rng(seed)
    bits = rng.random((n, 64)) < p
    bits[:, 0] |= ~bits.any(axis=1)  # never empty
    return (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)


@pytest.mark.parametrize("seed", [0, 7])
def test_minhash_matches_plain_python(seed):
    sigs = np.concatenate([_random_sigs(40, seed), np.array([1, 1 << 63, 2**64 - 1], dtype=np.uint64)])
    mh = minhash_signatures(sigs, num_hashes=16, seed=seed)
    assert mh.dtype == np.uint64 and mh.shape == (43, 16)
    for i, s in enumerate(sigs):
        assert [int(x) for x in mh[i]] == naive_minhash(s, 16, seed)


@pytest.mark.parametrize("p", [0.02, 0.1, 0.5, 0.95])
def test_minhash_both_paths_match_plain_python(p):
    # sparse sets take the per-bit minimum, dense ones the walk in ascending-hash order
    sigs = _random_sigs(60, 11, p=p)
    mh = minhash_signatures(sigs, num_hashes=32, seed=5)
    for i, s in enumerate(sigs):
        assert [int(x) for x in mh[i]] == naive_minhash(s, 32, 5)


def test_minhash_small_universe():
    # g = 4: 16 cells; the ascending-hash walk only visits elements of the universe
    rng = np.random.default_rng(2)
    sigs = rng.integers(1, 1 << 16, 200).astype(np.uint64)
    mh = minhash_signatures(sigs, num_hashes=8, seed=3, universe=16)
    from akfviz.analysis.minhash import hash_table
    H = hash_table(8, 16, 3)
    for i, s in enumerate(sigs):
        members = [x for x in range(16) if (int(s) >> x) & 1]
        assert [int(v) for v in mh[i]] == [min(int(H[k, x]) for x in members) for k in range(8)]


def test_minhash_seed_changes_values():
    sigs = _random_sigs(10, 1)
    a = minhash_signatures(sigs, 8, seed=0)
    assert np.array_equal(a, minhash_signatures(sigs, 8, seed=0))
    assert not np.array_equal(a, minhash_signatures(sigs, 8, seed=1))


def test_minhash_estimates_jaccard():
    # P[m_k(S) = m_k(S')] = J(S, S'): over many pairs the estimate is unbiased
    rng = np.random.default_rng(3)
    base = _random_sigs(400, 4, p=0.4)
    flips = _random_sigs(400, 5, p=0.15)
    other = base ^ flips
    other[other == 0] = 1
    K = 64
    ma = minhash_signatures(base, K, seed=9)
    mb = minhash_signatures(other, K, seed=9)
    est = (ma == mb).mean(axis=1)
    exact = np.array([jaccard(a, b) for a, b in zip(base, other)])
    err = est - exact
    assert abs(err.mean()) < 0.02
    # the per-pair error has the binomial spread sqrt(J(1-J)/K)
    assert np.sqrt(np.mean(err**2)) < 1.5 * np.sqrt(np.mean(exact * (1 - exact) / K)) + 1e-3
    assert rng is not None


def test_first_appearance():
    keys = np.array([5, 3, 5, 9, 3, 3, 2**64 - 1, 0], dtype=np.uint64)
    ids, first = _first_appearance(keys)
    assert ids.tolist() == [0, 1, 0, 2, 1, 1, 3, 4]
    assert first.tolist() == [0, 1, 3, 6, 7]
    big = np.random.default_rng(0).integers(0, 50, 5000).astype(np.uint64)
    ids, first = _first_appearance(big)
    _, ref_first = np.unique(big, return_index=True)
    assert sorted(first.tolist()) == sorted(ref_first.tolist())
    np.testing.assert_array_equal(big[first][ids], big)


def test_band_components_match_reference():
    rng = np.random.default_rng(2)
    # small alphabet so that band collisions are frequent
    mh = rng.integers(0, 3, size=(60, 8)).astype(np.uint64)
    root = _band_components(mh, 4)
    ref = naive_components(mh, 4)
    np.testing.assert_array_equal(root, ref)


def _components_by_dict(mh, bands):
    """Reference: rows joined when one band's values are equal, grouped by a dict of band tuples."""
    U, K = mh.shape
    r = K // bands
    parent = list(range(U))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a

    for b in range(bands):
        first = {}
        for u in range(U):
            key = tuple(int(x) for x in mh[u, b * r:(b + 1) * r])
            if key in first:
                ra, rb = find(u), find(first[key])
                parent[max(ra, rb)] = min(ra, rb)
            else:
                first[key] = u
    return np.array([find(u) for u in range(U)])


@pytest.mark.parametrize("K, bands", [(8, 2), (12, 3), (16, 4)])
def test_band_components_compare_whole_bands(K, bands):
    # rows alike in all but the last value of each band: equal hashes are rare, but rows meeting in
    # the same probe chain share their first r - 1 values one time in eight; they must not be joined
    rng = np.random.default_rng(K)
    U, r = 3000, K // bands
    mh = rng.integers(0, 2, size=(U, K)).astype(np.uint64)
    mh[:, r - 1::r] = rng.integers(0, 5000, size=(U, bands)).astype(np.uint64)
    mh[100:110] = mh[7]                              # a few true collisions too
    mh[200, :r] = mh[3, :r]
    root = _band_components(mh, bands)
    ref = _components_by_dict(mh, bands)
    np.testing.assert_array_equal(root, ref)
    assert (root[100:110] == root[7]).all() and root[200] == root[3]


def test_sampled_jaccard_never_pairs_a_tile_with_itself():
    # three distinct, similar outlines in one cluster, one sampled pair: J of any two is below 1,
    # so a mean of 1 can only come from a tile paired with itself
    sigs = np.array([(1 << 40) - 1, ((1 << 40) - 1) ^ 1, ((1 << 40) - 1) ^ 2], dtype=np.uint64)
    dbin = np.full(3, -1, np.int64)
    seen = set()
    for seed in range(60):
        cl = cluster_tiles(sigs, dbin, LSHConfig(num_hashes=32, bands=32, seed=seed, jaccard_pairs=1))
        assert cl["n_clusters"] == 1
        j = float(cl["jaccard_mean"][0])
        assert j < 1.0, seed
        seen.add(round(j, 12))
    assert len(seen) >= 2                                # the sampled pair changes with the seed


def test_the_lsh_seed_changes_the_sampled_jaccard_and_medoid_samples():
    # one cluster of > 128 distinct outlines (sampled medoid) and more pairs than jaccard_pairs
    rng = np.random.default_rng(9)
    core = np.uint64((1 << 40) - 1)
    sigs = core | (rng.integers(0, 1 << 20, 400).astype(np.uint64) << np.uint64(40))
    dbin = np.full(sigs.size, -1, np.int64)
    means = set()
    for seed in range(4):
        cl = cluster_tiles(sigs, dbin, LSHConfig(num_hashes=32, bands=32, seed=seed, jaccard_pairs=50))
        assert cl["n_clusters"] == 1
        means.add(float(cl["jaccard_mean"][0]))
        again = cluster_tiles(sigs, dbin, LSHConfig(num_hashes=32, bands=32, seed=seed, jaccard_pairs=50))
        assert float(again["jaccard_mean"][0]) == float(cl["jaccard_mean"][0])   # same seed, same result
    assert len(means) == 4


def test_identical_signatures_share_a_cluster_and_density_split():
    sigs = np.array([0b1011, 1 << 40, 0b1011, 0b1011, 1 << 40, 0b1011], dtype=np.uint64)
    dbin = np.array([-2, -2, -2, -1, -2, -2], dtype=np.int64)
    cl = cluster_tiles(sigs, dbin, LSHConfig())
    c = cl["cluster"]
    assert c.tolist() == [0, 1, 0, 2, 1, 0]  # first-appearance numbering, split by bin
    assert cl["n_clusters"] == 3
    assert cl["jaccard_mean"].tolist() == [1.0, 1.0, 1.0]
    assert cl["representative"].tolist() == [0, 1, 3]


def test_clusters_pure_in_density_bin_and_reps_are_medoids():
    rng = np.random.default_rng(8)
    base = _random_sigs(6, 1, p=0.5)
    # noisy copies of a few base signatures: clusters with several distinct signatures
    sigs = base[rng.integers(0, 6, 300)] ^ (_random_sigs(300, 2, p=0.02) & (rng.random(300) < 0.3).astype(np.uint64) * np.uint64(2**64 - 1))
    sigs[sigs == 0] = 1
    dbin = rng.integers(-3, 0, 300)
    cfg = LSHConfig(jaccard_pairs=100_000)
    cl = cluster_tiles(sigs, dbin, cfg)
    c = cl["cluster"]
    firsts = [int(np.flatnonzero(c == k)[0]) for k in range(cl["n_clusters"])]
    assert firsts == sorted(firsts) and c[0] == 0
    for k in range(cl["n_clusters"]):
        mem = np.flatnonzero(c == k)
        assert len(set(dbin[mem].tolist())) == 1
        np.testing.assert_array_equal(cl["order"][cl["cptr"][k]:cl["cptr"][k + 1]], mem)
        # medoid: exact (few distinct signatures per cluster)
        cost = [sum(1 - jaccard(sigs[i], sigs[j]) for j in mem) for i in mem]
        rep = cl["representative"][k]
        assert rep in mem
        assert sum(1 - jaccard(sigs[rep], sigs[j]) for j in mem) == pytest.approx(min(cost))
        # Jaccard mean: all pairs (jaccard_pairs is large)
        if len(mem) > 1:
            pairs = [jaccard(sigs[i], sigs[j]) for a, i in enumerate(mem) for j in mem[a + 1:]]
            assert cl["jaccard_mean"][k] == pytest.approx(np.mean(pairs), rel=1e-12)
        else:
            assert cl["jaccard_mean"][k] == 1.0
    # tiles in different LSH components never share a cluster
    comp = cl["component"][cl["tile_unique"]]
    for k in range(cl["n_clusters"]):
        assert len(set(comp[c == k].tolist())) == 1


def test_sampled_jaccard_and_medoid_on_big_diverse_cluster():
    # one LSH component forced by a shared dominant cell pattern: many distinct signatures
    rng = np.random.default_rng(4)
    n = 2000
    core = np.uint64((1 << 40) - 1)
    extra = rng.integers(0, 1 << 20, n).astype(np.uint64) << np.uint64(40)
    sigs = core | extra
    dbin = np.full(n, -1, dtype=np.int64)
    cfg = LSHConfig(num_hashes=32, bands=32, jaccard_pairs=2000, seed=5)
    cl = cluster_tiles(sigs, dbin, cfg)
    assert cl["n_clusters"] == 1
    exact_pairs = rng.integers(0, n, (4000, 2))
    exact_pairs = exact_pairs[exact_pairs[:, 0] != exact_pairs[:, 1]]
    ref = np.mean([jaccard(sigs[i], sigs[j]) for i, j in exact_pairs])
    assert cl["jaccard_mean"][0] == pytest.approx(ref, abs=0.01)
    # the sampled medoid is close to the best tile
    costs = np.array([np.mean([1 - jaccard(s, sigs[j]) for j in range(0, n, 7)]) for s in sigs[:300]])
    rep_cost = np.mean([1 - jaccard(sigs[cl["representative"][0]], sigs[j]) for j in range(0, n, 7)])
    assert rep_cost <= np.median(costs)
    again = cluster_tiles(sigs, dbin, cfg)
    assert again["representative"][0] == cl["representative"][0]
    assert again["jaccard_mean"][0] == cl["jaccard_mean"][0]


def test_empty_input():
    cl = cluster_tiles(np.empty(0, np.uint64), np.empty(0, np.int64), LSHConfig())
    assert cl["n_clusters"] == 0 and cl["cluster"].size == 0 and cl["cptr"].tolist() == [0]


def test_lshconfig_validation():
    cfg = LSHConfig()
    assert (cfg.num_hashes, cfg.bands, cfg.grid, cfg.seed, cfg.bins_per_decade, cfg.top_q,
            cfg.jaccard_pairs) == (32, 8, 8, 0, 2, 0.1, 256)
    assert cfg.rows_per_band == 4
    assert LSHConfig.from_any(None) == cfg
    assert LSHConfig.from_any({"seed": 3}).seed == 3
    assert LSHConfig.from_any(cfg) is cfg
    for bad in [dict(num_hashes=0), dict(bands=5), dict(grid=9), dict(grid=0), dict(seed=-1),
                dict(bins_per_decade=0), dict(top_q=0.0), dict(top_q=1.5), dict(top_q=float("nan")),
                dict(jaccard_pairs=0), dict(num_hashes=2.5), dict(bands="8"), dict(seed=True)]:
        with pytest.raises(InputError):
            LSHConfig(**bad)
    with pytest.raises(InputError):
        LSHConfig.from_any({"colour": 1})
    with pytest.raises(InputError):
        LSHConfig.from_any(42)
    with pytest.raises(Exception):
        cfg.seed = 4  # frozen


def test_parallel_kernels_match_serial():
    from akfviz.analysis import lsh as L
    from akfviz.analysis import minhash as M
    sigs = _random_sigs(M.PARALLEL_MIN + 500, 13, p=0.05)
    par = minhash_signatures(sigs, 8, seed=2)           # parallel path
    ser = np.empty_like(par)
    M._minhash_range(sigs, M.hash_table(8, 64, 2), M.hash_order(8, 64, 2), 0, sigs.size, ser)
    np.testing.assert_array_equal(par, ser)
    from akfviz.analysis import pairclust as P
    rng = np.random.default_rng(1)
    s = _random_sigs(40, 3, p=0.3)[rng.integers(0, 40, 3000)]
    dbin = rng.integers(-2, 0, 3000)
    dens, top = rng.random(3000), rng.random(3000)
    for d, tm in ((np.empty(0), np.empty(0)), (dens, top)):
        cl = cluster_tiles(s, dbin, LSHConfig(), density=d if d.size else None,
                           top_mass=tm if tm.size else None)          # serial path (small)
        pr = cl["pairs"]
        nc = cl["n_clusters"]
        cpairs = np.argsort(pr["cluster"], kind="stable").astype(np.int64)
        cpp = np.zeros(nc + 1, np.int64)
        np.cumsum(np.bincount(pr["cluster"], minlength=nc), out=cpp[1:])
        # each tile's global pair: the pair of its (signature, bin)
        key = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(pr["sig"], pr["bin"]))}
        pid = np.array([key[(int(a), int(b))] for a, b in zip(s, dbin)], dtype=np.int64)
        seed = np.uint64(np.random.default_rng(0).integers(0, 2**63, dtype=np.int64))
        # two chunks, in parallel: in id order, then the clusters shuffled (a cluster's results
        # depend on the cluster alone, whatever the worker and the order it takes them in)
        for clist in (np.arange(nc), np.random.default_rng(nc).permutation(nc)):
            rep, jm, dsum, fsum = np.empty(nc, np.int64), np.empty(nc), np.zeros(nc), np.zeros(nc)
            P._stats_chunks(np.array([0, nc // 3, nc]), clist, cl["cptr"], cpp, cpairs, pr["uid"], pr["count"],
                            pr["first"], pr["dens"], pr["tm"], pr["uniform"], cl["order"], pid,
                            cl["unique_signatures"], seed, 256, d, tm, dens, np.zeros(0, np.int32),
                            np.zeros(0, np.int32), np.zeros(6, np.int64), rep, jm, dsum, fsum)
            np.testing.assert_array_equal(rep, cl["representative"])
            np.testing.assert_array_equal(jm, cl["jaccard_mean"])
            np.testing.assert_array_equal(dsum, cl["density_sum"])
            np.testing.assert_array_equal(fsum, np.bincount(cl["cluster"], weights=dens, minlength=nc))
    np.testing.assert_array_equal(cluster_tiles(s, dbin, LSHConfig())["density_sum"], 0.0)  # no densities


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cluster_tiles_same_for_any_chunking(monkeypatch, seed):
    # the per-tile passes (pair ids, gather, counting sort) run on chunks of tiles, in
    # parallel for large inputs; every output must be the same bit for bit for any chunking,
    # parallel or serial, with per-chunk count rows or one shared row
    from akfviz.analysis import lsh as L
    rng = np.random.default_rng(seed)
    n = 5000
    few = _random_sigs(30, 3, p=0.3)[rng.integers(0, 30, n)]    # few clusters: per-chunk rows
    many = rng.integers(1, 2**63, n, dtype=np.int64).astype(np.uint64)  # ~n clusters: one row
    for sig in (few, many, np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)):
        dbin = rng.integers(-4, 1, n)
        dens = rng.random(n)
        ref = cluster_tiles(sig, dbin, LSHConfig(), density=dens)
        for par in (False, True):
            for k in (2, 3, 7, n + 3):  # more chunks than tiles: empty chunks
                monkeypatch.setattr(L, "_tile_chunks", lambda m, par=par, k=k: (par, k))
                got = cluster_tiles(sig, dbin, LSHConfig(), density=dens)
                for key, val in ref.items():
                    if key == "pairs":
                        for pk_, pv in val.items():
                            np.testing.assert_array_equal(got[key][pk_], pv, err_msg=f"pairs.{pk_} {par} {k}")
                    elif key != "timings":
                        np.testing.assert_array_equal(got[key], val, err_msg=f"{key} {par} {k}")
        monkeypatch.undo()
    bins = dbin - dbin.min()
    np.testing.assert_array_equal(ref["bin_counts"], np.bincount(bins))
    np.testing.assert_array_equal(
        ref["density_sum"], np.bincount(ref["cluster"], weights=dens, minlength=ref["n_clusters"]))


def test_representative_is_the_near_medoid_tile_typical_in_values():
    """Every tile below has the same outline, so every one is a medoid; the first in tile order
    has one huge value (top-q share ≈ 1), the others spread their mass. The representative is
    the member nearest the cluster's mean density and top-q share, not the first one."""
    import scipy.sparse as sp

    import akfviz

    rng = np.random.default_rng(0)
    T, k = 16, 12
    A = np.zeros((T, T * k))
    for b in range(k):
        A[:, b * T:(b + 1) * T] = rng.uniform(0.5, 1.5, (T, T))
    A[0, 0] = 1e4                                     # tile 0: one value holds nearly all the mass
    pa = akfviz.analyze(sp.csr_array(A), tile=T)
    assert pa.n_clusters == 1
    tiles = pa.tiles
    rep = int(pa.clusters["representative"].iat[0])
    assert rep != 0
    tm = tiles["top_mass"].to_numpy()
    assert abs(tm[rep] - tm.mean()) < 0.5 * abs(tm[0] - tm.mean())


def test_cluster_plans_do_not_depend_on_how_tile_blocks_are_labelled():
    """Held-out metamorphic probe: relabelling the tile blocks of a 512² LLM-like matrix (T = 16)
    changed the default cluster-mode plan from QUANT8 everywhere (0.96 % error) to PRUNE25 on 573
    tiles (23 %): the representative, taken as the first medoid tile in tile order, was an outlier
    in values; the plan prices the whole cluster from it."""
    import scipy.sparse as sp

    import akfviz

    T, n = 16, 512
    A = sp.csr_array(akfviz.generate("llm_magnitude", n=n, seed=5))
    base = akfviz.select(akfviz.analyze(A, tile=T))
    for s in (1, 4):
        r = np.random.default_rng(s)
        pr, pc = r.permutation(n // T), r.permutation(n // T)
        rp = (pr[:, None] * T + np.arange(T)).ravel()
        cp = (pc[:, None] * T + np.arange(T)).ravel()
        plan = akfviz.select(akfviz.analyze(sp.csr_array(A[rp][:, cp]), tile=T))
        assert plan.relative_error == pytest.approx(base.relative_error, rel=1e-9)
        assert plan.kernel_counts.to_dict() == base.kernel_counts.to_dict()


@pytest.mark.parametrize("kind,seed", [("powerlaw", 2), ("llm_block", 2)])
def test_cluster_mode_stays_near_tile_mode_where_a_first_tile_representative_failed(kind, seed):
    """Probe cases without any relabelling: cluster mode gave 14.4 % error against 1.3 % in tile
    mode (powerlaw) and 10.6 % against 3.6 % (llm_block), cost gaps up to 138 %."""
    import akfviz
    from akfviz.selection.selector import compare_granularity

    pa = akfviz.analyze(akfviz.generate(kind, n=512, seed=seed), tile=16)
    df = compare_granularity(pa)
    assert df["cost_gap"].iloc[0] < 0.1
    assert akfviz.select(pa).relative_error < 0.05


def test_medoid_tie_goes_to_the_smaller_signature():
    # two tiles, same density and values, outlines differing in one cell each (J = 62/64): both
    # have the same medoid cost, so the representative is the tile of the smaller signature,
    # wherever it sits (it was the first in tile order until the fifty-first session)
    for missing, want in ((((0, 0), (7, 15)), 1), (((7, 7), (0, 8)), 0)):
        D = np.ones((8, 16))
        for r, c in missing:
            D[r, c] = 0.0
        pa = akfviz.analyze(D, tile=8)
        assert pa.n_clusters == 1 and pa.clusters["size"].iat[0] == 2
        sig = pa.tiles["signature"].to_numpy()
        assert sig[want] < sig[1 - want]
        assert pa.clusters["representative"].iat[0] == want
    # without density / top_mass: the smaller medoid signature's first tile
    full = np.uint64(2**64 - 1)
    a, b = full ^ np.uint64(1), full ^ np.uint64(1 << 63)     # b < a
    for sig, want in (([a, b], 1), ([b, a], 0), ([a, b, b, a], 1)):
        cl = cluster_tiles(np.array(sig, np.uint64), np.zeros(len(sig), np.int64), LSHConfig())
        assert cl["n_clusters"] == 1 and cl["representative"].tolist() == [want]


def test_jaccard_mean_is_exact_for_many_tiles_with_few_distinct_outlines():
    # m = 100 tiles (4950 pairs > jaccard_pairs = 256) but d = 2 distinct signatures
    # (3 <= 256): the mean over all tile pairs is exact, not a sample
    full = np.uint64(2**64 - 1)
    a, b = full ^ np.uint64(1), full ^ np.uint64(1 << 63)   # J(a, b) = 62/64
    sig = np.array([a] * 60 + [b] * 40, dtype=np.uint64)
    np.random.default_rng(0).shuffle(sig)
    cl = cluster_tiles(sig, np.zeros(100, np.int64), LSHConfig(jaccard_pairs=256))
    assert cl["n_clusters"] == 1
    ref = (60 * 59 + 40 * 39 + 2 * 60 * 40 * (62 / 64)) / (100 * 99)
    assert cl["jaccard_mean"][0] == pytest.approx(ref, rel=1e-12)


def test_sampled_medoid_scores_candidates_against_members_of_its_own_cluster():
    # a cluster with d = 301 > 128 distinct outlines (sampled medoid): X (cells 0-39) on 200
    # tiles, 300 variants X + 3 of the other cells. Against its members X is clearly the
    # medoid. Tiles 1..499 belong to another cluster (another density bin) with the outline
    # ~X: scoring the candidates against those tiles instead would pick a variant.
    rng = np.random.default_rng(0)
    X = np.uint64((1 << 40) - 1)
    Z = ~X
    variants = set()
    while len(variants) < 300:
        variants.add(int(X) | sum(1 << int(b) for b in rng.choice(np.arange(40, 64), 3, replace=False)))
    rest = np.array([int(X)] * 199 + sorted(variants), dtype=np.uint64)
    rng.shuffle(rest)
    sig = np.concatenate([[X], np.full(499, Z, np.uint64), rest]).astype(np.uint64)
    dbin = np.zeros(sig.size, np.int64)
    dbin[1:500] = -1
    cl = cluster_tiles(sig, dbin, LSHConfig())
    assert cl["n_clusters"] == 2 and np.bincount(cl["cluster"]).tolist() == [500, 499]
    assert sig[cl["representative"][0]] == X and cl["representative"][0] == 0


def test_minhash_refuses_signature_bits_beyond_the_universe():
    # a 4 × 4 grid has 16 cells: bit 16 names no cell (an internal caller's bug, not user input)
    assert minhash_signatures(np.array([1 << 15], np.uint64), num_hashes=8, seed=0, universe=16).shape == (1, 8)
    with pytest.raises(ValueError, match="beyond the universe"):
        minhash_signatures(np.array([1 << 16], np.uint64), num_hashes=8, seed=0, universe=16)


def test_stats_schedule_gives_each_cluster_once_and_a_heavy_cluster_its_own_worker():
    """Clusters per worker of the statistics pass: every cluster exactly once; a cluster whose
    members are read one by one (pairs not alike) costs MEMBER_READ_COST per member, so a 40k-tile
    one outweighs a 900k-tile cluster of alike tiles and takes a worker of its own."""
    from akfviz.analysis import pairclust as P

    sizes = np.array([900_000, 40_000] + [25] * 140)
    n_pairs = np.array([64, 3000] + [1] * 140)
    nc = sizes.size
    cptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    cpp = np.concatenate([[0], np.cumsum(n_pairs)]).astype(np.int64)
    cpairs = np.arange(cpp[-1], dtype=np.int64)
    alike = np.ones(cpp[-1], bool)
    alike[cpp[1] + 1] = False                      # cluster 1: one pair unlike its first
    pairs = dict(uniform=alike, dens=np.full(cpp[-1], 1 / 1024), tm=np.ones(cpp[-1]))
    for workers in (2, 3, 8):
        cb, clist = P.stats_schedule(cptr, cpp, cpairs, pairs, workers)
        assert cb.shape == (workers + 1,) and cb[0] == 0 and cb[-1] == nc and np.all(np.diff(cb) >= 0)
        np.testing.assert_array_equal(np.sort(clist), np.arange(nc))
        mine = [set(clist[cb[w]:cb[w + 1]].tolist()) for w in range(workers)]
        assert {1} in mine                          # the heavy cluster alone
        assert any(0 in m and len(m) > 1 for m in mine) or workers > 2
