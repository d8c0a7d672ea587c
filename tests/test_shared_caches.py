"""Objects handed out by in-process caches cannot be edited into later results (akfviz.frozen)."""
import numpy as np
import pytest

import akfviz
from akfviz.frozen import read_only
from akfviz.npu.simulate import plan_mapping
from akfviz.selection.perftable import dense_resource, performance_table


@pytest.fixture(scope="module")
def plan():
    A = akfviz.generate("clustered", n=256, seed=1)
    return akfviz.select(akfviz.analyze(A, tile=32), alpha=1.0, beta=1.0)


def test_the_cached_placement_is_read_only_and_later_runs_unchanged(plan):
    before = akfviz.simulate(plan)
    mp = plan_mapping(plan)
    with pytest.raises(ValueError, match="read-only"):
        mp.pe[:] = mp.pe[0]
    with pytest.raises(ValueError, match="read-only"):
        mp.red[0] = 1
    mine = mp.pe.copy()               # a private copy is writable
    mine[:] = 0
    after = akfviz.simulate(plan)
    assert after.cycles == before.cycles and after.energy_pj == before.energy_pj


def test_the_cached_performance_table_is_read_only(plan):
    table = performance_table(None, 32)
    assert table is plan.selection.table
    for name in ("coef", "linear", "domain", "floor", "overflow"):
        arr = getattr(table, name)
        with pytest.raises(ValueError, match="read-only"):
            arr.flat[0] = 0


def test_dense_resource_returns_a_copy(plan):
    d = dense_resource((256, 256), 32)
    d["energy"] *= 10
    assert dense_resource((256, 256), 32)["energy"] == pytest.approx(d["energy"] / 10)


def test_read_only_reaches_arrays_in_dicts_and_tuples():
    class Box:
        pass

    b = Box()
    b.a, b.d, b.t, b.x = np.zeros(2), {"k": np.zeros(2), "s": 1}, (np.zeros(2), 3), 5
    assert read_only(b) is b
    for arr in (b.a, b.d["k"], b.t[0]):
        assert not arr.flags.writeable
