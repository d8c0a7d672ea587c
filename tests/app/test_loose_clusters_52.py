"""Loose clusters are explained (student probe): MiniLM's FFN at T = 8 gives clusters whose members
look little alike (within-cluster Jaccard 0.07, the largest 4,344 tiles) and the page said nothing."""
import pandas as pd

import akfviz
from akfviz.viz import patterns as vp
from akfviz.workloads.samples import load_sample
from apptest_tree import ok, open_page


def _clusters(sizes, jaccards):
    return pd.DataFrame({"size": sizes, "jaccard_mean": jaccards})


def test_the_note_reads_its_numbers_from_the_clusters():
    tiles = pd.DataFrame({"nnz": [4, 8, 6, 6]})
    text = vp.loose_clusters_note(_clusters([3, 1], [0.05, 1.0]), tiles, 0.05, 8, 32, 8, 8)
    assert text.startswith("Loose clusters: members share few occupied cells (within-cluster Jaccard 0.05; "
                           "the largest cluster, 3 tiles, 0.05)")
    assert "all 4 hashes of any of its 8 bands" in text and "6.0 nonzeros on average in 8×8 cells (one entry" in text


def test_no_note_for_alike_members_or_singletons():
    tiles = pd.DataFrame({"nnz": [4, 8]})
    assert vp.loose_clusters_note(_clusters([2], [0.6]), tiles, 0.6, 32, 32, 8, 8) == ""
    assert vp.loose_clusters_note(_clusters([1, 1], [1.0, 1.0]), tiles, 0.0, 32, 32, 8, 8) == ""
    assert vp.loose_clusters_note(_clusters([1], [1.0]), tiles, None, 32, 32, 8, 8) == ""


def test_the_patterns_page_explains_loose_clusters_at_t8_only(app):
    at = open_page(app, "pages/1_Patterns.py", tile="8")
    ok(at)
    pa = akfviz.analyze(load_sample("minilm_ffn0_mag90"), tile=8)
    biggest = int(pa.clusters["size"].max())
    [note] = [i.value for i in at.info if i.value.startswith("Loose clusters")]
    assert f"the largest cluster, {biggest:,} tiles" in note
    assert f"{pa.summary()['jaccard_mean']:.2f}" in note
    at.slider(key="w:tile").set_value(32).run()
    ok(at)
    assert not any(i.value.startswith("Loose clusters") for i in at.info)
