"""Findings of the fiftieth session's probe of the Learn page (docs/decisions.md, "Fiftieth
session"): its numbers and words against the library, the spec and the other pages."""
import re

import numpy as np
import pytest

import akfviz
from akfviz.npu.trace import tiny_case
from akfviz.viz import learn as vl

from apptest_tree import ok, open_page

LEARN = "pages/7_Learn.py"
SKIP_CASE = dict(lkernel="selector's choice", ln="12", lT="4", lgrid="2×2", ldens="0.2", lxd="1.0", lseed="7")


def _partial_table(app):
    return next(d.value for d in app.dataframe if "partial sums" in d.value.columns)


def test_partial_sums_name_each_tiles_own_kernel_when_the_selector_skips_tiles(app):
    """Before: the table read the plan's kernels by the work's tile number, which SKIP tiles leave:
    tiles (1, 2) and (2, 0) were labelled SKIP (with nonzero sums), (2, 1) and (2, 2) QUANT8."""
    tc = tiny_case(n=12, tile=4, grid=(2, 2), density=0.2, x_density=1.0, kernel=None, seed=7)
    kernels = np.asarray(tc.plan.tile_kernels, dtype=object)
    assert "SKIP" in set(kernels) and tc.work.n_tiles < kernels.size       # the case has dropped tiles
    open_page(app, LEARN, **SKIP_CASE)
    ok(app)
    table = _partial_table(app)
    want = [str(k) for k in kernels[tc.work.tile_index]]
    assert table["kernel"].tolist() == want
    assert "SKIP" not in set(table["kernel"])                              # SKIP tiles vanish (spec §6)
    assert table["(bi, bj)"].tolist() == [f"({b}, {c})" for b, c in zip(tc.work.bi, tc.work.bj)]


@pytest.mark.parametrize("preset", ["loihi-like", "edge-32x32"])
def test_selectors_choice_is_priced_for_the_traced_hardware_and_x(preset):
    """Before: the choice was priced on the default hardware for a dense x while the trace ran on
    the sidebar's preset: on loihi-like QUANT8D / QUANT8 against the selector's PRUNE25 / PRUNE50."""
    hw = akfviz.HardwareConfig.from_preset(preset)
    tc = tiny_case(n=12, tile=4, grid=(2, 2), density=0.35, x_density=0.5, kernel=None, seed=0, hw=hw)
    want = akfviz.select(akfviz.analyze(tc.A, tile=4), alpha=1.0, beta=1.0, fusion=False,
                         hw=hw.replace(rows=2, cols=2), rho_x=0.5)
    assert list(tc.plan.tile_kernels) == list(want.tile_kernels)
    assert tc.plan.relative_error == want.relative_error


def test_learn_names_changed_hardware_as_custom_and_says_what_applies(app):
    open_page(app, LEARN, preset="edge-32x32", hw_bw="8")
    ok(app)
    info = " ".join(i.value for i in app.info)
    assert "custom (preset edge-32x32, changed on the NPU page)" in info
    captions = " ".join(c.value for c in app.caption)
    assert "sample workload and tile size do not apply here" in captions
    assert "Selector's choice" not in captions                         # the default kernel is CSC
    app2 = type(app).from_file(app._script_path, default_timeout=600)
    open_page(app2, LEARN, **SKIP_CASE)
    ok(app2)
    assert "α = β = 1" in " ".join(c.value for c in app2.caption)


def test_learn_shows_what_the_kernels_cost_in_accuracy(app):
    open_page(app, LEARN, lkernel="LOWRANK1", ln="12", lT="4", lxd="1.0", lseed="2")
    ok(app)
    tc = tiny_case(n=12, tile=4, grid=(2, 2), density=0.35, x_density=1.0, kernel="LOWRANK1", seed=2)
    y, y_hat = tc.A @ tc.x, tc.A_hat @ tc.x
    out = np.linalg.norm(y_hat - y) / np.linalg.norm(y)
    text = next(c.value for c in app.caption if c.value.startswith("The kernels are"))
    assert f"{100 * tc.plan.relative_error:.3g} %" in text and f"{100 * out:.3g} %" in text
    app.query_params.clear()
    fresh = type(app).from_file(app._script_path, default_timeout=600)
    open_page(fresh, LEARN)                                                 # CSC: exact
    ok(fresh)
    assert any(c.value == "The kernels are exact here: Â = A, so Â x = A x." for c in fresh.caption)


def test_learn_formulas_include_the_setup_and_the_final_phase(app):
    open_page(app, LEARN)
    ok(app)
    text = " ".join(m.value for m in app.markdown) + " ".join(l.value for l in app.latex)
    assert "0. Setup" in text and r"\mathrm{setup\_cycles}" in text
    assert "final phase" in text and r"\mathrm{final\ MACs}" in text


def test_send_steps_draw_their_arrow_to_the_reduction_pe():
    """Before: the grid's caption promised an arrow for the current message, but a send had none."""
    tc = tiny_case(n=12, tile=4, grid=(2, 2), density=0.35, x_density=1.0, kernel="CSC", seed=0,
                   hw=akfviz.HardwareConfig.from_preset("loihi-like"))
    tr = tc.trace
    sends = [(k, s) for k, s in enumerate(tr.steps, 1) if s.kind == "send"]
    moving = [(k, s) for k, s in sends
              if int(tr.red_pe[tc.work.bi[s.tile]]) != s.pe]
    assert moving, "the case needs a send to another PE"
    k, s = moving[0]
    fig = vl.learn_grid(tr.state_at(k), tr, s)
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == 1
    C = tr.grid[1]
    q = int(tr.red_pe[tc.work.bi[s.tile]])
    (r0, c0), (r1, c1) = divmod(s.pe, C), divmod(q, C)
    assert (arrows[0].ax, arrows[0].ay, arrows[0].x, arrows[0].y) == (c0 + 0.5, r0 + 0.85, c1 + 0.5, r1 + 0.85)
    # a send to its own PE draws none
    local = [(k, s) for k, s in sends if int(tr.red_pe[tc.work.bi[s.tile]]) == s.pe]
    for k, s in local[:1]:
        assert not [a for a in vl.learn_grid(tr.state_at(k), tr, s).layout.annotations if a.showarrow]


def test_step_texts_count_in_the_right_number_and_say_what_a_lowrank_event_does():
    tc = tiny_case(n=12, tile=4, grid=(2, 3), density=0.9, x_density=0.9, kernel="LOWRANK1", seed=2,
                   hw=akfviz.HardwareConfig.from_preset("loihi-like"))
    texts = [s.text + " " + s.formula for s in tc.trace.steps]
    singular = re.compile(r"(?<![\d.])1 (hops|MACs|tiles|flits|decodes|partial sums)\b")
    assert not [t for t in texts if singular.search(t) or "(s)" in t]
    assert any(re.search(r"(?<![\d.])1 (hop|MAC|tile|flit|decode)\b", t) for t in texts)
    events = [s for s in tc.trace.steps if s.kind == "event"]
    assert events and all("updates the kernel's coefficients" in s.text and "final phase" in s.text
                          for s in events)
    assert not any("adds column" in s.text for s in events)
    csc = tiny_case(n=12, tile=4, grid=(2, 2), density=0.35, x_density=1.0, kernel="CSC", seed=0)
    assert all("adds column" in s.text for s in csc.trace.steps if s.kind == "event")
    one_hop = [s.text for s in csc.trace.steps if s.kind == "event" and s.text.endswith("1 hop)")]
    zero_hops = [s.text for s in csc.trace.steps if s.kind == "event" and s.text.endswith("0 hops)")]
    assert one_hop and zero_hops
