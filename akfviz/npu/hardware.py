"""What the NPU is: :class:`HardwareConfig` (akf-spec §7).

Frozen, validated when built (every rejected field raises :class:`~akfviz.errors.InputError`
naming the field, the value and the allowed range), saved and loaded as TOML, hashed
(sha256 of its canonical TOML, stable across processes). Presets live in
:data:`HARDWARE_PRESETS`.
"""
from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass, field, fields, replace as _dc_replace

import numpy as np

from ..arguments import choice, shown, to_float, whole_number
from ..errors import InputError, checked_call, checked_init
from .energy import EnergyTable

#: Integer fields: name -> (min, max, unit / meaning).
_INT_LIMITS = {
    "rows": (1, 4096, "PE grid rows"),
    "cols": (1, 4096, "PE grid columns"),
    "sram_bytes_per_pe": (0, 1 << 34, "bytes of SRAM per PE"),
    "mac_lanes": (1, 1024, "multiply-accumulates per cycle per PE"),
    "hop_latency_cycles": (0, 1000, "cycles per NoC hop"),
    "dram_bytes_per_cycle": (1, 1 << 20, "bytes per cycle of shared DRAM bandwidth"),
    "setup_cycles": (0, 1 << 30, "cycles of setup per tile"),
    "barrier_cycles": (0, 1 << 30, "cycles per global barrier"),
    "reconfig_cycles": (0, 1 << 30, "cycles to reconfigure the PEs for another kernel"),
    "launch_cycles": (0, 1 << 30, "cycles of kernel exit + launch (non-persistent iterations)"),
    "decode_cycles": (0, 1000, "cycles per index decode"),
    "event_cycles": (1, 1000, "cycles to take one event off a PE's queue"),
    "reduce_cycles": (1, 1000, "cycles to add one partial-sum flit at a reduction PE"),
    "inject_cycles": (1, 1000, "cycles between two events injected by one source PE"),
    "flit_bytes": (1, 1024, "bytes per flit (one event or one partial sum)"),
}
_FLOAT_LIMITS = {
    "clock_hz": (1e3, 1e12, "clock frequency in Hz"),
}


def _is_file(name: str) -> bool:
    """Whether a one-line string names an existing file (a bad path is just not one)."""
    from pathlib import Path

    try:
        return len(name) < 4096 and Path(name).is_file()
    except (OSError, ValueError):
        return False


def _shown_path(path) -> str:
    """A path as messages quote it: at most 80 characters, undecodable bytes escaped."""
    import os

    text = os.fspath(path).encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 80 else text[:77] + "…"


def _is_dir(name) -> bool:
    """Whether a path (a one-line string or a PathLike) names an existing folder."""
    import os
    from pathlib import Path

    try:
        return len(os.fspath(name)) < 4096 and Path(name).is_dir()
    except (OSError, ValueError, TypeError):
        return False


@checked_init
@dataclass(frozen=True)
class HardwareConfig:
    """The simulated event-driven NPU (akf-spec §7).

    Parameters
    ----------
    rows, cols : int
        PE grid (default 256 × 256 = 65,536 PEs, the paper's "64K units").
    clock_hz : float
        Clock (cycles per second), used to convert cycles to seconds.
    sram_bytes_per_pe : int
        Local SRAM of one PE; payload beyond it streams from DRAM.
    mac_lanes : int
        MACs one PE performs per cycle: an event with m MACs costs ``ceil(m / mac_lanes)`` cycles.
    hop_latency_cycles : int
        Cycles per NoC hop (XY routing; arrival = injection + hops × latency).
    dram_bytes_per_cycle : int
        Shared off-chip bandwidth (all PEs together).
    setup_cycles : int
        Per tile, before its first event (loading pointers, clearing accumulators).
    barrier_cycles : int
        One global barrier (between unfused phases and persistent iterations).
    reconfig_cycles : int
        Reconfiguring every PE for another kernel (unfused phases).
    launch_cycles : int
        Kernel exit + launch paid by every non-persistent iteration.
    decode_cycles : int
        Cycles per index / bitmap word decode.
    event_cycles : int
        Cycles to take one event off the queue (before its MACs).
    reduce_cycles : int
        Cycles to add one partial-sum flit at a reduction PE.
    inject_cycles : int
        A source PE injects one event every ``inject_cycles`` cycles.
    flit_bytes : int
        Bytes of one flit; an event (index + value) is one flit, so is one partial sum.
    energy : EnergyTable
        pJ per action with provenance (default: ``"horowitz-45nm"``).
    preset : str or None
        Name of the preset this configuration came from. ``None`` (the default) names it
        after the registered preset it equals, else "custom": ``HardwareConfig().preset`` is
        "horowitz-45nm", ``HardwareConfig(rows=8).preset`` is "custom". A registered preset's
        name (:data:`HARDWARE_PRESETS`) given explicitly is a promise: the other fields must
        equal that preset's, or InputError names the fields that differ. Any other name is a
        free label, e.g. for a chip of your own.

    Examples
    --------
    >>> hw = HardwareConfig()
    >>> hw.n_pes
    65536
    >>> HardwareConfig.from_toml(hw.to_toml()) == hw
    True
    """

    rows: int = 256
    cols: int = 256
    clock_hz: float = 1e9
    sram_bytes_per_pe: int = 64 * 1024
    mac_lanes: int = 4
    hop_latency_cycles: int = 1
    dram_bytes_per_cycle: int = 64
    setup_cycles: int = 16
    barrier_cycles: int = 512
    reconfig_cycles: int = 1024
    launch_cycles: int = 2048
    decode_cycles: int = 1
    event_cycles: int = 1
    reduce_cycles: int = 1
    inject_cycles: int = 1
    flit_bytes: int = 8
    energy: EnergyTable = field(default_factory=lambda: EnergyTable.preset("horowitz-45nm"))
    preset: str | None = None

    def __post_init__(self):
        for name, (lo, hi, what) in _INT_LIMITS.items():
            given = getattr(self, name)
            if isinstance(given, np.ndarray) and given.ndim == 0:
                given = given.item()   # a 0-d array is its number
            v = whole_number(given)   # the library's one rule (np.array(8.9) was cut to 8: probe)
            if v is None:
                raise InputError(
                    f"HardwareConfig.{name} ({what}) must be a whole number, got {shown(given)}."
                )
            if not lo <= v <= hi:
                raise InputError(
                    f"HardwareConfig.{name} ({what}) must be between {lo} and {hi}, got {shown(v)}."
                )
            object.__setattr__(self, name, v)
        for name, (lo, hi, what) in _FLOAT_LIMITS.items():
            v = getattr(self, name)
            if isinstance(v, np.ndarray) and v.ndim == 0:
                v = v.item()
            # numpy bools are no numbers.Real. A NaN or an infinite float is refused here; a whole number
            # beyond float64's range (10**400) is ±inf after to_float, so the range check refuses it
            f = to_float(v) if isinstance(v, numbers.Real) and not isinstance(v, bool) else math.nan
            if math.isnan(f) or (math.isinf(f) and not isinstance(v, numbers.Integral)):
                raise InputError(f"HardwareConfig.{name} ({what}) must be a finite number, got {shown(v)}.")
            if not lo <= f <= hi:
                raise InputError(
                    f"HardwareConfig.{name} ({what}) must be between {lo:g} and {hi:g}, got {shown(v)}."
                )
            object.__setattr__(self, name, f)
        if not isinstance(self.energy, EnergyTable):
            raise InputError(
                f"HardwareConfig.energy must be an EnergyTable, got {type(self.energy).__name__}."
            )
        if self.preset is None:
            object.__setattr__(self, "preset", _preset_label(self))
        elif not isinstance(self.preset, str) or not self.preset.strip():
            raise InputError(f"HardwareConfig.preset must be a non-empty name, got {shown(self.preset)}.")
        else:
            _check_preset_label(self)

    # ------------------------------------------------------------------ derived
    @property
    def n_pes(self) -> int:
        """Number of PEs, ``rows * cols``."""
        return self.rows * self.cols

    @property
    def total_sram_bytes(self) -> int:
        """SRAM of the whole chip."""
        return self.n_pes * self.sram_bytes_per_pe

    # ------------------------------------------------------------------ editing
    def replace(self, **changes) -> "HardwareConfig":
        """A validated copy with ``changes``. Unless ``preset`` is given, a copy that differs is
        named after the registered preset it equals, else "custom"."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise InputError(
                f"Unknown HardwareConfig field(s) {sorted(unknown)}; known: {sorted(known)}."
            )
        if "preset" not in changes and any(getattr(self, k) != v for k, v in changes.items()):
            changes["preset"] = None
        return _dc_replace(self, **changes)

    # ------------------------------------------------------------------ TOML
    @checked_call
    def to_plain(self) -> dict:
        """Plain nested dict (scalars at top level, the energy table under ``energy``)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "energy"}
        d["energy"] = self.energy.to_plain()
        return d

    @checked_call
    def to_toml(self, path=None) -> str:
        """Canonical TOML text (keys in field order); :meth:`from_toml` reads it back.

        With ``path`` (str or ``pathlib.Path``) the text is also written to that file.
        """
        import tomli_w

        text = tomli_w.dumps(self.to_plain())
        if path is not None:
            import os
            from pathlib import Path

            if not isinstance(path, (str, os.PathLike)):
                raise InputError(f"to_toml(path): path must be a file name (str or pathlib.Path), got {shown(path)}.")

            try:
                Path(path).write_text(text, encoding="utf-8")
            except IsADirectoryError:
                raise InputError(f"'{path}' is a folder; give a file name inside it for the hardware TOML.") from None
            except FileNotFoundError:
                raise InputError(f"Cannot write the hardware TOML to '{path}': the folder "
                                 f"'{Path(path).parent}' does not exist.") from None
            except OSError as exc:
                raise InputError(f"Cannot write the hardware TOML to '{path}': {exc.strerror or exc}.") from None
        return text

    @classmethod
    @checked_call
    def from_toml(cls, text) -> "HardwareConfig":
        """Parse TOML text (str or bytes) or read a TOML file (``pathlib.Path``, or a str naming
        an existing file, whatever its ending); unknown keys and bad values raise InputError.
        Empty text (or only comments) is the default configuration, as TOML with no keys."""
        import os
        import tomllib
        from pathlib import Path

        # one line of text names a file when a file of that name exists (whatever it holds: "a=b.toml"
        # too), or when it ends in .toml and has no "=" (a missing file, not the TOML text "rows = 4")
        one_line = isinstance(text, str) and "\n" not in text and text.strip() != ""
        from_file = None   # the path the text came from
        if (one_line or isinstance(text, os.PathLike)) and _is_dir(text.strip() if isinstance(text, str) else text):
            raise InputError(f"'{text if isinstance(text, str) else os.fspath(text)}' is a folder, not a file; "
                             "give the path of a hardware TOML file (or TOML text).")
        if isinstance(text, os.PathLike) or (one_line and (_is_file(text.strip()) or (
                "=" not in text and text.strip().lower().endswith(".toml")))):
            path = Path(text.strip() if isinstance(text, str) else text)
            if not _is_file(os.fspath(path)):
                raise InputError(f"No hardware TOML file at '{_shown_path(path)}'; check the path.")
            try:
                text = path.read_bytes()
                from_file = path
            except OSError as exc:   # permissions, an I/O error, a special file
                raise InputError(f"The hardware TOML file '{_shown_path(path)}' could not be read "
                                 f"({(exc.strerror or type(exc).__name__).lower()}); check the file's "
                                 f"permissions, or copy it somewhere readable.") from None
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("The hardware TOML file is not UTF-8 text.") from None
        if not isinstance(text, str):
            raise InputError(f"from_toml expects TOML text, got {type(text).__name__}.")
        text = text.removeprefix("\ufeff")   # a byte-order mark, as some Windows editors write
        try:
            d = tomllib.loads(text)
        except RecursionError:   # tomllib recurses once per nested array or table
            raise InputError("The hardware TOML could not be parsed: its arrays or tables are nested too "
                             "deeply (a hardware configuration needs two levels).") from None
        except tomllib.TOMLDecodeError as exc:
            # (a one-line file that is not TOML was said to be "read as TOML text: no file of that name")
            if from_file is not None:
                raise InputError(f"The hardware TOML file '{_shown_path(from_file)}' could not be parsed: "
                                 f"{exc}.") from None
            hint = (" (it was read as TOML text: no file of that name exists)"
                    if "\n" not in text and "=" not in text else "")
            raise InputError(f"The hardware TOML could not be parsed{hint}: {exc}.") from None
        return cls.from_plain(d)

    @classmethod
    @checked_call
    def from_plain(cls, d: dict) -> "HardwareConfig":
        """Inverse of :meth:`to_plain`."""
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise InputError(
                f"Unknown key(s) {sorted(unknown)} in the hardware configuration; "
                f"allowed: {sorted(known)}."
            )
        kw = dict(d)
        if "energy" in kw:
            kw["energy"] = EnergyTable.from_plain(kw["energy"])
        return cls(**kw)

    @checked_call
    def config_hash(self) -> str:
        """sha256 (hex) of the canonical TOML; equal configurations hash equally in any process.

        Remembered per plain form (``repr(to_plain())``, which fixes the TOML text): writing the
        TOML took 0.25 ms, and every ``select`` asks two or three times."""
        key = repr(self.to_plain())
        h = _CONFIG_HASHES.get(key)
        if h is None:
            h = hashlib.sha256(self.to_toml().encode("utf-8")).hexdigest()
            if len(_CONFIG_HASHES) >= _CONFIG_HASHES_MAX:
                _CONFIG_HASHES.clear()
            _CONFIG_HASHES[key] = h
        return h

    # ------------------------------------------------------------------ presets
    @staticmethod
    @checked_call
    def preset_names() -> list:
        """Names of the registered hardware presets."""
        return list(HARDWARE_PRESETS)

    @classmethod
    @checked_call
    def from_preset(cls, name: str) -> "HardwareConfig":
        """Same as :meth:`preset`."""
        key = choice(name, HARDWARE_PRESETS)
        if key is None:
            raise InputError(
                f"Unknown hardware preset {shown(name)}; available: {', '.join(HARDWARE_PRESETS)}."
            )
        return HARDWARE_PRESETS[key]()


#: ``config_hash`` of each plain form seen (cleared when it reaches :data:`_CONFIG_HASHES_MAX`).
_CONFIG_HASHES: dict = {}
_CONFIG_HASHES_MAX = 256


def as_hardware(hw) -> HardwareConfig:
    """``hw`` as a HardwareConfig: ``None`` gives the defaults, anything else must already be one (InputError)."""
    if hw is None:
        return HardwareConfig()
    if not isinstance(hw, HardwareConfig):
        raise InputError(
            f"hw must be a HardwareConfig (e.g. akfviz.HardwareConfig()) or None, got {type(hw).__name__}.")
    return hw


def _preset(name: str) -> HardwareConfig:
    return HardwareConfig.from_preset(name)


#: Plain form (:meth:`HardwareConfig.to_plain`) of each registered preset, built on first use.
_PRESET_PLAIN: dict = {}
#: Presets being built right now (their own construction is what defines them).
_BUILDING: set = set()


def _energy_difference(got: dict, want: dict) -> str:
    g, w = got.get("name"), want.get("name")
    return f"energy table ({g!r} instead of {w!r})" if g != w else f"energy table ({g!r} with edited entries)"


def _preset_plain(name: str) -> dict | None:
    """The plain form of registered preset ``name`` (None while that preset is being built)."""
    if name in _BUILDING:
        return None
    if name not in _PRESET_PLAIN:
        _BUILDING.add(name)
        try:
            _PRESET_PLAIN[name] = HARDWARE_PRESETS[name]().to_plain()
        finally:
            _BUILDING.discard(name)
    return _PRESET_PLAIN[name]


def _preset_label(cfg: HardwareConfig) -> str:
    """Name of the registered preset ``cfg`` equals (its label not compared), else "custom"."""
    got = cfg.to_plain()
    for name in HARDWARE_PRESETS:
        want = _preset_plain(name)
        if want is not None and {**got, "preset": name} == want:
            return name
    return "custom"


def _check_preset_label(cfg: HardwareConfig) -> None:
    """Refuse a configuration that carries a registered preset's name but not its values
    (``HardwareConfig(preset="loihi-like")`` once reported Loihi while using Horowitz energies)."""
    name = cfg.preset
    want = _preset_plain(name) if name in HARDWARE_PRESETS else None
    if want is None:
        return
    got = cfg.to_plain()
    if got == want:
        return
    diff = [_energy_difference(got["energy"], want["energy"]) if k == "energy"
            else f"{k} ({got[k]!r} instead of {want[k]!r})" for k in want if got.get(k) != want[k]]
    raise InputError(
        f"This hardware configuration is labelled preset {name!r} but differs from that preset in: "
        f"{'; '.join(diff)}. Start from HardwareConfig.from_preset({name!r}) and change fields with "
        f".replace(...), or label an edited configuration preset=\"custom\" (or a name of your own).")


# ``HardwareConfig.preset`` is a field (the preset's name) on instances; on the class it is
# this lookup. A descriptor keeps both meanings.
class _PresetAccessor:
    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return _preset
        return obj.__dict__["preset"]


HardwareConfig.preset = _PresetAccessor()

#: Registry of hardware presets: name -> factory.
HARDWARE_PRESETS = {
    "horowitz-45nm": lambda: HardwareConfig(preset="horowitz-45nm"),
    "loihi-like": lambda: HardwareConfig(
        sram_bytes_per_pe=128 * 1024, mac_lanes=1, hop_latency_cycles=1,
        energy=EnergyTable.preset("loihi-like"), preset="loihi-like"),
    "edge-32x32": lambda: HardwareConfig(
        rows=32, cols=32, sram_bytes_per_pe=32 * 1024, dram_bytes_per_cycle=16,
        barrier_cycles=64, preset="edge-32x32"),
}
