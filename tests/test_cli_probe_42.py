"""Command-line findings of an adversarial probe (forty-second session, ≈ 600 runs): files that
cannot be read, output that cannot be written, advice in the library's terms, and options that
were accepted but changed nothing."""
import errno
import io
import json
import pathlib

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import akfviz
from akfviz.cli import main
from akfviz.workloads import loaders

SMALL = ["--generate", "uniform", "--n", "64"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _unreadable(monkeypatch, name):
    """Reading a file called ``name`` fails as a permission error does (root reads chmod 000)."""
    real = pathlib.Path.read_bytes

    def read_bytes(self):
        if self.name == name:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)
    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)


def test_unreadable_hardware_toml_is_named_not_a_traceback(tmp_path, monkeypatch, capsys):
    hw = tmp_path / "chip.toml"
    hw.write_text(akfviz.HardwareConfig().to_toml())
    _unreadable(monkeypatch, "chip.toml")
    for extra in ([], ["--out", str(tmp_path / "x.json")]):
        code, _, err = run(capsys, "select", *SMALL, "--hw", str(hw), *extra)
        assert code == 2
        assert "could not be read (permission denied)" in err and "Traceback" not in err
        assert "could not write" not in err   # it was blamed on --out
    with pytest.raises(akfviz.InputError, match="could not be read"):
        akfviz.HardwareConfig.from_toml(hw)


def test_hardware_toml_name_over_255_characters_is_a_message(capsys, tmp_path):
    code, _, err = run(capsys, "select", *SMALL, "--hw", str(tmp_path / ("a" * 300 + ".toml")))
    assert code == 2 and "No hardware TOML file at" in err and "Traceback" not in err


def test_hardware_toml_folder_is_called_a_folder(capsys, tmp_path):
    code, _, err = run(capsys, "select", *SMALL, "--hw", str(tmp_path))
    assert code == 2 and "is a folder, not a file" in err


def test_unreadable_matrix_file_is_not_called_corrupt(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(path, sp.eye_array(4, format="coo"))
    real = open

    def fake_open(file, *a, **k):
        if str(file) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real(file, *a, **k)
    monkeypatch.setattr(loaders, "open", fake_open, raising=False)
    with pytest.raises(akfviz.InputError, match=r"'m.mtx' could not be read \(permission denied\)") as err:
        akfviz.load(path)
    assert "corrupt" not in str(err.value)
    code, _, err = run(capsys, "analyze", str(path))
    assert code == 2 and "permission denied" in err


def test_matrix_market_file_with_an_undecodable_name_loads(tmp_path):
    raw = bytes(tmp_path) + b"/\xff.mtx"
    with open(raw, "wb") as fh:
        fh.write(b"%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1.5\n2 3 -2\n")
    import os
    path = os.fsdecode(raw)   # the name as Python holds it: a surrogate for the byte 0xFF
    A = akfviz.load(path)
    assert A.toarray().tolist() == [[1.5, 0, 0], [0, 0, -2]]


class _FullDisk(io.TextIOBase):
    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("argv", [["calibrate"], ["analyze", *SMALL]])
def test_failed_write_to_standard_output_is_one_line(monkeypatch, capsys, argv):
    monkeypatch.setattr("sys.stdout", _FullDisk())
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == "error: could not write the result to standard output: No space left on device."


@pytest.mark.parametrize("argv, line", [
    (["analyze", "FILE", "--tensor", "w"], "On the command line, leave --tensor out."),
    (["compare", *SMALL, "--rho-x", "0"], "On the command line, the simulate command accepts --rho-x 0."),
])
def test_library_advice_gets_its_command_line_form(tmp_path, capsys, argv, line):
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(path, sp.eye_array(4, format="coo"))
    argv = [str(path) if a == "FILE" else a for a in argv]
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.rstrip().endswith(line)


def test_several_tensors_message_names_the_tensor_option(tmp_path, capsys):
    from safetensors.numpy import save_file
    path = tmp_path / "two.safetensors"
    save_file({"w": np.eye(4), "w2": np.eye(5)}, str(path))
    code, _, err = run(capsys, "analyze", str(path))
    assert code == 2 and "On the command line, name it with --tensor NAME." in err


def test_edited_preset_toml_advice_names_preset_and_hw(tmp_path, capsys):
    text = akfviz.HardwareConfig().to_toml()
    lines = [ln for ln in text.splitlines() if not ln.startswith("rows")]
    hw = tmp_path / "edited.toml"
    hw.write_text("\n".join(["rows = 8"] + lines) + "\n")
    code, _, err = run(capsys, "select", *SMALL, "--hw", str(hw))
    if code == 0:
        pytest.skip("this preset accepts an edited grid")
    assert "--preset NAME" in err and "--hw FILE" in err


def test_static_without_baselines_is_refused(capsys):
    code, _, err = run(capsys, "sweep", *SMALL, "--vary", "alpha=1", "--static", "NM2:4")
    assert code == 2 and "add --baselines, or leave --static out" in err


def test_sweep_of_weights_at_budgeted_points_is_refused(capsys):
    code, _, err = run(capsys, "sweep", "--generate", "llm", "--n", "128", "--m", "96",
                       "--vary", "alpha=0.1,10;error_budget=0.01")
    assert code == 2 and "sweeps alpha at points with an error_budget" in err
    code, _, err = run(capsys, "sweep", *SMALL, "--vary", "beta=0.1,10;resource_budget=none,0.5")
    assert code == 2 and "sweeps beta at points with a resource_budget" in err
    # one weight value beside budgets is a fixed setting, not a sweep of it
    code, out, err = run(capsys, "sweep", *SMALL, "--vary", "alpha=2;error_budget=none,0.01")
    assert code == 0, err


def test_simulate_rho_x_range_is_said_once(capsys):
    for value in ("1.5", "-0.1"):
        code, _, err = run(capsys, "simulate", *SMALL, "--rho-x", value)
        assert code == 2 and "between 0 and 1" in err
        # the range is said once, not once by the CLI and again by the library
        assert err.count("between 0 and 1") + err.count("[0, 1]") == 1, err


def test_out_under_a_file_is_said_to_be_under_a_file(tmp_path, capsys):
    (tmp_path / "a.json").write_text("{}")
    code, _, err = run(capsys, "analyze", *SMALL, "--out", str(tmp_path / "a.json" / "x.json"))
    assert code == 2 and "is a file, not a folder" in err


def test_valid_runs_still_write_their_result(tmp_path, capsys):
    code, out, err = run(capsys, "analyze", *SMALL)
    assert code == 0 and json.loads(out)["nnz"] > 0
