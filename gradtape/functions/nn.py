"""Neural-network building blocks: softmax, log_softmax, logsumexp, relu,
gelu and clip composed from existing ops; sigmoid and softplus, one op each
(the IR's `sigmoid` and `softplus`, whose derivatives are sigmoid and
sigmoid * (1 - sigmoid)).

Each is written so that no intermediate overflows for any finite input
(so values and gradients stay finite at |x| = 1000) and so that its
derivatives, to every order, are those of the mathematical function.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import elementwise as ew_ops
from ..ir.ops import layout, reduce
from ..tracer.deferred import PendingTensor
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from . import reductions
from ._promote import as_tensor, float_operand, normalize_axis, promote, shape_of
from .shape import broadcast_to
from .fresh import always_new

__all__ = ["softmax", "log_softmax", "logsumexp", "sigmoid", "relu", "softplus", "gelu", "clip"]

_SQRT_HALF = float(np.sqrt(0.5))
_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))


def _float_tensor(x):
    return float_operand(as_tensor(x))


def _shift(x, axes):
    """max(x) over axes (kept), as a constant for differentiation.

    Subtracting it keeps exp() <= 1. Softmax and log-sum-exp are exactly
    invariant to the shift, so treating it as a constant leaves every
    derivative exact and skips the max's own (tie-splitting) derivative.
    A non-finite max (all -inf, or an inf) is replaced by 0, as SciPy does,
    so that inf - inf does not turn the result into NaN. Over an empty axis
    there is nothing to shift (logsumexp is log(0) = -inf, softmax is empty).
    """
    if any(x.shape[a] == 0 for a in axes):
        return 0.0
    m = bind(ew_ops.stop_gradient_p, reductions.max(x, axes, keepdims=True))
    return ew.where(ew.less(ew.abs(m), np.inf), m, 0.0)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed without overflow.

    Args:
      x: a Tensor or array-like (integers become float64).
      axis: an int or tuple of ints (default: the last axis); None for all axes.

    Returns:
      A Tensor of x's shape whose entries along `axis` sum to 1.

    Example::

        >>> gradtape.softmax(gradtape.constant([0.0, 1000.0]))
        Tensor([0., 1.], dtype=float64)
    """
    x = _float_tensor(x)
    axes = normalize_axis("softmax", axis, x.ndim)
    e = ew.exp(ew.subtract(x, _shift(x, axes)))
    return ew.divide(e, reductions.sum(e, axes, keepdims=True))


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along `axis`: the log of softmax, without overflow or log(0).

    Args:
      x: a Tensor or array-like (integers become float64).
      axis: an int or tuple of ints (default: the last axis); None for all axes.

    Returns:
      A Tensor of x's shape.

    Example::

        >>> gradtape.log_softmax(gradtape.constant([0.0, 1000.0]))
        Tensor([-1000.,     0.], dtype=float64)
    """
    x = _float_tensor(x)
    axes = normalize_axis("log_softmax", axis, x.ndim)
    shifted = ew.subtract(x, _shift(x, axes))
    return ew.subtract(shifted, ew.log(reductions.sum(ew.exp(shifted), axes, keepdims=True)))


def logsumexp(x, axis=None, keepdims=False, b=None):
    """log(sum(b * exp(x))) over `axis`, computed without overflow; its gradient is softmax(x).

    Args:
      x: a Tensor or array-like (integers become float64).
      axis: None (all axes), an int or a tuple of ints.
      keepdims: keep the reduced axes with length 1.
      b: scale factors broadcast against x (as scipy.special.logsumexp's b=;
        differentiable too); a group whose scaled sum is negative gives NaN.

    Returns:
      A Tensor with the reduced axes removed (or of length 1 with keepdims).

    An empty reduction is log(0) = -inf, as in SciPy.

    Example::

        >>> gradtape.logsumexp(gradtape.constant([1000.0, 1000.0]))
        Tensor(1000.69314718, dtype=float64)
    """
    x = _float_tensor(x)
    if b is not None:
        x, b = promote(x, b)
        x = broadcast_to(x, np.broadcast_shapes(x.shape, shape_of(b)))  # b may add axes
    axes = normalize_axis("logsumexp", axis, x.ndim)
    m = _shift(x, axes)
    e = ew.exp(ew.subtract(x, m))
    total = reductions.sum(e if b is None else ew.multiply(b, e), axes, keepdims=True)
    out = ew.add(ew.log(total), m)
    if keepdims:
        return out
    return bind(layout.reshape_p, out, shape=reduce.reduced_shape(x.shape, axes))


@always_new  # one bind on every path: exported unwrapped (it is on every LSTM gate)
def sigmoid(x):
    """The logistic function 1 / (1 + exp(-x)), stable for any x.

    One op (`sigmoid`) whose reference and compiled code compute only
    exp(-abs(x)) <= 1, so neither the value nor the gradient overflows; small
    values (x << 0) keep full relative precision. The derivative is
    sigmoid(x) * (1 - sigmoid(x)), 0.25 at x = 0.

    Args:
      x: a Tensor or array-like (integers become float64).

    Returns:
      A Tensor of x's shape with values in [0, 1].

    Example::

        >>> gradtape.sigmoid(gradtape.constant([-1000.0, 0.0, 1000.0]))
        Tensor([0. , 0.5, 1. ], dtype=float64)
    """
    if x.__class__ is PendingTensor and x.dtype.kind == "f":  # what _float_tensor passes as it is
        return bind(ew_ops.sigmoid_p, x)  # (every gate of a recorded LSTM: 4 Python calls fewer)
    return bind(ew_ops.sigmoid_p, _float_tensor(x))


def relu(x):
    """max(x, 0); its gradient is 1 for x > 0 and 0 for x <= 0 (including at 0).

    NaN stays NaN, as in numpy.maximum(x, 0), JAX and TensorFlow; its
    gradient there is 0, as theirs.

    Args:
      x: a Tensor or array-like.

    Returns:
      A Tensor of x's shape and dtype.

    Example::

        >>> gradtape.relu(gradtape.constant([-1.0, 0.0, 2.0]))
        Tensor([0., 0., 2.], dtype=float64)
    """
    x = as_tensor(x)
    # Not where(x > 0, x, 0) alone: NaN > 0 is false, which would turn NaN into 0.
    not_positive = ew.where(ew.less_equal(x, 0), 0, bind(ew_ops.stop_gradient_p, x))
    return ew.where(ew.greater(x, 0), x, not_positive)


@always_new  # one bind
def softplus(x):
    """log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-abs(x))) so it never overflows.

    One op (`softplus`) whose derivative is sigmoid(x), so the derivatives
    at x = 0 are sigmoid(0) = 0.5 and 0.25, like those of the smooth
    function, and a gradient costs one exp and one division per element.

    Args:
      x: a Tensor or array-like (integers become float64).

    Returns:
      A Tensor of x's shape.

    Example::

        >>> gradtape.softplus(gradtape.constant([-1000.0, 0.0, 1000.0]))
        Tensor([0.00000000e+00, 6.93147181e-01, 1.00000000e+03], dtype=float64)
    """
    return bind(ew_ops.softplus_p, _float_tensor(x))


def gelu(x, approximate=False):
    """The Gaussian error linear unit x * P(X <= x), X standard normal.

    Exact (the default, as PyTorch): x/2 * (1 + erf(x/sqrt(2))), computed as
    x/2 * erfc(-x/sqrt(2)), the same function without the cancellation of
    1 + erf(...) for x << 0. `approximate=True` is the tanh form (JAX's
    default, BERT's and GPT-2's) x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))),
    computed as x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x**3)), its equal.

    Args:
      x: a Tensor or array-like (integers become float64).
      approximate: the tanh form instead of the exact one.

    Returns:
      A Tensor of x's shape.

    Example::

        >>> gradtape.gelu(gradtape.constant([-1.0, 0.0, 1.0]))
        Tensor([-0.15865525,  0.        ,  0.84134475], dtype=float64)
        >>> gradtape.gelu(gradtape.constant([-1.0, 0.0, 1.0]), approximate=True)
        Tensor([-0.15880801,  0.        ,  0.84119199], dtype=float64)
    """
    x = _float_tensor(x)
    if approximate:
        inner = ew.multiply(2.0 * _SQRT_2_OVER_PI, ew.add(x, ew.multiply(0.044715, ew.power(x, 3.0))))
        return ew.multiply(x, sigmoid(inner))
    return ew.multiply(ew.multiply(0.5, x), ew.erfc(ew.multiply(-_SQRT_HALF, x)))


_NO_VALUE = getattr(np, "_NoValue", None)  # NumPy's "argument not given" marker


def _given(bound) -> bool:
    return bound is not None and bound is not _NO_VALUE


@implements(np.clip)
def clip(x, a_min=None, a_max=None, out=None, *, min=None, max=None):
    """x limited to [a_min, a_max], as numpy.clip (either bound may be None).

    The gradient with respect to x is 1 where a_min <= x <= a_max and 0 where
    x lies strictly outside; the bounds, if Tensors, get the gradient of the
    elements clipped to them.

    Args:
      x: a Tensor or array-like.
      a_min: lower bound (scalar or broadcastable array), or None.
      a_max: upper bound, or None.
      min, max: NumPy 2's names for a_min and a_max.

    Returns:
      A Tensor of the broadcast shape and promoted dtype.

    Raises:
      ValueError: if both bounds are None.

    Example::

        >>> gradtape.clip(gradtape.constant([-2.0, 0.5, 3.0]), 0.0, 1.0)
        Tensor([0. , 0.5, 1. ], dtype=float64)
    """
    if out is not None:
        raise TypeError(
            "clip: the out= argument is not supported with gradtape Tensors "
            "(tensors are immutable); use the returned value instead"
        )
    a_min = a_min if _given(a_min) else (min if _given(min) else None)
    a_max = a_max if _given(a_max) else (max if _given(max) else None)
    if a_min is None and a_max is None:
        raise ValueError("clip: at least one of a_min and a_max must be given")
    bounds = [b for b in (a_min, a_max) if b is not None]
    x, *bounds = promote(as_tensor(x), *bounds)
    lo = bounds.pop(0) if a_min is not None else None
    hi = bounds.pop(0) if a_max is not None else None
    if lo is not None:  # lower bound first, so a_min > a_max gives a_max, as in NumPy
        x = ew.where(ew.less(x, lo), lo, x)
    if hi is not None:
        x = ew.where(ew.greater(x, hi), hi, x)
    return x


Tensor.clip = clip
