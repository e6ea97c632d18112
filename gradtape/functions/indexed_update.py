"""`x.at[index].set(v)` and friends: JAX's functional indexed updates.

Each returns a new tensor; x is never modified. `index` is anything
`x[index]` accepts, `v` broadcasts to the shape of `x[index]` and is cast to
x's dtype. Positions written more than once (`x.at[[0, 0]]`):

- add and multiply accumulate every update, in order (as np.add.at);
- set keeps the last write (as NumPy's `a[idx] = v` does);
- min and max take the smallest/largest of x and all the updates.

Integer indices out of bounds raise IndexError as `x[index]` does; a traced
integer index (a staged function's argument) is clamped to the edge, as
`x[index]` clamps it. Gradients flow to x and to v; at a tie of min or max the
derivative is split equally among the tied values (JAX's rule), see
update_rules.py, which builds all five from existing ops.
"""
from __future__ import annotations

import numpy as np

from ..tracer.rebind import rebind
from ..tracer.tensor import Tensor
from ..tracer.variable import Variable
from ._promote import as_tensor, convert
from .fresh import fresh
from .shape import broadcast_to, getitem, reshape
from .update_positions import flat_positions
from .update_rules import concrete_update, traced_update

__all__ = []


def indexed_update(x, index, v, mode: str) -> Tensor:
    """x with `mode` ("set", "add", "multiply", "min" or "max") applied at `index`."""
    x = x.value() if isinstance(x, Variable) else as_tensor(x)
    p = flat_positions(x.shape, index)
    v = as_tensor(convert(v, x.dtype))
    try:
        v = broadcast_to(v, p.shape)
    except ValueError as e:
        raise ValueError(
            f"x.at[...].{mode}: the update of shape {tuple(v.shape)} does not broadcast to the "
            f"indexed shape {tuple(p.shape)}"
        ) from e
    if p.size == 0:
        return fresh(x)  # a new object all the same: t[i] = v may change x later
    flat_x, flat_v = reshape(x, (x.size,)), reshape(v, (p.size,))
    flat_p = reshape(p, (p.size,)) if isinstance(p, Tensor) else p.reshape(-1)
    update = traced_update if isinstance(p, Tensor) else concrete_update
    return reshape(update(mode, flat_x, flat_v, flat_p), x.shape)


class IndexedUpdate:
    """`x.at[index]`: the updates of x at `index`, each returning a new tensor.

    Example::

        >>> x = gradtape.constant([0.0, 0.0, 0.0, 0.0])
        >>> x.at[1:3].set(5.0).numpy()
        array([0., 5., 5., 0.])
        >>> x.at[[0, 0, 2]].add(1.0).numpy()   # duplicates accumulate
        array([2., 0., 1., 0.])
    """

    __slots__ = ("_x", "_index")

    def __init__(self, x, index):
        self._x, self._index = x, index

    def get(self):
        """x[index]."""
        return getitem(self._x.value() if isinstance(self._x, Variable) else self._x, self._index)

    def set(self, v):
        """x with x[index] replaced by v (the last write wins at repeated positions)."""
        return indexed_update(self._x, self._index, v, "set")

    def add(self, v):
        """x with v added at index (repeated positions add every update, as np.add.at)."""
        return indexed_update(self._x, self._index, v, "add")

    def multiply(self, v):
        """x with x[index] multiplied by v (repeated positions multiply every update)."""
        return indexed_update(self._x, self._index, v, "multiply")

    def min(self, v):
        """x with x[index] replaced by minimum(x[index], v) (the least of all updates)."""
        return indexed_update(self._x, self._index, v, "min")

    def max(self, v):
        """x with x[index] replaced by maximum(x[index], v) (the greatest of all updates)."""
        return indexed_update(self._x, self._index, v, "max")


class _At:
    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, index) -> IndexedUpdate:
        return IndexedUpdate(self._x, index)


def _at(self) -> _At:
    """Functional indexed updates, as in JAX: `x.at[index].set(v)`, `.add`, `.multiply`,
    `.min`, `.max` (and `.get()`); each returns a new tensor.

    Example::

        >>> gradtape.constant([1.0, 2.0, 3.0]).at[0].multiply(10.0).numpy()
        array([10.,  2.,  3.])
    """
    return _At(self)


Tensor.at = property(_at)


def _setitem(self, index, value):
    """`t[index] = value`: t now denotes t.at[index].set(value) (see tracer/rebind.py: other
    references to t see the update; tensors computed from t before keep their values)."""
    rebind(self, indexed_update(self, index, value, "set"))


Tensor.__setitem__ = _setitem
