"""Design space page, fifty-first session's architect probe: the SRAM note claimed "SRAM per PE does
not change AKF's cycles here" whenever no plan overflowed, though the selector chose other kernels at
other sizes and the cycles moved (645 … 651); three sweepable hardware columns had no title."""
import pandas as pd

from akfviz.dse import sweep
from akfviz.viz import dse
from apptest_tree import ok, sweep_table

PAGE = "pages/5_Design_space.py"


def test_the_sram_note_says_no_effect_only_when_nothing_moved():
    same = pd.DataFrame({"cycles": [938] * 3, "kernel_mix": ["QUANT8D 100 %"] * 3, "overflow_bytes": [0] * 3})
    assert sweep.sram_note(same).startswith("**SRAM per PE does not change AKF's cycles here**")
    mix = same.assign(cycles=[645, 647, 651], kernel_mix=["QUANT8 100 %", "QUANT8 90 %, PRUNE25 10 %",
                                                          "QUANT8 90 %, PRUNE25 10 %"])
    note = sweep.sram_note(mix)
    assert "does not change" not in note
    assert "range from 645 to 651" in note and "chose other kernels" in note
    moved = same.assign(cycles=[938, 940, 940])
    note = sweep.sram_note(moved)
    assert "range from 938 to 940" in note and "differs between sizes" in note and "chose other" not in note
    plan_only = same.assign(kernel_mix=["QUANT8D 100 %", "QUANT8 100 %", "QUANT8 100 %"])
    note = sweep.sram_note(plan_only)
    assert "the plan still changes" in note and "chose other kernels" in note


def test_the_probes_sweep_on_the_page_does_not_claim_sram_has_no_effect(app):
    app.query_params.update({"src": "gen", "gen": "powerlaw", "g_n": "600", "g_seed": "2", "hw_rows": "8",
                             "hw_cols": "8", "sweep": "sram_bytes_per_pe=512,1024,2048,8192,65536"})
    app.run()
    app.switch_page(PAGE).run()
    ok(app)
    df = sweep_table(app)
    assert len(df) == 5 and (df["overflow_bytes"] == 0).all()
    assert df["cycles"].nunique() > 1 or df["kernel_mix"].nunique() > 1    # the case holds
    notes = " ".join(m.value for m in app.markdown)
    assert "SRAM per PE does not change" not in notes
    assert "The payload fits in SRAM at every point" in notes


def test_every_sweepable_hardware_column_has_a_title_with_its_unit():
    hw_cols = [name for name, p in sweep.SWEEP_PARAMETERS.items() if name in
               ("rows", "cols", "sram_bytes_per_pe", "mac_lanes", "dram_bytes_per_cycle", "hop_latency_cycles")]
    assert len(hw_cols) == 6
    for col in hw_cols:
        assert dse.column_label(col) != col, col
        assert dse.column_label(col, short=True) != col, col
    assert dse.column_label("dram_bytes_per_cycle") == "DRAM bandwidth (bytes/cycle)"
    assert dse.column_label("hop_latency_cycles") == "NoC hop latency (cycles)"
