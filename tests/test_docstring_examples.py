"""Every ``Examples`` section in the library's docstrings runs and prints what it says."""
import doctest
import importlib
import pathlib
import pkgutil

import pytest

import akfviz

ROOT = pathlib.Path(akfviz.__file__).resolve().parent


def _modules_with_examples():
    names = []
    for info in pkgutil.walk_packages([str(ROOT)], prefix="akfviz."):
        path = ROOT.joinpath(*info.name.split(".")[1:])
        src = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if src.exists() and ">>> " in src.read_text(encoding="utf-8"):
            names.append(info.name)
    return names


MODULES = _modules_with_examples()


def test_the_examples_are_found():
    # the scan itself: a rename of the package layout must not silently leave nothing to run
    assert len(MODULES) >= 15 and "akfviz.analysis.pattern" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module) if t.examples]
    assert tests, name
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (output above)"
