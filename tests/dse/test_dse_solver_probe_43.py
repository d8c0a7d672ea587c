"""Findings of an adversarial probe of the sweep API (akfviz.dse) and of run_solver (probe 43)."""
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz import InputError
from akfviz.dse import expand_grid, parse_grid
from akfviz.npu.iterative import run_solver

HW = akfviz.HardwareConfig(rows=2, cols=2)


@pytest.fixture(scope="module")
def stencil():
    A = akfviz.generate("stencil5", n=64, seed=0)
    return A, akfviz.select(akfviz.analyze(A, tile=16), error_budget=0)


# ---- run_solver: the right-hand side b

def test_ragged_b_is_an_input_error(stencil):
    # np.iscomplexobj ran before the conversion and raised numpy's own ValueError
    with pytest.raises(InputError, match="vector of 64 real numbers"):
        run_solver(stencil[1], HW, b=[[1.0], [1.0, 2.0]], iterations=2)


@pytest.mark.parametrize("value, words", [(1e-170, "too small"), (1e-320, "too small"), (1e308, "too large")])
def test_b_whose_norm_underflows_or_overflows_is_refused(stencil, value, words):
    # entries 1e-170: ‖b‖ underflowed to 0, so the residual read 0.0 and Jacobi "converged" at
    # iteration 1; entries 1e308: every residual was NaN. Neither was refused.
    with pytest.raises(InputError, match=words) as exc:
        run_solver(stencil[1], HW, method="jacobi", b=np.full(64, value), iterations=3)
    assert "divide it by its largest entry" in str(exc.value)


def test_b_of_tiny_but_representable_scale_still_runs(stencil):
    A, plan = stencil
    b = np.random.default_rng(1).standard_normal(64)
    r1 = run_solver(plan, HW, method="cg", b=b, iterations=5, tol=0)
    r2 = run_solver(plan, HW, method="cg", b=b * 1e-100, iterations=5, tol=0)
    np.testing.assert_allclose(r2.curves["residual_exact"], r1.curves["residual_exact"], rtol=1e-10)
    with pytest.raises(InputError, match="too small"):
        run_solver(plan, HW, method="cg", b=b * 1e-170, iterations=5, tol=0)


def test_nan_in_b_is_named_as_such(stencil):
    b = np.ones(64)
    b[3] = np.nan
    # the message was "must be a finite vector of length 64, got shape (64,)": the right shape
    with pytest.raises(InputError, match="1 NaN or infinite entry"):
        run_solver(stencil[1], HW, b=b, iterations=2)


@pytest.mark.parametrize("b, words", [(np.ones(64, bool), "True/False"), (["1.0"] * 64, "text")])
def test_b_of_booleans_or_text_is_refused(stencil, b, words):
    with pytest.raises(InputError, match=words):
        run_solver(stencil[1], HW, b=b, iterations=2)


# ---- run_solver: CG and power iteration that must stop early

def test_cg_on_a_semidefinite_matrix_is_refused():
    # symmetric, positive diagonal, but singular: b = (1, -1) is in A's null space, so pᵀAp = 0 at
    # once; the exact run stopped silently with an all-NaN curve
    A = sp.csr_array(np.array([[1.0, 1.0], [1.0, 1.0]]))
    plan = akfviz.select(akfviz.analyze(A, tile=4), error_budget=0)
    with pytest.raises(InputError, match="not positive definite.*pᵀAp = 0"):
        run_solver(plan, HW, method="cg", b=np.array([1.0, -1.0]), iterations=3)


def _reference(method, M, A, b, it):
    """Plain numpy Jacobi / CG / power iteration with operator M, residuals against A."""
    out, x = [], np.zeros_like(b)
    if method == "cg":
        r = b.copy()
        p = r.copy()
        for _ in range(it):
            Ap = M @ p
            if p @ Ap == 0:
                break
            a = (r @ r) / (p @ Ap)
            x = x + a * p
            rn = r - a * Ap
            out.append(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
            p, r = rn + (rn @ rn) / (r @ r) * p, rn
    else:
        x = b / np.linalg.norm(b)
        for _ in range(it):
            y = M @ x
            if not np.linalg.norm(y):
                break
            x = y / np.linalg.norm(y)
            lam = x @ (A @ x)
            out.append(np.linalg.norm(A @ x - lam * x) / abs(lam))
    return np.array(out)


@pytest.mark.parametrize("method, words", [("cg", "pᵀÂp = 0"), ("power", "Â x = 0")])
def test_a_plan_that_drops_every_tile_says_why_its_curve_is_empty(method, words):
    # every tile SKIPped: Â = 0. The lossy curve was all NaN with no note at all.
    A = akfviz.generate("stencil5", n=64, seed=0)
    plan = akfviz.select(akfviz.analyze(A, tile=16), alpha=0.01, beta=10)
    assert set(plan.tile_kernels) == {"SKIP"} and not plan.approx_matrix().count_nonzero()
    b = np.random.default_rng(2).standard_normal(64)
    r = run_solver(plan, HW, method=method, b=b, iterations=6, tol=0)
    assert r.curves["residual_approx"].isna().all()
    np.testing.assert_array_equal(r.curves["residual_exact"].to_numpy(), _reference(method, A, A, b, 6))
    assert _reference(method, plan.approx_matrix(), A, b, 6).size == 0
    (note,) = [n for n in r.notes if words in n]
    assert "lossy plan" in note and "iteration 1" in note and "NaN" in note


def test_power_iteration_whose_start_vector_the_exact_matrix_annihilates_is_explained():
    A = sp.csr_array(np.array([[0.0, 1.0], [0.0, 0.0]]))
    plan = akfviz.select(akfviz.analyze(A, tile=4), error_budget=0)
    r = run_solver(plan, HW, method="power", b=np.array([1.0, 0.0]), iterations=3)
    assert any(n.startswith("The exact A's power iteration stopped at iteration 1: A x = 0") for n in r.notes)


# ---- sweep parameters

@pytest.mark.parametrize("value", [Fraction(17, 2), Decimal("8.7")])
def test_sweep_never_truncates_a_fractional_tile(value):
    # int(Fraction(17, 2)) is 8: the sweep ran tile 8 for a tile of 8.5
    with pytest.raises(InputError, match="'tile' needs a whole number"):
        expand_grid({"tile": [value]})
    assert expand_grid({"tile": [Fraction(16, 2)]}) == [{"tile": 8}]


def test_sweep_message_for_a_huge_number_is_short_and_says_out_of_range():
    # was "needs a number, got 1000…000" (401 digits): it is a number, only too large
    with pytest.raises(InputError) as exc:
        expand_grid({"alpha": [10**400]})
    msg = str(exc.value)
    assert "401-digit number" in msg and "outside [0, 1e+12]" in msg and len(msg) < 150


def test_sweep_message_echoes_a_large_float_as_written():
    # a tile of 1e30 was echoed as 1000000000000000019884624838656
    with pytest.raises(InputError, match=r"'tile' = 1e\+30 is outside \[4, 256\]"):
        expand_grid({"tile": [1e30]})
    with pytest.raises(InputError, match=r"'rows' = 1e\+30 is outside"):
        parse_grid("rows=1e30")


def test_cg_run_past_convergence_on_a_tiny_scaled_spd_matrix_is_not_called_indefinite():
    # A = 1e-100 · stencil is SPD; with tol = 0 the search direction shrinks until pᵀAp underflows
    # to 0. That must not be mistaken for pᵀAp = 0 of a semidefinite matrix (an InputError), and
    # the stop is explained.
    A = (akfviz.generate("stencil5", n=64, seed=0) * 1e-100).tocsr()
    plan = akfviz.select(akfviz.analyze(A, tile=16), error_budget=0)
    b = np.random.default_rng(0).standard_normal(64)
    r = run_solver(plan, HW, method="cg", b=b, iterations=1000, tol=0)
    assert r.curves["residual_exact"].dropna().iloc[-1] < 1e-12
    assert any(n.startswith("The exact A's CG stopped") and "rounded to 0" in n for n in r.notes)


def test_jacobi_that_overflows_says_so_without_runtime_warnings():
    # a diagonal of 1e-200: x = b / d is 1e200 at once and ‖b − A x‖ overflows. The residual was
    # inf with no note, numpy printed overflow warnings, and solution_error warned too.
    import warnings

    A = sp.csr_array(np.array([[1e-200, 1.0], [1.0, 1e-200]]))
    plan = akfviz.select(akfviz.analyze(A, tile=4), error_budget=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = run_solver(plan, HW, method="jacobi", b=np.array([1.0, 2.0]), iterations=5)
    assert r.exact_diverges and np.isinf(r.curves["residual_exact"].iloc[0])
    assert any(n.startswith("The exact A's run overflowed at iteration 1") and "diagonal" in n for n in r.notes)


def test_solution_error_of_huge_iterates_is_their_relative_distance():
    import warnings

    from akfviz.npu.iterative import solution_error

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = solution_error(np.array([1e200, 3e200]), np.array([1e200, 2e200]), "jacobi")
    assert e == pytest.approx(solution_error(np.array([1.0, 3.0]), np.array([1.0, 2.0]), "jacobi"))
    assert e == pytest.approx(1 / np.sqrt(5))
    assert solution_error(np.array([1e300]), np.array([1e-300]), "cg") == np.inf


def test_tile_slot_helpers_refuse_bad_input_plainly():
    from akfviz.dse.sweep import every_slot_nonempty, tile_slots

    assert tile_slots((10, 10), 4) == 9 and tile_slots(np.array([10, 10]), np.int64(4)) == 9
    with pytest.raises(InputError, match="tile must be a whole number"):   # was ZeroDivisionError
        tile_slots((10, 10), 0)
    with pytest.raises(InputError, match="tile must be a whole number"):   # was numpy's ValueError
        tile_slots((10, 10), "a")
    with pytest.raises(InputError, match="one tile side per row"):         # was True (zip cut the rows)
        every_slot_nonempty([1, 2], [4], (4, 4))
