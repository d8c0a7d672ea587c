"""Robustness: damaged files of every format raise InputError (or load), never anything else.

scipy 1.17's Matrix Market reader can segfault or abort the interpreter on some inputs (a
number cut inside its exponent at the very end of the file, NUL bytes, an open file object).
The loader guards against these; the checks run in a child process so that a regression shows
up as a failed test instead of a crashed test session.
"""
import subprocess
import sys
import textwrap

import pytest

FUZZ = textwrap.dedent('''
    import io, sys
    import numpy as np, scipy.io, scipy.sparse as sp
    from safetensors.numpy import save as st_save
    from akfviz.errors import InputError
    from akfviz.workloads import load

    A = sp.random_array((20, 12), density=0.3, rng=0, format="csr")
    files = {}
    b = io.BytesIO(); scipy.io.mmwrite(b, A); files["mtx"] = b.getvalue()
    b = io.BytesIO(); scipy.io.mmwrite(b, A.toarray()); files["mtx-array"] = b.getvalue()
    b = io.BytesIO(); sp.save_npz(b, A); files["npz"] = b.getvalue()
    b = io.BytesIO(); np.save(b, A.toarray()); files["npy"] = b.getvalue()
    files["safetensors"] = st_save({"w": A.toarray().astype(np.float32)})
    good = files[sys.argv[1]]
    rng = np.random.default_rng(int(sys.argv[2]))
    loaded = rejected = 0
    for trial in range(int(sys.argv[3])):
        data = bytearray(good)
        how = trial % 5
        if how == 0:    # flip a few bytes
            for pos in rng.integers(0, len(data), size=3):
                data[pos] = int(rng.integers(0, 256))
        elif how == 1:  # truncate
            data = data[: int(rng.integers(1, len(data)))]
        elif how == 2:  # a run of binary garbage
            pos = int(rng.integers(0, len(data)))
            data[pos:pos + 16] = rng.integers(0, 256, size=len(data[pos:pos + 16])).astype(np.uint8).tobytes()
        elif how == 3:  # a run of number-like text
            pos = int(rng.integers(0, len(data)))
            run = rng.choice(list(b"0123456789eE+-. \\n%"), size=len(data[pos:pos + 8]))
            data[pos:pos + 8] = bytes(run.astype(np.uint8))
        else:           # truncated, then a dangling number fragment
            data = data[: int(rng.integers(1, len(data)))]
            data += bytes(rng.choice(list(b"0123456789eE+-. "), size=3).astype(np.uint8))
        try:
            M = load(bytes(data))
        except InputError:
            rejected += 1
            continue
        assert isinstance(M, sp.csr_array) and M.dtype == np.float64, type(M)
        assert np.all(np.isfinite(M.data))
        loaded += 1
    print(loaded, rejected)
''')

CRASHERS = textwrap.dedent('''
    import io, pathlib, sys, tempfile
    from akfviz.errors import InputError
    from akfviz.workloads import load
    head = b"%%MatrixMarket matrix coordinate real general\\n3 3 2\\n1 1 1\\n2 2 "
    cases = [head + t for t in (b"3.E-", b"3E-", b"3e", b"3E+", b"9.31017315981155E-", b"3E- ")]
    cases.append(head + b"7.8158172768160760757\\x00\\x00\\n")
    results = []
    for data in cases:
        try:
            M = load(data)
            results.append(("ok", M.nnz))
        except InputError:
            results.append(("rejected", 0))
    with tempfile.TemporaryDirectory() as d:  # the same through a path
        p = pathlib.Path(d) / "cut.mtx"
        p.write_bytes(cases[0])
        try:
            load(p)
        except InputError:
            pass
    print(results)
''')


def _run(code, *args):
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("fmt", ["mtx", "mtx-array", "npz", "npy", "safetensors"])
def test_random_damage_never_crashes(fmt):
    res = _run(FUZZ, fmt, 0, 150)
    assert res.returncode == 0, f"loader crashed (rc={res.returncode}): {res.stderr[-2000:]}"
    loaded, rejected = map(int, res.stdout.split())
    assert loaded + rejected == 150 and rejected > 0


def test_known_scipy_mtx_crashers_are_defused():
    res = _run(CRASHERS)
    assert res.returncode == 0, f"loader crashed (rc={res.returncode}): {res.stderr[-2000:]}"
