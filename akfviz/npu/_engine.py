"""The event-driven NPU engine: one phase of event delivery, processing and reduction (spec §7).

Numba kernels only (arrays and scalars in, buffers filled); :mod:`akfviz.npu.simulate`
validates, maps, schedules phases and iterations, and wraps the counters in a SimResult.
The model is stated in full in ``docs/model.md``; in short, for one phase:

1. **Injection** (:func:`prepare_phase`). Input events are the nonzero ``x[j, b]`` whose
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

Performance layout. The kernels read the TileWork arrays in place (no per-tile copies): a
phase is a list of tile ids sorted by PE (a stable counting sort, :func:`prepare_phase`), and
each PE's deliveries live only in small per-worker scratch buffers. Step 3 is independent
from PE to PE and step 4 from reduction PE to reduction PE, so both run as ``prange`` loops
over chunks of PEs (:func:`run_phase_parallel`; small phases use its serial twin
``run_phase``); every PE writes only its own counters and every tile only its own
``t_done``, and the hop histogram is summed per chunk and then over chunks in a fixed order
(integers), so the result is bit-for-bit the same for any thread count. With
``record=True`` (busy-interval timeline) the same per-PE code runs serially and appends
intervals (:func:`run_phase_recorded`).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from .._jit import njit_cached, njit_inline, njit_parallel, serial_twin


#: Interval kinds recorded for the timeline.
KIND_SETUP, KIND_COMPUTE, KIND_REDUCE = 0, 1, 2

#: Rows of the counter matrix, in :data:`akfviz.npu.results.COUNTERS` order.
C_BUSY, C_EVENTS, C_MACS, C_MACS8, C_DECODES, C_SRAM, C_HOPS, C_DRAM, C_REDADDS = range(9)


# --------------------------------------------------------------------------- preparation
@njit_cached
def pe_sort(sel, pe, n_pes):
    """Stable counting sort of the tiles ``sel`` by PE.

    Returns
    -------
    order : int64 (len(sel),)
        Tile ids, by PE then by position in ``sel``.
    pe_ptr : int64 (n_pes + 1,)
        The tiles of PE ``p`` are ``order[pe_ptr[p]:pe_ptr[p + 1]]``.
    """
    n = sel.shape[0]
    pe_ptr = np.zeros(n_pes + 1, dtype=np.int64)
    for i in range(n):
        pe_ptr[pe[sel[i]] + 1] += 1
    for p in range(n_pes):
        pe_ptr[p + 1] += pe_ptr[p]
    fill = pe_ptr[:n_pes].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        u = sel[i]
        p = pe[u]
        order[fill[p]] = u
        fill[p] += 1
    return order, pe_ptr


@njit_cached
def tile_overflow_kernel(payload, pe, sram, n_pes):
    """Bytes of each tile beyond its PE's SRAM, the PE's tiles filling it in TileWork order."""
    n = payload.shape[0]
    used = np.zeros(n_pes, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    for u in range(n):
        p = pe[u]
        before = used[p]
        after = before + payload[u]
        used[p] = after
        o = after - sram
        if o < 0:
            o = 0
        if o > payload[u]:
            o = payload[u]
        out[u] = o
    return out


@njit_cached
def prepare_phase(sel, bj, col_ptr, col_local, active, k, tile, src, inject_cycles,
                  n_cols, n_pes, pe, streams):
    """Injection times of the phase's events and the bytes each PE streams.

    Parameters
    ----------
    sel : int64
        Tile ids of the phase (any order; TileWork order reads memory sequentially).
    active : bool (n_cols * k,)
        ``x[j, b] != 0`` at flat index ``j * k + b``.
    streams : int64 (n_tiles,)
        Bytes each tile streams from DRAM in this phase.

    Returns
    -------
    inj : int64 (n_cols * k,)
        Injection time of each event, ``-1`` when there is none (column not routed in this
        phase, or ``x[j, b] == 0``).
    stream_pe : int64 (n_pes,)
        Bytes streamed by each PE.
    wptr : int64 (n_pes + 1,)
        Running work estimate (routes · k + 2 per tile) before each PE, for load balancing.
    """
    routed = np.zeros(n_cols, dtype=np.bool_)
    stream_pe = np.zeros(n_pes, dtype=np.int64)
    wptr = np.zeros(n_pes + 1, dtype=np.int64)
    for i in range(sel.shape[0]):
        u = sel[i]
        stream_pe[pe[u]] += streams[u]
        wptr[pe[u] + 1] += (col_ptr[u + 1] - col_ptr[u]) * k + 2
        off = bj[u] * tile
        for r in range(col_ptr[u], col_ptr[u + 1]):
            routed[off + col_local[r]] = True
    inj = np.full(n_cols * k, -1, dtype=np.int64)
    cnt = np.zeros(n_pes, dtype=np.int64)
    for b in range(k):
        for j in range(n_cols):
            if routed[j] and active[j * k + b]:
                s = src[j // tile]
                inj[j * k + b] = cnt[s] * inject_cycles
                cnt[s] += 1
    for p in range(n_pes):
        wptr[p + 1] += wptr[p]
    return inj, stream_pe, wptr


@njit_cached
def reduction_trains(order, pe_ptr, out_rows, bi, red, n_pes, sel):
    """Partial-sum trains grouped by reduction PE, each group in phase order (PE, tile id).

    ``sel`` holds the same tiles as ``order`` in the phase's own order (TileWork order): the
    counts do not depend on the order, and read memory sequentially that way.

    Returns ``tr_tile`` (tile ids) and ``tr_ptr`` (n_pes + 1): the trains reduced by PE ``q``
    are ``tr_tile[tr_ptr[q]:tr_ptr[q + 1]]``.
    """
    n = order.shape[0]
    tr_ptr = np.zeros(n_pes + 1, dtype=np.int64)
    for i in range(n):
        u = sel[i]
        if out_rows[u] > 0:
            tr_ptr[red[bi[u]] + 1] += 1
    for p in range(n_pes):
        tr_ptr[p + 1] += tr_ptr[p]
    fill = tr_ptr[:n_pes].copy()
    tr_tile = np.empty(tr_ptr[n_pes], dtype=np.int64)
    for i in range(n):
        u = order[i]
        if out_rows[u] > 0:
            q = red[bi[u]]
            tr_tile[fill[q]] = u
            fill[q] += 1
    return tr_tile, tr_ptr


@njit_cached
def balanced_chunks(weight_ptr, n_chunks):
    """Split ``range(len(weight_ptr) - 1)`` into ``n_chunks`` contiguous ranges of similar weight.

    ``weight_ptr[p]`` is a running weight before item ``p`` (non-decreasing); returns the
    ``n_chunks + 1`` boundaries. Only load balancing depends on it, never the result.
    """
    n = weight_ptr.shape[0] - 1
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    total = weight_ptr[n]
    p = 0
    for c in range(1, n_chunks):
        target = total * c // n_chunks
        while p < n and weight_ptr[p] < target:
            p += 1
        bounds[c] = p
    bounds[n_chunks] = n
    return bounds


# --------------------------------------------------------------------------- sorting
@njit_cached
def _stable_order(keys, n, perm, ck):
    """Write into ``perm[:n]`` the stable ascending order of ``keys[:n]`` (``ck`` = scratch).

    Keys are non-negative (times); ``keys · max(n, 32) + n`` must fit in int64."""
    for i in range(n):
        perm[i] = i
    srt = True
    for i in range(1, n):
        if keys[i] < keys[i - 1]:
            srt = False
            break
    if srt:
        return
    if n <= 32:
        # rank of each composite key (key, position; position in the low 5 bits) among the
        # others: the keys are distinct, so the rank is the place in the stable order. n² branch-
        # free comparisons (vectorised) beat an insertion sort's mispredicted branches on the
        # ~15 deliveries a PE gets on a hyper-sparse matrix (1.2× the whole phase, same order)
        for i in range(n):
            ck[i] = (keys[i] << 5) | i
        for i in range(n):
            v = ck[i]
            r = 0
            for j in range(n):
                r += ck[j] < v
            perm[r] = i
    else:
        # unique composite keys (key, position) make any sort stable and deterministic; an LSD
        # radix sort on them, 8 bits per pass, ping-ponging between ``ck`` and ``perm`` (3.5×
        # faster than ``ck[:n].sort()`` on the ~300 trains a reduction PE gets, same order)
        mx = 0
        for i in range(n):
            c = keys[i] * n + i
            ck[i] = c
            if c > mx:
                mx = c
        cnt = np.empty(256, dtype=np.int64)
        src = ck
        dst = perm
        shift = 0
        while (mx >> shift) > 0:
            cnt[:] = 0
            for i in range(n):
                cnt[(src[i] >> shift) & 255] += 1
            tot = 0
            for b in range(256):
                c = cnt[b]
                cnt[b] = tot
                tot += c
            for i in range(n):
                d = (src[i] >> shift) & 255
                dst[cnt[d]] = src[i]
                cnt[d] += 1
            src, dst = dst, src
            shift += 8
        for i in range(n):
            perm[i] = src[i] % n


# --------------------------------------------------------------------------- per PE
@njit_cached
def grid_coordinates(src, red, cols):
    """Grid row and column of every column block's source PE and row block's reduction PE.

    Returns an int64 array of 4 rows (padded to the longer of the two): ``src // cols``,
    ``src % cols``, ``red // cols``, ``red % cols``. Read per tile by :func:`_tiles_of_pes`
    in place of two integer divisions per tile (≈ 8 % of a hyper-sparse phase).
    """
    n = max(src.shape[0], red.shape[0])
    rc = np.zeros((4, n), dtype=np.int64)
    for j in range(src.shape[0]):
        rc[0, j] = src[j] // cols
        rc[1, j] = src[j] % cols
    for j in range(red.shape[0]):
        rc[2, j] = red[j] // cols
        rc[3, j] = red[j] % cols
    return rc


@njit_inline
def _lane_shift(lanes):
    """``log2(lanes)`` when ``lanes`` is a power of two, else -1."""
    if lanes & (lanes - 1) != 0:
        return -1
    sh = 0
    while (1 << sh) < lanes:
        sh += 1
    return sh


@njit_inline
def _ceil_lanes(m, lanes, lsh):
    """``ceil(m / lanes)`` for ``m >= 0``: a shift when ``lsh >= 0`` (same value)."""
    if lsh >= 0:
        return (m + lanes - 1) >> lsh
    return (m + lanes - 1) // lanes


@njit_cached
def _tiles_of_pes(p_lo, p_hi, order, pe_ptr, bj, col_ptr, col_local, ev_macs, ev_decodes,
                  ev_sram, final_macs, final_sram, out_rows, int8, bi, rc, inj, k, tile,
                  ready, cols, hop, setup_cycles, event_cycles, mac_lanes, decode_cycles, cnt,
                  hist, t_done, pe_end, rec, iv):
    """Steps 2–3 for PEs ``p_lo … p_hi - 1``; returns (deliveries, iv, n_intervals).

    ``rc`` = :func:`grid_coordinates` of the source and reduction PEs (no division per tile).

    Scratch: ``buf`` (5, cap) int64 rows arrival, route, tile position, perm, sort keys;
    ``rem`` per-tile remaining deliveries; both grow when needed. ``iv`` is the (5, cap)
    interval store (pe, start, end, tile, kind), used (and grown) when ``rec``.
    """
    buf = np.empty((5, 64), dtype=np.int64)
    rem = np.empty(16, dtype=np.int64)
    niv = 0
    nd_total = 0
    lsh = _lane_shift(mac_lanes)
    src_r, src_c, red_r, red_c = rc[0], rc[1], rc[2], rc[3]
    for p in range(p_lo, p_hi):
        t0 = pe_ptr[p]
        t1 = pe_ptr[p + 1]
        if t1 == t0:
            pe_end[p] = 0
            continue
        nt = t1 - t0
        if nt > rem.shape[0]:
            rem = np.empty(2 * nt, dtype=np.int64)
        pr = p // cols
        pc = p % cols
        # ------------------------------------------------ this PE's deliveries
        m = 0
        flits = 0
        for i in range(t0, t1):
            u = order[i]
            jb = bj[u]
            dsrc = abs(pr - src_r[jb]) + abs(pc - src_c[jb])
            lat = hop * dsrc
            off = bj[u] * tile
            c0 = m
            for r in range(col_ptr[u], col_ptr[u + 1]):
                base = (off + col_local[r]) * k
                for b in range(k):
                    a = inj[base + b]
                    if a >= 0:
                        if m == buf.shape[1]:
                            nb = np.empty((5, 2 * m), dtype=np.int64)
                            nb[:, :m] = buf[:, :m]
                            buf = nb
                        buf[0, m] = a + lat
                        buf[1, m] = r
                        buf[2, m] = i
                        m += 1
            nd_u = m - c0
            rem[i - t0] = nd_u
            hist[dsrc] += nd_u
            flits += dsrc * nd_u  # every delivery of tile u travels dsrc hops
        # ------------------------------------------------ setup, event-less tiles
        if rec:
            need = niv + m + 2 * nt + 2
            if need > iv.shape[1]:
                iv2 = np.empty((5, 2 * need), dtype=np.int64)
                iv2[:, :niv] = iv[:, :niv]
                iv = iv2
        t = ready[p]
        su = setup_cycles * nt
        if rec and su > 0:
            iv[0, niv] = p
            iv[1, niv] = t
            iv[2, niv] = t + su
            iv[3, niv] = -1
            iv[4, niv] = KIND_SETUP
            niv += 1
        t += su
        busy = su
        macs = 0
        macs8 = 0
        sram = 0
        for i in range(t0, t1):
            if rem[i - t0] == 0:
                u = order[i]
                f = _ceil_lanes(final_macs[u], mac_lanes, lsh)
                if rec and f > 0:
                    iv[0, niv] = p
                    iv[1, niv] = t
                    iv[2, niv] = t + f
                    iv[3, niv] = u
                    iv[4, niv] = KIND_COMPUTE
                    niv += 1
                t += f
                busy += f
                t_done[u] = t
                if int8[u]:
                    macs8 += final_macs[u]
                else:
                    macs += final_macs[u]
                sram += final_sram[u]
        # ------------------------------------------------ deliveries in arrival order
        _stable_order(buf[0], m, buf[3], buf[4])
        decodes = 0
        for q in range(m):
            z = buf[3, q]
            r = buf[1, z]
            i = buf[2, z]
            u = order[i]
            a = buf[0, z]
            start = t if t > a else a
            wk = event_cycles + _ceil_lanes(ev_macs[r], mac_lanes, lsh) + ev_decodes[r] * decode_cycles
            fin = 0
            rem[i - t0] -= 1
            last = rem[i - t0] == 0
            if last:
                fin = _ceil_lanes(final_macs[u], mac_lanes, lsh)
            t = start + wk + fin
            busy += wk + fin
            if rec:
                if niv > 0 and iv[0, niv - 1] == p and iv[3, niv - 1] == u \
                        and iv[2, niv - 1] == start and iv[4, niv - 1] == KIND_COMPUTE:
                    iv[2, niv - 1] = t
                else:
                    iv[0, niv] = p
                    iv[1, niv] = start
                    iv[2, niv] = t
                    iv[3, niv] = u
                    iv[4, niv] = KIND_COMPUTE
                    niv += 1
            if int8[u]:
                macs8 += ev_macs[r]
            else:
                macs += ev_macs[r]
            decodes += ev_decodes[r]
            sram += ev_sram[r]
            if last:
                t_done[u] = t
                if int8[u]:
                    macs8 += final_macs[u]
                else:
                    macs += final_macs[u]
                sram += final_sram[u]
        # ------------------------------------------------ partial-sum trains leave
        for i in range(t0, t1):
            u = order[i]
            o = out_rows[u]
            if o > 0:
                ib = bi[u]
                d = abs(pr - red_r[ib]) + abs(pc - red_c[ib])
                flits += o * d
                hist[d] += o
                t_done[u] += hop * d  # from here on: arrival of the train's first flit
        cnt[C_BUSY, p] += busy
        cnt[C_EVENTS, p] += m
        cnt[C_MACS, p] += macs
        cnt[C_MACS8, p] += macs8
        cnt[C_DECODES, p] += decodes
        cnt[C_SRAM, p] += sram
        cnt[C_HOPS, p] += flits
        pe_end[p] = t
        nd_total += m
    return nd_total, iv, niv


@njit_cached
def _reduce_at(q, tr_tile, tr_ptr, out_rows, t_done, reduce_cycles, t, cnt, buf, rec, iv, niv):
    """Step 4 for reduction PE ``q`` starting at ``t``; returns (end, buf, iv, niv)."""
    lo = tr_ptr[q]
    m = tr_ptr[q + 1] - lo
    if m > buf.shape[1]:
        buf = np.empty((5, 2 * m), dtype=np.int64)
    if rec and niv + m > iv.shape[1]:
        iv2 = np.empty((5, 2 * (niv + m)), dtype=np.int64)
        iv2[:, :niv] = iv[:, :niv]
        iv = iv2
    for z in range(m):
        buf[0, z] = t_done[tr_tile[lo + z]]
    _stable_order(buf[0], m, buf[3], buf[4])
    busy = 0
    adds = 0
    for z in range(m):
        w = buf[3, z]
        u = tr_tile[lo + w]
        a = buf[0, w]
        start = t if t > a else a
        dur = out_rows[u] * reduce_cycles
        t = start + dur
        busy += dur
        adds += out_rows[u]
        if rec:
            iv[0, niv] = q
            iv[1, niv] = start
            iv[2, niv] = t
            iv[3, niv] = u
            iv[4, niv] = KIND_REDUCE
            niv += 1
    cnt[C_BUSY, q] += busy
    cnt[C_REDADDS, q] += adds
    return t, buf, iv, niv


# --------------------------------------------------------------------------- phases
@njit_parallel
def run_phase_parallel(order, pe_ptr, bounds, tr_tile, tr_ptr, rbounds, bj, col_ptr, col_local,
                       ev_macs, ev_decodes, ev_sram, final_macs, final_sram, out_rows, int8, bi,
                       red, src, inj, k, tile, ready, cols, hop, setup_cycles, event_cycles,
                       mac_lanes, decode_cycles, reduce_cycles, cnt, hist, pe_end, t_done):
    """Simulate one phase without recording intervals, chunks of PEs in parallel (``prange``).

    Chunks write disjoint PEs / tiles and their own histogram row, so the result is the same
    bit for bit as its serial twin :data:`run_phase` (the same code without ``parallel``:
    chunks one after the other).

    Parameters
    ----------
    order, pe_ptr : int64
        From :func:`pe_sort` (the phase's tiles by PE).
    bounds, rbounds : int64 (n_chunks + 1,)
        PE chunk boundaries for step 3 and step 4 (:func:`balanced_chunks`).
    tr_tile, tr_ptr : int64
        From :func:`reduction_trains`.
    bj … int8, bi : TileWork arrays (read in place).
    red, src : int64
        Reduction PE of each row block, source PE of each column block.
    inj : int64 (n_cols * k,)
        From :func:`prepare_phase`.
    ready : int64 (P,)
        Time each PE may start (its DRAM stream done).
    cnt : int64 (9, P)
        Counters (rows in ``COUNTERS`` order), accumulated (``+=``).
    hist : int64 (n_hops,)
        Hop histogram, accumulated (events at their source distance, partial sums at theirs).
    pe_end : int64 (P,)
        Output: end time of each PE in this phase (0 when unused).
    t_done : int64 (n_tiles,)
        Output for the phase's tiles: arrival of the tile's partial-sum train at its
        reduction PE (finish time + hop latency × distance).

    Returns
    -------
    makespan, n_deliveries : int
    """
    P = pe_end.shape[0]
    nch = bounds.shape[0] - 1
    nh = hist.shape[0]
    hist_c = np.zeros((nch, nh), dtype=np.int64)
    nd_c = np.zeros(nch, dtype=np.int64)
    rc = grid_coordinates(src, red, cols)
    for c in prange(nch):
        iv = np.empty((5, 1), dtype=np.int64)
        nd, iv, niv = _tiles_of_pes(
            bounds[c], bounds[c + 1], order, pe_ptr, bj, col_ptr, col_local, ev_macs, ev_decodes,
            ev_sram, final_macs, final_sram, out_rows, int8, bi, rc, inj, k, tile, ready,
            cols, hop, setup_cycles, event_cycles, mac_lanes, decode_cycles, cnt, hist_c[c],
            t_done, pe_end, False, iv)
        nd_c[c] = nd
    nrc = rbounds.shape[0] - 1
    for c in prange(nrc):
        buf = np.empty((5, 64), dtype=np.int64)
        iv = np.empty((5, 1), dtype=np.int64)
        for q in range(rbounds[c], rbounds[c + 1]):
            if tr_ptr[q + 1] > tr_ptr[q]:
                t, buf, iv, niv = _reduce_at(q, tr_tile, tr_ptr, out_rows, t_done, reduce_cycles,
                                             pe_end[q], cnt, buf, False, iv, 0)
                pe_end[q] = t
    for c in range(nch):
        for h in range(nh):
            hist[h] += hist_c[c, h]
    makespan = 0
    for p in range(P):
        if pe_end[p] > makespan:
            makespan = pe_end[p]
    return makespan, nd_c.sum()


#: :func:`run_phase_parallel` compiled without ``parallel`` (small phases skip the thread launch).
run_phase = serial_twin(run_phase_parallel, "run_phase")


@njit_cached
def run_phase_recorded(order, pe_ptr, tr_tile, tr_ptr, bj, col_ptr, col_local, ev_macs,
                       ev_decodes, ev_sram, final_macs, final_sram, out_rows, int8, bi, red, src,
                       inj, k, tile, ready, cols, hop, setup_cycles, event_cycles, mac_lanes,
                       decode_cycles, reduce_cycles, cnt, hist, pe_end, t_done):
    """:data:`run_phase` (serial), also returning the busy intervals.

    Returns
    -------
    makespan, n_deliveries : int
    iv : int64 (5, n_intervals)
        Rows ``pe, start, end, tile, kind`` (``tile`` = TileWork index, -1 for setup).
    """
    P = pe_end.shape[0]
    buf = np.empty((5, 64), dtype=np.int64)
    iv = np.empty((5, 1024), dtype=np.int64)
    rc = grid_coordinates(src, red, cols)
    nd, iv, niv = _tiles_of_pes(
        0, P, order, pe_ptr, bj, col_ptr, col_local, ev_macs, ev_decodes, ev_sram, final_macs,
        final_sram, out_rows, int8, bi, rc, inj, k, tile, ready, cols, hop, setup_cycles,
        event_cycles, mac_lanes, decode_cycles, cnt, hist, t_done, pe_end, True, iv)
    for q in range(P):
        if tr_ptr[q + 1] > tr_ptr[q]:
            t, buf, iv, niv = _reduce_at(q, tr_tile, tr_ptr, out_rows, t_done, reduce_cycles,
                                         pe_end[q], cnt, buf, True, iv, niv)
            pe_end[q] = t
    makespan = 0
    for p in range(P):
        if pe_end[p] > makespan:
            makespan = pe_end[p]
    return makespan, nd, iv[:, :niv].copy()
