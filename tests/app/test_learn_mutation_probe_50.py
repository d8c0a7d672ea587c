"""Gaps a mutation probe of the fiftieth session's code found (docs/decisions.md, "Fiftieth
session"): the numbers inside the Learn page's step texts and formulas, the edges of
``kernel_error_text`` and of the log ticks' end rule, the Solver table's rounding, the Learn
caption's hardware name."""
import re

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.npu.trace import tiny_case
from akfviz.viz import layout
from akfviz.viz import learn as vl
from akfviz.viz import solver as vs

from apptest_tree import ok, open_page


def _hops(p, q, cols):
    return abs(p // cols - q // cols) + abs(p % cols - q % cols)


@pytest.mark.parametrize("kernel, grid, seed", [("LOWRANK1", (2, 3), 2), ("CSC", (2, 2), 0), ("QUANT8D", (2, 3), 1)])
def test_each_step_states_the_numbers_it_traced(kernel, grid, seed):
    hw = akfviz.HardwareConfig.from_preset("loihi-like")
    tc = tiny_case(n=12, tile=4, grid=grid, density=0.9, x_density=1.0, kernel=kernel, seed=seed, hw=hw)
    tr, work, cols = tc.trace, tc.work, grid[1]
    macs_in_texts = 0
    for s in tr.steps:
        if s.kind == "setup":
            k = int(np.sum(tr.tile_pe == s.pe))
            assert int(re.search(r"sets up its (\d+) tiles?\b", s.text).group(1)) == k
            m = re.search(r"setup = (\d+) tiles? × setup_cycles (\d+) = (\d+)", s.formula)
            assert int(m.group(1)) == k and k * int(m.group(2)) == int(m.group(3)) == s.end - s.start
        elif s.kind == "event":
            m = re.search(r"ceil\((\d+) MACs? / (\d+)\) \+ (\d+) decodes? × (\d+)(?: \+ final (\d+))? = (\d+)$",
                          s.formula)
            macs, lanes, dec, dcyc, fin, total = (int(g) if g else 0 for g in m.groups())
            assert total == s.end - s.start == hw.event_cycles + -(-macs // lanes) + dec * dcyc + fin
            assert re.search(rf"\({macs} MACs?, ", s.text)
            macs_in_texts += macs
            if work.final_macs[s.tile] > 0:
                assert f"final phase ({int(work.final_macs[s.tile])} MAC" in s.text
        elif s.kind == "send":
            o, q = int(work.out_rows[s.tile]), int(tr.red_pe[work.bi[s.tile]])
            assert re.search(rf"sends {o} partial-sum flits? to reduction PE {q}$", s.text)
            done, hop, d, a = map(int, re.search(r"done (\d+) \+ hop (\d+) × (\d+) hops? = (\d+)", s.formula).groups())
            assert d == _hops(s.pe, q, cols) and a == done + hop * d == s.arrival
        elif s.kind == "reduce":
            o = int(work.out_rows[s.tile])
            assert re.search(rf"adds tile {s.tile}'s {o} partial sums? into y", s.text)
            n, cyc, dur = map(int, re.search(r"; (\d+) flits? × reduce_cycles (\d+) = (\d+)$", s.formula).groups())
            assert n == o and o * cyc == dur == s.end - s.start
    assert macs_in_texts == int(np.asarray(work.ev_macs).sum())    # x dense: every stored column has its event


def test_kernel_error_text_when_a_x_is_zero_and_when_a_hat_differs_in_the_last_bits():
    A = sp.csr_array(np.array([[1.0, -1.0]]))
    assert vl.kernel_error_text(A, np.array([[1.0, -0.5]]), np.ones(2), 0.5) == (
        "The kernels are lossy: ‖A − Â‖_F / ‖A‖_F = 50 %; for this x, ‖Âx − Ax‖ / ‖Ax‖ = n/a "
        "(A x = 0, ‖Âx‖ = 0.5).")
    B = sp.csr_array(np.array([[1.0, 2.0], [0.0, 4.0]]))
    assert vl.kernel_error_text(B, np.array([[1.0, 2.0], [0.0, 4.0 + 1e-9]]), np.ones(2), 1e-10).startswith(
        "The kernels are lossy")


def test_log_ticks_keep_an_end_just_beyond_five_percent_of_a_tick():
    # 0.118 lies 5.5 % of the range from the tick 0.12: it is kept (at 20 % it would not be)
    ticks = layout.log_ticks(np.log10(0.118), np.log10(0.16))
    assert [round(10 ** t, 6) for t in ticks] == [0.118, 0.12, 0.15, 0.16]


def test_solver_table_rounds_the_means_and_keeps_the_microseconds(app, monkeypatch):
    raw = {}
    real = vs.npu_cost_table
    monkeypatch.setattr(vs, "npu_cost_table", lambda npu: raw.setdefault("t", real(npu)).copy())
    open_page(app, "pages/6_Solver.py")
    ok(app)
    shown = next(d.value for d in app.dataframe if "cycles / iteration" in d.value.columns)
    want = raw["t"]
    for c in ("cycles / iteration", "DRAM bytes / iteration"):
        np.testing.assert_array_equal(shown[c].to_numpy(), want[c].round().to_numpy())
    assert (want["DRAM bytes / iteration"] % 1 > 0.5).any()              # a case where floor ≠ round
    np.testing.assert_array_equal(shown["µs / iteration"].to_numpy(), want["µs / iteration"].to_numpy())
    assert (shown["µs / iteration"] % 1 != 0).any()


def test_learn_caption_names_the_changed_hardware(app):
    open_page(app, "pages/7_Learn.py", preset="edge-32x32", hw_bw="8")
    ok(app)
    captions = " ".join(c.value for c in app.caption)
    assert "The sidebar's hardware (custom (preset edge-32x32, changed on the NPU page))" in captions
