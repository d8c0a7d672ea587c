"""Dense input: converted block by block (dense_to_csr) against scipy's whole-array conversion,
and held to LoadLimits.max_nnz in every dense format (probe: a dense .npy within the default
limits held 2× max_nnz and peaked at 15 GB)."""
import io

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import akfviz
from akfviz.errors import ResourceLimitError
from akfviz.workloads import validate
from akfviz.workloads.limits import LoadLimits


def _ref(a):
    """The slow reference: scipy's own conversion of the float64 array."""
    M = sp.csr_array(np.asarray(a, dtype=np.float64))
    M.eliminate_zeros()
    M.sort_indices()
    return M


def _same(A, B):
    assert A.shape == B.shape and A.dtype == np.float64
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 22])      # one element per block … one block
@pytest.mark.parametrize("dtype", ["<f8", ">f8", "f4", "f2", "i1", "u8", "?"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_blocks_give_scipys_matrix(monkeypatch, chunk, dtype, order):
    monkeypatch.setattr(validate, "DENSE_CHUNK_ELEMENTS", chunk)
    rng = np.random.default_rng(len(dtype) + chunk)
    a = (rng.standard_normal((23, 17)) * 4).astype(dtype)
    a[rng.random(a.shape) < 0.4] = 0
    a[5] = 0                                                   # an empty row
    a = np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a)
    M = validate.dense_to_csr(a)
    _same(M, _ref(a))
    assert M.has_canonical_format


def test_rows_wider_than_a_block_and_a_read_only_view(monkeypatch):
    monkeypatch.setattr(validate, "DENSE_CHUNK_ELEMENTS", 5)
    a = np.arange(-30.0, 30.0).reshape(3, 20)
    a.setflags(write=False)
    _same(validate.dense_to_csr(a), _ref(a))


def test_non_finite_values_are_counted_over_all_blocks(monkeypatch):
    monkeypatch.setattr(validate, "DENSE_CHUNK_ELEMENTS", 8)
    a = np.ones((10, 10))
    a[0, 0], a[9, 9], a[4, 2] = np.nan, np.inf, -np.inf
    with pytest.raises(akfviz.InputError, match="3 NaN or infinite"):
        validate.dense_to_csr(a)


def _npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue(), "d.npy"


def _mtx_array(a):
    b = io.BytesIO()
    scipy.io.mmwrite(b, a)
    return b.getvalue(), "d.mtx"


def _npz_dense(a):
    b = io.BytesIO()
    np.savez(b, w=a)
    return b.getvalue(), "d.npz"


def _safetensors(a):
    from safetensors.numpy import save
    return save({"w": a}), "d.safetensors"


@pytest.mark.parametrize("writer", [_npy, _mtx_array, _npz_dense, _safetensors])
def test_every_dense_format_is_held_to_max_nnz(writer):
    a = np.random.default_rng(1).standard_normal((40, 30))
    a[:, :10] = 0                                   # 800 nonzeros in a 1200-element array
    data, name = writer(a)
    A = akfviz.load(data, name=name, limits=LoadLimits(max_nnz=800))
    assert A.nnz == 800
    with pytest.raises(ResourceLimitError, match="dense array with 800 nonzero values") as exc:
        akfviz.load(data, name=name, limits=LoadLimits(max_nnz=799))
    assert "max_nnz" in str(exc.value)


def test_npy_on_disk_is_memory_mapped_and_read_right(tmp_path):
    a = np.random.default_rng(2).standard_normal((64, 48)).astype(">f4")
    a[a < 0.5] = 0
    path = tmp_path / "w.npy"
    np.save(path, np.asfortranarray(a))
    _same(akfviz.load(path), _ref(a))
    data = path.read_bytes()
    _same(akfviz.load(data, name="w.npy"), _ref(a))
