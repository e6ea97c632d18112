"""Public constructors and gradient controls: constant, stop_gradient."""
from __future__ import annotations

import numpy as np

from .ir.ops.elementwise import stop_gradient_p
from .tracer import tree
from .tracer.dispatch import bind
from .tracer.tensor import Tensor


def constant(value, dtype=None) -> Tensor:
    """A Tensor holding a copy of `value` (Python floats become float64, as in NumPy; a big-endian
    array's values in the machine's byte order).

    Args:
      value: array-like (nested lists, NumPy arrays, scalars, Tensors).
      dtype: optional dtype to convert to.

    Example::

        >>> gradtape.constant([[1, 2], [3, 4]], dtype="float32").shape
        (2, 2)
    """
    if isinstance(value, Tensor):
        value = value.numpy()
    array = np.array(value, dtype=dtype)
    if not array.dtype.isnative:  # as NumPy's functions return it: gradtape computes in native order
        array = array.astype(array.dtype.newbyteorder("="))
    array.flags.writeable = False
    return Tensor(array)


def stop_gradient(x):
    """The same values, but no gradient flows back through the result.

    Accepts a Tensor or a nested structure of Tensors.

    Example::

        >>> x = gradtape.constant(3.0)
        >>> with gradtape.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * gradtape.stop_gradient(x)   # dy/dx = stop_gradient(x)
        >>> float(tape.gradient(y, x))
        3.0
    """
    leaves = tree.flatten(x)
    out = [bind(stop_gradient_p, t) if isinstance(t, Tensor) else t for t in leaves]
    return tree.unflatten(x, out)
