"""QUANT8: int8 values with a per-tile symmetric scale (akf-spec §3).

``s = max|v| / 127``; every value is stored as ``q = clip(rint(v / s), −127, 127)`` and
read back as ``q·s``. ``QUANT8`` stores the codes over CSC (entries whose code is 0 are
dropped), ``QUANT8D`` over DENSE. Same per-event work as the base format, int8 MACs
(1-byte values, one fp32 scale per tile). Lossy (exact only when every value is a
multiple of ``s``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._jit import njit_inline, njit_parallel, serial_twin
from .base import ROUTE_BYTES, SCALE_BYTES, VALUE_BYTES, Kernel, TileApprox, as_index, as_tile
from .dense import dense_layout_bytes, dense_layout_work
from .csc import CSCPayload, csc_bytes, csc_decode, csc_encode, csc_work
from .error_pass import pass_bounds, run_error_pass

QMAX = 127


#: The smallest positive float64 (a subnormal): the least scale, see :func:`quant_scale`.
TINY = 5e-324


def quant_scale(maxabs):
    """Per-tile scale ``max(max|v| / 127, 5e-324)`` (1.0 for an all-zero tile, whose codes are all 0).

    The floor matters only on tiles of tiny subnormals (``max|v| ≤ 63·5e-324``), where ``max|v| / 127``
    rounds to 0: their values are then whole multiples of the smallest subnormal, stored exactly with
    codes ≤ 63 (a held-out probe crashed ``select`` with a division by zero on such a tile)."""
    maxabs = np.asarray(maxabs, dtype=np.float64)
    return np.where(maxabs > 0, np.maximum(maxabs / QMAX, TINY), 1.0)


def quant_codes(v, scale):
    """``clip(rint(v / scale), −127, 127)`` as int8."""
    return np.clip(np.rint(v / scale), -QMAX, QMAX).astype(np.int8)


@njit_inline
def quant_value(v, sc):
    """``v̂ = clip(rint(v / s), −127, 127)·s`` and the code ``q`` (as float64)."""
    q = np.rint(v / sc)
    if q > 127.0:
        q = 127.0
    elif q < -127.0:
        q = -127.0
    return q * sc, q


@njit_inline
def tile_scale(tv, s0, s1):
    """``s = max(max|v| / 127, 5e-324)`` over ``tv[s0:s1]`` (1.0 for an all-zero tile; see
    :func:`quant_scale`)."""
    mx = 0.0
    for p in range(s0, s1):
        a = abs(tv[p])
        if a > mx:
            mx = a
    return max(mx / 127.0, 5e-324) if mx > 0.0 else 1.0


@njit_inline
def tile_quant(tv, s0, s1):
    """Scale ``s``, error ``E = Σ (v − v̂)²`` (a dropped entry contributes ``v²``) and number
    of kept entries (``v̂ ≠ 0``) of the tile whose values are ``tv[s0:s1]``."""
    sc = tile_scale(tv, s0, s1)
    e = 0.0
    m = 0
    for p in range(s0, s1):
        v = tv[p]
        vh, q = quant_value(v, sc)
        if vh != 0.0:
            m += 1
            d = v - vh
            e += d * d
        else:
            e += v * v
    return sc, e, m


@njit_parallel
def _quant_count(tptr, tv, idx, bounds, kept, err, scale):
    """Pass 1 of :func:`quant_approx`, ``prange`` over chunks ``bounds`` of ``idx``: per
    tile the scale ``s = max|v| / 127``, the number of kept entries and the error
    (:func:`tile_quant`). Each tile is computed on its own, so the result does not depend
    on the chunking."""
    for ch in numba.prange(bounds.shape[0] - 1):
        for u in range(bounds[ch], bounds[ch + 1]):
            t = idx[u]
            sc, e, m = tile_quant(tv, tptr[t], tptr[t + 1])
            scale[u] = sc
            err[u] = e
            kept[u] = m


@njit_parallel
def _quant_fill(tptr, tr, tc, tv, idx, bounds, kptr, scale, r_out, c_out, v_out, q_out):
    """Pass 2 of :func:`quant_approx`: the kept entries of tile ``u`` at
    ``kptr[u]:kptr[u+1]`` (same arithmetic as pass 1)."""
    for ch in numba.prange(bounds.shape[0] - 1):
        for u in range(bounds[ch], bounds[ch + 1]):
            t = idx[u]
            sc = scale[u]
            m = kptr[u]
            for p in range(tptr[t], tptr[t + 1]):
                vh, q = quant_value(tv[p], sc)
                if vh != 0.0:
                    r_out[m] = tr[p]
                    c_out[m] = tc[p]
                    v_out[m] = vh
                    q_out[m] = np.int8(q)
                    m += 1


@njit_parallel
def _quant_error(tptr, tr, tc, tv, idx, bounds, err):
    """``E`` of int8 quantisation (:func:`tile_quant`) for the tiles ``idx``, without the codes
    (:mod:`.error_pass`; QUANT8 and QUANT8D have the same ``Â``)."""
    for ch in numba.prange(bounds.shape[0] - 1):
        for u in range(bounds[ch], bounds[ch + 1]):
            t = idx[u]
            err[u] = tile_quant(tv, tptr[t], tptr[t + 1])[1]


_quant_count_serial = serial_twin(_quant_count)
_quant_error_serial = serial_twin(_quant_error)
_quant_fill_serial = serial_twin(_quant_fill)


def quant_approx(ts, idx):
    """TileApprox of int8 quantisation; ``extra`` holds ``q`` (int8 codes of kept entries)
    and ``scale`` (per tile).

    Two numba passes over chunks of tiles (:func:`_quant_count`: scale, kept count and
    error per tile; :func:`_quant_fill`: the kept entries at their prefix-sum offsets), on
    the worker threads for large batches on free cores; every tile is computed on its own,
    so the result is the same for any thread count. Arithmetic as
    :func:`quant_scale` / :func:`quant_codes`: ``s = max|v| / 127``,
    ``q = clip(rint(v / s), −127, 127)``, ``v̂ = q·s``; entries with ``q = 0`` are dropped.
    """
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    n = idx.shape[0]
    err = np.empty(n, dtype=np.float64)
    scale = np.empty(n, dtype=np.float64)
    kptr = np.zeros(n + 1, dtype=np.int64)
    from ..execute import threads  # (execute imports kernels: import here)
    par = bool(n) and threads.pack_parallel(n + int(ts.ptr[idx[-1] + 1] - ts.ptr[idx[0]]))
    if n:
        bounds = pass_bounds(n)
        (_quant_count if par else _quant_count_serial)(ts.ptr, ts.v, idx, bounds, kptr[1:], err, scale)
        np.cumsum(kptr[1:], out=kptr[1:])  # kept counts → their prefix sums
    m = int(kptr[-1])
    r = np.empty(m, dtype=np.int64)
    c = np.empty(m, dtype=np.int64)
    v = np.empty(m, dtype=np.float64)
    q = np.empty(m, dtype=np.int8)
    if m:
        (_quant_fill if par else _quant_fill_serial)(ts.ptr, ts.r, ts.c, ts.v, idx, bounds, kptr, scale,
                                                     r, c, v, q)
    return TileApprox(idx=idx, ptr=kptr, r=r, c=c, v=v, err=err, extra={"scale": scale, "q": q})


def quant_error(ts, idx=None):
    """``E`` of int8 quantisation per tile of ``idx`` (QUANT8 and QUANT8D alike)."""
    return run_error_pass(_quant_error, _quant_error_serial, ts, as_index(ts, idx))


class Quant8Kernel(Kernel):
    """int8 values over CSC, per-tile symmetric scale."""

    name = "QUANT8"
    family = "QUANT8"
    lossless = False
    precision = "int8"
    description = "int8 codes with one scale per tile (max|v|/127), stored as CSC; int8 MACs."
    exec_format = "csc_i8"
    entry_format = True

    def encode(self, tile) -> CSCPayload:
        t = as_tile(tile)
        s = float(quant_scale(np.abs(t).max()))
        q = quant_codes(t, s)
        return csc_encode(t, values_of=q, scale=s)

    def decode(self, payload: CSCPayload) -> np.ndarray:
        return csc_decode(payload)

    def payload_bytes(self, payload: CSCPayload) -> int:
        return csc_bytes(payload, "int8")

    def approx(self, ts, idx=None):
        return quant_approx(ts, as_index(ts, idx))

    def batch_error(self, ts, idx=None):
        """``E`` per tile of ``idx`` without the codes (:func:`_quant_error`), equal bit for bit
        to ``approx(ts, idx).err``."""
        return quant_error(ts, idx)

    def npu_work(self, ts, idx=None):
        return csc_work(self.name, ts, self.approx(ts, idx), "int8")


@dataclass(frozen=True, eq=False)
class DenseQ8Payload:
    """int8 codes ``(h, w)`` and the scale."""

    codes: np.ndarray
    scale: float


class Quant8DenseKernel(Kernel):
    """int8 values over DENSE, per-tile symmetric scale."""

    name = "QUANT8D"
    family = "QUANT8"
    lossless = False
    precision = "int8"
    description = "int8 codes with one scale per tile, every cell stored (dense); int8 MACs."
    exec_format = "dense_i8"
    entry_format = False

    def encode(self, tile) -> DenseQ8Payload:
        t = as_tile(tile)
        s = float(quant_scale(np.abs(t).max()))
        return DenseQ8Payload(codes=quant_codes(t, s), scale=s)

    def decode(self, payload: DenseQ8Payload) -> np.ndarray:
        return payload.codes.astype(np.float64) * payload.scale

    def payload_bytes(self, payload: DenseQ8Payload) -> int:
        h, w = payload.codes.shape
        return int(dense_layout_bytes(h, w, "int8", SCALE_BYTES))

    def approx(self, ts, idx=None):
        return quant_approx(ts, as_index(ts, idx))

    def batch_error(self, ts, idx=None):
        """``E`` per tile of ``idx`` without the codes (:func:`_quant_error`), equal bit for bit
        to ``approx(ts, idx).err``."""
        return quant_error(ts, idx)

    def npu_work(self, ts, idx=None):
        return dense_layout_work(self.name, ts, as_index(ts, idx), "int8", SCALE_BYTES)


QUANT8 = Quant8Kernel()
QUANT8D = Quant8DenseKernel()
