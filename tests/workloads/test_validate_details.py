"""Details of the input gate (as_csr, akf-spec §1) and of the shared argument checks
(akfviz.arguments, §9: every rejected input raises InputError)."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from akfviz import memory
from akfviz.arguments import SEED_MAX, check_real, check_seed, check_whole
from akfviz.errors import InputError, ResourceLimitError
from akfviz.workloads.validate import as_csr


# ---------------------------------------------------------------- as_csr

@pytest.mark.parametrize("values", [np.array([[1 + 2j, 0.0]]), np.array([[1 + 0j, 0.0]]),
                                    np.array([[1.0, 2.0]], dtype=np.complex64)])
def test_dense_complex_values_are_refused_not_cast(values):
    with pytest.raises(InputError, match="complex"):
        as_csr(values)


@pytest.mark.parametrize("ragged, hint", [([[1.0, 2.0], [3.0]], "rows of different lengths"),
                                           ([np.ones(2), np.ones(3)], "rows of different lengths"),
                                           (([1.0], ([0], [0])), r"coo_array\(\(data, \(rows, cols\)\)")])
def test_ragged_input_is_an_input_error_with_a_hint(ragged, hint):
    # numpy refuses these with a ValueError of its own, which `except InputError` missed
    import akfviz
    with pytest.raises(InputError, match=hint):
        as_csr(ragged)
    with pytest.raises(InputError, match=hint):
        akfviz.analyze(ragged, tile=4)
    plan = akfviz.select(akfviz.analyze(np.eye(8), tile=4))
    with pytest.raises(InputError, match="x could not be read"):
        plan.matvec(ragged)


def test_csr_duplicates_are_summed():
    # a CSR built from (data, indices, indptr) keeps duplicate column indices as given
    A = sp.csr_array((np.array([1.0, 2.0, 5.0]), np.array([1, 1, 0]), np.array([0, 2, 3])), shape=(2, 2))
    M = as_csr(A)
    assert M.nnz == 2
    assert M.toarray().tolist() == [[0.0, 3.0], [5.0, 0.0]]
    assert M.has_canonical_format


def test_negative_coo_coordinates_are_refused():
    A = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, 1]), np.array([0, 1]))), shape=(3, 3))
    A.coords[0][1] = -1      # scipy checks at construction only
    with pytest.raises(InputError, match="broken"):
        as_csr(A)
    B = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, 1]), np.array([0, 1]))), shape=(3, 3))
    B.coords[1][0] = -2
    with pytest.raises(InputError, match="broken"):
        as_csr(B)


@pytest.mark.parametrize("shape", [(3, 0), (0, 3)])
@pytest.mark.parametrize("fmt", ["csr", "coo", "csc"])
def test_sparse_matrix_without_rows_or_columns_is_refused(shape, fmt):
    with pytest.raises(InputError, match="at least one row and one column"):
        as_csr(sp.csr_array(shape).asformat(fmt))


def test_copy_of_a_canonical_matrix_shares_nothing_with_the_callers():
    A = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    A.sum_duplicates()
    M = as_csr(A)
    for arr in ("data", "indices", "indptr"):
        assert not np.shares_memory(getattr(M, arr), getattr(A, arr))
    M.data[0] = 99.0
    assert A.data[0] == 1.0


# ---------------------------------------------------------------- memory guards of as_csr

def _avail(monkeypatch, nbytes):
    monkeypatch.setattr(memory, "available_memory", lambda: nbytes)


def test_sparse_memory_guard_counts_a_row_pointer_per_declared_row(monkeypatch):
    # 20M declared rows and no entries: 160 MB of row pointers, more than 0.8 × 100 MB
    _avail(monkeypatch, 100 * 10**6)
    A = sp.coo_array((np.zeros(0), (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))),
                     shape=(20_000_000, 1))
    with pytest.raises(ResourceLimitError, match="20,000,000 × 1"):
        as_csr(A)


def test_dense_memory_guard_counts_the_column_index_of_every_nonzero(monkeypatch):
    # 8M nonzeros: 8 bytes of value + 4 of int32 column index each = 96 MB (+ 4 kB of row
    # pointers), over 0.8 × 100 MB; the values alone (64 MB) would fit
    _avail(monkeypatch, 100 * 10**6)
    with pytest.raises(ResourceLimitError, match="8,000,000 nonzeros"):
        as_csr(np.ones((1000, 8000)))
    _avail(monkeypatch, 125 * 10**6)          # 0.8 × 125 MB = 100 MB ≥ 96 MB: fits
    assert as_csr(np.ones((1000, 8000))).nnz == 8_000_000


# ---------------------------------------------------------------- akfviz.arguments

def test_seed_bounds_are_inclusive_and_bools_are_refused():
    assert check_seed(0) == 0
    assert check_seed(SEED_MAX) == SEED_MAX
    assert check_seed(np.uint64(SEED_MAX)) == SEED_MAX
    assert check_seed(1.0) == 1 and check_seed(np.array(7)) == 7   # the one rule of check_whole
    for bad in (True, False, np.bool_(True), -1, SEED_MAX + 1, 1.5, float(2 ** 64), "1"):
        with pytest.raises(InputError, match="seed"):
            check_seed(bad)


def test_whole_number_lower_bound_is_inclusive():
    assert check_whole(0, "n") == 0
    assert check_whole(1, "n", lo=1) == 1
    assert check_whole(5, "n", lo=5, hi=5) == 5
    with pytest.raises(InputError):
        check_whole(4, "n", lo=5)


def test_whole_number_float_must_be_integral_not_truncated():
    assert check_whole(8.0, "n") == 8
    assert check_whole(np.float32(2e3), "n") == 2000
    assert check_whole(np.array(8.0), "n") == 8
    for bad in (8.7, 0.5, math.nan, math.inf, np.array(8.5), "8", None):
        with pytest.raises(InputError, match="whole number"):
            check_whole(bad, "n")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan"), 10**400])
def test_real_must_be_finite(bad):
    with pytest.raises(InputError, match="must be"):
        check_real(bad, "alpha")
    with pytest.raises(InputError, match="must be"):
        check_real(bad, "alpha", 0.0, 1.0)


@pytest.mark.parametrize("bad", [True, False, np.bool_(True), np.array(True)])
def test_real_refuses_bools(bad):
    with pytest.raises(InputError, match="alpha"):
        check_real(bad, "alpha")


def test_real_bounds_are_inclusive():
    assert check_real(0.0, "x", 0.0, 1.0) == 0.0
    assert check_real(1.0, "x", 0.0, 1.0) == 1.0
    assert check_real(np.float32(0.5), "x", 0.0, 1.0) == 0.5
