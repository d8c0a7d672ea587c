"""akfviz.npu — the simulated event-driven NPU (akf-spec §6–§7).

``HardwareConfig`` / ``EnergyTable`` (what the chip is), ``unit_costs`` (closed-form cost of a
tile alone), ``map_tiles`` (greedy + simulated annealing), ``plan_mapping`` (the placement
``simulate`` uses for a plan), ``simulate`` / ``simulate_dense`` (the event-driven engine;
the function is ``akfviz.simulate``, module ``akfviz.npu.simulate``), ``SimResult``,
``run_solver`` (iterative solvers). Imports are lazy so that ``import akfviz.npu`` does not
compile numba kernels.
"""
_LAZY = {
    "HardwareConfig": "hardware", "HARDWARE_PRESETS": "hardware",
    "EnergyTable": "energy", "EnergyEntry": "energy", "ENERGY_PRESETS": "energy",
    "unit_costs": "costmodel",
    "Mapping": "mapping", "map_tiles": "mapping",
    "simulate_dense": "simulate",  # the function simulate: akfviz.simulate (name = submodule)
    "plan_mapping": "simulate",
    "SimResult": "results",
    "run_solver": "iterative", "SolverResult": "iterative",
    "TileWork": "work",
    "csc_tilework": "tilework_builders", "dense_tilework": "tilework_builders",
}
__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'akfviz.npu' has no attribute {name!r}")
