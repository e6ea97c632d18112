"""Arithmetic that works on NumPy arrays, Python floats and gradtape Tensors alike.

The optimizers' update rules are written once, with Python operators and
these helpers, and run on whatever they are given: NumPy arrays in
`apply_gradients` (plain NumPy speed, nothing recorded), concrete or
abstract Tensors in the functional `update` (so it traces into staged code).
"""
from __future__ import annotations

import math

import numpy as np

from .. import functions as gtf
from ..tracer.tensor import Tensor


def is_abstract(x) -> bool:
    """True for a Tensor being traced (a shape and dtype, no value)."""
    return isinstance(x, Tensor) and x.is_abstract


def sqrt(x):
    if isinstance(x, Tensor):
        return gtf.sqrt(x)
    if isinstance(x, float):
        return math.sqrt(x)
    return np.sqrt(x)


def maximum(a, b):
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return gtf.maximum(a, b)
    return np.maximum(a, b)


def scalar_for(x, like=None):
    """A scalar hyperparameter value ready to combine with the array `like`.

    Concrete values become Python floats, which are weak under both NumPy's
    and gradtape's promotion rules, so a float32 parameter stays float32 (as
    Keras casts the learning rate to the variable's dtype). A traced scalar
    is cast to `like`'s dtype (needed only then).
    """
    if isinstance(x, Tensor):
        if not x.is_abstract:
            return float(x.numpy())
        return x if x.dtype == like.dtype else gtf.cast(x, like.dtype)
    return float(x)


def step_for(iterations, like):
    """`iterations + 1` (the 1-based number of the update being made) in `like`'s dtype."""
    if is_abstract(iterations):
        return gtf.cast(iterations + 1, like.dtype)
    return float(iterations) + 1.0


def increment(iterations):
    """`iterations + 1` keeping its kind: an int64 0-d array, or a traced Tensor."""
    if isinstance(iterations, Tensor):
        return iterations + 1
    return np.asarray(iterations + 1, dtype=np.int64)
