"""Op specs of the elementwise ops, over broadcasting shape pairs."""
import numpy as np
from scipy import special
from scipy.special import expit

import gradtape as gt

from .op_specs import OpSpec, args, normal, positive
from .specs_reduce import distinct

# Operand shape pairs that exercise NumPy broadcasting in both directions.
BROADCAST_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((2, 3), ())]


def _unary(name, fn, np_fn, maker=None, order=3):
    maker = maker or normal(2, 3)
    return OpSpec(name, fn, args(maker), ops=(name,), order=order, numpy_fn=np_fn)


SPECS = [
    _unary("neg", lambda x: -x, np.negative),
    _unary("exp", gt.exp, np.exp),
    _unary("log", gt.log, np.log, positive(2, 3)),
    _unary("log1p", gt.log1p, np.log1p, positive(2, 3, lo=-0.5, hi=2.0)),
    _unary("expm1", gt.expm1, np.expm1),
    _unary("sqrt", gt.sqrt, np.sqrt, positive(2, 3)),
    _unary("sin", gt.sin, np.sin),
    _unary("cos", gt.cos, np.cos),
    _unary("tan", gt.tan, np.tan, positive(2, 3, lo=-1.2, hi=1.2)),
    _unary("tanh", gt.tanh, np.tanh),
    _unary("arctan", gt.arctan, np.arctan),
    # Wider than normal(): the tails (|x| up to ~12) are where a naive log(1 + exp(x)) would lose them.
    OpSpec("softplus_tails", gt.softplus, args(lambda rng: rng.uniform(-12, 12, (2, 3))), ops=("softplus",),
           numpy_fn=lambda x: np.logaddexp(0.0, x)),
    OpSpec("sigmoid_tails", gt.sigmoid, args(lambda rng: rng.uniform(-12, 12, (2, 3))), ops=("sigmoid",),
           numpy_fn=expit),
    _unary("erf", gt.erf, special.erf),
    # erfc on both sides of its branches' seam at |x| = 1/2 and out to its tail (erfc(4) = 1.5e-8)
    OpSpec("erfc_tails", gt.erfc, args(lambda rng: rng.uniform(-4, 4, (2, 3))), ops=("erfc",),
           numpy_fn=special.erfc),
    OpSpec("gelu", gt.gelu, args(lambda rng: rng.uniform(-6, 6, (2, 3))), ops=("erfc", "mul"),
           numpy_fn=lambda x: x * special.ndtr(x)),
    OpSpec("gelu_tanh", lambda x: gt.gelu(x, approximate=True), args(normal(2, 3)),
           ops=("sigmoid", "pow", "mul", "add"),
           numpy_fn=lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    _unary("abs", gt.abs, np.abs, positive(2, 3, lo=0.2, hi=2.0)),
    _unary("abs_negative", gt.abs, np.abs, positive(2, 3, lo=-2.0, hi=-0.2)),
    # Piecewise-constant ops: zero derivative away from their jumps.
    _unary("sign", lambda x: gt.sign(x) * x, lambda x: np.sign(x) * x),
    _unary("floor", lambda x: gt.floor(x) * x, lambda x: np.floor(x) * x, positive(2, 3, lo=0.1, hi=0.9)),
    _unary("ceil", lambda x: gt.ceil(x) * x, lambda x: np.ceil(x) * x, positive(2, 3, lo=0.1, hi=0.9)),
    _unary("round", lambda x: gt.round(x) * x, lambda x: np.round(x) * x, positive(2, 3, lo=0.1, hi=0.4)),
    OpSpec("cast_f32", lambda x: gt.sin(gt.cast(x, "float32")), args(normal(3)), ops=("cast",),
           numpy_fn=lambda x: np.sin(x.astype(np.float32))),
    OpSpec("cast_roundtrip", lambda x: gt.cast(gt.cast(x, "float32"), "float64") * x,
           args(normal(3)), ops=("cast",), numpy_fn=lambda x: x.astype(np.float32).astype(np.float64) * x),
    # stop_gradient of a value that does not change with x: derivatives agree with FD.
    OpSpec("stop_gradient", lambda x: x * gt.stop_gradient(x * 0.0 + 2.0), args(normal(3)),
           ops=("stop_gradient",), numpy_fn=lambda x: x * 2.0),
]

_BINARY = [
    ("add", lambda x, y: x + y, np.add, normal, normal),
    ("sub", lambda x, y: x - y, np.subtract, normal, normal),
    ("mul", lambda x, y: x * y, np.multiply, normal, normal),
    ("div", lambda x, y: x / y, np.divide, normal, positive),
    ("pow", lambda x, y: x ** y, np.power, positive, normal),
    ("maximum", gt.maximum, np.maximum, normal, normal),
    ("minimum", gt.minimum, np.minimum, normal, normal),
]
for name, fn, np_fn, mx, my in _BINARY:
    for sx, sy in BROADCAST_PAIRS:
        SPECS.append(OpSpec(f"{name}_{sx}_{sy}", fn, args(mx(*sx), my(*sy)), ops=(name,), numpy_fn=np_fn))

SPECS += [
    OpSpec("pow_literal_exponent", lambda x: x ** 3.0, args(normal(2, 3)), ops=("pow",),
           numpy_fn=lambda x: x ** 3.0),
    OpSpec("pow_literal_base", lambda y: 2.0 ** y, args(normal(2, 3)), ops=("pow",),
           numpy_fn=lambda y: 2.0 ** y),
    OpSpec("where", lambda c, x, y: gt.where(c > 0, x * x, gt.sin(y)),
           args(normal(2, 3), normal(2, 3), normal(3)), ops=("where", "gt"),
           numpy_fn=lambda c, x, y: np.where(c > 0, x * x, np.sin(y))),
    OpSpec("where_same_operand", lambda c, x: gt.where(c > 0, x, x * 2.0),
           args(normal(4), normal(4)), ops=("where",),
           numpy_fn=lambda c, x: np.where(c > 0, x, x * 2.0)),
    OpSpec("comparisons_and_logic",
           lambda x, y: gt.where(gt.logical_or(gt.logical_and(x < y, x <= y), gt.logical_xor(x > y, x >= y))
                                 & ~(x == y) | (x != y), x, y),
           args(normal(5), normal(5)),
           ops=("lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or", "logical_xor", "logical_not"),
           numpy_fn=lambda x, y: np.where(((x < y) & (x <= y) | ((x > y) ^ (x >= y))) & ~(x == y) | (x != y), x, y)),
    OpSpec("softplus_sigmoid_f32", lambda x: gt.softplus(x) * gt.sigmoid(x), args(normal(2, 3, dtype=np.float32)),
           ops=("softplus", "sigmoid"),
           numpy_fn=lambda x: (np.logaddexp(0.0, x) * expit(x)).astype(np.float32)),
    OpSpec("float32_chain", lambda x: gt.tanh(x * 2.0) + gt.exp(x), args(normal(4, dtype=np.float32)),
           ops=("tanh", "exp"), numpy_fn=lambda x: np.tanh(x * np.float32(2.0)) + np.exp(x)),
]


@gt.custom_gradient
def _softplus_custom(x):
    """softplus with a hand-written gradient that is itself differentiable."""

    def grad_fn(upstream):
        return upstream / (1.0 + gt.exp(-x))

    return gt.log1p(gt.exp(x)), grad_fn


SPECS.append(
    OpSpec("custom_gradient", _softplus_custom, args(normal(2, 3)), ops=("custom_gradient",),
           numpy_fn=lambda x: np.log1p(np.exp(x)))
)


def _call_spec():
    from gradtape.tracer.dispatch import bind

    def inner(dtype):  # the sub-Function, traced in the arguments' dtype
        return gt.make_ir(lambda x, y: gt.sin(x) * y + gt.exp(y), np.ones(3, dtype), np.ones(3, dtype))

    return OpSpec("call", lambda x, y: bind(gt.ir.all_ops["call"], x, y, fn=inner(x.dtype)) * x,
                  args(normal(3), normal(3)), ops=("call",),
                  numpy_fn=lambda x, y: (np.sin(x) * y + np.exp(y)) * x)


SPECS.append(_call_spec())


# --- NumPy's other elementwise functions (issue 15): ops with native libm math, and composites.
def _uniform(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


SPECS += [
    _unary("sinh", gt.sinh, np.sinh, _uniform(-4, 4, 2, 3)),
    _unary("cosh", np.cosh, np.cosh, _uniform(-4, 4, 2, 3)),  # through NumPy's dispatch
    _unary("arcsin", gt.arcsin, np.arcsin, _uniform(-0.8, 0.8, 2, 3)),
    _unary("arccos", np.arccos, np.arccos, _uniform(-0.8, 0.8, 2, 3)),
    _unary("arcsinh", gt.arcsinh, np.arcsinh, _uniform(-5, 5, 2, 3)),
    _unary("arccosh", gt.arccosh, np.arccosh, _uniform(1.2, 4, 2, 3)),
    _unary("arctanh", gt.arctanh, np.arctanh, _uniform(-0.8, 0.8, 2, 3)),
    _unary("log2", gt.log2, np.log2, positive(2, 3)),
    _unary("log10", np.log10, np.log10, positive(2, 3)),
    _unary("exp2", gt.exp2, np.exp2),
    _unary("cbrt", gt.cbrt, np.cbrt, _uniform(0.3, 3, 2, 3)),
    OpSpec("cbrt_negative", gt.cbrt, args(_uniform(-3, -0.3, 2, 3)), ops=("cbrt",), numpy_fn=np.cbrt),
    OpSpec("inverse_hyperbolic_f32", lambda x: gt.arcsinh(x) + gt.arctanh(x * 0.5) + gt.cosh(x),
           args(lambda rng: rng.uniform(-1.5, 1.5, 4).astype(np.float32)),
           ops=("arcsinh", "arctanh", "cosh"),
           numpy_fn=lambda x: np.arcsinh(x) + np.arctanh(x * np.float32(0.5)) + np.cosh(x)),
    OpSpec("sinc", gt.sinc, args(_uniform(-3, 3, 2, 3)), ops=("sin", "where"), numpy_fn=np.sinc),
    OpSpec("sinc_near_zero", np.sinc, args(_uniform(-2e-4, 2e-4, 5)), ops=("where",), numpy_fn=np.sinc),
    OpSpec("deg2rad_rad2deg", lambda x: gt.sin(gt.deg2rad(x)) + gt.rad2deg(x), args(_uniform(-90, 90, 3)),
           ops=("mul",), numpy_fn=lambda x: np.sin(np.deg2rad(x)) + np.rad2deg(x)),
    OpSpec("nan_to_num_finite", lambda x: gt.nan_to_num(x) * x, args(normal(2, 3)), ops=("where",),
           numpy_fn=lambda x: np.nan_to_num(x) * x),
    OpSpec("heaviside", lambda x, y: gt.heaviside(x, y) * y, args(normal(2, 3), normal(3)), ops=("where",),
           numpy_fn=lambda x, y: np.heaviside(x, y) * y),
    OpSpec("copysign", gt.copysign, args(normal(2, 3), normal(3)), ops=("abs", "where"), numpy_fn=np.copysign),
    OpSpec("real_imag_conj", lambda x: gt.real(x) * 2.0 + gt.imag(x) + gt.conj(x) * x, args(normal(3)),
           ops=("where",), numpy_fn=lambda x: np.real(x) * 2.0 + np.imag(x) + np.conj(x) * x),
]

_MORE_BINARY = [
    ("hypot", gt.hypot, np.hypot, normal, normal),
    ("arctan2", np.arctan2, np.arctan2, normal, positive),  # away from the origin, where it is steep
    ("fmax", gt.fmax, np.fmax, normal, normal),
    ("fmin", np.fmin, np.fmin, normal, normal),
    ("logaddexp", gt.logaddexp, np.logaddexp, normal, normal),
    ("logaddexp2", np.logaddexp2, np.logaddexp2, normal, normal),
]
_OPS_OF = {"hypot": ("hypot",), "arctan2": ("arctan2",), "fmax": ("maximum", "where", "ne"),
           "fmin": ("minimum", "where", "ne"), "logaddexp": ("softplus", "where"), "logaddexp2": ("exp2", "log1p")}
for name, fn, np_fn, mx, my in _MORE_BINARY:
    for sx, sy in BROADCAST_PAIRS:
        SPECS.append(OpSpec(f"{name}_{sx}_{sy}", fn, args(mx(*sx), my(*sy)), ops=_OPS_OF[name], numpy_fn=np_fn))

# Ties x == y, where logaddexp's second derivative was 0 (its tie branch was linear): the
# function is smooth there, so finite differences check every order.
_TIED = np.array([0.4, -1.3, 0.4, 2.0, 0.4])
SPECS += [
    OpSpec("logaddexp_at_ties", lambda x: gt.logaddexp(x, 0.4) + gt.logaddexp(0.4, x) * x, args(lambda rng: _TIED),
           ops=("softplus", "where", "ge"), numpy_fn=lambda x: np.logaddexp(x, 0.4) + np.logaddexp(0.4, x) * x),
    OpSpec("logaddexp2_at_ties", lambda x: np.logaddexp2(x, 0.4) * x, args(lambda rng: _TIED),
           ops=("exp2", "log1p", "where", "ge"), numpy_fn=lambda x: np.logaddexp2(x, 0.4) * x),
    # A tensor exponent (not a literal) whose values include integers; the base away from 0.
    OpSpec("pow_tensor_integer_exponents", lambda x, y: x ** y, args(positive(2, 3), lambda rng: np.array([0.0, 1.0, 2.0])),
           ops=("pow", "where", "eq", "logical_and"), numpy_fn=np.power),
]


def _int_pow_weights(x, np_=gt):
    """x times an integer power of integers taken from x (argsort of distinct values, stable
    under a finite-difference step): base and exponent both traced, so every bit of the
    exponent is used."""
    base = np_.argsort(x, axis=1) + 2
    return x * base ** np_.argsort(-x, axis=1)


SPECS += [
    OpSpec("int_pow_weights", _int_pow_weights, args(distinct(3, 5)), ops=("int_pow", "argsort"),
           numpy_fn=lambda x: _int_pow_weights(x, np_=np)),
]


def _bitwise_weights(x, np_=gt):
    """x times integers that every bitwise op makes from integer functions of x (argsorts of
    distinct values, stable under a finite-difference step); the integers carry no derivative."""
    i = np_.argsort(x, axis=1) + 1
    j = np_.argsort(-x, axis=1) + 1
    return x * (((i & j) | (i ^ 3)) + ~j + (i << 2) + ((j << 3) >> 1))


SPECS += [
    OpSpec("bitwise_weights", _bitwise_weights, args(distinct(3, 5)),
           ops=("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert", "left_shift", "right_shift", "argsort"),
           numpy_fn=lambda x: _bitwise_weights(x, np_=np)),
]
