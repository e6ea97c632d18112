"""The package's layers import only downwards: tracer -> ir <- codegen <- runtime.

Every import statement in gradtape/ is read from the source (those inside
functions too) and resolved to the subpackage it names. The rules:

- ir/ imports none of tracer, staging, codegen, runtime, nor llvmlite: it is
  the model every other layer reads, and it runs without a compiler;
- codegen/ and runtime/ import neither tracer nor staging: they compile
  IR, whoever traced it;
- tracer/ imports none of staging, codegen, runtime: the tape is handed
  compilation as a hook (gradtape.runtime.serving), so recording never loads
  LLVM on its own;
- no two subpackages import each other, directly or through others;
- an import inside a function is only for an optional dependency (SciPy,
  matplotlib, Dask, the optional C extension), whose absence must not stop
  the package from importing, or for what is loaded at first use so that
  `import gradtape` does not pay for it (llvmlite and the compiler built on
  it, networkx: tests/test_import_cost.py); the rules above hold for those
  imports too, and for the names packages load at first use (_lazy.py).
"""
from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

import gradtape

ROOT = pathlib.Path(gradtape.__file__).parent
SUBPACKAGES = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists())

FORBIDDEN = {
    "ir": {"tracer", "staging", "codegen", "runtime", "llvmlite"},
    "codegen": {"tracer", "staging"},
    "runtime": {"tracer", "staging"},
    "tracer": {"staging", "codegen", "runtime"},
}
OPTIONAL = {"scipy", "matplotlib", "dask", "distributed", "_crecord"}
DEFERRED = ("llvmlite", "networkx", "gradtape.codegen", "gradtape.runtime")


def _layer(path: pathlib.Path) -> str:
    """The subpackage a module belongs to ('' for the package's top-level modules)."""
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else ""


def _imports(path: pathlib.Path):
    """(names imported, in a function?, line) for every import in `path`, as absolute dotted names."""
    tree = ast.parse(path.read_text(), str(path))
    package = ["gradtape", *path.relative_to(ROOT).parent.parts]
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names = [f"{module}.{alias.name}" for alias in node.names] if not node.module else [module]
        else:
            continue
        yield names, id(node) in in_function, node.lineno


def _lazy_imports(path: pathlib.Path):
    """(module, line) for each module a `_lazy.names(__name__, globals(), {name: module}, ...)`
    table in `path` loads at first use, as absolute dotted names."""
    package = ".".join(["gradtape", *path.relative_to(ROOT).parent.parts])
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "_lazy.names":
            for value in node.args[2].values:
                yield package + value.value, node.lineno


def _target_layer(name: str) -> str | None:
    """The gradtape subpackage (or third-party top-level name) that a dotted import names."""
    parts = name.split(".")
    if parts[0] != "gradtape":
        return parts[0]
    return parts[1] if len(parts) > 1 and parts[1] in SUBPACKAGES else None


SOURCES = sorted(ROOT.rglob("*.py"))


def test_the_walk_sees_the_package():
    assert {"ir", "tracer", "staging", "codegen", "runtime"} <= set(SUBPACKAGES)
    assert len(SOURCES) > 100


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer):
    bad = []
    for path in SOURCES:
        if _layer(path) != layer:
            continue
        lazy = [([name], False, line) for name, line in _lazy_imports(path)]
        for names, _, line in list(_imports(path)) + lazy:
            for name in names:
                if _target_layer(name) in FORBIDDEN[layer]:
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not bad, f"{layer}/ must not import {sorted(FORBIDDEN[layer])}:\n" + "\n".join(bad)


def test_no_cycle_between_subpackages():
    graph = nx.DiGraph()
    where = {}
    for path in SOURCES:
        source = _layer(path)
        if not source:
            continue
        for names, _, line in _imports(path):
            for name in names:
                target = _target_layer(name)
                if target in SUBPACKAGES and target != source:
                    graph.add_edge(source, target)
                    where.setdefault((source, target), f"{path.relative_to(ROOT)}:{line}")
    cycles = list(nx.simple_cycles(graph))
    described = [" -> ".join(c + [c[0]]) + "  (" + ", ".join(where[(a, b)] for a, b in zip(c, c[1:] + c[:1])) + ")"
                 for c in cycles]
    assert not cycles, "subpackages import each other:\n" + "\n".join(described)


def test_imports_inside_functions_are_only_for_optional_dependencies():
    bad = []
    for path in SOURCES:
        for names, in_function, line in _imports(path):
            if in_function and not any(name.split(".")[-1] in OPTIONAL or name.split(".")[0] in OPTIONAL
                                       or any(name == d or name.startswith(d + ".") for d in DEFERRED)
                                       for name in names):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {', '.join(names)} inside a function")
    assert not bad, f"{len(bad)} imports inside functions:\n" + "\n".join(bad)


def test_names_loaded_at_first_use_name_modules_of_the_package():
    tables = 0
    for path in SOURCES:
        for name, line in _lazy_imports(path):
            tables += 1
            module = ROOT.parent.joinpath(*name.split("."))
            assert module.with_suffix(".py").exists() or (module / "__init__.py").exists(), \
                f"{path.relative_to(ROOT)}:{line}: {name} is not a module of gradtape"
    assert tables >= 10  # the package root's, the IR's, the runtime's, the code generator's
