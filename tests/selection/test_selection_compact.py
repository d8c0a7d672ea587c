"""The selector reads the analysis' compact per-tile arrays: the same sums and plans as from the
tiles table, bit for bit, and no full pass in cluster mode (the plan's resource against a plain
Python loop: test_selection_speed_paths)."""
import numpy as np
import pytest
import scipy.sparse as sp

import akfviz


def test_cluster_fro2_sums_equal_bincount_bit_for_bit():
    """The analysis sums ``fro2`` per cluster in tile order: what the selector scales the
    representatives' errors by (``cluster_mass_ratio``)."""
    for A in (sp.random_array((20000, 20000), density=5e-4, format="csr", rng=np.random.default_rng(3)),
              akfviz.generate("llm", n=800, sparsity=0.9, seed=2)):
        pa = akfviz.analyze(A, tile=16)
        ref = np.bincount(pa.tiles["cluster"], weights=pa.tiles["fro2"], minlength=pa.n_clusters)
        np.testing.assert_array_equal(pa.compact.cluster_fro2, ref)


def test_tile_area_density_and_top_from_the_compact_arrays():
    pa = akfviz.analyze(akfviz.generate("uniform", n=1000, m=777, density=0.01, seed=4), tile=24)
    comp = pa.compact
    idx = np.array([0, pa.n_tiles - 1, 7, 3])
    assert not pa._full.done
    np.testing.assert_array_equal(comp.area(idx), (pa.tiles["h"] * pa.tiles["w"]).to_numpy()[idx])
    np.testing.assert_array_equal(comp.area(), (pa.tiles["h"] * pa.tiles["w"]).to_numpy())
    np.testing.assert_array_equal(comp.density_of(idx), pa.tiles["density"].to_numpy()[idx])
    np.testing.assert_array_equal(comp.density, pa.tiles["density"].to_numpy())
    np.testing.assert_array_equal(comp.top, pa.tiles["top_mass"].to_numpy())


@pytest.mark.parametrize("kw", [dict(), dict(granularity="tile"), dict(error_budget=0.01),
                                dict(resource_budget=0.3, resource="cycles"), dict(alpha=5.0, resource="mix")],
                         ids=["cluster", "tile", "error budget", "resource budget", "mix"])
def test_selection_is_the_same_before_and_after_the_full_pass(kw):
    A = sp.random_array((3000, 2500), density=3e-3, format="csr", rng=np.random.default_rng(8))
    fresh = akfviz.analyze(A)
    ready = akfviz.analyze(A)
    ready.tileset.v
    p1, p2 = akfviz.select(fresh, **kw), akfviz.select(ready, **kw)
    assert list(p1.tile_kernels) == list(p2.tile_kernels)
    assert p1.resource == p2.resource and p1.relative_error == p2.relative_error
    for f in ("E", "R", "C", "chosen"):
        np.testing.assert_array_equal(getattr(p1.selection, f), getattr(p2.selection, f))
    np.testing.assert_array_equal(p1.tile_errors, p2.tile_errors)
