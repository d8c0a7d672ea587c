"""Findings of an adversarial probe of simulate / HardwareConfig / compare (forty-third session).

Each test failed on the code before its fix: raw exceptions where an InputError is promised
(akf-spec §9), values cut instead of refused, a cache key missing inputs, a ratio that depended
on the scale of x, and wall-clock times in a result that should be reproducible.
"""
import json

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz import HardwareConfig, InputError
from akfviz.npu.energy import EnergyEntry, EnergyTable


@pytest.fixture(scope="module")
def small():
    A = akfviz.generate("banded", n=128, seed=0)
    pa = akfviz.analyze(A, tile=32)
    plan = akfviz.select(pa)
    hw = HardwareConfig(rows=8, cols=8)
    return A, pa, plan, hw


# ------------------------------------------------------------------ energy values and TOML
@pytest.mark.parametrize("make", [
    lambda: EnergyEntry(10**400, "pJ/op", "s", "45 nm", "measured"),
    lambda: EnergyTable.preset("horowitz-45nm").replace(dram=10**400),
    lambda: HardwareConfig.from_toml(HardwareConfig().to_toml().replace("value = 4.6", "value = " + "9" * 400, 1)),
])
def test_a_whole_number_energy_beyond_float64_is_refused_by_size(make):
    with pytest.raises(InputError, match=r"at most 1e\+09 pJ.*(400|401)-digit number"):
        make()


def test_numpy_and_fraction_energy_values_are_numbers():
    from fractions import Fraction

    for v, want in ((np.float32(2.0), 2.0), (np.int64(3), 3.0), (Fraction(1, 4), 0.25), (np.array(1.5), 1.5)):
        assert EnergyEntry(v, "pJ/op", "s", "45 nm", "assumed").value == want
    for bad in (True, np.bool_(True), "2", None, np.array([2.0])):
        with pytest.raises(InputError, match="number of picojoules"):
            EnergyEntry(bad, "pJ/op", "s", "45 nm", "assumed")


def test_missing_energy_settings_are_named():
    with pytest.raises(InputError, match=r"EnergyEntry needs 'unit', 'source', 'node', 'grade' too"):
        EnergyEntry(1.0)
    t = EnergyTable.preset("horowitz-45nm")
    with pytest.raises(InputError, match=r"EnergyTable needs 'mac_int8'.*too"):
        EnergyTable(mac_fp32=t.mac_fp32)


def test_an_emptied_provenance_cell_is_refused_not_read_as_nan():
    t = EnergyTable.preset("horowitz-45nm")
    df = t.to_frame()
    df.loc[df.index[2], "source"] = np.nan
    with pytest.raises(InputError, match="'source' must be a non-empty text"):
        EnergyTable.from_frame(df)
    df = t.to_frame()
    df["value"] = df["value"].astype(object)
    df.iloc[0, list(df.columns).index("value")] = True
    with pytest.raises(InputError, match="number of picojoules, got True"):
        EnergyTable.from_frame(df)
    assert EnergyTable.from_frame(t.to_frame()).values() == t.values()


def test_an_energy_section_must_be_whole_and_named_by_text():
    base = HardwareConfig().to_toml()
    start = base.index("[energy.mac_int8]")
    end = base.index("[energy.", start + 1)
    with pytest.raises(InputError, match=r"lacks the entry 'mac_int8': it must list all 8 actions.*to_toml"):
        HardwareConfig.from_toml(base[:start] + base[end:])
    with pytest.raises(InputError, match=r"\[energy\] name must be text, got 5"):
        HardwareConfig.from_toml(base.replace('name = "horowitz-45nm"', "name = 5", 1))
    for blank in (" ", "\t"):
        with pytest.raises(InputError, match="non-empty"):
            HardwareConfig(preset=blank)
        with pytest.raises(InputError, match="non-empty"):
            EnergyTable.preset("horowitz-45nm").replace(name=blank)


def test_deeply_nested_toml_is_a_parse_error():
    with pytest.raises(InputError, match="nested too deeply"):
        HardwareConfig.from_toml("a = " + "[" * 3000 + "]" * 3000)


@pytest.mark.parametrize("value", [np.array(8.9), np.array(True), np.array(0.5), np.array([8]), np.float64(8.5)])
def test_hardware_whole_numbers_are_never_cut(value):
    with pytest.raises(InputError, match=r"HardwareConfig\.rows .* must be a whole number"):
        HardwareConfig(rows=value)


def test_hardware_takes_zero_d_arrays_and_numpy_numbers_as_their_value():
    hw = HardwareConfig(rows=np.array(8), cols=np.int32(4), clock_hz=np.array(5e8))
    assert (hw.rows, hw.cols, hw.clock_hz) == (8, 4, 5e8)
    assert type(hw.rows) is int and type(hw.clock_hz) is float


@pytest.mark.parametrize("call", [
    lambda: HardwareConfig.from_preset(["a"]),
    lambda: HardwareConfig().to_toml(5),
    lambda: EnergyTable.preset(["a"]),
    lambda: EnergyTable.preset("horowitz-45nm")[["dram"]],
])
def test_odd_arguments_of_the_hardware_helpers_are_input_errors(call):
    with pytest.raises(InputError):
        call()


# ------------------------------------------------------------------ simulate and its result
@pytest.mark.parametrize("rho", ["0.5", b"0.5", " 1 ", True, np.bool_(False)])
def test_rho_x_must_be_a_number_everywhere(small, rho):
    A, pa, plan, hw = small
    with pytest.raises(InputError, match="rho_x"):
        akfviz.simulate(plan, hw, rho_x=rho)
    with pytest.raises(InputError, match="rho_x"):
        akfviz.select(pa, rho_x=rho)
    with pytest.raises(InputError, match="rho_x"):
        akfviz.compare(A, hw=hw, rho_x=rho)


def test_a_tile_side_smaller_than_the_tiles_is_refused():
    A = akfviz.generate("banded", n=256, seed=0)
    w = akfviz.select(akfviz.analyze(A, tile=32), kernels=["CSC"]).npu_work()
    hw = HardwareConfig(rows=8, cols=8)
    x = np.zeros(256)
    x[200:] = 1
    right = akfviz.simulate(w, hw, x=x, tile=32, shape=(256, 256)).events
    assert right == akfviz.simulate(w, hw, x=x, tile=32.0, shape=(256, 256)).events > 0
    with pytest.raises(InputError, match=r"larger than the tile side given \(tile_rows=16, tile=16\)"):
        akfviz.simulate(w, hw, x=x, tile=16, shape=(256, 256))   # gave 0 events
    with pytest.raises(InputError, match=r"tile \(the tile side\) must be a whole number ≥ 1, got 8\.9"):
        akfviz.simulate(w, hw, x=x, tile=8.9, shape=(256, 256))  # was cut to 8
    with pytest.raises(InputError, match=r"tile_rows \(the tile height\) must be a whole number ≥ 1, got 0"):
        akfviz.simulate(w, hw, x=x, tile_rows=0, shape=(256, 256))
    for bad in ("abc", None.__class__):
        with pytest.raises(InputError):
            akfviz.simulate(w, hw, x=x, tile=bad, shape=(256, 256))


def test_result_helpers_refuse_odd_arguments(small):
    _, _, plan, hw = small
    r = akfviz.simulate(plan, hw)
    assert len(r.timeline(pes=int(r.busiest_pes(1)["pe"][0]))) > 0      # one id is a list of one
    for call in (lambda: r.timeline(pes=["a"]), lambda: r.timeline(pes=[10**30]), lambda: r.timeline(pes=[np.nan]),
                 lambda: r.timeline(pes=[1.5]), lambda: r.timeline(pes="12"), lambda: r.timeline(max_intervals="a"),
                 lambda: r.timeline(pes=np.array([1, hw.n_pes])), lambda: r.total(["busy"]),
                 lambda: r.busiest_pes(k="a"), lambda: r.to_dict(arrays="yes")):
        with pytest.raises(InputError):
            call()
    with pytest.raises(InputError, match="hw must be a HardwareConfig"):
        akfviz.npu.unit_costs(plan.npu_work(), "x")
    from akfviz.npu.simulate import simulate_dense
    with pytest.raises(InputError, match="Dense tile side"):
        simulate_dense((5, 5), "a")


def test_to_dict_is_the_same_in_every_run_unless_timings_are_asked(small):
    _, _, plan, hw = small
    import akfviz.npu.simulate as S

    a = akfviz.simulate(plan, hw).to_dict()
    S._MAPPING_CACHE.clear()             # the placement is annealed again: another wall-clock time
    b = akfviz.simulate(plan, hw).to_dict()
    assert json.dumps(a, allow_nan=False, sort_keys=True) == json.dumps(b, allow_nan=False, sort_keys=True)
    assert "seconds" not in a["mapping"] and "iterations_per_s" not in a["mapping"]
    timed = akfviz.simulate(plan, hw).to_dict(timings=True)["mapping"]
    assert timed["seconds"] >= 0 and timed["iterations_per_s"] >= 0


def test_to_dict_arrays_refuses_lists_beyond_memory(small, monkeypatch):
    _, _, plan, hw = small
    r = akfviz.simulate(plan, hw)
    import akfviz.memory as M

    assert len(r.to_dict(arrays=True)["utilization"]) == hw.rows
    monkeypatch.setattr(M, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(M, "available_memory", lambda: 1000)
    with pytest.raises(InputError, match="as Python lists needs about"):
        r.to_dict(arrays=True)
    assert r.to_dict()["cycles"] == r.cycles         # the summary itself builds no per-PE lists


def test_cached_placements_follow_the_tiles_local_columns():
    """Two plans equal but for the column each tile stores (0 or 31): each reports its own
    engine-check energies (the second reported the first's, from a key without col_local)."""
    import akfviz.npu.simulate as S

    n, T = 512, 32

    def build(local):
        rows, cols = [], []
        for bi in range(n // T):
            for bj in range(n // T):
                k = 1 + (bi * 7 + bj * 3) % 20
                rows += list(bi * T + np.arange(k))
                cols += [bj * T + local] * k
        return sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n))

    hw = HardwareConfig(rows=16, cols=16)

    def run(local):
        plan = akfviz.select(akfviz.analyze(build(local), tile=T), kernels=["CSC"])
        r = akfviz.simulate(plan, hw, rho_x=0.5, record=False)
        return r.mapping, r.energy_total_pj

    S._MAPPING_CACHE.clear()
    run(0)
    after, _ = run(31)
    S._MAPPING_CACHE.clear()
    alone, energy = run(31)
    for k in ("engine_kept", "engine_anneal_cycles", "engine_greedy_cycles", "engine_anneal_energy_pj",
              "engine_greedy_energy_pj"):
        assert after[k] == alone[k], k
    kept = alone["engine_kept"]
    assert alone[f"engine_{kept}_energy_pj"] == pytest.approx(energy, rel=1e-12)


def test_a_masked_x_is_refused(small):
    _, _, plan, hw = small
    x = np.ma.masked_array(np.ones(128), mask=np.arange(128) < 10)
    with pytest.raises(InputError, match=r"masked.*x\.filled\(0\)"):
        plan.matvec(x)
    with pytest.raises(InputError, match="masked"):
        akfviz.simulate(plan, hw, x=x)
    np.testing.assert_array_equal(plan.matvec(np.ma.masked_array(np.ones(128))), plan.matvec(np.ones(128)))


# ------------------------------------------------------------------ output error and compare
@pytest.mark.parametrize("scale", [1e155, 1e-200, 1e-300, 1e300])
def test_output_error_does_not_depend_on_the_scale_of_x(scale):
    from akfviz.execute.cpu import matvec_check

    p = akfviz.select(akfviz.analyze(akfviz.generate("banded", n=100, seed=0), tile=16))
    x = np.random.default_rng(0).standard_normal(100)
    base = p.output_error(x)
    assert base > 0
    assert p.output_error(x * scale) == pytest.approx(base, rel=1e-12)
    assert matvec_check(p, x * scale)["vs_approx"] < 1e-12


def test_output_error_refuses_an_x_whose_product_overflows():
    A = sp.csr_array(np.full((4, 4), 1e130))   # ‖A‖_F within what analyze takes; A x ≈ 4e430
    p = akfviz.select(akfviz.analyze(A, tile=4), kernels=["DENSE"])
    with pytest.raises(InputError, match="overflows"):
        p.output_error(np.full(4, 1e300))


def test_relative_norm_edges():
    from akfviz.execute.plan import relative_norm

    assert relative_norm(np.zeros(3), np.zeros(3)) == 0.0
    assert relative_norm(np.ones(3), np.zeros(3)) == float("inf")
    assert relative_norm(np.array([3e-320, 4e-320]), np.array([0.0, 5e-320])) == pytest.approx(1.0, rel=1e-3)
    assert relative_norm(np.array([3e200, 4e200]), np.array([5e200, 0.0])) == pytest.approx(1.0)


def test_compare_with_an_analysis_checks_every_argument(small):
    A, pa, plan, hw = small
    B = akfviz.generate("uniform", n=128, density=0.2, seed=0)
    for kw, words in ((dict(analysis=pa, tile=None), "tile side"), (dict(analysis=pa, tile="x"), "tile side"),
                      (dict(analysis="x"), "PatternAnalysis")):
        with pytest.raises(InputError, match=words):
            akfviz.compare(None, hw=hw, **kw)
    with pytest.raises(InputError, match=r"A has shape \(1, 1\)"):
        akfviz.compare([[1.0]], hw=hw, analysis=pa)
    for kw, what in ((dict(plan=plan), "plan"), (dict(analysis=pa), "analysis")):
        with pytest.raises(InputError, match=f"A is not the matrix the {what} was made from"):
            akfviz.compare(B, hw=hw, **kw)
    dup = sp.coo_array((np.r_[A.data, 0.0], (np.r_[A.tocoo().row, 0], np.r_[A.tocoo().col, 0])), shape=A.shape)
    same = akfviz.compare(dup, hw=hw, plan=plan)     # the same matrix, another format and an explicit zero
    assert same.loc["AKF", "cycles"] == akfviz.compare(None, hw=hw, plan=plan).loc["AKF", "cycles"]
