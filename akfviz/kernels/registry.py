"""The kernel registry (akf-spec §3): look kernels up by name, never by if/elif.

``KERNELS`` maps the exact names used by the selector and the app to kernel objects.

Adding a kernel
---------------
1. Write a module with a :class:`~akfviz.kernels.base.Kernel` subclass that sets the class
   attributes ``name`` (the registry key), ``family`` (its colour in the app; a variant of
   an existing family uses that family's name, e.g. ``"QUANT8"`` for QUANT8D),
   ``lossless``, ``precision`` (``"fp32"`` or ``"int8"``), ``description``,
   ``exec_format`` (the fused executor's storage format, ``"none"`` for a tile that is not
   stored) and ``entry_format`` (whether its ``Â`` is a set of entries the executor may merge
   into the residual), and implements ``encode``, ``decode``, ``payload_bytes``, ``approx``
   and ``npu_work`` as documented on :class:`~akfviz.kernels.base.Kernel` (the batch and
   single-tile payload bytes must agree: write the formula once, as a function of the
   tile's counts that takes scalars or arrays, e.g. :func:`~akfviz.kernels.dia.dia_bytes`,
   and call it from both).
2. Add its object to the tuple of :data:`KERNELS` below (the order is the display order and
   that of :data:`DEFAULT_CANDIDATES`).

That is all when ``exec_format`` is one of the existing formats
(:data:`akfviz.execute.packing.EXEC_FORMATS`; those of ``RESIDUAL_ONLY_FORMATS`` have no
layout of their own, every tile of theirs runs from the compressed-row residual). A **new
storage format** also needs its executor: the name in ``FORMATS`` and ``EXEC_FORMATS`` and a
``pack_<format>`` packer with its ``empty_pack`` entry (:mod:`akfviz.execute.packing`), a
residual rule in ``_FORMAT_RULES`` if it differs from the ``entry_format`` default and its
packer in ``_ENTRY_PACKERS`` (:mod:`akfviz.execute.fused`),
and the per-tile ``_mv_<format>`` / ``_mm_<format>`` loops wired into the fused mat-vec and
mat-mat passes (:mod:`akfviz.execute.tile_kernels`). A new family also needs its colour in
:data:`akfviz.viz.colors.FAMILY_COLORS` (the app tests check every registered family has one).
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


def _families() -> dict:
    """Every ``Kernel.family`` with several registered variants → its kernel names (registry
    order). A family named like one of its members (QUANT8: QUANT8 and QUANT8D) is called by
    its name without the trailing digits (QUANT), so the name keeps meaning that one kernel."""
    groups: dict = {}
    for name, kernel in KERNELS.items():
        groups.setdefault(kernel.family, []).append(name)
    return {(fam.rstrip("0123456789") if fam in KERNELS else fam): tuple(names)
            for fam, names in groups.items() if len(names) > 1}


#: Family names of akf-spec §3's catalogue, each standing for all of its registered variants
#: (``kernels=["NM"]`` means every N:M pattern): NM, PRUNE, QUANT, LOWRANK.
FAMILIES: dict[str, tuple] = _families()


def _key(name: str) -> str:
    """Spelling-insensitive key: upper case, without spaces, ``_`` and ``-``
    (``"nm 2:4"``, ``"Low-Rank4"`` and ``"NM2:4"`` / ``"LOWRANK4"`` are the same)."""
    return "".join(ch for ch in name.upper() if ch not in " _-")


_BY_KEY = {_key(n): n for n in KERNELS}
_FAMILY_BY_KEY = {_key(f): f for f in FAMILIES}


def expand_kernel_names(name) -> tuple:
    """Registered names meant by ``name``: one kernel (any spelling of its name), or every
    variant of a family of akf-spec §3 (``"NM"``, ``"PRUNE"``, ``"QUANT"``, ``"LOWRANK"``).

    Raises
    ------
    InputError
        Neither a kernel nor a family; the message lists both.
    """
    if not isinstance(name, str):
        raise InputError(f"Kernel names must be strings, got {name!r}.")
    k = _key(name)
    if k in _BY_KEY:
        return (_BY_KEY[k],)
    if k in _FAMILY_BY_KEY:
        return FAMILIES[_FAMILY_BY_KEY[k]]
    raise InputError(
        f"Unknown kernel {name!r}. Valid kernels: {', '.join(KERNELS)}; or a family: "
        f"{', '.join(f'{f} ({len(v)} variants)' for f, v in FAMILIES.items())}."
    )


def kernel_names() -> list:
    """Registered kernel names, in registry order."""
    return list(KERNELS)


def get_kernel(name) -> Kernel:
    """The kernel called ``name`` (e.g. ``"NM2:4"``; case, spaces, ``_`` and ``-`` ignored).

    Raises
    ------
    InputError
        Unknown name, or a family name (``"NM"``) where one kernel is needed; the message
        lists the valid names.
    """
    if isinstance(name, Kernel):
        return name
    if isinstance(name, str) and name in KERNELS:
        return KERNELS[name]
    names = expand_kernel_names(name)
    if len(names) > 1:
        raise InputError(f"{name!r} is a family of kernels ({', '.join(names)}); name one of them.")
    return KERNELS[names[0]]
