"""BLOCK: nonempty b×b sub-blocks (b = 4) stored densely (akf-spec §3).

Payload: ``b²`` fp32 values per nonempty block (edge blocks zero-padded) and 2 bytes of
block coordinates, plus a routing entry per column of every band (``b`` consecutive
columns) that holds a nonempty block. Per event ``j``: ``b`` MACs per nonempty block in
band ``j // b`` (one block column times ``x_j``). Exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import (BLOCK_INDEX_BYTES, ROUTE_BYTES, VALUE_BYTES, Kernel, approx_from_mask,
                   as_index, as_tile, make_tilework, occupied_columns)

B = 4


@dataclass(frozen=True, eq=False)
class BlockPayload:
    """``coords`` (nb, 2) block row / column ascending; ``values`` (nb, b, b) zero-padded."""

    shape: tuple
    coords: np.ndarray
    values: np.ndarray


def tile_blocks(ts, ap):
    """Nonempty blocks of every tile: ``(blk_ptr, blk_r, blk_c, entry_block)``.

    Blocks are ordered by (block row, block column) within a tile; ``entry_block[k]`` is
    the block (global index into the block arrays) holding entry ``k`` of ``ap``.
    """
    n = ap.idx.shape[0]
    seg = np.repeat(np.arange(n, dtype=np.int64), np.diff(ap.ptr))
    nbc = -(-ts.w[ap.idx] // B)
    bkey = (ap.r // B) * np.repeat(nbc, np.diff(ap.ptr)) + ap.c // B
    gkey = seg * (B * 256) ** 2 + bkey  # tiles ≤ 256: bkey < (256/B)² ≤ 4096
    uniq, inv = np.unique(gkey, return_inverse=True)
    useg = uniq // (B * 256) ** 2
    ub = uniq % (B * 256) ** 2
    ubc = nbc[useg]
    blk_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(useg, minlength=n), out=blk_ptr[1:])
    return blk_ptr, ub // ubc, ub % ubc, inv.reshape(-1)


def block_bytes(nb, routed):
    """Payload (scalars or arrays): ``nb`` stored B×B blocks of fp32 values with their block
    index, a routing entry per column of a band holding a block. The one formula of
    :meth:`BlockKernel.payload_bytes` and :meth:`BlockKernel.npu_work`."""
    return nb * (B * B * VALUE_BYTES["fp32"] + BLOCK_INDEX_BYTES) + routed * ROUTE_BYTES


class BlockKernel(Kernel):
    """4×4 block-sparse storage: one 2-byte index per 16 values; exact."""

    name = "BLOCK"
    family = "BLOCK"
    lossless = True
    precision = "fp32"
    description = "Nonempty 4×4 sub-blocks stored densely with one index per block; exact."
    exec_format = "block"
    entry_format = True
    b = B

    def encode(self, tile) -> BlockPayload:
        t = as_tile(tile)
        h, w = t.shape
        coords, vals = [], []
        for br in range(-(-h // B)):
            for bc in range(-(-w // B)):
                sub = t[br * B:(br + 1) * B, bc * B:(bc + 1) * B]
                if np.any(sub != 0):
                    blk = np.zeros((B, B))
                    blk[:sub.shape[0], :sub.shape[1]] = sub
                    coords.append((br, bc))
                    vals.append(blk)
        return BlockPayload(shape=t.shape, coords=np.array(coords, np.int64).reshape(-1, 2),
                            values=np.array(vals, np.float64).reshape(-1, B, B))

    def decode(self, payload: BlockPayload) -> np.ndarray:
        h, w = payload.shape
        out = np.zeros((-(-h // B) * B, -(-w // B) * B))
        for (br, bc), blk in zip(payload.coords, payload.values):
            out[br * B:(br + 1) * B, bc * B:(bc + 1) * B] = blk
        return out[:h, :w].copy()

    def payload_bytes(self, payload: BlockPayload) -> int:
        h, w = payload.shape
        nb = payload.coords.shape[0]
        bands = np.unique(payload.coords[:, 1])
        routed = sum(min(B, w - b * B) for b in bands)
        return int(block_bytes(nb, routed))

    def approx(self, ts, idx=None):
        return approx_from_mask(ts, as_index(ts, idx))

    def npu_work(self, ts, idx=None):
        ap = self.approx(ts, idx)
        idx = ap.idx
        h, w = ts.h[idx], ts.w[idx]
        blk_ptr, blk_r, blk_c, _ = tile_blocks(ts, ap)
        nb = np.diff(blk_ptr)
        # bands (block columns) per tile, with their number of nonempty blocks
        band_ptr, band, nblk = occupied_columns(blk_ptr, blk_c, -(-w // B))
        nbands = np.diff(band_ptr)
        useg = np.repeat(np.arange(idx.shape[0], dtype=np.int64), nbands)
        width = np.minimum(B, w[useg] - band * B)  # columns of each band inside the tile
        col_ptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(useg, weights=width, minlength=idx.shape[0]).astype(np.int64),
                  out=col_ptr[1:])
        bstart = np.zeros(width.shape[0] + 1, dtype=np.int64)
        np.cumsum(width, out=bstart[1:])
        col_local = (np.repeat(band * B, width) + np.arange(bstart[-1], dtype=np.int64)
                     - np.repeat(bstart[:-1], width))
        macs = np.repeat(B * nblk, width)
        # rows covered: block rows with ≥1 block, clipped to h
        rb_ptr, rband, _ = occupied_columns(blk_ptr, blk_r, -(-h // B))
        rseg = np.repeat(np.arange(idx.shape[0], dtype=np.int64), np.diff(rb_ptr))
        rows = np.bincount(rseg, weights=np.minimum(B, h[rseg] - rband * B),
                           minlength=idx.shape[0]).astype(np.int64)
        return make_tilework(
            self.name, ts, idx, col_ptr, col_local,
            ev_macs=macs, ev_decodes=np.zeros(macs.shape[0], dtype=np.int64),
            ev_sram_bytes=macs * VALUE_BYTES["fp32"],
            payload_bytes=block_bytes(nb, np.diff(col_ptr)),
            out_rows=rows,
        )


BLOCK = BlockKernel()
