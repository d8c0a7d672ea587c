"""QUANT8: int8 values with a per-tile symmetric scale (akf-spec §3).

``s = max|v| / 127``; every value is stored as ``q = clip(rint(v / s), −127, 127)`` and
read back as ``q·s``. ``QUANT8`` stores the codes over CSC (entries whose code is 0 are
dropped), ``QUANT8D`` over DENSE. Same per-event work as the base format, int8 MACs
(1-byte values, one fp32 scale per tile). Lossy (exact only when every value is a
multiple of ``s``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import njit_cached
from .base import ROUTE_BYTES, SCALE_BYTES, VALUE_BYTES, Kernel, TileApprox, as_index, as_tile
from .dense import dense_layout_work
from .csc import CSCPayload, csc_bytes, csc_decode, csc_encode, csc_work

QMAX = 127


def quant_scale(maxabs):
    """Per-tile scale ``max|v| / 127`` (1.0 for an all-zero tile, whose codes are all 0)."""
    maxabs = np.asarray(maxabs, dtype=np.float64)
    return np.where(maxabs > 0, maxabs / QMAX, 1.0)


def quant_codes(v, scale):
    """``clip(rint(v / scale), −127, 127)`` as int8."""
    return np.clip(np.rint(v / scale), -QMAX, QMAX).astype(np.int8)


@njit_cached
def _quant_pass(tptr, tr, tc, tv, idx, kptr, r_out, c_out, v_out, q_out, err, scale):
    """One pass over the tiles ``idx``: scale, codes, kept entries and error per tile.

    Same arithmetic as :func:`quant_scale` / :func:`quant_codes`: ``s = max|v| / 127``,
    ``q = clip(rint(v / s), −127, 127)``, ``v̂ = q·s``; entries with ``q = 0`` are dropped;
    ``E = Σ (v − v̂)²`` over the tile's entries (a dropped entry contributes ``v²``).
    Returns the number of kept entries.
    """
    m = 0
    kptr[0] = 0
    for u in range(idx.shape[0]):
        t = idx[u]
        s0 = tptr[t]
        s1 = tptr[t + 1]
        mx = 0.0
        for p in range(s0, s1):
            a = abs(tv[p])
            if a > mx:
                mx = a
        sc = mx / 127.0 if mx > 0.0 else 1.0
        scale[u] = sc
        e = 0.0
        for p in range(s0, s1):
            v = tv[p]
            q = np.rint(v / sc)
            if q > 127.0:
                q = 127.0
            elif q < -127.0:
                q = -127.0
            vh = q * sc
            if vh != 0.0:
                r_out[m] = tr[p]
                c_out[m] = tc[p]
                v_out[m] = vh
                q_out[m] = np.int8(q)
                m += 1
                d = v - vh
                e += d * d
            else:
                e += v * v
        err[u] = e
        kptr[u + 1] = m
    return m


def quant_approx(ts, idx):
    """TileApprox of int8 quantisation; ``extra`` holds ``q`` (int8 codes of kept entries)
    and ``scale`` (per tile). One numba pass (:func:`_quant_pass`)."""
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    n = idx.shape[0]
    total = int((ts.ptr[idx + 1] - ts.ptr[idx]).sum()) if n else 0
    kptr = np.zeros(n + 1, dtype=np.int64)
    r = np.empty(total, dtype=np.int64)
    c = np.empty(total, dtype=np.int64)
    v = np.empty(total, dtype=np.float64)
    q = np.empty(total, dtype=np.int8)
    err = np.zeros(n, dtype=np.float64)
    scale = np.ones(n, dtype=np.float64)
    m = _quant_pass(ts.ptr, ts.r, ts.c, ts.v, idx, kptr, r, c, v, q, err, scale) if n else 0
    if m < total:
        r, c, v, q = r[:m].copy(), c[:m].copy(), v[:m].copy(), q[:m].copy()
    return TileApprox(idx=idx, ptr=kptr, r=r, c=c, v=v, err=err, extra={"scale": scale, "q": q})


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
        return int(h * w * VALUE_BYTES["int8"] + SCALE_BYTES + w * ROUTE_BYTES)

    def approx(self, ts, idx=None):
        return quant_approx(ts, as_index(ts, idx))

    def npu_work(self, ts, idx=None):
        return dense_layout_work(self.name, ts, as_index(ts, idx), "int8", SCALE_BYTES)


QUANT8 = Quant8Kernel()
QUANT8D = Quant8DenseKernel()
