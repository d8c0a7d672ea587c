"""Keep freed memory for reuse (glibc's ``mallopt``), so repeated work does not fault fresh pages.

Every array of ``analyze``, ``select`` and the executor is allocated, written once and freed, and
the next call (a slider move, another matrix of the same size) allocates the same sizes again.
With glibc's defaults an array of more than 128 kB is its own ``mmap``, unmapped when freed; the
threshold then follows the sizes freed, but an allocation at or above it still gets fresh pages,
and the heap's free top is handed back beyond twice the threshold. Fresh pages are
zero-filled by the kernel on the first write; on a micro-VM that hands free guest memory back to
its host (free-page reporting) each such fault costs microseconds more. Measured here
(docs/benchmarks.md, "Fresh pages"): writing two new 8 MB arrays took 11–15 ms against 0.7–0.8 ms
for memory already mapped; ``analyze`` of the 1M-nonzero uniform matrix 72 ms (2,426 page faults
per call, every call) against 32 ms (no faults after the first call).

:func:`keep_freed_memory` sets the ``mmap`` threshold to its largest value (32 MiB: larger blocks
are still mapped and unmapped) and lets up to :data:`TRIM_BYTES` of free heap stay with the
process. The price is a resident size that stays near its peak after large work (up to that much
more than needed), which is what an interactive app that repeats the same work wants.

It is called when the compute modules are imported (:mod:`akfviz._jit`); set the environment
variable ``AKFVIZ_KEEP_FREED_MEMORY=0`` before importing akfviz to keep the C library's
defaults. Elsewhere than glibc (macOS, Windows, musl) it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

#: glibc's ``mallopt`` parameter numbers (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: The largest ``mmap`` threshold glibc accepts on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``).
MMAP_BYTES = 32 * 1024 * 1024
#: Free memory at the top of a heap kept by the process instead of being handed back.
TRIM_BYTES = 256 * 1024 * 1024
#: Environment variable that turns the policy off (``0``, ``false``, ``no``, ``off``).
ENV_VAR = "AKFVIZ_KEEP_FREED_MEMORY"

_state = {"done": False, "active": False}


def _wanted() -> bool:
    return os.environ.get(ENV_VAR, "1").strip().lower() not in {"0", "false", "no", "off"}


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks up to 32 MiB and up to :data:`TRIM_BYTES` of free heap for
    reuse (once per process). Returns True when the settings are in force."""
    if _state["done"]:
        return _state["active"]
    _state["done"] = True
    if not sys.platform.startswith("linux") or not _wanted():
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_BYTES) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_BYTES) == 1
    _state["active"] = bool(ok)
    return _state["active"]


def keeps_freed_memory() -> bool:
    """True when :func:`keep_freed_memory` has put its settings in force in this process."""
    return _state["active"]
