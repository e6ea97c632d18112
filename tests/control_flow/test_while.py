"""gt.while_loop: data-dependent trip counts, native loops, forward and reverse
derivatives (against finite differences, the unrolled loop and the implicit
function theorem), vmap with lanes that stop at different steps."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.runtime import compile_function
from gradtape.testing import check_grads


def grow(x, a, limit=4.0):
    """Multiply by (1 + a^2) (plus a sine) until the sum passes `limit`."""
    return gt.while_loop(lambda v: gt.sum(v) < limit, lambda v: v * (1.0 + a * a) + 0.1 * gt.sin(v), x)


def grow_unrolled(x, a, steps):
    for _ in range(steps):
        x = x * (1.0 + a * a) + 0.1 * gt.sin(x)
    return x


def steps_of(x, a, limit=4.0):
    n = 0
    while np.sum(x) < limit:
        x, n = x * (1.0 + a * a) + 0.1 * np.sin(x), n + 1
    return n


A = np.array([0.5, 0.4])
STARTS = {0: np.array([3.0, 2.0]), 1: np.array([1.8, 1.9]), "several": np.array([0.3, 0.4])}


@pytest.mark.parametrize("case", list(STARTS))
def test_trip_counts_zero_one_and_data_dependent_match_finite_differences_and_the_unrolled_loop(case):
    x = STARTS[case]
    n = steps_of(x, A)
    assert n == case if case != "several" else n > 3
    f = lambda x, a: gt.sum(grow(x, a) ** 2)
    check_grads(f, [x, A], order=2, modes=("rev", "fwd"))
    g = gt.grad(f, argnums=(0, 1))(x, A)
    g_unrolled = gt.grad(lambda x, a: gt.sum(grow_unrolled(x, a, n) ** 2), argnums=(0, 1))(x, A)
    for a, b in zip(g, g_unrolled):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_while_loop_and_its_derivatives_compile_to_native_loops():
    fn = gt.make_ir(lambda x, a: gt.sum(grow(x, a) ** 2), STARTS["several"], A)
    for joint in (fn, ir.vjp(fn, [0, 1])[0], ir.jvp(fn, [0, 1])[0]):
        code = compile_function(joint)
        assert code.native, code.fallback_reason
        for x in STARTS.values():
            extra = [np.float64(1.0)] if len(joint.invars) == 3 else [np.ones(2), np.ones(2)][:len(joint.invars) - 2]
            args = [x, A] + extra
            for got, want in zip(code(*args), ir.eval_function(joint, args)):
                np.testing.assert_allclose(got, want, rtol=1e-12)


def test_fixed_point_gradient_matches_the_implicit_function_theorem():
    # x = cos(a x), iterated until converged; dx/da = -x sin(a x) / (1 + a sin(a x))
    def solve(a):
        def body(c):
            x, _ = c
            return gt.cos(a * x), x
        x, _ = gt.while_loop(lambda c: gt.abs(c[0] - c[1]) > 1e-13, body, (gt.cos(a * 0.0), a * 0.0 + 10.0))
        return x

    a = 0.7
    x = float(gt.differentiable(solve)(a))
    np.testing.assert_allclose(x, np.cos(a * x), atol=1e-12)
    ift = -x * np.sin(a * x) / (1 + a * np.sin(a * x))
    np.testing.assert_allclose(float(gt.grad(solve)(a)), ift, rtol=1e-9)


def test_vmap_lanes_stop_at_different_steps_and_keep_their_own_results():
    xs = np.array([[3.0, 2.0], [1.8, 1.9], [0.3, 0.4], [0.05, 0.1]])
    f = gt.vmap(lambda x: grow(x, A))
    want = np.stack([grow_unrolled(gt.constant(x), A, steps_of(x, A)).numpy() for x in xs])
    assert len({steps_of(x, A) for x in xs}) == 4
    np.testing.assert_allclose(f(xs), want, rtol=1e-13)
    g = gt.vmap(gt.grad(lambda x: gt.sum(grow(x, A) ** 2)))(xs)
    for x, gx in zip(xs, g):
        n = steps_of(x, A)
        np.testing.assert_allclose(gx, gt.grad(lambda x: gt.sum(grow_unrolled(x, A, n) ** 2))(x), rtol=1e-12)


def test_eager_while_loop_is_a_python_loop_on_a_tape():
    a = gt.Variable(A)
    x = STARTS["several"]
    with gt.GradientTape() as tape:
        y = gt.sum(grow(gt.constant(x), a) ** 2)
    n = steps_of(x, A)
    want = gt.grad(lambda a: gt.sum(grow_unrolled(x, a, n) ** 2))(A)
    np.testing.assert_allclose(tape.gradient(y, a), want, rtol=1e-12)


def test_bad_condition_and_body():
    with pytest.raises(TypeError, match=r"while_loop: cond_fun's result must be a boolean scalar, got f64\[\]"):
        gt.make_ir(lambda x: gt.while_loop(lambda v: gt.sum(v), lambda v: v, x), np.ones(2))
    with pytest.raises(TypeError, match=r"while_loop: cond_fun's result must be a boolean scalar, got bool\[2\]"):
        gt.while_loop(lambda v: v > 0, lambda v: v, np.ones(2))
    with pytest.raises(TypeError, match=r"while_loop: body_fun changes carry leaf 0 from f64\[2\] to f32\[2\]"):
        gt.make_ir(lambda x: gt.while_loop(lambda v: gt.sum(v) < 1, lambda v: v.astype(np.float32), x),
                   np.ones(2))
