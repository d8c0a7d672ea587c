"""Pruning of weight matrices: magnitude, N:M and block (akf-spec §1).

``prune(W, method, ...)`` turns a dense weight matrix (or an already sparse one) into a
canonical ``csr_array``. It is used by the ``llm`` generators, by the safetensors path of
the app and by ``scripts/make_sample_data.py``.

Methods (a registry, :data:`PRUNERS`):

``"magnitude"``
    Unstructured: keep the ``k = round((1 - sparsity) · n · m)`` entries of largest ``|w|``.
``"nm"``
    N:M structured along the reduction dimension: every row is cut into consecutive groups
    of ``M`` columns (the last group may be shorter) and only the ``N`` entries of largest
    ``|w|`` of each group are kept.
``"block"``
    The matrix is cut into ``b × b`` blocks (edge blocks may be smaller); the
    ``round((1 - sparsity) · n_blocks)`` blocks of largest Frobenius norm are kept whole.

Ties are broken deterministically: among equal scores the earlier one (row-major order)
wins, so the result never depends on sorting-algorithm details.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..arguments import check_whole, choice, shown, to_float
from ..errors import InputError, checked_call
from ..memory import check_memory
from .validate import as_csr


# --------------------------------------------------------------------------- parameters
def parse_pattern(pattern) -> tuple[int, int]:
    """Parse an ``"N:M"`` sparsity pattern into ``(N, M)``.

    Accepted: ``1 <= N < M <= 256``, e.g. ``"2:4"``, ``"1:4"``, ``"4:8"``; a tuple ``(N, M)``
    is accepted too.
    """
    text = pattern
    if isinstance(pattern, (tuple, list)) and len(pattern) == 2:
        text = f"{pattern[0]}:{pattern[1]}"
    if not isinstance(text, str):
        raise InputError(
            f"The N:M pattern must be text like '2:4', '1:4' or '4:8', got {pattern!r}."
        )
    parts = text.strip().split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        n_keep, group = int(parts[0]), int(parts[1])
    except ValueError:
        raise InputError(
            f"The N:M pattern {pattern!r} is not of the form 'N:M' (e.g. '2:4', '1:4', '4:8')."
        ) from None
    if not (1 <= n_keep < group <= 256):
        raise InputError(
            f"The N:M pattern {pattern!r} needs 1 <= N < M <= 256 (e.g. '2:4', '1:4', '4:8')."
        )
    return n_keep, group


def check_sparsity(sparsity) -> float:
    """Validate a sparsity (fraction of entries removed), accepted range ``0 <= s < 1``."""
    if isinstance(sparsity, bool) or not isinstance(sparsity, numbers.Real):
        raise InputError(f"sparsity must be a number between 0 and 1 (e.g. 0.9), got {shown(sparsity)}.")
    s = to_float(sparsity)
    if not (0.0 <= s < 1.0):
        raise InputError(
            f"sparsity must be at least 0 and below 1 (the fraction of weights removed, e.g. 0.9), "
            f"got {s if math.isfinite(s) else shown(sparsity)}."
        )
    return s


def check_block(block) -> int:
    """Validate a block side ``b`` (whole number, ``1 <= b <= 4096``)."""
    return check_whole(block, "block", 1, 4096)


# Sparse input with at most this many elements (n·m) is pruned through the dense path
# (64 Mi elements = 512 MB of float64); larger matrices use the entry-sorting sparse path.
DENSE_PATH_MAX = 1 << 26


# --------------------------------------------------------------------------- helpers
def _top_k_mask(scores: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask selecting the ``k`` largest ``scores``; ties go to the lower index."""
    size = scores.size
    mask = np.zeros(size, dtype=bool)
    if k <= 0:
        return mask
    if k >= size:
        mask[:] = True
        return mask
    threshold = np.partition(scores, size - k)[size - k]
    above = scores > threshold
    mask |= above
    need = k - int(np.count_nonzero(above))
    if need > 0:
        equal = np.flatnonzero(scores == threshold)
        mask[equal[:need]] = True
    return mask


def _as_input(W):
    """Return ``("dense", ndarray)`` or ``("sparse", csr_array)`` after validation."""
    if sp.issparse(W):
        return "sparse", as_csr(W, name="weight matrix")
    arr = np.asarray(W)
    if arr.dtype == object or arr.dtype.kind not in "fiub":
        raise InputError(
            f"The weight matrix must hold real numbers, got values of type {arr.dtype}."
        )
    if arr.ndim != 2:
        raise InputError(f"The weight matrix must be 2-D (rows × columns), got shape {arr.shape}.")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputError(f"The weight matrix has shape {arr.shape}; it needs at least one row and column.")
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise InputError(f"The weight matrix contains {bad} NaN or infinite value(s).")
    return "dense", arr


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of a 1-D array (sort + mask).

    Used instead of ``np.unique``, which is about 50× slower on 10⁶ random int64 keys with the
    numpy 2.4 installed here (measured: 4.7 s against 0.07 s).
    """
    s = np.sort(a)
    if s.size == 0:
        return s
    return s[np.r_[True, s[1:] != s[:-1]]]


def _n_keep(sparsity: float, total: int) -> int:
    return int(round((1.0 - sparsity) * total))


# --------------------------------------------------------------------------- methods
def _prune_magnitude(kind, W, *, sparsity, **_):
    n, m = W.shape
    keep = _n_keep(sparsity, n * m)
    if kind == "dense":
        flat = np.abs(W).ravel()
        mask = _top_k_mask(flat, keep).reshape(W.shape)
        return np.where(mask, W, 0.0)
    mask = _top_k_mask(np.abs(W.data), keep)
    out = W.copy()
    out.data = np.where(mask, out.data, 0.0)
    return out


def _prune_nm(kind, W, *, pattern, **_):
    n_keep, group = parse_pattern(pattern)
    n, m = W.shape
    if kind == "dense":
        n_groups = -(-m // group)
        padded = np.zeros((n, n_groups * group), dtype=np.float64)
        padded[:, :m] = W
        mag = np.abs(padded).reshape(n, n_groups, group)
        # rank by descending magnitude, ties to the lower column (stable sort)
        order = np.argsort(-mag, axis=2, kind="stable")
        keep = np.zeros_like(mag, dtype=bool)
        np.put_along_axis(keep, order[:, :, :n_keep], True, axis=2)
        keep = keep.reshape(n, n_groups * group)[:, :m]
        return np.where(keep, W, 0.0)
    coo = W.tocoo()
    rows = coo.row.astype(np.int64)
    cols = coo.col.astype(np.int64)
    key = rows * (-(-m // group)) + cols // group
    order = np.lexsort((cols, -np.abs(coo.data), key))
    key_sorted = key[order]
    start = np.r_[True, key_sorted[1:] != key_sorted[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(key_sorted.size), 0))
    rank = np.arange(key_sorted.size) - first
    kept = order[rank < n_keep]
    return sp.coo_array((coo.data[kept], (rows[kept], cols[kept])), shape=W.shape)


def _prune_block(kind, W, *, sparsity, block, **_):
    b = check_block(block)
    n, m = W.shape
    nb, mb = -(-n // b), -(-m // b)
    keep = _n_keep(sparsity, nb * mb)
    if kind == "dense":
        # the padded copy is the matrix rounded up to whole blocks: a 1 × 500,000 matrix in 4096-blocks
        # is 4096 × 503,808 (16 GB). Its block norms are summed exactly as before (einsum over the
        # padded blocks; a shorter reduction changed their last bits and could flip a tie), so it is
        # checked rather than avoided.
        check_memory(8 * (nb * b) * (mb * b) + 9 * n * m,
                     f"Block pruning with {b}×{b} blocks (the matrix padded to {nb * b:,} × {mb * b:,})",
                     "Use a block no larger than the matrix's sides, or a smaller block.")
        padded = np.zeros((nb * b, mb * b), dtype=np.float64)
        padded[:n, :m] = W
        norms = np.einsum("ijkl,ijkl->ik", padded.reshape(nb, b, mb, b), padded.reshape(nb, b, mb, b))
        mask = _top_k_mask(norms.ravel(), keep).reshape(nb, mb)
        full = np.repeat(np.repeat(mask, b, axis=0)[:n], b, axis=1)[:, :m]   # rows cut before columns grow
        return np.where(full, W, 0.0)
    coo = W.tocoo()
    rows = coo.row.astype(np.int64)
    cols = coo.col.astype(np.int64)
    key = (rows // b) * mb + cols // b
    order = np.argsort(key, kind="stable")
    ks = key[order]
    start = np.r_[True, ks[1:] != ks[:-1]] if ks.size else np.zeros(0, dtype=bool)
    inverse = np.empty(key.size, dtype=np.int64)
    inverse[order] = np.cumsum(start) - 1
    n_uniq = int(start.sum())
    norms = np.bincount(inverse, weights=coo.data * coo.data, minlength=n_uniq)
    kept_blocks = _top_k_mask(norms, keep)  # empty blocks have norm 0 and need not be kept
    sel = kept_blocks[inverse]
    return sp.coo_array((coo.data[sel], (rows[sel], cols[sel])), shape=W.shape)


@dataclass(frozen=True)
class Pruner:
    """One pruning method: its name, a one-line description and the function."""

    name: str
    description: str
    func: Callable


PRUNERS: dict[str, Pruner] = {
    p.name: p
    for p in (
        Pruner("magnitude", "unstructured: keep the largest |w| overall", _prune_magnitude),
        Pruner("nm", "N:M: keep the N largest |w| in every group of M consecutive columns", _prune_nm),
        Pruner("block", "blocks: keep the b×b blocks of largest Frobenius norm", _prune_block),
    )
}


@checked_call
def prune(W, method: str = "magnitude", sparsity: float = 0.9, pattern: str = "2:4",
          block: int = 4) -> sp.csr_array:
    """Prune a weight matrix and return it as a canonical ``csr_array`` (akf-spec §1).

    Parameters
    ----------
    W : numpy.ndarray or scipy.sparse matrix/array
        The 2-D weight matrix (rows × reduction dimension). Real, finite values.
    method : {"magnitude", "nm", "block"}
        ``"magnitude"``: keep the ``round((1-sparsity)·n·m)`` largest ``|w|``.
        ``"nm"``: keep the ``N`` largest ``|w|`` in each group of ``M`` consecutive columns of
        every row (``pattern``; the sparsity is then ``1 - N/M``).
        ``"block"``: keep the ``round((1-sparsity)·⌈n/b⌉·⌈m/b⌉)`` ``b×b`` blocks of largest
        Frobenius norm ``‖B‖_F``.
    sparsity : float
        Fraction of weights (``"magnitude"``) or blocks (``"block"``) removed, ``0 <= s < 1``.
    pattern : str
        ``"N:M"`` for ``method="nm"``, e.g. ``"2:4"``, ``"1:4"``, ``"4:8"``.
    block : int
        Block side ``b`` for ``method="block"``.

    Returns
    -------
    scipy.sparse.csr_array
        float64, canonical (explicit zeros dropped).

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[1.0, -4.0, 3.0, 2.0]])
    >>> prune(W, "nm", pattern="2:4").toarray()
    array([[ 0., -4.,  3.,  0.]])
    >>> prune(W, "magnitude", sparsity=0.75).toarray()
    array([[ 0., -4.,  0.,  0.]])
    """
    name = choice(method, PRUNERS)
    if name is None:
        raise InputError(
            f"Unknown pruning method {method!r}; choose one of {', '.join(sorted(PRUNERS))}."
        )
    method = name
    sparsity = check_sparsity(sparsity)
    if method == "nm":
        parse_pattern(pattern)
    if method == "block":
        check_block(block)
    kind, arr = _as_input(W)
    if kind == "sparse" and method != "magnitude" and arr.shape[0] * arr.shape[1] <= DENSE_PATH_MAX:
        # the vectorised dense path is ~10× faster than sorting the entries; same result
        kind, arr = "dense", arr.toarray()
    out = PRUNERS[method].func(kind, arr, sparsity=sparsity, pattern=pattern, block=block)
    return as_csr(out, name="pruned matrix", copy=False)
