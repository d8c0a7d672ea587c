"""Values remembered per analysis: one dict per :class:`~akfviz.analysis.pattern.PatternAnalysis`,
dropped with it (weak keys), behind one lock. Used for what depends only on the analysis and is
shared by every selection on it: the exact prices of its edge tiles (:mod:`.edgecost`) and the
per-tile kernel errors of the budget modes (:mod:`.member_errors`)."""
from __future__ import annotations

import threading
import weakref


class AnalysisMemo:
    """``memo.of(pa)``: the dict kept for ``pa`` (made empty on first use); ``pa in memo``,
    ``len(memo)``. ``memo.lock`` guards changes to those dicts made from several threads (the app
    serves sessions in threads)."""

    def __init__(self):
        self._store: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self.lock = threading.Lock()

    def of(self, pa) -> dict:
        with self.lock:
            got = self._store.get(pa)
            if got is None:
                got = self._store[pa] = {}
            return got

    def __contains__(self, pa) -> bool:
        return pa in self._store

    def __len__(self) -> int:
        return len(self._store)
