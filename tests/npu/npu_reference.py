"""A slow, obvious Python implementation of the NPU event model (the oracle for the numba engine).

Same semantics as akfviz/npu/_engine.py + simulate.py (docs/model.md), one iteration,
fused or unfused, persistent or not, written with plain Python lists and sorted().
"""
import math

import numpy as np


def manhattan(p, q, cols):
    return abs(p // cols - q // cols) + abs(p % cols - q % cols)


def ps_completion(streams, bw):
    """Processor sharing, simulated step by step in 'rounds' between completions."""
    left = {p: float(s) for p, s in streams.items() if s > 0}
    t = 0.0
    done = {}
    while left:
        n = len(left)
        smallest = min(left.values())
        dt = smallest * n / bw
        t += dt
        for p in list(left):
            left[p] -= smallest
            if left[p] <= 1e-9:
                done[p] = math.ceil(t - 1e-9)
                del left[p]
    return done


def injection_times(work, g, tile, n_cols, active, src, inject_cycles):
    """``{(column, batch): cycle}`` at which each active column routed to a tile of ``g`` is injected:
    its source PE sends its columns in (batch, column) order, one every ``inject_cycles``."""
    routed = set()
    for u in g:
        for r in range(work.col_ptr[u], work.col_ptr[u + 1]):
            routed.add(int(work.bj[u]) * tile + int(work.col_local[r]))
    inj, count = {}, {}
    for b in range(active.shape[1]):
        for j in range(n_cols):
            if j in routed and active[j, b]:
                s = src[j // tile]
                inj[(j, b)] = count.get(s, 0) * inject_cycles
                count[s] = count.get(s, 0) + 1
    return inj


def ref_simulate(work, hw, pe, red, src, active, shape, tile, fused=True, persistent=True):
    """Return (cycles, counters dict of per-PE lists) for ONE iteration."""
    P = hw.rows * hw.cols
    cols = hw.cols
    k = active.shape[1]
    n = work.n_tiles
    C = {name: [0] * P for name in ("busy", "events", "macs", "macs_int8", "decodes", "sram_bytes",
                                   "flit_hops", "dram_bytes", "reduce_adds")}
    bw = hw.dram_bytes_per_cycle
    # x load
    xb = 0
    for j in range(shape[1]):
        for b in range(k):
            if active[j, b]:
                C["dram_bytes"][src[j // tile]] += hw.flit_bytes
                xb += hw.flit_bytes
    t_global = math.ceil(xb / bw)
    load = t_global
    # per-tile overflow: fill SRAM in tile order
    used = {}
    ovf = []
    for u in range(n):
        p = pe[u]
        before = used.get(p, 0)
        used[p] = before + int(work.payload_bytes[u])
        ovf.append(min(int(work.payload_bytes[u]), max(0, used[p] - hw.sram_bytes_per_pe)))
    if fused:
        groups = [list(range(n))]
    else:
        names = sorted({work.kernel_names[i] for i in work.kernel_id})
        groups = [[u for u in range(n) if work.kernel_names[work.kernel_id[u]] == nm] for nm in names]
    for gi, g in enumerate(groups):
        if not fused and gi > 0:
            t_global += hw.reconfig_cycles
        # streams
        streams = {}
        for u in g:
            s = ovf[u] if persistent else int(work.payload_bytes[u])
            streams[pe[u]] = streams.get(pe[u], 0) + s
        for p, s in streams.items():
            C["dram_bytes"][p] += s
        ready = ps_completion(streams, bw)
        inj = injection_times(work, g, tile, shape[1], active, src, hw.inject_cycles)
        # deliveries per PE, generated in (tile by PE stable, route, batch) order
        order = sorted(g, key=lambda u: (pe[u], u))
        per_pe = {}
        tiles_pe = {}
        for u in order:
            tiles_pe.setdefault(pe[u], []).append(u)
            d = manhattan(src[work.bj[u]], pe[u], cols)
            for r in range(work.col_ptr[u], work.col_ptr[u + 1]):
                j = int(work.bj[u]) * tile + int(work.col_local[r])
                for b in range(k):
                    if (j, b) in inj:
                        per_pe.setdefault(pe[u], []).append((inj[(j, b)] + hw.hop_latency_cycles * d, u, r))
        pe_end = {}
        done = {}
        for p, tl in tiles_pe.items():
            t = ready.get(p, 0)
            t += hw.setup_cycles * len(tl)
            C["busy"][p] += hw.setup_cycles * len(tl)
            dl = per_pe.get(p, [])
            remaining = {u: sum(1 for x in dl if x[1] == u) for u in tl}
            for u in tl:
                if remaining[u] == 0:
                    f = -(-k * int(work.final_macs[u]) // hw.mac_lanes)
                    t += f
                    C["busy"][p] += f
                    done[u] = t
                    C["macs_int8" if work.int8[u] else "macs"][p] += k * int(work.final_macs[u])
                    C["sram_bytes"][p] += k * int(work.final_sram_bytes[u])
            for a, u, r in sorted(dl, key=lambda x: x[0]):  # sorted() is stable
                w = (hw.event_cycles + -(-int(work.ev_macs[r]) // hw.mac_lanes)
                     + int(work.ev_decodes[r]) * hw.decode_cycles)
                remaining[u] -= 1
                f = -(-k * int(work.final_macs[u]) // hw.mac_lanes) if remaining[u] == 0 else 0
                t = max(t, a) + w + f
                C["busy"][p] += w + f
                C["events"][p] += 1
                C["macs_int8" if work.int8[u] else "macs"][p] += int(work.ev_macs[r])
                C["decodes"][p] += int(work.ev_decodes[r])
                C["sram_bytes"][p] += int(work.ev_sram_bytes[r])
                C["flit_hops"][p] += manhattan(src[work.bj[u]], p, cols)
                if remaining[u] == 0:
                    done[u] = t
                    C["macs_int8" if work.int8[u] else "macs"][p] += k * int(work.final_macs[u])
                    C["sram_bytes"][p] += k * int(work.final_sram_bytes[u])
            pe_end[p] = t
        trains = {}
        for u in order:
            o = k * int(work.out_rows[u])       # one partial sum per output row and batch column
            if o > 0:
                q = red[work.bi[u]]
                d = manhattan(pe[u], q, cols)
                C["flit_hops"][pe[u]] += o * d
                trains.setdefault(q, []).append((done[u] + hw.hop_latency_cycles * d, u))
        for q, tr in trains.items():
            t = pe_end.get(q, 0)
            for a, u in sorted(tr, key=lambda x: x[0]):
                o = k * int(work.out_rows[u])
                t = max(t, a) + o * hw.reduce_cycles
                C["busy"][q] += o * hw.reduce_cycles
                C["reduce_adds"][q] += o
            pe_end[q] = t
        t_global += max(pe_end.values()) if pe_end else 0
        if not fused and gi < len(groups) - 1:
            t_global += hw.barrier_cycles
    # y write-back (single iteration: always), every row of y by its row block's reduction PE,
    # row blocks without a tile too (docs/model.md, DRAM)
    yb = 0
    nbr = -(-shape[0] // tile)
    for b in range(nbr):
        rows = min(tile, shape[0] - b * tile)
        C["dram_bytes"][red[b]] += rows * k * hw.flit_bytes
        yb += rows * k * hw.flit_bytes
    t_global += -(-yb // bw)
    if not persistent:
        t_global += hw.launch_cycles
    return t_global, C, load


def random_tilework(rng, n_brows, n_bcols, tile, p_tile=0.6, kernels=("CSC", "DENSE", "Q8")):
    """Small random TileWork with several kernels, random work and int8 tiles."""
    from akfviz.npu.work import TileWork

    bi, bj, cp, cl, em, ed, es, pay, outr, fm, fs, i8, kid = ([] for _ in range(13))
    cp.append(0)
    for a in range(n_brows):
        for b in range(n_bcols):
            if rng.random() > p_tile:
                continue
            bi.append(a)
            bj.append(b)
            cols = np.flatnonzero(rng.random(tile) < 0.5)
            if cols.size == 0:
                cols = np.array([int(rng.integers(tile))])
            cl.extend(cols.tolist())
            cp.append(cp[-1] + cols.size)
            em.extend(rng.integers(0, 9, cols.size).tolist())
            ed.extend(rng.integers(0, 3, cols.size).tolist())
            es.extend(rng.integers(0, 40, cols.size).tolist())
            pay.append(int(rng.integers(1, 400)))
            outr.append(int(rng.integers(0, tile + 1)))
            fm.append(int(rng.integers(0, 2)) * int(rng.integers(0, 20)))
            fs.append(int(rng.integers(0, 10)))
            kk = int(rng.integers(len(kernels)))
            kid.append(kk)
            i8.append(kernels[kk] == "Q8")
    n = len(bi)
    a64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return TileWork(kernel_names=tuple(kernels), kernel_id=a64(kid), tile_index=np.arange(n),
                    bi=a64(bi), bj=a64(bj), h=np.full(n, tile, np.int64), w=np.full(n, tile, np.int64),
                    col_ptr=a64(cp), col_local=a64(cl), ev_macs=a64(em), ev_decodes=a64(ed),
                    ev_sram_bytes=a64(es), payload_bytes=a64(pay), out_rows=a64(outr),
                    final_macs=a64(fm), final_sram_bytes=a64(fs),
                    int8=np.asarray(i8, dtype=bool)).validate()
