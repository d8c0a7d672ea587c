"""The kernel registry (akf-spec §3): look kernels up by name, never by if/elif.

``KERNELS`` maps the exact names used by the selector and the app to kernel objects.
Adding a kernel is adding a module and one line here.
"""
from __future__ import annotations

from ..errors import InputError
from .base import Kernel
from .bitmap import BITMAP
from .block import BLOCK
from .csc import CSC
from .dense import DENSE
from .dia import DIA
from .lowrank import LOWRANK1, LOWRANK2, LOWRANK4, LOWRANK8
from .nm import NM1_4, NM2_4, NM4_8
from .prune import PRUNE25, PRUNE50
from .quant import QUANT8, QUANT8D
from .skip import SKIP

KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (DENSE, CSC, BITMAP, DIA, BLOCK, NM2_4, NM1_4, NM4_8, PRUNE50, PRUNE25,
              QUANT8, QUANT8D, LOWRANK1, LOWRANK2, LOWRANK4, LOWRANK8, SKIP)
}

#: Names of the kernels that are exact on every tile.
LOSSLESS: tuple = tuple(n for n, k in KERNELS.items() if k.lossless)

#: The selector's default candidate list: every registered kernel.
DEFAULT_CANDIDATES: tuple = tuple(KERNELS)


def kernel_names() -> list:
    """Registered kernel names, in registry order."""
    return list(KERNELS)


def get_kernel(name) -> Kernel:
    """The kernel called ``name`` (exact string, e.g. ``"NM2:4"``).

    Raises
    ------
    InputError
        Unknown name; the message lists the valid names.
    """
    if isinstance(name, Kernel):
        return name
    try:
        return KERNELS[name]
    except (KeyError, TypeError):
        raise InputError(
            f"Unknown kernel {name!r}. Valid kernels: {', '.join(KERNELS)}."
        ) from None
