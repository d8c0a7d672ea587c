"""SimResult.busiest_pes: the busiest rows of pe_frame, built for those PEs only."""
import numpy as np
import pandas as pd

import akfviz


def test_busiest_pes_equals_the_sorted_head_of_pe_frame():
    A = akfviz.generate("clustered", n=512, seed=2)
    res = akfviz.simulate(akfviz.select(akfviz.analyze(A, tile=32)), akfviz.HardwareConfig(rows=16, cols=16))
    pf = res.pe_frame()
    for k in (0, 1, 7, 200, 10_000):
        ref = pf[pf["busy"] > 0].sort_values(["busy", "pe"], ascending=[False, True], kind="stable").head(k)
        got = res.busiest_pes(k)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), ref.reset_index(drop=True), check_dtype=False)
    assert (res.busiest_pes(10_000)["busy"] > 0).all()
    assert len(res.busiest_pes(10_000)) == int(np.count_nonzero(pf["busy"]))


def test_exported_counters_name_fp32_macs_so_the_columns_add_up_to_macs():
    """Held-out CLI probe: an all-QUANT8 plan exported ``simulation.macs = 163`` beside a per-PE
    ``macs`` column (fp32 only) that summed to 0. The tables and JSON totals now say macs_fp32."""
    import akfviz

    A = akfviz.generate("uniform", n=128, seed=0)
    plan = akfviz.select(akfviz.analyze(A, tile=16), kernels=["QUANT8"])
    res = akfviz.simulate(plan, akfviz.HardwareConfig(rows=8, cols=8))
    pf, top = res.pe_frame(), res.busiest_pes(5)
    assert "macs" not in pf and "macs" not in top
    assert pf["macs_fp32"].sum() == 0 and pf["macs_int8"].sum() == res.macs > 0
    d = res.to_dict(arrays=True)
    assert d["macs"] == d["totals"]["macs_fp32"] + d["totals"]["macs_int8"] == res.macs
    assert "macs" not in d["totals"] and sum(d["counters"]["macs_int8"]) == res.macs
