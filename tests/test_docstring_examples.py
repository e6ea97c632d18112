"""Every example in the docstrings of the API reference (docs/api) runs, each docstring on its own.

Sphinx's doctest builder (.ci/docs) runs the same examples, but one page's examples share one
namespace, so an example that leans on a name another docstring defined would pass there; here
each docstring starts from the names the reference promises: `np`, `gradtape` and `gt`.
"""
import doctest
import importlib
import inspect

import numpy as np
import pytest

import gradtape

# The modules docs/api documents (docs/api/*.rst), and for each the names it documents.
MODULES = ["gradtape", "gradtape.optimizers", "gradtape.optimizers.schedules", "gradtape.scipy",
           "gradtape.scipy_special", "gradtape.random", "gradtape.linalg", "gradtape.testing", "gradtape.dask"]


def _public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", "")
                 .startswith(module.__name__)]
    return [getattr(module, n) for n in names if not inspect.ismodule(getattr(module, n))]


def docstring_tests():
    """{module.qualname: DocTest} of every docstring with examples, each once (a function
    re-exported by several modules is found once, under the module that defines it)."""
    found = {}
    finders = {True: doctest.DocTestFinder(exclude_empty=True, recurse=False), False: doctest.DocTestFinder()}
    for name in MODULES:
        if name == "gradtape.dask":
            pytest.importorskip("dask")
        module = importlib.import_module(name)
        for obj in [module] + _public(module):
            home = getattr(inspect.getmodule(obj), "__name__", name)
            # a module's own docstring only: its members are the names it exports, found apart
            finder = finders[inspect.ismodule(obj)]
            for test in finder.find(obj, getattr(obj, "__qualname__", name), module=False, globs={}):
                if test.examples:
                    found.setdefault(test.name if test.name.startswith(home) else f"{home}.{test.name}", test)
    return found


TESTS = docstring_tests()


@pytest.mark.parametrize("name", sorted(TESTS))
def test_docstring_example_runs(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    test = TESTS[name]
    test.globs = {"np": np, "gradtape": gradtape, "gt": gradtape}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    runner.run(test, out=report.append, clear_globs=True)
    assert runner.failures == 0, "".join(report)


def test_the_reference_has_examples():
    assert len(TESTS) > 250 and any(name.endswith(".GradientTape") for name in TESTS)
