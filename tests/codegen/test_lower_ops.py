"""Each op lowered on its own (in float64 and float32 where it allows, in
NumPy's broadcasting pairs, through transposed and strided layouts) and
compared with the reference interpreter.

Tolerances: exact for layout, integer, bool and comparison results and for
float arithmetic (elementwise code has no fast-math flags, so it rounds like
NumPy). Transcendentals are compared in units in the last place (ULP) of
NumPy's result. Measured maxima over 2e5 random points per function (this
machine, gradtape.codegen.math): float64 exp log log1p expm1 arctan pow 1,
tanh 2, sin cos tan 3; float32 log1p expm1 pow 1, exp tanh sin cos arctan 2,
log tan 3. The bounds below are the library's documented maxima rounded up
(polynomials <= 2.5 ULP: 3; libmvec <= 4), plus 1-2 ULP in float32, where
NumPy's own functions err by up to 2.3 ULP (measured against float64 references).
"""
import numpy as np
import pytest

from gradtape import ir
from gradtape.ir import ops

from .lower_helpers import assert_matches, check, compiled, max_ulp

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)

# op -> (max ULP in float64, in float32), or 0 for correctly rounded results
ULP = {
    "exp": (3, 4), "log": (3, 4), "log1p": (3, 4), "expm1": (3, 4), "tanh": (3, 4),
    "softplus": (3, 4), "sigmoid": (3, 4),
    "sin": (4, 6), "cos": (4, 6), "tan": (4, 6), "arctan": (4, 6),
    "sqrt": (0, 0), "neg": (0, 0), "abs": (0, 0), "sign": (0, 0),
    "floor": (0, 0), "ceil": (0, 0), "round": (0, 0),
}
DOMAIN = {"log": (0.01, 20.0), "sqrt": (0.0, 20.0), "log1p": (-0.9, 20.0), "tan": (-1.5, 1.5)}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-300, -1e-20, 30.0, -30.0]

BROADCAST_PAIRS = [
    ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((2, 3), ()), ((4, 1, 5), (3, 1)),
]


def function(op_name, types, layouts=None, **params):
    """{ xs . y = op[params] (layout(x) for x) -> y }, each layout a callable on Syms."""
    b = ir.Builder()
    xs = [b.input(t) for t in types]
    views = [x if not layouts or layouts[i] is None else layouts[i](x) for i, x in enumerate(xs)]
    out = ir.bind(ir.all_ops[op_name], *views, **params)
    return b.build(xs, [out])


def grouped(entries):
    """One Function computing op[params](layouts(xs)) for each (op_name, types, layouts, params)
    entry from inputs of its own: one compile checks many ops (LLVM's time is per loop,
    but each module costs a few ms more)."""
    b = ir.Builder()
    invars, outs = [], []
    for op_name, types, layouts, params in entries:
        xs = [b.input(t) for t in types]
        invars += xs
        views = [x if not layouts or layouts[i] is None else layouts[i](x) for i, x in enumerate(xs)]
        outs.append(ir.bind(ir.all_ops[op_name], *views, **params))
    return b.build(invars, outs)


def run_both(fn, args):
    """(compiled outputs, reference outputs)."""
    with np.errstate(all="ignore"):
        return compiled(fn)(*args), ir.eval_function(fn, [np.asarray(a) for a in args])


def t(shape, dtype=F64):
    return ir.TensorType((shape,) if isinstance(shape, int) else shape, dtype)


def rand(rng, shape, dtype=F64, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


# --- unary ---------------------------------------------------------------------------------

def _transposed(x):  # stored (5, 4), used as (4, 5)
    return ops.transpose(x, (1, 0))


def _strided(x):  # stored (9, 5), used as rows 7, 5, 3, 1
    return ops.slice(x, (7, 0), (0, 5), (-2, 1))


LAYOUTS = {"contiguous": ((4, 5), None), "transposed": ((5, 4), _transposed), "strided": ((9, 5), _strided)}


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_unary_float(layout, dtype):
    rng = np.random.default_rng(1)
    shape, view = LAYOUTS[layout]
    names = list(ULP)
    xs = [rand(rng, shape, dtype, *DOMAIN.get(name, (-3.0, 3.0))) for name in names]
    fn = grouped([(name, [t(shape, dtype)], [view], {}) for name in names])
    got, want = run_both(fn, xs)
    for name, g, w in zip(names, got, want):
        assert max_ulp(g, w) <= ULP[name][dtype == F32], (name, dtype, layout)


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
def test_unary_special_values(dtype):
    """inf, nan, signed zeros, halves (round to even), tiny and large values, as NumPy."""
    x = np.array(SPECIAL, dtype)
    names = list(ULP)
    fn = grouped([(name, [t(x.shape, dtype)], None, {}) for name in names])
    got, want = run_both(fn, [x] * len(names))
    for name, g, w in zip(names, got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
        assert max_ulp(g, w) <= ULP[name][dtype == F32], (name, dtype, g, w)


def test_sign_of_zero_and_nan():
    x = np.array([0.0, -0.0, np.nan, -2.0, 3.0, -np.inf])
    got = compiled(function("sign", [t(6)]))(x)[0]
    np.testing.assert_array_equal(got, [0.0, 0.0, np.nan, -1.0, 1.0, -1.0])


def test_round_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999, 3.5000001, -2.5])
    got = compiled(function("round", [t(8)]))(x)[0]
    np.testing.assert_array_equal(got, np.round(x))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8], ids=str)
def test_unary_integer(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, -1, 5, -7, info.max, info.min], np.int64).astype(dtype)
    names = ["neg", "abs", "sign", "bitwise_invert"]
    check(grouped([(name, [t(x.shape, dtype)], None, {}) for name in names]), [x] * len(names), rtol=0)


# --- binary ----------------------------------------------------------------------------------

ARITH = ["add", "sub", "mul", "div", "maximum", "minimum"]


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=str)
def test_binary_float_broadcasting(shapes, dtype):
    rng = np.random.default_rng(2)
    xs = [rand(rng, s, dtype) for s in shapes]
    fn = grouped([(name, [t(s, dtype) for s in shapes], None, {}) for name in ARITH])
    check(fn, xs * len(ARITH), rtol=0)


@pytest.mark.parametrize("op_name", ARITH + ["pow", "eq", "lt", "ge"])
def test_binary_through_layouts(op_name):
    """A transposed operand with a reversed-strided one."""
    rng = np.random.default_rng(3)
    a, b = rand(rng, (5, 4), lo=0.1), rand(rng, (9, 5))
    fn = function(op_name, [t((5, 4)), t((9, 5))], [_transposed, _strided])
    got = compiled(fn)(a, b)[0]
    want = ir.eval_function(fn, [a, b])[0]
    if op_name == "pow":
        assert max_ulp(got, want) <= ULP["sin"][0]  # libmvec pow
    else:
        assert_matches(got, want, rtol=0)


INT_BINARY = ["add", "sub", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "int_pow",
              "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int16], ids=str)
def test_binary_integer(dtype):
    rng = np.random.default_rng(4)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (3, 4), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, (4,), dtype=dtype, endpoint=True)
    b[0] = a[0, 0]  # some equal pairs for the comparisons
    fn = grouped([(name, [t((3, 4), dtype), t((4,), dtype)], None, {}) for name in INT_BINARY])
    with np.errstate(over="ignore"):
        check(fn, [a, b] * len(INT_BINARY), rtol=0)  # wraps like NumPy


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16, np.uint64], ids=str)
def test_shifts_by_every_count_in_and_out_of_range(dtype):
    """NumPy's rule where C's is undefined: a count < 0 or >= the width gives 0 (-1 for a negative
    signed operand shifted right)."""
    bits = 8 * np.dtype(dtype).itemsize
    counts = np.arange(-3 if np.dtype(dtype).kind == "i" else 0, bits + 3)
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 1, 5, 0], dtype)[:, None] * np.ones(counts.size, dtype)
    y = np.broadcast_to(counts.astype(dtype), x.shape).copy()
    fn = grouped([(name, [t(x.shape, dtype), t(y.shape, dtype)], None, {}) for name in ("left_shift", "right_shift")])
    check(fn, [x, y] * 2, rtol=0)


NAN_OPS = ["eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum"]
BOOL_OPS = [
    "logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "ge", "add", "mul", "maximum", "minimum",
    "bitwise_and", "bitwise_or", "bitwise_xor",
]


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
def test_nan_in_comparisons_and_extrema(dtype):
    """NaN compares unequal (ne True) and propagates through maximum/minimum, as in NumPy."""
    x = np.array([np.nan, 1.0, np.nan, -0.0, 2.0, -np.inf, 3.0], dtype)
    y = np.array([1.0, np.nan, np.nan, 0.0, -np.inf, -np.inf, 3.0], dtype)
    fn = grouped([(name, [t(7, dtype), t(7, dtype)], None, {}) for name in NAN_OPS])
    check(fn, [x, y] * len(NAN_OPS), rtol=0)


def test_binary_bool():
    a = np.array([[True, False, True, False]])
    b = np.array([[True], [False]])
    fn = grouped([(name, [t((1, 4), np.bool_), t((2, 1), np.bool_)], None, {}) for name in BOOL_OPS])
    check(fn, [a, b] * len(BOOL_OPS), rtol=0)


def test_bitwise_invert_of_bools_is_logical_not():
    x = np.array([True, False, True])
    check(function("bitwise_invert", [t(3, np.bool_)]), [x], rtol=0)


def test_logical_not_of_a_comparison():
    b = ir.Builder()
    x = b.input(t((6,)))
    fn = b.build([x], [ops.logical_not(ops.gt(x, 0.0))])
    check(fn, [np.array([-1.0, 0.0, 1.0, np.nan, -0.0, 2.0])], rtol=0)


def test_pow_negative_base_with_integer_exponents():
    x = np.array([-2.0, -3.0, -0.5, -2.0, 0.0, -0.0, -np.inf, np.nan])
    y = np.array([3.0, 2.0, -3.0, 0.5, -1.0, 3.0, 0.5, 0.0])
    fn = function("pow", [t(8), t(8)])
    got = compiled(fn)(x, y)[0]
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert max_ulp(got, want) <= ULP["sin"][0]


@pytest.mark.parametrize("exponent", [2.0, 3.0, -1.0, -2.0, 0.0, 0.5, 1.0, 4.0, 2.5, -0.5])
def test_pow_by_literal_exponent(exponent):
    x = np.array([-2.0, -0.5, 0.0, -0.0, 1.5, 3.0, np.inf, -np.inf, np.nan])
    b = ir.Builder()
    s = b.input(t(x.shape))
    fn = b.build([s], [ops.pow(s, exponent)])
    got = compiled(fn)(x)[0]
    with np.errstate(all="ignore"):
        want = x ** exponent  # the operator: NumPy's shortcuts for 0.5, 2, -1 ... on every NumPy 2
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert max_ulp(got, want) <= 4


@pytest.mark.parametrize("shapes", [((2, 1), (3,), ()), ((3,), (2, 3), (2, 1)), ((), (), (4,))], ids=str)
def test_where_broadcasting(shapes):
    rng = np.random.default_rng(5)
    c = rng.standard_normal(shapes[0]) > 0
    x, y = rand(rng, shapes[1]), rand(rng, shapes[2])
    types = [t(shapes[0], np.bool_), t(shapes[1]), t(shapes[2])]
    check(function("where", types), [c, x, y], rtol=0)


# --- cast ---------------------------------------------------------------------------------------

CAST_DTYPES = [np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8, np.uint32, np.bool_]


@pytest.mark.parametrize("src", CAST_DTYPES, ids=lambda d: np.dtype(d).name)
def test_cast(src):
    # Values representable in every destination (NumPy leaves float -> int overflow undefined).
    base = np.array([0, 1, 2, 7, 100, 0, 1, 3], np.float64)
    if np.dtype(src).kind == "f":
        base = base + np.array([0.0, 0.25, -0.0, 0.75, 0.5, 0.0, -0.0, 0.9])
    if np.dtype(src).kind in "fi":
        base[5] = -5.0
    x = base.astype(src)
    entries = [("cast", [t(8, src)], None, {"dtype": np.dtype(dst)}) for dst in CAST_DTYPES]
    fn = grouped(entries)
    got, want = run_both(fn, [x] * len(entries))
    for dst, g, w in zip(CAST_DTYPES, got, want):
        if np.dtype(dst).kind == "u" and np.dtype(src).kind in "fi":
            g, w = g[w != w[5]], w[w != w[5]]  # -5 -> unsigned is undefined for floats in NumPy
        assert_matches(g, w, rtol=0, what=f"{np.dtype(src)} -> {np.dtype(dst)}")


def test_cast_nan_to_bool_is_true():
    x = np.array([np.nan, 0.0, -0.0, np.inf])
    check(function("cast", [t(4)], dtype=np.dtype(np.bool_)), [x], rtol=0)
