"""Staged transforms called inside other traces: higher derivatives, mixing
grad with differentiable, closures over enclosing traced values, static
arguments through nesting."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.ir.optimize import optimize

from ._numeric import numeric_derivative


@pytest.mark.native
def test_second_derivative_vs_hand_formula():
    f = lambda x: gt.sin(x) * x ** 2  # noqa: E731
    d2 = gt.grad(gt.grad(f))
    for x in (0.3, -1.2, 2.0):
        want = (2 - x * x) * np.sin(x) + 4 * x * np.cos(x)
        np.testing.assert_allclose(d2(x), want, rtol=1e-12)


@pytest.mark.native
def test_third_derivative_vs_hand_formula_and_finite_differences():
    f = lambda x: gt.exp(x * 0.5) * gt.sin(x)  # noqa: E731
    d3 = gt.grad(gt.grad(gt.grad(f)))
    x = 0.7
    # f = Im e^{(1/2 + i) x}, so f''' = Im (1/2 + i)^3 e^{(1/2 + i) x}.
    c = (0.5 + 1j) ** 3
    want = np.exp(0.5 * x) * (c.real * np.sin(x) + c.imag * np.cos(x))
    np.testing.assert_allclose(d3(x), want, rtol=1e-12)
    fd = numeric_derivative(lambda t: np.exp(0.5 * t) * np.sin(t), x, 3)
    np.testing.assert_allclose(d3(x), fd, rtol=1e-4)


def test_hessian_diagonal_of_a_vector_function():
    # d/dx_i of (grad f)_i summed: for f = sum(x^4), grad = 4x^3, and grad(sum(grad)) = 12x^2.
    inner = gt.grad(lambda x: gt.sum(x ** 4))
    outer = gt.grad(lambda x: gt.sum(inner(x)))
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(outer(x), 12 * x ** 2)


def test_value_and_grad_inside_differentiable():
    vg = gt.value_and_grad(lambda x: gt.sum(gt.tanh(x)))

    @gt.differentiable
    def step(x):
        value, g = vg(x)
        return x - 0.1 * g, value

    x = np.array([0.2, -0.3])
    new_x, value = step(x)
    np.testing.assert_allclose(new_x, x - 0.1 * (1 - np.tanh(x) ** 2))
    np.testing.assert_allclose(value, np.tanh(x).sum())
    assert vg.cache_info().compiles == 0  # only ever inlined into step's trace


def test_differentiable_inside_grad():
    inner = gt.differentiable(lambda x: gt.exp(x) * x)
    g = gt.grad(lambda x: gt.sum(inner(x) * 2.0))
    x = np.array([0.0, 1.0])
    np.testing.assert_allclose(g(x), 2 * np.exp(x) * (1 + x))


def test_grad_of_a_differentiable_shares_its_traces():
    f = gt.differentiable(lambda x: gt.sum(x ** 3))
    x = np.array([1.0, 2.0])
    f(x)
    np.testing.assert_allclose(gt.grad(f)(x), 3 * x ** 2)
    assert f.cache_info().traces == 1


@pytest.mark.native
def test_closure_over_an_enclosing_traced_value():
    def outer(x):
        return gt.grad(lambda y: x * y * y)(x)  # 2 x y at y = x

    np.testing.assert_allclose(gt.differentiable(outer)(3.0), 18.0)
    np.testing.assert_allclose(gt.grad(outer)(3.0), 12.0)  # d/dx 2x^2


def test_closure_with_a_concrete_argument_still_stages():
    def outer(x):
        return gt.grad(lambda y: x * y * y)(2.0)  # 4 x

    np.testing.assert_allclose(gt.grad(outer)(5.0), 4.0)


def test_static_argnums_through_nesting():
    power = gt.differentiable(lambda x, n: x ** n, static_argnums=1)
    np.testing.assert_allclose(power.grad(2.0, 3), 12.0)
    np.testing.assert_allclose(gt.grad(power)(2.0, 3), 12.0)  # inherits static_argnums
    np.testing.assert_allclose(gt.grad(gt.grad(power))(2.0, 3), 12.0)
    np.testing.assert_allclose(gt.grad(gt.grad(power))(2.0, 4), 48.0)
    outer = gt.grad(lambda x: power(x, 2) * power(x, 3))  # static inside another trace
    np.testing.assert_allclose(outer(2.0), 5 * 2.0 ** 4)


def test_recursion_on_a_static_argument():
    def poly(x, n):
        return x if n == 1 else x * staged(x, n - 1)

    staged = gt.differentiable(poly, static_argnums=1)
    np.testing.assert_allclose(staged(2.0, 5), 32.0)
    np.testing.assert_allclose(staged.grad(2.0, 5), 5 * 2.0 ** 4)


def test_grad_of_grad_with_pytrees_and_argnums():
    def f(p, x):
        return gt.sum(p["a"] * x ** 3) + p["b"] * gt.sum(x)

    dx = gt.grad(f, argnums=1)
    hx = gt.grad(lambda p, x: gt.sum(dx(p, x)), argnums=(0, 1))
    p = {"a": np.array([1.0, 2.0]), "b": 3.0}
    x = np.array([0.5, -1.0])
    gp, gx = hx(p, x)
    np.testing.assert_allclose(gp["a"], 3 * x ** 2)
    np.testing.assert_allclose(gp["b"], 2.0)
    np.testing.assert_allclose(gx, 6 * p["a"] * x)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_nested_grads_of_tanh_vs_finite_differences(order):
    f = gt.tanh
    for _ in range(order):
        f = gt.grad(f)
    x = 0.4
    np.testing.assert_allclose(f(x), numeric_derivative(np.tanh, x, order), rtol=1e-4, atol=1e-6)


def test_make_ir_of_a_staged_call_inlines_it():
    g = gt.grad(lambda x: gt.sum(gt.sin(x)))
    fn = gt.make_ir(lambda x: g(x) * 2.0, np.ones(3))
    # The staged call's traced program is inlined (derivatives are taken of what was traced,
    # not of its optimized form); optimizing the enclosing Function then folds the 1.0 seed.
    assert "call" not in str(fn)
    assert str(optimize(fn)) == "{ a:f64[3] . b:f64[3] = cos a ; c:f64[3] = mul b 2.0 -> c }"


def test_an_enclosing_grad_differentiates_the_traced_program_not_its_optimized_form():
    # Fuzz seed 7029: (x * x) ** 0 is 1 after optimization, whose derivative is structurally
    # zero; the traced program's derivative is 0 * (2 * x), NaN at x = inf, as every other
    # path (and JAX) gives. A staged call inside grad, and on a tape, must agree with grad.
    inner = gt.differentiable(lambda x: (x * gt.stop_gradient(x)) ** 0)
    outer = lambda x: gt.sum(inner(x) + x)  # noqa: E731
    x = np.array([np.inf, 2.0])
    want = gt.grad(lambda x: gt.sum((x * gt.stop_gradient(x)) ** 0 + x))(x)
    assert np.isnan(want[0]) and want[1] == 1.0  # 0 * inf, and 0 * 2 + 1
    np.testing.assert_array_equal(gt.grad(outer)(x), want)
    c = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(c)
        y = outer(c)
    np.testing.assert_array_equal(tape.gradient(y, c).numpy(), want)
