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
