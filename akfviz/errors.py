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
