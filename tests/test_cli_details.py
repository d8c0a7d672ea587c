"""Command-line details: each option reaches the library call it names, and the bounds the
command line checks itself are the documented ones (inclusive where the help says so)."""
import json

import pytest

import akfviz
from akfviz import cli
from akfviz.cli import main, without_wall_clock
from akfviz.plain import to_plain

LLM = ["--generate", "llm", "--n", "128", "--m", "96", "--tile", "16"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _plain(obj):
    """As the command line writes it: wall-clock fields dropped, then through JSON."""
    return json.loads(json.dumps(to_plain(without_wall_clock(obj))))


def _library_simulation(*, seed, fused=True, hw=None, rho_x=0.5):
    A = akfviz.generate("llm", n=128, m=96, seed=seed)
    hw = hw or akfviz.HardwareConfig()
    plan = akfviz.select(akfviz.analyze(A, tile=16), hw=hw, seed=seed, rho_x=rho_x)
    res = akfviz.simulate(plan, hw, rho_x=rho_x, seed=seed, fused=fused, record=False)
    return _plain(res.to_dict())


def test_simulate_seed_reaches_the_simulation_not_only_the_selector(capsys):
    # --seed draws the input x and the annealing placement as well as the calibration tiles
    code, out, err = run(capsys, "simulate", *LLM, "--seed", "5", "--rho-x", "0.5")
    assert code == 0, err
    got = json.loads(out)["simulation"]
    want = _library_simulation(seed=5)
    assert got == want
    # the check can tell: simulating the seed-5 plan with seed 0 gives another result
    A = akfviz.generate("llm", n=128, m=96, seed=5)
    hw = akfviz.HardwareConfig()
    plan = akfviz.select(akfviz.analyze(A, tile=16), hw=hw, seed=5, rho_x=0.5)
    other = _plain(akfviz.simulate(plan, hw, rho_x=0.5, seed=0, record=False).to_dict())
    assert other != want


def test_simulate_unfused_flag_reaches_the_simulation(capsys):
    code, out, err = run(capsys, "simulate", *LLM, "--seed", "2", "--rho-x", "0.5", "--unfused")
    assert code == 0, err
    got = json.loads(out)["simulation"]
    assert got == _library_simulation(seed=2, fused=False)
    assert got != _library_simulation(seed=2, fused=True)


def test_compare_tile_option_reaches_compare(capsys, tmp_path):
    out = tmp_path / "cmp.json"
    code, _, err = run(capsys, "compare", "--generate", "llm", "--n", "128", "--m", "96", "--seed", "3",
                       "--tile", "16", "--out", str(out))
    assert code == 0, err
    rows = json.loads(out.read_text())["rows"]
    A = akfviz.generate("llm", n=128, m=96, seed=3)
    want = akfviz.compare(A, tile=16, seed=3)
    default_tile = akfviz.compare(A, tile=32, seed=3)
    assert rows["AKF"]["cycles"] == int(want.loc["AKF", "cycles"])
    assert want.loc["AKF", "cycles"] != default_tile.loc["AKF", "cycles"] \
        or want.loc["AKF", "energy_pj"] != default_tile.loc["AKF", "energy_pj"]
    assert rows["AKF"]["energy_pj"] == pytest.approx(float(want.loc["AKF", "energy_pj"]), rel=1e-12)


@pytest.mark.parametrize("preset", ["loihi-like", "edge-32x32"])
def test_preset_option_reaches_the_hardware(capsys, preset):
    code, out, err = run(capsys, "simulate", *LLM, "--seed", "1", "--rho-x", "0.5", "--preset", preset)
    assert code == 0, err
    got = json.loads(out)["simulation"]
    hw = akfviz.HardwareConfig.preset(preset)
    assert got == _library_simulation(seed=1, hw=hw)
    assert got != _library_simulation(seed=1)


def test_bench_repeats_upper_bound_is_inclusive(capsys, monkeypatch):
    # the help says "between 1 and MAX_REPEATS": exactly MAX_REPEATS is allowed, one more is not
    monkeypatch.setattr(cli, "MAX_REPEATS", 3)
    code, out, err = run(capsys, "bench", "--generate", "banded", "--n", "64", "--tile", "16", "--repeats", "3")
    assert code == 0, err
    assert json.loads(out)["repeats"] == 3
    code, _, err = run(capsys, "bench", "--generate", "banded", "--n", "64", "--tile", "16", "--repeats", "4")
    assert code == 2 and "between 1 and 3" in err


def test_limit_given_twice_the_last_one_counts(capsys):
    gen = ["analyze", "--generate", "banded", "--n", "64", "--tile", "16"]
    code, _, err = run(capsys, *gen, "--limit", "max_nnz=10", "--limit", "max_nnz=100000")
    assert code == 0, err
    code, _, err = run(capsys, *gen, "--limit", "max_nnz=100000", "--limit", "max_nnz=10")
    assert code == 2 and "max_nnz" in err


def test_the_largest_seed_is_accepted(capsys):
    code, out, err = run(capsys, "analyze", "--generate", "banded", "--n", "64", "--tile", "16",
                         "--seed", str(2**63 - 1))
    assert code == 0, err
    with pytest.raises(SystemExit) as exc:       # argparse refuses it before any work
        main(["analyze", "--generate", "banded", "--n", "64", "--tile", "16", "--seed", str(2**63)])
    assert exc.value.code == 2
