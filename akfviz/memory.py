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
    """Bytes of memory this process can still get: the least of what the system can give without
    swapping (Linux ``MemAvailable``; else free pages from ``sysconf``), what is left under the
    process's address-space limit (``ulimit -v``) and what is left under its cgroup's
    ``memory.max`` (a container's or a service's cap). None when none is known, and then
    nothing is checked."""
    known = [v for v in (_system_available(), _rlimit_left(), _cgroup_left()) if v is not None]
    return min(known) if known else None


def _read_kib(path: str, key: str) -> int | None:
    """``key: <n> kB`` from a /proc file, in bytes."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _system_available() -> int | None:
    avail = _read_kib("/proc/meminfo", "MemAvailable:")
    if avail is not None:
        return avail
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _rlimit_left() -> int | None:
    """Address space left under ``RLIMIT_AS`` (None when unlimited or unknown)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = _read_kib("/proc/self/status", "VmSize:")
    return max(int(soft) - (used or 0), 0)


def _cgroup_left() -> int | None:
    """Memory left under the cgroup v2 ``memory.max`` of this process (None when unlimited)."""
    try:
        with open("/proc/self/cgroup") as f:
            rel = next((line.strip().split("::", 1)[1] for line in f if line.startswith("0::")), None)
        if rel is None:
            return None
        base = os.path.join("/sys/fs/cgroup", rel.lstrip("/"))
        with open(os.path.join(base, "memory.max")) as f:
            cap = f.read().strip()
        if cap == "max":
            return None
        with open(os.path.join(base, "memory.current")) as f:
            current = int(f.read().strip())
        return max(int(cap) - current, 0)
    except (OSError, ValueError, StopIteration):
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
            f"{what} needs about {_size(need)} of memory, more than the "
            f"{_size(MEMORY_SHARE * avail)} this process can get now. {hint}")


def _size(n: float) -> str:
    """Bytes as GB (one decimal) from 1 GB up, else as MB."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.3g} MB"


#: What to try when a request ran out of memory anyway (an estimate missed it).
OUT_OF_MEMORY_HINT = ("Try a smaller matrix, a larger tile side T, cluster granularity, fewer PEs or a narrower x; "
                      "the memory checks made beforehand did not foresee this.")


def out_of_memory(what: str, exc: MemoryError) -> ResourceLimitError:
    """The readable error for a :class:`MemoryError` that escaped the checks made beforehand."""
    detail = str(exc).strip() or "an allocation failed"
    return ResourceLimitError(f"{what} ran out of memory ({detail}). {OUT_OF_MEMORY_HINT}")
