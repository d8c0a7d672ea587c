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
# SKIP in a mid grey (it draws nothing). Chosen for colour-vision deficiency: every pair of
# families is at least ΔE00 12 apart in normal vision and under simulated protanopia,
# deuteranopia and tritanopia (Machado 2009, full severity), and every colour has at least
# 3:1 contrast on the white plot background (WCAG 1.4.11), SKIP included (an empty tile is
# white). tests/app/test_colors_accessible.py checks both.
FAMILY_COLORS: dict[str, str] = {
    "DENSE": "#24435d",
    "CSC": "#0086ff",
    "BITMAP": "#0d9d70",
    "DIA": "#7d3c98",
    "BLOCK": "#5d6d7e",
    "NM": "#b09100",
    "PRUNE": "#ad6942",
    "QUANT8": "#a72619",
    "LOWRANK": "#e83cbb",
    "SKIP": "#90959a",
}
FAMILY_ORDER: tuple[str, ...] = tuple(FAMILY_COLORS)

#: One dash pattern per family, for lines, where colour must not be the only cue (the
#: fusion-weight trajectory): kernels of one family share colour and dash.
FAMILY_DASHES: dict[str, str] = {
    "DENSE": "solid",
    "CSC": "dash",
    "BITMAP": "dot",
    "DIA": "dashdot",
    "BLOCK": "longdash",
    "NM": "longdashdot",
    "PRUNE": "8px,3px,2px,3px,2px,3px",
    "QUANT8": "2px,5px",
    "LOWRANK": "14px,4px",
    "SKIP": "1px,2px",
}

#: Neutral colours for what is not a kernel family (energy components, the compared plans,
#: fused / unfused, single-series charts): far from every family colour (ΔE00 ≥ 14 under
#: every simulated CVD) and dark enough for white text (≥ 6.8:1).
NEUTRAL_DARK = "#3c3a36"
NEUTRAL_MID = "#5f5a52"
#: Text colours on filled marks: whichever of the two contrasts more (:func:`text_color_on`).
TEXT_LIGHT = "#ffffff"
TEXT_DARK = "#111111"

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


def family_dash(family: str) -> str:
    """The fixed dash pattern of a kernel family (stable hash-derived for unknown families)."""
    fam = str(family).upper()
    if fam in FAMILY_DASHES:
        return FAMILY_DASHES[fam]
    digest = hashlib.sha256(fam.encode()).digest()
    return f"{4 + digest[1] % 8}px,{2 + digest[2] % 4}px"


def kernel_color(name: str, family: str | None = None) -> str:
    """Colour of a kernel: the colour of its family."""
    return family_color(kernel_family(name, family))


def families_in(names, families: dict | None = None) -> list[str]:
    """Families present in ``names`` in the fixed display order (unknown ones last, sorted)."""
    fams = {kernel_family(n, (families or {}).get(n)) for n in names}
    known = [f for f in FAMILY_ORDER if f in fams]
    return known + sorted(fams - set(known))


# Qualitative palette for cluster ids (cycled; clusters are not kernel families). Ordered so
# that ids 1 and 2 apart (also across the wrap from the last colour to the first) are at least
# ΔE00 14 apart in normal vision and under simulated protan / deutan / tritan CVD.
CLUSTER_PALETTE: tuple[str, ...] = (
    "#b07aa1", "#edc948", "#59a14f", "#e7298a", "#ff9da7", "#66a61e", "#4e79a7", "#bab0ac",
    "#e15759", "#e6ab02", "#76b7b2", "#9c755f", "#f28e2b", "#7570b3", "#1b9e77", "#d95f02",
)


def _luminance(color: str) -> float:
    """WCAG 2 relative luminance of a ``#rrggbb`` colour."""
    h = color.lstrip("#")
    if len(h) == 3:
        h = "".join(ch * 2 for ch in h)
    lin = []
    for k in (0, 2, 4):
        c = int(h[k:k + 2], 16) / 255
        lin.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast_ratio(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 … 21).

    >>> round(contrast_ratio("#000000", "#ffffff"), 1)
    21.0
    """
    a, b = _luminance(fg), _luminance(bg)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def text_color_on(bg: str) -> str:
    """The text colour (:data:`TEXT_LIGHT` or :data:`TEXT_DARK`) that contrasts more with ``bg``."""
    return max((TEXT_LIGHT, TEXT_DARK), key=lambda t: contrast_ratio(t, bg))


def truncated_scale(name: str, lo: float, hi: float, steps: int = 9) -> list:
    """Plotly colour scale ``name`` restricted to ``[lo, hi]`` of its range, as a new scale.

    Used to keep the ends of a sequential scale readable: off near-white (marks on the white
    plot background, text on cells) and off the dark end under dark text.
    """
    from plotly.colors import sample_colorscale

    pos = [lo + (hi - lo) * k / (steps - 1) for k in range(steps)]
    return [[k / (steps - 1), c] for k, c in enumerate(sample_colorscale(name, pos))]


#: Viridis up to its teal: the lightest colour (rgb(31,157,137)) keeps 3.4:1 on white, so the
#: highest values stay visible as small dots and 1-px lines (the full scale ends at 1.26:1).
VIRIDIS_ON_WHITE = truncated_scale("Viridis", 0.0, 0.55)
#: Blues without its near-white start (its first colour is ΔE00 13 from white): small
#: values are not taken for the blank zeros.
BLUES_OFF_WHITE = truncated_scale("Blues", 0.25, 1.0)
#: Blues for cells labelled in :data:`TEXT_DARK`: from off-white to a mid blue, so every
#: label keeps at least 5.5:1.
BLUES_UNDER_TEXT = truncated_scale("Blues", 0.2, 0.62)
