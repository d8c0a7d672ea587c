"""Details of the app's caches (akfviz/app_cache.py) and page shell (akfviz/app_shell.py) that a
mutation probe changed without a failing test: the table digest's column names and array cells,
the performance table's and the fused simulation's cache keys, the sidebar's way back to the
default sample, the dropped-energy-table note, and the layout helpers' defaults."""
import types

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import akfviz
from akfviz import app_cache as C
from akfviz import app_shell as SH
from akfviz import app_state as S
from akfviz.npu.simulate import random_input

from conftest import APP

HW = akfviz.HardwareConfig(rows=8, cols=8)


# --------------------------------------------------------------------------- frame_digest
def test_frame_digest_tells_column_names_apart():
    """Two sweeps with the same numbers under other column names get other keys (the figures'
    axis titles come from the names, so a shared key would show the first table's titles)."""
    a = pd.DataFrame({"cycles": [1.0, 2.0], "energy_pj": [3.0, 4.0]})
    b = pd.DataFrame({"cycles": [1.0, 2.0], "error_pct": [3.0, 4.0]})
    assert C.frame_digest(a) != C.frame_digest(b)
    assert C.frame_digest(a) == C.frame_digest(a.copy())


def test_frame_digest_keeps_every_digit_of_array_cells():
    """Array cells (unhashable: the JSON path) differing in the 12th digit give different keys;
    ``str`` of an array keeps 8 digits, so such tables shared a key."""
    a = pd.DataFrame({"mix": [np.array([0.123456789012, 1.0])], "n": [1]})
    b = pd.DataFrame({"mix": [np.array([0.123456789013, 1.0])], "n": [1]})
    assert str(a["mix"][0]) == str(b["mix"][0])          # so a text-of-the-array key would collide
    assert C.frame_digest(a) != C.frame_digest(b)
    assert C.frame_digest(a) == C.frame_digest(pd.DataFrame({"mix": [np.array([0.123456789012, 1.0])],
                                                             "n": [1]}))


# --------------------------------------------------------------------------- cache keys
def test_performance_table_cache_follows_rho_x():
    """The Kernels page's performance table is priced at the plan's ρ_x: the cached table at
    ρ_x = 0.3 is the library's table at 0.3, not the one at ρ_x = 1."""
    from akfviz.selection.perftable import performance_table

    dense = C.perftable_cached("hw8", HW, 16, 1.0)
    sparse = C.perftable_cached("hw8", HW, 16, 0.3)
    ref = performance_table(HW, 16, rho_x=0.3)
    assert sparse.rho_x == 0.3 and dense.rho_x == 1.0
    np.testing.assert_array_equal(sparse.coef, ref.coef)
    assert not np.array_equal(sparse.coef, dense.coef)      # so the check above can fail


def test_fused_simulation_cache_follows_the_iterations():
    """The fused (recorded) simulation cached for one iteration is not returned for three: the
    result equals the library's own run of three iterations."""
    A = akfviz.generate("stencil5", n=16, seed=0)
    pa = akfviz.analyze(A, tile=16)
    plan = akfviz.select(pa, hw=HW)
    x = random_input(A.shape[1], 1.0, 0)
    one = C.simulate_cached("it", plan, "hw8", HW, "x", x, fused=True, iterations=1)
    three = C.simulate_cached("it", plan, "hw8", HW, "x", x, fused=True, iterations=3)
    ref = akfviz.simulate(plan, HW, x=x, iterations=3, fused=True, record=False)
    assert three.cycles == ref.cycles and three.energy_total_pj == ref.energy_total_pj
    assert three.cycles > one.cycles


# --------------------------------------------------------------------------- the sidebar
def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


def test_back_to_the_default_sample_from_a_generated_workload():
    """A generated workload offers "Back to the default sample", which loads the default sample
    (not the sample picked before generating)."""
    other = next(n for n in S.sample_names() if n != S.default_sample())
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params.update({"src": "gen", "sample": other})
    at.run()
    _ok(at)
    assert at.session_state[S._WL].source == "gen"
    back = [b for b in at.sidebar.button if b.label == "Back to the default sample"]
    assert len(back) == 1
    back[0].click().run()
    _ok(at)
    wl = at.session_state[S._WL]
    assert (wl.source, wl.label) == ("sample", S.default_sample())
    assert at.session_state["src"] == "sample" and at.session_state["sample"] == S.default_sample()


def test_the_dropped_energy_table_note_is_shown_once():
    """The note that an edited energy table no longer applies appears on the run after the preset
    change and not on every later run (the flag is taken, not only read)."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.session_state[S.ENERGY_DROPPED] = "horowitz-45nm"
    at.run()
    _ok(at)
    assert sum("no longer applies" in i.value for i in at.sidebar.info) == 1
    at.run()
    _ok(at)
    assert not any("no longer applies" in i.value for i in at.sidebar.info)


# --------------------------------------------------------------------------- layout helpers
class _Recorder:
    """A stand-in for a Streamlit container: records ``container`` and ``metric`` calls."""

    def __init__(self):
        self.calls = []

    def container(self, **kwargs):
        self.calls.append(("container", kwargs))
        return _Recorder()

    def metric(self, *args, **kwargs):
        self.calls.append(("metric", args, kwargs))


def test_flex_row_children_grow_by_default(monkeypatch):
    """Without ``grow`` every container gets ``flex: 1 1 <base>px`` (grow 1: the row's rest is
    shared); a grow of 0 would leave each figure at its minimum width."""
    html = []
    fake = types.SimpleNamespace(html=html.append, container=lambda **kw: _Recorder())
    monkeypatch.setattr(SH, "st", fake)
    boxes = SH.flex_row("row", (400, 250))
    assert len(boxes) == 2
    (style,) = html
    assert ".st-key-row > div:nth-child(1) { flex: 1 1 400px !important;" in style
    assert ".st-key-row > div:nth-child(2) { flex: 1 1 250px !important;" in style
    SH.flex_row("two", (300,), grow=(3,))
    assert "flex: 3 1 300px" in html[1]


def test_a_metric_slot_is_sized_to_its_content_unless_told():
    """``slot.metric`` passes ``width="content"`` (so labels are not cut) and keeps a width the
    caller gives."""
    box = _Recorder()
    slot = SH._MetricSlot(box)
    slot.metric("cycles", 12)
    slot.metric("energy", 3, width="stretch")
    assert box.calls == [("metric", ("cycles", 12), {"width": "content"}),
                         ("metric", ("energy", 3), {"width": "stretch"})]
