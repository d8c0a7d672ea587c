"""The command line: every subcommand runs and prints parseable output; errors exit 2."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import akfviz

from akfviz.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


GEN = ["--generate", "banded", "--n", "96", "--tile", "16"]


def test_help_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "akfviz", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for cmd in ("analyze", "select", "simulate", "compare", "calibrate", "sweep", "bench"):
        assert cmd in out.stdout


def _seed_help(command):
    from akfviz.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return " ".join(next(a for a in sub._actions if a.dest == "seed").help.split())


@pytest.mark.parametrize("command, draws", [
    ("analyze", ["--generate matrix"]),
    ("select", ["--generate matrix", "calibration tiles"]),
    ("simulate", ["--generate matrix", "calibration tiles", "input x", "annealing placement"]),
    ("compare", ["--generate matrix", "calibration tiles", "input x", "annealing placement"]),
    ("sweep", ["--generate matrix", "calibration tiles", "input x", "annealing placement"]),
    ("bench", ["--generate matrix", "calibration tiles", "input x"]),
])
def test_seed_help_says_what_the_seed_draws(command, draws):
    text = _seed_help(command)
    for what in draws:
        assert what in text
    if command == "analyze":
        assert "calibration" not in text and "input x" not in text
    if command in ("select", "bench"):          # neither places tiles on the NPU
        assert "annealing" not in text


def test_select_seed_changes_the_calibration_not_the_matrix(capsys):
    """On a file or sample, --seed still changes select's resource (the table's calibration)."""
    outs = []
    for seed in ("0", "1"):
        code, out, _ = run(capsys, "select", "--seed", seed)  # the default (shipped) sample
        assert code == 0
        outs.append(json.loads(out))
    assert outs[0]["nnz"] == outs[1]["nnz"] and outs[0]["fro_norm"] == outs[1]["fro_norm"]
    assert outs[0]["resource"] != outs[1]["resource"]


def test_analyze_prints_summary(capsys):
    code, out, _ = run(capsys, "analyze", *GEN)
    assert code == 0
    summary = json.loads(out)
    assert summary["shape"] == [96, 96] and summary["n_tiles"] > 0


def test_select_and_simulate(capsys):
    code, out, _ = run(capsys, "select", *GEN, "--error-budget", "0")
    assert code == 0
    assert json.loads(out)["relative_error"] == 0.0
    code, out, _ = run(capsys, "simulate", *GEN)
    assert code == 0
    assert json.loads(out)["simulation"]["cycles"] > 0


def test_compare_table(capsys, tmp_path):
    target = tmp_path / "cmp.csv"
    code, _, err = run(capsys, "compare", *GEN, "--out", str(target))
    assert code == 0
    # one progress line per step on stderr, in order
    steps = [line for line in err.splitlines() if line.startswith("[")]
    assert steps[0].startswith("[1/5] Simulating Dense") and steps[-1].startswith("[5/5] Simulating AKF")
    assert len(steps) == 5
    text = target.read_text()
    for name in ("Dense", "BlockSparse", "StaticSparse", "AKF"):
        assert name in text


def test_sweep_writes_csv(capsys, tmp_path):
    target = tmp_path / "sweep.csv"
    code, _, err = run(capsys, "sweep", *GEN, "--vary", "alpha=0.1,10", "--out", str(target))
    assert code == 0, err
    from akfviz.dse.sweep import load_sweep

    assert len(load_sweep(target)) == 2


def test_sweep_baselines_flag_adds_block_and_static_sparse(capsys, tmp_path):
    from akfviz.dse.sweep import BASELINE_COLUMNS, load_sweep, run_sweep

    target = tmp_path / "sweep.csv"
    code, _, err = run(capsys, "sweep", *GEN, "--vary", "rows=8,16", "--baselines", "--static", "dia",
                       "--out", str(target))
    assert code == 0, err
    df = load_sweep(target)
    assert set(BASELINE_COLUMNS) <= set(df.columns) and (df["static_kernel"] == "DIA").all()
    lib = run_sweep(akfviz.generate("banded", n=96), {"rows": [8, 16]}, base={"tile": 16}, baselines=True,
                    static_kernel="DIA")
    np.testing.assert_allclose(df["speedup_vs_staticsparse"], lib["speedup_vs_staticsparse"])
    code, _, err = run(capsys, "sweep", *GEN, "--vary", "rows=8", "--out", str(target))
    assert "static_kernel" not in load_sweep(target).columns


def test_bench_reports_ratio(capsys):
    code, out, _ = run(capsys, "bench", *GEN, "--repeats", "3", "--error-budget", "0")
    assert code == 0
    rep = json.loads(out)
    assert rep["speedup_vs_scipy"] > 0
    assert rep["relative_output_difference"] < 1e-12


def test_calibrate_prints_fits(capsys):
    code, out, _ = run(capsys, "calibrate", "--tile", "16")
    assert code == 0 and out.strip()


@pytest.mark.parametrize("argv, words", [
    (["analyze", "--generate", "no_such_kind"], "no_such_kind"),
    (["analyze", "--input", "/nonexistent/file.mtx"], ""),
    (["analyze", "--generate", "banded", "--tile", "1"], "tile"),
    (["sweep", "--generate", "banded", "--n", "64"], "--vary"),
    (["analyze", "--generate", "uniform", "--param", "n=abc"], "--n"),
    (["analyze", "--generate", "uniform", "--param", "seed=3"], "--seed"),
])
def test_input_errors_exit_2_with_message(capsys, argv, words):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith("error: ") and words in err


def test_matrix_file_as_positional_argument(capsys, tmp_path):
    import gzip

    import scipy.io

    import akfviz

    A = akfviz.generate("banded", n=80, seed=1)
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(path, A)
    code, out, _ = run(capsys, "analyze", str(path), "--tile", "16")
    assert code == 0 and json.loads(out)["nnz"] == A.nnz
    gz = tmp_path / "m.mtx.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    code, out, _ = run(capsys, "select", str(gz), "--error-budget", "0", "--tile", "16")
    assert code == 0 and json.loads(out)["relative_error"] == 0.0
    code, _, err = run(capsys, "analyze", str(path), "--input", str(path))
    assert code == 2 and "once" in err
    code, _, err = run(capsys, "analyze", str(path), "--generate", "banded")
    assert code == 2 and "only one" in err


@pytest.mark.parametrize("cmd,columns,rows", [
    ("analyze", ["bi", "bj", "nnz", "density", "cluster"], "tiles"),
    ("select", ["tile", "bi", "bj", "nnz", "density", "cluster", "kernel", "sq_error"], "tiles"),
    ("simulate", ["pe", "row", "col", "busy", "utilization"], "pes"),
])
def test_out_csv_and_parquet_write_the_commands_table(capsys, tmp_path, cmd, columns, rows):
    # --out x.csv used to write the JSON text into a file named .csv; now each command writes its table
    import numpy as np
    import pandas as pd

    import akfviz

    pa = akfviz.analyze(akfviz.generate("banded", n=96), tile=16)
    for suffix, reader in ((".csv", pd.read_csv), (".parquet", pd.read_parquet)):
        path = tmp_path / f"{cmd}{suffix}"
        code, _, err = run(capsys, cmd, *GEN, "--out", str(path))
        assert code == 0, err
        df = reader(path)
        assert set(columns) <= set(df.columns)
        assert len(df) == (pa.n_tiles if rows == "tiles" else akfviz.HardwareConfig().n_pes)
        assert "wrote" in err and str(path) in err
        if cmd != "simulate":
            np.testing.assert_array_equal(df[["bi", "bj", "nnz"]].to_numpy(), pa.tiles[["bi", "bj", "nnz"]].to_numpy())


@pytest.mark.parametrize("repeats", ["0", "-1", "100001"])
def test_bench_without_a_sensible_number_of_repeats_is_refused(capsys, tmp_path, repeats):
    # 0 repeats once "succeeded" with NaN timings in the JSON
    out = tmp_path / "b.json"
    code, _, err = run(capsys, "bench", *GEN, "--repeats", repeats, "--out", str(out))
    assert code == 2 and "--repeats must be between 1 and" in err and repeats in err
    assert not out.exists()


def test_out_table_suffix_for_a_json_only_result_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, "bench", *GEN, "--repeats", "2", "--out", str(tmp_path / "b.csv"))
    assert code == 2 and "not a table" in err and ".json" in err
    assert not (tmp_path / "b.csv").exists()
    code, _, err = run(capsys, "bench", *GEN, "--repeats", "2", "--out", str(tmp_path / "b.json"))
    assert code == 0 and json.loads((tmp_path / "b.json").read_text())["repeats"] == 2


@pytest.mark.parametrize("out, words", [
    ("missing_dir/plan.csv", "does not exist"),
    ("plan.xyz", "ending in .json"),
    (".", "ending in"),
])
def test_out_paths_that_cannot_be_written_are_refused_before_work(capsys, tmp_path, out, words):
    target = tmp_path / out
    code, outp, err = run(capsys, "select", *GEN, "--out", str(target))
    assert code == 2 and err.startswith("error: --out") and words in err and outp == ""
    assert not (tmp_path / "plan.xyz").exists()


def test_out_sweep_accepts_tables_only(capsys, tmp_path, monkeypatch):
    from akfviz.dse import sweep

    def no_run(*a, **k):
        raise AssertionError("the sweep ran before its --out was checked")

    monkeypatch.setattr(sweep, "run_sweep", no_run)        # refused before any point runs
    code, _, err = run(capsys, "sweep", *GEN, "--vary", "alpha=1", "--out", str(tmp_path / "s.json"))
    assert code == 2 and ".csv" in err and not (tmp_path / "s.json").exists()


def test_select_kernels_option_restricts_candidates_and_expands_families(capsys):
    code, out, err = run(capsys, "select", *GEN, "--granularity", "tile", "--kernels", "csc,NM")
    assert code == 0, err
    counts = json.loads(out)["kernel_counts"]
    assert counts and set(counts) <= {"CSC", "NM2:4", "NM1:4", "NM4:8"}
    code, _, err = run(capsys, "select", *GEN, "--kernels", "CSC,NOPE")
    assert code == 2 and "Unknown kernel 'NOPE'" in err


def test_compare_takes_the_granularity(capsys, tmp_path):
    for g in ("cluster", "tile"):
        code, _, err = run(capsys, "compare", *GEN, "--granularity", g, "--out", str(tmp_path / f"{g}.json"))
        assert code == 0, err
        assert json.loads((tmp_path / f"{g}.json").read_text())["rows"]["AKF"]["cycles"] > 0


@pytest.mark.parametrize("cmd", ["analyze", "select", "simulate", "compare", "bench", "sweep"])
@pytest.mark.parametrize("seed", ["-1", "abc", "9223372036854775808", "1.5"])
def test_bad_seeds_are_refused_by_every_command_before_any_work(capsys, cmd, seed):
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--sample", "stencil5_64x64", "--seed", seed, "--vary", "alpha=1"] if cmd == "sweep"
             else [cmd, "--sample", "stencil5_64x64", "--seed", seed])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --seed: must be a whole number between 0 and" in err and "Traceback" not in err


def test_a_hardware_file_that_is_not_text_is_named(capsys, tmp_path):
    bad = tmp_path / "hw.toml"
    bad.write_bytes(bytes([0xEB, 0xFF, 0x00, 0x81]) * 25)
    code, _, err = run(capsys, "select", *GEN, "--hw", str(bad))
    assert code == 2 and "not UTF-8 text" in err


def test_the_seed_reaches_the_selector_so_select_agrees_with_compare(capsys):
    # the seed picks the performance table's calibration tiles: select, simulate and compare
    # must all use it, or their plans differ (4.04 % against 3.30 % once)
    args = ["--generate", "llm", "--n", "256", "--m", "128", "--seed", "3", "--granularity", "tile",
            "--tile", "16"]
    code, out, _ = run(capsys, "select", *args)
    sel = json.loads(out)
    code, out, _ = run(capsys, "compare", *args)
    akf = [ln.split() for ln in out.splitlines() if ln.startswith("AKF")][0]
    assert code == 0
    import akfviz
    A = akfviz.generate("llm", n=256, m=128, seed=3)
    df = akfviz.compare(A, tile=16, granularity="tile", seed=3)
    assert sel["relative_error"] == pytest.approx(df.loc["AKF", "error_pct"] / 100, rel=1e-9)


@pytest.mark.parametrize("argv, words", [
    (["analyze", ""], "--input / FILE is empty"),
    (["analyze", "--input", ""], "--input / FILE is empty"),
    (["analyze", "--generate", " "], "--generate is empty"),
    (["analyze", "--sample", ""], "--sample is empty"),
    (["analyze", "--generate", "uniform", "--param", "=0.1"], "no name before '='"),
    (["sweep", *GEN, "--vary", "alpha=1", "--vary", "alpha=2"], "given twice"),
    (["sweep", *GEN, "--vary", "alpha=true"], "needs a number"),
    (["sweep", *GEN, "--vary", "tile=16.5"], "whole number"),
    (["sweep", "--generate", "banded", "--n", "96", "--tile", "999", "--vary", "alpha=1"], "999"),
    (["bench", *GEN, "--repeats", "2", "--out", "x.csv"], "not a table; give a file name ending in .json"),
])
def test_more_input_errors_exit_2_before_any_work(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and err.startswith("error: ") and words in err, err
    assert out == ""


def test_sweep_uses_the_tile_option_and_any_case_of_the_suffix(capsys, tmp_path):
    import pandas as pd

    out = tmp_path / "S.CSV"
    code, _, err = run(capsys, "sweep", "--generate", "uniform", "--n", "128", "--tile", "16",
                       "--vary", "alpha=1", "--out", str(out))
    assert code == 0 and out.exists() and "wrote 1 points" in err
    code, _, _ = run(capsys, "sweep", "--generate", "uniform", "--n", "128", "--vary", "tile=16",
                     "--vary", "alpha=1", "--out", str(tmp_path / "v.csv"))
    a, b = pd.read_csv(out), pd.read_csv(tmp_path / "v.csv")
    assert a["cycles"].iloc[0] == b["cycles"].iloc[0]          # --tile 16 is the same as varying tile=16


def test_every_written_file_is_announced(capsys, tmp_path):
    for name in ("a.json", "a.csv"):
        code, _, err = run(capsys, "analyze", *GEN, "--out", str(tmp_path / name))
        assert code == 0 and f"to {tmp_path / name}" in err


@pytest.mark.parametrize("argv, words", [
    (["analyze", "--generate", "banded", "--tensor", "w"], "--tensor names a tensor inside a .safetensors"),
    (["analyze", "--sample", "minilm_ffn_up_mag50", "--tensor", "w"], "give the file too"),
    (["analyze", "--n", "500"], "--n only shapes a generated matrix"),
    (["analyze", "--m", "50"], "--m only shapes a generated matrix"),
    (["analyze", "--n", "50", "--param", "density=0.1"], "--n and --param only shape a generated matrix"),
    (["select", *GEN, "--alpha", "2", "--error-budget", "0.01"], "not used with --error-budget"),
    (["simulate", *GEN, "--beta", "1", "--error-budget", "0"], "not used with --error-budget"),
    (["compare", *GEN, "--hw", "chip.toml", "--preset", "loihi-like"], "either --hw FILE or --preset NAME"),
    (["calibrate", "--hw", "chip.toml", "--preset", "loihi-like"], "either --hw FILE or --preset NAME"),
])
def test_options_that_would_be_ignored_are_refused(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and err.startswith("error: ") and words in err, err
    assert out == ""


def test_a_table_printed_to_the_terminal_claims_no_file(capsys):
    code, out, err = run(capsys, "compare", *GEN, "--alpha", "2")
    assert code == 0 and "AKF" in out
    assert "wrote" not in err and "None" not in err


def test_the_default_generated_size_is_1024_rows(capsys):
    code, out, _ = run(capsys, "analyze", "--generate", "banded")
    assert code == 0 and json.loads(out)["shape"] == [1024, 1024]


@pytest.mark.parametrize("cmd", [["calibrate"], ["select", *GEN]])
@pytest.mark.parametrize("opt", ["--hw", "--preset"])
def test_empty_hardware_options_are_refused(capsys, cmd, opt):
    # a held-out probe: --hw "" (an unset shell variable) silently ran on the default hardware
    code, _, err = run(capsys, *cmd, opt, "")
    assert code == 2 and "empty" in err


def test_select_json_names_its_measure_hardware_and_notes(capsys):
    code, out, _ = run(capsys, "select", *GEN, "--resource", "bytes")
    assert code == 0
    sel = json.loads(out)["selection"]
    assert sel["measure"] == "bytes" and len(sel["hw_hash"]) == 64
    assert sel["R_dense"] > 0 and 0 <= sel["resource_share"] and isinstance(sel["notes"], list)


def test_simulate_chooses_kernels_for_its_activation_density(capsys):
    code, out, _ = run(capsys, "simulate", *GEN, "--rho-x", "0.25")
    assert code == 0
    assert json.loads(out)["plan"]["selection"]["rho_x"] == 0.25


def test_a_closed_pipe_ends_quietly():
    # a held-out probe: "calibrate | head -1" ended in a BrokenPipeError traceback
    proc = subprocess.Popen([sys.executable, "-m", "akfviz", "calibrate", "--tile", "8"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_calibrate_takes_the_seed_and_activation_density_select_uses(capsys):
    _, base, _ = run(capsys, "calibrate", "--tile", "8")
    code, seeded, _ = run(capsys, "calibrate", "--tile", "8", "--seed", "3")
    assert code == 0 and seeded != base
    code, _, err = run(capsys, "calibrate", "--tile", "8", "--rho-x", "0")
    assert code == 2 and "rho_x" in err


@pytest.mark.parametrize("cmd, suffix", [("analyze", ".json"), ("select", ".json"), ("simulate", ".json"),
                                         ("compare", ".parquet"), ("sweep", ".csv")])
def test_the_same_command_writes_the_same_bytes(capsys, tmp_path, cmd, suffix):
    extra = ["--vary", "beta=1,10"] if cmd == "sweep" else []
    files = []
    for k in range(2):
        out = tmp_path / f"run{k}{suffix}"
        code, _, _ = run(capsys, cmd, *GEN, *extra, "--out", str(out))
        assert code == 0
        files.append(out.read_bytes())
    assert files[0] == files[1]


def test_timings_are_kept_on_request_and_model_time_always(capsys, tmp_path):
    code, out, _ = run(capsys, "simulate", *GEN)
    doc = json.loads(out)
    assert "timings" not in doc["plan"]["selection"] and "seconds" not in doc["simulation"]["mapping"]
    assert doc["simulation"]["seconds"] > 0                   # cycles / clock: computed, kept
    code, out, _ = run(capsys, "simulate", *GEN, "--timings")
    doc = json.loads(out)
    assert doc["plan"]["selection"]["timings"]["table"] >= 0
    assert doc["simulation"]["mapping"]["seconds"] >= 0
    out = tmp_path / "sweep.csv"
    run(capsys, "sweep", *GEN, "--vary", "beta=1,10", "--timings", "--out", str(out))
    assert "wall_s" in out.read_text().splitlines()[0]
    with pytest.raises(SystemExit) as exit_:                   # bench's result is timings: no such flag
        run(capsys, "bench", *GEN, "--repeats", "2", "--timings")
    assert exit_.value.code == 2 and "--timings" in capsys.readouterr().err


def test_without_wall_clock_drops_only_measurements():
    import pandas as pd

    from akfviz.cli import without_wall_clock

    doc = {"timings": {"a": 1.0}, "seconds": 2.0, "mapping": {"seconds": 3.0, "iterations_per_s": 4.0,
                                                               "objective": 5.0}, "rows": [{"timings": 1}]}
    assert without_wall_clock(doc) == {"seconds": 2.0, "mapping": {"objective": 5.0}, "rows": [{}]}
    df = pd.DataFrame({"cycles": [1], "wall_s": [0.1], "seconds": [1e-6]})
    df.attrs["akf_selection"] = {"timings": {"x": 1}, "alpha": 1.0}
    out = without_wall_clock(df)
    assert list(out.columns) == ["cycles", "seconds"] and out.attrs == {"akf_selection": {"alpha": 1.0}}
    assert "wall_s" in df.columns and "timings" in df.attrs["akf_selection"]     # the input is untouched


# --------------------------------------------------------------------------- one grid parser, one flag name
def test_sweep_takes_static_kernel_as_compare_does_and_keeps_static(capsys, tmp_path):
    from akfviz.dse.sweep import load_sweep

    for flag, kernel in (("--static-kernel", "dia"), ("--static", "csc")):
        target = tmp_path / f"sweep{flag}.csv"
        code, _, err = run(capsys, "sweep", *GEN, "--vary", "rows=8", "--baselines", flag, kernel,
                           "--out", str(target))
        assert code == 0, err
        assert (load_sweep(target)["static_kernel"] == kernel.upper()).all()


@pytest.mark.parametrize("vary", [["alpha=1;alpha=2"], ["alpha=1", "alpha=2"], ["tile=16;beta=1", "tile=32"]])
def test_sweep_refuses_a_parameter_given_twice_however_it_is_written(capsys, vary):
    argv = [a for v in vary for a in ("--vary", v)]
    code, out, err = run(capsys, "sweep", *GEN, *argv)
    assert code == 2 and "given twice" in err and "'" + vary[-1].split("=")[0] + "'" in err, err
    assert out == ""


def test_sweep_vary_reads_none_for_a_budget(capsys, tmp_path):
    target = tmp_path / "s.csv"
    code, _, err = run(capsys, "sweep", *GEN, "--vary", "error_budget=null,0.05", "--out", str(target))
    assert code == 0, err
    from akfviz.dse.sweep import load_sweep

    assert load_sweep(target)["error_budget"].isna().tolist() == [True, False]


def test_generate_default_n_is_the_generators_own(capsys, monkeypatch):
    import importlib

    gen = importlib.import_module("akfviz.workloads.generators")  # the module, not akfviz.generators()
    monkeypatch.setattr(gen, "DEFAULT_N", 40)
    code, out, err = run(capsys, "analyze", "--generate", "banded", "--tile", "8")
    assert code == 0, err
    assert json.loads(out)["shape"] == [40, 40]


def test_out_help_names_only_the_formats_each_command_writes():
    """Held-out probe: every command's --out help promised .json, .csv and .parquet, but sweep
    writes only tables and bench only JSON."""
    from akfviz.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    helps = {name: next(a.help for a in p._actions if a.dest == "out") for name, p in sub.choices.items()}
    assert ".json" not in helps["sweep"] and ".csv" in helps["sweep"]
    assert ".csv" not in helps["bench"] and ".json" in helps["bench"]
    for name in ("analyze", "select", "simulate", "compare"):
        assert ".json" in helps[name] and ".parquet" in helps[name]


def test_prune_a_loaded_matrix_from_the_command_line(capsys, tmp_path):
    """Held-out probe: akf-spec §1 ('pick a 2-D tensor by name, then prune it') had no §9 or CLI
    path: load returned every weight. Now akfviz.prune and --prune."""
    from safetensors.numpy import save_file

    W = np.random.default_rng(0).standard_normal((40, 24)).astype(np.float32)
    path = tmp_path / "w.safetensors"
    save_file({"layer.weight": W}, str(path))
    A = akfviz.load(str(path), tensor="layer.weight")
    assert A.nnz == 960
    assert akfviz.prune(A, "magnitude", sparsity=0.75).nnz == 240
    code, out, _ = run(capsys, "analyze", str(path), "--tensor", "layer.weight", "--prune", "nm:2:4", "--tile", "8")
    assert code == 0
    doc = json.loads(out)
    assert doc["nnz"] == 480 and "pruned (nm 2:4)" in doc["source"]
    for bad in ("foo:1", "magnitude:lots", "nm:3:2"):
        code, _, err = run(capsys, "analyze", str(path), "--prune", bad)
        assert code == 2 and ("prune" in err.lower() or "N:M" in err), (bad, err)


def test_prune_without_a_value_uses_the_documented_defaults(capsys, tmp_path):
    """--help says 'default sparsity 0.9' (and nm means 2:4): a bare method name keeps 10 % / half."""
    W = np.random.default_rng(1).standard_normal((40, 32))   # whole 4×4 blocks
    path = tmp_path / "w.npy"
    np.save(path, W)
    for spec, nnz in (("magnitude", 128), ("magnitude:", 128), ("block", 128), ("nm", 640)):
        code, out, err = run(capsys, "analyze", str(path), "--prune", spec, "--tile", "8")
        assert code == 0, err
        assert json.loads(out)["nnz"] == nnz, spec


def test_param_values_keep_everything_after_the_first_equals_sign():
    from akfviz.cli import _params

    assert _params(["pattern=2:4", "note=a=b", " density = 0.5 "]) == {"pattern": "2:4", "note": "a=b", "density": 0.5}


def test_limit_advice_names_each_limit_once():
    from akfviz.cli import cli_advice

    msg = "Too big: pass limits=akfviz.LoadLimits(max_nnz=..., max_rows=...) or LoadLimits(max_nnz=...)."
    last = cli_advice(msg).splitlines()[-1]
    assert last == "On the command line, raise them with --limit max_nnz=VALUE --limit max_rows=VALUE."


def test_empty_out_is_refused_not_ignored(capsys):
    """Held-out export probe: --out "" printed the result and exited 0, as if --out were not given."""
    code, out, err = run(capsys, "select", *GEN, "--out", "")
    assert code == 2 and "--out is empty" in err and out == ""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc (a folder no file can be made in)")
def test_a_failed_write_is_not_announced_as_written(capsys):
    """Held-out export probe: "wrote the plan … to FILE" came before the write, and also when it failed."""
    for cmd, name in (("select", "akfviz-probe.csv"), ("analyze", "akfviz-probe.json")):
        code, _, err = run(capsys, cmd, *GEN, "--out", f"/proc/{name}")
        assert code == 2 and "could not write" in err and "wrote" not in err, err


def test_table_json_keeps_every_digit_and_the_tables_attrs(capsys, tmp_path):
    """Held-out determinism probe: compare / calibrate --out X.json went through pandas' to_json, which
    keeps 10 decimals (an output error of 4.2e-14 % became 0.0, fit coefficients -0.0) and drops attrs."""
    import akfviz

    out = tmp_path / "c.json"
    code, _, _ = run(capsys, "compare", "--generate", "llm", "--n", "256", "--m", "192", "--seed", "3",
                     "--out", str(out))
    assert code == 0
    doc = json.loads(out.read_text())
    df = akfviz.compare(akfviz.generate("llm", n=256, m=192, seed=3), seed=3)
    assert list(pd.DataFrame.from_dict(doc["rows"], orient="index").index) == list(df.index)
    for name in df.index:
        for col in df.columns:
            want = df.loc[name, col]
            got = doc["rows"][name][col]
            assert (got is None and pd.isna(want)) or got == want, (name, col, got, want)
    assert doc["attrs"]["static_kernel"] == df.attrs["static_kernel"]
    assert doc["attrs"]["hw_hash"] == df.attrs["hw_hash"]
    j, c = tmp_path / "cal.json", tmp_path / "cal.csv"
    for target in (j, c):
        assert run(capsys, "calibrate", "--tile", "8", "--out", str(target))[0] == 0
    table = pd.read_csv(c)
    back = pd.DataFrame.from_dict(json.loads(j.read_text())["rows"], orient="index").reset_index(drop=True)
    num = table.select_dtypes("number").columns
    assert np.array_equal(back[num].to_numpy(float), table[num].to_numpy(float))


# --------------------------------------------------------------------------- --limit (held-out probe)
_FLUFFY = (b"%%MatrixMarket matrix coordinate real general\n%" + b" " * 5_000_000 + b"\n"
           b"2 2 1\n1 2 3.5\n")


def test_limit_option_reaches_load_and_generate(capsys, tmp_path):
    # every limit message said "pass limits=LoadLimits(…)", which the command line could not do
    import gzip

    p = tmp_path / "m.mtx"
    p.write_text("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 2\n")
    code, _, err = run(capsys, "analyze", str(p), "--limit", "max_rows=2")
    assert code == 2 and "over the limit of 2 rows" in err and "akfviz.LoadLimits(" in err
    assert err.rstrip().endswith("On the command line, raise them with --limit max_rows=VALUE "
                                 "--limit max_cols=VALUE.")
    code, out, _ = run(capsys, "analyze", str(p), "--limit", "max_rows=3")
    assert code == 0 and json.loads(out)["shape"] == [3, 3]
    bomb = tmp_path / "x.mtx.gz"
    bomb.write_bytes(gzip.compress(_FLUFFY))
    code, _, err = run(capsys, "analyze", "--input", str(bomb), "--limit", "ratio_floor_bytes=100_000")
    assert code == 2 and "decompression bomb" in err and "--limit max_compression_ratio=VALUE." in err
    code, out, _ = run(capsys, "analyze", "--input", str(bomb), "--limit", "ratio_floor_bytes=100_000",
                       "--limit", "max_compression_ratio=1e6")
    assert code == 0 and json.loads(out)["nnz"] == 1
    for cmd in ("analyze", "select", "simulate", "compare", "sweep", "bench"):
        extra = ["--vary", "alpha=1"] if cmd == "sweep" else []
        code, out, err = run(capsys, cmd, *GEN, "--limit", "max_nnz=10", *extra)
        assert code == 2 and out == "" and "generated 'banded' matrix declares" in err, (cmd, err)
        assert "--limit max_nnz=VALUE" in err


@pytest.mark.parametrize("limit, words", [
    ("max_nz=5", "no size limit named 'max_nz'; NAME is one of: max_rows, max_cols, max_nnz,"),
    ("max_nnz", "--limit needs NAME=VALUE"),
    ("=5", "--limit needs NAME=VALUE"),
    ("max_nnz=lots", "the value must be a number, e.g. --limit max_nnz=500000000 (the limits are: max_rows"),
    ("max_nnz=nan", "the value must be a number"),
    ("max_nnz=2.5", "--limit: LoadLimits.max_nnz must be a positive whole number, got 2.5."),
    ("max_rows=0", "LoadLimits.max_rows must be a positive whole number"),
])
def test_bad_limit_exits_2_naming_the_limits(capsys, limit, words):
    code, out, err = run(capsys, "analyze", *GEN, "--limit", limit)
    assert code == 2 and out == "" and err.startswith("error: ") and words in err, err


def test_limit_without_a_file_or_generator_is_refused(capsys):
    code, out, err = run(capsys, "analyze", "--limit", "max_nnz=5")
    assert code == 2 and "--limit sets a size limit for loading a file" in err
    code, out, err = run(capsys, "analyze", *GEN, "--param", "limits=3")
    assert code == 2 and "Give size limits with --limit NAME=VALUE" in err


def test_limit_names_are_the_fields_of_load_limits_and_are_in_the_help():
    import dataclasses

    from akfviz.cli import LIMIT_NAMES, build_parser

    assert LIMIT_NAMES == tuple(f.name for f in dataclasses.fields(akfviz.LoadLimits))
    subs = next(a for a in build_parser()._actions if a.dest == "command").choices
    for cmd in ("analyze", "select", "simulate", "compare", "sweep", "bench"):
        help_text = next(a for a in subs[cmd]._actions if a.dest == "limit").help
        assert "akfviz.LoadLimits" in help_text and all(n in help_text for n in LIMIT_NAMES)
    assert not any(a.dest == "limit" for a in subs["calibrate"]._actions)  # it loads no matrix


@pytest.mark.parametrize("digits, shown", [(330, "density=a 331-digit number"),
                                           (5000, "(5,003 characters)")])
def test_a_huge_param_number_is_an_error_line_not_a_traceback(capsys, digits, shown):
    """Held-out probe: --param density=1 followed by 330 zeros printed an OverflowError traceback
    (5000 zeros: Python's int-to-text digit limit, a ValueError from the JSON reader)."""
    code, out, err = run(capsys, "analyze", "--generate", "uniform", "--n", "100",
                         "--param", "density=1" + "0" * digits)
    assert code == 2 and out == "" and err.startswith("error: ") and "Traceback" not in err
    assert shown in err and "density" in err and len(err) < 300


def test_sweep_refuses_clustered_blocks_too_large_to_draw_at_once(capsys, monkeypatch):
    """Held-out probe: a million 1000 × 1000 blocks at density 0 would have run for hours."""
    import importlib

    # refused before any fill draw: a draw would fail at once instead of running for hours
    monkeypatch.setattr(importlib.import_module("akfviz.workloads.generators"), "_CLUSTER_DRAWS_PER_STEP", None)
    code, out, err = run(capsys, "sweep", "--generate", "clustered", "--n", "1000",
                         "--param", "blocks=1000000", "--param", "min_block=1000",
                         "--param", "max_block=1000", "--param", "density=0", "--vary", "alpha=1")
    assert code == 2 and out == "" and "1,000,000,000,000 positions" in err and "max_dense_elements" in err


def test_limit_values_written_with_an_exponent_are_whole_numbers():
    from akfviz.cli import _limit_number

    for text, want in (("5e8", 500_000_000), ("500_000_000", 500_000_000), ("1E3", 1000)):
        got = _limit_number(text)
        assert got == want and type(got) is int, text
    assert _limit_number("2.5") == 2.5 and _limit_number("inf") is None and _limit_number("x") is None
