"""Slow, obvious references for the selection tests (plain Python / numpy loops)."""
import itertools

import numpy as np

from akfviz.kernels.registry import get_kernel
from akfviz.selection.structure import classify_dense


def naive_table_value(table, kernel, cls, density, scale, measure):
    """np.polyval of the stored coefficients at the density clipped to the class's domain (or its log10),
    at least the fit's floor, times the scale; plus, for energy and cycles, the payload bytes beyond the
    SRAM priced at DRAM energy / bandwidth (perftable's module docstring)."""
    import math

    i = table.kernels.index(kernel)
    lo, hi = table.domain[cls]
    d = min(max(density, lo), hi)

    def part(meas):
        m = table.measures.index(meas)
        x = d if table.linear[i, cls, m] else math.log10(d)
        return scale * max(float(np.polyval(table.coef[i, cls, m], x)), float(table.floor[i, cls, m]))

    value = part(measure)
    if measure == "bytes":
        return value
    sram, bw, e_dram, leak = (float(v) for v in table.overflow)
    over = part("bytes") - sram
    if over > 0:
        stream = math.ceil(over / bw)
        value += over * e_dram + stream * leak if measure == "energy" else stream
    return value


def naive_tile_costs(pa, table, names, alpha, beta, R_dense, measure="energy"):
    """E, R, C (n_tiles, K) by a Python loop over tiles and kernels, from dense tiles."""
    ts = pa.tileset
    fro2 = float(pa.fro_norm) ** 2
    n = ts.n_tiles
    E = np.zeros((n, len(names)))
    R = np.zeros((n, len(names)))
    for t in range(n):
        tile = ts.dense(t)
        h, w = tile.shape
        cls = classify_dense(tile, grid=8)
        dens = np.count_nonzero(tile) / (h * w)
        scale = h * w / pa.tile ** 2
        for j, k in enumerate(names):
            E[t, j] = get_kernel(k).error(tile)
            R[t, j] = naive_table_value(table, k, cls, dens, scale, measure)
    C = alpha * E / fro2 + beta * R / R_dense
    return E, R, C


def naive_front_corners(pf, prob):
    """The choice vectors of a Pareto front's swept corners (non-dominated among the swept plans),
    sorted by resource: each re-formed by ``prob.argmin`` at its multiplier, with the cluster-mode
    second sweep's mask for ``restricted`` points."""
    from akfviz.selection.budgets import members_exact_mask
    from akfviz.selection.pareto import non_dominated

    swept = pf.points[~pf.points["between"]]
    mask = members_exact_mask(prob) if swept["restricted"].any() else None
    err, res = swept["error"].to_numpy(), swept["resource"].to_numpy()
    keep = np.flatnonzero(non_dominated(err, res))
    keep = keep[np.lexsort((err[keep], res[keep]))]
    return [prob.argmin(swept["multiplier"].iat[i], 1.0, mask=mask if swept["restricted"].iat[i] else None)
            for i in keep]


def naive_switch_path(prob, lo, hi):
    """Every plan from choice ``lo`` to ``hi``, one differing unit switched at a time (``lo`` and
    ``hi`` included), in order of error saved per resource added: a switch that saves both first,
    one that costs both last, ties in unit order. Plain loops over member error and resource sums."""
    diff = [u for u in range(prob.n_units) if lo[u] != hi[u]]
    E_lo, E_hi = prob.member_error_sums(lo), prob.member_error_sums(hi)
    R = prob.member_resource_sums()
    keyed = []
    for pos, u in enumerate(diff):
        dE = E_hi[u] - E_lo[u]
        dR = R[u, hi[u]] - R[u, lo[u]]
        ratio = -dE / dR if dR > 0 else (np.inf if dE <= 0 else -np.inf)
        keyed.append((-ratio, pos, u))
    path = [lo.copy()]
    for _, _, u in sorted(keyed):
        ch = path[-1].copy()
        ch[u] = hi[u]
        path.append(ch)
    return path


def naive_all_plans_front(E, R):
    """Every plan of a small selection (one kernel per unit, all ``K ** n_units`` of them) and the
    non-dominated ones by a double loop: ``[(err2, res, choice)]`` sorted by resource. A plan is
    dropped when another has error and resource each ≤ with one <, or both equal and comes first."""
    import itertools

    nu, K = E.shape
    plans = []
    for choice in itertools.product(range(K), repeat=nu):
        plans.append((sum(E[u, k] for u, k in enumerate(choice)), sum(R[u, k] for u, k in enumerate(choice)),
                      choice))
    front = []
    for i, (e, r, ch) in enumerate(plans):
        beaten = False
        for j, (e2, r2, _) in enumerate(plans):
            if j != i and e2 <= e and r2 <= r and (e2 < e or r2 < r or j < i):
                beaten = True
                break
        if not beaten:
            front.append((e, r, ch))
    return sorted(front, key=lambda t: t[1])


class Units:
    """A tile-mode problem reduced to what the budgets' greedy fill reads: per-unit squared errors
    and resources (``E``, ``R`` of shape (n_units, K))."""

    granularity = "tile"

    def __init__(self, E, R, fro2=1.0):
        self.E = np.asarray(E, dtype=np.float64)
        self.R = np.asarray(R, dtype=np.float64)
        self.n_units, K = self.E.shape
        self.names = tuple(f"K{k}" for k in range(K))
        self.fro2 = fro2

    def member_error_sums(self, choice):
        return self.E[np.arange(self.n_units), np.asarray(choice)]

    def member_resource_sums(self):
        return self.R


def naive_pair_sample(pair_cluster, clusters, m):
    """Reference of ``_kernels._sample_pairs``: for each cluster of ``clusters``, its pairs (the
    ``p`` with ``pair_cluster[p] == c``, in order), and of those the ranks ``(2i+1)·s // (2m)``
    (every pair when ``s ≤ m``); rows padded with -1 to ``m``."""
    out = []
    for c in clusters:
        mine = [p for p in range(len(pair_cluster)) if pair_cluster[p] == c]
        s = len(mine)
        ranks = list(range(s)) if s <= m else [((2 * i + 1) * s) // (2 * m) for i in range(m)]
        out.append([mine[r] for r in ranks] + [-1] * (m - len(ranks)))
    return np.array(out, dtype=np.int64).reshape(len(out), m)


def naive_sampled_mean(errors, weights):
    """Reference of one row of ``_kernels._sample_means``: ``Σ w·e / Σ w`` summed left to right by a
    Python loop (0 without weight)."""
    num = 0.0
    den = 0.0
    for w in weights:
        den += float(w)
    for e, w in zip(errors, weights):
        num += float(w) * float(e)
    return num / den if den > 0 else 0.0


class BudgetToy:
    """A selection problem reduced to what the budget modes read (search, fill, exact step): squared
    errors ``E`` and resources ``R`` per (unit, kernel), the argmin of ``λ·E/fro2 + R/R_dense``, exact
    evaluation; tile granularity, ``n_tiles`` settable (the exact step's tile limit)."""

    granularity = "tile"
    resource = "energy"

    def __init__(self, E, R, fro2, n_tiles=None):
        self.E = np.asarray(E, dtype=np.float64)
        self.R = np.asarray(R, dtype=np.float64)
        self.n_units, K = self.E.shape
        self.n_tiles = self.n_units if n_tiles is None else n_tiles
        self.unit_size = np.ones(self.n_units, dtype=np.int64)
        self.names = tuple(f"K{k}" for k in range(K))
        self.lossless = self.E.max(axis=0) == 0
        self.fro2 = float(fro2)
        self.R_dense = float(self.R.max(axis=1).sum())
        self.En, self.Rn = self.E / self.fro2, self.R / self.R_dense

    def argmin(self, lam, beta, mask=None):
        if np.isinf(lam):
            C = np.where(self.En == self.En.min(axis=1, keepdims=True), self.Rn, np.inf)
        else:
            C = lam * self.En + beta * self.Rn
        if mask is not None:
            C = np.where(mask, C, np.inf)
        return np.argmin(C, axis=1).astype(np.int64)

    def member_error_sums(self, choice):
        return self.E[np.arange(self.n_units), np.asarray(choice)]

    def member_error_matrix(self):
        return self.E

    def known_member_error_sums(self):
        return self.E

    def member_resource_sums(self):
        return self.R

    def evaluate(self, choice):
        idx = np.arange(self.n_units)
        return float(np.sqrt(self.E[idx, choice].sum() / self.fro2)), float(self.R[idx, choice].sum())


def budget_toy(seed, nu=4, K=5, n_tiles=None):
    """A seeded :class:`BudgetToy`: small integer errors and resources, kernel 0 lossless (error 0,
    the dearest), so every error budget is feasible."""
    rng = np.random.default_rng(seed)
    E = rng.integers(0, 40, (nu, K)).astype(np.float64)
    E[:, 0] = 0.0
    R = rng.integers(1, 30, (nu, K)).astype(np.float64)
    R[:, 0] = 30.0
    return BudgetToy(E, R, fro2=float(E.max(axis=1).sum()) + 1.0, n_tiles=n_tiles)


def budget_brute(prob, mask=None):
    """(relative error, resource, plans) of every plan the mask allows."""
    K = prob.E.shape[1]
    allowed = np.ones(prob.E.shape, bool) if mask is None else np.broadcast_to(mask, prob.E.shape)
    plans = np.array([p for p in itertools.product(range(K), repeat=prob.n_units)
                      if allowed[np.arange(prob.n_units), list(p)].all()])
    idx = np.arange(prob.n_units)
    return np.sqrt(prob.E[idx, plans].sum(axis=1) / prob.fro2), prob.R[idx, plans].sum(axis=1), plans
