"""The oldest NumPy, llvmlite and networkx gradtape runs on, checked once at import.

pyproject.toml declares the same floors (and .ci/floors.txt pins them for the
CI row that runs the suite on them; tests/test_packaging_versions.py keeps the
three equal). pip enforces them on install; this check is for environments
that were not made by pip's resolver (``--no-deps``, conda, a vendored copy),
where an older release would otherwise fail far from its cause:

- llvmlite 0.44 and older carry LLVM 15 or older, whose x86 back end cannot
  select ``llvm.maximum``/``llvm.minimum`` (NumPy's NaN-propagating max and
  min, which every max/min reduction compiles to): LLVM stops the process
  with "Cannot select: fmaximum" in ``emit_object``.
- NumPy 1.x bundles its BLAS under other symbol names and lays out its
  structs differently from what the compiled calls read.

The version of a package that is already imported is its module's
``__version__`` (what will run); of one that is not, its installed
distribution's metadata: importing llvmlite and networkx just to read their
versions would cost most of ``import gradtape``, which loads them only at
first use (llvmlite at the first compile).
"""
from __future__ import annotations

import re
import sys
from importlib import import_module, metadata  # an eighth of what importing networkx and llvmlite costs

# distribution name -> (oldest supported release, why nothing older)
FLOORS = {
    "numpy": ((2, 0), "NumPy 1.x names its bundled BLAS and lays out its structs differently"),
    "llvmlite": ((0, 45), "llvmlite <= 0.44 has LLVM 15, which aborts compiling NaN-propagating max/min"),
    "networkx": ((3, 0), "the oldest release the suite runs on"),
}


def release(version: str) -> tuple[int, ...]:
    """The release numbers at the start of a version string ("2.0.2rc1" -> (2, 0, 2))."""
    match = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def installed_version(name: str) -> str:
    """The version of `name` that an import gives: the module's ``__version__`` once it is imported,
    else its distribution's (or, with no metadata installed, the module's after all)."""
    module = sys.modules.get(name)
    if module is None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:  # a copy on sys.path without its metadata
            module = import_module(name)
    return module.__version__


def check_installed(versions: dict[str, str] | None = None) -> None:
    """Refuse to import on a dependency older than its floor.

    Args:
        versions: distribution name -> installed version string; by default
            each one's `installed_version`.

    Raises:
        ImportError: naming the package, the version found, the floor, why,
            and the pip command that fixes it.

    Example:
        >>> check_installed({"numpy": "2.1.0", "llvmlite": "0.45.1", "networkx": "3.4"})
    """
    for name, (floor, why) in FLOORS.items():
        found = versions[name] if versions is not None else installed_version(name)
        if release(found) < floor:
            wanted = ".".join(map(str, floor))
            raise ImportError(f"gradtape needs {name} >= {wanted}, found {name} {found} ({why}); "
                              f"upgrade it: python -m pip install '{name}>={wanted}'")
