"""App state for the Streamlit front end: URL state, run bundles and cached library calls.

This is the only module besides ``app.py`` and ``pages/`` that imports streamlit.

* **URL state** — every setting that shapes a view lives in :data:`FIELDS` (a registry:
  key, default, parser). :func:`parse_query` turns ``st.query_params`` into validated
  values (bad values are reported, never fatal); :func:`to_query` writes back only what
  differs from the defaults, so a link reproduces a view. Uploaded files cannot travel in
  a URL: the source is recorded as ``src=upload`` and the page says so.
* **Run bundles** — :func:`make_bundle` / :func:`parse_bundle`: JSON with the settings,
  the seeds, the library version, the matrix fingerprint and a results summary; loaded
  back after validation (a bad bundle raises :class:`~akfviz.errors.InputError`).
* **Caching at the edge** — library calls are cached, keyed by the matrix's content hash
  (sha256 of ``indptr``, ``indices``, ``data``) plus the parameters, with bounded
  ``max_entries``. The large results — the matrix, ``PatternAnalysis``, ``FusionPlan``,
  ``SimResult`` — use ``st.cache_resource``: returned as they are, not unpickled into a new
  copy on every rerun (on a 1M-nonzero matrix that copy was most of a rerun, and a plan's
  pickle carried its analysis a second time). Pages only read them. Small tables and
  figures use ``st.cache_data``; numba warm-up lives in ``st.cache_resource`` too.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import io
import json
import math
import re
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import streamlit as st

from . import __version__
from .errors import InputError

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
                             "number boxes hold exactly")
        return iv
    return str(raw)


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


# --------------------------------------------------------------------------- run bundles (pure)

BUNDLE_FORMAT = "akfviz-run-bundle"
BUNDLE_VERSION = 1
MAX_BUNDLE_BYTES = 2_000_000


def make_bundle(values: dict, workload: dict, results: dict) -> str:
    """Serialise a run bundle (JSON text).

    Contents: ``format``/``version``, ``akfviz_version``, ``created`` (UTC ISO time),
    ``state`` (the URL settings, generator parameters included), ``seeds`` (generator,
    LSH), ``workload`` (source, name, shape, nnz, sha256 fingerprint) and ``results``
    (summary numbers computed in this session for these settings).
    """
    state = {k: values.get(k, f.default) for k, f in FIELDS.items()}
    state["gen_params"] = dict(values.get("gen_params") or {})
    seeds = {"lsh_seed": state["lsh_seed"], "generator_seed": state["gen_params"].get("seed")}
    doc = {
        "format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "akfviz_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "state": state, "seeds": seeds, "workload": workload, "results": _jsonable(results),
    }
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return str(obj)


def parse_bundle(data: bytes | str) -> dict:
    """Validate a run bundle and return its parsed document.

    Raises
    ------
    InputError
        Not JSON, too large, not an akfviz bundle, unsupported version, or a setting
        outside its accepted range (the message names the setting).
    """
    if isinstance(data, bytes):
        if len(data) > MAX_BUNDLE_BYTES:
            raise InputError(f"The run bundle is {len(data):,} bytes; bundles are at most "
                             f"{MAX_BUNDLE_BYTES:,} bytes of JSON.")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("The run bundle is not UTF-8 text; expected the JSON file the app downloads.") from None
    elif not isinstance(data, str):
        raise InputError("A run bundle is the JSON text (or its bytes) the app downloads.")
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise InputError(f"The run bundle is not valid JSON ({exc.msg} at line {exc.lineno}); "
                         "expected the JSON file the app downloads.") from None
    except RecursionError:
        raise InputError("The run bundle's JSON is nested too deeply to be a run bundle; expected the JSON "
                         "file the app downloads.") from None
    except ValueError as exc:   # e.g. an integer of more than 4,300 digits
        raise InputError(f"The run bundle holds a value this app cannot read ({shorten(str(exc), 80)}); "
                         "expected the JSON file the app downloads.") from None
    if not isinstance(doc, dict) or doc.get("format") != BUNDLE_FORMAT:
        raise InputError(f"This JSON is not an akfviz run bundle (its 'format' must be {BUNDLE_FORMAT!r}).")
    version = doc.get("version")
    if type(version) is not int or version != BUNDLE_VERSION:
        raise InputError(f"Run bundle version {shorten(version)} is not supported; this app reads "
                         f"version {BUNDLE_VERSION}.")
    state = doc.get("state")
    if not isinstance(state, dict):
        raise InputError("The run bundle has no 'state' object with the settings.")
    for part in ("workload", "results", "seeds"):
        if doc.get(part) is not None and not isinstance(doc[part], dict):
            raise InputError(f"The run bundle's {part!r} must be an object (a {{…}} of named values), "
                             f"not {type(doc[part]).__name__}.")
    fingerprint = (doc.get("workload") or {}).get("sha256")
    if fingerprint is not None and not (isinstance(fingerprint, str) and re.fullmatch(r"[0-9a-f]{1,128}", fingerprint)):
        raise InputError("The run bundle's workload fingerprint 'sha256' must be a hexadecimal text.")
    # settings the bundle leaves out take their defaults (not whatever the session had)
    clean: dict = {k: f.default for k, f in FIELDS.items()}
    clean["gen_params"] = {}
    for key, value in state.items():
        if key == "gen_params":
            if not isinstance(value, dict):
                raise InputError("The run bundle's 'gen_params' must be an object of generator parameters.")
            clean[key] = {str(k): v for k, v in value.items()}
            continue
        field = FIELDS.get(key)
        if field is None:
            raise InputError(f"The run bundle has an unknown setting {shorten(key)}.")
        if value is None:
            if field.default is not None:
                raise InputError(f"The run bundle's setting {key!r} is empty; it must be {field.parse.what}.")
            clean[key] = None
            continue
        try:
            clean[key] = field.parse(value)
        except (TypeError, ValueError) as exc:
            raise InputError(f"The run bundle's setting {key}={shorten(value)} is not accepted: "
                             f"it must be {exc}.") from None
    found = check_names(clean, fallback=False)
    if found:
        raise InputError("The run bundle's settings are not accepted: " + " ".join(found))
    doc["state"] = clean
    return doc


def known_names() -> dict[str, list[str]]:
    """The names a text setting may take: samples, hardware presets, generators, Static-sparse kernels."""
    kernels = stage("kernels.registry", "kernel_names")()
    return {"sample": sample_names(), "preset": preset_names(),
            "gen": list(stage("workloads.generators").generators()),
            "static": [k for k in kernels if k != "SKIP"]}


_NAME_KINDS = {"sample": "sample", "preset": "hardware preset", "gen": "generator",
               "static": "Static-sparse kernel"}


def check_names(values: dict, fallback: bool = True) -> list[str]:
    """Drop (in place) names no sample / preset / generator / kernel has, and generator
    parameters the chosen generator does not take; one plain-language line per dropped value.

    A dropped setting falls back to its default, and (``fallback=True``) the line says which
    value replaced it.
    """
    problems: list[str] = []
    known = known_names()
    for key, names in known.items():
        v = values.get(key)
        if v in (None, "") or v in names:
            continue
        default = FIELDS[key].default or (default_sample() if key == "sample" else "")
        shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        using = f"; using {default!r}" if fallback else ""
        problems.append(f"There is no {_NAME_KINDS[key]} named {shorten(v)}{using} (available: {shown}).")
        del values[key]
    params = values.get("gen_params")
    if params:
        kind = values.get("gen", FIELDS["gen"].default)
        if kind in known["gen"]:
            takes = stage("workloads.generators").generator_params(kind)
            extra = sorted(k for k in params if k not in takes)
            if extra:
                problems.append(f"The {kind} generator takes no parameter "
                                f"{', '.join(shorten(k) for k in extra)}; ignored (it takes {', '.join(takes)}).")
                values["gen_params"] = {k: v for k, v in params.items() if k in takes}
    return problems


# --------------------------------------------------------------------------- library availability


def stage(module: str, attr: str | None = None):
    """Import ``akfviz.<module>`` lazily (and fetch ``attr``).

    Lazy so that opening a page does not import (and JIT-load) stages it does not use. A
    missing module or attribute is a bug and raises, never a silent "not available".
    """
    mod = importlib.import_module(f"akfviz.{module}")
    return getattr(mod, attr) if attr else mod


# --------------------------------------------------------------------------- content hashing


#: id(matrix) -> (weak reference, digest): the cached matrices are the same objects from one
#: rerun to the next (``st.cache_resource``), so their content is hashed once, not per rerun.
_DIGESTS: dict = {}


def matrix_digest(A) -> str:
    """sha256 of the matrix content (shape, indptr, indices, data), hex (memoised per object:
    the matrices handed to pages come from ``st.cache_resource`` and are never modified)."""
    hit = _DIGESTS.get(id(A))
    if hit is not None and hit[0]() is A:
        return hit[1]
    digest = _matrix_digest(A)
    key = id(A)
    try:
        _DIGESTS[key] = (weakref.ref(A, lambda _ref, k=key: _DIGESTS.pop(k, None)), digest)
    except TypeError:  # an object without weak references: not memoised
        pass
    return digest


def _matrix_digest(A) -> str:
    h = hashlib.sha256()
    h.update(np.asarray(A.shape, np.int64).tobytes())
    for arr, dt in ((A.indptr, np.int64), (A.indices, np.int64), (A.data, np.float64)):
        h.update(np.ascontiguousarray(arr, dtype=dt).tobytes())
    return h.hexdigest()


def bytes_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- cached library calls


@st.cache_resource(max_entries=16, show_spinner="Generating the matrix…")
def generate_cached(kind: str, params: tuple) -> Any:
    """``akfviz.generate`` within the app's limits (:data:`MAX_GENERATED_NNZ`,
    :data:`MAX_GENERATED_DENSE`), cached across sessions."""
    import akfviz
    from .workloads.limits import LoadLimits
    limits = LoadLimits(max_nnz=MAX_GENERATED_NNZ, max_dense_elements=MAX_GENERATED_DENSE,
                        max_rows=MAX_APP_SIDE, max_cols=MAX_APP_SIDE)
    return akfviz.generate(kind, limits=limits, **dict(params))


@st.cache_resource(max_entries=8, show_spinner="Loading the sample…")
def sample_cached(name: str):
    from .workloads import samples
    return samples.load_sample(name)


@st.cache_resource(max_entries=4, show_spinner="Reading the uploaded file…")
def load_cached(digest: str, _data: bytes, fmt: str | None, tensor: str | None, prune: tuple,
                name: str | None = None):
    import akfviz
    from .workloads.limits import LoadLimits
    A = akfviz.load(_data, fmt=fmt, tensor=tensor or None, name=name,
                    limits=LoadLimits(max_rows=MAX_APP_SIDE, max_cols=MAX_APP_SIDE))
    method = prune[0]
    if method and method != "none":
        from .workloads.prune import prune as do_prune
        A = do_prune(A, method=method, sparsity=prune[1], pattern=prune[2])
    return A


@st.cache_data(max_entries=4, show_spinner=False)
def list_tensors_cached(digest: str, _data: bytes):
    from .workloads.loaders import list_tensors
    return list_tensors(_data)


@st.cache_data(max_entries=4, show_spinner=False)
def archive_members_cached(digest: str, _data: bytes, name: str):
    from .workloads.archives import matrix_members
    return matrix_members(_data, name)


@st.cache_resource(max_entries=8, show_spinner="Analysing tiles and LSH clusters…")
def analyze_cached(key: str, _A, tile: int, lsh: tuple):
    import akfviz
    _analysis_code_loaded()
    return akfviz.analyze(_A, tile=tile, lsh=_lsh_config(lsh))


@st.cache_resource(show_spinner=False)
def _analysis_code_loaded() -> bool:
    """Load the analysis's numba code on a tiny matrix before the first real analysis, so the
    timings the Patterns page shows (cached for every later visitor) are the analysis's own,
    not the ≈ 0.8 s of loading machine code on a cold server (:func:`warm_up` runs only after
    the first page has drawn)."""
    import akfviz
    akfviz.analyze(akfviz.generate("uniform", n=64, density=0.05, seed=0), tile=32)
    return True


def _lsh_config(lsh: tuple):
    if not lsh:
        return None
    LSHConfig = stage("analysis.lsh", "LSHConfig")
    k, b, g, seed = lsh
    return LSHConfig(num_hashes=k, bands=b, grid=g, seed=seed)


@st.cache_resource(max_entries=16, show_spinner="Selecting kernels…")
def select_cached(key: str, _pa, alpha: float, beta: float, budget, granularity: str,
                  hw_key: str, _hw, extra: tuple = ()):
    import akfviz
    return akfviz.select(_pa, alpha=alpha, beta=beta, error_budget=budget, granularity=granularity,
                         hw=_hw, **dict(extra))


@st.cache_data(max_entries=8, show_spinner="Sweeping the multiplier for the Pareto front…")
def pareto_cached(key: str, _pa, hw_key: str, _hw, resource: str, granularity: str, n_points: int = 25):
    from .selection.pareto import pareto_front
    return pareto_front(_pa, hw=_hw, resource=resource, granularity=granularity, n_points=n_points)


@st.cache_data(max_entries=4, show_spinner="Calibrating the performance table…")
def perftable_cached(hw_key: str, _hw, tile: int):
    from .selection.perftable import performance_table
    return performance_table(_hw, tile)


@st.cache_data(max_entries=4, show_spinner="Pricing the tiles exactly to check the table…")
def prediction_error_cached(key: str, _pa, hw_key: str, _hw):
    from .selection.perftable import prediction_error
    return prediction_error(_pa, _hw, max_tiles=500)


@st.cache_resource(max_entries=8, show_spinner="Simulating the NPU event by event…")
def simulate_cached(key: str, _plan, hw_key: str, _hw, x_key: str, _x, fused: bool = True,
                    iterations: int = 1, persistent: bool = True, _mapping="anneal"):
    """The simulation of the app's pages; it records the busy intervals (the NPU page's timeline)
    only up to :data:`MAX_RECORDED_INTERVALS` of them."""
    import akfviz
    return akfviz.simulate(_plan, _hw, x=_x, iterations=iterations, persistent=persistent, fused=fused,
                           mapping=_mapping, record_limit=MAX_RECORDED_INTERVALS)


#: Most busy intervals a simulation in the app records for the timeline (≈ 160 bytes each while
#: recording); above it the app simulates without them — the same counters, cycles and energy.
MAX_RECORDED_INTERVALS = 5_000_000


@st.cache_data(max_entries=8, show_spinner=False)
def compare_cached(key: str, _A, hw_key: str, _hw, alpha: float, beta: float, tile: int, extra: tuple = (),
                   _pa=None, _plan=None):
    """:func:`akfviz.compare.compare` once per input, with a progress bar while it runs (five steps;
    seconds each on a 1M-nonzero matrix). The bar is not part of the cached result."""
    from .compare import compare   # not akfviz.compare: importing the module shadows the lazy function
    bar = st.progress(0.0, text="Running the four baselines…")

    def progress(done, total, step):
        bar.progress(done / total, text=f"Step {min(done + 1, total)} of {total}: {step}…"
                     if done < total else "Done")

    try:
        return compare(_A, hw=_hw, alpha=alpha, beta=beta, tile=tile, analysis=_pa, progress=progress,
                       plan=_plan, **dict(extra))
    finally:
        bar.empty()


@st.cache_data(max_entries=16, show_spinner=False)
def cpu_check_cached(key: str, _plan, _A) -> dict:
    """:func:`akfviz.execute.cpu.matvec_check` of the plan on a seeded standard-normal ``x``
    (seed 0), once per plan (``key``): ``vs_approx``, ``output_error``, ``max_abs``."""
    x = np.random.default_rng(0).standard_normal(_A.shape[1])
    return stage("execute.cpu", "matvec_check")(_plan, x, _A)


@st.cache_data(max_entries=4, show_spinner="Placing tiles on the PE grid (annealing)…")
def mapping_cached(key: str, _plan, hw_key: str, _hw, rho_x: float):
    from .npu.simulate import plan_mapping
    return plan_mapping(_plan, _hw, rho_x=rho_x)


def sweep_grid(spec: str, max_points: int) -> tuple[dict, list[dict]]:
    """The Design space page's sweep field as ``(grid, points)``.

    Parameters
    ----------
    spec : str
        The grid as text, e.g. ``"tile=16,32;beta=0.1,1"``
        (:func:`akfviz.dse.sweep.parse_grid`).
    max_points : int
        Most points the page runs.

    Returns
    -------
    grid : dict
        Parameter name -> list of checked values.
    points : list of dict
        Every combination (:func:`akfviz.dse.sweep.expand_grid`).

    Raises
    ------
    InputError
        What ``parse_grid`` or ``expand_grid`` refuse, and a PE grid side over
        :data:`MAX_GRID_SIDE` (the NPU page's limit; larger grids run on the command line).
    """
    sweep = stage("dse.sweep")
    grid = sweep.parse_grid(spec)
    for side in ("rows", "cols"):
        if max(grid.get(side, [0])) > MAX_GRID_SIDE:
            raise InputError(f"Sweep parameter '{side}' goes up to {MAX_GRID_SIDE} in the app, as on the NPU "
                             f"page (got {max(grid[side]):g}); larger grids: python -m akfviz sweep.")
    return grid, sweep.expand_grid(grid, max_points=max_points)


@st.cache_data(max_entries=8, show_spinner="Running the solver and simulating its iterations…")
def solver_cached(key: str, _plan, hw_key: str, _hw, method: str, iterations: int):
    from .npu.iterative import run_solver
    return run_solver(_plan, _hw, method=method, iterations=iterations)


def input_vector(m: int, rho_x: float, seed: int = 0) -> np.ndarray:
    """Seeded input ``x`` of density ``rho_x``: the library's
    :func:`akfviz.npu.simulate.random_input`, the same vector ``compare`` draws."""
    return stage("npu.simulate", "random_input")(m, rho_x, seed)


def simulation(wl: Workload, plan, hw, hwk: str, fused: bool = True, iterations: int = 1,
               persistent: bool = True):
    """Cached SimResult of the current plan on the current hardware (None with st.error)."""
    rho = float(get("xdens"))
    x = input_vector(wl.A.shape[1], rho)
    key = plan_key(wl, plan.pa, hwk)
    try:
        mp = mapping_cached(key, plan, hwk, hw, rho)
        return simulate_cached(key, plan, hwk, hw, f"{rho}|0", x, fused, iterations, persistent, mp)
    except (InputError, ValueError) as exc:
        show_error(exc)
        return None


@st.cache_resource(show_spinner="Loading the numba kernels (first run only)…")
def warm_up() -> float:
    """Load (or compile) the numba kernels of every stage once per server process, on a tiny
    matrix; returns seconds.

    Called after the first page's body, so the first chart does not wait for it. Without the
    selector, simulator and baselines here, the first visit to Kernels reported a
    "selection time" of ≈ 0.5–1 s, nearly all of it loading cached machine code and building
    the default hardware's performance table at T = 32 (the selection itself takes ≈ 10 ms on
    the default sample).
    """
    # Nothing here is optional: every stage is part of the package, and the input is a fixed,
    # valid matrix, so an error (a missing module or attribute included, as in :func:`stage`)
    # is a bug and raises.
    import akfviz
    from .execute.plan import FusionPlan

    t0 = time.perf_counter()
    A = akfviz.generate("uniform", n=64, density=0.05, seed=0)
    pa = akfviz.analyze(A, tile=32)
    FusionPlan(pa, ["CSC"] * pa.tileset.n_tiles).matvec(np.ones(A.shape[1]))
    # the default preset at the default T: this also builds its performance table
    plan = akfviz.select(pa, hw=akfviz.HardwareConfig())
    plan.matvec(np.ones(A.shape[1]))
    akfviz.simulate(plan, akfviz.HardwareConfig(), rho_x=0.5)
    akfviz.compare(A, tile=32)
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- session state + widgets

_INIT = "_akf_initialised"
_PROBLEMS = "_akf_url_problems"
RESULTS = "_akf_results"


def init_session() -> None:
    """First run of a session: defaults, then the URL's values (problems remembered for display)."""
    ss = st.session_state
    if ss.get(_INIT):
        return
    for key, field in FIELDS.items():
        ss.setdefault(key, field.default)
    ss.setdefault("gen_params", {})
    values, problems = parse_query(st.query_params)
    problems += repeated_keys(st.query_params)
    problems += check_names(values)
    for key, value in values.items():
        ss[key] = value
    if not ss.get("sample"):
        ss["sample"] = default_sample()
    ss[_PROBLEMS] = problems
    ss[RESULTS] = {}
    ss[_INIT] = True


def url_problems() -> list[str]:
    return list(st.session_state.get(_PROBLEMS, []))


def get(key: str):
    return st.session_state.get(key, FIELDS[key].default if key in FIELDS else None)


def put(key: str, value) -> None:
    """Set a state value (and forget the widget's own copy so it shows the new value)."""
    st.session_state[key] = value
    st.session_state.pop("w:" + key, None)


def values() -> dict:
    out = {k: st.session_state.get(k, f.default) for k, f in FIELDS.items()}
    out["gen_params"] = dict(st.session_state.get("gen_params") or {})
    return out


def repeated_keys(params) -> list[str]:
    """One line per key a link gives more than once (the last value is used; ``sync_url``
    then writes the link back with that one value)."""
    out = []
    for key in params:
        given = params.get_all(key) if hasattr(params, "get_all") else [params[key]]
        if len(given) > 1:
            out.append(f"Link parameter {shorten(key)} is given {len(given)} times; using the last value, "
                       f"{shorten(given[-1])}.")
    return out


def sync_url() -> None:
    """Write the current state into the URL (only non-default values)."""
    vals = values()
    if vals.get("sample") == default_sample():
        vals["sample"] = ""
    q = to_query(vals)
    current = {k: st.query_params[k] for k in st.query_params}
    if current != q or any(len(st.query_params.get_all(k)) > 1 for k in st.query_params):
        st.query_params.from_dict(q)


def _bind(key: str, options=None, label: str = ""):
    """The widget key of setting ``key``, seeded from the shared state. A value that is not
    among ``options`` is replaced by the nearest option (the first, for text); when the value
    came from outside this widget (a link, a bundle, another page) a warning says so."""
    wkey = "w:" + key
    fresh = wkey not in st.session_state
    if fresh:
        st.session_state[wkey] = get(key)
    old = st.session_state[wkey]
    if options is not None and options and old not in options:
        new = options[0]
        if isinstance(old, (int, float)) and not isinstance(old, bool) \
                and all(isinstance(o, (int, float)) for o in options):
            new = min(options, key=lambda o: abs(o - old))
        st.session_state[wkey] = new
        st.session_state[key] = new
        if fresh and label:
            note(f"{label}: {shorten(old)} is not one of the choices here; using {shorten(new)}.")
    return wkey


def note(text: str) -> None:
    """A warning about a setting, under the page's heading (widgets may sit in a collapsed expander,
    where a warning beside them is never seen); in place when no page has started."""
    slot = st.session_state.get("_akf_notes")
    (slot if slot is not None else st).warning(text)


def _commit(key: str):
    st.session_state[key] = st.session_state["w:" + key]


def bounds(key: str) -> tuple:
    """``(min, max)`` of a numeric setting: the range its link field accepts, which is also its
    widget's range (one source for both; pages pass it as ``*S.bounds(key)``)."""
    return FIELDS[key].parse.bounds


def _clamp_to_range(fn, wkey: str, key: str, args, kwargs, label: str = "") -> None:
    """Bring a numeric value into a slider's or number input's ``[min, max]``.

    Streamlit raises when a widget's value lies outside its range. Ranges can depend on the
    data (the selected tile of a smaller matrix, a PE row of a smaller grid), so a value that
    was valid for the last matrix or came from a link is moved to the nearest end instead.
    """
    if getattr(fn, "__name__", "") not in ("slider", "number_input"):
        return
    lo = kwargs.get("min_value", args[0] if len(args) > 0 else None)
    hi = kwargs.get("max_value", args[1] if len(args) > 1 else None)
    v = st.session_state.get(wkey)
    if v is None or isinstance(v, (bool, tuple, list)):
        return
    new = v
    if lo is not None and new < lo:
        new = type(v)(lo)
    if hi is not None and new > hi:
        new = type(v)(hi)
    if new != v:
        st.session_state[wkey] = new
        st.session_state[key] = new
        if label:  # said once: the state now holds the new value
            note(f"{label}: {shorten(v)} is outside {shorten(lo)} … {shorten(hi)} here; using {shorten(new)}.")


def widget(fn, label: str, key: str, *args, options=None, **kwargs):
    """Render ``fn`` (e.g. ``st.slider``) bound to state ``key``; the value survives page switches
    (and is moved into the widget's range when it lies outside, see :func:`_clamp_to_range`)."""
    wkey = _bind(key, options, label)
    _clamp_to_range(fn, wkey, key, args, kwargs, label)
    if options is not None:
        args = (options, *args)
    value = fn(label, *args, key=wkey, on_change=_commit, args=(key,), **kwargs)
    st.session_state[key] = value
    return value


PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def chart(fig, key: str, **kwargs):
    """``st.plotly_chart`` with our own colours (``theme=None``: the fixed kernel-family colours and the
    colour scales are never restyled by the Streamlit theme)."""
    return st.plotly_chart(fig, key=key, theme=None, config=PLOTLY_CONFIG, **kwargs)


@st.cache_data(max_entries=32, show_spinner=False)
def figure_cached(key: str, _build):
    """A figure that depends only on ``key``, built once and kept as a plain dict (cheap to re-send)."""
    return _build().to_dict()


def record_result(section: str, summary: dict) -> None:
    """Remember a results summary (for the run bundle) computed for the current settings."""
    st.session_state.setdefault(RESULTS, {})[section] = _jsonable(summary)


def show_error(exc: Exception) -> None:
    """An InputError (or a ValueError from a library check) as a readable st.error, no traceback."""
    st.error(app_advice(str(exc)))


def app_advice(message: str) -> str:
    """A library message with a line for the app's user where its advice names Python arguments
    the app does not offer (``limits=LoadLimits(...)``, ``fmt=``).

    >>> app_advice("Too big; pass limits=LoadLimits(max_nnz=...).").endswith("can raise them.")
    True
    """
    notes = []
    if "LoadLimits(" in message:
        notes.append("In the app these size limits are fixed; the Python API (akfviz.load or akfviz.generate "
                     "with limits=LoadLimits(...)) can raise them.")
    if "fmt=" in message:
        notes.append("In the app the format comes from the file's extension: rename the file so that its "
                     "extension matches its content.")
    return message if not notes else message + "\n\n" + " ".join(notes)


# --------------------------------------------------------------------------- the current workload


@dataclass
class Workload:
    A: Any
    label: str
    source: str
    provenance: str
    digest: str


def default_sample() -> str:
    return stage("workloads.samples", "DEFAULT_SAMPLE")


@functools.lru_cache(maxsize=1)
def _sample_rows() -> dict:
    """name → catalogue row (dict), read once per process. ``sample_title`` is the sample
    picker's ``format_func``, called for every option on every rerun: building the listing
    DataFrame each time cost ≈ 70 ms per rerun."""
    listing = stage("workloads.samples").list_samples()
    return {str(r["name"]): r for r in listing.to_dict("records")}


def sample_names() -> list[str]:
    return list(_sample_rows())


def sample_provenance(name: str) -> str:
    """One provenance line for a shipped sample (title, source, pruning, seed, licence)."""
    r = _sample_rows().get(name)
    if r is None:
        return ""
    parts = [str(r.get("title", ""))]
    for col, label in (("source", "source"), ("pruning", "pruning"), ("seed", "seed"), ("licence", "licence")):
        v = r.get(col)
        if v is not None and not (isinstance(v, float) and math.isnan(v)) and str(v):
            parts.append(f"{label}: {v}")
    return "; ".join(p for p in parts if p)


def sample_title(name: str) -> str:
    r = _sample_rows().get(name)
    return f"{name} — {r['title']}" if r is not None else name


def _as_matrix(obj):
    """``load_sample`` may return the matrix or an object/tuple holding it."""
    if hasattr(obj, "indptr"):
        return obj
    if isinstance(obj, tuple):
        return next(o for o in obj if hasattr(o, "indptr"))
    for attr in ("A", "matrix"):
        if hasattr(obj, attr):
            return getattr(obj, attr)
    raise InputError("The sample could not be read as a sparse matrix.")


def gen_kwargs(kind: str) -> dict:
    """Generator keyword arguments from state (defaults of the generator filled in)."""
    gens = stage("workloads.generators")
    raw = dict(st.session_state.get("gen_params") or {})
    specs = {s.name: s for s in gens.generator_specs(kind)}
    out = {}
    for name, default in gens.generator_params(kind).items():
        v = raw.get(name, default)
        if isinstance(v, str) and name in specs:
            try:
                v = coerce_gen_value(specs[name], v)
            except ValueError as exc:
                kind_name = {"int": "whole number", "float": "number"}.get(specs[name].kind, specs[name].kind)
                raise InputError(f"Generator parameter {name}={shorten(v)} is not accepted: it must be a "
                                 f"{kind_name}, and {exc}.") from None
        out[name] = v
    return {k: v for k, v in out.items() if v is not None}


def current_workload() -> Workload | None:
    """The matrix every page works on, from the sidebar's source; None (with st.error) on bad input."""
    src = get("src")
    try:
        if src == "upload":
            data = st.session_state.get("_akf_upload")
            if data is None:
                st.warning("The workload source is an uploaded file, but no file is uploaded in this session "
                           "(uploaded files cannot be carried in a link). Showing the default sample instead; "
                           "upload the file on the Matrix page.")
                src = "sample"
            else:
                name, payload = data
                prune = (get("up_prune"), get("up_sparsity"), get("up_pattern"))
                fmt = _fmt_of(name)
                A = load_cached(bytes_digest(payload), payload, fmt, get("up_tensor") or None, prune, name)
                part = "member" if name.lower().endswith(stage("workloads.archives").ARCHIVE_SUFFIXES) else "tensor"
                prov = f"uploaded file {name}" + (f", {part} {get('up_tensor')}" if get("up_tensor") else "") + \
                    (f", pruned by {prune[0]} (sparsity {prune[1]:g}, pattern {prune[2]})" if prune[0] != "none" else "")
                return Workload(A, name, "upload", prov, matrix_digest(A))
        if src == "gen":
            gens = stage("workloads.generators")
            kind = get("gen")
            if kind not in gens.generators():
                raise InputError(f"Unknown generator {kind!r}; choose one of {', '.join(gens.generators())}.")
            kw = gen_kwargs(kind)
            A = generate_cached(kind, tuple(sorted(kw.items())))
            desc = ", ".join(f"{k}={v}" for k, v in kw.items())
            return Workload(A, f"{kind}({desc})", "gen", f"generated: akfviz.generate({kind!r}, {desc})",
                            matrix_digest(A))
        name = get("sample") or default_sample()
        A = _as_matrix(sample_cached(name))
        return Workload(A, name, "sample", sample_provenance(name), matrix_digest(A))
    except (InputError, ValueError) as exc:
        show_error(exc)
        return None


def _fmt_of(name: str) -> str | None:
    low = name.lower()
    for ext in (".safetensors", ".mtx", ".npz", ".npy"):
        if low.endswith(ext):
            return ext[1:]
    return None


_WL = "_akf_workload"


def load_workload() -> Workload | None:
    """Resolve the current workload once per run (called by the shared page shell, akfviz/app_shell.py)."""
    wl = current_workload()
    st.session_state[_WL] = wl
    return wl


def require_workload() -> Workload:
    """The workload resolved for this run; stops the page (an error is already shown) when None."""
    wl = st.session_state[_WL] if _WL in st.session_state else load_workload()
    if wl is None:
        st.stop()
    return wl


def lsh_tuple() -> tuple:
    return (int(get("lsh_k")), int(get("lsh_b")), int(get("lsh_g")), int(get("lsh_seed")))


def analysis_key(digest: str, tile: int) -> str:
    """A string naming an analysis (matrix content, tile side, LSH settings): results and
    figures computed from a ``PatternAnalysis`` are cached under it."""
    return f"{digest}|{int(tile)}|{lsh_tuple()}"


def analysis(wl: Workload):
    """Cached PatternAnalysis of the current workload and settings (None with st.error on bad input)."""
    try:
        return analyze_cached(wl.digest, wl.A, int(get("tile")), lsh_tuple())
    except (InputError, ValueError) as exc:
        show_error(exc)
        return None


def selection_args() -> dict:
    """Keyword arguments of akfviz.select from the state (mode, budgets, resource, granularity)."""
    mode = get("mode")
    return {"alpha": float(get("alpha")), "beta": float(get("beta")),
            "budget": float(get("budget")) if mode == "error" else None,
            "granularity": get("gran"),
            "extra": (("resource", get("resource")),
                      ("resource_budget", float(get("rbudget")) if mode == "resource" else None),
                      # the selector prices events at the density the NPU page simulates
                      ("rho_x", float(get("xdens"))))}


def plan_key(wl: Workload, pa, hwk: str) -> str:
    """A string naming the current plan (matrix, tiling, LSH, selector settings, hardware):
    figures drawn from the plan are cached under it (``figure_cached``)."""
    args = selection_args()
    return (f"{analysis_key(wl.digest, pa.tile)}|{args['alpha']}|{args['beta']}|{args['budget']}|"
            f"{args['granularity']}|{args['extra']}|{hwk}")


def plan_for(wl: Workload, pa, hw, hwk: str):
    """Cached FusionPlan for the current selector settings (None with st.error on bad input)."""
    args = selection_args()
    try:
        plan = select_cached(analysis_key(wl.digest, pa.tile), pa, args["alpha"], args["beta"],
                             args["budget"], args["granularity"], hwk, hw, args["extra"])
    except (InputError, ValueError) as exc:
        show_error(exc)
        return None
    warn_if_dropped(plan, hw)
    return plan


#: A plan whose relative error reaches this gets a warning on every page that shows it.
DROPPED_WARNING_ERROR = 0.5


def warn_if_dropped(plan, hw) -> None:
    """Warn when the plan loses most of the matrix (SKIP tiles, mostly): its simulation then
    shows a tiny, cheap run of almost nothing, which reads as a result unless said."""
    err = float(plan.relative_error)
    if err < DROPPED_WARNING_ERROR:
        return
    cats = plan.tile_kernels_categorical
    skip = np.asarray(cats == "SKIP")
    nnz = plan.pa.tiles_as_analysed()["nnz"].to_numpy()
    share = float(nnz[skip].sum()) / max(float(nnz.sum()), 1.0)
    st.warning(
        f"This plan loses most of the matrix: relative error {100 * err:.1f} %, with {int(skip.sum()):,} of "
        f"{skip.size:,} tiles dropped (SKIP, {100 * share:.0f} % of the nonzeros). Its simulation runs only "
        f"what is kept, so its cycles and energy are not those of this matrix. {dropped_cause(plan, hw)}",
        icon="⚠️")


def dropped_cause(plan, hw) -> str:
    """Why a plan dropped most of the matrix, from what decided it: a resource budget, the SRAM
    capacity penalty of the fusion weights, or weights that price resource far above error."""
    rep = getattr(plan, "selection", None)
    mode = getattr(rep, "mode", "weights")
    if mode == "resource_budget":
        return (f"The resource budget ({rep.resource_budget:g} of Dense's) is below what keeping the matrix "
                "costs, so the least-error plan within it drops tiles; raise the budget or use an error "
                "budget (Kernels page).")
    fusion = getattr(rep, "fusion", None)
    if fusion is not None and fusion.binding:
        return (f"The PE SRAM ({hw.sram_bytes_per_pe:,} B per PE, {hw.total_sram_bytes:,} B in all) is below "
                "the plan's payload and the fusion weights' SRAM penalty prefers dropping tiles; give more "
                "SRAM, or an error budget (Kernels page).")
    return (f"The weights price resource far above error (α = {getattr(rep, 'alpha', float('nan')):g}, "
            f"β = {getattr(rep, 'beta', float('nan')):g}), so dropping a tile is the cheapest choice; raise α, "
            "lower β, or use an error budget (Kernels page).")


def require_tiles(pa) -> None:
    """Stop the page with an explanation when the matrix has no nonzero tile (nothing to select/simulate)."""
    if pa.tiles.shape[0] == 0:
        st.info("This matrix has no nonzeros, so there are no tiles to analyse, select or simulate. "
                "Pick another workload on the Matrix page.")
        st.stop()


def hardware():
    """HardwareConfig from the preset plus the NPU page's overrides (None after a shown error)."""
    hwmod = stage("npu.hardware")
    try:
        preset = get("preset")
        names = hwmod.HardwareConfig.preset_names()
        base = hwmod.HardwareConfig.from_preset(preset if preset in names else names[0])
        hw = _apply_overrides(base)
        return hw, hw_key(hw)
    except (InputError, ValueError) as exc:
        show_error(exc)
        return None, ""


#: The NPU page's hardware settings: state key -> HardwareConfig field (the one list of them).
HW_OVERRIDES = {"hw_rows": "rows", "hw_cols": "cols", "hw_sram": "sram_bytes_per_pe", "hw_clock": "clock_hz",
                "hw_bw": "dram_bytes_per_cycle"}
#: How :func:`hardware_changes` words a changed setting: state key -> (format, scale of the
#: field's value). The PE grid (``hw_rows``, ``hw_cols``) is worded as one change, "R×C PEs".
HW_CHANGE_FORMATS = {"hw_sram": ("{:,.0f} B SRAM per PE", 1), "hw_clock": ("{:g} MHz", 1e-6),
                     "hw_bw": ("{:,.0f} DRAM B/cycle", 1)}


def set_hardware(hw, **fields) -> None:
    """Store the NPU page's hardware form: ``fields`` are HardwareConfig field values
    (``rows=…, clock_hz=…``, one per field of :data:`HW_OVERRIDES`), checked by
    ``hw.replace`` before any is stored.

    Raises
    ------
    InputError
        A field the NPU page does not set, or a value ``HardwareConfig`` refuses (nothing is
        stored then).
    """
    known = set(HW_OVERRIDES.values())
    unknown = sorted(set(fields) - known)
    if unknown:
        raise InputError(f"Hardware setting(s) {', '.join(unknown)} are not set on the NPU page; "
                         f"choose from {', '.join(sorted(known))}.")
    values = {attr: type(getattr(hw, attr))(v) for attr, v in fields.items()}
    hw.replace(**values)
    for key, attr in HW_OVERRIDES.items():
        if attr in values:
            put(key, values[attr])


def hardware_changes() -> list[str]:
    """The NPU page's changes to the preset, as short phrases ("16×16 PEs", "8,192 B SRAM per PE",
    "edited energy table"); empty when the preset is used as it is."""
    hwmod = stage("npu.hardware")
    names = hwmod.HardwareConfig.preset_names()
    base = hwmod.HardwareConfig.from_preset(get("preset") if get("preset") in names else names[0])
    value = {k: get(k) for k in HW_OVERRIDES}
    rows = base.rows if value["hw_rows"] is None else int(value["hw_rows"])
    cols = base.cols if value["hw_cols"] is None else int(value["hw_cols"])
    out = [f"{rows}×{cols} PEs"] if (rows, cols) != (base.rows, base.cols) else []
    for key, (fmt, scale) in HW_CHANGE_FORMATS.items():
        v = value[key]
        if v is not None and float(v) != float(getattr(base, HW_OVERRIDES[key])):
            out.append(fmt.format(float(v) * scale))
    if st.session_state.get("_akf_energy_override") is not None:
        out.append("edited energy table")
    return out


def hardware_text(hw) -> str:
    """One line naming the hardware a result was computed on: the preset, or "custom" with the
    NPU page's changes, then the grid, SRAM and clock."""
    changes = hardware_changes()
    label = get("preset") if not changes else f"custom (preset {get('preset')}, changed on the NPU page)"
    return (f"{label}: {hw.rows}×{hw.cols} = {hw.n_pes:,} PEs, {hw.sram_bytes_per_pe:,} B SRAM per PE, "
            f"{hw.clock_hz / 1e6:g} MHz")


def _apply_overrides(hw):
    import dataclasses
    overrides = {}
    names = {f.name for f in dataclasses.fields(hw)} if dataclasses.is_dataclass(hw) else set()
    for key, attr in HW_OVERRIDES.items():
        v = get(key)
        if v is not None and attr in names:
            overrides[attr] = type(getattr(hw, attr))(v)
    energy = st.session_state.get("_akf_energy_override")
    if energy is not None and "energy" in names:
        overrides["energy"] = energy
    if not overrides:
        return hw
    return hw.replace(**overrides) if hasattr(hw, "replace") else dataclasses.replace(hw, **overrides)


def hw_key(hw) -> str:
    """Stable hash of a HardwareConfig (its canonical TOML)."""
    return hw.config_hash()


def preset_names() -> list[str]:
    """Hardware preset names from the library."""
    return [str(n) for n in stage("npu.hardware", "HardwareConfig").preset_names()]


def workload_summary(wl: Workload) -> dict:
    return {"source": wl.source, "label": wl.label, "provenance": wl.provenance,
            "shape": list(wl.A.shape), "nnz": int(wl.A.nnz), "sha256": wl.digest}


def bundle_writer(wl: Workload | None) -> Callable[[], str]:
    """A function that writes this session's run bundle, for a deferred download button.

    Streamlit calls a download button's ``data`` function after the script run, outside it,
    where ``st.session_state`` reads as empty (the bundle came out with every default and no
    results). So the settings are copied now, and the results dict itself is kept: the page
    body records this run's results into it after the sidebar is drawn.
    """
    vals = values()
    summary = workload_summary(wl) if wl is not None else {}
    results = st.session_state.setdefault(RESULTS, {})
    return lambda: make_bundle(vals, summary, results)


def apply_bundle(doc: dict) -> None:
    """Apply a validated bundle's settings to the session (the caller reruns); an empty sample
    name means the default sample, as in a link."""
    for key, value in doc["state"].items():
        if key == "sample" and not value:
            value = default_sample()
        put(key, value)
    st.session_state["_akf_bundle_workload"] = doc.get("workload") or {}


def json_download(obj) -> bytes:
    return json.dumps(_jsonable(obj), indent=2).encode()


def export_buttons(label: str, frame_fn, stem: str, key: str, what: str = "") -> None:
    """CSV and Parquet download buttons for a table that is built only when a button is clicked
    (``frame_fn()`` returns the DataFrame; e.g. a million-tile table costs nothing until asked for);
    ``what`` (optional) is shown beside them: what one row of the table is."""
    # a wrapping row sized to its content: fixed column shares cut the labels ("Traject…") when the
    # buttons sit in half of the page
    row = st.container(horizontal=True, vertical_alignment="center")
    row.download_button(f"{label} (CSV)", data=lambda: frame_bytes(frame_fn(), "csv"),
                        file_name=f"akfviz-{stem}.csv", mime="text/csv", on_click="ignore", key=f"{key}_csv")
    row.download_button(f"{label} (Parquet)", data=lambda: frame_bytes(frame_fn(), "parquet"),
                        file_name=f"akfviz-{stem}.parquet", mime="application/octet-stream",
                        on_click="ignore", key=f"{key}_parquet")
    if what:
        row.caption(what)


def frame_bytes(df, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    df.to_parquet(buf, index=False)
    return buf.getvalue()
