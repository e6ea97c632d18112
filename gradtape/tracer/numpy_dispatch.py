"""NumPy's protocols on Tensor: `np.tanh(t)`, `np.sum(t, axis=0)`, `a @ t`.

Front-end functions register themselves for the NumPy functions they
implement (`@implements(np.tanh)`). A NumPy function with no registration
raises an error naming it, never silently converts tensors to constants.

NumPy also converts tensors it cannot dispatch on: `np.asarray(t)`,
`np.array([t, 2 * t])`, or a list of tensors given to any NumPy function
(`np.mean([t, 2 * t])`: NumPy looks for `__array_function__` on the list,
not inside it). Such a conversion returns a plain array, which has no
derivative, so `Tensor.__array__` refuses it whenever the derivative would
be lost: for a floating tensor that a recording GradientTape or
ForwardAccumulator tracks (watched, or computed from a watched tensor, or a
trainable Variable read while a tape watches accessed variables), and for
an abstract tensor of a staged function. JAX refuses the same conversions
of its tracers; TensorFlow's `np.asarray(tensor)` inside a tape silently
returns a constant, which this rule exists to prevent. A tensor no tape
tracks converts to its value. Conversions to Python numbers (`float(t)`
and the like) follow the same rule: conversions.py.
"""
from __future__ import annotations

import numpy as np

from .conversions import tracked_by
from .errors import ConcretizationError, ConstantConversionError, UnsupportedNumPyFunction
from .numpy_names import SCIPY_SPECIAL, alternative, full_name, numpy_caller, scipy_special_ufunc
from .tensor import Tensor

_functions: dict = {}  # numpy function or ufunc -> gradtape implementation
_reductions: dict = {}  # ufunc -> implementation of ufunc.reduce
# numpy function -> fast(args, kwargs): its common case's result, or None (see `fast_path`)
_fast_paths: dict = {}
# ufunc method name ("at") -> handler(ufunc, *inputs, **kwargs), installed by the functions layer
ufunc_methods: dict = {}


def implements(*numpy_functions, reduce_of=None):
    """Register the decorated gradtape function for these NumPy functions/ufuncs."""

    def register(fn):
        for f in numpy_functions:
            _functions[f] = fn
        if reduce_of is not None:
            _reductions[reduce_of] = fn
        return fn

    return register


def fast_path(*numpy_functions):
    """Register the decorated `fast(args, kwargs)` for these NumPy functions: NumPy's dispatch
    tries it first, with the arguments as the caller gave them, and calls the registered
    implementation when it returns None.

    It must return None for every call it does not fully handle (other arguments, bad input:
    the implementation raises the errors), and otherwise exactly what the implementation
    returns, as a new object (the results NumPy's dispatch hands out are never one of the
    arguments: functions/fresh.py). It saves the calls in between on the hot path of a loop of
    small NumPy calls on tensors (ADBench's GMM builds each triangular factor column by column
    with np.zeros_like, np.concatenate and np.stack).

    Example::

        @fast_path(np.zeros_like)
        def _zeros_like(args, kwargs):
            return _filled(args[0], np.zeros) if len(args) == 1 and not kwargs else None
    """

    def register(fast):
        for f in numpy_functions:
            _fast_paths[f] = fast
        return fast

    return register


def _unsupported(func, method: str | None = None):
    """The error for a NumPy function (or ufunc method) with no gradtape implementation:
    its full name, and what gradtape has instead."""
    name = full_name(func) + (f".{method}" if method else "")
    return UnsupportedNumPyFunction(
        f"gradtape does not support {name} on Tensors, so it cannot be differentiated. {alternative(name)}"
    )


def _scipy_function(ufunc):
    """gradtape.scipy.special's function for one of scipy.special's ufuncs (`expit(t)` comes
    through `__array_ufunc__`), registered for it on first use; None for any other ufunc."""
    if not SCIPY_SPECIAL or not scipy_special_ufunc(ufunc):
        return None
    special, name = SCIPY_SPECIAL[0], ufunc.__name__
    if name in special.__all__:
        fn = getattr(special, name)
    else:  # cbrt, exp2, expm1, log1p: NumPy's functions of the same name
        fn = _functions.get(getattr(np, name, None))
    if fn is not None:
        _functions[ufunc] = fn
    return fn


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if not kwargs and method == "__call__":
        # `y * t` and `np.exp(t)` come here on every step of a training loop.
        fn = _functions.get(ufunc) or _scipy_function(ufunc)
        if fn is not None:
            return fn(*inputs)
    if kwargs.get("out") is not None:
        raise TypeError(
            f"{full_name(ufunc)}: the out= argument is not supported with gradtape "
            "Tensors (tensors are immutable)"
        )
    kwargs.pop("out", None)
    if method == "__call__":
        fn = _functions.get(ufunc) or _scipy_function(ufunc)
        if fn is None:
            raise _unsupported(ufunc)
        return fn(*inputs, **kwargs)
    if method == "reduce":
        fn = _reductions.get(ufunc)
        if fn is None:
            raise _unsupported(ufunc, "reduce")
        return fn(*inputs, **kwargs)
    handler = ufunc_methods.get(method)
    if handler is not None:
        return handler(ufunc, *inputs, **kwargs)
    raise _unsupported(ufunc, method)


def array_function(self, func, types, args, kwargs):
    fast = _fast_paths.get(func)
    if fast is not None:
        result = fast(args, kwargs)
        if result is not None:
            return result
    fn = _functions.get(func)
    if fn is None:
        raise _unsupported(func)
    return fn(*args, **kwargs)


_FIX = (
    "Keep it a tensor: gradtape.array([...]) or gradtape.stack([...]) for a list of tensors, "
    "gradtape functions (or NumPy functions called on the tensor itself, not on a list), "
    "gradtape.where or gradtape.concatenate rather than assigning into a NumPy array; and "
    "t.numpy() or gradtape.stop_gradient(t) where a constant is really meant, or the value taken "
    "after the tape's `with` block."
)


# NumPy indexes its own arrays (and np.take dispatches on the array, not the indices): a traced
# integer index of a NumPy array can only become a gather if the array is a tensor.
_INDEX_FIX = (
    " An integer tensor indexing a NumPy array (arr[i], np.take(arr, i)) comes here too: NumPy "
    "indexes its arrays itself and cannot return a tensor, so write gradtape.asarray(arr)[i] or "
    "gradtape.take(arr, i, axis=0), a gather in the staged function."
)


def tensor_array(self, dtype=None, copy=None):
    """`np.asarray(t)`: t's value, unless the conversion would drop a derivative (then raises).
    An integer or bool tensor has no derivative: on a tape it always converts."""
    if self._sym is not None:
        try:
            self.numpy()  # a leaked tracer raises its own error here
        except ConcretizationError:
            index = _INDEX_FIX if self.dtype.kind in "iub" else ""
            raise ConcretizationError(
                f"NumPy ({numpy_caller()}) tried to convert an abstract tensor {self._sym.type} of a "
                "staged function to a plain array (np.asarray / np.array of a tensor, or a list of "
                "tensors given to a NumPy function); it has no value while tracing, and an array would "
                f"be a constant with no derivative.{index} {_FIX}"
            ) from None
    tape = tracked_by(self)
    if tape is not None:
        raise ConstantConversionError(
            f"NumPy ({numpy_caller()}) tried to convert a tensor of shape {self.shape} that a recording "
            f"{type(tape).__name__} differentiates to a plain array (np.asarray / np.array of a tensor, a list of "
            "tensors given to a NumPy function, or a tensor assigned to a slice of a NumPy array): the "
            "result would be a constant and its gradient "
            f"silently lost. {_FIX}"
        )
    value = self.numpy()
    if dtype is not None and value.dtype != dtype:
        return value.astype(dtype)
    return value.copy() if copy else value


Tensor.__array__ = tensor_array
Tensor.__array_ufunc__ = array_ufunc
Tensor.__array_function__ = array_function
