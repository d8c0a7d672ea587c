"""Design-space sweeps: grid expansion, shared-stage reuse, determinism, file round-trips."""
import io

import numpy as np
import pandas as pd
import pytest

import akfviz
from akfviz.dse.sweep import expand_grid, load_sweep, run_sweep, save_sweep


@pytest.fixture(scope="module")
def small_matrix():
    return akfviz.generate("block_diagonal", n=128, seed=1)


def test_expand_grid_is_cartesian_and_ordered():
    pts = expand_grid({"alpha": [0.1, 1.0], "tile": [8, 16, 32]})
    assert len(pts) == 6
    assert pts[0] == {"alpha": 0.1, "tile": 8}
    assert pts[-1] == {"alpha": 1.0, "tile": 32}


@pytest.mark.parametrize("grid, words", [
    ({"nonsense": [1]}, "not a sweepable parameter"),
    ({"alpha": []}, "no values"),
    ({"tile": [2]}, "outside"),
    ({"granularity": ["rows"]}, "choose from"),
    ({"alpha": ["abc"]}, "needs a number"),
    ({}, "at least one parameter"),
])
def test_expand_grid_rejects_bad_grids(grid, words):
    with pytest.raises(akfviz.InputError, match=words):
        expand_grid(grid)


def test_expand_grid_refuses_huge_sweeps():
    with pytest.raises(akfviz.InputError, match="more than the limit"):
        expand_grid({"alpha": list(range(30)), "beta": list(range(30))}, max_points=100)


def test_run_sweep_rows_and_determinism(small_matrix):
    grid = {"alpha": [0.01, 100.0], "tile": [16, 32]}
    calls = []
    df = run_sweep(small_matrix, grid, progress=lambda d, t, p: calls.append((d, t)))
    assert len(df) == 4 and calls[-1] == (4, 4)
    for col in ("cycles", "energy_pj", "error_pct", "speedup", "energy_rel", "kernel_mix"):
        assert col in df.columns
    assert (df["cycles"] > 0).all() and (df["energy_pj"] > 0).all()
    assert (df["error_pct"] >= 0).all()
    # a huge alpha makes error expensive: never more error than a tiny alpha at the same tile size
    for t in (16, 32):
        lo = df[(df.tile == t) & (df.alpha == 0.01)].error_pct.item()
        hi = df[(df.tile == t) & (df.alpha == 100.0)].error_pct.item()
        assert hi <= lo + 1e-12
    again = run_sweep(small_matrix, grid)
    pd.testing.assert_frame_equal(df.drop(columns="wall_s"), again.drop(columns="wall_s"))


def test_dask_scheduler_matches_local(small_matrix):
    grid = {"beta": [0.5, 2.0]}
    local = run_sweep(small_matrix, grid, scheduler="local")
    dask_df = run_sweep(small_matrix, grid, scheduler="dask")
    pd.testing.assert_frame_equal(local.drop(columns="wall_s"), dask_df.drop(columns="wall_s"))


def test_hardware_parameters_change_the_simulation(small_matrix):
    df = run_sweep(small_matrix, {"mac_lanes": [1, 16]})
    assert df.cycles.iloc[0] > df.cycles.iloc[1]


def test_save_and_load_round_trip(tmp_path, small_matrix):
    df = run_sweep(small_matrix, {"alpha": [1.0]})
    for name in ("s.csv", "s.parquet"):
        path = save_sweep(df, tmp_path / name)
        back = load_sweep(path)
        np.testing.assert_allclose(back["cycles"].to_numpy(), df["cycles"].to_numpy())
    back = load_sweep(io.BytesIO((tmp_path / "s.parquet").read_bytes()))
    assert len(back) == 1


@pytest.mark.parametrize("data, words", [
    (b"", "empty"),
    (b"a,b\n1,2\n", "not an akfviz sweep"),
    (b"PAR1garbage", "Could not read"),
])
def test_load_sweep_rejects_bad_files(data, words):
    with pytest.raises(akfviz.InputError, match=words):
        load_sweep(data)
