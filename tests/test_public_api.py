"""The §9 entry points refuse arguments that do not fit their signature with InputError."""
import pytest

import akfviz


@pytest.fixture(scope="module")
def case():
    A = akfviz.generate("banded", n=64, seed=0)
    pa = akfviz.analyze(A, tile=16)
    return A, pa, akfviz.select(pa, error_budget=0)


CALLS = {
    "generate": lambda A, pa, plan: akfviz.generate(),
    "load": lambda A, pa, plan: akfviz.load(b"", "mtx", None, None),
    "analyze": lambda A, pa, plan: akfviz.analyze(A, tile_size=16),
    "select": lambda A, pa, plan: akfviz.select(pa, alpah=2.0),
    "simulate": lambda A, pa, plan: akfviz.simulate(plan, iteration=2),
    "compare": lambda A, pa, plan: akfviz.compare(A, 16, 1.0, 1.0, 32, 5),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_arguments_outside_the_signature_raise_input_error(case, name):
    # a misspelt keyword used to raise Python's TypeError, outside the "every rejected input" rule
    with pytest.raises(akfviz.InputError) as err:
        CALLS[name](*case)
    msg = str(err.value)
    assert msg.startswith(f"{name}(): ") and "Its parameters are: " in msg


def test_the_check_keeps_names_signatures_and_results(case):
    import inspect

    A, pa, plan = case
    assert akfviz.select.__name__ == "select" and "alpha" in inspect.signature(akfviz.select).parameters
    again = akfviz.select(pa, error_budget=0)
    assert list(again.tile_kernels) == list(plan.tile_kernels)


def test_load_limits_is_exported_at_top_level():
    # every limit message says "limits=akfviz.LoadLimits(...)"; it was only in akfviz.workloads
    import akfviz.workloads

    assert "LoadLimits" in akfviz.__all__ and akfviz.LoadLimits is akfviz.workloads.LoadLimits
    with pytest.raises(akfviz.InputError, match=r"limits=akfviz\.LoadLimits\(max_nnz=\.\.\.\)"):
        akfviz.generate("banded", n=64, limits=akfviz.LoadLimits(max_nnz=5))
