"""When the fused executor and its packing use the worker threads (numba's thread pool).

Small plans, calls from short-lived threads and an oversubscribed machine run on the
calling thread: the arithmetic does not depend on the chunking, so the result is the
same either way, only the time differs. The thresholds below were measured (comments);
they are read at call time, so a test or a benchmark can change them on this module.
"""
from __future__ import annotations

import os
import threading
import time

import numba


#: Plans that stream fewer bytes than this run serially when called from a thread other
#: than the main one: waking the worker threads costs more than the work, and OpenMP gives
#: every calling thread a thread team of its own, so a thread that lives for one call (a
#: Streamlit script run) starts a new team. Measured: the 90 %-pruned MiniLM FFN (606 kB)
#: called from a fresh thread per batch took 76 µs on two threads against 44 µs on one; in
#: the app (chromium busy on the same 2 cores) one call took 8.4 ms against 0.034 ms.
PARALLEL_MIN_BYTES = 1 << 20
#: The same threshold for calls from the main thread, whose team persists between calls:
#: plans of 265 kB / 516 kB / 1 MB (random 1536², 25k / 50k / 100k nonzeros) took 0.92 /
#: 0.89 / 0.62 of their one-thread time on two threads, MiniLM FFN 90 % (606 kB) 0.64.
PARALLEL_MIN_BYTES_MAIN = 1 << 18
_MAIN_THREAD = threading.main_thread().ident


def min_parallel_bytes() -> int:
    """:data:`PARALLEL_MIN_BYTES_MAIN` on the main thread, else :data:`PARALLEL_MIN_BYTES`."""
    return PARALLEL_MIN_BYTES_MAIN if threading.get_ident() == _MAIN_THREAD else PARALLEL_MIN_BYTES


#: Largest share of the work one thread may get for the parallel path to be used (with two
#: threads: at least a 1.4× split; below that the launch and the wait cost more than they gain).
PARALLEL_MAX_SHARE = 0.7

#: Seconds for which :func:`cores_have_room` reuses its last answer (reading the load
#: average is a system call of a few µs — a tenth of a small matvec).
LOAD_CHECK_PERIOD = 0.5
_load_check = [-1.0, True]  # (time of the last check, answer)


def cores_have_room() -> bool:
    """False when the machine is oversubscribed (1-minute load average ≥ number of cores).

    A parallel region ends when its slowest worker does; on a saturated machine a worker
    is often descheduled for a whole time slice (several ms, ten times a 1M-nonzero SpMV),
    so the executor then runs on the calling thread. The result is the same either way
    (the arithmetic does not depend on the chunking). The answer is reused for
    :data:`LOAD_CHECK_PERIOD` seconds (the 1-minute average moves slowly)."""
    now = time.monotonic()
    if now - _load_check[0] < LOAD_CHECK_PERIOD:
        return _load_check[1]
    try:
        room = os.getloadavg()[0] < (os.cpu_count() or 1)
    except OSError:  # pragma: no cover - platforms without a load average
        room = True
    _load_check[0] = now
    _load_check[1] = room
    return room


#: The residual builder uses the worker threads from this many tiles + entries on (and when
#: the cores are not busy, :func:`cores_have_room`): below, or on a loaded machine, waking
#: the threads costs more than the work (a busy core delays a parallel region by a time slice).
PACK_PARALLEL_MIN = 1 << 17


def pack_parallel(work) -> bool:
    """Run a packing pass of ``work`` tiles + entries on the worker threads?"""
    return numba.get_num_threads() > 1 and work >= PACK_PARALLEL_MIN and cores_have_room()
