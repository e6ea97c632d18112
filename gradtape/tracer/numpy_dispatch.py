"""NumPy's protocols on Tensor: `np.tanh(t)`, `np.sum(t, axis=0)`, `a @ t`.

Front-end functions register themselves for the NumPy functions they
implement (`@implements(np.tanh)`). A NumPy function with no registration
raises an error naming it, never silently converts tensors to constants.
"""
from __future__ import annotations


from .errors import UnsupportedNumPyFunction
from .tensor import Tensor

_functions: dict = {}  # numpy function or ufunc -> gradtape implementation
_reductions: dict = {}  # ufunc -> implementation of ufunc.reduce


def implements(*numpy_functions, reduce_of=None):
    """Register the decorated gradtape function for these NumPy functions/ufuncs."""

    def register(fn):
        for f in numpy_functions:
            _functions[f] = fn
        if reduce_of is not None:
            _reductions[reduce_of] = fn
        return fn

    return register


def _unsupported(name: str):
    return UnsupportedNumPyFunction(
        f"gradtape does not support numpy.{name} on Tensors, so it cannot be "
        "differentiated. Use a gradtape function instead, or call .numpy() to "
        "compute it on plain arrays as a constant."
    )


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if not kwargs and method == "__call__":
        # `y * t` and `np.exp(t)` come here on every step of a training loop.
        fn = _functions.get(ufunc)
        if fn is not None:
            return fn(*inputs)
    if kwargs.get("out") is not None:
        raise TypeError(
            f"numpy.{ufunc.__name__}: the out= argument is not supported with gradtape "
            "Tensors (tensors are immutable)"
        )
    kwargs.pop("out", None)
    if method == "__call__":
        fn = _functions.get(ufunc)
        if fn is None:
            raise _unsupported(ufunc.__name__)
        return fn(*inputs, **kwargs)
    if method == "reduce":
        fn = _reductions.get(ufunc)
        if fn is None:
            raise _unsupported(f"{ufunc.__name__}.reduce")
        return fn(*inputs, **kwargs)
    raise _unsupported(f"{ufunc.__name__}.{method}")


def array_function(self, func, types, args, kwargs):
    fn = _functions.get(func)
    if fn is None:
        raise _unsupported(getattr(func, "__name__", repr(func)))
    return fn(*args, **kwargs)


Tensor.__array_ufunc__ = array_ufunc
Tensor.__array_function__ = array_function
