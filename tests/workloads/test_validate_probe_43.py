"""Two messages of the matrix check: None, and duplicates that add up beyond float64 (probe 43)."""

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz


def test_none_is_said_to_be_no_matrix():
    with pytest.raises(akfviz.InputError, match=r"No matrix was given \(got None\)"):
        akfviz.analyze(None)


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_duplicates_that_add_up_to_infinity_are_named(fmt):
    coo = sp.coo_array((np.array([1e308, 1e308, 2.0]), (np.array([0, 0, 1]), np.array([0, 0, 1]))), shape=(2, 2))
    A = coo if fmt == "coo" else sp.csr_array((coo.data, (coo.row, coo.col)), shape=(2, 2))
    if fmt == "csr":   # an unsummed CSR: build it by hand, two entries at (0, 0)
        A = sp.csr_array((np.array([1e308, 1e308, 2.0]), np.array([0, 0, 1]), np.array([0, 2, 3])), shape=(2, 2))
    with pytest.raises(akfviz.InputError) as e:
        akfviz.analyze(A)
    msg = str(e.value)
    assert "more than once" in msg and "1 value(s) beyond the range of float64" in msg


def test_a_value_given_as_infinite_keeps_its_message():
    A = sp.coo_array((np.array([np.inf, 1.0]), (np.array([0, 1]), np.array([0, 1]))), shape=(2, 2))
    with pytest.raises(akfviz.InputError, match="contains 1 NaN or infinite value"):
        akfviz.analyze(A)
