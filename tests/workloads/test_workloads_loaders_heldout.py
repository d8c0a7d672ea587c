"""Files a held-out checker fed to load() (eighth session): the Matrix Market entry check
(akfviz.workloads.mm_syntax) refuses, with their line, files scipy's reader would read with wrong
values or crash on; the other formats' damaged files and odd arguments get readable messages."""
import io
import re

import numba
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from akfviz import InputError, load
from akfviz.workloads import mm_syntax

H = "%%MatrixMarket matrix coordinate {field} {symmetry}\n"


def _text(body, field="real", symmetry="general", layout="coordinate"):
    return (H.replace("coordinate", layout).format(field=field, symmetry=symmetry) + body).encode()


@pytest.mark.parametrize("entry", ["1e3", "12e-1", "2.5", "1.", "0x10", "+-1", "nan"])
def test_integer_files_take_integers_only(entry):
    # scipy's reader alone: 1e3 -> 1, 12e-1 -> 12, 2.5 -> 2
    with pytest.raises(InputError, match=f"line 3 .*'{re.escape(entry)}' is not an integer"):
        load(_text(f"1 1 1\n1 1 {entry}\n", field="integer"))
    with pytest.raises(InputError, match="is not an integer"):
        load(_text(f"1 1\n{entry}\n", field="integer", layout="array"))


@pytest.mark.parametrize("entry,value", [("+5", 5.0), ("+1.5e2", 150.0), ("+.5", 0.5), ("1e+5", 1e5),
                                         ("-.25E-1", -0.025), ("7.", 7.0)])
def test_valid_numbers_scipy_alone_refuses_or_misreads_are_read(entry, value, tmp_path):
    text = _text(f"2 2 1\n+2 1 {entry}\n")
    p = tmp_path / "m.mtx"
    p.write_bytes(text)
    for src in (text, p):
        assert load(src).toarray()[1, 0] == value


@pytest.mark.parametrize("text,words", [
    (_text("2 2 2\n1 1 5\n2 1 1\n", symmetry="skew-symmetric"), "skew-symmetric matrix has zeros on its diagonal"),
    (_text("2 3 1\n2 1 3\n", symmetry="symmetric"), "symmetric matrix of 2 × 3; a symmetric matrix must be square"),
    # scipy mirrors both into 6 = 3 + 3 on each side
    (_text("2 2 2\n2 1 3\n1 2 3\n", symmetry="symmetric"), "line 4 .*both sides of the diagonal"),
    (_text("3 3 2\n1 2 3\n3 1 3\n", symmetry="skew-symmetric"), "line 4 .*both sides of the diagonal"),
    (_text("2 1\n", symmetry="skew-symmetric", field="pattern").replace(b"2 1\n", b"2 2 1\n2 1\n"),
     "pattern skew-symmetric"),
    # scipy 1.17's reader writes past its buffer on these (segfault / heap corruption)
    (_text("2 200\n" + "1\n" * 400, symmetry="symmetric", layout="array"), "must be square"),
    (_text("2 200\n" + "1\n" * 199, symmetry="skew-symmetric", layout="array"), "must be square"),
    (_text("2 3\n1\n2\n3\n4\n", symmetry="symmetric", layout="array"), "must be square"),
    (_text("3 3\n1\n2\n", symmetry="symmetric", layout="array"), "declares 6 entries but it has 2"),
    (_text("2 2\n1\n2\n3\n4\n5\n", layout="array"), "more entries than the 4"),
])
def test_contradictory_structure_is_refused(text, words):
    with pytest.raises(InputError, match=words):
        load(text)


def test_symmetric_arrays_are_read_as_scipy_reads_them():
    for sym, body, want in [("symmetric", "1\n2\n3\n", [[1, 2], [2, 3]]),
                            ("skew-symmetric", "4\n", [[0, -4], [4, 0]])]:
        text = _text("2 2\n" + body, symmetry=sym, layout="array")
        assert load(text).toarray().tolist() == want
        assert np.array_equal(load(text).toarray(), scipy.io.mmread(io.BytesIO(text)))


def test_tensor_is_refused_for_a_single_matrix_file():
    with pytest.raises(InputError, match="tensor='W' was given"):
        load(_text("1 1 1\n1 1 2\n"), tensor="W")


@pytest.mark.parametrize("suffix", [".mtx.gz", ".mtx.bz2", ".mtx.xz"])
def test_a_plain_file_with_a_compressed_name_is_read(suffix, tmp_path):
    # scipy's reader decompresses by the name and said "Not a gzipped file"
    p = tmp_path / f"m{suffix}"
    p.write_bytes(_text("1 1 1\n1 1 2\n"))
    assert load(p).toarray().tolist() == [[2.0]]


def test_long_comments_are_dropped_before_the_reader_and_lines_still_count(tmp_path):
    comments = "".join("%" + "c" * 1023 + "\n" for _ in range(2000))  # 2 MB: over the 1 MiB cut
    p = tmp_path / "m.mtx"
    p.write_bytes(_text(comments + "3 3 2\n1 1 2.5\n3 2 -1\n"))
    assert load(p).toarray().tolist() == [[2.5, 0, 0], [0, 0, 0], [0, -1, 0]]
    p.write_bytes(_text(comments + "3 3 2\n1 1 2.5\n3 2 1.5kg\n"))
    with pytest.raises(InputError, match=f"line {2000 + 4} "):
        load(p)


def _corrupt_cases():
    rng = np.random.default_rng(3)
    A = sp.random_array((300, 200), density=0.05, rng=rng, format="coo")
    b = io.BytesIO()
    scipy.io.mmwrite(b, A)
    good = b.getvalue()
    lines = good.split(b"\n")
    out = [("good", good)]
    for k, bad in enumerate([b"1 1 0x10", b"1 1 1 1", b"1", b"% c", b"301 1 1", b"1 1 1.5.3", b"2 2 2\n3 3 3"]):
        at = int(rng.integers(3, len(lines) - 2))
        out.append((bad.decode(), b"\n".join(lines[:at] + [bad] + lines[at + 1:])))
    out.append(("too few", b"\n".join(lines[:-5]) + b"\n"))
    return out


@pytest.mark.parametrize("name,text", _corrupt_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_chunked_parallel_scan_equals_the_serial_scan(name, text, monkeypatch):
    buf = np.frombuffer(text, dtype=np.uint8)
    start = int(mm_syntax.body_start(buf))
    args = (buf, start, "coordinate", "real", 300, 200, False, 3000)
    serial = mm_syntax.scan_entries(*args)
    monkeypatch.setattr(mm_syntax, "PARALLEL_FROM_BYTES", 1)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 3)  # 12 chunks
    assert mm_syntax.scan_entries(*args) == serial
    assert (serial[0] == mm_syntax.OK) == (name == "good")


# ----------------------------------------------------------------- the other formats' fixes
def _npz(**arrays):
    b = io.BytesIO()
    np.savez(b, **arrays)
    return b.getvalue()


@pytest.mark.parametrize("dtype,values,want", [(np.int8, [100, 100], 200.0), (np.uint8, [200, 100], 300.0),
                                               (bool, [True, True], 2.0), (np.float32, [0.1, 0.2], None)])
def test_coo_duplicates_are_summed_in_float64(dtype, values, want):
    # int8 100 + 100 once wrapped to -56 (summed in the file's type)
    b = io.BytesIO()
    sp.save_npz(b, sp.coo_array((np.array(values, dtype=dtype), ([0, 0], [0, 0])), shape=(1, 1)))
    got = load(b.getvalue()).toarray()[0, 0]
    assert got == (want if want is not None else float(np.float32(0.1)) + float(np.float32(0.2)))


@pytest.mark.parametrize("call,words", [
    (lambda: load(b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n", fmt=["mtx"]),
     "fmt must be a string"),
    (lambda: load(b"x", tensor=["a"]), "tensor must be a string"),
    (lambda: load(None), "got None"),
    (lambda: load(b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n", fmt="npy"),
     "fmt='npy' was given, but the given data is a Matrix Market file"),
    (lambda: load(_npz(format=np.array("dia"), shape=np.array([3, 3]), data=np.ones((2, 3)),
                       offsets=np.array([0, 0]))), "same diagonal offset twice"),
    (lambda: load(_npz(format=np.array(["csr", "csc"]), shape=np.array([3, 3]), data=np.ones(1),
                       indices=np.array([0]), indptr=np.array([0, 1, 1, 1]))), "'format' entry should be one"),
    (lambda: load(_npz(format=np.array("coo"), shape=np.array([3, 3]), data=np.ones(1),
                       row=np.array([2**64 - 1], np.uint64), col=np.array([0], np.uint64))),
     "holds the index 18446744073709551615"),
    (lambda: load(_npz(format=np.array("csr"), data=np.ones(1), indices=np.array([0]), indptr=np.array([0, 1])))
     , "lacks its 'shape' entry"),
    (lambda: load(_npz(W=np.eye(2)), tensor="V"), "no array named 'V'"),
])
def test_arguments_and_damaged_npz_files_get_readable_messages(call, words):
    with pytest.raises(InputError, match=re.escape(words)):
        call()


def test_npy_version_3_is_read_and_a_code_header_is_refused_plainly():
    import struct

    hdr = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }"
    hdr += b" " * (63 - (12 + len(hdr)) % 64) + b"\n"
    v3 = b"\x93NUMPY\x03\x00" + struct.pack("<I", len(hdr)) + hdr + np.array([1.5, 2.5]).tobytes()
    assert load(v3).toarray().tolist() == [[1.5, 2.5]]
    evil = b"{'descr': __import__('os').getcwd(), 'shape': (1,)}".ljust(53) + b"\n"
    with pytest.raises(InputError, match="not a plain dictionary of literal values") as err:
        load(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(evil)) + evil)
    assert "0x" not in str(err.value) and "ast" not in str(err.value)


@pytest.mark.parametrize("make", [
    lambda: _npz(format=np.array("csr"), shape=np.array([2, 2]), data=np.ones(1), indices=np.array([0]),
                 indptr=np.array([0, 1, 1])),
    lambda: (lambda b: (np.save(b, np.eye(2)), b.getvalue())[1])(io.BytesIO()),
])
def test_tensor_is_refused_where_there_is_one_matrix(make):
    with pytest.raises(InputError, match="tensor='W' was given"):
        load(make(), tensor="W")


def test_a_tensor_inside_a_safetensors_file_inside_a_tar_archive():
    import tarfile

    from safetensors.numpy import save

    st = save({"a": np.ones((2, 2), np.float32), "b": np.eye(2, dtype=np.float32)})
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w:gz") as tf:
        info = tarfile.TarInfo("model.safetensors")
        info.size = len(st)
        tf.addfile(info, io.BytesIO(st))
    tgz = b.getvalue()
    assert load(tgz, tensor="b", name="model.tar.gz").toarray().tolist() == [[1, 0], [0, 1]]
    with pytest.raises(InputError, match="choose one with tensor="):
        load(tgz, name="model.tar.gz")
    with pytest.raises(InputError, match="no tensor named 'zz'"):
        load(tgz, tensor="zz", name="model.tar.gz")


def test_a_dense_npz_whose_arrays_have_sparse_names_loads_by_name():
    # "data" + "indices" look like a damaged sparse .npz; tensor= says it is a dense array
    blob = _npz(data=np.eye(3), indices=np.arange(3))
    assert load(blob, tensor="data").toarray().tolist() == np.eye(3).tolist()
    with pytest.raises(InputError, match="looks like a scipy sparse .npz"):
        load(blob)
