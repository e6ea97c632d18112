"""What the command line names: `module:function` and `--shape [name=]3,4[:dtype]`."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import sys

import numpy as np

from ..aot import ShapeDtype
from ..ir import TensorType


class UsageError(Exception):
    """A command-line argument that cannot be used; the message says what to write instead."""


def load_function(target: str):
    """The object `target` names: `package.module:function` (importable from the current
    directory, as with `python -m`) or `path/to/file.py:function`; `function` may be dotted."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"expected module:function (e.g. mypackage.losses:loss or losses.py:loss), got {target!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.exists(path):
            raise UsageError(f"no such file: {path}")
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(name, module)
        spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            raise UsageError(f"cannot import {module_name!r} ({e}); run from the directory that holds it, "
                             "or give a path: path/to/file.py:function") from None
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{module_name} has no attribute {attr!r}") from None
    if not callable(obj):
        raise UsageError(f"{target} is a {type(obj).__name__}, not a function")
    return obj


def parse_shape(text: str, default_dtype: str = "float64") -> tuple:
    """`x=3,4:float32` -> ("x", ShapeDtype((3, 4), "float32")); the name is optional;
    a scalar is `x=` or `x=()`."""
    name, sep, rest = text.partition("=")
    if not sep:
        name, rest = "", text
    dims, _, dtype = rest.partition(":")
    dims = dims.strip().strip("()[]").strip()
    try:
        shape = tuple(int(d) for d in dims.split(",") if d.strip()) if dims else ()
        spec = ShapeDtype(shape, dtype.strip() or default_dtype)
    except (TypeError, ValueError) as e:
        raise UsageError(f"--shape {text!r}: {e}; write [name=]d0,d1,...[:dtype], e.g. x=3,4 or x=3,4:float32 "
                         "or x= for a scalar") from None
    return name.strip(), spec


def check_arity(f, target: str, shapes: list):
    """Raise UsageError unless `f` takes as many positional arguments as there are --shape options."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: the trace will tell
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    n = len(shapes)
    if len(required) <= n and (varargs or n <= len(positional)):
        return
    names = ", ".join(p.name for p in positional) + (", *" if varargs else "")
    example = " ".join(f"--shape {p.name}=3" for p in (required or positional))
    raise UsageError(f"{target} takes {len(required)} argument{'s' if len(required) != 1 else ''} ({names}) but "
                     f"{n} --shape option{'s were' if n != 1 else ' was'} given; give one --shape per argument, "
                     f"in order, e.g. {example}")


class traced_for_shapes:
    """A context in which an error tracing or compiling the function for the given shapes
    (a TypeError or ValueError: the shapes or dtypes do not fit the function) is a UsageError."""

    def __init__(self, name: str, names, specs):
        self.what = f"{name}({describe_args(names, specs)})"

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if kind is not None and issubclass(kind, (TypeError, ValueError)) and not isinstance(error, UsageError):
            first = str(error).splitlines()[0] if str(error) else ""
            raise UsageError(f"{self.what} cannot be traced: {kind.__name__}: {first}; check that the "
                             "--shape options fit the function (one per argument, in order)") from None
        return False


def describe_args(names, specs) -> str:
    return ", ".join(f"{n + ': ' if n else ''}{_type_text(s)}" for n, s in zip(names, specs))


def _type_text(spec: ShapeDtype) -> str:
    return str(TensorType(spec.shape, np.dtype(spec.dtype)))


def add_target_arguments(p: argparse.ArgumentParser):
    """The arguments both commands take: the function and its argument shapes."""
    p.add_argument("target", help="module:function (importable from here) or path/to/file.py:function")
    p.add_argument("--shape", action="append", default=[], metavar="[NAME=]D0,D1,...[:DTYPE]",
                   help="one per argument, in order: its shape (and dtype), e.g. x=3,4 or x=3,4:float32; "
                        "x= is a scalar")
    p.add_argument("--dtype", default="float64", help="dtype of arguments whose --shape names none (float64)")
