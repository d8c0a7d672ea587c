"""Held-out inputs from the fifty-first session's loader probe: a sparse tar member past the
decompression guards, a tar holding one name twice, and header fields megabytes long copied whole
into messages."""
import io
import json
import shutil
import struct
import subprocess
import tarfile
import time

import numpy as np
import pytest

import akfviz
from akfviz.errors import MAX_MESSAGE, InputError, shown
from archive_builders import tar_bytes

MTX = b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n"


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs GNU tar to write a sparse member")
def test_a_sparse_tar_member_is_refused_before_its_holes_are_expanded(tmp_path):
    src = tmp_path / "sp"
    src.mkdir()
    f = src / "big.mtx"
    f.write_bytes(MTX)
    with open(f, "r+b") as fh:
        fh.truncate(256 * 2**20)           # 256 MB, nearly all of it a hole
    out = tmp_path / "big.tar.gz"
    subprocess.run(["tar", "--sparse", "-czf", str(out), "-C", str(src), "big.mtx"], check=True)
    data = out.read_bytes()
    assert len(data) < 10_000
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        assert tf.getmembers()[0].issparse()   # the setup holds
    t0 = time.perf_counter()
    with pytest.raises(InputError, match="sparse file") as exc:
        akfviz.load(str(out))
    assert time.perf_counter() - t0 < 5     # refused from the member's header (expanding took seconds)
    assert "268,435,456 bytes once expanded" in str(exc.value)
    with pytest.raises(InputError, match="sparse file"):
        akfviz.load(str(out), tensor="big.mtx")


def _two_copies(first: bytes, second: bytes) -> bytes:
    return tar_bytes([("d/d.mtx", first), ("d/d.mtx", second)], mode="w:gz")


def test_a_name_stored_twice_in_a_tar_reads_as_its_last_copy():
    three_by_one = b"%%MatrixMarket matrix coordinate real general\n3 1 1\n1 1 7\n"
    two_by_two = b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 2 -3\n"
    data = _two_copies(three_by_one, two_by_two)
    for kw in ({}, {"tensor": "d/d.mtx"}, {"tensor": "d.mtx"}):
        A = akfviz.load(data, **kw)
        np.testing.assert_array_equal(A.toarray(), [[1.5, 0.0], [0.0, -3.0]])
    # the other order: the 3 × 1 copy is the last one
    A = akfviz.load(_two_copies(two_by_two, three_by_one))
    assert A.shape == (3, 1)
    from akfviz.workloads.archives import matrix_members
    assert matrix_members(data, "d.tar.gz") == ["d/d.mtx"]


def _safetensors(header: dict, body: bytes) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + body


def _npy_with_shape(shape) -> bytes:
    d = repr({"descr": "<f8", "fortran_order": False, "shape": tuple(shape)})
    pad = (64 - (10 + len(d) + 1) % 64) % 64
    header = (d + " " * pad + "\n").encode()
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 8


LONG = [
    ("shape of 200,000 ones, no 2-D tensor",
     lambda: _safetensors({"b": {"dtype": "F32", "shape": [1] * 200_000, "data_offsets": [0, 4]}}, b"\0" * 4), {}),
    ("the same, chosen by name",
     lambda: _safetensors({"b": {"dtype": "F32", "shape": [1] * 5000, "data_offsets": [0, 4]},
                           "w": {"dtype": "F32", "shape": [1, 1], "data_offsets": [4, 8]}}, b"\0" * 8),
     {"tensor": "b"}),
    ("a bad shape of 5,000 entries",
     lambda: _safetensors({"b": {"dtype": "F32", "shape": [-1] + [1] * 5000, "data_offsets": [0, 4]}}, b"\0" * 4),
     {}),
    ("a dtype of 100,000 characters",
     lambda: _safetensors({"w": {"dtype": "X" * 100_000, "shape": [1, 1], "data_offsets": [0, 4]}}, b"\0" * 4), {}),
    ("100,000 data offsets",
     lambda: _safetensors({"w": {"dtype": "F32", "shape": [1, 1], "data_offsets": [0] * 100_000}}, b"\0" * 4), {}),
    ("a tensor name of a million characters with a bad span",
     lambda: _safetensors({"n" * 10**6: {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 4]}}, b"\0" * 4), {}),
    ("a .npy of 3,000 dimensions", lambda: _npy_with_shape([1] * 3000), {}),
    ("a banner word of 100,000 characters",
     lambda: b"%%MatrixMarket matrix coordinate real general" + b"x" * 100_000 + b"\n2 2 1\n1 1 1\n", {}),
]


@pytest.mark.parametrize("what,make,kw", LONG, ids=[c[0] for c in LONG])
def test_messages_quote_huge_header_fields_cut(what, make, kw):
    data = make()
    with pytest.raises(InputError) as exc:
        akfviz.load(data, **kw)
    msg = str(exc.value)
    assert len(msg) <= 700, (what, len(msg), msg[:300])      # cut at the site, well under the backstop
    assert "characters cut" not in msg


def test_the_shape_is_summarised_with_its_length():
    data = LONG[0][1]()
    with pytest.raises(InputError, match=r"no 2-D tensor.*b \[1, 1, 1, 1, 1, 1, 1, 1, … \(200,000 values\)\]"):
        akfviz.load(data)
    with pytest.raises(InputError, match=r"must be 2-D .*shape \(1, 1, 1, 1, 1, 1, 1, 1, … \(3,000 values\)\)"):
        akfviz.load(_npy_with_shape([1] * 3000))


def test_every_input_error_is_cut_to_the_backstop_length():
    e = InputError("x" * 10**6 + "END")
    text = str(e)
    assert len(text) <= MAX_MESSAGE
    assert text.startswith("xxx") and text.endswith("END") and "characters cut" in text
    kept = len(text.split(" … [")[0]) + len(text.split("] … ")[1])
    assert f"[{10**6 + 3 - kept:,} characters cut]" in text
    short = InputError("a short message")
    assert str(short) == "a short message"
    assert str(InputError("y" * MAX_MESSAGE)) == "y" * MAX_MESSAGE     # at the limit: kept whole
    # subclasses too (ResourceLimitError)
    assert len(str(akfviz.errors.ResourceLimitError("z" * 5000))) <= MAX_MESSAGE


def test_shown_keeps_short_values_as_repr_shows_them():
    assert shown((3, 4)) == "(3, 4)" and shown((5,)) == "(5,)" and shown([0, 4]) == "[0, 4]"
    assert shown(np.int64(7)) == "7" and shown((np.int64(2), np.int64(3))) == "(2, 3)"
    assert shown("F32") == "'F32'" and shown("F32", quote=False) == "F32"
    long = shown("a" * 1000 + "END")
    assert len(long) <= 62 and "…" in long and long.endswith("END'")     # 60 characters and the quotes
    assert shown(list(range(100)), items=3) == "[0, 1, 2, … (100 values)]"
