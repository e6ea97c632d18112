"""ShapeDtype: an argument given by its shape and dtype only, for gradtape.compile."""
from __future__ import annotations

import numpy as np


class ShapeDtype:
    """The shape and dtype of an array argument, standing for an example array.

    Args:
        shape: a tuple of ints (an int n means (n,); () is a scalar).
        dtype: a NumPy dtype or its name (default "float64").

    Example:
        >>> def loss(w, x):
        ...     return gradtape.sum(gradtape.tanh(w @ x) ** 2)
        >>> g = gradtape.compile(gradtape.grad(loss), gradtape.ShapeDtype((3, 4)), gradtape.ShapeDtype((4,)))
        >>> g(np.ones((3, 4)), np.ones(4)).shape
        (3, 4)
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype="float64"):
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise TypeError(f"ShapeDtype: shape must be a tuple of ints, got {shape!r}") from None
        if any(d < 0 for d in shape):
            raise ValueError(f"ShapeDtype: shape {shape} has a negative dimension")
        self.shape = shape
        self.dtype = np.dtype(dtype)

    def __repr__(self):
        return f"ShapeDtype({self.shape}, {self.dtype.name!r})"

    def __eq__(self, other):
        return isinstance(other, ShapeDtype) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def example(self) -> np.ndarray:
        """A read-only array of this shape and dtype (zeros, no memory of its own)."""
        return np.broadcast_to(np.zeros((), self.dtype), self.shape)


def examples(value):
    """`value` with every ShapeDtype (at any depth of lists, tuples, dicts) replaced by an example array."""
    if isinstance(value, ShapeDtype):
        return value.example()
    if type(value) is dict:
        return {k: examples(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*[examples(v) for v in value])
    if type(value) in (list, tuple):
        return type(value)(examples(v) for v in value)
    return value
