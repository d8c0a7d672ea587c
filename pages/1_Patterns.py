"""Patterns: tiles, LSH clusters, representatives, density histogram, cluster quality (akf-spec §2)."""
import numpy as np
import pandas as pd
import streamlit as st

from akfviz import app_state as S
from akfviz.analysis.lsh import NEAR_MEDOID
from akfviz.viz import patterns as vp
from akfviz.viz.tables import tiles_export
from akfviz.app_shell import figure_pair, flex_row, metric_row, page_end, page_start

page_start("Patterns",
           "Tiles of side T, their features, and MinHash-LSH clusters split by log-density bin "
           "(the paper's \"modified histogram atop LSH\", akf-spec §2).")
wl = S.require_workload()

with st.expander("LSH parameters", expanded=False):
    c1, c2, c3, c4 = flex_row("lsh_controls", (190, 190, 190, 150))
    with c1:
        k = S.widget(st.select_slider, "MinHash functions K", "lsh_k", options=[8, 16, 32, 64, 128])
    with c2:
        divisors = [b for b in range(1, k + 1) if k % b == 0]
        S.widget(st.select_slider, "Bands b (r = K / b rows each)", "lsh_b", options=divisors)
    with c3:
        S.widget(st.slider, "Coarse grid g (g×g cells)", "lsh_g", *S.bounds("lsh_g"))
    with c4:
        lo, hi = S.bounds("lsh_seed")   # the link's range, so a shared view keeps its seed
        S.widget(st.number_input, "Seed", "lsh_seed", min_value=lo, max_value=hi, step=1)
    st.caption("Two tiles collide when all r hashes of any band agree; the chance grows with their Jaccard "
               "similarity s as 1 − (1 − s^r)^b. More bands → more merging.")

pa = S.analysis(wl)
if pa is None:
    st.stop()
S.require_tiles(pa)
tiles, clusters, ts = pa.tiles, pa.clusters, pa.tileset

summ = pa.summary()
timings = summ["timings"]
total_t = float(timings.get("total", sum(timings.values())))
S.record_result("patterns", {k: summ[k] for k in ("tile", "n_tiles", "n_clusters", "jaccard_mean")})
m = metric_row(5)
m[0].metric("nonempty tiles", f"{len(tiles):,}", help=f"of {ts.n_brows}×{ts.n_bcols} = {ts.n_brows * ts.n_bcols:,}")
m[1].metric("clusters", f"{pa.n_clusters:,}")
m[2].metric("tiles per cluster", f"{len(tiles) / max(pa.n_clusters, 1):.1f}")
m[3].metric("within-cluster Jaccard", f"{summ['jaccard_mean']:.3f}" if summ["jaccard_mean"] is not None else "n/a",
            help="Exact Jaccard similarity of the coarse occupancy signatures on sampled member pairs, "
                 "size-weighted mean over clusters (1 = identical outlines).")
full_t = timings.get("full_pass")
m[4].metric("analysis time", f"{1000 * total_t:.1f} ms" if np.isfinite(total_t) else "n/a",
            help="Tiling, signatures and LSH clustering (what the selector needs)"
                 + (f"; the full table of every tile's features, built when this page first showed it: "
                    f"{1000 * full_t:.1f} ms more." if full_t is not None else "."))

loose = vp.loose_clusters_note(clusters, tiles, summ["jaccard_mean"], pa.tile, *S.lsh_tuple()[:3])
if loose:
    st.info(loose)

n_tiles = len(tiles)
sel_c1, sel_c2 = flex_row("patterns_select", (300, 300))
with sel_c1:
    tsel = S.widget(st.number_input, "Selected tile number (as in the map's hover)", "tsel", min_value=0,
                    max_value=max(n_tiles - 1, 0), step=1)
with sel_c2:
    csel = S.widget(st.number_input, "Selected cluster", "csel", min_value=0,
                    max_value=max(pa.n_clusters - 1, 0), step=1)
    hl = st.toggle("Highlight the selected cluster on the map", key="cluster_highlight")
tsel = min(int(tsel), n_tiles - 1)
csel = min(int(csel), pa.n_clusters - 1)

left, right = figure_pair("patterns_maps")
with left:
    akey = S.analysis_key(wl.digest, pa.tile)  # the analysis these maps draw
    ev = S.chart(S.figure_cached(f"tile_map|{akey}|{tsel}", lambda: vp.tile_density_map(
        tiles, ts.n_brows, ts.n_bcols, pa.tile, selected=tsel)),
        key="tile_map", on_select="rerun", selection_mode="points")
    st.caption("How to read this: one cell per tile (bi, bj); colour = density (log), blank = empty tile, "
               "red frame = selected tile. Click a tile to select it.")
with right:
    S.chart(S.figure_cached(f"cluster_map|{akey}|{csel if hl else None}", lambda: vp.cluster_map(
        tiles, ts.n_brows, ts.n_bcols, pa.tile, selected_cluster=csel if hl else None)), key="cluster_map")
    st.caption("How to read this: tiles of one colour share an LSH cluster; the selected cluster keeps its "
               "colour and every other tile is grey (toggle). Colours repeat; hover shows the cluster id.")

try:   # plotly click selection → tile index (customdata of the clicked cell)
    picked = vp.picked_tile(ev, n_tiles)
except ValueError as exc:
    picked = None
    st.warning(f"That click could not be read as a tile ({exc}); type the tile's number (shown in the "
               "map's hover) in the box above instead.")
if picked is not None and picked != tsel:
    S.put("tsel", picked)
    S.put("csel", int(tiles["cluster"].iloc[picked]))
    st.rerun()

st.header("Cluster representatives")


def _gallery():
    top = clusters.sort_values("size", ascending=False).head(12)
    dense = [ts.dense(int(r)) for r in top["representative"]]
    # on two lines: six one-line titles in a row ran into each other (layout review)
    labels = [f"c{cid}: {int(row['size']):,} tiles<br>d = {row['mean_density']:.2g}" for cid, row in top.iterrows()]
    return vp.representative_gallery(dense, labels, cols=min(6, max(len(dense), 3)), height_per_row=230)


# every figure below depends on the analysis only (akey), or on it and the selected tile: built once
S.chart(S.figure_cached(f"gallery|{akey}", _gallery), key="gallery")
st.caption("How to read this: the representative tile of each of the largest clusters (|value|, blank = "
           "zero). It is, among the tiles whose outline is the medoid's or has a mean Jaccard distance to "
           f"the members within {NEAR_MEDOID:g} of the medoid's, the one nearest the members' mean density "
           "and top-value share (ties: the heavier tile). The selector evaluates expensive kernels on these "
           "representatives only.")

left, right = figure_pair("patterns_histograms")
with left:
    bpd = pa.lsh.bins_per_decade
    S.chart(S.figure_cached(f"dens_hist|{akey}|{bpd}", lambda: vp.density_histogram(
        tiles, bins_per_decade=bpd)), key="dens_hist")
    st.caption("How to read this: how many tiles have a given density (log bins), coloured by the analysis' "
               "log-density bin (the legend gives each bin's densities); the LSH split uses these bins, so "
               "tiles with the same coarse outline but densities in different bins never share a cluster. "
               + vp.density_bin_caption(clusters["density_bin"].to_numpy(), bpd,
                                         weights=clusters["size"].to_numpy()))
with right:
    S.chart(S.figure_cached(f"cluster_sizes|{akey}", lambda: vp.cluster_sizes(clusters)), key="cluster_sizes")
    st.caption("How to read this: bar height = tiles in a cluster, colour = within-cluster Jaccard "
               "(light teal = members look alike, dark purple = loose cluster).")

st.header("Details")
# the tables of one tile / one cluster: a plain-language name (the raw column name in brackets, as in
# the export) and the value; what each means, with the analysis' own numbers (q, g, T, bins per decade),
# is a list under the table (a third column was cut off in half the page)
EXPLAINED_COLUMNS = {key: {
    key: st.column_config.TextColumn(key, help="plain-language name; in brackets the column's name in the "
                                               "export and in the library's table. What each means: the list "
                                               "under the table"),
    "value": st.column_config.TextColumn("value", help=f"this {what}'s value"),
} for key, what in (("feature", "tile"), ("property", "cluster"))}
d1, d2 = figure_pair("patterns_details")
with d1:
    st.subheader(f"Tile #{tsel}")
    row = tiles.iloc[tsel]
    ftab = vp.explained_table(tiles, tsel, "feature", vp.feature_notes(pa.lsh, pa.tile, row))
    st.dataframe(ftab[["feature", "value"]], hide_index=True, width="stretch", height=300,
                 column_config=EXPLAINED_COLUMNS["feature"])
    with st.expander("What these features mean"):
        st.markdown(vp.meanings_markdown(ftab, "feature"))
    S.chart(S.figure_cached(f"tile_detail|{akey}|{tsel}", lambda: vp.representative_gallery(
        [ts.dense(tsel)], [f"tile ({int(row['bi'])}, {int(row['bj'])})"], cols=1, height_per_row=260)),
        key="tile_detail")
    st.caption("How to read this: this tile's entries, one cell per entry (rows down, columns across, local "
               "to the tile); colour = |value|, blank = zero.")
with d2:
    st.subheader(f"Cluster {csel}")
    crow = clusters.loc[csel]
    ctab = vp.explained_table(clusters, csel, "property", vp.cluster_notes(pa.lsh, crow), by_label=True)
    st.dataframe(ctab[["property", "value"]], hide_index=True, width="stretch",
                 column_config=EXPLAINED_COLUMNS["property"])
    with st.expander("What these properties mean"):
        st.markdown(vp.meanings_markdown(ctab, "property"))
    members = pa.cluster_members(csel) if hasattr(pa, "cluster_members") else \
        np.flatnonzero(tiles["cluster"].to_numpy() == csel)
    st.caption(f"{len(members)} member tiles (first 50 shown)")
    member_notes = vp.feature_notes(pa.lsh, pa.tile)
    st.dataframe(tiles.iloc[np.asarray(members)[:50]][["bi", "bj", "nnz", "density"]], width="stretch", height=250,
                 column_config={"_index": st.column_config.Column("tile #", help="tile number (as in the map's "
                                                                  "hover and the box above)"),
                                **{c: st.column_config.Column(f"{member_notes[c][0]} ({c})", help=member_notes[c][1])
                                   for c in ("bi", "bj", "nnz")},
                                "density": st.column_config.NumberColumn(
                                    f"{member_notes['density'][0]}", help=member_notes["density"][1],
                                    format="%.4g")})

st.header("Export")
S.export_buttons("Tiles", lambda: tiles_export(tiles), f"tiles-T{pa.tile}", "exp_tiles",
                  "one row per nonempty tile: its number (as in the map's hover and the clusters' representative), "
                  "position, every feature, signature (an integer, and in hex as shown above), cluster")
S.export_buttons("Clusters", lambda: clusters.reset_index(), f"clusters-T{pa.tile}", "exp_clusters",
                  "one row per cluster: size, representative tile, density bin, mean density, Jaccard")

if isinstance(timings, dict) and timings:
    with st.expander("Timing of the analysis stages"):
        stages = {("full table (on first use)" if k == "full_pass" else k): v for k, v in timings.items()}
        st.dataframe(pd.DataFrame({"stage": list(stages), "ms": [1000 * float(v) for v in stages.values()]}),
                     hide_index=True)

page_end()
