"""What a simulation produced: :class:`SimResult` (raw counters; metrics derived once).

Energy (pJ) by component = Σ counted actions × the energy table (akf-spec §7):

* ``compute``      = fp32 MACs · mac_fp32 + int8 MACs · mac_int8 + reduction adds · mac_fp32
* ``sram``         = SRAM bytes read · sram_read
* ``dram``         = DRAM bytes (x in, y out, payload streams) · dram
* ``noc``          = flit-hops · noc_hop
* ``decode_setup`` = index decodes · index_decode + events received · event_receive
* ``static``       = leakage · (rows · cols) · cycles  (every PE of the chip leaks all the time)
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..arguments import check_flag, check_whole, shown
from ..errors import InputError, checked_call
from ..memory import check_memory
from .costmodel import COMPONENTS

#: Per-PE counters every SimResult carries (int64 arrays of length rows·cols).
COUNTERS = ("busy", "events", "macs", "macs_int8", "decodes", "sram_bytes", "flit_hops",
            "dram_bytes", "reduce_adds")

_KIND_NAMES = {0: "setup", 1: "compute", 2: "reduce"}

#: How a counter is named where users read it (tables, JSON): the raw ``"macs"`` counts fp32 MACs
#: only, while :attr:`SimResult.macs` is fp32 + int8, so a per-PE column named ``macs`` summed to
#: 0 beside ``simulation.macs = 163`` for an all-QUANT8 plan (held-out CLI probe).
EXPORTED = {k: ("macs_fp32" if k == "macs" else k) for k in COUNTERS}


@dataclass(eq=False)
class SimResult:
    """Counters and derived metrics of one :func:`akfviz.simulate` run.

    Attributes
    ----------
    counters : dict of str -> int64 array (rows·cols,)
        Raw per-PE counters summed over phases and iterations (see :data:`COUNTERS`).
    cycles : int
        Makespan of the whole run (all iterations, loads, barriers).
    hw : HardwareConfig
    config_hash : str
    mapping : dict
        Mapping summary (objective, improvement, iterations/s …).
    per_iteration_columns : dict of str -> int64 array (iterations,)
        The columns of :attr:`per_iteration` (the DataFrame is built on first access).
    hop_histogram : int64 array
        ``hop_histogram[d]`` = flits (events + partial sums) that travelled ``d`` hops, whole run.
    meta : dict
        Options of the run (fused, persistent, iterations, batch, rho_x, tiles, kernels, recorded…).
    intervals : dict of arrays
        Busy intervals of the first iteration (``pe, start, end, tile, kind``); empty when
        ``meta["recorded"]`` is False (``simulate(..., record=False)``).
    kernel_names : tuple of str
        TileWork kernel names.
    kernel_id : int64 array (n_tiles,)
        Kernel of each simulated tile (index into ``kernel_names``; TileWork order).

    Properties :attr:`per_iteration` (DataFrame, one row per iteration: ``iteration, cycles,
    load_cycles, engine_cycles, writeback_cycles, sync_cycles, dram_bytes, events, macs``) and
    :attr:`tile_kernels` (kernel name of each tile) are built lazily from these fields, so a
    simulation of a million tiles does not pay for a million Python strings it may never show.
    """

    counters: dict
    cycles: int
    hw: object
    config_hash: str
    mapping: dict
    per_iteration_columns: dict
    hop_histogram: np.ndarray
    meta: dict = field(default_factory=dict)
    intervals: dict = field(default_factory=dict)
    kernel_names: tuple = ()
    kernel_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    # ------------------------------------------------------------------ lazy views
    @property
    def per_iteration(self) -> pd.DataFrame:
        """One row per iteration (see the class docstring); built once, then cached."""
        df = self.__dict__.get("_per_iteration_df")
        if df is None:
            df = pd.DataFrame(self.per_iteration_columns)
            self.__dict__["_per_iteration_df"] = df
        return df

    @property
    def tile_kernels(self) -> tuple:
        """Kernel name of each simulated tile (TileWork order)."""
        tk = self.__dict__.get("_tile_kernels")
        if tk is None:
            names = np.asarray(self.kernel_names, dtype=object)
            tk = tuple(names[self.kernel_id].tolist()) if self.kernel_id.size else ()
            self.__dict__["_tile_kernels"] = tk
        return tk

    # ------------------------------------------------------------------ totals
    @checked_call
    def total(self, name: str) -> int:
        """Sum over PEs of the counter ``name``."""
        if not isinstance(name, str) or name not in self.counters:
            raise InputError(f"Unknown counter {shown(name)}; known: {', '.join(self.counters)}.")
        return int(self.counters[name].sum())

    @property
    def events(self) -> int:
        """Events delivered to tiles (synaptic events), whole run."""
        return self.total("events")

    @property
    def macs(self) -> int:
        """MACs of the tiles (fp32 + int8), whole run; reduction adds not included."""
        return self.total("macs") + self.total("macs_int8")

    @property
    def dram_bytes(self) -> int:
        """Bytes moved to/from DRAM, whole run."""
        return self.total("dram_bytes")

    @property
    def seconds(self) -> float:
        """``cycles / clock_hz``."""
        return self.cycles / self.hw.clock_hz

    @property
    def utilization(self) -> np.ndarray:
        """``busy / cycles`` per PE as a ``(rows, cols)`` float array in [0, 1]."""
        busy = self.counters["busy"].astype(np.float64)
        u = busy / self.cycles if self.cycles > 0 else np.zeros_like(busy)
        return u.reshape(self.hw.rows, self.hw.cols)

    @property
    def energy_pj(self) -> dict:
        """Energy by component (pJ): compute, sram, dram, noc, decode_setup, static."""
        e = self.hw.energy
        t = self.total
        return {
            "compute": t("macs") * e["mac_fp32"] + t("macs_int8") * e["mac_int8"]
            + t("reduce_adds") * e["mac_fp32"],
            "sram": t("sram_bytes") * e["sram_read"],
            "dram": t("dram_bytes") * e["dram"],
            "noc": t("flit_hops") * e["noc_hop"],
            "decode_setup": t("decodes") * e["index_decode"] + t("events") * e["event_receive"],
            "static": e["leakage"] * self.hw.n_pes * self.cycles,
        }

    @property
    def energy_total_pj(self) -> float:
        """Sum of :attr:`energy_pj`."""
        return float(sum(self.energy_pj.values()))

    @property
    def energy_breakdown(self) -> pd.DataFrame:
        """Energy by component with shares (for charts)."""
        e = self.energy_pj
        tot = sum(e.values())
        return pd.DataFrame({"component": list(e), "energy_pj": list(e.values()),
                             "share": [v / tot if tot else 0.0 for v in e.values()]})

    @checked_call
    def pe_frame(self) -> pd.DataFrame:
        """One row per PE: ``pe, row, col``, every counter (the fp32 MACs as ``macs_fp32``, beside
        ``macs_int8``: :data:`EXPORTED`), ``idle`` and ``utilization``."""
        P = self.hw.n_pes
        pe = np.arange(P)
        cols = {"pe": pe, "row": pe // self.hw.cols, "col": pe % self.hw.cols}
        cols.update((EXPORTED[k], np.asarray(self.counters[k])) for k in COUNTERS)
        cols["idle"] = self.cycles - cols["busy"]
        cols["utilization"] = self.utilization.ravel()
        return pd.DataFrame(cols)  # one construction (a column insert each cost 6 ms in all)

    @checked_call
    def busiest_pes(self, k: int = 200) -> pd.DataFrame:
        """The rows of :meth:`pe_frame` of the ``k`` busiest PEs that did any work, busiest first
        (ties by PE id), built for those PEs only: the NPU page shows them on every rerun, and
        the whole frame of a 256×256 grid took 7–44 ms each time."""
        k = check_whole(k, "k (how many PEs)", 0)
        busy = np.asarray(self.counters["busy"])
        pe = np.flatnonzero(busy > 0)
        pe = pe[np.lexsort((pe, -busy[pe]))][:k]
        cols = {"pe": pe, "row": pe // self.hw.cols, "col": pe % self.hw.cols}
        cols.update((EXPORTED[c], np.asarray(self.counters[c])[pe]) for c in COUNTERS)
        cols["idle"] = self.cycles - cols["busy"]
        cols["utilization"] = self.utilization.ravel()[pe]
        return pd.DataFrame(cols)

    # ------------------------------------------------------------------ timeline
    @checked_call
    def timeline(self, pes=None, max_intervals: int = 200_000) -> pd.DataFrame:
        """Busy intervals of the first iteration: ``pe, start, end, tile, kernel, kind``.

        Parameters
        ----------
        pes : int or iterable of int, optional
            PE ids (``row * cols + col``); default: the 8 busiest PEs.
        max_intervals : int
            Refuse to build a larger frame (InputError).
        """
        max_intervals = check_whole(max_intervals, "max_intervals", 0)
        iv = self.intervals
        if not iv:
            raise InputError("This result was simulated without recording intervals (record=False).")
        if pes is None:
            pes = np.argsort(-self.counters["busy"], kind="stable")[:8]
        else:
            pes = _pe_ids(pes, self.hw.n_pes)
        sel = np.isin(iv["pe"], pes)
        if sel.sum() > max_intervals:
            raise InputError(f"{int(sel.sum())} intervals for these PEs exceed max_intervals={max_intervals}.")
        tile = iv["tile"][sel]
        names = np.asarray(tuple(self.kernel_names) + ("",), dtype=object)
        kid = np.append(self.kernel_id, len(self.kernel_names))
        kern = names[kid[np.where(tile >= 0, tile, self.kernel_id.size)]]
        return pd.DataFrame({
            "pe": iv["pe"][sel], "start": iv["start"][sel], "end": iv["end"][sel], "tile": tile,
            "kernel": kern, "kind": [_KIND_NAMES[int(k)] for k in iv["kind"][sel]],
        }).sort_values(["pe", "start"], kind="stable").reset_index(drop=True)

    # ------------------------------------------------------------------ export
    @checked_call
    def to_dict(self, arrays: bool = False, timings: bool = False) -> dict:
        """JSON-able summary, with the hardware it ran on (``hardware``: :meth:`HardwareConfig.to_plain`,
        whose :meth:`~HardwareConfig.config_hash` is ``config_hash``); ``arrays=True`` adds the per-PE
        counters and utilisation as lists (refused when they would not fit in memory as Python
        lists). ``timings=True`` keeps the annealer's wall-clock ``seconds`` and ``iterations_per_s``
        in ``mapping``; without it the same simulation gives the same dict in any process (``seconds``
        at the top level is model time, ``cycles / clock``)."""
        check_flag(arrays, "arrays")
        check_flag(timings, "timings")
        u = self.utilization
        if arrays:
            # a Python float or int in a list costs about 32 bytes: a 4096 × 4096 grid's counters
            # came to ~150M objects (probe)
            n_values = u.size * (1 + len(self.counters))
            check_memory(48 * n_values, "The per-PE arrays of this simulation as Python lists",
                         "Use res.counters and res.utilization (numpy arrays) instead of arrays=True.")
        d = {
            "cycles": int(self.cycles), "seconds": float(self.seconds),
            "energy_pj": {k: float(v) for k, v in self.energy_pj.items()},
            "energy_total_pj": self.energy_total_pj,
            "events": self.events, "macs": self.macs, "dram_bytes": self.dram_bytes,
            "totals": {EXPORTED[k]: self.total(k) for k in COUNTERS},  # macs = macs_fp32 + macs_int8
            "utilization_mean": float(u.mean()), "utilization_max": float(u.max()),
            "pes_busy": int((self.counters["busy"] > 0).sum()),
            "config_hash": self.config_hash, "hardware_preset": self.hw.preset,
            # every setting, energy table included: HardwareConfig.from_plain(d["hardware"]) rebuilds it
            "hardware": self.hw.to_plain(),
            "mapping": {k: (float(v) if isinstance(v, (float, np.floating)) else
                            int(v) if isinstance(v, (int, np.integer)) else v)
                        for k, v in self.mapping.items()
                        if timings or k not in ("seconds", "iterations_per_s")},
            "per_iteration": self.per_iteration.to_dict("records"),
            "hop_histogram": [int(v) for v in self.hop_histogram],
            "meta": {k: (v if not isinstance(v, np.generic) else v.item()) for k, v in self.meta.items()},
        }
        d["per_iteration"] = [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
                              for r in d["per_iteration"]]
        if arrays:
            d["counters"] = {EXPORTED.get(k, k): v.tolist() for k, v in self.counters.items()}
            d["utilization"] = u.tolist()
        return d

    def __repr__(self) -> str:
        return (f"SimResult(cycles={self.cycles}, energy_total_pj={self.energy_total_pj:.4g}, "
                f"events={self.events}, macs={self.macs}, dram_bytes={self.dram_bytes}, "
                f"fused={self.meta.get('fused')}, persistent={self.meta.get('persistent')}, "
                f"iterations={self.meta.get('iterations')})")


def _pe_ids(pes, n_pes: int) -> np.ndarray:
    """``pes`` (one id or an iterable of ids) as int64 PE ids in ``0 … n_pes − 1``; InputError
    for anything else (text, NaN, fractions, ids beyond the grid)."""
    if isinstance(pes, (str, bytes)):
        raise InputError(f"pes must be PE ids (whole numbers), got {shown(pes)}.")
    if isinstance(pes, np.ndarray) and pes.dtype.kind in "iu" and pes.ndim == 1:
        ids = pes.astype(np.int64) if pes.size == 0 or int(pes.max()) < 2**63 else None
    else:
        try:
            items = [pes] if isinstance(pes, (numbers.Number, np.generic)) else list(pes)
        except TypeError:
            raise InputError(f"pes must be a PE id or a list of PE ids, got {shown(pes)}.") from None
        ids = np.array([check_whole(v, "Each PE id", 0, n_pes - 1) for v in items], dtype=np.int64)
    if ids is None or (ids.size and (ids.min() < 0 or ids.max() >= n_pes)):
        raise InputError(f"PE ids must be in [0, {n_pes - 1}], got {shown(pes)}.")
    return ids
