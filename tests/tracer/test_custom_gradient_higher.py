"""custom_gradient beyond first order: nested tapes differentiate through grad_fn
(and the values it closes over), staged uses compile to native code, forward
mode transposes grad_fn, and the op vectorizes.

The grad_fn here is deliberately not the true derivative of the primal
sin(x): it says d(x) = x * exp(-x^2 / 2), so every check below would fail if
some path differentiated the primal instead of grad_fn.
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.inline import substitute_inputs
from gradtape.tracer.custom_gradient import custom_gradient_p
from gradtape.testing import check_grads
from tests.custom_rule import rule, rule_fd, rule_fd2

X = np.array([-1.3, -0.2, 0.4, 1.7])
T = np.array([0.5, -1.0, 2.0, 0.25])


@gt.custom_gradient
def sin_closure(x):
    """grad_fn reads a value computed in f (w), not only x."""
    w = gt.exp(-x * x / 2.0)

    def grad_fn(upstream):
        return upstream * x * w

    return gt.sin(x), grad_fn


@gt.custom_gradient
def sin_untraceable(x):
    """Python control flow on a value: runs eagerly, as in TensorFlow."""
    if float(gt.sum(x)) > 1e9:
        raise AssertionError("not reached")
    return gt.sin(x), lambda upstream: upstream * x * gt.exp(-x * x / 2.0)


def _nested_tapes(f, x, order):
    """The order-th derivative of sum(f(x)), summed at each level, by nested tapes."""
    tapes = [gt.GradientTape() for _ in range(order)]
    for tape in tapes:
        tape.__enter__()
        tape.watch(x)
    y = gt.sum(f(x))
    for k in reversed(range(order)):
        tapes[k].__exit__(None, None, None)
        g = tapes[k].gradient(y, x)
        if k:
            y = gt.sum(g)
    return g


# --- (a) nested tapes differentiate through grad_fn -------------------------------------------

def test_nested_tapes_give_second_and_third_derivatives_of_grad_fn():
    x = gt.constant(X)
    np.testing.assert_allclose(_nested_tapes(sin_closure, x, 1).numpy(), rule(X), rtol=1e-14)
    np.testing.assert_allclose(_nested_tapes(sin_closure, x, 2).numpy(), rule_fd(X), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(_nested_tapes(sin_closure, x, 3).numpy(), rule_fd2(X), rtol=1e-5, atol=1e-6)


def test_a_persistent_tape_differentiates_its_own_custom_gradient():
    x = gt.constant(X)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.sum(sin_closure(x))
        with pytest.warns(UserWarning, match="inside its context"):
            g = tape.gradient(y, x)
    np.testing.assert_allclose(tape.gradient(g, x).numpy(), rule_fd(X), rtol=1e-7, atol=1e-9)


def test_an_untraceable_function_runs_eagerly_and_its_closure_is_constant_for_outer_tapes():
    x = gt.constant(X)
    np.testing.assert_allclose(_nested_tapes(sin_untraceable, x, 1).numpy(), rule(X), rtol=1e-14)
    # grad_fn read x itself, which it received as a concrete value: the outer tape
    # sees only the cotangent's path, which does not depend on x (TensorFlow's behavior).
    assert _nested_tapes(sin_untraceable, x, 2) is None


# --- (b) staged functions compile --------------------------------------------------------

@pytest.mark.parametrize("order", [1, 2, 3])
def test_staged_derivatives_to_third_order(order):
    g = lambda x: gt.sum(sin_closure(x))  # noqa: E731
    for _ in range(order):
        g = (lambda h: lambda x: gt.sum(gt.grad(h)(x)))(g) if _ < order - 1 else gt.grad(g)
    expected = {1: rule(X), 2: rule_fd(X), 3: rule_fd2(X)}[order]
    np.testing.assert_allclose(g(X), expected, rtol=1e-5, atol=1e-6)


def test_staged_custom_gradient_becomes_custom_vjp_equations_that_compile_natively():
    fn = gt.make_ir(lambda x: gt.sum(sin_closure(x)), X)
    assert [e.op.name for e in fn.eqns] == ["custom_vjp", "reduce_sum"]
    params = fn.eqns[0].params
    assert str(params["fwd"]) == (  # residuals: x and w, the values grad_fn reads
        "{ a:f64[4] . b:f64[4] = neg a ; c:f64[4] = mul b a ; d:f64[4] = div c 2.0 ; "
        "e:f64[4] = exp d -> (a, e) }"
    )
    joint, _ = ir.vjp(fn, [0])
    hvp, _ = ir.jvp(ir.select_outputs(joint, [1]), [0])
    for f, args in [(fn, [X]), (joint, [X, np.array(1.0)]), (hvp, [X, np.array(1.0), T])]:
        cf = gt.runtime.compile_function(f)
        assert cf.native, cf.fallback_reason
        for got, want in zip(cf(*args), ir.eval_function(f, args)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_values_of_an_enclosing_trace_are_constants_of_the_custom_gradient():
    def outer(x, c):
        @gt.custom_gradient
        def scaled(y):
            return y * c, lambda up: up * 10.0  # c is outer's traced value, not an argument

        return gt.sum(scaled(x) * c)

    x, c = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, gc = gt.grad(outer, argnums=(0, 1))(x, c)
    np.testing.assert_allclose(gx, 10.0 * c)
    np.testing.assert_allclose(gc, x * c)  # only the direct use: scaled's own use of c is constant


# --- (c) forward mode ---------------------------------------------------------------------------

def test_forward_mode_transposes_grad_fn():
    _, t = gt.jvp(sin_closure, (X,), (T,))
    np.testing.assert_allclose(t, rule(X) * T, rtol=1e-14)
    np.testing.assert_allclose(gt.hessian(lambda x: gt.sum(sin_closure(x)))(X), np.diag(rule_fd(X)),
                               rtol=1e-7, atol=1e-9)


def test_both_modes_match_finite_differences_when_grad_fn_is_the_true_gradient():
    @gt.custom_gradient
    def softplus(x):
        e = gt.exp(x)
        return gt.log1p(e), lambda up: up * e / (1.0 + e)

    check_grads(lambda x: softplus(x) * x, [np.array([-1.0, 0.3, 2.0])], order=3)


def _recorded(f, x):
    """The Function of what a tape recorded for f(x): one eager custom_gradient equation."""
    x = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    rec = tape._tape
    recorded = rec.function([y])
    return substitute_inputs(recorded, {})  # plain Vars (the batching pass expects exactly ir.Var)


@pytest.mark.parametrize("f", [sin_closure, sin_untraceable], ids=["traced", "untraced"])
def test_the_eager_op_has_every_rule(f):
    fn = _recorded(f, X)
    assert [e.op for e in fn.eqns] == [custom_gradient_p]
    np.testing.assert_allclose(ir.eval_function(fn, [X])[0], np.sin(X), rtol=1e-14)
    # VJP and JVP: grad_fn, and grad_fn transposed.
    joint, _ = ir.vjp(fn, [0])
    np.testing.assert_allclose(ir.eval_function(joint, [X, T])[1], rule(X) * T, rtol=1e-14)
    tangent, _ = ir.jvp(fn, [0])
    np.testing.assert_allclose(ir.eval_function(tangent, [X, T])[1], rule(X) * T, rtol=1e-14)


# --- (d) batching ---------------------------------------------------------------------------

def test_vmap_of_a_staged_custom_gradient():
    xs = np.stack([X, 0.5 * X, -X])
    np.testing.assert_allclose(gt.vmap(sin_closure)(xs), np.sin(xs), rtol=1e-14)
    np.testing.assert_allclose(gt.vmap(gt.grad(lambda x: gt.sum(sin_closure(x))))(xs), rule(xs), rtol=1e-14)


def test_the_eager_op_vectorizes_traced_as_custom_vjp_and_untraced_row_by_row():
    xs = np.stack([X, 0.5 * X, -X])
    for f, ops in [(sin_closure, {"custom_vjp"}), (sin_untraceable, {"custom_gradient"})]:
        batched = ir.vmap(_recorded(f, X), [0], 3)
        assert ops <= {e.op.name for e in batched.eqns}
        np.testing.assert_allclose(ir.eval_function(batched, [xs])[0], np.sin(xs), rtol=1e-14)
        joint, _ = ir.vjp(batched, [0])
        cts = np.ones_like(xs)
        if f is sin_closure:  # a traced f: its rule holds at every point of the batch
            np.testing.assert_allclose(ir.eval_function(joint, [xs, cts])[1], rule(xs), rtol=1e-14)
        else:  # untraced: grad_fn's closure holds the recorded point's values
            np.testing.assert_allclose(ir.eval_function(joint, [xs, cts])[1], rule(np.broadcast_to(X, xs.shape)),
                                       rtol=1e-14)
