"""tf.custom_gradient as TensorFlow documents and tests it (its docstring and
python/eager/backprop_test.py), including the `variables=` form: grad_fn(*upstream,
variables=...) returns (input_grads, variable_grads) when the function reads Variables.

References are independent of grad_fn: the same function differentiated by the tape
without a custom gradient, hand derivations, or finite differences.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import gradtape as gt


def value(t):
    return None if t is None else np.asarray(t.numpy())


def make_linear_poly(weights, powers=(1, 0)):
    """tf.custom_gradient's documented example: poly = weights[1] * x + weights[0]. Its grad_fn
    stacks d/dweights as [x ** 1, x ** 0], in the reverse order of weights (so TF documents the
    gradient [6., 3.] for x = [1, 2, 3]); powers=(0, 1) gives the true gradient."""

    @gt.custom_gradient
    def linear_poly(x):
        poly = weights[1] * x + weights[0]

        def grad_fn(dpoly, variables=None):
            grad_xs = dpoly * weights[1]
            assert variables is not None and len(variables) == 1 and variables[0] is weights
            dy_dw = dpoly * gt.stack([x ** powers[0], x ** powers[1]])
            return grad_xs, [gt.sum(gt.reshape(dy_dw, (2, -1)), axis=1)]

        return poly, grad_fn

    return linear_poly


def test_the_documented_variables_example():
    weights = gt.Variable([1.0, 2.0], name="weights")
    x = gt.constant([1.0, 2.0, 3.0])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        poly = make_linear_poly(weights)(x)
    np.testing.assert_array_equal(value(poly), [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(value(tape.gradient(poly, x)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(value(tape.gradient(poly, weights)), [6.0, 3.0])
    assert tape.watched_variables() == (weights,)


def test_variable_gradients_match_the_tape_without_a_custom_gradient():
    weights = gt.Variable([0.5, -1.5])
    x = gt.constant([1.0, 2.0, 3.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        loss = gt.sum(gt.tanh(make_linear_poly(weights, powers=(0, 1))(x)))
    got = tape.gradient(loss, [x, weights])
    with gt.GradientTape() as tape:
        tape.watch(x)
        loss = gt.sum(gt.tanh(weights[1] * x + weights[0]))
    want = tape.gradient(loss, [x, weights])
    for g, w in zip(got, want):
        np.testing.assert_allclose(value(g), value(w), rtol=1e-14)


def test_variable_grads_are_what_grad_fn_says_even_when_it_is_not_the_true_gradient():
    w = gt.Variable(3.0)

    @gt.custom_gradient
    def scaled(x):
        def grad_fn(dy, variables=None):
            return dy * w, [10.0 * gt.sum(dy * x)]  # ten times the true d/dw

        return w * x, grad_fn

    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        y = gt.sum(scaled(x))
    assert float(tape.gradient(y, w)) == 30.0


def test_a_grad_fn_without_variables_is_a_type_error_naming_the_variables():
    w = gt.Variable([1.0, 2.0], name="kernel")

    @gt.custom_gradient
    def uses_w(x):
        return gt.sum(w * x), lambda dy: dy * w

    message = re.escape("custom_gradient function 'uses_w' reads the Variables ['kernel'], so its grad_fn must "
                        "accept the keyword argument 'variables'")
    x = gt.constant([1.0, 1.0])
    with gt.GradientTape() as tape:  # recorded: traced
        tape.watch(x)
        with pytest.raises(TypeError, match=message):
            uses_w(x)
    with pytest.raises(TypeError, match=message):  # no tape: run as is
        uses_w(x)
    with pytest.raises(TypeError, match=message):  # staged
        gt.grad(lambda x: uses_w(x))(np.ones(2))


def test_a_grad_fn_taking_keyword_arguments_receives_the_variables():
    w = gt.Variable(2.0)
    seen = []

    @gt.custom_gradient
    def f(x):
        def grad_fn(dy, **kwargs):
            seen.append(kwargs["variables"])
            return dy * w, [gt.sum(dy * x)]

        return w * x, grad_fn

    with gt.GradientTape() as tape:
        y = gt.sum(f(gt.constant([1.0, 3.0])))
    assert float(tape.gradient(y, w)) == 4.0
    assert seen == [[w]]


def test_variables_are_in_the_order_first_read_and_read_through_any_op():
    a, b = gt.Variable(2.0, name="a"), gt.Variable(5.0, name="b")
    received = []

    @gt.custom_gradient
    def f(x):
        s = gt.sum(b * b)  # an op on a Variable alone
        y = s * x + a.read_value() * x  # and a read through value()

        def grad_fn(dy, variables=None):
            received.append([v.name for v in variables])
            return dy * (s + a), [gt.sum(dy * x * 2.0 * b), gt.sum(dy * x)]  # in that order: d/db, d/da

        return y, grad_fn

    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        y = gt.sum(f(x))
    ga, gb = tape.gradient(y, [a, b])
    assert received == [["b", "a"]]
    assert (float(ga), float(gb)) == (3.0, 30.0)  # sum(x) and 2 b sum(x)


def test_variables_passed_as_arguments_and_non_trainable_ones_are_not_variables():
    frozen = gt.Variable(3.0, trainable=False)

    @gt.custom_gradient
    def f(x):
        return x * frozen, lambda dy: dy * frozen  # no `variables`: none are reads here

    v = gt.Variable(2.0)
    with gt.GradientTape() as tape:
        y = f(v)
    assert float(tape.gradient(y, v)) == 3.0
    assert tape.watched_variables() == (v,)


def test_the_wrong_number_of_variable_gradients_is_an_error_naming_the_function():
    w = gt.Variable(1.0, name="w")

    @gt.custom_gradient
    def f(x):
        return w * x, lambda dy, variables=None: (dy * w, [])

    with gt.GradientTape() as tape:
        y = f(gt.constant(1.0))
    with pytest.raises(ValueError, match=re.escape(
            "custom_gradient function 'f': grad_fn must return one gradient per variable in variable_grads: "
            "1 for ['w'], got 0")):
        tape.gradient(y, w)


def test_a_grad_fn_given_variables_must_return_a_pair():
    w = gt.Variable(1.0, name="w")

    @gt.custom_gradient
    def f(x):
        return w * x, lambda dy, variables=None: dy * w

    with gt.GradientTape() as tape:
        y = f(gt.constant(1.0))
    with pytest.raises(ValueError, match=re.escape(
            "grad_fn was given variables=['w'] and must return (input_grads, variable_grads)")):
        tape.gradient(y, w)


def test_a_function_of_no_arguments_reading_variables():
    # backprop_test's testJacobianCustomGradient shape: no inputs, only variables.
    a, b = gt.Variable(1.0), gt.Variable(2.0)
    x = gt.constant([1.0, 2.0, 3.0])

    @gt.custom_gradient
    def call():
        y = a * x * x + b * x

        def grad(dy, variables=None):
            return (), [gt.sum(dy * x * x), gt.sum(dy * x)]

        return y, grad

    with gt.GradientTape() as g:
        y = call()
    da, db = g.gradient(y, [a, b])
    assert (float(da), float(db)) == (14.0, 6.0)  # sum(x^2), sum(x)


def test_an_untraceable_function_reading_a_variable_gets_its_gradient():
    w = gt.Variable(2.0)

    @gt.custom_gradient
    def f(x):
        k = 3.0 if float(x) > 0 else -3.0  # Python control flow on a value: runs eagerly
        y = k * w * x

        def grad_fn(dy, variables=None):
            return dy * k * w, [dy * k * x]

        return y, grad_fn

    x = gt.constant(0.5)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gw = tape.gradient(y, [x, w])
    assert (float(gx), float(gw)) == (6.0, 1.5)


def test_second_derivatives_through_a_variable_read_by_grad_fn():
    # y = w x^2 with grad_fn the true gradient: d/dx (dy/dw) = 2x and d/dw (dy/dx) = 2x.
    w = gt.Variable(3.0)

    @gt.custom_gradient
    def f(x):
        def grad_fn(dy, variables=None):
            return dy * 2.0 * w * x, [dy * x * x]

        return w * x * x, grad_fn

    x = gt.constant(1.5)
    with gt.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dx, dw = inner.gradient(y, [x, w])
    assert (float(dx), float(dw)) == (9.0, 2.25)
    assert float(outer.gradient(dw, x)) == 3.0
    assert float(outer.gradient(dx, w)) == 3.0


def test_staged_code_passes_the_variables_and_treats_them_as_constants():
    w = gt.Variable(2.0)

    @gt.custom_gradient
    def f(x):
        def grad_fn(dy, variables=None):
            assert variables == [w]
            return dy * w * 100.0, [gt.sum(dy * x)]

        return w * x, grad_fn

    g = gt.grad(lambda x: gt.sum(f(x)))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [200.0, 200.0])


def test_a_tape_not_watching_accessed_variables_gives_them_no_gradient():
    w = gt.Variable(2.0)
    x = gt.constant(3.0)
    with gt.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = make_linear_poly(gt.Variable([1.0, 2.0]))(x)
        y = y * w
    gx, gw = tape.gradient(y, [x, w])
    assert float(gx) == 4.0 and gw is None


# --- tf.custom_gradient's other tested behaviours --------------------------------------------


def test_grad_fn_returning_no_gradients_is_a_value_error():
    @gt.custom_gradient
    def identity(x):
        return x, lambda _: []

    x = gt.Variable(1.0)
    with gt.GradientTape() as t:
        y = identity(x)
    with pytest.raises(ValueError):
        t.gradient(y, [x])


def test_an_error_raised_by_grad_fn_reaches_the_caller():
    @gt.custom_gradient
    def f(x):
        def grad(_):
            raise RuntimeError("x")

        return x, grad

    x = gt.constant(1.0)
    with gt.GradientTape() as t:
        t.watch(x)
        y = f(x)
    with pytest.raises(RuntimeError, match="x"):
        t.gradient(y, x)


def test_custom_gradient_identity_doubled():
    @gt.custom_gradient
    def my_identity(x):
        return x, lambda dresult: [2 * dresult]

    x = gt.constant(1.0)
    with gt.GradientTape() as t:
        t.watch(x)
        y = my_identity(x)
    assert float(t.gradient(y, x)) == 2.0


def test_custom_gradient_of_a_variable_argument_uses_its_current_value():
    @gt.custom_gradient
    def my_square(x):
        def grad(dr):
            return 2 * dr * x + 1

        return x * x, grad

    x = gt.Variable(3.0)
    with gt.GradientTape() as t:
        y = my_square(x)
    assert float(t.gradient(y, x)) == 7.0


def test_custom_gradient_in_a_gradient_descent_loop():
    @gt.custom_gradient
    def my_mul(x, y):
        return x * y, lambda dr: [dr * y, dr * x]

    x = gt.Variable(2.0)
    losses = []
    for _ in range(5):
        with gt.GradientTape() as t:
            loss = my_mul(2.0, x.read_value())
        losses.append(float(loss))
        x.assign_sub(0.25 * t.gradient(loss, x))
    assert losses == [4.0, 3.0, 2.0, 1.0, 0.0]


def test_a_custom_gradient_inside_grad_fn_overrides_the_second_order():
    @gt.custom_gradient
    def f(x):
        def first_order_grad(dz):
            @gt.custom_gradient
            def first_order_custom(unused_x):
                return gt.constant(-1.1), lambda ddz: -2.1 * ddz

            return dz * first_order_custom(x)

        return x + 10.0, first_order_grad

    c = gt.constant(1.0)
    with gt.GradientTape() as outer:
        outer.watch(c)
        with gt.GradientTape() as inner:
            inner.watch(c)
            d = f(c) ** 4.0
        dd = inner.gradient(d, c)
        np.testing.assert_allclose(dd.numpy(), 4.0 * 11.0 ** 3 * -1.1, rtol=1e-14)  # float(dd): outer differentiates dd
    np.testing.assert_allclose(float(outer.gradient(dd, c)),
                               3.0 * 4.0 * 11.0 ** 2 * -1.1 * -1.1 + 4.0 * 11.0 ** 3 * -2.1, rtol=1e-14)
