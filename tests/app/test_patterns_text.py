"""The Patterns page names its features in words, with the analysis' own numbers (akf-spec §2).

A held-out review found the tile table showing raw column names (``nm4``, ``nm8``, ``top_mass`` with no
q, ``density_bin`` = -2) and the density histogram's legend saying "bin -7 / -4 / -3" with the bin's
formula nowhere on the page.
"""
import json
import math
import re

import numpy as np
import pytest

import akfviz
from akfviz.analysis.features import top_count
from akfviz.analysis.lsh import LSHConfig
from akfviz.analysis.pattern import CLUSTER_COLUMNS, TILE_COLUMNS
from akfviz.viz import patterns as vp


@pytest.fixture(scope="module")
def pa3():
    """An analysis with settings other than the defaults: every number in the words must follow them."""
    return akfviz.analyze(akfviz.generate("powerlaw", n=1024, seed=3), tile=32,
                          lsh=LSHConfig(bins_per_decade=3, top_q=0.25, grid=4))


def test_every_tile_and_cluster_column_has_words(pa3):
    notes = vp.feature_notes(pa3.lsh, pa3.tile, pa3.tiles.iloc[0])
    assert set(TILE_COLUMNS) <= set(notes)
    assert set(CLUSTER_COLUMNS) <= set(vp.cluster_notes(pa3.lsh, pa3.clusters.iloc[0]))
    for raw in ("nm4", "nm8", "top_mass", "density_bin", "fro2"):
        label, meaning = notes[raw]
        assert label != raw and meaning
    assert notes["nm4"][0] == "N of N:4" and "groups of 4" not in notes["nm8"][1]


def test_words_carry_the_analysis_numbers(pa3):
    row = pa3.tiles.iloc[0]
    notes = vp.feature_notes(pa3.lsh, pa3.tile, row)
    q, k = pa3.lsh.top_q, int(row["nnz"])
    assert f"{100 * q:.3g} %" in notes["top_mass"][0] and f"q = {q:g}" in notes["top_mass"][1]
    assert f"here {top_count(k, q)} of {k}" in notes["top_mass"][1]
    assert f"⌊{pa3.lsh.bins_per_decade} · log10 d⌋" in notes["density_bin"][1]
    assert f"{pa3.lsh.grid}×{pa3.lsh.grid}" in notes["signature"][1]
    assert f"T = {pa3.tile}" in notes["bi"][1]
    # the tile's own density range, as the code bins it
    lo, hi = vp.density_bin_range(int(row["density_bin"]), pa3.lsh.bins_per_decade)
    assert lo <= row["density"] < hi or (lo == hi == 1.0 == row["density"])
    t = vp.explained_table(pa3.tiles, 0, "feature", notes)
    assert list(t.columns) == ["feature", "value", "meaning"]
    assert "top_mass" not in set(t["feature"]) and any(f.endswith("(top_mass)") for f in t["feature"])
    assert vp.meanings_markdown(t, "feature").count("\n- **") == len(t) - 1


@pytest.mark.parametrize("bpd", [1, 2, 3, 5])
def test_density_bin_ranges_hold_the_tiles_the_code_put_there(bpd):
    pa = akfviz.analyze(akfviz.generate("powerlaw", n=1024, seed=3), tile=32, lsh=LSHConfig(bins_per_decade=bpd))
    d, b = pa.tiles["density"].to_numpy(), pa.tiles["density_bin"].to_numpy()
    for dens, bin_ in zip(d, b):
        lo, hi = vp.density_bin_range(int(bin_), bpd)
        assert lo * (1 - 1e-12) <= dens and (dens < hi * (1 + 1e-12) or dens == 1.0)
        assert int(bin_) == math.floor(math.log10(dens) * bpd) or abs(math.log10(dens) * bpd - round(
            math.log10(dens) * bpd)) < 1e-9


def test_histogram_legend_gives_each_bins_densities_and_the_formula(pa3):
    bpd = pa3.lsh.bins_per_decade
    fig = vp.density_histogram(pa3.tiles, bins_per_decade=bpd)
    bins = sorted(set(pa3.tiles["density_bin"].astype(int)))
    assert len(fig.data) == len(bins) > 1
    for trace, b in zip(fig.data, bins):
        lo, hi = vp.density_bin_range(b, bpd)
        assert trace.name == f"{lo:.2g}–{hi:.2g}: bin {b}"
        assert vp.density_bin_span(b, bpd) in trace.hovertemplate
    assert f"⌊{bpd} · log10 d⌋" in fig.layout.legend.title.text
    cap = vp.density_bin_caption(pa3.tiles["density_bin"], bpd)
    common = int(pa3.tiles["density_bin"].value_counts().idxmax())
    assert f"⌊{bpd} · log10 d⌋" in cap and f"10^(b/{bpd}) ≤ d < 10^((b+1)/{bpd})" in cap
    assert f"bin {common}" in cap and vp.density_bin_span(common, bpd) in cap
    # the page counts the clusters' bins weighted by their sizes: the same caption
    cl = pa3.clusters
    assert vp.density_bin_caption(cl["density_bin"], bpd, weights=cl["size"]) == cap


def test_full_tiles_bin_is_density_one():
    assert vp.density_bin_range(0, 2) == (1.0, 1.0) and vp.density_bin_span(0, 2) == "d = 1"
    assert vp.density_bin_span(-1, 2) == "0.32 ≤ d < 1"


# ---- the page ----------------------------------------------------------------------------------------------

def test_patterns_page_explains_the_raw_columns_and_the_density_bins(app):
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    lsh = LSHConfig()      # the page's analysis: the app's K, b, g, seed and the library's other defaults
    bpd, q = lsh.bins_per_decade, lsh.top_q
    tile_tab = next(d for d in app.dataframe if "feature" in d.value.columns)
    labels = list(tile_tab.value["feature"])
    assert "nm4" not in labels and "N of N:4 (nm4)" in labels and "N of N:8 (nm8)" in labels
    assert f"top-{100 * q:.3g} % mass (top_mass)" in labels and "density bin b (density_bin)" in labels
    cfg = json.loads(tile_tab.proto.columns)
    assert cfg["feature"].get("help") and cfg["value"].get("help")
    meanings = " ".join(m.value for m in app.markdown)
    assert f"q = {q:g}" in meanings and f"⌊{bpd} · log10 d⌋" in meanings
    members = next(d for d in app.dataframe if list(d.value.columns) == ["bi", "bj", "nnz", "density"])
    mcfg = json.loads(members.proto.columns)
    assert all(mcfg[c].get("help") for c in ("bi", "bj", "nnz", "density"))
    caption = next(c.value for c in app.caption if "density bin" in c.value.lower() and "log10" in c.value)
    assert f"10^(b/{bpd}) ≤ d < 10^((b+1)/{bpd})" in caption
    b = int(re.search(r"E\.g\. bin (-?\d+)", caption).group(1))
    assert vp.density_bin_span(b, bpd) in caption
    hist = next(json.loads(c.proto.spec) for c in app.get("plotly_chart")
                if "density histogram" in str(json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "")))
    for tr in hist["data"]:
        b = int(tr["name"].split()[-1])
        lo, hi = vp.density_bin_range(b, bpd)
        assert tr["name"] == f"{lo:.2g}–{hi:.2g}: bin {b}"


def test_lsh_seed_input_stops_where_its_link_field_does(app):
    # app probe (42nd session): the input took 2**53 - 1, which the page's own link then refused
    from akfviz import app_state as S

    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    box = app.number_input(key="w:lsh_seed")
    assert (box.min, box.max) == tuple(float(b) for b in S.bounds("lsh_seed"))
    box.set_value(S.bounds("lsh_seed")[1]).run()
    assert not app.exception
    assert dict(app.query_params)["lsh_seed"] == str(S.bounds("lsh_seed")[1])
