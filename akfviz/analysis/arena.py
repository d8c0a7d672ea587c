"""One allocation for many large output arrays (used by the analysis passes).

Fresh memory costs page faults; for the ≈ 170 MB that :func:`akfviz.analyze` writes on a
hyper-sparse 1M-nonzero matrix they are a large share of the run time. See :class:`Arena`.
"""
from __future__ import annotations

import numpy as np


class Arena:
    """One allocation carved into several output arrays (8-byte items, offsets multiple of 64 bytes).

    Why: the outputs of a hyper-sparse matrix are ≈ 170 MB in 14 arrays of a few MB each.
    numpy asks the kernel for transparent huge pages only on the 2 MB-aligned interior of
    each allocation, so separate arrays fault a large share of their pages in 4 kB steps;
    one allocation is almost entirely huge pages (measured: 25 ms instead of 35 ms to
    first-touch 170 MB). The arrays are ordinary views; pickling copies each one alone.
    """

    ALIGN = 8  # items of 8 bytes: 64-byte alignment

    def __init__(self, sizes):
        total = sum(-(-int(k) // self.ALIGN) * self.ALIGN for k in sizes)
        self.buf = np.empty(max(total, 1), dtype=np.int64)
        self.off = 0

    def take(self, k: int, dtype) -> np.ndarray:
        a = self.buf[self.off:self.off + k].view(dtype)
        self.off += -(-int(k) // self.ALIGN) * self.ALIGN
        return a
