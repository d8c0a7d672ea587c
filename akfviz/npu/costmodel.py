"""Closed-form cost of each tile alone on one PE (akf-spec §4, §7).

:func:`unit_costs` is what the engine (:mod:`akfviz.npu._engine`) computes for a single tile
placed alone on a single PE whose reduction PE is itself, with the input vector already on
chip and every routed column firing with probability ``rho_x`` (expected counts). The
selector's performance table calibrates on it. For ``rho_x = 1`` it equals the engine
exactly (tested) as long as every event's work is at least ``inject_cycles`` (true with the
defaults, ``event_cycles = inject_cycles = 1``), so that the PE never waits for an event.

Per tile ``u`` with routed columns ``c`` (all formulas in cycles / counts):

* ``work_c = event_cycles + ceil(ev_macs_c / mac_lanes) + ev_decodes_c · decode_cycles``
* ``final_u = ceil(final_macs_u / mac_lanes)``
* ``stream_u = ceil(max(0, payload_u − sram_bytes_per_pe) / dram_bytes_per_cycle)``
* ``cycles_u = stream_u + setup_cycles + rho_x · Σ_c work_c + final_u + out_rows_u · reduce_cycles``

Energy (pJ) = Σ actions × table: MACs (fp32 or int8) + reduction adds (fp32), SRAM bytes,
DRAM bytes (the overflow), index decodes + event receives, and the PE's leakage over
``cycles_u``. A single PE has no NoC hops.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..arguments import check_real
from ..errors import InputError
from .work import TileWork

#: Energy components, in the order SimResult reports them.
COMPONENTS = ("compute", "sram", "dram", "noc", "decode_setup", "static")


def _ceil_div(a, b):
    return -(-np.asarray(a, dtype=np.int64) // int(b))


def event_work_cycles(work: TileWork, hw) -> np.ndarray:
    """Cycles a PE spends on one event of each routed column (length ``work.n_routes``).

    ``event_cycles + ceil(ev_macs / mac_lanes) + ev_decodes · decode_cycles`` (spec §7).
    """
    return (hw.event_cycles + _ceil_div(work.ev_macs, hw.mac_lanes)
            + work.ev_decodes.astype(np.int64) * hw.decode_cycles)


def final_work_cycles(work: TileWork, hw) -> np.ndarray:
    """Cycles of each tile's final phase, ``ceil(final_macs / mac_lanes)``."""
    return _ceil_div(work.final_macs, hw.mac_lanes)


def _segment_sum(values, ptr) -> np.ndarray:
    c = np.concatenate([[0], np.cumsum(np.asarray(values, dtype=np.float64))])
    return c[ptr[1:]] - c[ptr[:-1]]


def check_activation_density(rho_x) -> float:
    """``rho_x`` (the share of nonzero x_j, akf-spec §7) as a float in [0, 1]; InputError otherwise.

    The NPU model accepts 0 (no events at all); the selector's table needs ``rho_x > 0``
    (``selection.perftable.check_rho_x``). A real number only: not a bool, not text
    (``float("0.5")`` used to let ``rho_x="0.5"`` and ``rho_x=True`` through: probe)."""
    return check_real(rho_x, "rho_x (activation density)", 0.0, 1.0)


def unit_costs(work: TileWork, hw=None, rho_x: float = 1.0) -> pd.DataFrame:
    """Cycles, energy, bytes, MACs and events of each tile alone on one PE.

    Parameters
    ----------
    work : TileWork
        The tiles (any kernels).
    hw : HardwareConfig, optional
        Hardware (default ``HardwareConfig()``).
    rho_x : float
        Probability that an input ``x_j`` is nonzero (activation density, in [0, 1]).

    Returns
    -------
    pandas.DataFrame
        One row per tile (TileWork order): ``kernel, tile_index, cycles, energy_pj, bytes``
        (payload bytes), ``macs, events, decodes, sram_bytes, dram_bytes, reduce_adds`` and the
        energy per component ``e_compute, e_sram, e_dram, e_noc, e_decode_setup, e_static``.
        Expected values (floats) when ``rho_x < 1``.

    Notes
    -----
    The formulas are in the module docstring (akf-spec §7, single tile, single PE).
    """
    from .hardware import as_hardware

    hw = as_hardware(hw)
    if not isinstance(work, TileWork):
        raise InputError(f"unit_costs needs a TileWork, got {type(work).__name__}.")
    rho = check_activation_density(rho_x)
    work.validate()
    e = hw.energy
    ptr = work.col_ptr
    w_ev = event_work_cycles(work, hw)
    routes = np.diff(ptr).astype(np.float64)
    events = rho * routes
    ev_cycles = rho * _segment_sum(w_ev, ptr)
    macs = rho * _segment_sum(work.ev_macs, ptr) + work.final_macs
    decodes = rho * _segment_sum(work.ev_decodes, ptr)
    sram_bytes = rho * _segment_sum(work.ev_sram_bytes, ptr) + work.final_sram_bytes
    overflow = np.maximum(work.payload_bytes - hw.sram_bytes_per_pe, 0)
    stream = _ceil_div(overflow, hw.dram_bytes_per_cycle)
    reduce_adds = work.out_rows.astype(np.float64)
    cycles = (stream + hw.setup_cycles + ev_cycles + final_work_cycles(work, hw)
              + reduce_adds * hw.reduce_cycles)
    mac_e = np.where(work.int8, e["mac_int8"], e["mac_fp32"])
    comp = {
        "compute": macs * mac_e + reduce_adds * e["mac_fp32"],
        "sram": sram_bytes * e["sram_read"],
        "dram": overflow * e["dram"],
        "noc": np.zeros(work.n_tiles),
        "decode_setup": decodes * e["index_decode"] + events * e["event_receive"],
        "static": cycles * e["leakage"],
    }
    df = pd.DataFrame({
        "kernel": [work.kernel_names[k] for k in work.kernel_id] if work.n_tiles else [],
        "tile_index": work.tile_index,
        "cycles": cycles.astype(np.float64),
        "energy_pj": sum(comp.values()),
        "bytes": work.payload_bytes.astype(np.int64),
        "macs": macs.astype(np.float64),
        "events": events,
        "decodes": decodes,
        "sram_bytes": sram_bytes.astype(np.float64),
        "dram_bytes": overflow.astype(np.float64),
        "reduce_adds": reduce_adds,
    })
    for name in COMPONENTS:
        df[f"e_{name}"] = np.asarray(comp[name], dtype=np.float64)
    return df
