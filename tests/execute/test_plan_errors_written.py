"""A plan of QUANT8 alone does not zero ``tile_errors`` first (every tile's error is written while
the residual is packed): every slot must be written, on each route of ``pack_plan``."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.execute import plan as plan_mod
from akfviz.kernels.registry import get_kernel


class _NaNEmpty:
    """numpy, but ``empty`` float arrays come filled with NaN (an unwritten slot shows)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float, **kw):
        a = np.empty(shape, dtype=dtype, **kw)
        if np.issubdtype(a.dtype, np.floating):
            a.fill(np.nan)
        return a


def _banded(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return sp.csr_array(sp.diags_array([rng.standard_normal(n - abs(o)) for o in (-2, -1, 0, 1, 2)],
                                       offsets=[-2, -1, 0, 1, 2]))


CASES = {
    # hyper-sparse: the residual straight from the matrix (one-entry and two-entry tiles)
    "uniform": lambda: (sp.random_array((700, 650), density=0.004, format="csr", rng=np.random.default_rng(3)), 16),
    # long diagonals: QUANT8 tiles packed as DIA (the general route)
    "banded": lambda: (_banded(), 16),
    # wide value range: entries that quantise to 0 (dropped from the residual)
    "dropped": lambda: (sp.csr_array(sp.random_array((300, 300), density=0.05, rng=np.random.default_rng(4),
                                                     data_sampler=lambda size: np.random.default_rng(5)
                                                     .standard_normal(size) * 10.0 ** np.random.default_rng(6)
                                                     .uniform(-6, 0, size))), 8),
}


@pytest.mark.parametrize("full_pass", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_quant8_tile_error_is_written(case, full_pass, monkeypatch):
    A, T = CASES[case]()
    pa = akfviz.analyze(A, tile=T)
    if full_pass:
        pa.tileset.r   # the entries moved to their tiles: pack_plan's general route
    monkeypatch.setattr(plan_mod, "np", _NaNEmpty())
    plan = plan_mod.FusionPlan(pa, ["QUANT8"] * pa.n_tiles)
    monkeypatch.undo()
    assert not np.isnan(plan.tile_errors).any()
    q8 = get_kernel("QUANT8")
    ts = pa.tileset
    want = np.array([q8.error(ts.dense(t)) for t in range(pa.n_tiles)])
    np.testing.assert_allclose(plan.tile_errors, want, rtol=1e-12, atol=1e-300)
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    err_sum = float(np.sum(want))
    assert plan.relative_error == pytest.approx(np.sqrt(err_sum) / pa.fro_norm, rel=1e-12)
    assert np.all(np.isfinite(plan.matvec(x)))
