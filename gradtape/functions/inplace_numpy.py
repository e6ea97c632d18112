"""NumPy's in-place updates on tensors: `np.add.at(t, idx, v)` and `np.put(t, ind, v)`.

They modify their first argument and return None, as `t[idx] = v` does, so
on a Tensor they do what `t[idx] = v` does (tracer/rebind.py): the tensor
object takes the updated value, `t.at[idx].add(v)` (or .multiply, .min,
.max; np.subtract.at adds -v); tensors computed from t before keep theirs.

Into a NumPy array (`np.add.at(a, idx, t)`), a tensor is converted to an
array first, which raises ConstantConversionError when a tape differentiates
it, as `a[idx] = t` does: the array would hold a constant and the gradient
would be lost.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements, ufunc_methods
from ..tracer.rebind import rebind
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor
from .indexed_update import indexed_update
from .shape import reshape

__all__ = []

_MODES = {np.add: "add", np.subtract: "add", np.multiply: "multiply", np.minimum: "min", np.maximum: "max"}


def _arrays(*values):
    """The values as NumPy arrays (np.asarray(t) refuses a tensor a tape differentiates)."""
    return [np.asarray(v) if isinstance(v, Tensor) else v for v in values]


def ufunc_at(ufunc, a, indices, b=None):
    """np.<ufunc>.at(a, indices, b): see the module docstring."""
    if not isinstance(a, Tensor):
        return ufunc.at(*_arrays(a, indices, *(() if b is None else (b,))))
    mode = _MODES.get(ufunc)
    if mode is None or b is None:
        raise TypeError(
            f"numpy.{ufunc.__name__}.at on a Tensor: only add, subtract, multiply, minimum and "
            "maximum have an indexed update (t = t.at[idx].add(v), .multiply, .min, .max); write "
            f"t = t.at[idx].set(np.{ufunc.__name__}(t[idx]{'' if b is None else ', v'})) for the others"
        )
    rebind(a, indexed_update(a, indices, ew.negative(b) if ufunc is np.subtract else b, mode))


@implements(np.put)
def put(a, ind, v, mode="raise"):
    """np.put(a, ind, v): a.flat[ind] = v, v repeated to the length of ind (see the module docstring)."""
    if not isinstance(a, Tensor):
        return np.put(*_arrays(a, ind, v), mode=mode)
    if mode != "raise":
        raise NotImplementedError(f"np.put on a Tensor: mode={mode!r}; only 'raise' is supported")
    ind = np.asarray(ind.numpy() if isinstance(ind, Tensor) else ind)
    v = reshape(as_tensor(v), (-1,))
    if v.shape[0] != ind.size:  # NumPy repeats v cyclically
        v = v[np.arange(ind.size) % max(v.shape[0], 1)]
    flat = indexed_update(reshape(a, (-1,)), ind.reshape(-1), v, "set")
    rebind(a, reshape(flat, a.shape))


ufunc_methods["at"] = ufunc_at
