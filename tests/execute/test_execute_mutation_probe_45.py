"""Mutation probe (45th session) of the plan / packing / fused executor: behaviour that no test
pinned. Each test names the mutant it kills; every expectation is a hand count or a slow
reference (scipy, the kernels' own ``approx``, the plan built after the analysis' full pass)."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.execute.plan import FusionPlan
from akfviz.kernels.quant import quant_approx


def _fresh_and_ready(A, T):
    """An analysis before its full pass (the plan may be routed from the matrix, compact route)
    and one after it (the tile-order route)."""
    fresh = akfviz.analyze(A, tile=T)
    ready = akfviz.analyze(A, tile=T)
    ready.tileset.v  # runs the full pass
    return fresh, ready


def _diag_block(shape, entries):
    A = sp.lil_array(shape)
    for (i, j), v in entries.items():
        A[i, j] = v
    return sp.csr_array(A)


# ------------------------------------------------------------------ DIA layout at the boundary
def _boundary_half_side():
    """32 × 32, T = 16: tile (0, 0) holds exactly 8 = T/2 entries on its main diagonal (a full
    run: the DIA layout's own threshold ``2·nnz ≥ min(h, w)``); the other tiles hold fewer."""
    e = {(i, i): 1.0 + i for i in range(8)}
    e.update({(3, 20): 2.0, (20, 3): -1.0, (30, 31): 0.5})
    return _diag_block((32, 32), e)


def _short_last_row_block():
    """20 × 20, T = 16: the last row block is 4 rows high; tile (1, 0) (rows 16–19, columns 0–15)
    holds a full diagonal run of 4 = min(h, w) entries, tile (0, 0) three scattered entries."""
    e = {(16 + i, i): 1.0 + i for i in range(4)}
    e.update({(0, 5): 1.0, (7, 2): 2.0, (12, 12): 3.0})
    return _diag_block((20, 20), e)


CASES = [(_boundary_half_side, 16, "half-side"), (_short_last_row_block, 16, "short-last-block")]


@pytest.mark.parametrize("kernel", ["QUANT8", "DIA"])
@pytest.mark.parametrize("make,T,label", CASES, ids=[c[2] for c in CASES])
def test_tiles_at_the_dia_threshold_keep_the_dia_layout_before_the_full_pass(make, T, label, kernel):
    # kills F08 (_compact_route: 2·max nnz <= shortest side instead of <): half-side case;
    # F09 (shortest side taken as T, the short last row block ignored) and
    # F10 (_rule_holds_for_all: rb_ptr[b + 1] < t, a row block's first tile measured with the
    # previous block's height): short-last-block case.
    # Rule (fused.to_residual / diagonal_tiles): a DIA tile stays in its layout from min(h, w)/2
    # entries on; a QUANT8 tile on one full diagonal run of that many entries runs as DIA.
    A = make()
    fresh, ready = _fresh_and_ready(A, T)
    p_fresh = FusionPlan(fresh, [kernel] * fresh.tileset.n_tiles)
    p_ready = FusionPlan(ready, [kernel] * ready.tileset.n_tiles)
    assert p_ready._packed.format_tiles()["dia"] == 1          # hand count: the one full run
    assert p_fresh._packed.format_tiles() == p_ready._packed.format_tiles()
    assert p_fresh.to_dict()["executor"] == p_ready.to_dict()["executor"]
    np.testing.assert_array_equal(p_fresh.tile_errors, p_ready.tile_errors)
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    np.testing.assert_allclose(p_fresh.matvec(x), p_fresh.approx_matrix() @ x, rtol=1e-13, atol=1e-13)


def test_a_diagonal_run_exactly_two_thirds_full_runs_as_dia():
    # kills K03 (long_diagonal_runs: nnz > min_fill·slots instead of >=): tile (0, 0) of a 16 × 16
    # matrix at T = 8 holds rows 0, 1, 3, 5 of its main diagonal: one run of 6 slots, 4 entries,
    # 3·4 = 2·6 (the rule's equality case), 2·4 ≥ 8 entries and 1 ≤ 8/4 diagonals: DIA.
    A = _diag_block((16, 16), {(0, 0): 1.0, (1, 1): 2.0, (3, 3): 3.0, (5, 5): 4.0,
                               (9, 2): 1.0, (12, 13): -2.0})
    for pa in _fresh_and_ready(A, 8):
        plan = FusionPlan(pa, ["QUANT8"] * pa.tileset.n_tiles)
        assert plan._packed.format_tiles()["dia"] == 1
        x = np.arange(1.0, 17.0)
        np.testing.assert_allclose(plan.matvec(x), plan.approx_matrix() @ x, rtol=1e-14)


def _quant8_reference_product(pa, x):
    """``Â x`` from the QUANT8 kernel's own approximation on the TileSet (slow reference)."""
    ts = pa.tileset
    ap = quant_approx(ts, np.arange(ts.n_tiles))
    seg = np.repeat(ap.idx, np.diff(ap.ptr))
    rows = ts.bi[seg] * ts.tile + ap.r
    cols = ts.bj[seg] * ts.tile + ap.c
    y = np.zeros(ts.shape[0])
    np.add.at(y, rows, ap.v * x[cols])
    return y, ap.err


def test_quant8_tiles_of_subnormal_values_keep_them_when_read_from_the_matrix():
    # kills K05 (a one-entry QUANT8 tile's value taken as 127·fl(|v|/127) for every |v|, not only
    # above 1e-290: 1.5e-323 / 127 rounds to 0, so the tile's value became 0) and
    # K06 (the scale of a several-entry QUANT8 tile read from the matrix without its floor of
    # 5e-324: max|v| / 127 = 0 for a tile of tiny subnormals, 0/0 gave NaN).
    tiny = 5e-324
    A = _diag_block((32, 32), {(0, 0): 3 * tiny,                    # one-entry tile (0, 0)
                               (9, 9): 50 * tiny, (10, 10): 2 * tiny, (11, 12): tiny,  # tile (1, 1)
                               (20, 20): -7e-320,                   # one-entry tile (2, 2)
                               (30, 1): 2.5})                       # a normal one-entry tile
    fresh, ready = _fresh_and_ready(A, 8)
    x = np.ones(32)
    want, err = _quant8_reference_product(ready, x)
    assert want[0] == 3 * tiny and want[9] == 50 * tiny and want[30] == 2.5   # kept exactly
    for pa in (fresh, ready):
        plan = FusionPlan(pa, ["QUANT8"] * pa.tileset.n_tiles)
        y = plan.matvec(x)
        assert np.all(np.isfinite(y))
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(plan.tile_errors, err)
    assert not fresh._full.done   # the plan was read from the matrix (the route K05, K06 live on)


def test_skip_tiles_left_out_above_the_last_row_are_dropped_from_the_residual():
    # kills K11 (build_residual_from_csr sharing A's row pointers when only the *last* row leaves
    # no entry out, dropped[-1] == 0, instead of when no row does): the SKIP tile (0, 0) leaves
    # out entries of rows 0–7, row 15 leaves out none; the left-out slots (NaN) were multiplied.
    A = _diag_block((16, 16), {(0, 0): 4.0, (2, 5): -1.0, (7, 7): 2.0,     # tile (0, 0): SKIP
                               (1, 12): 3.0, (9, 3): 5.0, (15, 15): 6.0, (15, 2): 1.5})
    fresh, ready = _fresh_and_ready(A, 8)
    ts = fresh.tileset
    names = np.array(["CSC"] * ts.n_tiles, dtype=object)
    names[(ts.bi == 0) & (ts.bj == 0)] = "SKIP"
    Ahat = A.toarray()
    Ahat[:8, :8] = 0.0                                          # Â: A without the skipped tile
    x = np.arange(1.0, 17.0)
    for pa in (fresh, ready):
        plan = FusionPlan(pa, names)
        np.testing.assert_array_equal(plan.matvec(x), Ahat @ x)
        np.testing.assert_array_equal(plan.matmat(np.c_[x, -x]), Ahat @ np.c_[x, -x])
        assert plan._packed.format_tiles()["residual_entries"] == 4
    assert not fresh._full.done
