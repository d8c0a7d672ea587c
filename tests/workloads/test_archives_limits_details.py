"""Details of compressed / archived uploads, the load limits and the sample registry that a
plausible bug could change without the broader archive and loader tests noticing."""
import bz2
import gzip
import io
import json
import lzma
import struct
import tarfile
import zipfile

import numpy as np
import pytest
from archive_builders import tar_bytes

from akfviz.errors import InputError, ResourceLimitError
from akfviz.workloads import DEFAULT_SAMPLE, LoadLimits, list_samples, load, load_sample, sample_path
from akfviz.workloads.archives import gunzip, is_compressed, matrix_members, untar
from akfviz.workloads.samples import SAMPLE_DIR

# a hand-written 3 × 3 matrix: (1,1)=1.5, (2,3)=-2, (3,2)=4
MTX_HEAD = b"%%MatrixMarket matrix coordinate real general\n3 3 3\n"
MTX_BODY = [b"1 1 1.5\n", b"2 3 -2\n", b"3 2 4\n"]
MTX = MTX_HEAD + b"".join(MTX_BODY)
DENSE = np.array([[1.5, 0, 0], [0, 0, -2], [0, 4, 0]])


def _tar(members) -> bytes:
    """A plain tar of ``(name, bytes)`` regular files."""
    return tar_bytes(members)


def test_gunzip_without_limits_accepts_output_of_exactly_max_bytes():
    """``max_bytes`` is the largest size accepted: output of exactly that size is returned
    (also when no LoadLimits is given, so only the size bound applies)."""
    raw = b"x" * 1000
    assert gunzip(gzip.compress(raw), 1000, "t") == raw
    with pytest.raises(ResourceLimitError, match="more than 999 bytes"):
        gunzip(gzip.compress(raw), 999, "t")


@pytest.mark.parametrize("compress", [bz2.compress, lzma.compress], ids=["bz2", "xz"])
def test_concatenated_bz2_and_xz_streams_are_all_read(compress):
    """pbzip2 / parallel xz write several concatenated streams: every one is part of the
    file, so a matrix split over two streams loads whole."""
    raw = compress(MTX_HEAD + MTX_BODY[0]) + compress(b"".join(MTX_BODY[1:]))
    assert np.array_equal(load(raw, name="m.mtx.x").toarray(), DENSE)


def test_safetensors_header_length_starting_0x5d_is_not_taken_for_lzma():
    """A safetensors header of 0x10005D bytes makes the file start 5D 00 10 00 00, like an
    LZMA-alone header with a 4 KiB dictionary; the JSON after the length rules it out."""
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    hdr = json.dumps({"w": {"dtype": "F64", "shape": [2, 2], "data_offsets": [0, 32]}}).encode()
    size = 0x10005D
    data = struct.pack("<Q", size) + hdr + b" " * (size - len(hdr)) + a.tobytes()
    assert data[:5] == b"\x5d\x00\x10\x00\x00"
    assert not is_compressed(data[:64])
    assert np.array_equal(load(data, name="w.safetensors").toarray(), a)


def test_lzma_alone_with_a_three_times_power_of_two_dictionary_is_read():
    """LZMA-alone dictionaries may be 2**n or 2**n + 2**(n-1) bytes (here 3 MiB): such a
    .lzma file is recognised and decompressed."""
    raw = lzma.compress(MTX, format=lzma.FORMAT_ALONE,
                        filters=[{"id": lzma.FILTER_LZMA1, "dict_size": 3 * 2**20}])
    assert int.from_bytes(raw[1:5], "little") == 3 * 2**20
    assert is_compressed(raw)
    assert np.array_equal(load(raw, name="m.mtx.lzma").toarray(), DENSE)


def test_tensor_naming_two_members_by_base_name_is_ambiguous():
    """``tensor='m.mtx'`` matching ``a/m.mtx`` and ``b/m.mtx`` is refused (naming both
    paths), never resolved silently to the first."""
    other = MTX_HEAD.replace(b"3 3 3", b"3 3 1") + b"1 1 9\n"
    data = _tar([("a/m.mtx", MTX), ("b/m.mtx", other)])
    with pytest.raises(InputError, match="several members named 'm.mtx'.*a/m.mtx.*b/m.mtx"):
        load(data, name="x.tar", tensor="m.mtx")
    # the full path still picks one
    assert load(data, name="x.tar", tensor="b/m.mtx").toarray()[0, 0] == 9


def test_suitesparse_default_needs_the_folder_named_like_the_archive():
    """The SuiteSparse default is ``foo/foo.mtx`` (or a top-level ``foo.mtx``): ``x/foo.mtx``
    and ``y/foo.mtx`` in ``foo.tar`` are two candidates, so the choice is left to the user."""
    data = _tar([("x/foo.mtx", MTX), ("y/foo.mtx", MTX)])
    with pytest.raises(InputError, match="several matrix files"):
        load(data, name="foo.tar")
    # the convention itself still applies when the folder matches
    data = _tar([("foo/foo_b.mtx", MTX), ("foo/foo.mtx", MTX)])
    assert matrix_members(data, "foo.tar")[0] == "foo/foo.mtx"


def test_links_in_a_tar_are_not_matrix_members():
    """Symbolic and hard links named like matrices are ignored: the one regular ``.mtx`` is
    the only member and loads without ``tensor=``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("m.mtx")
        info.size = len(MTX)
        tf.addfile(info, io.BytesIO(MTX))
        for name, kind in (("soft.mtx", tarfile.SYMTYPE), ("hard.mtx", tarfile.LNKTYPE)):
            link = tarfile.TarInfo(name)
            link.type, link.linkname = kind, "m.mtx"
            tf.addfile(link)
    data = buf.getvalue()
    assert matrix_members(data, "a.tar") == ["m.mtx"]
    assert np.array_equal(load(data, name="a.tar").toarray(), DENSE)


def test_untar_accepts_a_member_of_exactly_max_bytes():
    """A member declaring exactly ``max_bytes`` bytes is read; one byte more is refused."""
    data = _tar([("m.mtx", MTX)])
    content, name, consumed = untar(data, "a.tar", None, len(MTX), "t")
    assert (content, name, consumed) == (MTX, "m.mtx", False)
    with pytest.raises(ResourceLimitError, match=f"declares {len(MTX)} bytes"):
        untar(data, "a.tar", None, len(MTX) - 1, "t")


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress],
                         ids=["gz", "bz2", "xz"])
def test_ratio_guard_applies_to_output_smaller_than_one_chunk(compress):
    """With ``ratio_floor_bytes=0`` the ratio applies from the first byte: a 180 kB text
    (well under the 1 MiB decompression chunk) expanding over 10× is refused at ratio 10."""
    text = b"%%MatrixMarket matrix array real general\n300 300\n" + b"0\n" * 90_000
    raw = compress(text)
    assert len(text) < 1 << 20 and len(text) > 10 * len(raw)
    lim = LoadLimits(max_compression_ratio=10, ratio_floor_bytes=0)
    with pytest.raises(ResourceLimitError, match="expands more than 10×"):
        load(raw, name="z.mtx.c", limits=lim)
    # the same file within a ratio it meets loads (all zeros)
    ok = LoadLimits(max_compression_ratio=len(text) / len(raw) + 1, ratio_floor_bytes=0)
    assert load(raw, name="z.mtx.c", limits=ok).nnz == 0


def test_check_expansion_is_inclusive_at_the_cap():
    """``max_compression_ratio`` × packed bytes (or the floor) is itself allowed: 400 bytes
    from 100 at ratio 4 pass, 401 do not; likewise for the floor."""
    lim = LoadLimits(max_compression_ratio=4, ratio_floor_bytes=0)
    lim.check_expansion(400, 100, what="x")
    with pytest.raises(ResourceLimitError, match="expands more than 4×"):
        lim.check_expansion(401, 100, what="x")
    LoadLimits(max_compression_ratio=1, ratio_floor_bytes=1000).check_expansion(1000, 10, what="x")


def test_npz_whose_arrays_reach_exactly_the_ratio_floor_loads():
    """A .npz's declared member sizes equal to ``ratio_floor_bytes`` (with a ratio far too small
    to allow them) are accepted; one byte less of floor refuses the file."""
    a = np.zeros((60, 60))
    a[1, 2] = 3.0
    buf = io.BytesIO()
    np.savez_compressed(buf, a=a)
    data = buf.getvalue()
    declared = sum(i.file_size for i in zipfile.ZipFile(io.BytesIO(data)).infolist())
    ratio = 0.001  # ratio × file size is far below the declared bytes: only the floor counts
    assert ratio * len(data) < declared
    M = load(data, name="a.npz", limits=LoadLimits(max_compression_ratio=ratio, ratio_floor_bytes=declared))
    assert M.nnz == 1 and M[1, 2] == 3.0
    with pytest.raises(ResourceLimitError):
        load(data, name="a.npz", limits=LoadLimits(max_compression_ratio=ratio, ratio_floor_bytes=declared - 1))


def test_load_limits_documented_defaults():
    """The defaults are those documented in LoadLimits (50M rows / columns, 200M nnz, 400M dense
    elements, 4 GiB decompressed, ratio 200 above a 64 MiB floor)."""
    lim = LoadLimits()
    assert (lim.max_rows, lim.max_cols, lim.max_nnz, lim.max_dense_elements) == \
        (50_000_000, 50_000_000, 200_000_000, 400_000_000)
    assert lim.max_decompressed_bytes == 4 * 1024**3
    assert lim.max_compression_ratio == 200
    assert lim.ratio_floor_bytes == 64 * 1024**2


@pytest.mark.parametrize("token", ["-", "+"])
def test_lone_sign_in_integer_file_is_explained(token):
    """A sign without digits is not an integer: refused with its line and the integer
    explanation (not a generic reader failure)."""
    text = (b"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 " + token.encode() + b"\n")
    with pytest.raises(InputError, match=r"line 3 .*'\%s' is not an integer" % token):
        load(text, name="x.mtx")


def _catalogue():
    return json.loads((SAMPLE_DIR / "samples.json").read_text(encoding="utf-8"))["samples"]


def test_list_samples_shape_is_a_tuple():
    """``list_samples().shape`` holds tuples (the catalogue's lists converted), in catalogue order."""
    table = list_samples()
    cat = _catalogue()
    assert list(table["name"]) == [e["name"] for e in cat]
    for shape, e in zip(table["shape"], cat):
        assert type(shape) is tuple and shape == tuple(e["shape"])


@pytest.mark.parametrize("name", [["minilm_ffn0_mag90"], {"a": 1}])
def test_sample_path_refuses_a_name_that_is_not_a_string(name):
    """An unhashable name is an InputError listing the choices, not a TypeError."""
    with pytest.raises(InputError, match="Unknown sample"):
        sample_path(name)


def test_default_sample_is_the_minilm_ffn_pruned_to_90_percent():
    """The app opens with the MiniLM layer-0 FFN up-projection pruned to 90 %: 1536 × 384 with
    the nnz the catalogue records for it (≈ 10 % of 589,824)."""
    assert DEFAULT_SAMPLE == "minilm_ffn0_mag90"
    entry = {e["name"]: e for e in _catalogue()}["minilm_ffn0_mag90"]
    A = load_sample()
    assert A.shape == (1536, 384) == tuple(entry["shape"])
    assert A.nnz == entry["nnz"]
    assert abs(A.nnz / (1536 * 384) - 0.10) < 0.005
