"""A sweep file carries what reproduces it (architect probe, fifty-first session): the table's
metadata held the grid, the base settings, the seed and the matrix's shape, but not the hardware
it started from, the LSH settings of every point's analysis, nor which matrix it was. Now it
names all three, and running the sweep again from the metadata alone gives the same table."""
import json

import numpy as np
import pandas as pd
import pytest

import akfviz
from akfviz.analysis.lsh import LSHConfig
from akfviz.cli import frame_json, without_wall_clock
from akfviz.dse.sweep import load_sweep, run_sweep, save_sweep
from akfviz.npu.hardware import HardwareConfig
from akfviz.workloads.validate import matrix_sha256


@pytest.fixture(scope="module")
def swept():
    A = akfviz.generate("powerlaw", n=192, seed=3)
    hw = HardwareConfig(rows=32, cols=32, sram_bytes_per_pe=4096)
    lsh = {"num_hashes": 16, "bands": 4, "grid": 4, "seed": 7}
    df = run_sweep(A, {"beta": [0.1, 10.0]}, base={"tile": 16}, hw=hw, lsh=lsh, seed=5,
                   baselines=True, static_kernel="BITMAP")
    return A, hw, lsh, without_wall_clock(df)


def test_the_metadata_names_the_hardware_lsh_and_matrix(swept):
    A, hw, lsh, df = swept
    meta = df.attrs["akfviz_sweep"]
    assert meta["hardware"] == json.loads(json.dumps(hw.to_plain()))
    assert meta["hardware"]["rows"] == 32 and meta["hardware"]["preset"] == "custom"
    assert meta["hardware_sha256"] == hw.config_hash()
    assert meta["lsh"] == LSHConfig.from_any(lsh).to_dict()
    assert meta["matrix_sha256"] == matrix_sha256(A)
    assert meta["matrix_sha256"] != matrix_sha256(akfviz.generate("powerlaw", n=192, seed=4))


def test_the_metadata_alone_runs_the_same_sweep_again(swept):
    A, _, _, df = swept
    meta = df.attrs["akfviz_sweep"]
    again = run_sweep(A, meta["grid"], base=meta["base"], hw=HardwareConfig.from_plain(meta["hardware"]),
                      lsh=meta["lsh"], seed=meta["seed"], baselines=meta["baselines"],
                      static_kernel=meta["static_kernel"])
    pd.testing.assert_frame_equal(without_wall_clock(again), df)


def test_parquet_and_json_keep_the_metadata_csv_cannot(swept, tmp_path):
    _, _, _, df = swept
    back = load_sweep(save_sweep(df, tmp_path / "s.parquet"))
    assert back.attrs["akfviz_sweep"] == json.loads(json.dumps(df.attrs["akfviz_sweep"]))
    doc = json.loads(frame_json(df))
    assert doc["attrs"]["akfviz_sweep"]["hardware_sha256"] == df.attrs["akfviz_sweep"]["hardware_sha256"]
    assert load_sweep(save_sweep(df, tmp_path / "s.csv")).attrs == {}


def test_matrix_sha256_reads_content_not_index_width():
    A = akfviz.generate("banded", n=64, seed=0)
    B = A.copy()
    B.indices = B.indices.astype(np.int64)
    B.indptr = B.indptr.astype(np.int64)
    assert matrix_sha256(A) == matrix_sha256(B)
    C = A.copy()
    C.data[0] += 1.0
    assert matrix_sha256(C) != matrix_sha256(A)
    assert matrix_sha256(A[:, :63]) != matrix_sha256(A)
