"""Units behind the app: URL state, run bundles, figures (against slow references) and the teaching trace."""
import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import akfviz
from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.viz import colors, dse, layout, matrix, npu, patterns, solver


# --------------------------------------------------------------------------- URL state
def test_query_round_trip_keeps_only_non_defaults():
    vals = {k: f.default for k, f in S.FIELDS.items()}
    vals.update(tile=16, alpha=0.3, src="gen", gen="banded", gen_params={"n": 256, "seed": 3}, budget=0.05)
    q = S.to_query(vals)
    assert q == {"src": "gen", "gen": "banded", "tile": "16", "alpha": "0.3", "budget": "0.05",
                 "g_n": "256", "g_seed": "3"}
    back, problems = S.parse_query(q)
    assert problems == []
    for k in ("src", "gen", "tile", "alpha", "budget"):
        assert back[k] == vals[k]
    assert back["gen_params"] == {"n": "256", "seed": "3"}


@pytest.mark.parametrize("key,value", [("tile", "7"), ("tile", "129"), ("tile", "abc"), ("alpha", "-1"),
                                       ("alpha", "nan"), ("gran", "row"), ("src", "ftp"), ("lsh_g", "9")])
def test_bad_query_values_are_reported(key, value):
    vals, problems = S.parse_query({key: value})
    assert key not in vals
    assert len(problems) == 1 and key in problems[0]


def test_optional_fields_round_trip_none():
    q = S.to_query({"hw_rows": 64, "perow": None})
    assert q == {"hw_rows": "64"}
    back, _ = S.parse_query({"hw_rows": "64", "perow": ""})
    assert back == {"hw_rows": 64, "perow": None}


def test_sweep_spec_parser():
    assert S.sweep_grid("tile=16,32; beta=0.1,1", 60)[0] == {"tile": [16, 32], "beta": [0.1, 1.0]}
    for bad in ("", "tile", "tile=", "=1,2"):
        with pytest.raises(InputError):
            S.sweep_grid(bad, 60)


# --------------------------------------------------------------------------- run bundles
def test_bundle_round_trip():
    vals = {k: f.default for k, f in S.FIELDS.items()}
    vals.update(tile=24, preset="loihi-like", gen_params={"n": 100})
    text = S.make_bundle(vals, {"sha256": "ab" * 32, "shape": [3, 4]}, {"npu": {"cycles": np.int64(7),
                                                                              "x": float("nan")}})
    doc = S.parse_bundle(text.encode())
    assert doc["state"]["tile"] == 24 and doc["state"]["preset"] == "loihi-like"
    assert doc["state"]["gen_params"] == {"n": 100}
    assert doc["results"]["npu"] == {"cycles": 7, "x": None}
    assert doc["akfviz_version"] and doc["seeds"]["lsh_seed"] == 0


@pytest.mark.parametrize("payload,msg", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "not an akfviz run bundle"),
    (json.dumps({"format": "akfviz-run-bundle", "version": 99, "state": {}}).encode(), "version"),
    (json.dumps({"format": "akfviz-run-bundle", "version": 1}).encode(), "'state'"),
    (json.dumps({"format": "akfviz-run-bundle", "version": 1, "state": {"tile": 1000}}).encode(), "tile"),
    (json.dumps({"format": "akfviz-run-bundle", "version": 1, "state": {"evil": 1}}).encode(), "unknown setting"),
    (b"\xff\xfe", "UTF-8"),
    (b" " * (S.MAX_BUNDLE_BYTES + 1), "bytes"),
])
def test_bad_bundles_raise_input_error(payload, msg):
    with pytest.raises(InputError, match=msg):
        S.parse_bundle(payload)


def _bundle(**parts):
    return json.dumps({"format": "akfviz-run-bundle", "version": 1, "state": {}, **parts})


@pytest.mark.parametrize("payload,msg", [
    (b"[" * 1000 + b"]" * 1000, "nested too deeply"),                       # was RecursionError
    (_bundle(state={"lsh_seed": 0}).replace('"lsh_seed": 0', '"lsh_seed": 1' + "0" * 5000), "cannot read"),
    (_bundle(workload="abc"), "'workload' must be an object"),               # was accepted, then crashed the sidebar
    (_bundle(workload=[1, 2]), "'workload' must be an object"),
    (_bundle(results=3), "'results' must be an object"),
    (_bundle(workload={"sha256": 7}), "fingerprint"),
    (json.dumps({"format": "akfviz-run-bundle", "version": True, "state": {}}), "version True"),
    (json.dumps({"format": "akfviz-run-bundle", "version": 1.0, "state": {}}), "version 1.0"),
    (_bundle(state={"tile": None}), "a whole number from 8 to 128"),        # no '\x00invalid' sentinel
    (_bundle(state={"tile": True}), "a whole number from 8 to 128"),
    (_bundle(state={"tile": [16]}), "a whole number from 8 to 128"),
    (_bundle(state={"tile": 10 ** 400}), "a whole number from 8 to 128"),
    (_bundle(state={"preset": "nope"}), "no hardware preset named 'nope'"),
    (_bundle(state={"sample": "x" * 1_900_000}), "1,900,002 characters"),
])
def test_hostile_bundles_raise_readable_input_errors(payload, msg):
    with pytest.raises(InputError, match=msg) as info:
        S.parse_bundle(payload)
    assert len(str(info.value)) < 400 and "\x00" not in str(info.value)


def test_a_bundle_without_some_settings_gives_their_defaults():
    doc = S.parse_bundle(_bundle(state={"tile": 16}))
    assert doc["state"]["tile"] == 16
    assert all(doc["state"][k] == f.default for k, f in S.FIELDS.items() if k != "tile")


@pytest.mark.parametrize("raw", ["abc", "", "1_6", "\uff11\uff16", "\u0663\u0662", "0x10", " ", "True"])
def test_link_numbers_are_ascii_numbers_with_a_readable_message(raw):
    vals, problems = S.parse_query({"tile": raw})
    assert "tile" not in vals
    assert problems == [f"Link parameter tile={raw!r} was ignored: it must be a whole number from 8 to 128."]


def test_link_messages_shorten_long_values_and_text_refuses_control_characters():
    _, problems = S.parse_query({"tile": "9" * 10_000, "sample": "a\x00b"})
    assert len(problems) == 2 and all(len(p) < 300 for p in problems)
    assert "control characters" in problems[1]


def test_negative_zero_survives_the_link():
    q = S.to_query({"alpha": -0.0})
    assert q == {"alpha": "-0.0"}
    back, _ = S.parse_query(q)
    assert str(back["alpha"]) == "-0.0"


def test_unknown_names_in_a_link_are_reported_and_dropped():
    vals, problems = S.parse_query({"sample": "nope", "preset": "nope", "static": "NOPE", "src": "gen",
                                    "gen": "uniform", "g_n": "64", "g_bandwidth": "3"})
    found = S.check_names(vals)
    assert len(found) == 4 and not problems
    assert "sample" not in vals and "preset" not in vals and "static" not in vals
    assert vals["gen_params"] == {"n": "64"} and "bandwidth" in found[3]


def test_generator_whole_numbers_are_exact_and_within_the_number_boxes():
    import importlib

    gens = importlib.import_module("akfviz.workloads.generators")
    seed = next(s for s in gens.generator_specs("uniform") if s.name == "seed")
    assert S.coerce_gen_value(seed, "9007199254740991") == 2**53 - 1      # exact, not rounded via float
    assert S.coerce_gen_value(seed, "1e3") == 1000
    for bad, words in (("9007199254740993", "beyond"), ("1.5", "whole"), ("abc", "not a number"),
                       ("1e400", "finite")):
        with pytest.raises(ValueError, match=words):
            S.coerce_gen_value(seed, bad)
    # the form never receives a number its box cannot hold (Streamlit raised StreamlitJSNumberBoundsError)
    assert S.form_number(seed, "9007199254740992") == seed.default
    assert S.form_number(seed, "1e16") == seed.default


def test_matrix_digest_is_content_based():
    A = sp.random_array((30, 20), density=0.2, random_state=1, format="csr")
    B = sp.csr_array(A.toarray())
    assert S.matrix_digest(A) == S.matrix_digest(B)
    C = A.copy()
    C.data[0] += 1e-12
    assert S.matrix_digest(A) != S.matrix_digest(C)
    # memoised per object (cached matrices are never modified), and forgotten with the object
    from akfviz import app_cache
    assert S.matrix_digest(A) == app_cache._matrix_digest(A)
    key = id(C)
    assert key in app_cache._DIGESTS
    del C
    assert key not in app_cache._DIGESTS


def test_matrix_digest_tells_shapes_apart():
    # the same stored entries with one more empty column (or row) is another matrix
    A = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    wide = sp.csr_array((A.data, A.indices, A.indptr), shape=(2, 3))
    assert S.matrix_digest(A) != S.matrix_digest(wide)
    tall = sp.csr_array((A.data, A.indices, np.r_[A.indptr, A.indptr[-1]]), shape=(3, 2))
    assert len({S.matrix_digest(A), S.matrix_digest(wide), S.matrix_digest(tall)}) == 3


def test_input_vector_density_and_determinism():
    x = S.input_vector(1000, 0.25, seed=3)
    assert np.count_nonzero(x) == 250
    np.testing.assert_array_equal(x, S.input_vector(1000, 0.25, seed=3))


# --------------------------------------------------------------------------- figures vs slow references
def _naive_density(A, max_bins):
    D = A.toarray() != 0
    n, m = D.shape
    sr, sc = -(-n // max_bins), -(-m // max_bins)
    out = np.zeros((-(-n // sr), -(-m // sc)))
    for p in range(out.shape[0]):
        for q in range(out.shape[1]):
            block = D[p * sr:(p + 1) * sr, q * sc:(q + 1) * sc]
            out[p, q] = block.mean()
    return out


@pytest.mark.parametrize("shape,bins", [((50, 37), 512), ((300, 1000), 64), ((1, 1), 8), ((129, 7), 16)])
def test_density_grid_matches_naive(shape, bins):
    A = sp.random_array(shape, density=0.1, random_state=0, format="csr")
    got, _, _ = matrix.density_grid(A, bins)
    np.testing.assert_allclose(got, _naive_density(A, bins))


def test_spy_density_is_capped_and_leaves_empty_bins_blank():
    A = sp.random_array((5000, 3000), density=0.0005, random_state=0, format="csr")
    fig = matrix.spy_density(A, max_bins=256)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (250, 250)                     # sr = ceil(5000/256) = 20 -> 250 bins; sc = 12 -> 250
    assert np.isnan(z).any()                         # empty bins are blank, not the lowest colour
    assert len(fig.to_json()) < 1_000_000


def test_spy_density_empty_matrix():
    fig = matrix.spy_density(sp.csr_array((10, 10)))
    assert "no nonzeros" in fig.layout.annotations[0].text


def test_nnz_histograms_counts():
    A = sp.csr_array(np.array([[1, 0, 2], [0, 0, 0], [3, 4, 5.0]]))
    fig = matrix.nnz_histograms(A)
    np.testing.assert_array_equal(np.asarray(fig.data[0].x), [2, 0, 3])
    np.testing.assert_array_equal(np.asarray(fig.data[1].x), [2, 1, 2])


@pytest.mark.parametrize("how", ["mean", "max", "first", "sum"])
def test_coarse_grid_matches_naive(how):
    rng = np.random.default_rng(0)
    n_r, n_c, cap = 37, 23, 8
    cells = rng.choice(n_r * n_c, size=120, replace=False)
    r, c = cells // n_c, cells % n_c
    v = rng.uniform(0.1, 1, size=cells.size)
    got, sr, sc = layout.coarse_grid(r, c, v, (n_r, n_c), cap, how)
    ref = np.full(got.shape, np.nan)
    for i in range(cells.size):
        p, q = r[i] // sr, c[i] // sc
        if how == "first":
            if np.isnan(ref[p, q]):
                ref[p, q] = v[i] if i == min(j for j in range(cells.size) if r[j] // sr == p and c[j] // sc == q) \
                    else ref[p, q]
        else:
            ref[p, q] = (0 if np.isnan(ref[p, q]) else ref[p, q])
            ref[p, q] = max(ref[p, q], v[i]) if how == "max" else ref[p, q] + v[i]
    if how == "mean":
        ref = ref / (sr * sc)
    np.testing.assert_allclose(got, ref)


def test_utilization_heatmap_256_is_one_trace_and_small():
    u = np.random.default_rng(0).uniform(0, 1, size=(256, 256))
    fig = npu.utilization_heatmap(u)
    assert len(fig.data) == 1 and np.asarray(fig.data[0].z).shape == (256, 256)
    size = len(fig.to_json())
    assert size < 1_000_000, size


def test_kernel_colours_are_fixed_per_family():
    assert colors.kernel_color("NM2:4") == colors.kernel_color("NM1:4") == colors.FAMILY_COLORS["NM"]
    assert colors.kernel_color("LOWRANK8") == colors.FAMILY_COLORS["LOWRANK"]
    assert colors.kernel_color("QUANT8D", "QUANT8") == colors.FAMILY_COLORS["QUANT8"]
    assert colors.kernel_family("MYSTERY") == "MYSTERY"
    assert colors.kernel_color("MYSTERY") == colors.kernel_color("MYSTERY")
    assert len(set(colors.FAMILY_COLORS.values())) == len(colors.FAMILY_COLORS)


def test_kernel_family_comes_from_the_registry(monkeypatch):
    """A registered kernel whose name starts with another family's name keeps its own family
    (the registry's ``Kernel.family``), not the prefix guess; unknown names still guess."""
    from akfviz.kernels import registry
    from akfviz.kernels.base import Kernel

    class _CscQuant(Kernel):
        name = "CSCQ8"
        family = "QUANT8"

    monkeypatch.setitem(registry.KERNELS, "CSCQ8", _CscQuant())
    assert colors.kernel_family("CSCQ8") == "QUANT8"
    assert colors.kernel_color("CSCQ8") == colors.FAMILY_COLORS["QUANT8"]
    assert colors.families_in(["CSCQ8", "CSC"]) == ["CSC", "QUANT8"]
    assert colors.kernel_family("CSCQ8", "PRUNE") == "PRUNE"  # an explicit family still wins
    assert colors.kernel_family("QUANT8D") == "QUANT8"
    assert colors.kernel_family("lowrank4") == "LOWRANK"  # any spelling get_kernel accepts
    assert colors.kernel_family("CSC_UNREGISTERED") == "CSC"  # unknown: prefix guess
    assert colors.kernel_family("NM") == "NM"  # a family name, not one kernel


def test_registry_families_all_have_colours():
    from akfviz.kernels.registry import KERNELS

    for k in KERNELS.values():
        assert k.family.upper() in colors.FAMILY_COLORS, k.family


def test_pareto_mask_matches_naive():
    rng = np.random.default_rng(1)
    pts = rng.uniform(size=(40, 3))
    pts[5] = pts[6]                                   # duplicates are both kept
    got = dse.pareto_mask(pts[:, 0], pts[:, 1], pts[:, 2])
    ref = [not any(all(pts[j] <= pts[i]) and any(pts[j] < pts[i]) for j in range(40)) for i in range(40)]
    np.testing.assert_array_equal(got, ref)


def test_pareto_rings_treat_speedup_as_higher_is_better():
    """The rings marked the lowest speedups as optimal (every axis was minimised)."""
    df = pd.DataFrame({"speedup": [1.4, 2.3, 9.2, 11.8], "error_pct": [0.5, 0.5, 0.5, 0.5],
                       "energy_pj": [5.0, 5.0, 5.0, 5.0]})
    fig = dse.sweep_scatter(df, "speedup", "error_pct", "energy_pj")
    assert list(fig.data[1].x) == [11.8]
    pts = np.random.default_rng(2).uniform(size=(30, 3))
    ref = [not any(pts[j, 0] >= pts[i, 0] and all(pts[j, 1:] <= pts[i, 1:])
                   and (pts[j, 0] > pts[i, 0] or any(pts[j, 1:] < pts[i, 1:])) for j in range(30)) for i in range(30)]
    np.testing.assert_array_equal(dse.pareto_mask(pts[:, 0], pts[:, 1], pts[:, 2], maximise=[0]), ref)
    assert "higher speedup" in dse.pareto_caption("speedup", "error_pct", "energy_pj")


@pytest.mark.parametrize("col", ["speedup_vs_staticsparse", "speedup_vs_blocksparse"])
def test_pareto_rings_treat_the_baseline_speedups_as_higher_is_better(col):
    """Held-out review: over Static-sparse or Block-sparse, the rings and the caption said lower
    speedup was better."""
    df = pd.DataFrame({col: [0.8, 1.1, 1.6], "error_pct": [0.5, 0.5, 0.5], "energy_pj": [5.0, 5.0, 5.0]})
    fig = dse.sweep_scatter(df, col, "error_pct", "energy_pj")
    assert list(fig.data[1].x) == [1.6]
    cap = dse.pareto_caption(col, "error_pct", "energy_pj")
    assert "higher " + dse.column_label(col) in cap and "lower " + dse.column_label(col) not in cap


def test_tile_maps_place_values_at_tiles():
    tiles = pd.DataFrame({"bi": [0, 2], "bj": [1, 0], "density": [0.1, 1.0], "cluster": [0, 1], "nnz": [3, 9]})
    fig = patterns.tile_density_map(tiles, 3, 2, 8)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isclose(z[0, 1], -1.0) and np.isclose(z[2, 0], 0.0) and np.isnan(z[1, 1])
    fig = patterns.cluster_map(tiles, 3, 2, 8, selected_cluster=1)
    cd = np.asarray(fig.data[0].customdata)
    assert cd[0, 1] == 0 and cd[2, 0] == 1 and cd[1, 0] == -1


# --------------------------------------------------------------------------- the teaching trace
def test_trace_states_are_consistent():
    from akfviz.npu.trace import tiny_case

    tc = tiny_case(kernel="CSC", x_density=1.0, seed=5)
    tr = tc.trace
    times = [s.start for s in tr.steps]
    assert times == sorted(times)
    first = tr.state_at(0)
    assert not first["done"] and np.all(first["y"] == 0)
    last = tr.state_at(len(tr.steps))
    np.testing.assert_allclose(last["y"], tc.A_hat @ tc.x, atol=1e-12)
    assert all(not q for q in last["queues"])
    assert max(s.end for s in tr.steps) == tr.makespan
    n_events = sum(s.kind == "event" for s in tr.steps)
    assert n_events == int(tr.counters["events"].sum())


def test_trace_rejects_large_cases():
    from akfviz.npu.trace import tiny_case

    with pytest.raises(InputError):
        tiny_case(n=64)
    with pytest.raises(InputError):
        tiny_case(grid=(8, 8))


def test_kernel_figures_same_from_names_and_from_the_plan_categorical():
    import akfviz
    from akfviz.viz import kernels as vk

    A = akfviz.generate("clustered", n=300, seed=4)
    pa = akfviz.analyze(A, tile=16)
    plan = akfviz.select(pa, alpha=1.0, beta=3.0)
    cat = plan.tile_kernels_categorical
    names = plan.tile_kernels
    assert list(np.asarray(cat, dtype=object)) == list(names)
    assert len(set(names)) >= 2  # several kernels, so colours and bars really differ
    fam = {k: akfviz.kernels.get_kernel(k).family for k in set(names)}
    for a, b in ((vk.kernel_map(pa.tiles, cat, pa.tileset.n_brows, pa.tileset.n_bcols, 16, families=fam),
                  vk.kernel_map(pa.tiles, names, pa.tileset.n_brows, pa.tileset.n_bcols, 16, families=fam)),
                 (vk.kernel_mix(cat, pa.tiles["nnz"].to_numpy(), families=fam),
                  vk.kernel_mix(names, pa.tiles["nnz"].to_numpy(), families=fam))):
        assert a.to_json() == b.to_json()
    mix = vk.kernel_mix(cat, families=fam)
    counts = {str(k): int(v) for k, v in zip(mix.data[0].y, mix.data[0].x)}
    assert counts == {k: int((names == k).sum()) for k in set(names)}


def test_tile_density_map_click_layer_points_at_each_tile():
    import akfviz

    A = akfviz.generate("clustered", n=400, seed=2)
    pa = akfviz.analyze(A, tile=16)
    tiles = pa.tiles
    fig = patterns.tile_density_map(tiles, pa.tileset.n_brows, pa.tileset.n_bcols, 16)
    layer = [t for t in fig.data if t.type == "scattergl"]
    assert len(layer) == 1 and layer[0].marker.opacity == 0
    pts = layer[0]
    assert len(pts.customdata) == len(tiles)  # one grid cell per tile here (no coarsening)
    # a 1-D integer customdata (the page's click handler gets a list from it); the density itself
    # rides on the invisible markers' colour, which the hover shows
    assert np.asarray(pts.customdata).ndim == 1
    t = np.asarray(pts.customdata, dtype=np.int64)
    assert "density %{marker.color" in pts.hovertemplate and "log10" not in pts.hovertemplate
    np.testing.assert_array_equal(tiles["bj"].to_numpy()[t], np.asarray(pts.x, dtype=np.int64))
    np.testing.assert_array_equal(tiles["bi"].to_numpy()[t], np.asarray(pts.y, dtype=np.int64))
    np.testing.assert_allclose(np.asarray(pts.marker.color, dtype=float),
                               tiles["density"].to_numpy()[t], rtol=1e-6)


@pytest.mark.parametrize("event, expected", [
    (None, None), ({}, None), ({"selection": {"points": []}}, None),
    # a click on the heatmap itself: its points carry no customdata
    ({"selection": {"points": [{"x": 1, "y": 2, "z": 0.3}]}}, None),
    ({"selection": {"points": [{"customdata": 7}]}}, 7),
    ({"selection": {"points": [{"customdata": 7.0}]}}, 7),
    ({"selection": {"points": [{"customdata": [3, 0.5]}]}}, 3),
    ({"selection": {"points": [{"customdata": {"0": 4, "1": 0.5}}]}}, 4),
    ({"selection": {"points": [{"x": 0}, {"customdata": 2}]}}, 2),
])
def test_picked_tile_reads_the_click(event, expected):
    assert patterns.picked_tile(event, 10) == expected


@pytest.mark.parametrize("cd", [10, -1, 2.5, "3", True, {"a": 1}, []])
def test_picked_tile_says_when_a_click_is_not_a_tile(cd):
    """The page once swallowed any unreadable click (``except …: pass``), which hid a defect."""
    with pytest.raises(ValueError, match="not a tile number from 0 to 9"):
        patterns.picked_tile({"selection": {"points": [{"customdata": cd}]}}, 10)


@pytest.mark.parametrize("scale", [1.0, 1e120, 1e-120])
def test_representative_gallery_keeps_extreme_values_finite(scale):
    """|a| up to 1e±140 passes analyze; the gallery once cast it to float32 (inf / 0)."""
    t = np.array([[0.0, 2.0], [-3.0, 0.5]]) * scale
    fig = patterns.representative_gallery([t], ["c0"])
    z = np.asarray(fig.data[0].z, dtype=np.float64)
    assert np.isnan(z[0, 0])
    np.testing.assert_allclose(z[~np.isnan(z)], np.abs(t[t != 0]), rtol=1e-6)


@pytest.mark.parametrize("build", [
    lambda: layout.empty_figure("nothing"),
    lambda: npu.hop_histogram(np.zeros(0)),
    lambda: npu.hop_histogram(np.zeros(5)),
    lambda: patterns.representative_gallery([], []),
])
def test_empty_figures_pass_streamlits_plotly_validation(build):
    """st.plotly_chart validates with plotly.tools.return_figure_from_figure_or_data, which
    rejects an empty data list (the NPU page crashed on a plan with no NoC traffic)."""
    import plotly.tools

    fig = build()
    for f in (fig, fig.to_dict()):
        out = plotly.tools.return_figure_from_figure_or_data(f, validate_figure=True)
        assert out["data"]
    assert fig.layout.annotations and fig.layout.annotations[0].text


def test_solver_cost_table_units_and_reached_text():
    npu_df = pd.DataFrame({"cycles": [22142, 135150], "cycles_per_iteration": [738.07, 4505.0],
                           "seconds_per_iteration": [7.4e-7, 4.5e-6], "dram_bytes": [65536, 4376880],
                           "dram_bytes_per_iteration": [2184.5, 145896.0], "energy_pj": [9.9e7, 1.17e9]},
                          index=["persistent", "non-persistent"])
    t = solver.npu_cost_table(npu_df)
    assert list(t.index) == ["persistent", "non-persistent"]
    np.testing.assert_allclose(t["µs / iteration"], [0.74, 4.5])
    np.testing.assert_allclose(t["energy (µJ)"], [99.0, 1170.0])
    assert t["cycles"].tolist() == [22142, 135150]
    assert solver.reached_text(None, 30) == "not within the 30 iterations run"
    assert solver.reached_text(1, 30) == "after 1 iteration"
    assert solver.reached_text(12, 30) == "after 12 iterations"


def test_log_ticks_reach_both_ends_of_a_narrow_range():
    # 1-2-5 steps when the range spans them; a narrow range (MiniLM tile densities 0.055–0.16 hold
    # only the step 0.1) takes the finer steps 1-1.5-2-3-5-7, which reach near both ends
    wide = layout.log_ticks(-5.0, 0.0)
    assert [round(10 ** t, 12) for t in wide] == [1e-05, 1e-04, 1e-03, 1e-02, 0.1, 1.0]
    narrow = layout.log_ticks(np.log10(0.055), np.log10(0.16))
    assert [round(10 ** t, 12) for t in narrow] == [0.07, 0.1, 0.15]
    # fewer than three even at the finest steps: the ends are added
    assert layout.log_ticks(np.log10(0.12), np.log10(0.18)) == pytest.approx(np.log10([0.12, 0.15, 0.18]))
    assert layout.log_ticks(np.log10(0.9), np.log10(0.99)) == pytest.approx(np.log10([0.9, 0.99]))
    # a degenerate range keeps one tick
    assert layout.log_ticks(-1.0, -1.0 + 1e-6) == pytest.approx([-1.0])


@pytest.mark.parametrize("lo, hi", [(0.055, 0.16), (0.12, 0.5), (0.3, 0.45), (0.31, 0.69), (0.02, 0.09),
                                    (0.08, 2.5), (1e-7, 0.9), (0.5, 0.51), (0.011, 0.99)])
def test_log_ticks_take_the_coarsest_steps_that_give_three(lo, hi):
    # slow reference: every candidate of each step set, the first set with three inside wins
    ticks = layout.log_ticks(np.log10(lo), np.log10(hi))
    assert ticks == sorted(ticks) and len(ticks) >= 2
    assert all(np.log10(lo) - 1e-9 <= t <= np.log10(hi) + 1e-9 for t in ticks)
    for mantissas in layout.LOG_TICK_STEPS:
        inside = [v for k in range(-10, 3) for m in mantissas
                  if lo * (1 - 1e-9) <= (v := m * 10.0 ** k) <= hi * (1 + 1e-9)]
        if len(inside) >= 3:
            break
    values = [10.0 ** t for t in ticks]
    if len(inside) >= 3:     # the steps themselves (thinned to decades beyond eight)
        assert set(np.round(values, 12)) <= set(np.round(inside, 12))
        assert len(values) == len(inside) or len(inside) > 8
    else:                    # the finest steps plus the ends
        assert set(np.round(inside, 12)) <= set(np.round(values, 12))
        assert values[0] == pytest.approx(min([lo] + inside)) and values[-1] == pytest.approx(max([hi] + inside))


def test_tiles_table_exports_round_trip_with_its_uint64_signatures():
    import io

    import akfviz

    pa = akfviz.analyze(akfviz.generate("llm", n=256, seed=1), tile=32)
    tiles = pa.tiles
    pq = pd.read_parquet(io.BytesIO(S.frame_bytes(tiles, "parquet")))
    pd.testing.assert_frame_equal(pq, tiles.reset_index(drop=True))
    csv = pd.read_csv(io.BytesIO(S.frame_bytes(tiles, "csv")))
    assert list(csv.columns) == list(tiles.columns)
    np.testing.assert_array_equal(csv["signature"].astype(np.uint64).to_numpy(), tiles["signature"].to_numpy())
    clusters = pd.read_csv(io.BytesIO(S.frame_bytes(pa.clusters.reset_index(), "csv")))
    assert list(clusters["cluster"]) == list(range(pa.n_clusters))


def test_fusion_weight_lines_tell_kernels_of_one_family_apart():
    from akfviz.viz import kernels as vk
    steps = np.arange(4)
    w = {"QUANT8": np.ones(4), "QUANT8D": np.ones(4), "PRUNE50": np.ones(4), "CSC": np.ones(4)}
    fig = vk.fusion_trajectory(steps, np.ones(4), np.ones(4), w)
    lines = {t.name: t.line for t in fig.data}
    symbols = {t.name: (t.marker.symbol if t.mode and "markers" in t.mode else None) for t in fig.data}
    styles = [(lines[f"w[{k}]"].color, lines[f"w[{k}]"].dash, symbols[f"w[{k}]"]) for k in w]
    assert len(set(styles)) == len(styles)            # every weight line looks different
    assert lines["w[QUANT8]"].color == lines["w[QUANT8D]"].color == colors.kernel_color("QUANT8")
    # one dash per family (not colour alone: PRUNE and QUANT8 also differ in dash); the second
    # kernel of a family is told from the first by its markers
    assert lines["w[QUANT8]"].dash == lines["w[QUANT8D]"].dash == colors.family_dash("QUANT8")
    assert len({lines[f"w[{k}]"].dash for k in ("QUANT8", "PRUNE50", "CSC")}) == 3
    assert symbols["w[QUANT8]"] is None and symbols["w[QUANT8D]"] is not None
    weight_colors = {lines[f"w[{k}]"].color for k in w}
    assert lines["entropy"].color not in weight_colors


def test_perftable_fits_label_the_measure_and_one_tick_per_decade():
    from akfviz.viz import kernels as vk
    d = np.logspace(-3, 0, 5)
    curves = [{"kernel": "CSC", "label": f"CSC · {c}", "density": d, "measured": d * 100,
               "grid": d, "fit": d * 100} for c in ("a", "b", "c")]
    narrow = np.linspace(0.3, 0.5, 5)          # the N:M class: no power of ten inside
    curves.append({"kernel": "CSC", "label": "CSC · nm", "density": narrow, "measured": narrow,
                   "grid": narrow, "fit": narrow})
    fig = vk.perftable_fits(curves, y_title="pJ per tile")
    lay = fig.layout
    assert lay.yaxis.title.text == "pJ per tile" and lay.yaxis4.title.text == "pJ per tile"
    assert lay.yaxis2.title.text is None                  # only the first plot of a row
    assert all(getattr(lay, f"xaxis{i or ''}").type == "log" for i in (0, 2, 3, 4))
    assert list(lay.xaxis.ticktext) == ["0.001", "0.01", "0.1", "1"]
    assert list(lay.xaxis4.ticktext) == ["0.3", "0.4", "0.5"]     # the finest steps on a narrow range


def test_property_tables_are_readable():
    from akfviz.viz.tables import property_table, readable
    import akfviz
    pa = akfviz.analyze(akfviz.generate("llm", n=256, seed=1), tile=32)
    t = property_table(pa.tiles, 0, "feature")
    vals = dict(zip(t["feature"], t["value"]))
    assert vals["nnz"] == str(int(pa.tiles["nnz"].iat[0]))
    assert vals["density"] == f"{pa.tiles['density'].iat[0]:.4g}" and len(vals["density"]) <= 7
    assert vals["signature"].startswith("0x") and int(vals["signature"], 16) == int(pa.tiles["signature"].iat[0])
    c = property_table(pa.clusters, pa.clusters.index[0], "property", by_label=True)
    assert list(c["property"]) == list(pa.clusters.columns)
    assert readable(float("nan")) == "n/a" and readable(np.uint64(2**64 - 1), "signature") == "0x" + "f" * 16


def test_cell_maps_draw_no_grid_or_zero_lines():
    from akfviz.viz import patterns as vp
    from akfviz.viz import kernels as vk
    import akfviz
    pa = akfviz.analyze(akfviz.generate("clustered", n=200, seed=1), tile=16)
    figs = [vp.representative_gallery([pa.tileset.dense(0), pa.tileset.dense(1)], ["a", "b"]),
            vk.kernel_map(pa.tiles, ["CSC"] * len(pa.tiles), pa.tileset.n_brows, pa.tileset.n_bcols, 16)]
    for fig in figs:
        for ax in [a for a in fig.layout if a.startswith(("xaxis", "yaxis"))]:
            assert fig.layout[ax].showgrid is False and fig.layout[ax].zeroline is False, ax


def test_app_errors_explain_python_only_advice():
    msg = "The matrix declares shape 1 × 1, over the limit. Use a smaller matrix or pass custom limits " \
          "(limits=LoadLimits(max_rows=..., max_cols=...))."
    assert "In the app these size limits are fixed" in S.app_advice(msg)
    assert "rename the file" in S.app_advice("fmt='npz' was given, but … is a Matrix Market file; pass fmt='mtx'.")
    assert S.app_advice("tile must be a whole number.") == "tile must be a whole number."


def test_learn_timeline_draws_instant_steps_on_top_of_the_bars():
    from akfviz.npu.trace import tiny_case
    from akfviz.viz import learn

    tr = tiny_case().trace
    fig = learn.learn_timeline(tr, len(tr.steps))
    names = [t.name for t in fig.data]
    # injections and sends take no cycles: ticks, drawn after every bar so no bar hides them
    first_tick = next(i for i, t in enumerate(fig.data) if t.mode == "markers")
    assert all(t.mode == "markers" for t in fig.data[first_tick:])
    assert all(t.mode == "lines" for t in fig.data[:first_tick])
    instant = [s for s in tr.steps if s.end <= s.start]
    assert {s.kind for s in instant} == {"inject", "send"}
    ticks = {t.name: t for t in fig.data[first_tick:]}
    for kind in ("inject", "send"):
        want = sorted((s.start, s.pe) for s in instant if s.kind == kind)
        assert sorted(zip(ticks[kind].x, ticks[kind].y)) == want
        assert ticks[kind].showlegend is not False        # the only trace of its kind: in the legend
    bars = [t for t in fig.data[:first_tick]]
    drawn = sum(len([v for v in t.x if v is not None]) // 2 for t in bars)
    assert drawn == sum(1 for s in tr.steps if s.end > s.start)
    assert set(names) <= set(learn.KIND_COLORS)


@pytest.mark.parametrize("kind, shape", [("banded", None), ("uniform", None), ("powerlaw", None),
                                         ("uniform", (100, 300))])
def test_density_histogram_counts_every_tile_once_by_density_bin(kind, shape):
    """np.logspace edges rounded above the smallest density: 62 of 94 banded tiles were dropped."""
    import akfviz

    kw = {"n": shape[0], "m": shape[1]} if shape else {"n": 1024}
    pa = akfviz.analyze(akfviz.generate(kind, seed=3, **kw), tile=32)
    fig = patterns.density_histogram(pa.tiles)
    assert fig.layout.barmode == "stack"
    assert sum(int(np.sum(t.y)) for t in fig.data) == len(pa.tiles)
    per_bin = pa.tiles["density_bin"].value_counts()
    for t in fig.data:
        assert int(np.sum(t.y)) == per_bin[int(t.name.split()[-1])]
    d = pa.tiles["density"].to_numpy()
    for t in fig.data:     # bar centres lie within the tiles' density range
        assert np.all(np.asarray(t.x) >= d.min() * (1 - 1e-12)) and np.all(np.asarray(t.x) <= d.max() * (1 + 1e-12))
    # the axis ticks label the data's range (they were once the last density bin's edges, off the bars)
    ticks = np.asarray(fig.layout.xaxis.tickvals, np.float64)
    assert ticks.size >= 2 and np.all(ticks >= d.min() * (1 - 1e-9)) and np.all(ticks <= d.max() * (1 + 1e-9))


def test_density_histogram_of_one_density():
    import pandas as pd

    tiles = pd.DataFrame({"density": [0.25] * 7, "density_bin": [-2] * 7})
    fig = patterns.density_histogram(tiles)
    assert sum(int(np.sum(t.y)) for t in fig.data) == 7
    # one bar, centred on the density in a decade-wide axis (it was a ninth of an axis 1e-4 decades wide,
    # at the left edge); the ticks label that decade
    (bar,) = fig.data
    assert len(bar.x) == 1 and bar.x[0] == pytest.approx(0.25)
    lo, hi = fig.layout.xaxis.range
    assert lo == pytest.approx(np.log10(0.25) - 0.5) and hi == pytest.approx(np.log10(0.25) + 0.5)
    assert len(fig.layout.xaxis.tickvals) >= 2


def test_density_histogram_axis_holds_both_end_ticks():
    """A narrow range (0.67–0.74, only the step 0.7 inside) is labelled at both ends, and the axis
    reaches a little past them: ending exactly at the largest density, plotly dropped its tick
    and the axis read "0.67" alone."""
    import pandas as pd

    d = np.linspace(0.6689, 0.7354, 64)
    fig = patterns.density_histogram(pd.DataFrame({"density": d, "density_bin": [-1] * 64}))
    assert list(fig.layout.xaxis.ticktext) == ["0.67", "0.7", "0.74"]
    lo, hi = fig.layout.xaxis.range
    ticks = np.log10(np.asarray(fig.layout.xaxis.tickvals, np.float64))
    span = np.log10(d[-1]) - np.log10(d[0])
    assert lo < ticks.min() - 0.02 * span and hi > ticks.max() + 0.02 * span
    assert lo > np.log10(d[0]) - 0.05 * span and hi < np.log10(d[-1]) + 0.05 * span


def test_convergence_plots_each_residual_at_its_iteration():
    """Entry k of the curves is the residual after iteration k + 1: it was drawn at x = k."""
    import akfviz
    from akfviz.npu.iterative import run_solver

    A = akfviz.generate("stencil5", n=256)
    res = run_solver(akfviz.select(akfviz.analyze(A, tile=16), error_budget=0.02), method="jacobi", iterations=12)
    cur = res.curves
    fig = solver.convergence({"exact": cur["residual_exact"]}, iterations=cur["iteration"])
    assert list(fig.data[0].x) == list(cur["iteration"]) and fig.data[0].x[0] == 1
    assert list(solver.convergence({"r": [0.5, 0.25]}).data[0].x) == [1, 2]


def test_aggregated_tile_maps_say_so_and_count_the_nonempty_tiles_of_each_cell():
    import akfviz
    import scipy.sparse as sp

    from akfviz.viz import kernels as vk

    rng = np.random.default_rng(0)
    cols = rng.choice(100_000, 900, replace=False)
    A = sp.csr_array((rng.standard_normal(900), (np.zeros(900, int), cols)), shape=(1, 100_000))
    pa = akfviz.analyze(A, tile=32)
    plan = akfviz.select(pa)
    nbc = -(-100_000 // 32)                       # 3125 tile columns → 13 per cell at cap 256
    occupied = np.bincount(np.unique(cols // 32) // 13, minlength=-(-nbc // 13))
    figs = [vk.kernel_map(pa.tiles, plan.tile_kernels, 1, nbc, 32), patterns.cluster_map(pa.tiles, 1, nbc, 32),
            patterns.tile_density_map(pa.tiles, 1, nbc, 32)]
    for fig in figs:
        assert "each cell: 1×13 tiles" in fig.layout.title.text
        assert fig.layout.yaxis.dtick == 1                          # one tile row: whole-number ticks
    for fig in figs[:2]:
        shown = np.asarray(fig.data[0].text)[0]
        assert shown.tolist() == occupied.tolist()
        assert "%{text} of 13 tiles nonempty" in fig.data[0].hovertemplate
        assert shown.dtype.itemsize <= 4                     # numbers, not 25-byte strings per cell
    # an exact map has no such note
    B = akfviz.generate("clustered", n=256, seed=1)
    pb = akfviz.analyze(B, tile=32)
    assert "each cell" not in patterns.cluster_map(pb.tiles, 8, 8, 32).layout.title.text


@pytest.mark.parametrize("scale", [1e-300, 1e300, 1.0])
def test_matrix_summary_norm_is_scaled(scale):
    import scipy.sparse as sp

    A = sp.csr_array(np.array([[3.0, 0.0], [0.0, 4.0]]) * scale)
    s = matrix.matrix_summary(A)
    assert s["‖A‖_F"] == pytest.approx(5.0 * scale, rel=1e-15) and s["max |a_ij|"] == 4.0 * scale


def test_matrix_summary_of_a_rectangular_matrix_counts_its_own_rows_and_columns():
    import scipy.sparse as sp

    # 3 × 5 with 4 nonzeros: density 4 / 15 (not 4 / 9 or 4 / 25), one empty row, not symmetric
    A = sp.csr_array(np.array([[1.0, 0, 0, 0, 2.0], [0, 0, 0, 0, 0], [0, -3.0, 0, 4.0, 0]]))
    s = matrix.matrix_summary(A)
    assert (s["rows"], s["columns"], s["nnz"]) == (3, 5, 4)
    assert s["density"] == 4 / 15 and s["empty rows"] == 1 and s["max nnz per row"] == 2
    assert s["mean nnz per row"] == 4 / 3 and s["symmetric"] is False


def test_nnz_counts_is_the_data_of_the_histograms():
    import scipy.sparse as sp

    A = sp.csr_array(np.array([[1.0, 0, 2.0], [0, 0, 0]]))
    df = matrix.nnz_counts(A)
    assert df[df.axis == "row"]["nnz"].tolist() == [2, 0]
    assert df[df.axis == "column"]["nnz"].tolist() == [1, 0, 1]
    assert df[df.axis == "column"]["index"].tolist() == [0, 1, 2]


def test_tiles_export_adds_the_signature_in_hex_as_the_page_shows_it():
    import io

    from akfviz.app_state import frame_bytes
    from akfviz.viz.tables import readable, tiles_export

    A = akfviz.generate("clustered", n=300, seed=4)
    pa = akfviz.analyze(A, tile=16)
    out = tiles_export(pa.tiles)
    cols = list(pa.tiles.columns)
    i = cols.index("signature")
    assert list(out.columns) == ["tile"] + cols[:i + 1] + ["signature_hex"] + cols[i + 1:]
    assert list(out["tile"]) == list(range(len(pa.tiles)))   # the number the clusters' representative names
    pd.testing.assert_frame_equal(out.drop(columns=["tile", "signature_hex"]), pa.tiles)
    sig = pa.tiles["signature"].to_numpy()
    assert sig.max() > 2**53  # bits a float would round away
    assert list(out["signature_hex"]) == [readable(v, "signature") for v in sig]
    back = pd.read_csv(io.BytesIO(frame_bytes(out, "csv")))
    assert [int(h, 16) for h in back["signature_hex"]] == [int(v) for v in sig]


def test_pareto_front_cuts_the_drop_everything_plan_off_and_says_so():
    """The all-SKIP end of the front (100 % error) flattened every useful plan into a line at 0 %."""
    from akfviz.viz import kernels as vk

    fig = vk.pareto_front([0.0, 0.001, 0.004, 1.0], [1.0, 0.5, 0.3, 0.0], current=(0.001, 0.5),
                          resource_name="energy / Dense")
    lo, hi = fig.layout.yaxis.range
    assert 0.4 < hi < 1.0 and lo < 0
    assert any("1 plan off the chart<br>(error 100 %, resource 0)" in a.text
               for a in fig.layout.annotations)
    # the resource axis spans the plans left in view (0.3–1.0), not the cut-off one at 0
    x_lo, x_hi = fig.layout.xaxis.range
    assert 0.2 < x_lo < 0.3 and 1.0 < x_hi < 1.1
    # the legend sits below the plot, away from the note at the top (they overlapped at 1400 px)
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"
    # every point is still in the figure (hover, export); nothing to cut without an outlier, or when
    # the current plan is the outlier
    assert list(fig.data[0].y) == [100.0, 0.4, 0.1, 0.0]
    # the markers are solid dots in the line's dark colour: with a size per point plotly.js draws
    # bubbles (opacity 0.7, white outline), and the merged front's thousand small dots were a pale band
    assert fig.data[0].marker.color == fig.data[0].line.color
    between = vk.pareto_front([0.0, 0.001, 0.004], [1.0, 0.5, 0.3], between=[False, True, False]).data[0].marker
    assert list(between.size) == [7, 3, 7] and between.opacity == 1.0 and between.line.width == 0
    assert vk.pareto_front([0, 0.001, 0.004], [1.0, 0.5, 0.3]).layout.yaxis.range is None
    assert vk.pareto_front([0, 0.001, 0.004, 1.0], [1.0, 0.5, 0.3, 0.0], current=(1.0, 0.0)).layout.yaxis.range \
        is None


def test_pareto_front_cuts_plans_that_lose_most_of_the_matrix_without_a_tenfold_gap():
    """UX review (powerlaw 4096², T = 16, cycles): three plans at 99.3–100 % error and almost no
    resource (no 10× gap between them) kept the resource axis from 0, squeezing every plan under
    23 % error into 0.069–0.072 × Dense. Plans over 50 % error are cut when two others remain."""
    from akfviz.viz import kernels as vk

    err = [1.0, 0.9998, 0.993, 0.2249, 0.2169, 0.1018, 0.0207, 0.0]
    res = [0.0, 3e-6, 3.1e-4, 0.06925, 0.06979, 0.07032, 0.07146, 0.07155]
    fig = vk.pareto_front(err, res, current=(0.0499, 0.0711))
    y_lo, y_hi = fig.layout.yaxis.range
    assert y_hi == pytest.approx(1.15 * 22.49) and y_lo == pytest.approx(-0.03 * y_hi)
    x_lo, x_hi = fig.layout.xaxis.range
    pad = 0.04 * (0.07155 - 0.06925)
    assert (x_lo, x_hi) == (pytest.approx(0.06925 - pad), pytest.approx(0.07155 + pad))
    note = " ".join(a.text for a in fig.layout.annotations)
    assert "3 plans off the chart<br>(error 99.3–100 %, resource 0–0.00031)" in note
    assert len(fig.data[0].x) == 8  # the cut-off plans stay in the trace
    # a current plan over 50 % stays in view: only plans above 1.15× its error are cut
    fig = vk.pareto_front(err, res, current=(0.7, 0.01))
    assert fig.layout.yaxis.range[1] == pytest.approx(1.15 * 70)
    assert fig.layout.xaxis.range[0] < 0.01 < fig.layout.xaxis.range[1]
    assert "3 plans off the chart" in " ".join(a.text for a in fig.layout.annotations)
    # one plan under 50 % (the exact one) is not enough to zoom to
    fig = vk.pareto_front([1.0, 0.99, 0.0], [0.0, 0.01, 0.5])
    assert fig.layout.yaxis.range is None and fig.layout.xaxis.range is None
    assert not fig.layout.annotations


def test_fused_and_unfused_simulations_have_caches_of_their_own():
    """Probe (interactive speed): the NPU page simulates fused and unfused per setting; one shared
    cache of eight held four settings. The unfused run (drawn as totals) records no intervals."""
    import akfviz
    from akfviz import app_cache

    A = akfviz.generate("clustered", n=128, seed=3)
    plan = akfviz.select(akfviz.analyze(A, tile=32))
    hw = akfviz.HardwareConfig(rows=4, cols=4)
    x = np.ones(A.shape[1])
    fused = app_cache.simulate_cached("k-units", plan, hw.config_hash(), hw, "1|0", x, True, 1, True, "greedy")
    unfused = app_cache.simulate_cached("k-units", plan, hw.config_hash(), hw, "1|0", x, False, 1, True, "greedy")
    assert fused.meta["recorded"] and not unfused.meta["recorded"]
    assert fused.meta["fused"] and not unfused.meta["fused"]
    assert app_cache._simulate_recorded_cached is not app_cache._simulate_counters_cached
    # the same call again is the cached object, for each of the two
    assert app_cache.simulate_cached("k-units", plan, hw.config_hash(), hw, "1|0", x, True, 1, True, "greedy") is fused
    assert app_cache.simulate_cached("k-units", plan, hw.config_hash(), hw, "1|0", x, False, 1, True, "greedy") is unfused


# --------------------------------------------------------------------------- mutation-probe gaps
def test_tile_density_map_axes_span_a_non_square_tile_grid():
    A = akfviz.generate("uniform", n=96, m=320, density=0.05, seed=1)     # 6 × 20 tiles of 16
    pa = akfviz.analyze(A, tile=16)
    fig = patterns.tile_density_map(pa.tiles, 6, 20, 16)
    assert list(fig.layout.yaxis.range) == [5.5, -0.5]
    assert list(fig.layout.xaxis.range) == [-0.5, 19.5]


def test_kernel_mix_labels_are_shares_of_the_total():
    from akfviz.viz import kernels as vk

    names = ["CSC"] * 6 + ["DIA"] * 3 + ["SKIP"]
    fig = vk.kernel_mix(names)
    text = dict(zip(fig.data[0].y, fig.data[0].text))
    assert text["CSC"].endswith("(60 %)") and text["DIA"].endswith("(30 %)") and text["SKIP"].endswith("(10 %)")


def test_kernel_map_colour_scale_gives_each_family_its_own_band():
    from akfviz.viz import kernels as vk

    A = akfviz.generate("uniform", n=64, density=0.2, seed=2)
    pa = akfviz.analyze(A, tile=16)
    names = (["CSC", "DIA", "QUANT8"] * pa.n_tiles)[:pa.n_tiles]
    fig = vk.kernel_map(pa.tiles, names, 4, 4, 16)
    hm = fig.data[0]
    k = len(hm.colorbar.tickvals)
    assert k == 3
    # family i (value i) sits in the middle of its band [i/k, (i+1)/k] of the colour scale
    assert (hm.zmin, hm.zmax) == (-0.5, k - 0.5)
    for i in range(k):
        pos = (i - hm.zmin) / (hm.zmax - hm.zmin)
        assert i / k < pos < (i + 1) / k


def test_the_timeline_starts_on_the_row_of_the_busiest_pe():
    busy = np.zeros((3, 4))
    busy[0] = [5, 5, 5, 5]          # the busiest row in total (20 cycles)
    busy[2, 1] = 9                   # but the busiest PE (9 cycles) is in row 2
    rows, default = npu.busy_rows(busy.ravel(), 3, 4)
    assert rows.tolist() == [0, 2] and default == 2


def test_the_app_allows_a_sweep_up_to_the_npu_pages_grid_side():
    grid, points = S.sweep_grid(f"rows={S.MAX_GRID_SIDE}", 10)
    assert grid["rows"] == [S.MAX_GRID_SIDE] and len(points) == 1
    with pytest.raises(InputError, match="goes up to"):
        S.sweep_grid(f"rows={S.MAX_GRID_SIDE + 1}", 10)


def test_the_dropped_warning_gives_the_share_of_nonzeros_not_of_tiles(monkeypatch):
    # two SKIP tiles of 12 holding 90 % of the nonzeros: "90 %", not "17 %"
    T = 16
    A = np.zeros((T * 3, T * 4))
    A[:T, :T] = 1.0
    A[:T, T:2 * T] = 1.0                               # two full tiles: 512 of ≈ 570 nonzeros
    A[T:, 2 * T:] = np.eye(2 * T, 2 * T)[:, :2 * T]    # thin diagonal tiles
    pa = akfviz.analyze(A, tile=T)
    full = (pa.tiles["nnz"] == T * T).to_numpy()
    from akfviz.execute import FusionPlan
    plan = FusionPlan(pa, np.where(full, "SKIP", "CSC"))
    nnz = pa.tiles["nnz"].to_numpy()
    share = 100 * nnz[full].sum() / nnz.sum()
    seen = []
    monkeypatch.setattr(S.st, "warning", lambda text, **kw: seen.append(text))
    S.warn_if_dropped(plan)
    assert seen and f"{share:.0f} % of the nonzeros" in seen[0]
    assert f"{int(full.sum())} of {pa.n_tiles} tiles dropped" in seen[0]
    assert round(share) != round(100 * full.mean())       # the two shares differ here



def test_every_energy_column_of_a_sweep_is_drawn_in_microjoules():
    # the baselines' energies (dense_energy_pj, …) are labelled µJ like AKF's own energy_pj
    df = pd.DataFrame({"energy_pj": [2e6], "dense_energy_pj": [5e6], "staticsparse_energy_pj": [3e6],
                       "cycles": [100.0]})
    for col in ("energy_pj", "dense_energy_pj", "staticsparse_energy_pj"):
        assert dse.column_values(df, col).tolist() == [df[col].item() * 1e-6]
        assert "µJ" in dse.column_label(col), col
    assert dse.column_values(df, "cycles").tolist() == [100.0]
