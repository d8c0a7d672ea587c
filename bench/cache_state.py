"""Timing helpers shared by the bench scripts: medians under a stated cache state.

A ratio "our code / one scipy SpMV" is only fair when both sides start from the same cache state.
Timing the SpMV in a tight loop keeps the matrix's 12 MB in the caches; timing ``analyze`` after
something that wrote 170 MB (``pa.tiles``, a plan) makes it read the matrix from memory. So the
benches time both sides twice:

* **warm** — each call right after the previous call of the same function (a tight loop);
* **cold** — each call right after :meth:`Flusher.flush` has written a buffer larger than the
  caches the process can use, so the matrix comes from memory for both sides.

The verdict of a target takes the larger of the two ratios.
"""
from __future__ import annotations

import time

import numpy as np

#: Size of the buffer written before a cold call: more than twice the last-level cache share
#: a process gets on the 2-core machines the benches run on (the VM reports a 480 MB L3 shared
#: with the host's other tenants; 512 MB of writes evicted the 12 MB matrix in a probe: a cold
#: SpMV took 1.6–1.8 ms against 1.1 ms warm).
FLUSH_MB = 512


class Flusher:
    """Writes ``mb`` megabytes before each cold call (allocated and touched once, up front, so
    the flush itself causes no page faults in later calls)."""

    def __init__(self, mb: int = FLUSH_MB):
        self.buf = np.ones(max(1, int(mb)) * 2**20 // 8)

    def flush(self) -> None:
        self.buf += 1.0


#: Calls made before the timed ones, after numba has compiled: a fresh process first-touches the
#: memory its heap grows into during its first calls of ``analyze`` (page faults, kernel time; the
#: 1M-nonzero uniform matrix: 800, 85, 25, 13, 12, 11, 12 ms for its first seven calls, then
#: 11–12 ms), and the allocator keeps that memory afterwards (akfviz.allocator).
WARMUP_CALLS = 6


def warm_up(fn, calls: int = WARMUP_CALLS) -> list:
    """Call ``fn`` ``calls`` times (untimed by the medians); returns each call's wall time (s), for
    the record of how long the process took to reach its steady state. As in :func:`median_time`,
    the previous result is alive while the next call runs (the heap's peak of the timed loop)."""
    ts = []
    median_time(fn, calls, runs=ts)
    return ts


def median_time(fn, repeats: int, before=None, runs=None):
    """Median wall time (s) of ``repeats`` calls of ``fn`` and the last result.

    ``before`` (untimed) runs before each call — :meth:`Flusher.flush` for cold calls. Each call's
    time is appended to ``runs`` when a list is given. As in a caller's loop ``out = fn()``, the
    previous result is alive while the next call runs.
    """
    ts = []
    out = None
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    if runs is not None:
        runs.extend(ts)
    return float(np.median(ts)), out


def runs_ms(ts) -> str:
    """Run times as a space-separated list of milliseconds."""
    return " ".join(f"{1e3 * t:.0f}" for t in ts)
