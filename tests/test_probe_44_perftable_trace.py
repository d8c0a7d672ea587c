"""Probe 44: the performance table's arguments and the teaching trace's messages.

Each test names what the old code did. The out-of-range ids of the table's evaluations made the
numba kernels read beyond their arrays (wrong numbers, or a segmentation fault), so those cases run
in a child process: a crash there fails one test instead of ending the whole run.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import akfviz
from akfviz.errors import InputError
from akfviz.npu.trace import tiny_case, trace_spmv
from akfviz.selection import perftable as ptab


@pytest.fixture(scope="module")
def table8():
    return ptab.performance_table(tile=8)


# --------------------------------------------------------------------------- calibrate(kernels=…)
@pytest.mark.parametrize("kernels,expected", [
    ("CSC", ("CSC",)),                      # was read letter by letter: "Unknown kernel 'C'"
    (["csc"], ("CSC",)),                    # was kept as 'csc': no caller asking for "CSC" found it
    (["CSC", "csc", "CSC"], ("CSC",)),      # duplicates were calibrated (and stored) twice
    (["NM"], ("NM2:4", "NM1:4", "NM4:8")),  # a family name stands for its variants, as in select
])
def test_calibrate_reads_kernel_names_as_select_does(kernels, expected):
    tab = ptab.calibrate(None, 8, kernels=kernels)
    assert tab.kernels == expected
    assert all(type(k) is str for k in tab.kernels)
    np.testing.assert_array_equal(tab.kernel_ids(list(expected)), np.arange(len(expected)))
    assert len(tab.fit_error) == len(expected) * len(tab.classes) * len(tab.measures)


def test_calibrate_names_the_kernels_in_registry_spelling_for_the_selector():
    full = ptab.calibrate(None, 8)
    low = ptab.calibrate(None, 8, kernels=["dia", "csc"])
    assert low.kernels == ("DIA", "CSC")
    for k in low.kernels:       # the same fit as in the full table
        np.testing.assert_array_equal(low.coef[low.kernels.index(k)], full.coef[full.kernels.index(k)])
    assert low.predict("CSC", "random", 0.1)[0] == full.predict("CSC", "random", 0.1)[0]


@pytest.mark.parametrize("kernels,fragment", [
    ([], r"kernels is empty.*kernels=None"),           # was pandas' ValueError "No objects to concatenate"
    (5, r"kernels must be a list of kernel names, got 5"),   # was TypeError "'int' object is not iterable"
    (["BOGUS"], r"Unknown kernel 'BOGUS'"),
])
def test_calibrate_refuses_bad_kernel_lists_with_a_readable_message(kernels, fragment):
    with pytest.raises(InputError, match=fragment):
        ptab.calibrate(None, 8, kernels=kernels)


# --------------------------------------------------------------------------- unknown keywords
@pytest.mark.parametrize("call", [
    lambda: ptab.calibrate(None, 8, kernel=["CSC"]),
    lambda: ptab.performance_table(None, 8, kernels=["CSC"]),
    lambda: ptab.prediction_error(akfviz.analyze(akfviz.generate("uniform", n=32, seed=0), tile=8),
                                  max_tile=3),
])
def test_unknown_keywords_are_input_errors_listing_the_parameters(call):
    # a TypeError before: the rest of the public API says which parameters there are
    with pytest.raises(InputError, match="Its parameters are"):
        call()


# --------------------------------------------------------------------------- predict
@pytest.mark.parametrize("density,fragment", [
    ([[0.1, 0.2]], r"1-D array.*shape \(1, 2\)"),   # was a numba TypingError
    ("a", r"got 'a'"),                                # was "could not convert string to float"
    (5.0, r"between 0 and 1.*got 5\.0"),              # was priced as a full tile
    (-0.5, r"between 0 and 1.*got -0\.5"),
    ([0.1, np.nan], r"finite|between 0 and 1.*got nan"),   # refused before too (a guard)
])
def test_predict_refuses_what_is_not_a_density(table8, density, fragment):
    with pytest.raises(InputError, match=fragment):
        table8.predict("CSC", "random", density)


def test_predict_still_takes_a_number_a_list_and_the_ends_of_the_range(table8):
    one = table8.predict("CSC", "random", 0.25)
    assert one.shape == (1,)
    many = table8.predict("CSC", "random", [0.0, 0.25, 1.0])
    assert many[1] == one[0] and np.all(np.isfinite(many))
    assert table8.predict("CSC", "random", []).shape == (0,)


def test_evaluate_takes_one_kernel_name_as_a_string(table8):
    # "CSC" was read letter by letter: "Kernel 'C' is not in the performance table"
    got = table8.evaluate("CSC", [3], [0.1])
    np.testing.assert_array_equal(got, table8.evaluate(["CSC"], [3], [0.1]))


def test_evaluate_refuses_mismatched_lengths(table8):
    # the numba kernels read beyond the shorter array
    with pytest.raises(InputError, match=r"cls must have one entry per tile \(1\), got 2"):
        table8.evaluate(["CSC"], [1, 2], [0.1])
    with pytest.raises(InputError, match=r"scale .* one entry per tile \(1\), got 2"):
        table8.evaluate(["CSC"], [1], [0.1], [1.0, 1.0])
    with pytest.raises(InputError, match=r"n_groups .* whole number"):
        table8.group_sums(["CSC"], [1, 1], [0.1, 0.2], [1.0, 1.0], [0, 0], 1.5)   # was cut to 1


_CHILD = textwrap.dedent("""
    import json, numpy as np, akfviz
    from akfviz.errors import InputError
    from akfviz.selection.perftable import performance_table
    tab = performance_table(tile=8)
    pa = akfviz.analyze(akfviz.generate("uniform", n=64, density=0.1, seed=0), tile=8)
    n = pa.compact.nnz.shape[0]
    w = {"energy": 1.0}
    cases = {
        "evaluate cls": lambda: tab.evaluate(["CSC"], [10**9], [0.1]),
        "evaluate cls negative": lambda: tab.evaluate(["CSC"], [-1], [0.1]),
        "evaluate_chosen kernel": lambda: tab.evaluate_chosen([10**9], [1], [0.1]),
        "group_sums group": lambda: tab.group_sums(["CSC"], [1, 1], [0.1, 0.2], [1, 1], [0, 10**9], 1),
        "chosen_pass kernel": lambda: tab.chosen_pass(pa, np.zeros(n, np.int64), np.array([99]), w),
        "chosen_pass unit": lambda: tab.chosen_pass(pa, np.full(n, 10**8, np.int64), np.array([1]), w),
        "chosen_pass short": lambda: tab.chosen_pass(pa, np.zeros(3, np.int64), np.array([1]), w),
        # one past the end (forty-fifth session's mutation probe: `hi > n_valid` let these read one
        # row beyond the arrays, and `n_valid + 1` in each caller was caught by the message alone)
        "evaluate cls +1": lambda: tab.evaluate(["CSC"], [1, len(tab.classes)], [0.1, 0.1]),
        "evaluate_chosen kernel +1": lambda: tab.evaluate_chosen([0, len(tab.kernels)], [1, 1], [0.1, 0.1]),
        "group_sums group +1": lambda: tab.group_sums(["CSC"], [1, 1], [0.1, 0.2], [1, 1], [0, 2], 2),
        "chosen_pass kernel +1": lambda: tab.chosen_pass(pa, np.zeros(n, np.int64), np.array([len(tab.kernels)]), w),
        "chosen_pass unit +1": lambda: tab.chosen_pass(pa, np.full(n, 2, np.int64), np.array([1, 3]), w),
    }
    out = {}
    for name, f in cases.items():
        try:
            f()
            out[name] = "no error"
        except InputError as exc:
            out[name] = "InputError: " + str(exc)
        except Exception as exc:
            out[name] = type(exc).__name__ + ": " + str(exc)
    out["nk"] = len(tab.kernels)
    print(json.dumps(out))
""")


def test_ids_out_of_range_are_refused_instead_of_read_beyond_the_arrays():
    # before: evaluate(["CSC"], [10**9], [0.1]) ended the process with a segmentation fault,
    # chosen_pass with a short or out-of-range unit_of_tile summed memory beyond the arrays
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=600,
                          cwd=root, env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    nk = got.pop("nk")
    expected = {
        "evaluate cls +1": r"cls must hold structure class ids from 0 to 3, got 4\.",
        "evaluate_chosen kernel +1": rf"kernel_index must hold indices into the table's kernels from 0 to {nk - 1}, got {nk}\.",
        "group_sums group +1": r"group must hold group ids from 0 to 1, got 2\.",
        "chosen_pass kernel +1": rf"kernel_of_unit must hold .* from 0 to {nk - 1}, got {nk}\.",
        "chosen_pass unit +1": r"unit_of_tile must hold indices into kernel_of_unit from 0 to 1, got 2\.",
        "evaluate cls": r"cls must hold structure class ids from 0 to 3, got 1000000000",
        "evaluate cls negative": r"cls must hold structure class ids from 0 to 3, got -1",
        "evaluate_chosen kernel": r"kernel_index must hold indices into the table's kernels from 0 to 16",
        "group_sums group": r"group must hold group ids from 0 to 0, got 1000000000",
        "chosen_pass kernel": r"kernel_of_unit must hold .* from 0 to 16, got 99",
        "chosen_pass unit": r"unit_of_tile must hold indices into kernel_of_unit from 0 to 0",
        "chosen_pass short": r"unit_of_tile must have one entry per tile \(64\), got 3",
    }
    for name, pattern in expected.items():
        assert got[name].startswith("InputError: "), (name, got[name])
        assert re.search(pattern, got[name]), (name, got[name])


def test_valid_ids_give_the_same_numbers_as_before(table8):
    rng = np.random.default_rng(4)
    n = 500
    cls = rng.integers(0, 4, n)
    dens = rng.integers(1, 65, n) / 64.0
    scale = np.where(rng.random(n) < 0.2, 0.5, 1.0)
    full = table8.evaluate(list(table8.kernels), cls, dens, scale, measure="cycles")
    kid = rng.integers(0, len(table8.kernels), n)
    chosen = table8.evaluate_chosen(kid, cls, dens, scale, measure="cycles")
    np.testing.assert_array_equal(chosen, full[np.arange(n), kid])
    group = rng.integers(0, 7, n)
    sums = table8.group_sums(list(table8.kernels), cls, dens, scale, group, 7, measure="cycles")
    ref = np.zeros_like(sums)
    np.add.at(ref, group, full)
    np.testing.assert_allclose(sums, ref, rtol=1e-12)


# --------------------------------------------------------------------------- the teaching trace
@pytest.fixture(scope="module")
def case():
    return tiny_case(n=12, tile=4, grid=(2, 2), seed=3)


def test_trace_message_does_not_echo_a_huge_list(case):
    # a list of 4,000 hundred-digit numbers as tile_pe was echoed whole: a 412 KB message
    with pytest.raises(InputError, match=r"tile_pe must be a 1-D array of whole numbers") as exc:
        trace_spmv(case.A_hat, case.x, case.work, case.hw, [10**100] * 4000, case.mapping.red,
                   case.mapping.src)
    assert len(str(exc.value)) < 400


def test_trace_without_x_says_x_is_missing(case):
    # was "x[] is a missing value (None)"
    with pytest.raises(InputError, match=r"x must be a vector of 12 entries \(one per column of A\), got None"):
        trace_spmv(case.A_hat, None, case.work, case.hw, case.mapping.pe, case.mapping.red, case.mapping.src)
