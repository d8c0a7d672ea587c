"""Command line: ``python -m akfviz <command> …`` (akf-spec §9).

Commands mirror the library: ``analyze``, ``select``, ``simulate``, ``compare``,
``calibrate``, ``sweep``, ``bench``. Every command takes a workload from ``--input FILE``,
``--sample NAME`` or ``--generate KIND`` (with ``--n``, ``--m``, ``--seed`` and repeated
``--param key=value``; repeated ``--limit NAME=VALUE`` sets a size limit of loading or
generating, a field of :class:`akfviz.LoadLimits`), and prints JSON or a table; ``--out FILE`` writes it instead: ``.json``
for the full result, ``.csv`` / ``.parquet`` for a table (analyze: the tiles; select: the plan tile
by tile; simulate: the per-PE counters; compare, calibrate, sweep: their tables; a table asked
for as ``.json`` is ``{"rows": …, "attrs": …}``, :func:`frame_json`). Wall-clock times
(the stages of analysis and selection, the annealing, each sweep point) are left out unless
``--timings`` is given, so the same command writes the same bytes.
Rejected inputs print the :class:`~akfviz.errors.InputError` message and exit with status 2; a
message whose advice is ``limits=akfviz.LoadLimits(...)`` gets a line naming ``--limit``
(:func:`cli_advice`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

from .arguments import SEED_MAX, check_seed, choice
from .errors import InputError
from .plain import to_plain


def _parse_value(text: str):
    """Parse a ``--param`` value: JSON literal (number, true/false/null, list) or plain string.

    A whole number of more than 4300 digits, which Python will not read, stays a string (the
    generator then refuses it as not a number). Python's spellings ``None``, ``True`` and
    ``False`` (any case) are read as JSON's ``null``, ``true`` and ``false``: the generators'
    messages say "(or None)"."""
    spelled = {"none": None, "true": True, "false": False}
    if text.strip().lower() in spelled:
        return spelled[text.strip().lower()]
    try:
        return json.loads(text)
    except ValueError:  # json.JSONDecodeError, or the int-to-text digit limit
        return text


def _params(pairs):
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise InputError(f"--param needs key=value, got {pair!r}.")
        k, v = pair.split("=", 1)
        if not k.strip():
            raise InputError(f"--param {pair!r} has no name before '='; write key=value, e.g. density=0.01.")
        if k.strip() in out:   # the last one silently won (probe)
            raise InputError(f"--param {k.strip()} is given twice; give each parameter once.")
        out[k.strip()] = _parse_value(v.strip())
    return out


#: The fields of :class:`akfviz.LoadLimits`, which ``--limit NAME=VALUE`` sets (listed here so that
#: ``--help`` does not import the loaders; a test keeps the two in step).
LIMIT_NAMES = ("max_rows", "max_cols", "max_nnz", "max_dense_elements", "max_decompressed_bytes",
               "max_compression_ratio", "ratio_floor_bytes")


#: The names of :func:`akfviz.generators`, which ``--generate KIND`` takes (listed here so that
#: ``--help`` does not import the generators; a test keeps the two in step).
GENERATOR_NAMES = ("banded", "block_diagonal", "clustered", "llm", "llm_block", "llm_magnitude", "llm_nm", "nm",
                   "powerlaw", "stencil5", "stencil9", "uniform")


def _limit_number(text: str):
    """A ``--limit`` value: a whole number (``500000000``, ``500_000_000``, ``5e8``) as an int,
    any other number (``2.5``) as a float; None if it is not a finite number."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    if not np.isfinite(value):
        return None
    return int(value) if value.is_integer() else value


def _limits(pairs):
    """The :class:`akfviz.LoadLimits` of repeated ``--limit NAME=VALUE`` (None when none is
    given: the library's defaults).

    Parameters
    ----------
    pairs : list of str or None
        The ``--limit`` values as given.

    Returns
    -------
    akfviz.LoadLimits or None

    Raises
    ------
    InputError
        Not ``NAME=VALUE``, an unknown name, a value that is not a number, or one that
        ``LoadLimits`` refuses.
    """
    if not pairs:
        return None
    fields = ", ".join(LIMIT_NAMES)
    kw = {}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        name = name.strip()
        if not eq or not name:
            raise InputError(f"--limit needs NAME=VALUE, got {pair!r}, e.g. --limit max_nnz=500000000; "
                             f"NAME is one of: {fields}.")
        if name not in LIMIT_NAMES:
            raise InputError(f"--limit {pair!r}: there is no size limit named {name!r}; NAME is one of: "
                             f"{fields}.")
        value = _limit_number(text)
        if value is None:
            example = "1000" if name == "max_compression_ratio" else "500000000"
            raise InputError(f"--limit {pair!r}: the value must be a number, e.g. --limit {name}={example} "
                             f"(the limits are: {fields}).")
        kw[name] = value  # given twice: the last one counts, as for other repeated options
    from .workloads.limits import LoadLimits

    try:
        return LoadLimits(**kw)
    except InputError as exc:
        raise InputError(f"--limit: {exc}") from None


def cli_advice(message: str) -> str:
    """A library message with a line for the command line where its advice is
    ``limits=akfviz.LoadLimits(...)`` (mirrors :func:`akfviz.app_state.app_advice`): the
    option ``--limit NAME=VALUE`` raises that limit.

    >>> cli_advice("Too big; pass limits=akfviz.LoadLimits(max_nnz=...).").splitlines()[-1]
    'On the command line, raise it with --limit max_nnz=VALUE.'
    """
    lines = [message]
    at = message.find("LoadLimits(")
    if at >= 0:
        named = [n for n in re.findall(r"(\w+)=", message[at:]) if n in LIMIT_NAMES]
        named = list(dict.fromkeys(named))
        if named:
            opts = " ".join(f"--limit {n}=VALUE" for n in named)
            lines.append(f"On the command line, raise {'it' if len(named) == 1 else 'them'} with {opts}.")
        else:
            lines.append(f"On the command line, raise a limit with --limit NAME=VALUE "
                         f"(NAME: {', '.join(LIMIT_NAMES)}).")
    if "Leave tensor= out" in message:
        lines.append("On the command line, leave --tensor out.")
    elif "tensor=" in message:
        lines.append("On the command line, name it with --tensor NAME.")
    if "HardwareConfig.from_preset(" in message:
        lines.append("On the command line, give a built-in chip with --preset NAME, or a TOML file with "
                     "--hw FILE whose preset line says \"custom\" (or a name of your own) once its fields "
                     "are edited.")
    if "akfviz.simulate accepts 0" in message:
        lines.append("On the command line, the simulate command accepts --rho-x 0.")
    return "\n".join(lines)


def _matrix(args):
    """The command's matrix (file, sample or generator), pruned when ``--prune`` asks for it."""
    A, label = _source_matrix(args)
    spec = getattr(args, "prune", None)
    if spec is None:
        return A, label
    from .workloads.prune import prune

    method, _, value = spec.strip().partition(":")
    method = method.strip().lower()
    if method == "nm":
        kw = {"pattern": value.strip() or "2:4"}
    elif method in ("magnitude", "block"):
        try:
            kw = {"sparsity": float(value) if value.strip() else 0.9}
        except ValueError:
            raise InputError(f"--prune {spec!r}: the sparsity after '{method}:' must be a number, "
                             "e.g. magnitude:0.9.") from None
    else:
        raise InputError(f"--prune {spec!r}: give magnitude[:SPARSITY], block[:SPARSITY] or nm[:N:M], "
                         "e.g. magnitude:0.9 or nm:2:4.")
    return prune(A, method, **kw), f"{label}, pruned ({method} {value.strip() or 'default'})"


def _source_matrix(args):
    from . import workloads  # noqa: F401  (package docstring only)

    if getattr(args, "file", None) is not None:
        if args.input is not None:
            raise InputError("Give the matrix file once: either as FILE or with --input.")
        args.input = args.file
    for flag, value in (("--input / FILE", args.input), ("--sample", args.sample), ("--generate", args.generate)):
        if value is not None and not value.strip():
            raise InputError(f"{flag} is empty: give a file name, sample or generator name "
                             "(an unset shell variable?), or leave the option out for the default sample.")
    sources = [s for s in (args.input, args.sample, args.generate) if s]
    if len(sources) > 1:
        raise InputError("Give only one of FILE / --input, --sample or --generate.")
    if args.tensor is not None and not args.input:
        raise InputError("--tensor names a tensor inside a .safetensors file: give the file too "
                         "(FILE or --input); shipped samples and generated matrices have no tensors.")
    if not args.generate:
        given = [flag for flag, value in (("--n", args.n), ("--m", args.m), ("--param", args.param))
                 if value is not None]
        if given:
            raise InputError(f"{' and '.join(given)} only "
                             f"{'shape' if len(given) > 1 else 'shapes'} a generated matrix: use "
                             f"{'them' if len(given) > 1 else 'it'} with --generate KIND "
                             "(a file or sample has its own size).")
    limits = _limits(getattr(args, "limit", None))
    if limits is not None and not (args.input or args.generate):
        raise InputError("--limit sets a size limit for loading a file (FILE or --input) or for --generate; "
                         "the shipped samples load within the default limits. Leave --limit out, or give "
                         "the file or generator it is for.")
    if args.input:
        from .workloads.loaders import load

        return load(args.input, tensor=args.tensor, limits=limits), f"file {args.input}"
    if args.generate:
        from .workloads.generators import generate

        kw = _params(args.param)
        for own in ("n", "m", "seed"):
            if own in kw:
                raise InputError(f"Give {own} with --{own}, not with --param {own}=….")
        if args.m is not None:
            kw["m"] = args.m
        n = _default_n() if args.n is None else args.n
        if "limits" in kw:
            raise InputError("Give size limits with --limit NAME=VALUE, not with --param limits=….")
        return generate(args.generate, n=n, seed=args.seed, limits=limits, **kw), f"generated {args.generate}"
    from .workloads.samples import DEFAULT_SAMPLE, load_sample

    name = args.sample or DEFAULT_SAMPLE
    return load_sample(name), f"sample {name}"


def _default_n() -> int:
    """Rows of a ``--generate`` matrix when ``--n`` is not given: the generators' own default.

    Imported when needed (the generators module loads pandas and scipy). Imported as
    ``from .workloads.generators import …``, which reads the module itself from
    ``sys.modules``: the package attribute ``akfviz.workloads.generators`` is the function
    ``generators()``, not the module.
    """
    from .workloads.generators import DEFAULT_N

    return DEFAULT_N


def _in_words(items) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


#: Names the command line offers as choices (the library's; tests check they agree). Any case is
#: taken, as the library takes it (``--granularity TILE``).
GRANULARITIES = ("cluster", "tile")
RESOURCES = ("energy", "cycles", "bytes", "mix")
SCHEDULERS = ("local", "dask")


def _any_case(names):
    """argparse type of a choice among ``names``: the canonical name for any case and surrounding
    spaces (``TILE`` → ``tile``); other text is left for argparse's own "invalid choice" message."""
    def convert(text: str) -> str:
        return choice(text, names) or text
    return convert


def _whole(text: str) -> int:
    """argparse type of a count or size (``--tile``, ``--n``, ``--m``, ``--iterations``, ``--repeats``):
    a whole number written as ``8``, ``8.0``, ``1e3`` or ``1_000`` — what the library takes for these
    arguments (``analyze(A, tile=8.0)``); the range is the library's to check."""
    value = _limit_number(text)
    if not isinstance(value, int):
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}")
    return value


def _seed(text: str) -> int:
    """argparse type of ``--seed``: a whole number in 0 … SEED_MAX (refused before any work)."""
    try:
        return check_seed(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"must be a whole number between 0 and {SEED_MAX}, got {text!r}") from None


def _hw(args):
    from .npu.hardware import HardwareConfig

    for opt in ("hw", "preset"):
        if getattr(args, opt, None) == "":
            raise InputError(f"--{opt} is empty (an unset shell variable?); give a "
                             + ("TOML file name." if opt == "hw" else "preset name, e.g. horowitz-45nm."))
    if getattr(args, "hw", None):
        if getattr(args, "preset", None):
            raise InputError("Give either --hw FILE or --preset NAME, not both: a TOML file describes "
                             "the whole chip, a preset names one of the built-in chips.")
        p = Path(args.hw)
        # from_toml names a folder, a missing file, an unreadable one and one that is not UTF-8
        return HardwareConfig.from_toml(p)
    if getattr(args, "preset", None):
        return HardwareConfig.preset(args.preset)
    return HardwareConfig()


TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


OUT_SUFFIXES = (".json",) + TABLE_SUFFIXES


def _check_out(args) -> None:
    """Refuse an ``--out`` path that cannot be written, before any work is done."""
    out = getattr(args, "out", None)
    if out is not None and not out.strip():
        raise InputError("--out is empty (an unset shell variable?); give a file name, or leave --out out "
                         "to print the result.")
    if not out:
        return
    path = Path(out)
    suffixes = TABLE_SUFFIXES if args.func is cmd_sweep else (".json",) if args.func is cmd_bench \
        else OUT_SUFFIXES
    if not path.name.lower().endswith(suffixes):
        if args.func is cmd_bench and path.name.lower().endswith(TABLE_SUFFIXES):
            raise InputError(f"--out {path.name!r}: bench's result is a JSON document, not a table; "
                             "give a file name ending in .json.")
        raise InputError(f"--out {path.name!r}: give a file name ending in "
                         f"{', '.join(suffixes)} (the format is chosen by the ending).")
    if path.is_dir():
        raise InputError(f"--out {out!r} is a folder; give a file name inside it.")
    if not path.parent.is_dir():
        if path.parent.exists():
            raise InputError(f"--out {out!r}: {str(path.parent)!r} is a file, not a folder; "
                             f"write somewhere else.")
        raise InputError(f"--out {out!r}: the folder {str(path.parent)!r} does not exist; "
                         f"create it first or write somewhere else.")


#: Keys of wall-clock measurements in a result: ``timings`` anywhere, and the annealing's own
#: ``seconds`` / ``iterations_per_s`` inside ``mapping`` (a simulation's ``seconds`` is model time).
WALL_CLOCK_KEYS = {"": ("timings",), "mapping": ("seconds", "iterations_per_s")}
#: Table columns that hold wall-clock measurements.
WALL_CLOCK_COLUMNS = ("wall_s",)


def without_wall_clock(obj, parent: str = ""):
    """``obj`` (a JSON-like result or a DataFrame) without its wall-clock measurements.

    They are measured, not computed, so they differ from run to run while every computed value is
    the same bit for bit; dropping them makes the same command write the same bytes.
    """
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        out = obj.drop(columns=[c for c in WALL_CLOCK_COLUMNS if c in obj.columns])
        out.attrs = without_wall_clock(dict(obj.attrs))
        return out
    if isinstance(obj, dict):
        drop = WALL_CLOCK_KEYS[""] + WALL_CLOCK_KEYS.get(parent, ())
        return {k: without_wall_clock(v, k) for k, v in obj.items() if k not in drop}
    if isinstance(obj, (list, tuple)):
        return [without_wall_clock(v) for v in obj]
    return obj


def _emit(obj, args, table=None, table_what: str = ""):
    """:func:`_write_result`, its write failures as :class:`_OutputError`."""
    try:
        _write_result(obj, args, table, table_what)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _OutputError(exc.errno, exc.strerror or str(exc)) from None


def _write_result(obj, args, table=None, table_what: str = ""):
    """Print ``obj`` (a DataFrame as text, anything else as JSON) or write it to ``--out``.

    A JSON result asked for as ``.csv`` / ``.parquet`` writes ``table()`` instead (the command's
    per-tile or per-PE table, ``table_what`` says which); without one, that is refused. Wall-clock
    fields are dropped unless ``--timings`` was given."""
    import pandas as pd

    keep_times = getattr(args, "timings", True)
    if args.out and args.out.lower().endswith(TABLE_SUFFIXES) and not isinstance(obj, pd.DataFrame):
        if table is None:
            raise InputError(f"This command's result is a JSON document, not a table: use --out with a "
                             f".json file name instead of {Path(args.out).name!r}.")
        obj = table()
    if not keep_times:
        obj = without_wall_clock(obj)
    if isinstance(obj, pd.DataFrame):
        if not args.out:
            with pd.option_context("display.width", 160, "display.max_columns", 30):
                print(obj.to_string())
        elif args.out.lower().endswith(".csv"):
            obj.to_csv(args.out, index=not isinstance(obj.index, pd.RangeIndex))
        elif args.out.lower().endswith((".parquet", ".pq")):
            obj.to_parquet(args.out)
        else:
            Path(args.out).write_text(frame_json(obj))
        if args.out:  # said once the file is written (a failed write is reported instead)
            what = f"{table_what} ({len(obj):,} rows)" if table_what else f"{len(obj):,} rows"
            print(f"wrote {what} to {args.out}", file=sys.stderr)
        return
    text = json.dumps(to_plain(obj), indent=2, allow_nan=False)
    if args.out:
        Path(args.out).write_text(text + "\n")
        print(f"wrote the result (JSON) to {args.out}", file=sys.stderr)
    else:
        print(text)


def frame_json(df) -> str:
    """A table as JSON text: ``{"rows": {row: {column: value}}, "attrs": {…}}``.

    Rows by their index label (as text; the labels must be unique), every float written exactly
    (Python's shortest round-trip form; pandas' ``to_json`` keeps 10 decimals, which wrote 4.2e-14
    as 0.0), NaN as null; ``attrs`` is the table's metadata (e.g. compare's static kernel, selection
    and hardware hash; ``{}`` when it has none), kept apart from the rows so that
    ``pd.DataFrame.from_dict(doc["rows"], orient="index")`` gives the table back."""
    if not df.index.is_unique:
        raise ValueError("frame_json needs unique row labels")
    cols = {str(c): df[c].tolist() for c in df.columns}   # each column keeps its own type (ints stay ints)
    rows = {str(k): {c: to_plain(v[i]) for c, v in cols.items()} for i, k in enumerate(df.index)}
    return json.dumps({"rows": rows, "attrs": to_plain(df.attrs)}, indent=2, allow_nan=False)


def _weights(args):
    """``--alpha`` / ``--beta`` with their defaults (1.0), refused beside a budget."""
    for budget in ("error_budget", "resource_budget"):
        if getattr(args, budget, None) is not None and (args.alpha is not None or args.beta is not None):
            flag = "--" + budget.replace("_", "-")
            raise InputError(f"--alpha / --beta are not used with {flag}: the selector searches the "
                             "weight ratio that meets the budget. Give one or the other.")
    return (1.0 if args.alpha is None else args.alpha), (1.0 if args.beta is None else args.beta)


def _selector_kwargs(args):
    # the seed too: it draws the performance table's calibration tiles, as in compare and sweep
    alpha, beta = _weights(args)
    kw = dict(alpha=alpha, beta=beta, granularity=args.granularity, seed=args.seed)
    if args.error_budget is not None:
        kw["error_budget"] = args.error_budget
    if getattr(args, "resource_budget", None) is not None:
        kw["resource_budget"] = args.resource_budget
    if args.resource:
        kw["resource"] = args.resource
    if args.kernels is not None:
        kw["kernels"] = [k for k in args.kernels.split(",") if k.strip()]
    return kw


def cmd_analyze(args):
    from .analysis.pattern import analyze

    A, src = _matrix(args)
    pa = analyze(A, tile=args.tile)
    out = {"source": src, "shape": list(A.shape), "nnz": int(A.nnz), **pa.summary()}
    _emit(out, args, table=lambda: pa.tiles, table_what="the tiles table (one row per nonempty tile)")


def cmd_select(args):
    from .analysis.pattern import analyze
    from .selection.selector import select

    A, src = _matrix(args)
    pa = analyze(A, tile=args.tile)
    plan = select(pa, hw=_hw(args), **_selector_kwargs(args))
    _emit({"source": src, **plan.to_dict(timings=True)}, args, table=plan.tile_table,
          table_what="the plan (one row per tile: kernel and error)")


def cmd_simulate(args):
    from .analysis.pattern import analyze
    from .npu.costmodel import check_activation_density
    from .npu.simulate import simulate
    from .selection.selector import select

    check_activation_density(args.rho_x)   # the simulator's range [0, 1], before the selector's (0, 1]
    A, src = _matrix(args)
    hw = _hw(args)
    kw = _selector_kwargs(args)
    if args.rho_x > 0:  # choose kernels for the input that will run (the table needs rho_x > 0)
        kw["rho_x"] = args.rho_x
    plan = select(analyze(A, tile=args.tile), hw=hw, **kw)
    # record=False: the same counters, without the busy intervals the command never writes
    res = simulate(plan, hw, iterations=args.iterations, persistent=not args.non_persistent,
                   fused=not args.unfused, rho_x=args.rho_x, seed=args.seed, record=False)
    _emit({"source": src, "plan": plan.to_dict(timings=True), "simulation": res.to_dict(timings=True)}, args, table=res.pe_frame,
          table_what="the per-PE counters (one row per PE)")


def cmd_compare(args):
    from .compare import compare

    A, _ = _matrix(args)

    def progress(done, total, step):
        if done < total:
            print(f"[{done + 1}/{total}] {step}", file=sys.stderr)

    alpha, beta = _weights(args)
    df = compare(A, hw=_hw(args), alpha=alpha, beta=beta, tile=args.tile,
                 static_kernel=args.static_kernel, rho_x=args.rho_x, seed=args.seed,
                 granularity=args.granularity, progress=progress)
    _emit(df, args)


def cmd_calibrate(args):
    from .selection.perftable import performance_table

    table = performance_table(_hw(args), args.tile, rho_x=args.rho_x, seed=args.seed)
    _emit(table.fits_frame(), args)


def cmd_sweep(args):
    from .dse.sweep import SWEEP_PARAMETERS, check_sweep, parse_grid, run_sweep, save_sweep

    if not any(v.strip() for v in args.vary or []):
        raise InputError("Give at least one --vary name=v1,v2,… (e.g. --vary alpha=0.1,1,10).")
    grid = parse_grid(args.vary)
    if args.static_kernel is not None and not args.baselines:
        raise InputError("--static picks the Static-sparse baseline's kernel, which is simulated only with "
                         "--baselines; add --baselines, or leave --static out.")
    if args.static_kernel is None:
        args.static_kernel = "CSC"
    weights = [k for k in ("alpha", "beta") if len(grid.get(k, ())) > 1]
    budgets = [k for k in ("error_budget", "resource_budget") if any(v is not None for v in grid.get(k, ()))]
    if weights and budgets:
        # select() searches the weight ratio that meets a budget, so those points repeated (exit 0, identical
        # rows; select refuses --alpha beside --error-budget). The Design space page runs such a grid and
        # says so beside it; here a command refuses it, as select does.
        raise InputError(
            f"--vary sweeps {' and '.join(weights)} at points with "
            f"{' or '.join(('an ' if b[0] == 'e' else 'a ') + b for b in budgets)}; with a budget the "
            f"selector searches the weight ratio that meets it, so {' and '.join(weights)} would change "
            f"nothing there and those points would repeat. Sweep the weights and the budgets in separate runs.")
    SWEEP_PARAMETERS["tile"].check(args.tile, label="--tile")
    # the grid, --tile, the hardware and --static are refused before the matrix is loaded or made
    check_sweep(grid, base={"tile": args.tile}, hw=_hw(args), baselines=args.baselines,
                static_kernel=args.static_kernel)
    A, _ = _matrix(args)

    def progress(done, total, point):
        print(f"[{done}/{total}] {point}", file=sys.stderr)

    # --tile is the tile side of every point unless --vary tile=… sweeps it
    df = run_sweep(A, grid, hw=_hw(args), seed=args.seed, scheduler=args.scheduler, progress=progress,
                   base={"tile": args.tile}, baselines=args.baselines, static_kernel=args.static_kernel)
    if not args.timings:
        df = without_wall_clock(df)
    if args.out:
        save_sweep(df, args.out)
        print(f"wrote {len(df)} points to {args.out}", file=sys.stderr)
    else:
        _emit(df, args)


#: Most timed runs ``bench`` takes (each one a matvec of each kind).
MAX_REPEATS = 100_000


def cmd_bench(args):
    """Time the fused CPU executor against scipy on the chosen matrix (median of repeats)."""
    from .analysis.pattern import analyze
    from .execute.cpu import median_seconds
    from .selection.selector import select

    if not 1 <= args.repeats <= MAX_REPEATS:
        raise InputError(f"--repeats must be between 1 and {MAX_REPEATS} (the median of that many timed "
                         f"runs), got {args.repeats}.")
    A, src = _matrix(args)
    plan = select(analyze(A, tile=args.tile), hw=_hw(args), **_selector_kwargs(args))
    x = np.random.default_rng(args.seed).standard_normal(A.shape[1])
    plan.matvec(x)  # warm-up (JIT)
    A @ x
    t_plan = median_seconds(lambda: plan.matvec(x), args.repeats)
    t_scipy = median_seconds(lambda: A @ x, args.repeats)
    y, y_ref = plan.matvec(x), A @ x
    denom = float(np.linalg.norm(y_ref)) or 1.0
    _emit({"source": src, "shape": list(A.shape), "nnz": int(A.nnz),
           "fused_matvec_s": t_plan, "scipy_matvec_s": t_scipy,
           "speedup_vs_scipy": t_scipy / t_plan if t_plan > 0 else None,
           "relative_output_difference": float(np.linalg.norm(y - y_ref)) / denom,
           "plan_relative_error": float(plan.relative_error), "repeats": args.repeats}, args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m akfviz",
        description="Adaptive Kernel Fusion of sparse matrices on a simulated neuromorphic NPU.",
        epilog="Every command but calibrate takes a matrix: FILE (or --input), --sample NAME or --generate "
               "KIND; --limit NAME=VALUE (repeatable) raises or lowers a size limit of loading or "
               "generating it, e.g. --limit max_nnz=500000000. 'python -m akfviz COMMAND --help' lists "
               "a command's options.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="command")

    gen = "the --generate matrix"
    table = "the performance table's synthetic calibration tiles"

    def common(sp, selector="full", hardware=True, timings=True, seeds=(gen,), out_help=None):
        g = sp.add_argument_group("workload (one of)")
        g.add_argument("file", nargs="?", metavar="FILE",
                       help="matrix file (same as --input); default: the MiniLM sample")
        g.add_argument("--input", help="matrix file: .mtx, .npz, .npy or .safetensors (also "
                                       "gzip/bzip2/xz-compressed, or in a .tar archive)")
        g.add_argument("--tensor", help="which matrix of a file that holds several: a tensor of a .safetensors file, an "
                            "array of a .npz, or a member of a .tar archive")
        g.add_argument("--prune", metavar="METHOD[:VALUE]",
                       help="prune the matrix first (akf-spec §1): magnitude:SPARSITY, block:SPARSITY "
                            "(4×4 blocks) or nm:N:M, e.g. magnitude:0.9 or nm:2:4 (default sparsity 0.9)")
        g.add_argument("--sample", help="a shipped sample (default: the pruned MiniLM FFN matrix; an unknown "
                            "name lists them all)")
        g.add_argument("--generate", metavar="KIND", help="a generator (akfviz.generators()): "
                            + ", ".join(GENERATOR_NAMES) + "; its parameters with --param")
        # the default is the generators' own (not imported here: --help stays fast)
        g.add_argument("--n", type=_whole, default=None, help="rows for --generate (default: akfviz.generate's n)")
        g.add_argument("--m", type=_whole, default=None, help="columns for --generate (default n)")
        g.add_argument("--param", action="append", metavar="KEY=VALUE",
                       help="generator parameter, repeatable (e.g. --param density=0.01)")
        g.add_argument("--limit", action="append", metavar="NAME=VALUE",
                       help="a size limit for loading FILE or for --generate, repeatable (e.g. --limit "
                            "max_nnz=500000000); NAME is a field of akfviz.LoadLimits: "
                            + ", ".join(LIMIT_NAMES))
        sp.add_argument("--seed", type=_seed, default=0,
                        help=f"seed, 0 … {SEED_MAX} (default 0): it draws {_in_words(seeds)}")
        sp.add_argument("--tile", type=_whole, default=32, help="tile side T (default 32)")
        sp.add_argument("--out", help=out_help or (
            "write the result to this file: .json (the full result), or .csv / .parquet (a table: analyze → "
            "the tiles, select → the plan tile by tile, simulate → the per-PE counters, compare → the "
            "comparison)"))
        if selector:
            s = sp.add_argument_group("selector")
            s.add_argument("--alpha", type=float, default=None, help="weight of the error (default 1.0)")
            s.add_argument("--beta", type=float, default=None, help="weight of the resource (default 1.0)")
            s.add_argument("--granularity", choices=GRANULARITIES, type=_any_case(GRANULARITIES), default="cluster")
        if selector == "full":
            s.add_argument("--error-budget", type=float, default=None,
                           help="maximum relative error; the selector finds alpha/beta")
            s.add_argument("--resource-budget", type=float, default=None,
                           help="maximum resource as a share of Dense's (e.g. 0.05); the selector finds "
                                "the least-error plan within it")
            s.add_argument("--resource", choices=RESOURCES, type=_any_case(RESOURCES), default=None)
            s.add_argument("--kernels", metavar="K1,K2,…", default=None,
                           help="candidate kernels, comma-separated (default: all); a family "
                                "name stands for its variants, e.g. CSC,DIA,NM,LOWRANK")
        if timings:
            sp.add_argument("--timings", action="store_true",
                            help="keep the wall-clock times (analysis and selection stages, annealing, "
                                 "sweep points) in the result; left out by default, so the same command "
                                 "writes the same bytes")
        if hardware:
            h = sp.add_argument_group("hardware")
            h.add_argument("--hw", help="HardwareConfig TOML file")
            h.add_argument("--preset", help="energy/hardware preset, e.g. horowitz-45nm or loihi-like")

    sp = sub.add_parser("analyze", help="tile the matrix and cluster its tiles (LSH)")
    common(sp, selector=False, hardware=False)
    sp.set_defaults(func=cmd_analyze)

    sp = sub.add_parser("select", help="choose a kernel per tile/cluster and report the plan")
    common(sp, seeds=(gen, table))
    sp.set_defaults(func=cmd_select)

    sp = sub.add_parser("simulate", help="run the plan on the simulated NPU")
    common(sp, seeds=(gen, table, "the input x", "the annealing placement"))
    sp.add_argument("--iterations", type=_whole, default=1)
    sp.add_argument("--non-persistent", action="store_true")
    sp.add_argument("--unfused", action="store_true")
    sp.add_argument("--rho-x", type=float, default=1.0, help="activation density of x")
    sp.set_defaults(func=cmd_simulate)

    sp = sub.add_parser("compare", help="Dense / BlockSparse / StaticSparse / AKF")
    common(sp, selector="weights", seeds=(gen, table, "the input x", "the annealing placement"))
    sp.add_argument("--static-kernel", default="CSC")
    sp.add_argument("--rho-x", type=float, default=1.0)
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser("calibrate", help="build and print the performance table's fits")
    sp.add_argument("--tile", type=_whole, default=32, help="tile side T the table is calibrated for (default 32)")
    sp.add_argument("--hw", help="HardwareConfig TOML file")
    sp.add_argument("--preset", help="energy/hardware preset, e.g. horowitz-45nm or loihi-like")
    sp.add_argument("--seed", type=_seed, default=0,
                    help="seed of the synthetic calibration tiles (select / compare --seed use the same table)")
    sp.add_argument("--rho-x", type=float, default=1.0, help="activation density of x the table assumes")
    sp.add_argument("--out", help="write the fits table to this .csv / .parquet (or .json) file")
    sp.set_defaults(func=cmd_calibrate)

    sp = sub.add_parser("sweep", help="design-space sweep (CSV/Parquet output)")
    common(sp, selector=False, seeds=(gen, table, "the input x", "the annealing placement"),
           out_help="write the sweep table to this .csv or .parquet file (one row per configuration)")
    sp.add_argument("--vary", action="append", metavar="NAME=V1,V2,…",
                    help="a swept parameter, repeatable (e.g. --vary alpha=0.1,1,10), or several in one "
                         "separated by ';' (--vary 'tile=16,32;beta=0.1,1'). Names: tile; alpha, beta, "
                         "error_budget, resource_budget ('none' = no budget), granularity (cluster, tile), "
                         "resource (energy, cycles, bytes, mix); rho_x; hardware: rows, cols, "
                         "sram_bytes_per_pe, mac_lanes, dram_bytes_per_cycle, hop_latency_cycles. The "
                         "points are every combination, at most 400; each value once")
    sp.add_argument("--scheduler", choices=SCHEDULERS, type=_any_case(SCHEDULERS), default="local")
    sp.add_argument("--baselines", action="store_true",
                    help="also simulate the Block-sparse and Static-sparse baselines at every point and add "
                         "AKF's speedup and energy ratio against each (about twice the time)")
    sp.add_argument("--static-kernel", "--static", dest="static_kernel", default=None, metavar="KERNEL",
                    help="the Static-sparse baseline's kernel, with --baselines (default CSC); "
                         "--static is the same option")
    sp.set_defaults(func=cmd_sweep)

    sp = sub.add_parser("bench", help="time the fused CPU executor against scipy")
    common(sp, timings=False, seeds=(gen, table, "the input x"),          # its result is timings
           out_help="write the timings to this .json file")
    sp.add_argument("--repeats", type=_whole, default=20, help="timed runs; the median is reported (default 20)")
    sp.set_defaults(func=cmd_bench)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_out(args)
        args.func(args)
    except InputError as exc:
        print(f"error: {cli_advice(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. "| head": the reader left; say nothing more, write nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:  # writing the result (permissions, a full disk, …) or another file's I/O
        why = exc.strerror or type(exc).__name__
        if isinstance(exc, _OutputError):
            what = f"could not write {repr(args.out) if getattr(args, 'out', None) else 'the result to standard output'}"
        else:
            what = "a file could not be read or written" + (f" ({exc.filename!r})" if exc.filename else "")
        try:
            print(f"error: {what}: {why}.", file=sys.stderr)
        except OSError:
            pass
        return 2
    return 0


class _OutputError(OSError):
    """Writing the command's result failed (:func:`_emit`); carries the original errno text."""
