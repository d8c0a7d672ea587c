"""What each placed tile does on its PE: the contract between kernels and the NPU model.

A kernel turns the tiles it was chosen for into a :class:`TileWork` (structure of arrays,
one entry per tile, plus one entry per *routed column* of each tile). The NPU engine, the
cost model and the performance table read nothing else about a kernel (akf-spec §3, §7).

Event semantics (akf-spec §7): an input event for global column ``j`` is delivered to every
tile of column block ``j // T`` whose routed columns contain ``j % T``. When it arrives the
PE performs ``ev_macs`` multiply-accumulates, ``ev_decodes`` index/bitmap word decodes and
reads ``ev_sram_bytes`` bytes of payload. After its last event a tile performs
``final_macs`` (e.g. LOWRANK's ``r*h`` tail) and sends ``out_rows`` partial-sum flits to
its row block's reduction PE.
"""
from __future__ import annotations

from dataclasses import dataclass

import weakref

import numpy as np

#: TileWork objects whose :meth:`TileWork.validate` passed (frozen objects: checked once).
_VALIDATED: "weakref.WeakSet" = weakref.WeakSet()


@dataclass(frozen=True, eq=False)
class TileWork:
    """Per-tile NPU work, structure of arrays.

    Attributes
    ----------
    kernel_names : tuple of str
        Names indexed by ``kernel_id``.
    kernel_id : int64 (n,)
        Kernel of each tile (index into ``kernel_names``).
    tile_index : int64 (n,)
        Row of the tile in ``PatternAnalysis.tiles`` (-1 for tiles that are not there,
        e.g. the empty tiles of the Dense baseline).
    bi, bj : int64 (n,)
        Tile row block and column block.
    h, w : int64 (n,)
        Tile height and width (edge tiles may be smaller than T).
    col_ptr : int64 (n+1,)
        Routed columns of tile ``u`` are ``col_local[col_ptr[u]:col_ptr[u+1]]``.
    col_local : int64 (m,)
        Local column index in ``[0, w)``, ascending within a tile.
    ev_macs, ev_decodes, ev_sram_bytes : int64 (m,)
        Work done when the event of that column arrives.
    payload_bytes : int64 (n,)
        Bytes the tile keeps in PE SRAM (values, indices, pointers and routing entries).
    out_rows : int64 (n,)
        Nonzero output rows: partial-sum flits sent to the reduction PE.
    final_macs, final_sram_bytes : int64 (n,)
        Work done once after the last event.
    int8 : bool (n,)
        True when the tile's MACs run at int8 precision (QUANT8).
    """

    kernel_names: tuple
    kernel_id: np.ndarray
    tile_index: np.ndarray
    bi: np.ndarray
    bj: np.ndarray
    h: np.ndarray
    w: np.ndarray
    col_ptr: np.ndarray
    col_local: np.ndarray
    ev_macs: np.ndarray
    ev_decodes: np.ndarray
    ev_sram_bytes: np.ndarray
    payload_bytes: np.ndarray
    out_rows: np.ndarray
    final_macs: np.ndarray
    final_sram_bytes: np.ndarray
    int8: np.ndarray

    _PER_TILE = ("kernel_id", "tile_index", "bi", "bj", "h", "w", "payload_bytes",
                 "out_rows", "final_macs", "final_sram_bytes", "int8")
    _PER_COLUMN = ("col_local", "ev_macs", "ev_decodes", "ev_sram_bytes")

    @property
    def n_tiles(self) -> int:
        return int(self.kernel_id.shape[0])

    @property
    def n_routes(self) -> int:
        return int(self.col_local.shape[0])

    def tile_side(self) -> int | None:
        """The tile side T told by the tiles alone, or None when they cannot tell it.

        Interior tiles are T × T and only the last block row / column is narrower, so with two
        or more tiles the widest one is T. A single tile away from block (0, 0) may be a narrower
        edge tile of a larger T, and where it starts depends on T: None (and None for no tiles).
        """
        n = self.n_tiles
        if n == 0 or (n == 1 and (int(self.bi[0]) or int(self.bj[0]))):
            return None
        return int(max(self.h.max(), self.w.max()))

    def validate(self) -> "TileWork":
        """Check shapes, dtypes and invariants; raise ``ValueError`` when broken.

        The check runs once per object (the object is frozen; a passed check is remembered).
        """
        if self in _VALIDATED:
            return self
        n = self.n_tiles
        for name in self._PER_TILE:
            a = getattr(self, name)
            if a.shape != (n,):
                raise ValueError(f"TileWork.{name} has shape {a.shape}, expected ({n},)")
        if self.col_ptr.shape != (n + 1,) or self.col_ptr[0] != 0:
            raise ValueError("TileWork.col_ptr must have n+1 entries starting at 0")
        m = int(self.col_ptr[-1])
        for name in self._PER_COLUMN:
            if getattr(self, name).shape != (m,):
                raise ValueError(f"TileWork.{name} must have col_ptr[-1]={m} entries")
        if np.any(np.diff(self.col_ptr) < 0):
            raise ValueError("TileWork.col_ptr must be non-decreasing")
        for name in self._PER_COLUMN[1:] + ("payload_bytes", "out_rows", "final_macs", "final_sram_bytes"):
            if np.any(getattr(self, name) < 0):
                raise ValueError(f"TileWork.{name} has negative entries")
        _VALIDATED.add(self)
        return self

    @staticmethod
    def concat(parts: "list[TileWork]") -> "TileWork":
        """Concatenate several TileWork objects (kernel ids are re-mapped to a union of names)."""
        parts = [p for p in parts if p is not None]
        names: list = []
        for p in parts:
            for k in p.kernel_names:
                if k not in names:
                    names.append(k)
        if not parts:
            z = np.zeros(0, np.int64)
            return TileWork(tuple(), z, z, z, z, z, z, np.zeros(1, np.int64), z, z, z, z,
                            z, z, z, z, np.zeros(0, bool))
        remapped = []
        for p in parts:
            lut = np.array([names.index(k) for k in p.kernel_names] or [0], dtype=np.int64)
            remapped.append(lut[p.kernel_id] if p.n_tiles else p.kernel_id)
        ptrs, offset = [np.zeros(1, np.int64)], 0
        for p in parts:
            ptrs.append(p.col_ptr[1:] + offset)
            offset += int(p.col_ptr[-1])
        cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
        return TileWork(
            kernel_names=tuple(names),
            kernel_id=np.concatenate(remapped).astype(np.int64),
            tile_index=cat("tile_index"), bi=cat("bi"), bj=cat("bj"), h=cat("h"), w=cat("w"),
            col_ptr=np.concatenate(ptrs), col_local=cat("col_local"), ev_macs=cat("ev_macs"),
            ev_decodes=cat("ev_decodes"), ev_sram_bytes=cat("ev_sram_bytes"),
            payload_bytes=cat("payload_bytes"), out_rows=cat("out_rows"),
            final_macs=cat("final_macs"), final_sram_bytes=cat("final_sram_bytes"),
            int8=cat("int8").astype(bool),
        )
