"""Errors raised by akfviz.

Every input the library rejects raises :class:`InputError` (a ``ValueError``) whose
message says, in plain words, what was wrong and what to do instead. The app shows
that message with ``st.error``; it never shows a traceback for a bad input.
"""
import numbers

#: Longest message an :class:`InputError` keeps (characters); a longer one keeps its start and
#: end around a note of how much was cut. Messages quote values read from the input, and a hostile
#: file can make those megabytes long (a shape of 30 million ones in a safetensors header gave a
#: 90-million-character message); the sites that quote file content cut it themselves
#: (:func:`name_list`, :func:`shown`), and this is the backstop for the rest.
MAX_MESSAGE = 2000


class InputError(ValueError):
    """A user-supplied input (matrix, file, parameter, configuration) was rejected.

    The message is written for a student: what was wrong, which value, and what is
    accepted instead. It is cut to :data:`MAX_MESSAGE` characters.
    """

    def __init__(self, *args):
        if args and isinstance(args[0], str) and len(args[0]) > MAX_MESSAGE:
            text = args[0]
            tail = MAX_MESSAGE // 5
            head = MAX_MESSAGE - tail - 60
            cut = len(text) - head - tail
            args = (f"{text[:head]} … [{cut:,} characters cut] … {text[-tail:]}",) + args[1:]
        super().__init__(*args)


class ResourceLimitError(InputError):
    """An input would need more memory or time than the configured limits allow."""


def checked_init(cls):
    """Class decorator for the public configuration dataclasses: an unknown keyword, too many
    positional arguments or a missing required one raise :class:`InputError` listing the fields,
    instead of the ``TypeError`` of the generated ``__init__`` (e.g. ``HardwareConfig(pe_rows=128)``,
    ``EnergyEntry(1.0)``)."""
    import functools
    from dataclasses import fields

    from dataclasses import MISSING

    init = cls.__init__
    names = [f.name for f in fields(cls) if f.init]
    required = [f.name for f in fields(cls) if f.init and f.default is MISSING and f.default_factory is MISSING]

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise InputError(
                f"{cls.__name__} has no setting {', '.join(map(repr, unknown))}; "
                f"its settings are: {', '.join(names)}.")
        if len(args) > len(names):
            raise InputError(
                f"{cls.__name__} takes at most {len(names)} settings, got {len(args)} "
                f"positional values; pass them by name ({', '.join(names[:3])}, …).")
        twice = sorted(set(names[:len(args)]) & set(kwargs))
        if twice:
            raise InputError(f"{cls.__name__}: {', '.join(twice)} given both by position and by name.")
        missing = [n for n in required[len(args):] if n not in kwargs]
        if missing:
            raise InputError(f"{cls.__name__} needs {', '.join(map(repr, missing))} too; its settings are: "
                             f"{', '.join(names)}.")
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


def checked_call(func):
    """Function decorator for the public API (akf-spec §9): arguments that do not fit the
    signature (an unknown keyword, a missing or extra argument) raise :class:`InputError`
    listing the parameters, instead of Python's ``TypeError`` (e.g. ``select(pa, alpah=2)``).

    The check binds the arguments to the signature before the call (a few microseconds);
    a ``TypeError`` raised inside the function is not touched. A ``MemoryError`` that escapes
    the memory checks made beforehand becomes a :class:`ResourceLimitError` saying what to try.
    """
    import functools
    import inspect

    sig = inspect.signature(func)
    params = [p.name for p in sig.parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")]

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            takes = f"Its parameters are: {', '.join(params)}." if params else "It takes no arguments."
            raise InputError(f"{func.__name__}(): {exc}. {takes}") from None
        try:
            return func(*args, **kwargs)
        except MemoryError as exc:
            from .memory import out_of_memory

            raise out_of_memory(f"{func.__name__}()", exc) from exc

    return wrapper


def shown(value, *, width: int = 60, items: int = 8, quote: bool = True) -> str:
    """A value read from an input, as a message quotes it: a string or other scalar as its
    ``repr`` with the value cut to ``width`` characters (start and end kept around ``…``); a list or tuple (a
    shape, a pair of offsets) as its first ``items`` entries, each shown so, then ``… (N values)``
    (short ones exactly as ``repr`` shows them, integers of any type as plain numbers).
    ``quote=False`` shows strings and other objects by ``str`` (no quotes).

    Examples
    --------
    >>> shown([1] * 20, items=3)
    '[1, 1, 1, … (20 values)]'
    >>> shown("a" * 50 + "z" * 50, width=10)
    "'aaaaaa…zzz'"
    """
    if isinstance(value, (list, tuple)):
        inner = ", ".join(shown(v, width=width, items=items) for v in value[:items])
        more = f", … ({len(value):,} values)" if len(value) > items else ""
        if isinstance(value, tuple):
            return f"({inner}{more}{',' if len(value) == 1 else ''})"
        return f"[{inner}{more}]"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, str):
        return repr(_cut(value, width)) if quote else _cut(value, width)
    return _cut(repr(value) if quote else str(value), width)


def _cut(text: str, width: int) -> str:
    """``text`` if at most ``width`` characters, else its start and end around ``…`` (``width`` in all)."""
    if len(text) <= width:
        return text
    tail = width // 3
    return text[:width - tail - 1] + "…" + text[-tail:]


def name_list(items, *, limit: int = 10, width: int = 60) -> str:
    """Names for a message, capped: the first ``limit`` of ``items``, each cut to ``width``
    characters, then ``… and N more``; ``"none"`` when there are none.

    A file may hold a million named tensors or arrays (with names of any length); a message
    that lists them all ran to megabytes. Every message that lists the names found in a file
    goes through this function.

    Parameters
    ----------
    items : sequence
        Names (anything ``str()`` turns into one), or ``(name, shape)`` pairs, shown as
        ``name [rows, cols]``.
    limit : int
        Most items shown.
    width : int
        Most characters of a name shown; a longer one keeps its start and end around ``…``.

    Returns
    -------
    str
        The items joined by ``", "``.

    Examples
    --------
    >>> name_list(["a", "b", "c"], limit=2)
    'a, b … and 1 more'
    >>> name_list([("w", (2, 3))])
    'w [2, 3]'
    """
    def short(name) -> str:
        return _cut(str(name), width)

    def item_text(item) -> str:
        if isinstance(item, tuple) and len(item) == 2:
            return f"{short(item[0])} {shown(list(item[1]))}"
        return short(item)

    total = len(items)
    if not total:
        return "none"
    text = ", ".join(item_text(item) for item in items[:limit])
    return text + (f" … and {total - limit:,} more" if total > limit else "")
