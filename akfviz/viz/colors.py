"""One fixed colour per kernel family, used on every page and every figure.

Kernel names in the registry may carry a variant suffix ("NM2:4", "LOWRANK4",
"QUANT8D"); the colour belongs to the *family* ("NM", "LOWRANK", "QUANT8"), so the
same family looks the same everywhere (akf-spec §3's catalogue, §10 "one fixed colour per
kernel family"). The family of a registered kernel is its ``Kernel.family`` in
:data:`akfviz.kernels.registry.KERNELS`; only names the registry does not know fall back to
the longest known family prefix. Unknown families get a stable colour derived from their
name (never a random one).
"""
from __future__ import annotations

import hashlib

# Family -> colour. Exact kernels in cool/neutral colours, lossy kernels in warm colours,
# SKIP in light grey (it draws nothing).
FAMILY_COLORS: dict[str, str] = {
    "DENSE": "#1f4e79",
    "CSC": "#2e86c1",
    "BITMAP": "#17a589",
    "DIA": "#7d3c98",
    "BLOCK": "#5d6d7e",
    "NM": "#d4ac0d",
    "PRUNE": "#e67e22",
    "QUANT8": "#c0392b",
    "LOWRANK": "#e84393",
    "SKIP": "#cfd3d6",
}
FAMILY_ORDER: tuple[str, ...] = tuple(FAMILY_COLORS)

_FALLBACK = ("#8e6c8a", "#6b8e23", "#b8860b", "#4682b4", "#a0522d", "#2f4f4f", "#9acd32", "#708090")


def _registered_family(name) -> str | None:
    """``Kernel.family`` of the registered kernel called ``name`` (any spelling
    :func:`~akfviz.kernels.registry.get_kernel` accepts), or ``None`` for a name the registry
    does not know (or a family name such as ``"NM"`` that stands for several kernels)."""
    from ..errors import InputError
    from ..kernels import registry

    if not isinstance(name, str):
        return None
    kernel = registry.KERNELS.get(name)
    if kernel is None:
        try:
            kernel = registry.get_kernel(name)
        except InputError:
            return None
    return str(kernel.family).upper()


def kernel_family(name: str, family: str | None = None) -> str:
    """Family of a kernel name, the key of its fixed colour (akf-spec §3).

    In order: the explicit ``family`` if given; else ``get_kernel(name).family`` when ``name``
    is a registered kernel (so a kernel whose name starts with another family's name still
    gets its own family); else, for a name the registry does not know, the longest family of
    :data:`FAMILY_ORDER` that prefixes ``name`` (case-insensitive); else ``name`` upper-cased.

    >>> kernel_family("NM2:4"), kernel_family("lowrank4"), kernel_family("QUANT8D")
    ('NM', 'LOWRANK', 'QUANT8')
    >>> kernel_family("CSC_NEW"), kernel_family("MYSTERY")
    ('CSC', 'MYSTERY')
    """
    if family:
        return str(family).upper()
    registered = _registered_family(name)
    if registered:
        return registered
    upper = str(name).upper()
    best = ""
    for fam in FAMILY_ORDER:
        if upper.startswith(fam) and len(fam) > len(best):
            best = fam
    return best or upper


def family_color(family: str) -> str:
    """The fixed colour of a kernel family (stable hash-derived colour for unknown families)."""
    fam = str(family).upper()
    if fam in FAMILY_COLORS:
        return FAMILY_COLORS[fam]
    digest = hashlib.sha256(fam.encode()).digest()
    return _FALLBACK[digest[0] % len(_FALLBACK)]


def kernel_color(name: str, family: str | None = None) -> str:
    """Colour of a kernel: the colour of its family."""
    return family_color(kernel_family(name, family))


def families_in(names, families: dict | None = None) -> list[str]:
    """Families present in ``names`` in the fixed display order (unknown ones last, sorted)."""
    fams = {kernel_family(n, (families or {}).get(n)) for n in names}
    known = [f for f in FAMILY_ORDER if f in fams]
    return known + sorted(fams - set(known))


# Qualitative palette for cluster ids (cycled; clusters are not kernel families).
CLUSTER_PALETTE: tuple[str, ...] = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
)
