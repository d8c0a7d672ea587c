"""The fused CPU executor against scipy: how close its output is and how long one SpMV takes.

The Kernels page's "CPU check", the Compare page's "Real CPU time of one SpMV" and the
``bench`` command all measure through these functions, so they cannot drift apart.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ..errors import InputError
from .plan import relative_norm


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn``, in seconds.

    Parameters
    ----------
    fn : callable
        Called with no arguments; its result is ignored.
    repeats : int ≥ 1
        Number of timed calls.

    Returns
    -------
    float
        The median of the ``repeats`` wall times (``time.perf_counter``).

    Raises
    ------
    InputError
        ``repeats`` is not a whole number ≥ 1.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise InputError(f"repeats must be a whole number of at least 1, got {repeats!r}.")
    times = np.empty(int(repeats))
    for i in range(int(repeats)):
        t0 = time.perf_counter()
        fn()
        times[i] = time.perf_counter() - t0
    return float(np.median(times))


def matvec_check(plan, x, A=None) -> dict:
    """The plan's fused ``matvec`` on ``x`` against scipy.

    Parameters
    ----------
    plan : FusionPlan
        The plan to check.
    x : array of shape (n,)
        The input vector.
    A : sparse matrix, optional
        The exact matrix (default: the plan's own, ``plan.pa.A``).

    Returns
    -------
    dict
        ``vs_approx``: ``‖y − Â x‖ / ‖Â x‖`` with ``y = plan.matvec(x)`` and ``Â x`` by scipy on
        the plan's approximation (rounding only); ``output_error``: ``‖(A − Â) x‖ / ‖A x‖``
        (:meth:`FusionPlan.output_error`); ``max_abs``: ``max |y − A x|`` (0 for an empty ``y``).
    """
    A = plan.pa.A if A is None else A
    y = plan.matvec(x)
    y_hat = plan.approx_matrix() @ x
    y_exact = A @ x
    return {"vs_approx": relative_norm(y - y_hat, y_hat),
            "output_error": float(plan.output_error(x)),
            "max_abs": float(np.max(np.abs(y - y_exact))) if y.size else 0.0}


def time_matvec(plan, x, repeats: int, A=None) -> dict:
    """Median wall time of one ``plan.matvec(x)`` and of scipy's ``A @ x``, measured now.

    Only the timing: it is what must be measured again on every call. The accuracy of the
    plan (:func:`matvec_check`, which builds ``Â``) depends on the plan alone; the app
    computes it once per plan (``app_state.cpu_check_cached``).

    Both are called once before timing (numba's machine code loaded, caches warm).

    Parameters
    ----------
    plan : FusionPlan
        The plan to time.
    x : array of shape (n,)
        The input vector (the same for both).
    repeats : int ≥ 1
        Timed calls of each; the median is reported.
    A : sparse matrix, optional
        The matrix scipy multiplies (default: the plan's own, ``plan.pa.A``).

    Returns
    -------
    dict
        ``plan_ms`` and ``scipy_ms`` (median milliseconds of one call) and ``repeats``.

    Raises
    ------
    InputError
        ``repeats`` is not a whole number ≥ 1.
    """
    A = plan.pa.A if A is None else A
    plan.matvec(x)        # warm: the first call loads the numba machine code
    A @ x
    t_plan = median_seconds(lambda: plan.matvec(x), repeats)
    t_scipy = median_seconds(lambda: A @ x, repeats)
    return {"plan_ms": 1000 * t_plan, "scipy_ms": 1000 * t_scipy, "repeats": int(repeats)}
