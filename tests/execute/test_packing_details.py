"""Packing and plan details at their limits (from a mutation probe of the packing, the plan and the
CPU timing helpers): residual index types past 65 536 rows / columns, kernel-name validation,
``output_error`` when ``A x`` vanishes, and the units of :func:`time_matvec`."""
import types

import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.analysis.pattern import analyze
from akfviz.errors import InputError
from akfviz.execute import FusionPlan
from akfviz.execute import cpu


def _one_entry_per(shape, entries):
    r, c, v = zip(*entries)
    return sp.csr_array(sp.coo_array((np.array(v, float), (np.array(r), np.array(c))), shape=shape))


def test_residual_columns_past_65536_keep_their_index():
    """Column 65 536 of a 65 537-column matrix needs uint32 residual columns (uint16 would wrap it to 0)."""
    A = _one_entry_per((8, 65537), [(0, 0, 1.0), (1, 65536, 2.0), (5, 40000, -3.0)])
    pa = analyze(A, tile=32)
    plan = FusionPlan(pa, ["CSC"] * len(pa.tiles))
    x = np.zeros(65537)
    x[0], x[40000], x[65536] = 1.0, 7.0, 10.0
    expected = np.zeros(8)
    expected[0], expected[1], expected[5] = 1.0, 20.0, -21.0       # by hand: 1·1, 2·10, −3·7
    np.testing.assert_array_equal(plan.matvec(x), expected)
    X = np.stack([x, 2 * x], axis=1)
    np.testing.assert_array_equal(plan.matmat(X), np.stack([expected, 2 * expected], axis=1))


def test_hyper_sparse_residual_rows_past_65536_keep_their_index():
    """Fewer entries than rows (the row-block COO residual): rows ≥ 65 536 must not wrap around."""
    A = _one_entry_per((65540, 4), [(3, 1, 5.0), (65539, 0, 3.0), (35, 2, -1.0)])
    pa = analyze(A, tile=4)
    plan = FusionPlan(pa, ["CSC"] * len(pa.tiles))
    assert plan._packed.format_tiles()["residual_entries"] == 3
    x = np.array([2.0, 1.0, 4.0, 8.0])
    expected = np.zeros(65540)
    expected[3], expected[65539], expected[35] = 5.0, 6.0, -4.0   # by hand: 5·1, 3·2, −1·4
    np.testing.assert_array_equal(plan.matvec(x), expected)
    np.testing.assert_array_equal(plan.matmat(x[:, None]), expected[:, None])


def test_a_single_kernel_name_string_is_refused_even_for_one_tile():
    """``"DENSE"`` is not a sequence of names: refused, not read as a one-name list."""
    pa = analyze(sp.csr_array(np.eye(8)), tile=8)
    assert len(pa.tiles) == 1
    with pytest.raises(InputError, match="single string"):
        FusionPlan(pa, "DENSE")


def test_a_2d_table_of_kernel_names_is_refused():
    """Kernel names nested two deep (one per tile after flattening) are refused, not flattened."""
    pa = analyze(sp.csr_array(np.eye(16)), tile=8)
    assert len(pa.tiles) == 2
    with pytest.raises(InputError, match="1-D"):
        FusionPlan(pa, [["DIA"], ["DIA"]])


def test_output_error_is_infinite_when_only_the_approximation_moves_x():
    """``A x = 0`` but ``Â x ≠ 0`` (PRUNE50 drops the small entry of a row that cancels): error ∞."""
    A = _one_entry_per((4, 4), [(0, 0, 1.0), (0, 1, 1e-3)])
    pa = analyze(A, tile=4)
    plan = FusionPlan(pa, ["PRUNE50"])
    x = np.array([1e-3, -1.0, 0.0, 0.0])
    assert np.all(A @ x == 0.0)                                   # 1·1e-3 − 1e-3·1 = 0 exactly
    assert plan.matvec(x)[0] == 1e-3                              # Â keeps only the 1
    assert plan.output_error(x) == float("inf")
    assert plan.output_error(np.zeros(4)) == 0.0                  # both zero: no error


def test_time_matvec_reports_milliseconds(monkeypatch):
    """With a clock advancing 25 ms per plan call and 4 ms per scipy call, the medians are 25 and 4 (ms)."""
    now = [0.0]

    class Plan:
        def matvec(self, x):
            now[0] += 0.025

    class Mat:
        def __matmul__(self, x):
            now[0] += 0.004

    clock = types.SimpleNamespace(perf_counter=lambda: now[0])
    monkeypatch.setattr(cpu, "time", clock)
    out = cpu.time_matvec(Plan(), np.ones(3), 5, A=Mat())
    assert out["plan_ms"] == pytest.approx(25.0)
    assert out["scipy_ms"] == pytest.approx(4.0)
    assert out["repeats"] == 5


@pytest.mark.parametrize("n_chunks", [1, 3, 8, 50])
def test_drop_left_out_keeps_the_other_entries_in_row_order(n_chunks):
    """The residual's compaction (entries of tiles packed elsewhere marked LEFT_OUT, NaN) against a
    boolean mask, for chunks of rows that start and end anywhere, including empty rows and a chunk
    with no rows; stored zeros (QUANT8 values that round to 0) are kept."""
    from akfviz.execute.packing import LEFT_OUT, _drop_left_out, _drop_left_out_serial

    rng = np.random.default_rng(n_chunks)
    A = sp.random_array((40, 30), density=0.2, format="csr", rng=rng)
    val = A.data.copy()
    val[rng.random(val.size) < 0.3] = LEFT_OUT
    val[rng.random(val.size) < 0.1] = 0.0                 # stored zeros: kept
    val[A.indptr[5]:A.indptr[7]] = LEFT_OUT               # two rows that keep nothing
    kept = ~np.isnan(val)
    assert (val[kept] == 0.0).any()
    rows = np.repeat(np.arange(40), np.diff(A.indptr))
    res_ptr = np.concatenate([[0], np.cumsum(np.bincount(rows[kept], minlength=40))]).astype(np.int64)
    for kernel in (_drop_left_out, _drop_left_out_serial):
        col = np.full(int(kept.sum()), -1, dtype=np.int32)
        out = np.full(int(kept.sum()), np.nan)
        kernel(A.indptr.astype(np.int64), A.indices, val, res_ptr, col, out, n_chunks)
        np.testing.assert_array_equal(out, val[kept])
        np.testing.assert_array_equal(col, A.indices[kept])
