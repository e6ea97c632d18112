"""A package's names loaded when first asked for (PEP 562), so that importing the package stays cheap.

    __getattr__, __dir__ = _lazy.names(__name__, globals(), {"compile": ".aot"}, {"runtime"})

makes `package.compile` import `package.aot` and return its `compile`, and
`package.runtime` import the subpackage, the first time each is looked up
(`from package import compile` too); the value is then a plain global, so
later lookups, monkeypatching and `dir()` behave as for any other name.
Used where the module behind a name loads LLVM, networkx or the compile
runtime, which a program that only traces or records never needs (issue 24.7:
`import gradtape` in about 0.3 s instead of 1.1 s, bench/import_time.py).
"""
from __future__ import annotations

import importlib


def names(package: str, namespace: dict, attributes: dict, submodules=frozenset()):
    """The `__getattr__` and `__dir__` of `package` (its globals are `namespace`).

    Args:
        attributes: name -> the module defining it, relative to `package` (".aot").
        submodules: names of the package's modules reachable as attributes; None for all of them.
    """
    any_module = submodules is None
    submodules = frozenset(submodules or ())

    def __getattr__(name):
        if name in attributes:
            value = getattr(importlib.import_module(attributes[name], package), name)
        elif name in submodules or (any_module and not name.startswith("__")):
            try:
                value = importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(attributes) | submodules)

    return __getattr__, __dir__
