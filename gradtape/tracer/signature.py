"""The shape signature of a call: what keys a staged function's cache.

A signature is a flat tuple, a prefix code of the arguments:

  - an array leaf contributes its shape and its dtype (two items); Python
    floats and ints contribute () and PY_FLOAT or PY_INT: they are traced as
    0-d float64 and int64 values that are weak in promotion (tracer/weak.py),
    so `f(1.0)` and `f(np.float64(1.0))` do not share an entry; Python bools
    count as 0-d bool arrays;
  - a container contributes a marker `(kind, size)` (dicts: their sorted
    keys) before its children, so structure is part of the key;
  - a static argument contributes `(STATIC, type, value)`.

For plain positional arrays and floats (the common case) `StagedFunction`
builds the same tuple inline, without calling in here.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .tensor import Tensor

F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)

_SCALAR_DTYPES = {float: F64, int: I64, bool: BOOL, complex: np.dtype(np.complex128)}
_SUPPORTED_KINDS = "fciub"


class _Marker:
    """A token in a signature; never equal to a shape (a tuple of ints)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    def __reduce__(self):
        # Signatures key caches by identity of their markers: unpickle to this module's own.
        return self.name.upper()


LIST, TUPLE, DICT, STATIC = _Marker("list"), _Marker("tuple"), _Marker("dict"), _Marker("static")
# In a signature, the "dtype" of a Python float, int or complex argument: weakly typed (tracer/weak.py).
PY_FLOAT, PY_INT = _Marker("py_float"), _Marker("py_int")  # names: what __reduce__ looks up
PY_COMPLEX = _Marker("py_complex")
_WEAK_PARTS = {float: PY_FLOAT, int: PY_INT, complex: PY_COMPLEX}


class Signature:
    """The result of `describe`: the key, plus what tracing and calling need.

    Attributes:
      parts: the signature tuple (see the module docstring).
      leaves: the dynamic leaves in flatten order (arrays, Tensors, scalars).
      ranges: per argument, the (start, stop) of its leaves, or None if static.
      abstract: True if some leaf is an abstract (traced) Tensor.
      tensors: True if some leaf is a Tensor (a tape may be recording it).
      types: one TensorType per leaf (made on first use: a cache hit needs none).
    """

    __slots__ = ("parts", "leaves", "ranges", "abstract", "tensors", "_avals", "_types")

    @property
    def types(self) -> list:
        if self._types is None:
            self._types = [ir.TensorType(shape, dtype) for shape, dtype in self._avals]
        return self._types


def path_text(path) -> str:
    """`argument 0['w'][1]` for the path (0, 'w', 1)."""
    text = f"argument {path[0]}"
    for p in path[1:]:
        text += f"[{p!r}]"
    return text


def describe(args, static_argnums, fname: str) -> Signature:
    """Walk the arguments once: signature parts, leaves and their shapes and dtypes.

    Raises:
      TypeError: a leaf that is neither an array nor a Python/NumPy scalar
        (naming its path), an array of an unsupported dtype, or a static
        argument that is not hashable.
    """
    sig = Signature()
    sig.abstract = sig.tensors = False
    sig._types = None
    parts, leaves, avals, ranges = [], [], [], []
    for i, a in enumerate(args):
        if i in static_argnums:
            parts.append(static_part(a, i, fname))
            ranges.append(None)
            continue
        start = len(leaves)
        try:
            _walk(a, sig, parts, leaves, avals)
        except _BadLeaf as bad:
            raise bad.error(fname, (i,) + _path_of(a, bad.leaf)) from None
        ranges.append((start, len(leaves)))
    sig.parts, sig.leaves, sig.ranges, sig._avals = tuple(parts), leaves, ranges, avals
    return sig


def _walk(x, sig, parts, leaves, avals):
    t = type(x)
    if t is np.ndarray or t is np.memmap:
        x = native_array(x)
        shape, dtype = x.shape, x.dtype
    elif isinstance(x, dict):
        keys = sorted(x)
        parts.append((DICT, t, tuple(keys)))
        for k in keys:
            _walk(x[k], sig, parts, leaves, avals)
        return
    elif isinstance(x, (list, tuple)):
        parts.append((LIST if t is list else TUPLE if t is tuple else t, len(x)))
        for item in x:
            _walk(item, sig, parts, leaves, avals)
        return
    elif isinstance(x, Tensor):
        shape, dtype = x.shape, x.dtype
        sig.tensors = True
        if x._sym is not None:
            sig.abstract = True
    elif t in _SCALAR_DTYPES:
        shape, dtype = (), _SCALAR_DTYPES[t]
    elif isinstance(x, np.generic):
        shape, dtype = (), x.dtype
    else:
        raise _BadLeaf(x, None)
    if dtype.kind not in _SUPPORTED_KINDS:
        raise _BadLeaf(x, dtype)
    parts.append(shape)
    parts.append(_WEAK_PARTS.get(t, dtype))
    leaves.append(x)
    avals.append((shape, dtype))


class _BadLeaf(Exception):
    """A leaf describe cannot take; turned into a TypeError naming its path."""

    def __init__(self, leaf, dtype):
        self.leaf, self.dtype = leaf, dtype

    def error(self, fname, path) -> TypeError:
        where = path_text(path)
        if self.dtype is not None:
            return TypeError(
                f"{fname}: {where} has dtype {self.dtype}, which gradtape does not support; "
                "use a float, complex, integer or bool dtype"
            )
        if isinstance(self.leaf, np.ndarray):  # a subclass with meaning of its own (a mask, matrix products)
            return TypeError(
                f"{fname}: {where} is a {type(self.leaf).__name__}, a subclass of ndarray whose meaning a plain "
                "array would lose; pass np.asarray(x) (its data alone) or a plain array holding what you mean"
            )
        return TypeError(
            f"{fname}: {where} is a {type(self.leaf).__name__} ({_short_repr(self.leaf)}), not "
            "an array or a number. Pass NumPy arrays, gradtape Tensors or Python scalars "
            "(nested in lists, tuples and dicts if you like), or mark the argument static "
            "with static_argnums."
        )


def _path_of(x, target) -> tuple:
    """The path from `x` down to the object `target` (found again only on an error)."""
    if x is target:
        return ()
    if isinstance(x, dict):
        items = [(k, x[k]) for k in sorted(x)]
    elif isinstance(x, (list, tuple)):
        items = list(enumerate(x))
    else:
        return None
    for k, child in items:
        sub = _path_of(child, target)
        if sub is not None:
            return (k,) + sub
    return None


def static_part(value, index: int, fname: str):
    """The signature item of a static argument: its type and value.

    The type is included so that 1, 1.0 and True (equal and of equal hash)
    do not share a trace that saw only one of them.
    """
    if isinstance(value, Tensor):
        raise TypeError(
            f"{fname}: static argument {index} is a gradtape Tensor; static arguments are "
            "Python values compared by value (ints, strings, tuples, ...). Pass the tensor "
            "as an ordinary (non-static) argument instead."
        )
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"{fname}: static argument {index} must be hashable, but got a "
            f"{type(value).__name__} ({_short_repr(value)}). Pass a hashable value "
            "(a tuple instead of a list, for instance), or make the argument non-static."
        ) from None
    return (STATIC, type(value), value)


def native_array(x: np.ndarray) -> np.ndarray:
    """`x` as a plain ndarray in the machine's byte order, as NumPy's functions compute on it: a memmap
    viewed as an ndarray (no copy), a big-endian array copied to native order (traces and compiled code
    know native dtypes only)."""
    if type(x) is not np.ndarray:
        x = x.view(np.ndarray)
    if not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))
    return x


def as_array(x) -> np.ndarray:
    """A concrete leaf as the NumPy array the compiled function takes."""
    if type(x) is np.ndarray:
        return x
    if isinstance(x, Tensor):
        return x._value
    return np.asarray(x, dtype=_SCALAR_DTYPES.get(type(x)))  # NumPy scalars keep their dtype


def _short_repr(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."
