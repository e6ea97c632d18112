"""Tensor: an array value that gradtape ops accept and tapes record.

An eager Tensor holds a NumPy array. An abstract Tensor (inside tracing)
holds a symbolic IR value instead and has a shape and dtype but no data.
Operators, indexing and item assignment (`t[i] = v`, functions/indexed_update.py
with tracer/rebind.py) are installed by gradtape.functions, which owns the
NumPy-like surface; the NumPy protocols by numpy_dispatch.py; the
conversions to Python numbers (float(t), t.item(), ...), which refuse a
tensor a tape differentiates, by conversions.py.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import ConcretizationError, leaked


# (sym, what[, fix]) -> the ConcretizationError naming the traced function, the user's line and the
# arguments the value depends on: concretization.error, installed by trace_context.py (which imports this).
def concretization_error(sym, what, fix=None):
    return ConcretizationError(f"{what} needs the concrete value of a traced {sym.type}")


class Tensor:
    """An n-dimensional array that records onto active GradientTapes.

    Its array is never modified: `t[i] = v` gives the object t the new value
    `t.at[i].set(v)` (tracer/rebind.py), and what was computed from t before,
    slices included, keeps the old one.

    Example::

        >>> x = gradtape.constant([1.0, 2.0])
        >>> (x * 3).numpy()
        array([3., 6.])
        >>> x[0] = 5.0
        >>> x.numpy()
        array([5., 2.])
    """

    __slots__ = ("_value", "_sym", "__weakref__")
    __array_priority__ = 100  # NumPy binary operators defer to ours

    def __init__(self, value=None, *, sym=None):
        if sym is None:
            value = np.asarray(value)
        self._value = value
        self._sym = sym

    # --- metadata ----------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._value.shape if self._sym is None else self._sym.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype if self._sym is None else self._sym.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # exact Python ints, without NumPy's call overhead

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d Tensor")
        return self.shape[0]

    @property
    def is_abstract(self) -> bool:
        """True while tracing: the tensor has a shape and dtype but no value."""
        return self._sym is not None

    # --- concrete values -----------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The value as a NumPy array (read-only; copy it to modify)."""
        if self._sym is not None:
            self._raise_if_leaked()
            raise concretization_error(self._sym, ".numpy()", "Return it from the traced function to get its value")
        return self._value

    def __array__(self, dtype=None, copy=None):
        value = self.numpy()
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)
        return value.copy() if copy else value

    def _concrete(self, what: str):
        if self._sym is not None:
            self._raise_if_leaked()
            raise concretization_error(self._sym, what)
        return self._value

    def _raise_if_leaked(self):
        # A FunctionTrace (trace_context.py, which imports this module) knows when it ended.
        builder = self._sym.builder
        if getattr(builder, "ended", False):
            raise leaked(self._sym.type, builder.name)

    def __bool__(self):
        return bool(self._concrete("bool()"))

    def __index__(self):
        value = self._concrete("using a tensor as an index")
        if value.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors can be used as an index, got {value.dtype}")
        return int(value)

    def __hash__(self):
        return id(self)

    def __repr__(self):
        if self._sym is not None:
            return f"Tensor(<abstract {self._sym.type}>)"
        body = np.array2string(self._value, separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self._value.dtype})"

    def __format__(self, spec):
        if self._sym is None and self._value.ndim == 0:
            return format(self._value.item(), spec)
        return format(repr(self), spec)
