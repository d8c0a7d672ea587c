"""The event-driven NPU engine: one phase of event delivery, processing and reduction (spec §7).

Numba kernels only (arrays and scalars in, buffers filled); :mod:`akfviz.npu.simulate`
validates, maps, schedules phases and iterations, and wraps the counters in a SimResult.
The model is stated in full in ``docs/model.md``; in short, for one phase:

1. **Injection** (:func:`injection_times`). Input events are the nonzero ``x[j, b]`` whose
   column ``j`` is routed by at least one tile of the phase. Each column block ``bj`` has a
   source PE ``src[bj]``; every source injects its events one per ``inject_cycles`` cycles,
   in order of batch column ``b`` then column ``j``, starting at phase time 0.
2. **Delivery** (unicast accounting of a multicast). The event reaches every tile of its column
   block that routes its local column, at ``injection + hop_latency · manhattan(src, pe)``;
   it costs ``manhattan(src, pe)`` flit-hops, charged to the receiving PE.
3. **Processing.** A PE first does the setup of all its tiles (``setup_cycles`` each, from its
   ``ready`` time, i.e. after its DRAM stream), runs the final phase of tiles that receive no
   event, then serves its deliveries in arrival order (ties: tile order, then column, then
   batch column): ``t = max(t, arrival) + work``. After a tile's last delivery it runs the
   tile's final phase (``ceil(final_macs / mac_lanes)`` cycles).
4. **Reduction.** A finished tile sends a train of ``out_rows`` partial-sum flits (one per
   cycle) to its row block's reduction PE, arriving ``hop_latency · distance`` later. A
   reduction PE serves whole trains in order of first-flit arrival, after its own tile work:
   ``t = max(t, arrival) + out_rows · reduce_cycles``.
5. **Makespan** = the latest PE end time (tile work or reduction).
"""
from __future__ import annotations

import numpy as np

from .._jit import njit_cached

#: Interval kinds recorded for the timeline.
KIND_SETUP, KIND_COMPUTE, KIND_REDUCE = 0, 1, 2


@njit_cached
def injection_times(active, k, routed, col_width, src, inject_cycles, n_pes):
    """Injection time of every event, ``-1`` when there is none.

    Parameters
    ----------
    active : bool (n_cols * k,)
        ``x[j, b] != 0`` at flat index ``j * k + b``.
    k : int
        Batch columns.
    routed : bool (n_cols,)
        Column ``j`` has at least one destination tile in this phase.
    col_width : int
        Column block width ``T``; column ``j`` belongs to block ``j // T``.
    src : int64 (n_bcols,)
        Source PE of each column block.
    inject_cycles : int
        Cycles between two injections of one source.
    n_pes : int

    Returns
    -------
    inj : int64 (n_cols * k,)
    """
    n_cols = routed.shape[0]
    inj = np.full(n_cols * k, -1, dtype=np.int64)
    cnt = np.zeros(n_pes, dtype=np.int64)
    for b in range(k):
        for j in range(n_cols):
            if routed[j] and active[j * k + b]:
                s = src[j // col_width]
                inj[j * k + b] = cnt[s] * inject_cycles
                cnt[s] += 1
    return inj


@njit_cached
def _stable_order(keys, lo, hi, perm):
    """Write into ``perm[lo:hi]`` the stable ascending order of ``keys[lo:hi]`` (absolute indices)."""
    n = hi - lo
    for i in range(n):
        perm[lo + i] = lo + i
    srt = True
    for i in range(lo + 1, hi):
        if keys[i] < keys[i - 1]:
            srt = False
            break
    if srt:
        return
    if n <= 32:
        for i in range(1, n):
            v = perm[lo + i]
            kv = keys[v]
            j = i - 1
            while j >= 0 and keys[perm[lo + j]] > kv:
                perm[lo + j + 1] = perm[lo + j]
                j -= 1
            perm[lo + j + 1] = v
    else:
        # unique composite keys (key, position) make an unstable sort stable and deterministic
        ck = np.empty(n, dtype=np.int64)
        for i in range(n):
            ck[i] = keys[lo + i] * n + i
        ck.sort()
        for i in range(n):
            perm[lo + i] = lo + ck[i] % n


@njit_cached
def _grow(a, cap):
    b = np.empty(cap, dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit_cached
def run_phase(t_pe, t_red, t_src, t_coloff, col_ptr, col_local, w_ev, ev_macs, ev_decodes,
              ev_sram, final_cyc, final_macs, final_sram, out_rows, int8,
              inj, k, ready, cols, hop, setup_cycles, reduce_cycles, record,
              busy, events, macs, macs_int8, decodes, sram_bytes, flit_hops, reduce_adds,
              pe_end, t_done):
    """Simulate one phase; accumulate per-PE counters into the given buffers.

    Parameters
    ----------
    t_pe, t_red, t_src : int64 (n,)
        PE, reduction PE and event-source PE of each tile; tiles MUST be sorted by PE
        (non-decreasing ``t_pe``), the wrapper guarantees it.
    t_coloff : int64 (n,)
        First global column of each tile (``bj * T``).
    col_ptr, col_local : int64
        Routed columns (TileWork layout).
    w_ev : int64 (m,)
        Cycles per event of each routed column.
    ev_macs, ev_decodes, ev_sram : int64 (m,)
        Per-event counts.
    final_cyc, final_macs, final_sram, out_rows : int64 (n,)
    int8 : bool (n,)
    inj : int64 (n_cols * k,)
        From :func:`injection_times`.
    k : int
        Batch columns.
    ready : int64 (P,)
        Time each PE may start (its DRAM stream done).
    cols, hop, setup_cycles, reduce_cycles : int
        Grid columns, hop latency, setup cycles per tile, cycles per reduced flit.
    record : bool
        Record busy intervals.
    busy … reduce_adds : int64 (P,)
        Counters, accumulated (``+=``).
    pe_end : int64 (P,)
        Output: end time of each PE in this phase (0 when unused).
    t_done : int64 (n,)
        Output: arrival time, at the reduction PE, of each tile's partial-sum train (the
        tile's finish time + hop latency × distance).

    Returns
    -------
    makespan : int
    n_deliveries : int
    iv_pe, iv_start, iv_end, iv_tile, iv_kind : int64 arrays
        Busy intervals (empty unless ``record``).
    """
    n = t_pe.shape[0]
    P = ready.shape[0]
    # Tiles are sorted by PE: the tiles of PE p are tfirst[p]:tfirst[p+1]. Deliveries of one PE
    # are generated into small reusable buffers (no O(deliveries) arrays: allocation and page
    # faults would cost more than the simulation itself).
    tfirst = np.zeros(P + 1, dtype=np.int64)
    for u in range(n):
        tfirst[t_pe[u] + 1] += 1
    for p in range(P):
        tfirst[p + 1] += tfirst[p]
    cap_d = 64
    d_arr = np.empty(cap_d, dtype=np.int64)
    d_route = np.empty(cap_d, dtype=np.int64)
    d_tile = np.empty(cap_d, dtype=np.int64)
    perm = np.empty(cap_d, dtype=np.int64)
    cap_t = 16
    remaining = np.empty(cap_t, dtype=np.int64)
    cap = 1024 if record else 1
    iv_pe = np.empty(cap, dtype=np.int64)
    iv_start = np.empty(cap, dtype=np.int64)
    iv_end = np.empty(cap, dtype=np.int64)
    iv_tile = np.empty(cap, dtype=np.int64)
    iv_kind = np.empty(cap, dtype=np.int64)
    niv = 0
    nd = 0
    for p in range(P):
        t0, t1 = tfirst[p], tfirst[p + 1]
        if t1 == t0:
            pe_end[p] = 0
            continue
        nt = t1 - t0
        if nt > cap_t:
            cap_t = 2 * nt
            remaining = np.empty(cap_t, dtype=np.int64)
        # ------------------------------------------------ this PE's deliveries
        pr, pc = p // cols, p % cols
        m = 0
        for u in range(t0, t1):
            s = t_src[u]
            lat = hop * (abs(pr - s // cols) + abs(pc - s % cols))
            off = t_coloff[u]
            c0 = m
            for r in range(col_ptr[u], col_ptr[u + 1]):
                base = (off + col_local[r]) * k
                for b in range(k):
                    a = inj[base + b]
                    if a >= 0:
                        if m == cap_d:
                            cap_d *= 2
                            d_arr = _grow(d_arr, cap_d)
                            d_route = _grow(d_route, cap_d)
                            d_tile = _grow(d_tile, cap_d)
                            perm = np.empty(cap_d, dtype=np.int64)
                        d_arr[m] = a + lat
                        d_route[m] = r
                        d_tile[m] = u
                        m += 1
            remaining[u - t0] = m - c0
        nd += m
        # ------------------------------------------------ setup, event-less tiles
        if record and niv + m + 2 * nt + 2 > cap:
            cap = 2 * (niv + m + 2 * nt + 2)
            iv_pe = _grow(iv_pe, cap)
            iv_start = _grow(iv_start, cap)
            iv_end = _grow(iv_end, cap)
            iv_tile = _grow(iv_tile, cap)
            iv_kind = _grow(iv_kind, cap)
        t = ready[p]
        su = setup_cycles * nt
        if record and su > 0:
            iv_pe[niv] = p
            iv_start[niv] = t
            iv_end[niv] = t + su
            iv_tile[niv] = -1
            iv_kind[niv] = KIND_SETUP
            niv += 1
        t += su
        busy[p] += su
        for u in range(t0, t1):
            if remaining[u - t0] == 0:
                f = final_cyc[u]
                if record and f > 0:
                    iv_pe[niv] = p
                    iv_start[niv] = t
                    iv_end[niv] = t + f
                    iv_tile[niv] = u
                    iv_kind[niv] = KIND_COMPUTE
                    niv += 1
                t += f
                busy[p] += f
                t_done[u] = t
                if int8[u]:
                    macs_int8[p] += final_macs[u]
                else:
                    macs[p] += final_macs[u]
                sram_bytes[p] += final_sram[u]
        # ------------------------------------------------ deliveries in arrival order
        _stable_order(d_arr, 0, m, perm)
        for q in range(m):
            i = perm[q]
            r = d_route[i]
            u = d_tile[i]
            a = d_arr[i]
            start = t if t > a else a
            wk = w_ev[r]
            fin = 0
            remaining[u - t0] -= 1
            last = remaining[u - t0] == 0
            if last:
                fin = final_cyc[u]
            t = start + wk + fin
            busy[p] += wk + fin
            if record:
                if niv > 0 and iv_pe[niv - 1] == p and iv_tile[niv - 1] == u \
                        and iv_end[niv - 1] == start and iv_kind[niv - 1] == KIND_COMPUTE:
                    iv_end[niv - 1] = t
                else:
                    iv_pe[niv] = p
                    iv_start[niv] = start
                    iv_end[niv] = t
                    iv_tile[niv] = u
                    iv_kind[niv] = KIND_COMPUTE
                    niv += 1
            events[p] += 1
            s = t_src[u]
            flit_hops[p] += abs(pr - s // cols) + abs(pc - s % cols)
            if int8[u]:
                macs_int8[p] += ev_macs[r]
            else:
                macs[p] += ev_macs[r]
            decodes[p] += ev_decodes[r]
            sram_bytes[p] += ev_sram[r]
            if last:
                t_done[u] = t
                if int8[u]:
                    macs_int8[p] += final_macs[u]
                else:
                    macs[p] += final_macs[u]
                sram_bytes[p] += final_sram[u]
        pe_end[p] = t
    # ---------------------------------------------------------------- reduction trains
    rcnt = np.zeros(P + 1, dtype=np.int64)
    for u in range(n):
        if out_rows[u] > 0:
            rcnt[t_red[u] + 1] += 1
    for p in range(P):
        rcnt[p + 1] += rcnt[p]
    ntr = rcnt[P]
    tr_tile = np.empty(ntr, dtype=np.int64)
    rfill = rcnt[:P].copy()
    for u in range(n):
        o = out_rows[u]
        if o > 0:
            p = t_pe[u]
            q = t_red[u]
            d = abs(p // cols - q // cols) + abs(p % cols - q % cols)
            flit_hops[p] += o * d
            t_done[u] += hop * d  # from here on: arrival of the train's first flit
            i = rfill[q]
            tr_tile[i] = u
            rfill[q] = i + 1
    if record and niv + ntr > cap:
        cap = niv + ntr
        iv_pe = _grow(iv_pe, cap)
        iv_start = _grow(iv_start, cap)
        iv_end = _grow(iv_end, cap)
        iv_tile = _grow(iv_tile, cap)
        iv_kind = _grow(iv_kind, cap)
    for q in range(P):
        lo, hi = rcnt[q], rcnt[q + 1]
        m = hi - lo
        if m == 0:
            continue
        if m > cap_d:
            cap_d = 2 * m
            d_arr = np.empty(cap_d, dtype=np.int64)
            perm = np.empty(cap_d, dtype=np.int64)
        for z in range(m):
            d_arr[z] = t_done[tr_tile[lo + z]]
        _stable_order(d_arr, 0, m, perm)
        t = pe_end[q]
        for z in range(m):
            u = tr_tile[lo + perm[z]]
            a = d_arr[perm[z]]
            start = t if t > a else a
            dur = out_rows[u] * reduce_cycles
            t = start + dur
            busy[q] += dur
            reduce_adds[q] += out_rows[u]
            if record:
                iv_pe[niv] = q
                iv_start[niv] = start
                iv_end[niv] = t
                iv_tile[niv] = u
                iv_kind[niv] = KIND_REDUCE
                niv += 1
        pe_end[q] = t
    makespan = 0
    for p in range(P):
        if pe_end[p] > makespan:
            makespan = pe_end[p]
    return (makespan, nd, iv_pe[:niv].copy(), iv_start[:niv].copy(), iv_end[:niv].copy(),
            iv_tile[:niv].copy(), iv_kind[:niv].copy())
