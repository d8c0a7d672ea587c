"""Memory checks made before large allocations (akfviz's reliability rule: refuse what would
exhaust memory, with a readable message, instead of letting the process be killed).

Loaders check declared sizes against :class:`~akfviz.workloads.limits.LoadLimits`; the stages
whose memory grows with the *structure* of an accepted matrix (the tiles of
:func:`akfviz.analyze`, the routed columns of dense-layout NPU work) check their estimate
against the memory available now (:func:`check_memory`).
"""
from __future__ import annotations

import os

from .errors import ResourceLimitError

#: Share of the currently available memory one stage may plan to use.
MEMORY_SHARE = 0.8


def available_memory() -> int | None:
    """Bytes of memory the system can give without swapping (Linux ``MemAvailable``; else
    free pages from ``sysconf``; None when neither is known, and then nothing is checked)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


#: Below this many bytes nothing is checked (no read of ``/proc/meminfo``): small work lists,
#: such as the calibration tiles' hundreds of calls, cannot exhaust memory.
CHECK_FROM_BYTES = 64 * 2**20


def check_memory(need: int, what: str, hint: str) -> None:
    """Raise :class:`ResourceLimitError` before allocating ``need`` bytes when that is more than
    :data:`MEMORY_SHARE` of :func:`available_memory` (the app would otherwise be killed)."""
    if need < CHECK_FROM_BYTES:
        return
    avail = available_memory()
    if avail is not None and need > MEMORY_SHARE * avail:
        raise ResourceLimitError(
            f"{what} needs about {need / 1e9:.1f} GB of memory, more than the "
            f"{MEMORY_SHARE * avail / 1e9:.1f} GB this machine can give it now. {hint}")
