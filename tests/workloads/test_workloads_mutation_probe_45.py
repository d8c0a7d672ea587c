"""Mutation probe (45th session) of workloads.validate / workloads.loaders: refusals and
acceptances that no test pinned. Each test names the mutant it kills."""
import io

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz.errors import InputError
from akfviz.workloads.validate import as_csr, dense_operand


def test_a_row_pointer_not_starting_at_zero_is_refused():
    # kills V03 (check_structure without the ptr[0] != 0 test). scipy checks the first pointer when
    # the matrix is built, not when its arrays are edited afterwards; the first entry then belongs
    # to no row and the refusal came from scipy (a ValueError), not as an InputError.
    A = sp.csr_array((np.array([1.0, 2.0]), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    A.indptr[:] = [1, 1, 2]
    with pytest.raises(InputError, match="row pointers do not match"):
        as_csr(A)
    # the same arrays with a proper pointer: both entries kept
    ok = as_csr(sp.csr_array((np.array([1.0, 2.0]), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2)))
    np.testing.assert_array_equal(ok.toarray(), [[1.0, 0.0], [0.0, 2.0]])


def test_a_bsr_block_column_past_the_shape_is_refused():
    # kills V06 (check_structure comparing BSR block-column indices with the number of columns
    # instead of block columns): a 4 × 4 BSR of 2 × 2 blocks has block columns 0 and 1 only.
    blocks = np.arange(1.0, 9.0).reshape(2, 2, 2)
    bad = sp.bsr_array((blocks, np.array([0, 2]), np.array([0, 1, 2])), shape=(4, 4))
    with pytest.raises(InputError, match=r"column indices outside 0…3"):
        as_csr(bad)
    good = sp.bsr_array((blocks, np.array([0, 1]), np.array([0, 1, 2])), shape=(4, 4))
    want = np.zeros((4, 4))
    want[0:2, 0:2] = blocks[0]
    want[2:4, 2:4] = blocks[1]
    np.testing.assert_array_equal(as_csr(good).toarray(), want)


def test_a_masked_array_with_nothing_masked_is_accepted_as_its_values():
    # kills V09 (dense_operand refusing every masked array that carries a mask array, even one of
    # all False): nothing is hidden, so the values are the operand.
    x = np.ma.masked_array(np.arange(5.0), mask=np.zeros(5, dtype=bool))
    np.testing.assert_array_equal(dense_operand(x), np.arange(5.0))
    with pytest.raises(InputError, match="masked entries"):
        dense_operand(np.ma.masked_array(np.arange(5.0), mask=[0, 0, 1, 0, 0]))


@pytest.mark.parametrize("dtype, v", [(np.int8, 100), (np.uint8, 200), (np.int16, 30000),
                                      (np.int32, 2**31 - 1), (np.uint32, 2**32 - 1)])
def test_small_integer_duplicates_are_summed_in_float64_not_wrapped(dtype, v):
    # kills V12 (as_csr converting only float and bool sparse values to float64 before the CSR
    # conversion sums duplicates): int8 100 + 100 wrapped to −56, int32 2**31 − 1 twice to −2.
    A = sp.coo_array((np.array([v, v, 7], dtype=dtype), (np.array([0, 0, 1]), np.array([1, 1, 0]))),
                     shape=(2, 2))
    M = as_csr(A)
    assert M.dtype == np.float64
    np.testing.assert_array_equal(M.toarray(), [[0.0, 2.0 * v], [7.0, 0.0]])


def _npz(compressed=False, **arrays) -> bytes:
    b = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(b, **arrays)
    return b.getvalue()


def test_coo_coords_count_each_entry_once_against_the_nnz_limit():
    # kills L09 (_npz_sparse counting the (2, nnz) 'coords' array as 2·nnz entries): a COO .npz of
    # exactly max_nnz entries given as coords loads, one more is refused.
    r, c = np.divmod(np.arange(100), 10)
    data = _npz(data=np.arange(1.0, 101.0), coords=np.vstack([r, c]), shape=np.array([10, 10]),
                format=np.array(b"coo"))
    A = akfviz.load(data, limits=akfviz.LoadLimits(max_nnz=100))
    np.testing.assert_array_equal(A.toarray(), np.arange(1.0, 101.0).reshape(10, 10))
    with pytest.raises(akfviz.InputError, match="100 stored entries, over the limit of 99"):
        akfviz.load(data, limits=akfviz.LoadLimits(max_nnz=99))


def test_a_dense_npz_array_named_indptr_is_held_to_the_compression_ratio():
    # kills L06 (_npz_expansion_bytes leaving out every member called 'indptr', not only a sparse
    # matrix's row pointers): a dense array of zeros under that name expanded 8 MB from a few kB
    # past the ratio guard, which refuses the same array under any other name.
    limits = akfviz.LoadLimits(max_compression_ratio=10, ratio_floor_bytes=1 << 20)
    for name in ("w", "indptr"):
        data = _npz(compressed=True, **{name: np.zeros((1000, 1000))})
        assert len(data) * 10 < 8_000_000
        with pytest.raises(akfviz.InputError, match="expands more than 10×"):
            akfviz.load(data, limits=limits)


def test_a_bsr_npz_whose_blocks_do_not_divide_the_columns_is_refused():
    # kills L07 (the block-size test of a BSR .npz without ``cols % C``): a 4 × 5 matrix of 2 × 2
    # blocks loaded silently as a 4 × 5 matrix (scipy builds it), where the file is corrupt.
    data = _npz(format=np.array("bsr"), shape=np.array([4, 5]), data=np.ones((1, 2, 2)),
                indices=np.array([0]), indptr=np.array([0, 1, 1]))
    with pytest.raises(akfviz.InputError, match=r"block size 2×2 does not divide the shape 4×5"):
        akfviz.load(data)
    ok = _npz(format=np.array("bsr"), shape=np.array([4, 6]), data=np.ones((1, 2, 2)),
              indices=np.array([0]), indptr=np.array([0, 1, 1]))
    want = np.zeros((4, 6))
    want[:2, :2] = 1.0
    np.testing.assert_array_equal(akfviz.load(ok).toarray(), want)


def test_a_npy_one_byte_short_is_called_truncated():
    # kills L08 (the size test of a .npy allowing one byte less than its header declares): the
    # file was still refused, but with numpy's "buffer is smaller than requested size".
    b = io.BytesIO()
    np.save(b, np.arange(12.0).reshape(3, 4))
    whole = b.getvalue()
    np.testing.assert_array_equal(akfviz.load(whole, fmt="npy").toarray(), np.arange(12.0).reshape(3, 4))
    with pytest.raises(akfviz.InputError, match=rf"is truncated: .* \({len(whole)} bytes in all\) but the "
                                                rf"file has only {len(whole) - 1} bytes"):
        akfviz.load(whole[:-1], fmt="npy")
