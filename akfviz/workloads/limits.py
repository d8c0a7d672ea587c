"""Size limits that protect the loaders and generators from exhausting memory (akf-spec §1).

Every loader reads the *declared* size of a file (Matrix Market banner, ``.npy`` header,
safetensors JSON header, the arrays inside a ``.npz``) and compares it with a
:class:`LoadLimits` before a single value array is allocated. Generators estimate their nnz
and any dense intermediate the same way. Going over a limit raises
:class:`~akfviz.errors.ResourceLimitError` (an :class:`~akfviz.errors.InputError`).

The defaults fit a 24 GB laptop: 200 million nonzeros of a CSR matrix take about
200e6 × (8 value + 8 index) bytes ≈ 3.2 GB, plus a temporary copy while canonicalising;
400 million dense float64 elements take 3.2 GB.

Custom limits are passed with the ``limits=`` keyword::

    from akfviz.workloads import LoadLimits, load, generate
    small = LoadLimits(max_nnz=1_000_000)
    A = load("matrix.mtx", limits=small)
    B = generate("uniform", n=10_000, density=0.001, limits=small)
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError, ResourceLimitError, checked_init


@checked_init
@dataclass(frozen=True)
class LoadLimits:
    """Upper bounds on what a loader or generator may allocate.

    Parameters
    ----------
    max_rows, max_cols : int
        Largest accepted number of rows / columns (default 50 million each).
    max_nnz : int
        Largest accepted number of stored entries (default 200 million).
    max_dense_elements : int
        Largest accepted number of elements of a dense array that must be materialised
        (a ``.npy`` file, a safetensors tensor, a dense Matrix Market "array" body, the
        dense weight matrix behind an ``llm`` generator); default 400 million.
    max_decompressed_bytes : int
        Largest file accepted after decompressing a ``.gz`` or taking a member out of a
        ``.tar`` / ``.tar.gz`` (and largest compressed file read into memory); default
        4 GiB — a Matrix Market text of ≈ 100 million entries.
    """

    max_rows: int = 50_000_000
    max_cols: int = 50_000_000
    max_nnz: int = 200_000_000
    max_dense_elements: int = 400_000_000
    max_decompressed_bytes: int = 4 * 2**30

    def __post_init__(self):
        for field in ("max_rows", "max_cols", "max_nnz", "max_dense_elements",
                      "max_decompressed_bytes"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(
                    f"LoadLimits.{field} must be a positive whole number, got {value!r}."
                )

    def check_shape(self, rows: int, cols: int, *, what: str = "matrix") -> None:
        """Raise :class:`ResourceLimitError` if a declared shape exceeds the row/column limits."""
        if rows > self.max_rows or cols > self.max_cols:
            raise ResourceLimitError(
                f"The {what} declares shape {rows} × {cols}, over the limit of "
                f"{self.max_rows} rows × {self.max_cols} columns. Use a smaller matrix or pass "
                f"custom limits (limits=LoadLimits(max_rows=..., max_cols=...))."
            )

    def check_nnz(self, nnz: int, *, what: str = "matrix") -> None:
        """Raise :class:`ResourceLimitError` if a declared number of stored entries is too large."""
        if nnz > self.max_nnz:
            raise ResourceLimitError(
                f"The {what} declares {nnz} stored entries, over the limit of {self.max_nnz}. "
                f"Use a smaller matrix or pass custom limits (limits=LoadLimits(max_nnz=...))."
            )

    def check_dense(self, elements: int, *, what: str = "matrix") -> None:
        """Raise :class:`ResourceLimitError` if a dense array of ``elements`` values is too large."""
        if elements > self.max_dense_elements:
            raise ResourceLimitError(
                f"The {what} needs {elements} dense elements, over the limit of "
                f"{self.max_dense_elements}. Use a smaller matrix or pass custom limits "
                f"(limits=LoadLimits(max_dense_elements=...))."
            )


DEFAULT_LIMITS = LoadLimits()


def resolve_limits(limits) -> LoadLimits:
    """Return ``limits`` or the defaults; reject anything that is not a :class:`LoadLimits`."""
    if limits is None:
        return DEFAULT_LIMITS
    if not isinstance(limits, LoadLimits):
        raise InputError(
            f"limits must be a LoadLimits instance (akfviz.workloads.LoadLimits), got {type(limits).__name__}."
        )
    return limits
