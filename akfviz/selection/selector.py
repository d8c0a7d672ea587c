"""The Dynamic Fuse Selector (akf-spec §5; paper §3–4): ``select(pa, …) -> FusionPlan``.

Cost of kernel ``k`` on tile ``t``::

    C(t, k) = alpha · E(t, k) / ‖A‖_F²  +  beta · R(t, k) / R_dense

``E`` is exact (``batch_error``), ``R`` comes from the performance table in the chosen measure
(energy pJ, cycles, payload bytes, or ``mix`` = the mean of the three, each as a share of Dense), and
``R_dense`` is the whole matrix under DENSE with every tile slot — empty ones included — priced by the
same table, by shape (four shapes at most, see :func:`.perftable.dense_resource`), never by
enumerating empty tiles.

Granularity ``"tile"``: exact argmin per tile (the reference). Granularity ``"cluster"``: the
argmin on each LSH cluster's representative, applied to every member; the plan then measures the
error on every member. Modes: plain weights (``alpha``, ``beta``, then the fusion weights of
:mod:`.fusion_weights` with the chip's SRAM as a soft constraint), ``error_budget`` and
``resource_budget`` (:mod:`.budgets`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..arguments import check_flag, check_real, check_seed
from ..errors import InputError, checked_call
from ..memory import check_memory
from .budgets import check_budget, solve_error_budget, solve_resource_budget
from .costs import SelectionProblem, check_granularity, check_pa, resolve_candidates
from .fusion_weights import FusionResult, optimize_fusion_weights
from .perftable import check_resource, check_rho_x

#: Above this many units, tile mode skips the fusion-weight descent when the SRAM constraint does not
#: bind (its result is then the per-tile argmin anyway); cluster mode always runs it.
FUSION_MAX_UNITS = 20000
#: How a selection note that says the fusion descent was left out begins (the Kernels page
#: shows that note as the reason there is no trajectory: :func:`akfviz.viz.kernels.no_fusion_reason`).
FUSION_SKIPPED = "fusion descent skipped:"
#: In cluster mode the cost gap to tile mode is computed automatically (``cost_gap=None``) when the matrix
#: has at most this many tiles: tile mode computes every lossy kernel's error on every tile (LOWRANK's SVDs
#: take ~1 ms per tile), so beyond that it is no longer cheap; ask for it with ``cost_gap=True``.
GAP_MAX_TILES = 256
#: Memory of a selection, measured on 1M one-nonzero tiles (peak over the call): ≈ 140 bytes per
#: tile in cluster mode (the plan), plus ≈ 60 bytes per decision unit and candidate kernel
#: (errors, resources, costs, SRAM bytes; ≈ 1,050 bytes per tile in tile mode with 17 kernels).
SELECT_BYTES_PER_TILE = 200
SELECT_BYTES_PER_UNIT_KERNEL = 64


@dataclass(eq=False)
class SelectionReport:
    """Everything the selector decided and why (``plan.selection``).

    Attributes
    ----------
    alpha, beta : float
        Effective weights (in budget modes ``alpha = λ``, ``beta = 1``; ``alpha = inf`` means
        "error first").
    multiplier : float
        ``alpha / beta``.
    measure : str
        Resource measure.
    granularity : str
    mode : str
        ``"weights"``, ``"error_budget"`` or ``"resource_budget"``.
    candidates : tuple of str
    lossless : ndarray of bool (K,)
    units : ndarray (n_units,)
        Tile row (in ``pa.tiles``) of each decision unit: cluster representatives or every tile.
    unit_cluster, unit_size, unit_class : ndarray (n_units,)
    E, R, En, Rn, C : ndarray (n_units, K)
        Error, resource, their normalised shares, and the cost of every candidate on every unit.
        In cluster mode ``E`` is the representative's error scaled to the members' mean
        ``‖t‖²_F``, or, where ``sampled``, the members' mean error estimated on up to
        :data:`~.costs.MEMBER_SAMPLE` of the cluster's pairs (akf-spec §5).
    sampled : ndarray of bool (n_units, K) or None
        The entries of ``E`` measured on sampled members: lossy kernels exact on the cluster's
        representative that could be chosen
        (:meth:`.costs.SelectionProblem._estimate_where_the_representative_is_exact`).
    sram_bytes : ndarray (n_units, K)
        Payload bytes per tile of the unit under each candidate.
    argmin : ndarray (n_units,)
        Per-unit argmin of ``C`` (index into ``candidates``).
    chosen : ndarray (n_units,)
        The kernel actually chosen per unit (differs from ``argmin`` only when a binding SRAM
        constraint or a budget mode decided otherwise).
    fro2, R_dense, R_dense_by_measure
        ``‖A‖_F²``, the Dense resource in the measure, and in every measure.
    resource, resource_share : float
        Total table resource of the plan and its share of ``R_dense``.
    predicted_error : float
        Relative error of the choice summed from exact member errors (equals the plan's
        ``relative_error`` up to rounding: a LOWRANK kernel on a tile of rank ≤ r counts as error 0,
        while its SVD factors reproduce the tile to rounding, ~1e-16). An error budget is kept by
        the plan's ``relative_error``, not by this number (:func:`_keep_error_budget`).
    error_budget, resource_budget : float or None
    fusion : FusionResult or None
    budget_trace : DataFrame or None
        Budget modes: a row per plan the search measured, ``lambda, error, resource, feasible,
        step, kept`` — ``step`` ``search`` for a multiplier's plan, else (``lambda`` NaN) ``fill``
        (the greedy fill between the bracket's two plans), ``exact`` / ``front`` (the merged front
        of a small / medium problem) or ``exchange`` (single and pair moves; :mod:`.budgets`);
        ``kept`` marks the plan returned. When
        the search's plan measured more error than an error budget allows, the trace of the search
        that replaced it (:func:`_keep_error_budget`; a note says so).
    cost_gap : dict or None
        Cluster mode vs the tile-mode argmin on the same matrix, when cheap (≤ GAP_MAX_TILES tiles).
    timings : dict
        Seconds per stage.
    notes : list of str
    edges : EdgePrices or None
        Exact prices of the matrix's edge tiles (:mod:`.edgecost`), which ``R`` uses for them.
    """

    alpha: float
    beta: float
    multiplier: float
    measure: str
    granularity: str
    mode: str
    candidates: tuple
    lossless: np.ndarray
    units: np.ndarray
    unit_cluster: np.ndarray
    unit_size: np.ndarray
    unit_class: np.ndarray
    E: np.ndarray
    R: np.ndarray
    En: np.ndarray
    Rn: np.ndarray
    C: np.ndarray
    sram_bytes: np.ndarray
    argmin: np.ndarray
    chosen: np.ndarray
    fro2: float
    R_dense: float
    R_dense_by_measure: dict
    resource: float
    resource_share: float
    predicted_error: float
    rho_x: float
    hw_hash: str
    table: object = None
    error_budget: float | None = None
    resource_budget: float | None = None
    fusion: FusionResult | None = None
    budget_trace: pd.DataFrame | None = None
    cost_gap: dict | None = None
    timings: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    sampled: np.ndarray | None = None
    edges: object = None

    @property
    def per_unit(self) -> pd.DataFrame:
        """One row per unit: cluster, representative tile, size, class, chosen kernel, its E, R, C."""
        ar = np.arange(self.units.size)
        names = np.asarray(self.candidates, dtype=object)
        from .structure import CLASS_NAMES

        return pd.DataFrame({
            "cluster": self.unit_cluster, "tile": self.units, "size": self.unit_size,
            "class": np.asarray(CLASS_NAMES, dtype=object)[self.unit_class] if self.units.size else [],
            "kernel": names[self.chosen] if self.units.size else [],
            "argmin_kernel": names[self.argmin] if self.units.size else [],
            "E": self.E[ar, self.chosen], "R": self.R[ar, self.chosen], "C": self.C[ar, self.chosen],
        })

    @property
    def fusion_trajectory(self) -> pd.DataFrame:
        """The fusion-weight descent trajectory (empty when it did not run)."""
        if self.fusion is None:
            return pd.DataFrame(columns=["step", "cost", "entropy", "temperature", "penalty", "sram_bytes"])
        return self.fusion.trajectory

    def to_dict(self, timings: bool = False) -> dict:
        """Plain JSON-able summary: the same selection gives the same dict, bit for bit.

        ``timings=True`` adds ``"timings"``, the stages' wall-clock seconds (they differ from
        run to run)."""
        d = {"alpha": _num(self.alpha), "beta": _num(self.beta), "multiplier": _num(self.multiplier),
             "measure": self.measure, "granularity": self.granularity, "mode": self.mode,
             "candidates": list(self.candidates), "n_units": int(self.units.size),
             "resource": float(self.resource), "resource_share": float(self.resource_share),
             "R_dense": float(self.R_dense), "predicted_error": float(self.predicted_error),
             "error_budget": self.error_budget, "resource_budget": self.resource_budget,
             "rho_x": float(self.rho_x), "hw_hash": self.hw_hash,
             "notes": list(self.notes)}
        if timings:
            d["timings"] = {k: float(v) for k, v in self.timings.items()}
        if self.fusion is not None:
            d["fusion"] = self.fusion.to_dict()
        if self.cost_gap is not None:
            d["cost_gap"] = {k: _num(v) for k, v in self.cost_gap.items()}
        return d


def _num(v):
    v = float(v)
    return v if np.isfinite(v) else str(v)


@checked_call
def select(pa, alpha=1.0, beta=1.0, error_budget=None, granularity="cluster", kernels=None, hw=None, *,
           resource="energy", resource_budget=None, rho_x=1.0, fusion=True, sram_penalty=10.0, seed=0,
           cost_gap=None):
    """Choose a kernel for every nonempty tile and return the fused plan (akf-spec §5, §9).

    Parameters
    ----------
    pa : PatternAnalysis
        From ``akfviz.analyze(A, tile)``.
    alpha, beta : float ≥ 0, not both 0
        Weights of the error share ``E/‖A‖_F²`` and of the resource share ``R/R_dense``.
    error_budget : float ≥ 0, optional
        Maximum relative error ``‖A − Â‖_F/‖A‖_F``; the plan with the least resource within it is
        found by bisection on ``alpha/beta`` (then ``alpha``/``beta`` are ignored). ``0`` gives the exact
        plan of least resource: lossless kernels, and lossy ones where they reproduce every
        member tile bit for bit (NM2:4 on complying tiles). The returned plan's own
        ``relative_error`` is ≤ the budget (a search whose plan measures more, by rounding, is
        repeated with a lower budget, down to the exact plan).
    granularity : {"cluster", "tile"}
        Decide on each LSH cluster's representative (fast) or on every tile (exact reference).
    kernels : list of str, optional
        Candidate kernels (default ``akfviz.kernels.registry.DEFAULT_CANDIDATES``).
    hw : HardwareConfig, optional
        Hardware the performance table is calibrated for (default ``HardwareConfig()``).
    resource : {"energy", "cycles", "bytes", "mix"}
        Resource measure R (``mix`` = mean of the three shares of Dense).
    resource_budget : float ≥ 0, optional
        Maximum resource as a share of ``R_dense``; the least-error plan within it (mirror of
        ``error_budget``; give at most one of the two).
    rho_x : float in (0, 1]
        Activation density of the input vector the costs assume.
    fusion : bool
        Run the fusion-weight descent with the chip's SRAM as a soft capacity (plain mode only).
    sram_penalty : float ≥ 0
        Penalty weight of SRAM overflow in the fusion weights.
    seed : int
        Seed of the performance table's synthetic calibration tiles.
    cost_gap : bool or None
        In cluster mode (plain weights), also run the tile-mode argmin and report the cost gap in
        ``plan.selection.cost_gap``; ``None`` = only when the matrix has at most ``GAP_MAX_TILES`` tiles.

    Returns
    -------
    FusionPlan
        ``plan.tile_kernels`` aligned with ``pa.tiles``; ``plan.resource`` the total predicted resource in
        the measure's absolute units; ``plan.selection`` a :class:`SelectionReport`.

    Notes
    -----
    ``C(t,k) = alpha·E(t,k)/‖A‖_F² + beta·R(t,k)/R_dense`` (akf-spec §5).

    Examples
    --------
    >>> import akfviz
    >>> A = akfviz.generate("banded", n=256, seed=0)                       # doctest: +SKIP
    >>> plan = akfviz.select(akfviz.analyze(A, tile=32), error_budget=0)   # doctest: +SKIP
    >>> plan.relative_error                                                # doctest: +SKIP
    0.0
    """
    from ..execute.plan import FusionPlan
    from ..npu.hardware import as_hardware

    t0 = time.perf_counter()
    check_pa(pa)
    alpha = check_real(alpha, "alpha")
    beta = check_real(beta, "beta")
    if alpha == 0 and beta == 0 and error_budget is None and resource_budget is None:
        raise InputError("alpha and beta are both 0, so every kernel costs nothing; make at least one > 0.")
    if error_budget is not None and resource_budget is not None:
        raise InputError("Give either error_budget or resource_budget, not both.")
    if error_budget is not None:
        error_budget = check_budget(error_budget, "error_budget")
    if resource_budget is not None:
        resource_budget = check_budget(resource_budget, "resource_budget")
    granularity = check_granularity(granularity)
    resource = check_resource(resource)
    rho_x = check_rho_x(rho_x)
    penalty = check_real(sram_penalty, "sram_penalty")
    fusion = check_flag(fusion, "fusion")
    if cost_gap is not None:
        cost_gap = check_flag(cost_gap, "cost_gap")
    seed = check_seed(seed)
    candidates = resolve_candidates(kernels)
    hw = as_hardware(hw)
    units = pa.n_tiles if granularity == "tile" else pa.n_clusters
    check_memory(SELECT_BYTES_PER_TILE * pa.n_tiles + SELECT_BYTES_PER_UNIT_KERNEL * units * len(candidates),
                 f"Selecting kernels for {pa.n_tiles:,} tiles ({units:,} {granularity} decisions × "
                 f"{len(candidates)} candidate kernels)",
                 "Use a larger tile side T, cluster granularity or fewer candidate kernels.")

    prob = SelectionProblem(pa, candidates, hw, resource=resource, granularity=granularity,
                            rho_x=rho_x, seed=int(seed))
    timings = dict(prob.timings)
    notes = []
    t1 = time.perf_counter()
    fusion_res = None
    trace = None
    if error_budget is not None or resource_budget is not None:
        br = solve_error_budget(prob, error_budget) if error_budget is not None else \
            solve_resource_budget(prob, resource_budget)
        choice, mode, trace = br.choice, br.mode, br.trace
        alpha_eff, beta_eff = br.multiplier, 1.0
        argmin = prob.argmin(alpha_eff, beta_eff, mask=br.mask)
        if fusion:
            notes.append("fusion weights are not run in budget modes (the budget is the constraint)")
        if resource_budget is not None and granularity == "cluster" and prob.R_dense > 0 and prob.n_units \
                and br.resource < 0.8 * resource_budget * prob.R_dense:
            notes.append(f"the plan uses {br.resource / prob.R_dense:.3g} of the {resource_budget:g} allowed: "
                         f"cluster mode switches whole clusters (the largest holds {int(prob.unit_size.max()):,} of "
                         f"{prob.n_tiles:,} tiles), so no cluster's next kernel fits in the rest; tile "
                         f"mode can use the budget more finely")
    else:
        mode = "weights"
        alpha_eff, beta_eff = alpha, beta
        argmin = prob.argmin(alpha, beta)
        choice = argmin
        if fusion and prob.n_units:
            cap = float(hw.total_sram_bytes)
            s_arg = float((prob.unit_size * prob.bytes[np.arange(prob.n_units), argmin]).sum())
            if granularity == "tile" and prob.n_units > FUSION_MAX_UNITS and s_arg <= cap:
                notes.append(f"{FUSION_SKIPPED} {prob.n_units} tiles and the argmin plan fits "
                             "in SRAM, so its result is the argmin")
            else:
                # The capacity is traded for resource, never for accuracy: a unit may move only to a
                # kernel no less accurate than its argmin. Without that rule the penalty drove whole
                # plans to SKIP or PRUNE25 (100 % / 64 % error, shown as a 988× "speedup" on a 4×4
                # chip of 8 KiB per PE) and more SRAM could give a worse plan. When even the smallest
                # footprint of those kernels exceeds the chip, the penalty is off: the overflow
                # streams from DRAM, which the table prices, as on a chip with no SRAM.
                C = prob.cost(alpha, beta)
                units = np.arange(prob.n_units)
                e_arg = prob.E[units, argmin][:, None]
                allowed = prob.E <= e_arg + 1e-12 * np.maximum(np.abs(e_arg), 1e-300)
                floor = float((prob.unit_size * np.where(allowed, prob.bytes, np.inf).min(axis=1)).sum())
                unreachable = 0 < cap < floor and s_arg > cap
                fusion_res = optimize_fusion_weights(C, prob.unit_size, prob.bytes, cap,
                                                     penalty=0.0 if unreachable else penalty, argmin=argmin,
                                                     allowed=allowed)
                choice = fusion_res.choice
                if unreachable:
                    notes.append(f"the SRAM penalty of the fusion weights is off: even the smallest payload "
                                 f"of kernels no less accurate than the argmin ({floor:.3g} B) exceeds the "
                                 f"chip's {cap:.3g} B, so meeting it would cost accuracy; the overflow streams "
                                 "from DRAM instead, which the table prices")
                elif fusion_res.binding:
                    notes.append(f"SRAM constraint binds: the argmin plan needs "
                                 f"{fusion_res.sram_bytes_argmin:.3g} B, the chip has {cap:.3g} B")
                elif cap <= 0:
                    notes.append("the chip has no SRAM: every payload streams from DRAM (the table prices "
                                 "it), so the SRAM penalty of the fusion weights is off")
    timings["decide"] = time.perf_counter() - t1

    def build(choice, alpha_eff, beta_eff, argmin, trace):
        t2 = time.perf_counter()
        total_r, tile_kernels = prob.expand(choice)
        # the exact member errors are already known in tile mode and in budget modes; in cluster mode
        # with plain weights the plan measures them (once) and the report takes the plan's number below
        known = prob.n_units == 0 or mode != "weights" or prob.granularity == "tile"
        err2 = float(prob.member_error_sums(choice).sum()) if prob.n_units and known else 0.0
        predicted = (float(np.sqrt(err2 / prob.fro2)) if prob.fro2 > 0 else 0.0) if known else float("nan")
        timings["expand"] = timings.get("expand", 0.0) + time.perf_counter() - t2
        report = SelectionReport(
            alpha=alpha_eff, beta=beta_eff,
            multiplier=(alpha_eff / beta_eff) if beta_eff > 0 else np.inf,
            measure=resource, granularity=granularity, mode=mode, candidates=candidates,
            lossless=prob.lossless, units=prob.units, unit_cluster=prob.unit_cluster, unit_size=prob.unit_size,
            unit_class=prob.unit_cls, E=prob.E, R=prob.R, En=prob.En, Rn=prob.Rn,
            C=prob.cost(alpha_eff, beta_eff), sram_bytes=prob.bytes,
            argmin=argmin, chosen=np.asarray(choice, dtype=np.int64), fro2=prob.fro2, R_dense=prob.R_dense,
            R_dense_by_measure=dict(prob.R_dense_by_measure), resource=total_r,
            resource_share=total_r / prob.R_dense if prob.R_dense > 0 else 0.0,
            predicted_error=predicted,
            rho_x=rho_x, hw_hash=prob.hw_hash, table=prob.table,
            error_budget=error_budget, resource_budget=resource_budget, fusion=fusion_res,
            budget_trace=trace, timings=timings, notes=notes, sampled=prob.sampled,
            edges=prob.edges,
        )
        t3 = time.perf_counter()
        plan = FusionPlan(pa, tile_kernels, resource=total_r, selection=report)
        timings["plan"] = timings.get("plan", 0.0) + time.perf_counter() - t3
        return plan

    plan = build(choice, alpha_eff, beta_eff, argmin, trace)
    if mode == "error_budget" and plan.relative_error > error_budget:
        plan = _keep_error_budget(prob, plan, error_budget, build, notes)
    report = plan.selection
    if not np.isfinite(report.predicted_error):
        report.predicted_error = float(plan.relative_error)
    want_gap = (0 < prob.n_tiles <= GAP_MAX_TILES) if cost_gap is None else bool(cost_gap)
    if granularity == "cluster" and mode == "weights" and prob.n_tiles > 0 and want_gap:
        t4 = time.perf_counter()
        report.cost_gap = _cost_gap_vs_tile(pa, plan, candidates, hw, resource, rho_x, seed, alpha, beta)
        timings["cost_gap"] = time.perf_counter() - t4
    timings["total"] = time.perf_counter() - t0
    return plan


#: Searches of :func:`_keep_error_budget` with a tightened budget before it takes the exact plan.
BUDGET_RETRIES = 4


def _keep_error_budget(prob, plan, eps, build, notes):
    """A plan whose own ``relative_error`` (``sqrt(Σ_t E_t) / ||A||_F`` over the tiles as encoded,
    akf-spec §3) keeps the error budget ``eps``, given the search's ``plan`` that does not.

    The search measures a choice by :meth:`.costs.SelectionProblem.evaluate`, ``sqrt(Σ_u Σ_t E / ||A||²)``
    with exact member errors; the plan sums its tiles' errors in another order and divides after
    the root, so the two differ in their last bits (one ulp over the budget when ``eps`` is a plan's
    own error), and a LOWRANK kernel on a tile of rank ≤ r counts as ``E = 0`` (the singular values'
    tail) while its stored factors reproduce the tile only to ~1e-16 (a budget of 1e-18 got a plan
    at 1.5e-16). The search is repeated with the budget lowered by twice the excess the plan
    measured over the search (at least one ulp), at most :data:`BUDGET_RETRIES` times, doubling the
    margin each time; when the lowered budget reaches 0, or the retries run out, the ``eps = 0`` rules
    (kernels that reproduce every member tile bit for bit) give a plan of error 0. Raises
    :class:`InputError` when no plan keeps ``eps`` as measured."""
    first = float(plan.relative_error)
    target, factor = eps, 2.0
    for attempt in range(BUDGET_RETRIES + 1):
        excess = float(plan.relative_error) - float(plan.selection.predicted_error)
        target = target - max(factor * excess, np.spacing(target)) if attempt < BUDGET_RETRIES else 0.0
        factor *= 2.0
        exact = not target > 0.0
        try:
            br = solve_error_budget(prob, 0.0 if exact else target)
        except InputError:
            raise InputError(
                f"No plan with these candidate kernels reaches relative error ≤ {eps:g} as the plan "
                f"measures it (the search's best plan measured {first:.3g}: LOWRANK's factors and "
                "the sums carry rounding of about 1e-16); raise the error budget or add lossless "
                "kernels.") from None
        plan = build(br.choice, br.multiplier, 1.0, prob.argmin(br.multiplier, 1.0, mask=br.mask), br.trace)
        if plan.relative_error <= eps:
            break
        if exact:   # cannot happen: every kernel of an exact plan reproduces its tiles bit for bit
            raise InputError(f"No plan with these candidate kernels reaches relative error ≤ {eps:g} "
                             f"as the plan measures it (the closest measured {plan.relative_error:.3g}).")
    how = "the exact plan (error_budget=0 rules)" if exact else f"a search within {target:.17g}"
    notes.append(f"the search's plan measured relative error {first:.17g} over the budget {eps:.17g} "
                 "(its tiles' error sums round differently from the search's, and LOWRANK's factors "
                 f"carry rounding where its rank fits); taken instead: {how}")
    return plan


def plan_cost(plan, alpha=None, beta=None) -> float:
    """Total cost ``alpha·ΣE/‖A‖² + beta·ΣR/R_dense`` of a selected plan, with every tile's measured
    error (``plan.tile_errors``) and the table's resource (``plan.resource``)."""
    rep = plan.selection
    a = rep.alpha if alpha is None else alpha
    b = rep.beta if beta is None else beta
    e = float(np.sum(plan.tile_errors)) / rep.fro2 if rep.fro2 > 0 else 0.0
    r = float(plan.resource) / rep.R_dense if rep.R_dense > 0 else 0.0
    return a * e + b * r


def _cost_gap_vs_tile(pa, plan, candidates, hw, resource, rho_x, seed, alpha, beta) -> dict:
    prob = SelectionProblem(pa, candidates, hw, resource=resource, granularity="tile", rho_x=rho_x, seed=seed)
    ch = prob.argmin(alpha, beta)
    err, res = prob.evaluate(ch)
    tile_cost = alpha * (err ** 2) + beta * (res / prob.R_dense if prob.R_dense > 0 else 0.0)
    cl_cost = plan_cost(plan, alpha, beta)
    return {"cluster_cost": cl_cost, "tile_cost": tile_cost,
            "gap": (cl_cost - tile_cost) / tile_cost if tile_cost > 0 else 0.0,
            "tiles_differing": int(np.count_nonzero(np.asarray(plan.tile_kernels, dtype=object)
                                                    != np.asarray(candidates, dtype=object)[ch]))}


def compare_granularity(pa, alpha=1.0, beta=1.0, kernels=None, hw=None, *, resource="energy", rho_x=1.0,
                        seed=0, repeats=1) -> pd.DataFrame:
    """Run the selector in cluster and tile mode on the same analysis and compare (akf-spec §5).

    Both runs use the plain weights without the fusion descent, so the comparison isolates granularity.

    Returns
    -------
    DataFrame indexed ``["cluster", "tile"]`` with ``seconds`` (median of ``repeats`` wall times),
    ``cost`` (``plan_cost`` with measured member errors), ``relative_error``, ``resource``,
    ``resource_share``, ``n_units``, plus ``cost_gap`` (relative excess cost of cluster mode over tile
    mode) and ``speedup`` (tile seconds / cluster seconds), repeated on both rows.
    """
    rows = {}
    for g in ("cluster", "tile"):
        times, plan = [], None
        for _ in range(max(1, int(repeats))):
            t0 = time.perf_counter()
            plan = select(pa, alpha, beta, granularity=g, kernels=kernels, hw=hw, resource=resource,
                          rho_x=rho_x, fusion=False, seed=seed, cost_gap=False)
            times.append(time.perf_counter() - t0)
        rep = plan.selection
        rows[g] = {"seconds": float(np.median(times)), "cost": plan_cost(plan, alpha, beta),
                   "relative_error": float(plan.relative_error), "resource": float(plan.resource),
                   "resource_share": float(rep.resource_share), "n_units": int(rep.units.size)}
    df = pd.DataFrame.from_dict(rows, orient="index")
    tc = df.loc["tile", "cost"]
    df["cost_gap"] = (df.loc["cluster", "cost"] - tc) / tc if tc > 0 else 0.0
    cs = df.loc["cluster", "seconds"]
    df["speedup"] = df.loc["tile", "seconds"] / cs if cs > 0 else np.inf
    return df
