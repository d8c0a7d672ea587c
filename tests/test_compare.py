"""Baselines and the paper's table (akf-spec §8): akfviz.compare, PAPER_CLAIMS, paper_comparison."""
import numpy as np
import pandas as pd
import pytest

import akfviz
from akfviz.compare import COLUMNS, PAPER_CLAIMS, PLANS, compare, paper_comparison
from akfviz.errors import InputError


@pytest.fixture(scope="module")
def llm():
    A = akfviz.generate("llm", n=384, seed=1, prune="magnitude", sparsity=0.9)
    return A, akfviz.analyze(A, tile=32)


@pytest.fixture(scope="module")
def df(llm):
    A, pa = llm
    return compare(A, analysis=pa, mapping="greedy")


def test_index_and_columns(df):
    assert list(df.index) == list(PLANS)
    for c in ("cycles", "speedup", "energy_pj", "energy_rel", "error_pct"):
        assert c in df.columns
    assert list(df.columns) == COLUMNS
    assert np.all(df[["cycles", "energy_pj", "macs"]].to_numpy(np.float64) > 0)


def test_dense_is_the_reference(df):
    assert df.loc["Dense", "speedup"] == 1.0 and df.loc["Dense", "energy_rel"] == 1.0
    assert df.loc["Dense", "error_pct"] == 0.0 and df.loc["BlockSparse", "error_pct"] == 0.0
    np.testing.assert_allclose(df["speedup"], df.loc["Dense", "cycles"] / df["cycles"])
    np.testing.assert_allclose(df["energy_rel"], df["energy_pj"] / df.loc["Dense", "energy_pj"])


def test_akf_beats_dense_on_pruned_llm(df):
    # issue 4: a 90 %-pruned LLM-like matrix; the reasons are in the counters
    assert df.loc["AKF", "speedup"] > 1.0
    assert df.loc["AKF", "energy_rel"] < 1.0
    assert df.loc["AKF", "macs"] < df.loc["Dense", "macs"]
    assert df.loc["AKF", "payload_bytes"] < df.loc["Dense", "payload_bytes"]
    assert df.loc["StaticSparse", "error_pct"] == 0.0  # CSC is exact
    assert df.loc["StaticSparse", "kernel_mix"] == "CSC 100 %"


def test_error_pct_is_the_plans_relative_error(llm, df):
    A, pa = llm
    plan = akfviz.select(pa)
    assert df.loc["AKF", "error_pct"] == pytest.approx(100 * plan.relative_error, rel=1e-12)


def test_static_kernel_is_selectable_and_lossy_error_reported(llm):
    A, pa = llm
    d = compare(A, analysis=pa, static_kernel="NM2:4", mapping="greedy")
    assert d.loc["StaticSparse", "kernel_mix"] == "NM2:4 100 %"
    assert d.loc["StaticSparse", "error_pct"] > 0  # magnitude pruning does not comply with 2:4
    with pytest.raises(InputError):
        compare(A, analysis=pa, static_kernel="NOPE")


def test_deterministic(llm, df):
    A, pa = llm
    again = compare(A, analysis=pa, mapping="greedy")
    pd.testing.assert_frame_equal(df, again)


def test_bad_inputs(llm):
    A, pa = llm
    with pytest.raises(InputError):
        compare(A, analysis=pa, tile=16)
    with pytest.raises(InputError):
        compare(A, x=np.ones(3), analysis=pa)
    with pytest.raises(InputError):
        compare(None)
    with pytest.raises(InputError):
        compare(A, hw="fast", analysis=pa)
    import scipy.sparse as sp
    with pytest.raises(InputError, match="toarray"):
        compare(A, x=sp.csr_array(np.ones((1, A.shape[1]))), analysis=pa)


def test_progress_reports_every_step_in_order_and_changes_nothing(llm, df):
    from akfviz.compare import STEPS

    A, pa = llm
    calls = []
    again = compare(A, analysis=pa, mapping="greedy", progress=lambda *a: calls.append(a))
    total = len(STEPS)
    assert calls == [(k, total, STEPS[k]) for k in range(total)] + [(total, total, "Done")]
    pd.testing.assert_frame_equal(df, again)
    with pytest.raises(InputError, match="progress"):
        compare(A, analysis=pa, progress="yes")


def test_activation_sparsity_reduces_events(llm, df):
    A, pa = llm
    sparse_x = compare(A, analysis=pa, rho_x=0.3, mapping="greedy")
    assert sparse_x.loc["AKF", "events"] < df.loc["AKF", "events"]


def test_huge_numbers_are_refused_before_any_plan_is_simulated(llm, monkeypatch):
    """Held-out probe: compare(A, alpha=10**400) simulated three plans, then raised OverflowError
    in the selector; rho_x=10**400 raised it at once."""
    import sys

    def boom(*args, **kwargs):
        raise AssertionError("a plan was simulated before the arguments were checked")

    monkeypatch.setattr(sys.modules["akfviz.compare"], "plan_row", boom)
    A, pa = llm
    for kw, words in ((dict(alpha=10**400), "alpha must be a finite number ≥ 0, got a 401-digit number."),
                      (dict(beta=-10**400), "beta must be a finite number ≥ 0, got a negative 401-digit number."),
                      (dict(rho_x=10**400), "rho_x (activation density) must be in (0, 1], got a 401-digit number.")):
        with pytest.raises(InputError) as err:
            compare(A, analysis=pa, **kw)
        assert str(err.value) == words


def test_the_busiest_pes_reduce_share_counts_its_reduce_cycles(llm):
    from akfviz.npu.simulate import simulate_dense

    A, pa = llm
    hw = akfviz.HardwareConfig(rows=8, cols=8, reduce_cycles=3)
    table = compare(A, hw=hw, analysis=pa, mapping="greedy")
    for name in ("Dense", "AKF"):
        plan = (akfviz.select(pa, hw=hw) if name == "AKF" else None)
        res = (akfviz.simulate(plan, hw, mapping="greedy") if plan is not None else
               simulate_dense(A.shape, 32, hw, mapping="greedy"))
        k = int(np.argmax(res.counters["busy"]))
        want = 3.0 * float(res.counters["reduce_adds"][k])
        assert want > 0
        assert table.loc[name, "busiest_pe_reduce"] == want


def test_the_akf_row_is_the_plan_selected_at_the_given_rho_x(llm):
    A, pa = llm
    table = compare(A, analysis=pa, mapping="greedy", rho_x=0.3)
    sel = table.attrs["akf_selection"]
    assert sel["rho_x"] == 0.3
    from akfviz.compare import kernel_mix_of

    at_03 = akfviz.select(pa, rho_x=0.3)
    assert table.loc["AKF", "kernel_mix"] == kernel_mix_of(at_03)
    assert table.loc["AKF", "error_pct"] == 100.0 * at_03.relative_error


def test_paper_claims_and_comparison(df):
    assert list(PAPER_CLAIMS.index) == list(PLANS)
    assert list(PAPER_CLAIMS["speedup"]) == [1.0, 1.8, 2.5, 3.5]
    assert list(PAPER_CLAIMS["energy_table"]) == [1.0, 1.3, 1.6, 1.2]
    assert PAPER_CLAIMS.loc["AKF", "energy_text"] == 0.8
    assert np.isnan(PAPER_CLAIMS.loc["Dense", "error_pct"])
    pc = paper_comparison(df)
    assert list(pc.index) == list(PLANS)
    np.testing.assert_allclose(pc["speedup_measured"], df["speedup"])
    np.testing.assert_allclose(pc["error_pct_measured"], df["error_pct"])
    for plan in PLANS[1:]:
        note = pc.loc[plan, "note"]
        assert f"{df.loc[plan, 'speedup']:.3g}×" in note  # computed from the numbers
        assert f"{df.loc[plan, 'energy_rel']:.3g}× Dense" in note
    with pytest.raises(InputError):
        paper_comparison(df.drop(index="AKF"))


def test_akfviz_compare_is_callable_whatever_the_import_order(llm):
    import akfviz.compare as mod

    A, pa = llm
    assert callable(akfviz.compare) and callable(mod)
    assert akfviz.compare.PAPER_CLAIMS is PAPER_CLAIMS
    assert akfviz.compare.paper_comparison is paper_comparison
    d = mod(A, analysis=pa, mapping="greedy")  # the module forwards to the function
    assert list(d.index) == list(PLANS)


def test_a_given_plan_is_the_akf_row_and_every_x_is_the_same_one(llm):
    """The app's pages once simulated two different things at rho_x < 1: compare drew its x one
    way and simulate another, and compare selected its own plan (α/β only)."""
    from akfviz.npu.simulate import random_input

    A, pa = llm
    hw = akfviz.HardwareConfig(rows=16, cols=16)
    plan = akfviz.select(pa, error_budget=0.01, hw=hw, rho_x=0.25)
    x = random_input(A.shape[1], 0.25, seed=0)
    assert np.count_nonzero(x) == round(0.25 * A.shape[1])
    np.testing.assert_array_equal(x, random_input(A.shape[1], 0.25, seed=0))
    direct = akfviz.simulate(plan, hw, x=x, mapping="greedy")
    by_rho = akfviz.simulate(plan, hw, rho_x=0.25, mapping="greedy")
    assert by_rho.cycles == direct.cycles and by_rho.events == direct.events
    df = compare(A, hw=hw, rho_x=0.25, plan=plan, mapping="greedy")
    row = df.loc["AKF"]
    assert row["cycles"] == direct.cycles and row["events"] == direct.events and row["macs"] == direct.macs
    assert row["error_pct"] == pytest.approx(100 * plan.relative_error)
    assert df.attrs["akf_selection"]["mode"] != "weights"  # the budget plan, not a fresh α/β selection
    other = akfviz.analyze(A, tile=16)
    with pytest.raises(InputError, match="another analysis"):
        compare(A, hw=hw, plan=plan, analysis=other)
    with pytest.raises(InputError, match="FusionPlan"):
        compare(A, plan="AKF")


def test_random_input_density_edges():
    from akfviz.npu.simulate import random_input

    assert np.count_nonzero(random_input(1000, 0.0)) == 0
    assert np.count_nonzero(random_input(1000, 1e-6)) == 1       # at least one when rho > 0
    assert np.count_nonzero(random_input(1000, 1.0)) == 1000
    X = random_input(50, 0.5, seed=2, batch=3)
    assert X.shape == (50, 3) and (np.count_nonzero(X, axis=0) == 25).all()
    np.testing.assert_array_equal(X[:, 0], random_input(50, 0.5, seed=2))


@pytest.mark.parametrize("seed", [-1, 2**63, 1.5, True, "0", None])
def test_seeds_outside_the_range_are_input_errors_everywhere(seed):
    import akfviz
    from akfviz.dse.sweep import run_sweep
    from akfviz.npu.simulate import random_input

    A = akfviz.generate("uniform", n=64, density=0.05, seed=0)
    pa = akfviz.analyze(A, tile=16)
    for call in (lambda: akfviz.compare(A, tile=16, seed=seed), lambda: akfviz.select(pa, seed=seed),
                 lambda: run_sweep(A, {"alpha": [1.0]}, seed=seed), lambda: random_input(64, 1.0, seed)):
        with pytest.raises(akfviz.InputError, match="seed must be a whole number between 0 and"):
            call()


def test_the_dense_row_uses_the_same_mapping_and_seed_as_the_other_plans(llm):
    from akfviz.npu.hardware import HardwareConfig
    from akfviz.npu.simulate import random_input, simulate_dense

    A, pa = llm
    hw = HardwareConfig(rows=3, cols=5)
    x = random_input(A.shape[1], 1.0, 5)
    for mapping in ("greedy", "anneal"):
        df = compare(A, hw=hw, analysis=pa, mapping=mapping, seed=5)
        ref = simulate_dense(A.shape, pa.tile, hw, x=x, mapping=mapping, seed=5, record=False)
        assert df.loc["Dense", "cycles"] == ref.cycles
    # on this crowded grid the two mappings place the Dense tiles differently
    assert compare(A, hw=hw, analysis=pa, mapping="greedy", seed=5).loc["Dense", "cycles"] != \
        compare(A, hw=hw, analysis=pa, mapping="anneal", seed=5).loc["Dense", "cycles"]


def test_the_note_says_what_the_makespan_is_spent_on():
    """A student could not tell why 10 % of Dense's MACs gave only 1.11×: the note now gives the busiest
    PE's work and its share of partial-sum reduction, from the simulation's own counters."""
    from akfviz.compare import paper_comparison

    A = akfviz.generate("llm", n=256, m=128, sparsity=0.9, seed=3)
    hw = akfviz.HardwareConfig()
    df = akfviz.compare(A, hw=hw, tile=32)
    plan = akfviz.select(akfviz.analyze(A, tile=32), hw=hw)
    res = akfviz.simulate(plan, hw)
    busy = np.asarray(res.counters["busy"])
    k = int(np.argmax(busy))
    assert df.loc["AKF", "busiest_pe_busy"] == busy[k]
    assert df.loc["AKF", "busiest_pe_reduce"] == res.counters["reduce_adds"][k] * hw.reduce_cycles
    assert (df["busiest_pe_busy"] <= df["cycles"]).all()
    note = paper_comparison(df).loc["AKF", "note"]
    share = 100 * df.loc["AKF", "busiest_pe_reduce"] / df.loc["AKF", "busiest_pe_busy"]
    assert (f"of its makespan of {df.loc['AKF', 'cycles']:,.0f} cycles, the busiest PE works "
            f"{df.loc['AKF', 'busiest_pe_busy']:,.0f} cycles ({share:.0f} % of them adding partial sums") in note


def test_a_matrix_wider_than_the_dense_baseline_takes_still_compares_the_other_plans(monkeypatch):
    """Probe (held-out files): load() accepts 50M columns, but the Dense baseline's engine takes at
    most DENSE_MAX_ROUTES; compare refused the whole comparison. Now the Dense row is NaN with its
    reason and the other three plans are simulated."""
    import scipy.sparse as sp

    from akfviz.npu import simulate as sim_module

    A = sp.random_array((8, 300), density=0.2, random_state=4, format="csr")
    full = akfviz.compare(A, tile=8)
    monkeypatch.setattr(sim_module, "DENSE_MAX_ROUTES", 256)
    df = akfviz.compare(A, tile=8)
    assert np.isnan(df.loc["Dense", ["cycles", "energy_pj", "macs"]].astype(float)).all()
    assert "300 columns" in df.loc["Dense", "kernel_mix"] and "256" in df.attrs["dense_skipped"]
    assert np.isnan(df["speedup"]).all() and np.isnan(df["energy_rel"]).all()
    for plan in ("BlockSparse", "StaticSparse", "AKF"):      # the same simulations as without the limit
        assert df.loc[plan, "cycles"] == full.loc[plan, "cycles"]
        assert df.loc[plan, "energy_pj"] == full.loc[plan, "energy_pj"]
    notes = akfviz.compare.paper_comparison(df)["note"]
    assert notes["Dense"].startswith("Dense baseline not simulated")
    assert "speedup" not in notes["AKF"].split(";")[0]        # no ratio to a Dense that did not run


def test_compare_is_its_four_plan_rows_and_their_table(llm):
    """The app builds the comparison row by row (so a new Static-sparse kernel re-simulates that
    plan alone); the rows and ``table_from_rows`` give exactly what ``compare`` gives."""
    from akfviz.compare import plan_row, table_from_rows
    from akfviz.npu.simulate import random_input

    A, pa = llm
    hw = akfviz.HardwareConfig(rows=16, cols=16)
    plan = akfviz.select(pa, hw=hw, rho_x=0.5)
    whole = compare(A, hw=hw, rho_x=0.5, plan=plan, static_kernel="BITMAP", mapping="greedy", seed=3)
    x = random_input(A.shape[1], 0.5, 3)
    rows = {w: plan_row(w, pa, hw, x, seed=3, mapping="greedy", static_kernel="BITMAP", plan=plan)
            for w in PLANS}
    pd.testing.assert_frame_equal(table_from_rows(rows, static_kernel="BITMAP", hw=hw, akf=plan), whole)
    assert whole.loc["StaticSparse", "kernel_mix"].startswith("BITMAP 100")
    with pytest.raises(InputError, match="one of Dense"):
        plan_row("Sparse", pa, hw, x)
    with pytest.raises(InputError, match="FusionPlan"):
        plan_row("AKF", pa, hw, x)


# ---- held-out mutation probe (dse): values and words of the comparison checked against hand references
def test_output_error_pct_is_a_percentage_of_the_output_on_x():
    """output_error_pct = 100 · ‖A x − Â x‖ / ‖A x‖ on the comparison's own x (a percentage, as
    error_pct), computed here from the plans' matvec."""
    from akfviz.compare import plan_row
    from akfviz.execute.plan import FusionPlan

    A = akfviz.generate("uniform", n=192, density=0.05, seed=1)
    pa = akfviz.analyze(A, tile=16)
    x = np.random.default_rng(7).standard_normal(A.shape[1])
    df = compare(A, analysis=pa, tile=16, x=x, mapping="greedy", static_kernel="NM2:4")
    ax = A @ x
    for name, plan in (("AKF", akfviz.select(pa)),
                       ("StaticSparse", FusionPlan(pa, np.full(pa.n_tiles, "NM2:4", dtype=object)))):
        want = 100.0 * np.linalg.norm(ax - plan.matvec(x)) / np.linalg.norm(ax)
        assert want > 0.1, name  # the plan is approximate: a fraction and a percentage differ
        assert df.loc[name, "output_error_pct"] == pytest.approx(want, rel=1e-9), name
    assert df.loc["Dense", "output_error_pct"] == 0.0 == plan_row("Dense", pa, akfviz.HardwareConfig(), x)[
        "output_error_pct"]


def test_an_analysis_of_another_shape_than_a_is_refused():
    A = akfviz.generate("uniform", n=128, density=0.05, seed=1)
    B = akfviz.generate("uniform", n=96, density=0.05, seed=1)
    with pytest.raises(InputError, match="shape"):
        compare(B, analysis=akfviz.analyze(A, tile=16), tile=16)


def test_a_matrix_exactly_as_wide_as_the_dense_limit_gets_its_dense_row(monkeypatch):
    """The limit is inclusive (simulate_dense takes DENSE_MAX_ROUTES columns): at exactly that width
    the Dense row is simulated, not skipped."""
    import scipy.sparse as sp

    from akfviz.npu import simulate as sim_module

    A = sp.random_array((8, 300), density=0.2, random_state=4, format="csr")
    full = akfviz.compare(A, tile=8)
    monkeypatch.setattr(sim_module, "DENSE_MAX_ROUTES", 300)
    df = akfviz.compare(A, tile=8)
    assert "dense_skipped" not in df.attrs
    assert df.loc["Dense", "cycles"] == full.loc["Dense", "cycles"] > 0


def test_the_dense_row_payload_is_every_slot_of_the_dense_baseline():
    """The Dense row reports the payload of the Dense baseline's work, every tile slot with edge
    tiles (200 is not a multiple of 16); the per-tile bytes, routing entries included, are
    hand-counted in tests/npu/test_npu_model_details.py."""
    from akfviz.npu.tilework_builders import dense_tilework

    A = akfviz.generate("uniform", n=200, density=0.05, seed=1)
    df = compare(A, tile=16, mapping="greedy")
    dw = dense_tilework(A.shape, 16)
    assert dw.payload_bytes.size == 13 * 13
    assert df.loc["Dense", "payload_bytes"] == int(dw.payload_bytes.sum())


def _note_frame():
    """A comparison table with round numbers: Block-sparse 4× Dense (claim 1.8×), Static-sparse 1.25×
    (claim 2.5×), AKF 3.5× (claim 3.5×); errors 0 / 1 / 7 / 0.9 %."""
    rows = {"Dense": (1000.0, 0.0), "BlockSparse": (250.0, 1.0), "StaticSparse": (800.0, 7.0),
            "AKF": (1000.0 / 3.5, 0.9)}
    df = pd.DataFrame({"cycles": [c for c, _ in rows.values()], "error_pct": [e for _, e in rows.values()]},
                      index=pd.Index(list(rows), name="plan"))
    df["speedup"] = 1000.0 / df["cycles"]
    df["energy_pj"] = df["cycles"] * 10.0
    df["energy_rel"] = df["energy_pj"] / 10_000.0
    df["macs"] = df["cycles"]
    df["kernel_mix"] = ""
    return df


def test_the_notes_say_which_way_each_number_differs_from_the_claim():
    notes = paper_comparison(_note_frame())["note"]
    assert "speedup 4× exceeds the claimed 1.8× (2.2× the claim)" in notes["BlockSparse"]
    assert "speedup 1.25× falls short of the claimed 2.5× (0.5× the claim)" in notes["StaticSparse"]
    assert "speedup 3.5× matches the claimed 3.5×" in notes["AKF"]
    assert "it does 25 % of Dense's MACs" in notes["BlockSparse"]
    assert "it does 80 % of Dense's MACs" in notes["StaticSparse"]
    assert "error 1 % vs the claimed 2.1 % (lower)" in notes["BlockSparse"]
    assert "error 7 % vs the claimed 3.5 % (higher)" in notes["StaticSparse"]
    assert "error 0.9 % vs the claimed 1.8 % (lower)" in notes["AKF"]


def test_the_compare_bars_axes_reach_the_paper_claims():
    """A claim larger than every measured bar (AKF's claimed 3.5× against a measured 1.2×) must be
    inside its panel's x range, not drawn past its edge."""
    from akfviz.viz.compare import compare_bars

    measured = pd.DataFrame({"speedup": [1.0, 1.1, 1.05, 1.2], "energy_rel": [1.0, 0.9, 0.95, 0.8],
                             "error_pct": [0.0, 0.0, 0.5, 0.2]}, index=pd.Index(list(PLANS), name="plan"))
    claimed = PAPER_CLAIMS.rename(columns={"energy_table": "energy_rel"})
    fig = compare_bars(measured, claimed)
    for axis, col in (("xaxis", "speedup"), ("xaxis2", "energy_rel"), ("xaxis3", "error_pct")):
        lo, hi = fig.layout[axis].range
        top = np.nanmax(np.r_[measured[col].to_numpy(float), claimed[col].to_numpy(float)])
        assert lo <= 0 and hi >= top, (axis, hi, top)


def test_the_compare_bars_match_claims_to_plans_by_name_not_by_row_order():
    """Claims given in another row order (a library user's own table) still sit on their plan's bar."""
    from akfviz.viz.compare import compare_bars

    measured = pd.DataFrame({"speedup": [1.0, 1.1, 1.05, 1.2], "energy_rel": [1.0, 0.9, 0.95, 0.8],
                             "error_pct": [0.0, 0.0, 0.5, 0.2]}, index=pd.Index(list(PLANS), name="plan"))
    claimed = PAPER_CLAIMS.rename(columns={"energy_table": "energy_rel"})
    markers = [t for t in compare_bars(measured, claimed.iloc[::-1]).data if t.type == "scatter"]
    speed = next(t for t in markers if t.xaxis in (None, "x"))
    # the marker at each plan's row (y = row + offset) holds that plan's claimed speedup
    by_row = {int(round(y)): x for y, x in zip(speed.y, speed.x)}
    assert {PLANS[i]: v for i, v in by_row.items()} == {p: claimed.loc[p, "speedup"] for p in PLANS
                                                         if np.isfinite(claimed.loc[p, "speedup"])}
