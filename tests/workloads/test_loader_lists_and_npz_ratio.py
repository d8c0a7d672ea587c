"""Held-out probe on loading: messages that list a file's names stay short however many names
the file holds; a compressed scipy .npz of mostly empty rows loads, while .npz bombs are still
refused."""
import io
import json
import struct
import tarfile
import tracemalloc
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from akfviz import InputError, load
from akfviz.errors import name_list
from akfviz.workloads import LoadLimits
from akfviz.workloads.limits import ResourceLimitError

MANY = 20_000
SHORT = 1_500  # characters: ten names and a count


def _st_header(entries: dict, data: bytes = b"") -> bytes:
    header = json.dumps(entries).encode()
    return struct.pack("<Q", len(header)) + header + data


def _many_tensors(shape, k=MANY, prefix="t"):
    """A safetensors file of ``k`` F32 tensors of ``shape`` (built from the header: fast)."""
    size = int(np.prod(shape)) * 4
    entries = {f"{prefix}{i}": {"dtype": "F32", "shape": list(shape), "data_offsets": [i * size, (i + 1) * size]}
               for i in range(k)}
    return _st_header(entries, b"\0" * (size * k))


def _refused(data, *words, **kwargs) -> str:
    with pytest.raises(InputError) as info:
        load(data, **kwargs)
    msg = str(info.value)
    assert len(msg) < SHORT, len(msg)
    for w in words:
        assert w in msg, (w, msg[:500])
    return msg


# --------------------------------------------------------------------------- capped name lists
def test_safetensors_messages_list_ten_names_then_a_count():
    # probe: 300k zero-sized tensors gave a 4.7 MB message, 200k 1×1 tensors 1.7 MB
    _refused(_many_tensors((0, 1)), "only zero-sized 2-D tensors (t0 [0, 1], t1 [0, 1]",
             f"t9 [0, 1] … and {MANY - 10:,} more)", name="z.safetensors")
    ones = _many_tensors((1, 1))
    _refused(ones, f"holds {MANY:,} 2-D tensors", "(2-D tensors: t0, t1,", f"t9 … and {MANY - 10:,} more)",
             name="o.safetensors")
    _refused(ones, "no tensor named 'nope'", f"t9 … and {MANY - 10:,} more.", tensor="nope")
    _refused(_many_tensors((1,)), "holds no 2-D tensor", f"t9 [1] … and {MANY - 10:,} more")
    mixed = _st_header({**{f"v{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
                           for i in range(MANY)},
                        "w": {"dtype": "F32", "shape": [1, 1], "data_offsets": [4 * MANY, 4 * MANY + 4]},
                        "u": {"dtype": "F32", "shape": [1, 1], "data_offsets": [4 * MANY + 4, 4 * MANY + 8]}},
                       b"\0" * (4 * MANY + 8))
    _refused(mixed, "Tensor 'v5' in", "not 2-D; its 2-D tensors are: w, u.", tensor="v5")


def test_a_long_name_is_shortened_in_the_list():
    long_a, long_b = "a" * 5000 + "_x", "b" * 5000 + "_y"
    data = _st_header({long_a: {"dtype": "F32", "shape": [1, 1], "data_offsets": [0, 4]},
                       long_b: {"dtype": "F32", "shape": [1, 1], "data_offsets": [4, 8]}}, b"\0" * 8)
    msg = _refused(data, "holds 2 2-D tensors", "(2-D tensors: aaa", "aaa…aaa", "a_x, bbb", "bbb…bbb", "b_y).")
    assert len(msg) < 400


def test_npz_messages_list_ten_names_then_a_count():
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": np.ones((1, 1)) for i in range(2000)})
    data = buf.getvalue()
    _refused(data, "pick one with tensor=", "(2-D arrays: a0, a1,", "a9 … and 1,990 more)")
    _refused(data, "no array named 'nope'", "a9 … and 1,990 more.", tensor="nope")
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": np.ones(1) for i in range(2000)})
    _refused(buf.getvalue(), "holds no 2-D array", "a9 [1] … and 1,990 more")


def test_tar_members_with_long_names_are_shortened():
    buf = io.BytesIO()
    body = b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n"
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for stem in ("p" * 3000, "q" * 3000):
            info = tarfile.TarInfo(f"{stem}.mtx")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    _refused(buf.getvalue(), "holds several matrix files (ppp", "ppp…ppp", "p.mtx, qqq", "q.mtx)", name="two.tar")


def test_name_list():
    assert name_list([]) == "none"
    assert name_list(["a", "b"]) == "a, b"
    assert name_list([str(i) for i in range(12)]) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 … and 2 more"
    cut = name_list(["x" * 100 + "END"], width=30)
    assert len(cut) == 30 and cut.endswith("…" + "x" * 7 + "END")
    assert name_list([("w", (0, 4))]) == "w [0, 4]"


# --------------------------------------------------------------------------- .npz compression ratio
def _save_npz(A, compressed=True) -> bytes:
    buf = io.BytesIO()
    sp.save_npz(buf, A, compressed=compressed)
    return buf.getvalue()


def test_compressed_sparse_npz_of_mostly_empty_rows_loads_and_bombs_are_still_refused():
    # probe: save_npz(compressed=True) of 20M × 20M with 10k nnz (378 KB) was refused as a
    # decompression bomb: its int64 indptr of empty rows compresses ≈ 1000×. The same here,
    # 4M rows against a floor of 1 MB (the indptr is 32 MB).
    n = 4_000_000
    rng = np.random.default_rng(0)
    A = sp.csr_array((np.ones(1000), (rng.integers(0, n, 1000), rng.integers(0, n, 1000))), shape=(n, n))
    A.indptr = A.indptr.astype(np.int64)
    data = _save_npz(A)
    assert len(data) < 100_000
    lim = LoadLimits(ratio_floor_bytes=1_000_000)
    B = load(data, name="big.npz", limits=lim)
    assert B.shape == (n, n) and (B != A).nnz == 0
    csc = _save_npz(sp.csc_array(A.T))
    assert load(csc, name="big_csc.npz", limits=lim).shape == (n, n)
    # still refused: the values of a sparse matrix are weighed (4M stored ones in a few kilobytes) …
    k = 4_000_000
    ones = sp.csr_array((np.ones(k), np.zeros(k, np.int32), np.array([0, k])), shape=(1, 4))
    with pytest.raises(ResourceLimitError, match=r"expands more than 200×.*max_compression_ratio"):
        load(_save_npz(ones), name="ones.npz", limits=lim)
    # … and so is a dense array of zeros (test_workloads_archives), and one declared beyond the limits
    buf = io.BytesIO()
    np.savez_compressed(buf, w=np.zeros((1000, 1000)))
    with pytest.raises(ResourceLimitError, match="dense elements, over the limit"):
        load(buf.getvalue(), limits=LoadLimits(max_dense_elements=100_000))


def test_an_indptr_longer_than_the_shape_is_refused_before_it_is_read():
    # indptr is left out of the ratio guard because the shape bounds it: it must keep to that bound
    buf = io.BytesIO()
    np.savez_compressed(buf, format=np.array("csr"), shape=np.array([10, 10]), data=np.ones(1),
                        indices=np.zeros(1, np.int32), indptr=np.zeros(5_000_001, np.int64))
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"'indptr' array must be a 1-D integer array of at most 11 "
                                             r"entries \(one more than the rows\), but it declares int64 "
                                             r"\(5000001,\)"):
            load(buf.getvalue(), name="ptr.npz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000


def _lying_npz(payload: int, declared: int, method) -> bytes:
    """A .npz whose one member (a 10 × 10 array) unpacks to ``payload`` bytes but declares
    ``declared``."""
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f8", "fortran_order": False, "shape": (10, 10)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        zf.writestr("w.npy", hdr.getvalue() + b"\0" * (payload - len(hdr.getvalue())))
    data = bytearray(buf.getvalue())
    struct.pack_into("<I", data, data.find(b"PK\x03\x04") + 22, declared)  # local header
    struct.pack_into("<I", data, data.find(b"PK\x01\x02") + 24, declared)  # central directory
    return bytes(data)


def test_a_member_whose_declared_size_lies_is_refused_without_unpacking_it():
    # zipfile cuts a member at its declared size and checks the CRC, but it unpacks a bzip2 or
    # LZMA member a whole compressed chunk at a time: a 200-byte bzip2 chunk held 40 MB (twice)
    for method, words in ((zipfile.ZIP_BZIP2, "is compressed with bzip2; a .npz file's arrays are stored or "
                                              "deflate-compressed"),
                          (zipfile.ZIP_LZMA, "is compressed with LZMA"),
                          (zipfile.ZIP_DEFLATED, "Bad CRC-32")):  # deflate: read as far as declared
        data = _lying_npz(40_000_000, 1000, method)
        assert len(data) < 100_000
        tracemalloc.start()
        try:
            with pytest.raises(InputError) as err:
                load(data, name="liar.npz")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 5_000_000, (method, peak)
        assert words in str(err.value), str(err.value)


def test_a_bzip2_npz_is_refused_by_matrix_choices_too():
    from akfviz import matrix_choices

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_BZIP2) as zf:
        for key in ("a", "b"):
            arr = io.BytesIO()
            np.save(arr, np.ones((2, 2)))
            zf.writestr(f"{key}.npy", arr.getvalue())
    with pytest.raises(InputError, match="compressed with bzip2"):
        matrix_choices(buf.getvalue(), name="ab.npz")

