"""Iterative solvers on a fused plan: real numbers on the CPU, time and traffic on the NPU (spec §7).

:func:`run_solver` runs Jacobi, power iteration or conjugate gradients twice on the CPU — once
with the plan's (possibly lossy) operator ``Â`` (``plan.matvec``) and once with the exact ``A``
— and measures both runs' residuals against the exact ``A``. It then simulates the same
number of ``y = Â x`` iterations on the NPU in persistent and non-persistent mode and reports
cycles and DRAM bytes per iteration (the solver's vector updates are not simulated).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..arguments import check_flag, check_real, check_seed, check_whole
from ..errors import InputError
from ..workloads.validate import refuse_missing
from ..execute.plan import relative_norm

SOLVERS = {}


def _solver(name):
    def deco(f):
        SOLVERS[name] = f
        return f
    return deco


# Every solver takes (matvec, A, b, iterations, tol, found): ``found`` is a dict that receives
# what the run learns about the operator (CG: ``indefinite``; CG and power iteration:
# ``breakdown`` = (iteration, "zero", "underflow" or "overflow") when they had to stop; Jacobi
# only "overflow").


@_solver("jacobi")
def _jacobi(matvec, A, b, iterations, tol, found):
    """``x ← x + D⁻¹ (b − A x)`` (D = diag of the exact A); residual ``‖b − A x‖ / ‖b‖``."""
    d = A.diagonal()
    x = np.zeros_like(b)
    nb = np.linalg.norm(b) or 1.0
    res = []
    for _ in range(iterations):
        x = x + (b - matvec(x)) / d
        res.append(np.linalg.norm(b - A @ x) / nb)
        if not np.isfinite(res[-1]):
            found.setdefault("breakdown", (len(res), "overflow"))
            break
        if res[-1] < tol:
            break
    return x, res


@_solver("power")
def _power(matvec, A, b, iterations, tol, found):
    """``x ← Âx / ‖Âx‖``; residual ``‖A x − λ x‖ / |λ|`` with the Rayleigh quotient ``λ`` of A."""
    x = b / (np.linalg.norm(b) or 1.0)
    res = []
    for _ in range(iterations):
        y = matvec(x)
        ny = np.linalg.norm(y)
        if ny == 0 or not np.isfinite(ny):
            found.setdefault("breakdown", (len(res) + 1, "zero" if ny == 0 else "overflow"))
            res.append(float("nan"))
            break
        x = y / ny
        Ax = A @ x
        lam = float(x @ Ax)
        res.append(np.linalg.norm(Ax - lam * x) / (abs(lam) or 1.0))
        if res[-1] < tol:
            break
    return x, res


@_solver("cg")
def _cg(matvec, A, b, iterations, tol, found):
    """Conjugate gradients with operator ``matvec``; residual ``‖b − A x‖ / ‖b‖`` (exact A).

    ``found`` receives ``indefinite``: the first iteration whose search
    direction has ``pᵀ Â p < 0`` — proof that the operator is not positive definite, so
    CG's monotone convergence no longer holds — and ``breakdown``: ``(iteration, why)`` when
    ``pᵀ Â p`` is 0 or not finite, so the step cannot be taken: ``why`` is ``"zero"`` (``Â`` not
    positive definite along ``p``), ``"underflow"`` (``p`` so small that ``pᵀÂp`` rounds to 0)
    or ``"overflow"``."""
    x = np.zeros_like(b)
    r = b - matvec(x)
    p = r.copy()
    rr = r @ r
    nb = np.linalg.norm(b) or 1.0
    res = []
    for _ in range(iterations):
        Ap = matvec(p)
        pAp = p @ Ap
        if pAp < 0 and "indefinite" not in found:
            found["indefinite"] = len(res) + 1
        if pAp == 0 or not np.isfinite(pAp):
            # p ≠ 0 here (a zero residual stopped the run before), so pᵀÂp = 0 means the operator
            # sends p to 0 or is only semidefinite; a non-finite one is an overflow
            if not np.isfinite(pAp):
                why = "overflow"
            else:
                # pᵀÂp of a tiny p underflows to 0 on an SPD matrix too (a long run with tol = 0
                # on a matrix scaled by 1e-100): ask again with p scaled to entries of size 1
                q = p / np.max(np.abs(p))
                why = "underflow" if q @ matvec(q) > 0 else "zero"
            found.setdefault("breakdown", (len(res) + 1, why))
            break
        alpha = rr / pAp
        x = x + alpha * p
        r = r - alpha * Ap
        res.append(np.linalg.norm(b - A @ x) / nb)
        rr_new = r @ r
        if res[-1] < tol or rr_new == 0:  # (a zero residual is the exact solution: nothing to divide by)
            break
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x, res


@dataclass(eq=False)
class SolverResult:
    """Convergence of both operators and the NPU cost of the iterations.

    Attributes
    ----------
    method : str
    curves : DataFrame
        ``iteration, residual_exact, residual_approx`` (NaN after a run stopped).
    npu : DataFrame
        Index ``persistent`` / ``non-persistent``: ``cycles, cycles_per_iteration,
        seconds_per_iteration, dram_bytes, dram_bytes_per_iteration, energy_pj``.
    iterations_to_tol : dict
        First iteration whose residual is below ``tol`` for "exact" and "approx" (None if never).
    tol : float
        The residual threshold ``iterations_to_tol`` counts against (the ``tol`` the run was given).
    relative_error : float
        The plan's ‖A − Â‖_F / ‖A‖_F.
    notes : list of str
        Why the lossy run may misbehave, found while running it: for CG, ``Â`` not symmetric or
        not positive definite (a direction with ``pᵀÂp < 0``); for any method, a residual that
        climbs to over 10× its lowest value (see :func:`diverging_notes`).
    x_exact, x_approx : ndarray (n,)
        The last iterate of the run with the exact ``A`` and of the run with the plan's ``Â``
        (power iteration: unit-norm eigenvector estimates).
    solution_error : float
        ``‖x_approx − x_exact‖ / ‖x_exact‖``, how far the lossy plan's answer is from the exact
        run's answer after the same iterations (for power iteration, with ``x_approx``'s sign
        matched to ``x_exact``, since ``±x`` are the same eigenvector); NaN when ``x_exact`` is 0
        or either run overflowed. See :func:`solution_error`.
    exact_diverges : bool
        The run with the exact ``A`` itself diverges (its residual climbs over
        :data:`GROWTH_FACTOR` × its lowest value, or overflows): the method does not converge on
        this matrix, and ``solution_error`` compares two diverged iterates (it says nothing about
        the plan).
    """

    method: str
    curves: pd.DataFrame
    npu: pd.DataFrame
    iterations_to_tol: dict
    relative_error: float
    sim: dict
    notes: list = field(default_factory=list)
    x_exact: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    x_approx: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    solution_error: float = float("nan")
    tol: float = float("nan")
    exact_diverges: bool = False

    def to_dict(self) -> dict:
        """Everything but the NPU simulation objects, as JSON-ready values (vectors as lists)."""
        return dict(method=self.method, curves=self.curves.to_dict("list"),
                    npu=self.npu.reset_index().to_dict("records"),
                    iterations_to_tol=self.iterations_to_tol, tol=self.tol, relative_error=self.relative_error,
                    solution_error=self.solution_error, exact_diverges=self.exact_diverges, x_exact=self.x_exact.tolist(),
                    x_approx=self.x_approx.tolist(), notes=list(self.notes))

    def solutions(self) -> pd.DataFrame:
        """Both final iterates side by side: ``index, x_exact, x_approx, difference``."""
        return pd.DataFrame({"index": np.arange(self.x_exact.size), "x_exact": self.x_exact,
                             "x_approx": self.x_approx, "difference": self.x_approx - self.x_exact})


def solution_error(x_approx, x_exact, method: str) -> float:
    """``‖x_approx − x_exact‖₂ / ‖x_exact‖₂``; for ``"power"`` the smaller of the errors of
    ``±x_approx`` (an eigenvector's sign is arbitrary). NaN when either vector is not finite
    or ``x_exact`` is 0.

    >>> round(solution_error(np.array([1.0, 2.0]), np.array([1.0, 2.5]), "jacobi"), 4)
    0.1857
    >>> solution_error(np.array([-0.6, -0.8]), np.array([0.6, 0.8]), "power")
    0.0
    """
    xa = np.asarray(x_approx, np.float64)
    xe = np.asarray(x_exact, np.float64)
    if not (np.isfinite(xa).all() and np.isfinite(xe).all()) or not xe.any():
        return float("nan")
    # both scaled by their largest entry before the difference (iterates near 1e200, Jacobi on a
    # tiny diagonal, overflowed); relative_norm keeps the squares in range and gives inf when
    # x_exact underflowed against a far larger x_approx
    s = float(max(np.max(np.abs(xe)), np.max(np.abs(xa), initial=0.0)))
    xa, xe = xa / s, xe / s
    err = relative_norm(xa - xe, xe)
    if method == "power":
        err = min(err, relative_norm(xa + xe, xe))
    return err


#: Range of ``‖b‖`` :func:`run_solver` accepts (as ``analyze`` bounds ``‖A‖_F``): beyond it the
#: squared norms of CG and of the residuals overflow or underflow, and a ``b`` of entries 1e-170
#: "converged" with residual 0 at iteration 1 while one of entries 1e308 gave only NaN.
B_NORM_MIN, B_NORM_MAX = 1e-140, 1e140

#: A residual that climbs to this many times its lowest value so far is reported as growing.
GROWTH_FACTOR = 10.0


def diverging_notes(residuals, label: str) -> list[str]:
    """A note when a residual curve climbs to over :data:`GROWTH_FACTOR` × its running minimum.

    >>> diverging_notes([1.0, 0.1, 0.05, 2.0, 0.04], "the lossy plan")
    ["The lossy plan's residual climbs from 0.05 (iteration 3) to 2 (iteration 4): 40× its lowest value so far."]
    """
    r = np.asarray(residuals, np.float64)
    r = r[np.isfinite(r)]
    if r.size < 2:
        return []
    low = np.minimum.accumulate(r)
    ratio = r / np.maximum(low, 1e-300)
    k = int(np.argmax(ratio))
    if ratio[k] <= GROWTH_FACTOR:
        return []
    j = int(np.argmin(r[:k + 1]))
    return [f"{label[:1].upper()}{label[1:]}'s residual climbs from {r[j]:.3g} (iteration {j + 1}) to "
            f"{r[k]:.3g} (iteration {k + 1}): {ratio[k]:.3g}× its lowest value so far."]


def _breakdown_note(method: str, found: dict, label: str, op: str) -> list[str]:
    """Why a run stopped early (``found["breakdown"]``), in words."""
    if "breakdown" not in found:
        return []
    k, why = found["breakdown"]
    who = f"{label[:1].upper()}{label[1:]}"
    if why == "underflow":
        return [f"{who}'s CG stopped at iteration {k}: its search direction became so small that pᵀ{op}p "
                "rounded to 0 (below float64's range); the residual cannot fall further."]
    if why == "overflow":
        return [f"{who}'s run overflowed at iteration {k} (numbers beyond float64's range), so it stopped "
                "there: the method diverges on this matrix"
                + (" (Jacobi converges only when the diagonal outweighs the rest of each row)."
                   if method == "jacobi" else ".")]
    if method == "power":
        return [f"{who}'s power iteration stopped at iteration {k}: {op} x = 0 for the current vector x, so "
                f"there is nothing to normalise (x lies in the null space of {op}"
                + (", e.g. the plan's SKIP tiles dropped all of it" if op == "Â" else "")
                + "); its residual is NaN from then on."]
    return [f"{who}'s CG stopped at iteration {k}: it met a direction p with pᵀ{op}p = 0, so {op} is not "
            "positive definite (e.g. the plan's SKIP tiles dropped part of the matrix) and CG cannot take "
            "its step; its residual is NaN from then on."]


def _asymmetry(M) -> float:
    """``max |M − Mᵀ|`` when it exceeds 1e-12 · ``max |M|`` (rounding), else 0."""
    if M.nnz == 0:
        return 0.0
    asym = float(abs(M - M.T).max())
    return asym if asym > 1e-12 * float(abs(M).max()) else 0.0


def run_solver(plan, hw=None, method: str = "jacobi", b=None, iterations: int = 50,
               persistent: bool = True, tol: float = 1e-8, seed: int = 0) -> SolverResult:
    """Run an iterative solver with the plan's operator and the exact one (akf-spec §7).

    Parameters
    ----------
    plan : FusionPlan
        Needs ``pa.A`` (the exact matrix, square) and ``matvec``.
    hw : HardwareConfig, optional
    method : {"jacobi", "power", "cg"}
        Jacobi needs a nonzero diagonal; CG needs a symmetric matrix with a positive diagonal.
    b : array (n,), optional
        Right-hand side / start vector (default: deterministic random from ``seed``).
    iterations : int
        Maximum iterations (1 … 10,000); the NPU is simulated for this many.
    persistent : bool
        Which NPU mode ``sim`` keeps in full (both are always in ``npu``).
    tol : float ≥ 0
        Convergence threshold on the residual (0: run every iteration).
    seed : int
        Seed of the default ``b`` and of the NPU simulation's mapping.

    Returns
    -------
    SolverResult
    """
    from .simulate import simulate

    if not isinstance(method, str) or method not in SOLVERS:
        raise InputError(f"Unknown solver {method!r}; use one of {', '.join(SOLVERS)}.")
    tol = check_real(tol, "tol")
    seed = check_seed(seed)
    persistent = check_flag(persistent, "persistent")
    iterations = check_whole(iterations, "iterations", 1, 10_000)
    pa = getattr(plan, "pa", None)
    if pa is None or not hasattr(plan, "matvec"):
        raise InputError("run_solver needs a FusionPlan (from akfviz.select).")
    A = pa.A.tocsr()
    n, m = A.shape
    if n != m:
        raise InputError(f"Iterative solvers need a square matrix, got shape {A.shape}.")
    d = A.diagonal()
    if method in ("jacobi", "cg") and np.any(d == 0):
        raise InputError(f"The {method} solver needs a nonzero diagonal; "
                         f"{int(np.sum(d == 0))} diagonal entries are zero.")
    if method == "cg":
        asym = _asymmetry(A)
        if asym > 0:
            raise InputError(f"CG needs a symmetric matrix; max |A - Aᵀ| = {asym:.3g}.")
        if np.any(d <= 0):
            raise InputError("CG needs a symmetric positive definite matrix; the diagonal has "
                             "entries <= 0, so it is not positive definite.")
    if b is None:
        b = np.random.default_rng(seed).standard_normal(n)
    try:
        # (a ragged list such as [[1], [1, 2]] raised numpy's own ValueError here)
        b_in = np.asarray(b)
    except (TypeError, ValueError):
        raise InputError(f"b must be a vector of {n} real numbers.") from None
    if np.iscomplexobj(b_in):
        raise InputError("b must be a real vector; the solvers work in real numbers, not complex ones.")
    if b_in.dtype == object:
        refuse_missing(b_in, "b")
    if b_in.dtype.kind in "bUSV":
        what = {"b": "True/False values", "U": "text", "S": "text", "V": "records"}[b_in.dtype.kind]
        raise InputError(f"b must be a vector of {n} real numbers, got {what}.")
    try:
        b = b_in.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"b must be a vector of {n} real numbers.") from None
    if b.shape != (n,):
        raise InputError(f"b must be a vector of length {n} (one entry per row of A), got shape {b.shape}.")
    bad = int(np.sum(~np.isfinite(b)))
    if bad:
        raise InputError(f"b has {bad} NaN or infinite entr{'y' if bad == 1 else 'ies'}; every entry of b "
                         "must be a finite number.")
    if not b.any():
        raise InputError("b is all zeros: the solution of A x = 0 is x = 0, with nothing to iterate, "
                         "and power iteration needs a nonzero start vector. Give a nonzero b.")
    big = float(np.max(np.abs(b)))
    nb = big * float(np.linalg.norm(b / big))  # ‖b‖ without overflow or underflow on the way
    if not B_NORM_MIN <= nb <= B_NORM_MAX:
        length = f"{nb:.3g}" if np.isfinite(nb) else "beyond float64's range"
        raise InputError(
            f"b is too {'small' if nb < B_NORM_MIN else 'large'}: its length ‖b‖ is {length} (largest entry "
            f"{big:.3g}), outside {B_NORM_MIN:g} … {B_NORM_MAX:g}, where the solvers' squared norms would "
            f"{'underflow to 0' if nb < B_NORM_MIN else 'overflow to infinity'} and every residual be "
            f"meaningless. Scale b first, e.g. divide it by its largest entry ({big:.3g}): the solvers are "
            "linear, so the residual curves do not change with the scale.")
    solver = SOLVERS[method]
    found: dict = {}

    def lossy(v):
        # plan.matvec refuses NaN / inf; a run that overflowed gets NaN back and stops
        return plan.matvec(v) if np.isfinite(v).all() else np.full(n, np.nan)

    found_exact: dict = {}
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported as a note instead
        x_exact, res_exact = solver(lambda v: A @ v, A, b, int(iterations), float(tol), found_exact)
    if "indefinite" in found_exact:
        raise InputError(f"CG needs a symmetric positive definite matrix, and A is not positive definite: "
                         f"at iteration {found_exact['indefinite']} CG met a direction p with pᵀAp < 0. "
                         "Use Jacobi or power iteration for this matrix.")
    if method == "cg" and found_exact.get("breakdown", (0, ""))[1] == "zero":
        raise InputError(f"CG needs a symmetric positive definite matrix, and A is not positive definite: "
                         f"at iteration {found_exact['breakdown'][0]} CG met a direction p ≠ 0 with pᵀAp = 0 "
                         "(A is singular there). Use Jacobi or power iteration for this matrix.")
    with np.errstate(over="ignore", invalid="ignore"):
        x_approx, res_approx = solver(lossy, A, b, int(iterations), float(tol), found)
    notes = []
    notes += _breakdown_note(method, found_exact, "the exact A", "A")
    notes += _breakdown_note(method, found, "the lossy plan", "Â")
    if method == "cg":
        asym = _asymmetry(plan.approx_matrix())
        if asym > 0:
            notes.append(f"CG assumes a symmetric operator, but the lossy plan's Â is not symmetric "
                         f"(max |Â − Âᵀ| = {asym:.3g}): its kernels approximate mirrored tiles differently.")
        if "indefinite" in found:
            notes.append(f"The lossy plan's Â is not positive definite: at iteration {found['indefinite']} "
                         "CG met a direction p with pᵀÂp < 0, so its residual need not fall: the plan's "
                         "error outweighs the smallest eigenvalue of A.")
    notes += diverging_notes(res_exact, "the exact A") + diverging_notes(res_approx, "the lossy plan")
    L = max(len(res_exact), len(res_approx), 1)
    pad = lambda r: np.r_[r, np.full(L - len(r), np.nan)]  # noqa: E731
    curves = pd.DataFrame({"iteration": np.arange(1, L + 1), "residual_exact": pad(res_exact),
                           "residual_approx": pad(res_approx)})

    def first_below(r):
        idx = [i + 1 for i, v in enumerate(r) if v < tol]
        return idx[0] if idx else None

    rows, sims = {}, {}
    for mode, pers in (("persistent", True), ("non-persistent", False)):
        s = simulate(plan, hw, iterations=int(iterations), persistent=pers, seed=seed, record=False)
        sims[mode] = s
        rows[mode] = dict(cycles=s.cycles, cycles_per_iteration=s.cycles / iterations,
                          seconds_per_iteration=s.seconds / iterations, dram_bytes=s.dram_bytes,
                          dram_bytes_per_iteration=s.dram_bytes / iterations,
                          energy_pj=s.energy_total_pj)
    npu = pd.DataFrame.from_dict(rows, orient="index")
    return SolverResult(method=method, curves=curves, npu=npu,
                        iterations_to_tol={"exact": first_below(res_exact),
                                           "approx": first_below(res_approx)},
                        relative_error=float(getattr(plan, "relative_error", float("nan"))), notes=notes,
                        x_exact=np.asarray(x_exact, np.float64), x_approx=np.asarray(x_approx, np.float64),
                        solution_error=solution_error(x_approx, x_exact, method), tol=float(tol),
                        exact_diverges=bool(diverging_notes(res_exact, "the exact A"))
                        or not np.isfinite(np.asarray(res_exact, np.float64)).all(),
                        sim={"persistent" if persistent else "non-persistent":
                             sims["persistent" if persistent else "non-persistent"]})
