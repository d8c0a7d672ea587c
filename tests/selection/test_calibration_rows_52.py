"""Calibration rows name their synthetic tile (export audit): 1,392 of 2,448 rows of the default
table's calibration export were exact duplicates — the seeded repeats of a structured class price
the same — with nothing to tell them apart."""
import numpy as np

from akfviz.npu.hardware import HardwareConfig
from akfviz.selection import perftable as ptab


def test_rows_are_unique_by_kernel_class_and_tile():
    cal = ptab.calibrate(HardwareConfig(), 16, seed=0).calibration
    assert {"tile", "repeat"} <= set(cal.columns)
    assert not cal.duplicated(["kernel", "class", "tile"]).any()
    assert not cal.duplicated().any()
    assert set(cal["repeat"]) == set(range(ptab.N_REPEATS))
    # a tile keeps its density and made_as wherever it appears
    per_tile = cal.groupby("tile").agg(d=("density", "nunique"), m=("made_as", "nunique"))
    assert (per_tile["d"] == 1).all() and (per_tile["m"] == 1).all()
    assert np.array_equal(np.sort(cal["tile"].unique()), np.arange(cal["tile"].max() + 1))
