"""Colour accessibility of the figures: colour-vision deficiency (CVD) and contrast.

A held-out review measured colours that collide for colour-blind readers (deutan ΔE00 0.7 between two
Learn PE frames, 1.3 between BITMAP and LOWRANK) and text and marks below the WCAG contrast minimums.
These tests measure the palettes the same way, so a later palette change that brings a collision back
fails here:

* CVD: the Machado, Oliveira & Fernandes (2009) matrices at severity 1.0 (protanopia, deuteranopia,
  tritanopia), applied in linear RGB; colour difference CIEDE2000 (ΔE00) in CIELAB (D65).
  ΔE00 below about 10 reads as "the same colour" for marks as small as these.
* Contrast: the WCAG 2 contrast ratio of relative luminances; 4.5:1 for text, 3:1 for graphics.
"""
import itertools
import math
import pathlib

import numpy as np
import pandas as pd
import pytest
from plotly.colors import sample_colorscale

from akfviz.viz import colors, compare, dse, kernels, learn, npu, patterns

ROOT = pathlib.Path(__file__).resolve().parents[2]
WHITE = "#ffffff"

# ---- a small implementation of the measures ---------------------------------------------------------------

MACHADO = {
    "protan": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                        [-0.003882, -0.048116, 1.051998]]),
    "deutan": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                        [-0.011820, 0.042940, 0.968881]]),
    "tritan": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                        [0.004733, 0.691367, 0.303900]]),
}
VISIONS = ("normal", "protan", "deutan", "tritan")


def rgb(color) -> np.ndarray:
    """sRGB in 0…1 of ``#rrggbb`` or ``rgb(r, g, b)``."""
    c = str(color).strip()
    if c.startswith("rgb"):
        return np.array([float(v) for v in c[c.index("(") + 1:c.index(")")].split(",")[:3]]) / 255
    h = c.lstrip("#")
    if len(h) == 3:
        h = "".join(ch * 2 for ch in h)
    return np.array([int(h[k:k + 2], 16) for k in (0, 2, 4)]) / 255


def to_linear(c):
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def to_srgb(c):
    c = np.clip(c, 0, 1)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def simulate(color, vision: str) -> np.ndarray:
    c = rgb(color)
    return c if vision == "normal" else to_srgb(MACHADO[vision] @ to_linear(c))


def lab(c) -> np.ndarray:
    xyz = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                    [0.0193339, 0.1191920, 0.9503041]]) @ to_linear(c)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 216 / 24389, np.cbrt(t), (24389 / 27 * t + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(lab1, lab2) -> float:
    L1, a1, b1 = lab1
    L2, a2, b2 = lab2
    cbar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cbar ** 7 / (cbar ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360
    h2p = math.degrees(math.atan2(b2, a2p)) % 360
    dlp, dcp = L2 - L1, c2p - c1p
    dh = h2p - h1p
    if c1p * c2p == 0:
        dh = 0.0
    elif dh > 180:
        dh -= 360
    elif dh < -180:
        dh += 360
    dhp = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lbar, cbarp = (L1 + L2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        hbar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hbar = (h1p + h2p) / 2
    else:
        hbar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(hbar - 30)) + 0.24 * math.cos(math.radians(2 * hbar))
         + 0.32 * math.cos(math.radians(3 * hbar + 6)) - 0.20 * math.cos(math.radians(4 * hbar - 63)))
    dtheta = 30 * math.exp(-((hbar - 275) / 25) ** 2)
    rc = 2 * math.sqrt(cbarp ** 7 / (cbarp ** 7 + 25 ** 7))
    sl = 1 + 0.015 * (lbar - 50) ** 2 / math.sqrt(20 + (lbar - 50) ** 2)
    sc = 1 + 0.045 * cbarp
    sh = 1 + 0.015 * cbarp * t
    rt = -math.sin(math.radians(2 * dtheta)) * rc
    return math.sqrt((dlp / sl) ** 2 + (dcp / sc) ** 2 + (dhp / sh) ** 2 + rt * (dcp / sc) * (dhp / sh))


def delta_e(c1, c2, vision: str = "normal") -> float:
    return ciede2000(lab(simulate(c1, vision)), lab(simulate(c2, vision)))


def worst_delta_e(c1, c2) -> float:
    """The smallest ΔE00 of two colours over normal vision and the three simulated dichromacies."""
    return min(delta_e(c1, c2, v) for v in VISIONS)


def luminance(color) -> float:
    return float(to_linear(rgb(color)) @ np.array([0.2126, 0.7152, 0.0722]))


def contrast(c1, c2) -> float:
    a, b = luminance(c1), luminance(c2)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


# ---- the measures themselves -----------------------------------------------------------------------------

def test_the_measures_reproduce_known_values():
    assert contrast("#000000", WHITE) == pytest.approx(21.0)
    assert contrast("#767676", WHITE) == pytest.approx(4.54, abs=0.01)
    # Sharma, Wu & Dalal (2005), CIEDE2000 test data, pair 1
    assert ciede2000((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    # the review's measurements of the old palettes: Learn PE2 / PE3 and BITMAP / LOWRANK under deutan
    assert delta_e("#59a14f", "#e15759", "deutan") == pytest.approx(0.7, abs=0.05)
    assert delta_e("#17a589", "#e84393", "deutan") == pytest.approx(1.3, abs=0.05)
    # the library's own contrast helper agrees
    assert colors.contrast_ratio("#5f5a52", WHITE) == pytest.approx(contrast("#5f5a52", WHITE))


# ---- kernel families (one fixed colour per family, on every page) -----------------------------------------

def test_every_two_kernel_families_differ_under_cvd():
    bad = {(a, b): round(worst_delta_e(ca, cb), 1)
           for (a, ca), (b, cb) in itertools.combinations(colors.FAMILY_COLORS.items(), 2)
           if worst_delta_e(ca, cb) < 11}
    assert not bad, bad


def test_kernel_family_colours_are_visible_on_white():
    low = {f: round(contrast(c, WHITE), 2) for f, c in colors.FAMILY_COLORS.items() if contrast(c, WHITE) < 3}
    assert not low, low                          # NM's gold was 2.16:1, SKIP's grey 1.51:1 (vs an empty tile)


def test_timeline_phases_differ_from_the_families_they_meet():
    for phase, pc in npu.PHASE_COLORS.items():
        assert contrast(pc, WHITE) >= 3, phase
        for fam, fc in colors.FAMILY_COLORS.items():
            if fam == "SKIP":                    # a SKIP tile has no busy interval
                continue
            assert worst_delta_e(pc, fc) >= 11, (phase, fam)


def test_each_family_has_its_own_dash():
    assert set(colors.FAMILY_DASHES) == set(colors.FAMILY_COLORS)
    assert len(set(colors.FAMILY_DASHES.values())) == len(colors.FAMILY_DASHES)
    fig = kernels.fusion_trajectory(np.arange(3), np.ones(3), np.ones(3),
                                    {"PRUNE50": np.ones(3), "NM1:4": np.ones(3), "BITMAP": np.ones(3),
                                     "LOWRANK4": np.ones(3)})
    dashes = {t.name: t.line.dash for t in fig.data if t.name.startswith("w[")}
    assert len(set(dashes.values())) == 4, dashes   # NM/PRUNE and BITMAP/LOWRANK not by colour alone


def test_non_family_colours_are_neutral():
    """Energy components, plans, fused / unfused and single-series charts take no family's colour."""
    neutral = ({*npu.ENERGY_COLORS.values(), *compare.PLAN_COLORS.values(), colors.NEUTRAL_DARK, colors.NEUTRAL_MID})
    for c in neutral:
        for fam, fc in colors.FAMILY_COLORS.items():
            assert worst_delta_e(c, fc) >= 10, (c, fam)
    fig = npu.energy_breakdown({"compute": 3.0, "dram": 2.0, "noc": 1.0, "static": 1.0})
    assert set(fig.data[0].marker.color) <= neutral
    assert npu.hop_histogram(np.array([1.0, 2.0])).data[0].marker.color in neutral


def test_compare_measured_legend_swatch_is_neutral():
    measured = pd.DataFrame({"speedup": [1.0, 2.0, 3.0, 4.0], "energy_rel": [1.0, 0.8, 0.6, 0.5],
                             "error_pct": [0.0, 0.0, 0.0, 1.0]},
                            index=["Dense", "BlockSparse", "StaticSparse", "AKF"])
    fig = compare.compare_bars(measured)
    bars = [t for t in fig.data if t.name == "measured"]
    legend = next(t for t in bars if t.showlegend is not False)
    swatch = legend.marker.color[0]               # plotly draws a bar trace's swatch in its first colour
    assert swatch in (colors.NEUTRAL_MID, colors.NEUTRAL_DARK)
    assert all(set(t.marker.color) <= {colors.NEUTRAL_MID, colors.NEUTRAL_DARK} for t in bars)


# ---- text on filled marks --------------------------------------------------------------------------------

def _inside_text_ok(bar):
    cols = list(bar.marker.color)
    text = bar.insidetextfont.color
    text = list(text) if isinstance(text, (list, tuple)) else [text] * len(cols)
    return [round(contrast(t, c), 2) for t, c in zip(text, cols)]


def test_text_inside_bars_has_4_5_to_1():
    figs = [npu.fused_vs_unfused({"fused": {"cycles": 100, "energy_pj": 5e6},
                                  "unfused": {"cycles": 180, "energy_pj": 8e6}}),
            compare.cpu_timings(["AKF plan.matvec (numba)", "scipy CSR", "numpy dense"], [0.05, 0.08, 0.3])]
    for fig in figs:
        for bar in fig.data:
            assert min(_inside_text_ok(bar)) >= 4.5, (bar.name, _inside_text_ok(bar))
            assert contrast(bar.outsidetextfont.color, WHITE) >= 4.5


def test_text_color_on_picks_the_readable_one():
    for bg in ("#ffffff", "#000000", colors.NEUTRAL_MID, colors.NEUTRAL_DARK, *colors.FAMILY_COLORS.values()):
        pick = colors.text_color_on(bg)
        assert contrast(pick, bg) == max(contrast(t, bg) for t in (colors.TEXT_LIGHT, colors.TEXT_DARK))
    for bg in (colors.NEUTRAL_MID, colors.NEUTRAL_DARK, *npu.ENERGY_COLORS.values(), *compare.PLAN_COLORS.values()):
        assert contrast(colors.text_color_on(bg), bg) >= 4.5, bg


@pytest.mark.parametrize("grid", [(2, 2), (3, 3)])
def test_learn_matrix_value_labels_have_4_5_to_1_on_every_cell(grid):
    from akfviz.npu.trace import tiny_case

    tc = tiny_case(n=8, tile=4, grid=grid, density=0.6, x_density=1.0, seed=1)
    fig = learn.learn_matrix(tc.A_hat, tc.x, tc.trace.tile, tc.work.bi, tc.work.bj, tc.trace.tile_pe)
    heat = fig.data[0]
    assert heat.texttemplate
    text = heat.textfont.color
    scale = [list(s) for s in heat.colorscale]
    cells = sample_colorscale(scale, list(np.linspace(0, 1, 41)))
    worst = min(contrast(text, c) for c in cells)
    assert worst >= 4.5, worst                   # the full Blues failed with both #444 and white (3.2:1)


# ---- Learn: the PE of each tile is not colour alone --------------------------------------------------------

def test_pe_palette_is_distinct_under_cvd():
    pe = learn.PE_COLORS
    assert len(pe) >= 9                          # the page's largest grid (3×3) repeats no colour
    assert min(worst_delta_e(a, b) for a, b in itertools.combinations(pe[:4], 2)) >= 12   # the 2×2 default
    assert min(worst_delta_e(a, b) for a, b in itertools.combinations(pe, 2)) >= 11
    assert min(contrast(c, WHITE) for c in pe) >= 3


@pytest.mark.parametrize("grid", [(2, 2), (3, 3), (4, 4)])
def test_every_tile_frame_names_its_pe(grid):
    from akfviz.npu.trace import tiny_case

    tc = tiny_case(n=16, tile=4, grid=grid, density=0.6, x_density=1.0, seed=2)
    tr = tc.trace
    fig = learn.learn_matrix(tc.A_hat, tc.x, tr.tile, tc.work.bi, tc.work.bj, tr.tile_pe, tr.steps[3])
    tags = [a for a in fig.layout.annotations if a.text.startswith("PE ")]
    assert len(tags) == len(tc.work.bi)
    for u, a in enumerate(tags):
        p = int(tr.tile_pe[u])
        assert a.text == learn.pe_label(p)
        assert a.bordercolor == learn.PE_COLORS[p % len(learn.PE_COLORS)]
        assert contrast(a.font.color, a.bgcolor) >= 4.5
        # at the frame's top-left corner
        assert a.x == tc.work.bj[u] * tr.tile - 0.5 and a.y == tc.work.bi[u] * tr.tile - 0.5


def test_learn_step_kinds_differ_in_colour_and_instant_ones_in_marker():
    kc = learn.KIND_COLORS
    bad = {(a, b): round(worst_delta_e(kc[a], kc[b]), 1) for a, b in itertools.combinations(kc, 2)
           if worst_delta_e(kc[a], kc[b]) < 12}
    assert not bad, bad
    assert min(contrast(c, WHITE) for c in kc.values()) >= 3
    from akfviz.npu.trace import tiny_case

    tr = tiny_case().trace
    fig = learn.learn_timeline(tr, len(tr.steps))
    symbols = {t.name: t.marker.symbol for t in fig.data if t.mode == "markers"}
    assert symbols["inject"] != symbols["send"]


# ---- sequential scales -----------------------------------------------------------------------------------

def _ends(scale):
    return [scale[0][1], scale[-1][1]]


def test_jaccard_scale_is_sequential_and_cvd_safe():
    clusters = pd.DataFrame({"size": [9, 5, 3], "jaccard_mean": [0.2, 0.5, 0.9]})
    bar = patterns.cluster_sizes(clusters).data[0]
    scale = [list(s) for s in bar.marker.colorscale]
    # RdYlGn for deutans: 0.4 vs 0.6 ΔE00 0.4, 0.3 vs 0.7 2.0, 0 vs 1 8.2
    for vision in ("deutan", "protan"):
        for lo, hi, least in ((0.4, 0.6, 6), (0.3, 0.7, 12), (0.0, 1.0, 30)):
            a, b = sample_colorscale(scale, [lo, hi])
            assert delta_e(a, b, vision) >= least, (vision, lo, hi)
    lum = [luminance(c) for c in sample_colorscale(scale, list(np.linspace(0, 1, 11)))]
    assert all(b > a for a, b in zip(lum, lum[1:]))       # one direction: lighter = more alike
    assert min(contrast(c, WHITE) for c in _ends(scale)) >= 3


def test_design_space_scales_keep_their_light_end_visible():
    assert contrast(colors.VIRIDIS_ON_WHITE[-1][1], WHITE) >= 3     # Viridis' yellow end was 1.26:1
    df = pd.DataFrame({"cycles": [1.0, 2.0, 3.0], "error_pct": [3.0, 2.0, 1.0], "energy_pj": [1e6, 3e6, 2e6]})
    scat = dse.sweep_scatter(df).data[0]
    par = dse.parallel_coordinates(df, ["cycles", "error_pct", "energy_pj"], "energy_pj").data[0]
    for scale in (scat.marker.colorscale, par.line.colorscale):
        assert min(contrast(c, WHITE) for _, c in scale) >= 3


def test_representatives_start_away_from_white():
    fig = patterns.representative_gallery([np.eye(4)], ["c0"])
    first = fig.data[0].colorscale[0][1]
    assert delta_e(first, WHITE) >= 10           # Blues' #f7fbff was ΔE00 2.6 from the blank (zero) cells


# ---- clusters --------------------------------------------------------------------------------------------

def test_neighbouring_cluster_ids_differ_under_cvd():
    pal = colors.CLUSTER_PALETTE
    k = len(pal)
    worst = {(i, (i + d) % k): round(worst_delta_e(pal[i], pal[(i + d) % k]), 1)
             for d in (1, 2) for i in range(k)}
    bad = {p: v for p, v in worst.items() if v < 12}
    assert not bad, bad
    # and from the grey of the tiles outside a highlighted cluster
    assert min(worst_delta_e(c, "#d9d9d9") for c in pal) >= 10


# ---- the theme -------------------------------------------------------------------------------------------

def test_theme_primary_colour_reads_as_text_and_under_white_text():
    import tomllib

    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
    primary = theme["primaryColor"]
    assert contrast(primary, WHITE) >= 4.5       # slider values, active tab; white on the buttons
    assert contrast(primary, "#f8f8f7") >= 4.5   # on the sidebar
