"""Elementwise NumPy-like functions: arithmetic, transcendental, comparison,
logic, where and cast. Each promotes its arguments like NumPy and binds one op.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import elementwise as ew
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from ._promote import as_tensor, convert, float_operand, promote_pair

_BOOL = np.dtype(np.bool_)  # made once: convert takes a dtype as it is


def _unary_float(op, *numpy_functions):
    @implements(*numpy_functions)
    def fn(x):
        return bind(op, float_operand(x))

    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.name}, as numpy.{numpy_functions[0].__name__}; ints become float64."
    return fn


exp = _unary_float(ew.exp_p, np.exp)
log = _unary_float(ew.log_p, np.log)
log1p = _unary_float(ew.log1p_p, np.log1p)
expm1 = _unary_float(ew.expm1_p, np.expm1)
sqrt = _unary_float(ew.sqrt_p, np.sqrt)
sin = _unary_float(ew.sin_p, np.sin)
cos = _unary_float(ew.cos_p, np.cos)
tan = _unary_float(ew.tan_p, np.tan)
tanh = _unary_float(ew.tanh_p, np.tanh)
arctan = _unary_float(ew.arctan_p, np.arctan)


def erf(x):
    """The error function, 2/sqrt(pi) * integral of exp(-t**2) from 0 to x.

    NumPy has none (scipy.special.erf computes the same values). Compiled
    code computes it natively, within 3 ULP in float64 (correctly rounded
    in float32); its derivative is 2/sqrt(pi) * exp(-x**2).

    Args:
      x: a Tensor or array-like (integers become float64).

    Returns:
      A Tensor of x's shape, values in [-1, 1].

    Example::

        >>> gradtape.erf(gradtape.constant([0.0, 0.5, float("inf")]))
        Tensor([0.        , 0.52049988, 1.        ], dtype=float64)
    """
    return bind(ew.erf_p, float_operand(x))


def erfc(x):
    """The complementary error function 1 - erf(x), accurate where it is tiny.

    1 - erf(x) rounds to 0 for x > 6 in float64; erfc keeps full relative
    precision down to its underflow near x = 27 (within 5 ULP in float64,
    correctly rounded in float32).

    Args:
      x: a Tensor or array-like (integers become float64).

    Returns:
      A Tensor of x's shape, values in [0, 2].

    Example::

        >>> gradtape.erfc(gradtape.constant([0.0, 10.0, -float("inf")]))
        Tensor([1.00000000e+00, 2.08848758e-45, 2.00000000e+00], dtype=float64)
    """
    return bind(ew.erfc_p, float_operand(x))


def _unary_keep(op, *numpy_functions, float_only=False):
    @implements(*numpy_functions)
    def fn(x):
        x = as_tensor(x) if not isinstance(x, Tensor) else x
        if float_only and x.dtype.kind not in "f":
            return x  # floor/ceil/round of an integer is itself, as in NumPy
        return bind(op, x)

    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.name}, as numpy.{numpy_functions[0].__name__}."
    return fn


negative = _unary_keep(ew.neg_p, np.negative)
abs = _unary_keep(ew.abs_p, np.abs, np.absolute)
absolute = abs
sign = _unary_keep(ew.sign_p, np.sign)
floor = _unary_keep(ew.floor_p, np.floor, float_only=True)
ceil = _unary_keep(ew.ceil_p, np.ceil, float_only=True)
round = _unary_keep(ew.round_p, np.round, np.around, float_only=True)


@implements(np.positive)
def positive(x):
    """`x` as a Tensor (numpy.positive: +x is x)."""
    return as_tensor(x)


def _binary(op, *numpy_functions, float_result=False):
    @implements(*numpy_functions)
    def fn(x, y):
        x, y = promote_pair(x, y, float_result)
        return bind(op, x, y)

    fn.__name__ = numpy_functions[0].__name__
    fn.__doc__ = f"Elementwise {fn.__name__} with NumPy broadcasting and dtype promotion."
    return fn


add = _binary(ew.add_p, np.add)
subtract = _binary(ew.sub_p, np.subtract)
multiply = _binary(ew.mul_p, np.multiply)
divide = _binary(ew.div_p, np.divide, np.true_divide, float_result=True)
true_divide = divide
power = _binary(ew.pow_p, np.power, np.float_power, float_result=True)
maximum = _binary(ew.maximum_p, np.maximum, np.fmax)
minimum = _binary(ew.minimum_p, np.minimum, np.fmin)
equal = _binary(ew.eq_p, np.equal)
not_equal = _binary(ew.ne_p, np.not_equal)
less = _binary(ew.lt_p, np.less)
less_equal = _binary(ew.le_p, np.less_equal)
greater = _binary(ew.gt_p, np.greater)
greater_equal = _binary(ew.ge_p, np.greater_equal)


def _logical(op, np_fn):
    @implements(np_fn)
    def fn(x, y):
        return bind(op, convert(x, _BOOL), convert(y, _BOOL))

    fn.__name__ = np_fn.__name__
    fn.__doc__ = f"Elementwise {fn.__name__}; operands are converted to bool."
    return fn


logical_and = _logical(ew.logical_and_p, np.logical_and)
logical_or = _logical(ew.logical_or_p, np.logical_or)
logical_xor = _logical(ew.logical_xor_p, np.logical_xor)


@implements(np.logical_not)
def logical_not(x):
    """Elementwise logical not; the operand is converted to bool."""
    return bind(ew.logical_not_p, convert(x, _BOOL))


@implements(np.square)
def square(x):
    """x * x."""
    return multiply(x, x)


@implements(np.reciprocal)
def reciprocal(x):
    """1 / x (floating point)."""
    return divide(1.0, x)


@implements(np.where)
def where(condition, x, y):
    """Select x where condition holds, else y, with broadcasting.

    Gradients are masked: the branch not taken gets exactly zero gradient,
    so `where(x > 0, log(x), 0.0)` has gradient 0 (not NaN) at x = 0.

    Example::

        >>> gradtape.where(x > 0, gradtape.log(x), 0.0)
    """
    x, y = promote_pair(x, y)
    return bind(ew.where_p, convert(condition, _BOOL), x, y)


def cast(x, dtype):
    """x converted to `dtype`; differentiable between floating dtypes.

    Example::

        >>> gradtape.cast(x, "float32")
    """
    return convert(as_tensor(x), np.dtype(dtype))
