"""Why the selector chose what it chose (akf-spec §5, "every decision is explainable").

:func:`explain` returns, for one tile or one cluster of a selected plan, the table of candidate
kernels with their error ``E``, its share ``E_norm = E/‖A‖_F²``, resource ``R``, its share
``R_norm = R/R_dense``, cost ``C = alpha·E_norm + beta·R_norm``, the rank by cost, which kernel the
plan applied, and for that kernel a ``reason`` sentence computed from these numbers.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from .costs import MEMBER_SAMPLE, tie_break

COLUMNS = ["kernel", "family", "lossless", "E", "E_norm", "R", "R_norm", "C", "chosen", "rank", "reason"]


def _pct(x: float) -> str:
    return f"{100 * x:.3g} %"


def _index(value, n, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{what} must be an integer, got {value!r}.")
    if not 0 <= int(value) < n:
        raise InputError(f"{what} {value} does not exist; valid values are 0 … {n - 1}.")
    return int(value)


def explain(plan, tile=None, cluster=None) -> pd.DataFrame:
    """Candidate table for one tile or cluster of a plan made by :func:`akfviz.select`.

    Parameters
    ----------
    plan : FusionPlan
        A plan with ``plan.selection`` (a :class:`~.selector.SelectionReport`).
    tile : int, optional
        Row of ``pa.tiles``. In cluster mode the tile's own ``E`` and ``R`` are computed on the spot and
        shown beside the kernel its cluster's representative chose.
    cluster : int, optional
        Cluster id. In tile mode the cluster's representative tile is explained.
        With neither, the largest cluster (cluster mode) or tile 0 (tile mode).

    Returns
    -------
    DataFrame
        One row per candidate, sorted by rank: ``kernel, family, lossless, E, E_norm, R, R_norm, C,
        chosen, rank, reason`` (``reason`` is filled on the chosen row only).
    """
    from ..kernels.registry import get_kernel

    rep = getattr(plan, "selection", None)
    if rep is None or not hasattr(rep, "candidates"):
        raise InputError("This plan was not made by akfviz.select, so there is no decision to explain.")
    if tile is not None and cluster is not None:
        raise InputError("Give either tile= or cluster=, not both.")
    pa = plan.pa
    tiles = pa.tiles_as_analysed()
    n_tiles = int(tiles.shape[0])
    if n_tiles == 0:
        raise InputError("The matrix has no nonzero tiles, so no kernel was chosen for anything.")
    names = list(rep.candidates)
    K = len(names)
    context = ""
    if tile is None and cluster is None:
        if rep.granularity == "cluster":
            cluster = int(np.argmax(rep.unit_size))
        else:
            tile = 0
    if cluster is not None:
        cluster = _index(cluster, int(pa.n_clusters), "cluster")
        if rep.granularity == "cluster":
            u = int(np.nonzero(rep.unit_cluster == cluster)[0][0])
            row = (rep.E[u], rep.R[u], rep.En[u], rep.Rn[u])
            chosen = int(rep.chosen[u])
            argmin = int(rep.argmin[u])
            context = (f"cluster {cluster} ({int(rep.unit_size[u])} tiles), decided on its representative "
                       f"tile {int(rep.units[u])}; E is the representative's error scaled to the members' "
                       f"mean ‖t‖²_F")
            sampled = getattr(rep, "sampled", None)
            if sampled is not None and sampled[u].any():
                # akf-spec §5: lossy kernels exact on the representative, measured on members
                context += (f", except for {', '.join(n for n, s in zip(names, sampled[u]) if s)}: exact "
                            f"on the representative, so E is their mean error on up to {MEMBER_SAMPLE} of "
                            "the cluster's pairs (a tile per signature and density bin, weighted by its tiles)")
        else:
            tile = int(pa.clusters_as_analysed().loc[cluster, "representative"])
            context = f"cluster {cluster}'s representative tile {tile} (tile mode: every tile decided itself)"
    if cluster is None or rep.granularity == "tile":
        tile = _index(tile, n_tiles, "tile")
        if rep.granularity == "tile":
            u = tile
            row = (rep.E[u], rep.R[u], rep.En[u], rep.Rn[u])
            chosen = int(rep.chosen[u])
            argmin = int(rep.argmin[u])
            context = context or f"tile {tile}"
        else:
            # cluster mode: this tile's own numbers, beside the kernel its representative chose
            E, R = _summed(rep, pa, tiles, np.array([tile], dtype=np.int64), range(K))
            En = E / rep.fro2 if rep.fro2 > 0 else np.zeros(K)
            Rn = R / rep.R_dense if rep.R_dense > 0 else np.zeros(K)
            row = (E, R, En, Rn)
            c = int(tiles["cluster"].iat[tile])
            u = int(np.nonzero(rep.unit_cluster == c)[0][0])
            chosen = int(rep.chosen[u])
            argmin = int(np.argmin(_cost(rep, En, Rn)))
            context = (f"tile {tile}, member of cluster {c}; its kernel was decided on the representative "
                       f"tile {int(rep.units[u])}")
    E, R, En, Rn = (np.asarray(a, dtype=np.float64) for a in row)
    C = _cost(rep, En, Rn)
    key = tie_break(rep.alpha, rep.beta, En, Rn,
                    lossless=rep.lossless if rep.granularity == "cluster" else None)
    order = np.lexsort((np.arange(K), np.zeros(K) if key is None else key, C))
    rank = np.empty(K, dtype=np.int64)
    rank[order] = np.arange(1, K + 1)
    df = pd.DataFrame({
        "kernel": names, "family": [get_kernel(n).family for n in names], "lossless": rep.lossless.copy(),
        "E": E, "E_norm": En, "R": R, "R_norm": Rn, "C": C, "chosen": np.arange(K) == chosen, "rank": rank,
        "reason": [""] * K,
    })
    members = None
    if cluster is not None and rep.granularity == "cluster" and rep.mode != "weights":
        # a budget counts every member: the sums of the chosen kernel and of the cheapest one
        idx = np.flatnonzero(tiles["cluster"].to_numpy() == cluster)
        best = int(order[0])
        E2, R2 = _summed(rep, pa, tiles, idx, (chosen, best))
        members = (idx.size, best, E2, R2)
    df.loc[chosen, "reason"] = _reason(rep, names, En, Rn, C, rank, chosen, argmin, context, members)
    return df.sort_values("rank").reset_index(drop=True)[COLUMNS]


def _summed(rep, pa, tiles, idx, kernels):
    """``(E, R)`` of the candidates ``kernels`` (indices into ``rep.candidates``) summed over the
    tiles ``idx``: exact errors, the resources as the selector prices them — the table's, the exact
    price for an edge tile (arrays of length K, zero elsewhere)."""
    from ..kernels.registry import get_kernel
    from .perftable import measure_weights, tile_scale
    from .structure import classify_tiles

    names = list(rep.candidates)
    K = len(names)
    kernels = list(kernels)
    E = np.zeros(K)
    R = np.zeros(K)
    for j in kernels:
        if not rep.lossless[j]:
            E[j] = float(np.maximum(np.asarray(get_kernel(names[j]).batch_error(pa.tileset, idx),
                                               dtype=np.float64), 0.0).sum())
    grid = int(getattr(getattr(pa, "lsh", None), "grid", 8))
    cls = classify_tiles(tiles, grid=grid, idx=idx)
    dens = tiles["density"].to_numpy(np.float64)[idx]
    sc = tile_scale(tiles, pa.tile)[idx]
    sub = [names[j] for j in kernels]
    weights = measure_weights(rep.measure, rep.R_dense_by_measure)
    P = np.zeros((idx.size, len(sub)))
    for m, wt in weights.items():
        P += wt * rep.table.evaluate(sub, cls, dens, sc, measure=m)
    edges = getattr(rep, "edges", None)
    if edges is not None:   # tiles of fewer than T rows or columns: their exact prices (.edgecost)
        edges.overwrite(idx, sub, weights, P)
    R[kernels] = P.sum(axis=0)
    return E, R


def _cost(rep, En, Rn):
    if np.isinf(rep.alpha):
        return np.where(En == En.min(), Rn, np.inf)
    return rep.alpha * En + rep.beta * Rn


def _reason(rep, names, En, Rn, C, rank, chosen, argmin, context, members=None) -> str:
    k = names[chosen]
    err = "at zero error" if En[chosen] == 0 else f"with error {_pct(En[chosen])} of the whole ‖A‖²"
    # one tile's shares of the whole matrix (they read like the plan's totals, ~1/n_tiles of them)
    unit = "on the cluster's representative tile" if rep.granularity == "cluster" else "on this tile"
    what = f"{unit}, resource {_pct(Rn[chosen])} of the whole matrix's Dense {rep.measure} {err}"
    if rank[chosen] == 1:
        head = f"{k}: lowest cost (C = {C[chosen]:.3g}): {what}"
        others = [j for j in np.argsort(rank) if j != chosen]
        if others:
            j = int(others[0])
            if C[j] == C[chosen]:
                if rep.beta == 0 and rep.granularity == "cluster" and rep.lossless[chosen] \
                        and not rep.lossless[j]:
                    rule = ("a lossless kernel (a lossy one exact on the representative may not be on "
                            "its members)")
                else:
                    rule = ("the lower resource" if rep.beta == 0 else "the lower error" if rep.alpha == 0
                            else "the first candidate")
                cmp = f"costs the same; ties go to {rule}"
            elif np.isfinite(C[j]) and C[chosen] > 0:
                # "2.35× as much", not "2.35× more" (which reads as 3.35×), and a near tie in per
                # cent: a ratio of 1.0004 was written "costs 1× more" (student probe)
                r = C[j] / C[chosen]
                cmp = f"costs {r:.3g}× as much" if r >= 2 else f"costs {100 * (r - 1):.2g} % more"
            elif np.isfinite(C[j]):
                cmp = f"costs {C[j]:.3g} more"
            else:
                cmp = "is not allowed (its error is not the smallest)"
            head += f"; runner-up {names[j]} {cmp}"
    else:
        best = int(np.argsort(rank)[0])
        head = f"{k}: rank {int(rank[chosen])} by cost (C = {C[chosen]:.3g}), {what}; "
        if rep.mode == "error_budget" and rep.error_budget == 0 and not rep.lossless[best]:
            head += (f"{names[best]} costs less but is lossy here, and error_budget = 0 allows only kernels "
                     "that reproduce every member tile bit for bit")
        elif rep.mode != "weights":
            budget = f"{rep.mode.replace('_', ' ')} ({rep.error_budget if rep.mode == 'error_budget' else rep.resource_budget:g})"
            worse = None
            if members is not None and members[1] == best:
                n_m, _, E2, R2 = members
                fro2 = rep.fro2 if rep.fro2 > 0 else 1.0
                if rep.mode == "resource_budget" and E2[best] > E2[chosen]:
                    # the budget minimises error over every member, not the representative's cost
                    worse = (f"{names[best]} costs less on the representative, but over the cluster's {n_m:,} "
                             f"members it leaves error {_pct(E2[best] / fro2)} of ‖A‖² against "
                             f"{_pct(E2[chosen] / fro2)} for {k}, and the {budget} asks for the least "
                             "error that fits")
                elif rep.mode == "error_budget" and R2[best] > R2[chosen]:
                    worse = (f"{names[best]} costs less on the representative, but over the cluster's {n_m:,} "
                             f"members it needs more resource than {k}, and the {budget} asks for the "
                             "least resource within it")
            head += worse or (f"{names[best]} costs less per tile, but the plan as a whole had to meet the "
                              f"{budget}")
        elif rep.fusion is not None and rep.fusion.binding and argmin != chosen:
            head += (f"{names[best]} costs less, but the plan's SRAM demand exceeds the chip "
                     f"({rep.fusion.sram_bytes_argmin:.3g} B > {rep.fusion.capacity:.3g} B) and the fusion "
                     f"weights moved this unit to a kernel with fewer payload bytes")
        else:
            head += (f"{names[best]} would cost less on this tile, but the kernel was chosen on the "
                     "cluster's representative")
    return f"{head}. ({context})" if context else head
