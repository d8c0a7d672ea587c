"""A plan of one kernel says so and how to see a mix (student probe, fifty-first session): on the
first open (MiniLM FFN, T = 32, α = β = 1) every tile gets QUANT8, so nothing is fused — fused =
unfused on the NPU page — and nothing said why or what to change. The Kernels page now says it and
offers an error budget at which the selector, on this very matrix, mixes kernels (computed, and
checked here by following it); the NPU page says why its two bars are equal."""
import re

from apptest_tree import ok, open_page

KERNELS = "pages/2_Kernels.py"


def _infos(at):
    return " ".join(i.value for i in at.info)


def _used(at):
    [m] = [m for m in at.metric if m.label == "kernels used"]
    return int(m.value)


def test_the_default_plan_says_it_runs_one_kernel_and_the_hint_gives_a_mix(app):
    at = open_page(app, KERNELS)
    ok(at)
    assert _used(at) == 1
    text = _infos(at)
    assert "Every tile runs QUANT8" in text and "nothing to fuse" in text
    m = re.search(r"with ε = ([0-9.]+) \(([0-9.]+) %\) and Granularity to \*\*(cluster|tile)\*\*", text)
    assert m, text
    budget, granularity = float(m.group(1)), m.group(3)
    assert float(m.group(2)) == round(100 * budget, 6)
    promised = int(re.search(r"that plan uses (\d+) kernels", text).group(1))
    # follow the hint: the page shows the mix it promised
    at.radio(key="w:mode").set_value("error").run()
    at.radio(key="w:gran").set_value(granularity).run()
    at.slider(key="w:budget").set_value(budget).run()
    ok(at)
    assert _used(at) == promised >= 2
    assert "Every tile runs" not in _infos(at)


def test_the_npu_page_says_why_fused_equals_unfused(app):
    at = open_page(app, "pages/3_NPU.py")
    ok(at)
    said = " ".join(c.value for c in at.caption)
    assert "runs one kernel (QUANT8)" in said and "fused and unfused are the same run" in said


def test_a_mixed_plan_gets_no_such_note(app):
    at = open_page(app, KERNELS, sample="powerlaw_4096", gran="tile")
    ok(at)
    assert _used(at) >= 2
    assert "Every tile runs" not in _infos(at)
    at.switch_page("pages/3_NPU.py").run()
    ok(at)
    assert "fused and unfused are the same run" not in " ".join(c.value for c in at.caption)


def test_the_error_budget_slider_reaches_a_tenth_of_a_percent(app):
    at = open_page(app, KERNELS, mode="error")
    ok(at)
    assert at.slider(key="w:budget").step == 0.001


def test_an_exact_one_kernel_plan_is_explained_the_other_way_round(app):
    # α = 10⁴ on the default: CSC everywhere, exact; there is no kernel of smaller error to speak of
    at = open_page(app, KERNELS, alpha="10000")
    ok(at)
    text = _infos(at)
    assert "Every tile runs CSC" in text and "no cheaper kernel's error is worth what it saves" in text
    assert "smaller error" not in text


def test_compare_says_when_akf_and_static_sparse_take_the_same_cycles(app):
    import akfviz
    from akfviz.viz import compare as vc
    df = akfviz.compare(akfviz.generate("llm", n=256, m=128, sparsity=0.9, seed=0), tile=32)
    same = df.copy()
    same.loc["AKF", "cycles"] = same.loc["StaticSparse", "cycles"]
    note = vc.same_makespan_note(same, "CSC")
    assert note.startswith(f"AKF and Static-sparse (CSC on every tile) finish in the same "
                           f"{same.loc['AKF', 'cycles']:,.0f} cycles here")
    other = df.copy()
    other.loc["AKF", "cycles"] = other.loc["StaticSparse", "cycles"] + 1
    assert vc.same_makespan_note(other, "CSC") == ""
    # the page, after following the Kernels hint (the re-probe's case: 726 cycles each)
    at = open_page(app, "pages/4_Compare.py", mode="error", budget="0.003", gran="tile")
    ok(at)
    assert any(i.value.startswith("AKF and Static-sparse (CSC on every tile) finish in the same 726 cycles")
               for i in at.info)
