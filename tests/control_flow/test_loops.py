"""gt.scan and gt.fori_loop: one equation, native loops, derivatives against
finite differences and against the same loop unrolled in Python."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.runtime import compile_function
from gradtape.testing import check_grads

XS = np.array([[0.3, -0.2], [1.1, 0.4], [-0.7, 0.9], [0.2, -1.3], [0.5, 0.6]])
H0 = np.array([0.1, -0.4])
W = np.array([0.8, -1.1])


def cell(h, x, w):
    return gt.tanh(h * w + x) + 0.1 * gt.sin(x * h)


def rnn_scan(h, xs, w, reverse=False):
    last, states = gt.scan(lambda c, x: (cell(c, x, w), c * c), h, xs, reverse=reverse)
    return gt.sum(last) + gt.sum(states * states)


def rnn_unrolled(h, xs, w, reverse=False):
    states = [None] * xs.shape[0]
    order = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    for i in order:
        states[i] = h * h
        h = cell(h, xs[i], w)
    return gt.sum(h) + gt.sum(gt.stack(states) ** 2)


def powers(x, n=4):
    """x ** (n + 1) + sum of sines, as a fori_loop reading its step number."""
    return gt.fori_loop(0, n, lambda i, v: v * x + gt.sin(v) * 0.1 * (i + 1).astype(v.dtype), x)


def powers_unrolled(x, n=4):
    v = x
    for i in range(n):
        v = v * x + gt.sin(v) * 0.1 * (i + 1)
    return v


def numpy_rnn(h, xs, w, reverse=False):
    states = [None] * len(xs)
    for i in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        states[i] = h * h
        h = np.tanh(h * w + xs[i]) + 0.1 * np.sin(xs[i] * h)
    return np.sum(h) + np.sum(np.stack(states) ** 2)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_is_a_loop_equation_and_native_code_matches_numpy(reverse):
    fn = gt.make_ir(lambda h, xs, w: rnn_scan(h, xs, w, reverse), H0, XS, W)
    assert {e.op.name for e in fn.eqns} >= {"scan"} and len(fn.eqns) < 12   # not unrolled
    code = compile_function(fn)
    assert code.native, code.fallback_reason
    np.testing.assert_allclose(code(H0, XS, W)[0], numpy_rnn(H0, XS, W, reverse), rtol=1e-13)
    np.testing.assert_allclose(ir.eval_function(fn, [H0, XS, W])[0], numpy_rnn(H0, XS, W, reverse), rtol=1e-13)
    np.testing.assert_allclose(float(rnn_scan(H0, XS, W, reverse)), numpy_rnn(H0, XS, W, reverse), rtol=1e-13)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_gradients_match_finite_differences_to_second_order(reverse):
    check_grads(lambda h, xs, w: rnn_scan(h, xs, w, reverse), [H0, XS, W], order=2)


def test_scan_first_and_second_order_match_the_unrolled_loop():
    g_scan = gt.grad(rnn_scan, argnums=(0, 1, 2))(H0, XS, W)
    g_unrolled = gt.grad(rnn_unrolled, argnums=(0, 1, 2))(H0, XS, W)
    for a, b in zip(g_scan, g_unrolled):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    # reverse over reverse: the Hessian in w
    hess = [gt.jacobian(gt.grad(f, argnums=2), argnums=2)(H0, XS, W) for f in (rnn_scan, rnn_unrolled)]
    np.testing.assert_allclose(hess[0], hess[1], rtol=1e-11, atol=1e-13)
    # forward over reverse: a Hessian-vector product in xs
    v = np.ones_like(XS)
    hvp = [gt.jvp(lambda xs, f=f: gt.grad(f, argnums=1)(H0, xs, W), (XS,), (v,))[1]
           for f in (rnn_scan, rnn_unrolled)]
    np.testing.assert_allclose(hvp[0], hvp[1], rtol=1e-11, atol=1e-13)


def test_fori_loop_matches_the_unrolled_loop_to_second_order():
    x = np.array([0.4, -0.9, 1.2])
    np.testing.assert_allclose(gt.differentiable(powers)(x), gt.differentiable(powers_unrolled)(x), rtol=1e-14)
    for f in (lambda x: gt.sum(powers(x)),):
        check_grads(f, [x], order=2)
    g = [gt.grad(lambda x, f=f: gt.sum(f(x)))(x) for f in (powers, powers_unrolled)]
    np.testing.assert_allclose(g[0], g[1], rtol=1e-12)
    h = [gt.hessian(lambda x, f=f: gt.sum(f(x)))(x) for f in (powers, powers_unrolled)]
    np.testing.assert_allclose(h[0], h[1], rtol=1e-11, atol=1e-13)


def test_gradient_of_a_scan_compiles_to_native_loops():
    fn = gt.make_ir(rnn_scan, H0, XS, W)
    joint, _ = ir.vjp(fn, [0, 1, 2])
    code = compile_function(joint)
    assert code.native, code.fallback_reason
    want = ir.eval_function(joint, [H0, XS, W, np.float64(1.0)])
    for got, w in zip(code(H0, XS, W, np.float64(1.0)), want):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-15)


def test_fori_loop_with_no_steps_returns_its_initial_value():
    x = np.array([0.4, -0.9])
    np.testing.assert_array_equal(gt.differentiable(lambda x: powers(x, 0))(x), x)
    np.testing.assert_array_equal(gt.grad(lambda x: gt.sum(powers(x, 0)))(x), np.ones(2))
    np.testing.assert_array_equal(powers(gt.constant(x), 0).numpy(), x)


def test_scan_with_pytrees_and_length_without_xs():
    def f(p):
        def body(c, _):
            return {"a": c["a"] * p, "b": (c["b"][0] + c["a"],)}, c["a"]
        final, ys = gt.scan(body, {"a": p, "b": (0.0 * p,)}, None, length=3)
        return final["b"][0] + gt.sum(ys, axis=0)

    p = np.array([0.5, 2.0])
    want = (p + p ** 2 + p ** 3) * 2
    np.testing.assert_allclose(gt.differentiable(f)(p), want)
    np.testing.assert_allclose(f(gt.constant(p)).numpy(), want)
    np.testing.assert_allclose(gt.grad(lambda p: gt.sum(f(p)))(p), 2 * (1 + 2 * p + 3 * p ** 2))


def test_vmap_of_scan_matches_a_loop_over_the_batch():
    hs = np.array([[0.1, 0.2], [-0.3, 0.5], [0.7, -0.1]])
    f = gt.vmap(lambda h: rnn_scan(h, XS, W))
    np.testing.assert_allclose(f(hs), [numpy_rnn(h, XS, W) for h in hs], rtol=1e-13)
    xss = np.stack([XS, XS * 0.5, -XS])
    g = gt.vmap(lambda xs: rnn_scan(H0, xs, W))
    np.testing.assert_allclose(g(xss), [numpy_rnn(H0, xs, W) for xs in xss], rtol=1e-13)


def test_eager_scan_on_a_tape_is_recorded_like_a_python_loop():
    w = gt.Variable(W)
    with gt.GradientTape() as tape:
        y = rnn_scan(gt.constant(H0), gt.constant(XS), w)
    np.testing.assert_allclose(tape.gradient(y, w), gt.grad(rnn_unrolled, argnums=2)(H0, XS, W), rtol=1e-12)


# --- bad input ---------------------------------------------------------------------------------

def test_body_changing_the_carry_dtype_names_the_leaf_and_both_types():
    with pytest.raises(TypeError, match=r"scan: f changes carry leaf 0 from f64\[2\] to f32\[2\]"):
        gt.make_ir(lambda xs: gt.scan(lambda c, x: (c.astype(np.float32), x), H0, xs), XS)
    with pytest.raises(TypeError, match=r"fori_loop: body_fun changes carry leaf 0 from f64\[2\] to f64\[\]"):
        gt.make_ir(lambda h: gt.fori_loop(0, 2, lambda i, v: gt.sum(v), h), H0)
    with pytest.raises(TypeError, match=r"scan: f changes carry leaf 0 from f64\[2\] to f64\[\]"):
        gt.scan(lambda c, x: (gt.sum(c), x), H0, XS)   # eagerly too


def test_body_changing_the_carry_structure_or_not_returning_a_pair():
    with pytest.raises(TypeError, match=r"scan: f must return a carry of the initial value's structure; "
                                        r"the initial carry is \(\*, \*\), f returned \*"):
        gt.make_ir(lambda xs: gt.scan(lambda c, x: (c[0], x), (H0, H0), xs), XS)
    with pytest.raises(TypeError, match=r"scan: f must return a pair \(carry, y\), got Tensor"):
        gt.make_ir(lambda xs: gt.scan(lambda c, x: c, H0, xs), XS)


def test_scan_length_errors():
    with pytest.raises(ValueError, match=r"scan: xs' leading axes and length must agree, got lengths \[5, 2, 3\]"):
        gt.scan(lambda c, x: (c, x), H0, (XS, XS[:2]), length=3)
    with pytest.raises(ValueError, match=r"scan: pass xs or length"):
        gt.scan(lambda c, x: (c, x), H0, None)


def test_fori_loop_bounds_must_be_integer_scalars():
    with pytest.raises(TypeError, match=r"fori_loop: lower must be an integer scalar, got f64\[\]"):
        gt.fori_loop(0.5, 3, lambda i, v: v, H0)
    with pytest.raises(TypeError, match=r"fori_loop: upper must be an integer scalar, got i64\[2\]"):
        gt.fori_loop(0, np.array([1, 2]), lambda i, v: v, H0)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_fori_loop_with_a_traced_upper_bound_is_a_while_loop(n):
    x = np.array([0.4, -0.9, 1.2])
    f = lambda n, x: gt.sum(gt.fori_loop(0, n, lambda i, v: v * x + gt.sin(v) * 0.1 * (i + 1).astype(v.dtype), x))
    fn = gt.make_ir(f, np.int64(n), x)
    assert "while" in {e.op.name for e in fn.eqns}
    np.testing.assert_allclose(gt.differentiable(f)(np.int64(n), x), gt.sum(powers_unrolled(gt.constant(x), n)).numpy(),
                               rtol=1e-14)
    g = gt.grad(f, argnums=1)(np.int64(n), x)
    np.testing.assert_allclose(g, gt.grad(lambda x: gt.sum(powers_unrolled(x, n)))(x), rtol=1e-12)
