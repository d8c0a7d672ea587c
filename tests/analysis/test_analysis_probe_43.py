"""Findings of adversarial probe 43 of ``akfviz.analyze`` / ``LSHConfig`` / ``TileSet.subset`` and
``akfviz.generate`` (each test failed on the code before the fix)."""
import types
import warnings

import numpy as np
import pytest

import akfviz
from akfviz import InputError
from akfviz.analysis.lsh import LSHConfig


@pytest.fixture(scope="module")
def pa():
    return akfviz.analyze(akfviz.generate("clustered", n=300, seed=1), tile=16)


# --------------------------------------------------------------------------- LSHConfig

def test_lsh_integral_floats_are_whole_numbers():
    # was: "LSH setting 'num_hashes' must be a whole number, got 32.0." (the tile side takes 32.0)
    cfg = LSHConfig(num_hashes=64.0, bands=np.float64(8), grid=4.0, seed=3.0)
    assert cfg == LSHConfig(num_hashes=64, bands=8, grid=4, seed=3)
    assert all(type(getattr(cfg, k)) is int for k in ("num_hashes", "bands", "grid", "seed"))
    A = akfviz.generate("uniform", n=64, density=0.1, seed=0)
    got = akfviz.analyze(A, tile=16, lsh={"num_hashes": 64.0, "bands": 16.0})
    ref = akfviz.analyze(A, tile=16, lsh={"num_hashes": 64, "bands": 16})
    assert got.lsh == ref.lsh and type(got.lsh.num_hashes) is int
    np.testing.assert_array_equal(got.tiles["cluster"], ref.tiles["cluster"])
    for bad in (32.5, float("nan"), float("inf")):  # still refused
        with pytest.raises(InputError, match="num_hashes.*whole number"):
            LSHConfig(num_hashes=bad)


@pytest.mark.parametrize("field", ["seed", "num_hashes", "jaccard_pairs"])
def test_lsh_huge_values_are_not_echoed_digit_by_digit(field):
    # was: the whole 302-digit number in the message
    with pytest.raises(InputError) as exc:
        LSHConfig(**{field: 2**1000})
    msg = str(exc.value)
    assert "302-digit number" in msg and len(msg) < 200, msg


def test_lsh_huge_repr_is_cut():
    with pytest.raises(InputError) as exc:
        LSHConfig(top_q="x" * 5000)
    assert len(str(exc.value)) < 250


def test_lsh_dict_key_that_is_not_text_is_an_input_error():
    class Key:
        def __str__(self):
            return "grid"

        def __repr__(self):
            return "Key()"

    # was: TypeError "keywords must be strings" from LSHConfig(**lsh)
    with pytest.raises(InputError, match="Unknown LSH setting.*Key()"):
        LSHConfig.from_any({Key(): 4})
    A = np.eye(8)
    with pytest.raises(InputError, match="Unknown LSH setting"):
        akfviz.analyze(A, tile=4, lsh={Key(): 4})
    with pytest.raises(InputError, match=r"Unknown LSH setting\(s\) 1, 'foo'; the settings are num_hashes, "):
        akfviz.analyze(A, tile=4, lsh={1: 2, "foo": 3, "grid": 4})


def test_lsh_accepts_any_mapping():
    # was: "lsh must be None, an LSHConfig or a dict of its fields, got mappingproxy."
    A = akfviz.generate("banded", n=64, seed=0)
    got = akfviz.analyze(A, tile=8, lsh=types.MappingProxyType({"grid": 4, "seed": 5}))
    assert got.lsh == LSHConfig(grid=4, seed=5)


# --------------------------------------------------------------------------- TileSet.subset

def test_subset_float_indices_refused_not_truncated(pa):
    # was: [0.7] silently read as tile 0
    with pytest.raises(InputError, match="whole numbers"):
        pa.tileset.subset([0.7])
    with pytest.raises(InputError, match="whole numbers"):
        pa.tileset.subset(np.array([1.0, 2.0]))
    idx = np.array([4, 0, 2], dtype=np.int32)  # integer indices still work
    sub = pa.tileset.subset(idx)
    assert sub.n_tiles == 3
    for k, t in enumerate(idx):
        np.testing.assert_array_equal(sub.dense(k), pa.tileset.dense(int(t)))
    assert pa.tileset.subset([]).n_tiles == 0
    assert pa.tileset.subset(np.array([1], dtype=np.uint8)).n_tiles == 1


def test_subset_boolean_mask_refused(pa):
    # was: [True, False] read as the tile indices [1, 0]
    mask = np.zeros(pa.n_tiles, dtype=bool)
    mask[[3, 5]] = True
    with pytest.raises(InputError, match="booleans"):
        pa.tileset.subset(mask)


@pytest.mark.parametrize("bad", [["a"], None, [2**70], [np.uint64(2**64 - 1)], "3"])
def test_subset_odd_indices_are_input_errors(pa, bad):
    # was: ValueError / TypeError / OverflowError
    with pytest.raises(InputError, match="Tile indices"):
        pa.tileset.subset(bad)


# --------------------------------------------------------------------------- generators

@pytest.mark.parametrize("kind", ["stencil5", "stencil9"])
def test_stencil_huge_nx_message_is_short(kind):
    # was: the 309 digits of int(1e308) in the message
    with pytest.raises(InputError) as exc:
        akfviz.generate(kind, n=16, nx=1e308)
    msg = str(exc.value)
    assert "309-digit number" in msg and "larger than n=16" in msg and len(msg) < 200, msg


def test_powerlaw_huge_avg_nnz_no_overflow_warning():
    # was: "RuntimeWarning: overflow encountered in multiply"; every row is full either way
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        A = akfviz.generate("powerlaw", n=50, m=30, avg_nnz=1e308, seed=2)
    assert A.shape == (50, 30) and A.nnz == 50 * 30


def test_lsh_config_of_a_reloaded_module_is_accepted():
    # a module reloaded in a long-lived app session makes a second LSHConfig class; an analysis
    # kept from before passed its ``pa.lsh`` back, and was refused "got LSHConfig"
    import dataclasses

    Old = dataclasses.make_dataclass("LSHConfig", [(f.name, f.type, dataclasses.field(default=f.default))
                                                   for f in dataclasses.fields(LSHConfig)],
                                     namespace={"to_dict": lambda self: dataclasses.asdict(self)})
    old = Old(grid=4, seed=9)
    pa = akfviz.analyze(np.eye(32), tile=8, lsh=old)
    assert type(pa.lsh) is LSHConfig and pa.lsh == LSHConfig(grid=4, seed=9)
    with pytest.raises(InputError, match="'grid' must be between 1 and 8"):  # validated again
        akfviz.analyze(np.eye(32), tile=8, lsh=Old(grid=9))


def test_a_huge_declared_shape_is_said_shortly():
    import akfviz as _akfviz

    with pytest.raises(_akfviz.InputError) as e:
        _akfviz.generate("uniform", n=16, m=1e308)
    assert "a 309-digit number" in str(e.value) and len(str(e.value)) < 400
