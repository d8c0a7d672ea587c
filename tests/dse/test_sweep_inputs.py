"""Input checks of the design-space sweep: every bad grid, argument or file raises InputError
with a readable message, before any point runs (akf-spec §9)."""
import io

import numpy as np
import pandas as pd
import pytest

import akfviz
from akfviz.dse.sweep import SWEEP_PARAMETERS, expand_grid, load_sweep, run_sweep, save_sweep
from akfviz.npu.hardware import _INT_LIMITS, HardwareConfig


@pytest.fixture(scope="module")
def A():
    return akfviz.generate("banded", n=64)


# --------------------------------------------------------------------------- defect 1: point count
def test_point_count_does_not_overflow():
    grid = {n: [v] * 256 for n, v in [("alpha", 1.0), ("beta", 1.0), ("tile", 32), ("rho_x", 1.0),
                                       ("rows", 256), ("cols", 256), ("mac_lanes", 4),
                                       ("hop_latency_cycles", 1)]}
    with pytest.raises(akfviz.InputError, match="18446744073709551616 points"):
        expand_grid(grid, max_points=10**6)


def test_point_count_is_never_negative():
    names = ["alpha", "beta", "rows", "cols", "mac_lanes", "hop_latency_cycles", "tile"]
    with pytest.raises(akfviz.InputError, match=r"\d+ points, more than the limit"):
        expand_grid({n: [1] * 600 for n in names}, max_points=10**9)


def test_huge_value_list_is_refused_without_building_it():
    with pytest.raises(akfviz.InputError, match="more than the limit"):
        expand_grid({"alpha": range(10**15)})


# --------------------------------------------------------------------------- defect 2: hardware ranges
@pytest.mark.parametrize("name", ["rows", "cols", "sram_bytes_per_pe", "mac_lanes",
                                  "dram_bytes_per_cycle", "hop_latency_cycles"])
def test_hardware_ranges_agree_with_hardware_config(name):
    lo, hi, _ = _INT_LIMITS[name]
    p = SWEEP_PARAMETERS[name]
    assert (p.kind, p.low, p.high) == (int, lo, hi)
    HardwareConfig().replace(**{name: p.check(lo)})  # both ends are valid hardware
    HardwareConfig().replace(**{name: p.check(hi)})
    with pytest.raises(akfviz.InputError, match="outside"):
        p.check(hi + 1)


def test_sram_zero_is_accepted_and_fractional_bandwidth_refused():
    assert expand_grid({"sram_bytes_per_pe": [0]}) == [{"sram_bytes_per_pe": 0}]
    with pytest.raises(akfviz.InputError, match="whole number"):
        expand_grid({"dram_bytes_per_cycle": [0.5]})


def test_mixed_grid_is_refused_before_any_point_runs(A):
    calls = []
    with pytest.raises(akfviz.InputError, match=r"hop_latency_cycles.*5000"):
        run_sweep(A, {"hop_latency_cycles": [1, 5000], "alpha": [0.1, 1, 10, 100]},
                  base={"tile": 16}, progress=lambda *a: calls.append(a))
    assert calls == []


def test_bad_hardware_in_base_is_refused_before_any_point_runs(A):
    calls = []
    with pytest.raises(akfviz.InputError, match=r"mac_lanes.*4096"):
        run_sweep(A, {"alpha": [1.0, 2.0]}, base={"tile": 16, "mac_lanes": 4096},
                  progress=lambda *a: calls.append(a))
    assert calls == []


def test_zero_alpha_and_beta_point_is_refused_before_any_point_runs(A):
    calls = []
    with pytest.raises(akfviz.InputError, match="both 0"):
        run_sweep(A, {"alpha": [1.0, 0.0]}, base={"tile": 16, "beta": 0.0},
                  progress=lambda *a: calls.append(a))
    assert calls == []


# --------------------------------------------------------------------------- defect 3: grid and arguments
@pytest.mark.parametrize("grid, words", [
    ({"alpha": 1.0}, "needs a list of values"),
    ({"alpha": None}, "needs a list of values"),
    ({"alpha": "1.0"}, "got the text"),
    ({"alpha": {1.0, 2.0}}, "no fixed order"),
    ({"alpha": np.ones((2, 2))}, "flat list"),
    ([("alpha", [1.0])], "must be a dict"),
    ({"tile": [None]}, "needs a value"),
])
def test_bad_grids(A, grid, words):
    with pytest.raises(akfviz.InputError, match=words):
        run_sweep(A, grid)


@pytest.mark.parametrize("kw, words", [
    (dict(progress=5), "progress must be a function"),
    (dict(max_points="a"), "max_points must be a whole number"),
    (dict(max_points=0), "max_points must be a whole number"),
    (dict(scheduler=["local"]), "scheduler must be"),
    (dict(hw="big"), "hw must be a HardwareConfig"),
    (dict(base=[("tile", 16)]), "base must be a dict"),
    (dict(base={"tile": None}), "needs a value"),
])
def test_bad_arguments(A, kw, words):
    with pytest.raises(akfviz.InputError, match=words):
        run_sweep(A, {"alpha": [1.0]}, **kw)


def test_error_budget_none_means_no_budget_in_grid_and_base(A):
    df = run_sweep(A, {"error_budget": [None, 0.0]}, base={"tile": 16})
    assert len(df) == 2
    assert np.isnan(df["error_budget"].iloc[0]) and df["error_budget"].iloc[1] == 0.0
    assert df["error_pct"].iloc[1] == pytest.approx(0.0, abs=1e-9)  # budget 0: lossless
    plain = run_sweep(A, {"alpha": [1.0]}, base={"tile": 16, "error_budget": None})
    assert plain["error_pct"].iloc[0] == pytest.approx(df["error_pct"].iloc[0])


# --------------------------------------------------------------------------- defect 4: files
@pytest.fixture(scope="module")
def sweep_df(A):
    return run_sweep(A, {"alpha": [1.0]}, base={"tile": 16})


def test_save_into_missing_folder(tmp_path, sweep_df):
    with pytest.raises(akfviz.InputError, match="does not exist"):
        save_sweep(sweep_df, tmp_path / "nope" / "s.csv")


def test_save_needs_a_dataframe(tmp_path):
    with pytest.raises(akfviz.InputError, match="DataFrame"):
        save_sweep([{"cycles": 1}], tmp_path / "s.csv")
    with pytest.raises(akfviz.InputError, match="file name"):
        save_sweep(pd.DataFrame({"cycles": [1]}), 5)


@pytest.mark.parametrize("bad", [5, None, 1.5])
def test_load_needs_a_file(bad):
    with pytest.raises(akfviz.InputError, match="needs a file name"):
        load_sweep(bad)


def test_load_refuses_a_cut_off_csv(tmp_path, sweep_df):
    path = save_sweep(sweep_df, tmp_path / "s.csv")
    text = path.read_bytes()
    assert len(load_sweep(text)) == 1
    cut = text[: text.rindex(b",", 0, len(text) - 1)]  # drop the last field of the last row
    with pytest.raises(akfviz.InputError, match="cut off"):
        load_sweep(cut)
    with pytest.raises(akfviz.InputError, match="cut off"):
        load_sweep(b"cycles,energy_pj,error_pct\n1,2,3\n4,5")


@pytest.mark.parametrize("data, words", [
    (b"cycles,energy_pj,error_pct\nabc,2,3\n", r"'cycles'.*'abc'"),
    (b"cycles,energy_pj,error_pct,speedup\n1,2,3,fast\n", r"'speedup'.*'fast'"),
    (b"cycles,energy_pj,error_pct\n1,,3\n", r"'energy_pj'.*empty"),
])
def test_load_refuses_text_in_numeric_columns(data, words):
    with pytest.raises(akfviz.InputError, match=words):
        load_sweep(data)


def test_load_refuses_text_in_parquet_result_column(tmp_path):
    path = tmp_path / "s.parquet"
    pd.DataFrame({"cycles": ["abc"], "energy_pj": [1.0], "error_pct": [0.0]}).to_parquet(path)
    with pytest.raises(akfviz.InputError, match="should hold numbers"):
        load_sweep(path)


def test_load_round_trip_keeps_numbers(tmp_path, sweep_df):
    back = load_sweep(io.BytesIO(save_sweep(sweep_df, tmp_path / "s.csv").read_bytes()))
    assert pd.api.types.is_numeric_dtype(back["cycles"])
    np.testing.assert_allclose(back["cycles"], sweep_df["cycles"])


# --------------------------------------------------------------------------- baselines, budgets
@pytest.mark.parametrize("kw, words", [
    ({"baselines": "yes"}, "baselines"),
    ({"baselines": True, "static_kernel": "NOPE"}, "NOPE"),
    ({"base": {"error_budget": 0.1, "resource_budget": 0.5}}, "both an error_budget and a resource_budget"),
    ({"base": {"resource_budget": -1}}, "outside"),
])
def test_baseline_and_budget_arguments_are_checked_before_any_point_runs(A, kw, words):
    calls = []
    with pytest.raises(akfviz.InputError, match=words):
        run_sweep(A, {"alpha": [1.0]}, progress=lambda *a: calls.append(a), **kw)
    assert not calls


def test_resource_budget_none_and_zero_weights(A):
    df = run_sweep(A, {"resource_budget": [None, 0.5]}, base={"alpha": 0.0, "beta": 1.0, "tile": 16})
    assert len(df) == 2
    with pytest.raises(akfviz.InputError, match="both 0"):
        run_sweep(A, {"resource_budget": [None]}, base={"alpha": 0.0, "beta": 0.0})
    run_sweep(A, {"resource_budget": [0.5]}, base={"alpha": 0.0, "beta": 0.0, "tile": 16})


@pytest.mark.parametrize("name, value", [("alpha", True), ("error_budget", True), ("rows", np.True_),
                                         ("rho_x", True)])
def test_a_bool_is_not_a_number_of_the_sweep(name, value):
    """True is 1 to Python: without the check, alpha=True or error_budget=True became 1.0 silently."""
    with pytest.raises(akfviz.InputError, match=f"'{name}' needs a number"):
        expand_grid({name: [value]})
    with pytest.raises(akfviz.InputError, match=f"'{name}' needs a number"):
        SWEEP_PARAMETERS[name].check(value)
