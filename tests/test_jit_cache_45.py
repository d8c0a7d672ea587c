"""The kernels' machine code is cached per version of the library's sources (akfviz/_jit.py): numba
checks a cached kernel against its own file only, so a kernel that inlines or calls code of another
module kept running the old code after that module changed (found by a mutation probe, forty-fifth
session)."""
import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from akfviz import _jit

PACKAGE = Path(_jit.__file__).resolve().parent


def _copy_package(dest: Path) -> Path:
    pkg = dest / "akfviz"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


def test_the_digest_follows_the_core_sources_and_not_the_front_end(tmp_path):
    pkg = _copy_package(tmp_path)
    d0 = _jit.source_digest(pkg)
    assert d0 == _jit.source_digest(PACKAGE) and len(d0) == 16
    (pkg / "cli.py").write_text((pkg / "cli.py").read_text() + "\n# an edit of the command line\n")
    (pkg / "viz" / "npu.py").write_text((pkg / "viz" / "npu.py").read_text() + "\n# a chart edit\n")
    assert _jit.source_digest(pkg) == d0                      # the front end never recompiles kernels
    core = pkg / "selection" / "structure.py"                 # constants only, no numba import
    core.write_text(core.read_text() + "\n# an edit\n")
    assert _jit.source_digest(pkg) != d0


def _relative_targets(path: Path, tree) -> list:
    """Modules (as paths relative to the package, without .py) that ``path`` imports from akfviz."""
    here = path.relative_to(PACKAGE).parent
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.parent
                mod = (node.module or "").replace(".", "/")
                out.append((base / mod).as_posix() if mod else base.as_posix())
                out.extend((base / mod / a.name).as_posix() for a in node.names)
            elif node.module and node.module.startswith("akfviz"):
                out.append(node.module[len("akfviz."):].replace(".", "/"))
        elif isinstance(node, ast.Import):
            out.extend(a.name[len("akfviz."):].replace(".", "/") for a in node.names if a.name.startswith("akfviz."))
    return out


def test_no_module_of_the_digest_imports_a_front_end_module():
    # what the digest leaves out must not reach compiled code: no core module imports it
    bad = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(_jit.FRONT_END) or "__pycache__" in rel:
            continue
        for target in _relative_targets(path, ast.parse(path.read_text())):
            t = target.lstrip("./")
            if t.startswith(_jit.FRONT_END) or t in ("cli", "__main__"):
                bad.append((rel, target))
    assert not bad, bad


def test_the_kernels_are_cached_in_the_digest_folder():
    from akfviz.analysis.tiling import _popcount64
    import numpy as np

    assert _jit.CACHE_DIR is not None and _jit.source_digest() in _jit.CACHE_DIR
    _popcount64(np.uint64(5))
    assert Path(_popcount64._cache._cache_path).resolve().is_relative_to(Path(_jit.CACHE_DIR).resolve())


_CALLEE = '''
from ._jit import njit_inline

@njit_inline
def part():
    return {value}
'''
_CALLER = '''
from ._jit import njit_cached
from ._probe_callee import part

@njit_cached
def whole():
    return part() + 0
'''


def _run(root: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(root)
    code = "from akfviz._probe_caller import whole; import akfviz._jit as j; print(whole(), j.CACHE_DIR)"
    # run in root: the interpreter puts its working folder first on the path
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                         cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_an_edit_of_an_inlined_function_in_another_module_is_compiled_again(tmp_path):
    pkg = _copy_package(tmp_path)
    (pkg / "_probe_callee.py").write_text(_CALLEE.format(value=1))
    (pkg / "_probe_caller.py").write_text(_CALLER)
    value, first_dir = _run(tmp_path)
    assert value == "1" and Path(first_dir).is_relative_to(pkg)
    assert any(Path(first_dir).rglob("*.nbi"))               # the caller's code was cached there
    assert _run(tmp_path) == [value, first_dir]               # and read back, same folder
    # only the callee's file changes; numba's own check looks at the caller's file, unchanged
    (pkg / "_probe_callee.py").write_text(_CALLEE.format(value=2))
    value2, second_dir = _run(tmp_path)
    assert value2 == "2" and second_dir != first_dir


def test_old_cache_folders_are_pruned(tmp_path):
    pkg = _copy_package(tmp_path)
    cache = pkg / "__pycache__"
    for i in range(6):
        (cache / f"numba-old{i}").mkdir(parents=True)
        os.utime(cache / f"numba-old{i}", (1000 + i, 1000 + i))
    (pkg / "_probe_callee.py").write_text(_CALLEE.format(value=3))
    (pkg / "_probe_caller.py").write_text(_CALLER)
    _, used = _run(tmp_path)
    left = sorted(p.name for p in cache.glob("numba-*"))
    # the folder in use and the KEEP_CACHES - 1 most recently used others
    assert Path(used).name in left and len(left) == _jit.KEEP_CACHES
    assert {"numba-old5", "numba-old4"} <= set(left)


def test_a_user_cache_dir_gets_a_folder_per_digest_and_is_not_pruned(tmp_path):
    pkg = _copy_package(tmp_path)
    user = tmp_path / "user-cache"
    for i in range(5):
        (user / f"akfviz-other{i}").mkdir(parents=True)
    (pkg / "_probe_callee.py").write_text(_CALLEE.format(value=4))
    (pkg / "_probe_caller.py").write_text(_CALLER)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(user), PYTHONPATH=str(tmp_path))
    code = "from akfviz._probe_caller import whole; import akfviz._jit as j; print(whole(), j.CACHE_DIR)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    value, used = out.stdout.split()
    assert value == "4" and Path(used).parent == user and Path(used).name.startswith("akfviz-")
    assert len(list(user.glob("akfviz-other*"))) == 5
