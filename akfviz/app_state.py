"""App state for the Streamlit front end: session state, widgets, the current workload, run bundles.

The pages import this module as ``S``. It re-exports :mod:`akfviz.app_url` (the settings a
link carries, their parsers and the app's size limits) and :mod:`akfviz.app_cache` (cached
library calls keyed by content hash, and the numba warm-up), so a page needs one import.
Together with :mod:`akfviz.app_shell`, these are the only library modules that import
streamlit (:mod:`akfviz.app_url` does not).

* **Session state and widgets** — :func:`init_session` fills ``st.session_state`` from the
  defaults and the URL; :func:`widget` binds a widget to a :data:`FIELDS` key and keeps the
  URL in step (:func:`sync_url`).
* **Run bundles** — :func:`make_bundle` / :func:`parse_bundle`: JSON with the settings,
  the seeds, the library version, the matrix fingerprint and a results summary; loaded
  back after validation (a bad bundle raises :class:`~akfviz.errors.InputError`).
* **The current workload and its stages** — :func:`current_workload`, :func:`analysis`,
  :func:`plan_for`, :func:`simulation`, :func:`hardware`: the cached calls with the
  session's settings, showing ``st.error`` instead of raising.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import streamlit as st

from . import __version__
from .errors import InputError
from .plain import to_plain
from .app_url import (FIELDS, Field, GEN_PREFIX, JS_MAX_INT, MAX_APP_SIDE, MAX_GENERATED_DENSE,
    MAX_GENERATED_NNZ, MAX_GRID_SIDE, coerce_gen_value, form_help, form_label, form_number,
    form_tooltip, form_wants_text, parse_query,
    shorten, to_query)  # noqa: F401 (re-exported)
from .app_cache import (MAX_RECORDED_INTERVALS, analyze_cached, bytes_digest, compare_cached, frame_digest,
    cpu_check_cached, explain_cached, generate_cached, input_vector, load_cached, mapping_cached, matrix_choices_cached,
    matrix_digest, pareto_cached, perftable_cached, prediction_error_cached, sample_cached, select_cached,
    simulate_cached, solver_cached, stage, warm_up)  # noqa: F401 (re-exported)


# --------------------------------------------------------------------------- run bundles (pure)

BUNDLE_FORMAT = "akfviz-run-bundle"
BUNDLE_VERSION = 1
MAX_BUNDLE_BYTES = 2_000_000


def make_bundle(values: dict, workload: dict, results: dict, energy_table: dict | None = None,
                settings_sha256: str | None = None) -> str:
    """Serialise a run bundle (JSON text).

    Contents: ``format``/``version``, ``akfviz_version``, ``model_source`` (:func:`model_source`:
    which model code computed the results), ``settings_sha256`` (:func:`settings_stamp`, whose
    first 8 digits end every table export's file name), ``created`` (UTC ISO time),
    ``state`` (the URL settings, generator parameters included), ``energy_table`` (the NPU
    page's edited energy table as :meth:`EnergyTable.to_plain`, or null for the preset's),
    ``seeds`` (generator, LSH), ``workload`` (source, name, shape, nnz, sha256 fingerprint)
    and ``results`` (summary numbers computed in this session for these settings).
    """
    state = {k: values.get(k, f.default) for k, f in FIELDS.items()}
    state["gen_params"] = dict(values.get("gen_params") or {})
    # the seed the generator ran with (its default too), else the one given
    made = ((workload or {}).get("generator") or {}).get("params") or {}
    seeds = {"lsh_seed": state["lsh_seed"], "generator_seed": made.get("seed", state["gen_params"].get("seed"))}
    doc = {
        "format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "akfviz_version": __version__,
        "model_source": model_source(), "settings_sha256": settings_sha256,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "state": state, "energy_table": to_plain(energy_table), "seeds": seeds, "workload": workload,
        "results": to_plain(results),
    }
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False)


@functools.lru_cache(maxsize=1)
def model_source() -> str:
    """16 hex digits naming the library's model code (every ``.py`` of the package but the app's
    front end, :func:`akfviz._jit.source_digest`): the package version has stayed 0.1.0 while the
    model changed (docs/model.md), so exports and bundles name the code itself."""
    from ._jit import source_digest

    return source_digest()



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
        try:   # utf-8-sig: an editor (Notepad) may save it with a byte-order mark, which json refuses
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError("The run bundle is not UTF-8 text; expected the JSON file the app downloads.") from None
    elif not isinstance(data, str):
        raise InputError("A run bundle is the JSON text (or its bytes) the app downloads.")
    data = data.removeprefix("\ufeff")
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
    if doc.get("energy_table") is not None:
        try:
            doc["energy_table"] = stage("npu.energy", "EnergyTable").from_plain(doc["energy_table"])
        except InputError as exc:
            raise InputError(f"The run bundle's energy table is not accepted: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"The run bundle's energy table is not accepted: {shorten(str(exc), 120)}") from None
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
    """A widget's change callback: copy its value into the shared state. A button that set the state
    meanwhile (:func:`put`) has dropped the widget's copy; the state it set is kept."""
    wkey = "w:" + key
    if wkey in st.session_state:
        st.session_state[key] = st.session_state[wkey]


def unload_upload() -> None:
    """A button's ``on_click``: forget the uploaded file (its bytes leave the session) and go back to
    the chosen sample."""
    for key in ("_akf_upload", "_akf_upload_digest", "_akf_upload_id"):
        st.session_state.pop(key, None)
    put("src", "sample")


def step_to(key: str, delta: int, lo: int, hi: int, absolute: bool = False) -> None:
    """A button's ``on_click``: move a numeric setting by ``delta`` (or to ``delta`` when
    ``absolute``), kept in ``[lo, hi]``. As a callback it runs before the page, so quick clicks
    each count (a click handled in the page body is lost when the next click interrupts the run)."""
    cur = int(get(key) or 0)
    put(key, int(min(max(delta if absolute else cur + delta, lo), hi)))


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


def sticky_toggle(label: str, key: str, default: bool, **kwargs) -> bool:
    """``st.toggle`` whose choice survives page switches for the session, with a ``default`` that the
    page computes (so it is not a URL setting of :data:`FIELDS`). Streamlit forgets a widget's key
    when its page is not drawn; the choice is kept under ``_akf_keep_<key>`` and put back first (the
    NPU page's zoom was back on after a visit to Compare: probe)."""
    keep = "_akf_keep_" + key
    if key not in st.session_state and keep in st.session_state:
        st.session_state[key] = st.session_state[keep]
    given = {} if key in st.session_state else {"value": bool(default)}
    value = st.toggle(label, key=key, **given, **kwargs)
    st.session_state[keep] = value
    return value


PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def chart(fig, key: str, **kwargs):
    """``st.plotly_chart`` with our own colours (``theme=None``: the fixed kernel-family colours and the
    colour scales are never restyled by the Streamlit theme)."""
    if isinstance(fig, dict) and not fig.get("data"):
        # a cached figure of shapes and annotations only (the Learn grid): plotly refuses such a dict
        import plotly.graph_objects as go
        fig = go.Figure(fig)
    layout = fig.get("layout", {}) if isinstance(fig, dict) else fig.layout
    if layout["width"] if not isinstance(layout, dict) else layout.get("width"):
        # a figure sized for its content (a square-cell grid, layout.fit_grid): drawn
        # at its own width, never wider than its container
        kwargs.setdefault("width", "content")
    return st.plotly_chart(fig, key=key, theme=None, config=PLOTLY_CONFIG, **kwargs)


@st.cache_data(max_entries=96, show_spinner=False)
def figure_cached(key: str, _build):
    """A figure that depends only on ``key``, built once and kept as a plain dict (cheap to re-send)."""
    return _build().to_dict()


ENERGY_OVERRIDE = "_akf_energy_override"
_ENERGY_PRESET = "_akf_energy_override_preset"
ENERGY_DROPPED = "_akf_energy_dropped"


def energy_override():
    """The NPU page's edited energy table (None: the preset's own).

    An edited table belongs to the preset it was edited from: after the sidebar's preset changed,
    it is dropped (its other entries are the old preset's numbers) and ``ENERGY_DROPPED`` names the
    old preset, for the NPU page to say so."""
    ss = st.session_state
    table = ss.get(ENERGY_OVERRIDE)
    if table is None:
        return None
    owner = ss.get(_ENERGY_PRESET)
    if owner is None:                        # set without its preset (e.g. by a test): this one
        ss[_ENERGY_PRESET] = get("preset")
    elif owner != get("preset"):
        clear_energy_override()
        ss[ENERGY_DROPPED] = owner
        return None
    return table


def set_energy_override(table, preset=None) -> None:
    """Use ``table`` instead of the preset's energy table (``preset``: the preset it was edited
    from; default the current one)."""
    st.session_state[ENERGY_OVERRIDE] = table
    st.session_state[_ENERGY_PRESET] = get("preset") if preset is None else preset


def clear_energy_override() -> None:
    """Back to the preset's energy table (the editor's edits go too)."""
    for key in (ENERGY_OVERRIDE, _ENERGY_PRESET, "energy_editor"):
        st.session_state.pop(key, None)


def _energy_plain() -> dict | None:
    """The NPU page's edited energy table as a plain dict (None: the preset's table)."""
    table = energy_override()
    return None if table is None else table.to_plain()


#: Settings that change what a page shows but no recorded result: the selected tile and cluster, the
#: timeline's PE row, and the Learn page's tiny case and step (Learn records no result). A result
#: recorded before one of these changed still belongs to the bundle.
DISPLAY_ONLY_FIELDS = frozenset({"tsel", "csel", "perow", "lstep", "ln", "lT", "lgrid", "ldens", "lxd",
                                 "lkernel", "lseed"})


def settings_stamp(with_workload: bool = True) -> str:
    """A digest of everything a result depends on: the settings (less
    :data:`DISPLAY_ONLY_FIELDS`), the edited energy table and the workload's content. Results
    recorded under another stamp are left out of the bundle. ``with_workload=False`` leaves the
    matrix's content out (the settings alone, e.g. to tell whether a bundle's are still in force)."""
    vals = {k: v for k, v in values().items() if k not in DISPLAY_ONLY_FIELDS}
    doc = {"values": vals, "energy": _energy_plain()}
    if with_workload:
        doc["workload"] = getattr(st.session_state.get(_WL), "digest", None)
    return hashlib.sha256(json.dumps(to_plain(doc), sort_keys=True).encode()).hexdigest()


def record_result(section: str, summary: dict) -> None:
    """Remember a results summary (for the run bundle) computed for the current settings
    (stamped with :func:`settings_stamp`)."""
    st.session_state.setdefault(RESULTS, {})[section] = (settings_stamp(), to_plain(summary))


_ERRORS_SHOWN = "_akf_errors_shown"


def start_run_errors() -> None:
    """Forget the errors shown so far: called by the page shell at the start of every run."""
    st.session_state[_ERRORS_SHOWN] = set()


def show_error(exc: Exception) -> None:
    """An InputError (or a ValueError from a library check) as a readable st.error, no traceback.

    Each message once per run: the shell resolving the workload and the page's own control can
    meet the same broken input (a tensor that cannot be read, chosen on the Matrix page)."""
    text = app_advice(str(exc))
    shown = st.session_state.get(_ERRORS_SHOWN)
    if shown is not None:
        if text in shown:
            return
        shown.add(text)
    st.error(text)


def app_advice(message: str) -> str:
    """A library message with a line for the app's user where its advice names Python arguments
    the app does not offer (``limits=LoadLimits(...)``, ``fmt=``).

    >>> app_advice("Too big; pass limits=LoadLimits(max_nnz=...).").endswith("can raise them.")
    True
    """
    notes = []
    if "LoadLimits(" in message:
        notes.append("In the app these size limits are fixed; the Python API (akfviz.load or akfviz.generate "
                     "with limits=akfviz.LoadLimits(...)) can raise them.")
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
        if (v is None or type(v).__name__ == "NAType"  # pandas' missing value (not imported here)
                or (isinstance(v, float) and math.isnan(v)) or not str(v)):
            continue
        if isinstance(v, float) and v.is_integer():
            v = int(v)  # a whole number read back through a float column (seed 0, not 0.0)
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
    out = density_replaces_alternatives(out, given=raw)   # their defaults are not filled in
    return {k: v for k, v in out.items() if v is not None}


def density_replaces_alternatives(kw: dict, given=()) -> dict:
    """``kw`` without the parameters a given ``density`` stands for (``sparsity``, ``avg_nnz``:
    :data:`akfviz.workloads.generators.DENSITY_ALTERNATIVES`) unless they are in ``given`` too.
    The generator form's number inputs always submit those, and state fills in their defaults,
    so a typed density was refused as "give either density or …, not both" (app probe)."""
    if kw.get("density") is None:
        return kw
    alternatives = stage("workloads.generators").DENSITY_ALTERNATIVES
    return {k: v for k, v in kw.items() if k not in alternatives or k in given}


def upload_digest(payload: bytes) -> str:
    """The upload's sha256, computed once per uploaded object (not on every rerun of every page: ≈ 0.14 s
    for a 200 MB file). The session keeps the object hashed beside its digest; ``is`` tells it is the same."""
    seen = st.session_state.get("_akf_upload_digest")
    if seen is not None and seen[0] is payload:
        return seen[1]
    digest = bytes_digest(payload)
    st.session_state["_akf_upload_digest"] = (payload, digest)
    return digest


def pruning_text(how: str, sparsity: float, pattern: str) -> str:
    """The provenance of an upload's pruning, naming only what the method reads.

    >>> pruning_text("magnitude", 0.7, "2:4"), pruning_text("nm", 0.7, "2:4"), pruning_text("none", 0.7, "2:4")
    (', pruned by magnitude (sparsity 0.7)', ', pruned by nm (pattern 2:4)', '')
    """
    if how == "none":
        return ""
    return f", pruned by {how} ({f'pattern {pattern}' if how == 'nm' else f'sparsity {sparsity:g}'})"


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
                digest = upload_digest(payload)
                A = load_cached(digest, payload, fmt, get("up_tensor") or None, prune, name)
                choices = matrix_choices_cached(digest, payload, name)
                part = choices["kind"].iloc[0] if len(choices) else "tensor"
                prov = f"uploaded file {name}" + (f", {part} {get('up_tensor')}" if get("up_tensor") else "") + \
                    pruning_text(*prune)
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


#: Tiles up to which a plan of one kernel gets :func:`mix_hint` (each try is a budget search, a
#: bisection of selections: cheap at the samples' 144–25,000 tiles, seconds at a million).
HINT_MAX_TILES = 30_000

#: Fractions of the plan's error tried as error budgets by :func:`mix_hint`, on the budget
#: slider's 0.001 grid (rounded down).
HINT_FRACTIONS = (0.8, 0.5)


def running_kernels(plan) -> list:
    """The kernels a plan runs: those used by at least one tile, SKIP (a dropped tile) aside."""
    counts = plan.kernel_counts
    return [str(k) for k in counts.index if k != "SKIP" and counts[k] > 0]


def mix_hint(wl: Workload, pa, hw, hwk: str, plan) -> dict | None:
    """For a plan that runs one kernel: an error budget at which the selector mixes kernels on
    this matrix, or None.

    Tries the budgets ``f · (the plan's relative error)`` for f in :data:`HINT_FRACTIONS`, rounded
    down to the slider's 0.001 steps (0 left out: every tile exact is one kernel again), in the
    page's granularity, then per tile; the first that gives two or more running kernels is
    returned as ``budget, granularity, counts`` (kernel → tiles) and ``relative_error``. Each try
    is the selection the Kernels page itself runs in error-budget mode with those settings
    (:func:`select_cached`, same key), so following the hint costs nothing more and shows exactly
    this mix. Plans of more than :data:`HINT_MAX_TILES` tiles get no hint.
    """
    if len(running_kernels(plan)) != 1 or len(pa.tiles) > HINT_MAX_TILES:
        return None
    args = selection_args()
    extra = tuple((k, None if k == "resource_budget" else v) for k, v in args["extra"])
    budgets = sorted({math.floor(f * plan.relative_error * 1000) / 1000 for f in HINT_FRACTIONS} - {0.0},
                     reverse=True)
    grans = [args["granularity"]] + (["tile"] if args["granularity"] != "tile" else [])
    for gran in grans:
        for budget in budgets:
            try:
                alt = select_cached(analysis_key(wl.digest, pa.tile), pa, args["alpha"], args["beta"],
                                    budget, gran, hwk, hw, extra)
            except (InputError, ValueError):
                return None
            used = running_kernels(alt)
            if len(used) >= 2:
                return {"budget": budget, "granularity": gran,
                        "counts": {k: int(alt.kernel_counts[k]) for k in used},
                        "relative_error": float(alt.relative_error)}
    return None


def plan_for(wl: Workload, pa, hw, hwk: str):
    """Cached FusionPlan for the current selector settings (None with st.error on bad input)."""
    args = selection_args()
    try:
        plan = select_cached(analysis_key(wl.digest, pa.tile), pa, args["alpha"], args["beta"],
                             args["budget"], args["granularity"], hwk, hw, args["extra"])
    except (InputError, ValueError) as exc:
        show_error(exc)
        return None
    warn_if_dropped(plan)
    return plan


#: A plan whose relative error reaches this gets a warning on every page that shows it.
DROPPED_WARNING_ERROR = 0.5


def warn_if_dropped(plan) -> None:
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
        f"what is kept, so its cycles and energy are not those of this matrix. {dropped_cause(plan)}",
        icon="⚠️")


def dropped_cause(plan) -> str:
    """Why a plan dropped most of the matrix, from what decided it: a resource budget, or weights
    that price resource far above error. (The fusion weights' SRAM penalty no longer can: it moves
    a unit only to kernels no less accurate than its argmin.)"""
    rep = getattr(plan, "selection", None)
    mode = getattr(rep, "mode", "weights")
    if mode == "resource_budget":
        return (f"The resource budget ({rep.resource_budget:g} of Dense's) is below what keeping the matrix "
                "costs, so the least-error plan within it drops tiles; raise the budget or use an error "
                "budget (Kernels page).")
    return (f"The weights price resource far above error (α = {getattr(rep, 'alpha', float('nan')):g}, "
            f"β = {getattr(rep, 'beta', float('nan')):g}), so dropping a tile is the cheapest choice; raise α, "
            "lower β, or use an error budget (Kernels page).")


def require_tiles(pa) -> None:
    """Stop the page with an explanation when the matrix has no nonzero tile (nothing to select/simulate)."""
    if pa.tiles.shape[0] == 0:
        st.info("This matrix has no nonzeros, so there are no tiles to analyse, select or simulate. "
                "Pick another workload on the Matrix page.")
        st.stop()


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


def hardware():
    """HardwareConfig from the preset plus the NPU page's overrides (None after a shown error)."""
    try:
        hw = _apply_overrides(_preset_config())
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


#: The NPU page's hardware form: (label, HardwareConfig field, lowest, highest, scale from the box to
#: the field). The boxes carry no browser-side limits (a number box outside them refused the value in
#: the browser: Apply did nothing, with no message); :func:`check_hardware_form` says what is wrong.
#: Each label fits one line of a 150-px box (the page's tooltip says the rest): "DRAM bytes / cycle
#: (shared)" took four lines at an 800-px window.
HW_FORM = (("PE rows", "rows", 1, MAX_GRID_SIDE, 1), ("PE columns", "cols", 1, MAX_GRID_SIDE, 1),
           ("SRAM per PE (B)", "sram_bytes_per_pe", 64, 1 << 30, 1), ("Clock (MHz)", "clock_hz", 1.0, 100_000, 1e6),
           ("DRAM (B/cycle)", "dram_bytes_per_cycle", 1, 1 << 20, 1))


def check_hardware_form(values: dict) -> dict:
    """The hardware form's boxes (label → number) as HardwareConfig fields, every box checked.

    Raises
    ------
    InputError
        One line per box outside its range or not a whole number where one is needed (nothing
        is applied then).
    """
    out, bad = {}, []
    for label, attr, lo, hi, scale in HW_FORM:
        v = values.get(label)
        whole = isinstance(lo, int)
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            bad.append(f"{label}: enter a number from {lo:,g} to {hi:,}.")
        elif v < lo or v > hi:
            bad.append(f"{label}: {v:,g} is outside {lo:,g} … {hi:,}.")
        elif whole and float(v) != int(v):
            bad.append(f"{label}: {v:g} is not a whole number.")
        else:
            out[attr] = int(v) * scale if whole else float(v) * scale
    if bad:
        raise InputError("The hardware was not changed. " + " ".join(bad))
    return out


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


def _preset_config():
    """The chosen hardware preset's HardwareConfig, before the NPU page's changes (the first
    preset when the chosen name is unknown)."""
    hwmod = stage("npu.hardware")
    names = hwmod.HardwareConfig.preset_names()
    return hwmod.HardwareConfig.from_preset(get("preset") if get("preset") in names else names[0])


def preset_energy():
    """The energy table of the chosen hardware preset, before the NPU page's edits."""
    return _preset_config().energy


def hardware_changes() -> list[str]:
    """The NPU page's changes to the preset, as short phrases ("16×16 PEs", "8,192 B SRAM per PE",
    "edited energy table"); empty when the preset is used as it is."""
    base = _preset_config()
    value = {k: get(k) for k in HW_OVERRIDES}
    rows = base.rows if value["hw_rows"] is None else int(value["hw_rows"])
    cols = base.cols if value["hw_cols"] is None else int(value["hw_cols"])
    out = [f"{rows}×{cols} PEs"] if (rows, cols) != (base.rows, base.cols) else []
    for key, (fmt, scale) in HW_CHANGE_FORMATS.items():
        v = value[key]
        if v is not None and float(v) != float(getattr(base, HW_OVERRIDES[key])):
            out.append(fmt.format(float(v) * scale))
    if energy_override() is not None:
        out.append("edited energy table")
    return out


def hardware_label() -> str:
    """The sidebar's hardware by name: the preset, or "custom" with the preset it started from
    when the NPU page has changed it."""
    if not hardware_changes():
        return str(get("preset"))
    return f"custom (preset {get('preset')}, changed on the NPU page)"


def hardware_text(hw) -> str:
    """One line naming the hardware a result was computed on: :func:`hardware_label`, then the
    grid, SRAM and clock."""
    label = hardware_label()
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
    energy = energy_override()
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
    """The workload as the bundle and the exports record it; a generated one also with its
    ``generator``: the kind and every parameter it ran with, typed, the defaults filled in (the
    settings keep only what the form or the link gave, as text)."""
    out = {"source": wl.source, "label": wl.label, "provenance": wl.provenance,
           "shape": list(wl.A.shape), "nnz": int(wl.A.nnz), "sha256": wl.digest}
    if wl.source == "gen":
        try:
            out["generator"] = {"kind": get("gen"), "params": gen_kwargs(get("gen"))}
        except (InputError, ValueError):   # the workload was made, so its parameters were accepted
            pass
    return out


def bundle_writer(wl: Workload | None) -> Callable[[], str]:
    """A function that writes this session's run bundle, for a deferred download button.

    Streamlit calls a download button's ``data`` function after the script run, outside it,
    where ``st.session_state`` reads as empty (the bundle came out with every default and no
    results). So the settings are copied now, and the results dict itself is kept: the page
    body records this run's results into it after the sidebar is drawn.

    Only the results recorded under the current settings, energy table and matrix
    (:func:`settings_stamp`) are written: a page visited before the matrix or a setting
    changed recorded numbers that no longer belong to these settings.
    """
    vals = values()
    summary = workload_summary(wl) if wl is not None else {}
    results = st.session_state.setdefault(RESULTS, {})
    stamp = settings_stamp()
    energy = _energy_plain()
    return lambda: make_bundle(vals, summary, {k: v for k, (s, v) in list(results.items()) if s == stamp},
                               energy, stamp)


def apply_bundle(doc: dict) -> None:
    """Apply a validated bundle's settings to the session (the caller reruns); an empty sample
    name means the default sample, as in a link."""
    for key, value in doc["state"].items():
        if key == "sample" and not value:
            value = default_sample()
        put(key, value)
    clear_energy_override()   # the editor shows the bundle's table, not old edits
    if doc.get("energy_table") is not None:
        set_energy_override(doc["energy_table"], preset=get("preset"))
    st.session_state["_akf_bundle_workload"] = doc.get("workload") or {}
    st.session_state.pop(BUNDLE_SETTINGS, None)   # taken on the next run, once the widgets hold them


BUNDLE_SETTINGS = "_akf_bundle_settings"
"""Session key: :func:`settings_stamp` (without the workload) as a run bundle left them, so the
sidebar says "applied" only while they are still in force."""


def json_download(obj) -> bytes:
    return json.dumps(to_plain(obj), indent=2).encode()


def export_settings() -> dict:
    """What every table export was computed under, as the run bundle records it: the settings
    (``state``: preset, hardware overrides, T, α, β, mode, budgets, granularity, R, ρ_x, LSH, seeds,
    generator parameters…), the NPU page's edited energy table, the workload (name, provenance,
    shape, nnz, sha256), ``settings_sha256`` (:func:`settings_stamp`), the package version and
    :func:`model_source`. Read while the page runs: a deferred download runs outside the script,
    where the session reads as empty (:func:`bundle_writer`)."""
    wl = st.session_state.get(_WL)
    return to_plain({"akfviz_version": __version__, "model_source": model_source(),
                     "settings_sha256": settings_stamp(), "state": values(), "energy_table": _energy_plain(),
                     "workload": workload_summary(wl) if isinstance(wl, Workload) else {}})


#: Table metadata key under which a Parquet export keeps :func:`export_settings`.
SETTINGS_ATTR = "akfviz_settings"


def export_buttons(label: str, frame_fn, stem: str, key: str, what: str = "", json_too: bool = False) -> None:
    """CSV and Parquet download buttons for a table that is built only when a button is clicked
    (``frame_fn()`` returns the DataFrame; e.g. a million-tile table costs nothing until asked for);
    ``what`` (optional) is shown beside them: what one row of the table is.

    Both file names end in the first 8 digits of the settings' stamp (``settings_sha256`` of the
    run bundle and of the Parquet metadata), so a CSV names the settings it came from; the Parquet
    file also carries :func:`export_settings` in its metadata (``pd.read_parquet(f).attrs``), beside
    the table's own. ``json_too``: a JSON button as well (``{"rows", "attrs"}``, as the command line
    writes tables), for tables whose own metadata matters (a sweep's grid and hardware)."""
    settings = export_settings()
    tag = settings["settings_sha256"][:8]

    def with_settings():
        df = frame_fn()
        out = df.copy(deep=False)
        out.attrs = {**df.attrs, SETTINGS_ATTR: settings}
        return out

    # a wrapping row sized to its content: fixed column shares cut the labels ("Traject…") when the
    # buttons sit in half of the page
    row = st.container(horizontal=True, vertical_alignment="center")
    row.download_button(f"{label} (CSV)", data=lambda: frame_bytes(frame_fn(), "csv"),
                        file_name=f"akfviz-{stem}-{tag}.csv", mime="text/csv", on_click="ignore", key=f"{key}_csv",
                        help=f"The table only. The file name ends in {tag}, the start of the settings' stamp "
                             "(settings_sha256 in the run bundle and in the Parquet file).")
    row.download_button(f"{label} (Parquet)", data=lambda: frame_bytes(with_settings(), "parquet"),
                        file_name=f"akfviz-{stem}-{tag}.parquet", mime="application/octet-stream",
                        on_click="ignore", key=f"{key}_parquet",
                        help="The table, and in its metadata the settings, workload and model code it was "
                             f"computed with: pandas.read_parquet(file).attrs['{SETTINGS_ATTR}'].")
    if json_too:
        from .cli import frame_json

        row.download_button(f"{label} (JSON)", data=lambda: frame_json(with_settings()).encode(),
                            file_name=f"akfviz-{stem}-{tag}.json", mime="application/json",
                            on_click="ignore", key=f"{key}_json")
    if what:
        row.caption(what)


def frame_bytes(df, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    df.to_parquet(buf, index=False)
    return buf.getvalue()
