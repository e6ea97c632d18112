"""Elementwise ops: each declared with its shape rule, NumPy reference and
derivative rules side by side.

Binary and ternary ops broadcast like NumPy but require one dtype (front
ends promote first). VJP rules here return output-shaped cotangents; the
adjoint pass sums them back to each operand's shape.
"""
from __future__ import annotations

import math

import numpy as np

from ..builder import Sym, bind
from ..op import (
    batching_rules,
    impls,
    jvp_rules,
    new_op,
    shape_rules,
    vjp_rules,
)
from ..types import TensorType, complex_dtype, real_dtype
from ._helpers import (
    COMPLEX_OPS,
    ORDERING_REFUSAL,
    batched_rank,
    broadcast_shapes,
    refuse_complex,
    require_bool,
    require_float,
    same_dtype,
)
from .layout import broadcast_to, lift_batched


# --- shape-rule makers --------------------------------------------------------

# Why an op refuses complex operands, where the reason is not simply "not yet".
_COMPLEX_REFUSALS = {name: ORDERING_REFUSAL for name in ("lt", "le", "gt", "ge", "maximum", "minimum")}


def _unary_shape(op, float_only):
    def shape_rule(x):
        if float_only:
            require_float(op, x)
        elif op not in COMPLEX_OPS:
            refuse_complex(op, x)
        return x

    return shape_rule


def _nary_shape(op, out_dtype=None, float_only=False):
    def shape_rule(*types):
        dtype = same_dtype(op, types)
        if float_only:
            require_float(op, types[0])
        elif op not in COMPLEX_OPS:
            refuse_complex(op, types[0], _COMPLEX_REFUSALS.get(op.name, ""))
        return TensorType(broadcast_shapes(op, types), out_dtype or dtype)

    return shape_rule


def _broadcasting_batch_rule(op):
    """Batching rule of an op that broadcasts like NumPy: one equation, no copies.

    Batched operands get 1s inserted after their batch axis up to the
    largest batch-element rank; unbatched operands (and literals) then
    broadcast against every batch element by NumPy's right-aligned rule.
    """
    def batch_rule(axis_size, ins, batched, **params):
        rank = batched_rank(ins, batched)
        args = [lift_batched(x, rank) if bd else x for x, bd in zip(ins, batched)]
        return bind(op, *args, **params)

    return batch_rule


def _zeros_like(x: Sym) -> Sym:
    return broadcast_to(x.builder.literal(0, x.dtype), x.shape)


# --- unary ----------------------------------------------------------------------

def elementwise_op(name, **facts):
    """Declare an elementwise op: its reference computes every element from the
    operands' elements alone, so it never fails on values and runs no code."""
    return new_op(name, elementwise=True, can_fail_on_values=False, runs_code=False, **facts)


def unary(name, impl, deriv=None, *, zero_grad=False, float_only=True, cheap=False):
    """Declare a unary op whose derivative is `deriv(x, out)` (or exactly zero)."""
    op = elementwise_op(name, zero_derivative=zero_grad, cheap=cheap)
    shape_rules[op] = _unary_shape(op, float_only)
    impls[op] = impl
    batching_rules[op] = _broadcasting_batch_rule(op)
    if zero_grad:  # connected, but the derivative is 0 almost everywhere
        vjp_rules[op] = lambda ct, out, x: (_zeros_like(out),)
        jvp_rules[op] = lambda ts, out, x: _zeros_like(out)
    elif deriv is not None:
        vjp_rules[op] = lambda ct, out, x: (ct * deriv(x, out),)
        jvp_rules[op] = lambda ts, out, x: ts[0] * deriv(x, out)
    return op


neg_p = unary("neg", np.negative, float_only=False, cheap=True)
vjp_rules[neg_p] = lambda ct, out, x: (neg(ct),)
jvp_rules[neg_p] = lambda ts, out, x: neg(ts[0])

exp_p = unary("exp", np.exp, lambda x, out: out)
log_p = unary("log", np.log, lambda x, out: 1.0 / x)
log1p_p = unary("log1p", np.log1p, lambda x, out: 1.0 / (x + 1.0))
expm1_p = unary("expm1", np.expm1, lambda x, out: out + 1.0)
sqrt_p = unary("sqrt", np.sqrt, lambda x, out: 0.5 / out)
sin_p = unary("sin", np.sin, lambda x, out: cos(x))
cos_p = unary("cos", np.cos, lambda x, out: neg(sin(x)))
tan_p = unary("tan", np.tan, lambda x, out: 1.0 + out * out)
tanh_p = unary("tanh", np.tanh, lambda x, out: 1.0 - out * out)
arctan_p = unary("arctan", np.arctan, lambda x, out: 1.0 / (1.0 + x * x))
# NumPy's other transcendental functions, each one op so that native code
# computes it with libm's accuracy (codegen/math.py) where a composition would
# lose digits: cosh via exp overflows before cosh does, arcsin near +-1 and
# log10 as log(x) / ln 10 round off. Derivatives are written to stay finite
# where the function is: arcsinh' is 1 / hypot(1, x), not 1 / sqrt(1 + x*x),
# which is 0 for |x| > 1e154.
_LN2 = math.log(2.0)
sinh_p = unary("sinh", np.sinh, lambda x, out: cosh(x))
cosh_p = unary("cosh", np.cosh, lambda x, out: sinh(x))
arcsin_p = unary("arcsin", np.arcsin, lambda x, out: 1.0 / sqrt((1.0 - x) * (1.0 + x)))
arccos_p = unary("arccos", np.arccos, lambda x, out: -1.0 / sqrt((1.0 - x) * (1.0 + x)))
arcsinh_p = unary("arcsinh", np.arcsinh, lambda x, out: 1.0 / hypot(x.builder.literal(1.0, x.dtype), x))
arccosh_p = unary("arccosh", np.arccosh, lambda x, out: 1.0 / (sqrt(x - 1.0) * sqrt(x + 1.0)))
arctanh_p = unary("arctanh", np.arctanh, lambda x, out: 1.0 / ((1.0 - x) * (1.0 + x)))
log2_p = unary("log2", np.log2, lambda x, out: (1.0 / _LN2) / x)
log10_p = unary("log10", np.log10, lambda x, out: (1.0 / math.log(10.0)) / x)
exp2_p = unary("exp2", np.exp2, lambda x, out: _LN2 * out)
cbrt_p = unary("cbrt", np.cbrt, lambda x, out: (1.0 / 3.0) / (out * out))
abs_p = unary("abs", np.abs, lambda x, out: sign(x), float_only=False, cheap=True)
shape_rules[abs_p] = lambda x: x.with_dtype(real_dtype(x.dtype))  # |z| of a complex z is real
sign_p = unary("sign", np.sign, zero_grad=True, float_only=False, cheap=True)
floor_p = unary("floor", np.floor, zero_grad=True, cheap=True)
ceil_p = unary("ceil", np.ceil, zero_grad=True, cheap=True)
round_p = unary("round", np.round, zero_grad=True, cheap=True)

# --- the logistic pair: softplus and its derivative sigmoid --------------------------
# One op each rather than a composition of exp/log1p/where: an eager tape pays
# its dispatch per op, and the adjoint of the composition is a dozen selects
# and divisions where sigmoid(x) alone is the derivative. Both references
# compute only exp(-|x|) <= 1, so nothing overflows for any x.

def _softplus_impl(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): full relative precision in both tails."""
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _sigmoid_impl(x):
    """1 / (1 + exp(-x)) as (1 or e) / (1 + e), e = exp(-|x|): for x << 0 the
    result is e / (1 + e), with full relative precision down to the subnormals."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1 + e)  # 1.0 is weak: e's dtype, as ones_like(e) gave


sigmoid_p = unary("sigmoid", _sigmoid_impl, lambda x, out: out * (1.0 - out))
softplus_p = unary("softplus", _softplus_impl, lambda x, out: sigmoid(x))

# --- the error function and its complement ------------------------------------------
# NumPy has no erf. The references are Python's math.erf and math.erfc (the C
# library's, within an ULP) applied element by element in float64, so they
# are slow (~0.1 us per element) but independent of the native code
# (codegen/math_erf.py). erfc is its own op: 1 - erf(x) loses every digit
# where erfc(x) is tiny (x > 6 in float64).
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _elementwise_in_float64(scalar_fn):
    ufunc = np.frompyfunc(scalar_fn, 1, 1)

    def impl(x):
        x = np.asarray(x)
        # The scalar function gives each special value on purpose (a pole's inf, NaN's NaN); the FPU
        # flags its Python arithmetic leaves are not the caller's warnings, as SciPy's are not.
        with np.errstate(all="ignore"):
            return np.asarray(ufunc(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)

    return impl


erf_p = unary("erf", _elementwise_in_float64(math.erf), lambda x, out: _TWO_OVER_SQRT_PI * exp(neg(x * x)))
erfc_p = unary("erfc", _elementwise_in_float64(math.erfc), lambda x, out: -_TWO_OVER_SQRT_PI * exp(neg(x * x)))

logical_not_p = elementwise_op("logical_not", differentiable=False, cheap=True)
shape_rules[logical_not_p] = lambda x: (require_bool(logical_not_p, x), x)[1]
impls[logical_not_p] = np.logical_not
batching_rules[logical_not_p] = _broadcasting_batch_rule(logical_not_p)


# --- cast ---------------------------------------------------------------------------

cast_p = elementwise_op("cast", cheap=True)
shape_rules[cast_p] = lambda x, *, dtype: x.with_dtype(dtype)


def _cast_impl(x, *, dtype):
    x = np.asarray(x)
    if x.dtype.kind == "c" and np.dtype(dtype).kind == "b":
        return x != 0  # NumPy's bool of a complex number: either part nonzero
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        x = x.real  # what astype gives, without its ComplexWarning: the cast means the real part
    return x.astype(dtype)


impls[cast_p] = _cast_impl
batching_rules[cast_p] = _broadcasting_batch_rule(cast_p)


def _cast_vjp(ct, out, x, *, dtype):
    # (complex_parts.py adds the case real -> complex)
    if x.dtype.kind not in "fc" or out.dtype.kind not in "fc":
        return (None,)
    return (cast(ct, x.dtype),)  # complex -> real is the real part; its transpose embeds ct


def _cast_jvp(ts, out, x, *, dtype):
    return cast(ts[0], dtype) if out.dtype.kind in "fc" else None


vjp_rules[cast_p] = _cast_vjp
jvp_rules[cast_p] = _cast_jvp


# --- binary arithmetic -------------------------------------------------------------

def binary(name, impl, partials=None, *, float_only=False, **facts):
    """Declare a binary elementwise op; its VJP and JVP follow from its partial derivatives.

    Args:
      name, impl: the op's name and NumPy reference.
      partials: `partials(x, y, out) -> (d out / d x, d out / d y)`, each a Sym
        (broadcasting against out), a Python number (1 and -1 cost no
        multiplication), None (exactly zero), or a function `g -> g * d`
        where applying the partial rounds better than forming it (`g / y`
        rather than `g * (1 / y)`, which overflows for a subnormal y); None
        for an op whose rules are written by hand.
      float_only: the operands must be floating point.
      **facts: the op's other facts (commutative, identities, cheap; see op.py).

    An elementwise op's Jacobian with respect to each operand is diagonal, so
    the VJP and the JVP both multiply by the partial derivatives:

        VJP: (ct * dx, ct * dy)   output-shaped; the adjoint pass sums each
                                  back to its operand's shape (broadcasting)
        JVP: tx * dx + ty * dy    with a missing tangent's term left out

    Example::

        hypot_p = binary("hypot", np.hypot, lambda x, y, out: (x / out, y / out),
                         float_only=True, commutative=True)
    """
    op = elementwise_op(name, **facts)
    shape_rules[op] = _nary_shape(op, float_only=float_only)
    impls[op] = impl
    batching_rules[op] = _broadcasting_batch_rule(op)
    if partials is not None:
        vjp_rules[op] = lambda ct, out, x, y: tuple(_times(ct, d) for d in partials(x, y, out))
        jvp_rules[op] = lambda ts, out, x, y: _sum_tangents(
            *(None if t is None else _times(t, d) for t, d in zip(ts, partials(x, y, out))), out
        )
    return op


def _times(g, d):
    """g times a partial derivative (a Sym, a Python number, None for zero, or g -> g * d)."""
    if d is None:
        return None
    if callable(d):
        return d(g)
    if isinstance(d, (int, float)) and d in (1, -1):
        return g if d == 1 else neg(g)
    return g * d


def _full(t, like: Sym):
    """A tangent (or zero) made output-shaped: rules may mix operand shapes."""
    if t is None:
        return _zeros_like(like)
    if t.shape != like.shape:
        return broadcast_to(t, like.shape)
    return t


def _sum_tangents(a, b, out):
    if a is None and b is None:
        return None
    if a is None:
        return _full(b, out)
    if b is None:
        return _full(a, out)
    return _full(a + b, out)


add_p = binary("add", np.add, lambda x, y, out: (1, 1),
               commutative=True, left_identity=0, right_identity=0, cheap=True)
sub_p = binary("sub", np.subtract, lambda x, y, out: (1, -1), right_identity=0, cheap=True)
mul_p = binary("mul", np.multiply, lambda x, y, out: (y, x),
               commutative=True, left_identity=1, right_identity=1, cheap=True)
div_p = binary("div", np.true_divide, lambda x, y, out: (lambda g: g / y, lambda g: neg(g * out / y)),
               float_only=True, right_identity=1)


def _safe_log(x):
    """log(x) where x > 0, else 0: d(x**y)/dy at x == 0 is 0 for y > 0, not NaN.
    A complex x takes the principal log everywhere but at 0."""
    if x.dtype.kind == "c":
        nonzero = ne(x, 0.0)
        return where(nonzero, log(where(nonzero, x, 1.0)), 0.0)
    return where(gt(x, 0.0), log(where(gt(x, 0.0), x, 1.0)), 0.0)


def _pow_partials(x, y, out):
    yv = y.literal_value()
    if yv is not None:  # x ** c: keep the exponent a literal, so c - 1 folds
        dx = y * pow(x, yv - 1)
    else:
        # x ** y at y == 0 is 1 for every x, so its slope is 0 (as a literal 0's, below), but
        # y * x ** (y - 1) is 0 * inf at x == 0. There only, constants stand in: 0 * 0 ** 0,
        # whose derivatives of every order are 0 with no NaN anywhere (a `where` choosing 0
        # over a NaN would leak it into the derivatives of higher order), and d2/dydx is 0
        # there as d2/dxdy is (the exponent's slope is 0 at x == 0). Elsewhere y == 0 keeps
        # d2/dydx = 1 / x.
        at_zero = logical_and(eq(x, 0.0), eq(y, 0.0))
        dx = where(at_zero, 0.0, y) * pow(x, where(at_zero, 1.0, y) - 1.0)
    return dx, lambda g: g * out * _safe_log(x)


# x ** c for these scalar exponents is computed without pow, as NumPy 2.4 and later do
# (ones, x, x*x, 1/x, sqrt), so results differ from C's pow at special values:
# (-0.0) ** 0.5 is -0.0 and (-inf) ** 0.5 is nan. The reference applies them itself,
# so every NumPy (older ones call pow) gives the values compiled code gives
# (codegen/math_pow.py implements the same table).
POW_SHORTCUTS = {0.0: "one", 1.0: "x", 2.0: "multiply", -1.0: "reciprocal", 0.5: "sqrt"}


def _power(x, y):
    """np.power with POW_SHORTCUTS applied for a scalar exponent, on any NumPy version."""
    form = POW_SHORTCUTS.get(float(y)) if np.ndim(y) == 0 and np.asarray(y).dtype.kind == "f" else None
    if form is None:
        return np.power(x, y)
    out_dtype = np.result_type(x, y)
    x = np.asarray(x, out_dtype)
    if form == "one":
        return np.ones_like(x)
    if form == "x":
        return x.copy()
    if form == "multiply":
        return np.multiply(x, x)
    if form == "reciprocal":
        return np.divide(out_dtype.type(1), x)
    return np.sqrt(x)


pow_p = binary("pow", _power, _pow_partials, float_only=True, right_identity=1)

# x ** 0 is 1 everywhere (0 ** 0, inf ** 0 and nan ** 0 too, in NumPy), so its
# derivative is exact zeros (connected, like floor's) whatever the cotangent, as
# in JAX; not 0 * x ** -1, NaN at x = 0. The optimizer folds x ** 0 to 1, so a
# NaN there also made paths differentiating before and after optimizing disagree.
_pow_vjp, _pow_jvp = vjp_rules[pow_p], jvp_rules[pow_p]
vjp_rules[pow_p] = lambda ct, out, x, y: (
    (_zeros_like(out), None) if y.literal_value() == 0 else _pow_vjp(ct, out, x, y)
)
jvp_rules[pow_p] = lambda ts, out, x, y: _zeros_like(out) if y.literal_value() == 0 else _pow_jvp(ts, out, x, y)


def _select_weights(x, y):
    """Weights of x and y in maximum(x, y) (and of y, x in minimum): ties split evenly."""
    one, half, zero = (x.builder.literal(v, x.dtype) for v in (1.0, 0.5, 0.0))
    wx = where(gt(x, y), one, where(eq(x, y), half, zero))
    return wx, 1.0 - wx


maximum_p = binary("maximum", np.maximum, lambda x, y, out: _select_weights(x, y),
                   commutative=True, cheap=True)
minimum_p = binary("minimum", np.minimum, lambda x, y, out: _select_weights(y, x),
                   commutative=True, cheap=True)



def _hypot_partials(x, y, out):
    return (lambda g: g * (x / out), lambda g: g * (y / out))


def _arctan2_partials(y, x, out):
    # d atan2(y, x) = (x dy - y dx) / (x^2 + y^2), with the square formed as
    # hypot^2 one factor at a time, so it neither overflows nor underflows early.
    h = hypot(y, x)
    return (lambda g: g * ((x / h) / h), lambda g: neg(g * ((y / h) / h)))


hypot_p = binary("hypot", np.hypot, _hypot_partials, float_only=True, commutative=True)
arctan2_p = binary("arctan2", np.arctan2, _arctan2_partials, float_only=True)

# --- comparisons and logic (no derivative) ----------------------------------------

def predicate(name, impl, *, bool_only=False, commutative=False):
    op = elementwise_op(name, differentiable=False, commutative=commutative, cheap=True)
    nary = _nary_shape(op, out_dtype=np.bool_)

    def shape_rule(*types):
        if bool_only:
            for t in types:
                require_bool(op, t)
        return nary(*types)

    shape_rules[op] = shape_rule
    impls[op] = impl
    batching_rules[op] = _broadcasting_batch_rule(op)
    return op


eq_p = predicate("eq", np.equal, commutative=True)
ne_p = predicate("ne", np.not_equal, commutative=True)
lt_p = predicate("lt", np.less)
le_p = predicate("le", np.less_equal)
gt_p = predicate("gt", np.greater)
ge_p = predicate("ge", np.greater_equal)
logical_and_p = predicate("logical_and", np.logical_and, bool_only=True, commutative=True)
logical_or_p = predicate("logical_or", np.logical_or, bool_only=True, commutative=True)
logical_xor_p = predicate("logical_xor", np.logical_xor, bool_only=True, commutative=True)


# --- where ---------------------------------------------------------------------------

where_p = elementwise_op("where", cheap=True)


def _where_shape(cond, x, y):
    require_bool(where_p, cond, "condition")
    dtype = same_dtype(where_p, (x, y))
    return TensorType(broadcast_shapes(where_p, (cond, x, y)), dtype)


shape_rules[where_p] = _where_shape
impls[where_p] = np.where
batching_rules[where_p] = _broadcasting_batch_rule(where_p)
vjp_rules[where_p] = lambda ct, out, c, x, y: (
    None,
    where(c, ct, 0.0),
    where(c, 0.0, ct),
)
jvp_rules[where_p] = lambda ts, out, c, x, y: (
    None
    if ts[1] is None and ts[2] is None
    else where(c, _full(ts[1], out), _full(ts[2], out))
)


# --- the functions rules and passes call ----------------------------------------

def neg(x): return bind(neg_p, x)
def exp(x): return bind(exp_p, x)
def log(x): return bind(log_p, x)
def log1p(x): return bind(log1p_p, x)
def expm1(x): return bind(expm1_p, x)
def sqrt(x): return bind(sqrt_p, x)
def sin(x): return bind(sin_p, x)
def cos(x): return bind(cos_p, x)
def tan(x): return bind(tan_p, x)
def tanh(x): return bind(tanh_p, x)
def arctan(x): return bind(arctan_p, x)
def abs(x): return bind(abs_p, x)
def sinh(x): return bind(sinh_p, x)
def cosh(x): return bind(cosh_p, x)
def arcsin(x): return bind(arcsin_p, x)
def arccos(x): return bind(arccos_p, x)
def arcsinh(x): return bind(arcsinh_p, x)
def arccosh(x): return bind(arccosh_p, x)
def arctanh(x): return bind(arctanh_p, x)
def log2(x): return bind(log2_p, x)
def log10(x): return bind(log10_p, x)
def exp2(x): return bind(exp2_p, x)
def cbrt(x): return bind(cbrt_p, x)
def hypot(x, y): return bind(hypot_p, x, y)
def arctan2(y, x): return bind(arctan2_p, y, x)
def sign(x): return bind(sign_p, x)
def floor(x): return bind(floor_p, x)
def ceil(x): return bind(ceil_p, x)
def round(x): return bind(round_p, x)
def sigmoid(x): return bind(sigmoid_p, x)
def softplus(x): return bind(softplus_p, x)
def erf(x): return bind(erf_p, x)
def erfc(x): return bind(erfc_p, x)
def logical_not(x): return bind(logical_not_p, x)
def cast(x, dtype): return bind(cast_p, x, dtype=np.dtype(dtype))
def add(x, y): return bind(add_p, x, y)
def sub(x, y): return bind(sub_p, x, y)
def mul(x, y): return bind(mul_p, x, y)
def div(x, y): return bind(div_p, x, y)
def pow(x, y): return bind(pow_p, x, y)
def maximum(x, y): return bind(maximum_p, x, y)
def minimum(x, y): return bind(minimum_p, x, y)
def eq(x, y): return bind(eq_p, x, y)
def ne(x, y): return bind(ne_p, x, y)
def lt(x, y): return bind(lt_p, x, y)
def le(x, y): return bind(le_p, x, y)
def gt(x, y): return bind(gt_p, x, y)
def ge(x, y): return bind(ge_p, x, y)
def logical_and(x, y): return bind(logical_and_p, x, y)
def logical_or(x, y): return bind(logical_or_p, x, y)
def logical_xor(x, y): return bind(logical_xor_p, x, y)
def where(c, x, y): return bind(where_p, c, x, y)


# Operators on Syms, so rules read like the math they implement.
Sym.__neg__ = neg
Sym.__add__ = add
Sym.__radd__ = lambda self, other: add(other, self)
Sym.__sub__ = sub
Sym.__rsub__ = lambda self, other: sub(other, self)
Sym.__mul__ = mul
Sym.__rmul__ = lambda self, other: mul(other, self)
Sym.__truediv__ = div
Sym.__rtruediv__ = lambda self, other: div(other, self)
Sym.__pow__ = pow


# --- stop_gradient: the identity, through which no derivative flows -----------------
stop_gradient_p = new_op("stop_gradient", elementwise=False, can_fail_on_values=False, runs_code=False,
                         differentiable=False, cheap=True)
shape_rules[stop_gradient_p] = lambda x: x
impls[stop_gradient_p] = lambda x: x
batching_rules[stop_gradient_p] = _broadcasting_batch_rule(stop_gradient_p)


def stop_gradient(x): return bind(stop_gradient_p, x)
