"""Numba JIT options, decided in one place.

Kernels use ``@njit_cached`` (serial) or ``@njit_parallel`` (``prange`` loops). All use
``cache=True`` so compiled machine code is reused across processes; kernels keep stable
signatures (int64 indices, float64 values) so the cache is hit.
"""
import numba

JIT_OPTIONS = dict(cache=True, nogil=True, fastmath=False)
PARALLEL_OPTIONS = dict(JIT_OPTIONS, parallel=True)

njit_cached = numba.njit(**JIT_OPTIONS)
njit_parallel = numba.njit(**PARALLEL_OPTIONS)
