"""A pandas nullable column with gaps (or an object array holding None) as x / X / b: the refusal
names the first missing entry instead of "dtype object"."""
import numpy as np
import pandas as pd
import pytest

import akfviz
from akfviz.errors import InputError


@pytest.fixture(scope="module")
def plan():
    A = akfviz.generate("uniform", n=8, density=0.5, seed=0)
    return akfviz.select(akfviz.analyze(A, tile=4))


@pytest.mark.parametrize("x", [pd.array([True, None] * 4, dtype="boolean"),
                               pd.Series([True, None] * 4, dtype="boolean"),
                               np.array([1.0, None] * 4, dtype=object)],
                         ids=["BooleanArray", "Series", "object-None"])
def test_missing_entry_is_named(plan, x):
    with pytest.raises(InputError, match=r"x\[1\] is a missing value .*fillna\(0\)"):
        plan.matvec(x)


def test_missing_entry_of_a_matrix_is_named_with_both_indices(plan):
    X = pd.DataFrame({"a": [1.0] * 8, "b": pd.array([True] * 5 + [None] * 3, dtype="boolean")})
    with pytest.raises(InputError, match=r"X\[5, 1\] is a missing value"):
        plan.matmat(X)


def test_object_arrays_without_gaps_keep_their_message(plan):
    with pytest.raises(InputError, match="got dtype object"):
        plan.matvec(np.array(["a"] * 8, dtype=object))


def test_the_simulator_says_the_same(plan):
    with pytest.raises(InputError, match=r"is a missing value"):
        akfviz.simulate(plan, x=pd.array([1.0, None] * 4, dtype="Float64").astype(object))


def test_the_solver_names_a_missing_entry_of_b():
    from akfviz.npu.iterative import run_solver

    A = akfviz.generate("stencil5", n=16, seed=0)
    plan = akfviz.select(akfviz.analyze(A, tile=4))
    b = pd.array([1.0, None] * (A.shape[0] // 2), dtype="Float64")
    with pytest.raises(InputError, match=r"b\[1\] is a missing value"):
        run_solver(plan, method="cg", b=b.astype(object))
    # a Float64 Series reaches numpy as floats with NaN for NA: refused as NaN, counted
    with pytest.raises(InputError, match=r"b has 8 NaN"):
        run_solver(plan, method="jacobi", b=pd.Series(b))
