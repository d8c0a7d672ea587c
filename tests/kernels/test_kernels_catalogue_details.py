"""Hand-counted details of the kernel catalogue (akf-spec §3) that the consistency tests
(batch vs single tile) cannot see, because both paths share one formula: per-event reads
and decodes, payloads of non-square edge tiles, rounding of fractional per-event work,
the all-zero QUANT8 tile, batched out_rows, and the structure-class boundary."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from akfviz.analysis.tiling import build_tiles
from akfviz.kernels import get_kernel
from akfviz.kernels.quant import quant_scale
from akfviz.selection.structure import classify_dense


def _tile_index(ts, bi, bj):
    (t,) = np.flatnonzero((ts.bi == bi) & (ts.bj == bj))
    return int(t)


def _full(n_rows, n_cols, seed=0):
    """A matrix with every entry nonzero (so edge tiles are full too)."""
    rng = np.random.default_rng(seed)
    return sp.csr_array(rng.uniform(0.5, 1.5, size=(n_rows, n_cols)))


# --------------------------------------------------------------------------- out_rows
@pytest.mark.parametrize("name", ["CSC", "BITMAP", "PRUNE50", "QUANT8"])
def test_batched_out_rows_count_each_tiles_rows_separately(name):
    # two tiles of one row block whose only entries share local row 3: each tile has one
    # nonempty output row, even though the batch's entries are adjacent with equal rows
    A = sp.csr_array(([1.0, 2.0], ([3, 3], [2, 10])), shape=(8, 16))
    ts = build_tiles(A, 8)
    k = get_kernel(name)
    tw = k.npu_work(ts, np.arange(ts.n_tiles))
    assert tw.out_rows.tolist() == [1, 1]


@pytest.mark.parametrize("name", ["CSC", "BITMAP", "QUANT8"])
def test_batched_out_rows_equal_nonempty_rows_of_each_decoded_tile(name):
    A = sp.random(40, 40, density=0.05, random_state=7, format="csr")
    ts = build_tiles(A, 8)
    k = get_kernel(name)
    tw = k.npu_work(ts, np.arange(ts.n_tiles))
    want = [int(np.count_nonzero(np.any(k.decode(k.encode(ts.dense(t))) != 0, axis=1)))
            for t in range(ts.n_tiles)]
    assert tw.out_rows.tolist() == want


# --------------------------------------------------------------------------- payloads of edge tiles
def test_dense_layout_payload_routes_every_column_of_a_non_square_tile():
    ts = build_tiles(_full(11, 13), 8)
    t = _tile_index(ts, 1, 1)  # h = 3, w = 5
    assert (int(ts.h[t]), int(ts.w[t])) == (3, 5)
    tile = ts.dense(t)
    # DENSE: 15 fp32 values + one routing byte per column
    dense = get_kernel("DENSE")
    assert dense.payload_bytes(dense.encode(tile)) == 3 * 5 * 4 + 5
    assert int(dense.npu_work(ts, [t]).payload_bytes[0]) == 3 * 5 * 4 + 5
    # QUANT8D: 15 int8 codes + a 4-byte scale + one routing byte per column
    q8d = get_kernel("QUANT8D")
    assert q8d.payload_bytes(q8d.encode(tile)) == 15 + 4 + 5
    assert int(q8d.npu_work(ts, [t]).payload_bytes[0]) == 15 + 4 + 5


@pytest.mark.parametrize("name, rank", [("LOWRANK2", 2), ("LOWRANK8", 3)])
def test_lowrank_payload_counts_both_factors_of_a_non_square_tile(name, rank):
    ts = build_tiles(_full(13, 11), 8)
    t = _tile_index(ts, 1, 1)  # h = 5, w = 3: stored rank min(r, 5, 3)
    assert (int(ts.h[t]), int(ts.w[t])) == (5, 3)
    k = get_kernel(name)
    p = k.encode(ts.dense(t))
    want = (5 + 3) * rank * 4 + 3  # U·diag s (5×rank) and V (3×rank) in fp32, 3 routes
    assert k.payload_bytes(p) == want
    tw = k.npu_work(ts, [t])
    assert int(tw.payload_bytes[0]) == want
    assert int(tw.final_macs[0]) == rank * 5


# --------------------------------------------------------------------------- per-event work
def test_quant8d_event_reads_one_byte_per_int8_value():
    ts = build_tiles(_full(8, 8), 8)
    tw = get_kernel("QUANT8D").npu_work(ts, [0])
    assert tw.ev_macs.tolist() == [8] * 8
    assert tw.ev_sram_bytes.tolist() == [8] * 8  # 8 int8 codes per column
    tw = get_kernel("DENSE").npu_work(ts, [0])
    assert tw.ev_sram_bytes.tolist() == [32] * 8  # 8 fp32 values per column


@pytest.mark.parametrize("name, value_bytes", [("CSC", 4), ("QUANT8", 1)])
def test_csc_event_reads_values_row_indices_and_two_pointers(name, value_bytes):
    # column 1 holds 3 entries, column 4 one entry
    A = sp.csr_array(([1.0, 2.0, 3.0, 4.0], ([0, 2, 5, 7], [1, 1, 1, 4])), shape=(8, 8))
    ts = build_tiles(A, 8)
    tw = get_kernel(name).npu_work(ts, [0])
    assert tw.col_local.tolist() == [1, 4]
    assert tw.ev_macs.tolist() == [3, 1]
    assert tw.ev_decodes.tolist() == [1, 1]
    # nnz_j values and 1-byte row indices, and the column's two 2-byte pointers
    assert tw.ev_sram_bytes.tolist() == [3 * (value_bytes + 1) + 4, 1 * (value_bytes + 1) + 4]


@pytest.mark.parametrize("n_rows, T, h", [(64, 64, 64), (128, 128, 128), (100, 128, 100), (40, 64, 40)])
def test_bitmap_word_decodes_per_event_are_ceil_h_over_64(n_rows, T, h):
    A = sp.lil_array((n_rows, 4))
    A[np.arange(0, n_rows, 3), 0] = 1.0
    A[1, 2] = 2.0
    ts = build_tiles(sp.csr_array(A), T)
    assert ts.n_tiles == 1 and int(ts.h[0]) == h
    tw = get_kernel("BITMAP").npu_work(ts, [0])
    words = -(-h // 64)
    nnz0 = len(range(0, n_rows, 3))
    assert tw.col_local.tolist() == [0, 2]
    assert tw.ev_decodes.tolist() == [words, words]
    assert tw.ev_macs.tolist() == [nnz0, 1]
    assert tw.ev_sram_bytes.tolist() == [8 * words + 4 * nnz0, 8 * words + 4]


@pytest.mark.parametrize("name, n, m", [("NM2:4", 2, 4), ("NM1:4", 1, 4), ("NM4:8", 4, 8)])
def test_nm_events_round_a_fractional_slot_count_up(name, n, m):
    ts = build_tiles(_full(13, 8), 8)
    t = _tile_index(ts, 1, 0)  # h = 5: h·N/M is fractional for every pattern
    assert int(ts.h[t]) == 5
    tw = get_kernel(name).npu_work(ts, [t])
    per_ev = -(-5 * n // m)  # 3, 2, 3
    assert tw.ev_macs.tolist() == [per_ev] * 8
    assert tw.ev_decodes.tolist() == [per_ev] * 8


# --------------------------------------------------------------------------- QUANT8 scale
@pytest.mark.parametrize("name", ["QUANT8", "QUANT8D"])
def test_quant8_all_zero_tile_has_unit_scale_and_no_warnings(name):
    assert float(quant_scale(0.0)) == 1.0
    k = get_kernel(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = k.encode(np.zeros((4, 6)))
        out = k.decode(p)
    assert p.scale == 1.0
    assert np.array_equal(out, np.zeros((4, 6)))
    assert k.error(np.zeros((4, 6))) == 0.0


# --------------------------------------------------------------------------- structure classes
def test_dense_reference_classifier_admits_exactly_three_quarters_of_the_side_in_diagonals():
    # 6 full diagonals (offsets 0..5) of an 8×8 tile: n_diagonals = 6 = 0.75·8 and
    # nnz = 8+7+6+5+4+3 = 33 >= 0.6·6·8 — the diagonal rule holds, with equality on the share;
    # a 7th (offset 6, 7 > 6 diagonals) breaks it. (The selector's fast classifier on the same
    # boundary: tests/selection/test_selection_details.py.)
    tile = np.zeros((8, 8))
    for o in range(6):
        i = np.arange(8 - o)
        tile[i, i + o] = 1.0 + o
    assert classify_dense(tile) == 0
    tile[np.arange(2), np.arange(2) + 6] = 7.0
    assert classify_dense(tile) != 0
