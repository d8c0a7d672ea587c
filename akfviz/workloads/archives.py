"""Compressed and archived matrix files: ``.gz`` / ``.bz2`` / ``.xz`` / ``.lzma`` and ``.tar``
(also compressed: ``.tar.gz`` / ``.tgz``, ``.tar.bz2``, ``.tar.xz``).

Matrices are often distributed compressed: a Matrix Market file as ``name.mtx.gz``, and the
SuiteSparse Matrix Collection ships every matrix as ``name.tar.gz`` holding ``name/name.mtx``
(plus, for some problems, side files such as ``name/name_b.mtx``). :func:`unwrap` turns such
a source into the plain file inside, in memory, before the format readers of
:mod:`akfviz.workloads.loaders` see it:

* gzip, bzip2, xz and legacy LZMA-alone ``.lzma`` (recognised by their first bytes) are
  decompressed in chunks and
  refused as soon as the output passes ``LoadLimits.max_decompressed_bytes``, or expands more
  than ``LoadLimits.max_compression_ratio`` times the input once past
  ``LoadLimits.ratio_floor_bytes`` (a small "zip bomb" costs neither the memory nor the time);
  only one layer is unpacked (a file compressed twice is refused with that explanation);
* a tar archive (POSIX / GNU ``ustar``, or an old v7 tar recognised by its header checksum)
  is read from its member headers only — nothing is ever written to disk, links
  and special files are ignored — and one regular member is chosen: the one named by
  ``tensor=`` (path or base name), else the only matrix-like member (``.mtx``, ``.mm``,
  ``.npz``, ``.npy``, ``.safetensors``), else ``<archive>/<archive>.mtx`` (the SuiteSparse
  convention); its declared size is checked against the same limit before it is read.
"""
from __future__ import annotations

import bz2
import functools
import io
import lzma
import pathlib
import tarfile
import zlib
from dataclasses import dataclass
from typing import Callable

from ..errors import InputError, ResourceLimitError, name_list
from .limits import LoadLimits, resolve_limits

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
    """True when ``data`` is a tar stream: POSIX / GNU (``ustar`` magic at offset 257), or an
    old v7 tar, which has no magic (:func:`_is_v7_tar`)."""
    return len(data) >= 262 and data[257:262] == b"ustar" or _is_v7_tar(data)


def _is_v7_tar(data: bytes) -> bool:
    """True when the first 512 bytes are a v7 tar header: a NUL-padded member name, an octal
    mode, and a checksum field (octal) equal to the sum of the header's bytes with that field
    counted as spaces. (Text never holds the NUL bytes, so a text file cannot pass.)"""
    if len(data) < 512 or data[0] == 0 or b"\x00" not in data[1:100]:
        return False
    if data[100:108].strip(b" \x00").strip(b"01234567"):
        return False
    digits = data[148:156].strip(b" \x00")
    if not digits or digits.strip(b"01234567"):
        return False
    return int(digits, 8) == sum(data[:148]) + 8 * 32 + sum(data[156:512])


def is_empty_tar(data: bytes) -> bool:
    """True for an empty tar archive: only the zero blocks that end one (1024 bytes or more,
    a whole number of 512-byte blocks)."""
    return len(data) >= 1024 and len(data) % 512 == 0 and not data.strip(b"\x00")


def strip_suffix(filename: str | None, suffixes) -> str | None:
    """``filename`` without its last suffix when that is one of ``suffixes`` (case-insensitive)."""
    if not filename:
        return filename
    low = filename.lower()
    for s in suffixes:
        if low.endswith(s):
            return filename[: -len(s)]
    return filename


def _too_big(label: str, max_bytes: int) -> ResourceLimitError:
    return ResourceLimitError(
        f"{_cap(label)} decompresses to more than {max_bytes:,} bytes, over the "
        f"limit; pass limits=akfviz.LoadLimits(max_decompressed_bytes=...) to allow it.")


class _Output:
    """Decompressed output, checked against the limits before each piece is kept.

    The pieces are gathered in an ``io.BytesIO``: its ``getvalue()`` hands over its own buffer
    as ``bytes`` without a copy, where ``bytes(bytearray)`` held the output twice at the end.
    """

    def __init__(self, packed: int, max_bytes: int, label: str, limits: LoadLimits | None):
        self.packed, self.max_bytes, self.label, self.limits = packed, max_bytes, label, limits
        self.cap = max_bytes if limits is None else min(max_bytes, limits.expansion_cap(packed))
        self.size = 0
        self._buf = io.BytesIO()

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.size > self.cap:
            if self.size > self.max_bytes:
                raise _too_big(self.label, self.max_bytes)
            self.limits.check_expansion(self.size, self.packed, what=self.label, more=True)
        self._buf.write(piece)

    def value(self) -> bytes:
        out, self._buf = self._buf.getvalue(), None
        return out


def gunzip(data: bytes, max_bytes: int, label: str, *, limits: LoadLimits | None = None) -> bytes:
    """Decompress gzip ``data`` (every concatenated member), refusing more than ``max_bytes``.

    Output is produced at most ``_CHUNK`` bytes per call, so the limits are enforced before
    the memory is used.

    Parameters
    ----------
    data : bytes
        The compressed file.
    max_bytes : int
        Largest decompressed size accepted.
    label : str
        How messages name the file.
    limits : LoadLimits, optional
        When given, its compression-ratio guard applies too
        (:meth:`~akfviz.workloads.limits.LoadLimits.check_expansion`).

    Returns
    -------
    bytes
        The decompressed content.

    Raises
    ------
    ResourceLimitError
        The decompressed content would exceed ``max_bytes`` or the compression-ratio guard.
    InputError
        Corrupt or truncated gzip data.
    """
    out = _Output(len(data), max_bytes, label, limits)
    rest = data
    try:
        while True:
            d = zlib.decompressobj(wbits=31)  # 31: expect the gzip header and trailer
            buf = rest
            while not d.eof:
                piece = d.decompress(buf, _CHUNK)
                out.add(piece)
                buf = d.unconsumed_tail
                if not buf and not piece and not d.eof:
                    raise InputError(f"{_cap(label)} is a truncated gzip file (it ends before the "
                                     f"compressed data does); download it again.")
            rest = d.unused_data
            if not is_gzip(rest):
                break  # trailing bytes after the last member are ignored, as gzip(1) does
    except zlib.error as exc:
        raise InputError(f"{_cap(label)} is not valid gzip data ({exc}); the file is corrupt.") from None
    return out.value()


def _stream_decompress(data: bytes, codec: "Codec", max_bytes: int, label: str,
                       limits: LoadLimits | None = None) -> bytes:
    """bzip2 / xz ``data`` (every concatenated stream) with the same limits as :func:`gunzip`.

    Both stdlib decompressors take ``max_length`` and keep unconsumed input themselves.
    """
    out = _Output(len(data), max_bytes, label, limits)
    rest = data
    try:
        while True:
            d = codec.decompressor()
            buf = rest
            while not d.eof:
                piece = d.decompress(buf, _CHUNK)
                buf = b""
                out.add(piece)
                if not piece and d.needs_input:
                    raise InputError(f"{_cap(label)} is a truncated {codec.name} file (it ends "
                                     f"before the compressed data does); download it again.")
            rest = d.unused_data
            if not codec.matches(rest):
                break  # trailing bytes after the last stream are ignored
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise InputError(f"{_cap(label)} is not valid {codec.name} data ({exc}); the file is "
                         f"corrupt.") from None
    return out.value()


@dataclass(frozen=True)
class Codec:
    """A compression format: magic bytes, file suffixes (plain and tar shorthand) and how to
    undo it within a byte limit."""

    name: str
    magic: bytes
    suffixes: tuple[str, ...]       # name.mtx.gz -> name.mtx
    tar_suffixes: tuple[str, ...]   # name.tgz -> name.tar
    decompressor: Callable | None = None  # None: gzip's own loop (zlib's API differs)
    next_byte: bytes = b""          # when set, the byte after the magic must be one of these
    check: Callable | None = None   # when set, a further test of the first bytes

    def matches(self, head: bytes) -> bool:
        """True when ``head`` starts like a file of this format."""
        if not head.startswith(self.magic):
            return False
        if self.check is not None:
            return self.check(head)
        nxt = head[len(self.magic):len(self.magic) + 1]
        return not self.next_byte or (len(nxt) == 1 and nxt in self.next_byte)

    def decompress(self, data: bytes, max_bytes: int, label: str, *,
                   limits: LoadLimits | None = None) -> bytes:
        """``data`` decompressed within ``max_bytes`` (and ``limits``' compression-ratio
        guard when given); see :func:`gunzip`."""
        if self.decompressor is None:
            return gunzip(data, max_bytes, label, limits=limits)
        return _stream_decompress(data, self, max_bytes, label, limits)

    def inner_name(self, name: str | None) -> str | None:
        """The file name once decompressed (``a.mtx.gz`` → ``a.mtx``, ``a.tgz`` → ``a.tar``)."""
        if not name:
            return name
        low = name.lower()
        for s in self.tar_suffixes:
            if low.endswith(s):
                return name[: -len(s)] + ".tar"
        return strip_suffix(name, self.suffixes)


def _is_lzma_alone(head: bytes) -> bool:
    """True when ``head`` starts like a legacy LZMA-alone (``.lzma``) file, which has no magic
    bytes: the properties byte every encoder writes (0x5D: lc=3, lp=0, pb=2), a dictionary size
    of 2**n or 2**n + 2**(n-1) bytes from 4 KiB, and an uncompressed size that is unknown (all
    0xFF) or below 2**40 (so the bytes after it are zero, which rules out a .safetensors
    header, whose length may start with 0x5D but is followed by JSON text)."""
    if len(head) < 13 or head[0] != 0x5D:
        return False
    dict_size = int.from_bytes(head[1:5], "little")
    low = dict_size & -dict_size  # the lowest set bit
    if dict_size < 4096 or dict_size not in (low, 3 * low):
        return False
    size = int.from_bytes(head[5:13], "little")
    return size == 2**64 - 1 or size < 2**40


#: Compression formats recognised by their first bytes (never by the extension alone).
CODECS = (
    Codec("gzip", GZIP_MAGIC, (".gz",), (".tgz",)),
    Codec("bzip2", b"BZh", (".bz2",), (".tbz2", ".tbz"), bz2.BZ2Decompressor, b"123456789"),
    Codec("xz", b"\xfd7zXZ\x00", (".xz",), (".txz",), lzma.LZMADecompressor),
    Codec("lzma", b"\x5d", (".lzma",), (), functools.partial(lzma.LZMADecompressor, format=lzma.FORMAT_ALONE),
          check=_is_lzma_alone),
)
#: Every suffix a compressed file may carry (used to find an archive's stem).
COMPRESSED_SUFFIXES = tuple(x for c in CODECS for x in c.suffixes + c.tar_suffixes)
#: Names of tar archives, plain or compressed (``.tar``, ``.tar.gz``, ``.tgz`` …).
ARCHIVE_SUFFIXES = (".tar",) + tuple(f".tar{x}" for c in CODECS for x in c.suffixes) \
    + tuple(x for c in CODECS for x in c.tar_suffixes)


def codec_of(head: bytes) -> Codec | None:
    """The compression format ``head`` starts with, or None."""
    for c in CODECS:
        if c.matches(head):
            return c
    return None


def is_compressed(head: bytes) -> bool:
    """True when ``head`` starts like a gzip, bzip2, xz or LZMA-alone file."""
    return codec_of(head) is not None


def _choose_member(members, archive_name: str | None, tensor, label: str):
    names = [m.name for m in members]
    if tensor is not None:
        want = str(tensor)
        hits = [m for m in members if m.name == want or pathlib.PurePosixPath(m.name).name == want]
        if len(hits) == 1:
            return hits[0], True
        shown = name_list(names)
        if not hits:
            # not a member: a tensor (or array) inside the archive's one container file
            try:
                default, _ = _choose_member(members, archive_name, None, label)
            except InputError:
                default = None
            if default is not None and default.name.lower().endswith((".safetensors", ".npz")):
                return default, False
            raise InputError(f"{_cap(label)} has no member named {want!r}; its files are: {shown}.")
        raise InputError(f"{_cap(label)} has several members named {want!r}; give the full path "
                         f"(one of: {name_list([m.name for m in hits])}).")
    matrices = [m for m in members if m.name.lower().endswith(MATRIX_SUFFIXES)]
    if len(matrices) == 1:
        return matrices[0], False
    if archive_name:
        stem = pathlib.PurePosixPath(archive_name).name
        stem = strip_suffix(strip_suffix(stem, COMPRESSED_SUFFIXES), (".tar",)) or stem
        for m in matrices:
            p = pathlib.PurePosixPath(m.name)
            if p.name == f"{stem}.mtx" and (len(p.parts) == 1 or p.parts[-2] == stem):
                return m, False
    if not matrices:
        raise InputError(f"{_cap(label)} holds no matrix file (.mtx, .npz, .npy, .safetensors); "
                         f"its files are: {name_list(names)}.")
    raise InputError(f"{_cap(label)} holds several matrix files ({name_list([m.name for m in matrices])}); "
                     f"choose one with tensor='<member name>'.")


def _open_tar(data: bytes, label: str) -> tarfile.TarFile:
    try:
        return tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except tarfile.TarError as exc:
        raise InputError(f"{_cap(label)} is not a readable tar archive ({exc}).") from None


def _regular_members(tf: tarfile.TarFile, label: str) -> list:
    """The archive's regular files (links, folders and devices are ignored). A name stored more
    than once (``tar -r`` appends a newer copy of a file) counts once, as its last copy: what
    ``tar -x`` leaves on disk."""
    try:
        files = [m for m in tf.getmembers() if m.isfile()]
    except tarfile.TarError as exc:
        raise InputError(f"{_cap(label)} is a damaged tar archive ({exc}).") from None
    last = {m.name: m for m in files}
    return [m for m in files if last[m.name] is m]


def untar(data: bytes, archive_name: str | None, tensor, max_bytes: int, label: str):
    """The chosen member of a tar archive: ``(bytes, member name, tensor_consumed)``.

    ``tensor_consumed`` is True when ``tensor`` named the member (it is then not passed on
    to the format reader).
    """
    with _open_tar(data, label) as tf:
        members = _regular_members(tf, label)
        if not members and not tf.getmembers():
            raise InputError(f"{_cap(label)} is an empty tar archive: it holds no files, so there is no "
                             f"matrix in it.")
        member, consumed = _choose_member(members, archive_name, tensor, label)
        if member.issparse():
            # tarfile would expand the holes in memory, past the decompression guards (a 187-byte
            # .tar.gz declared a 1 GB member and took 2 GB); a text or array file has no holes
            raise InputError(
                f"{_cap(label)}: member {member.name[:60]!r} is stored as a sparse file (long runs of zero "
                f"bytes left out, {member.size:,} bytes once expanded), which no matrix file is; akfviz "
                f"does not expand it. Extract the archive with tar and load the matrix file itself.")
        if member.size > max_bytes:
            raise ResourceLimitError(
                f"{_cap(label)}: member {member.name[:60]!r} declares {member.size:,} bytes, over the "
                f"limit of {max_bytes:,}; pass limits=akfviz.LoadLimits(max_decompressed_bytes=...).")
        f = tf.extractfile(member)
        content = f.read() if f is not None else b""
    if len(content) != member.size:
        raise InputError(f"{_cap(label)} is truncated: member {member.name!r} should have "
                         f"{member.size:,} bytes but has {len(content):,}.")
    return content, member.name, consumed


def matrix_members(data: bytes, filename: str | None = None, *, max_bytes: int | None = None,
                   limits: LoadLimits | None = None) -> list[str]:
    """Names of the matrix files in a tar / tar.gz archive, the default choice first.

    The default is what :func:`unwrap` reads without ``tensor=`` (the only matrix file, or
    ``name/name.mtx``); an empty list when ``data`` is not an archive (a plain or gzip-only
    file). Used by the app to offer a choice when an archive holds several matrices.

    Parameters
    ----------
    data : bytes
        The archive, compressed or not.
    filename : str, optional
        Its name (for the SuiteSparse default and in messages).
    max_bytes : int, optional
        Largest decompressed size accepted; default ``limits.max_decompressed_bytes``.
    limits : LoadLimits, optional
        Limits for the decompression (size and compression ratio); default
        :data:`~akfviz.workloads.limits.DEFAULT_LIMITS`.

    Returns
    -------
    list of str
        Member names.
    """
    lim = resolve_limits(limits)
    label = f"archive {filename!r}" if filename else "the archive"
    codec = codec_of(data)
    if codec is not None:
        cap = lim.max_decompressed_bytes if max_bytes is None else max_bytes
        data = codec.decompress(data, cap, label, limits=lim)
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


def _refuse_second_layer(content: bytes, outer: Codec | None, label: str, member: str | None) -> None:
    """Refuse content that is compressed again once unpacked (``a.mtx.gz.gz``): only one layer
    is unpacked, and the format readers would not recognise it."""
    inner = codec_of(content)
    if inner is None:
        return
    if member is None:
        raise InputError(
            f"{_cap(label)} is compressed twice ({inner.name} inside {outer.name}); akfviz unpacks only "
            f"one layer of compression. Decompress it once first (e.g. 'a.mtx.gz.gz' → 'a.mtx.gz') "
            f"and load the result.")
    raise InputError(
        f"{_cap(label)}: member {member!r} is itself compressed ({inner.name}); akfviz unpacks only "
        f"one layer of compression. Take the member out of the archive and load it on its own.")


def unwrap(data: bytes, filename: str | None, tensor, max_bytes: int, label: str, *,
           limits: LoadLimits | None = None):
    """Peel compression (gzip, bzip2, xz, lzma) and tar layers off a file held in memory.

    Parameters
    ----------
    data : bytes
        The file's content (the caller has checked that it is compressed or a tar).
    filename : str or None
        Its name (for the SuiteSparse member convention and the inner file's extension).
    tensor : str or None
        ``load``'s ``tensor=``: for a tar archive, the member to read when it names one; else,
        when the archive's default member is a .safetensors or .npz file, the tensor in it.
    max_bytes : int
        Largest decompressed file / member accepted.
    label : str
        How messages name the file.
    limits : LoadLimits, optional
        Its compression-ratio guard applies to the decompression; default
        :data:`~akfviz.workloads.limits.DEFAULT_LIMITS`.

    Returns
    -------
    (bytes, str or None, tensor, str)
        The inner content, its file name, the ``tensor`` left for the format reader, and a
        label naming both the archive and the member.

    Raises
    ------
    InputError
        Corrupt data, a damaged archive, no (or an ambiguous) member, or content compressed
        twice (only one layer is unpacked).
    ResourceLimitError
        Over ``max_bytes`` or the compression-ratio guard.
    """
    name = filename
    codec = codec_of(data)
    if codec is not None:
        data = codec.decompress(data, max_bytes, label, limits=resolve_limits(limits))
        name = codec.inner_name(name)
        _refuse_second_layer(data, codec, label, None)
    if is_tar(data) or (is_empty_tar(data) and (name or "").lower().endswith(".tar")):
        content, member, consumed = untar(data, filename, tensor, max_bytes, label)
        _refuse_second_layer(content, codec, label, member)
        return content, pathlib.PurePosixPath(member).name, (None if consumed else tensor), \
            f"{label} (member {member!r})"
    return data, name, tensor, label


__all__ = ["ARCHIVE_SUFFIXES", "COMPRESSED_SUFFIXES", "CODECS", "Codec", "GZIP_MAGIC",
           "MATRIX_SUFFIXES", "codec_of", "gunzip", "is_compressed", "is_empty_tar", "is_gzip", "is_tar",
           "matrix_members", "strip_suffix", "untar", "unwrap"]
