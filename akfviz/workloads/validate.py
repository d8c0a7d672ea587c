"""Validation of matrices entering the pipeline (akf-spec §1).

:func:`as_csr` is the single gate every stage uses: whatever the user hands in (a scipy
sparse matrix or array of any format, a dense 2-D numpy array), it returns a *canonical*
``scipy.sparse.csr_array`` — float64 values, duplicates summed, explicit zeros dropped,
column indices sorted — or raises :class:`~akfviz.errors.InputError` saying why not.
"""
from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp

from ..errors import InputError, ResourceLimitError
from ..memory import check_memory


#: Elements of a dense array converted at a time by :func:`dense_to_csr` (32 MB of float64).
DENSE_CHUNK_ELEMENTS = 1 << 22


def _row_chunks(m: int, n: int):
    step = max(1, DENSE_CHUNK_ELEMENTS // max(n, 1))
    for r0 in range(0, m, step):
        yield r0, min(m, r0 + step)


def dense_to_csr(arr: np.ndarray, *, name: str = "matrix", limits=None) -> sp.csr_array:
    """A dense 2-D numeric array as a canonical float64 ``csr_array``, in row chunks.

    Two passes over blocks of :data:`DENSE_CHUNK_ELEMENTS` elements: the first counts the
    nonzeros of every row (and the non-finite values), so the number of stored entries is
    known — and checked against ``limits.max_nnz`` and the memory at hand — before the
    output is allocated; the second copies the nonzeros, converted to float64 block by
    block. Peak memory is the input plus the CSR output (12 or 16 bytes per nonzero) plus
    one block, where converting the whole array to float64 and then to COO first took 5–6×
    the input (a 400M-element float64 ``.npy`` peaked at 15 GB).

    Parameters
    ----------
    arr : numpy.ndarray
        2-D, of a real number type (bool, integer or float, any byte order or layout; a
        read-only or memory-mapped array is fine: it is only read).
    name : str
        How messages call the matrix.
    limits : LoadLimits, optional
        When given, its ``max_nnz`` bounds the number of nonzeros.

    Returns
    -------
    scipy.sparse.csr_array
        float64 values, sorted column indices (int32 when they fit), no explicit zeros.

    Raises
    ------
    InputError
        NaN or infinite values.
    ResourceLimitError
        More nonzeros than ``limits.max_nnz``, or more memory than the process can get.
    """
    m, n = arr.shape
    counts = np.zeros(m + 1, dtype=np.int64)
    bad = 0
    over = 0
    floating = arr.dtype.kind == "f"
    # long double (float128 / float96): counted and copied as the float64 values it becomes, so
    # 1e400 is refused (not stored as inf) and 1e-4000 is dropped (not stored as an explicit 0)
    extended = floating and arr.dtype.itemsize > 8

    def as_f64(block):
        with np.errstate(over="ignore", under="ignore"):
            return block.astype(np.float64)

    for r0, r1 in _row_chunks(m, n):
        block = arr[r0:r1]
        if extended:
            finite = np.isfinite(block)
            block = as_f64(block)
            over += int(np.count_nonzero(finite & ~np.isfinite(block)))
            bad += int(finite.size - np.count_nonzero(finite))
        elif floating:
            bad += int(block.size - np.count_nonzero(np.isfinite(block)))
        with np.errstate(invalid="ignore"):  # a signalling NaN warns when cast to bool (counted above)
            counts[r0 + 1:r1 + 1] = np.count_nonzero(block, axis=1)
    if bad:
        raise InputError(f"The {name} contains {bad} NaN or infinite value(s); every entry must be a finite number.")
    if over:
        raise InputError(f"The {name} has {over} value(s) beyond the range of float64 numbers (about ±1.8e308), "
                         "in which akfviz computes; scale the matrix down first.")
    np.cumsum(counts, out=counts)
    nnz = int(counts[-1])
    if limits is not None and nnz > limits.max_nnz:
        raise ResourceLimitError(
            f"The {name} is a dense array with {nnz:,} nonzero values, over the limit of {limits.max_nnz:,} "
            "stored entries. Use a smaller or sparser matrix (prune it first), or pass custom limits "
            "(limits=akfviz.LoadLimits(max_nnz=...)).")
    index_dtype = np.int32 if max(n, nnz) < 2**31 else np.int64
    check_memory((m + 1) * np.dtype(index_dtype).itemsize + nnz * (8 + np.dtype(index_dtype).itemsize),
                 f"A compressed-row copy of the {m:,} × {n:,} {name} with {nnz:,} nonzeros",
                 "Prune the matrix first or load a smaller one.")
    indices = np.empty(nnz, dtype=index_dtype)
    data = np.empty(nnz, dtype=np.float64)
    for r0, r1 in _row_chunks(m, n):
        block = as_f64(arr[r0:r1]) if extended else arr[r0:r1]
        rows, cols = np.nonzero(block)            # row-major: sorted columns within each row
        lo, hi = counts[r0], counts[r1]
        indices[lo:hi] = cols
        data[lo:hi] = block[rows, cols]
    M = sp.csr_array((data, indices, counts.astype(index_dtype, copy=False)), shape=(m, n))
    M.has_canonical_format = True   # sorted and without duplicates by construction (no re-check pass)
    return M


def as_csr(A, *, name: str = "matrix", copy: bool = True, limits=None) -> sp.csr_array:
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
    limits : LoadLimits, optional
        For dense input: its ``max_nnz`` bounds the nonzeros (checked before the output is
        allocated, see :func:`dense_to_csr`). Sparse input was checked from its header.

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
        if A.dtype.kind in "iu" and A.dtype.itemsize == 8 and _float_sums_may_round(A):
            A = _exact_integer_sums(A)
            copy = False
        elif A.dtype.kind in "fiub" and A.dtype != np.float64:
            # before the CSR conversion sums duplicates: int8 100 + 100 wrapped to -56
            A = A.astype(np.float64)
            copy = False
        M = sp.csr_array(A, copy=copy)
    else:
        if A is None:
            raise InputError(f"No {name} was given (got None); pass a scipy sparse matrix or a 2-D numpy array.")
        refuse_masked(A, f"The {name}", "A")
        arr = _as_numeric_array(A, f"The {name}")
        if arr.dtype == object:
            raise InputError(f"The {name} holds Python objects, not numbers; give a numeric array.")
        if arr.dtype.kind not in "fiubc":
            raise InputError(f"The {name} has values of type {arr.dtype}, which is not a number type; "
                             "give a numeric array (float or integer).")
        if arr.ndim != 2:
            raise InputError(
                f"The {name} must be 2-D (rows × columns), but it has shape {arr.shape}."
            )
        if arr.dtype.kind == "c":
            raise InputError(f"The {name} has complex values; akfviz works with real matrices only.")
        if arr.shape[0] < 1 or arr.shape[1] < 1:
            raise InputError(f"The {name} has shape {arr.shape}; it needs at least one row and one column.")
        return dense_to_csr(arr, name=name, limits=limits)  # canonical already (float64, no zeros)
    if M.shape[0] < 1 or M.shape[1] < 1:
        raise InputError(f"The {name} has shape {M.shape}; it needs at least one row and one column.")
    kind = M.dtype.kind
    if kind == "c":
        raise InputError(f"The {name} has complex values; akfviz works with real matrices only.")
    if kind not in "fiub":
        raise InputError(f"The {name} has values of type {M.dtype}, which is not a number type.")
    if M.dtype != np.float64:
        M = M.astype(np.float64)
    # duplicates summed first: two finite entries at one position can add up to infinity (a CSR
    # with unsummed duplicates passed the check before the sum and came back holding inf)
    M.sum_duplicates()
    if M.data.size and not np.all(np.isfinite(M.data)):
        bad = int(np.count_nonzero(~np.isfinite(M.data)))
        given = getattr(A, "data", None)
        if isinstance(given, np.ndarray) and given.dtype.kind in "fiub" and np.isfinite(given).all():
            # every value given is finite: entries stored twice at one position were added up
            raise InputError(
                f"The {name} stores some positions more than once (as COO or unsummed CSR may), and adding "
                f"those duplicates up gave {bad} value(s) beyond the range of float64 numbers (about "
                "±1.8e308). Scale the matrix down or remove the duplicate entries.")
        raise InputError(
            f"The {name} contains {bad} NaN or infinite value(s); every entry must be a finite number."
        )
    M.eliminate_zeros()
    M.sort_indices()
    return M


#: Integers up to this magnitude, and every sum of them, are exact in float64.
_FLOAT_EXACT = 2.0 ** 53


def _float_sums_may_round(A) -> bool:
    """Whether summing ``A``'s (int64 / uint64) duplicates in float64 could round: only when
    ``max |v| · nnz`` reaches 2**53 (every partial sum of a group is bounded by that)."""
    vals = A.data
    if vals.size == 0:
        return False
    big = max(abs(float(vals.max())), abs(float(vals.min())))
    return big * vals.size >= _FLOAT_EXACT


def _exact_integer_sums(A):
    """COO float64 copy of an int64 / uint64 sparse matrix with duplicates summed exactly.

    A group's int64 sum is exact, whatever wrap-around its partial sums go through, when the
    true sum fits int64; that holds when the group's ``Σ |v|`` (in float64, a slight
    overestimate at most) is below 2**62. A group beyond that is summed in Python integers.
    Either sum is exact and rounded once to float64: ``2**53 + 1`` and ``-2**53`` in one
    position give 1, not 0."""
    C = sp.coo_array(A)
    r, c = C.coords
    order = np.lexsort((c, r))
    r, c = r[order], c[order]
    v = C.data[order]
    start = np.flatnonzero(np.concatenate(([True], (r[1:] != r[:-1]) | (c[1:] != c[:-1]))))
    vf = v.astype(np.float64)
    if start.size == v.size:  # no duplicates: one rounding each
        return sp.coo_array((vf, (r, c)), shape=A.shape)
    wrapped = np.add.reduceat(v.astype(np.int64), start)   # modular sums (uint64 cast wraps too)
    fits = np.add.reduceat(np.abs(vf), start) < 2.0 ** 62
    vals = wrapped.astype(np.float64)
    if not fits.all():   # the rest in Python integers (exact), rounded once
        big = np.flatnonzero(~fits)
        size = np.diff(np.append(start, v.size))
        members = np.repeat(~fits, size)
        sub_start = np.concatenate(([0], np.cumsum(size[big])[:-1]))
        exact = np.add.reduceat(v[members].astype(object), sub_start)
        vals[big] = [float(x) for x in exact]
    return sp.coo_array((vals, (r[start], c[start])), shape=A.shape)


def _as_numeric_array(obj, label: str) -> np.ndarray:
    """``np.asarray(obj)``, with numpy's refusal of a ragged nesting (rows of different lengths,
    or scipy's ``(data, (rows, cols))`` tuple) as an InputError naming what to do instead."""
    try:
        return np.asarray(obj)
    except (ValueError, TypeError):
        hint = ("a nesting with rows of different lengths. Give a rectangular nested list or numpy "
                "array, every row as long as the others")
        if (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], tuple)
                and len(obj[1]) == 2):
            hint = ("the (data, (rows, cols)) form of scipy's constructors. Build the matrix first, "
                    "e.g. scipy.sparse.coo_array((data, (rows, cols)), shape=(n, m))")
        raise InputError(f"{label} could not be read as an array of numbers: it looks like {hint}.") from None


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
            if np.shape(A.data)[:1] != idx.shape[:1]:
                raise ValueError(f"values: {np.shape(A.data)[0] if np.ndim(A.data) else 0:,}, "
                                 f"{'blocks' if fmt == 'bsr' else 'indices'}: {idx.shape[0]:,}")
            if ptr.shape[0] != n_major + 1 or ptr[0] != 0 or ptr[-1] != idx.shape[0]:
                raise ValueError("the row pointers do not match the shape and the number of entries")
            if n_major and np.diff(ptr).min() < 0:
                raise ValueError("the row pointers decrease" if fmt != "csc" else "the column pointers decrease")
            if idx.size and (idx.min() < 0 or idx.max() >= n_minor):
                raise ValueError(f"{'column' if fmt != 'csc' else 'row'} indices outside 0…{A.shape[minor] - 1}")
        elif fmt == "coo":
            lengths = [np.shape(a)[0] if np.ndim(a) else 0 for a in (A.data, *A.coords)]
            if len(set(lengths)) > 1:
                raise ValueError(f"values: {lengths[0]:,}, row indices: {lengths[1]:,}, column indices: "
                                 f"{lengths[2]:,}" if len(lengths) == 3 else "arrays of different lengths")
            for axis, (coord, size) in enumerate(zip(A.coords, A.shape)):
                if coord.size and (coord.min() < 0 or coord.max() >= size):
                    raise ValueError(f"{'row' if axis == 0 else 'column'} indices outside 0…{size - 1}")
    except ValueError as exc:
        raise InputError(f"The {name}'s sparse index arrays are broken ({exc}): every row and column "
                         "index must lie inside the shape, the row pointers must not decrease and there "
                         "must be one value per index. "
                         "Rebuild the matrix, e.g. from (data, (rows, cols)) coordinates.") from None


def refuse_masked(obj, what: str, code: str | None = None) -> None:
    """Refuse a numpy masked array with masked entries (InputError): ``np.asarray`` hands over the
    values under the mask, so a masked entry would count as a value (probes: for ``x``, then for
    the matrix). ``code`` names it in the hint (default ``what``)."""
    if isinstance(obj, np.ma.MaskedArray) and np.ma.getmask(obj) is not np.ma.nomask and np.ma.getmask(obj).any():
        raise InputError(f"{what} is a masked array with masked entries; akfviz does not read masks. Pass "
                         f"{code or what}.filled(0) to treat masked entries as zeros (or fill them as you need).")


def refuse_missing(arr: np.ndarray, what: str) -> None:
    """Name the first missing value (``None``, ``pandas.NA``, ``NaT``) of an object array: a pandas
    nullable column (``boolean``, ``Int64`` …) with gaps arrives as one, and "dtype object" would
    not tell the user why it was refused."""
    import pandas as pd

    miss = np.asarray(pd.isna(arr), dtype=bool)
    if miss.any():
        at = np.unravel_index(int(np.argmax(miss)), arr.shape)
        where = "[" + ", ".join(str(int(i)) for i in at) + "]"
        raise InputError(f"{what}{where} is a missing value ({arr[at]!r}); akfviz multiplies numbers only. "
                         f"Fill the gaps first, e.g. {what}.fillna(0) for a pandas column.")


def dense_operand(x, what: str = "x") -> np.ndarray:
    """``x`` as a numpy array of real numbers, for the vector / matrix a plan multiplies.

    Accepts anything ``np.asarray`` turns into float, integer or boolean numbers (booleans
    count as 0 / 1, as in scipy's ``A @ x``); the caller checks shape and finiteness.

    Raises
    ------
    InputError
        ``x`` is a scipy sparse matrix (named as such, with the ``.toarray()`` hint; numpy
        would make it a 0-d object array), a masked array with masked entries, or holds complex,
        text or object values.
    """
    if sp.issparse(x):
        kind = "array" if isinstance(x, sp.sparray) else "matrix"
        raise InputError(f"{what} must be a dense numpy array, got a scipy sparse {x.format} {kind}; "
                         f"pass {what}.toarray() (the product is dense anyway).")
    if x is None:   # (np.asarray(None) is a 0-d object array: "x[] is a missing value … fillna": probe)
        raise InputError(f"No {what} was given (got None); pass a numpy array of numbers.")
    refuse_masked(x, what)
    arr = _as_numeric_array(x, what)
    if arr.dtype == object:
        refuse_missing(arr, what)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{what} must hold real numbers (float, integer or boolean), got dtype {arr.dtype}.")
    if arr.dtype == np.float16:
        arr = arr.astype(np.float64)  # exact; numba has no float16 (the matrix side converts it too)
    return arr


def matrix_sha256(A) -> str:
    """sha256 (hex) of a matrix's content: its shape, then the CSR ``indptr`` and ``indices`` as
    int64 and the values as float64, so the index width does not change it.

    ``A`` is a canonical CSR matrix (:func:`as_csr`); the same matrix hashes the same in every
    process. The app names workloads by it, and a sweep records it (``run_sweep``'s metadata).
    """
    h = hashlib.sha256()
    h.update(np.asarray(A.shape, np.int64).tobytes())
    for arr, dt in ((A.indptr, np.int64), (A.indices, np.int64), (A.data, np.float64)):
        h.update(np.ascontiguousarray(arr, dtype=dt).tobytes())
    return h.hexdigest()
