"""Derivatives of every order where a branch or a singular factor used to give a wrong
value (issue 25 point 6): logaddexp and logaddexp2 at x == y, and x ** y at x == 0 with a
tensor exponent whose value is 0 (or another integer), on the tape and staged, in reverse
and forward mode, against closed forms and finite differences."""
import math

import numpy as np
import pytest
from scipy.special import expit

import gradtape as gt
from gradtape.testing import check_grads

from .three_ways import three_ways

LN2 = math.log(2.0)


def _logaddexp_derivatives(x, y):
    """d/dx, d2/dx2, d3/dx3 of log(e**x + e**y): s, s(1 - s), s(1 - s)(1 - 2s) with s = expit(x - y)."""
    s = expit(x - y)
    return s, s * (1 - s), s * (1 - s) * (1 - 2 * s)


def _logaddexp2_derivatives(x, y):
    """Those of log2(2**x + 2**y) = logaddexp(x ln2, y ln2) / ln2: each order one more factor ln2."""
    s = expit((x - y) * LN2)
    return s, LN2 * s * (1 - s), LN2 ** 2 * s * (1 - s) * (1 - 2 * s)


CASES = [(gt.logaddexp, np.logaddexp, _logaddexp_derivatives),
         (gt.logaddexp2, np.logaddexp2, _logaddexp2_derivatives)]
IDS = ["logaddexp", "logaddexp2"]


@pytest.mark.parametrize("f,np_f,derivatives", CASES, ids=IDS)
@pytest.mark.parametrize("x,y", [(0.4, 0.4), (-3.0, -3.0), (0.0, 0.0), (1.0, 0.4), (-2.0, 5.0)])
def test_three_orders_staged_match_the_closed_form_at_and_off_ties(f, np_f, derivatives, x, y):
    d1 = gt.grad(lambda a: f(a, y))
    d2 = gt.grad(d1)
    d3 = gt.grad(d2)
    want = derivatives(x, y)
    np.testing.assert_allclose([float(d1(x)), float(d2(x)), float(d3(x))], want, rtol=1e-12, atol=1e-15)


def test_the_issue_example_is_a_quarter():
    assert float(gt.grad(gt.grad(lambda x: np.logaddexp(x, 0.4)))(0.4)) == pytest.approx(0.25, rel=1e-15)
    assert float(gt.grad(gt.grad(lambda x: np.logaddexp2(x, 0.4)))(0.4)) == pytest.approx(LN2 / 4, rel=1e-15)


@pytest.mark.parametrize("f,np_f,derivatives", CASES, ids=IDS)
def test_nested_tapes_match_the_closed_form_at_a_tie(f, np_f, derivatives):
    x = gt.constant(0.4)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            out = f(x, gt.constant(0.4))
        first = inner.gradient(out, x)
    second = outer.gradient(first, x)
    want = derivatives(0.4, 0.4)
    np.testing.assert_allclose([float(first.numpy()), float(second.numpy())], want[:2], rtol=1e-12)


@pytest.mark.parametrize("f,np_f,derivatives", CASES, ids=IDS)
def test_hessian_and_jvp_at_ties_in_both_operands(f, np_f, derivatives):
    """In (x, y) the Hessian at a tie is [[c, -c], [-c, c]] with c the second derivative."""
    v = np.array([0.4, 0.4])
    c = derivatives(0.4, 0.4)[1]
    np.testing.assert_allclose(gt.hessian(lambda t: f(t[0], t[1]))(v), [[c, -c], [-c, c]], rtol=1e-12)
    grad = gt.grad(lambda t: f(t[0], t[1]))
    _, tangent = gt.jvp(grad, (v,), (np.array([1.0, 0.0]),))  # forward over reverse: the Hessian's column
    np.testing.assert_allclose(tangent, [c, -c], rtol=1e-12)


@pytest.mark.parametrize("f,np_f,derivatives", CASES, ids=IDS)
def test_finite_differences_to_third_order_at_ties(f, np_f, derivatives):
    x = np.array([0.4, -1.0, 2.5, 0.0])
    y = x.copy()
    check_grads(lambda a, b: f(a, b) * (1.0 + a), [x, y], order=3, modes=("rev", "fwd"))
    check_grads(lambda a: f(a, 0.4), [np.array([0.4, 0.4])], order=3, modes=("rev", "fwd"))


@pytest.mark.parametrize("f,np_f,derivatives", CASES, ids=IDS)
def test_values_stay_numpys_bit_for_bit_with_special_values(f, np_f, derivatives):
    v = np.array([0.0, -0.0, 0.4, -3.0, 1e300, -1e300, np.inf, -np.inf, np.nan, 800.0, -800.0])
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    with np.errstate(invalid="ignore"):
        want = np_f(x, y)
        results = three_ways(f, x, y)
    for way, got in zip(("eager", "interpreted", "compiled"), results):
        np.testing.assert_array_equal(got, want, err_msg=way)


@pytest.mark.parametrize("f", [gt.logaddexp, gt.logaddexp2], ids=IDS)
def test_gradient_at_equal_and_unequal_infinities(f):
    g = gt.grad(lambda a, b: f(a, b), argnums=(0, 1))
    assert [float(d) for d in g(np.inf, np.inf)] == [0.5, 0.5]
    assert [float(d) for d in g(-np.inf, -np.inf)] == [0.5, 0.5]
    assert [float(d) for d in g(np.inf, 1.0)] == [1.0, 0.0]
    assert [float(d) for d in g(-np.inf, 1.0)] == [0.0, 1.0]


# --- x ** y at x == 0 with a tensor exponent ------------------------------------------------


def _derivatives_at_zero(n, orders):
    """d^k/dx^k x**n at x = 0 for an integer n >= 0: n! at k == n, else 0."""
    return [float(math.factorial(n)) if k == n else 0.0 for k in range(1, orders + 1)]


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_a_traced_integer_valued_exponent_has_every_derivative_at_zero(n):
    """The exponent is an argument, so it is a traced value and not a literal."""
    d, got = (lambda x, y: x ** y), []
    for _ in range(4):
        d = gt.grad(d)
        got.append(float(d(0.0, float(n))))
    assert got == _derivatives_at_zero(n, 4)
    literal = [gt.grad(lambda x: x ** float(n))]
    for _ in range(3):
        literal.append(gt.grad(literal[-1]))
    assert [float(g(0.0)) for g in literal] == got  # the literal exponent agrees


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_a_constant_exponent_on_nested_tapes_has_every_derivative_at_zero(n):
    x, y = gt.constant(0.0), gt.constant(float(n))
    tapes = [gt.GradientTape() for _ in range(3)]
    for tape in tapes:
        tape.__enter__()
        tape.watch(x)
    value, got = x ** y, []
    for tape in reversed(tapes):
        tape.__exit__(None, None, None)
        value = tape.gradient(value, x)
        got.append(float(value.numpy()))
    assert got == _derivatives_at_zero(n, 3)


def test_the_issue_example_on_a_tape():
    x = gt.constant(0.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x ** gt.constant(0.0)
    assert float(tape.gradient(y, x).numpy()) == 0.0  # was NaN, where the literal x ** 0.0 gave 0


def test_forward_mode_and_the_hessian_in_both_operands_at_the_origin():
    _, tangent = gt.jvp(lambda x, y: x ** y, (0.0, 0.0), (1.0, 0.0))
    assert float(tangent) == 0.0
    np.testing.assert_array_equal(gt.hessian(lambda t: t[0] ** t[1])(np.array([0.0, 0.0])), np.zeros((2, 2)))
    _, tangent = gt.jvp(gt.grad(lambda x, y: x ** y), (0.0, 2.0), (1.0, 0.0))  # d2/dx2 x**2
    assert float(tangent) == 2.0


def test_the_exponents_derivative_at_zero_is_zero_where_the_power_is_finite():
    """d/dy 0 ** y: 0 ** y is 0 for every y > 0, so 0 there; at y == 0 (a jump from 1 to 0)
    gradtape takes 0 too, as JAX and TensorFlow; for y < 0 0 ** y is inf and the slope NaN."""
    dy = gt.grad(lambda x, y: x ** y, argnums=1)
    dyy = gt.grad(dy, argnums=1)
    for y in (0.0, 0.5, 2.0):
        assert float(dy(0.0, y)) == 0.0 and float(dyy(0.0, y)) == 0.0
    assert np.isnan(float(dy(0.0, -1.0)))
    np.testing.assert_allclose(float(dy(2.0, 0.0)), LN2, rtol=1e-15)  # away from 0: x**y log x
    mixed = gt.grad(gt.grad(lambda x, y: x ** y), argnums=1)
    np.testing.assert_allclose(float(mixed(2.0, 0.0)), 0.5, rtol=1e-15)  # x**(y-1) (1 + y log x) = 1/x


def test_tensor_exponents_off_zero_match_finite_differences():
    x = np.array([0.5, 1.5, 2.0])
    check_grads(lambda a, b: a ** b, [x, np.array([0.0, 1.0, 2.0])], order=3, modes=("rev", "fwd"))
