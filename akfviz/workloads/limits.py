"""Size limits that protect the loaders and generators from exhausting memory (akf-spec §1).

Every loader reads the *declared* size of a file (Matrix Market banner, ``.npy`` header,
safetensors JSON header, the arrays inside a ``.npz``) and compares it with a
:class:`LoadLimits` before a single value array is allocated. Generators estimate their nnz
and any dense intermediate the same way. Going over a limit raises
:class:`~akfviz.errors.ResourceLimitError` (an :class:`~akfviz.errors.InputError`).

The defaults fit a 24 GB laptop: 200 million nonzeros of a CSR matrix take about
200e6 × (8 value + 8 index) bytes ≈ 3.2 GB, plus a temporary copy while canonicalising;
400 million dense float64 elements take 3.2 GB.

Custom limits are passed with the ``limits=`` keyword (``LoadLimits`` is also
``akfviz.LoadLimits``; on the command line, ``--limit NAME=VALUE``)::

    from akfviz.workloads import LoadLimits, load, generate
    small = LoadLimits(max_nnz=1_000_000)
    A = load("matrix.mtx", limits=small)
    B = generate("uniform", n=10_000, density=0.001, limits=small)
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ..arguments import shown, to_float
from ..errors import InputError, ResourceLimitError, checked_call, checked_init



def _count(v) -> str:
    """A declared count for a message: digits grouped up to 10**15, beyond that :func:`shown`'s
    short form (a header declaring 1e308 rows printed 309 digits).

    >>> _count(1048577), _count(10**400)
    ('1,048,577', 'a 401-digit number')
    """
    v = int(v)
    return f"{v:,}" if abs(v) < 10**15 else shown(v)


@checked_init
@dataclass(frozen=True)
class LoadLimits:
    """Upper bounds on what a loader or generator may allocate.

    Parameters
    ----------
    max_rows, max_cols : int
        Largest accepted number of rows / columns (default 50 million each).
    max_nnz : int
        Largest accepted number of stored entries (default 200 million): declared by a sparse
        file's header, or, for a dense array, its nonzeros, counted block by block before the
        sparse copy is allocated (:func:`~akfviz.workloads.validate.dense_to_csr`).
    max_dense_elements : int
        Largest accepted number of elements of a dense array that must be materialised
        (a ``.npy`` file, a safetensors tensor, a dense Matrix Market "array" body, the
        dense weight matrix behind an ``llm`` generator); default 400 million. Also bounds the
        block positions the ``clustered`` generator draws (the blocks' total area).
    max_decompressed_bytes : int
        Largest file accepted after decompressing a ``.gz`` or taking a member out of a
        ``.tar`` / ``.tar.gz`` (and largest compressed file read into memory); default
        4 GiB — a Matrix Market text of ≈ 100 million entries.
    max_compression_ratio : int or float
        Largest accepted expansion of compressed data: decompressed bytes over compressed
        bytes, for a ``.gz`` / ``.bz2`` / ``.xz`` file (the tar inside one included) and for
        the arrays of a ``.npz`` (their declared sizes over the file's size, leaving out a sparse
        matrix's ``indptr``, which the declared shape bounds); default 200.
        Matrix Market text compresses 3–6× with gzip, 6–7× with bzip2 and 17–26× with xz, so
        far more is the mark of a decompression bomb (a few kilobytes that unpack to
        gigabytes), refused as soon as the output passes the bound — before it is held in
        memory. Applies only above ``ratio_floor_bytes``.
    ratio_floor_bytes : int
        Output size below which ``max_compression_ratio`` does not apply (default 64 MiB), so a
        small file that compresses extremely well (a dense array of one constant: ≈ 1000×)
        still loads. The output may reach ``max(ratio_floor_bytes, max_compression_ratio ×
        compressed size)``; 0 applies the ratio from the first byte.

    Every field also takes a numpy number (``np.int64(10)``, ``np.float32(5)``), stored as a
    Python ``int`` (``float`` for a ratio that is not whole); a bool, NaN, an infinity, a number
    beyond float64's range or anything that is not a number is refused with
    :class:`~akfviz.errors.InputError`.
    """

    max_rows: int = 50_000_000
    max_cols: int = 50_000_000
    max_nnz: int = 200_000_000
    max_dense_elements: int = 400_000_000
    max_decompressed_bytes: int = 4 * 2**30
    max_compression_ratio: float = 200
    ratio_floor_bytes: int = 64 * 2**20

    def __post_init__(self):
        # numbers.Integral / numbers.Real take numpy integers and floats too; numpy bools are
        # neither, Python bools are refused by name
        for field in ("max_rows", "max_cols", "max_nnz", "max_dense_elements",
                      "max_decompressed_bytes"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise InputError(
                    f"LoadLimits.{field} must be a positive whole number, got {shown(value)}."
                )
            object.__setattr__(self, field, int(value))
        ratio = self.max_compression_ratio
        if (isinstance(ratio, bool) or not isinstance(ratio, numbers.Real)
                or not math.isfinite(to_float(ratio)) or ratio <= 0):
            raise InputError(f"LoadLimits.max_compression_ratio must be a positive number (such as "
                             f"200), got {shown(ratio)}.")
        if not isinstance(ratio, (int, float)):  # a numpy number or a Fraction: a plain number
            object.__setattr__(self, "max_compression_ratio",
                               int(ratio) if isinstance(ratio, numbers.Integral) else float(ratio))
        floor = self.ratio_floor_bytes
        if isinstance(floor, bool) or not isinstance(floor, numbers.Integral) or floor < 0:
            raise InputError(f"LoadLimits.ratio_floor_bytes must be a whole number of bytes, 0 or "
                             f"more, got {shown(floor)}.")
        object.__setattr__(self, "ratio_floor_bytes", int(floor))

    @checked_call
    def check_shape(self, rows: int, cols: int, *, what: str = "matrix") -> None:
        """Raise :class:`ResourceLimitError` if a declared shape exceeds the row/column limits."""
        if rows > self.max_rows or cols > self.max_cols:
            raise ResourceLimitError(
                f"The {what} declares shape {_count(rows)} × {_count(cols)}, over the limit of "
                f"{self.max_rows:,} rows × {self.max_cols:,} columns. Use a smaller matrix or pass "
                f"custom limits (limits=akfviz.LoadLimits(max_rows=..., max_cols=...))."
            )

    @checked_call
    def check_nnz(self, nnz: int, *, what: str = "matrix", mirrored: str | None = None) -> None:
        """Raise :class:`ResourceLimitError` if a declared number of stored entries is too large.

        Parameters
        ----------
        nnz : int
            The number of entries the file declares.
        what : str
            How the message names the matrix.
        mirrored : str, optional
            ``"symmetric"`` or ``"skew-symmetric"`` when the file stores one triangle: every
            entry may stand for two, so ``2 × nnz`` is checked (a bound: diagonal entries are
            not mirrored, but their number is unknown before the entries are read).
        """
        bound = 2 * nnz if mirrored else nnz
        if bound > self.max_nnz:
            declared = (f"declares {_count(nnz)} entries, up to {_count(bound)} once the "
                        f"{mirrored} half is mirrored," if mirrored
                        else f"declares {_count(nnz)} stored entries,")
            raise ResourceLimitError(
                f"The {what} {declared} over the limit of {self.max_nnz:,}. "
                f"Use a smaller matrix or pass custom limits (limits=akfviz.LoadLimits(max_nnz=...))."
            )

    @checked_call
    def check_dense(self, elements: int, *, what: str = "matrix") -> None:
        """Raise :class:`ResourceLimitError` if a dense array of ``elements`` values is too large."""
        if elements > self.max_dense_elements:
            raise ResourceLimitError(
                f"The {what} needs {_count(elements)} dense elements, over the limit of "
                f"{self.max_dense_elements:,}. Use a smaller matrix or pass custom limits "
                f"(limits=akfviz.LoadLimits(max_dense_elements=...))."
            )


    @checked_call
    def expansion_cap(self, packed: int) -> int:
        """Most bytes ``packed`` compressed bytes may expand to under ``max_compression_ratio``
        (never less than ``ratio_floor_bytes``)."""
        return max(self.ratio_floor_bytes, int(self.max_compression_ratio * packed))

    @checked_call
    def check_expansion(self, unpacked: int, packed: int, *, what: str, more: bool = False) -> None:
        """Raise :class:`ResourceLimitError` when ``packed`` compressed bytes expand to more than
        :meth:`expansion_cap` allows.

        Parameters
        ----------
        unpacked, packed : int
            Decompressed and compressed sizes in bytes.
        what : str
            How the message names the file (``"upload 'x.mtx.bz2'"``).
        more : bool
            True while decompressing: ``unpacked`` is the output so far, so the message says
            "at least".
        """
        if unpacked <= self.expansion_cap(packed):
            return
        ratio = f"{self.max_compression_ratio:g}"
        raise ResourceLimitError(
            f"{what[:1].upper() + what[1:]} expands more than {ratio}× when decompressed "
            f"({'at least ' if more else ''}{unpacked:,} bytes from {packed:,} bytes), the mark of a "
            f"decompression bomb; real matrix files compress 3–30× (xz up to ~25×). If you trust "
            f"the file, pass limits=akfviz.LoadLimits(max_compression_ratio=...).")


DEFAULT_LIMITS = LoadLimits()


def resolve_limits(limits) -> LoadLimits:
    """Return ``limits`` or the defaults; reject anything that is not a :class:`LoadLimits`."""
    if limits is None:
        return DEFAULT_LIMITS
    if not isinstance(limits, LoadLimits):
        raise InputError(
            f"limits must be a LoadLimits instance (akfviz.LoadLimits), got {type(limits).__name__}."
        )
    return limits
