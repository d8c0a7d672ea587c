"""HardwareConfig and EnergyTable: validation, TOML round-trip, hash, presets, provenance."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import akfviz
from akfviz.errors import InputError
from akfviz.npu.energy import ACTIONS, EnergyEntry, EnergyTable
from akfviz.npu.hardware import HardwareConfig
from akfviz.analysis.lsh import LSHConfig
from akfviz.workloads import LoadLimits


def test_defaults_and_public_entry():
    hw = akfviz.HardwareConfig()
    assert (hw.rows, hw.cols, hw.n_pes) == (256, 256, 65536)
    assert hw.energy.name == "horowitz-45nm" and hw.preset == "horowitz-45nm"
    assert hw.energy.mac_fp32.value == pytest.approx(3.7 + 0.9)
    assert hw.energy.mac_int8.value == pytest.approx(0.2 + 0.03)
    assert hw.energy.sram_read.value == pytest.approx(10 / 8)
    assert hw.energy.dram.value == pytest.approx(1300 / 8)


@pytest.mark.parametrize("field,value", [("rows", 0), ("cols", 5000), ("mac_lanes", 0),
                                         ("clock_hz", float("nan")), ("dram_bytes_per_cycle", 0),
                                         ("rows", 2.5), ("setup_cycles", -1), ("rows", "8"),
                                         ("rows", True), ("mac_lanes", False)])
def test_validation_names_field_and_value(field, value):
    with pytest.raises(InputError, match=field):
        HardwareConfig(**{field: value})


def test_toml_round_trip_and_unknown_keys():
    hw = HardwareConfig.preset("loihi-like").replace(rows=16, cols=8)
    back = HardwareConfig.from_toml(hw.to_toml())
    assert back == hw and back.config_hash() == hw.config_hash()
    assert back.preset == "custom"
    with pytest.raises(InputError, match="Unknown key"):
        HardwareConfig.from_toml("warp_drive = 1\n" + hw.to_toml())
    with pytest.raises(InputError, match="parsed"):
        HardwareConfig.from_toml("rows = = 3")
    bad = hw.to_toml().replace('grade = "simulated"', 'grade = "guessed"', 1)
    with pytest.raises(InputError, match="grade"):
        HardwareConfig.from_toml(bad)


def test_hash_stable_across_processes():
    code = "import akfviz; print(akfviz.HardwareConfig().config_hash())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(pathlib.Path(__file__).resolve().parents[2])).stdout.strip()
    assert out == HardwareConfig().config_hash()
    assert HardwareConfig(rows=8).config_hash() != HardwareConfig().config_hash()


def test_remembered_hash_is_the_hash_of_the_toml_text(monkeypatch):
    """config_hash is remembered per plain form: every configuration, asked in any order and
    again after the memory is cleared, gets the sha256 of its own TOML text."""
    import hashlib

    from akfviz.npu import hardware as hw_mod

    def direct(h):
        return hashlib.sha256(h.to_toml().encode("utf-8")).hexdigest()

    configs = [HardwareConfig(), HardwareConfig(rows=8), HardwareConfig(rows=8, cols=16),
               HardwareConfig.preset(HardwareConfig.preset_names()[-1]),
               HardwareConfig(energy=EnergyTable.preset("horowitz-45nm").replace(dram=100.0))]
    for h in configs + configs[::-1]:
        assert h.config_hash() == direct(h)
    assert len({h.config_hash() for h in configs}) == len(configs)
    monkeypatch.setattr(hw_mod, "_CONFIG_HASHES", {})
    monkeypatch.setattr(hw_mod, "_CONFIG_HASHES_MAX", 2)
    for h in configs:   # the memory is cleared when full: still the right hashes
        assert h.config_hash() == direct(h)
    assert len(hw_mod._CONFIG_HASHES) <= 2


def test_replace_validates_and_presets():
    hw = HardwareConfig()
    with pytest.raises(InputError, match="mac_lanes"):
        hw.replace(mac_lanes=-3)
    with pytest.raises(InputError, match="Unknown HardwareConfig field"):
        hw.replace(lanes=3)
    for name in HardwareConfig.preset_names():
        assert HardwareConfig.preset(name).preset == name
    with pytest.raises(InputError, match="available"):
        HardwareConfig.preset("tpu")


def test_the_preset_label_names_the_configuration_it_is_on():
    # labels derived from the values
    assert HardwareConfig().preset == "horowitz-45nm" and HardwareConfig(rows=8).preset == "custom"
    edge = HardwareConfig.preset("edge-32x32")
    assert HardwareConfig(**{k: getattr(edge, k) for k in ("rows", "cols", "sram_bytes_per_pe",
                                                           "dram_bytes_per_cycle", "barrier_cycles")}
                          ).preset == "edge-32x32"
    assert HardwareConfig(rows=8).replace(rows=256).preset == "horowitz-45nm"
    assert HardwareConfig.preset("loihi-like").replace(rows=8).preset == "custom"
    # a registered name given explicitly must match: preset="loihi-like" once ran Horowitz energies
    with pytest.raises(InputError) as err:
        HardwareConfig(preset="loihi-like")
    msg = str(err.value)
    assert "labelled preset 'loihi-like'" in msg and "mac_lanes (4 instead of 1)" in msg
    assert "energy table ('horowitz-45nm' instead of 'loihi-like')" in msg
    loihi = HardwareConfig.preset("loihi-like").to_toml()
    with pytest.raises(InputError, match=r"differs from that preset in: mac_lanes \(2 instead of 1\)"):
        HardwareConfig.from_toml(loihi.replace("mac_lanes = 1", "mac_lanes = 2"))
    with pytest.raises(InputError, match="edited entries"):
        HardwareConfig(preset="horowitz-45nm", energy=HardwareConfig().energy.replace(dram=1.0, name="horowitz-45nm"))
    # any other name is a free label; round trips keep every label
    assert HardwareConfig(rows=8, preset="my-chip").preset == "my-chip"
    for hw in (HardwareConfig.preset("loihi-like"), HardwareConfig(rows=8), HardwareConfig(preset="x")):
        assert HardwareConfig.from_toml(hw.to_toml()) == hw


def test_energy_presets_have_provenance_and_no_zero():
    for name in EnergyTable.presets():
        t = EnergyTable.preset(name)
        for a in ACTIONS:
            e = getattr(t, a)
            assert e.value > 0 and np.isfinite(e.value)
            assert e.grade in ("measured", "simulated", "assumed") and e.source and e.node
            if e.grade == "assumed":
                assert "assumed" in e.source or "Loihi has no" in e.source
    loihi = EnergyTable.preset("loihi-like")
    assert loihi.mac_int8.value == 23.6 and loihi.event_receive.value == 1.7
    assert 3.0 <= loihi.noc_hop.value <= 4.0


def test_energy_edit_and_frame_round_trip():
    t = EnergyTable.preset("horowitz-45nm")
    t2 = t.replace(dram=100.0)
    assert t2.dram.value == 100.0 and t2.dram.grade == "assumed" and "edited" in t2.dram.source
    assert t.dram.value == 162.5
    back = EnergyTable.from_frame(t2.to_frame(), name=t2.name)
    assert back == t2
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InputError):
            t.replace(leakage=bad)
    df = t.to_frame()
    df.loc["noc_hop", "value"] = 0
    with pytest.raises(InputError, match="> 0"):
        EnergyTable.from_frame(df)
    with pytest.raises(InputError, match="lacks"):
        EnergyTable.from_frame(t.to_frame().drop(index="dram"))
    with pytest.raises(InputError):
        EnergyEntry(1.0, "pJ", "x", "45 nm", "guessed")


def test_toml_file_round_trip(tmp_path):
    from pathlib import Path

    from akfviz import HardwareConfig, InputError

    hw = HardwareConfig().replace(rows=32, cols=16)
    target = tmp_path / "chip.toml"
    text = hw.to_toml(target)
    assert target.read_text() == text
    assert HardwareConfig.from_toml(target) == hw
    assert HardwareConfig.from_toml(str(target)) == hw
    with pytest.raises(InputError, match="No hardware TOML file"):
        HardwareConfig.from_toml(Path(tmp_path / "missing.toml"))


@pytest.mark.parametrize("make", [
    lambda: akfviz.HardwareConfig(pe_rows=128),
    lambda: akfviz.HardwareConfig(*range(1, 30)),
    lambda: akfviz.HardwareConfig(8, rows=8),
    lambda: EnergyTable(bogus=1.0),
    lambda: LoadLimits(max_rowz=10),
    lambda: LSHConfig(hashes=64),
])
def test_config_classes_refuse_unknown_settings_with_input_error(make):
    """A misspelt setting is an InputError naming the valid ones, not a TypeError."""
    with pytest.raises(InputError, match="settings|both by position"):
        make()


def test_from_toml_reads_a_file_whatever_its_ending(tmp_path, monkeypatch):
    """Held-out probe: 'HW8.TOML' or 'hw8.cfg' (existing files) were parsed as TOML text."""
    text = HardwareConfig(rows=8, cols=8).to_toml()
    monkeypatch.chdir(tmp_path)
    for name in ("HW8.TOML", "hw8.cfg"):
        (tmp_path / name).write_text(text)
        assert HardwareConfig.from_toml(name).rows == 8
        assert HardwareConfig.from_toml(str(tmp_path / name)).cols == 8
    with pytest.raises(InputError, match="no file of that name exists"):
        HardwareConfig.from_toml("nofile.cfg")
    with pytest.raises(InputError, match="No hardware TOML file"):
        HardwareConfig.from_toml("missing.toml")


def test_from_toml_says_a_folder_is_not_a_file(tmp_path):
    """Review: a folder's path was parsed as TOML text ("no file of that name exists")."""
    for arg in (str(tmp_path), tmp_path):
        with pytest.raises(InputError, match="is a folder, not a file"):
            HardwareConfig.from_toml(arg)
    (tmp_path / "hw.toml").write_text(HardwareConfig(rows=4, cols=4).to_toml())
    assert HardwareConfig.from_toml(tmp_path / "hw.toml").rows == 4


def test_from_toml_reads_files_with_an_equals_sign_or_a_byte_order_mark(tmp_path):
    """Held-out export probe: a file named "a=b.toml" was parsed as TOML text, and a UTF-8 file
    starting with a byte-order mark (as Notepad writes) failed at line 1, column 1."""
    hw = HardwareConfig(rows=8, cols=4)
    eq = tmp_path / "a=b.toml"
    eq.write_text(hw.to_toml())
    assert HardwareConfig.from_toml(str(eq)) == hw
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + hw.to_toml().encode())
    assert HardwareConfig.from_toml(bom) == hw
    assert HardwareConfig.from_toml(bom.read_bytes()) == hw
    assert HardwareConfig.from_toml("rows = 8\ncols = 4").rows == 8   # text with "=" is still text
    with pytest.raises(InputError, match="could not be parsed"):
        HardwareConfig.from_toml("rows = = 8")


def test_to_toml_says_why_it_cannot_write(tmp_path):
    """Held-out export probe: a missing folder or a folder as the target raised plain OS errors."""
    with pytest.raises(InputError, match="does not exist"):
        HardwareConfig().to_toml(tmp_path / "nodir" / "x.toml")
    with pytest.raises(InputError, match="is a folder"):
        HardwareConfig().to_toml(tmp_path)


def test_a_huge_whole_number_is_named_by_its_size_not_printed():
    with pytest.raises(InputError, match=r"between 1 and \d+, got a 301-digit number\.$"):
        HardwareConfig.from_toml("rows = 1e300")
    with pytest.raises(InputError, match=r"got a negative 20-digit number\.$"):
        HardwareConfig(cols=-10 ** 19)
    with pytest.raises(InputError, match=r"got 5000\.$"):
        HardwareConfig(rows=5000)


@pytest.mark.parametrize("value, shown", [(10**400, "a 401-digit number"),
                                          (-10**400, "a negative 401-digit number"),
                                          (10**15 * 10**400, "a 416-digit number")],
                         ids=["huge", "huge-negative", "huger"])
def test_a_clock_beyond_float_range_is_refused_by_its_size(value, shown):
    """Held-out probe: HardwareConfig(clock_hz=10**400) raised OverflowError."""
    with pytest.raises(InputError, match=rf"clock_hz .* must be between 1000 and 1e\+12, got {shown}\.$"):
        HardwareConfig(clock_hz=value)


def test_a_numpy_clock_is_a_number_and_nan_or_inf_still_are_not():
    assert HardwareConfig(clock_hz=np.float32(2e9)).clock_hz == 2e9
    assert HardwareConfig(clock_hz=np.int64(10**9)) == HardwareConfig()
    for bad in (np.float32("nan"), np.float64("-inf"), float("inf"), True, "1e9"):
        with pytest.raises(InputError, match="clock_hz .* must be a finite number"):
            HardwareConfig(clock_hz=bad)


def test_simulate_refuses_a_huge_activation_density_by_name():
    """Held-out probe: simulate(plan, rho_x=10**400) raised OverflowError."""
    import scipy.sparse as sp

    from akfviz.npu.simulate import simulate
    from akfviz.npu.tilework_builders import csc_tilework

    tw = csc_tilework(sp.random(64, 64, density=0.2, random_state=5, format="csr"), 32)
    with pytest.raises(InputError, match=r"rho_x .* must be a number between 0 and 1, got a 401-digit number\.$"):
        simulate(tw, HardwareConfig(), shape=(64, 64), tile=32, rho_x=10**400)


def test_simulation_summary_names_the_hardware_it_ran_on():
    """Held-out export probe: a custom run's JSON held only the preset name "custom" and a hash."""
    import json

    A = akfviz.generate("banded", n=200, seed=1)
    plan = akfviz.select(akfviz.analyze(A, tile=16))
    hw = HardwareConfig(rows=16, cols=8, sram_bytes_per_pe=4096).replace(
        energy=EnergyTable.preset("horowitz-45nm").replace(dram=99.0))
    d = json.loads(json.dumps(akfviz.simulate(plan, hw).to_dict(), allow_nan=False))
    back = HardwareConfig.from_plain(d["hardware"])
    assert back == hw and back.config_hash() == d["config_hash"]
    assert d["hardware"]["energy"]["dram"]["value"] == 99.0


def test_a_one_line_file_that_is_not_toml_is_named_as_the_file(tmp_path):
    # it was said to be "read as TOML text: no file of that name exists"
    from pathlib import Path

    f = tmp_path / "hw.toml"
    f.write_text("[[[")
    for given in (str(f), Path(f)):
        with pytest.raises(InputError, match=r"hardware TOML file '.*hw\.toml' could not be parsed") as e:
            HardwareConfig.from_toml(given)
        assert "no file of that name" not in str(e.value)
    with pytest.raises(InputError, match="read as TOML text: no file of that name exists"):
        HardwareConfig.from_toml("[[[")
