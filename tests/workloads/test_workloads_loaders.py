"""Tests of akfviz.load: round trips for every format and every error path."""
import io
import json
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from safetensors.numpy import save as st_save

import akfviz
from akfviz.errors import InputError, ResourceLimitError
from akfviz.workloads import LoadLimits, list_tensors, load, read_tensor
from akfviz.workloads import loaders as loaders_mod

RECT = np.array([[1.5, 0, 0, 2.0, 0], [0, 0, -3.0, 0, 0], [0, 4.0, 0, 0, 0.5]])


def _eq(A, D):
    assert isinstance(A, sp.csr_array) and A.dtype == np.float64 and A.has_canonical_format
    np.testing.assert_array_equal(A.toarray(), np.asarray(D, dtype=float))


def _npz_bytes(M):
    buf = io.BytesIO()
    sp.save_npz(buf, M)
    return buf.getvalue()


def _npy_bytes(arr, **kw):
    buf = io.BytesIO()
    np.save(buf, arr, **kw)
    return buf.getvalue()


def _st_bytes(tensors, header_extra=None):
    """Hand-built safetensors file: tensors = {name: (dtype, shape, raw bytes)}."""
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if header_extra:
        header.update(header_extra)
    hdr = json.dumps(header).encode()
    hdr += b" " * (-len(hdr) % 8)
    return struct.pack("<Q", len(hdr)) + hdr + b"".join(blobs)


# --------------------------------------------------------------------------- Matrix Market
MTX_CASES = {
    # (layout, field, symmetry): (text body after banner, expected dense)
    ("coordinate", "real", "general"): ("3 5 5\n1 1 1.5\n1 4 2\n2 3 -3\n3 2 4\n3 5 0.5\n", RECT),
    ("coordinate", "integer", "general"): ("2 3 2\n1 3 7\n2 1 -2\n", [[0, 0, 7], [-2, 0, 0]]),
    ("coordinate", "pattern", "general"): ("2 3 2\n1 3\n2 1\n", [[0, 0, 1], [1, 0, 0]]),
    ("coordinate", "real", "symmetric"): ("3 3 3\n1 1 2.5\n3 1 -1\n2 2 4\n",
                                          [[2.5, 0, -1], [0, 4, 0], [-1, 0, 0]]),
    ("coordinate", "integer", "symmetric"): ("2 2 2\n2 1 3\n2 2 1\n", [[0, 3], [3, 1]]),
    ("coordinate", "pattern", "symmetric"): ("3 3 2\n1 1\n3 2\n", [[1, 0, 0], [0, 0, 1], [0, 1, 0]]),
    ("coordinate", "real", "skew-symmetric"): ("3 3 1\n3 1 5\n", [[0, 0, -5], [0, 0, 0], [5, 0, 0]]),
    ("array", "real", "general"): ("2 3\n1\n2\n0\n4\n5.5\n0\n", [[1, 0, 5.5], [2, 4, 0]]),
    ("array", "integer", "general"): ("3 2\n1\n0\n3\n4\n5\n6\n", [[1, 4], [0, 5], [3, 6]]),
    ("array", "real", "symmetric"): ("2 2\n1\n2\n3\n", [[1, 2], [2, 3]]),
    ("array", "integer", "symmetric"): ("3 3\n1\n2\n3\n4\n5\n6\n", [[1, 2, 3], [2, 4, 5], [3, 5, 6]]),
}


def _mtx(layout, field, symmetry, body):
    return f"%%MatrixMarket matrix {layout} {field} {symmetry}\n% a comment\n{body}".encode()


@pytest.mark.parametrize("case", sorted(MTX_CASES))
def test_mtx_variants(case):
    body, expected = MTX_CASES[case]
    _eq(load(_mtx(*case, body)), expected)


def test_mtx_roundtrip_scipy_writer(tmp_path):
    A = akfviz.generate("uniform", n=40, m=70, density=0.1, seed=1)
    p = tmp_path / "a.mtx"
    scipy.io.mmwrite(p, A)
    _eq(load(p), A.toarray())
    _eq(load(str(p)), A.toarray())
    scipy.io.mmwrite(tmp_path / "d.mtx", A.toarray())  # dense "array" layout
    _eq(load(tmp_path / "d.mtx"), A.toarray())


@pytest.mark.parametrize("header,body", [
    ("coordinate complex general", "2 2 1\n1 1 1 2\n"),
    ("coordinate complex hermitian", "2 2 1\n1 1 1 0\n"),
])
def test_mtx_complex_rejected(header, body):
    with pytest.raises(InputError, match="real"):
        load(f"%%MatrixMarket matrix {header}\n{body}".encode())


@pytest.mark.parametrize("body,what", [
    ("3 3 2\n1 1 1\n4 1 2\n", "row index 4 is outside 1..3"),       # row index too large
    ("3 3 2\n1 1 1\n0 1 2\n", "start at 1"),   # 0 is out of range (1-based): say so
    ("3 3 2\n1 1 1\n1 7 2\n", "column index 7 is outside 1..3"),
    ("3 3 3\n1 1 1\n2 2 2\n", "truncated: its size line declares 3 entries but it has 2"),
    ("3 3 1\n1 x 1\n", "'x' is not a row or column index"),      # garbage
    ("3 3 1\n1 1 1\n2 2 2\n", "more entries than the 1 its size line declares"),
    ("3 3 2\n1 1 1 2 2 2\n", "'2' is one item too many"),   # two entries on one line
    ("3 3 1\n1 1\n", "too few numbers on one line"),
])
def test_mtx_bad_bodies(body, what):
    with pytest.raises(InputError, match=what):
        load(_mtx("coordinate", "real", "general", body))


@pytest.mark.parametrize("entry,token,words", [
    ("1 1 0x10", "0x10", "not a number"),       # scipy's reader alone reads this as 0 and drops the entry
    ("1 1 1.5kg", "1.5kg", "not a number"),     # ... and this as 1.5
    ("1 1 1.0 extra", "extra", "one item too many"),
    ("1 1 2.0 5.0", "5.0", "one item too many"),  # ... scipy ignores the second value
    ("1 1 1,5", "1,5", "not a number"),
    ("1 1 \u22122.0", "\u22122.0", "not a number"),  # a Unicode minus sign
    ("1 1 1.5.3", "1.5.3", "not a number"),     # scipy: 1.5
    ("1 1 2-3", "2-3", "not a number"),         # scipy: 2
    ("1 1 1e5e5", "1e5e5", "not a number"),     # scipy: 1e5
    ("1 1 1.5e", "1.5e", "not a number"),       # scipy: 1.5
    ("2 1.9 3.0", "1.9", "not a row or column index"),  # scipy: (2, 1) = 0.9
    ("1 1 .", ".", "not a number"),
])
def test_mtx_entries_that_are_not_numbers_are_refused_with_their_line(entry, token, words, tmp_path):
    text = ("%%MatrixMarket matrix coordinate real general\n% made by hand\n\n3 3 2\n"
            f"2 2 4\n{entry}\n").encode()
    p = tmp_path / "m.mtx"
    p.write_bytes(text)
    for src in (text, p):
        with pytest.raises(InputError, match="line 6") as err:
            load(src)
        assert repr(token) in str(err.value) and words in str(err.value)


def test_mtx_comment_among_entries_is_named(tmp_path):
    text = b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n% note\n2 2 2\n"
    with pytest.raises(InputError, match="line 4, is a comment"):
        load(text)


def test_mtx_entry_check_finds_late_lines_and_long_headers(tmp_path):
    """The check streams a file in 4 MB chunks: an offender far into the file, and a header
    of comments longer than one chunk, are still found with the right line number."""
    comments = b"".join(b"%" + b"c" * 999 + b"\n" for _ in range(5000))  # 5 MB of header
    rows = b"".join(b"%d %d %d.25\n" % (k % 50 + 1, k % 40 + 1, k) for k in range(300_000))
    head = b"%%MatrixMarket matrix coordinate real general\n" + comments + b"50 40 300001\n"
    p = tmp_path / "m.mtx"
    p.write_bytes(head + rows + b"7 7 2.5e-3\n")
    assert load(p).nnz == 200  # all good: lcm(50, 40) distinct positions, duplicates summed
    p.write_bytes(head + rows + b"7 7 2.5d-3\n")
    with pytest.raises(InputError, match=f"line {5000 + 2 + 300_000 + 1} "):
        load(p)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_mtx_non_finite(value):
    with pytest.raises(InputError, match="NaN or infinite"):
        load(_mtx("coordinate", "real", "general", f"2 2 1\n1 1 {value}\n"))


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf%%MatrixMarket", b"%%MATRIXMARKET",
                                    b"%%matrixmarket", b"\xef\xbb\xbf  %%matrixMarket"])
def test_mtx_byte_order_mark_and_banner_spelling_are_accepted(prefix, tmp_path):
    body = prefix + b" MATRIX coordinate Real Symmetric\n3 3 2\n2 1 5\n3 3 1\n"
    want = np.array([[0, 5, 0], [5, 0, 0], [0, 0, 1.0]])
    p = tmp_path / "m.mtx"
    p.write_bytes(body)
    for src in (body, p):
        assert (load(src).toarray() == want).all()


def test_mtx_corrupt_header():
    with pytest.raises(InputError):
        load(b"%%MatrixMarket matrix sideways real general\n2 2 1\n1 1 1\n")
    with pytest.raises(InputError):
        load(b"%%MatrixMarket matrix coordinate real general\nnot a size line\n")


def test_mtx_huge_header_rejected_before_allocation(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("mmread must not be called")

    monkeypatch.setattr(loaders_mod.scipy.io, "mmread", boom)
    text = b"%%MatrixMarket matrix coordinate real general\n1000000000 1000000000 1000000000000\n1 1 1\n"
    tracemalloc.start()
    with pytest.raises(ResourceLimitError):
        load(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10_000_000
    with pytest.raises(ResourceLimitError):  # dense array layout: rows × cols is what counts
        load(b"%%MatrixMarket matrix array real general\n100000 100000\n1\n")
    with pytest.raises(ResourceLimitError):  # custom limits
        load(_mtx("coordinate", "real", "general", "3 3 3\n1 1 1\n2 2 2\n3 3 3\n"),
             limits=LoadLimits(max_nnz=2))
    with pytest.raises(ResourceLimitError):
        load(_mtx("coordinate", "real", "general", "3 3 1\n1 1 1\n"), limits=LoadLimits(max_rows=2))


# --------------------------------------------------------------------------- .npz
def test_npz_index_arrays_are_weighed_against_the_limit_before_they_are_read():
    # data within the limit, an 'indices' array declared beyond it: a size refusal naming that
    # array, before anything is read (not a "corrupt" message after reading it)
    buf = io.BytesIO()
    np.savez(buf, format=np.array("csr"), shape=np.array([4, 4]), data=np.ones(3),
             indices=np.zeros(50, np.int32), indptr=np.array([0, 1, 2, 3, 3], np.int32))
    with pytest.raises(ResourceLimitError, match="index array 'indices'"):
        load(buf.getvalue(), fmt="npz", limits=LoadLimits(max_nnz=10))
    with pytest.raises(InputError, match="corrupt"):            # within the limit: the length check
        load(buf.getvalue(), fmt="npz", limits=LoadLimits(max_nnz=100))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dia", "bsr"])
def test_npz_sparse_formats(fmt):
    M = sp.csr_array(RECT).asformat(fmt) if fmt != "bsr" else sp.bsr_array(np.vstack([RECT, RECT[:1]]), blocksize=(2, 5))
    expected = M.toarray()
    _eq(load(_npz_bytes(M)), expected)


def test_npz_coo_matrix_and_int32_and_int64_indices(tmp_path):
    A = akfviz.generate("uniform", n=30, m=12, density=0.2, seed=0)
    for dtype in (np.int32, np.int64):
        M = sp.csr_array((A.data, A.indices.astype(dtype), A.indptr.astype(dtype)), shape=A.shape)
        p = tmp_path / f"a{np.dtype(dtype).itemsize}.npz"
        sp.save_npz(p, M, compressed=False)
        _eq(load(p), A.toarray())
    sp.save_npz(tmp_path / "m.npz", sp.coo_matrix(A))  # the older spmatrix type
    _eq(load(tmp_path / "m.npz"), A.toarray())


def test_npz_dense_arrays():
    buf = io.BytesIO()
    np.savez(buf, RECT)
    _eq(load(buf.getvalue()), RECT)
    buf = io.BytesIO()
    np.savez(buf, w=RECT, b=np.ones(3))  # one 2-D array among others: it is used
    _eq(load(buf.getvalue()), RECT)
    buf = io.BytesIO()
    np.savez(buf, w=RECT, v=RECT.T)
    with pytest.raises(InputError, match="tensor="):
        load(buf.getvalue())
    _eq(load(buf.getvalue(), tensor="v"), RECT.T)
    with pytest.raises(InputError, match="no array named"):
        load(buf.getvalue(), tensor="zzz")


def _zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, arr in members.items():
            zf.writestr(name + ".npy", _npy_bytes(arr))
    return buf.getvalue()


def _csr_members(data, indices, indptr, shape):
    return {"format": np.array(b"csr"), "shape": np.array(shape), "data": np.asarray(data, float),
            "indices": np.asarray(indices), "indptr": np.asarray(indptr)}


def test_npz_handmade_matches_scipy():
    _eq(load(_zip(_csr_members([1.0, 2.0], [0, 2], [0, 1, 2], (2, 3)))), [[1, 0, 0], [0, 0, 2]])


@pytest.mark.parametrize("members,match", [
    (_csr_members([1.0, 2.0], [0, 3], [0, 1, 2], (2, 3)), "outside"),         # column index 3 of 3
    (_csr_members([1.0, 2.0], [0, -1], [0, 1, 2], (2, 3)), "outside"),
    (_csr_members([1.0, 2.0], [0, 1], [0, 2, 1], (2, 3)), "indptr"),          # falling pointer
    (_csr_members([1.0, 2.0], [0, 1], [0, 1], (2, 3)), "indptr"),             # wrong length
    (_csr_members([1.0, np.nan], [0, 1], [0, 1, 2], (2, 3)), "NaN"),
    (_csr_members([1.0, np.inf], [0, 1], [0, 1, 2], (2, 3)), "NaN"),
    (dict(_csr_members([1.0], [0], [0, 1], (1, 3)), format=np.array(b"xyz")), "format"),
    ({"format": np.array(b"coo"), "shape": np.array((2, 2)), "data": np.ones(2),
      "row": np.array([0, 2]), "col": np.array([0, 1])}, "outside"),
    ({"format": np.array(b"csr"), "shape": np.array((2, 2, 2)), "data": np.ones(1),
      "indices": np.array([0]), "indptr": np.array([0, 1, 1])}, "2-D"),
    ({"format": np.array(b"csr"), "shape": np.array((2, 2)), "data": np.ones(1)}, "without"),
])
def test_npz_invalid_contents(members, match):
    with pytest.raises(InputError, match=match):
        load(_zip(members))


def test_npz_huge_declared_size_rejected_before_loading(monkeypatch):
    members = _csr_members([1.0], [0], [0, 1, 1], (2, 3))
    members["shape"] = np.array((10**9, 10**9))
    with pytest.raises(ResourceLimitError):
        load(_zip(members))
    # a data array whose header declares 10^12 values: only the header is read
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("format.npy", _npy_bytes(np.array(b"csr")))
        zf.writestr("shape.npy", _npy_bytes(np.array((1000, 1000))))
        hdr = io.BytesIO()
        np.lib.format.write_array_header_1_0(hdr, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
        zf.writestr("data.npy", hdr.getvalue() + b"\0" * 64)
        zf.writestr("indices.npy", _npy_bytes(np.zeros(1, np.int32)))
        zf.writestr("indptr.npy", _npy_bytes(np.zeros(1001, np.int32)))
    calls = []
    real_load = np.load
    monkeypatch.setattr(loaders_mod.np, "load", lambda *a, **k: calls.append(1) or real_load(*a, **k))
    with pytest.raises(ResourceLimitError):
        load(buf.getvalue())
    assert len(calls) == 2  # only the tiny format and shape members were loaded


def test_npz_object_arrays_never_unpickled():
    buf = io.BytesIO()
    np.savez(buf, w=np.array([[object(), 1]], dtype=object))
    with pytest.raises(InputError, match="pickle"):
        load(buf.getvalue())


def test_npz_truncated_and_corrupt():
    data = _npz_bytes(sp.csr_array(akfviz.generate("uniform", n=50, density=0.2, seed=0)))
    for cut in (10, len(data) // 2, len(data) - 5):
        with pytest.raises(InputError):
            load(data[:cut])
    bad = bytearray(data)
    mid = len(bad) // 3
    bad[mid:mid + 40] = b"\xff" * 40  # corrupt the compressed stream / CRC
    with pytest.raises(InputError):
        load(bytes(bad))
    with pytest.raises(InputError, match="no .npy"):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("readme.txt", "hello")
        load(buf.getvalue())


# --------------------------------------------------------------------------- .npy
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint16, bool])
def test_npy_dtypes(dtype):
    arr = (RECT != 0) if dtype is bool else RECT.astype(dtype)
    _eq(load(_npy_bytes(arr)), arr.astype(float))


def test_npy_fortran_order_and_path(tmp_path):
    p = tmp_path / "f.npy"
    np.save(p, np.asfortranarray(RECT))
    _eq(load(p), RECT)


@pytest.mark.parametrize("arr,match", [
    (np.ones(5), "2-D"),
    (np.ones((2, 2, 2)), "2-D"),
    (np.ones((0, 3)), "at least one"),
    (np.array([[1.0, np.nan]]), "NaN"),
    (np.array([[1.0, -np.inf]]), "NaN"),
    (np.ones((2, 2), dtype=complex), "complex"),
    (np.array([["a", "b"]]), "not a number"),
    (np.zeros((2, 2), dtype=[("a", "f8"), ("b", "i4")]), "structured"),
])
def test_npy_rejections(arr, match):
    with pytest.raises(InputError, match=match):
        load(_npy_bytes(arr))


def test_npy_object_dtype_never_unpickled():
    data = _npy_bytes(np.array([[1, None]], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="pickle"):
        load(data)


def test_npy_truncated_and_corrupt():
    data = _npy_bytes(RECT)
    for cut in (8, 40, len(data) - 1):
        with pytest.raises(InputError):
            load(data[:cut])
    with pytest.raises(InputError):
        load(b"\x93NUMPY\x01\x00\x10\x00{garbage: 1}   \n" + b"\0" * 32)


def test_npy_huge_header_rejected_before_allocation(monkeypatch):
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f8", "fortran_order": False,
                                               "shape": (10**6, 10**6)})
    monkeypatch.setattr(loaders_mod.np, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    with pytest.raises(ResourceLimitError):
        load(hdr.getvalue() + b"\0" * 16)
    with pytest.raises(ResourceLimitError):
        load(_npy_bytes(np.ones((10, 10))), limits=LoadLimits(max_dense_elements=99))


# --------------------------------------------------------------------------- .safetensors
def test_safetensors_roundtrip_and_listing(tmp_path):
    data = st_save({"w": RECT.astype(np.float32), "bias": np.ones(3, np.float32)})
    _eq(load(data), RECT.astype(np.float32))
    p = tmp_path / "model.safetensors"
    p.write_bytes(data)
    _eq(load(p), RECT.astype(np.float32))
    df = list_tensors(p)
    assert list(df.columns) == ["name", "shape", "dtype"]
    assert set(df.name) == {"w", "bias"}
    assert df.set_index("name").loc["w", "shape"] == (3, 5)
    assert df.set_index("name").loc["w", "dtype"] == "F32"
    np.testing.assert_array_equal(read_tensor(data), RECT.astype(np.float32).astype(float))


@pytest.mark.parametrize("dtype,np_dtype", [("F64", "<f8"), ("F32", "<f4"), ("F16", "<f2"),
                                            ("I64", "<i8"), ("I32", "<i4"), ("I8", "i1"), ("U8", "u1")])
def test_safetensors_dtypes(dtype, np_dtype):
    arr = np.abs(RECT).astype(np_dtype) if dtype.startswith("U") else RECT.astype(np_dtype)
    _eq(load(_st_bytes({"t": (dtype, arr.shape, arr.tobytes())})), arr.astype(float))


def test_safetensors_bf16():
    vals = np.array([[1.0, -2.5, 0.0], [3.140625, 0.0, -1e-3]], dtype=np.float32)
    bf16 = (vals.view(np.uint32) >> 16).astype(np.uint16)  # truncation to bfloat16
    expected = (bf16.astype(np.uint32) << 16).view(np.float32)
    A = load(_st_bytes({"t": ("BF16", vals.shape, bf16.tobytes())}))
    _eq(A, expected)
    assert abs(A[1, 0] - 3.140625) == 0  # exactly representable


@pytest.mark.parametrize("dtype,reference", [("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"),
                                              ("F8_E8M0", "float8_e8m0fnu")])
def test_safetensors_one_byte_floats_decode_as_ml_dtypes(dtype, reference, tmp_path):
    """FP8 weights (torch's float8_e4m3fn / float8_e5m2, MX scales) load: every byte decodes to the
    value ml_dtypes gives it, bit for bit (signed zeros and subnormals too); NaN and inf bytes are
    refused as non-finite, as for every dtype. From bytes and from a path (which tries safetensors'
    own reader first)."""
    import ml_dtypes  # a test dependency (requirements-dev.txt): a missing one must fail, not skip

    from akfviz.workloads.loaders import _F8_TABLES

    every = np.arange(256, dtype=np.uint8)
    ref = every.view(getattr(ml_dtypes, reference)).astype(np.float32)
    table = _F8_TABLES[dtype]
    assert np.array_equal(np.isnan(table), np.isnan(ref))
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(table[finite].view(np.uint32), ref[finite].view(np.uint32))
    raw = every[finite]
    raw = raw[: raw.size // 8 * 8].reshape(8, -1)
    data = _st_bytes({"w": (dtype, raw.shape, raw.tobytes()), "b": ("F32", (3,), np.ones(3, "<f4").tobytes())})
    expected = raw.view(getattr(ml_dtypes, reference)).astype(np.float64)
    _eq(load(data), expected)
    path = tmp_path / "fp8.safetensors"
    path.write_bytes(data)
    _eq(load(path), expected)
    np.testing.assert_array_equal(read_tensor(path), expected)
    bad = raw.copy()
    bad[3, 1] = np.flatnonzero(~finite)[0]
    with pytest.raises(InputError, match="NaN or infinite"):
        load(_st_bytes({"w": (dtype, bad.shape, bad.tobytes())}))


def test_safetensors_unknown_dtype_names_the_accepted_ones():
    raw = np.zeros((2, 2), np.uint8).tobytes()
    with pytest.raises(InputError, match=r"has dtype F4; accepted: .*F8_E4M3"):
        load(_st_bytes({"w": ("F4", (2, 2), raw)}))


def test_safetensors_tensor_choice():
    data = st_save({"a": RECT.astype(np.float32), "b": RECT.T.copy().astype(np.float32),
                    "c": np.ones(4, np.float32)})
    with pytest.raises(InputError, match="a, b"):
        load(data)
    _eq(load(data, tensor="b"), RECT.T.astype(np.float32))
    with pytest.raises(InputError, match="no tensor named"):
        load(data, tensor="zz")
    with pytest.raises(InputError, match="not 2-D"):
        load(data, tensor="c")
    with pytest.raises(InputError, match=r"no 2-D tensor.*c \[4\]"):
        load(st_save({"c": np.ones(4, np.float32)}))


def test_safetensors_from_sample_model_style_names():
    W = np.random.default_rng(0).standard_normal((12, 8)).astype(np.float32)
    data = st_save({"encoder.layer.0.intermediate.dense.weight": W,
                    "encoder.layer.0.intermediate.dense.bias": np.zeros(12, np.float32)})
    A = load(data, tensor="encoder.layer.0.intermediate.dense.weight")
    np.testing.assert_array_equal(A.toarray(), W.astype(float))


def test_safetensors_rejections():
    good = st_save({"w": RECT.astype(np.float32)})
    cases = [
        (good[:4], "too short"),
        (good[:20], "truncated"),              # header cut
        (good[:-8], "truncated"),              # data cut
        (struct.pack("<Q", 10) + b"{not json}", "JSON"),
        (struct.pack("<Q", 2) + b"[]", "JSON object"),
        (_st_bytes({"w": ("F32", [3, 5], b"\0" * 10)}), "should take"),
        (_st_bytes({"w": ("C64", [1, 1], b"\0" * 8)}), "dtype"),
        (_st_bytes({"w": ("F32", [2, -1], b"")}), "shape"),
        (_st_bytes({"w": ("F32", [1, 1], np.array([np.nan], "<f4").tobytes())}), "NaN"),
        (_st_bytes({"w": ("F32", [1, 1], np.array([np.inf], "<f4").tobytes())}), "NaN"),
        (_st_bytes({"w": ("F32", [0, 3], b"")}), "at least one"),
        (_st_bytes({}, {"w": {"dtype": "F32", "shape": [1, 1]}}), "incomplete"),
        (_st_bytes({}, {"w": {"dtype": "F32", "shape": [1, 1], "data_offsets": [4, 0]}}), "offsets"),
        (_st_bytes({"bias": ("F32", [4], b"\0" * 16)}), r"no 2-D tensor.*bias \[4\]"),
    ]
    for data, match in cases:
        with pytest.raises(InputError, match=match):
            load(data, fmt="safetensors")


@pytest.mark.parametrize("entry, match", [
    ({"dtype": "F32", "shape": [2, True], "data_offsets": [0, 8]}, "invalid shape"),   # JSON true is no size
    ({"dtype": "F32", "shape": [2, 2.0], "data_offsets": [0, 16]}, "invalid shape"),
    ({"dtype": "F32", "shape": [2, "2"], "data_offsets": [0, 16]}, "invalid shape"),
    ({"dtype": "F32", "shape": {"r": 2}, "data_offsets": [0, 16]}, "invalid shape"),
    ({"dtype": "F32", "shape": [2, 2], "data_offsets": [False, 16]}, "invalid data offsets"),
    ({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16.0]}, "invalid data offsets"),
    ({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8, 16]}, "invalid data offsets"),
    ({"dtype": "F32", "shape": [2, 2], "data_offsets": [-4, 12]}, "invalid data offsets"),
    ({"dtype": "F32", "shape": [2, 2], "data_offsets": "0-16"}, "invalid data offsets"),
    ([2, 2], "incomplete header entry"),
])
def test_safetensors_header_entries_of_the_wrong_json_type_are_refused(entry, match):
    data = _st_bytes({}, {"w": entry}) + b"\0" * 16
    with pytest.raises(InputError, match=match):
        load(data, fmt="safetensors")


def test_safetensors_header_parse_restores_the_garbage_collector():
    """The header is decoded with Python's cyclic collector paused (loaders._no_gc); it must be
    back on afterwards, on success and on refusal, and stay off if the caller had turned it off."""
    import gc
    good = st_save({"w": RECT.astype(np.float32)})
    bad = struct.pack("<Q", 10) + b"{not json}"
    was_on = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            assert load(good, fmt="safetensors").shape == RECT.shape
            assert gc.isenabled() is state
            with pytest.raises(InputError, match="JSON"):
                load(bad, fmt="safetensors")
            assert gc.isenabled() is state
    finally:
        (gc.enable if was_on else gc.disable)()


def test_safetensors_huge_declared_tensor_is_a_resource_error():
    hdr = json.dumps({"w": {"dtype": "F32", "shape": [10**6, 10**6],
                            "data_offsets": [0, 4 * 10**12]}}).encode()
    data = struct.pack("<Q", len(hdr)) + hdr + b"\0" * 16
    with pytest.raises(ResourceLimitError):
        load(data)
    with pytest.raises(InputError, match="truncated"):
        list_tensors(data)


# --------------------------------------------------------------------------- sources and formats
class _Upload:
    """Like Streamlit's UploadedFile: .read() and .name."""

    def __init__(self, data, name):
        self._data, self.name = data, name

    def read(self):
        return self._data


def test_bytes_filelike_and_upload_inputs():
    data = _npz_bytes(sp.csr_array(RECT))
    _eq(load(io.BytesIO(data)), RECT)
    _eq(load(_Upload(data, "weights.npz")), RECT)
    _eq(load(bytearray(data)), RECT)
    f = io.BytesIO(data)
    f.read(10)  # a half-read stream is rewound
    _eq(load(f), RECT)


def test_format_explicit_and_by_name():
    mtx = _mtx("coordinate", "real", "general", MTX_CASES[("coordinate", "real", "general")][0])
    _eq(load(mtx, fmt="mtx"), RECT)
    _eq(load(mtx, fmt=".MTX"), RECT)
    _eq(load(mtx, name="x.mtx"), RECT)
    with pytest.raises(InputError, match="Unknown format"):
        load(mtx, fmt="csv")
    with pytest.raises(InputError):
        load(mtx, fmt="npy")  # wrong explicit format is a readable error, not a crash
    with pytest.raises(InputError, match="Could not tell the format"):
        load(b"just some text", name="notes.txt")
    with pytest.raises(InputError, match="Could not tell the format"):
        load(b"\x00\x01\x02garbage")


def test_empty_inputs(tmp_path):
    with pytest.raises(InputError, match="empty"):
        load(b"")
    p = tmp_path / "empty.mtx"
    p.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        load(p)
    with pytest.raises(InputError, match="empty"):
        load(_Upload(b"", "x.npz"))


def test_missing_path_and_wrong_type(tmp_path):
    with pytest.raises(InputError, match="No file"):
        load(tmp_path / "nope.mtx")
    with pytest.raises(InputError, match="not a regular file"):
        load(tmp_path)
    with pytest.raises(InputError):
        load(12345)
    with pytest.raises(InputError):
        load(b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n", limits=5)


def test_rectangular_everywhere(tmp_path):
    for shape in [(3, 7), (7, 3), (1, 9), (9, 1)]:
        A = akfviz.generate("uniform", n=shape[0], m=shape[1], density=0.5, seed=2)
        D = A.toarray()
        scipy.io.mmwrite(tmp_path / "r.mtx", A)
        _eq(load(tmp_path / "r.mtx"), D)
        _eq(load(_npz_bytes(A)), D)
        _eq(load(_npy_bytes(D)), D)
        _eq(load(st_save({"w": D})), D)


def test_top_level_load_is_the_same_function():
    assert akfviz.load is load


# --------------------------------------------------------------------------- held-out report (ninth session)
_MTX_TEXT = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 3.5\n"


def test_a_string_of_content_or_an_unusable_path_is_explained():
    # Path.exists() raised OSError "File name too long" (or ValueError for a NUL byte)
    for func in (load, list_tensors):
        with pytest.raises(InputError, match=r"looks like the content of a file.*text\.encode\(\)"):
            func(_MTX_TEXT + "%" * 300 + "\n")
        with pytest.raises(InputError, match="looks like the content"):
            func(_MTX_TEXT)  # short enough to be checked as a path: it was "No file at ..."
        with pytest.raises(InputError, match="not a usable path .*255 characters"):
            func("/tmp/" + "y" * 300 + ".mtx")
        with pytest.raises(InputError):
            func("bad\0name.mtx")


def test_a_file_object_that_cannot_be_read_is_explained(tmp_path):
    p = tmp_path / "w.npy"
    np.save(p, np.eye(3))
    with open(p) as text_mode, pytest.raises(InputError, match=r"binary mode: open\(path, 'rb'\)"):
        load(text_mode)

    class Broken:
        def read(self, n=-1):
            raise OSError("disk on fire")

    with pytest.raises(InputError, match=r"Could not read from the file object \(OSError: disk on fire\)"):
        load(Broken())
    closed = open(p, "rb")
    closed.close()
    with pytest.raises(InputError, match="Could not read from the file object"):
        load(closed)


def _st_raw(header, data):
    hdr = json.dumps(header).encode()
    return struct.pack("<Q", len(hdr)) + hdr + data


_W12 = np.arange(12, dtype="<f8").reshape(3, 4)


@pytest.mark.parametrize("header,data,words", [
    ({"a": {"dtype": "F64", "shape": [3, 4], "data_offsets": [0, 96]},
      "b": {"dtype": "F64", "shape": [2, 4], "data_offsets": [32, 96]}}, _W12.tobytes(),
     "tensor 'b' .*overlaps tensor 'a'"),
    ({"w": {"dtype": "F64", "shape": [3, 4], "data_offsets": [8, 104]}}, b"\0" * 8 + _W12.tobytes(),
     "8 bytes .* at the start belong to no tensor"),
    ({"a": {"dtype": "F64", "shape": [1, 4], "data_offsets": [0, 32]},
      "b": {"dtype": "F64", "shape": [2, 4], "data_offsets": [40, 104]}}, b"\0" * 8 + _W12.tobytes(),
     "8 bytes .* after tensor 'a' .*belong to no tensor"),
    ({"w": {"dtype": "F64", "shape": [3, 4], "data_offsets": [0, 96]}}, _W12.tobytes() + b"JUNKJUNK",
     "8 bytes at the end belong to no tensor"),
], ids=["overlap", "gap-at-start", "gap-between", "trailing-bytes"])
def test_safetensors_whose_tensors_do_not_tile_the_data_are_corrupt(header, data, words, tmp_path):
    # these loaded: b from a's bytes, padding and junk ignored (the safetensors library refuses them)
    raw = _st_raw(header, data)
    p = tmp_path / "bad.safetensors"
    p.write_bytes(raw)
    tensor = "b" if "b" in header else None
    for src in (raw, p):  # a path went to safe_open first, then to the reader that accepted it
        with pytest.raises(InputError, match=f"is corrupt: .*{words}"):
            load(src, tensor=tensor)
        with pytest.raises(InputError, match=words):
            list_tensors(src)
        with pytest.raises(InputError, match=words):
            read_tensor(src, tensor)


def test_safetensors_with_empty_tensors_and_metadata_still_load():
    data = st_save({"w": RECT, "empty": np.zeros((0, 3)), "b": np.ones(2)}, metadata={"k": "v"})
    _eq(load(data, tensor="w"), RECT)
    assert set(list_tensors(data).name) == {"w", "empty", "b"}


def test_list_tensors_names_the_format_of_another_file_and_unpacks_like_load(tmp_path):
    import gzip
    import tarfile

    for data, fmt in [(_MTX_TEXT.encode(), "a Matrix Market file"), (_npy_bytes(RECT), "a .npy file")]:
        for func in (list_tensors, read_tensor):
            with pytest.raises(InputError, match=f"is {fmt}, not a .safetensors file; it holds one "
                                                 f"matrix: load it with akfviz.load"):
                func(data)
    with pytest.raises(InputError, match=r"is a .npz \(zip\) file, not a .safetensors file"):
        list_tensors(_npz_bytes(sp.csr_array(RECT)))
    st = st_save({"w": RECT.astype(np.float32)})
    df = list_tensors(gzip.compress(st), name="w.safetensors.gz")
    assert list(df.name) == ["w"] and df.loc[0, "shape"] == (3, 5)
    np.testing.assert_array_equal(read_tensor(gzip.compress(st)), RECT.astype(np.float32))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("model/model.safetensors")
        info.size = len(st)
        tf.addfile(info, io.BytesIO(st))
    assert list(list_tensors(buf.getvalue(), name="model.tar.gz").name) == ["w"]


def test_symmetric_nnz_limit_message_states_the_declared_count():
    text = b"%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n2 1 1\n"
    with pytest.raises(ResourceLimitError, match="declares 2 entries, up to 4 once the symmetric half is "
                                                 "mirrored, over the limit of 3"):
        load(text, limits=LoadLimits(max_nnz=3))
    assert load(text, limits=LoadLimits(max_nnz=4)).nnz == 3
    with pytest.raises(ResourceLimitError, match="declares 5 stored entries, over the limit of 3"):
        load(b"%%MatrixMarket matrix coordinate real general\n3 3 5\n" + b"1 1 1\n" * 5,
             limits=LoadLimits(max_nnz=3))


@pytest.mark.parametrize("layout,body,expected", [
    ("coordinate general", "1 1 1\n1 1 9223372036854775808\n", [[9223372036854775808.0]]),
    ("array general", "2 1\n-9223372036854775809\n3\n", [[-9223372036854775809.0], [3.0]]),
    ("coordinate symmetric", "2 2 2\n2 1 99999999999999999999\n1 1 -5\n", [[-5, 1e20], [1e20, 0]]),
    # int64's -2**63 fits, but its mirror wrapped around to -2**63
    ("coordinate skew-symmetric", "2 2 1\n2 1 -9223372036854775808\n", [[0, 2.0**63], [-(2.0**63), 0]]),
    ("array skew-symmetric", "2 2\n-9223372036854775808\n", [[0, 2.0**63], [-(2.0**63), 0]]),
], ids=["coordinate", "array", "symmetric", "skew-int64-min", "array-skew-int64-min"])
def test_integers_beyond_int64_are_read_as_float64(layout, body, expected, tmp_path):
    # scipy's reader: "Line 3: Integer out of range."; Matrix Market sets no bound on integers
    text = f"%%MatrixMarket matrix {layout.replace(' ', ' integer ')}\n{body}".encode()
    p = tmp_path / "big.mtx"
    p.write_bytes(text)
    for src in (text, p):
        _eq(load(src), expected)


def test_list_tensors_and_read_tensor_check_their_arguments_and_are_exported():
    with pytest.raises(InputError, match=r"^list_tensors\(\): .*Its parameters are: path_or_bytes, name"):
        list_tensors(b"x", foo=1)
    with pytest.raises(InputError, match=r"^read_tensor\(\): "):
        read_tensor(b"x", "w", 3)
    assert akfviz.list_tensors is list_tensors and "list_tensors" in akfviz.__all__


# --------------------------------------------------------------------------- mutation-probe gaps
def _mtx_bytes(D):
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.coo_matrix(np.asarray(D, float)))
    return buf.getvalue()


def test_row_and_column_limits_are_each_their_own_and_inclusive():
    wide = _mtx_bytes([[1.0, 0, 2.0]])                   # 1 × 3
    with pytest.raises(ResourceLimitError, match="shape 1 × 3, over the limit of 5 rows × 2 columns"):
        load(wide, limits=LoadLimits(max_rows=5, max_cols=2))
    _eq(load(wide, limits=LoadLimits(max_rows=1, max_cols=3)), [[1.0, 0, 2.0]])   # exactly at both limits
    tall = _mtx_bytes([[1.0], [0], [2.0]])               # 3 × 1
    with pytest.raises(ResourceLimitError, match="3 × 1"):
        load(tall, limits=LoadLimits(max_rows=2))
    _eq(load(tall, limits=LoadLimits(max_rows=3, max_cols=1)), [[1.0], [0], [2.0]])


def test_dense_element_limit_is_inclusive():
    data = _npy_bytes(RECT[:2, :3])                      # 6 elements
    _eq(load(data, limits=LoadLimits(max_dense_elements=6)), RECT[:2, :3])
    with pytest.raises(ResourceLimitError, match="6 dense elements"):
        load(data, limits=LoadLimits(max_dense_elements=5))


@pytest.mark.parametrize("offsets", [[0, -3], [0, 3], [-4, 0]])
def test_a_dia_npz_with_an_offset_outside_the_matrix_is_corrupt(offsets):
    # offset −rows or +cols names no diagonal: its values would be dropped without a word
    M = sp.dia_array((np.arange(1.0, 7.0).reshape(2, 3), offsets), shape=(3, 3))
    with pytest.raises(InputError, match="offset lies outside the 3×3"):
        load(_npz_bytes(M))


def test_a_safetensors_span_longer_than_its_tensor_is_corrupt():
    # a 1-element F32 tensor with a 12-byte span beside a good one: the file is corrupt whichever
    # tensor is asked for, and list_tensors says so too
    data = _st_bytes({"bad": ("F32", [1], b"\0" * 12), "w": ("F32", [2, 2], np.ones(4, "<f4").tobytes())})
    for call in (lambda: load(data, tensor="w"), lambda: load(data, tensor="bad"), lambda: list_tensors(data)):
        with pytest.raises(InputError, match="should take 4 bytes but its offsets span 12"):
            call()


def test_content_decides_the_format_before_the_extension():
    _eq(load(_mtx_bytes(RECT), name="m.npz"), RECT)
    _eq(load(_npy_bytes(RECT), name="x.mtx"), RECT)
    _eq(load(_npz_bytes(sp.csr_array(RECT)), name="w.safetensors"), RECT)


def test_an_index_equal_to_the_size_is_refused_in_every_sparse_format():
    from akfviz.workloads.validate import as_csr

    bad = [sp.csr_array((np.ones(1), np.array([3]), np.array([0, 1])), shape=(1, 3)),
           sp.csc_array((np.ones(1), np.array([2]), np.array([0, 1])), shape=(2, 1)),
           sp.coo_array((np.ones(1), (np.array([0]), np.array([2]))), shape=(1, 3)),
           sp.coo_array((np.ones(1), (np.array([1]), np.array([0]))), shape=(2, 1))]
    bad[2].col[:] = 3        # scipy checks COO coordinates only when it builds the matrix
    bad[3].row[:] = 2
    for M in bad:
        with pytest.raises(InputError, match="outside"):
            as_csr(M)
        with pytest.raises(InputError, match="outside"):
            akfviz.analyze(M, tile=8)
