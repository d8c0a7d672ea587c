"""Objects that in-process caches hand out are shared: their arrays are made read-only.

A placement (:func:`akfviz.npu.simulate.plan_mapping`) or a performance table
(:func:`akfviz.selection.perftable.performance_table`) returned from a cache is the very object
later calls reuse. Were its arrays writable, editing one in a notebook (``mp.pe[:] = 0``) would
silently change every later ``simulate`` or ``select`` with the same inputs — results would
depend on what ran before. Read-only arrays turn that into an immediate ``ValueError:
assignment destination is read-only``; ``arr.copy()`` gives a private, writable copy.
"""
from __future__ import annotations

import numpy as np


def read_only(obj):
    """Mark every numpy array attribute of ``obj`` read-only (in place) and return ``obj``.

    Arrays held one level down in a dict or tuple attribute are included.
    """
    for value in vars(obj).values():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, np.ndarray):
                item.setflags(write=False)
    return obj
