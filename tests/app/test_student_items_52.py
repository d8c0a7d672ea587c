"""Smaller items of the student probe (fifty-first session): a refused upload left the old matrix's
page below the error without a word; an exact plan's output error read "3.11e-14 %"; α and β had no
help; the exported tile table had no tile number for the clusters' representative to name."""
import io

import pandas as pd
from streamlit.testing.v1 import AppTest

from apptest_tree import ok, open_page
from conftest import APP


def test_a_refused_upload_says_the_old_workload_stays():
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.file_uploader(key="matrix_upload").set_value(("bad.mtx", b"not a matrix", "text/plain")).run()
    assert not at.exception
    assert at.error and "bad.mtx" in at.error[0].value
    said = " ".join(i.value for i in at.info)
    assert "**bad.mtx** was not loaded; every page still uses **minilm_ffn0_mag90**" in said


def test_a_good_upload_gets_no_such_note(tmp_path):
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    mtx = b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n3 2 -2\n"
    at.file_uploader(key="matrix_upload").set_value(("good.mtx", mtx, "text/plain")).run()
    ok(at)
    assert not any("was not loaded" in i.value for i in at.info)


def test_an_exact_plans_output_error_reads_as_rounding(app):
    at = open_page(app, "pages/2_Kernels.py", alpha="10000")
    ok(at)
    [m] = [m for m in at.metric if m.label.startswith("output error")]
    assert m.value == "0 % (rounding)"
    assert "float64 rounding" in m.proto.help
    [e] = [m for m in at.metric if m.label == "relative error"]
    assert e.value == "0 %"


def test_alpha_and_beta_explain_themselves(app):
    at = open_page(app, "pages/2_Kernels.py")
    ok(at)
    assert "α·E/‖A‖²_F" in at.select_slider(key="w:alpha").help
    assert "β·R/R_dense" in at.select_slider(key="w:beta").help


def test_the_kernels_page_says_what_each_used_kernel_stores(app):
    from akfviz.kernels.registry import KERNELS
    from akfviz.viz import kernels as vk

    at = open_page(app, "pages/2_Kernels.py", sample="powerlaw_4096", gran="tile")
    ok(at)
    [used] = [m for m in at.metric if m.label == "kernels used"]
    [listing] = [m.value for m in at.markdown if m.value.startswith("- **")]
    lines = listing.splitlines()
    assert len(lines) == int(used.value) >= 2
    for line in lines:
        name = line.split("**")[1]
        assert line == f"- **{name}**: {KERNELS[name].description}"
    cat = vk.kernel_catalogue([line.split("**")[1] for line in lines])
    assert len(cat) == len(KERNELS) and cat["used here"].tolist() == [True] * len(lines) + [False] * (len(cat) - len(lines))
    assert cat.set_index("kernel").loc["QUANT8D", "what it stores"].startswith("int8 codes")
