"""Elementwise NumPy-like functions: arithmetic, transcendental, comparison,
logic, where and cast. Each promotes its arguments like NumPy and binds one op.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import elementwise as ew
from ..ir.ops._helpers import COMPLEX_OPS
from ..ir.ops.int_pow import NEGATIVE_POWER_MESSAGE, int_pow_p
from ..tracer.deferred import PendingTensor
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from ..tracer.weak import WeakScalar
from ._promote import as_tensor, convert, dtype_of, float_operand, inexact_operand, promote_pair
from .fresh import always_new

_BOOL = np.dtype(np.bool_)  # made once: convert takes a dtype as it is
_INT8 = np.dtype(np.int8)


def _unary_float(op, *numpy_functions):
    operand = inexact_operand if op in COMPLEX_OPS else float_operand  # complex_parts.py's list

    @implements(*numpy_functions)
    def fn(x):
        if x.__class__ is PendingTensor and x.dtype.kind == "f":  # what `operand` passes as it is
            return bind(op, x)  # (tanh, exp and log on every step of a recorded LSTM)
        return bind(op, operand(x))

    fn.__code__ = fn.__code__.replace(co_name=op.name)  # float_operand's errors (and tracebacks) name it
    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.name}, as numpy.{numpy_functions[0].__name__}; ints become float64."
    return always_new(fn)  # every path binds an op


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
sinh = _unary_float(ew.sinh_p, np.sinh)
cosh = _unary_float(ew.cosh_p, np.cosh)
arcsin = _unary_float(ew.arcsin_p, np.arcsin)
arccos = _unary_float(ew.arccos_p, np.arccos)
arcsinh = _unary_float(ew.arcsinh_p, np.arcsinh)
arccosh = _unary_float(ew.arccosh_p, np.arccosh)
arctanh = _unary_float(ew.arctanh_p, np.arctanh)
log2 = _unary_float(ew.log2_p, np.log2)
log10 = _unary_float(ew.log10_p, np.log10)
exp2 = _unary_float(ew.exp2_p, np.exp2)
cbrt = _unary_float(ew.cbrt_p, np.cbrt)


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
        if x.dtype.kind == "c" and op not in COMPLEX_OPS:
            raise TypeError(f"{op.name}: complex input is not supported, got a value of dtype {x.dtype}; "
                            "take numpy.real or numpy.abs first")
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
_round_half_even = _unary_keep(ew.round_p, np.round, float_only=True)


@implements(np.round, np.around)
def round(x, decimals=0, out=None):
    """Round half to even to `decimals` places (numpy.round); its gradient is zero almost everywhere.

    With `decimals` it computes what NumPy does: x * 10**decimals rounded, then divided back
    (x / 10**-decimals, rounded, times 10**-decimals for negative `decimals`), in x's dtype.

    Args:
      x: a Tensor or array-like.
      decimals: how many decimal places (negative: to tens, hundreds, ...).

    Returns:
      A Tensor of x's shape and dtype (integers unchanged unless `decimals` < 0).

    Raises:
      TypeError: `out` is given, or `decimals` is not an integer.

    Example::

        >>> gradtape.round(gradtape.constant([1.25, 2.35, -0.5]), 1)
        Tensor([ 1.2,  2.4, -0.5], dtype=float64)
    """
    if out is not None:
        raise TypeError("round: out= is not supported (tensors are immutable)")
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an integer, got {decimals!r}")
    x = as_tensor(x) if not isinstance(x, Tensor) else x
    decimals = int(decimals)
    if decimals == 0 or (decimals > 0 and x.dtype.kind != "f"):
        return _round_half_even(x)
    if x.dtype.kind not in "fiu":
        raise TypeError(f"round: needs a number, got dtype {x.dtype}")
    value = x if x.dtype.kind == "f" else convert(x, np.float64)
    scale = value.dtype.type(10.0 ** abs(decimals))
    if decimals > 0:
        rounded = divide(_round_half_even(multiply(value, scale)), scale)
    else:
        rounded = multiply(_round_half_even(divide(value, scale)), scale)
    return rounded if rounded.dtype == x.dtype else convert(rounded, x.dtype)


around = round


@implements(np.positive)
def positive(x):
    """`x` as a Tensor (numpy.positive: +x is x)."""
    return as_tensor(x)


def _binary(op, *numpy_functions, float_result=False):
    @implements(*numpy_functions)
    def fn(x, y):
        if x.__class__ is WeakScalar or y.__class__ is WeakScalar:
            return _weak_binary(op, x, y, float_result)
        x, y = promote_pair(x, y, float_result)
        return bind(op, x, y)

    fn.__name__ = numpy_functions[0].__name__
    fn.__doc__ = f"Elementwise {fn.__name__} with NumPy broadcasting and dtype promotion."
    return always_new(fn)  # every path binds an op


def _weak_binary(op, x, y, float_result):
    """op on a traced Python scalar argument (WeakScalar): weak again when the other operand is
    weak too, as 2.5 * 2.0 is a Python float, unless the result is a bool (a comparison)."""
    both_weak = all(a.__class__ in (WeakScalar, float, int) for a in (x, y))
    out = bind(op, *promote_pair(x, y, float_result))
    if both_weak and out.dtype.kind in "fi":
        return WeakScalar(sym=out._sym)
    return out


add = _binary(ew.add_p, np.add)
subtract = _binary(ew.sub_p, np.subtract)
multiply = _binary(ew.mul_p, np.multiply)
divide = _binary(ew.div_p, np.divide, np.true_divide, float_result=True)
true_divide = divide
maximum = _binary(ew.maximum_p, np.maximum)
minimum = _binary(ew.minimum_p, np.minimum)
hypot = _binary(ew.hypot_p, np.hypot, float_result=True)
arctan2 = _binary(ew.arctan2_p, np.arctan2, float_result=True)
equal = _binary(ew.eq_p, np.equal)
not_equal = _binary(ew.ne_p, np.not_equal)
less = _binary(ew.lt_p, np.less)
less_equal = _binary(ew.le_p, np.less_equal)
greater = _binary(ew.gt_p, np.greater)
greater_equal = _binary(ew.ge_p, np.greater_equal)


@implements(np.power)
def power(x, y):
    """x ** y elementwise, with NumPy's broadcasting and promotion (numpy.power, the `**` operator).

    Floats give floats (a float base with an integer exponent keeps its
    derivative in the base). Integers give integers of NumPy's result dtype
    (int64 ** int64 is int64, int32 ** 2 int32, bools int8), exact and
    wrapping on overflow as NumPy's (np.int64(3) ** 41 is negative); they
    carry no derivative.

    Raises:
      ValueError: an integer exponent whose value is known here (eagerly,
        or a literal or constant while tracing) is negative, as NumPy raises.
        A traced negative integer exponent cannot raise when staged code runs:
        it gives the integer part of the true value (1 for x == 1, (-1) ** y
        for x == -1, else 0; ir/ops/int_pow.py).

    Example::

        >>> gradtape.constant(3) ** 39
        Tensor(4052555153018976267, dtype=int64)
        >>> gradtape.power(gradtape.constant([1.5, 2.0]), 2)
        Tensor([2.25, 4.  ], dtype=float64)
    """
    weak = (x.__class__ is WeakScalar or y.__class__ is WeakScalar) and all(
        a.__class__ in (WeakScalar, float, int) for a in (x, y))
    px, py = promote_pair(x, y)
    kind = px.dtype.kind
    if kind == "f":
        out = bind(ew.pow_p, px, py)
    elif kind in "iub":
        if kind == "b":  # NumPy's power has no bool loop: bools are raised as int8
            px, py = convert(px, _INT8), convert(py, _INT8)
        if kind == "i":
            _check_exponent(py)
        out = bind(int_pow_p, px, py)
    else:
        out = bind(ew.pow_p, *promote_pair(x, y, True))
    if weak and out.dtype.kind in "fi":  # as 2 ** 3 is a Python int
        return WeakScalar(sym=out._sym)
    return out


def _check_exponent(y):
    """NumPy's error for a negative integer exponent whose value is known now."""
    if isinstance(y, Tensor):
        if y._sym is not None:
            return  # traced: its value exists only when the code runs
        y = y.numpy()
    if np.any(np.asarray(y) < 0):
        raise ValueError(f"{NEGATIVE_POWER_MESSAGE} (power: got a negative {np.asarray(y).dtype} exponent; "
                         "make the base or the exponent a float, e.g. x ** -1.0, for a fraction)")


def _logical(op, np_fn):
    @implements(np_fn)
    def fn(x, y):
        return bind(op, convert(x, _BOOL), convert(y, _BOOL))

    fn.__name__ = np_fn.__name__
    fn.__doc__ = f"Elementwise {fn.__name__}; operands are converted to bool."
    return always_new(fn)  # every path binds an op


logical_and = _logical(ew.logical_and_p, np.logical_and)
logical_or = _logical(ew.logical_or_p, np.logical_or)
logical_xor = _logical(ew.logical_xor_p, np.logical_xor)


@implements(np.float_power)
def float_power(x, y):
    """x ** y computed in at least float64 (numpy.float_power): float32 operands give float64.

    Example::

        >>> gradtape.float_power(gradtape.constant(np.float32(2.0)), 3).dtype
        dtype('float64')
    """
    x, y = promote_pair(x, y, True)
    dtype = np.promote_types(np.result_type(dtype_of(x)), np.float64)
    return bind(ew.pow_p, convert(x, dtype), convert(y, dtype))


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

        >>> x = gradtape.constant([0.0, 1.0, np.e])
        >>> with gradtape.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gradtape.sum(gradtape.where(x > 0, gradtape.log(x), 0.0))
        >>> tape.gradient(y, x).numpy().round(4)   # 0 where the log is not taken, not NaN
        array([0.    , 1.    , 0.3679])
    """
    x, y = promote_pair(x, y)
    return bind(ew.where_p, convert(condition, _BOOL), x, y)


def cast(x, dtype):
    """x converted to `dtype`; differentiable between floating dtypes.

    Example::

        >>> x = gradtape.constant([1.0, 2.0, 3.0])
        >>> gradtape.cast(x, "float32").dtype
        dtype('float32')
    """
    return convert(as_tensor(x), np.dtype(dtype))
