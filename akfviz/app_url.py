"""What a link carries: the app's settings, their defaults and parsers, and the query string.

Every setting that shapes a view lives in :data:`FIELDS` (a registry: key, default, parser).
:func:`parse_query` turns ``st.query_params`` into validated values (bad values are
reported, never fatal); :func:`to_query` writes back only what differs from the defaults,
so a link reproduces a view. Uploaded files cannot travel in a URL: the source is recorded
as ``src=upload`` and the page says so. Also the app's size limits (:data:`MAX_GRID_SIDE`,
:data:`MAX_APP_SIDE`, …), which links, forms and the cached calls share.

Pure: no streamlit here; :mod:`akfviz.app_state` re-exports these names for the pages.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable


# --------------------------------------------------------------------------- URL state (pure)

#: A number as a link or a bundle writes it: ASCII digits, optional sign, point and exponent
#: (``float()`` alone would also take ``1_6``, full-width or Arabic-Indic digits).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
#: The largest whole number a browser number box holds exactly (2**53 − 1).
JS_MAX_INT = 2**53 - 1
#: Largest PE grid side the app offers (NPU form, links, sweeps): 1024² PEs simulate in seconds;
#: the library's HardwareConfig goes up to 4096 (about 1 GB per point).
MAX_GRID_SIDE = 1024
#: Largest stored entries / dense intermediate the app's generator form makes (the library's
#: defaults are 200M / 400M: about 1 minute and 8 GB, which on a shared server would hold a
#: large share of the memory in the generator cache). 5M entries is 5× the benchmark matrix;
#: a hyper-sparse one has as many tiles, whose analysis takes ≈ 170 bytes each.
MAX_GENERATED_NNZ = 5_000_000
MAX_GENERATED_DENSE = 100_000_000
#: Largest number of rows or columns of a matrix the app generates or reads from an upload: a
#: 104-byte Matrix Market header of 50M × 50M with 3 nonzeros made the server hold 5 GB and
#: left the NPU page blank for minutes (the input vector alone has one value per column).
MAX_APP_SIDE = 1 << 20


def _number(s) -> float:
    """``s`` (text, or a JSON number from a bundle) as a float; ValueError for anything else
    (bools, lists, ``"1_6"``, ``"nan"``…)."""
    if isinstance(s, bool) or not isinstance(s, (str, int, float)):
        raise ValueError("not a number")
    if isinstance(s, (int, float)):
        return float(s)
    if not _NUMBER.match(s.strip()):
        raise ValueError("not a number")
    return float(s)


def _described(what: str, parse: Callable, bounds=None) -> Callable:
    """Attach what a parser accepts (for messages) and its bounds (for widgets)."""
    parse.what = what
    if bounds is not None:
        parse.bounds = bounds
    return parse


def _int_in(lo: int, hi: int) -> Callable[[str], int]:
    what = f"a whole number from {lo} to {hi}"

    def parse(s):
        try:
            v = _number(s)
        except (ValueError, OverflowError):
            raise ValueError(what) from None
        if not v.is_integer() or not lo <= v <= hi:
            raise ValueError(what)
        return int(v)
    return _described(what, parse, (lo, hi))


def _float_in(lo: float, hi: float) -> Callable[[str], float]:
    what = f"a number from {lo:g} to {hi:g}"

    def parse(s):
        try:
            v = _number(s)
        except (ValueError, OverflowError):
            raise ValueError(what) from None
        if not math.isfinite(v) or not lo <= v <= hi:
            raise ValueError(what)
        return v
    return _described(what, parse, (lo, hi))


def _opt_float_in(lo: float, hi: float) -> Callable[[str], float | None]:
    inner = _float_in(lo, hi)

    def parse(s):
        if s in (None, "", "none", "None"):
            return None
        return inner(s)
    return _described(inner.what + " (or empty)", parse, inner.bounds)


def _choice(*options: str) -> Callable[[str], str]:
    what = "one of " + ", ".join(options)

    def parse(s):
        if s not in options:
            raise ValueError(what)
        return s
    return _described(what, parse)


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag() -> Callable[[str], bool]:
    what = "true or false (also 1 / 0, yes / no, on / off)"

    def parse(s):
        if isinstance(s, bool):
            return s
        low = str(s).strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(what)
    return _described(what, parse)


def _text(max_len: int = 200, allow_empty: bool = False) -> Callable[[str], str]:
    what = f"a {'' if allow_empty else 'non-empty '}text of at most {max_len} characters, without control characters"

    def parse(s):
        if not isinstance(s, str):
            raise ValueError(what)
        if (not s and not allow_empty) or len(s) > max_len or any(ord(ch) < 32 or ord(ch) == 127 for ch in s):
            raise ValueError(what)
        return s
    return _described(what, parse)


def _opt_int_in(lo: int, hi: int):
    inner = _int_in(lo, hi)

    def parse(s):
        if s in (None, "", "none", "None"):
            return None
        return inner(s)
    return _described(inner.what + " (or empty)", parse, inner.bounds)


def shorten(value, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters (a message must not echo a 2 MB value back)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 1]}… ({len(text):,} characters)"


@dataclass(frozen=True)
class Field:
    """One URL/state setting: its query key, default and parser (string → value)."""

    key: str
    default: Any
    parse: Callable[[str], Any]
    help: str = ""


FIELDS: dict[str, Field] = {f.key: f for f in (
    Field("src", "sample", _choice("sample", "gen", "upload"), "workload source"),
    Field("sample", "", _text(allow_empty=True), "sample name (empty: the default sample)"),
    Field("gen", "llm_magnitude", _text(60), "generator kind"),
    Field("tile", 32, _int_in(8, 128), "tile side T"),
    Field("preset", "horowitz-45nm", _text(60), "hardware preset"),
    Field("alpha", 1.0, _float_in(0.0, 1e6), "error weight alpha"),
    Field("beta", 1.0, _float_in(0.0, 1e6), "resource weight beta"),
    Field("mode", "weights", _choice("weights", "error", "resource"), "selector mode: weights or a budget"),
    Field("budget", 0.02, _float_in(0.0, 0.3), "error budget eps (relative error), error mode"),
    Field("rbudget", 0.5, _float_in(0.0, 1.5), "resource budget (share of Dense), resource mode"),
    Field("gran", "cluster", _choice("cluster", "tile"), "selection granularity"),
    Field("resource", "energy", _choice("energy", "cycles", "bytes", "mix"), "resource measure R"),
    Field("lsh_k", 32, _int_in(4, 256), "MinHash functions K"),
    Field("lsh_b", 8, _int_in(1, 256), "LSH bands b"),
    Field("lsh_g", 8, _int_in(1, 8), "coarse grid g"),
    Field("lsh_seed", 0, _int_in(0, 2**31 - 1), "LSH seed"),
    Field("tsel", 0, _int_in(0, 10**9), "selected tile (row of pa.tiles)"),
    Field("csel", 0, _int_in(0, 10**9), "selected cluster"),
    Field("hw_rows", None, _opt_int_in(1, MAX_GRID_SIDE), "PE grid rows (empty: preset)"),
    Field("hw_cols", None, _opt_int_in(1, MAX_GRID_SIDE), "PE grid columns (empty: preset)"),
    Field("hw_sram", None, _opt_int_in(64, 1 << 30), "SRAM bytes per PE (empty: preset)"),
    Field("hw_clock", None, _opt_float_in(1e6, 1e11), "clock in Hz (empty: preset)"),
    Field("hw_bw", None, _opt_int_in(1, 1 << 20), "DRAM bytes per cycle (empty: preset)"),
    Field("perow", None, _opt_int_in(0, 1023), "PE row shown in the timeline (empty: the busiest row)"),
    Field("xdens", 1.0, _float_in(0.05, 1.0), "activation density rho_x of the input vector"),
    Field("static", "CSC", _text(40), "kernel of the StaticSparse baseline"),
    Field("sweep", "tile=16,32;beta=0.1,1,10", _text(400), "design-space sweep: name=v1,v2;name=…"),
    Field("sweep_base", True, _flag(), "design-space sweep: also simulate the Block-sparse and Static-sparse "
                                        "baselines"),
    Field("solver", "jacobi", _choice("jacobi", "cg", "power"), "iterative method"),
    Field("iters", 30, _int_in(5, 200), "solver iterations"),
    Field("sop", "sample", _choice("sample", "stencil9", "current"), "solver operator"),
    Field("seps", 0.02, _float_in(0.0, 0.2), "error budget of the solver's lossy plan"),
    Field("lstep", 0, _int_in(0, 10**6), "Learn: step shown"),
    Field("ln", 8, _int_in(4, 32), "Learn: matrix side n"),
    Field("lT", 4, _int_in(4, 32), "Learn: tile side T"),
    Field("lgrid", "2×2", _choice("2×2", "1×2", "2×3", "3×3"), "Learn: PE grid"),
    Field("ldens", 0.35, _float_in(0.05, 1.0), "Learn: density of A"),
    Field("lxd", 0.75, _float_in(0.05, 1.0), "Learn: density of x"),
    Field("lkernel", "CSC", _text(40), "Learn: kernel of every tile (or the selector's choice)"),
    Field("lseed", 0, _int_in(0, 10_000), "Learn: seed of the tiny case"),
    Field("up_tensor", "", _text(200, allow_empty=True), "uploaded safetensors: tensor name; tar: member"),
    Field("up_prune", "none", _choice("none", "magnitude", "nm", "block"), "pruning of an upload"),
    Field("up_sparsity", 0.9, _float_in(0.0, 0.99), "pruning sparsity of an upload"),
    Field("up_pattern", "2:4", _text(10), "N:M pattern of an upload"),
)}

GEN_PREFIX = "g_"  # generator parameters travel as g_<name>=value


def parse_query(params) -> tuple[dict, list[str]]:
    """Validate query parameters into state values.

    Parameters
    ----------
    params : Mapping[str, str]
        ``st.query_params`` (or any mapping of strings).

    Returns
    -------
    values : dict
        Known keys with parsed values; generator parameters under ``"gen_params"`` (raw
        strings, validated by the generator itself).
    problems : list of str
        One plain-language line per rejected value (the default is kept instead).
    """
    values: dict = {}
    problems: list[str] = []
    gen_params: dict = {}
    for key in params:
        raw = params[key]
        if key.startswith(GEN_PREFIX):
            gen_params[key[len(GEN_PREFIX):]] = str(raw)
            continue
        field = FIELDS.get(key)
        if field is None:
            problems.append(f"Unknown link parameter {shorten(key)} was ignored.")
            continue
        try:
            values[key] = field.parse(raw)
        except (TypeError, ValueError) as exc:
            problems.append(f"Link parameter {key}={shorten(raw)} was ignored: it must be {exc}.")
    if gen_params:
        values["gen_params"] = gen_params
    return values, problems


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v == 0 and math.copysign(1.0, v) < 0:
            return "-0.0"
        return repr(v) if not v.is_integer() else str(int(v)) if abs(v) < 1e15 else repr(v)
    return str(v)


def to_query(values: dict) -> dict[str, str]:
    """Query parameters for ``values``: only keys that differ from their defaults (stable order)."""
    out: dict[str, str] = {}
    for key, field in FIELDS.items():
        if key in values and values[key] is not None and values[key] != field.default:
            out[key] = _fmt(values[key])
        elif key in values and values[key] is None and field.default is not None:
            out[key] = ""
    if values.get("src") == "gen":
        for name, v in sorted((values.get("gen_params") or {}).items()):
            if v is not None:
                out[GEN_PREFIX + name] = _fmt(v)
    return out


def coerce_gen_value(spec, raw):
    """Turn a URL string into the type a generator parameter spec expects.

    Whole numbers are read exactly (``"9007199254740993"`` stays that number, never rounded
    through a float) and must lie within ±(2**53 − 1), the range the app's number boxes hold.
    """
    if raw is None or raw == "" or raw == "None":
        return None
    if spec.kind in ("int", "float"):
        text = raw.strip() if isinstance(raw, str) else raw
        try:
            v = _number(text)
        except (ValueError, OverflowError):
            raise ValueError(f"{shorten(raw)} is not a number") from None
        if not math.isfinite(v):
            raise ValueError(f"{shorten(raw)} is not a finite number")
        if spec.kind == "float":
            return v
        if isinstance(text, str) and re.fullmatch(r"[+-]?[0-9]+", text):
            iv = int(text)
        elif v.is_integer():
            iv = int(v)
        else:
            raise ValueError(f"{shorten(raw)} is not a whole number")
        if abs(iv) > JS_MAX_INT:
            raise ValueError(f"{shorten(raw)} is beyond ±{JS_MAX_INT:,}, the largest whole number the app's "
                             "forms and links take (a browser's number box holds no more exactly)")
        return iv
    return str(raw)


def form_wants_text(spec) -> bool:
    """True when a whole-number parameter accepts more than a browser number box holds exactly
    (``high`` beyond 2**53 − 1, e.g. ``seed``): the form then offers a text box, read exactly by
    :func:`coerce_gen_value`. A number box refuses such a value in the browser and the form is never
    submitted: no message, and the last error stayed on the page."""
    return spec.kind == "int" and spec.high is not None and spec.high > JS_MAX_INT


def form_help(spec) -> str:
    """The "Accepted: …" help of a generator form field, with the form's own limit where the
    parameter accepts whole numbers beyond ±(2**53 − 1)."""
    text = f"Accepted: {spec.describe_range()}"
    if spec.kind == "int" and (spec.high is None or spec.high > JS_MAX_INT):
        text += f"; in this form up to {JS_MAX_INT:,} (the library's own call takes more)"
    return text + "."


def form_label(spec) -> str:
    """A generator form field's title: the parameter's name, as ``akfviz.generate`` and the CLI take
    it. Its meaning is the tooltip (:func:`form_tooltip`): "outlier_frac — fraction of rows and of
    columns that are outliers" took four lines of a 135-px column at an 800-px window, and
    "numpy.random.default_rng" broke mid-word."""
    return spec.name


def form_tooltip(spec) -> str:
    """A generator form field's tooltip: what the parameter means, then what it accepts."""
    meaning = (spec.help or "").strip().rstrip(".")
    return (f"{meaning[:1].upper()}{meaning[1:]}. " if meaning else "") + form_help(spec)


def form_number(spec, raw):
    """The value a generator form's number input starts at: ``raw`` (from the link or the last
    run) when it is a finite number, else the parameter's default. A bad link value is reported
    by the workload loader; the form must still open."""
    for candidate in (raw, spec.default):
        try:
            v = float(candidate)
        except (TypeError, ValueError):
            continue
        if math.isfinite(v) and (spec.kind != "int" or abs(v) <= JS_MAX_INT):
            return int(v) if spec.kind == "int" else v
    return 0 if spec.kind == "int" else 0.0
