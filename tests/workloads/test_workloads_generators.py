"""Tests of akfviz.workloads.generators: registry, shapes, determinism, structure, errors."""
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.errors import InputError, ResourceLimitError
from akfviz.workloads import LoadLimits, generate, generator_info, generator_params, generators
from akfviz.workloads.generators import GENERATORS

REQUIRED = {"uniform", "banded", "stencil5", "stencil9", "block_diagonal", "clustered", "powerlaw",
            "nm", "llm", "llm_magnitude", "llm_nm", "llm_block"}
SEEDLESS = {"stencil5", "stencil9"}  # fully determined by n and nx


def _canonical(A):
    assert isinstance(A, sp.csr_array)
    assert A.dtype == np.float64
    assert A.has_canonical_format
    assert not np.any(A.data == 0)
    assert np.all(np.isfinite(A.data))


def _same(A, B):
    return (A.shape == B.shape and np.array_equal(A.indptr, B.indptr)
            and np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data))


def test_registry_lists_required_kinds():
    names = generators()
    assert isinstance(names, list) and all(isinstance(n, str) for n in names)
    assert names == sorted(names)
    assert REQUIRED <= set(names)
    assert akfviz.generators() == names


def test_generator_info_has_every_kind_with_defaults():
    info = generator_info()
    assert list(info.name) == generators()
    assert {"name", "description", "parameters", "rectangular", "defaults"} <= set(info.columns)
    row = info.set_index("name").loc["uniform"]
    assert row.defaults["density"] == 0.01 and "density=0.01" in row.parameters
    assert generator_params("llm")["sparsity"] == 0.9
    assert all(d["seed"] == 0 for d in info.defaults)


@pytest.mark.parametrize("kind", sorted(REQUIRED))
def test_shape_dtype_and_determinism(kind):
    rect = GENERATORS[kind].rectangular
    kw = {"m": 96} if rect else {}
    A = generate(kind, n=128, seed=5, **kw)
    B = generate(kind, n=128, seed=5, **kw)
    _canonical(A)
    assert A.shape == ((128, 96) if rect else (128, 128))
    assert A.nnz > 0
    assert _same(A, B), "same seed must give the same matrix bit for bit"
    if kind not in SEEDLESS:
        C = generate(kind, n=128, seed=6, **kw)
        assert not _same(A, C), "a different seed must give a different matrix"


@pytest.mark.parametrize("kind", sorted(REQUIRED))
@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_tiny_and_odd_sizes(kind, n):
    A = generate(kind, n=n, seed=1)
    _canonical(A)
    assert A.shape == (n, n)


def test_top_level_generate_is_the_same_function():
    assert _same(akfviz.generate("uniform", n=64, density=0.1, seed=3),
                 generate("uniform", n=64, density=0.1, seed=3))


def test_uniform_nnz_and_positions():
    A = generate("uniform", n=200, m=300, density=0.05, seed=0)
    assert A.nnz == round(0.05 * 200 * 300)
    assert generate("uniform", n=10, density=0.0).nnz == 0
    assert generate("uniform", n=10, m=3, density=1.0).nnz == 30
    # density·n·m is rounded, not cut: 0.29·100 = 28.999999999999996 in floating point
    assert 0.29 * 100 < 29 and generate("uniform", n=10, density=0.29).nnz == 29


def test_uniform_positions_reach_the_last_rows_as_often_as_the_first():
    # the sparse path draws with replacement and tops up; the surplus must be dropped at random,
    # not from the end (which took ≈ 20 entries from the last rows of every draw)
    n, total = 1000, 1000 * 1000
    gaps_end, gaps_start = [], []
    for seed in range(20):
        A = generate("uniform", n=n, density=0.01, seed=seed).tocoo()
        keys = np.sort(A.row.astype(np.int64) * n + A.col)
        assert keys.size == 10_000
        gaps_end.append(total - 1 - keys[-1])
        gaps_start.append(keys[0])
    # the gap after the last of 10,000 uniform keys among 1e6 has mean ≈ 100 (sd ≈ 100 per draw)
    assert np.mean(gaps_end) < 300 and np.mean(gaps_start) < 300


def test_banded_bandwidth_and_full_band():
    A = generate("banded", n=100, m=80, bandwidth=5, density=1.0, seed=0)
    r, c = A.nonzero()
    assert np.max(np.abs(r - c)) == 5
    ref = sum(1 for i in range(100) for j in range(80) if abs(i - j) <= 5)
    assert A.nnz == ref
    B = generate("banded", n=300, bandwidth=10, density=0.3, seed=1)
    r, c = B.nonzero()
    assert np.max(np.abs(r - c)) <= 10
    assert np.all(B.diagonal() != 0), "the main diagonal is always full"
    frac = (B.nnz - 300) / (300 * 21 - 110 - 300)
    assert 0.2 < frac < 0.4


def _stencil_reference(n, nx, points):
    """Slow reference: loop over unknowns and grid offsets."""
    A = np.zeros((n, n))
    offs = ([(-1, 0), (1, 0), (0, -1), (0, 1)] if points == 5 else
            [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1) if (a, b) != (0, 0)])
    for i in range(n):
        A[i, i] = 4.0 if points == 5 else 8.0
        r, c = divmod(i, nx)
        for dr, dc in offs:
            rr, cc = r + dr, c + dc
            j = rr * nx + cc
            if 0 <= cc < nx and 0 <= j < n:
                A[i, j] = -1.0
    return A


@pytest.mark.parametrize("points", [5, 9])
@pytest.mark.parametrize("n,nx", [(16, None), (17, None), (30, 7), (5, 1), (12, 12), (1, None)])
def test_stencil_matches_reference_and_is_spd(points, n, nx):
    kw = {} if nx is None else {"nx": nx}
    A = generate(f"stencil{points}", n=n, **kw)
    nx_eff = nx if nx is not None else round(math.sqrt(n))
    ref = _stencil_reference(n, nx_eff, points)
    np.testing.assert_array_equal(A.toarray(), ref)
    D = A.toarray()
    np.testing.assert_array_equal(D, D.T)
    assert np.linalg.eigvalsh(D).min() > 1e-9


def test_stencil5_equals_kronecker_laplacian():
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(6, 6))
    I = sp.identity(6)
    L = (sp.kron(I, T) + sp.kron(T, I)).toarray()
    np.testing.assert_array_equal(generate("stencil5", n=36).toarray(), L)


def test_block_diagonal_structure():
    A = generate("block_diagonal", n=100, block=16, density=1.0, seed=0)
    r, c = A.nonzero()
    assert np.all(r // 16 == c // 16)
    assert A.nnz == 6 * 16 * 16 + 4 * 4
    B = generate("block_diagonal", n=256, block=32, density=0.5, seed=0)
    assert 0.4 < B.nnz / (8 * 32 * 32) < 0.6


def test_clustered_has_dense_blocks_and_noise():
    A = generate("clustered", n=512, blocks=6, min_block=20, max_block=40, density=0.8, noise=0.0, seed=2)
    assert A.nnz <= 6 * 40 * 40
    assert A.nnz >= 0.6 * 6 * 20 * 20
    B = generate("clustered", n=512, blocks=6, min_block=20, max_block=40, density=0.8, noise=0.01, seed=2)
    assert B.nnz > A.nnz + 0.005 * 512 * 512
    C = generate("clustered", n=300, m=50, max_block=64, seed=0)
    assert C.shape == (300, 50)


def test_powerlaw_heavy_tailed_rows():
    A = generate("powerlaw", n=4096, avg_nnz=8.0, exponent=2.5, seed=0)
    lengths = np.diff(A.indptr)
    assert lengths.min() >= 1
    assert 6.0 < lengths.mean() < 10.0
    assert lengths.max() > 8 * np.median(lengths)
    steep = np.diff(generate("powerlaw", n=4096, avg_nnz=8.0, exponent=6.0, seed=0).indptr)
    assert lengths.max() > steep.max()


def _nm_counts_reference(A, group):
    """Slow reference: nonzeros in every (row, group of M columns)."""
    D = A.toarray() != 0
    n, m = D.shape
    return [[int(D[i, g:g + group].sum()) for g in range(0, m, group)] for i in range(n)]


@pytest.mark.parametrize("pattern,m", [("2:4", 64), ("1:4", 66), ("4:8", 70), ("2:4", 3)])
def test_nm_compliance(pattern, m):
    N, M = map(int, pattern.split(":"))
    A = generate("nm", n=40, m=m, pattern=pattern, seed=0)
    counts = _nm_counts_reference(A, M)
    for row in counts:
        widths = [min(M, m - g) for g in range(0, m, M)]
        assert row == [min(N, w) for w in widths]


@pytest.mark.parametrize("s", [0.5, 0.9, 0.95])
def test_llm_magnitude_sparsity(s):
    A = generate("llm", n=256, m=128, sparsity=s, seed=0)
    assert abs((1 - A.nnz / (256 * 128)) - s) < 1e-3
    B = generate("llm_magnitude", n=256, m=128, sparsity=s, seed=0)
    assert _same(A, B)


def test_llm_outliers_and_heavy_tails():
    A = generate("llm", n=512, m=512, sparsity=0.5, outlier_frac=0.01, outlier_scale=10.0, seed=0)
    rn = np.sqrt(np.asarray(A.multiply(A).sum(axis=1)).ravel())
    assert rn.max() > 5 * np.median(rn)
    light = generate("llm", n=512, m=512, sparsity=0.0, df=1000.0, outlier_frac=0.0, seed=0).data
    heavy = generate("llm", n=512, m=512, sparsity=0.0, df=3.0, outlier_frac=0.0, seed=0).data

    def kurt(x):
        return np.mean((x - x.mean()) ** 4) / np.var(x) ** 2

    assert kurt(heavy) > kurt(light) + 1.0


def test_llm_nm_and_block():
    A = generate("llm_nm", n=64, m=64, pattern="2:4", seed=0)
    assert all(row == [2] * 16 for row in _nm_counts_reference(A, 4))
    assert _same(A, generate("llm", n=64, m=64, prune="nm", pattern="2:4", seed=0))
    B = generate("llm_block", n=64, m=48, block=8, sparsity=0.75, seed=0)
    D = B.toarray() != 0
    blocks = D.reshape(8, 8, 6, 8).transpose(0, 2, 1, 3).reshape(48, 64).sum(axis=1)
    assert set(np.unique(blocks)) <= {0, 64}, "kept blocks are whole"
    assert int(np.count_nonzero(blocks)) == round(0.25 * 48)


@pytest.mark.parametrize("kind,kw", [
    ("nope", {}),
    ("uniform", {"density": -0.1}),
    ("uniform", {"density": 1.5}),
    ("uniform", {"density": "high"}),
    ("uniform", {"density": float("nan")}),
    ("uniform", {"bogus": 1}),
    ("uniform", {"n": 0}),
    ("uniform", {"n": 2.5}),
    ("uniform", {"n": True}),
    ("uniform", {"seed": -1}),
    ("uniform", {"m": 0}),
    ("stencil5", {"m": 10}),
    ("stencil5", {"nx": 0}),
    ("stencil5", {"n": 10, "nx": 11}),
    ("banded", {"bandwidth": -1}),
    ("nm", {"pattern": "3:2"}),
    ("nm", {"pattern": "a:b"}),
    ("nm", {"pattern": 24}),
    ("llm", {"prune": "random"}),
    ("llm", {"sparsity": 1.0}),
    ("llm_nm", {"sparsity": 0.5}),
    ("powerlaw", {"exponent": 1.0}),
    ("powerlaw", {"avg_nnz": 0}),
])
def test_bad_parameters_raise_input_error(kind, kw):
    kw = dict(kw)
    n = kw.pop("n", 32)
    with pytest.raises(InputError):
        generate(kind, n=n, **kw)


def test_error_messages_list_valid_choices():
    with pytest.raises(InputError, match="stencil5"):
        generate("nope")
    with pytest.raises(InputError, match="density"):
        generate("uniform", n=8, bogus=1)


def test_size_limits_checked_before_allocating():
    with pytest.raises(ResourceLimitError):
        generate("uniform", n=10**7, density=0.5)
    with pytest.raises(ResourceLimitError):
        generate("llm", n=10**5, m=10**5)
    with pytest.raises(ResourceLimitError):
        generate("stencil5", n=10**8)
    small = LoadLimits(max_nnz=100)
    with pytest.raises(ResourceLimitError):
        generate("uniform", n=100, density=0.5, limits=small)
    assert generate("uniform", n=100, density=0.005, limits=small).nnz == 50
    with pytest.raises(InputError):
        generate("uniform", n=10, limits={"max_nnz": 5})


@pytest.mark.parametrize("kind, kw, shown", [
    ("uniform", {"density": 10**400}, "density=a 401-digit number"),
    ("uniform", {"density": -10**400}, "density=a negative 401-digit number"),
    ("powerlaw", {"avg_nnz": 10**400}, "avg_nnz=a 401-digit number"),
    ("banded", {"bandwidth": Fraction(10**400, 1)}, "bandwidth=Fraction("),
    ("uniform", {"density": Fraction(10**400, 3)}, "characters) is not accepted"),
    ("clustered", {"min_block": 2**63},
     "min_block=9223372036854775808 is not accepted; it must be a whole number >= 1 and "
     "<= 9223372036854775807."),
    ("clustered", {"max_block": 10**400}, "max_block=a 401-digit number is not accepted"),
])
def test_numbers_beyond_float_range_are_refused_by_name(kind, kw, shown):
    """Held-out probe: float(10**400) raised OverflowError (a Fraction: "integer division result too
    large for a float"), and rng.integers "high is out of bounds for int64" for block sides of 2**63
    or more; now an InputError names the parameter and shows a huge number by its size."""
    with pytest.raises(InputError, match="is not accepted") as err:
        generate(kind, n=100, **kw)
    assert shown in str(err.value) and len(str(err.value)) < 300


def test_a_matrix_whose_positions_do_not_fit_int64_is_refused():
    """Held-out probe: n·m beyond 2**63 - 1 raised a raw ValueError from the key draw."""
    big = LoadLimits(max_rows=10**11, max_cols=10**11)
    with pytest.raises(InputError, match=r"n·m = 100000000000000000000 positions.*int64.*smaller n or m"):
        generate("uniform", n=10**10, density=1e-20, limits=big)


def test_numpy_integer_sizes_accepted():
    A = generate("uniform", n=np.int64(40), m=np.int32(20), seed=np.int64(1), density=0.1)
    assert A.shape == (40, 20)


def test_density_alias_for_llm_and_powerlaw():
    A = generate("llm", n=128, m=64, density=0.2, seed=0)
    assert _same(A, generate("llm", n=128, m=64, sparsity=0.8, seed=0))
    B = generate("powerlaw", n=2048, m=1000, density=0.008, seed=0)
    assert _same(B, generate("powerlaw", n=2048, m=1000, avg_nnz=8.0, seed=0))
    with pytest.raises(InputError, match="either"):
        generate("llm", n=32, density=0.2, sparsity=0.8)


@pytest.mark.parametrize("points", [5, 9])
def test_stencil_density_thins_couplings_in_symmetric_pairs(points):
    """density = fill probability of the couplings, as inside banded's band: a subset of
    the full stencil, symmetric, the diagonal kept, still SPD; 1.0 is the full operator."""
    full = generate(f"stencil{points}", n=400)
    assert _same(full, generate(f"stencil{points}", n=400, density=1.0, seed=9))
    for d in (0.0, 0.25, 0.6):
        A = generate(f"stencil{points}", n=400, density=d, seed=1)
        assert _same(A, generate(f"stencil{points}", n=400, density=d, seed=1))
        D, F = A.toarray(), full.toarray()
        assert (D[F == 0] == 0).all() and (D == D.T).all()
        np.testing.assert_array_equal(np.diag(D), np.diag(F))
        kept = (A.nnz - 400) / (full.nnz - 400)
        assert abs(kept - d) < 0.08
        assert np.linalg.eigvalsh(D).min() > 0
    assert generate(f"stencil{points}", n=400, density=0.0).nnz == 400


def test_every_generator_takes_the_spec_signature():
    """akf-spec §9: generate(kind, n=..., density=..., seed=0) works for every kind."""
    for kind in generators():
        A = generate(kind, n=256, density=0.05, seed=0)
        assert A.shape[0] == 256 and A.nnz > 0


@pytest.mark.parametrize("kind", ["nm", "llm_nm"])
@pytest.mark.parametrize("pattern, density", [("2:4", 0.3), ("1:4", 0.1), ("4:8", 0.45)])
def test_nm_density_thins_groups_and_stays_compliant(kind, pattern, density):
    n_keep, group = (int(p) for p in pattern.split(":"))
    A = akfviz.generate(kind, n=96, m=90, seed=2, pattern=pattern, density=density)
    assert A.nnz == round(density * 96 * 90)
    D = A.toarray() != 0
    for g in range(0, 90, group):
        assert D[:, g:g + group].sum(axis=1).max() <= n_keep
    full = akfviz.generate(kind, n=96, m=90, seed=2, pattern=pattern)
    # the default is the density-N/M matrix, bit for bit
    same = akfviz.generate(kind, n=96, m=90, seed=2, pattern=pattern, density=full.nnz / (96 * 90))
    assert (abs(same - full)).max() == 0 and same.nnz == full.nnz
    if kind == "llm_nm":  # further pruning removes the smallest N:M survivors
        assert ((A != 0).astype(np.int8) - (A != 0).multiply(full != 0)).nnz == 0
        assert np.abs(A.data).min() >= np.sort(np.abs(full.data))[::-1][A.nnz - 1]
    with pytest.raises(akfviz.InputError, match="at most"):
        akfviz.generate(kind, n=96, m=90, seed=2, pattern=pattern, density=min(1.0, 2 * n_keep / group))


@pytest.mark.parametrize("kind", akfviz.generators())
def test_generate_takes_density_in_the_order_of_the_contract(kind):
    """akf-spec §9: generate(kind, n=..., density=..., seed=0, **params)."""
    import inspect

    names = list(inspect.signature(akfviz.generate).parameters)
    assert names[:4] == ["kind", "n", "density", "seed"]
    default = akfviz.generate(kind, n=64, seed=3)
    assert (akfviz.generate(kind, 64, None, 3) != default).nnz == 0        # None: the kind's own default
    a = akfviz.generate(kind, 64, 0.3, 3)
    b = akfviz.generate(kind, n=64, seed=3, **{"density": 0.3})
    assert a.shape == b.shape and (a != b).nnz == 0


def test_generate_seed_has_the_same_range_as_every_other_seed():
    from akfviz.arguments import SEED_MAX

    akfviz.generate("uniform", n=32, seed=SEED_MAX)
    with pytest.raises(akfviz.InputError, match="seed"):
        akfviz.generate("uniform", n=32, seed=SEED_MAX + 1)


def test_generator_returning_wrong_shape_is_a_bug_not_silent(monkeypatch):
    """A generator registered rectangular (the default) that ignores ``m`` must not silently
    return an n×n matrix for generate(n=50, m=80): the shape check names the generator."""
    from akfviz.workloads.generators import Generator

    def _square_only(rng, n, m, limits):
        return sp.identity(n, format="csr")

    monkeypatch.setitem(GENERATORS, "_throwaway_square", Generator(
        "_throwaway_square", "test-only: forgets rectangular=False", _square_only))
    with pytest.raises(RuntimeError, match="_throwaway_square") as info:
        generate("_throwaway_square", n=50, m=80)
    assert not isinstance(info.value, InputError)
    assert "(50, 80)" in str(info.value)
    # the square request still works: the check only refuses a wrong shape
    assert generate("_throwaway_square", n=50).shape == (50, 50)
    monkeypatch.undo()
    assert "_throwaway_square" not in GENERATORS
