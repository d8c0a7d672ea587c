"""The kernel catalogue (akf-spec §3): one module per kernel family, one registry.

>>> from akfviz.kernels import get_kernel
>>> get_kernel("CSC").lossless
True
"""
from .base import Kernel, TileApprox
from .registry import (DEFAULT_CANDIDATES, FAMILIES, KERNELS, LOSSLESS, expand_kernel_names,
                       get_kernel, kernel_names)

__all__ = ["Kernel", "TileApprox", "KERNELS", "FAMILIES", "LOSSLESS", "DEFAULT_CANDIDATES",
           "get_kernel", "expand_kernel_names", "kernel_names"]
