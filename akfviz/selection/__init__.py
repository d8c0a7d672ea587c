"""akfviz.selection — the Dynamic Fuse Selector and what it stands on (akf-spec §4–§5).

* :mod:`.structure` — structure classes of tiles (diagonal, nm, block, random) and their synthetic tiles;
* :mod:`.perftable` — the hardware-calibrated performance table (polynomials in density, Horner in numba);
* :mod:`.costs` — the cost matrices ``C = alpha·E/‖A‖² + beta·R/R_dense`` per tile or cluster;
* :mod:`.selector` — ``select(pa, …) -> FusionPlan`` (``akfviz.select``), ``compare_granularity``;
* :mod:`.fusion_weights` — softmax fusion weights with an SRAM penalty and annealed entropy;
* :mod:`.budgets` — error-budget and resource-budget modes (bisection on ``alpha/beta``);
* :mod:`.pareto` — the error–resource Pareto front;
* :mod:`.explain` — why a tile or cluster got its kernel.
"""
from .budgets import BudgetResult, solve_error_budget, solve_resource_budget
from .explain import explain
from .fusion_weights import FusionResult, optimize_fusion_weights
from .pareto import ParetoFront, pareto_front
from .perftable import (MEASURE_NAMES, RESOURCES, PerformanceTable, calibrate, dense_resource,
                        performance_table, prediction_error)
from .selector import SelectionReport, compare_granularity, plan_cost, select
from .structure import CLASS_NAMES, STRUCTURE_CLASSES, classify_tiles, synthetic_tile

__all__ = [
    "BudgetResult", "solve_error_budget", "solve_resource_budget", "explain", "FusionResult",
    "optimize_fusion_weights", "ParetoFront", "pareto_front", "MEASURE_NAMES", "RESOURCES",
    "PerformanceTable", "calibrate", "dense_resource", "performance_table", "prediction_error",
    "SelectionReport", "compare_granularity", "plan_cost", "select", "CLASS_NAMES", "STRUCTURE_CLASSES",
    "classify_tiles", "synthetic_tile",
]
