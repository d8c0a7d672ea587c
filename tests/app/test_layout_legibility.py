"""Held-out accessibility report, layout and units: figures and pages stay readable in a 900-px
window (about 440 px beside the sidebar), energy is in µJ with its unit everywhere, hovers name
their values and units, the kernel mix follows the kernel map's order, and headings nest."""
import numpy as np
import plotly.graph_objects as go
import pandas as pd
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.viz import colors, compare, dse, kernels as vk, layout, matrix, npu, patterns, solver
from akfviz.viz.layout import BAR_TEXT
from apptest_tree import block


def _ok(app):
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]


_block = block  # the keyed container (apptest_tree.block)


def _traces_named(fig):
    """Every trace has a name and a hover template of its own (no "trace 0" boxes)."""
    for t in fig.data:
        assert t.name and not str(t.name).startswith("trace"), t
        assert t.hovertemplate, t.name


# --------------------------------------------------------------------------- shared styling
def test_titles_are_padded_and_wrapped_titles_get_room():
    fig = layout.styled(go.Figure(), "One line")
    assert fig.layout.title.pad.l >= 5 and fig.layout.title.xanchor == "left"
    two = layout.styled(go.Figure(), "One<br>two")
    assert two.layout.margin.t >= fig.layout.margin.t + 15


# --------------------------------------------------------------------------- Compare
def _compare_frames():
    plans = ["Dense", "BlockSparse", "StaticSparse", "AKF"]
    m = pd.DataFrame({"speedup": [1, 1, 1.29, 1.29], "energy_rel": [1, 1, 0.546, 0.509],
                      "error_pct": [0, 0, 0, 0.465]}, index=plans)
    c = pd.DataFrame({"speedup": [1, 1.8, 2.5, 3.5], "energy_rel": [1, 1.3, 1.6, 1.2],
                      "error_pct": [np.nan, 2.1, 3.5, 1.8]}, index=plans)
    return m, c


def test_compare_claims_sit_off_the_bars_value_labels():
    """Dense's "1" was hidden under the claim diamond at 1 (L4); labels were 10 px."""
    fig = compare.compare_bars(*_compare_frames())
    bars = [t for t in fig.data if t.type == "bar"]
    claims = [t for t in fig.data if t.type == "scatter"]
    assert len(bars) == 3 and len(claims) == 3
    for b in bars:
        assert b.orientation == "h" and b.textposition == "outside" and b.textfont.size >= BAR_TEXT
    assert bars[0].text[0] == "1" and bars[1].text[0] == "1"           # Dense's speedup and energy
    for b, c in zip(bars, claims):
        # each claim is drawn above its plan's bar (rows count downwards), clear of the bar's band
        half = b.width / 2
        for y in c.y:
            assert all(abs(y - yb) > half for yb in b.y)
    # plan names once, on the left, with room made for them
    assert list(fig.layout.yaxis.ticktext) == ["Dense", "BlockSparse", "StaticSparse", "AKF"]
    assert fig.layout.yaxis.automargin


def test_cpu_timing_hover_has_milliseconds():
    fig = compare.cpu_timings(["AKF plan.matvec (numba)", "scipy CSR A @ x"], [0.0438, 0.0647])
    _traces_named(fig)
    assert "ms" in fig.data[0].hovertemplate


# --------------------------------------------------------------------------- energy units (M5)
def test_fused_vs_unfused_draws_energy_in_microjoules_with_pj_in_the_hover():
    fig = npu.fused_vs_unfused({"fused": {"cycles": 1000, "energy_pj": 6_496_183.0},
                                "unfused": {"cycles": 2500, "energy_pj": 9_160_400.0}})
    _traces_named(fig)
    energy = fig.data[1]
    np.testing.assert_allclose(energy.y, [6.496183, 9.1604])
    assert energy.text[0] == "6.496 µJ" and "e+06" not in "".join(energy.text)
    assert "µJ" in energy.hovertemplate and "pJ" in energy.hovertemplate
    assert "cycles" in fig.data[0].hovertemplate
    titles = [a.text for a in fig.layout.annotations]
    assert "energy (µJ)" in titles and not any("pJ" in t for t in titles)
    assert fig.layout.uniformtext.minsize >= BAR_TEXT


def test_persistence_bars_name_their_values_and_keep_label_size():
    fig = solver.persistence_bars({"persistent": {"dram_bytes_per_iter": 2184.5, "cycles_per_iter": 738.0},
                                   "non-pers.": {"dram_bytes_per_iter": 145896.0, "cycles_per_iter": 4505.0}})
    _traces_named(fig)
    assert "DRAM bytes" in fig.data[0].hovertemplate and "cycles" in fig.data[1].hovertemplate
    assert fig.layout.uniformtext.minsize >= BAR_TEXT and fig.layout.uniformtext.mode == "show"
    # the panel titles on two lines (one line each ran into the other at 900 px)
    assert all("<br>" in a.text for a in fig.layout.annotations)


def test_design_space_axes_are_titled_in_words_with_units():
    df = pd.DataFrame({"rows": [32, 64, 256], "cycles": [938.0, 900.0, 880.0], "error_pct": [0.78, 0.5, 0.4],
                       "energy_pj": [7.98e6, 5.67e6, 5.29e6], "speedup": [1.0, 1.1, 1.2]})
    fig = dse.sweep_scatter(df, "cycles", "error_pct", "energy_pj")
    assert fig.layout.xaxis.title.text == "cycles (AKF)" and fig.layout.yaxis.title.text == "error (%)"
    bar = fig.data[0].marker.colorbar.title.text
    assert "µJ" in bar and "energy_pj" not in bar
    np.testing.assert_allclose(sorted(fig.data[0].marker.color), [5.29, 5.67, 7.98])
    assert "energy (µJ)" in fig.data[0].text[0] and "energy_pj" not in fig.layout.title.text
    pc = dse.parallel_coordinates(df, ["rows", "cycles", "energy_pj", "error_pct"], "energy_pj")
    labels = [d.label for d in pc.data[0].dimensions]
    assert "energy (µJ)" in labels and not any("_" in lab or "<br>" in lab for lab in labels)
    assert pc.data[0].line.colorbar.title.text == "energy<br>(µJ)"
    assert dse.column_label("energy_rel_vs_staticsparse") == "energy ÷ Static-sparse"
    assert dse.column_label("dense_energy_pj") == "Dense energy (µJ)"


def test_spy_hover_gives_the_density_the_colour_bar_shows():
    A = sp.random_array((3000, 900), density=0.01, random_state=0, format="csr")
    fig = matrix.spy_density(A, max_bins=256)
    h = fig.data[0]
    assert h.colorbar.title.text == "density" and "log10" not in h.hovertemplate
    assert "%{customdata" in h.hovertemplate
    dens, z = np.asarray(h.customdata, dtype=float), np.asarray(h.z, dtype=float)
    assert np.array_equal(dens > 0, np.isfinite(z))                  # blank bins have no density either
    np.testing.assert_allclose(np.log10(dens[dens > 0]), z[dens > 0], rtol=1e-5, atol=1e-6)


def test_nnz_histograms_have_short_titles_units_and_hovers():
    A = sp.csr_array(np.array([[1, 0, 2], [0, 0, 0], [3, 4, 5.0]]))
    fig = matrix.nnz_histograms(A)
    _traces_named(fig)
    assert [a.text for a in fig.layout.annotations] == ["per row", "per column"]
    assert "rows" in fig.data[0].hovertemplate and "columns" in fig.data[1].hovertemplate
    assert fig.layout.xaxis.tickangle == 0 and fig.layout.xaxis2.tickangle == 0


# --------------------------------------------------------------------------- Kernels (L5)
def test_kernel_mix_follows_the_kernel_maps_family_order_and_labels_every_bar():
    names = np.array(["SKIP"] * 3 + ["PRUNE50"] * 2 + ["QUANT8"] * 900 + ["CSC"] * 5 + ["PRUNE25"] + ["BLOCK4"])
    fam = {k: colors.kernel_family(k) for k in set(names)}
    fig = vk.kernel_mix(names, families=fam)
    shown = list(fig.data[0].y)
    order = [colors.kernel_family(k) for k in shown]
    assert order == sorted(order, key=colors.FAMILY_ORDER.index)            # the colour bar's order
    assert shown == ["CSC", "BLOCK4", "PRUNE25", "PRUNE50", "QUANT8", "SKIP"]
    assert fig.layout.yaxis.autorange != "reversed"      # drawn bottom to top, as the colour bar reads
    # a bar too short to see still has its value (and share) beside it
    assert all(t for t in fig.data[0].text) and fig.data[0].text[shown.index("PRUNE25")] == "1 (0.11 %)"
    assert fig.data[0].textposition == "outside" and fig.data[0].textfont.size >= BAR_TEXT
    _traces_named(fig)
    # the kernel map's colour bar, on the same plan, lists the families in the same order
    tiles = pd.DataFrame({"bi": np.arange(names.size) // 40, "bj": np.arange(names.size) % 40})
    kmap = vk.kernel_map(tiles, names, int(tiles["bi"].max()) + 1, 40, 16, families=fam)
    assert list(kmap.data[0].colorbar.ticktext) == list(dict.fromkeys(order))


def test_fusion_entropy_axis_has_its_unit():
    steps = np.arange(4)
    fig = vk.fusion_trajectory(steps, np.ones(4), np.ones(4))
    assert fig.layout.yaxis2.title.text == "entropy (nats)"


def test_no_fusion_message_gives_the_selectors_reason():
    note = "fusion descent skipped: 50000 tiles and the argmin plan fits in SRAM, so its result is the argmin"
    msg = vk.no_fusion_reason("weights", ["something else", note])
    assert "50000 tiles and the argmin plan fits in SRAM" in msg and "budget" not in msg
    assert "budget modes" in vk.no_fusion_reason("error_budget", [])


def test_kernels_page_says_why_the_descent_did_not_run(app, monkeypatch):
    """In α/β mode the page said "runs in α/β mode only (budget modes …)" when the selector had
    skipped the descent for its own reason (its note: the argmin fits in SRAM)."""
    import streamlit as st
    from akfviz.selection import selector

    monkeypatch.setattr(selector, "FUSION_MAX_UNITS", 0)     # every tile-mode α/β plan skips it
    app.query_params.update({"gran": "tile", "mode": "weights", "tile": "24", "alpha": "3"})
    try:
        app.run()
        app.switch_page("pages/2_Kernels.py").run()
        _ok(app)
        infos = [i.value for i in app.info]
        assert any("skipped for this plan" in i and "fits in SRAM" in i for i in infos), infos
        assert not any("α/β mode only" in i for i in infos)
    finally:
        st.cache_data.clear()      # plans computed with the patched constant must not serve other tests


# --------------------------------------------------------------------------- Patterns
def test_cluster_map_title_wraps_its_details():
    """The details go on a second line; the palette's repeat is named only when some colour
    stands for two clusters (a one-cluster map said "colours repeat every 16")."""
    k = len(patterns.CLUSTER_PALETTE)
    tiles = pd.DataFrame({"bi": [0, 2], "bj": [1, 0], "density": [0.1, 1.0], "cluster": [0, 1], "nnz": [3, 9]})
    fig = patterns.cluster_map(tiles, 3, 2, 8)
    assert fig.layout.title.text == "LSH clusters — 2 clusters"
    n = k + 1
    many = pd.DataFrame({"bi": np.arange(n), "bj": np.arange(n), "density": np.full(n, 0.5),
                         "cluster": np.arange(n), "nnz": np.full(n, 4)})
    fig = patterns.cluster_map(many, n, n, 8)
    first, second = fig.layout.title.text.split("<br>")
    assert first == f"LSH clusters — {n} clusters" and f"colours repeat every {k}" in second
    fig = patterns.cluster_map(tiles, 600, 600, 8, cap=256)   # aggregated: the note alone
    first, second = fig.layout.title.text.split("<br>")
    assert first == "LSH clusters — 2 clusters" and "each cell: 3×3 tiles" in second
    assert "repeat" not in second and "(each cell" in second


def test_cluster_map_with_exactly_one_palette_of_clusters_does_not_say_colours_repeat():
    """Mutant V1 (patterns.py cluster_map: ``n_cl >= k``). With as many clusters as colours, no
    colour stands for two clusters."""
    from akfviz.viz.patterns import CLUSTER_PALETTE, cluster_map

    k = len(CLUSTER_PALETTE)
    n = int(np.ceil(np.sqrt(k)))
    bi, bj = np.divmod(np.arange(k), n)
    tiles = pd.DataFrame({"bi": bi, "bj": bj, "cluster": np.arange(k), "nnz": 1, "density": 0.1})
    title = cluster_map(tiles, n, n, 16).layout.title.text
    assert f"{k} clusters" in title
    assert "repeat" not in title
    tiles2 = pd.DataFrame({"bi": [0] * (k + 1), "bj": np.arange(k + 1), "cluster": np.arange(k + 1),
                           "nnz": 1, "density": 0.1})
    assert f"repeat every {k}" in cluster_map(tiles2, 1, k + 1, 16).layout.title.text


# --------------------------------------------------------------------------- page layout and headings
def _headings(app):
    return [h.value for h in app.header], [h.value for h in app.subheader]


@pytest.mark.parametrize("page,sections", [
    ("pages/1_Patterns.py", ["Cluster representatives", "Details", "Export"]),
    ("pages/2_Kernels.py", ["Why each cluster got its kernel", "Performance table",
                            "CPU check: fused execution vs scipy"]),
    ("pages/4_Compare.py", ["Measured vs claimed", "Real CPU time of one SpMV"]),
    ("pages/7_Learn.py", ["Step through the run", "Partial sums per tile (so far)", "The formulas of each stage"]),
])
def test_sections_are_h2_headings(app, page, sections):
    """Every page went h1 → h3 (st.subheader); Learn's sections were bold paragraphs."""
    app.run()
    app.switch_page(page).run()
    _ok(app)
    h2, _ = _headings(app)
    for s in sections:
        assert s in h2, (s, h2)


def test_figure_pairs_wrap_instead_of_fixed_columns(app):
    """Two figures side by side only where both get ≥ FIGURE_MIN px: a wrapping row whose children
    a style rule gives that basis (st.columns kept fixed shares at 900 px)."""
    from akfviz.app_shell import FIGURE_MIN

    app.run()
    _ok(app)
    row = _block(app, "matrix_figs")
    assert row is not None and row.proto.flex_container.wrap
    styles = [h.proto.body for h in app.get("html") if "matrix_figs" in h.proto.body]
    assert styles and f"{FIGURE_MIN}px" in styles[0]
    # the download buttons keep their labels: sized to their content, in a row of their own
    downloads = _block(app, "matrix_downloads")
    assert downloads is not None
    assert not any(type(k).__name__ == "Column" for k in downloads.children.values())
