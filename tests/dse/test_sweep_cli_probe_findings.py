"""Findings of a held-out probe of the command line and the sweep (twenty-seventh session): refusals
that came after seconds of work, a misspelt kernel ignored, a ValueError instead of InputError, a
damaged CSV read with shifted values, messages that echoed whole numbers as floats."""
import sys

import numpy as np
import pytest

import akfviz
from akfviz.cli import main
from akfviz.dse import check_sweep, expand_grid, load_sweep, run_sweep, save_sweep
from akfviz.errors import InputError


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_matrix(monkeypatch):
    """The CLI must refuse these before it loads or generates a matrix."""
    import akfviz.cli as cli

    def boom(args):
        raise AssertionError("the matrix was made before the settings were checked")

    monkeypatch.setattr(cli, "_matrix", boom)


@pytest.mark.parametrize("argv, words", [
    (["--vary", "alpha=" + ",".join(map(str, range(1, 22))), "--vary", "beta=" + ",".join(map(str, range(1, 21)))],
     "420"),
    (["--vary", "error_budget=0.1", "--vary", "resource_budget=0.5"], "both an error_budget and a resource_budget"),
    (["--vary", "alpha=1", "--baselines", "--static", "NOSUCH"], "NOSUCH"),
    (["--vary", "alpha=1", "--static", "NOSUCH"], "leave --static out"),  # without --baselines: was exit 0
    (["--vary", "alpha=1", "--tile", "3"], "--tile = 3 is outside [4, 256]"),
    (["--vary", "rows=0"], "'rows' = 0 is outside"),                    # echoed as 0.0 before
])
def test_sweep_refuses_bad_settings_before_making_the_matrix(capsys, no_matrix, argv, words):
    code, out, err = _run(capsys, "sweep", "--generate", "uniform", "--n", "64", *argv)
    assert code == 2 and words in err and "Traceback" not in err
    assert "0.0 is outside" not in err and "3.0 is outside" not in err


def test_check_sweep_counts_the_points_run_sweep_would_run():
    grid = {"alpha": [0.1, 1, 10], "tile": [16, 32]}
    assert check_sweep(grid) == 6 == len(expand_grid(grid))
    with pytest.raises(InputError, match="static_kernel|NOSUCH"):
        check_sweep(grid, static_kernel="NOSUCH")


def test_run_sweep_checks_the_static_kernel_without_baselines():
    A = akfviz.generate("banded", n=64, seed=0)
    with pytest.raises(InputError, match="NOSUCH"):
        run_sweep(A, {"alpha": [1.0]}, base={"tile": 16}, static_kernel="NOSUCH")


@pytest.mark.parametrize("max_points", [sys.maxsize, 2**64, 10**9 + 1])
def test_max_points_beyond_the_limit_is_an_input_error(max_points):
    with pytest.raises(InputError, match="max_points must be a whole number between 1 and 1000000000"):
        expand_grid({"alpha": [1]}, max_points=max_points)
    assert len(expand_grid({"alpha": [1, 2]}, max_points=10**9)) == 2


def test_compare_refuses_alpha_and_beta_both_zero_before_any_baseline(monkeypatch, capsys):
    import importlib

    cmp = importlib.import_module("akfviz.compare")   # the module: akfviz.compare may be the function (lazy export)

    def boom(*args, **kwargs):
        raise AssertionError("a baseline was simulated before the weights were checked")

    monkeypatch.setattr(cmp, "plan_row", boom)
    A = akfviz.generate("banded", n=64, seed=0)
    with pytest.raises(InputError, match="alpha and beta are both 0"):
        cmp.compare(A, alpha=0, beta=0, tile=16)
    with pytest.raises(InputError, match="granularity"):
        cmp.compare(A, tile=16, granularity="tiles")
    code, out, err = _run(capsys, "compare", "--generate", "banded", "--n", "64", "--tile", "16",
                          "--alpha", "0", "--beta", "0")
    assert code == 2 and "alpha and beta are both 0" in err and "[" not in err   # no progress steps


def test_a_sweep_file_named_by_its_ending_alone_is_written_and_read(tmp_path):
    """'--out DIR/.csv' passed the command line's check (by the name's ending) and then failed in
    save_sweep (Path.suffix is '' there) after every point had run."""
    A = akfviz.generate("banded", n=64, seed=0)
    df = run_sweep(A, {"alpha": [1.0, 2.0]}, base={"tile": 16})
    for name in (".csv", ".parquet", "x.PQ"):
        path = save_sweep(df, tmp_path / name)
        back = load_sweep(path)
        np.testing.assert_array_equal(back["cycles"].to_numpy(), df["cycles"].to_numpy())


def test_a_csv_row_with_more_fields_than_the_header_is_refused():
    with pytest.raises(InputError, match="5 fields, more than the 3 columns"):
        load_sweep(b"cycles,energy_pj,error_pct\n1,2,3,4,5\n", fmt="csv")
    ok = load_sweep(b"cycles,energy_pj,error_pct\n1,2,3\n", fmt="csv")
    assert ok["cycles"].tolist() == [1]


def test_sweep_help_names_every_sweep_parameter_and_the_point_limit():
    """`sweep --help` did not list the names, the ';' syntax, 'none' or the limit."""
    import inspect

    from akfviz.cli import build_parser
    from akfviz.dse.sweep import SWEEP_PARAMETERS, run_sweep

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["sweep"]
    text = " ".join(next(a for a in sub._actions if a.dest == "vary").help.split())
    for name in SWEEP_PARAMETERS:
        assert name in text, name
    limit = inspect.signature(run_sweep).parameters["max_points"].default
    assert f"at most {limit}" in text and "';'" in text and "'none'" in text


def test_sweep_refuses_an_unknown_preset_before_making_the_matrix(monkeypatch, capsys):
    """Mutant D8 (cli.py cmd_sweep: check_sweep(hw=None)): --preset is checked with the other
    settings, before the matrix is loaded or generated."""
    import akfviz.cli as cli

    def boom(args):
        raise AssertionError("the matrix was made before the settings were checked")

    monkeypatch.setattr(cli, "_matrix", boom)
    code = cli.main(["sweep", "--vary", "alpha=1", "--preset", "NOSUCH-preset"])
    out, err = capsys.readouterr()
    assert code != 0
    assert "NOSUCH" in err + out


# --------------------------------------------------------------------------- app probe, 42nd session
def test_sweep_files_beyond_the_size_limits_are_refused_at_once():
    import io
    import time

    import numpy as np
    import pandas as pd

    import akfviz
    from akfviz.dse.sweep import MAX_SWEEP_COLUMNS, MAX_SWEEP_ROWS, load_sweep

    t0 = time.process_time()
    with pytest.raises(akfviz.InputError, match="100,001 columns"):
        load_sweep(b"a," * 100_000 + b"\n", name="h.csv")     # pandas took 214 s on this header
    assert time.process_time() - t0 < 5.0
    with pytest.raises(akfviz.InputError, match="names the column 'a' twice"):
        load_sweep(b"a,b,a\n1,2,3\n", name="d.csv")
    big = pd.DataFrame({"cycles": np.arange(MAX_SWEEP_ROWS + 1.0), "energy_pj": 1.0, "error_pct": 0.0,
                        "speedup": 1.0})
    buf = io.BytesIO()
    big.to_parquet(buf)
    for data, name in ((buf.getvalue(), "x.parquet"), (big.to_csv(index=False).encode(), "x.csv")):
        with pytest.raises(akfviz.InputError, match=f"{MAX_SWEEP_ROWS + 1:,} rows"):
            load_sweep(data, name=name)
    ok = big.iloc[:MAX_SWEEP_ROWS]
    assert len(load_sweep(ok.to_csv(index=False).encode(), name="ok.csv")) == MAX_SWEEP_ROWS
    assert MAX_SWEEP_COLUMNS >= 100


def test_damaged_parquet_sweep_is_said_in_words():
    import akfviz
    from akfviz.dse.sweep import load_sweep

    with pytest.raises(akfviz.InputError, match="not a complete Parquet file") as err:
        load_sweep(b"PAR1" + b"x" * 11, name="c.parquet")
    assert "Buffer" not in str(err.value) and "footer" not in str(err.value)
