"""gradtape.codegen.math against NumPy: accuracy, special values, vectorization.

Every function is compiled once per dtype into a loop `out[i] = f(in[i])`
(O3, loop + SLP vectorization, host CPU, MCJIT) and compared with NumPy over
about 1e5 points spanning its domain, tiny and huge magnitudes included. The
error is counted in ULPs of the reference: for f64 against NumPy's f64
result, for f32 against NumPy's f64 result on the same (f32) inputs, in f32
ULPs of that result rounded to f32 (so a correctly rounded f32 result scores
<= 0.5). Special values are checked in arrays long enough for the
vectorized loop body, and one element at a time, which the scalar loop
computes. The assembly of each loop is checked for packed arithmetic on the
target's widest vector registers (tests/codegen/isa.py) and
the absence of scalar math calls.
"""
from __future__ import annotations

import ctypes
import functools
import math
import re

import numpy as np
import pytest
from llvmlite import ir

import llvmlite.binding as llvm
from scipy.special import expit

from gradtape import ir as gir
from gradtape.codegen.math import MATH_FUNCTIONS, MATH_LIBRARIES, declared_externals, emit_math
from gradtape.codegen.math_pow import pow_shortcut
from gradtape.ir import all_ops

from . import isa
from .loop_kernel import _ENGINES as ENGINES
from .loop_kernel import jit_loop, loop_module, target_machine


HAS_LIBMVEC = bool(MATH_LIBRARIES)
ARITY = {f.name: f.arity for f in MATH_FUNCTIONS.values()}
POLY = ("exp", "expm1", "log", "log1p", "log10", "tanh", "softplus", "sigmoid", "erf", "erfc")
LIBMVEC = ("sin", "cos", "tan", "arctan", "pow", "sinh", "cosh", "arcsin", "arccos", "log2", "exp2",
           "arctan2", "arcsinh", "arccosh", "arctanh", "cbrt", "hypot")
DTYPES = {"f64": np.float64, "f32": np.float32}
IR_TYPES = {"f64": ir.DoubleType, "f32": ir.FloatType}

# Max ULP error vs NumPy, per function and dtype, over the sample below. For
# the f32 polynomials they also hold over all 2^32 inputs (checked offline:
# exp 0.98, expm1 1.23, log 0.84, log1p 0.84, tanh 1.51, softplus 1.71,
# sigmoid 2.40, the last two against the exact value; log10 0.98 with FMA,
# 1.07 without, as on x86-64-v2); sin, cos, tan,
# arctan and pow come from glibc's libmvec, whose own bound is 4 ULP.
ULP_BOUND = {
    ("exp", "f64"): 1, ("exp", "f32"): 1.0,
    ("expm1", "f64"): 1, ("expm1", "f32"): 1.3,
    ("log", "f64"): 1, ("log", "f32"): 1.0,
    ("log1p", "f64"): 1, ("log1p", "f32"): 1.0,
    ("log10", "f64"): 1, ("log10", "f32"): 1.1,  # f64: 0.96 against the exact value (x86-64-v2)
    ("tanh", "f64"): 2, ("tanh", "f32"): 1.6,
    ("softplus", "f64"): 2, ("softplus", "f32"): 1.75,  # f64 2: at ~1 in 1e5 points of [-2, 0]
    ("sigmoid", "f64"): 2, ("sigmoid", "f32"): 2.45,
    ("sqrt", "f64"): 0, ("sqrt", "f32"): 0.5,
    ("sin", "f64"): 4, ("sin", "f32"): 2.0,
    ("cos", "f64"): 4, ("cos", "f32"): 2.0,
    ("tan", "f64"): 4, ("tan", "f32"): 3.5,
    ("arctan", "f64"): 1, ("arctan", "f32"): 2.1,  # libmvec's SSE variant (x86-64-v2): 2.07
    ("pow", "f64"): 1, ("pow", "f32"): 1.0,
    # glibc's libmvec and libm (NumPy calls the same libm for its scalar loops)
    **{(name, dt): 4 for name in ("sinh", "cosh", "arcsin", "arccos", "log2", "exp2", "arctan2",
                                  "arcsinh", "arccosh", "arctanh", "cbrt", "hypot") for dt in ("f64", "f32")},
    # against math.erf/erfc (glibc, within 1 ULP); float32 is computed in float64
    ("erf", "f64"): 3, ("erf", "f32"): 0.5,
    ("erfc", "f64"): 5, ("erfc", "f32"): 0.5,
}

def _in_long_double(fn):
    """fn evaluated in x87 extended precision, rounded to float64: a reference
    within 0.5 ULP for functions NumPy has no float64 ufunc of."""
    return lambda x: fn(x.astype(np.longdouble)).astype(np.float64)


def _math_module(fn):
    """A function of Python's math module applied to every element, in float64."""
    ufunc = np.frompyfunc(fn, 1, 1)
    return lambda x: ufunc(x).astype(np.float64)


NUMPY = {
    "erf": _math_module(math.erf),
    "erfc": _math_module(math.erfc),
    "arctan": np.arctan,
    "pow": np.power,
    "softplus": _in_long_double(lambda x: np.logaddexp(0, x)),
    "sigmoid": _in_long_double(expit),
}


def numpy_fn(name):
    return NUMPY.get(name) or getattr(np, name)


# ---------------------------------------------------------------- JIT helper

class Kernel:
    """`out[i] = body(builder, [in_0[i], ...])` compiled for the host.

    Attributes: `asm` (assembly of the optimized module) and `opt_ir` (its IR).
    Call as kernel(*inputs) -> output array.
    """

    def __init__(self, dtype: str, n_inputs: int, body):
        self.dtype = DTYPES[dtype]
        self.n_inputs = n_inputs
        module = loop_module(IR_TYPES[dtype](), n_inputs, body, name="test_math")
        self._fn, self.opt_ir, self.asm = jit_loop(module, n_inputs)

    def __call__(self, *inputs):
        inputs = [np.ascontiguousarray(x, dtype=self.dtype) for x in inputs]
        out = np.empty_like(inputs[0])
        self._fn(out.ctypes.data, *[x.ctypes.data for x in inputs], out.size)
        return out


@functools.lru_cache(maxsize=None)
def kernel(name: str, dtype: str) -> Kernel:
    return Kernel(dtype, ARITY[name], lambda b, xs: emit_math(b, all_ops[name], *xs))


# ---------------------------------------------------------------- accuracy


def ulp_error(out, ref64, dtype):
    """|out - ref| in ULPs of ref rounded to `dtype`; 0 where both are the
    same inf or both NaN, inf where only one is NaN."""
    out = out.astype(np.float64)
    with np.errstate(over="ignore"):
        ref_rounded = ref64.astype(dtype)
    spacing = np.abs(np.spacing(ref_rounded)).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(out - ref64) / spacing
    err[(out == ref_rounded) | (np.isnan(out) & np.isnan(ref64))] = 0.0
    err[np.isnan(err)] = np.inf
    return err


def _both_signs(rng, lo_exp, hi_exp, n):
    magnitude = 10.0 ** rng.uniform(lo_exp, hi_exp, n)
    return np.concatenate([magnitude, -magnitude])


def sample(name, dtype, n=100_000):
    """About n inputs (tuple of arrays) spanning the domain of `name`."""
    rng = np.random.default_rng(20261121)
    f64 = dtype == "f64"
    tiny, huge = (-320, 308) if f64 else (-45, 38)
    if name in ("exp", "expm1"):
        lim = 750.0 if f64 else 105.0
        x = [rng.uniform(-lim, lim, n // 2), _both_signs(rng, tiny, np.log10(lim), n // 4),
             rng.uniform(-1, 1, n // 10)]
    elif name == "log":
        x = [10.0 ** rng.uniform(tiny, huge, n // 2), rng.uniform(0, 4, n // 4),
             1 + rng.uniform(-1e-3, 1e-3, n // 4)]
    elif name == "log1p":
        x = [10.0 ** rng.uniform(tiny, huge, n // 2), -(10.0 ** rng.uniform(tiny, 0, n // 4)),
             rng.uniform(-1, 3, n // 4)]
    elif name in ("softplus", "sigmoid"):  # both tails, down to results in the subnormals
        lim = 750.0 if f64 else 105.0
        x = [rng.uniform(-lim, lim, n // 2), _both_signs(rng, tiny, np.log10(lim), n // 4),
             rng.uniform(-40, 40, n // 4)]
    elif name in ("tanh", "sqrt", "arctan"):
        x = [_both_signs(rng, tiny, 3 if name == "tanh" else huge, n // 4), rng.uniform(-5, 5, n // 2)]
    elif name in ("sin", "cos", "tan"):
        x = [_both_signs(rng, tiny, 6 if f64 else 4, n // 4), rng.uniform(-10, 10, n // 2),
             _both_signs(rng, 6, huge, n // 40)]
    elif name in ("erf", "erfc"):  # both branches and their seam at 1/2, both tails down to underflow
        x = [rng.uniform(-6, 6, n // 4), rng.uniform(-30, 30, n // 4), _both_signs(rng, tiny, 1.5, n // 4),
             rng.uniform(0.45, 0.55, n // 8), -rng.uniform(0.45, 0.55, n // 8)]
    elif name in ("sinh", "cosh", "exp2"):
        lim = (750.0 if f64 else 105.0) * (1.5 if name == "exp2" else 1.0)
        x = [rng.uniform(-lim, lim, n // 2), _both_signs(rng, tiny, np.log10(lim), n // 4)]
    elif name in ("arcsin", "arccos", "arctanh"):  # out to +-1, where they are steepest
        x = [rng.uniform(-1, 1, n // 2), _both_signs(rng, tiny, 0, n // 4), 1 - 10.0 ** rng.uniform(tiny / 20, 0, n // 8),
             -1 + 10.0 ** rng.uniform(tiny / 20, 0, n // 8)]
    elif name == "arccosh":
        x = [1 + 10.0 ** rng.uniform(tiny / 20, huge, n // 2), rng.uniform(1, 5, n // 2)]
    elif name in ("log2", "log10"):
        x = [10.0 ** rng.uniform(tiny, huge, n // 2), rng.uniform(0, 4, n // 4), 1 + rng.uniform(-1e-3, 1e-3, n // 4)]
    elif name in ("arcsinh", "cbrt"):
        x = [_both_signs(rng, tiny, huge, n // 4), rng.uniform(-5, 5, n // 2)]
    elif name in ("arctan2", "hypot"):
        a, b = _both_signs(rng, tiny / 2, huge, n // 4), _both_signs(rng, tiny / 2, huge, n // 4)
        c, d = rng.uniform(-5, 5, n // 2), rng.uniform(-5, 5, n // 2)
        with np.errstate(over="ignore"):
            return (np.concatenate([a, c]).astype(DTYPES[dtype]), np.concatenate([rng.permutation(b), d]).astype(DTYPES[dtype]))
    elif name == "pow":
        lim = 300 if f64 else 37
        base = 10.0 ** rng.uniform(-lim, lim, n // 2)
        expo = rng.uniform(-1, 1, n // 2) * lim / np.maximum(np.abs(np.log10(base)), 1)
        neg_base = -(10.0 ** rng.uniform(-lim / 4, lim / 4, n // 4))
        int_expo = np.round(rng.uniform(-4, 4, n // 4))
        small = rng.uniform(0, 3, n // 4)
        return (np.concatenate([base, neg_base, small]).astype(DTYPES[dtype]),
                np.concatenate([expo, int_expo, rng.uniform(-3, 3, n // 4)]).astype(DTYPES[dtype]))
    else:
        raise AssertionError(name)
    with np.errstate(over="ignore"):
        return (np.concatenate(x).astype(DTYPES[dtype]),)


CASES = [(name, dtype) for name in sorted(ARITY) for dtype in DTYPES]


@pytest.mark.parametrize("name,dtype", CASES)
def test_max_ulp_error_vs_numpy(name, dtype):
    inputs = sample(name, dtype)
    out = kernel(name, dtype)(*inputs)
    with np.errstate(all="ignore"):
        ref = numpy_fn(name)(*(x.astype(np.float64) for x in inputs))
    err = ulp_error(out, ref, DTYPES[dtype])
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUND[name, dtype], (
        f"{name} {dtype}: {err[worst]:.3f} ULP at x={[x[worst] for x in inputs]}: "
        f"got {out[worst]!r}, NumPy {ref[worst]!r}"
    )


@pytest.mark.parametrize("name,dtype", CASES)
def test_an_element_gets_the_same_bits_wherever_it_is_in_the_array(name, dtype):
    """The vector body and the scalar remainder compute the same function: glibc's
    SSE, AVX2, AVX-512 and scalar sin disagree in the last bit on ~9% of inputs,
    so a value must not depend on whether it lands in the vector body or the tail."""
    k = kernel(name, dtype)
    inputs = [x[:4099] for x in sample(name, dtype)]  # 4099 = a remainder after any vector width
    whole = k(*inputs)
    alone = np.concatenate([k(*(x[i:i + 1] for x in inputs)) for i in range(0, 4099, 41)])
    np.testing.assert_array_equal(alone, whole[::41])
    shifted = k(*(x[1:] for x in inputs))  # every element moves one lane
    np.testing.assert_array_equal(shifted, whole[1:])


# ---------------------------------------------------------------- special values

INF, NAN = np.inf, np.nan
SPECIAL = {  # name: [(inputs..., expected)], expected as NumPy gives it
    "exp": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN), (800.0, INF),
            (-800.0, 0.0), (1e-300, 1.0)],
    "expm1": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -1.0), (NAN, NAN), (800.0, INF),
              (-800.0, -1.0), (1e-30, 1e-30), (-1e-30, -1e-30)],
    "log": [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF), (NAN, NAN), (1.0, 0.0)],
    "log1p": [(0.0, 0.0), (-0.0, -0.0), (-1.0, -INF), (-2.0, NAN), (-INF, NAN), (INF, INF),
              (NAN, NAN), (1e-30, 1e-30), (-1e-30, -1e-30)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (1e300, 1.0),
             (-1e300, -1.0), (50.0, 1.0), (-50.0, -1.0), (1e-30, 1e-30), (-1e-30, -1e-30)],
    "softplus": [(0.0, np.log(2.0)), (-0.0, np.log(2.0)), (INF, INF), (-INF, 0.0), (NAN, NAN),
                 (800.0, 800.0), (-800.0, 0.0), (1e300, 1e300), (-1e300, 0.0)],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (INF, 1.0), (-INF, 0.0), (NAN, NAN), (40.0, 1.0),
                (800.0, 1.0), (-800.0, 0.0), (1e300, 1.0), (-1e300, 0.0)],
    "erf": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (6.0, 1.0), (-6.0, -1.0),
            (1e-300, 1.1283791670955126e-300), (-1e-300, -1.1283791670955126e-300), (1e300, 1.0)],
    "erfc": [(0.0, 1.0), (-0.0, 1.0), (INF, 0.0), (-INF, 2.0), (NAN, NAN), (30.0, 0.0), (-30.0, 2.0),
             (1e-300, 1.0), (1e300, 0.0), (-1e300, 2.0)],
    "sqrt": [(0.0, 0.0), (-0.0, -0.0), (-1.0, NAN), (INF, INF), (-INF, NAN), (NAN, NAN), (4.0, 2.0)],
    "sin": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "cos": [(0.0, 1.0), (-0.0, 1.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "tan": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "arctan": [(0.0, 0.0), (-0.0, -0.0), (INF, np.pi / 2), (-INF, -np.pi / 2), (NAN, NAN)],
    "sinh": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN), (800.0, INF), (-800.0, -INF)],
    "cosh": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, INF), (NAN, NAN), (800.0, INF), (-800.0, INF)],
    "arcsin": [(0.0, 0.0), (-0.0, -0.0), (1.0, np.pi / 2), (-1.0, -np.pi / 2), (1.5, NAN), (INF, NAN), (NAN, NAN)],
    "arccos": [(1.0, 0.0), (-1.0, np.pi), (0.0, np.pi / 2), (1.5, NAN), (-INF, NAN), (NAN, NAN)],
    "arcsinh": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN)],
    "arccosh": [(1.0, 0.0), (0.5, NAN), (INF, INF), (-INF, NAN), (NAN, NAN)],
    "arctanh": [(0.0, 0.0), (-0.0, -0.0), (1.0, INF), (-1.0, -INF), (2.0, NAN), (NAN, NAN)],
    "log2": [(0.0, -INF), (-1.0, NAN), (INF, INF), (NAN, NAN), (1.0, 0.0), (8.0, 3.0)],
    "log10": [(0.0, -INF), (-1.0, NAN), (INF, INF), (NAN, NAN), (1.0, 0.0), (1000.0, 3.0)],
    "exp2": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN), (10.0, 1024.0), (-3.0, 0.125),
             (2000.0, INF), (-2000.0, 0.0)],
    "cbrt": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN)],
    "arctan2": [(0.0, 0.0, 0.0), (0.0, -0.0, np.pi), (-0.0, -0.0, -np.pi), (1.0, 0.0, np.pi / 2),
                (INF, INF, np.pi / 4), (NAN, 1.0, NAN), (1.0, NAN, NAN)],
    "hypot": [(3.0, 4.0, 5.0), (INF, NAN, INF), (NAN, INF, INF), (NAN, 1.0, NAN), (1e300, 1e300, 1.4142135623730952e300),
              (0.0, -0.0, 0.0)],
    "pow": [(0.0, 0.0, 1.0), (NAN, 0.0, 1.0), (1.0, NAN, 1.0), (-1.0, INF, 1.0), (-2.0, 3.0, -8.0),
            (-2.0, -3.0, -0.125), (-2.0, 2.0, 4.0), (-2.0, 0.5, NAN), (-0.0, -1.0, -INF),
            (0.0, -2.0, INF), (-0.0, 3.0, -0.0), (INF, -1.0, 0.0), (-INF, 3.0, -INF),
            (-INF, 2.0, INF), (0.5, INF, 0.0), (2.0, INF, INF), (2.0, -INF, 0.0), (2.0, 1e10, INF),
            (2.0, -1e10, 0.0), (4.0, 0.5, 2.0), (NAN, 1.0, NAN)],
}


def _special_arrays(name, dtype, copies):
    rows = SPECIAL[name]
    with np.errstate(over="ignore"):  # 1e300 becomes inf in f32, which is as good
        cols = [np.array([r[k] for r in rows] * copies, dtype=DTYPES[dtype]) for k in range(len(rows[0]))]
    return cols[:-1], cols[-1]


def _assert_same_values(out, expected, what):
    # equal, both NaN, and the same sign where the expected value is a zero
    same = (out == expected) | (np.isnan(out) & np.isnan(expected))
    zero = expected == 0
    same &= ~zero | (np.signbit(out) == np.signbit(expected))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{what}: got {out[bad[:5]]}, expected {expected[bad[:5]]} at {bad[:5]}"


@pytest.mark.parametrize("name,dtype", CASES)
def test_special_values_match_numpy(name, dtype):
    inputs, expected = _special_arrays(name, dtype, copies=32)
    if dtype == "f32" and name == "arctan":  # pi/2 rounded to f32
        expected = numpy_fn(name)(*inputs)
    k = kernel(name, dtype)
    _assert_same_values(k(*inputs), expected, f"{name} {dtype} (vector loop)")
    # one element at a time: the scalar loop, which calls libm for the libmvec functions
    one_by_one = np.concatenate([k(*(x[i : i + 1] for x in inputs)) for i in range(len(SPECIAL[name]))])
    _assert_same_values(one_by_one, expected[: len(SPECIAL[name])], f"{name} {dtype} (scalar loop)")


@pytest.mark.parametrize("dtype", DTYPES)
def test_log10_of_powers_of_ten_is_exact(dtype):
    """log10(10^n) is n, as NumPy's is, in the vector loop and one element at a time.

    glibc 2.36's libmvec, which computed log10 before, gave 3.0000002 for
    1000 in float32 on AVX-512 (not on SSE or AVX2) and 7.000000000000001
    for 1e7 in float64 on SSE and AVX2 (not on AVX-512). Beyond the exact
    powers, 10^n rounded to the format (normal) is within a relative 2^-53
    (2^-24) of 10^n, which moves log10 by less than half an ULP of n: its
    correctly rounded log10 is n too, and NumPy's float64 log10 gives n.
    """
    exact = np.array([10.0**n for n in range(23 if dtype == "f64" else 11)], dtype=DTYPES[dtype])
    n_max = 308 if dtype == "f64" else 38
    n = np.arange(-n_max + 1, n_max + 1)
    rounded = np.array([float(f"1e{i}") for i in n], dtype=DTYPES[dtype])
    k = kernel("log10", dtype)
    for x, expected in ((exact, np.arange(exact.size, dtype=DTYPES[dtype])), (rounded, n.astype(DTYPES[dtype]))):
        _assert_same_values(k(np.repeat(x, 33))[::33], expected, f"log10 {dtype} (vector loop)")
        one_by_one = np.concatenate([k(x[i : i + 1]) for i in range(x.size)])
        _assert_same_values(one_by_one, expected, f"log10 {dtype} (scalar loop)")


def test_exp_underflows_through_the_subnormals_like_numpy():
    x = np.linspace(-746.0, -700.0, 4096)
    out = kernel("exp", "f64")(x)
    assert np.all(ulp_error(out, np.exp(x), np.float64) <= 1)
    assert np.any(out == 0.0) and np.any((out > 0) & (out < np.finfo(np.float64).smallest_normal))
    x32 = np.linspace(-104.0, -85.0, 4096, dtype=np.float32)
    out32 = kernel("exp", "f32")(x32)
    assert np.all(ulp_error(out32, np.exp(x32.astype(np.float64)), np.float32) <= 1)


def test_log_of_subnormals():
    x = np.array([5e-324, 1e-320, 2e-310, 2.2e-308] * 8)
    out = kernel("log", "f64")(x)
    assert np.all(ulp_error(out, np.log(x), np.float64) <= 1)


def test_expm1_and_log1p_keep_full_relative_accuracy_near_zero():
    x = np.concatenate([10.0 ** -np.arange(1.0, 300.0), -(10.0 ** -np.arange(1.0, 300.0))])
    for name in ("expm1", "log1p"):
        out = kernel(name, "f64")(x)
        assert np.all(ulp_error(out, numpy_fn(name)(x), np.float64) <= 1), name


def test_softplus_and_sigmoid_keep_full_relative_accuracy_in_the_left_tail():
    """For x << 0 both are about exp(x): no 1 + exp(x) may round it away, down to the subnormals."""
    x = -np.concatenate([10.0 ** np.linspace(-300, 2.8, 2000), np.linspace(700.0, 745.0, 500)])
    for name in ("softplus", "sigmoid"):
        out = kernel(name, "f64")(x)
        assert np.all(ulp_error(out, numpy_fn(name)(x), np.float64) <= ULP_BOUND[name, "f64"]), name
        subnormal = out[x < -709.0]  # exp(-708.4) is the smallest normal double
        assert np.all(subnormal < np.finfo(np.float64).smallest_normal) and np.any(subnormal > 0), name


# ---------------------------------------------------------------- vectorization

SAFE_VECTOR_INTRINSICS = {"fmuladd", "fma", "fabs", "copysign", "sqrt", "floor", "minnum", "maxnum"}


def vector_body_calls(opt_ir):
    """Callees in the loop vectorizer's `vector.body` (None if it made none)."""
    match = re.search(r"\nvector\.body[^\n]*\n(.*?)\n\n", opt_ir, re.S)
    if match is None:
        return None
    return set(re.findall(r'call [^@\n]*@"?([\w.]+)', match.group(1)))


def assert_vector_calls_only_native_or_libmvec(calls, what):
    assert calls is not None, f"{what}: the loop was not vectorized"
    for callee in calls:
        if callee.startswith("llvm."):
            assert callee.split(".")[1] in SAFE_VECTOR_INTRINSICS, f"{what}: {callee} is scalarized by the backend"
        else:
            assert callee.startswith("_ZGV"), f"{what}: scalar call to {callee} in the vector body"


def self_loops(asm):
    """Instructions of each assembly block that branches back to itself."""
    loops, label, body = [], None, []
    for line in asm.splitlines():
        text = line.strip()
        head = re.match(r"^(\.LBB\d+_\d+):", line)
        if head:
            label, body = head.group(1), []
            continue
        if not text or text.startswith((".", "#")):
            continue
        body.append(text)
        jump = re.match(r"j\w+\s+(\.LBB\d+_\d+)", text)
        if jump and jump.group(1) == label:
            loops.append(body)
    return loops


def packed_wide(instruction: str) -> bool:
    """Packed pd/ps arithmetic on the target's widest vector registers."""
    return re.match(rf"^{isa.vex_prefix()}\w+p[sd]\s.*%{isa.wide_registers()}", instruction) is not None


@pytest.mark.parametrize("name,dtype", CASES)
def test_loop_vectorizes_without_scalar_math_calls(name, dtype):
    k = kernel(name, dtype)
    assert_vector_calls_only_native_or_libmvec(vector_body_calls(k.opt_ir), f"{name} {dtype}")
    vector_loops = [body for body in self_loops(k.asm) if any(packed_wide(i) for i in body)]
    assert vector_loops, f"{name} {dtype}: no loop with packed {isa.wide_registers()} arithmetic"
    if name in LIBMVEC and HAS_LIBMVEC:
        variant = isa.libmvec_variant_prefix(dtype)
        assert re.search(variant, k.asm), f"{name} {dtype}: no call to libmvec's {variant} functions"
    else:
        assert not any(i.startswith("call") for body in vector_loops for i in body), f"{name} {dtype}: call in loop"


@pytest.mark.skipif(not HAS_LIBMVEC, reason="libmvec not available")
@pytest.mark.parametrize(
    "label,body",
    [
        # LLVM rewrites these when they are plain intrinsic calls, dropping the
        # vector mapping (sin(-x) -> -sin(x), pow(2, y) -> exp2(y))
        ("sin(-x)", lambda b, x: emit_math(b, all_ops["sin"], b.fneg(x))),
        ("tan(-x)", lambda b, x: emit_math(b, all_ops["tan"], b.fneg(x))),
        ("pow(2, x)", lambda b, x: emit_math(b, all_ops["pow"], ir.Constant(x.type, 2.0), x)),
        ("pow(x, -2)", lambda b, x: emit_math(b, all_ops["pow"], x, ir.Constant(x.type, -2.0))),
        ("fast sin(x*x)", lambda b, x: emit_math(b, all_ops["sin"], b.fmul(x, x, flags=("fast",)))),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_libmvec_mapping_survives_llvm_rewrites(label, body, dtype):
    k = Kernel(dtype, 1, lambda b, xs: body(b, xs[0]))
    calls = vector_body_calls(k.opt_ir)
    assert_vector_calls_only_native_or_libmvec(calls, f"{label} {dtype}")
    assert any(c.startswith("_ZGV") for c in calls), f"{label} {dtype}: {calls}"
    x = np.linspace(0.1, 3.0, 64, dtype=DTYPES[dtype])
    expect = {"sin(-x)": lambda: np.sin(-x), "tan(-x)": lambda: np.tan(-x), "pow(2, x)": lambda: 2.0 ** x,
              "pow(x, -2)": lambda: x ** -2.0, "fast sin(x*x)": lambda: np.sin(x * x)}[label]()
    np.testing.assert_allclose(k(x), expect, rtol=4 * np.finfo(DTYPES[dtype]).eps)


# ---------------------------------------------------------------- API behaviour


@pytest.mark.parametrize("exponent", [0.0, 1.0, 2.0, -1.0, 0.5])
def test_pow_with_exact_constant_exponent_matches_numpy_exactly(exponent):
    """The exponents NumPy computes by a shortcut (math_pow.py): bit for bit, on every NumPy.

    NumPy 2.4 and later take these shortcuts in np.power itself; older ones call
    pow, which differs at -0.0 and -inf for 0.5 and by an ULP for -1. The IR's
    reference applies the shortcuts on every version, and so does the compiled code.
    """
    x = np.array([0.0, -0.0, 2.0, -3.0, 0.1, INF, -INF, NAN, 1e-310, 7.5, -1e300, 1e300] * 4)
    k = Kernel("f64", 1, lambda b, xs: emit_math(b, all_ops["pow"], xs[0], ir.Constant(xs[0].type, exponent)))
    shortcut = {0.0: np.ones_like, 1.0: lambda x: x, 2.0: lambda x: x * x, -1.0: lambda x: 1.0 / x,
                0.5: np.sqrt}[exponent]
    with np.errstate(all="ignore"):
        _assert_same_values(k(x), shortcut(x), f"pow(x, {exponent})")
        _assert_same_values(gir.eval_function(_pow_by(exponent), [x])[0], shortcut(x), f"reference x ** {exponent}")
        if np.lib.NumpyVersion(np.__version__) >= "2.4.0":
            _assert_same_values(np.power(x, exponent), shortcut(x), f"np.power(x, {exponent})")


def _pow_by(exponent):
    """{ x:f64[48] . y = pow x exponent -> y } with the exponent a literal."""
    b = gir.Builder()
    x = b.input(gir.TensorType((48,), np.float64))
    return b.build([x], [gir.bind(all_ops["pow"], x, np.float64(exponent))])


@pytest.mark.parametrize("exponent", [3.0, 4.0])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pow_with_exponent_3_or_4_is_multiplications_within_2_ulp(exponent, dtype):
    rng = np.random.default_rng(3)
    lim = 100.0 if dtype == "f64" else 9.0  # up to and past overflow
    x = np.concatenate([rng.uniform(-3, 3, 4000), _both_signs(rng, -30, np.log10(lim), 2000),
                        [0.0, -0.0, INF, -INF, NAN, lim, -lim]]).astype(DTYPES[dtype])
    k = Kernel(dtype, 1, lambda b, xs: emit_math(b, all_ops["pow"], xs[0], ir.Constant(xs[0].type, exponent)))
    assert vector_body_calls(k.opt_ir) == set(), "pow was not turned into vectorized multiplications"
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), exponent)
    assert ulp_error(k(x), ref, DTYPES[dtype]).max() <= 2


def test_pow_constant_exponent_policy():
    """One policy (math_pow.py): NumPy's shortcuts, 3 and 4 multiplied, the rest pow;
    the lowering's cost model reads the same answer."""
    assert {c: pow_shortcut(c).form for c in (0, 1, 2, 3, 4, -1, 0.5)} == {
        0: "one", 1: "x", 2: "multiply", 3: "multiply", 4: "multiply", -1: "reciprocal", 0.5: "sqrt"}
    assert [pow_shortcut(c) for c in (-2, -0.5, 1.5, 5, NAN)] == [None] * 5
    assert [c for c in (0, 1, 2, 3, 4, -1, 0.5) if pow_shortcut(c).cheap] == [0, 1, 2, 3, 4]


def test_fused_fast_math_kernel_matches_numpy():
    def body(b, xs):
        a, c = xs
        fast = ("fast",)
        t = emit_math(b, all_ops["tanh"], b.fadd(b.fmul(a, c, flags=fast), c, flags=fast))
        return b.fmul(t, emit_math(b, all_ops["exp"], b.fneg(a, flags=fast)), flags=fast)

    for dtype in DTYPES:
        k = Kernel(dtype, 2, body)
        assert_vector_calls_only_native_or_libmvec(vector_body_calls(k.opt_ir), f"fused {dtype}")
        rng = np.random.default_rng(0)
        a, c = (rng.uniform(-3, 3, 1000).astype(DTYPES[dtype]) for _ in range(2))
        expect = np.tanh(a.astype(np.float64) * c + c) * np.exp(-a.astype(np.float64))
        eps = np.finfo(DTYPES[dtype]).eps
        assert np.abs(k(a, c) - expect).max() <= 8 * eps * np.abs(expect).max()


def test_one_helper_per_function_and_type_per_module():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType(), ir.FloatType()]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    x, y = fn.args
    emit_math(b, all_ops["exp"], x)
    emit_math(b, all_ops["exp"], emit_math(b, all_ops["exp"], x))
    emit_math(b, all_ops["exp"], y)
    emit_math(b, all_ops["sin"], x)
    b.ret(emit_math(b, all_ops["sin"], x))
    helpers = sorted(name for name in module.globals if name.startswith("gradtape.math."))
    assert helpers == ["gradtape.math.exp.f32", "gradtape.math.exp.f64", "gradtape.math.sin.f64"]
    llvm.parse_assembly(str(module)).verify()


@pytest.mark.skipif(not HAS_LIBMVEC, reason="libmvec not available")
def test_declared_externals_are_the_libmvec_symbols_with_their_addresses():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(emit_math(b, all_ops["cos"], emit_math(b, all_ops["exp"], fn.args[0])))
    externals = declared_externals(module)
    assert f"{isa.libmvec_variant_prefix('f32')}v_cosf" in externals and all(name.startswith("_ZGV") for name in externals)
    for name, address in externals.items():
        assert address and llvm.address_of_symbol(name) == address


def test_two_modules_with_the_same_helpers_share_one_engine():
    modules = []
    for _ in range(2):
        module = loop_module(ir.DoubleType(), 1, lambda b, xs: emit_math(b, all_ops["sin"], emit_math(b, all_ops["exp"], xs[0])))
        mod = llvm.parse_assembly(str(module).replace('"kernel"', f'"kernel{len(modules)}"'))
        modules.append(mod)
    engine = llvm.create_mcjit_compiler(modules[0], target_machine())
    engine.add_module(modules[1])
    engine.finalize_object()
    ENGINES.append(engine)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    x = np.linspace(-1, 1, 11)
    for k in range(2):
        out = np.empty_like(x)
        proto(engine.get_function_address(f"kernel{k}"))(out.ctypes.data, x.ctypes.data, x.size)
        np.testing.assert_allclose(out, np.sin(np.exp(x)), rtol=1e-14)


@pytest.mark.parametrize(
    "args,error,text",
    [
        (("floor", "x"), ValueError, "floor has no entry in the math table (codegen/math.py); known: arccos, arccosh, arcsin"),
        (("pow", "x"), ValueError, "pow takes 2 argument(s), got 1"),
        (("exp", "x", "x"), ValueError, "exp takes 1 argument(s), got 2"),
        (("pow", "x", "y32"), TypeError, "pow needs arguments of one float type, got (double, float); cast first"),
        (("exp", "i"), TypeError, "math functions take double or float scalars, got i64"),
    ],
)
def test_errors_name_the_function_and_say_the_fix(args, error, text):
    module = ir.Module()
    fnty = ir.FunctionType(ir.VoidType(), [ir.DoubleType(), ir.FloatType(), ir.IntType(64)])
    fn = ir.Function(module, fnty, "f")
    b = ir.IRBuilder(fn.append_basic_block())
    values = {"x": fn.args[0], "y32": fn.args[1], "i": fn.args[2]}
    with pytest.raises(error) as info:
        emit_math(b, all_ops[args[0]], *(values[a] for a in args[1:]))
    assert text in str(info.value)
