"""Compile ir.Functions with codegen + the test JIT and compare them with the
reference interpreter."""
from __future__ import annotations

import zlib

import numpy as np

import gradtape as gt
from gradtape import ir
from gradtape.codegen.lowering import lower_function
from gradtape.runtime.cache_key import cache_key

from .jit_helper import jit

# Relative tolerances of arithmetic (results are usually bit-identical: no
# fast-math on elementwise code; sums reassociate).
RTOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5}

_compiled: dict = {}


def compiled(fn: ir.Function, *, assembly: bool = False):
    """The JIT-compiled fn, once per Function (tests share compiles).

    Keyed like the runtime's compile cache: the text, plus the bytes of array
    literals, which the text shows only as their type (two quantile methods
    differ only in a constant table)."""
    key = (cache_key(fn), assembly)
    j = _compiled.get(key)
    if j is None:
        j = _compiled[key] = jit(lower_function(fn, "f"), assembly=assembly)
    return j


def assert_matches(got, want, rtol=None, what=""):
    """got == want exactly for non-floats; within rtol (relative to the largest |want|) for floats."""
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
    )
    if want.dtype.kind != "f" or rtol == 0:
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    rtol = RTOL[want.dtype] if rtol is None else rtol
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True, err_msg=what)


def check(fn: ir.Function, args, rtol=None):
    """Run fn compiled and interpreted on args; assert every output matches."""
    got = compiled(fn)(*args)
    want = ir.eval_function(fn, [np.asarray(a) for a in args])
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_matches(g, w, rtol, f"output {i} of {fn}")
    return got


def max_ulp(got, want) -> float:
    """The largest distance between got and want in units of want's last place (NaN/inf must agree)."""
    got, want = np.asarray(got), np.asarray(want)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if same.all():
        return 0.0
    finite = np.isfinite(want) & ~same
    assert not (~same & ~np.isfinite(want)).any(), "non-finite values differ"
    return float(np.max(np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))))


def compiles_natively(fn: ir.Function) -> bool:
    """Whether fn holds no op of test_native_coverage's INTERPRETED_ONLY list and no complex
    value (codegen.lower takes real Functions: the runtime splits complex values into their
    parts first, codegen/complex_split.py)."""
    from gradtape.ir.inline_calls import inline_calls

    from .test_native_coverage import INTERPRETED_ONLY

    return not any(e.op.name in INTERPRETED_ONLY or any(v.type.dtype.kind == "c" for v in e.outvars)
                   for f in (fn, inline_calls(fn)) for e in f.eqns)


def joint_function(spec, dtype=None):
    """The op spec's joint vjp Function (inputs + one cotangent per output ->
    outputs + gradients) and values for its inputs and random cotangents.

    With `dtype`, the spec's floating-point arguments are cast to it first,
    so the whole computation runs in that dtype (Python scalars are weak).
    """
    rng = np.random.default_rng(zlib.crc32(spec.name.encode()))  # deterministic per spec
    args = [np.asarray(a) for a in spec.args(rng)]
    if dtype is not None:
        args = [a.astype(dtype) if a.dtype.kind == "f" else a for a in args]
    fn = gt.make_ir(spec.fn, *args)
    values = [np.asarray(a, v.type.dtype).reshape(v.type.shape) for a, v in zip(args, fn.invars)]
    joint, _ = ir.vjp(fn, [i for i, v in enumerate(fn.invars) if v.type.is_float])
    values += [rng.standard_normal(v.type.shape).astype(v.type.dtype) for v in joint.invars[len(values):]]
    return joint, values
