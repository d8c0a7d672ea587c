"""One fixed colour per kernel family, used on every page and every figure.

Kernel names in the registry may carry a variant suffix ("NM2:4", "LOWRANK4",
"QUANT8_CSC"); the colour belongs to the *family* ("NM", "LOWRANK", "QUANT8"), so the
same family looks the same everywhere. Unknown families get a stable colour derived
from their name (never a random one).
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


def kernel_family(name: str, family: str | None = None) -> str:
    """Family of a kernel name: the explicit ``family`` if given, else the longest known prefix.

    >>> kernel_family("NM2:4"), kernel_family("lowrank4"), kernel_family("CSC")
    ('NM', 'LOWRANK', 'CSC')
    """
    if family:
        return str(family).upper()
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
