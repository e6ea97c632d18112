"""The IR's modules import each other at module level only, without cycles.

Imports inside functions hide cycles (and cost a lookup per call); only
optional dependencies (SciPy) may be imported there, and networkx, which the
IR loads at its first colouring rather than with `import gradtape` (200 ms;
tests/test_import_cost.py).
"""
import ast
import pathlib

import networkx as nx

import gradtape.ir

IR = pathlib.Path(gradtape.ir.__file__).parent
OPTIONAL = {"scipy", "matplotlib"}
LOADED_AT_FIRST_USE = {"networkx"}


def _module_name(path: pathlib.Path) -> str:
    parts = ("gradtape", "ir") + path.relative_to(IR).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path):
    """(imported module, line, whether at module level) of every import in the file."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, id(node) in top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"  # `from pkg import module` imports the module
                yield (full if _is_module(full) else base), node.lineno, id(node) in top


def _is_module(name: str) -> bool:
    path = IR.parent.parent / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _files():
    return sorted(IR.rglob("*.py"))


def test_no_imports_inside_functions_except_optional_dependencies():
    found = [
        f"{path.relative_to(IR.parent)}:{line} imports {module}"
        for path in _files()
        for module, line, at_top in _imports(path)
        if not at_top and module.split(".")[0] not in OPTIONAL | LOADED_AT_FIRST_USE
    ]
    assert not found, "imports inside functions (move them to the top of the module): " + "; ".join(found)


def test_ir_modules_import_each_other_without_cycles():
    graph = nx.DiGraph()
    for path in _files():
        for module, _, _ in _imports(path):
            if module.startswith("gradtape.ir") and module != _module_name(path):
                graph.add_edge(_module_name(path), module)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles)
