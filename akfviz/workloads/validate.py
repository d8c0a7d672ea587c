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
from ..memory import check_memory


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
        Not 2-D, empty shape, complex or non-numeric values, NaN or infinity; a sparse
        matrix whose index arrays are broken (indices out of range or negative, row pointers
        that decrease); a size whose CSR copy would not fit in memory (``ResourceLimitError``).
    """
    if sp.issparse(A):
        if A.ndim != 2:
            raise InputError(f"The {name} must be 2-D, but it has {A.ndim} dimensions.")
        check_structure(A, name)
        csr_bytes = (int(A.shape[0]) + 1) * 8 + int(A.nnz) * 16
        check_memory(csr_bytes, f"A compressed-row copy of the {A.shape[0]:,} × {A.shape[1]:,} {name}",
                     "Check the declared shape: every row costs 8 bytes of row pointer, even an empty one.")
        if A.dtype.kind in "fiub" and A.dtype != np.float64:
            # before the CSR conversion sums duplicates: int8 100 + 100 wrapped to -56
            A = A.astype(np.float64)
            copy = False
        M = sp.csr_array(A, copy=copy)
    else:
        arr = np.asarray(A)
        if arr.dtype == object:
            raise InputError(f"The {name} holds Python objects, not numbers; give a numeric array.")
        if arr.dtype.kind not in "fiubc":
            raise InputError(f"The {name} has values of type {arr.dtype}, which is not a number type; "
                             "give a numeric array (float or integer).")
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


def check_structure(A, name: str = "matrix") -> None:
    """Refuse a scipy sparse matrix whose index arrays contradict its shape (InputError).

    scipy checks only the arrays' lengths and dtypes when a CSR / CSC / BSR matrix is built
    from ``(data, indices, indptr)``; out-of-range or negative indices and decreasing row
    pointers pass, and later conversions drop entries or read outside the arrays. This runs
    scipy's full ``check_format`` for the compressed formats and a range check of COO
    coordinates (O(nnz), only on the path that converts or copies the matrix anyway).
    """
    fmt = A.format
    try:
        if fmt in ("csr", "csc", "bsr"):
            # (scipy's check_format(full_check=True) may recast the caller's arrays in place)
            major, minor = (0, 1) if fmt in ("csr", "bsr") else (1, 0)
            block = A.blocksize if fmt == "bsr" else (1, 1)
            n_major, n_minor = A.shape[major] // block[major], A.shape[minor] // block[minor]
            ptr, idx = A.indptr, A.indices
            if ptr.shape[0] != n_major + 1 or ptr[0] != 0 or ptr[-1] != idx.shape[0]:
                raise ValueError("the row pointers do not match the shape and the number of entries")
            if n_major and np.diff(ptr).min() < 0:
                raise ValueError("the row pointers decrease" if fmt != "csc" else "the column pointers decrease")
            if idx.size and (idx.min() < 0 or idx.max() >= n_minor):
                raise ValueError(f"{'column' if fmt != 'csc' else 'row'} indices outside 0…{A.shape[minor] - 1}")
        elif fmt == "coo":
            for axis, (coord, size) in enumerate(zip(A.coords, A.shape)):
                if coord.size and (coord.min() < 0 or coord.max() >= size):
                    raise ValueError(f"{'row' if axis == 0 else 'column'} indices outside 0…{size - 1}")
    except ValueError as exc:
        raise InputError(f"The {name}'s sparse index arrays are broken ({exc}): every row and column "
                         "index must lie inside the shape and the row pointers must not decrease. "
                         "Rebuild the matrix, e.g. from (data, (rows, cols)) coordinates.") from None


def dense_operand(x, what: str = "x") -> np.ndarray:
    """``x`` as a numpy array of real numbers, for the vector / matrix a plan multiplies.

    Accepts anything ``np.asarray`` turns into float, integer or boolean numbers (booleans
    count as 0 / 1, as in scipy's ``A @ x``); the caller checks shape and finiteness.

    Raises
    ------
    InputError
        ``x`` is a scipy sparse matrix (named as such, with the ``.toarray()`` hint; numpy
        would make it a 0-d object array), or holds complex, text or object values.
    """
    if sp.issparse(x):
        kind = "array" if isinstance(x, sp.sparray) else "matrix"
        raise InputError(f"{what} must be a dense numpy array, got a scipy sparse {x.format} {kind}; "
                         f"pass {what}.toarray() (the product is dense anyway).")
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{what} must hold real numbers (float, integer or boolean), got dtype {arr.dtype}.")
    if arr.dtype == np.float16:
        arr = arr.astype(np.float64)  # exact; numba has no float16 (the matrix side converts it too)
    return arr
