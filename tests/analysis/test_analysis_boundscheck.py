"""``analyze`` compiled with numba's bounds checks, in another process with a fresh cache.

The analysis kernels index with unsigned integers and skip numba's checks for speed; some of them
write past the end of what they fill on purpose (the eager pass takes a word's bits eight at a time
into a buffer with slack). Here every array access is checked: an index out of range raises
IndexError, which unchecked code would turn into a silent read of whatever lies there, or a write
over it. The matrices reach the eager pass's routes: column blocks ordered by a bitmap with a few
bits per word and with many, a row block using its buffers to the last slot, 64 chunks with tens of thousands of two-entry tiles (the direct table
of bit pairs), a tile side that is not a power of two with edge tiles, and full tiles (entries
grouped by tile for their diagonals and top-q sums)."""
import os
import subprocess
import sys

_PROBE = """
import numpy as np, scipy.sparse as sp
import akfviz
rng = np.random.default_rng(1)
cases = [
    (sp.random_array((400, 200_000), density=5e-5, format="csr", rng=rng), 32, None),
    (sp.random_array((24000, 24000), density=4.2e-4, format="csr", rng=rng), 32, None),
    (sp.random_array((24000, 24000), density=4.2e-4, format="csr", rng=rng), 64, dict(bins_per_decade=20)),
    (sp.random_array((3000, 2500), density=3e-3, format="csr", rng=rng), 13, None),
    (akfviz.generate("block_diagonal", n=1024, seed=3), 32, None),
]
# one row block whose entries are all in different column blocks (d = its number of entries), and
# one whose column blocks are all occupied (d = the number of column blocks): the buffers' bounds
one = np.zeros(6400); one[rng.choice(200, 100, replace=False) * 32 + 5] = 1.0
every = np.zeros((32, 3200)); every[3, ::32] = 2.0; every[7, 1::32] = 3.0
cases += [(sp.csr_array(one[None, :]), 32, None), (sp.csr_array(every), 32, None)]
for A, T, lsh in cases:
    pa = akfviz.analyze(A, tile=T, lsh=lsh)
    assert pa.n_tiles > 0 and pa.clusters["size"].sum() == pa.n_tiles
print("in bounds")
"""


def test_analyze_reads_and_writes_in_bounds(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "in bounds" in out.stdout
