"""Fusion weights (paper eq. 1, ``K ≈ Σ_i w_i k_i``; akf-spec §5).

Per unit ``c`` (an LSH cluster, or a tile) the weights over the candidate kernels are a softmax of
logits, ``w_c = softmax(z_c)``, ``Σ_k w_ck = 1``. They minimise, by gradient descent,

.. math::

    F(z) = \\sum_c s_c \\sum_k w_{ck} \\hat C_{ck}
         + P \\cdot N \\cdot \\max\\!\\left(0, \\frac{S(w) - S_{cap}}{S_{cap}}\\right)^2
         - T \\sum_c s_c H(w_c),
    \\qquad S(w) = \\sum_c s_c \\sum_k w_{ck} b_{ck}

with ``s_c`` the unit's size (tiles), ``N = Σ s_c``, ``Ĉ = min((C − min_k C_c·) / σ, 10⁶)`` the
selector's cost above the unit's best, divided by ``σ``, the size-weighted median gap between a
unit's best and runner-up cost (so a typical decision is an O(1) step whatever the matrix), and
capped (:data:`COST_CAP`, so that float64 resolves the steps whatever alpha and beta are), ``b_ck`` the
payload bytes of one tile of the unit under kernel ``k`` (performance table), ``S_cap`` the chip's
total SRAM (``rows·cols·sram_bytes_per_pe``), ``P`` the penalty weight and ``H`` the entropy.

The hand-derived gradient: with ``g_ck = ∂F/∂w_ck / s_c = Ĉ_ck + λ_S b_ck + T (log w_ck + 1)``,
``λ_S = 2 P N max(0, S − S_cap) / S_cap²``, the softmax chain rule gives
``∂F/∂z_ck = s_c w_ck (g_ck − Σ_j w_cj g_cj)``; each unit's step is divided by ``s_c`` (diagonal
preconditioning). The temperature anneals geometrically from ``t0`` and is exactly 0 for the last
quarter of the steps. Without the SRAM penalty ``F`` is then linear in ``w``, and a logit moves by
``lr·w·gap``, so at a fixed step the weights of the other kernels shrink only like 1/step (they
ended at 0.84 for the best kernel on a 128² uniform matrix): over those steps the step size grows
geometrically to ``FINAL_STEP_GROWTH·lr``, and the weights end one-hot (to 1e-6 or better, but for
kernels of exactly equal cost). With the penalty the step stays ``lr``, the weights end near
one-hot, and the plan takes ``argmax_k w_ck``.
Without a binding SRAM constraint the minimiser is the per-unit argmin of ``C`` (the logits of cheaper
kernels always grow faster from the uniform start), and the plan takes the caller's argmin with its
tie-break: the descent cannot separate kernels of equal ``C`` (they keep equal weights) nor resolve
gaps below ~1e-11 σ, and its argmax then took the first such kernel (tests check both).

The penalty is applied only when the argmin plan overflows the chip (``S_arg > S_cap``, ``binding``).
Otherwise the argmin one-hot point has no penalty and the least cost, so it minimises ``F`` at
``T = 0``; but from the uniform start the expected footprint ``S(w)`` can exceed a small chip, and
a large ``P`` pushed units off their argmin before the weights settled (a fuzzing probe: one tile's
QUANT8, 94 B on a 159 B chip, became SKIP, 100 % error, at ``P = 10⁶``). Kernels outside
``allowed`` have weight 0 from the start to the end (left out of the softmax): as a capped cost
they were only discouraged, and a penalty of 10⁶ outweighed the cap.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numba
import numpy as np
import pandas as pd

from .._expneg import exp_nonpos
from .._jit import njit_cached, njit_inline, njit_parallel
from ..errors import InputError


#: Columns of ``FusionResult.trajectory``.
TRAJECTORY_COLUMNS = ("step", "cost", "entropy", "temperature", "penalty", "sram_bytes")


@dataclass(frozen=True, eq=False)
class FusionResult:
    """Outcome of :func:`optimize_fusion_weights`.

    Attributes
    ----------
    weights : ndarray (n_units, K)
        Final softmax weights.
    choice : ndarray (n_units,)
        The chosen kernel per unit: ``argmin`` when the SRAM penalty does not act (``binding``
        False, or ``penalty = 0``), which is the minimiser of the objective at ``T = 0`` (akf-spec
        §5); otherwise ``argmax_k weights``, with the caller's tie-break among kernels of equal cost
        unless it needs more SRAM.
    argmin : ndarray (n_units,)
        Per-unit argmin of the cost (what the weights end at when the SRAM constraint does not bind).
    trajectory : DataFrame
        Per recorded step: ``step, cost, entropy, temperature, penalty, sram_bytes``; ``cost`` is
        ``Σ_c s_c Σ_k w_ck C_ck`` in the selector's units, ``entropy`` the size-weighted mean entropy
        (nats), ``penalty`` the SRAM penalty term.
    weights_trajectory : ndarray (n_recorded_steps, n_recorded_units, K)
        Weights of the (up to 32) largest units at the recorded steps.
    recorded_units : ndarray
        Which units ``weights_trajectory`` follows.
    capacity : float
        Total chip SRAM in bytes.
    sram_bytes_argmin, sram_bytes_final : float
        Expected SRAM bytes of the argmin plan and of the chosen plan.
    binding : bool
        True when the argmin plan exceeds the capacity (so the penalty can change the choice).
    """

    weights: np.ndarray
    choice: np.ndarray
    argmin: np.ndarray
    _traj: np.ndarray = field(repr=False)   # (recorded steps, 6): the trajectory's columns
    weights_trajectory: np.ndarray
    recorded_units: np.ndarray
    capacity: float
    sram_bytes_argmin: float
    sram_bytes_final: float
    binding: bool
    steps: int
    penalty: float

    @cached_property
    def trajectory(self) -> pd.DataFrame:
        """The trajectory table (see the class docstring), built on first use: a selection only
        records the numbers, the Kernels page and the exports read the table."""
        return pd.DataFrame({c: self._traj[:, i].astype(np.int64 if c == "step" else np.float64)
                             for i, c in enumerate(TRAJECTORY_COLUMNS)})

    def to_dict(self) -> dict:
        return {"steps": int(self.steps), "penalty": float(self.penalty), "capacity": float(self.capacity),
                "sram_bytes_argmin": float(self.sram_bytes_argmin),
                "sram_bytes_final": float(self.sram_bytes_final), "binding": bool(self.binding),
                "changed_units": int(np.count_nonzero(self.choice != self.argmin))}


@njit_inline
def _softmax_row(z, ok, c, w):
    """``w[k]``: the softmax of the logits ``z[c]`` over the allowed kernels (``ok[c]``; 0 for the
    others); returns the log-sum-exp (``log w_k = z_ck − lse``, no log per entry). The exponentials
    come from :func:`akfviz._expneg.exp_nonpos` in a loop of their own, which LLVM vectorises (with
    numba's ``np.exp``, a C library call per entry, the descent of 144 clusters took 1.8 ms, now 1.1)."""
    K = z.shape[1]
    m = -np.inf
    for k in range(K):
        if ok[c, k] and z[c, k] > m:
            m = z[c, k]
    for k in range(K):   # no branch and no sum in this loop: LLVM vectorises it
        e = exp_nonpos(z[c, k] - m)
        w[k] = e if ok[c, k] else 0.0
    tot = 0.0
    for k in range(K):
        tot += w[k]
    inv = 1.0 / tot
    for k in range(K):
        w[k] *= inv
    return m + np.log(tot)


@njit_inline
def _step_row(Ch, b, z, ok, c, w, lse, lam, T, lr, g):
    """One gradient step on the logits of unit ``c`` (``g``: work array of K)."""
    K = z.shape[1]
    gbar = 0.0
    for k in range(K):
        if not ok[c, k]:
            continue
        gk = Ch[c, k] + lam * b[c, k]
        if T > 0.0:
            gk += T * (z[c, k] - lse + 1.0)
        g[k] = gk
        gbar += w[k] * gk
    for k in range(K):
        if ok[c, k]:
            z[c, k] -= lr * w[k] * (g[k] - gbar)


@njit_cached
def _descend(Ch, b, s, z, ok, cap, pen, lrs, temps, rec_every, rec_units, C, traj, wtraj):
    """Gradient descent on the logits ``z`` in place (see the module docstring), step ``i`` of size
    ``lrs[i]``. A kernel with ``ok[c, k]`` False has weight 0 throughout (left out of the softmax
    and of the steps)."""
    nu, K = Ch.shape
    N = 0.0
    for c in range(nu):
        N += s[c]
    w = np.empty((nu, K))
    lse = np.empty(nu)
    g = np.empty(K)
    nsteps = temps.shape[0]
    r = 0
    for step in range(nsteps + 1):
        T = temps[step] if step < nsteps else 0.0
        record = step % rec_every == 0 or step == nsteps
        S = 0.0
        for c in range(nu):   # each sum over the units adds the unit's own sum over its kernels
            lse[c] = _softmax_row(z, ok, c, w[c])
            su = 0.0
            for k in range(K):
                su += s[c] * w[c, k] * b[c, k]
            S += su
        over = max(0.0, S - cap)
        if record and r < traj.shape[0]:
            cost = 0.0
            ent = 0.0
            for c in range(nu):
                uc = 0.0
                ue = 0.0
                for k in range(K):
                    uc += s[c] * w[c, k] * C[c, k]
                    if w[c, k] > 0.0:
                        ue += s[c] * w[c, k] * (z[c, k] - lse[c])
                cost += uc
                ent -= ue
            traj[r, 0] = step
            traj[r, 1] = cost
            traj[r, 2] = ent / N if N > 0 else 0.0
            traj[r, 3] = T
            traj[r, 4] = pen * N * (over / cap) ** 2 if cap > 0 else 0.0
            traj[r, 5] = S
            for i in range(rec_units.shape[0]):
                for k in range(K):
                    wtraj[r, i, k] = w[rec_units[i], k]
            r += 1
        if step == nsteps:
            break
        lam = 2.0 * pen * N * over / (cap * cap) if cap > 0 else 0.0
        lr = lrs[step]
        for c in range(nu):
            _step_row(Ch, b, z, ok, c, w[c], lse[c], lam, T, lr, g)
    return r


#: Units a worker descends together in :func:`_block_descent`, one per SIMD lane (a compile-time
#: constant, so LLVM unrolls and vectorises the loops over them).
LANES = 8


@njit_cached
def _block_descent(c0, Ch, b, s, z, ok, lrs, temps, rec_every, C, terms, wtraj, rec_slot):
    """The steps of :func:`_descend` for units ``c0 : c0 + LANES`` (those below ``n_units``), when no
    SRAM penalty couples the units (``λ = 0``). Each unit gets the operations of
    :func:`_softmax_row` and :func:`_step_row`, in the same order, so its numbers are the same bits;
    but the units of the block are interleaved (entry ``k·LANES + u`` of the work arrays is kernel
    ``k`` of unit ``c0 + u``), so the chains of dependent operations of a step — the maximum, the
    sums, the step itself — run for eight units side by side instead of one, and the exponentials
    form one flat loop that LLVM vectorises (a loop nest over kernels and lanes it did not). A
    disallowed kernel's terms are computed and discarded (a select, no branch); its weight is 0, so
    the sums add ``+0.0`` where the scalar code skips it: the same bits (no sum here is ever
    ``-0.0``). Padding lanes (past the last unit) repeat unit ``c0`` and are not written back.
    ``terms[r, 0|1|2, c]`` receive unit ``c``'s cost, entropy and SRAM sums over its kernels at
    recorded step ``r`` (as :func:`_descend` sums them), ``wtraj[r, rec_slot[c], k]`` its weights
    when it is one of the recorded units."""
    nu, K = Ch.shape
    n = min(LANES, nu - c0)
    nk = K * LANES
    zt = np.empty(nk)
    cht = np.empty(nk)
    okt = np.empty(nk, dtype=np.bool_)
    wt = np.empty(nk)
    gt = np.empty(nk)
    m = np.empty(LANES)
    tot = np.empty(LANES)
    lse = np.empty(LANES)
    gbar = np.empty(LANES)
    for u in range(LANES):
        c = c0 + (u if u < n else 0)
        for k in range(K):
            zt[k * LANES + u] = z[c, k]
            cht[k * LANES + u] = Ch[c, k] + 0.0 * b[c, k]   # g's constant part, as _step_row at λ = 0
            okt[k * LANES + u] = ok[c, k]
    nsteps = temps.shape[0]
    r = 0
    for step in range(nsteps + 1):
        T = temps[step] if step < nsteps else 0.0
        record = step % rec_every == 0 or step == nsteps
        # the softmax of each lane (_softmax_row)
        for u in range(LANES):
            m[u] = -np.inf
            tot[u] = 0.0
        for k in range(K):
            for u in range(LANES):
                zk = zt[k * LANES + u] if okt[k * LANES + u] else -np.inf
                m[u] = zk if zk > m[u] else m[u]
        for k in range(K):
            for u in range(LANES):
                wt[k * LANES + u] = zt[k * LANES + u] - m[u]
        for i in range(nk):   # flat: vectorised
            e = exp_nonpos(wt[i])
            wt[i] = e if okt[i] else 0.0
        for k in range(K):
            for u in range(LANES):
                tot[u] += wt[k * LANES + u]
        for u in range(LANES):
            lse[u] = 1.0 / tot[u]       # the inverse first, the log-sum-exp below
        for k in range(K):
            for u in range(LANES):
                wt[k * LANES + u] *= lse[u]
        for u in range(LANES):
            lse[u] = m[u] + np.log(tot[u])
        if record and r < terms.shape[0]:
            for u in range(n):
                c = c0 + u
                slot = rec_slot[c]
                uc = 0.0
                ue = 0.0
                us = 0.0
                for k in range(K):
                    w = wt[k * LANES + u]
                    uc += s[c] * w * C[c, k]
                    if w > 0.0:
                        ue += s[c] * w * (zt[k * LANES + u] - lse[u])
                    us += s[c] * w * b[c, k]
                    if slot >= 0:
                        wtraj[r, slot, k] = w
                terms[r, 0, c] = uc
                terms[r, 1, c] = ue
                terms[r, 2, c] = us
            r += 1
        if step == nsteps:
            break
        # one gradient step of each lane (_step_row at λ = 0)
        lr = lrs[step]
        for u in range(LANES):
            gbar[u] = 0.0
        for k in range(K):
            for u in range(LANES):
                i = k * LANES + u
                gk = cht[i]
                if T > 0.0:
                    gk += T * (zt[i] - lse[u] + 1.0)
                gt[i] = gk
                gbar[u] += wt[i] * gk if okt[i] else 0.0
        for k in range(K):
            for u in range(LANES):
                i = k * LANES + u
                zk = zt[i]
                zt[i] = zk - lr * wt[i] * (gt[i] - gbar[u]) if okt[i] else zk
    for u in range(n):
        for k in range(K):
            z[c0 + u, k] = zt[k * LANES + u]
    return r


@njit_parallel
def _descend_free(Ch, b, s, z, ok, cap, lrs, temps, rec_every, rec_units, rec_slot, C, traj, wtraj, terms):
    """:func:`_descend` with ``pen = 0`` (the SRAM constraint does not bind): the units are
    independent, so they descend in parallel (``prange``); the trajectory's sums then add the units'
    recorded sums (each over its kernels) in unit order, as :func:`_descend` does — the same numbers,
    bit for bit."""
    nu, K = Ch.shape
    N = 0.0
    for c in range(nu):
        N += s[c]
    nsteps = temps.shape[0]
    n_rec = 0
    for step in range(nsteps + 1):
        if (step % rec_every == 0 or step == nsteps) and n_rec < traj.shape[0]:
            n_rec += 1
    for blk in numba.prange((nu + LANES - 1) // LANES):
        _block_descent(blk * LANES, Ch, b, s, z, ok, lrs, temps, rec_every, C, terms, wtraj, rec_slot)
    r = 0
    for step in range(nsteps + 1):
        if not (step % rec_every == 0 or step == nsteps) or r >= n_rec:
            continue
        cost = 0.0
        ent = 0.0
        S = 0.0
        for c in range(nu):
            S += terms[r, 2, c]
        for c in range(nu):
            cost += terms[r, 0, c]
            ent -= terms[r, 1, c]
        traj[r, 0] = step
        traj[r, 1] = cost
        traj[r, 2] = ent / N if N > 0 else 0.0
        traj[r, 3] = temps[step] if step < nsteps else 0.0
        traj[r, 4] = 0.0
        traj[r, 5] = S
        r += 1
    return r


#: The units descend in parallel (no SRAM penalty) while their recorded sums take at most this many
#: bytes (3 · recorded steps · units · 8): up to ≈ 21,000 units at the default 32 recorded steps
#: (tile mode of a 20,000-tile matrix).
FREE_DESCENT_MAX_BYTES = 16 << 20


#: Cap of the scaled cost ``Ĉ`` above a unit's best kernel, in typical decision gaps: a kernel a
#: million gaps worse keeps a weight of exp(−10⁶/T) ≈ 0 either way, and the cap keeps the logits'
#: steps small enough for float64 to resolve the differences that matter.
COST_CAP = 1e6


def _cost_scale(C, s) -> float:
    """Size-weighted median of the positive gaps between each unit's best and runner-up cost (1 if none):
    dividing by it makes a typical decision an O(1) step for the descent."""
    if C.shape[0] == 0 or C.shape[1] < 2:
        return 1.0
    part = np.partition(C, 1, axis=1)
    gap = part[:, 1] - part[:, 0]
    pos = gap > 0
    if not pos.any():
        return 1.0
    g, wts = gap[pos], s[pos]
    order = np.argsort(g, kind="stable")
    cw = np.cumsum(wts[order])
    return float(g[order][np.searchsorted(cw, 0.5 * cw[-1])])


#: How much larger the last step is than ``lr`` when the SRAM penalty does not act: the step grows
#: geometrically over the steps at T = 0 (module docstring).
FINAL_STEP_GROWTH = 1e9

#: Most descent steps (the default 120 ends one-hot; the trajectory is preallocated per step).
MAX_STEPS = 100_000


def optimize_fusion_weights(C, size, sram_bytes, capacity, *, penalty: float = 10.0, steps: int = 120,
                            lr: float = 1.0, t0: float = 1.0, record_every: int = 4,
                            max_record_units: int = 32, argmin=None, allowed=None) -> FusionResult:
    """Softmax fusion weights per unit by annealed gradient descent (see the module docstring).

    Parameters
    ----------
    C : ndarray (n_units, K)
        Selector cost per unit and candidate (``alpha·E/‖A‖² + beta·R/R_dense`` of one tile).
    size : ndarray (n_units,)
        Tiles per unit.
    sram_bytes : ndarray (n_units, K)
        Payload bytes of one tile of the unit under each kernel.
    capacity : float
        Total chip SRAM (bytes).
    penalty : float ≥ 0
        Weight P of the squared relative SRAM overflow.
    steps, lr, t0 : int, float, float
        Number of steps, step size, initial temperature (in units of the cost spread).
    record_every : int
        The trajectory records the objective and the weights every this many steps.
    max_record_units : int
        The trajectory keeps the weights of at most this many units, the largest by tile count.
    argmin : ndarray (n_units,), optional
        The caller's per-unit argmin with its tie-break (the selector breaks exact ties of C by
        the lower resource when beta = 0, by the lower error when alpha = 0); default
        ``argmin(C)``, first on ties. Without an acting penalty it is the choice. With one,
        kernels tied in C get equal weights from the descent, so a unit whose final choice costs
        exactly what this argmin costs (and needs no less SRAM) takes this argmin.
    allowed : bool ndarray (n_units, K), optional
        Kernels a unit may move to (default all). The selector allows only kernels no less accurate
        than the unit's argmin, so that the SRAM penalty trades resource, never accuracy; the others
        have weight 0 throughout (left out of the softmax).
    """
    C = np.ascontiguousarray(C, dtype=np.float64)
    if C.ndim != 2:
        raise InputError(f"The cost matrix must be 2-D (units × kernels), got shape {C.shape}.")
    nu, K = C.shape
    s = np.ascontiguousarray(size, dtype=np.float64)
    b = np.ascontiguousarray(sram_bytes, dtype=np.float64)
    if s.shape != (nu,) or b.shape != (nu, K):
        raise InputError("size must have one entry per unit and sram_bytes the shape of C.")
    if not (np.isfinite(penalty) and penalty >= 0):
        raise InputError(f"sram_penalty must be a finite number ≥ 0, got {penalty!r}.")
    if not (isinstance(steps, (int, np.integer)) and 1 <= steps <= MAX_STEPS):
        raise InputError(f"steps must be a whole number from 1 to {MAX_STEPS:,} (default 120), got {steps!r}.")
    if not np.all(np.isfinite(C)):
        raise InputError("The cost matrix has non-finite entries.")
    cap = float(capacity)
    if argmin is None:
        argmin = np.argmin(C, axis=1).astype(np.int64) if nu else np.zeros(0, np.int64)
    else:
        argmin = np.asarray(argmin, dtype=np.int64)
        if argmin.shape != (nu,) or (nu and (argmin.min() < 0 or argmin.max() >= K)):
            raise InputError("argmin must hold one candidate index per unit.")
    ar = np.arange(nu)
    S_arg = float((s * b[ar, argmin]).sum()) if nu else 0.0
    sigma = _cost_scale(C, s)
    # centred per unit (the gradient does not see a unit's constant) and capped: with a huge
    # alpha, lossy kernels cost ~1e19 gaps more than lossless ones, the first step then lifts
    # every other logit by ~1e18 and the O(1) differences between lossless kernels are lost
    # in rounding (the descent ended on DENSE instead of the cheaper CSC)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        Ch = np.minimum((C - (C.min(axis=1, keepdims=True) if nu else 0.0)) / sigma, COST_CAP)
    if allowed is not None:
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != (nu, K) or (nu and not allowed[ar, argmin].all()):
            raise InputError("allowed must have the shape of C and allow every unit's argmin.")
    ok = np.ascontiguousarray(np.ones((nu, K), dtype=np.bool_) if allowed is None else allowed)
    # the penalty acts only when the argmin overflows the chip (see the module docstring)
    binding = bool(0 < cap < S_arg)
    z = np.zeros((nu, K))
    n_anneal = max(1, (3 * int(steps)) // 4)
    temps = np.zeros(int(steps))
    temps[:n_anneal] = t0 * (1e-3 ** (np.arange(n_anneal) / n_anneal))
    lrs = np.full(int(steps), float(lr))
    if not binding and int(steps) > n_anneal:
        # at T = 0 without the penalty F is linear in w, minimised at the argmin's vertex; a logit
        # moves by lr·w·gap, so at a fixed step the losers' weights shrink only like 1/step (a probe
        # found max weights of 0.84 after the 30 steps at T = 0). The step grows geometrically to
        # FINAL_STEP_GROWTH·lr over those steps: the weights end one-hot (akf-spec §5) but for
        # kernels of equal cost, which keep equal weights.
        n0 = int(steps) - n_anneal
        lrs[n_anneal:] = float(lr) * FINAL_STEP_GROWTH ** (np.arange(1, n0 + 1) / n0)
    rec_units = np.argsort(-s, kind="stable")[:max_record_units].astype(np.int64)
    n_rec = int(steps) // int(record_every) + 2
    traj = np.zeros((n_rec, 6))
    wtraj = np.zeros((n_rec, rec_units.size, K))
    if not binding and 24 * n_rec * nu <= FREE_DESCENT_MAX_BYTES and nu > 1:
        rec_slot = np.full(nu, -1, dtype=np.int64)
        rec_slot[rec_units] = np.arange(rec_units.size)
        r = _descend_free(Ch, b, s, z, ok, cap, lrs, temps, int(record_every), rec_units, rec_slot, C,
                          traj, wtraj, np.empty((n_rec, 3, nu)))   # rows < the recorded steps all written
    else:
        r = _descend(Ch, b, s, z, ok, cap, float(penalty) if binding else 0.0, lrs, temps,
                     int(record_every), rec_units, C, traj, wtraj)
    zok = np.where(ok, z, -np.inf)
    zmax = zok.max(axis=1, keepdims=True) if nu else zok
    w = np.exp(zok - zmax)           # 0 outside ``allowed``
    w /= w.sum(axis=1, keepdims=True) if nu else 1.0
    choice = np.argmax(w, axis=1).astype(np.int64) if nu else np.zeros(0, np.int64)
    if nu and not (binding and penalty > 0):
        # No penalty acts: F at T = 0 is Σ_c s_c Σ_k w_ck C_ck, whose minimiser is the argmin (with
        # the caller's tie-break: at beta = 0 the resource decides between kernels of equal error).
        # The descent leaves kernels of equal C at equal weights (and does not resolve gaps below
        # ~1e-11 σ), and its argmax took the first of them or, by the rule below, the smaller
        # payload: DENSE for BITMAP at beta = 0 on a chip where nothing binds, +19 % resource
        # (adversarial probe, forty-third session; akf-spec §5: "the result must equal the
        # per-cluster argmin").
        choice = argmin.copy()
    elif nu:
        # the descent cannot tell kernels of equal cost apart (they keep equal weights unless the
        # SRAM penalty separates them): the argmin's tie-break decides, unless it needs more SRAM
        tied = (C[ar, choice] == C[ar, argmin]) & (b[ar, argmin] <= b[ar, choice])
        choice = np.where(tied, argmin, choice)
    S_fin = float((s * b[ar, choice]).sum()) if nu else 0.0
    return FusionResult(weights=w, choice=choice, argmin=argmin, _traj=traj[:r],
                        weights_trajectory=wtraj[:r], recorded_units=rec_units, capacity=cap,
                        sram_bytes_argmin=S_arg, sram_bytes_final=S_fin, binding=binding,
                        steps=int(steps), penalty=float(penalty))
