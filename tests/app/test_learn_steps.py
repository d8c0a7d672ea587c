"""The Learn page shows the state after steps 1 … k, never a later step's effect (akf-spec §7).

A held-out review found step 0 ("Press Next to start", "0 = nothing yet") already showing PE 0 with
"queue: x[0]@0", although step 1 is "source PE 0 injects the event x[0]": ``Trace.state_at(k)`` took
the time of step k + 1 and queued every event that had arrived by then, injected or not.
"""
import json
import re

import pytest

from akfviz.npu.hardware import HardwareConfig
from akfviz.npu.trace import tiny_case
from akfviz.viz import learn as vl

CASES = [dict(), dict(kernel="CSC", x_density=1.0, seed=5),
         dict(n=16, tile=4, grid=(3, 3), density=0.5, x_density=0.5, kernel="DENSE", seed=3),
         dict(n=12, tile=4, grid=(1, 2), density=0.4, x_density=0.7, kernel="CSC", seed=1,
              hw=HardwareConfig.from_preset("loihi-like"))]


def _check_state_after(tr, k, prev):
    st = tr.state_at(k)
    done = tr.steps[:k]
    n = len(tr.steps)
    want_time = 0 if k == 0 else (tr.steps[k - 1].start if k < n else tr.makespan)
    assert st["time"] == want_time, k
    injected = {s.column for s in done if s.kind == "inject"}
    served = {(s.tile, s.column) for s in done if s.kind == "event"}
    # exactly the events injected by a step done, arrived by now and not yet served by a step done
    want = sorted((s.pe, s.tile, s.column, s.arrival) for s in tr.steps if s.kind == "event"
                  and s.column in injected and (s.tile, s.column) not in served and s.arrival <= st["time"])
    got = sorted((p, u, j, a) for p, q in enumerate(st["queues"]) for (u, j, a) in q)
    assert got == want, k
    # an entry that is new at step k was put there by step k: its injection, or the clock reaching its arrival
    if prev is not None:
        old = {(p, u, j) for p, q in enumerate(prev["queues"]) for (u, j, _) in q}
        for p, q in enumerate(st["queues"]):
            for u, j, a in q:
                if (p, u, j) not in old:
                    step = tr.steps[k - 1]
                    assert (step.kind == "inject" and step.column == j) or a > prev["time"], (k, p, u, j, a)
    return st


@pytest.mark.parametrize("case", range(len(CASES)))
def test_state_at_step_k_is_the_state_after_steps_1_to_k(case):
    tr = tiny_case(**CASES[case]).trace
    first = tr.state_at(0)
    assert all(not q for q in first["queues"]), first["queues"]          # nothing injected, nothing queued
    assert first["time"] == 0 and not first["done"]
    prev = None
    for k in range(len(tr.steps) + 1):
        prev = _check_state_after(tr, k, prev)


def test_grid_figure_at_step_0_shows_no_queued_event():
    tr = tiny_case().trace
    assert any(s.kind == "event" and s.arrival == 0 for s in tr.steps)  # an event arrives at cycle 0
    fig = vl.learn_grid(tr.state_at(0), tr, None)
    boxes = [a.text for a in fig.layout.annotations if not a.showarrow]
    assert boxes and all("queue: empty" in t and "x[" not in t for t in boxes), boxes
    assert fig.layout.title.text.endswith("before step 1, cycle 0")


def test_grid_title_names_the_step_it_shows():
    # the first steps all start at cycle 0: the title says which step the picture is after
    tr = tiny_case().trace
    titles = [vl.learn_grid(tr.state_at(k), tr, tr.steps[k - 1]).layout.title.text for k in (1, 2)]
    assert titles[0].endswith(f"after step 1 of {len(tr.steps)}, cycle {tr.state_at(1)['time']}")
    assert titles[0] != titles[1]


# ---- the page ----------------------------------------------------------------------------------------------

@pytest.fixture
def at():
    from streamlit.testing.v1 import AppTest

    import pathlib

    app_py = pathlib.Path(__file__).resolve().parents[2] / "app.py"   # this checkout's app
    return AppTest.from_file(str(app_py), default_timeout=600)


def _grid_boxes(app):
    spec = next(s for s in (json.loads(c.proto.spec) for c in app.get("plotly_chart"))
                if "PE grid" in str(s["layout"].get("title", {}).get("text", "")))
    return [a["text"] for a in spec["layout"].get("annotations", []) if not a.get("showarrow")]


def test_learn_page_queues_only_injected_events(at):
    at.run()
    at.switch_page("pages/7_Learn.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="w:lstep").value == 0
    assert any("Press **Next** to start" in i.value for i in at.info)
    boxes = _grid_boxes(at)
    assert boxes and all("queue: empty" in t and "x[" not in t for t in boxes), boxes
    steps = next(d.value for d in at.dataframe if "what" in d.value.columns)
    n_steps = len(steps)
    for k in range(1, min(n_steps, 16) + 1):
        at.slider(key="w:lstep").set_value(k).run()
        assert not at.exception, [e.value for e in at.exception]
        done = steps[steps["#"] <= k]
        injected = set(done.loc[done["kind"] == "inject", "column"].astype(int))
        shown = {int(j) for t in _grid_boxes(at) for j in re.findall(r"x\[(\d+)\]@", t)}
        assert shown <= injected, (k, shown, injected)
