"""Findings of the forty-ninth session's docs-truth probe (docs/decisions.md, "Forty-ninth
session"): the README says every rejected input raises ``akfviz.InputError``, but an unknown or
extra argument to ``prune``, the sweep functions and the result objects' methods raised Python's
``TypeError``; and names are taken in any case everywhere but on the command line's choices."""
import importlib
import inspect
import json

import pytest

import akfviz
from akfviz import cli
from akfviz.cli import main
from akfviz.errors import InputError

dse = importlib.import_module("akfviz.dse")
sweep = importlib.import_module("akfviz.dse.sweep")
SMALL = ["--generate", "uniform", "--n", "64", "--tile", "16"]


@pytest.fixture(scope="module")
def results():
    A = akfviz.generate("uniform", n=64, seed=0)
    pa = akfviz.analyze(A, tile=16)
    plan = akfviz.select(pa)
    return {"pa": pa, "plan": plan, "sim": akfviz.simulate(plan), "hw": akfviz.HardwareConfig(),
            "limits": akfviz.LoadLimits()}


def _public_callables(results):
    """Every public function of ``akfviz`` and ``akfviz.dse`` and every public method of the
    objects the API returns or takes (analysis, plan, simulation result, hardware, load limits)."""
    out = {}
    for name in akfviz.__all__:
        obj = getattr(akfviz, name)
        if callable(obj) and not inspect.isclass(obj):
            out[f"akfviz.{name}"] = obj
    for name in dir(dse):
        obj = getattr(dse, name)
        if not name.startswith("_") and inspect.isfunction(obj):
            out[f"akfviz.dse.{name}"] = obj
    for label, obj in results.items():
        for name in dir(obj):
            if name.startswith("_"):
                continue
            attr = getattr(obj, name)
            if inspect.ismethod(attr) or inspect.isfunction(attr):
                out[f"{label}.{name}"] = attr
    return out


def test_every_public_callable_refuses_an_unknown_keyword_with_input_error(results):
    calls = _public_callables(results)
    # the probe's list, so that the enumeration itself cannot silently shrink
    for name in ["akfviz.prune", "akfviz.dse.run_sweep", "akfviz.dse.check_sweep", "akfviz.dse.load_sweep",
                 "plan.to_dict", "plan.approx_matrix", "plan.npu_work", "plan.tile_table", "sim.timeline",
                 "sim.pe_frame", "sim.total", "sim.busiest_pes", "pa.summary", "pa.cluster_members",
                 "hw.from_preset", "hw.config_hash", "hw.to_plain", "limits.check_nnz"]:
        assert name in calls
    wrong = {}
    for name, fn in sorted(calls.items()):
        try:
            fn(no_such_argument=1)
        except InputError as exc:
            msg = str(exc)   # the unknown name, or (a required one missing first) the parameters
            assert any(t in msg for t in ("no_such_argument", "Its parameters are", "takes no arguments")), \
                (name, msg)
        except Exception as exc:       # noqa: BLE001 — the point is which type escapes
            wrong[name] = f"{type(exc).__name__}: {exc}"
        else:
            wrong[name] = "accepted"
    assert not wrong, wrong


@pytest.mark.parametrize("call", [
    lambda r: akfviz.prune(akfviz.generate("uniform", n=32), "magnitude", 0.5, "2:4", 4, 9),
    lambda r: r["pa"].cluster_members(),
    lambda r: r["plan"].tile_table(1),
    lambda r: r["sim"].timeline(None, 10, 3),
    lambda r: akfviz.HardwareConfig.from_preset(),
    lambda r: dse.expand_grid(),
])
def test_missing_or_extra_positional_arguments_are_input_errors(results, call):
    with pytest.raises(InputError, match="Its parameters are|It takes no arguments"):
        call(results)


def test_the_checked_methods_still_work(results):
    pa, plan, sim = results["pa"], results["plan"], results["sim"]
    assert pa.summary()["n_tiles"] == pa.n_tiles
    assert len(pa.cluster_members(0)) >= 1
    assert len(plan.tile_table()) == pa.n_tiles
    assert sim.total("macs") >= 0
    assert akfviz.HardwareConfig.from_preset("loihi-like").config_hash() != results["hw"].config_hash()


def test_the_command_line_offers_the_library_names():
    costs = importlib.import_module("akfviz.selection.costs")
    perftable = importlib.import_module("akfviz.selection.perftable")
    assert set(cli.GRANULARITIES) == set(costs.GRANULARITIES)
    assert set(cli.RESOURCES) == set(perftable.RESOURCES)
    assert set(cli.SCHEDULERS) == set(sweep.SCHEDULERS)


@pytest.mark.parametrize("option, upper, lower", [("--granularity", "TILE", "tile"),
                                                   ("--resource", " Cycles ", "cycles")])
def test_command_line_choices_are_taken_in_any_case(tmp_path, capsys, option, upper, lower):
    outs = []
    for value in (upper, lower):
        path = tmp_path / f"{value.strip()}.json"
        assert main(["select", *SMALL, option, value, "--out", str(path)]) == 0
        outs.append(json.loads(path.read_text()))
    assert outs[0] == outs[1]
    with pytest.raises(SystemExit):
        main(["select", *SMALL, option, "nonsense"])
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


def test_sweep_scheduler_any_case(tmp_path):
    A = akfviz.generate("uniform", n=64, seed=0)
    grid = {"alpha": [1.0]}
    a = dse.run_sweep(A, grid, scheduler="LOCAL", base={"tile": 16})
    b = dse.run_sweep(A, grid, scheduler="local", base={"tile": 16})
    cols = [c for c in a.columns if "time" not in c and not c.endswith("_s")]
    assert a[cols].equals(b[cols])
    with pytest.raises(InputError, match="scheduler must be"):
        dse.run_sweep(A, grid, scheduler="threads")
    path = tmp_path / "s.csv"
    assert main(["sweep", *SMALL, "--vary", "alpha=1", "--scheduler", "Local", "--out", str(path)]) == 0
    assert path.read_text().count("\n") >= 2
