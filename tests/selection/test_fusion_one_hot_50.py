"""The fusion weights end one-hot (akf-spec §5: "an entropy term whose temperature anneals to zero,
so the weights end one-hot"). A spec audit (fiftieth session) found them ending at 0.84 for the
best kernel on a 128² uniform matrix: at T = 0 a fixed step shrinks the losers' weights only like
1/step. Without the SRAM penalty the step now grows over the T = 0 steps."""
import numpy as np
import pytest

import akfviz
from akfviz.selection.fusion_weights import optimize_fusion_weights


@pytest.mark.parametrize("gen, gran", [("uniform", "tile"), ("uniform", "cluster"), ("powerlaw", "tile"),
                                       ("llm", "cluster")])
def test_weights_end_one_hot_on_the_argmin(gen, gran):
    pa = akfviz.analyze(akfviz.generate(gen, n=128, seed=1), tile=16)
    f = akfviz.select(pa, granularity=gran).selection.fusion
    assert not f.binding
    w = f.weights
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert w.max(axis=1).min() > 1 - 1e-6
    np.testing.assert_array_equal(np.argmax(w, axis=1), f.argmin)
    tr = f.trajectory
    assert tr["entropy"].iloc[-1] < 1e-6 and tr["temperature"].iloc[-1] == 0.0
    assert tr["cost"].iloc[-1] <= tr["cost"].iloc[0]


def test_small_gaps_too_and_exact_ties_keep_equal_weights():
    # slow reference: the one-hot vertex of the argmin, for gaps from 1e-3 to 10 typical gaps
    rng = np.random.default_rng(0)
    C = rng.uniform(0, 1, (40, 5))
    C[:, 1] = C[:, 0] + np.geomspace(1e-3, 10, 40) * (C.max() - C.min()) / 40   # close runners-up
    C[0, 2] = C[0, :].min()                                                     # an exact tie in unit 0
    f = optimize_fusion_weights(C, np.ones(40), np.ones((40, 5)), 1e12)
    best = np.argmin(C, axis=1)
    unit = np.arange(1, 40)
    np.testing.assert_allclose(f.weights[unit, best[unit]], 1.0, atol=1e-6)
    tied = np.flatnonzero(C[0] == C[0].min())
    assert tied.size == 2 and f.weights[0, tied[0]] == f.weights[0, tied[1]]
    assert f.weights[0, tied].sum() == pytest.approx(1.0, abs=1e-6)
