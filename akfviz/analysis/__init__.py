"""akfviz.analysis — tiling, tile features, MinHash LSH clustering (akf-spec §2).

``build_tiles(A, tile) -> TileSet``; ``analyze(A, tile=32, lsh=None) -> PatternAnalysis``;
``LSHConfig``. Submodules are imported lazily so that ``import akfviz.analysis`` does not
compile numba kernels.
"""

_LAZY = {
    "TileSet": ("tiling", "TileSet"),
    "build_tiles": ("tiling", "build_tiles"),
    "LSHConfig": ("lsh", "LSHConfig"),
    "PatternAnalysis": ("pattern", "PatternAnalysis"),
    "analyze": ("pattern", "analyze"),
}

__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'akfviz.analysis' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
