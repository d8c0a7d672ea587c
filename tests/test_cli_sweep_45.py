"""Forty-fifth session: the command line takes whole numbers written as ``8.0`` / ``2e3`` where the
library does, ``--help`` lists the generators, and a sweep refuses a value listed twice (it ran the same
points again and added identical rows)."""
import json

import pytest

import akfviz
from akfviz import cli
from akfviz.dse import sweep
from akfviz.errors import InputError


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- generator names
def test_generator_names_of_the_help_are_the_registry():
    assert cli.GENERATOR_NAMES == tuple(akfviz.generators())


def test_generate_help_lists_every_generator(capsys):
    with pytest.raises(SystemExit):
        cli.main(["analyze", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    start = text.index("--generate KIND a generator")      # the option's help, not the usage line
    listing = text[start:text.index("--n N", start)]
    for name in akfviz.generators():
        assert name in listing, name


# --------------------------------------------------------------------------- whole numbers
@pytest.mark.parametrize("text, value", [("8", 8), ("8.0", 8), ("1e3", 1000), ("1_000", 1000), (" 16 ", 16)])
def test_whole_number_arguments_take_the_writings_the_library_takes(text, value):
    args = cli.build_parser().parse_args(["analyze", "--tile", text])
    assert args.tile == value and type(args.tile) is int
    args = cli.build_parser().parse_args(["bench", "--repeats", text, "--n", text, "--m", text])
    assert (args.repeats, args.n, args.m) == (value, value, value)
    args = cli.build_parser().parse_args(["simulate", "--iterations", text])
    assert args.iterations == value
    args = cli.build_parser().parse_args(["calibrate", "--tile", text])
    assert args.tile == value


@pytest.mark.parametrize("text", ["8.5", "eight", "inf", "nan", "1e400", ""])
def test_whole_number_arguments_refuse_the_rest(capsys, text):
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["analyze", "--tile", text])
    assert exc.value.code == 2
    assert f"argument --tile: must be a whole number, got {text!r}" in capsys.readouterr().err


def test_tile_written_as_a_float_gives_the_same_analysis(capsys):
    base = ["analyze", "--generate", "uniform", "--param", "density=0.02"]
    code_a, out_a, _ = _run(capsys, *base, "--n", "300", "--tile", "8")
    code_b, out_b, _ = _run(capsys, *base, "--n", "3e2", "--tile", "8.0")
    assert code_a == code_b == 0
    a, b = json.loads(out_a), json.loads(out_b)
    assert a == b
    assert a["shape"] == [300, 300] and a["tile"] == 8


def test_out_of_range_whole_numbers_are_the_library_s_to_refuse(capsys):
    code, _, err = _run(capsys, "analyze", "--generate", "uniform", "--n", "100", "--tile", "1e3")
    assert code == 2 and "tile side must be between" in err


# --------------------------------------------------------------------------- repeated sweep values
@pytest.mark.parametrize("grid, name, word", [
    ({"alpha": [1, 1.0, 10]}, "alpha", "1"),
    ({"tile": [16, 32, 32.0]}, "tile", "32"),
    ({"granularity": ["tile", "cluster", "tile"]}, "granularity", "tile"),
    ({"error_budget": [None, 0.01, None]}, "error_budget", "none"),
    ({"beta": [0.5, 2], "rows": [64, 64]}, "rows", "64"),
])
def test_a_value_listed_twice_is_refused(grid, name, word):
    with pytest.raises(InputError) as exc:
        sweep.expand_grid(grid)
    msg = str(exc.value)
    assert f"'{name}' lists {word} more than once" in msg and "remove the repeat" in msg


def test_distinct_values_still_sweep():
    points = sweep.expand_grid({"alpha": [1, 1.5, 10], "error_budget": [None, 0.01], "granularity": ["tile"]})
    assert len(points) == 6
    assert [p["alpha"] for p in points[::2]] == [1.0, 1.5, 10.0]


def test_run_sweep_refuses_a_repeat_before_any_work():
    A = akfviz.generate("uniform", n=64, density=0.05, seed=0)
    calls = []
    with pytest.raises(InputError, match="'alpha' lists 2 more than once"):
        sweep.run_sweep(A, {"alpha": [2, 2]}, progress=lambda *a: calls.append(a))
    assert calls == []


def test_cli_sweep_repeat_is_an_error_message(capsys):
    code, out, err = _run(capsys, "sweep", "--generate", "uniform", "--n", "64", "--vary", "beta=0.1,1,0.1")
    assert code == 2 and out == ""
    assert err.startswith("error: Sweep parameter 'beta' lists 0.1 more than once (0.1, 1, 0.1)")


def test_design_space_page_shows_the_repeat_as_an_error():
    import pathlib

    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(pathlib.Path(__file__).resolve().parents[1] / "app.py"), default_timeout=600)
    app.run()
    app.switch_page("pages/5_Design_space.py").run()
    app.text_input(key="w:sweep").set_value("tile=16,32,16").run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("'tile' lists 16 more than once" in e.value for e in app.error), [e.value for e in app.error]
