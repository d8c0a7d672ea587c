"""Numba JIT options, decided in one place.

Kernels use ``@njit_cached`` (serial) or ``@njit_parallel`` (``prange`` loops). All use
``cache=True`` so compiled machine code is reused across processes; kernels keep stable
signatures (int64 indices, float64 values) so the cache is hit.
"""
import types

import numba

from .allocator import keep_freed_memory

# freed arrays stay with the process for the next call (see akfviz.allocator)
keep_freed_memory()

JIT_OPTIONS = dict(cache=True, nogil=True, fastmath=False)
PARALLEL_OPTIONS = dict(JIT_OPTIONS, parallel=True)

njit_cached = numba.njit(**JIT_OPTIONS)
njit_parallel = numba.njit(**PARALLEL_OPTIONS)
#: Small helpers inlined into their callers at the numba IR level (a call per tile or entry
#: costs more than the helper's work).
njit_inline = numba.njit(**JIT_OPTIONS, inline="always")


def serial_twin(dispatcher, name=None):
    """The Python function of a ``@njit_parallel`` kernel compiled again without ``parallel``.

    ``prange`` then runs as ``range``: small inputs skip the thread launch with the same
    arithmetic, so the results are the same bit for bit. The twin gets its own name (default:
    the kernel's name + ``"_serial"``), hence its own cache entry.
    """
    f = dispatcher.py_func
    name = name or f.__name__ + "_serial"
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__qualname__ = name
    g.__doc__ = f.__doc__
    return njit_cached(g)
