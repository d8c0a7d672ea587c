"""AppTests: every page runs on the default sample, widgets change, URL state round-trips, bad input → st.error."""

import json

import numpy as np
import pytest

import akfviz
from apptest_tree import typed_array

from akfviz import app_state as S

PAGES = ["app.py", "pages/1_Patterns.py", "pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py",
         "pages/5_Design_space.py", "pages/6_Solver.py", "pages/7_Learn.py"]
CHART_PAGES = {"app.py": 2, "pages/1_Patterns.py": 5, "pages/2_Kernels.py": 4, "pages/3_NPU.py": 5,
               "pages/4_Compare.py": 2, "pages/7_Learn.py": 3}


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def charts(at):
    return at.get("plotly_chart")


def test_default_sample_is_loaded_on_first_open(app):
    from akfviz.workloads.samples import DEFAULT_SAMPLE, load_sample

    app.run()
    _ok(app)
    A = load_sample(DEFAULT_SAMPLE)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["nnz"] == f"{A.nnz:,}"
    assert metrics["rows"] == f"{A.shape[0]:,}"
    assert len(charts(app)) >= 2
    assert app.selectbox(key="w:sample").value == DEFAULT_SAMPLE
    assert dict(app.query_params) == {}          # defaults are not written into the link


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs(app, page):
    app.run()
    app.switch_page(page).run()
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    if page in CHART_PAGES:
        assert len(charts(app)) >= CHART_PAGES[page]
    else:   # a page whose library stage is missing must say so, not fake data
        assert len(charts(app)) >= 1 or app.info


def test_url_state_reaches_widgets_and_round_trips(app):
    app.query_params.update({"src": "gen", "gen": "banded", "g_n": "256", "tile": "16", "alpha": "10"})
    app.run()
    _ok(app)
    assert app.slider(key="w:tile").value == 16
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["rows"] == "256"
    q = dict(app.query_params)
    assert q["tile"] == "16" and q["src"] == "gen" and q["gen"] == "banded" and q["g_n"] == "256"
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    assert app.select_slider(key="w:alpha").value == 10.0


def test_bad_url_value_is_reported_not_fatal(app):
    app.query_params.update({"tile": "999", "nonsense": "1"})
    app.run()
    assert not app.exception
    assert any("tile" in w.value for w in app.warning)
    assert any("nonsense" in w.value for w in app.warning)
    assert app.slider(key="w:tile").value == 32


def test_tile_slider_changes_the_analysis(app):
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    before = {m.label: m.value for m in app.metric}["nonempty tiles"]
    app.slider(key="w:tile").set_value(64).run()
    _ok(app)
    after = {m.label: m.value for m in app.metric}["nonempty tiles"]
    assert before != after
    assert dict(app.query_params)["tile"] == "64"


def test_generate_form_switches_the_workload(app):
    app.run()
    app.selectbox(key="gen_kind").set_value("stencil5").run()
    submit = next(b for b in app.button if b.label == "Generate")
    submit.click().run()
    _ok(app)
    q = dict(app.query_params)
    assert q["src"] == "gen" and q["gen"] == "stencil5"
    assert "generated" in app.caption[1].value or any("stencil5" in s.value for s in app.header)


@pytest.mark.parametrize("kind, other", [("powerlaw", "avg_nnz"), ("llm", "sparsity"),
                                         ("llm_magnitude", "sparsity")])
def test_generate_form_density_replaces_the_number_input_it_stands_for(app, kind, other):
    # the number input (avg_nnz / sparsity) always submits a value: a typed density was refused
    # with "give either density or ..., not both" (app probe, 42nd session)
    app.run()
    app.selectbox(key="gen_kind").set_value(kind).run()
    next(t for t in app.text_input if t.label.startswith("density")).set_value("0.02")
    next(b for b in app.button if b.label == "Generate").click().run()
    _ok(app)
    assert not app.error, [e.value for e in app.error]
    q = dict(app.query_params)
    assert q.get("gen", kind) == kind and q["g_density"] == "0.02" and f"g_{other}" not in q
    shown = {m.label: int(m.value.replace(",", "")) for m in app.metric if m.label in ("rows", "columns", "nnz")}
    assert abs(shown["nnz"] / (shown["rows"] * shown["columns"]) - 0.02) < 0.002


@pytest.mark.parametrize("value, said", [("1.5", "m: '1.5' is not a whole number. Accepted: a whole number >= 1"),
                                         ("abc", "m: 'abc' is not a")])
def test_generate_form_error_names_its_field(app, value, said):
    app.run()
    app.selectbox(key="gen_kind").set_value("uniform").run()
    next(t for t in app.text_input if t.label.split(" — ")[0] == "m").set_value(value)
    next(b for b in app.button if b.label == "Generate").click().run()
    assert not app.exception
    assert any(e.value.startswith(said) for e in app.error), [e.value for e in app.error]


def test_bad_upload_shows_error_not_traceback(app):
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("broken.mtx", b"this is not a matrix market file\n",
                                                      "text/plain")).run()
    assert not app.exception
    assert app.error and "mtx" in " ".join(e.value for e in app.error).lower() or app.error


def test_good_upload_becomes_the_workload(app):
    import io

    import scipy.io
    import scipy.sparse as sp

    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.random(40, 30, density=0.2, random_state=0, format="coo"))
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("small.mtx", buf.getvalue(), "text/plain")).run()
    _ok(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["rows"] == "40" and metrics["columns"] == "30"
    assert dict(app.query_params)["src"] == "upload"


def test_an_upload_is_hashed_once_not_on_every_rerun(app, monkeypatch):
    """Review: every rerun of every page hashed the upload (twice): ≈ 0.14 s per hash for 200 MB."""
    import io

    import scipy.io
    import scipy.sparse as sp

    calls = []
    real = S.bytes_digest
    monkeypatch.setattr(S, "bytes_digest", lambda data: calls.append(len(data)) or real(data))
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.random(40, 30, density=0.2, random_state=0, format="coo"))
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("small.mtx", buf.getvalue(), "text/plain")).run()
    _ok(app)
    assert {m.label: m.value for m in app.metric}["rows"] == "40"
    first = len(calls)
    assert first >= 1
    app.run()                                     # the Matrix page again (the uploader hands a new copy)
    app.switch_page("pages/2_Kernels.py").run()
    app.switch_page("pages/1_Patterns.py").run()
    _ok(app)
    assert len(calls) == first, calls


def test_suitesparse_tar_gz_upload_becomes_the_workload(app):
    import io
    import tarfile

    import scipy.io
    import scipy.sparse as sp

    def mtx(m, n):
        buf = io.BytesIO()
        scipy.io.mmwrite(buf, sp.random(m, n, density=0.2, random_state=1, format="coo"))
        return buf.getvalue()

    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w:gz") as tf:  # the SuiteSparse layout: name/name.mtx + side files
        for member, data in (("grid/grid.mtx", mtx(36, 28)), ("grid/grid_b.mtx", mtx(36, 1))):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("grid.tar.gz", tar.getvalue(), "application/gzip")).run()
    _ok(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["rows"] == "36" and metrics["columns"] == "28"
    # the archive holds two matrices: a picker offers both, the SuiteSparse main matrix first
    pick = [sb for sb in app.selectbox if sb.label == "Matrix in the archive"]
    assert len(pick) == 1 and list(pick[0].options) == ["grid/grid.mtx", "grid/grid_b.mtx"]
    pick[0].set_value("grid/grid_b.mtx").run()
    _ok(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["rows"] == "36" and metrics["columns"] == "1"


def test_bad_bundle_shows_error(app):
    app.run()
    app.sidebar.file_uploader(key="bundle_upload").set_value(("run.json", b"{not json", "application/json")).run()
    assert not app.exception
    assert any("not valid JSON" in e.value for e in app.error)


def test_bundle_round_trip_applies_settings(app):
    vals = {k: f.default for k, f in S.FIELDS.items()}
    vals.update(tile=48, beta=3.0, sample="stencil5_64x64")
    text = S.make_bundle(vals, {}, {"selection": {"relative_error": 0.01}})
    app.run()
    app.sidebar.file_uploader(key="bundle_upload").set_value(("run.json", text.encode(), "application/json")).run()
    _ok(app)
    assert app.slider(key="w:tile").value == 48
    assert app.selectbox(key="w:sample").value == "stencil5_64x64"
    q = dict(app.query_params)
    assert q["tile"] == "48" and q["beta"] == "3" and q["sample"] == "stencil5_64x64"


def test_kernels_sliders_and_modes(app):
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    err0 = {m.label: m.value for m in app.metric}["relative error"]
    app.select_slider(key="w:alpha").set_value(0.0).run()
    _ok(app)
    app.select_slider(key="w:beta").set_value(10000.0).run()
    _ok(app)
    err1 = {m.label: m.value for m in app.metric}["relative error"]
    assert err0 != err1                       # resource-only weights choose lossier kernels
    app.radio(key="w:mode").set_value("error").run()
    _ok(app)
    app.slider(key="w:budget").set_value(0.0).run()
    _ok(app)
    assert {m.label: m.value for m in app.metric}["relative error"] == "0 %"
    assert dict(app.query_params)["mode"] == "error"


def test_npu_widgets_update(app):
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    ev0 = {m.label: m.value for m in app.metric}["events"]
    app.slider(key="w:xdens").set_value(0.5).run()
    _ok(app)
    ev1 = {m.label: m.value for m in app.metric}["events"]
    assert ev0 != ev1
    row = app.slider(key="w:perow").value
    app.slider(key="w:perow").set_value(min(row + 1, 255)).run()
    _ok(app)
    assert dict(app.query_params)["perow"] == str(min(row + 1, 255))


def test_kernels_figures_follow_the_error_budget(app):
    """The figures drawn from the plan are cached under its key, which must hold the error budget:
    a budget of 0 is an exact plan, and its kernel mix must say so (mutation probe)."""
    from akfviz.kernels import LOSSLESS

    def mix_kernels():
        spec = next(s for s in (json.loads(c.proto.spec) for c in app.get("plotly_chart"))
                    if s["layout"]["title"]["text"].startswith("Kernel mix"))
        return set(spec["data"][0]["y"])

    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    app.radio(key="w:mode").set_value("error").run()
    app.slider(key="w:budget").set_value(0.3).run()
    _ok(app)
    lossy = mix_kernels()
    assert not lossy <= set(LOSSLESS)
    app.slider(key="w:budget").set_value(0.0).run()
    _ok(app)
    assert mix_kernels() <= set(LOSSLESS)


def test_npu_zoom_toggle_draws_the_busy_window(app):
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)

    def heatmap():
        """(z, title) of the utilisation heatmap as the browser gets it."""
        spec = next(s for s in (json.loads(c.proto.spec) for c in app.get("plotly_chart"))
                    if s["layout"]["title"]["text"].startswith("PE utilisation"))
        return typed_array(spec["data"][0]["z"]), spec["layout"]["title"]["text"]

    # the default sample keeps its busy PEs in a corner: zoomed on the first visit (a purple speck in
    # a black 256² square before)
    assert app.toggle(key="util_zoom").value is True
    z, title = heatmap()
    assert "zoomed to rows" in title
    assert z.shape[0] < 256 and z.shape[1] < 256
    app.toggle(key="util_zoom").set_value(False).run()
    _ok(app)
    z_all, title = heatmap()
    assert z_all.shape == (256, 256) and "zoomed" not in title
    # the same busy PEs, none cut off: as many nonzero cells as PEs busy in the whole grid
    assert np.count_nonzero(z) == np.count_nonzero(z_all) > 0
    # the user's choice stays on the next rerun
    app.run()
    assert app.toggle(key="util_zoom").value is False


def test_patterns_tile_selection_in_url(app):
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    app.number_input(key="w:tsel").set_value(5).run()
    _ok(app)
    assert dict(app.query_params)["tsel"] == "5"
    assert any(h.value == "Tile #5" for h in app.subheader)   # a heading under "Details"


def test_learn_steps_forward(app):
    app.run()
    app.switch_page("pages/7_Learn.py").run()
    next_btn = next(b for b in app.button if b.key == "learn_next")
    next_btn.click().run()
    _ok(app)
    assert any(m.value.startswith("**Step 1 /") for m in app.markdown)
    assert dict(app.query_params)["lstep"] == "1"


def test_design_space_runs_a_sweep(app):
    app.query_params["sweep"] = "beta=1,100"
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    next(b for b in app.button if b.label == "Run sweep").click().run()
    _ok(app)
    assert len(charts(app)) >= 2
    assert any("2 configurations" in s.value for s in app.header)


def test_design_space_runs_a_small_default_grid_on_opening(app):
    # the default grid (6 points) on the default sample runs by itself: the first visit shows a sweep
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    _ok(app)
    assert len(charts(app)) >= 2
    assert any("6 configurations (run automatically" in s.value for s in app.header)
    # pressing the button afterwards reruns it and says so
    next(b for b in app.button if b.label == "Run sweep").click().run()
    _ok(app)
    assert any("6 configurations (run in this session)" in s.value for s in app.header)


def test_design_space_large_grid_waits_for_the_button(app):
    app.query_params["sweep"] = "tile=8,16,32,64;beta=0.1,1,10,100"  # 16 points: over the automatic limit
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    _ok(app)
    assert not charts(app)
    assert any("Press **Run sweep**" in i.value and "over 12 points" in i.value for i in app.info)


def test_safetensors_upload_with_tensor_picker_and_pruning(app):
    import io

    from safetensors.numpy import save

    rng = np.random.default_rng(0)
    data = save({"layer.bias": rng.standard_normal(8).astype(np.float32),
                 "layer.weight": rng.standard_normal((64, 48)).astype(np.float32)})
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("w.safetensors", data, "application/octet-stream")).run()
    _ok(app)
    assert app.selectbox(key="w:up_tensor").options == ["layer.weight (64, 48)"] or \
        app.selectbox(key="w:up_tensor").value == "layer.weight"
    assert {m.label: m.value for m in app.metric}["nnz"] == f"{64 * 48:,}"
    app.selectbox(key="w:up_prune").set_value("magnitude").run()
    app.slider(key="w:up_sparsity").set_value(0.75).run()
    _ok(app)
    assert {m.label: m.value for m in app.metric}["nnz"] == f"{64 * 48 // 4:,}"


@pytest.mark.parametrize("wrap", ["gz", "tar.gz", "savez"])
def test_compressed_archived_and_savez_containers_offer_their_matrices(app, wrap):
    """A .safetensors.gz, a .tar.gz holding a .safetensors, and a numpy.savez .npz of several
    arrays: the app offers the choice the library accepts (it used to show only an error
    asking for tensor=, which the app had no way to give)."""
    import gzip
    import io
    import tarfile

    from safetensors.numpy import save

    rng = np.random.default_rng(3)
    w, v = rng.standard_normal((40, 24)), rng.standard_normal((24, 56))
    if wrap == "savez":
        buf = io.BytesIO()
        np.savez(buf, w=w, v=v)
        name, data, label = "arrays.npz", buf.getvalue(), "Array in the .npz"
    else:
        st_bytes = save({"w": w, "v": v})
        if wrap == "gz":
            name, data = "two.safetensors.gz", gzip.compress(st_bytes)
        else:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as tf:
                info = tarfile.TarInfo("model/two.safetensors")
                info.size = len(st_bytes)
                tf.addfile(info, io.BytesIO(st_bytes))
            name, data = "model.tar.gz", buf.getvalue()
        label = "Tensor"
    app.run()
    app.file_uploader(key="matrix_upload").set_value((name, data, "application/octet-stream")).run()
    _ok(app)
    pick = app.selectbox(key="w:up_tensor")
    assert pick.label == label and sorted(pick.options) == ["v (24, 56)", "w (40, 24)"]
    pick.set_value("v").run()
    _ok(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["rows"] == "24" and metrics["columns"] == "56"


def test_an_unreadable_tensor_is_said_once_and_fp8_weights_load(app):
    """A safetensors file with an FP8 weight, a tensor of NaN bytes and one of a dtype akfviz
    cannot read: the FP8 tensor loads; choosing a broken one shows its error once on the Matrix page
    (the shell resolving the workload and the upload control used to show it twice) and once on the
    next page, which stops there, without an exception. Back on the Matrix page (its uploader empty
    again) the file's tensor and pruning can still be changed, so a broken choice can be undone."""
    import json
    import struct

    fp8 = (np.arange(32 * 24) % 120).astype(np.uint8).reshape(32, 24)  # 0x00..0x77: finite E4M3 bytes
    tensors = {"a_fp8": ("F8_E4M3", fp8.shape, fp8.tobytes()),
               "b_nan": ("F8_E4M3", (4, 4), bytes([0x7F] * 16)),
               "c_f4": ("F4", (4, 4), bytes(16))}
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hdr = json.dumps(header).encode()
    hdr += b" " * (-len(hdr) % 8)
    data = struct.pack("<Q", len(hdr)) + hdr + b"".join(blobs)
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("mixed.safetensors", data, "application/octet-stream")).run()
    _ok(app)
    assert app.selectbox(key="w:up_tensor").value == "a_fp8"
    metrics = {m.label: m.value for m in app.metric}
    assert (metrics["rows"], metrics["columns"], metrics["nnz"]) == ("32", "24", f"{np.count_nonzero(fp8):,}")
    for bad, words in (("b_nan", "NaN or infinite"), ("c_f4", "has dtype F4")):
        app.selectbox(key="w:up_tensor").set_value(bad).run()
        assert not app.exception
        errors = [e.value for e in app.error]
        assert len(errors) == 1 and words in errors[0] and bad in errors[0], errors
        app.switch_page("pages/1_Patterns.py").run()
        assert not app.exception
        errors = [e.value for e in app.error]
        assert len(errors) == 1 and words in errors[0], errors
        assert not charts(app)
        app.switch_page("app.py").run()  # the uploader is empty again, the file still the workload
        assert not app.exception and len(app.error) == 1
        assert any("uploaded earlier in this session" in c.value for c in app.caption)
    app.selectbox(key="w:up_tensor").set_value("a_fp8").run()  # the choice undone without uploading again
    _ok(app)
    assert {m.label: m.value for m in app.metric}["nnz"] == f"{np.count_nonzero(fp8):,}"
    app.selectbox(key="w:up_prune").set_value("magnitude").run()  # pruning too stays adjustable
    _ok(app)
    assert {m.label: m.value for m in app.metric}["nnz"] != f"{np.count_nonzero(fp8):,}"


def test_a_tensor_name_from_a_safetensors_upload_does_not_reach_the_next_file(app):
    from safetensors.numpy import save

    rng = np.random.default_rng(1)
    app.run()
    data = save({"w": rng.standard_normal((32, 24)).astype(np.float32)})
    app.file_uploader(key="matrix_upload").set_value(("w.safetensors", data, "application/octet-stream")).run()
    _ok(app)
    mtx = b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 2.5\n3 2 -1\n"
    app.file_uploader(key="matrix_upload").set_value(("m.mtx", mtx, "text/plain")).run()
    _ok(app)  # the .mtx holds one matrix: the old name "w" would be refused as tensor=
    assert {m.label: m.value for m in app.metric}["nnz"] == "2"


def test_other_hardware_preset_runs_the_npu_page(app):
    app.run()
    app.selectbox(key="w:preset").set_value("edge-32x32").run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    assert dict(app.query_params)["preset"] == "edge-32x32"
    assert len(charts(app)) >= 5


def test_empty_matrix_is_explained_not_crashing(app):
    import io

    import scipy.io
    import scipy.sparse as sp

    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.coo_array((20, 20)))
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("empty.mtx", buf.getvalue(), "text/plain")).run()
    assert not app.exception
    for page in ("pages/1_Patterns.py", "pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py"):
        app.switch_page(page).run()
        assert not app.exception, (page, [e.value for e in app.exception])
        assert any("no nonzeros" in i.value for i in app.info) or app.error, page


def test_matrix_whose_last_blocks_are_empty_runs_every_page(app):
    """One nonzero in a 100×80 matrix: the last row and column blocks hold no tile (the NPU
    page once reported 'The given Mapping does not match the plan')."""
    import io

    import scipy.io
    import scipy.sparse as sp

    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.coo_array(([2.5], ([7], [11])), shape=(100, 80)))
    app.run()
    app.file_uploader(key="matrix_upload").set_value(("one.mtx", buf.getvalue(), "text/plain")).run()
    for page in ("pages/1_Patterns.py", "pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py"):
        app.switch_page(page).run()
        assert not app.exception, (page, [e.value for e in app.exception])
        assert not app.error, (page, [e.value for e in app.error])
        if page == "pages/3_NPU.py":
            metrics = {m.label: m.value for m in app.metric}
            assert int(metrics["makespan (cycles)"].replace(",", "")) > 0


@pytest.mark.parametrize("end", [0, 1])
def test_every_numeric_link_value_at_an_end_of_its_range_runs_every_page(app, end):
    """A link may carry any value its field accepts; every widget must then show it (or move
    it into a range that depends on the data) instead of raising. xdens=0.01 and iters=500
    once crashed the NPU and Solver pages (their sliders start at 0.05 and stop at 200)."""
    from akfviz import app_state as S

    for key, field in S.FIELDS.items():
        bounds = getattr(field.parse, "bounds", None)
        if bounds is None or key in ("hw_rows", "hw_cols"):
            continue
        app.query_params[key] = str(bounds[end])
    # the largest grid is 1024×1024 PEs; a link may ask for it, the test keeps it small
    app.query_params["hw_rows"] = "1" if end == 0 else "64"
    app.query_params["hw_cols"] = "1" if end == 0 else "48"
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    for page in ("pages/1_Patterns.py", "pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py",
                 "pages/6_Solver.py", "pages/7_Learn.py"):
        app.switch_page(page).run()
        assert not app.exception, (page, [e.value[:300] for e in app.exception])


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 7), (5, 1)])
def test_npu_page_on_a_grid_of_one_row_or_column(app, rows, cols):
    """A one-row grid has no PE row to choose (the timeline slider once got min = max = 0)."""
    app.query_params["hw_rows"] = str(rows)
    app.query_params["hw_cols"] = str(cols)
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    assert not app.exception, [e.value[:300] for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    metrics = {m.label: m.value for m in app.metric}
    assert f"PEs busy (of {rows * cols:,})" in metrics
    assert int(metrics["makespan (cycles)"].replace(",", "")) > 0
    # one PE: nothing to anneal, and the caption says so (it read "(0 proposals) … it climbs above its start")
    anneal = [c.value for c in app.caption if "placement objective" in c.value]
    assert len(anneal) == 1
    assert ("Annealing made no proposals" in anneal[0]) == (rows * cols == 1)
    if rows * cols > 1:      # either course of the search, said as it went
        assert "climbs above its start" in anneal[0] or "accepted less and less" in anneal[0]
    else:
        assert "climbs above its start" not in anneal[0] and "accepted less and less" not in anneal[0]


@pytest.mark.parametrize("value", ["abc", "1e400", "nan", ""])
def test_bad_generator_value_in_a_link_is_reported_and_the_form_still_opens(app, value):
    app.query_params["src"] = "gen"
    app.query_params["gen"] = "uniform"
    app.query_params["g_n"] = value
    app.query_params["g_density"] = value
    app.run()
    assert not app.exception, [e.value[:300] for e in app.exception]
    inputs = {n.label.split(" — ")[0]: n.value for n in app.number_input}
    assert inputs["n"] >= 1 and 0 < inputs["density"] <= 1
    if value:
        assert app.error and any("n=" in e.value or "density" in e.value for e in app.error)


def test_compare_shows_a_dash_where_the_paper_makes_no_claim(app):
    app.run()
    app.switch_page("pages/4_Compare.py").run()
    _ok(app)
    table = app.dataframe[0].value.set_index("quantity")         # one row per quantity, one column per plan
    assert table.loc["energy — paper's text", "BlockSparse"] == "—"
    assert table.loc["energy — paper's text", "AKF"] == "0.8"
    assert "note" not in table.index and not table.isna().any().any()
    # the per-plan notes are a list under the table, not a column cut off at the page's edge
    assert any(h.value == "Where and why they differ" for h in app.subheader)      # a heading, not bold text
    notes = [m.value for m in app.markdown if m.value.startswith("- **")]
    assert notes and all(f"**{p}**" in notes[0] for p in ("BlockSparse", "StaticSparse", "AKF"))
    # the comparison's progress bar is gone once it is done, and a rerun (cache hit) replays none
    assert not app.get("progress")
    app.run()
    _ok(app)
    assert not app.get("progress")
    # the CPU check: "bit for bit" when the difference is 0 (it read "agrees … to 0.0e+00")
    import re

    cap = next(c.value for c in app.caption if "on a seeded x its result" in c.value)
    assert "0.0e+00" not in cap
    assert ("equals scipy's Â x bit for bit." in cap
            or re.search(r"agrees with scipy's Â x to a relative \d\.\de[-+]\d+\.", cap)), cap


def test_selected_tile_of_a_larger_matrix_is_moved_into_range(app):
    app.query_params["tsel"] = "5000"
    app.query_params["csel"] = "5000"
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    assert not app.exception, [e.value[:300] for e in app.exception]
    n_tiles = int(app.number_input(key="w:tsel").max)
    assert app.number_input(key="w:tsel").value == n_tiles


@pytest.mark.parametrize("page,labels", [
    ("pages/1_Patterns.py", ["Tiles (CSV)", "Tiles (Parquet)", "Clusters (CSV)", "Clusters (Parquet)"]),
    ("app.py", ["nnz counts (CSV)", "nnz counts (Parquet)"]),
    ("pages/2_Kernels.py", ["Plan (CSV)", "Plan (Parquet)", "Trajectory (CSV)", "Pareto front (CSV)", "Fits (CSV)",
                            "Calibration points (Parquet)"]),
    ("pages/3_NPU.py", ["Simulation (JSON)", "PE counters (CSV)", "PE counters (Parquet)"]),
    ("pages/4_Compare.py", ["Comparison (CSV)", "Comparison (Parquet)", "CPU timings (CSV)"]),
    ("pages/5_Design_space.py", ["Sweep (CSV)", "Sweep (Parquet)"]),
    ("pages/6_Solver.py", ["Convergence (CSV)", "Convergence (Parquet)", "Solutions (CSV)", "Solutions (Parquet)",
                           "NPU cost (CSV)", "NPU cost (Parquet)"]),
])
def test_result_pages_offer_exports(app, page, labels):
    app.run()
    if page != "app.py":
        app.switch_page(page).run()
    _ok(app)
    offered = [b.proto.label for b in app.get("download_button")]
    for label in labels:
        assert label in offered, offered


def test_npu_and_compare_simulate_the_same_plan_and_x(app):
    # at rho_x < 1 the pages once disagreed (different random x, and Compare selected its own plan)
    app.query_params.update({"xdens": "0.05", "hw_rows": "16", "hw_cols": "16"})
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    npu = {m.label: m.value for m in app.metric}
    app.switch_page("pages/4_Compare.py").run()
    _ok(app)
    # "All measured columns": one row per measured column, one text column per plan
    measured = next(d.value for d in app.dataframe if "measured" in getattr(d.value, "columns", []))
    akf = dict(zip(measured["measured"], measured["AKF"]))
    assert akf["cycles"] == npu["makespan (cycles)"] and akf["macs"] == npu["MACs"]
    assert not app.warning


def test_a_plan_that_drops_the_matrix_is_flagged(app):
    # α = 0.01: SKIP is the cheapest kernel for every tile; the NPU page showed "3 cycles, 0 MACs".
    # (Until the eighteenth session 256 B of SRAM per PE did it too, through the SRAM penalty: that
    # penalty no longer trades accuracy for capacity.)
    app.query_params.update({"alpha": "0.01"})
    app.run()
    for page in ("pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py"):
        app.switch_page(page).run()
        assert not app.exception
        assert any("loses most of the matrix" in w.value and "SKIP" in w.value for w in app.warning), page


def test_the_sample_tab_follows_the_sample_chosen_in_the_sidebar(app):
    app.run()
    app.selectbox(key="w:sample").set_value("stencil5_64x64").run()
    _ok(app)
    # the Sample tab once kept showing the old sample, and "Use this sample" switched back to it
    assert app.selectbox(key="matrix_sample_pick").value == app.selectbox(key="w:sample").value


def test_solver_warns_when_cg_meets_an_indefinite_lossy_plan(app):
    # the stencil sample under QUANT8 (ε = 0.02) loses positive definiteness: CG's residual spikes
    app.query_params.update({"solver": "cg", "iters": "100", "seps": "0.02"})
    app.run()
    app.switch_page("pages/6_Solver.py").run()
    _ok(app)
    texts = [w.value for w in app.warning]
    assert any("not positive definite" in t for t in texts), texts
    app.selectbox(key="w:solver").set_value("jacobi").run()
    _ok(app)
    assert not any("positive definite" in w.value for w in app.warning)


def test_solver_shows_how_far_the_lossy_answer_is(app):
    """The answer's error is the library's ‖x_Â − x_A‖ / ‖x_A‖ for the plan the page runs."""
    from akfviz.npu.iterative import run_solver

    app.query_params.update({"solver": "jacobi", "iters": "40", "seps": "0.01"})
    app.run()
    app.switch_page("pages/6_Solver.py").run()
    _ok(app)
    metrics = {m.label: m.value for m in app.metric}
    A = S.sample_cached("stencil5_64x64")
    plan = akfviz.select(akfviz.analyze(A, tile=int(S.FIELDS["tile"].default)), error_budget=0.01)
    ref = run_solver(plan, akfviz.HardwareConfig(), method="jacobi", iterations=40)
    assert ref.solution_error > 0
    assert metrics["answer's error"] == f"{100 * ref.solution_error:.3g} %"
    # the threshold the iteration counts refer to is the run's own, as computed
    assert any(f"Residual below {ref.tol:g}:" in c.value for c in app.caption), [c.value for c in app.caption]


def test_kernels_keeps_link_weights_off_its_grid_exactly(app):
    """α/β from a link were snapped to the slider's 13 stops (0.5 → 0.3, 5e-324 → 0) and the URL rewritten."""
    app.query_params.update({"alpha": "0.5", "beta": "5e-324"})
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    assert app.select_slider(key="w:alpha").value == 0.5
    assert app.select_slider(key="w:beta").value == 5e-324
    assert app.query_params["alpha"] in ("0.5", ["0.5"]) and app.query_params["beta"] in ("5e-324", ["5e-324"])
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)


def test_learn_settings_travel_in_the_link_and_survive_page_switches(app):
    link = {"ln": "16", "lT": "8", "lgrid": "3×3", "ldens": "0.9", "lxd": "0.5", "lkernel": "DENSE", "lseed": "5"}
    app.query_params.update(link)
    app.run()
    app.switch_page("pages/7_Learn.py").run()
    _ok(app)
    assert app.selectbox(key="w:ln").value == 16 and app.selectbox(key="w:lkernel").value == "DENSE"
    assert app.number_input(key="w:lseed").value == 5 and app.slider(key="w:ldens").value == 0.9
    app.switch_page("pages/2_Kernels.py").run()
    app.switch_page("pages/7_Learn.py").run()
    _ok(app)
    assert app.selectbox(key="w:lgrid").value == "3×3" and app.slider(key="w:lxd").value == 0.5
    assert {k: app.query_params[k] for k in link} == link
    # y is listed one row per i (n rows), not as one 16-column row that needs sideways scrolling
    y_tab = next(d.value for d in app.dataframe if "y so far" in d.value.columns)
    assert len(y_tab) == 16 and list(y_tab.columns) == ["y so far", "Â x"]


@pytest.mark.parametrize("seed", ["9007199254740992", "-1e16"])
def test_matrix_page_refuses_generator_numbers_beyond_its_number_boxes(app, seed):
    """Streamlit's number box holds at most 2**53 − 1: the Matrix page raised StreamlitJSNumberBoundsError."""
    app.query_params.update({"src": "gen", "gen": "uniform", "g_n": "64", "g_density": "0.1", "g_seed": seed})
    app.run()
    assert not app.exception, [e.value[:300] for e in app.exception]
    assert any("seed" in e.value for e in app.error)


def test_unknown_names_in_a_link_are_reported(app):
    app.query_params.update({"sample": "nope", "preset": "nope", "static": "NOPE"})
    app.run()
    assert not app.exception
    texts = " ".join(w.value for w in app.warning)
    assert "no sample named 'nope'" in texts and "no hardware preset named 'nope'" in texts
    assert "no Static-sparse kernel named 'NOPE'" in texts


def test_learn_uses_the_sidebar_hardware_and_explains_the_whole_run(app):
    """The Learn page traced every case with the default preset's timing, whatever the sidebar said."""
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.npu.trace import tiny_case

    app.query_params.update({"preset": "loihi-like", "lkernel": "DENSE"})
    app.run()
    app.switch_page("pages/7_Learn.py").run()
    _ok(app)
    tc = tiny_case(n=8, tile=4, grid=(2, 2), density=0.35, x_density=0.75, kernel="DENSE", seed=0,
                   hw=HardwareConfig.from_preset("loihi-like"))
    default = tiny_case(n=8, tile=4, grid=(2, 2), density=0.35, x_density=0.75, kernel="DENSE", seed=0)
    assert tc.trace.makespan != default.trace.makespan
    assert f"the makespan is {tc.trace.makespan} cycles" in app.info[0].value
    total = akfviz.simulate(tc.plan, tc.hw, x=tc.x, mapping=tc.mapping).cycles
    assert any(f"= {total} cycles" in c.value for c in app.caption)


def test_a_one_pe_chip_no_longer_drops_the_matrix(app):
    """On a 1×1 grid the SRAM penalty once dropped most tiles (the warning blamed the PE SRAM); it now
    trades resource only, never accuracy, and says when it is off."""
    app.query_params.update({"hw_rows": "1", "hw_cols": "1"})
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    assert not app.exception
    assert not [w.value for w in app.warning if "loses most of the matrix" in w.value]
    assert any("SRAM penalty of the fusion weights is off" in c.value for c in app.caption)


@pytest.mark.parametrize("query,cause", [
    ({"mode": "resource", "rbudget": "0.01"}, "The resource budget (0.01 of Dense's)"),
    ({"alpha": "0", "beta": "1"}, "The weights price resource far above error"),
])
def test_dropped_plan_warning_names_what_dropped_it(app, query, cause):
    """With a 1 % resource budget the warning blamed 4.3 GB of SRAM."""
    app.query_params.update(query)
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    assert not app.exception
    texts = [w.value for w in app.warning if "loses most of the matrix" in w.value]
    assert texts and cause in texts[0]


def _bundle_script():
    import streamlit as st

    from akfviz import app_state as S

    S.init_session()
    st.session_state["tile"], st.session_state["preset"] = 16, "loihi-like"
    S.record_result("patterns", {"tile": 16})
    st.session_state["writer"] = S.bundle_writer(None)
    S.record_result("npu", {"cycles": 7})      # recorded later in the same run: still in the bundle


def test_the_bundle_download_holds_the_current_settings_and_its_results():
    """Streamlit calls a download's data function after the run, outside it, where the session
    state reads as empty: the bundle held every default and no results."""
    from streamlit.testing.v1 import AppTest

    from akfviz.workloads.samples import DEFAULT_SAMPLE

    at = AppTest.from_function(_bundle_script, default_timeout=60)
    at.run()
    assert not at.exception
    doc = json.loads(at.session_state["writer"]())   # called here, outside the script run
    assert doc["state"]["tile"] == 16 and doc["state"]["preset"] == "loihi-like"
    assert doc["state"]["sample"] == DEFAULT_SAMPLE
    assert doc["results"] == {"patterns": {"tile": 16}, "npu": {"cycles": 7}}


def _apply_empty_sample_bundle():
    import json

    import streamlit as st

    from akfviz import app_state as S

    S.init_session()
    S.apply_bundle(S.parse_bundle(json.dumps({"format": "akfviz-run-bundle", "version": 1,
                                              "state": {"sample": ""}})))
    st.session_state["after"] = S.get("sample")


def test_a_bundle_with_an_empty_sample_loads_the_default_sample():
    """A bundle's empty sample name selected the first sample (minilm_ffn0_mag50), not the default."""
    from streamlit.testing.v1 import AppTest

    from akfviz.workloads.samples import DEFAULT_SAMPLE

    at = AppTest.from_function(_apply_empty_sample_bundle, default_timeout=60)
    at.run()
    assert not at.exception
    assert at.session_state["after"] == DEFAULT_SAMPLE


def test_a_page_that_stops_early_keeps_the_link(app):
    """An empty matrix stops Patterns before page_end(): the URL used to be left bare."""
    link = {"src": "gen", "gen": "uniform", "g_density": "0", "g_n": "500", "tile": "64", "preset": "loihi-like"}
    app.query_params.update(link)
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    assert not app.exception
    assert any("no nonzeros" in i.value for i in app.info)
    assert {k: app.query_params[k] for k in link} == link


def test_a_link_value_a_widget_cannot_show_is_reported(app):
    """lsh_k=4 / lsh_b=256 were silently changed to 8 and 1."""
    app.query_params.update({"lsh_k": "4", "lsh_b": "256"})
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    assert not app.exception
    texts = [w.value for w in app.warning]
    assert any(t.startswith("MinHash functions K: 4 is not one of the choices here; using 8") for t in texts), texts
    assert app.select_slider(key="w:lsh_b").value == 8       # the nearest divisor of K, not the first


def test_design_space_does_not_sweep_an_empty_matrix(app):
    """Every page said 'no nonzeros' while Design space reported speedups of 22× and 48×."""
    app.query_params.update({"src": "gen", "gen": "uniform", "g_density": "0", "g_n": "64"})
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    assert not app.exception
    assert any("no nonzeros" in i.value for i in app.info)
    assert not app.get("plotly_chart")
    assert next(b for b in app.button if b.label == "Run sweep").disabled


def test_a_key_given_twice_in_a_link_is_reported_and_written_back_once(app):
    app.query_params["tile"] = ["16", "64"]
    app.run()
    assert not app.exception
    assert "Link parameter 'tile' is given 2 times; using the last value, '64'." in [w.value for w in app.warning]
    assert app.query_params["tile"] in ("64", ["64"]) and app.session_state["tile"] == 64


def test_learn_link_values_outside_its_choices_are_reported(app):
    app.query_params.update({"ln": "20", "lkernel": "XX"})
    app.run()
    app.switch_page("pages/7_Learn.py").run()
    assert not app.exception
    texts = [w.value for w in app.warning]
    assert "n (matrix side): 20 is not one of the choices here; using 16." in texts
    assert any(t.startswith("kernel: 'XX' is not one of the choices here; using 'CSC'") for t in texts)
    assert app.selectbox(key="w:ln").value == 16


@pytest.mark.parametrize("page", ["app.py", "pages/3_NPU.py"])
def test_link_warnings_and_workload_errors_come_under_the_page_heading(app, page):
    app.query_params.update({"tile": "999", "src": "gen", "gen": "uniform", "g_n": "-5"})
    if page == "app.py":
        app.run()
    else:
        app.switch_page(page)
        app.run()
    assert not app.exception
    kinds = [type(n).__name__ for n in app.main.children.values()]
    assert kinds[:2] == ["Title", "Caption"], kinds
    assert "Error" in kinds and "Warning" in kinds
    texts = [str(getattr(n, "value", "")) for n in app.main.children.values()]
    assert any("n=-5" in t for t in texts[2:]) and any("tile" in t for t in texts[2:])


def test_design_space_keeps_to_the_apps_grid_sizes_and_waits_on_large_grids(app):
    """A link once started a 4096×4096-PE sweep by itself (≈ 1 GB per point, then a traceback)."""
    app.query_params["sweep"] = "rows=4096;cols=4096"
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    assert not app.exception
    assert not charts(app)
    assert any("goes up to 1024 in the app" in e.value for e in app.error)


def test_design_space_waits_for_the_button_on_grids_over_the_default_size(app):
    app.query_params["sweep"] = "rows=512;cols=512"            # allowed, but over the automatic limit
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    _ok(app)
    assert not charts(app)
    assert any("Press **Run sweep**" in i.value and "65,536 PEs" in i.value for i in app.info)


def test_npu_page_says_when_the_timeline_was_not_recorded(app, monkeypatch):
    from akfviz import app_cache
    monkeypatch.setattr(app_cache, "MAX_RECORDED_INTERVALS", 0)   # read by simulate_cached
    app.query_params["xdens"] = "0.35"                 # a simulation of its own (the cache is per process)
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    assert any("No timeline for this run" in i.value for i in app.info)
    assert len(charts(app)) >= 3                        # the heatmap, energy and the rest still drawn


def test_the_generator_form_keeps_to_the_apps_size_limit(app):
    """The form accepted the library's 200M entries (about 1 minute and 8 GB, then held in a cache
    shared by every session); it now stops at the app's 5M entries and 2²⁰ rows or columns, with
    the way around it."""
    app.query_params.update({"src": "gen", "gen": "uniform", "g_n": "100000", "g_density": "0.003"})
    app.run()
    assert not app.exception, [e.value[:300] for e in app.exception]
    msgs = [e.value for e in app.error]
    assert any("30,000,000 stored entries, over the limit of 5,000,000" in m and "Python API" in m
               for m in msgs), msgs
    # a link of 50M rows with a handful of nonzeros held 7 GB of the server for every variant
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(app._script_path, default_timeout=600)
    app.query_params.update({"src": "gen", "gen": "uniform", "g_n": "50000000", "g_density": "0.00000001"})
    app.run()
    assert not app.exception
    assert any("over the limit of 1,048,576 rows × 1,048,576 columns" in e.value for e in app.error), \
        [e.value for e in app.error]


def test_compare_names_the_hardware_and_the_sidebar_says_it_was_changed(app):
    """Compare said only "the same hardware" and the sidebar kept showing the preset's name while
    a link's 16×16 grid with 8 KiB SRAM per PE made every page's numbers."""
    app.query_params.update({"hw_rows": "16", "hw_cols": "16", "hw_sram": "8192"})
    app.run()
    app.switch_page("pages/4_Compare.py").run()
    assert not app.exception, [e.value[:300] for e in app.exception]
    caps = [c.value for c in app.caption]
    assert any("Hardware: custom (preset horowitz-45nm, changed on the NPU page): 16×16 = 256 PEs, "
               "8,192 B SRAM per PE" in c for c in caps), caps
    side = [c.value for c in app.sidebar.caption]
    assert any(c.startswith("Changed on the NPU page: 16×16 PEs, 8,192 B SRAM per PE") for c in side), side
    app.query_params.clear()


def test_metrics_sit_in_a_wrapping_row_sized_to_their_content(app):
    """In st.columns(6) every metric was cut to "makes…" / "0.…" in a 1000 px window."""
    app.run()
    app.switch_page("pages/3_NPU.py").run()
    assert not app.exception
    rows = {}

    def walk(node, row=None):
        for child in getattr(node, "children", {}).values():
            if getattr(child, "type", "") == "metric":
                rows.setdefault(id(row), (row, []))[1].append(child.label)
                # in its own content-sized slot, not in a fixed share of the row (st.columns)
                assert not node.proto.HasField("column"), child.label
                continue
            proto = getattr(child, "proto", None)
            wraps = proto is not None and "flex_container" in type(proto).DESCRIPTOR.fields_by_name \
                and proto.HasField("flex_container") and proto.flex_container.wrap \
                and proto.flex_container.direction == proto.flex_container.Direction.HORIZONTAL
            walk(child, child if wraps else row)

    walk(app.main)
    (row, labels), = rows.values()       # all six in one wrapping horizontal row (not columns)
    assert row is not None and labels[:2] == ["makespan (cycles)", "energy"] and len(labels) == 6


def _warnings_outside_expanders(node, inside=False, out=None):
    out = [] if out is None else out
    for child in getattr(node, "children", {}).values():
        if getattr(child, "type", "") == "alert" or type(child).__name__ == "Warning":
            if not inside:
                out.append(child.value)
            continue
        proto = getattr(child, "proto", None)
        expander = proto is not None and "expandable" in type(proto).DESCRIPTOR.fields_by_name \
            and proto.HasField("expandable")
        _warnings_outside_expanders(child, inside or expander, out)
    return out


def test_link_warnings_are_not_hidden_in_collapsed_expanders_and_clamps_are_said(app):
    """'lkernel=NOPE' warned inside the collapsed 'The tiny case', and lstep=999999 became 27 silently."""
    app.query_params.update({"lkernel": "NOPE", "lstep": "999999"})
    app.run()
    app.switch_page("pages/7_Learn.py").run()
    assert not app.exception
    seen = _warnings_outside_expanders(app.main)
    assert any("'NOPE' is not one of the choices here" in w for w in seen), seen
    assert any("Step 999,999 is beyond this case's" in w for w in seen), seen
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(app._script_path, default_timeout=600)
    app.query_params.update({"tsel": "1000000000", "lsh_k": "7"})
    app.run()
    app.switch_page("pages/1_Patterns.py").run()
    seen = _warnings_outside_expanders(app.main)
    assert any(w.startswith("Selected tile number (as in the map's hover): 1000000000 is outside 0 … ") for w in seen), seen
    assert any("7 is not one of the choices here" in w for w in seen), seen


def test_kernels_says_cluster_vs_tile_in_words(app):
    """Held-out review: the comparison was raw keys ("cluster_cost = …, gap = …, tiles_differing = 0")
    and no times, though akf-spec §5 asks for the speed difference."""
    app.query_params.update({"tile": "128"})          # 36 tiles: the selector computes the gap
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    text = next(c.value for c in app.caption if c.value.startswith("Cluster vs tile mode"))
    assert "tiles_differing" not in text and "cluster_cost" not in text
    assert "of 36 tiles get a different kernel" in text and "Tile mode took" in text and "e-" not in text


def test_kernels_pareto_front_and_table_are_priced_at_the_plans_x_density(app):
    """Review: the plan was selected at the NPU page's ρ_x, but the Pareto front it is starred on, the
    performance table and its check were priced at ρ_x = 1, so the star could sit off (or above) its front."""
    from akfviz.selection.pareto import pareto_front

    app.query_params.update({"xdens": "0.3", "sample": "minilm_ffn0_mag90"})
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    import plotly.io as pio

    figs = [pio.from_json(c.proto.spec) for c in app.get("plotly_chart")]   # decodes plotly's typed arrays
    fig = next(f for f in figs if any(t.name == "current plan" for t in f.data))
    front = next(t for t in fig.data if t.name == "front")
    A = S.sample_cached("minilm_ffn0_mag90")
    pa = akfviz.analyze(A, tile=int(S.FIELDS["tile"].default))
    ref = pareto_front(pa, hw=akfviz.HardwareConfig(), rho_x=0.3).front
    xs = typed_array(front.x)
    np.testing.assert_allclose(sorted(xs), sorted(ref["resource_share"]), rtol=1e-12)
    ones = pareto_front(pa, hw=akfviz.HardwareConfig(), rho_x=1.0).front
    assert sorted(ref["resource_share"]) != sorted(ones["resource_share"])   # so the check above can fail
    assert any("ρ_x = 0.3" in c.value for c in app.caption)


def test_npu_page_says_why_the_greedy_placement_ran_instead_of_the_annealed_one(app):
    """The default sample on 256² PEs: annealing finds a placement better in its objective, the
    engine runs it slower than the greedy start, so the greedy placement is used, and the caption
    gives both cycle counts (the same as the mapping's engine check)."""
    from akfviz.npu.simulate import plan_mapping
    from akfviz.workloads.samples import DEFAULT_SAMPLE, load_sample

    app.run()
    app.switch_page("pages/3_NPU.py").run()
    _ok(app)
    plan = akfviz.select(akfviz.analyze(load_sample(DEFAULT_SAMPLE), tile=32))
    check = plan_mapping(plan, akfviz.HardwareConfig()).engine_check
    assert check["kept"] == "greedy"
    cap = next(c.value for c in app.caption if "placement objective" in c.value)
    assert (f"the engine ran it in {check['anneal_cycles']:,} cycles against the greedy start's "
            f"{check['greedy_cycles']:,}") in cap and "so the greedy placement is kept" in cap
    # the search now falls from its start: the caption no longer says it climbs above it
    tr = plan_mapping(plan, akfviz.HardwareConfig()).trajectory
    assert tr.max() <= 1.01 * tr[0] and tr[-1] < tr[0] and "climbs above its start" not in cap
    assert "worse moves are accepted less and less as the temperature falls" in cap


def test_compare_caption_says_bit_for_bit_when_the_cpu_check_differs_by_zero(app, monkeypatch):
    """Mutation probe: the 'bit for bit' branch was never reached by the default state.
    matvec_check is made to report vs_approx = 0; the caption says so in words."""
    import streamlit as st

    import akfviz.execute.cpu as cpu

    monkeypatch.setattr(cpu, "matvec_check", lambda plan, x, A=None: dict(vs_approx=0.0, output_error=0.0,
                                                                           max_abs=0.0))
    st.cache_data.clear()
    try:
        app.run()
        app.switch_page("pages/4_Compare.py").run()
        _ok(app)
        cap = next(c.value for c in app.caption if "on a seeded x its result" in c.value)
        assert "equals scipy's Â x bit for bit." in cap and "0.0e+00" not in cap, cap
    finally:
        st.cache_data.clear()      # the patched check must not serve other tests
