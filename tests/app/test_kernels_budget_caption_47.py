"""The Kernels page says, in budget modes, how many plans the budget search measured and which step
gave the plan kept (forty-seventh session: the thinned front and the exchange step can keep a plan no
multiplier gives, so some units are then not at their least C for the reported α/β)."""
import akfviz
from akfviz.selection.budgets import STEP_NAMES, kept_step
from akfviz.workloads.samples import load_sample


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _budget_caption(at):
    return [c.value for c in at.caption if c.value.startswith("Budget search:")]


def test_budget_modes_name_the_step_that_gave_the_plan(app):
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    assert _budget_caption(app) == []                 # α / β mode: no budget search
    app.radio(key="w:gran").set_value("tile").run()
    app.radio(key="w:mode").set_value("resource").run()
    app.slider(key="w:rbudget").set_value(0.05).run()
    _ok(app)
    (caption,) = _budget_caption(app)
    # the same selection through the library: the caption names its kept step and counts its rows
    pa = akfviz.analyze(load_sample(app.session_state["sample"]), tile=int(app.session_state["tile"]))
    plan = akfviz.select(pa, granularity="tile", resource_budget=0.05, resource=app.session_state["resource"])
    trace = plan.selection.budget_trace
    step = kept_step(trace)
    assert step in STEP_NAMES
    assert caption.startswith(f"Budget search: {len(trace)} plans measured")
    assert f"the plan kept came from {STEP_NAMES[step]}" in caption
    assert ("need not hold the kernel of least C" in caption) == (step != "search")
