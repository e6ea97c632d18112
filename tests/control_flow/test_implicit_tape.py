"""gt.custom_root and gt.fixed_point called eagerly on a GradientTape: the tape records the
solve as one custom_vjp equation, differentiated by the implicit function theorem, never
the solver's iterations; and higher derivatives (nested tapes, staged) are the theorem's too."""
import numpy as np
import pytest

import gradtape as gt


def implicit_cos(a):
    """x = cos(a x) by 200 NumPy iterations, and dx/da = -x sin(a x) / (1 + a sin(a x))."""
    x = np.cos(a)
    for _ in range(200):
        x = np.cos(a * x)
    return x, -x * np.sin(a * x) / (1 + a * np.sin(a * x))


def scalar_solve(L, y):
    return y / L(1.0)


def iterations(n, stop=True):
    """A solve of f(x) = cos(a x) - x: n steps of x <- x + f(x), stop_gradient'ed or not."""
    def solve(f, x0):
        x = gt.fori_loop(0, n, lambda i, x: x + f(x), x0)
        return gt.stop_gradient(x) if stop else x
    return solve


def rooted(a, solve):
    return gt.custom_root(lambda x: gt.cos(a * x) - x, gt.cos(a * 0.0), solve, scalar_solve)


def recorded(a, fun):
    """fun(a) recorded on a persistent tape watching a: (the tape, the result)."""
    tape = gt.GradientTape(persistent=True)
    with tape:
        tape.watch(a)
        y = fun(a)
    return tape, y


@pytest.mark.parametrize("stop", [True, False])
def test_the_tape_gradient_is_the_theorems_and_not_the_iterations(stop):
    a = gt.constant(0.7)
    tape, y = recorded(a, lambda a: rooted(a, iterations(80, stop)))
    x, dx = implicit_cos(0.7)
    np.testing.assert_allclose(float(y), x, rtol=1e-12)
    np.testing.assert_allclose(float(tape.gradient(y, a)), dx, rtol=1e-10)


def test_a_solve_stopped_early_is_differentiated_as_its_exact_root():
    """Three steps of x <- cos(a x) are far from converged: through them the derivative
    would be that of the 3-step map. custom_root gives the root's, at the point reached."""
    a = gt.constant(0.7)
    tape, y = recorded(a, lambda a: rooted(a, iterations(3, stop=False)))
    x = float(y)
    want = -x * np.sin(0.7 * x) / (1 + 0.7 * np.sin(0.7 * x))   # the theorem's formula at that x
    three_steps = (lambda a, e=1e-6: (three(a + e) - three(a - e)) / (2 * e))(0.7)
    np.testing.assert_allclose(float(tape.gradient(y, a)), want, rtol=1e-10)
    assert abs(three_steps - want) > 1e-3   # the iterations' derivative really differs


def three(a):
    x = np.cos(a * 0.0)
    for _ in range(3):
        x = x + np.cos(a * x) - x
    return x


def test_the_iterations_are_not_recorded():
    """The equations recorded do not depend on how many steps the solver takes."""
    counts = []
    for steps in (5, 50):
        tape, y = recorded(gt.constant(0.7), lambda a: rooted(a, iterations(steps)))
        counts.append(len(tape._tape.eqns))
        assert [e.op.name for e in tape._tape.eqns].count("custom_vjp") == 1
    assert counts[0] == counts[1] < 10


def test_fixed_point_on_a_tape_and_a_variable_read_from_the_closure():
    a = gt.constant(0.7)
    tape, y = recorded(a, lambda a: gt.fixed_point(lambda a, x: gt.cos(a * x), a, 1.0))
    x, dx = implicit_cos(0.7)
    np.testing.assert_allclose(float(y), x, rtol=1e-11)
    np.testing.assert_allclose(float(tape.gradient(y, a)), dx, rtol=1e-9)
    assert len(tape._tape.eqns) < 10
    v = gt.Variable(0.35)   # read by f, never passed: watched when read on the tape, as any read
    with gt.GradientTape() as tape:
        y = gt.custom_root(lambda x: gt.cos(2.0 * v * x) - x, 1.0, iterations(80), scalar_solve)
    np.testing.assert_allclose(float(tape.gradient(y, v)), 2 * implicit_cos(0.7)[1], rtol=1e-9)


def test_vector_parameters_through_an_op_recorded_before_the_solve():
    """x^3 + x = b with b = 2 a (computed on the tape, then read by f): dx/da = 2 / (3 x^2 + 1)."""
    def newton(f, x):
        return gt.fori_loop(0, 40, lambda i, x: x - f(x) / (3 * x * x + 1), x)
    a = gt.constant(np.array([0.25, 1.0, -1.5]))
    with gt.GradientTape() as tape:
        tape.watch(a)
        b = 2.0 * a
        x = gt.custom_root(lambda x: x ** 3 + x - b, gt.zeros_like(b), newton, lambda L, y: y / L(gt.ones_like(y)))
        loss = gt.sum(x * x)
    xv = x.numpy()
    np.testing.assert_allclose(xv ** 3 + xv, 2 * a.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, a).numpy(), 2 * xv * 2 / (3 * xv ** 2 + 1), rtol=1e-10)


def test_nested_tapes_give_the_second_derivative():
    """d2x/da2 against central differences of the closed-form first derivative."""
    a = gt.constant(0.7)
    with gt.GradientTape() as outer:
        outer.watch(a)
        with gt.GradientTape() as inner:
            inner.watch(a)
            y = rooted(a, iterations(80))
        d = inner.gradient(y, a)
    e = 1e-5
    fd = (implicit_cos(0.7 + e)[1] - implicit_cos(0.7 - e)[1]) / (2 * e)
    np.testing.assert_allclose(float(outer.gradient(d, a)), fd, rtol=1e-6)


def test_staged_higher_derivatives_of_a_stop_gradient_solve_are_the_theorems():
    """The VJP's own derivative must not go through the solve either (it would be 0 here)."""
    f = lambda a: rooted(a, iterations(80))
    d1 = lambda a: implicit_cos(a)[1]
    e = 1e-4
    d2 = lambda a: (d1(a + e) - d1(a - e)) / (2 * e)
    np.testing.assert_allclose(float(gt.grad(gt.grad(f))(0.7)), d2(0.7), rtol=1e-6)
    np.testing.assert_allclose(float(gt.jvp(gt.grad(f), (0.7,), (1.0,))[1]), d2(0.7), rtol=1e-6)
    e3 = 1e-3
    d3 = (d2(0.7 + e3) - d2(0.7 - e3)) / (2 * e3)
    np.testing.assert_allclose(float(gt.grad(gt.grad(gt.grad(f)))(0.7)), d3, rtol=1e-4)


def test_a_forward_accumulator_gets_the_theorems_tangent():
    a = gt.constant(0.7)
    with gt.ForwardAccumulator(a, gt.constant(1.0)) as acc:
        y = rooted(a, iterations(80))
    np.testing.assert_allclose(float(acc.jvp(y)), implicit_cos(0.7)[1], rtol=1e-10)


def test_nothing_recorded_read_gives_no_gradient():
    a = gt.constant(0.7)
    with gt.GradientTape() as tape:
        tape.watch(a)
        y = gt.custom_root(lambda x: gt.cos(0.7 * x) - x, 1.0, iterations(80), scalar_solve)
    assert tape.gradient(y, a) is None
    np.testing.assert_allclose(float(y), implicit_cos(0.7)[0], rtol=1e-12)


@pytest.mark.parametrize("how", ["staged", "eager", "tape"])
def test_fixed_point_errors_name_fixed_point(how):
    bad = lambda a: gt.fixed_point(lambda a, x: gt.stack([x, a]), a, 1.0)
    message = (r"fixed_point: f must return x's structure, shapes and dtypes; x is f64\[\] and "
               r"f\(a, x\) returns f64\[2\]")
    with pytest.raises(TypeError, match=message):
        if how == "staged":
            gt.grad(bad)(1.0)
        elif how == "eager":
            bad(gt.constant(1.0))
        else:
            recorded(gt.constant(1.0), bad)
