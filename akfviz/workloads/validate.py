"""Validation of matrices entering the pipeline (akf-spec §1).

:func:`as_csr` is the single gate every stage uses: whatever the user hands in (a scipy
sparse matrix or array of any format, a dense 2-D numpy array), it returns a *canonical*
``scipy.sparse.csr_array`` — float64 values, duplicates summed, explicit zeros dropped,
column indices sorted — or raises :class:`~akfviz.errors.InputError` saying why not.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InputError


def as_csr(A, *, name: str = "matrix", copy: bool = True) -> sp.csr_array:
    """Return ``A`` as a canonical float64 ``csr_array``.

    Parameters
    ----------
    A : scipy.sparse matrix/array or numpy.ndarray
        The matrix. Dense input must be 2-D; float32, float64 and integer values are
        accepted (converted to float64); complex, boolean-object and non-finite values are not.
    name : str
        How the matrix is called in error messages.
    copy : bool
        Copy even when ``A`` is already canonical (so callers may keep mutating theirs).

    Returns
    -------
    scipy.sparse.csr_array
        float64 values, sorted indices, no duplicates, no explicit zeros.

    Raises
    ------
    InputError
        Not 2-D, empty shape, complex or non-numeric values, NaN or infinity.
    """
    if sp.issparse(A):
        if A.ndim != 2:
            raise InputError(f"The {name} must be 2-D, but it has {A.ndim} dimensions.")
        if A.dtype.kind in "fiub" and A.dtype != np.float64:
            # before the CSR conversion sums duplicates: int8 100 + 100 wrapped to -56
            A = A.astype(np.float64)
            copy = False
        M = sp.csr_array(A, copy=copy)
    else:
        arr = np.asarray(A)
        if arr.dtype == object:
            raise InputError(f"The {name} holds Python objects, not numbers; give a numeric array.")
        if arr.ndim != 2:
            raise InputError(
                f"The {name} must be 2-D (rows × columns), but it has shape {arr.shape}."
            )
        if arr.dtype.kind in "fiub" and arr.dtype != np.float64:
            arr = arr.astype(np.float64)  # scipy.sparse has no float16; one dtype downstream
        M = sp.csr_array(arr)
    if M.shape[0] < 1 or M.shape[1] < 1:
        raise InputError(f"The {name} has shape {M.shape}; it needs at least one row and one column.")
    kind = M.dtype.kind
    if kind == "c":
        raise InputError(f"The {name} has complex values; akfviz works with real matrices only.")
    if kind not in "fiub":
        raise InputError(f"The {name} has values of type {M.dtype}, which is not a number type.")
    if M.dtype != np.float64:
        M = M.astype(np.float64)
    if M.data.size and not np.all(np.isfinite(M.data)):
        bad = int(np.count_nonzero(~np.isfinite(M.data)))
        raise InputError(
            f"The {name} contains {bad} NaN or infinite value(s); every entry must be a finite number."
        )
    M.sum_duplicates()
    M.eliminate_zeros()
    M.sort_indices()
    return M


def dense_operand(x, what: str = "x") -> np.ndarray:
    """``x`` as a numpy array of real numbers, for the vector / matrix a plan multiplies.

    Accepts anything ``np.asarray`` turns into float, integer or boolean numbers (booleans
    count as 0 / 1, as in scipy's ``A @ x``); the caller checks shape and finiteness.

    Raises
    ------
    InputError
        ``x`` is a scipy sparse matrix (named as such, with the ``.toarray()`` hint; numpy
        would make it a 0-d object array), or holds complex, float16, text or object values.
    """
    if sp.issparse(x):
        kind = "array" if isinstance(x, sp.sparray) else "matrix"
        raise InputError(f"{what} must be a dense numpy array, got a scipy sparse {x.format} {kind}; "
                         f"pass {what}.toarray() (the product is dense anyway).")
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub" or arr.dtype == np.float16:
        raise InputError(f"{what} must hold float32/float64, integer or boolean numbers, "
                         f"got dtype {arr.dtype}.")
    return arr
