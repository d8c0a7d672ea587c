"""Loader findings of a fuzzing probe (1.58M generated and mutated files, twenty-sixth session).

Each test is one finding: a long-double array read back with inf and a stored zero; valid big-endian
or float16 COO / BSR ``.npz`` files refused; parser exceptions quoted raw instead of said in words;
an overflow in a symmetric file located at the mirrored entry.
"""
import io
import struct
import tarfile

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.workloads import matrix_choices


def _npy(a) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def _npz(**arrays) -> bytes:
    b = io.BytesIO()
    np.savez(b, **arrays)
    return b.getvalue()


# --------------------------------------------------------------------------- long double
@pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max, reason="longdouble is float64 here")
def test_long_double_beyond_float64_is_refused_and_tiny_values_dropped():
    big = np.array([[np.longdouble("1e400"), 1], [0, 2]], dtype=np.longdouble)
    for data in (_npy(big), _npz(w=big)):
        with pytest.raises(akfviz.InputError, match=r"1 value\(s\) beyond the range of float64"):
            akfviz.load(data)
    tiny = np.array([[np.longdouble("2.5"), 1], [np.longdouble("1e-4000"), 0]], dtype=np.longdouble)
    M = akfviz.load(_npy(tiny))
    # 1e-4000 is 0 in float64: not stored (it was an explicit zero in a "canonical" matrix)
    assert M.nnz == 2 and M.data.tolist() == [2.5, 1.0] and M.indptr.tolist() == [0, 2, 2]
    assert np.all(np.isfinite(M.data))


# --------------------------------------------------------------------------- byte order, float16
@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i4", ">i8", "<f2", ">f2"])
@pytest.mark.parametrize("fmt", ["coo", "bsr", "csr"])
def test_sparse_npz_of_any_byte_order_and_float16_loads(fmt, dtype):
    """scipy's coo and bsr constructors refuse non-native byte order and float16; every COO / BSR file
    written on a big-endian machine was refused."""
    want = np.array([[1.5, 0.0], [0.0, 2.0]]) if dtype[1] == "f" else np.array([[1.0, 0.0], [0.0, 2.0]])
    vals = np.array([want[0, 0], want[1, 1]], dtype=dtype)
    if fmt == "coo":
        data = _npz(format=np.array("coo"), shape=np.array([2, 2]), data=vals,
                    row=np.array([0, 1], dtype=">i4"), col=np.array([0, 1], dtype=np.int32))
    elif fmt == "bsr":
        data = _npz(format=np.array("bsr"), shape=np.array([2, 2]),
                    data=np.array([[[want[0, 0], 0], [0, want[1, 1]]]], dtype=dtype),
                    indices=np.array([0], dtype=">i8"), indptr=np.array([0, 1], dtype=np.int32))
    else:
        data = _npz(format=np.array("csr"), shape=np.array([2, 2]), data=vals,
                    indices=np.array([0, 1], dtype=">i4"), indptr=np.array([0, 1, 2], dtype=np.int32))
    M = akfviz.load(data)
    assert M.dtype == np.float64 and np.array_equal(M.toarray(), want)
    # and a file written by save_npz from such an array reads back the same
    b = io.BytesIO()
    sp.save_npz(b, sp.coo_array(want.astype(np.float64)), compressed=False)
    assert np.array_equal(akfviz.load(b.getvalue()).toarray(), want)


# --------------------------------------------------------------------------- messages in words
def _zip_cases():
    z0 = _npz(w=np.eye(2))
    c = z0.rfind(b"PK\x01\x02")          # the central directory entry of the one member

    def cd(off, fmt, v):
        z = bytearray(z0)
        struct.pack_into(fmt, z, c + off, v)
        return bytes(z)

    bad_name = bytearray(cd(8, "<H", 0x800))   # "UTF-8 name" flag, then a byte that is not UTF-8
    bad_name[c + 46] = 0xFF
    return z0, [
        (z0[:4] + z0[c:], "corrupt or truncated"),                 # member data missing: negative seek
        (cd(8, "<H", 1), "encrypted"),
        (cd(8, "<H", 0x40), "encrypted"),                           # strong encryption
        (cd(8, "<H", 0x20), "zip feature Python's zipfile does not support"),
        (cd(6, "<H", 96), "zip feature Python's zipfile does not support"),   # version 9.6
        (bytes(bad_name), "not valid UTF-8"),
    ]


def _deep_safetensors() -> bytes:
    h = b'{"z": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return struct.pack("<Q", len(h)) + h


def _tar_with_huge_size() -> bytes:
    t = io.BytesIO()
    with tarfile.open(fileobj=t, mode="w") as tf:
        info = tarfile.TarInfo("a.mtx")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    tb = bytearray(t.getvalue())
    tb[124:136] = b"\x80" + b"\x00" * 3 + b"\xff" * 8     # base-256 size field: 2**64 - 1 and more
    tb[148:156] = b" " * 8
    tb[148:156] = b"%06o\x00 " % sum(tb[:512])
    return bytes(tb)


def test_parser_exceptions_are_said_in_words():
    _, cases = _zip_cases()
    cases += [(_deep_safetensors(), "nests lists or objects too deeply"),
              (_tar_with_huge_size(), "impossible size or count")]
    for data, words in cases:
        with pytest.raises(akfviz.InputError) as err:
            akfviz.load(data)
        msg = str(err.value)
        assert words in msg, msg
        # not the raw "Type: text" of the parser's exception
        for raw in ("ValueError:", "RuntimeError:", "NotImplementedError:", "UnicodeDecodeError:",
                    "RecursionError:", "OverflowError:"):
            assert raw not in msg, msg


def test_matrix_choices_says_a_truncated_npz_is_corrupt():
    z0, _ = _zip_cases()
    with pytest.raises(akfviz.InputError, match="corrupt or truncated") as err:
        matrix_choices(z0[:len(z0) // 2])
    assert "BadZipFile:" not in str(err.value)


def test_symmetric_overflow_names_the_entry_as_the_file_lists_it():
    text = b"%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1e308\n2 1 1e308\n"
    with pytest.raises(akfviz.InputError, match="the entry at row 2, column 1 more than once"):
        akfviz.load(text)
