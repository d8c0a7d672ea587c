"""``exp(x)`` for ``x ≤ 0`` in straight-line arithmetic that LLVM vectorises.

numba lowers ``np.exp`` to a call of the C library's ``exp`` per element (≈ 6.6 ns here, and a call
stops a loop from being vectorised). The softmax of the fusion weights (akf-spec §5) takes
``exp(z_k − max z)`` of every unit, kernel and step, ≈ 300k calls in a selection of 144 clusters:
:func:`exp_nonpos`, inlined into the loop, computes the same values 4× faster.

Method (Cody–Waite reduction, as in the C libraries): ``x = n·ln 2 + r`` with ``n = round(x / ln 2)``
and ``|r| ≤ ln 2 / 2``, ``ln 2`` split in a high part with trailing zero bits (so ``n·LN2_HI`` is exact)
and a low part; ``e^r`` by its Taylor polynomial of degree 13 (truncation ≤ 0.347¹⁴/14! ≈ 4e-18,
below half an ulp) in Horner form; ``2^n`` built from its exponent bits. Within 1 ulp of the C
library's ``exp`` on ``[-708, 0]`` (tested on a dense grid; ≈ 90 % of the values are the same bits).
Below ``-708`` (where ``exp`` leaves the normal numbers, ``e^-708 ≈ 3e-308``) the result is 0, as is
that of ``-inf`` and NaN: a softmax weight below 1e-307 is 0 for every use here.
"""
from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.cpython.unsafe.numbers import viewer

from ._jit import njit_inline

#: Below this the result is 0 (``exp(-708)`` is the last value whose ``2^n`` is a normal number).
EXP_MIN_ARG = -708.0
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01   # ln 2 to 32 bits: n · _LN2_HI is exact for |n| < 2^21
_LN2_LO = 1.90821492927058770002e-10   # ln 2 − _LN2_HI
# 1/i! for the Taylor polynomial of e^r
_F2, _F3, _F4, _F5, _F6, _F7, _F8, _F9, _F10, _F11, _F12, _F13 = (1.0 / math.factorial(i) for i in range(2, 14))
_EXP_BIAS = np.int64(1023)
_MANT_BITS = np.int64(52)


@njit_inline
def exp_nonpos(x):
    """``e^x`` for ``x ≤ 0`` within 1 ulp of ``np.exp``; 0 below :data:`EXP_MIN_ARG`, for ``-inf``
    and for NaN (see the module docstring). Branch-free, so a loop over it vectorises."""
    y = max(x, EXP_MIN_ARG)
    n = math.floor(y * _LOG2E + 0.5)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = _F13
    p = p * r + _F12
    p = p * r + _F11
    p = p * r + _F10
    p = p * r + _F9
    p = p * r + _F8
    p = p * r + _F7
    p = p * r + _F6
    p = p * r + _F5
    p = p * r + _F4
    p = p * r + _F3
    p = p * r + _F2
    p = p * r + 1.0
    p = p * r + 1.0
    two_n = viewer((np.int64(n) + _EXP_BIAS) << _MANT_BITS, types.float64)
    return p * two_n if x >= EXP_MIN_ARG else 0.0
