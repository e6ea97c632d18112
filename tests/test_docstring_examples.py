"""Every example in the docstrings of the API reference (docs/api) runs, each docstring on its own;
so do the examples in the docstrings of gradtape's other modules, but for a listed few.

Sphinx's doctest builder (.ci/docs) runs the reference's examples, but one page's examples share
one namespace, so an example that leans on a name another docstring defined would pass there;
here each docstring starts from the names the reference promises: `np`, `gradtape` and `gt`
(and, in the other modules, the module's own names, as `python -m doctest` would).
"""
import doctest
import importlib
import inspect
import pkgutil

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

# Contributors' sketches in internal modules: they need an LLVM IRBuilder in the middle of code
# generation, or IR that a pass builds, or they would declare an op in the global op table.
FRAGMENTS = {"gradtape.codegen.dynamic_generalize", "gradtape.codegen.math.emit_math",
             "gradtape.codegen.math_ir.FloatOps", "gradtape.codegen.math_ir.VectorFloatOps",
             "gradtape.codegen.math_loops.hint_math_loops", "gradtape.ir.inline.substitute_inputs",
             "gradtape.ir.inline_calls.inline_calls", "gradtape.ir.op.new_op",
             "gradtape.ir.sparsity.colour_columns"}


def internal_docstring_tests():
    """{name: DocTest} of the other modules' docstrings with examples (module globals, as
    doctest gives them), those of the reference and the sketches left out."""
    found, finder = {}, doctest.DocTestFinder(exclude_empty=True)
    covered = {test.docstring for test in TESTS.values()}  # a docstring the reference's tests run
    for info in pkgutil.walk_packages(gradtape.__path__, "gradtape."):
        if info.name in ("gradtape.demo", "gradtape.__main__", "gradtape.dask") or info.name.startswith("gradtape.cli"):
            continue
        for test in finder.find(importlib.import_module(info.name)):
            if test.examples and test.docstring not in covered and test.name not in FRAGMENTS:
                found[test.name] = test
    return found


INTERNAL = internal_docstring_tests()


def run(test, globs) -> None:
    test.globs = dict(globs, np=np, gradtape=gradtape, gt=gradtape)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    runner.run(test, out=report.append, clear_globs=True)
    assert runner.failures == 0, "".join(report)


@pytest.mark.parametrize("name", sorted(TESTS))
def test_docstring_example_runs(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    run(TESTS[name], {})


@pytest.mark.parametrize("name", sorted(INTERNAL))
def test_internal_docstring_example_runs(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(INTERNAL[name], INTERNAL[name].globs)


def test_the_reference_has_examples():
    assert len(TESTS) > 250 and any(name.endswith(".GradientTape") for name in TESTS)
    assert "gradtape.runtime.cache.compile_function" in INTERNAL  # and the other modules too
    assert not FRAGMENTS & set(INTERNAL)
