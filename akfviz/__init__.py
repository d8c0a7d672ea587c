"""akfviz — Adaptive Kernel Fusion of sparse matrices on a simulated neuromorphic NPU.

The public API (akf-spec §9)::

    A    = akfviz.generate(kind, n=..., density=..., seed=0, **params)
    A    = akfviz.load(path_or_bytes, fmt=None, tensor=None)
    df   = akfviz.list_tensors(path_or_bytes)          # the tensors of a .safetensors file
    df   = akfviz.matrix_choices(path_or_bytes)        # what tensor= can name (archives, .npz, .safetensors)
    A    = akfviz.prune(A, method="magnitude", sparsity=0.9)   # spec §1: magnitude, N:M or block pruning
    A    = akfviz.load(path, limits=akfviz.LoadLimits(max_nnz=500_000_000))  # raise a size limit
    pa   = akfviz.analyze(A, tile=32, lsh=None)
    plan = akfviz.select(pa, alpha=1.0, beta=1.0, error_budget=None,
                         granularity="cluster", kernels=None, hw=None)
    hw   = akfviz.HardwareConfig()
    res  = akfviz.simulate(plan, hw, x=None, iterations=1, persistent=True, fused=True)
    df   = akfviz.compare(A, hw=None, alpha=1.0, beta=1.0, tile=32)

Names are imported lazily so that ``import akfviz`` is cheap (no numba compilation).
"""
from .errors import InputError

__version__ = "0.1.0"

_LAZY = {
    "generate": ("workloads.generators", "generate"),
    "generators": ("workloads.generators", "generators"),
    "load": ("workloads.loaders", "load"),
    "list_tensors": ("workloads.loaders", "list_tensors"),
    "matrix_choices": ("workloads.loaders", "matrix_choices"),
    "prune": ("workloads.prune", "prune"),
    "LoadLimits": ("workloads.limits", "LoadLimits"),
    "analyze": ("analysis.pattern", "analyze"),
    "select": ("selection.selector", "select"),
    "HardwareConfig": ("npu.hardware", "HardwareConfig"),
    "simulate": ("npu.simulate", "simulate"),
    "compare": ("compare", "compare"),
}

__all__ = ["InputError", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'akfviz' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
