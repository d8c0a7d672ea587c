"""Kernel catalogue: registry, single-tile round trips against slow references (akf-spec §3)."""
import math

import numpy as np
import pytest

from akfviz.errors import InputError
from akfviz.kernels import DEFAULT_CANDIDATES, KERNELS, LOSSLESS, get_kernel, kernel_names

NAMES = ["DENSE", "CSC", "BITMAP", "DIA", "BLOCK", "NM2:4", "NM1:4", "NM4:8", "PRUNE50", "PRUNE25",
         "QUANT8", "QUANT8D", "LOWRANK1", "LOWRANK2", "LOWRANK4", "LOWRANK8", "SKIP"]


def random_tile(rng, h, w, density):
    t = rng.standard_normal((h, w)) * (rng.random((h, w)) < density)
    return t


def edge_tiles(rng):
    """Empty, 1×1, single nonzero, edge (non-square) and full tiles."""
    yield np.zeros((4, 4))
    yield np.zeros((1, 1))
    yield np.array([[2.5]])
    t = np.zeros((7, 5))
    t[3, 2] = -1.25
    yield t
    yield random_tile(rng, 5, 7, 0.4)
    yield random_tile(rng, 16, 16, 0.2)
    yield random_tile(rng, 32, 32, 0.9)
    yield random_tile(rng, 13, 32, 1.0)


# ------------------------------------------------------------------ slow references
def ref_nm(t, n, m):
    out = np.zeros_like(t)
    for i in range(t.shape[0]):
        for g0 in range(0, t.shape[1], m):
            cols = list(range(g0, min(g0 + m, t.shape[1])))
            cols = [j for j in cols if t[i, j] != 0]
            cols.sort(key=lambda j: (-abs(t[i, j]), j))
            for j in cols[:n]:
                out[i, j] = t[i, j]
    return out


def ref_prune(t, percent):
    items = [(i, j) for i in range(t.shape[0]) for j in range(t.shape[1]) if t[i, j] != 0]
    keep = math.ceil(len(items) * percent / 100)
    items.sort(key=lambda ij: (-abs(t[ij]), ij[0] * t.shape[1] + ij[1]))
    out = np.zeros_like(t)
    for ij in items[:keep]:
        out[ij] = t[ij]
    return out


def ref_quant(t):
    mx = np.abs(t).max()
    if mx == 0:
        return np.zeros_like(t)
    s = mx / 127
    return np.array([[max(-127, min(127, round(v / s))) * s for v in row] for row in t])


def ref_lowrank_error(t, r):
    s = np.linalg.svd(t, compute_uv=False)
    return float(np.sum(s[r:] ** 2))


REFERENCE = {
    "NM2:4": lambda t: ref_nm(t, 2, 4), "NM1:4": lambda t: ref_nm(t, 1, 4),
    "NM4:8": lambda t: ref_nm(t, 4, 8), "PRUNE50": lambda t: ref_prune(t, 50),
    "PRUNE25": lambda t: ref_prune(t, 25), "QUANT8": ref_quant, "QUANT8D": ref_quant,
    "SKIP": lambda t: np.zeros_like(t),
}


# ------------------------------------------------------------------ registry
def test_registry_names_and_attributes():
    assert kernel_names() == NAMES
    assert set(LOSSLESS) == {"DENSE", "CSC", "BITMAP", "DIA", "BLOCK"}
    assert set(DEFAULT_CANDIDATES) <= set(KERNELS)
    for name, k in KERNELS.items():
        assert k.name == name and get_kernel(name) is k
        assert k.precision in ("fp32", "int8")
        assert isinstance(k.description, str) and k.description and "\n" not in k.description
        assert k.family in ("DENSE", "CSC", "BITMAP", "DIA", "BLOCK", "NM", "PRUNE", "QUANT8",
                            "LOWRANK", "SKIP")
    assert KERNELS["QUANT8"].precision == "int8" and KERNELS["QUANT8D"].precision == "int8"


def test_unknown_kernel_lists_valid_names():
    with pytest.raises(InputError, match="NM2:4") as ei:
        get_kernel("NM3:4")
    assert isinstance(ei.value, ValueError)
    with pytest.raises(InputError):
        get_kernel(None)


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((0, 3)), np.array([[np.nan]]),
                                 np.array([["a"]]), np.zeros((300, 2))])
def test_bad_tiles_rejected(bad):
    with pytest.raises(InputError):
        get_kernel("CSC").encode(bad)


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("name", ["DENSE", "CSC", "BITMAP", "DIA", "BLOCK"])
def test_lossless_round_trip_exact(name):
    k = get_kernel(name)
    rng = np.random.default_rng(1)
    for t in edge_tiles(rng):
        back = k.decode(k.encode(t))
        assert back.shape == t.shape
        np.testing.assert_array_equal(back, t)
        assert k.error(t) == 0.0


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_lossy_kernels_match_reference(name):
    k = get_kernel(name)
    rng = np.random.default_rng(2)
    for t in edge_tiles(rng):
        want = REFERENCE[name](t)
        got = k.decode(k.encode(t))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15 * max(1.0, np.abs(t).max()))
        assert k.error(t) == pytest.approx(float(np.sum((t - want) ** 2)), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("n,m", [(2, 4), (1, 4), (4, 8)])
def test_nm_exact_on_complying_tiles(n, m):
    k = get_kernel(f"NM{n}:{m}")
    rng = np.random.default_rng(3)
    for h, w in [(8, 8), (5, 13), (32, 32), (1, 3)]:
        t = np.zeros((h, w))
        for i in range(h):
            for g0 in range(0, w, m):
                cols = np.arange(g0, min(g0 + m, w))
                pick = rng.choice(cols, size=min(n, cols.size), replace=False)
                t[i, pick] = rng.standard_normal(pick.size)
        np.testing.assert_array_equal(k.decode(k.encode(t)), t)
        assert k.error(t) == 0.0
    # a non-complying tile loses exactly the smallest entries
    t = np.array([[4.0, -3.0, 2.0, 1.0]])
    assert get_kernel("NM2:4").error(t) == pytest.approx(2.0 ** 2 + 1.0 ** 2)


def test_nm_ties_broken_by_lower_column():
    t = np.array([[1.0, -1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(get_kernel("NM2:4").decode(get_kernel("NM2:4").encode(t)),
                                  [[1.0, -1.0, 0.0, 0.0]])


@pytest.mark.parametrize("r", [1, 2, 4, 8])
def test_lowrank_exact_on_low_rank_tiles(r):
    k = get_kernel(f"LOWRANK{r}")
    rng = np.random.default_rng(4)
    for h, w in [(32, 32), (9, 20), (1, 1), (3, 2)]:
        rr = min(r, h, w)
        t = rng.standard_normal((h, rr)) @ rng.standard_normal((rr, w))
        np.testing.assert_allclose(k.decode(k.encode(t)), t, atol=1e-12 * np.abs(t).max())
    t = random_tile(rng, 16, 16, 0.7)
    assert k.error(t) == pytest.approx(ref_lowrank_error(t, r), rel=1e-9, abs=1e-20)
    p = k.encode(t)
    assert p.us.shape == (16, r) and p.v.shape == (16, r)


def test_quant8_scale_and_codes():
    t = np.array([[127.0, 0.0], [-63.4, 0.4]])
    p = get_kernel("QUANT8").encode(t)
    assert p.scale == 1.0
    assert sorted(p.values.tolist()) == [-63, 127]  # 0.4 rounds to code 0: dropped from CSC
    pd8 = get_kernel("QUANT8D").encode(t)
    assert pd8.codes.dtype == np.int8
    np.testing.assert_array_equal(pd8.codes, [[127, 0], [-63, 0]])


def test_skip_error_is_mass():
    t = np.array([[3.0, 0.0], [0.0, 4.0]])
    assert get_kernel("SKIP").error(t) == 25.0
    assert get_kernel("SKIP").payload_bytes(get_kernel("SKIP").encode(t)) == 0


def test_payload_bytes_hand_counts():
    t = np.zeros((8, 8))
    t[0, 0] = 1.0
    t[5, 0] = 2.0
    t[2, 3] = 3.0
    # CSC: 3 values·(4+1) + (2 cols + 1)·2 pointers + 2 routing entries
    assert get_kernel("CSC").payload_bytes(get_kernel("CSC").encode(t)) == 15 + 6 + 2
    # DENSE: 64 values·4 + 8 routing entries
    assert get_kernel("DENSE").payload_bytes(get_kernel("DENSE").encode(t)) == 256 + 8
    # BITMAP: 8 columns·1 byte + 3·4 values + 2 routing entries
    assert get_kernel("BITMAP").payload_bytes(get_kernel("BITMAP").encode(t)) == 8 + 12 + 2
    # BLOCK: 3 nonempty 4×4 blocks? (0,0) holds (0,0),(2,3); (1,0) holds (5,0) → 2 blocks
    assert get_kernel("BLOCK").payload_bytes(get_kernel("BLOCK").encode(t)) == 2 * (64 + 2) + 4
    # NM2:4: 8 rows·2 groups·2 slots = 32 slots·4 B + 32·2 bits = 8 B + 8 routing
    assert get_kernel("NM2:4").payload_bytes(get_kernel("NM2:4").encode(t)) == 128 + 8 + 8
    # LOWRANK2: (8+8)·2·4 + 8
    assert get_kernel("LOWRANK2").payload_bytes(get_kernel("LOWRANK2").encode(t)) == 128 + 8
    # QUANT8: 3·(1+1) + 3·2 + 2 + 4 (scale)
    assert get_kernel("QUANT8").payload_bytes(get_kernel("QUANT8").encode(t)) == 6 + 6 + 2 + 4


@pytest.mark.parametrize("steps", [1, 2, 63, 64, 200])
def test_quant8_on_tiles_of_tiny_subnormals(steps):
    # a held-out probe: max|v| / 127 rounds to 0 when max|v| <= 63 subnormal steps, and select() crashed
    # with ZeroDivisionError; single-tile encode stored scale 0
    import akfviz
    import scipy.sparse as sp

    tiny = steps * 5e-324
    t = np.zeros((4, 4))
    t[1, 2] = tiny
    t[3, 0] = -tiny
    for name in ("QUANT8", "QUANT8D"):
        k = get_kernel(name)
        back = k.decode(k.encode(t))
        assert np.all(np.isfinite(back))
        assert k.error(t) == pytest.approx(float(((t - back) ** 2).sum()), abs=1e-300)
        if steps <= 63:
            assert np.array_equal(back, t)  # whole multiples of the smallest subnormal: exact
    A = sp.csr_array(([1.0, tiny], ([0, 40], [0, 40])), shape=(64, 64))
    pa = akfviz.analyze(A, tile=32)
    plan = akfviz.select(pa)
    x = np.ones(64)
    y = plan.matvec(x)
    assert np.all(np.isfinite(y)) and y[0] == 1.0
    forced = akfviz.select(pa, kernels=["QUANT8"])
    assert np.all(np.isfinite(forced.matvec(x)))


# --------------------------------------------------------------------------- bytes on narrow / short tiles
def test_nm_bytes_round_a_partial_column_group_up():
    # hand counts: NM2:4 on 2 × 6 has groups of 4 and 2 columns → 2 rows · 2 groups · 2 slots = 8
    # slots: 8 · 4 B + ⌈8 · 2 bits / 8⌉ + 6 routes = 40 B; NM4:8 on 3 × 5: 3 · 1 · 4 = 12 slots:
    # 48 + ⌈12 · 3 / 8⌉ + 5 = 58 B
    t = np.zeros((2, 6))
    t[0, 0], t[1, 5] = 1.0, 2.0
    k = get_kernel("NM2:4")
    assert k.payload_bytes(k.encode(t)) == 40
    t = np.zeros((3, 5))
    t[0, 0], t[2, 4] = 1.0, 2.0
    k = get_kernel("NM4:8")
    assert k.payload_bytes(k.encode(t)) == 58


def test_bitmap_bytes_round_a_short_column_up_to_a_byte():
    # 6 rows: each column's bits take one byte, not 0: 6 · 1 + 3 values · 4 B + 2 routed columns = 20
    t = np.zeros((6, 6))
    t[0, 1], t[3, 1], t[5, 4] = 1.0, 2.0, 3.0
    k = get_kernel("BITMAP")
    assert k.payload_bytes(k.encode(t)) == 20


def test_npu_work_of_an_edge_tile_counts_the_same_bytes():
    import scipy.sparse as sp

    import akfviz

    D = np.zeros((34, 38))          # T = 32: the only nonempty tile is the 2 × 6 corner
    D[32, 32], D[33, 37], D[32, 36] = 1.0, 2.0, 3.0
    pa = akfviz.analyze(sp.csr_array(D), tile=32)
    assert pa.n_tiles == 1
    assert list(get_kernel("NM2:4").npu_work(pa.tileset).payload_bytes) == [40]
    assert list(get_kernel("BITMAP").npu_work(pa.tileset).payload_bytes) == [6 * 1 + 3 * 4 + 3]
