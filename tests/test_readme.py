"""The README's library example runs as written (a student copies it first)."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

CHECKS = """
# appended by tests/test_readme.py
ref = A @ x
rel = float(((y - ref) ** 2).sum() ** 0.5 / (ref ** 2).sum() ** 0.5)
assert y.shape == (A.shape[0],)
assert rel <= 0.5, rel  # alpha = beta = 1 gives a lossy plan: y is close to A @ x, not equal
assert list(df.index) == ["Dense", "BlockSparse", "StaticSparse", "AKF"], df.index
print("README example ok", rel)
"""


def test_readme_library_example_runs(tmp_path):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = text.split("```python", 1)[1].split("```", 1)[0]
    script = tmp_path / "readme_example.py"
    script.write_text(code + CHECKS, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "README example ok" in done.stdout
