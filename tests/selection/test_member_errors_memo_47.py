"""Per-tile kernel errors remembered per analysis (``akfviz.selection.member_errors``): the member
sums of a cluster-mode budget selection are the same bits with or without the memo, in any order of
earlier calls; a second budget on the same analysis runs no LOWRANK SVD again; large analyses and
dropped analyses leave nothing behind."""
import gc

import numpy as np
import pytest

import akfviz
from akfviz.kernels.lowrank import LowRankKernel
from akfviz.npu.hardware import HardwareConfig
from akfviz.selection import member_errors
from akfviz.selection.costs import SelectionProblem, resolve_candidates
from akfviz.workloads.samples import load_sample


def _problem(pa):
    return SelectionProblem(pa, resolve_candidates(None), HardwareConfig(), resource="energy",
                            granularity="cluster")


def _reference_sums(pa, prob):
    """Σ over each cluster's members of ``max(batch_error, 0)`` on all of them at once, in tile order."""
    out = np.zeros((prob.n_units, len(prob.names)))
    for u in range(prob.n_units):
        members = prob.members(u)
        for k, kern in enumerate(prob.kernels):
            e = np.maximum(np.asarray(kern.batch_error(pa.tileset, members), dtype=np.float64), 0.0)
            out[u, k] = np.bincount(np.zeros(members.size, dtype=np.int64), weights=e, minlength=1)[0]
    return out


def test_member_sums_are_the_same_bits_whatever_the_memo_held_before():
    A = akfviz.generate("clustered", n=512, seed=3)
    pa_fresh, pa_warm = akfviz.analyze(A, tile=16), akfviz.analyze(A, tile=16)
    # warm the second analysis' memo with scattered tiles, batch by batch, in a shuffled order
    rng = np.random.default_rng(0)
    prob_w = _problem(pa_warm)
    for kern in prob_w.kernels:
        for part in np.array_split(rng.permutation(pa_warm.n_tiles)[: pa_warm.n_tiles // 2], 3):
            member_errors.tile_errors(pa_warm, kern, part)
    fresh = _problem(pa_fresh).member_error_matrix()
    warm = prob_w.member_error_matrix()
    np.testing.assert_array_equal(fresh, warm)
    np.testing.assert_array_equal(fresh, _reference_sums(pa_fresh, _problem(pa_fresh)))


def test_a_second_budget_on_the_same_analysis_runs_no_svd_again(monkeypatch):
    pa = akfviz.analyze(load_sample("minilm_ffn0_mag90"), tile=32)
    seen = []
    real = LowRankKernel.batch_error

    def counting(self, ts, idx=None):
        seen.append(0 if idx is None else len(idx))
        return real(self, ts, idx)

    monkeypatch.setattr(LowRankKernel, "batch_error", counting)
    first = akfviz.select(pa, error_budget=0.05)
    assert sum(seen) > 0
    seen.clear()
    second = akfviz.select(pa, error_budget=0.06)
    assert sum(seen) == 0
    # and the plans are those of a fresh analysis (no memo)
    for eps, plan in ((0.05, first), (0.06, second)):
        ref = akfviz.select(akfviz.analyze(load_sample("minilm_ffn0_mag90"), tile=32), error_budget=eps)
        assert plan.resource == ref.resource and plan.relative_error == ref.relative_error
        np.testing.assert_array_equal(np.asarray(plan.tile_kernels), np.asarray(ref.tile_kernels))


def test_large_analyses_are_not_remembered_and_dropped_ones_are_released(monkeypatch):
    A = akfviz.generate("uniform", n=256, seed=1)
    pa = akfviz.analyze(A, tile=16)
    kern = _problem(pa).kernels[-1]
    monkeypatch.setattr(member_errors, "MEMO_MAX_TILES", pa.n_tiles - 1)
    got = member_errors.tile_errors(pa, kern, np.arange(pa.n_tiles))
    assert pa not in member_errors._MEMO
    monkeypatch.setattr(member_errors, "MEMO_MAX_TILES", pa.n_tiles)
    again = member_errors.tile_errors(pa, kern, np.arange(pa.n_tiles)[::-1])
    np.testing.assert_array_equal(again[::-1], got)
    assert pa in member_errors._MEMO
    gc.collect()     # analyses of earlier tests in this worker, already unreachable, go first
    before = len(member_errors._MEMO)
    del pa
    gc.collect()
    assert len(member_errors._MEMO) == before - 1


@pytest.mark.parametrize("tiles", [[], [0, 0, 3, 0]])
def test_tile_errors_take_repeats_and_empty_lists(tiles):
    pa = akfviz.analyze(akfviz.generate("banded", n=128, seed=0), tile=16)
    kern = _problem(pa).kernels[-1]
    got = member_errors.tile_errors(pa, kern, tiles)
    ref = np.maximum(np.asarray(kern.batch_error(pa.tileset, np.asarray(tiles, dtype=np.int64)), dtype=np.float64), 0.0)
    np.testing.assert_array_equal(got, ref)
