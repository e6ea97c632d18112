"""Very large Functions compile differently (codegen/lowering.py), with the same results.

Past OUTLINE_MATH_AFTER uses of polynomial math, each tanh, exp, ... is a
call of one vector function per module instead of inline code; past
MAX_INLINED_STEPS steps, each step stays a function of its own. Both are
checked here by lowering small Functions with the thresholds at zero,
against the default lowering (bit for bit: the same operations, lane by
lane) and against NumPy, and one Function large enough for both policies
is checked against the reference interpreter.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import gradtape as gt
from gradtape import codegen, ir, runtime
from gradtape.codegen import lowering
from gradtape.runtime import config as rt_config

POLYNOMIALS = {
    "exp": (gt.exp, np.exp, (-700.0, 700.0)),
    "expm1": (gt.expm1, np.expm1, (-40.0, 40.0)),
    "log": (gt.log, np.log, (1e-300, 1e300)),
    "log1p": (gt.log1p, np.log1p, (-0.999, 1e10)),
    "log10": (gt.log10, np.log10, (1e-300, 1e300)),
    "tanh": (gt.tanh, np.tanh, (-30.0, 30.0)),
    "softplus": (gt.softplus, lambda v: np.logaddexp(0.0, v), (-50.0, 50.0)),
    "sigmoid": (gt.sigmoid, special.expit, (-50.0, 50.0)),
    "erf": (gt.erf, special.erf, (-6.0, 6.0)),
    "erfc": (gt.erfc, special.erfc, (-6.0, 27.0)),
}


@pytest.fixture(autouse=True)
def _no_caches(monkeypatch):
    # Both lowerings of one Function have one cache key: neither cache may serve the other.
    monkeypatch.setattr(rt_config, "disk_cache", False)
    runtime.clear_cache()
    yield
    runtime.clear_cache()


def _inputs(lo, hi, dtype, n=1003):
    # Log-spaced magnitudes when the range spans decades, else even spacing; n is odd so
    # that the vector loops leave a scalar remainder too.
    if lo > 0 and hi / lo > 1e6:
        x = np.geomspace(lo, hi, n)
    else:
        x = np.linspace(lo, hi, n)
    with np.errstate(over="ignore"):  # float64 ranges beyond float32's become inf
        return x.astype(dtype)


def _run(fn, args, monkeypatch=None, **thresholds):
    runtime.clear_cache()
    for name, value in thresholds.items():
        monkeypatch.setattr(lowering, name, value)
    compiled = runtime.compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    return compiled(*args)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
def test_outlined_math_equals_inline_math(name, dtype, monkeypatch):
    gt_fn, reference, (lo, hi) = POLYNOMIALS[name]
    x = _inputs(lo, hi, dtype)
    fn = gt.make_ir(lambda v: gt_fn(v) * 2.0, x)
    text = str(codegen.lower(fn, "f").module)
    assert f"gradtape.math.{name}." in text and ".v4\"" not in text  # inline by default

    monkeypatch.setattr(lowering, "OUTLINE_MATH_AFTER", 0)
    text = str(codegen.lower(fn, "f").module)
    suffix = "f64" if dtype == np.float64 else "f32"
    if name in ("erf", "erfc") and dtype == np.float32:
        # computed in float64 (math_erf.py), which has no vector twin: stays inline
        assert f"gradtape.math.{name}.{suffix}.v" not in text
    else:
        assert "vector-function-abi-variant" in text and f"gradtape.math.{name}.{suffix}.v4" in text

    (inline,) = _run(fn, [x], monkeypatch, OUTLINE_MATH_AFTER=10**9)
    (outlined,) = _run(fn, [x], monkeypatch, OUTLINE_MATH_AFTER=0)
    np.testing.assert_array_equal(outlined, inline)
    # the reference in the same dtype, compared down to its smallest normal number
    rtol, atol = (1e-13, 1e-300) if dtype == np.float64 else (1e-5, 1e-37)
    with np.errstate(over="ignore", divide="ignore"):
        expected = (reference(x) * 2.0).astype(dtype)
    np.testing.assert_allclose(outlined, expected, rtol=rtol, atol=atol)


def _mixed(x, w):
    h = gt.tanh(x @ w + 0.5)
    s = gt.sum(h * h, axis=1, keepdims=True)
    y = gt.exp(-s) * gt.sin(h) + gt.log1p(h * h)
    return gt.sum(y @ w.T)


def test_steps_as_functions_of_their_own_give_the_same_gradient(monkeypatch):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(13, 7)), rng.normal(size=(7, 7))
    fn = gt.make_ir(_mixed, x, w)
    joint, _ = ir.vjp(fn, [0, 1])
    args = [x, w, np.array(1.0)]
    text = str(codegen.lower(joint, "f").module)
    assert "noinline nounwind" not in text.split("gradtape.math")[0]
    monkeypatch.setattr(lowering, "MAX_INLINED_STEPS", 0)
    text = str(codegen.lower(joint, "f").module)
    assert text.count('define internal void @"f.step') >= 3
    assert 'alwaysinline' not in text.split("gradtape.math")[0]

    inlined = _run(joint, args, monkeypatch, MAX_INLINED_STEPS=10**9)
    separate = _run(joint, args, monkeypatch, MAX_INLINED_STEPS=0, OUTLINE_MATH_AFTER=0)
    reference = ir.eval_function(joint, args)
    for a, b, r in zip(separate, inlined, reference):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)


def test_a_long_chain_gradient_under_the_default_thresholds():
    k = 400  # 100 tanh: past OUTLINE_MATH_AFTER; and enough stored values for many steps

    def chain(v):
        for i in range(k):
            v = (gt.sin, lambda u: u * 1.01, lambda u: u + 0.1, gt.tanh)[i % 4](v)
        return gt.sum(v)

    x = np.linspace(-1.0, 1.0, 257)
    fn = gt.make_ir(chain, x)
    joint, _ = ir.vjp(fn, [0])
    assert lowering._polynomial_uses(joint) > lowering.OUTLINE_MATH_AFTER
    compiled = runtime.compile_function(joint)
    assert compiled.native, compiled.fallback_reason
    value, grad = compiled(x, np.array(1.0))
    ref_value, ref_grad = ir.eval_function(joint, [x, np.array(1.0)])
    np.testing.assert_allclose(value, ref_value, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-300)
    # and the gradient is the derivative: central differences on a few points
    h = 1e-6
    f = lambda v: ir.eval_function(fn, [v])[0]  # noqa: E731
    for i in (0, 128, 256):
        e = np.zeros_like(x)
        e[i] = h
        np.testing.assert_allclose(grad[i], (f(x + e) - f(x - e)) / (2 * h), rtol=1e-5, atol=1e-9)
