"""Errors raised by akfviz.

Every input the library rejects raises :class:`InputError` (a ``ValueError``) whose
message says, in plain words, what was wrong and what to do instead. The app shows
that message with ``st.error``; it never shows a traceback for a bad input.
"""


class InputError(ValueError):
    """A user-supplied input (matrix, file, parameter, configuration) was rejected.

    The message is written for a student: what was wrong, which value, and what is
    accepted instead.
    """


class ResourceLimitError(InputError):
    """An input would need more memory or time than the configured limits allow."""


def checked_init(cls):
    """Class decorator for the public configuration dataclasses: an unknown keyword or too
    many positional arguments raise :class:`InputError` listing the fields, instead of the
    ``TypeError`` of the generated ``__init__`` (e.g. ``HardwareConfig(pe_rows=128)``)."""
    import functools
    from dataclasses import fields

    init = cls.__init__
    names = [f.name for f in fields(cls) if f.init]

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
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise InputError(f"{func.__name__}(): {exc}. Its parameters are: {', '.join(params)}.") from None
        try:
            return func(*args, **kwargs)
        except MemoryError as exc:
            from .memory import out_of_memory

            raise out_of_memory(f"{func.__name__}()", exc) from exc

    return wrapper
