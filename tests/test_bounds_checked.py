"""The library's numba kernels compiled with numba's bounds checks, in another process with a fresh
cache: the whole pipeline — ``analyze``, ``select`` in its modes, the fused ``matvec`` / ``matmat``,
``simulate`` and ``compare`` — on matrices that reach the kernels' routes.

The hot kernels index with unsigned integers and skip numba's checks for speed, and some write past
what they fill on purpose (the eager pass takes a word's bits eight at a time into a buffer with
slack). Here every array access is checked: an index out of range raises IndexError, which unchecked
code would turn into a silent read of whatever lies there, or a write over it. The analysis matrices:
column blocks ordered by a bitmap with a few bits per word and with many, 64 chunks with tens of
thousands of two-entry tiles (the direct table of bit pairs, and with 74 density bins the hashed
route), a tile side that is not a power of two with edge tiles, full tiles (entries grouped by tile),
a row block whose buffers fill to their last slot. The pipeline matrices: each structured workload,
so that every packed format (DIA, BLOCK, N:M, CSC, BITMAP, DENSE, LOWRANK, int8) is built and run."""
import os
import subprocess
import sys

import pytest

_PROBE = """
import numpy as np, scipy.sparse as sp
import akfviz
rng = np.random.default_rng(1)
one = np.zeros((1, 6400)); one[0, rng.choice(200, 100, replace=False) * 32 + 5] = 1.0
every = np.zeros((32, 3200)); every[3, ::32] = 2.0; every[7, 1::32] = 3.0
for A, T, lsh in [
    (sp.random_array((400, 200_000), density=5e-5, format="csr", rng=rng), 32, None),
    (sp.random_array((24000, 24000), density=4.2e-4, format="csr", rng=rng), 32, None),
    (sp.random_array((24000, 24000), density=4.2e-4, format="csr", rng=rng), 64, dict(bins_per_decade=20)),
    (sp.csr_array(one), 32, None),
    (sp.csr_array(every), 32, None),
]:
    pa = akfviz.analyze(A, tile=T, lsh=lsh)
    assert pa.n_tiles > 0 and pa.clusters["size"].sum() == pa.n_tiles
print("analysis in bounds", flush=True)

small = akfviz.HardwareConfig(rows=4, cols=4, sram_bytes_per_pe=8192)
formats = ["DIA", "BLOCK", "CSC", "BITMAP", "DENSE", "NM2:4", "LOWRANK2", "QUANT8", "QUANT8D", "PRUNE50", "SKIP"]
for A, T in [
    (sp.random_array((3000, 2600), density=4e-3, format="csr", rng=rng), 32),
    (akfviz.generate("banded", n=1500, seed=0), 16),
    (akfviz.generate("stencil9", n=900, seed=0), 32),
    (akfviz.generate("block_diagonal", n=512, seed=3), 32),
    (akfviz.generate("nm", n=256, seed=1), 8),
    (akfviz.generate("llm", n=384, sparsity=0.8, seed=0), 32),
    (sp.random_array((700, 500), density=0.02, format="csr", rng=rng), 13),
]:
    pa = akfviz.analyze(A, tile=T)
    x = rng.standard_normal(A.shape[1])
    X = rng.standard_normal((A.shape[1], 3))
    for kw in (dict(), dict(granularity="tile"), dict(error_budget=0.0), dict(error_budget=0.02),
               dict(alpha=1.0, beta=50.0), dict(kernels=formats, alpha=1.0, beta=20.0)):
        plan = akfviz.select(pa, **kw)
        assert np.all(np.isfinite(plan.matvec(x))) and np.all(np.isfinite(plan.matmat(X)))
    pa.tiles
    for hw in (akfviz.HardwareConfig(), small):
        akfviz.simulate(akfviz.select(pa), hw)
        akfviz.simulate(akfviz.select(pa, granularity="tile"), hw, iterations=2, persistent=False, fused=False)
    akfviz.compare(A, hw=akfviz.HardwareConfig(rows=16, cols=16), tile=T)
print("pipeline in bounds")
"""


@pytest.mark.first
@pytest.mark.slow
def test_the_pipeline_reads_and_writes_in_bounds(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=1500)
    assert out.returncode == 0, out.stdout[-500:] + out.stderr[-3000:]
    assert "analysis in bounds" in out.stdout and "pipeline in bounds" in out.stdout
