"""Compressed (.gz, .bz2, .xz) and archived (.tar, .tar.gz, .tar.bz2, .tar.xz) matrix files through akfviz.load."""
import bz2
import gzip
import io
import lzma
from fractions import Fraction

import numpy as np
import pytest
from archive_builders import tar_bytes
import scipy.io
import scipy.sparse as sp

import akfviz
from akfviz.errors import InputError, ResourceLimitError
from akfviz.workloads import LoadLimits, load
from akfviz.workloads.archives import gunzip, matrix_members, untar


def _mtx_bytes(A) -> bytes:
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.coo_array(A))
    return buf.getvalue()


def _tar(members: dict, compress: bool) -> bytes:
    return tar_bytes(members, mode="w:gz" if compress else "w")


@pytest.fixture(scope="module")
def A():
    return akfviz.generate("uniform", n=60, density=0.05, seed=3)


def _same(M, A):
    assert M.shape == A.shape
    assert abs(M - A).max() == 0


def test_mtx_gz_bytes_and_path(A, tmp_path):
    raw = gzip.compress(_mtx_bytes(A))
    _same(load(raw, name="m.mtx.gz"), A)
    _same(load(raw), A)  # recognised by content, no name needed
    p = tmp_path / "m.mtx.gz"
    p.write_bytes(raw)
    _same(load(p), A)


def test_npz_and_npy_inside_gzip(A):
    buf = io.BytesIO()
    sp.save_npz(buf, sp.csr_matrix(A))
    _same(load(gzip.compress(buf.getvalue()), name="m.npz.gz"), A)
    buf = io.BytesIO()
    np.save(buf, A.toarray())
    _same(load(gzip.compress(buf.getvalue()), name="m.npy.gz"), A)


def test_concatenated_gzip_members(A):
    text = _mtx_bytes(A)
    half = len(text) // 2
    _same(load(gzip.compress(text[:half]) + gzip.compress(text[half:])), A)


def test_suitesparse_tar_gz_picks_name_slash_name_mtx(A):
    B = akfviz.generate("banded", n=40, bandwidth=2, seed=0)
    data = _tar({"west/west.mtx": _mtx_bytes(A), "west/west_b.mtx": _mtx_bytes(B),
                 "west/README.txt": b"hello"}, compress=True)
    _same(load(data, name="west.tar.gz"), A)
    _same(load(data, name="west.tar.gz", tensor="west_b.mtx"), B)
    _same(load(data, name="west.tar.gz", tensor="west/west_b.mtx"), B)


def test_tar_with_single_matrix_and_plain_tar(A):
    _same(load(_tar({"x/anything.mtx": _mtx_bytes(A)}, compress=False), name="a.tar"), A)
    _same(load(_tar({"only.mtx": _mtx_bytes(A), "notes.txt": b"x"}, compress=True), name="q.tgz"), A)


def test_tar_ambiguous_or_without_matrix_is_explained(A):
    two = _tar({"a.mtx": _mtx_bytes(A), "b.mtx": _mtx_bytes(A)}, compress=True)
    with pytest.raises(InputError, match="several matrix files"):
        load(two, name="pair.tar.gz")
    with pytest.raises(InputError, match="no member named 'c.mtx'"):
        load(two, name="pair.tar.gz", tensor="c.mtx")
    with pytest.raises(InputError, match="no matrix file"):
        load(_tar({"readme.txt": b"x"}, compress=True), name="t.tar.gz")


def test_truncated_and_corrupt_gzip(A):
    raw = gzip.compress(_mtx_bytes(A))
    with pytest.raises(InputError, match="truncated"):
        load(raw[: len(raw) // 2], name="m.mtx.gz")
    bad = bytearray(raw)
    bad[20:40] = b"\xff" * 20
    with pytest.raises(InputError):
        load(bytes(bad), name="m.mtx.gz")


def test_decompression_limit_checked_while_decompressing():
    bomb = gzip.compress(b"%%MatrixMarket matrix coordinate real general\n" + b" " * 5_000_000)
    assert len(bomb) < 20_000
    with pytest.raises(ResourceLimitError, match="decompresses to more than"):
        load(bomb, name="bomb.mtx.gz", limits=LoadLimits(max_decompressed_bytes=1_000_000))
    with pytest.raises(ResourceLimitError, match="over the limit of 2,000 for compressed"):
        load(_tar({"big.mtx": b"x" * 3000}, compress=False), limits=LoadLimits(max_decompressed_bytes=2000))
    # a member's declared size is checked before it is read
    with pytest.raises(ResourceLimitError, match="declares 3,000 bytes"):
        untar(_tar({"big.mtx": b"x" * 3000}, compress=False), "big.tar", None, 2000, "archive")


def test_gunzip_reference_equals_stdlib():
    rng = np.random.default_rng(0)
    payload = rng.integers(0, 5, 3_000_000, dtype=np.uint8).tobytes()
    assert gunzip(gzip.compress(payload), 10**8, "x") == payload


def test_limit_field_validated():
    with pytest.raises(InputError, match="max_decompressed_bytes"):
        LoadLimits(max_decompressed_bytes=0)


def test_matrix_members_lists_default_first(A):
    data = _tar({"west/README.txt": b"x", "west/west_b.mtx": _mtx_bytes(A), "west/west.mtx": _mtx_bytes(A)},
                compress=True)
    assert matrix_members(data, "west.tar.gz") == ["west/west.mtx", "west/west_b.mtx"]
    assert matrix_members(gzip.compress(_mtx_bytes(A)), "m.mtx.gz") == []
    with pytest.raises(InputError):
        matrix_members(gzip.compress(b"x" * 600)[:-8] + b"garbage!", "bad.tar.gz")


_STREAMS = {"bz2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize("ext", sorted(_STREAMS))
def test_bzip2_and_xz_files_and_tars(A, ext, tmp_path):
    pack = _STREAMS[ext]
    raw = pack(_mtx_bytes(A))
    _same(load(raw), A)  # recognised by content
    _same(load(raw + pack(b"")), A)  # concatenated streams, as pbzip2 / xz -T write them
    p = tmp_path / f"m.mtx.{ext}"
    p.write_bytes(raw)
    _same(load(p), A)
    tar = pack(_tar({"west/west_b.mtx": _mtx_bytes(2 * A), "west/west.mtx": _mtx_bytes(A)},
                    compress=False))
    short = {"bz2": "tbz2", "xz": "txz"}[ext]
    for name in (f"west.tar.{ext}", f"west.{short}"):
        _same(load(tar, name=name), A)
        assert matrix_members(tar, name) == ["west/west.mtx", "west/west_b.mtx"]
    _same(load(tar, name=f"west.tar.{ext}", tensor="west_b.mtx"), 2 * A)


@pytest.mark.parametrize("ext", sorted(_STREAMS))
def test_bzip2_and_xz_truncated_corrupt_and_limited(A, ext):
    pack = _STREAMS[ext]
    raw = pack(_mtx_bytes(A))
    with pytest.raises(InputError, match="truncated"):
        load(raw[: len(raw) // 2])
    bad = bytearray(raw)
    bad[len(raw) // 2: len(raw) // 2 + 20] = b"\x00" * 20
    with pytest.raises(InputError, match="corrupt"):
        load(bytes(bad))
    bomb = pack(b"%%MatrixMarket matrix coordinate real general\n" + b" " * 5_000_000)
    assert len(bomb) < 20_000
    with pytest.raises(ResourceLimitError, match="decompresses to more than"):
        load(bomb, limits=LoadLimits(max_decompressed_bytes=1_000_000))


def test_stream_decompression_equals_stdlib():
    from akfviz.workloads.archives import codec_of

    payload = np.random.default_rng(1).integers(0, 5, 3_000_000, dtype=np.uint8).tobytes()
    for pack in _STREAMS.values():
        blob = pack(payload)
        assert codec_of(blob).decompress(blob, 10**8, "x") == payload


def test_text_starting_like_bzip2_is_not_taken_for_it():
    from akfviz.workloads.archives import codec_of

    assert codec_of(b"BZh9" + b"\x31\x41\x59") is not None
    assert codec_of(b"BZhello") is None
    with pytest.raises(InputError, match="Could not tell the format"):
        load(b"BZhello world")


# --------------------------------------------------------------------------- decompression bombs
_PACK = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
# a valid Matrix Market file of 5 MB that compresses 300× (gzip) to 50,000× (bzip2)
_FLUFFY = (b"%%MatrixMarket matrix coordinate real general\n%" + b" " * 5_000_000 + b"\n"
           b"2 2 1\n1 2 3.5\n")


@pytest.mark.parametrize("ext", sorted(_PACK))
def test_compression_ratio_guard_refuses_a_bomb_as_it_unpacks(ext):
    bomb = _PACK[ext](_FLUFFY)
    small = LoadLimits(ratio_floor_bytes=100_000)
    with pytest.raises(ResourceLimitError, match=r"expands more than 200× when decompressed .*"
                                                 r"decompression bomb.*max_compression_ratio") as err:
        load(bomb, name=f"x.mtx.{ext}", limits=small)
    assert f"from {len(bomb):,} bytes" in str(err.value) and "Upload 'x.mtx." in str(err.value)
    # below the floor (64 MiB by default) the ratio does not matter; a raised ratio lets it through
    assert load(bomb).toarray().tolist() == [[0, 3.5], [0, 0]]
    assert load(bomb, limits=LoadLimits(ratio_floor_bytes=100_000, max_compression_ratio=1e6)).nnz == 1


def test_compression_ratio_guard_on_tar_and_matrix_members(monkeypatch):
    tar = gzip.compress(_tar({"m/m.mtx": _FLUFFY, "m/m_b.mtx": b"x"}, compress=False))
    small = LoadLimits(ratio_floor_bytes=100_000)
    with pytest.raises(ResourceLimitError, match="decompression bomb"):
        load(tar, name="m.tar.gz", limits=small)
    with pytest.raises(ResourceLimitError, match="decompression bomb"):
        matrix_members(tar, "m.tar.gz", limits=small)
    assert matrix_members(tar, "m.tar.gz") == ["m/m.mtx", "m/m_b.mtx"]
    # the app calls matrix_members(data, name): the default limits apply, ratio guard included
    import akfviz.workloads.limits as limits_mod
    monkeypatch.setattr(limits_mod, "DEFAULT_LIMITS", small)
    with pytest.raises(ResourceLimitError, match="decompression bomb"):
        matrix_members(tar, "m.tar.gz")


def test_ratio_guard_stops_before_the_output_is_held():
    # 1 KB of bzip2 unpacking to 40 MB: refused once past the floor, not after holding it all
    import tracemalloc

    bomb = bz2.compress(b"%%MatrixMarket matrix coordinate real general\n" + b"%" * 40_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(ResourceLimitError, match="decompression bomb"):
            load(bomb, limits=LoadLimits(ratio_floor_bytes=2_000_000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000


def test_decompressed_output_is_not_copied_at_the_end():
    # the output was gathered in a bytearray and copied with bytes(out): twice its size at the end
    import tracemalloc

    from akfviz.workloads.archives import codec_of

    size = 24 << 20
    for pack in _PACK.values():
        blob = pack(b"\0" * size)
        tracemalloc.start()
        try:
            out = codec_of(blob).decompress(blob, 10**9, "x")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(out) == size and isinstance(out, bytes)
        assert peak < 1.75 * size, peak / size  # 1.2× (xz: 1.55×, its 8 MiB dictionary); was over 2×
        del out


@pytest.mark.parametrize("kw,value", [("max_compression_ratio", 0), ("max_compression_ratio", -3),
                                      ("max_compression_ratio", float("nan")),
                                      ("max_compression_ratio", True), ("max_compression_ratio", "200"),
                                      ("ratio_floor_bytes", -1), ("ratio_floor_bytes", 1.5)])
def test_ratio_limit_fields_validated(kw, value):
    with pytest.raises(InputError, match=kw):
        LoadLimits(**{kw: value})
    assert LoadLimits(max_compression_ratio=2.5, ratio_floor_bytes=0).expansion_cap(10) == 25


def test_limits_take_numpy_numbers_as_the_rest_of_the_api_does():
    """Held-out probe: LoadLimits(max_nnz=np.int64(10)) and max_compression_ratio=np.float32(5)
    were refused; they are stored as plain Python numbers."""
    lim = LoadLimits(max_rows=np.int32(7), max_nnz=np.int64(10), max_dense_elements=np.uint16(99),
                     max_decompressed_bytes=np.int64(2**40), max_compression_ratio=np.float32(5),
                     ratio_floor_bytes=np.int64(0))
    assert (lim.max_rows, lim.max_nnz, lim.max_dense_elements, lim.ratio_floor_bytes) == (7, 10, 99, 0)
    assert type(lim.max_nnz) is int and type(lim.max_decompressed_bytes) is int
    assert lim.max_compression_ratio == 5.0 and type(lim.max_compression_ratio) is float
    assert LoadLimits(max_compression_ratio=np.int64(30)).expansion_cap(10**9) == 30 * 10**9
    assert lim == LoadLimits(max_rows=7, max_nnz=10, max_dense_elements=99, max_decompressed_bytes=2**40,
                             max_compression_ratio=5.0, ratio_floor_bytes=0)
    for kw in ({"max_nnz": np.bool_(True)}, {"max_nnz": True}, {"max_nnz": np.float64(10)},
               {"max_rows": np.int64(0)}, {"ratio_floor_bytes": np.int8(-1)}, {"max_nnz": "10"},
               {"max_compression_ratio": np.float32("nan")}, {"max_compression_ratio": np.float64("inf")},
               {"max_compression_ratio": np.bool_(True)}, {"max_compression_ratio": np.int64(0)}):
        with pytest.raises(InputError, match=f"LoadLimits.{next(iter(kw))} must be"):
            LoadLimits(**kw)


@pytest.mark.parametrize("kw, shown", [
    ({"max_compression_ratio": 10**400}, "got a 401-digit number."),
    ({"max_compression_ratio": -10**400}, "got a negative 401-digit number."),
    ({"max_compression_ratio": Fraction(10**400, 3)}, "characters)."),
    ({"max_nnz": -10**400}, "got a negative 401-digit number."),
])
def test_limits_refuse_a_huge_number_by_its_size(kw, shown):
    """Held-out probe: max_compression_ratio=10**400 raised OverflowError; a huge value is now
    refused with InputError and named by its size, not printed in full."""
    with pytest.raises(InputError, match="LoadLimits") as err:
        LoadLimits(**kw)
    assert str(err.value).endswith(shown) and len(str(err.value)) < 200


def test_npz_whose_arrays_declare_far_more_than_the_file_is_refused():
    buf = io.BytesIO()
    np.savez_compressed(buf, w=np.zeros((1000, 1000)))  # 8 MB of zeros in ≈ 8 KB
    data = buf.getvalue()
    with pytest.raises(ResourceLimitError, match=r"expands more than 200×.*max_compression_ratio"):
        load(data, name="w.npz", limits=LoadLimits(ratio_floor_bytes=1_000_000))
    assert load(data).shape == (1000, 1000)  # below the 64 MiB floor


def test_a_file_compressed_twice_is_explained(A):
    twice = gzip.compress(gzip.compress(_mtx_bytes(A)))
    with pytest.raises(InputError, match=r"compressed twice \(gzip inside gzip\); akfviz unpacks only one"):
        load(twice, name="a.mtx.gz.gz")
    with pytest.raises(InputError, match=r"compressed twice \(gzip inside bzip2\)"):
        load(bz2.compress(gzip.compress(_mtx_bytes(A))))
    tar = _tar({"m/m.mtx.gz": gzip.compress(_mtx_bytes(A))}, compress=True)
    with pytest.raises(InputError, match="member 'm/m.mtx.gz' is itself compressed"):
        load(tar, name="m.tar.gz", tensor="m.mtx.gz")
