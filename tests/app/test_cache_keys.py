"""The app's result caches (akfviz/app_cache.py) against a stale result: each cached function is
keyed by a content key plus the arguments Streamlit hashes (a leading underscore means "not
hashed"). Calling it twice with one setting changed must give that setting's result, not the
first call's. (A mutation probe renamed single arguments to ``_name``: nothing failed.)"""
import numpy as np
import pytest

import akfviz
from akfviz import app_cache as C
from akfviz import app_state as S
from akfviz.npu.simulate import random_input

HW = akfviz.HardwareConfig(rows=8, cols=8)


@pytest.fixture(scope="module")
def case():
    A = akfviz.generate("stencil5", n=16, seed=0)
    pa = C.analyze_cached(S.matrix_digest(A), A, 16, (32, 8, 8, 0))
    # two plans of one analysis: β = 1 picks QUANT8, β = 0 (error only) DIA
    p1 = C.select_cached("case", pa, 1.0, 1.0, None, "cluster", "hw8", HW)
    p2 = C.select_cached("case", pa, 1.0, 0.0, None, "cluster", "hw8", HW)
    assert p1.resource != p2.resource
    return A, pa, p1, p2


def test_cached_analysis_and_selection_follow_every_setting():
    # the caches are keyed by the matrix digest plus the arguments Streamlit hashes; a setting left
    # out of the hash would show the previous setting's clusters or plan
    A = akfviz.generate("uniform", n=96, density=0.05, seed=11)
    d = S.matrix_digest(A)
    one = C.analyze_cached(d, A, 32, (32, 8, 8, 0))
    other = C.analyze_cached(d, A, 32, (16, 4, 4, 7))
    assert (one.lsh.num_hashes, one.lsh.bands, one.lsh.grid, one.lsh.seed) == (32, 8, 8, 0)
    assert (other.lsh.num_hashes, other.lsh.bands, other.lsh.grid, other.lsh.seed) == (16, 4, 4, 7)
    assert C.analyze_cached(d, A, 16, (32, 8, 8, 0)).tile == 16
    hw = akfviz.HardwareConfig()
    key = S.analysis_key(d, 32)
    plans = {g: C.select_cached(key, one, 1.0, 1.0, None, g, "hw", hw) for g in ("cluster", "tile")}
    assert {g: p.selection.granularity for g, p in plans.items()} == {"cluster": "cluster", "tile": "tile"}
    p = C.select_cached(key, one, 1.0, 1.0, 0.0, "cluster", "hw", hw)
    assert p.relative_error == 0.0 and p.selection.mode == "error_budget"
    q = C.select_cached(key, one, 1.0, 3.0, None, "cluster", "hw", hw)
    assert q.selection.beta == 3.0


def test_simulation_cache_follows_persistence(case):
    # (fused and unfused runs: test_app_units.test_fused_and_unfused_simulations_have_caches_of_their_own)
    _, _, p1, _ = case
    x = random_input(p1.shape[1], 1.0, 0)
    for fz in (True, False):
        runs = [C.simulate_cached("p1", p1, "hw8", HW, "x", x, fused=fz, iterations=3, persistent=p)
                for p in (True, False)]
        assert [r.meta["persistent"] for r in runs] == [True, False]
        assert runs[0].dram_bytes < runs[1].dram_bytes      # persistent: payloads stay on chip


def test_performance_table_cache_follows_the_tile_side():
    assert [C.perftable_cached("hw8", HW, t).tile for t in (16, 32, 16)] == [16, 32, 16]


def test_pareto_cache_follows_the_resource_measure(case):
    _, pa, _, _ = case
    got = [C.pareto_cached("case", pa, "hw8", HW, m, "cluster").measure for m in ("energy", "cycles", "bytes")]
    assert got == ["energy", "cycles", "bytes"]


def test_prediction_error_cache_follows_rho_x(case):
    _, pa, _, _ = case
    dense_x = C.prediction_error_cached("case", pa, "hw8", HW, 1.0)
    sparse_x = C.prediction_error_cached("case", pa, "hw8", HW, 0.3)
    assert not dense_x.equals(sparse_x)


def test_solver_cache_follows_the_iterations(case):
    _, _, p1, _ = case
    assert [len(C.solver_cached("p1", p1, "hw8", HW, "jacobi", k).curves) for k in (5, 7)] == [5, 7]


def test_compare_rows_follow_the_plan_and_use_the_documented_x(case):
    A, pa, p1, p2 = case
    rho = 0.5
    t1 = C.compare_cached("case", "p1", "hw8", HW, "CSC", rho, pa, p1)
    t2 = C.compare_cached("case", "p2", "hw8", HW, "CSC", rho, pa, p2)
    # x of density ρ_x drawn with seed 0, as the docstring says (and the Compare page tells)
    for plan, table in ((p1, t1), (p2, t2)):
        want = akfviz.simulate(plan, HW, x=random_input(A.shape[1], rho, 0), record=False).cycles
        assert table.loc["AKF", "cycles"] == want
    assert t1.loc["AKF", "cycles"] != t2.loc["AKF", "cycles"]
    other_x = akfviz.simulate(p1, HW, x=random_input(A.shape[1], rho, 1), record=False).cycles
    assert other_x != t1.loc["AKF", "cycles"]        # the seed matters for this case


# --------------------------------------------------------------------------- the keys the pages build
@pytest.fixture
def state(monkeypatch):
    """The app's settings as a plain dict (defaults from the URL fields), read by S.get."""
    from akfviz.app_url import FIELDS

    values = {k: f.default for k, f in FIELDS.items()}
    monkeypatch.setattr(S, "get", lambda key: values.get(key))
    return values


def test_analysis_key_names_the_tile_side_and_every_lsh_setting(state):
    keys = {S.analysis_key("d", 32)}
    assert S.analysis_key("d", 16) not in keys
    for name, value in (("lsh_k", 16), ("lsh_b", 4), ("lsh_g", 4), ("lsh_seed", 7)):
        old = state[name]
        state[name] = value
        keys.add(S.analysis_key("d", 32))
        state[name] = old
    assert len(keys) == 5


def test_plan_key_names_every_selector_setting_and_the_hardware(state):
    class _Pa:
        tile = 32

    class _Wl:
        digest = "d"

    keys = {S.plan_key(_Wl, _Pa, "hw1")}
    assert S.plan_key(_Wl, _Pa, "hw2") not in keys
    changes = [("alpha", 2.0), ("beta", 0.5), ("gran", "tile"), ("resource", "cycles"), ("xdens", 0.5),
               ("mode", "error"), ("mode", "resource")]
    for name, value in changes:
        old = state[name]
        state[name] = value
        keys.add(S.plan_key(_Wl, _Pa, "hw1"))
        state[name] = old
    assert len(keys) == 1 + len(changes)
    state["mode"] = "error"
    a = S.plan_key(_Wl, _Pa, "hw1")
    state["budget"] = 0.05
    assert S.plan_key(_Wl, _Pa, "hw1") != a
    state["mode"] = "resource"
    b = S.plan_key(_Wl, _Pa, "hw1")
    state["rbudget"] = 0.25
    assert S.plan_key(_Wl, _Pa, "hw1") != b


def test_hardware_key_follows_every_setting_not_only_the_grid():
    base = akfviz.HardwareConfig()
    others = [akfviz.HardwareConfig(sram_bytes_per_pe=base.sram_bytes_per_pe // 2),
              akfviz.HardwareConfig(clock_hz=base.clock_hz * 2), akfviz.HardwareConfig(hop_latency_cycles=5)]
    keys = {S.hw_key(h) for h in [base, *others]}
    assert len(keys) == 4 and S.hw_key(akfviz.HardwareConfig()) in keys


def test_a_second_upload_of_the_same_name_replaces_the_first(app):
    import io

    import scipy.io
    import scipy.sparse as sp

    app.run()
    # T = 32: 3 × 1 tiles, then 1 × 2 — the analysis is keyed by content, not by the file's name
    for shape, tiles in (((70, 30), "3"), ((25, 35), "2")):
        buf = io.BytesIO()
        scipy.io.mmwrite(buf, sp.random(*shape, density=0.5, random_state=0, format="coo"))
        app.file_uploader(key="matrix_upload").set_value(("m.mtx", buf.getvalue(), "text/plain")).run()
        assert not app.exception
        metrics = {m.label: m.value for m in app.metric}
        assert (metrics["rows"], metrics["columns"]) == tuple(str(s) for s in shape)
        app.switch_page("pages/1_Patterns.py").run()
        assert not app.exception
        assert {m.label: m.value for m in app.metric}["nonempty tiles"] == tiles
        app.switch_page("app.py").run()


def test_generating_with_another_seed_gives_another_matrix(app):
    app.run()
    app.selectbox(key="gen_kind").set_value("uniform").run()
    digests = []
    for seed in (0, 1):
        # a text box: the library takes seeds beyond what a browser number box holds
        seed_box = next(b for b in app.text_input if b.label.startswith("seed"))
        seed_box.set_value(str(seed))
        next(b for b in app.button if b.label == "Generate").click().run()
        assert not app.exception
        # the Matrix page records the matrix it shows, by content (sha256)
        digests.append(app.session_state[S.RESULTS]["matrix"][1]["sha256"])
        assert dict(app.query_params).get("g_seed", "0") == str(seed)
    assert digests[0] != digests[1]


# ------------------------------------------------ session state (a plain dict: the `session` fixture of conftest.py)
def test_a_bundle_gives_each_setting_its_own_type(session):
    import json

    doc = S.parse_bundle(json.dumps({"format": "akfviz-run-bundle", "version": 1,
                                     "state": {"tile": "64", "alpha": 2, "gran": "tile"}}).encode())
    st_ = doc["state"]
    assert st_["tile"] == 64 and type(st_["tile"]) is int
    assert st_["alpha"] == 2.0 and type(st_["alpha"]) is float and st_["gran"] == "tile"


def test_loading_a_bundle_without_an_edited_table_drops_the_sessions_edits(session):
    from akfviz.npu.energy import EnergyTable

    S.set_energy_override(EnergyTable.preset("horowitz-45nm").replace(dram=100.0), "horowitz-45nm")
    defaults = {k: f.default for k, f in S.FIELDS.items()}
    S.apply_bundle(S.parse_bundle(S.make_bundle(defaults, {}, {}, None).encode()))
    assert S.energy_override() is None


def test_an_edited_energy_table_reaches_the_hardware(session):
    from akfviz.npu.energy import EnergyTable

    table = EnergyTable.preset("horowitz-45nm").replace(dram=100.0)
    before, key_before = S.hardware()
    S.set_energy_override(table, "horowitz-45nm")
    hw, key = S.hardware()
    assert hw.energy == table and before.energy != table and key != key_before


def test_the_results_stamp_follows_the_matrix_content(session):
    import types

    session[S._WL] = types.SimpleNamespace(digest="a" * 64)
    one = S.settings_stamp()
    session[S._WL] = types.SimpleNamespace(digest="b" * 64)
    assert S.settings_stamp() != one


def test_each_uploaded_object_is_hashed_for_itself(session):
    first, second = b"%%MatrixMarket one", b"%%MatrixMarket two"
    d1 = S.upload_digest(first)
    assert S.upload_digest(second) != d1
    assert S.upload_digest(first) == d1
