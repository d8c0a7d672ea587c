"""Energy per action on the NPU, every number with its provenance (akf-spec §7).

An :class:`EnergyTable` holds one :class:`EnergyEntry` per action the engine counts:

================== ======================================= ==========
name               action                                  unit
================== ======================================= ==========
``mac_fp32``       one fp32 multiply-accumulate            pJ/MAC
``mac_int8``       one int8 multiply-accumulate            pJ/MAC
``sram_read``      one byte read from PE SRAM              pJ/byte
``noc_hop``        one flit crossing one NoC link          pJ/flit-hop
``dram``           one byte moved to/from off-chip DRAM    pJ/byte
``event_receive``  one event (spike) taken off a PE queue  pJ/event
``index_decode``   one index / bitmap word decode          pJ/decode
``leakage``        static energy of one PE for one cycle   pJ/PE-cycle
================== ======================================= ==========

Each entry carries ``value, unit, source, node, grade`` with grade one of
``measured`` / ``simulated`` / ``assumed``. Entries without a published figure carry an
*assumed* value whose reasoning is written in ``source``; validation rejects zero,
negative and non-finite values, so nothing is ever silently zero.

Presets are registered in :data:`ENERGY_PRESETS` (``"horowitz-45nm"``, ``"loihi-like"``).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields, replace as _dc_replace

import numpy as np

from ..arguments import choice, shown, to_float
from ..errors import InputError, checked_init

GRADES = ("measured", "simulated", "assumed")
#: Largest energy of one action (pJ): 1 mJ. Real figures are 0.01–10,000 pJ; near 1e308 the totals
#: (energy × counts) overflowed to inf and every page showed "non-finite entries" (app probe).
MAX_ENERGY_PJ = 1e9

#: Action name -> (unit, one-line description). The order is the order of the table.
ACTIONS = {
    "mac_fp32": ("pJ/MAC", "one fp32 multiply-accumulate (multiply + add)"),
    "mac_int8": ("pJ/MAC", "one int8 multiply-accumulate (multiply + add)"),
    "sram_read": ("pJ/byte", "one byte read from the PE's local SRAM"),
    "noc_hop": ("pJ/flit-hop", "one flit crossing one network-on-chip link"),
    "dram": ("pJ/byte", "one byte moved between off-chip DRAM and the chip"),
    "event_receive": ("pJ/event", "one input event taken off a PE's queue"),
    "index_decode": ("pJ/decode", "one index or bitmap word decode"),
    "leakage": ("pJ/PE-cycle", "static (leakage) energy of one PE during one cycle"),
}


@checked_init
@dataclass(frozen=True)
class EnergyEntry:
    """One energy figure with its provenance.

    Parameters
    ----------
    value : float
        Energy in picojoules per ``unit`` (must be finite and > 0).
    unit : str
        What one count is (``pJ/MAC``, ``pJ/byte`` …).
    source : str
        Where the number comes from, or, for an assumed value, the reasoning.
    node : str
        Technology node the figure refers to (e.g. ``"45 nm"``).
    grade : {"measured", "simulated", "assumed"}
        How much to trust it.
    """

    value: float
    unit: str
    source: str
    node: str
    grade: str

    def __post_init__(self):
        v = self.value
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v.item()
        # any real number (Python, numpy, Fraction), never a bool; 10**400 is +inf after to_float,
        # refused by the cap below (float() itself raised OverflowError: probe)
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InputError(f"An energy value must be a number of picojoules, got {shown(v)}.")
        f = to_float(v)
        if math.isnan(f) or f <= 0.0 or (math.isinf(f) and not isinstance(v, numbers.Integral)):
            raise InputError(
                f"An energy value must be a finite number > 0 pJ, got {shown(v)} "
                "(nothing in the energy table may be zero, negative or NaN)."
            )
        if f > MAX_ENERGY_PJ:
            raise InputError(
                f"An energy value must be at most {MAX_ENERGY_PJ:.0e} pJ (a millijoule per action, about a "
                f"million times a DRAM access), got {shown(v)}: larger values overflow the model's totals.")
        object.__setattr__(self, "value", f)
        if self.grade not in GRADES:
            raise InputError(
                f"Energy grade {self.grade!r} is not one of {', '.join(GRADES)}."
            )
        for name in ("unit", "source", "node"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise InputError(f"The energy entry's {name!r} must be a non-empty text.")


def _cell_text(v) -> str:
    """A text cell of an edited table: an emptied cell (None, NaN) is empty text, which the entry
    refuses by name, not the text "nan" or "None" (probe)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)


@checked_init
@dataclass(frozen=True)
class EnergyTable:
    """Picojoules per counted action, with provenance (akf-spec §7).

    Build one with :meth:`preset`, edit with :meth:`replace`, and exchange it with the
    app's editable table via :meth:`to_frame` / :meth:`from_frame`.

    Examples
    --------
    >>> t = EnergyTable.preset("horowitz-45nm")
    >>> t.mac_fp32.value
    4.6
    >>> t.replace(dram=100.0).dram.grade
    'assumed'
    """

    mac_fp32: EnergyEntry
    mac_int8: EnergyEntry
    sram_read: EnergyEntry
    noc_hop: EnergyEntry
    dram: EnergyEntry
    event_receive: EnergyEntry
    index_decode: EnergyEntry
    leakage: EnergyEntry
    name: str = "custom"

    def __post_init__(self):
        for a in ACTIONS:
            e = getattr(self, a)
            if not isinstance(e, EnergyEntry):
                raise InputError(f"Energy entry {a!r} must be an EnergyEntry, got {type(e).__name__}.")
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError(f"The energy table's name must be a non-empty text, got {shown(self.name)}.")

    # ------------------------------------------------------------------ access
    def __getitem__(self, action: str) -> float:
        """The value (pJ) of ``action``."""
        if not isinstance(action, str) or action not in ACTIONS:
            raise InputError(f"Unknown energy action {shown(action)}; known: {', '.join(ACTIONS)}.")
        return getattr(self, action).value

    def values(self) -> dict:
        """``{action: pJ}`` for every action."""
        return {a: getattr(self, a).value for a in ACTIONS}

    # ------------------------------------------------------------------ editing
    def replace(self, **changes) -> "EnergyTable":
        """A copy with some entries changed.

        A plain number keeps the unit and node and marks the entry ``assumed`` with
        source "edited by the user (was …)"; an :class:`EnergyEntry` replaces it whole.
        """
        new = {}
        for k, v in changes.items():
            if k == "name":
                new[k] = v
                continue
            if k not in ACTIONS:
                raise InputError(f"Unknown energy action {k!r}; known: {', '.join(ACTIONS)}.")
            old = getattr(self, k)
            if isinstance(v, EnergyEntry):
                new[k] = v
            else:
                if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) and to_float(v) == old.value:
                    continue
                new[k] = EnergyEntry(v, old.unit, f"edited by the user (was {old.value:g} pJ: {old.source})",
                                     old.node, "assumed")
        if "name" not in new and any(k != "name" for k in new):
            new["name"] = self.name if self.name.endswith("(edited)") else f"{self.name} (edited)"
        return _dc_replace(self, **new)

    def marked_against(self, base: "EnergyTable") -> "EnergyTable":
        """This table with every value changed from ``base`` but still carrying ``base``'s source
        and grade marked as :meth:`replace` marks it: grade ``assumed``, source "edited by the user
        (was … pJ: …)" (a table edited cell by cell, e.g. in ``st.data_editor``, where only the value
        was typed; a number without its provenance is the user's assumption, akf-spec §6).

        Entries whose source or grade were edited too keep what the user wrote.
        """
        if not isinstance(base, EnergyTable):
            raise InputError(f"The base energy table must be an EnergyTable, got {type(base).__name__}.")
        changes = {}
        for a in ACTIONS:
            e, b = getattr(self, a), getattr(base, a)
            if e.value != b.value and e.source == b.source and e.grade == b.grade:
                changes[a] = e.value
        if not changes:
            return self
        name = self.name
        return _dc_replace(base.replace(**changes), name=name,
                           **{a: getattr(self, a) for a in ACTIONS if a not in changes})

    # ------------------------------------------------------------------ exchange
    def to_records(self) -> list:
        """One dict per action: ``action, value, unit, source, node, grade, description``."""
        return [dict(action=a, value=getattr(self, a).value, unit=getattr(self, a).unit,
                     source=getattr(self, a).source, node=getattr(self, a).node,
                     grade=getattr(self, a).grade, description=ACTIONS[a][1]) for a in ACTIONS]

    def to_frame(self):
        """A pandas DataFrame indexed by action (columns value, unit, source, node, grade, description)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.to_records()).set_index("action")

    @classmethod
    def from_frame(cls, df, name: str = "custom") -> "EnergyTable":
        """Rebuild a table from :meth:`to_frame`'s layout (e.g. after an ``st.data_editor``).

        Every action must be present exactly once; values are validated.
        """
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise InputError("The energy table must be given as a pandas DataFrame.")
        d = df.reset_index() if "action" not in df.columns else df
        missing_cols = {"action", "value", "unit", "source", "node", "grade"} - set(d.columns)
        if missing_cols:
            raise InputError(f"The energy table lacks the column(s) {sorted(missing_cols)}.")
        rows = {}
        for rec in d.to_dict("records"):
            a = rec["action"]
            if a not in ACTIONS:
                raise InputError(f"Unknown energy action {a!r}; known: {', '.join(ACTIONS)}.")
            if a in rows:
                raise InputError(f"The energy action {a!r} appears twice.")
            value = rec["value"]
            if isinstance(value, str):   # a cell typed as text
                try:
                    value = float(value)
                except ValueError:
                    raise InputError(f"Energy of {a!r} must be a number, got {shown(value)}.") from None
            try:
                rows[a] = EnergyEntry(value, *(_cell_text(rec[k]) for k in ("unit", "source", "node", "grade")))
            except InputError as exc:   # say which row of the table
                raise InputError(f"Energy of {a!r}: {exc}") from None
        missing = [a for a in ACTIONS if a not in rows]
        if missing:
            raise InputError(f"The energy table lacks the action(s) {missing}.")
        return cls(**rows, name=name)

    def to_plain(self) -> dict:
        """Nested plain dict (for TOML / JSON): ``{"name": …, action: {value, unit, …}}``."""
        out = {"name": self.name}
        for a in ACTIONS:
            e = getattr(self, a)
            out[a] = {f.name: getattr(e, f.name) for f in fields(EnergyEntry)}
        return out

    @classmethod
    def from_plain(cls, d: dict) -> "EnergyTable":
        """Inverse of :meth:`to_plain`; unknown keys raise :class:`InputError`."""
        if not isinstance(d, dict):
            raise InputError("The [energy] section must be a table.")
        allowed = set(ACTIONS) | {"name"}
        unknown = set(d) - allowed
        if unknown:
            raise InputError(f"Unknown key(s) {sorted(unknown)} in [energy]; allowed: {sorted(allowed)}.")
        kw = {}
        for a in ACTIONS:
            if a not in d:
                raise InputError(f"The [energy] section lacks the entry {a!r}: it must list all {len(ACTIONS)} "
                                 f"actions ({', '.join(ACTIONS)}), each with value, unit, source, node and grade "
                                 "(every figure carries its provenance). Start from a preset's TOML "
                                 "(HardwareConfig().to_toml()) and edit the values there.")
            e = d[a]
            if not isinstance(e, dict):
                raise InputError(f"[energy.{a}] must be a table with value, unit, source, node, grade.")
            keys = {f.name for f in fields(EnergyEntry)}
            if set(e) != keys:
                raise InputError(
                    f"[energy.{a}] must have exactly the keys {sorted(keys)}, got {sorted(e)}."
                )
            try:
                kw[a] = EnergyEntry(**e)
            except InputError as exc:   # say which entry of the file
                raise InputError(f"[energy.{a}]: {exc}") from None
        name = d.get("name", "custom")
        if not isinstance(name, str):   # str() made a table or a number a name (probe)
            raise InputError(f"[energy] name must be text, got {shown(name)}.")
        return cls(**kw, name=name)

    @staticmethod
    def preset(name: str) -> "EnergyTable":
        """A registered preset by name (see :data:`ENERGY_PRESETS`)."""
        key = choice(name, ENERGY_PRESETS)
        if key is None:
            raise InputError(
                f"Unknown energy preset {shown(name)}; available: {', '.join(ENERGY_PRESETS)}."
            )
        return ENERGY_PRESETS[key]()

    @staticmethod
    def presets() -> list:
        """Names of the registered presets."""
        return list(ENERGY_PRESETS)


# ---------------------------------------------------------------------- presets
_HOROWITZ = "M. Horowitz, 'Computing's energy problem (and what we can do about it)', ISSCC 2014"
_DAVIES = ("M. Davies et al., 'Loihi: a neuromorphic manycore processor with on-chip learning', "
           "IEEE Micro 38(1), 2018 (pre-silicon figures)")


def _horowitz_45nm() -> EnergyTable:
    u = {a: ACTIONS[a][0] for a in ACTIONS}
    return EnergyTable(
        mac_fp32=EnergyEntry(4.6, u["mac_fp32"],
                             f"{_HOROWITZ}: fp32 mult 3.7 pJ + fp32 add 0.9 pJ", "45 nm", "simulated"),
        mac_int8=EnergyEntry(0.23, u["mac_int8"],
                             f"{_HOROWITZ}: int8 mult 0.2 pJ + int8 add 0.03 pJ", "45 nm", "simulated"),
        sram_read=EnergyEntry(10.0 / 8.0, u["sram_read"],
                              f"{_HOROWITZ}: 64-bit read from an 8 KB SRAM 10 pJ -> 10/8 pJ per byte",
                              "45 nm", "simulated"),
        noc_hop=EnergyEntry(3.5, u["noc_hop"],
                            "assumed: Horowitz gives no router figure; we take the midpoint of the "
                            "3.0-4.0 pJ per hop of Davies et al. 2018 (Loihi) for one flit over one link",
                            "45 nm (assumed)", "assumed"),
        dram=EnergyEntry(1300.0 / 8.0, u["dram"],
                         f"{_HOROWITZ}: DRAM 1.3-2.6 nJ per 64 bits; we take the LOW end, 1.3 nJ/8 B "
                         "= 162.5 pJ/byte (the choice least favourable to avoiding DRAM traffic)",
                         "45 nm", "simulated"),
        event_receive=EnergyEntry(2 * 1.25, u["event_receive"],
                                  "assumed: popping one event = reading a 2-byte queue entry from SRAM "
                                  "(2 x 1.25 pJ/byte, Horowitz SRAM figure)", "45 nm (assumed)", "assumed"),
        index_decode=EnergyEntry(0.1, u["index_decode"],
                                 f"{_HOROWITZ}: one 32-bit integer add 0.1 pJ, taken as one index/word "
                                 "decode (the SRAM bytes it reads are counted separately)",
                                 "45 nm", "simulated"),
        leakage=EnergyEntry(0.05, u["leakage"],
                            "assumed: ~50 uW static power per PE (64 KiB SRAM + datapath at 45 nm) "
                            "at 1 GHz = 0.05 pJ per PE-cycle (3.3 W for 65,536 PEs)",
                            "45 nm (assumed)", "assumed"),
        name="horowitz-45nm",
    )


def _loihi_like() -> EnergyTable:
    u = {a: ACTIONS[a][0] for a in ACTIONS}
    return EnergyTable(
        mac_fp32=EnergyEntry(23.6, u["mac_fp32"],
                             "assumed: Loihi has no fp32 datapath; every MAC is charged one synaptic "
                             f"operation, 23.6 pJ ({_DAVIES})", "14 nm", "assumed"),
        mac_int8=EnergyEntry(23.6, u["mac_int8"],
                             f"{_DAVIES}: energy per synaptic operation 23.6 pJ", "14 nm", "simulated"),
        sram_read=EnergyEntry(0.6, u["sram_read"],
                              "assumed: Loihi's synop energy already includes its synaptic memory "
                              "read; payload bytes beyond that are charged Horowitz's 1.25 pJ/byte "
                              "scaled by ~0.5 for 14 nm", "14 nm (assumed)", "assumed"),
        noc_hop=EnergyEntry(3.5, u["noc_hop"],
                            f"{_DAVIES}: 3.0-4.0 pJ per spike hop between cores, midpoint",
                            "14 nm", "simulated"),
        dram=EnergyEntry(1300.0 / 8.0, u["dram"],
                         "assumed: Loihi has no DRAM; off-chip traffic is charged Horowitz's DRAM "
                         "figure (1.3 nJ per 64 bits), which depends little on the logic node",
                         "45 nm (assumed)", "assumed"),
        event_receive=EnergyEntry(1.7, u["event_receive"],
                                  f"{_DAVIES}: within-tile spike energy 1.7 pJ", "14 nm", "simulated"),
        index_decode=EnergyEntry(0.05, u["index_decode"],
                                 "assumed: one 32-bit integer add (Horowitz 0.1 pJ at 45 nm) scaled by "
                                 "~0.5 for 14 nm", "14 nm (assumed)", "assumed"),
        leakage=EnergyEntry(0.02, u["leakage"],
                            "assumed: ~20 uW static power per core-sized PE at 1 GHz = 0.02 pJ per "
                            "PE-cycle (no published per-core leakage in Davies et al.)",
                            "14 nm (assumed)", "assumed"),
        name="loihi-like",
    )


#: Registry of energy presets: name -> factory.
ENERGY_PRESETS = {
    "horowitz-45nm": _horowitz_45nm,
    "loihi-like": _loihi_like,
}
