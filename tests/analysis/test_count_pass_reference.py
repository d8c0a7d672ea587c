"""The count pass of the analysis (``tilepass._count``): its verdict "canonical or not" and its
tiles per row block against a plain Python reference, on random CSR arrays with every kind of
defect put in at random places — the flat entry loop finds a row's order from two counts, so
row boundaries, empty rows and the first and last entries of row blocks are the cases to probe."""
import numpy as np
import pytest

from akfviz.analysis import tilepass


def _reference(indptr, indices, data, shape, T):
    """(canonical?, distinct column blocks per row block) by a loop over rows."""
    n_rows, n_cols = shape
    nnz = len(indices)
    counts = np.zeros(-(-n_rows // T), dtype=np.int64)
    ok = True
    for row in range(n_rows):
        s, e = int(indptr[row]), int(indptr[row + 1])
        if e < s or s < 0 or e > nnz:
            return False, None
        cols = [int(c) for c in indices[s:e]]
        if any(c < 0 or c >= n_cols for c in cols) or any(b <= a for a, b in zip(cols, cols[1:])):
            ok = False
        if len(data) and any(v == 0.0 or not np.isfinite(v) for v in data[s:e]):
            ok = False
    if not ok:
        return False, None
    for b in range(counts.size):
        s, e = int(indptr[b * T]), int(indptr[min((b + 1) * T, n_rows)])
        counts[b] = len({int(c) // T for c in indices[s:e]})
    return True, counts


def _random_csr(rng, n_rows, n_cols, density):
    rows = []
    for _ in range(n_rows):
        k = rng.binomial(n_cols, density) if rng.random() > 0.2 else 0   # some empty rows
        rows.append(np.sort(rng.choice(n_cols, size=k, replace=False)))
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([r.size for r in rows])
    indices = np.concatenate(rows).astype(np.int64) if indptr[-1] else np.zeros(0, np.int64)
    data = rng.standard_normal(indices.size)
    data[data == 0.0] = 1.0
    return indptr, indices, data


def _defect(rng, indptr, indices, data, n_cols):
    """One defect (or none) at a random place; returns its name."""
    nnz = indices.size
    kind = rng.choice(["none", "swap", "repeat", "negative", "too large", "zero", "nan", "inf",
                       "row start equal", "pointer"])
    if nnz < 2 and kind in ("swap", "repeat", "row start equal"):
        return "none"
    if nnz == 0 and kind != "pointer":
        return "none"
    k = int(rng.integers(0, nnz)) if nnz else 0
    if kind == "swap":
        k = int(rng.integers(0, nnz - 1))
        indices[k], indices[k + 1] = indices[k + 1], indices[k]
    elif kind == "repeat":
        k = int(rng.integers(1, nnz))
        indices[k] = indices[k - 1]
    elif kind == "negative":
        indices[k] = -1 - int(rng.integers(0, 3))
    elif kind == "too large":
        indices[k] = n_cols + int(rng.integers(0, 3))
    elif kind == "zero":
        data[k] = 0.0
    elif kind == "nan":
        data[k] = np.nan
    elif kind == "inf":
        data[k] = -np.inf
    elif kind == "row start equal":
        # a row's first index equal to (or below) the previous row's last: allowed
        starts = [int(indptr[r]) for r in range(1, indptr.size - 1)
                  if indptr[r + 1] > indptr[r] > 0]
        if starts:
            s = starts[int(rng.integers(0, len(starts)))]
            indices[s] = min(indices[s - 1], indices[s])   # still below the row's next index
    elif kind == "pointer":
        r = int(rng.integers(1, indptr.size - 1)) if indptr.size > 2 else 0
        if r:
            indptr[r] = indptr[r - 1] - 1 if rng.random() < 0.5 else indptr[-1] + 1
    return str(kind)


@pytest.mark.parametrize("T", [4, 8, 5, 32])
@pytest.mark.parametrize("values", [False, True], ids=["indices only", "with values"])
def test_count_pass_against_the_reference(T, values):
    rng = np.random.default_rng(100 + T + 7 * values)
    seen = set()
    for trial in range(250):
        n_rows, n_cols = int(rng.integers(1, 40)), int(rng.integers(1, 70))
        indptr, indices, data = _random_csr(rng, n_rows, n_cols, float(rng.choice([0.02, 0.1, 0.5])))
        kind = _defect(rng, indptr, indices, data, n_cols)
        vals = data if values else np.zeros(0)
        want_ok, want = _reference(indptr, indices, vals, (n_rows, n_cols), T)
        ok, counts = tilepass._count(indptr, indices, vals, (n_rows, n_cols), T)
        assert ok == want_ok, (trial, kind)
        if ok:
            np.testing.assert_array_equal(counts, want, err_msg=f"{trial} {kind}")
        seen.add((kind, ok))
    # the defects were there, and were caught; allowed row starts were let through
    for kind in ("swap", "repeat", "negative", "too large", "pointer"):
        assert (kind, False) in seen, kind
    assert ("row start equal", True) in seen and ("none", True) in seen
    if values:
        assert ("zero", False) in seen and ("nan", False) in seen


def test_count_pass_copies_checked_entries():
    rng = np.random.default_rng(3)
    indptr, indices, data = _random_csr(rng, 50, 60, 0.1)
    for T in (8, 6):
        ind_out = np.empty_like(indices)
        dat_out = np.empty_like(data)
        ok, counts = tilepass._count(indptr, indices, data, (50, 60), T, ind_out, dat_out)
        assert ok
        np.testing.assert_array_equal(ind_out, indices)
        np.testing.assert_array_equal(dat_out, data)
        np.testing.assert_array_equal(counts, _reference(indptr, indices, data, (50, 60), T)[1])


_BOUNDS_PROBE = """
import numpy as np
from akfviz.analysis import tilepass
cases = [
    (np.array([0, 0, 0, 2, 3, 3, 3]), np.array([1, 5, 2]), (6, 8)),    # empty first and last rows
    (np.array([0, 0, 0]), np.zeros(0, np.int64), (2, 5)),                 # no entries at all
    (np.array([0, 1]), np.array([4]), (1, 9)),                            # one row
    (np.array([0, 3, 3, 3, 3, 5]), np.array([0, 3, 6, 1, 2]), (5, 7)),    # a drop at a row start
]
for indptr, indices, shape in cases:
    data = np.arange(1.0, indices.size + 1.0)
    for T in (4, 3):
        for vals in (np.zeros(0), data):
            ok, _ = tilepass._count(indptr, indices, vals, shape, T)
            assert ok
        ok, _ = tilepass._count(indptr, indices, data, shape, T, np.empty_like(indices), np.empty_like(data))
        assert ok
print("in bounds")
"""


def test_count_pass_reads_no_index_out_of_range(tmp_path):
    """The count pass compiled with numba's bounds checks (a fresh cache, another process) on arrays
    whose first or last rows are empty: every index it reads is in range (reading before the first
    entry or past the last would raise IndexError here; unchecked it reads whatever lies there)."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _BOUNDS_PROBE], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "in bounds" in out.stdout
