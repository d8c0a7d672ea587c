"""matrix_choices: what tensor= can name in a container file, the same list for every wrapping
(plain, gzip, bzip2, xz, one-member tar), and every choice loads."""
import bz2
import gzip
import io
import lzma

import numpy as np
import pytest
from archive_builders import tar_bytes
import scipy.io
import scipy.sparse as sp

import akfviz
from akfviz.workloads.loaders import load, matrix_choices


def _safetensors():
    from safetensors.numpy import save

    rng = np.random.default_rng(0)
    return save({"w": rng.standard_normal((12, 8)), "v": rng.standard_normal((8, 12)),
                 "bias": rng.standard_normal(8), "empty": np.zeros((0, 5))})


def _savez():
    rng = np.random.default_rng(1)
    buf = io.BytesIO()
    np.savez(buf, a=rng.standard_normal((7, 5)), b=rng.standard_normal((5, 7)), c=np.arange(3.0))
    return buf.getvalue()


def _tar(members, mode="w:gz"):
    return tar_bytes(members, mode=mode)


WRAPS = {"plain": lambda d, n: (d, n), "gz": lambda d, n: (gzip.compress(d), n + ".gz"),
         "bz2": lambda d, n: (bz2.compress(d), n + ".bz2"), "xz": lambda d, n: (lzma.compress(d), n + ".xz"),
         "tar.gz": lambda d, n: (_tar([(n, d)]), "one.tar.gz")}


@pytest.mark.parametrize("wrap", list(WRAPS))
@pytest.mark.parametrize("maker, fname, kind, names", [
    (_safetensors, "w.safetensors", "tensor", ["v", "w"]),   # file order; 1-D and 0×5 left out
    (_savez, "arrays.npz", "array", ["a", "b"]),
])
def test_every_wrapping_offers_the_same_loadable_choices(wrap, maker, fname, kind, names):
    data, name = WRAPS[wrap](maker(), fname)
    ch = matrix_choices(data, name=name)
    assert sorted(ch["name"]) == names and set(ch["kind"]) == {kind}
    for n, shape in zip(ch["name"], ch["shape"]):
        A = load(data, name=name, tensor=n)
        assert A.shape == shape


def test_archive_members_come_first_default_member_first():
    def mtx(m, n):
        buf = io.BytesIO()
        scipy.io.mmwrite(buf, sp.random(m, n, density=0.3, random_state=2, format="coo"))
        return buf.getvalue()

    data = _tar([("g/g_b.mtx", mtx(9, 1)), ("g/g.mtx", mtx(9, 6))])
    ch = matrix_choices(data, name="g.tar.gz")
    assert list(ch["name"]) == ["g/g.mtx", "g/g_b.mtx"] and set(ch["kind"]) == {"member"}
    assert load(data, name="g.tar.gz", tensor="g/g_b.mtx").shape == (9, 1)


def test_files_of_one_matrix_offer_nothing():
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.random(6, 4, density=0.5, random_state=3, format="coo"))
    one_mtx = buf.getvalue()
    buf = io.BytesIO()
    sp.save_npz(buf, sp.random_array((6, 4), density=0.5, random_state=3, format="csr"))
    sparse_npz = buf.getvalue()
    buf = io.BytesIO()
    np.save(buf, np.eye(3))
    npy = buf.getvalue()
    buf = io.BytesIO()
    np.savez(buf, only=np.eye(4), vec=np.ones(4))     # one 2-D array: load takes it without tensor=
    one_array = buf.getvalue()
    for data, name in ((one_mtx, "a.mtx"), (sparse_npz, "s.npz"), (npy, "e.npy"),
                       (gzip.compress(one_mtx), "a.mtx.gz"), (one_array, "one.npz")):
        assert matrix_choices(data, name=name).empty, name
        load(data, name=name)


def test_a_single_tensor_is_still_listed_with_its_shape():
    from safetensors.numpy import save

    ch = matrix_choices(save({"layer.weight": np.ones((4, 3), np.float32)}), name="w.safetensors")
    assert ch.to_dict("records") == [{"name": "layer.weight", "shape": (4, 3), "dtype": "F32", "kind": "tensor"}]


def test_refusals_are_input_errors():
    with pytest.raises(akfviz.InputError, match="empty"):
        matrix_choices(b"", name="x.npz")
    with pytest.raises(akfviz.InputError):
        matrix_choices(b"PK\x03\x04 not really a zip", name="x.npz")
    with pytest.raises(akfviz.InputError):
        matrix_choices(gzip.compress(b"hello")[:-6], name="x.mtx.gz")   # truncated gzip
