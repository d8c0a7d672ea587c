"""Numba JIT options, decided in one place.

Kernels use ``@njit_cached`` (serial) or ``@njit_parallel`` (``prange`` loops). All use
``cache=True`` so compiled machine code is reused across processes; kernels keep stable
signatures (int64 indices, float64 values) so the cache is hit.

**Where the machine code is cached.** numba checks a cached kernel against its own source file
only. A kernel's machine code also holds the kernels it calls and the constants it reads from other
modules, so after an edit (or a ``git pull``) of ``scanpass.py`` alone, ``pairclust.py``'s cached
code kept running the old, inlined ``scanpass`` functions (found by a mutation probe). The cache
therefore lives in a directory named by a digest of the library's sources
(:func:`source_digest`): ``akfviz/__pycache__/numba-<digest>`` (or, when ``NUMBA_CACHE_DIR`` is set,
``$NUMBA_CACHE_DIR/akfviz-<digest>``; when the package folder is read-only,
``~/.cache/akfviz/numba-<digest>``). Any change to the library compiles every kernel again once,
in a new directory; the package-local folder keeps the :data:`KEEP_CACHES` most recently used.
"""
import hashlib
import os
import shutil
import tempfile
import types
from pathlib import Path

import numba

from .allocator import keep_freed_memory

# freed arrays stay with the process for the next call (see akfviz.allocator)
keep_freed_memory()

JIT_OPTIONS = dict(cache=True, nogil=True, fastmath=False)
PARALLEL_OPTIONS = dict(JIT_OPTIONS, parallel=True)

_PACKAGE = Path(__file__).resolve().parent
#: Modules with no compiled code that no kernel reads (the app's helpers, its charts and the command
#: line), left out of the digest so that editing them does not compile the kernels again. A test
#: checks that no module of compiled code imports them.
FRONT_END = ("app_", "viz/", "cli.py", "__main__.py")
#: Cache directories of earlier sources kept in the package's own folder (switching between a few
#: commits does not compile every time).
KEEP_CACHES = 3


def source_digest(root: str | Path | None = None) -> str:
    """16 hex digits of SHA-256 over the path and bytes of every ``.py`` file of the package (or of
    the folder ``root``) but the :data:`FRONT_END` ones, in sorted order: the same sources give the
    same digest anywhere."""
    root = _PACKAGE if root is None else Path(root)
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(FRONT_END):
            continue
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
        os.utime(folder)            # "most recently used", for the pruning below
        return True
    except OSError:
        return False


def _prune(folder: Path, prefix: str) -> None:
    """Remove all but the :data:`KEEP_CACHES` most recently used ``prefix*`` siblings of ``folder``."""
    try:
        old = sorted((p for p in folder.parent.glob(prefix + "*") if p.is_dir() and p != folder),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for p in old[KEEP_CACHES - 1:]:
        shutil.rmtree(p, ignore_errors=True)


def _cache_dir() -> str | None:
    """The cache directory of these sources (module docstring); None: numba's own choice."""
    digest = source_digest()
    if numba.config.CACHE_DIR:                   # the user's NUMBA_CACHE_DIR (shared: never pruned)
        folder = Path(numba.config.CACHE_DIR) / f"akfviz-{digest}"
        return str(folder) if _writable(folder) else None
    local = _PACKAGE / "__pycache__" / f"numba-{digest}"
    if _writable(local):
        _prune(local, "numba-")
        return str(local)
    home = Path.home() / ".cache" / "akfviz" / f"numba-{digest}"
    return str(home) if _writable(home) else None


CACHE_DIR = _cache_dir()


def _decorator(**options):
    """``numba.njit(**options)`` whose cache is :data:`CACHE_DIR`: numba picks a kernel's cache
    folder when it is decorated, so ``numba.config.CACHE_DIR`` is set for that moment only (other
    numba code in the process keeps its own)."""
    def decorate(f):
        old = numba.config.CACHE_DIR
        if CACHE_DIR is not None:
            numba.config.CACHE_DIR = CACHE_DIR
        try:
            return numba.njit(**options)(f)
        finally:
            numba.config.CACHE_DIR = old
    return decorate


njit_cached = _decorator(**JIT_OPTIONS)
njit_parallel = _decorator(**PARALLEL_OPTIONS)
#: Small helpers inlined into their callers at the numba IR level (a call per tile or entry
#: costs more than the helper's work).
njit_inline = _decorator(**JIT_OPTIONS, inline="always")


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
