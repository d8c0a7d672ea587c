"""Compressed and archived matrix files: ``.gz`` and ``.tar`` / ``.tar.gz`` / ``.tgz``.

Matrices are often distributed compressed: a Matrix Market file as ``name.mtx.gz``, and the
SuiteSparse Matrix Collection ships every matrix as ``name.tar.gz`` holding ``name/name.mtx``
(plus, for some problems, side files such as ``name/name_b.mtx``). :func:`unwrap` turns such
a source into the plain file inside, in memory, before the format readers of
:mod:`akfviz.workloads.loaders` see it:

* gzip is decompressed in chunks and refused as soon as the output passes
  ``LoadLimits.max_decompressed_bytes`` (a small "zip bomb" cannot exhaust memory);
* a tar archive is read from its member headers only — nothing is ever written to disk, links
  and special files are ignored — and one regular member is chosen: the one named by
  ``tensor=`` (path or base name), else the only matrix-like member (``.mtx``, ``.mm``,
  ``.npz``, ``.npy``, ``.safetensors``), else ``<archive>/<archive>.mtx`` (the SuiteSparse
  convention); its declared size is checked against the same limit before it is read.
"""
from __future__ import annotations

import io
import pathlib
import tarfile
import zlib

from ..errors import InputError, ResourceLimitError

GZIP_MAGIC = b"\x1f\x8b"
#: Member names a tar archive may hold a matrix in (the readers' extensions).
MATRIX_SUFFIXES = (".mtx", ".mm", ".npz", ".npy", ".safetensors")
_CHUNK = 1 << 20


def _cap(label: str) -> str:
    return label[:1].upper() + label[1:]


def is_gzip(head: bytes) -> bool:
    """True when ``head`` starts with the gzip magic bytes."""
    return head[:2] == GZIP_MAGIC


def is_tar(data: bytes) -> bool:
    """True when ``data`` is a POSIX/GNU tar stream (``ustar`` magic at offset 257)."""
    return len(data) >= 262 and data[257:262] == b"ustar"


def strip_suffix(filename: str | None, suffixes) -> str | None:
    """``filename`` without its last suffix when that is one of ``suffixes`` (case-insensitive)."""
    if not filename:
        return filename
    low = filename.lower()
    for s in suffixes:
        if low.endswith(s):
            return filename[: -len(s)]
    return filename


def gunzip(data: bytes, max_bytes: int, label: str) -> bytes:
    """Decompress gzip ``data`` (every concatenated member), refusing more than ``max_bytes``.

    Output is produced at most ``_CHUNK`` bytes per call, so the limit is enforced before
    the memory is used.

    Raises
    ------
    ResourceLimitError
        The decompressed content would exceed ``max_bytes``.
    InputError
        Corrupt or truncated gzip data.
    """
    out = bytearray()
    rest = data
    try:
        while True:
            d = zlib.decompressobj(wbits=31)  # 31: expect the gzip header and trailer
            buf = rest
            while not d.eof:
                piece = d.decompress(buf, _CHUNK)
                out += piece
                if len(out) > max_bytes:
                    raise ResourceLimitError(
                        f"{_cap(label)} decompresses to more than {max_bytes:,} bytes, over the "
                        f"limit; pass limits=LoadLimits(max_decompressed_bytes=...) to allow it.")
                buf = d.unconsumed_tail
                if not buf and not piece and not d.eof:
                    raise InputError(f"{_cap(label)} is a truncated gzip file (it ends before the "
                                     f"compressed data does); download it again.")
            rest = d.unused_data
            if not is_gzip(rest):
                break  # trailing bytes after the last member are ignored, as gzip(1) does
    except zlib.error as exc:
        raise InputError(f"{_cap(label)} is not valid gzip data ({exc}); the file is corrupt.") from None
    return bytes(out)


def _choose_member(members, archive_name: str | None, tensor, label: str):
    names = [m.name for m in members]
    if tensor is not None:
        want = str(tensor)
        hits = [m for m in members if m.name == want or pathlib.PurePosixPath(m.name).name == want]
        if len(hits) == 1:
            return hits[0], True
        shown = ", ".join(names[:12]) + (" …" if len(names) > 12 else "")
        if not hits:
            raise InputError(f"{_cap(label)} has no member named {want!r}; its files are: {shown}.")
        raise InputError(f"{_cap(label)} has several members named {want!r}; give the full path "
                         f"(one of: {', '.join(m.name for m in hits)}).")
    matrices = [m for m in members if m.name.lower().endswith(MATRIX_SUFFIXES)]
    if len(matrices) == 1:
        return matrices[0], False
    if archive_name:
        stem = pathlib.PurePosixPath(archive_name).name
        stem = strip_suffix(strip_suffix(stem, (".gz", ".tgz")), (".tar",)) or stem
        for m in matrices:
            p = pathlib.PurePosixPath(m.name)
            if p.name == f"{stem}.mtx" and (len(p.parts) == 1 or p.parts[-2] == stem):
                return m, False
    if not matrices:
        raise InputError(f"{_cap(label)} holds no matrix file (.mtx, .npz, .npy, .safetensors); "
                         f"its files are: {', '.join(names[:12]) or 'none'}.")
    raise InputError(f"{_cap(label)} holds several matrix files ({', '.join(m.name for m in matrices[:12])}); "
                     f"choose one with tensor='<member name>'.")


def _open_tar(data: bytes, label: str) -> tarfile.TarFile:
    try:
        return tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except tarfile.TarError as exc:
        raise InputError(f"{_cap(label)} is not a readable tar archive ({exc}).") from None


def _regular_members(tf: tarfile.TarFile, label: str) -> list:
    """The archive's regular files (links, folders and devices are ignored)."""
    try:
        return [m for m in tf.getmembers() if m.isfile()]
    except tarfile.TarError as exc:
        raise InputError(f"{_cap(label)} is a damaged tar archive ({exc}).") from None


def untar(data: bytes, archive_name: str | None, tensor, max_bytes: int, label: str):
    """The chosen member of a tar archive: ``(bytes, member name, tensor_consumed)``.

    ``tensor_consumed`` is True when ``tensor`` named the member (it is then not passed on
    to the format reader).
    """
    with _open_tar(data, label) as tf:
        member, consumed = _choose_member(_regular_members(tf, label), archive_name, tensor, label)
        if member.size > max_bytes:
            raise ResourceLimitError(
                f"{_cap(label)}: member {member.name!r} declares {member.size:,} bytes, over the "
                f"limit of {max_bytes:,}; pass limits=LoadLimits(max_decompressed_bytes=...).")
        f = tf.extractfile(member)
        content = f.read() if f is not None else b""
    if len(content) != member.size:
        raise InputError(f"{_cap(label)} is truncated: member {member.name!r} should have "
                         f"{member.size:,} bytes but has {len(content):,}.")
    return content, member.name, consumed


def matrix_members(data: bytes, filename: str | None = None, *,
                   max_bytes: int = 4 * 2**30) -> list[str]:
    """Names of the matrix files in a tar / tar.gz archive, the default choice first.

    The default is what :func:`unwrap` reads without ``tensor=`` (the only matrix file, or
    ``name/name.mtx``); an empty list when ``data`` is not an archive (a plain or gzip-only
    file). Used by the app to offer a choice when an archive holds several matrices.
    """
    label = f"archive {filename!r}" if filename else "the archive"
    if is_gzip(data):
        data = gunzip(data, max_bytes, label)
    if not is_tar(data):
        return []
    with _open_tar(data, label) as tf:
        members = _regular_members(tf, label)
    names = [m.name for m in members if m.name.lower().endswith(MATRIX_SUFFIXES)]
    try:
        first = _choose_member(members, filename, None, label)[0].name
    except InputError:
        return names
    return [first] + [n for n in names if n != first]


def unwrap(data: bytes, filename: str | None, tensor, max_bytes: int, label: str):
    """Peel gzip and tar layers off a file held in memory.

    Parameters
    ----------
    data : bytes
        The file's content (the caller has checked that it starts with gzip magic or is a tar).
    filename : str or None
        Its name (for the SuiteSparse member convention and the inner file's extension).
    tensor : str or None
        ``load``'s ``tensor=``: for a tar archive, the member to read (when it names one).
    max_bytes : int
        Largest decompressed file / member accepted.
    label : str
        How messages name the file.

    Returns
    -------
    (bytes, str or None, tensor, str)
        The inner content, its file name, the ``tensor`` left for the format reader, and a
        label naming both the archive and the member.
    """
    name = filename
    if is_gzip(data):
        data = gunzip(data, max_bytes, label)
        name = strip_suffix(name, (".gz",)) if name and not name.lower().endswith(".tgz") \
            else (name[:-4] + ".tar" if name else None)
    if is_tar(data):
        content, member, consumed = untar(data, filename, tensor, max_bytes, label)
        return content, pathlib.PurePosixPath(member).name, (None if consumed else tensor), \
            f"{label} (member {member!r})"
    return data, name, tensor, label


__all__ = ["GZIP_MAGIC", "MATRIX_SUFFIXES", "gunzip", "is_gzip", "is_tar", "matrix_members",
           "strip_suffix", "untar", "unwrap"]
