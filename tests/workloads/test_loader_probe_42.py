"""Loader findings of an independent adversarial probe (forty-second session, ≈ 65,000 cases).

Each test is one finding: the nnz limit applied to a CSR row pointer; a COO ``.npz`` with
``coords`` (which scipy's ``load_npz`` reads) refused; int64 duplicates rounded before they were
summed; a slow search for an overflow; and messages that quoted Python or numpy internals, named
the wrong line part, or said something misleading.
"""
import io
import struct
import time

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.workloads.validate import as_csr

MM = b"%%MatrixMarket matrix coordinate real general\n"


def _npz_sparse(A) -> bytes:
    b = io.BytesIO()
    sp.save_npz(b, A)
    return b.getvalue()


def _npz(**arrays) -> bytes:
    b = io.BytesIO()
    np.savez(b, **arrays)
    return b.getvalue()


def _safetensors(header: bytes, data: bytes) -> bytes:
    return struct.pack("<Q", len(header)) + header + data


def _npy(header: bytes, payload: bytes = b"") -> bytes:
    header = header + b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload


# --------------------------------------------------------------------------- limits and formats
@pytest.mark.parametrize("fmt", ["csr", "csc", "bsr"])
def test_nnz_limit_does_not_count_the_row_pointer(fmt):
    # 1000 rows and 10 nonzeros under max_nnz=100: indptr's 1001 entries are bounded by the shape
    A = sp.csr_array((np.ones(10), (np.arange(10), np.arange(10))), shape=(1000, 1000))
    M = akfviz.load(_npz_sparse(A.asformat(fmt)), limits=akfviz.LoadLimits(max_nnz=100))
    assert M.nnz == 10 and M.shape == (1000, 1000)
    # the nonzeros themselves are still limited
    with pytest.raises(akfviz.InputError, match="over the limit of 5"):
        akfviz.load(_npz_sparse(A.asformat(fmt)), limits=akfviz.LoadLimits(max_nnz=5))


def test_coo_npz_with_coords_loads_as_scipy_reads_it():
    data = _npz(data=np.array([1.0, 2.0]), coords=np.array([[0, 1], [2, 0]]), shape=np.array([2, 3]),
                format=np.array(b"coo"))
    want = sp.load_npz(io.BytesIO(data)).toarray()
    assert np.array_equal(akfviz.load(data).toarray(), want)
    assert want.tolist() == [[0, 0, 1], [2, 0, 0]]


@pytest.mark.parametrize("coords, match", [
    (np.array([[0, 1]]), r"shape \(2, nnz\)"),
    (np.array([[0, 1], [2, 0], [1, 1]]), r"shape \(2, nnz\)"),
    (np.array([[0, 1], [2, 5]]), r"'coords\[1\] \(column\)' array has indices outside \[0, 3\)"),
    (np.array([[0.0, 1.0], [2.0, 0.0]]), r"'coords\[0\] \(row\)' array must be a 1-D integer"),
])
def test_broken_coords_are_refused_by_name(coords, match):
    data = _npz(data=np.array([1.0, 2.0]), coords=coords, shape=np.array([2, 3]), format=np.array(b"coo"))
    with pytest.raises(akfviz.InputError, match=match):
        akfviz.load(data)


def test_coords_count_against_the_nnz_limit():
    data = _npz(data=np.ones(200), coords=np.zeros((2, 200), dtype=np.int64), shape=np.array([2, 3]),
                format=np.array(b"coo"))
    with pytest.raises(akfviz.InputError, match="200 stored entries, over the limit of 100"):
        akfviz.load(data, limits=akfviz.LoadLimits(max_nnz=100))


# --------------------------------------------------------------------------- exact integer sums
def test_integer_duplicates_beyond_2_53_are_summed_before_rounding():
    text = MM.replace(b"real", b"integer") + b"1 1 2\n1 1 9007199254740993\n1 1 -9007199254740992\n"
    assert akfviz.load(text).toarray().tolist() == [[1.0]]
    A = sp.coo_array((np.array([2**53 + 1, -2**53], np.int64), ([0, 0], [0, 0])), shape=(1, 1))
    assert akfviz.load(_npz_sparse(A)).toarray().tolist() == [[1.0]]


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_integer_duplicate_sums_equal_python_exact_sums_rounded_once(dtype):
    rng = np.random.default_rng(0)
    for _ in range(100):
        n, k = int(rng.integers(1, 5)), int(rng.integers(1, 25))
        r, c = rng.integers(0, n, k), rng.integers(0, n, k)
        if dtype is np.uint64:
            v = rng.integers(0, 2**64 - 1, k, dtype=np.uint64, endpoint=True) >> rng.integers(0, 40, k).astype(np.uint64)
        else:
            v = rng.integers(-2**62, 2**62, k, dtype=np.int64) // rng.integers(1, 2**40, k)
        exact = {}
        for a, b, x in zip(r.tolist(), c.tolist(), v.tolist()):
            exact[a, b] = exact.get((a, b), 0) + int(x)
        want = np.zeros((n, n))
        for (a, b), x in exact.items():
            want[a, b] = float(x)   # Python rounds the exact integer once
        got = as_csr(sp.coo_array((v, (r, c)), shape=(n, n))).toarray()
        assert np.array_equal(got, want)


def test_int64_sum_beyond_int64_is_summed_exactly():
    A = sp.coo_array((np.array([2**62, 2**62, 2**62, -7], np.int64), ([0, 0, 0, 1], [0, 0, 0, 0])), shape=(2, 2))
    M = as_csr(A).toarray()
    assert M[0, 0] == float(3 * 2**62) and M[1, 0] == -7.0


# --------------------------------------------------------------------------- speed of a refusal
def test_overflow_search_skips_fortran_exponents_and_literal_nan():
    # a million values written as 0.12E+001 and a NaN at the end: the overflow search read every
    # E+001 with float() (14 s for 2M lines); a NaN cannot be an overflow at all
    n = 1_000_000
    body = b"".join(b"%d %d 0.1234567890123456E+001\n" % (i % 1000 + 1, i // 1000 + 1) for i in range(n))
    head = MM + b"1000 1001 %d\n" % (n + 1)
    for tail, match in ((b"1 1 nan\n", "NaN or infinite"), (b"1 1 1e400\n", "line 1000003.*1e400 is beyond")):
        t0 = time.process_time()
        with pytest.raises(akfviz.InputError, match=match):
            akfviz.load(head + body + tail)
        assert time.process_time() - t0 < 5.0   # about 1 s here; it was 7 s and rising with the file


def test_overflow_search_still_finds_a_long_mantissa_with_a_small_exponent():
    with pytest.raises(akfviz.InputError, match="99999999999e\\+299 is beyond"):
        akfviz.load(MM + b"2 2 2\n1 1 1.0E+001\n2 2 99999999999e+299\n")
    with pytest.raises(akfviz.InputError, match="is beyond the range"):
        akfviz.load(MM + b"2 2 1\n1 1 " + b"9" * 320 + b"\n")


# --------------------------------------------------------------------------- messages
def test_safetensors_number_of_over_4300_digits_is_said_in_words():
    raw = b'{"__metadata__": {"n": ' + b"1" * 5000 + b'}, "w": {"dtype": "F64", "shape": [1, 1], "data_offsets": [0, 8]}}'
    with pytest.raises(akfviz.InputError, match="a number of over 4300 digits") as err:
        akfviz.load(_safetensors(raw, np.ones(1).tobytes()))
    assert "set_int_max_str_digits" not in str(err.value)


def test_safetensors_duplicate_tensor_name_is_named():
    raw = (b'{"w": {"dtype": "F64", "shape": [1, 1], "data_offsets": [0, 8]}, '
           b'"w": {"dtype": "F64", "shape": [1, 1], "data_offsets": [8, 16]}}')
    with pytest.raises(akfviz.InputError, match="lists the tensor 'w' twice"):
        akfviz.load(_safetensors(raw, np.ones(2).tobytes()))
    with pytest.raises(akfviz.InputError, match="lists the tensor 'w' twice"):
        akfviz.list_tensors(_safetensors(raw, np.ones(2).tobytes()))


def test_safetensors_name_or_metadata_holding_data_offsets_still_loads():
    for raw in (b'{"data_offsets": {"dtype": "F64", "shape": [1, 1], "data_offsets": [0, 8]}}',
                b'{"__metadata__": {"x": "data_offsets"}, "w": {"dtype": "F64", "shape": [1, 1], '
                b'"data_offsets": [0, 8]}}'):
        assert akfviz.load(_safetensors(raw, np.ones(1).tobytes())).toarray().tolist() == [[1.0]]


def test_size_line_longer_than_4096_bytes_is_quoted_from_its_start():
    with pytest.raises(akfviz.InputError, match=r"line 2 \('2 2 999.*far too large"):
        akfviz.load(MM + b"2 2 " + b"9" * 5000 + b"\n1 1 1\n")
    # leading zeros are only zeros
    assert akfviz.load(MM + b"2 2 " + b"0" * 5000 + b"1\n1 1 1\n").nnz == 1


def test_entry_line_longer_than_4096_bytes_is_quoted_from_its_start():
    with pytest.raises(akfviz.InputError, match=r"line 3 \('x'\): 'x' is not a row or column index"):
        akfviz.load(MM + b"2 2 1\n" + b" " * 5000 + b"x\n")


@pytest.mark.parametrize("body, what", [(b"1\x0b1 3\n", "a vertical tab"), (b"1 1 3\n\x0c\n", "a form feed"),
                                        (b"1 1 3\n\x1a", "an end-of-file mark")])
def test_control_characters_in_entries_are_named(body, what):
    with pytest.raises(akfviz.InputError, match=what):
        akfviz.load(MM + b"2 2 1\n" + body)


def test_signalling_nan_raises_no_warning(recwarn):
    a = np.array([[1.0, 0.0]])
    a.view(np.uint64)[0, 1] = 0x7FF0000000000001
    b = io.BytesIO()
    np.save(b, a)
    with pytest.raises(akfviz.InputError, match="NaN or infinite"):
        akfviz.load(b.getvalue())
    with pytest.raises(akfviz.InputError, match="NaN or infinite"):
        akfviz.load(_npz(w=a))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("data, match", [
    (_npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), "), "cut off or is not valid"),
    (_npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (" + b"9" * 5000 + b", 1), }"), "over 4300 digits"),
    (_npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (True, 1), }", b"\0" * 8), r"shape \(True, 1\)"),
    (_npy(b"{'descr': '<f8', 'fortran_order': False, 'shape': (-1, 1), }", b"\0" * 8), r"shape \(-1, 1\)"),
    (b"\x93NUMPY\x02\x00" + struct.pack("<I", 20000)
     + (b"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }" + b" " * 20000)[:19999] + b"\n" + b"\0" * 8,
     "longer than the 10,000 bytes"),
])
def test_npy_header_problems_are_said_in_words(data, match):
    with pytest.raises(akfviz.InputError, match=match) as err:
        akfviz.load(data)
    text = str(err.value)
    assert len(text) < 300 and "allow_pickle" not in text and "EOF in multi-line" not in text


def test_npz_member_header_cut_short_names_the_error_kind():
    d = bytearray(_npz_sparse(sp.eye_array(4, format="dia")))
    d[29] = 255
    with pytest.raises(akfviz.InputError, match=r"Array 'offsets'.*\(the header is cut short\)"):
        akfviz.load(bytes(d))


def test_empty_path_is_called_empty():
    with pytest.raises(akfviz.InputError, match="The path is empty"):
        akfviz.load("")


def test_numeric_format_array_is_a_dense_array_of_that_name():
    data = _npz(format=np.eye(3), shape=np.eye(3))
    with pytest.raises(akfviz.InputError, match="several arrays .* pick one with tensor="):
        akfviz.load(data)
    assert np.array_equal(akfviz.load(data, tensor="format").toarray(), np.eye(3))
    assert akfviz.matrix_choices(data)["name"].tolist() == ["format", "shape"]
    broken = _npz(format=np.array([1]), shape=np.array([3, 3]), data=np.ones(3), indices=np.arange(3),
                  indptr=np.arange(4))
    with pytest.raises(akfviz.InputError, match="'format' entry holds int64 values, not a format name"):
        akfviz.load(broken)


def test_safetensors_header_that_is_not_json_says_where_not_how_the_parser_words_it():
    raw = b'{not json}'
    with pytest.raises(akfviz.InputError, match=r"not valid JSON: the text breaks off or goes wrong at byte 1 of "
                                                r"the header's 10") as err:
        akfviz.load(_safetensors(raw, b""))
    assert "Expecting property name" not in str(err.value)
    with pytest.raises(akfviz.InputError, match="not UTF-8 text at byte 2"):
        akfviz.load(_safetensors(b'{"\xff": 1}', b""))
