"""softplus and sigmoid, one IR op each: values and gradients at extreme inputs
in the reference interpreter and in compiled code, against independent
references (np.logaddexp(0, x) and scipy.special.expit), and the IR they
record and differentiate to.

The derivative of sigmoid is out * (1 - out): exact where out is small
(x << 0) and within an absolute eps/4 where out rounds near 1 (x >> 0,
where the true value is about exp(-x)), hence that test's atol.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

import gradtape as gt
from gradtape.ir.optimize import optimize
from gradtape import ir, runtime

EXTREME = [-1000.0, -745.0, -100.0, -40.0, -1.0, -1e-300, -0.0, 0.0, 1e-300, 1.0, 40.0, 100.0, 1000.0,
           -np.inf, np.inf, np.nan]

# fn, its reference, the reference of its derivative, atol of the derivative (in eps)
CASES = {
    "softplus": (gt.softplus, lambda x: np.logaddexp(0.0, x), expit, 0.0),
    "sigmoid": (gt.sigmoid, expit, lambda x: expit(x) * expit(-x), 1.0),
}


def staged_ir(f, *args):
    """The optimized Function that the staged `f` compiles for `args` (make_ir gives the
    traced one, before optimization, as jax.make_jaxpr does)."""
    return optimize(gt.make_ir(f, *args))


def _joint(name, dtype):
    """The vjp of sum(ct * f(x)) as one Function (x, ct) -> (f(x), ct * f'(x)), with its inputs."""
    x = np.array(EXTREME, dtype)
    fn = gt.make_ir(CASES[name][0], x)
    joint, _ = ir.vjp(fn, [0])
    return joint, [x, np.ones_like(x)]


def _run(path, joint, args):
    if path == "interpreter":
        return ir.eval_function(joint, args)
    compiled = runtime.compile_function(joint)
    assert compiled.native, compiled.fallback_reason
    return compiled(*args)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("path", ["interpreter", "compiled"])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_at_extreme_inputs(name, path, dtype):
    joint, args = _joint(name, dtype)
    value, grad = _run(path, joint, args)
    assert value.dtype == grad.dtype == dtype
    _, ref, dref, grad_atol = CASES[name]
    x = args[0].astype(np.longdouble)  # x87 extended: references exact to well below our eps
    eps = np.finfo(dtype).eps
    with np.errstate(invalid="ignore"):  # logaddexp(0, nan)
        want, dwant = ref(x).astype(dtype), dref(x).astype(dtype)
    # Full relative precision everywhere, the tails included (4 eps: the references' and ours' roundings).
    np.testing.assert_allclose(value, want, rtol=4 * eps, atol=0)
    np.testing.assert_allclose(grad, dwant, rtol=4 * eps, atol=grad_atol * eps)


@pytest.mark.parametrize("path", ["interpreter", "compiled"])
def test_derivatives_at_zero_are_those_of_the_smooth_functions(path):
    """softplus' = 0.5 and softplus'' = 0.25 at 0, sigmoid' = 0.25 (no kink from max or |x|)."""
    x = np.zeros(3)
    first = staged_ir(gt.grad(lambda x: gt.sum(gt.softplus(x))), x)
    second = staged_ir(gt.grad(lambda x: gt.sum(gt.grad(lambda x: gt.sum(gt.softplus(x)))(x))), x)
    of_sigmoid = staged_ir(gt.grad(lambda x: gt.sum(gt.sigmoid(x))), x)
    for fn, want in [(first, 0.5), (second, 0.25), (of_sigmoid, 0.25)]:
        (got,) = _run(path, fn, [x])
        np.testing.assert_array_equal(got, np.full(3, want))


def test_each_is_one_recorded_op_and_the_gradient_of_softplus_is_sigmoid():
    x = np.linspace(-3.0, 3.0, 5)
    assert [e.op.name for e in gt.make_ir(gt.softplus, x).eqns] == ["softplus"]
    assert [e.op.name for e in gt.make_ir(gt.sigmoid, x).eqns] == ["sigmoid"]
    grad_ops = [e.op.name for e in staged_ir(gt.grad(lambda x: gt.sum(gt.softplus(x))), x).eqns]
    assert grad_ops == ["sigmoid"]
    w = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(w)
        loss = gt.sum(gt.softplus(w))
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), expit(x), rtol=1e-15)


def test_integers_become_float64_and_float32_stays():
    assert gt.softplus(np.array([1, -2])).dtype == np.float64
    assert gt.sigmoid(np.array([1, -2], np.int32)).dtype == np.float64
    assert gt.softplus(np.ones(2, np.float32)).dtype == np.float32
    np.testing.assert_allclose(gt.sigmoid([3, -3]).numpy(), expit([3.0, -3.0]), rtol=1e-15)


def test_the_ops_reject_non_float_operands_in_the_ir():
    b = ir.Builder()
    i = b.input(ir.TensorType((3,), np.int64))
    for name in ("softplus", "sigmoid"):
        with pytest.raises(ir.DTypeError, match=f"{name}: expected a floating-point operand"):
            ir.bind(ir.all_ops[name], i)
