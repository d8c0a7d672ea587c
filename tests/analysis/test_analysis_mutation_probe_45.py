"""Mutation probe 45 of the eager pass, the pair clustering and the NPU engine: tests that close the
gaps a mutation run found (each names the mutant it kills). Every check compares computed behaviour
with a slow reference (``analysis_naive``, ``npu_reference``) or with hand counts."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import akfviz
from akfviz.analysis import tilepass
from akfviz.analysis.lsh import LSHConfig, cluster_tiles
from akfviz.analysis.scanpass import chunk_bounds

from analysis_naive import naive_cluster_stats


def _full_arrays(A, T, cfg=None):
    """Per-tile signature, density bin, density and top share from the full pass (the reference
    the eager pass must agree with)."""
    cfg = cfg or LSHConfig()
    M, indptr, indices, rb = tilepass.canonical_csr(A, T)
    ts, ints, floats, sig, dbin = tilepass.tiles_and_features(M, indptr, indices, rb, T, cfg.grid,
                                                              cfg.top_q, cfg.bins_per_decade)
    return ts, sig, dbin, floats[:, 0], floats[:, 2]


def _check_against_naive(A, T):
    """analyze's clusters against the per-tile reference: representatives, Jaccard means and mean
    densities of every cluster from the plain-Python loop over the members. Returns the analysis."""
    pa = akfviz.analyze(A, tile=T)
    ts, sig, dbin, dens, top = _full_arrays(A, T)
    cluster = pa.compact.cluster
    rep, jm, ds = naive_cluster_stats(sig, dens, top, cluster, pa.n_clusters, fro2=pa.tiles["fro2"].to_numpy())
    c = pa.clusters
    np.testing.assert_array_equal(c["representative"].to_numpy(), rep)
    np.testing.assert_array_equal(c["jaccard_mean"].to_numpy(), jm)
    np.testing.assert_array_equal(c["mean_density"].to_numpy(), ds / np.bincount(cluster))
    return pa, ts, sig, top


# ----------------------------------------------------------------------------- the 'uniform' flag
# A pair (signature, density bin) is *uniform* when all its tiles have its first tile's density and
# top share; a cluster of uniform pairs whose sums are exact skips the member pass and takes the
# medoid's first tile as representative. A pair wrongly flagged uniform therefore shows up as a
# wrong representative only when the top shares differ *and* are dyadic (exact sums): the tests below
# build such tiles by hand.

def _four_entry_tile(vals):
    """An 8×8 block with four entries at fixed places (one signature for every such block)."""
    blk = np.zeros((8, 8))
    for (r, c), v in zip(((0, 0), (1, 3), (2, 5), (5, 6)), vals):
        blk[r, c] = v
    return blk


QUARTER = (1.0, 1.0, 1.0, 1.0)   # top share 1/4 (top_count(4, 0.1) = 1: the largest square of four)
HALF = (3.0, 2.0, 2.0, 1.0)      # 9 / (9 + 4 + 4 + 1) = 1/2


def test_a_pair_whose_tiles_differ_in_top_share_is_not_uniform():
    # kills S11 (scanpass: `elif k / area != pdens[ap] or tm != ptm[ap]` without the top-share test;
    # test_analysis_scanpass kills it too, on a random matrix: this is the hand-made case)
    A = np.hstack([_four_entry_tile(QUARTER), _four_entry_tile(HALF), _four_entry_tile(HALF)])
    pa, ts, sig, top = _check_against_naive(sp.csr_array(A), 8)
    assert pa.n_tiles == 3 and len(set(sig.tolist())) == 1 and top.tolist() == [0.25, 0.5, 0.5]
    assert pa.compact.pairs["uniform"].tolist() == [False]
    # hand count: mean top share 5/12; the first tile of share 1/2 (tile 1) lies nearest it
    assert pa.n_clusters == 1 and pa.clusters["representative"].tolist() == [1]


def test_a_pair_mixed_only_in_a_later_chunk_is_not_uniform():
    # kills P01 (pairclust._merge_kernel: `elif pmixed[p] != 0 or ...` without `pmixed[p] != 0`): the
    # pair's first tile in chunk 1 equals its first tile overall, so only chunk 1's own flag says
    # that another of its tiles differs
    T, n_rows, n_cols = 8, 1024, 320
    A = np.zeros((n_rows, n_cols))
    A[:, :200] = 1.0                      # 204,800 nonzeros: 64 chunks of two row blocks each
    assert chunk_bounds(n_rows // T, int(np.count_nonzero(A))).tolist()[:3] == [0, 2, 4]
    place = [(0, 30, QUARTER), (1, 30, QUARTER),                    # chunk 0: shares 1/4 only
             (2, 30, QUARTER)] + [(2, cb, HALF) for cb in range(31, 35)]   # chunk 1: 1/4, then 1/2 ×4
    for rb, cb, vals in place:
        A[rb * T:(rb + 1) * T, cb * T:(cb + 1) * T] = _four_entry_tile(vals)
    pa, ts, sig, top = _check_against_naive(sp.csr_array(A), T)
    tiles = {(int(b), int(c)): t for t, (b, c) in enumerate(zip(ts.bi, ts.bj))}
    first_a, first_half = tiles[(0, 30)], tiles[(2, 31)]
    pair = pa.compact.pair[first_a]
    assert not pa.compact.pairs["uniform"][pair]
    # shares 1/4 ×3 and 1/2 ×4: mean 11/28, nearer 1/2 -> the first tile of share 1/2 represents
    cl = pa.compact.cluster[first_a]
    assert pa.clusters["representative"].to_numpy()[cl] == first_half


def test_a_one_entry_tile_whose_square_underflows_is_not_plain():
    # kills S09 (scanpass._rb_plain joins a pair whatever its plain bit: `(v & 1) == 1` dropped), S10
    # (`plain = k == 1 and area == full_area` without `tm == 1.0`) and S17 (scanpass.tile_top: a
    # one-entry tile's share 1 even when its v² underflows, `return 1.0`): a one-entry tile whose v²
    # underflows has top share 0, so the one-entry tiles of later row blocks with share 1 that share
    # its pair make it mixed
    A = np.zeros((16, 20))
    A[0, 0] = 1e-200                     # tile (0, 0): fro2 = 0, top share 0, first of its pair
    for rb, cb in ((1, 0), (1, 1), (2, 0), (2, 2), (3, 1), (3, 3)):
        A[rb * 4, cb * 4] = 1.0          # the same cell of a full 4×4 tile: the same pair, share 1
    pa, ts, sig, top = _check_against_naive(sp.csr_array(A), 4)
    assert len(set(sig.tolist())) == 1 and top.tolist() == [0.0] + [1.0] * 6
    assert pa.compact.pairs["uniform"].tolist() == [False]
    assert pa.n_clusters == 1 and pa.clusters["representative"].tolist() == [1]


def test_cluster_tiles_flags_a_pair_mixed_in_top_share_and_breaks_ties_by_tile_order():
    # kills L04 (lsh._pair_uniform: `if dens[t] != pdens[p]` without the top-share test) and P07
    # (pairclust._typical_member: `dist <= best_d`, ties to the last member instead of the first)
    sig = np.full(4, 0b1011, np.uint64)
    dbin = np.full(4, -3, np.int64)
    dens = np.full(4, 1 / 1024)
    top = np.array([0.25, 0.5, 0.5, 0.5])
    cl = cluster_tiles(sig, dbin, LSHConfig(), density=dens, top_mass=top)
    rep, jm, ds = naive_cluster_stats(sig, dens, top, cl["cluster"], cl["n_clusters"])
    np.testing.assert_array_equal(cl["representative"], rep)
    # hand count: mean share 0.4375; tiles 1, 2, 3 tie nearest it, the first in tile order wins
    assert cl["representative"].tolist() == [1]


# ----------------------------------------------------------------------------- near-medoid flags
Y20 = np.uint64((1 << 20) - 1)    # 20 coarse cells
Y16 = np.uint64((1 << 16) - 1)


def test_near_medoid_flags_do_not_leak_into_the_next_cluster():
    # kills P04 (pairclust._stats_range without `near[cid[k]] = 0` after a cluster): signature X is a
    # near-medoid of cluster 0 (density bin -1); in cluster 1 (bin -2, the same LSH component) it is
    # far from the medoid Y, yet its tile lies nearest the members' mean: a leaked flag picks it
    X = np.uint64((1 << 14) - 1)   # J(X, Y16) = 14/16: one LSH component, but X costs 10 · 1/8 > 0.05 · 11
    sig = np.array([X, X] + [Y16] * 10 + [X], np.uint64)
    dbin = np.array([-1, -1] + [-2] * 11, np.int64)
    dens = np.array([0.25, 0.25] + [1 / 16] * 11)
    top = np.array([0.2, 0.3] + [0.1, 0.9] * 5 + [0.5])   # cluster 1: mean share 0.5, X's tile on it
    cl = cluster_tiles(sig, dbin, LSHConfig(), density=dens, top_mass=top)
    assert cl["n_clusters"] == 2 and cl["component"][0] == cl["component"][1]   # the setup holds
    rep, jm, ds = naive_cluster_stats(sig, dens, top, cl["cluster"], cl["n_clusters"])
    np.testing.assert_array_equal(cl["representative"], rep)
    assert cl["representative"].tolist() == [0, 2]   # cluster 1: the first Y tile, not X's tile 12


def test_members_alike_in_values_keep_the_medoids_first_tile():
    # kills P08 (pairclust._stats_range: the typical member searched even when neither density nor top
    # share varies, `if True:`): every member has density 1/3 and share 0.3 (not exact sums: the
    # member pass runs), so the representative is the medoid's first tile (1), not the first
    # near-medoid tile in tile order (0, signature X near the medoid Y)
    X = np.uint64((1 << 19) - 1)   # J(X, Y20) = 0.95: cost 5 · 0.05 = 0.25 <= 0.05 + 0.05 · 6
    sig = np.array([X] + [Y20] * 5, np.uint64)
    dbin = np.full(6, -1, np.int64)
    dens = np.full(6, 1 / 3)
    top = np.full(6, 0.3)
    cl = cluster_tiles(sig, dbin, LSHConfig(), density=dens, top_mass=top)
    assert cl["n_clusters"] == 1
    rep, jm, ds = naive_cluster_stats(sig, dens, top, cl["cluster"], cl["n_clusters"])
    np.testing.assert_array_equal(cl["representative"], rep)
    assert cl["representative"].tolist() == [1]


# ----------------------------------------------------------------------------- NPU engine timeline
def _npu_reference():
    """tests/npu/npu_reference.py (the plain-Python model of the engine), imported by path."""
    if "npu_reference" not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "npu" / "npu_reference.py"
        spec = importlib.util.spec_from_file_location("npu_reference", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["npu_reference"] = mod
    return sys.modules["npu_reference"]


def _ceil(a, b):
    return -(-int(a) // int(b))


def ref_intervals(work, hw, pe, red, src, active, shape, tile, fused, persistent):
    """The busy intervals of one iteration, written the slow way from docs/model.md (as the
    reference's ref_simulate times them): per phase, per PE its setup, the final phase of tiles
    without events, then its deliveries in arrival order (ties: tile order, route, batch), one
    interval per tile while it runs without a gap (a batch of k columns: k final phases, k · out_rows
    flits per train); then per reduction PE (ascending) its trains in
    order of arrival (ties: by PE, then tile). Returns (engine cycles, sorted interval tuples
    (pe, start, end, tile, kind) without the x-load offset, and the number of groups of trains that
    reach a reduction PE at one time in another order by (PE, tile) than by tile id)."""
    ref = _npu_reference()
    SETUP, COMPUTE, REDUCE = 0, 1, 2
    P, cols, k, n = hw.rows * hw.cols, hw.cols, active.shape[1], work.n_tiles
    used, ovf = {}, []
    for u in range(n):
        used[pe[u]] = used.get(pe[u], 0) + int(work.payload_bytes[u])
        ovf.append(min(int(work.payload_bytes[u]), max(0, used[pe[u]] - hw.sram_bytes_per_pe)))
    if fused:
        groups = [list(range(n))]
    else:
        names = sorted({work.kernel_names[i] for i in work.kernel_id})
        groups = [[u for u in range(n) if work.kernel_names[work.kernel_id[u]] == nm] for nm in names]
    out, t_phase, ties = [], 0, 0
    for gi, g in enumerate(groups):
        if not fused and gi > 0:
            t_phase += hw.reconfig_cycles
        streams = {}
        for u in g:
            streams[pe[u]] = streams.get(pe[u], 0) + (ovf[u] if persistent else int(work.payload_bytes[u]))
        ready = ref.ps_completion(streams, hw.dram_bytes_per_cycle)
        inj = ref.injection_times(work, g, tile, shape[1], active, src, hw.inject_cycles)
        order = sorted(g, key=lambda u: (pe[u], u))
        ivs, pe_end, done = [], {}, {}
        for p in sorted({pe[u] for u in g}):
            tl = [u for u in order if pe[u] == p]
            dl = []
            for u in tl:
                d = ref.manhattan(src[work.bj[u]], p, cols)
                for r in range(work.col_ptr[u], work.col_ptr[u + 1]):
                    j = int(work.bj[u]) * tile + int(work.col_local[r])
                    dl += [(inj[(j, b)] + hw.hop_latency_cycles * d, u, r) for b in range(k) if (j, b) in inj]
            t = ready.get(p, 0)
            if hw.setup_cycles * len(tl) > 0:
                ivs.append([p, t, t + hw.setup_cycles * len(tl), -1, SETUP])
            t += hw.setup_cycles * len(tl)
            remaining = {u: sum(1 for x in dl if x[1] == u) for u in tl}
            for u in tl:
                if remaining[u] == 0:
                    f = _ceil(k * work.final_macs[u], hw.mac_lanes)
                    if f > 0:
                        ivs.append([p, t, t + f, u, COMPUTE])
                    t += f
                    done[u] = t
            for a, u, r in sorted(dl, key=lambda x: x[0]):
                start = max(t, a)
                remaining[u] -= 1
                t = (start + hw.event_cycles + _ceil(work.ev_macs[r], hw.mac_lanes)
                     + int(work.ev_decodes[r]) * hw.decode_cycles
                     + (_ceil(k * work.final_macs[u], hw.mac_lanes) if remaining[u] == 0 else 0))
                last = ivs[-1] if ivs else None
                if last and last[0] == p and last[3] == u and last[2] == start and last[4] == COMPUTE:
                    last[2] = t            # the tile runs on without a gap: one interval
                else:
                    ivs.append([p, start, t, u, COMPUTE])
                if remaining[u] == 0:
                    done[u] = t
            pe_end[p] = t
        trains = {}
        for u in order:
            if int(work.out_rows[u]) > 0:
                q = red[work.bi[u]]
                trains.setdefault(q, []).append(
                    (done[u] + hw.hop_latency_cycles * ref.manhattan(pe[u], q, cols), u))
        for q in sorted(trains):
            at = {}
            for a, u in trains[q]:
                at.setdefault(a, []).append(u)
            ties += sum(1 for us in at.values() if us != sorted(us))
            t = pe_end.get(q, 0)
            for a, u in sorted(trains[q], key=lambda x: x[0]):
                start = max(t, a)
                t = start + k * int(work.out_rows[u]) * hw.reduce_cycles   # per output row and batch column
                ivs.append([q, start, t, u, REDUCE])
            pe_end[q] = t
        out += [(p, s + t_phase, e + t_phase, u, kd) for p, s, e, u, kd in ivs]
        t_phase += max(pe_end.values()) if pe_end else 0
        if not fused and gi < len(groups) - 1:
            t_phase += hw.barrier_cycles
    return t_phase, sorted(out), ties


def _npu_case(seed, nbr, nbc, kernels, tile=4, k=2):
    """A random TileWork with full tiles, a random placement on a 3×3 grid and a random x."""
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.npu.mapping import source_pes

    ref = _npu_reference()
    rng = np.random.default_rng(seed)
    work = ref.random_tilework(rng, nbr, nbc, tile, p_tile=0.8, kernels=kernels)
    hw = HardwareConfig(rows=3, cols=3, setup_cycles=int(rng.integers(0, 3)),
                        mac_lanes=int(rng.choice([1, 2, 3, 4])), hop_latency_cycles=int(rng.integers(0, 2)),
                        dram_bytes_per_cycle=16, sram_bytes_per_pe=300, reconfig_cycles=7, barrier_cycles=5,
                        launch_cycles=11, decode_cycles=int(rng.integers(0, 2)), inject_cycles=1)
    pe = rng.integers(0, 9, work.n_tiles)
    red = rng.integers(0, 9, nbr)
    src = source_pes(red, nbc, hw.cols)
    X = rng.standard_normal((nbc * tile, k)) * (rng.random((nbc * tile, k)) < 0.8)
    return work, hw, pe, red, src, X, (nbr * tile, nbc * tile), tile


def test_recorded_intervals_and_counters_match_the_reference_timeline():
    # kills E05 (_engine.reduction_trains filling the trains in TileWork order, `u = sel[i]`, instead
    # of the phase order (PE, tile): trains arriving together are reduced in another order), E10 (a
    # tile's deliveries merged into one interval across a gap: `iv[2, niv - 1] == start` dropped),
    # M01 (unfused phases in the TileWork's kernel order instead of ascending kernel name) and E04
    # (grid_coordinates sized by the source PEs only: a tall matrix, more row blocks than column
    # blocks, reads reduction PEs' coordinates past the table)
    from akfviz.npu.mapping import Mapping
    from akfviz.npu.simulate import simulate
    from akfviz.npu.work import TileWork

    ref = _npu_reference()
    tied = 0
    for seed in range(7):
        nbr, nbc = (5, 2) if seed % 2 else (3, 4)
        fused = seed % 3 != 0
        persistent = seed % 4 != 3
        work, hw, pe, red, src, X, shape, tile = _npu_case(seed, nbr, nbc, ("Q8", "DENSE", "CSC"))
        if seed == 6:
            # no input events, no setup, no final phase, no hop latency, nothing streamed: every
            # train reaches its reduction PE at cycle 0, and the tie order alone decides the timeline
            work = TileWork(**{**work.__dict__, "final_macs": np.zeros(work.n_tiles, np.int64)}).validate()
            hw = hw.replace(setup_cycles=0, hop_latency_cycles=0, sram_bytes_per_pe=1 << 20)
            pe = (8 - np.arange(work.n_tiles)) % 9      # tile ids and PEs in opposite orders
            X = np.zeros_like(X)
        mp = Mapping(pe=np.asarray(pe, np.int64), red=np.asarray(red, np.int64), src=np.asarray(src, np.int64),
                     trajectory=np.zeros(1), greedy_objective=0.0, objective=0.0, iterations=0,
                     iterations_per_s=0.0, seconds=0.0, method="given")
        res = simulate(work, hw, x=X, mapping=mp, shape=shape, tile=tile, fused=fused,
                       persistent=persistent, record=True)
        cyc, C, load = ref.ref_simulate(work, hw, pe, red, src, X != 0, shape, tile, fused, persistent)
        assert res.cycles == cyc, seed
        for name, v in C.items():
            assert res.counters[name].tolist() == v, (seed, name)
        engine, want, n_tied = ref_intervals(work, hw, pe, red, src, X != 0, shape, tile, fused, persistent)
        assert int(res.per_iteration_columns["engine_cycles"][0]) == engine, seed
        iv = res.intervals
        got = sorted(zip(iv["pe"].tolist(), (iv["start"] - load).tolist(), (iv["end"] - load).tolist(),
                         iv["tile"].tolist(), iv["kind"].tolist()))
        assert got == want, seed
        tied += n_tied
    assert tied > 0   # the cases exercise trains reaching a reduction PE together (E05)


def test_jaccard_mean_is_exact_when_the_tile_pairs_are_few_though_the_outlines_are_many():
    # kills P06 (pairclust._stats_range: the exact Jaccard mean only when d(d+1)/2 <= jaccard_pairs,
    # `or m(m-1)/2 <= jaccard_pairs` dropped): 23 tiles of 23 distinct outlines, 253 tile pairs
    # (<= 256) but 276 outline pairs: the mean is exact over all 253 pairs, not a 256-pair sample
    base = (1 << 40) - 1
    sig = np.array([base & ~(1 << i) for i in range(23)], np.uint64)   # pairwise J = 38/40
    dbin = np.full(23, -2, np.int64)
    dens = np.full(23, 1 / 16)
    top = np.linspace(0.1, 0.9, 23)
    cl = cluster_tiles(sig, dbin, LSHConfig(), density=dens, top_mass=top)
    assert cl["n_clusters"] == 1
    rep, jm, ds = naive_cluster_stats(sig, dens, top, cl["cluster"], cl["n_clusters"])
    np.testing.assert_array_equal(cl["jaccard_mean"], jm)
    assert abs(cl["jaccard_mean"][0] - 38 / 40) < 1e-12          # hand count: every pair 38/40
    np.testing.assert_array_equal(cl["representative"], rep)


# ----------------------------------------------------------------------------- sampled medoid ties
M64 = (1 << 64) - 1


def _mix64_py(x):
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def _rand_below_py(state, n):
    state = (state + 0x9E3779B97F4A7C15) & M64
    return state, _mix64_py(state) % n


def _jaccard_py(a, b):
    return bin(a & b).count("1") / bin(a | b).count("1")


def ref_sampled_medoid(sig, lsh_seed, cl=0):
    """Representative of a cluster made of all tiles ``sig`` (one density bin) with more than 128
    distinct signatures, the slow way (lsh.cluster_tiles, Notes; without densities: the medoid's first
    tile): 256 members drawn with the cluster's splitmix64 stream, the most frequent signature and 64
    drawn distinct signatures scored against them, ties to the signature seen first in tile order.
    Returns (representative, tied candidate signatures of the lowest cost in the order drawn)."""
    sig = [int(s) for s in sig]
    distinct, first, mark = [], {}, {}
    for t, s in enumerate(sig):
        if s not in first:
            distinct.append(s)
            first[s] = t
            mark[s] = 0
        mark[s] += 1
    m, d = len(sig), len(distinct)
    assert d > 128
    seed = int(np.random.default_rng(lsh_seed).integers(0, 2**63, dtype=np.int64))
    state = _mix64_py(seed ^ _mix64_py((cl + 0x632BE59BD9B4E019) & M64))
    top_u = distinct[0]
    for s in distinct:
        if mark[s] > mark[top_u]:
            top_u = s
    others = []
    for _ in range(256):
        state, q = _rand_below_py(state, m)
        others.append(sig[q])
    cands = []
    for i in range(65):
        if i == 0:
            cands.append(top_u)
        else:
            state, q = _rand_below_py(state, d)
            cands.append(distinct[q])
    costs = []
    for c in cands:
        cost = 0.0
        for o in others:
            cost += 1.0 - _jaccard_py(c, o)
        costs.append(cost)
    low = min(costs)
    tied = list(dict.fromkeys(c for c, x in zip(cands, costs) if x == low))
    best = min(tied, key=lambda s: first[s])
    return first[best], tied, first


def test_sampled_medoid_ties_go_to_the_signature_seen_first_in_tile_order():
    # kills P05 (pairclust._stats_range, sampled medoid: `if cost < best_cost:` without the tie rule
    # `or (cost == best_cost and firstt[cand] < firstt[best])`, ties to the candidate drawn first).
    # 140 outlines: 40 of "base minus one cell" (one tile each) and 100 of "base plus two cells" (ten
    # tiles each). Two drawn base-minus-one outlines that no sampled member carries score the same
    # cost to the last bit (the same Jaccard against every sample), and they beat the others.
    base = (1 << 40) - 1
    rng = np.random.default_rng(0)
    two = [(i, j) for i in range(40, 64) for j in range(i + 1, 64)]
    plus = [base | (1 << two[q][0]) | (1 << two[q][1]) for q in rng.choice(len(two), 100, replace=False)]
    sig = np.array([base & ~(1 << a) for a in range(40)] + plus * 10, np.uint64)
    sig = sig[rng.permutation(sig.size)]
    dbin = np.full(sig.size, -2, np.int64)
    decided_by_the_rule = 0
    for seed in range(10):
        cl = cluster_tiles(sig, dbin, LSHConfig(seed=seed))
        assert cl["n_clusters"] == 1
        rep, tied, first = ref_sampled_medoid(sig, seed)
        assert cl["representative"].tolist() == [rep], seed
        decided_by_the_rule += first[tied[0]] != rep   # the first drawn of the tied is not the earliest
    assert decided_by_the_rule >= 2


# ----------------------------------------------------------------------------- the 'small tile' shortcut
def test_a_tile_exactly_at_the_diagonal_fill_count_is_classified_from_its_diagonals():
    # kills S07 (scanpass._scan_range: `maxk <= DIAG_FILL * min(hh, w_min)` for `<`): a T×T tile of
    # exactly 0.6·T entries (whole for T = 5, 10, 20) may meet the diagonal rule k >= DIAG_FILL · nd · T,
    # so its row block may not take the shortcut that classifies with the stand-in nd = 1: on two
    # diagonals (nd = 2) the tile is not diagonal, though the stand-in says it is
    from akfviz.selection.structure import classify_arrays

    for T in (5, 10, 20):
        k = int(0.6 * T)
        A = np.zeros((T, 2 * T))
        h = (k + 1) // 2
        A[np.arange(h), np.arange(h)] = 1.5                        # tile (0, 0): diagonals 0 and 1
        A[np.arange(h, k), np.arange(h, k) + 1] = -0.5
        A[np.arange(k), T + np.arange(k)] = 2.0                    # tile (0, 1): the main diagonal
        pa = akfviz.analyze(sp.csr_array(A), tile=T)
        M, indptr, indices, rb = tilepass.canonical_csr(sp.csr_array(A), T)
        ts, ints, floats, sig, dbin = tilepass.tiles_and_features(M, indptr, indices, rb, T, 8, 0.1, 2)
        assert ints[:, 0].tolist() == [k, k] and ints[:, 5].tolist() == [2, 1]   # nnz, diagonals
        want = classify_arrays(ts.h, ts.w, ints[:, 0], ints[:, 5], ints[:, 7], sig, 8)
        np.testing.assert_array_equal(pa.compact.cls, want, err_msg=f"T={T}")
        assert want[0] != 0 and want[1] == 0, T                   # hand count: only tile (0, 1) is diagonal


# ----------------------------------------------------------------------------- pair merging: table sizes
def test_many_two_cell_pairs_merge_by_hashing_when_the_bins_are_too_many_for_the_direct_table():
    # kills P02 (pairclust._merge_kernel without `if not use2: n_more += n_two`: with more than
    # DIRECT2_MAX_BINS density bins the two-cell pairs are hashed too, in a table sized for the
    # pairs of three cells or more alone: here there are none, so no table at all, and the mutant
    # reads and writes past it (a crash); with a few such pairs, 1024 slots would fill up with the
    # thousand-odd distinct two-cell pairs and the probe loop never end). 102,400 tiles of two
    # entries in two coarse cells each, 64 chunks, 75 bins.
    from akfviz.analysis.scanpass import DIRECT2_MAX_BINS, bin_floor

    T, nb = 64, 320
    rng = np.random.default_rng(45)
    n = nb * nb
    cells = np.array([rng.choice(64, 2, replace=False) for _ in range(2016)])[rng.integers(0, 2016, n)]
    loc_r = (cells // 8) * 8 + rng.integers(0, 8, (n, 2))
    loc_c = (cells % 8) * 8 + rng.integers(0, 8, (n, 2))
    t = np.arange(n)
    rows = ((t // nb) * T)[:, None] + loc_r
    cols = ((t % nb) * T)[:, None] + loc_c
    A = sp.csr_array((np.ones(2 * n), (rows.ravel(), cols.ravel())), shape=(nb * T, nb * T))
    cfg = LSHConfig(bins_per_decade=20)
    assert 1 - bin_floor(T, 20) > DIRECT2_MAX_BINS and A.nnz >= 200_000
    pa = akfviz.analyze(A, tile=T, lsh=cfg)
    ts, sig, dbin, dens, top = _full_arrays(A, T, cfg)
    assert (np.bitwise_count(sig) == 2).all()
    pairs = pa.compact.pairs
    np.testing.assert_array_equal(pairs["sig"][pa.compact.pair], sig)   # every tile at its own pair
    assert np.unique(pairs["sig"]).size == pairs["sig"].size            # each pair listed once
    cl = cluster_tiles(sig, dbin, cfg, density=dens, top_mass=top)
    np.testing.assert_array_equal(pa.compact.cluster, cl["cluster"])
    np.testing.assert_array_equal(pa.clusters["representative"].to_numpy(), cl["representative"])
