"""gt.custom_root and gt.fixed_point: derivatives by the implicit function theorem,
against the closed form, finite differences and differentiating the iterations."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.runtime import compile_function
from gradtape.testing import check_grads


def newton(f, x):
    """30 Newton steps with the derivative by forward mode, through a fori_loop."""
    return gt.fori_loop(0, 30, lambda i, x: x - f(x) / gt.grad(lambda v: gt.sum(f(v)))(x), x)


def scalar_solve(L, y):
    return y / L(1.0)


def cube_root_ish(a):
    """The root of x^3 + x - a (one real root for every a)."""
    return gt.custom_root(lambda x: x ** 3 + x - a, gt.zeros_like(a) + 1.0, newton,
                          lambda L, y: y / L(gt.ones_like(y)))


def implicit_cos(a):
    """x = cos(a x): dx/da = -x sin(a x) / (1 + a sin(a x))."""
    x = np.cos(a)
    for _ in range(200):
        x = np.cos(a * x)
    return x, -x * np.sin(a * x) / (1 + a * np.sin(a * x))


def cos_by_while(a):
    def body(c):
        x, _ = c
        return gt.cos(a * x), x
    x, _ = gt.while_loop(lambda c: gt.abs(c[0] - c[1]) > 1e-14, body, (gt.cos(a * 0.0), a * 0.0 + 10.0))
    return x


def cos_by_custom_root(a):
    def solve(f, x0):   # the same iteration, on f(x) = cos(a x) - x; stop_gradient: nothing to differentiate
        def body(c):
            x, _ = c
            return x + f(x), x
        x, _ = gt.while_loop(lambda c: gt.abs(c[0] - c[1]) > 1e-14, body, (x0, x0 + 10.0))
        return gt.stop_gradient(x)
    return gt.custom_root(lambda x: gt.cos(a * x) - x, gt.cos(a * 0.0), solve, scalar_solve)


def cos_by_fixed_point(a):
    return gt.fixed_point(lambda a, x: gt.cos(a * x), a, 1.0)


@pytest.mark.parametrize("a", [0.3, 0.7, 1.0])
def test_three_ways_to_the_fixed_point_give_the_implicit_function_theorems_gradient(a):
    x, dx = implicit_cos(a)
    for f in (cos_by_while, cos_by_custom_root, cos_by_fixed_point):
        np.testing.assert_allclose(float(gt.differentiable(f)(a)), x, rtol=1e-11)
        np.testing.assert_allclose(float(gt.grad(f)(a)), dx, rtol=1e-9)
        np.testing.assert_allclose(float(gt.jvp(f, (a,), (1.0,))[1]), dx, rtol=1e-9)


def test_the_gradient_does_not_go_through_the_iterations():
    """Differentiating the stop_gradient'ed solve itself gives 0; custom_root gives dx/da."""
    def solve(f, x0):
        return gt.stop_gradient(gt.fori_loop(0, 60, lambda i, x: x + f(x), x0))
    iterations_only = lambda a: solve(lambda x: gt.cos(a * x) - x, gt.cos(a * 0.0))
    assert float(gt.grad(iterations_only)(0.7)) == 0.0
    rooted = lambda a: gt.custom_root(lambda x: gt.cos(a * x) - x, gt.cos(a * 0.0), solve, scalar_solve)
    np.testing.assert_allclose(float(gt.grad(rooted)(0.7)), implicit_cos(0.7)[1], rtol=1e-9)


def test_vector_root_matches_the_closed_form_to_second_order():
    a = np.array([0.5, 2.0, -3.0])
    x = gt.differentiable(cube_root_ish)(a)
    np.testing.assert_allclose(x ** 3 + x, a, rtol=1e-12)
    # x^3 + x = a  =>  dx/da = 1 / (3x^2 + 1), elementwise
    g = gt.grad(lambda a: gt.sum(cube_root_ish(a)))(a)
    np.testing.assert_allclose(g, 1 / (3 * x ** 2 + 1), rtol=1e-12)
    check_grads(lambda a: gt.sum(cube_root_ish(a) ** 2), [a], order=2, modes=("rev", "fwd"))


def test_parameters_the_residual_reads_from_its_closure_get_gradients():
    def f(a, b):
        return gt.custom_root(lambda x: a * x - b, 1.0, newton, scalar_solve)   # x = b / a
    ga, gb = gt.grad(f, argnums=(0, 1))(2.0, 3.0)
    np.testing.assert_allclose([ga, gb], [-3.0 / 4.0, 1.0 / 2.0], rtol=1e-12)


def test_vmap_and_native_code():
    a = np.array([0.3, 0.7, 1.0])
    g = gt.vmap(gt.grad(cos_by_fixed_point))(a)
    np.testing.assert_allclose(g, [implicit_cos(v)[1] for v in a], rtol=1e-9)
    fn = gt.make_ir(gt.grad(cos_by_custom_root), 0.7)
    code = compile_function(fn)
    assert code.native, code.fallback_reason
    np.testing.assert_allclose(code(np.float64(0.7))[0], implicit_cos(0.7)[1], rtol=1e-9)
    np.testing.assert_allclose(ir.eval_function(fn, [np.float64(0.7)])[0], implicit_cos(0.7)[1], rtol=1e-9)


def test_eagerly_they_run_the_solve():
    np.testing.assert_allclose(float(cos_by_fixed_point(0.7)), implicit_cos(0.7)[0], rtol=1e-11)
    np.testing.assert_allclose(float(cube_root_ish(np.array(2.0))), 1.0, rtol=1e-12)


def test_a_residual_of_another_shape_is_an_error():
    with pytest.raises(TypeError, match=r"custom_root: f must return a residual of x's structure, shapes and "
                                        r"dtypes; x is f64\[\] and f returns f64\[2\]"):
        gt.grad(lambda a: gt.custom_root(lambda x: gt.stack([x, a]), 1.0, newton, scalar_solve))(1.0)
