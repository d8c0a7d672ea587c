"""Loaders for matrices in files: Matrix Market, scipy ``.npz``, ``.npy``, ``.safetensors``.

``load(path_or_bytes, fmt=None, tensor=None, *, limits=None, name=None)`` (akf-spec §1, §9;
issue 2 item 3) returns a canonical float64 ``csr_array``. Every reader first reads the
*declared* size (Matrix Market banner and size line, ``.npy`` headers, the safetensors JSON
header) and checks it against :class:`~akfviz.workloads.limits.LoadLimits` before allocating
anything, so a hostile header cannot exhaust memory. Every rejection is an
:class:`~akfviz.errors.InputError` (or its subclass
:class:`~akfviz.errors.ResourceLimitError`) with a plain-language message; unexpected parser
exceptions are wrapped with the file name and the parser's reason.

Readers are registered in :data:`READERS`; the format comes from ``fmt``, else from the
content's magic bytes, else from the file extension (of the path, of ``name=``, or of a
file-like object's ``.name``).
"""
from __future__ import annotations

import contextlib
import errno
import gc
import io
import json
import math
import os
import pathlib
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

from ..errors import InputError, ResourceLimitError, checked_call, name_list, shown as quoted
from . import archives, mm_syntax
from .limits import LoadLimits, resolve_limits
from .validate import as_csr

MAX_SAFETENSORS_HEADER = 100_000_000  # bytes; the safetensors library uses the same bound


# --------------------------------------------------------------------------- the source
@dataclass
class Source:
    """Where the bytes come from: a file path, or bytes held in memory."""

    label: str
    filename: str | None
    path: pathlib.Path | None = None
    data: bytes | None = None

    @property
    def size(self) -> int:
        return self.path.stat().st_size if self.path is not None else len(self.data)

    def open(self):
        """A fresh binary stream positioned at the start."""
        return open(self.path, "rb") if self.path is not None else io.BytesIO(self.data)

    def head(self, k: int) -> bytes:
        with self.open() as f:
            return f.read(k)

    def read_range(self, start: int, stop: int) -> bytes:
        if self.data is not None:
            return self.data[start:stop]
        with self.open() as f:
            f.seek(start)
            return f.read(stop - start)


def _looks_like_content(text: str) -> bool:
    """True for a string that holds a file's text rather than a path (several lines, or a
    Matrix Market banner)."""
    return "\n" in text or text.lstrip("\ufeff \t").lower().startswith("%%matrixmarket")


def _path_source(obj, name: str | None) -> Source:
    if isinstance(obj, str) and not obj:  # pathlib reads "" as ".", the current folder
        raise InputError("The path is empty; pass the path of a file (e.g. 'matrix.mtx'), or the "
                         "file's content as bytes.")
    if isinstance(obj, str) and _looks_like_content(obj):
        missing = True
        with contextlib.suppress(OSError, ValueError):
            missing = not pathlib.Path(obj).exists()
        if missing:
            shown = obj.lstrip()[:40].replace("\n", "\\n")
            raise InputError(
                f"This string looks like the content of a file ({shown!r}…), not a path to one. "
                f"Pass the path of the file, or its content as bytes (text.encode()).")
    try:
        path = pathlib.Path(obj)
        exists = path.exists()
    except (OSError, ValueError, TypeError) as exc:  # a name over 255 characters, a NUL byte …
        shown = str(obj)
        shown = shown[:60] + "…" if len(shown) > 60 else shown
        why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
        if getattr(exc, "errno", None) == errno.ENAMETOOLONG:
            why += "; a file or folder name may have at most 255 characters"
        raise InputError(f"{shown!r} is not a usable path ({why}). Pass the path of an existing "
                         f"file, or the file's content as bytes.") from None
    if not exists:
        raise InputError(f"No file at {str(path)!r}; check the path.")
    if not path.is_file():
        raise InputError(f"{str(path)!r} is not a regular file (is it a folder?).")
    try:   # an unreadable file is said to be one, not taken for a corrupt one later
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InputError(f"The file {path.name!r} could not be read "
                         f"({(exc.strerror or type(exc).__name__).lower()}); check its permissions, or "
                         f"copy it somewhere readable.") from None
    return Source(label=f"file {path.name!r}", filename=name or path.name, path=path)


def _read_file_object(obj) -> bytes:
    """Everything ``obj.read()`` returns, as bytes; its failures become :class:`InputError`."""
    if hasattr(obj, "seek"):
        try:
            obj.seek(0)
        except Exception:  # non-seekable streams are read from where they are
            pass
    try:
        data = obj.read()
    except UnicodeDecodeError:
        raise InputError("The file object was opened in text mode, but the file is binary; open the "
                         "file in binary mode: open(path, 'rb').") from None
    except MemoryError:
        raise ResourceLimitError("Reading the file object needs more memory than is available.") from None
    except Exception as exc:  # the object's own I/O failure (a closed file, a broken disk …)
        raise InputError(f"Could not read from the file object ({type(exc).__name__}: {exc}); check "
                         f"that it is open and readable, or pass the file's path.") from None
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputError("The file object's read() did not return bytes; open the file in binary mode.")
    return bytes(data)


def _as_source(obj, name: str | None, func: str = "load") -> Source:
    if isinstance(obj, (str, os.PathLike)):
        return _path_source(obj, name)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        label = f"upload {name!r}" if name else "the given data"
        return Source(label=label, filename=name, data=bytes(obj))
    if hasattr(obj, "read"):
        fname = name or getattr(obj, "name", None)
        fname = os.path.basename(fname) if isinstance(fname, str) else None
        data = _read_file_object(obj)
        label = f"upload {fname!r}" if fname else "the uploaded file"
        return Source(label=label, filename=fname, data=data)
    raise InputError(
        f"{func}() needs a file path (str or pathlib.Path), bytes, or a binary file object; "
        f"got {'None' if obj is None else type(obj).__name__}."
    )


# --------------------------------------------------------------------------- helpers
def _cap(label: str) -> str:
    """Capitalise a label that starts a sentence."""
    return label[:1].upper() + label[1:]


def _check_dims(shape, limits: LoadLimits, label: str):
    if len(shape) != 2:
        raise InputError(
            f"The matrix in {label} must be 2-D (rows × columns), but it has shape {quoted(tuple(shape))}."
        )
    rows, cols = int(shape[0]), int(shape[1])
    if rows < 1 or cols < 1:
        raise InputError(
            f"The matrix in {label} has shape {rows} × {cols}; it needs at least one row and one column."
        )
    limits.check_shape(rows, cols, what=f"matrix in {label}")
    return rows, cols


def _check_numeric_dtype(dtype: np.dtype, label: str):
    if dtype.hasobject:
        raise InputError(
            f"{_cap(label)} holds Python objects; akfviz never loads pickled data. Save a numeric array instead."
        )
    if dtype.names is not None or dtype.subdtype is not None:
        raise InputError(f"{_cap(label)} holds a structured array ({quoted(dtype, quote=False, width=80)}); give a plain numeric array.")
    if dtype.kind == "c":
        raise InputError(f"{_cap(label)} has complex values ({quoted(dtype, quote=False)}); akfviz works with real matrices only.")
    if dtype.kind not in "fiub":
        raise InputError(f"{_cap(label)} has values of type {quoted(dtype, quote=False)}, which is not a number type.")


def _read_npy_header(fp, label: str):
    """Read a ``.npy`` header from ``fp``: returns ``(shape, fortran_order, dtype)``."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fp)
        else:
            reader = getattr(fmt, "_read_array_header", None)
            if reader is None:  # numpy ≥ 2 keeps it here; version 3.0 is 2.0 with a UTF-8 header
                from numpy.lib import _format_impl
                reader = getattr(_format_impl, "_read_array_header", None)
            if reader is None or version not in ((3, 0),):
                raise ValueError(f"unsupported .npy version {version}")
            shape, fortran, dtype = reader(fp, version)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{_cap(label)} does not have a valid .npy header ({_npy_header_problem(exc)}); "
                         f"the file is corrupt or truncated.") from None
    if not all(type(d) is int and d >= 0 for d in shape):  # numpy lets True or -1 through
        raise InputError(f"{_cap(label)} does not have a valid .npy header (its shape "
                         f"{_shown(repr(shape).encode(), 60)} should be whole numbers of 0 or more); the "
                         f"file is corrupt.")
    return shape, fortran, dtype


def _npy_header_problem(exc: Exception) -> str:
    """numpy's refusal of a ``.npy`` header, said in words (its own texts quote Python's parser,
    advise ``allow_pickle=True``, or dump the whole header)."""
    detail = str(exc)
    cause = str(exc.__cause__ or exc.__context__ or "")  # numpy's "Cannot parse header" wraps the reason
    if "digits" in cause and "conversion" in cause:
        detail = cause
    if "malformed node" in detail or "<ast." in detail:  # not a plain literal (maybe code)
        return "the header is not a plain dictionary of literal values"
    if "max_header_size" in detail:
        return ("the header is longer than the 10,000 bytes numpy reads without trusting the file; a "
                "real .npy header takes about 128 bytes")
    if "digits" in detail and "conversion" in detail:
        return "it holds a number of over 4300 digits, far beyond any array's shape"
    if "EOF" in detail or "multi-line" in detail or "Cannot parse header" in detail:
        return "the header's dictionary is cut off or is not valid Python literal syntax"
    if isinstance(exc, EOFError):
        return "the header is cut short"
    if not detail.strip("() "):
        return f"numpy could not read it: {type(exc).__name__}"
    return detail if len(detail) <= 200 else detail[:200] + "…"


# --------------------------------------------------------------------------- Matrix Market
_BOM = b"\xef\xbb\xbf"
_BANNER = b"%%MatrixMarket"


def _banner_needs_fix(head: bytes) -> bool:
    """True for a UTF-8 byte-order mark, blank lines (or spaces) before the banner, or a banner
    not spelt ``%%MatrixMarket`` exactly (e.g. ``%%MATRIXMARKET``): the reader would reject
    each, though the file is readable."""
    body = head.lstrip()
    return (head.startswith(_BOM) or head[:1].isspace()
            or (body[:14].lower() == _BANNER.lower() and body[:14] != _BANNER))


_LEADING_SPACE = re.compile(rb"\s*")


def _fix_banner(data: bytes) -> tuple[bytes, int]:
    """``data`` without a UTF-8 byte-order mark or the blank lines before the banner, and with
    the banner spelt ``%%MatrixMarket`` (the header's other words are case-insensitive for the
    reader already); and the number of lines dropped (so that messages count the file's lines).
    """
    data = data.removeprefix(_BOM)
    lead = _LEADING_SPACE.match(data).end()
    dropped = data.count(b"\n", 0, lead)
    word = data[lead:lead + 14]
    if word != _BANNER and word.lower() == _BANNER.lower():  # copy the text only when needed
        data = _BANNER + data[lead + 14:]
    elif lead:
        data = data[lead:]
    return data, dropped


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _is_utf16(head: bytes) -> bool:
    """True for text saved as UTF-16: a UTF-16 byte-order mark, or (without one) printable ASCII
    with a NUL byte after or before every character."""
    if head[:2] in _UTF16_BOMS:
        return True
    for chars, nuls in ((head[0:16:2], head[1:16:2]), (head[1:16:2], head[0:16:2])):
        if len(head) >= 16 and nuls == b"\x00" * 8 and all(9 <= c < 127 for c in chars):
            return True
    return False


def _utf16_text(head: bytes) -> str:
    """The start of UTF-16 text ``head``, decoded (byte order from the BOM or the NUL bytes)."""
    if head[:2] in _UTF16_BOMS:
        return head.decode("utf-16", "ignore")
    return head.decode("utf-16-le" if head[1:2] == b"\x00" else "utf-16-be", "ignore")


def _sniff_mtx(head: bytes, size: int) -> bool:
    """A Matrix Market banner (after a UTF-8 byte-order mark or blank lines), or one saved as
    UTF-16 text (recognised so that the reader can say how to save it)."""
    if head.removeprefix(_BOM).lstrip()[:14].lower() == b"%%matrixmarket":
        return True
    return _is_utf16(head) and _utf16_text(head).lstrip("\ufeff \t\r\n")[:14].lower() == "%%matrixmarket"


#: Suffixes on which scipy's reader decompresses a path itself; such files reach the reader
#: as bytes (anything compressed was already unpacked by its magic bytes, so these are plain).
_READER_DECOMPRESSES = (".gz", ".bz2", ".xz", ".zst", ".lzma")
#: Comments longer than this are dropped before scipy's reader sees the text: the reader
#: keeps the header's comment as a string (twice), which made a 1 GiB comment cost ≈ 6 GB.
_MAX_COMMENT_BYTES = 1 << 20


def _utf8_path(path) -> bool:
    """Whether scipy's Matrix Market reader can open ``path`` by name: its C++ core takes a UTF-8
    string, and a file name of undecodable bytes (held as surrogates) is refused; such a file is
    read as bytes instead."""
    try:
        str(path).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


class _MMText:
    """The whole Matrix Market text as a uint8 array (memory-mapped for a plain file on disk)
    and what scipy's reader should open (:meth:`target`)."""

    def __init__(self, src: Source):
        self.src = src
        self._mm = None
        self._fh = None
        self.data = None
        self.line_shift = 0  # lines dropped before the entries (long comments)
        path = src.path
        head = src.head(64)
        if (path is not None and not _banner_needs_fix(head) and _utf8_path(path)
                and not path.name.lower().endswith(_READER_DECOMPRESSES)):
            import mmap

            self._fh = open(path, "rb")
            self._mm = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
            if self._mm[-1:] == b"\n":
                self.buf = np.frombuffer(self._mm, dtype=np.uint8)
                self.path = str(path)
                self._check_nul(self._mm.find(b"\x00") >= 0, head)
                return
            self.close()
        data = src.data if src.data is not None else path.read_bytes()
        self._check_nul(b"\x00" in data, head)
        data, self.line_shift = _fix_banner(data)
        self.use_bytes(data if data.endswith(b"\n") else data + b"\n")

    def _check_nul(self, found: bool, head: bytes) -> None:
        # NUL bytes make scipy 1.17's reader segfault (scipy issue #19949)
        if not found:
            return
        self.close()
        label = _cap(self.src.label)
        if _is_utf16(head):
            raise InputError(
                f"{label} is saved as UTF-16 text (what Windows PowerShell 5's '>' and Out-File write by "
                f"default); a Matrix Market file must be plain ASCII or UTF-8 text. Save it again as "
                f"UTF-8 (PowerShell: '... | Out-File -Encoding utf8 name.mtx'; an editor: Save as, "
                f"encoding UTF-8) and load it again.")
        raise InputError(f"{label} contains NUL bytes; it is not a valid Matrix Market text file.")

    def use_bytes(self, data: bytes) -> None:
        """Read ``data`` (the text, changed) from memory from now on."""
        self.buf = None
        self.close()
        self.data, self.path = data, None
        self.buf = np.frombuffer(data, dtype=np.uint8)

    def target(self):
        """A fresh argument for ``scipy.io.mminfo`` / ``mmread``: a path or a ``BytesIO``
        (never an open file: scipy 1.17's reader aborts the process on a ``BufferedReader``)."""
        return self.path if self.path is not None else io.BytesIO(self.data)

    #: At most this many bytes of a line either side of the position asked about are returned
    #: (messages quote a line's start and count its items; no real line is this long).
    LINE_REACH = 1 << 20

    def line_at(self, pos: int) -> tuple:
        """``(line number, line text, offset of the line)`` of byte ``pos``; the text reaches
        at most :attr:`LINE_REACH` bytes either side of ``pos``. (It was 4096 bytes: a size line
        of a 5000-digit number was quoted from its middle and said to hold one item.)"""
        buf = self.buf
        pos = min(max(int(pos), 0), buf.shape[0])
        n = 1
        for lo in range(0, pos, 1 << 24):  # in chunks: no temporary as large as the file
            n += int(np.count_nonzero(buf[lo:min(lo + (1 << 24), pos)] == 10))
        start = max(pos - self.LINE_REACH, 0)
        hi = pos
        while hi > start:  # the last newline before pos, in chunks growing backwards
            lo = max(hi - 4096, start)
            back = np.flatnonzero(buf[lo:hi] == 10)
            if back.size:
                start = lo + int(back[-1]) + 1
                break
            hi = lo
        end = min(pos + self.LINE_REACH, buf.shape[0])
        lo = pos
        while lo < end:  # the first newline from pos on
            hi = min(lo + 4096, end)
            ahead = np.flatnonzero(buf[lo:hi] == 10)
            if ahead.size:
                end = lo + int(ahead[0])
                break
            lo = hi
        return n + self.line_shift, bytes(buf[start:end]).strip(), start

    def close(self) -> None:
        self.buf = None
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None


#: Control characters other than tab, line feed and carriage return (Python's ``split()`` takes
#: vertical tab, form feed and the file separators for spaces; the entry scan does not).
_CONTROL_CHAR = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_NAMES = {0x0B: "a vertical tab", 0x0C: "a form feed (page break)", 0x1A: "an end-of-file mark (Ctrl-Z)",
                  0x08: "a backspace", 0x1B: "an escape character", 0x7F: "a delete character"}

#: A real number written with a Fortran ``D`` exponent (``1.0D+00``).
_FORTRAN_D = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[dD][+-]?[0-9]+")

_KIND_WORDS = {
    mm_syntax.INDEX: "is not a row or column index (a whole number from 1)",
    mm_syntax.INTEGER: "is not an integer, and the header declares integer values (no decimal point or exponent)",
    mm_syntax.REAL: ("is not a number: Matrix Market values are decimal numbers such as 3, -1.5 or "
                     "2.5e-3 (no hexadecimal, units, words or thousands separators)"),
}


def _mm_syntax_error(text: _MMText, code: int, pos: int, count: int, expect: int, info) -> InputError:
    """The readable error for a result of :func:`akfviz.workloads.mm_syntax.scan_entries`."""
    rows, cols, layout, field, symmetry = info
    label = _cap(text.src.label)
    if code == mm_syntax.TOO_FEW:
        return InputError(
            f"{label} is truncated: its size line declares {expect:,} entries but it has {count:,}.")
    n, line, start = text.line_at(pos)
    shown = line[:60].decode("utf-8", "replace") + ("…" if len(line) > 60 else "")
    where = f"{label}, line {n} ({shown!r})"
    entry = {"coordinate": "row, column" + ("" if field == "pattern" else f", {field} value"),
             "array": f"one {field} value"}[layout]
    if code == mm_syntax.COMMENT:
        return InputError(
            f"{label}, line {n}, is a comment ({shown!r}) among the entries; Matrix Market allows "
            f"comment lines only before the size line. Delete it or move it up.")
    if code == mm_syntax.TOO_MANY:
        return InputError(f"{where}: the file has more entries than the {expect:,} its size line declares.")
    if code == mm_syntax.EXTRA_TOKEN:
        tok = (text.buf[pos:pos + 64].tobytes().split() or [b""])[0]
        return InputError(f"{where}: {tok[:30].decode('utf-8', 'replace')!r} is one item too many; each "
                          f"entry line holds {entry}.")
    if code == mm_syntax.MISSING_TOKEN:
        return InputError(f"{where}: too few numbers on one line; each entry line holds {entry}.")
    if code == mm_syntax.BOTH_TRIANGLES:
        return InputError(f"{where}: this {symmetry} file lists entries on both sides of the diagonal; it "
                          f"must store one triangle only (each entry stands for its mirror too, so a pair "
                          f"listed both ways would be counted twice).")
    if code == mm_syntax.SKEW_DIAGONAL:
        return InputError(f"{where}: a skew-symmetric matrix has zeros on its diagonal, so its file "
                          f"may not list a diagonal entry.")
    ctrl = _CONTROL_CHAR.search(text.buf[start:pos + 64].tobytes().split(b"\n")[0])
    if ctrl:
        ch = ctrl.group()[0]
        what = _CONTROL_NAMES.get(ch, "a control character")
        return InputError(f"{where}: the line holds {what} (byte 0x{ch:02X}), which Matrix Market does "
                          f"not allow; items are separated by spaces or tabs. Replace it with a space "
                          f"(or delete it) and load the file again.")
    k = len(text.buf[start:pos].tobytes().split())
    tok = (text.buf[pos:pos + 64].tobytes().split() or [b""])[0]
    kinds = mm_syntax.layout_tokens(layout, field)
    kind = kinds[min(k, len(kinds) - 1)]
    if code == mm_syntax.OUT_OF_RANGE:
        axis, size = ("row", rows) if k == 0 else ("column", cols)
        return InputError(f"{where}: {axis} index {tok.decode('utf-8', 'replace')} is outside 1..{size:,} "
                          f"(Matrix Market indices start at 1 and may not exceed the size line's "
                          f"{rows:,} × {cols:,}).")
    hint = ""
    if kind == mm_syntax.REAL and _FORTRAN_D.fullmatch(tok):
        fixed = re.sub(rb"[dD]", b"E", tok).decode()
        hint = f" It looks like a Fortran double-precision exponent: replace D with E ({fixed!r})."
    return InputError(f"{where}: {tok[:30].decode('utf-8', 'replace')!r} {_KIND_WORDS[kind]}; a reader "
                      f"that skipped it would load a wrong value.{hint}")


#: The banner's words after ``%%MatrixMarket``: what each one is, the values the reader knows
#: (``double`` is its synonym of ``real``) and how messages describe them.
_BANNER_WORDS = (
    ("object", ("matrix",), "object (matrix)"),
    ("format", ("coordinate", "array"), "format (coordinate or array)"),
    ("field", ("real", "integer", "pattern", "complex", "double"), "field (real, integer or pattern)"),
    ("symmetry", ("general", "symmetric", "skew-symmetric", "hermitian"),
     "symmetry (general, symmetric or skew-symmetric)"),
)
_BANNER_RULE = ("a Matrix Market file starts with the banner '%%MatrixMarket matrix <format> <field> "
                "<symmetry>', where the format is coordinate or array, the field real, integer or "
                "pattern, and the symmetry general, symmetric or skew-symmetric (e.g. '%%MatrixMarket "
                "matrix coordinate real general')")


def _shown(line: bytes, width: int = 60) -> str:
    """A line of the file as messages quote it (cut at ``width`` characters)."""
    return line[:width].decode("utf-8", "replace") + ("…" if len(line) > width else "")


def _mm_check_banner(text: _MMText, line: bytes) -> None:
    """Refuse a first line that is not a readable banner, naming what is wrong: old Mac (CR-only)
    line endings, another first line, missing words, or a ``vector`` object (scipy's reader
    refuses vectors only once it reads the entries; its other refusals are explained by
    :func:`_mm_header_error`)."""
    label = _cap(text.src.label)
    no = 1 + text.line_shift
    body = line.rstrip(b"\r\n")
    if b"\r" in body:
        raise InputError(
            f"{label} has old Mac line endings (CR only, no line feeds), so it reads as one long line "
            f"and has no size line or entries. Convert it to Unix (LF) or Windows (CRLF) line endings, "
            f"e.g. with tr '\\r' '\\n' < old.mtx > new.mtx, or your editor's line-ending setting, and "
            f"load it again.")
    words = body.split()
    if not words or words[0] != _BANNER:
        raise InputError(f"{label} is not a valid Matrix Market file: line {no} ({_shown(body)!r}) is "
                         f"not the banner; {_BANNER_RULE}, on the first line.")
    if len(words) < 5:
        descs = [desc for _, _, desc in _BANNER_WORDS[len(words) - 1:]]
        missing = descs[0] if len(descs) == 1 else ", ".join(descs[:-1]) + " and " + descs[-1]
        raise InputError(f"{label}, line {no}, the banner ({_shown(body)!r}), lacks its {missing}; "
                         f"{_BANNER_RULE}.")
    if words[1].lower() == b"vector":
        raise InputError(
            f"{label} declares a Matrix Market 'vector' object (line {no}, the banner: "
            f"{_shown(body)!r}); vector objects are not supported, only 'matrix'. Write the vector as "
            f"an n × 1 matrix: the banner '%%MatrixMarket matrix ...', the size line 'n 1 entries' "
            f"(coordinate) or 'n 1' (array), and each coordinate entry as 'row 1 value'.")


def _mm_header_error(text: _MMText, banner: bytes, banner_no: int, start: int,
                     exc: Exception) -> InputError:
    """The readable error for a header scipy's reader refused (``exc``): the banner word it
    does not know (the banner is line ``banner_no``), or what is wrong with the size line (the
    line just before ``start``)."""
    label = _cap(text.src.label)
    words = banner.split()
    for (what, vals, _), word in zip(_BANNER_WORDS, words[1:5]):
        if word.decode("utf-8", "replace").lower() not in vals:
            return InputError(
                f"{label}, line {banner_no}, the banner: {quoted(word.decode('utf-8', 'replace'))} "
                f"is not a Matrix Market {what}; {_BANNER_RULE}.")
    layout = words[2].decode().lower()
    no, line, _ = text.line_at(start - 1)
    want, form = (3, "'rows columns entries'") if layout == "coordinate" else (2, "'rows columns'")
    rule = (f"in {'a coordinate' if want == 3 else 'an array'} file it must be {form}: "
            f"{('two', 'three')[want - 2]} whole numbers written with digits only")
    where = f"{label}, line {no} ({_shown(line)!r}), the size line"
    toks = line.split()
    if len(toks) != want:
        extra = " (a comment may not follow them on the same line)" if b"%" in line else ""
        return InputError(f"{where}, holds {len(toks)} item(s); {rule}{extra}.")
    for tok in toks:
        shown = _shown(tok, 30)
        if tok.isdigit():
            # (by length first: int() refuses numbers of over 4300 digits with its own message)
            if len(tok.lstrip(b"0")) > 19 or int(tok) >= 2**63:
                return InputError(f"{where}: {shown} is far too large for a matrix size or entry count "
                                  f"(the largest any reader takes is 2**63 − 1); the file is corrupt.")
            continue
        if tok[:1] == b"-":
            why = f"{shown!r} is negative"
        elif tok[:1] == b"+" and tok[1:].isdigit():
            why = f"{shown!r} has a plus sign"
        else:
            why = f"{shown!r} is not a whole number"
        return InputError(f"{where}: {why}; {rule} (no sign, decimal point or exponent).")
    return InputError(f"{label} has a Matrix Market header that could not be read ({exc}); check its "
                      f"first lines: {_BANNER_RULE}, then the size line.")


def _mm_check_header(label: str, rows: int, cols: int, layout: str, field: str, symmetry: str) -> None:
    if field == "complex":
        raise InputError(
            f"{_cap(label)} has complex values (its banner's field is 'complex'); akfviz accepts real, "
            f"integer and pattern matrices only.")
    if symmetry != "general" and rows != cols:
        raise InputError(
            f"{_cap(label)} declares a {symmetry} matrix of {rows:,} × {cols:,}; a {symmetry} matrix "
            f"must be square.")
    if field == "pattern" and symmetry == "skew-symmetric":
        raise InputError(
            f"{_cap(label)} declares a pattern skew-symmetric matrix; Matrix Market does not allow "
            f"that combination (a pattern has no values whose signs could be mirrored).")
    if field == "pattern" and layout == "array":
        raise InputError(
            f"{_cap(label)} declares an 'array pattern' matrix; Matrix Market array files cannot have "
            f"the pattern field (an array lists every value, and a pattern has none). Use 'coordinate "
            f"pattern' with one 'row column' line per entry, or give the array real or integer values.")


#: Tokens that may be a number beyond float64's range: an exponent of three digits or more, or
#: 300 digits in a row (checked with float() one by one, only once a read value is infinite).
# A decimal number beyond float64's range (≈ 1.8e308) has an exponent of at least 100 (three
# significant digits: Fortran's E+001 does not match) or, with a smaller exponent, a run of at least
# 209 digits; candidates are then read with float().
_BIG_NUMBER = re.compile(rb"[eE]\+?0*[1-9][0-9]{2,}|[0-9]{200,}")
_TOKEN_REST = re.compile(rb"[^\s]*")


def _mm_overflow_at(text: _MMText, start: int):
    """``(offset, token)`` of the first entry value after ``start`` that is a finite decimal
    number beyond float64's range (read as infinity), or None."""
    buf = text.buf
    view = memoryview(buf)
    for m in _BIG_NUMBER.finditer(view, start):
        lo = max(start, m.start() - 4096)
        before = bytes(buf[lo:m.start()])
        s = lo + max(before.rfind(d) for d in (b" ", b"\t", b"\n", b"\r")) + 1
        e = _TOKEN_REST.match(view, m.end()).end()
        tok = bytes(buf[s:e])
        try:
            if math.isinf(float(tok)):
                return s, tok
        except ValueError:
            continue
    return None


def _mm_check_values(text: _MMText, M, start: int) -> None:
    """Refuse values beyond float64's range (about ±1.8e308) with their line: a number such as
    ``1e400``, or duplicate entries whose sum overflows (readers add duplicates up). NaN or
    infinity written in the file is left to :func:`~akfviz.workloads.validate.as_csr`.

    The fast path costs one max and one min over the values; a sum of duplicates is checked
    only when the largest magnitude times the number of entries could overflow."""
    vals = M.data if sp.issparse(M) else M
    if vals.dtype.kind != "f" or vals.size == 0:
        return
    hi, lo = float(vals.max()), float(vals.min())
    label = _cap(text.src.label)
    beyond = "beyond the range of float64 numbers (the largest is about ±1.8e308)"
    if not (math.isfinite(hi) and math.isfinite(lo)):
        # only an infinity can be an overflow (NaN is a literal nan, refused by as_csr)
        found = _mm_overflow_at(text, start) if np.isinf(vals).any() else None
        if found is not None:
            no, line, _ = text.line_at(found[0])
            raise InputError(
                f"{label}, line {no} ({_shown(line)!r}): the value {_shown(found[1], 30)} is {beyond}, "
                f"so it would be read as infinity. Write a smaller value, or rescale the matrix.")
        return
    if sp.issparse(M) and max(hi, -lo) > np.finfo(np.float64).max / max(M.nnz, 1):
        summed = sp.csr_array(M)  # adds duplicates up, as loading does
        bad = np.flatnonzero(~np.isfinite(summed.data))
        if bad.size:
            rows = np.searchsorted(summed.indptr, bad, side="right") - 1
            # a symmetric file lists one triangle, the lower one by the standard; the mirror came first
            lower = np.flatnonzero(rows >= summed.indices[bad])
            pick = int(lower[0]) if lower.size else 0
            k, row = int(bad[pick]), int(rows[pick])
            raise InputError(
                f"{label} lists the entry at row {row + 1}, column {int(summed.indices[k]) + 1} more "
                f"than once, and Matrix Market readers add duplicate entries up: their sum is {beyond}. "
                f"Remove the duplicates, or rescale the matrix.")


def _read_mtx(src: Source, limits: LoadLimits, tensor):
    """Matrix Market through scipy's reader, after the checks scipy 1.17's reader needs:
    header sanity (a non-square symmetric array made it write past its buffer), the entries'
    syntax (:mod:`.mm_syntax`: it reads ``1e3`` in an integer file as 1), NUL bytes and a cut
    final token (both segfault it)."""
    label = src.label
    _no_tensor(tensor, label, "a Matrix Market file holds one matrix")
    text = _MMText(src)
    try:
        first = np.flatnonzero(text.buf[:1 << 16] == 10)
        banner = text.buf[:int(first[0]) + 1 if first.size else 1 << 16].tobytes()
        _mm_check_banner(text, banner)
        banner_no = 1 + text.line_shift  # (the shift changes if long comments are dropped)
        start = int(mm_syntax.body_start(text.buf))
        if start < 0:
            raise InputError(f"{_cap(label)} has no size line after its header; it is not a valid "
                             f"Matrix Market file.")
        banner_end = int(first[0]) + 1 if first.size else start
        if start - banner_end > _MAX_COMMENT_BYTES:  # drop long comments before scipy sees them
            size_no, size_line, _ = text.line_at(start - 1)
            text.use_bytes(text.buf[:banner_end].tobytes() + size_line + b"\n" + text.buf[start:].tobytes())
            text.line_shift = size_no - 2  # messages still count the lines of the file
            start = int(mm_syntax.body_start(text.buf))
        try:
            rows, cols, entries, layout, field, symmetry = scipy.io.mminfo(text.target())
        except Exception as exc:
            raise _mm_header_error(text, banner, banner_no, start, exc) from None
        _mm_check_header(label, rows, cols, layout, field, symmetry)
        if symmetry == "hermitian":  # real values (complex is refused): hermitian means symmetric
            symmetry = "symmetric"
        rows, cols = _check_dims((rows, cols), limits, label)
        if layout == "array":
            limits.check_dense(int(rows) * int(cols), what=f"dense Matrix Market array in {label}")
        else:
            limits.check_nnz(int(entries), what=f"matrix in {label}",
                             mirrored=None if symmetry == "general" else symmetry)
        expect = mm_syntax.expected_entries(layout, symmetry, rows, cols, entries)
        code, pos, count, plus = mm_syntax.scan_entries(text.buf, start, layout, field, rows, cols,
                                                        symmetry == "skew-symmetric", expect,
                                                        sym=symmetry != "general")
        if code != mm_syntax.OK:
            raise _mm_syntax_error(text, code, pos, count, expect, (rows, cols, layout, field, symmetry))
        if plus:
            text.use_bytes(mm_syntax.without_leading_plus(text.buf, start))
        try:
            try:
                M = scipy.io.mmread(text.target())
                if field == "integer" and symmetry == "skew-symmetric" and _holds_int64_min(M):
                    raise OverflowError("the mirror of -2**63 is beyond int64")  # it wrapped around
            except OverflowError:
                # an integer beyond int64 ("Line 3: Integer out of range."): Matrix Market puts no
                # bound on integers and the result is float64 anyway, so read the text as `real`
                # (one copy of the text, made only for such a file; float64 parsing rounds a
                # whole number exactly as converting it from int64 would)
                real = _as_real_field(text.buf, banner_end) if field == "integer" else None
                if real is None:
                    raise
                text.use_bytes(real)
                start = int(mm_syntax.body_start(text.buf))  # the banner changed length
                M = scipy.io.mmread(text.target())
        except MemoryError:
            raise ResourceLimitError(f"{_cap(label)} needs more memory than is available.") from None
        except Exception as exc:
            raise InputError(f"{_cap(label)} could not be read as Matrix Market: {exc}") from None
        _mm_check_values(text, M, start)
    finally:
        text.close()
    return M


def _holds_int64_min(M) -> bool:
    """True when scipy's reader returned int64 values holding -2**63, whose negation (the
    mirror of a skew-symmetric entry) wraps around to itself."""
    vals = M.data if sp.issparse(M) else np.asarray(M)
    return vals.dtype == np.int64 and bool(np.any(vals == np.iinfo(np.int64).min))


def _as_real_field(buf: np.ndarray, banner_end: int) -> bytes | None:
    """The Matrix Market text ``buf`` with its banner's field ``integer`` changed to ``real``
    (None if the first line is not such a banner)."""
    words = buf[:banner_end].tobytes().split()
    if len(words) < 5 or words[3].lower() != b"integer":
        return None
    words[3] = b"real"  # %%MatrixMarket matrix <layout> <field> <symmetry>
    out = io.BytesIO()  # getvalue() hands over this buffer: one copy of the text in all
    out.write(b" ".join(words) + b"\n")
    out.write(buf[banner_end:])
    return out.getvalue()


def _no_tensor(tensor, label: str, why: str) -> None:
    """Refuse ``tensor=`` where there is nothing to choose (it used to be ignored silently)."""
    if tensor is not None:
        raise InputError(
            f"tensor={tensor!r} was given, but {label} is not a .safetensors file, a .npz of several "
            f"arrays or a tar archive: {why}. Leave tensor= out.")


# --------------------------------------------------------------------------- .npy
def _read_npy(src: Source, limits: LoadLimits, tensor):
    label = src.label
    _no_tensor(tensor, label, "a .npy file holds one array")
    with src.open() as f:
        shape, fortran, dtype = _read_npy_header(f, label)
        offset = f.tell()
    _check_numeric_dtype(dtype, f"The array in {label}")
    _check_dims(shape, limits, label)
    elements = int(np.prod(shape, dtype=object))
    limits.check_dense(elements, what=f"dense array in {label}")
    needed = offset + elements * dtype.itemsize
    if src.size < needed:
        raise InputError(
            f"{_cap(label)} is truncated: its header declares {elements} values of type {dtype} "
            f"({needed} bytes in all) but the file has only {src.size} bytes."
        )
    try:
        # no copy of the values: a view of the bytes in memory, or the file memory-mapped;
        # as_csr reads it block by block (the header and the size were checked above)
        if src.data is not None:
            arr = np.frombuffer(src.data, dtype=dtype, count=elements, offset=offset)
            arr = arr.reshape(shape, order="F" if fortran else "C")
        else:
            arr = np.load(src.path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:
        raise InputError(f"Could not read the .npy file {label}: {exc}") from None
    return arr


# --------------------------------------------------------------------------- .npz
_SPARSE_KEYS = {
    "csr": ("data", "indices", "indptr"),
    "csc": ("data", "indices", "indptr"),
    "bsr": ("data", "indices", "indptr"),
    "coo": ("data", "row", "col"),
    "dia": ("data", "offsets"),
}


#: How the members of a ``.npz`` may be stored: numpy writes them stored (``np.savez``) or
#: deflated (``np.savez_compressed``, ``scipy.sparse.save_npz``).
_NPZ_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_ZIP_METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA"}


def _npz_member_headers(zf: zipfile.ZipFile, label: str) -> dict:
    """``{key: (shape, dtype, header_end, file_size)}`` for every ``.npy`` member.

    A member compressed other than stored or deflate is refused before any is opened: Python's
    zipfile unpacks a bzip2 or LZMA member a whole compressed chunk at a time (a few kilobytes
    may unpack to gigabytes) and only then cuts the output at the declared size, whereas it
    unpacks a deflate member at most as many bytes at a time as are asked for.
    """
    out = {}
    for info in zf.infolist():
        if not info.filename.endswith(".npy"):
            continue
        if info.compress_type not in _NPZ_METHODS:
            method = _ZIP_METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
            raise InputError(
                f"Array {info.filename[:-4][:60]!r} in {label} is compressed with {method}; a .npz "
                f"file's arrays are stored or deflate-compressed (what numpy.savez, "
                f"numpy.savez_compressed and scipy.sparse.save_npz write). Save it again with one of "
                f"those.")
        key = info.filename[:-4]
        with zf.open(info) as fp:
            shape, fortran, dtype = _read_npy_header(fp, f"Array {key!r} in {label}")
            out[key] = (shape, dtype, fp.tell(), info.file_size)
    return out


def _npz_load_member(zf, key, headers, label, limits: LoadLimits, *, max_elements=None):
    shape, dtype, hdr_end, fsize = headers[key]
    if dtype.kind not in "SU":  # the 'format' member of a sparse .npz is a short string
        _check_numeric_dtype(dtype, f"Array {key!r} in {label}")
    elements = int(np.prod(shape, dtype=object))
    if max_elements is not None and elements > max_elements:
        raise ResourceLimitError(
            f"Array {key!r} in {label} declares {elements:,} elements, over the limit of {max_elements:,}."
        )
    if fsize < hdr_end + elements * dtype.itemsize:
        raise InputError(
            f"{_cap(label)} is truncated: array {key!r} declares {elements} values but its data is shorter."
        )
    with zf.open(key + ".npy") as fp:
        return np.load(fp, allow_pickle=False)


def _index_array(arr, name, label, length=None):
    arr = np.asarray(arr)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InputError(f"{_cap(label)}: the sparse '{name}' array must be a 1-D integer array, got {arr.dtype} {arr.shape}.")
    if length is not None and arr.size != length:
        raise InputError(f"{_cap(label)}: the sparse '{name}' array has {arr.size} entries, expected {length}; the file is corrupt.")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise InputError(f"{_cap(label)}: the sparse '{name}' array holds the index {int(arr.max())}, far beyond "
                         f"any matrix; the file is corrupt.")
    return arr.astype(np.int64, copy=False)


def _in_range(arr, upper, name, label):
    if arr.size and (arr.min() < 0 or arr.max() >= upper):
        raise InputError(
            f"{_cap(label)}: the sparse '{name}' array has indices outside [0, {upper}) "
            f"(min {int(arr.min())}, max {int(arr.max())}); the file is corrupt."
        )


def _read_npz(src: Source, limits: LoadLimits, tensor):
    label = src.label
    try:
        with src.open() as f, zipfile.ZipFile(f) as zf:
            headers = _npz_member_headers(zf, label)
            if not headers:
                raise InputError(f"{_cap(label)} is a zip archive with no .npy arrays inside; it is not a .npz file.")
            # scipy's save_npz stores the format name as text; a numeric 'format' is an array of that name
            text_format = "format" in headers and headers["format"][1].kind in "SU"
            sparse = text_format and "shape" in headers
            limits.check_expansion(_npz_expansion_bytes(headers, sparse), src.size, what=label)
            if sparse:
                _no_tensor(tensor, label, "a scipy sparse .npz holds one matrix")
                return _npz_sparse(zf, headers, label, limits)
            sparse_keys = {"format", "shape", "indices", "indptr", "row", "col", "offsets"} & set(headers)
            if sparse_keys and "data" in headers and tensor is None:  # tensor=: a dense array by name
                if "format" in headers and "shape" in headers:
                    fdt = headers["format"][1]
                    raise InputError(f"{_cap(label)} looks like a scipy sparse .npz, but its 'format' entry "
                                     f"holds {fdt} values, not a format name such as 'csr'; the file is "
                                     f"corrupt. Save it again with scipy.sparse.save_npz.")
                lacks = " and ".join(repr(k) for k in ("format", "shape") if k not in headers)
                raise InputError(f"{_cap(label)} looks like a scipy sparse .npz (it has "
                                 f"{', '.join(sorted(sparse_keys | {'data'}))}) but lacks its {lacks} entry; "
                                 f"the file is corrupt. Save it again with scipy.sparse.save_npz.")
            return _npz_dense(zf, headers, label, limits, tensor)
    except InputError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise InputError(f"{_cap(label)} is a corrupt or truncated .npz (zip) file: {exc}") from None


def _npz_expansion_bytes(headers: dict, sparse: bool) -> int:
    """The bytes of a ``.npz``'s arrays that the compression-ratio guard weighs against the
    file's size: the declared sizes of all ``.npy`` members, except a sparse matrix's
    ``indptr``.

    Reading a member never yields more than its declared size (Python's zipfile stops there
    and checks the CRC; members are stored or deflated, see :func:`_npz_member_headers`), and
    the declared size must hold what the member's ``.npy`` header declares, which is checked
    against the limits before it is read: the values of a dense array against
    ``max_dense_elements``, a sparse matrix's ``data`` and index arrays against ``max_nnz``.
    Within those limits a file that compresses far better than real matrix data (a dense
    array of zeros, 3 MB for 3.2 GB) is still refused by the ratio. The ``indptr`` of a
    CSR / CSC / BSR matrix is different: it holds one integer per row (column) of the declared
    shape, which is checked against ``max_rows`` / ``max_cols``, and is checked to have no
    more (:func:`_npz_sparse`) before it is read. A Matrix Market file allocates the same
    array from its size line alone, and the ``indptr`` of mostly empty rows compresses about
    1000×: counting it refused a 378 KB file of a 20M × 20M matrix with 10,000 nonzeros.
    """
    return sum(fsize for key, (_, _, _, fsize) in headers.items() if not (sparse and key == "indptr"))


def _npz_dense(zf, headers, label, limits, tensor):
    two_d = [k for k, (shape, _, _, _) in headers.items() if len(shape) == 2]
    if tensor is not None:
        if tensor not in headers:
            raise InputError(
                f"{_cap(label)} has no array named {tensor!r}; its 2-D arrays are: {name_list(two_d)}."
            )
        key = tensor
    elif len(headers) == 1:
        key = next(iter(headers))
    else:
        # as for safetensors (_pick_tensor): a zero-sized array can never load, so it is never a choice
        # (matrix_choices leaves it out too, so the app offered no picker for w beside bias (0, 40))
        if not two_d:
            arrays = [(k, shape) for k, (shape, _, _, _) in headers.items()]
            raise InputError(f"{_cap(label)} holds no 2-D array, so there is no matrix to load (its arrays: "
                             f"{name_list(arrays)}).")
        key = _choose_2d([(k, headers[k][0]) for k in two_d], label, "array", lambda count, names: (
            f"{_cap(label)} holds several arrays and is not a scipy sparse .npz; pick one with tensor=... "
            f"(2-D arrays: {names}"))
    shape, dtype, _, _ = headers[key]
    _check_numeric_dtype(dtype, f"Array {key!r} in {label}")
    _check_dims(shape, limits, label)
    limits.check_dense(int(np.prod(shape, dtype=object)), what=f"dense array {key!r} in {label}")
    return _npz_load_member(zf, key, headers, label, limits)


def _npz_sparse(zf, headers, label, limits: LoadLimits):
    # small members first: format and shape (bounded sizes, never pickled)
    fmt_arr = _npz_load_member(zf, "format", headers, label, limits, max_elements=16)
    shape_arr = _npz_load_member(zf, "shape", headers, label, limits, max_elements=16)
    fmt = fmt_arr.item() if fmt_arr.size == 1 and fmt_arr.dtype.kind in "SU" else None
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else fmt
    if fmt is None:
        raise InputError(f"{_cap(label)}: its 'format' entry should be one sparse format name such as "
                         f"'csr', but it holds {fmt_arr.size} value(s) of type {fmt_arr.dtype}; the file "
                         f"is corrupt.")
    if fmt not in _SPARSE_KEYS:
        raise InputError(
            f"{_cap(label)} declares sparse format {fmt!r}; accepted: {', '.join(sorted(_SPARSE_KEYS))}."
        )
    if shape_arr.dtype.kind not in "iu":
        raise InputError(f"{_cap(label)}: the 'shape' entry must hold integers, got {shape_arr.dtype}.")
    rows, cols = _check_dims(tuple(int(v) for v in shape_arr.ravel()), limits, label)
    keys = _SPARSE_KEYS[fmt]
    if fmt == "coo" and "coords" in headers:
        # scipy's load_npz reads a (2, nnz) 'coords' array first (what save_npz writes for n-D COO,
        # and is to write for 2-D COO too), else 'row' and 'col'
        keys = ("data", "coords")
    missing = [k for k in keys if k not in headers]
    if missing:
        raise InputError(f"{_cap(label)} is a {fmt} .npz without the array(s) {', '.join(missing)}; the file is corrupt.")
    data_shape, data_dtype, _, _ = headers["data"]
    _check_numeric_dtype(data_dtype, f"The sparse matrix in {label}")
    stored = int(np.prod(data_shape, dtype=object))
    limits.check_nnz(stored, what=f"matrix in {label}")
    for k in keys[1:]:
        if k == "indptr":  # one entry a row (column): bounded by the shape, checked below
            continue
        declared = int(np.prod(headers[k][0], dtype=object))
        if k == "coords":
            coords_shape = headers[k][0]
            if len(coords_shape) != 2 or coords_shape[0] != 2:
                raise InputError(f"{_cap(label)}: the sparse 'coords' array of a 2-D coo matrix must have "
                                 f"shape (2, nnz), but it declares {tuple(coords_shape)}; the file is corrupt.")
            declared //= 2
        limits.check_nnz(declared, what=f"index array {k!r} in {label}")
    if "indptr" in _SPARSE_KEYS[fmt]:
        # left out of the compression-ratio guard (_npz_expansion_bytes): bounded by the shape instead
        ptr_shape, ptr_dtype, _, _ = headers["indptr"]
        most = (rows if fmt != "csc" else cols) + 1
        if len(ptr_shape) != 1 or ptr_dtype.kind not in "iu" or ptr_dtype.itemsize > 8 or ptr_shape[0] > most:
            raise InputError(
                f"{_cap(label)}: the sparse 'indptr' array must be a 1-D integer array of at most "
                f"{most:,} entries (one more than the {'columns' if fmt == 'csc' else 'rows'}), but it "
                f"declares {ptr_dtype} {tuple(ptr_shape)}; the file is corrupt.")
    arrays = {k: _npz_load_member(zf, k, headers, label, limits) for k in keys}
    if "coords" in arrays:
        arrays["row"], arrays["col"] = arrays.pop("coords")
    data = arrays["data"]
    half = data.dtype.kind == "f" and data.dtype.itemsize == 2
    if not data.dtype.isnative or half:
        # scipy's coo and bsr constructors refuse big-endian values (a file saved on a big-endian
        # machine) and float16 of either byte order; both convert exactly (float16 → float32)
        data = data.astype(np.float32 if half else data.dtype.newbyteorder("="))
    if fmt in ("csr", "csc"):
        major, minor = (rows, cols) if fmt == "csr" else (cols, rows)
        if data.ndim != 1:
            raise InputError(f"{_cap(label)}: the 'data' array must be 1-D for {fmt}, got shape {quoted(data.shape)}.")
        indptr = _index_array(arrays["indptr"], "indptr", label, major + 1)
        indices = _index_array(arrays["indices"], "indices", label, data.size)
        if indptr[0] != 0 or indptr[-1] != data.size or np.any(np.diff(indptr) < 0):
            raise InputError(f"{_cap(label)}: the 'indptr' array is not a valid row pointer (must rise from 0 to nnz); the file is corrupt.")
        _in_range(indices, minor, "indices", label)
        cls = sp.csr_array if fmt == "csr" else sp.csc_array
        return cls((data, indices, indptr), shape=(rows, cols))
    if fmt == "coo":
        if data.ndim != 1:
            raise InputError(f"{_cap(label)}: the 'data' array must be 1-D for coo, got shape {quoted(data.shape)}.")
        rname, cname = ("coords[0] (row)", "coords[1] (column)") if "coords" in keys else ("row", "col")
        r = _index_array(arrays["row"], rname, label, data.size)
        c = _index_array(arrays["col"], cname, label, data.size)
        _in_range(r, rows, rname, label)
        _in_range(c, cols, cname, label)
        return sp.coo_array((data, (r, c)), shape=(rows, cols))
    if fmt == "bsr":
        if data.ndim != 3:
            raise InputError(f"{_cap(label)}: the 'data' array of a bsr matrix must be 3-D, got shape {quoted(data.shape)}.")
        R, C = data.shape[1], data.shape[2]
        if R < 1 or C < 1 or rows % R or cols % C:
            raise InputError(f"{_cap(label)}: block size {R}×{C} does not divide the shape {rows}×{cols}.")
        indptr = _index_array(arrays["indptr"], "indptr", label, rows // R + 1)
        indices = _index_array(arrays["indices"], "indices", label, data.shape[0])
        if indptr[0] != 0 or indptr[-1] != data.shape[0] or np.any(np.diff(indptr) < 0):
            raise InputError(f"{_cap(label)}: the 'indptr' array is not a valid block-row pointer; the file is corrupt.")
        _in_range(indices, cols // C, "indices", label)
        return sp.bsr_array((data, indices, indptr), shape=(rows, cols))
    # dia
    offsets = _index_array(arrays["offsets"], "offsets", label)
    if data.ndim != 2 or data.shape[0] != offsets.size:
        raise InputError(f"{_cap(label)}: a dia matrix needs one data row per offset; the file is corrupt.")
    if offsets.size and (offsets.min() <= -rows or offsets.max() >= cols):
        raise InputError(f"{_cap(label)}: a diagonal offset lies outside the {rows}×{cols} matrix.")
    if np.unique(offsets).size != offsets.size:
        raise InputError(f"{_cap(label)}: a dia matrix lists the same diagonal offset twice; the file is corrupt.")
    if data.shape[1] > cols:
        data = data[:, :cols]
    return sp.dia_array((data, offsets), shape=(rows, cols))


# --------------------------------------------------------------------------- safetensors
_ST_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
    # one-byte floats, decoded through a 256-entry table (_F8_TABLES): float8_e4m3fn, float8_e5m2, MX scales
    "F8_E4M3": np.dtype("u1"), "F8_E5M2": np.dtype("u1"), "F8_E8M0": np.dtype("u1"),
}


def _f8_table(exp_bits: int, man_bits: int, kind: str) -> np.ndarray:
    """The float32 value of each of the 256 bytes of a one-byte float format.

    A byte ``s eeee mmm`` (for E4M3) is ``(-1)^s · 2^(e - bias) · (1 + m / 2^man_bits)`` with
    ``bias = 2^(exp_bits-1) - 1``, and ``(-1)^s · 2^(1 - bias) · m / 2^man_bits`` when ``e = 0``
    (subnormal). ``kind`` says what the top exponent means: ``"fn"`` (E4M3 as in Micikevicius et al.
    2022, arXiv:2209.05433, torch's ``float8_e4m3fn``: finite except ``s 1111 111``, NaN; max 448),
    ``"ieee"`` (E5M2: ``m = 0`` is ±inf, other ``m`` NaN; max 57344), ``"e8m0"`` (the OCP MX scale:
    unsigned ``2^(byte - 127)``, ``0xFF`` NaN). Non-finite values are refused later, as for every dtype.
    """
    b = np.arange(256, dtype=np.int64)
    if kind == "e8m0":
        out = np.ldexp(1.0, b - 127)
        out[255] = np.nan
        return out.astype(np.float32)
    bias = (1 << (exp_bits - 1)) - 1
    sign = np.where(b >> 7, -1.0, 1.0)
    e = (b >> man_bits) & ((1 << exp_bits) - 1)
    m = b & ((1 << man_bits) - 1)
    frac = m / float(1 << man_bits)
    out = sign * np.where(e == 0, np.ldexp(frac, 1 - bias), np.ldexp(1.0 + frac, e - bias))
    top = e == (1 << exp_bits) - 1
    if kind == "fn":
        out[top & (m == (1 << man_bits) - 1)] = np.nan
    else:
        out[top] = np.where(m[top] == 0, sign[top] * np.inf, np.nan)
    return out.astype(np.float32)


_F8_TABLES = {"F8_E4M3": _f8_table(4, 3, "fn"), "F8_E5M2": _f8_table(5, 2, "ieee"),
              "F8_E8M0": _f8_table(8, 0, "e8m0")}


class _STEntry(NamedTuple):   # a tuple: a header may list up to ≈ 1.4M of them
    name: str
    dtype: str
    shape: tuple
    begin: int
    end: int


_ST_ITEMSIZE = {k: v.itemsize for k, v in _ST_DTYPES.items()}
_ST_KEYS = frozenset(("dtype", "shape", "data_offsets"))
_INT_ONLY = frozenset((int,))


def _parse_safetensors(src: Source, *, check_data: bool = True):
    """Validate the header of a safetensors file; returns ``(entries, data_start)``.

    With ``check_data=False`` the data offsets are not compared with the file size yet (so
    that a size limit can be reported before "truncated"); call :func:`_check_st_data`.
    """
    label = src.label
    size = src.size
    if size < 8:
        raise InputError(f"{_cap(label)} is too short to be a safetensors file ({size} bytes); it is truncated.")
    (hlen,) = struct.unpack("<Q", src.head(8))
    if hlen < 2 or hlen > MAX_SAFETENSORS_HEADER:
        raise InputError(f"{_cap(label)} declares a safetensors header of {hlen} bytes, which is not plausible; "
                         f"it is not a safetensors file, or the file is corrupt.")
    if 8 + hlen > size:
        raise InputError(
            f"{_cap(label)} is truncated: its safetensors header declares {hlen} bytes but the file has only {size - 8} after the length."
        )
    raw = src.read_range(8, 8 + hlen)
    with _no_gc():   # a 100 MB header holds millions of containers; see _no_gc
        try:
            header = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(f"{_cap(label)} has a corrupt safetensors header (not UTF-8 text at byte "
                             f"{exc.start} of the header).") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{_cap(label)} has a corrupt safetensors header (not valid JSON: the text "
                             f"breaks off or goes wrong at byte {exc.pos} of the header's {hlen}).") from None
        except ValueError as exc:  # Python's int() limit: a JSON number of over 4300 digits
            if "digits" not in str(exc):
                raise
            raise InputError(f"{_cap(label)} has a corrupt safetensors header: it holds a number of over "
                             f"4300 digits, far beyond any tensor's shape or byte offset.") from None
        if isinstance(header, dict) and raw.count(b'"data_offsets"') > len(header) - ("__metadata__" in header):
            _refuse_duplicate_tensor(raw, label)
        return _st_entries(header, label, size - 8 - hlen, check_data), 8 + hlen


def _refuse_duplicate_tensor(raw: bytes, label: str) -> None:
    """Refuse a safetensors header that names one tensor twice (``json.loads`` keeps the last
    entry, so the first one's bytes looked like bytes of no tensor). Called only when the header
    has more ``"data_offsets"`` than tensors, which a duplicate causes (as may a name or a
    metadata value holding that text)."""
    seen = set()
    top = json.loads(raw.decode("utf-8"), object_pairs_hook=list)  # every object as its (key, value) list
    for name, _ in top:
        if name in seen:
            raise InputError(f"{_cap(label)} is corrupt: its safetensors header lists the tensor {quoted(name)} "
                             f"twice, so it is not clear which bytes are {quoted(name)}. Save the tensors again "
                             f"(e.g. with safetensors.numpy.save_file).")
        seen.add(name)


@contextlib.contextmanager
def _no_gc():
    """Pause Python's cyclic garbage collector while a large JSON header is decoded and checked.

    Building millions of small dicts and lists triggers a full collection again and again, each
    one walking every object built so far: a 300k-entry safetensors header (21 MB) decoded in
    2.8 s with the collector on and 1.4–1.7 s with it off on this machine. Reference counting
    still frees everything; the collector is restored (if it was on) however the block ends.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _st_entries(header, label: str, data_len: int, check_data: bool) -> list:
    """The tensors a decoded safetensors header lists, each entry checked (:func:`_parse_safetensors`)."""
    if not isinstance(header, dict):
        raise InputError(f"{_cap(label)} has a corrupt safetensors header (not a JSON object).")
    entries = []
    # The checks below run once per header entry (up to ≈ 1.4M in a 100 MB header), so they use
    # C-level tests: `type(v) is int` is false for bool (JSON true / false) and for floats.
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if type(info) is not dict or not info.keys() >= _ST_KEYS:
            raise InputError(f"{_cap(label)}: tensor {quoted(name)} has an incomplete header entry; the file is corrupt.")
        dtype, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if type(shape) is not list or not set(map(type, shape)) <= _INT_ONLY or min(shape, default=0) < 0:
            raise InputError(f"{_cap(label)}: tensor {quoted(name)} has an invalid shape {quoted(shape)}.")
        if (type(offs) is not list or len(offs) != 2 or type(offs[0]) is not int or type(offs[1]) is not int
                or offs[0] < 0 or offs[1] < offs[0]):
            raise InputError(f"{_cap(label)}: tensor {quoted(name)} has invalid data offsets {quoted(offs)}; the file is corrupt.")
        if type(dtype) is str and dtype in _ST_ITEMSIZE:
            expected = math.prod(shape) * _ST_ITEMSIZE[dtype]
            if offs[1] - offs[0] != expected:
                raise InputError(
                    f"{_cap(label)}: tensor {quoted(name)} ({quoted(dtype)} {quoted(shape)}) should take {expected} bytes but its "
                    f"offsets span {offs[1] - offs[0]}; the file is corrupt."
                )
        entries.append(_STEntry(name, str(dtype), tuple(shape), offs[0], offs[1]))
    if check_data:
        _check_st_data(entries, data_len, label)
    return entries


def _check_st_data(entries, data_len: int, label: str) -> None:
    """Check the tensors' byte ranges against the data section of ``data_len`` bytes.

    As the safetensors format requires (and its library checks), the ranges sorted by start
    must cover the data section exactly: from byte 0, each tensor starting where the one before
    ends (no overlap, no gap), the last one ending at the end of the file.
    """
    for e in entries:
        if e.end > data_len:
            raise InputError(
                f"{_cap(label)} is truncated: tensor {quoted(e.name)} needs bytes {e.begin}–{e.end} of the data "
                f"section but it holds only {data_len} bytes."
            )
    fix = "Save the tensors again (e.g. with safetensors.numpy.save_file)."
    end, prev = 0, None
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.begin < end:
            raise InputError(
                f"{_cap(label)} is corrupt: tensor {quoted(e.name)} (bytes {e.begin}–{e.end} of the data section) "
                f"overlaps tensor {quoted(prev.name)} (bytes {prev.begin}–{prev.end}), so it would be read from "
                f"another tensor's bytes. {fix}")
        if e.begin > end:
            after = f"after tensor {quoted(prev.name)} (which ends at byte {end})" if prev else "at the start"
            raise InputError(
                f"{_cap(label)} is corrupt: {e.begin - end} bytes of its data section {after} belong to no "
                f"tensor; tensor {quoted(e.name)} starts at byte {e.begin}, and a safetensors file stores its "
                f"tensors back to back. {fix}")
        end, prev = e.end, e
    if end < data_len:
        last = f"the last tensor, {quoted(prev.name)}, ends at byte {end}" if prev else "it declares no tensor data"
        raise InputError(
            f"{_cap(label)} is corrupt: its data section has {data_len} bytes but {last}, so "
            f"{data_len - end} bytes at the end belong to no tensor (a safetensors file ends with its "
            f"last tensor). {fix}")


def _safetensors_source(path_or_bytes, name: str | None, limits: LoadLimits, tensor, func: str):
    """The ``.safetensors`` file given to :func:`list_tensors` / :func:`read_tensor`, unpacked
    from gzip / bzip2 / xz / tar as :func:`load` does: ``(source, tensor)``. Another format
    (recognised by its first bytes) is refused with a pointer to :func:`load`."""
    src = _as_source(path_or_bytes, name, func)
    if src.size == 0:
        raise InputError(f"{_cap(src.label)} is empty (0 bytes).")
    with _guard(src, "a compressed or archived file"):
        src, tensor = _unwrap_archive(src, limits, tensor)
    head = src.head(64)
    if not _sniff_safetensors(head, src.size):
        other = next((k for k, r in READERS.items() if r.sniff(head, src.size)), None)
        if other == "npz":
            raise InputError(f"{_cap(src.label)} is a .npz (zip) file, not a .safetensors file: load it "
                             f"with akfviz.load (for a .npz of several arrays, tensor=... picks one).")
        if other is not None:
            raise InputError(f"{_cap(src.label)} is a {_FORMAT_NAMES[other]} file, not a .safetensors "
                             f"file; it holds one matrix: load it with akfviz.load.")
    return src, tensor


@checked_call
def list_tensors(path_or_bytes, *, name: str | None = None,
                 limits: LoadLimits | None = None) -> pd.DataFrame:
    """The tensors of a ``.safetensors`` file, in file order.

    Only the JSON header is read (validated against the file size), never the tensor data.

    Parameters
    ----------
    path_or_bytes : str, pathlib.Path, bytes or binary file-like
        The file, as for :func:`load`; compressed (``.safetensors.gz`` …) or in a tar archive
        too.
    name : str, optional
        File name for bytes input (used in messages).
    limits : LoadLimits, optional
        Limits for unpacking a compressed or archived file.

    Returns
    -------
    pandas.DataFrame
        Columns ``name``, ``shape`` (tuple) and ``dtype`` (safetensors dtype string, e.g.
        ``"F32"``).

    Raises
    ------
    InputError
        Not a safetensors file (another format is named), or a corrupt one.
    """
    src, _ = _safetensors_source(path_or_bytes, name, resolve_limits(limits), None, "list_tensors")
    with _guard(src, "safetensors"):
        entries, _ = _parse_safetensors(src)
    return pd.DataFrame(
        {"name": [e.name for e in entries], "shape": [e.shape for e in entries],
         "dtype": [e.dtype for e in entries]},
        columns=["name", "shape", "dtype"],
    )


@checked_call
def matrix_choices(path_or_bytes, *, name: str | None = None, limits: LoadLimits | None = None,
                   fmt: str | None = None) -> pd.DataFrame:
    """What ``tensor=`` of :func:`load` can name in a file that is a container of matrices.

    One function for every container, so a front end offers the same choice the library
    accepts: the members of a tar archive holding several matrix files; the 2-D tensors of a
    ``.safetensors`` file (even one: a weights file is a container); the 2-D arrays of a
    ``.npz`` written by ``numpy.savez`` with several arrays (not a scipy sparse one) — each
    also when compressed (``.gz`` / ``.bz2`` / ``.xz``), and the last two also as the one
    matrix file of an archive. Only headers are read, never the values. Zero-sized arrays
    are left out: they cannot be loaded.

    Parameters
    ----------
    path_or_bytes : str, pathlib.Path, bytes or binary file-like
        The file, as for :func:`load`.
    name : str, optional
        File name for bytes input (extension and messages).
    limits : LoadLimits, optional
        Limits for unpacking a compressed or archived file.
    fmt : str, optional
        The format of the (inner) file, as for :func:`load`.

    Returns
    -------
    pandas.DataFrame
        Columns ``name`` (what to pass as ``tensor=``), ``shape`` (tuple, or ``None`` for an
        archive member), ``dtype`` (str, ``""`` for a member) and ``kind`` (``"member"``,
        ``"tensor"`` or ``"array"``); the default choice first for an archive, file order
        otherwise. An empty frame for a file that holds one matrix (and a safetensors file
        without a loadable 2-D tensor: :func:`load` says why).

    Raises
    ------
    InputError
        Corrupt or truncated container, or sizes over ``limits``.
    """
    columns = ["name", "shape", "dtype", "kind"]
    lim = resolve_limits(limits)
    src = _as_source(path_or_bytes, name, "matrix_choices")
    if src.size == 0:
        raise InputError(f"{_cap(src.label)} is empty (0 bytes); there is no matrix in it.")
    head = src.head(512)
    if archives.is_tar(head) or archives.is_compressed(head):
        data = src.data if src.data is not None else src.path.read_bytes()
        with _guard(src, "a compressed or archived file"):
            members = archives.matrix_members(data, src.filename, limits=lim)
        if len(members) > 1:
            return pd.DataFrame({"name": members, "shape": [None] * len(members),
                                 "dtype": [""] * len(members), "kind": ["member"] * len(members)},
                                columns=columns)
        with _guard(src, "a compressed or archived file"):
            src, _ = _unwrap_archive(src, lim, None)
    key = _detect_format(src, fmt)
    rows = []
    with _guard(src, key):
        if key == "safetensors":
            entries, _ = _parse_safetensors(src)
            rows = [(e.name, tuple(e.shape), e.dtype, "tensor") for e in entries if _loadable(e.shape)]
        elif key == "npz":
            with src.open() as f, zipfile.ZipFile(f) as zf:
                headers = _npz_member_headers(zf, src.label)
            if not ("format" in headers and headers["format"][1].kind in "SU" and "shape" in headers):
                rows = [(k, tuple(shape), str(dtype), "array") for k, (shape, dtype, _, _) in headers.items()
                        if _loadable(shape)]
                if len(rows) < 2:  # one dense array: nothing to choose
                    rows = []
    return pd.DataFrame(rows, columns=columns)


def _loadable(shape) -> bool:
    """A 2-D array with at least one row and one column: what can be loaded as a matrix."""
    return len(shape) == 2 and min(shape) > 0


def _choose_2d(two_d, label, noun, several) -> str:
    """The name to load among a file's 2-D members ``[(name, shape), …]`` (at least one) when the
    caller named none: the only one with at least one row and one column (a zero-sized one can never
    load, so it is never a choice), or the only 2-D one (zero-sized: the caller refuses it with its
    shape). Otherwise raises: only zero-sized members, or ``several(count, names) + "…)."``, the
    caller's message given the number of loadable ones and their names (capped by
    :func:`~akfviz.errors.name_list`), then how many zero-sized were left out."""
    loadable = [k for k, shape in two_d if _loadable(shape)]
    if len(loadable) == 1:
        return loadable[0]
    if len(two_d) == 1:
        return two_d[0][0]
    if not loadable:
        raise InputError(f"{_cap(label)} holds only zero-sized 2-D {noun}s ({name_list(two_d)}); a matrix needs "
                         "at least one row and one column, so there is no matrix to load.")
    empty = len(two_d) - len(loadable)
    left = f"; {empty:,} zero-sized 2-D {noun}(s) left out" if empty else ""
    raise InputError(several(len(loadable), name_list(loadable)) + f"{left}).")


def _pick_tensor(entries, tensor, label) -> _STEntry:
    """The tensor to load: ``tensor``, else the file's only 2-D tensor with at least one row
    and one column (a zero-sized one can never load, so it is never a choice)."""
    two_d = [e.name for e in entries if len(e.shape) == 2]
    if tensor is None:
        if not two_d:
            raise InputError(
                f"{_cap(label)} holds no 2-D tensor, so there is no matrix to load "
                f"(its tensors: {name_list([(e.name, e.shape) for e in entries])})."
            )
        tensor = _choose_2d([(e.name, e.shape) for e in entries if len(e.shape) == 2], label, "tensor",
                            lambda count, names: f"{_cap(label)} holds {count:,} 2-D tensors; choose one with "
                                                 f"tensor=... (2-D tensors: {names}")
    names = name_list(two_d)
    by_name = {e.name: e for e in entries}
    if tensor not in by_name:
        raise InputError(f"{_cap(label)} has no tensor named {quoted(tensor)}; its 2-D tensors are: {names}.")
    entry = by_name[tensor]
    if len(entry.shape) != 2:
        raise InputError(
            f"Tensor {quoted(tensor)} in {label} has shape {quoted(list(entry.shape))}, not 2-D; its 2-D tensors are: {names}."
        )
    return entry


def _decode_tensor(raw: bytes, entry: _STEntry) -> np.ndarray:
    arr = np.frombuffer(raw, dtype=_ST_DTYPES[entry.dtype]).reshape(entry.shape)
    if entry.dtype == "BF16":  # bfloat16 = the high 16 bits of a float32
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    elif entry.dtype in _F8_TABLES:
        arr = _F8_TABLES[entry.dtype][arr]
    return arr


@checked_call
def read_tensor(path_or_bytes, tensor: str | None = None, *, limits: LoadLimits | None = None,
                name: str | None = None) -> np.ndarray:
    """Read one 2-D tensor of a ``.safetensors`` file as a dense float64 array.

    Same tensor choice rules as :func:`load` (``tensor=None`` works when the file holds exactly
    one 2-D tensor). Use it with :func:`~akfviz.workloads.prune.prune` to prune weights.

    Parameters
    ----------
    path_or_bytes : str, pathlib.Path, bytes or binary file-like
        The file, as for :func:`load` (compressed or in a tar archive too).
    tensor : str, optional
        The tensor's name.
    limits : LoadLimits, optional
        Size limits, checked before the tensor is read.
    name : str, optional
        File name for bytes input (used in messages).

    Returns
    -------
    numpy.ndarray
        The tensor, float64.

    Raises
    ------
    InputError
        Not a safetensors file, a corrupt one, no such 2-D tensor, or non-finite values.
    ResourceLimitError
        The tensor is over ``limits``.
    """
    lim = resolve_limits(limits)
    src, tensor = _safetensors_source(path_or_bytes, name, lim, tensor, "read_tensor")
    with _guard(src, "safetensors"):
        W = np.asarray(_safetensors_dense(src, lim, tensor), dtype=np.float64)
    if not np.all(np.isfinite(W)):
        raise InputError(f"Tensor in {src.label} contains NaN or infinite values; every weight must be finite.")
    return W


def _safetensors_dense(src: Source, limits: LoadLimits, tensor) -> np.ndarray:
    label = src.label
    entries, start = _parse_safetensors(src, check_data=False)
    entry = _pick_tensor(entries, tensor, label)
    if entry.dtype not in _ST_DTYPES:
        raise InputError(
            f"Tensor {quoted(entry.name)} in {label} has dtype {quoted(entry.dtype, quote=False)}; accepted: "
            f"{', '.join(_ST_DTYPES)}."
        )
    _check_dims(entry.shape, limits, f"tensor {quoted(entry.name)} of {label}")
    limits.check_dense(math.prod(entry.shape), what=f"tensor {quoted(entry.name)} in {label}")
    _check_st_data(entries, src.size - start, label)
    if src.path is not None and entry.dtype != "BF16" and entry.dtype not in _F8_TABLES:
        try:
            from safetensors import safe_open

            with safe_open(str(src.path), framework="numpy") as f:
                return f.get_tensor(entry.name)
        except Exception:  # fall back to the plain reader below, which reports precisely
            pass
    raw = src.read_range(start + entry.begin, start + entry.end)
    if len(raw) != entry.end - entry.begin:
        raise InputError(f"{_cap(label)} is truncated inside tensor {entry.name!r}.")
    return _decode_tensor(raw, entry)


def _read_safetensors(src: Source, limits: LoadLimits, tensor):
    return _safetensors_dense(src, limits, tensor)


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Reader:
    """A file format: its name, extensions, a magic-bytes test and the reader function."""

    name: str
    extensions: tuple[str, ...]
    sniff: Callable[[bytes, int], bool]
    read: Callable


def _sniff_safetensors(head: bytes, size: int) -> bool:
    """An 8-byte little-endian header length, then the JSON header's ``{`` (after any
    whitespace, which the safetensors library accepts too)."""
    if len(head) < 9:
        return False
    (hlen,) = struct.unpack("<Q", head[:8])
    return 2 <= hlen <= MAX_SAFETENSORS_HEADER and head[8:].lstrip(b" \t\r\n")[:1] == b"{"


READERS: dict[str, Reader] = {
    r.name: r
    for r in (
        Reader("mtx", (".mtx", ".mm"), _sniff_mtx, _read_mtx),
        Reader("npz", (".npz",), lambda h, s: h[:4] == b"PK\x03\x04", _read_npz),
        Reader("npy", (".npy",), lambda h, s: h[:6] == b"\x93NUMPY", _read_npy),
        Reader("safetensors", (".safetensors",), _sniff_safetensors, _read_safetensors),
    )
}


_FORMAT_NAMES = {"mtx": "Matrix Market", "npz": ".npz (zip)", "npy": ".npy", "safetensors": ".safetensors"}


def formats() -> list[str]:
    """Names of the accepted file formats."""
    return sorted(READERS)


def _detect_format(src: Source, fmt) -> str:
    if fmt is not None:
        key = fmt.lower().lstrip(".") if isinstance(fmt, str) else fmt
        if key not in READERS:
            raise InputError(f"Unknown format {fmt!r}; accepted formats: {', '.join(formats())}.")
        head = src.head(64)
        if not READERS[key].sniff(head, src.size):
            other = next((k for k, r in READERS.items() if r.sniff(head, src.size)), None)
            if other is not None:
                raise InputError(f"fmt={fmt!r} was given, but {src.label} is a {_FORMAT_NAMES[other]} "
                                 f"file (by its first bytes); pass fmt={other!r} or leave fmt out.")
        return key
    head = src.head(64)
    for key, reader in READERS.items():
        if reader.sniff(head, src.size):
            return key
    ext = pathlib.PurePath(src.filename).suffix.lower() if src.filename else ""
    for key, reader in READERS.items():
        if ext in reader.extensions:
            return key
    shown = f"extension {ext!r}" if ext else "no known extension"
    if ext == ".tar":
        raise InputError(
            f"{_cap(src.label)} is named .tar but is not a tar archive akfviz can read (it has neither "
            f"the 'ustar' header of a POSIX or GNU tar nor a valid old-style tar header): the file is "
            f"damaged, or another format renamed. Create the archive again with tar -cf, or load the "
            f"matrix file itself.")
    raise InputError(
        f"Could not tell the format of {src.label} ({shown}, and the first bytes match no known "
        f"format). Accepted: .mtx (Matrix Market), .npz (scipy sparse or one dense array), "
        f".npy, .safetensors; or pass fmt=..."
    )


@checked_call
def load(path_or_bytes, fmt: str | None = None, tensor: str | None = None, *,
         limits: LoadLimits | None = None, name: str | None = None) -> sp.csr_array:
    """Load a matrix from a file, bytes, or a file-like object (akf-spec §1, §9).

    Parameters
    ----------
    path_or_bytes : str, pathlib.Path, bytes or binary file-like
        The file. File-like objects (e.g. Streamlit uploads) need ``.read()``; their ``.name``
        is used for the extension and in messages.
    fmt : {"mtx", "npz", "npy", "safetensors"}, optional
        The format (of the file inside, for a compressed or archived one). By default the content's magic bytes decide ("%%MatrixMarket", zip
        "PK\\x03\\x04", "\\x93NUMPY", or an 8-byte little-endian header length followed by "{"),
        then the file extension.
    tensor : str, optional
        For ``.safetensors``: the 2-D tensor to load (optional when the file has exactly one);
        for a ``.npz`` of several dense arrays: the array's name; for a ``.tar`` /
        ``.tar.gz`` archive: the member to read (by default its only matrix file, or
        ``name/name.mtx`` as in the SuiteSparse Matrix Collection), or, when that default
        member is a .safetensors / .npz file, the tensor inside it. Any other file holds one
        matrix, and ``tensor`` given for it is refused rather than ignored.
    limits : LoadLimits, optional
        Size limits checked against the declared header before allocating
        (:class:`~akfviz.errors.ResourceLimitError` when over). Defaults fit a 24 GB laptop.
    name : str, optional
        File name for bytes input (used for the extension and in messages).

    Compressed files (gzip, bzip2, xz, legacy LZMA: ``.mtx.gz``, ``.mtx.bz2``, ``.mtx.xz``,
    ``.mtx.lzma`` …) and tar archives (``.tar``, ``.tar.gz`` / ``.tgz``, ``.tar.bz2``,
    ``.tar.xz``; ustar or old v7 headers) are recognised by
    their content and unpacked in memory first (never on disk), within
    ``limits.max_decompressed_bytes`` and ``limits.max_compression_ratio`` (a decompression
    bomb is refused as soon as its output passes the bound). One layer of compression is
    unpacked; a file compressed twice is refused.

    Returns
    -------
    scipy.sparse.csr_array
        Canonical float64 (duplicates summed, explicit zeros dropped, sorted indices), any shape.

    Raises
    ------
    InputError
        Unknown format, empty, not 2-D, non-finite values, out-of-range indices, truncated or
        corrupt content, complex values, pickled objects.
    ResourceLimitError
        The declared size is over ``limits``.
    """
    for arg, value in (("fmt", fmt), ("tensor", tensor), ("name", name)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"load(): {arg} must be a string (or None), got {value!r}.")
    lim = resolve_limits(limits)
    src = _as_source(path_or_bytes, name)
    if src.size == 0:
        raise InputError(f"{_cap(src.label)} is empty (0 bytes); there is no matrix in it.")
    with _guard(src, "a compressed or archived file"):
        src, tensor = _unwrap_archive(src, lim, tensor)
    key = _detect_format(src, fmt)
    with _guard(src, key):
        M = READERS[key].read(src, lim, tensor)
        # dense input is converted block by block, its nonzeros held to lim.max_nnz first; a
        # message names the tensor or array chosen (a weights file holds many)
        what = "matrix" if tensor is None else f"{'tensor' if key == 'safetensors' else 'array'} {tensor!r}"
        return as_csr(M, name=f"{what} in {src.label}", copy=False, limits=lim)


def _unwrap_archive(src: Source, limits: LoadLimits, tensor):
    """A gzip-compressed file or a tar archive → the plain file inside (in memory), see
    :mod:`akfviz.workloads.archives`; anything else is returned unchanged."""
    head = src.head(512)
    empty_tar = not head.strip(b"\x00") and (src.filename or "").lower().endswith(".tar")
    if not (archives.is_compressed(head) or archives.is_tar(head) or empty_tar):
        return src, tensor
    cap = limits.max_decompressed_bytes
    if src.size > cap:
        raise ResourceLimitError(
            f"{_cap(src.label)} has {src.size:,} bytes, over the limit of {cap:,} for compressed "
            f"or archived files; pass limits=akfviz.LoadLimits(max_decompressed_bytes=...).")
    data = src.data if src.data is not None else src.path.read_bytes()
    content, inner, tensor, label = archives.unwrap(data, src.filename, tensor, cap, src.label,
                                                    limits=limits)
    if not content:
        raise InputError(f"{_cap(label)} is empty once decompressed; there is no matrix in it.")
    return Source(label=label, filename=inner, data=content), tensor


@contextlib.contextmanager
def _guard(src: Source, key: str):
    """Turn any unexpected parser exception into a readable :class:`InputError`."""
    try:
        yield
    except InputError:
        raise
    except MemoryError:
        raise ResourceLimitError(f"Reading {src.label} needs more memory than is available.") from None
    except Exception as exc:  # any parser surprise becomes a readable InputError
        raise InputError(_plain_reason(exc, src.label, key)) from None


def _plain_reason(exc: Exception, label: str, key: str) -> str:
    """A sentence for a parser's exception (:func:`_guard`): what it says about the file, with the
    parser's own words in brackets; "Could not read … as …: Type: text" when it says nothing we
    can name. (A fuzzing probe met a negative seek, an encrypted or version-9.6 zip member, a
    non-UTF-8 member name, a 100,000-deep JSON header and a tar size of 2⁹⁵, each reported as
    the raw exception.)"""
    import lzma
    import tarfile

    text = str(exc)
    head = f"{_cap(label)} could not be read as {key}"
    if isinstance(exc, RecursionError):
        return f"{head}: its header nests lists or objects too deeply for a matrix file; it is corrupt."
    if isinstance(exc, (RuntimeError, NotImplementedError)) and "encrypt" in text.lower():
        return (f"{head}: it is encrypted (password-protected), which akfviz does not read. Save it again "
                "without a password.")
    if isinstance(exc, NotImplementedError):
        return (f"{head}: it uses a zip feature Python's zipfile does not support ({text}). Save it again "
                "with numpy.savez, scipy.sparse.save_npz or a standard zip tool.")
    if isinstance(exc, UnicodeDecodeError):
        return f"{head}: a name or header in it is not valid UTF-8 text; the file is corrupt."
    if isinstance(exc, OverflowError):
        return f"{head}: it declares an impossible size or count ({text}); the file is corrupt."
    if isinstance(exc, (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, struct.error, tarfile.TarError,
                        OSError)) or (isinstance(exc, ValueError) and "seek" in text):
        return f"{head}: it is corrupt or truncated ({text})."
    return f"Could not read {label} as {key}: {type(exc).__name__}: {text}"
