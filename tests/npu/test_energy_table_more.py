"""Energy table bounds found by an app probe (forty-second session): a value near 1e308 passed the
check (finite, > 0) and made the model's totals overflow, so every page showed "non-finite entries"."""
import re

import pytest

import akfviz
from akfviz.errors import InputError
from akfviz.npu.energy import MAX_ENERGY_PJ, EnergyEntry, EnergyTable


def test_the_cap_itself_is_allowed_and_beyond_it_is_refused():
    assert EnergyEntry(MAX_ENERGY_PJ, "pJ/op", "s", "45 nm", "assumed").value == MAX_ENERGY_PJ
    with pytest.raises(InputError, match=r"at most 1e\+09 pJ"):
        EnergyEntry(1e308, "pJ/op", "s", "45 nm", "assumed")


def test_a_toml_file_names_the_entry_over_the_cap():
    text = akfviz.HardwareConfig().to_toml()
    edited = re.sub(r"(\[energy\.mac_fp32\]\s*\nvalue = )[^\n]+", r"\g<1>1e308", text)
    assert edited != text
    with pytest.raises(InputError, match=r"\[energy\.mac_fp32\]: An energy value must be at most"):
        akfviz.HardwareConfig.from_toml(edited)


def test_an_edited_table_names_the_row_over_the_cap():
    df = akfviz.HardwareConfig().energy.to_frame()
    d = df.reset_index() if "action" not in df.columns else df.copy()
    d.loc[d["action"] == "mac_fp32", "value"] = 1e200
    with pytest.raises(InputError, match="Energy of 'mac_fp32': An energy value must be at most"):
        EnergyTable.from_frame(d)


def test_largest_allowed_energies_keep_a_simulation_finite():
    import dataclasses
    hw = akfviz.HardwareConfig()
    df = hw.energy.to_frame()
    d = df.reset_index() if "action" not in df.columns else df.copy()
    d["value"] = MAX_ENERGY_PJ
    hw2 = dataclasses.replace(hw, energy=EnergyTable.from_frame(d), preset="custom")
    A = akfviz.generate("llm", n=128, m=96, seed=0)
    res = akfviz.simulate(akfviz.select(akfviz.analyze(A, tile=16), hw=hw2), hw2)
    assert all(v == v and v < float("inf") for v in res.energy_pj.values())
