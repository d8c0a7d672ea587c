"""TileWork built straight from a matrix or a shape, for baselines, tests and benchmarks.

* :func:`csc_tilework` — every nonempty ``T × T`` tile of a CSR matrix as a CSC tile, with the
  byte conventions of :mod:`akfviz.kernels.base` (4-byte value + 1-byte row index per
  nonzero, 2-byte pointers, 1-byte routing entry per stored column; per event: ``nnz_j`` MACs,
  1 pointer decode, ``5·nnz_j + 4`` SRAM bytes). Lets the NPU be exercised without a plan.
* :func:`dense_tilework` — the Dense baseline (akf-spec §8): EVERY tile, empty ones
  included, as a DENSE tile (``h`` MACs per event, all columns routed, ``4·h·w + w`` payload
  bytes, ``h`` partial-sum rows). Built from the shape alone (no matrix entries needed).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..kernels.base import INDEX_BYTES, POINTER_BYTES, ROUTE_BYTES, VALUE_BYTES
from .work import TileWork

#: Bytes of one stored value: both builders count fp32 tiles (the byte conventions are those
#: of :mod:`akfviz.kernels.base`, imported, never re-declared).
_FP32 = VALUE_BYTES["fp32"]


def csc_tilework(A, tile: int = 32) -> TileWork:
    """Every nonempty tile of ``A`` as a CSC tile (tiles in row-major ``(bi, bj)`` order).

    Parameters
    ----------
    A : scipy sparse matrix / array
    tile : int
        Tile side ``T`` (1..256 so a local index fits one byte).
    """
    if not sp.issparse(A):
        raise InputError("csc_tilework needs a scipy.sparse matrix.")
    tile = int(tile)
    if not 1 <= tile <= 256:
        raise InputError(f"The tile side must be between 1 and 256, got {tile}.")
    C = sp.coo_array(A)
    C.sum_duplicates()
    keep = C.data != 0
    r = C.row[keep].astype(np.int64)
    c = C.col[keep].astype(np.int64)
    m, ncols = C.shape
    nbc = -(-ncols // tile)
    bi, bj = r // tile, c // tile
    tkey = bi * nbc + bj
    # routed columns: unique (tile, local col), in tile order then column
    ckey = tkey * tile + c % tile
    ucol, ccount = np.unique(ckey, return_counts=True)
    col_tile = ucol // tile
    utile, first, ncol_per_tile = np.unique(col_tile, return_index=True, return_counts=True)
    nnz_tile = np.bincount(np.searchsorted(utile, tkey), minlength=utile.size)
    rkey = np.unique(tkey * tile + r % tile)
    out_rows = np.bincount(np.searchsorted(utile, rkey // tile), minlength=utile.size)
    n = utile.size
    tbi, tbj = utile // nbc, utile % nbc
    h = np.minimum(tile, m - tbi * tile)
    w = np.minimum(tile, ncols - tbj * tile)
    col_ptr = np.concatenate([[0], np.cumsum(ncol_per_tile)]).astype(np.int64)
    z = np.zeros(n, np.int64)
    return TileWork(
        kernel_names=("CSC",), kernel_id=z.copy(), tile_index=np.arange(n, dtype=np.int64),
        bi=tbi.astype(np.int64), bj=tbj.astype(np.int64), h=h.astype(np.int64),
        w=w.astype(np.int64), col_ptr=col_ptr, col_local=(ucol % tile).astype(np.int64),
        ev_macs=ccount.astype(np.int64), ev_decodes=np.ones(ucol.size, np.int64),
        ev_sram_bytes=(ccount * (_FP32 + INDEX_BYTES) + 2 * POINTER_BYTES).astype(np.int64),
        payload_bytes=(nnz_tile * (_FP32 + INDEX_BYTES) + (ncol_per_tile + 1) * POINTER_BYTES
                       + ncol_per_tile * ROUTE_BYTES).astype(np.int64),
        out_rows=out_rows.astype(np.int64), final_macs=z.copy(), final_sram_bytes=z.copy(),
        int8=np.zeros(n, bool),
    ).validate()


def dense_tilework(shape, tile_rows: int, tile_cols: int | None = None) -> TileWork:
    """Every ``tile_rows × tile_cols`` tile of a matrix of ``shape`` as a DENSE tile.

    Parameters
    ----------
    shape : (int, int)
    tile_rows, tile_cols : int
        Tile height and width (``tile_cols`` defaults to ``tile_rows``).
    """
    m, ncols = (int(s) for s in shape)
    tr = int(tile_rows)
    tc = int(tile_cols if tile_cols is not None else tile_rows)
    if m < 1 or ncols < 1 or tr < 1 or tc < 1:
        raise InputError(f"dense_tilework needs positive shape and tile sizes, got {shape}, {tr}×{tc}.")
    nbr, nbc = -(-m // tr), -(-ncols // tc)
    bi = np.repeat(np.arange(nbr, dtype=np.int64), nbc)
    bj = np.tile(np.arange(nbc, dtype=np.int64), nbr)
    h = np.minimum(tr, m - bi * tr)
    w = np.minimum(tc, ncols - bj * tc)
    n = bi.size
    col_ptr = np.concatenate([[0], np.cumsum(w)]).astype(np.int64)
    starts = np.repeat(col_ptr[:-1], w)
    col_local = np.arange(col_ptr[-1], dtype=np.int64) - starts
    hc = np.repeat(h, w)
    z = np.zeros(n, np.int64)
    return TileWork(
        kernel_names=("DENSE",), kernel_id=z.copy(), tile_index=np.full(n, -1, np.int64),
        bi=bi, bj=bj, h=h, w=w, col_ptr=col_ptr, col_local=col_local,
        ev_macs=hc, ev_decodes=np.zeros(hc.shape[0], dtype=np.int64), ev_sram_bytes=hc * _FP32,
        payload_bytes=h * w * _FP32 + w * ROUTE_BYTES, out_rows=h.copy(),
        final_macs=z.copy(), final_sram_bytes=z.copy(), int8=np.zeros(n, bool),
    ).validate()
