"""The performance table is cached by the hardware fields it reads (fiftieth session, a rerun-cost
probe: every Apply of the NPU page's form rebuilt it, 0.13–0.18 s, for the clock or the grid too)."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

import akfviz
from akfviz.selection import perftable as pt

T = 8
BASE = akfviz.HardwareConfig.from_preset("loihi-like")


def _other_value(name, value):
    if name == "preset":
        return "custom"
    if name == "energy":
        return akfviz.HardwareConfig.from_preset("horowitz-45nm").energy
    return value * 2


def _same_table(a, b):
    for f in ("coef", "linear", "domain", "floor", "overflow"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    pd.testing.assert_frame_equal(a.calibration, b.calibration, check_exact=True)
    pd.testing.assert_frame_equal(a.fit_error, b.fit_error, check_exact=True)


UNPRICED = [f.name for f in dataclasses.fields(akfviz.HardwareConfig) if f.name not in pt.PRICED_FIELDS]


def test_every_field_is_priced_or_named_as_not():
    names = {f.name for f in dataclasses.fields(akfviz.HardwareConfig)}
    assert set(pt.PRICED_FIELDS) <= names
    assert set(UNPRICED) == {"rows", "cols", "clock_hz", "hop_latency_cycles", "barrier_cycles", "reconfig_cycles",
                             "launch_cycles", "inject_cycles", "flit_bytes", "preset"}


@pytest.mark.parametrize("field", UNPRICED)
def test_a_field_left_out_of_the_key_leaves_the_calibration_as_it_is(field):
    # slow reference: calibrate itself, uncached, on the changed configuration
    other = BASE.replace(**{field: _other_value(field, getattr(BASE, field))})
    assert other.config_hash() != BASE.config_hash() and pt.pricing_hash(other) == pt.pricing_hash(BASE)
    _same_table(pt.calibrate(BASE, T), pt.calibrate(other, T))


@pytest.mark.parametrize("field", pt.PRICED_FIELDS)
def test_a_priced_field_changes_the_key(field):
    other = BASE.replace(**{field: _other_value(field, getattr(BASE, field))}, preset="custom")
    assert pt.pricing_hash(other) != pt.pricing_hash(BASE)


def test_another_clock_or_grid_reuses_the_calibration_under_its_own_label(monkeypatch):
    base = pt.performance_table(BASE, T, rho_x=0.5)
    calls = []
    real = pt.calibrate
    monkeypatch.setattr(pt, "calibrate", lambda *a, **k: calls.append(1) or real(*a, **k))
    other = BASE.replace(clock_hz=BASE.clock_hz / 2, rows=16, cols=8)
    table = pt.performance_table(other, T, rho_x=0.5)
    assert calls == []                                                  # not calibrated again
    assert table.hw_hash == other.config_hash() and base.hw_hash == BASE.config_hash()
    assert table.coef is base.coef and not table.coef.flags.writeable   # the same read-only arrays
    assert pt.performance_table(other, T, rho_x=0.5) is table           # and the same object next time
    pt.performance_table(BASE.replace(setup_cycles=BASE.setup_cycles + 1), T, rho_x=0.5)
    assert calls == [1]                                                 # a priced field: calibrated


def test_the_prediction_check_accepts_the_relabelled_table():
    A = akfviz.generate("llm", n=64, seed=0)
    pa = akfviz.analyze(A, tile=T)
    other = BASE.replace(clock_hz=BASE.clock_hz * 3)
    table = pt.performance_table(other, T)
    a = pt.prediction_error(pa, other, table=table)
    b = pt.prediction_error(pa, BASE)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    plan = akfviz.select(pa, hw=other)
    assert list(plan.tile_kernels) == list(akfviz.select(pa, hw=BASE).tile_kernels)
