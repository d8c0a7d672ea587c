"""The Kernels page's check of the table on the current matrix names the edge tiles (priced exactly,
not by the table) and shows its relative errors to three significant digits (a 1e-16 error showed as
"0000000000")."""
import json

import numpy as np
import pytest

import akfviz
from akfviz.selection.edgecost import edge_tile_index
from akfviz.workloads.samples import load_sample


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("tile", [40, 32])
def test_prediction_check_counts_the_edge_tiles_and_formats_its_errors(app, tile):
    app.query_params.update({"tile": str(tile)})
    app.run()
    app.switch_page("pages/2_Kernels.py").run()
    _ok(app)
    app.toggle(key="pt_check").set_value(True).run()
    _ok(app)
    check = next(d for d in app.dataframe if "total_rel" in d.value.columns)
    cfg = json.loads(check.proto.columns or "{}")
    for c in ("rel_rms", "max_rel", "bias", "total_rel"):
        assert cfg[c]["type_config"]["format"] == "%.3g", c
    A = load_sample(app.session_state["sample"])          # the sample the page shows
    pa = akfviz.analyze(A, tile=tile)
    n_edge = edge_tile_index(pa).size
    caption = next(c.value for c in app.caption if "Edge tiles" in c.value)
    if tile == 40:   # the default sample is 1,536 × 384: T = 40 leaves edge tiles, T = 32 none
        assert n_edge > 0
        assert f"{n_edge:,} of them among its {pa.n_tiles:,} nonempty tiles (T = 40 does not divide" in caption
    else:
        assert n_edge == 0 and "This matrix has none (T = 32 divides" in caption
    assert np.all(check.value.loc[check.value["kernel"] == "SKIP", "max_rel"] == 0)
