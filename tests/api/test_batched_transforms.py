"""vmap, jacfwd / jacrev / jacobian and hessian: values against loops, finite
differences and analytic formulas on composite functions (an MLP loss,
Rosenbrock, a tridiagonal system), structures, nesting, and misuse errors."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.ir.errors import ShapeError

from ._numeric import numeric_grad, numeric_jacobian

RNG = np.random.default_rng(11)


def rosen(x):
    return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_np(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_hessian_np(x):
    """The analytic (tridiagonal) Hessian of the Rosenbrock function."""
    n = len(x)
    H = np.zeros((n, n))
    H[np.arange(n - 1), np.arange(n - 1)] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    H[np.arange(1, n), np.arange(1, n)] += 200
    off = -400 * x[:-1]
    H[np.arange(n - 1), np.arange(1, n)] = off
    H[np.arange(1, n), np.arange(n - 1)] = off
    return H


def tridiagonal_residual(x, d):
    """r = T x - d + x^3 with T = tridiag(-1, 2, -1): a nonlinear tridiagonal system."""
    left = gt.concatenate([gt.zeros_like(x[:1]), x[:-1]])
    right = gt.concatenate([x[1:], gt.zeros_like(x[:1])])
    return 2.0 * x - left - right - d + x ** 3


def tridiagonal_jacobian_np(x):
    n = len(x)
    return np.diag(2.0 + 3 * x ** 2) - np.eye(n, k=1) - np.eye(n, k=-1)


def mlp_loss(params, x, y):
    h = gt.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"]
    return gt.mean(gt.logsumexp(logits, axis=1) - gt.sum(logits * y, axis=1))


def mlp_loss_np(params, x, y):
    h = np.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"]
    m = logits.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
    return np.mean(lse - np.sum(logits * y, axis=1))


MLP_PARAMS = {"w1": RNG.normal(size=(3, 4)) * 0.5, "b1": RNG.normal(size=4) * 0.1, "w2": RNG.normal(size=(4, 2))}
MLP_X = RNG.normal(size=(5, 3))
MLP_Y = np.eye(2)[RNG.integers(0, 2, 5)]


# --- vmap ------------------------------------------------------------------------------

def test_vmap_equals_a_loop_over_the_batch():
    def f(w, x):
        return gt.tanh(w @ x) * gt.sum(x)

    W, xs = RNG.normal(size=(3, 4)), RNG.normal(size=(6, 4))
    got = gt.vmap(f, in_axes=(None, 0))(W, xs)
    np.testing.assert_allclose(got, np.stack([np.tanh(W @ x) * np.sum(x) for x in xs]), rtol=1e-12)


def test_vmap_in_axes_and_out_axes_positions():
    def f(a, b):
        return a * b, gt.sum(a)

    a, b = RNG.normal(size=(3, 5)), RNG.normal(size=(3,))
    prod, sums = gt.vmap(f, in_axes=(1, None), out_axes=(1, 0))(a, b)
    np.testing.assert_allclose(prod, a * b[:, None], rtol=1e-15)
    np.testing.assert_allclose(sums, a.sum(axis=0), rtol=1e-14)


def test_vmap_of_grad_gives_per_example_gradients():
    def loss(w, x):
        return gt.sum(gt.tanh(x @ w) ** 2)

    w, xs = RNG.normal(size=3), RNG.normal(size=(4, 3))
    per_example = gt.vmap(gt.grad(loss), in_axes=(None, 0))(w, xs)
    for k in range(4):
        np.testing.assert_allclose(
            per_example[k], numeric_grad(lambda v: np.sum(np.tanh(xs[k] @ v) ** 2), w), rtol=1e-7
        )


def test_grad_through_vmap_and_vmap_of_vmap():
    xs = RNG.normal(size=(2, 3, 4))
    nested = gt.vmap(gt.vmap(lambda v: gt.sum(gt.sin(v))))(xs)
    np.testing.assert_allclose(nested, np.sin(xs).sum(axis=2), rtol=1e-14)
    g = gt.grad(lambda x: gt.sum(gt.vmap(lambda v: gt.sum(v ** 3))(x)))(xs[0])
    np.testing.assert_allclose(g, 3 * xs[0] ** 2, rtol=1e-14)


def test_vmap_mismatched_axis_sizes_names_the_function_and_the_sizes():
    def pair(a, b):
        return a + b

    with pytest.raises(ShapeError, match=r"vmap\(pair\).*argument 0 has 3 along axis 0.*argument 1 has 4 along axis 0"):
        gt.vmap(pair)(np.ones((3, 2)), np.ones((4, 2)))


@pytest.mark.parametrize(
    "in_axes, args, message",
    [
        ((0,), (np.ones(3), np.ones(3)), r"in_axes has 1 entries"),
        (2, (np.ones((3, 2)), np.ones((3, 2))), r"is not an axis of argument 0"),
        (None, (np.ones(3), np.ones(3)), r"batch no argument"),
    ],
)
def test_vmap_errors(in_axes, args, message):
    with pytest.raises(ShapeError, match=message):
        gt.vmap(lambda a, b: a * b, in_axes=in_axes)(*args)


# --- Jacobians ----------------------------------------------------------------------

@pytest.mark.parametrize("transform", [gt.jacfwd, gt.jacrev, gt.jacobian])
def test_jacobians_of_a_tridiagonal_system(transform):
    x, d = RNG.normal(size=6), RNG.normal(size=6)
    J = transform(tridiagonal_residual)(x, d)
    np.testing.assert_allclose(J, tridiagonal_jacobian_np(x), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("transform", [gt.jacfwd, gt.jacrev])
def test_jacobian_of_a_matrix_function_has_out_shape_plus_in_shape(transform):
    A = RNG.normal(size=(2, 3))
    X = RNG.normal(size=(3, 4))
    J = transform(lambda X: gt.tanh(A @ X))(X)
    assert J.shape == (2, 4, 3, 4)
    np.testing.assert_allclose(J, numeric_jacobian(lambda X: np.tanh(A @ X), X), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("transform", [gt.jacfwd, gt.jacrev])
def test_jacobian_structures_of_several_arguments_and_outputs(transform):
    def f(a, b):
        return {"p": a * b, "s": gt.sum(a) * b}

    a, b = RNG.normal(size=3), RNG.normal(size=3)
    J = transform(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(J["p"][0], np.diag(b), rtol=1e-15)
    np.testing.assert_allclose(J["p"][1], np.diag(a), rtol=1e-15)
    np.testing.assert_allclose(J["s"][0], np.outer(b, np.ones(3)), rtol=1e-15)
    np.testing.assert_allclose(J["s"][1], np.sum(a) * np.eye(3), rtol=1e-15)


def test_jacobian_of_the_mlp_gradient_against_finite_differences():
    flat = lambda w1: mlp_loss_np({**MLP_PARAMS, "w1": w1}, MLP_X, MLP_Y)  # noqa: E731
    J = gt.jacobian(gt.grad(lambda w1: mlp_loss({**MLP_PARAMS, "w1": w1}, MLP_X, MLP_Y)))(MLP_PARAMS["w1"])
    numeric = numeric_jacobian(lambda w: numeric_grad(flat, w, 1e-5), MLP_PARAMS["w1"], 1e-4)
    np.testing.assert_allclose(J, numeric, rtol=1e-4, atol=1e-6)


def test_jacobian_errors():
    with pytest.raises(TypeError, match=r"jacfwd\(<lambda>\) requires float inputs"):
        gt.jacfwd(lambda x: x * 1.0)(np.arange(3))
    with pytest.raises(ValueError, match=r"mode must be 'auto', 'fwd' or 'rev'"):
        gt.jacobian(gt.sin, mode="forward")


# --- Hessians ------------------------------------------------------------------------

def test_hessian_of_rosenbrock_is_the_analytic_tridiagonal_matrix():
    x = RNG.uniform(-1, 1, 7)
    np.testing.assert_allclose(gt.hessian(rosen)(x), rosen_hessian_np(x), rtol=1e-13, atol=1e-12)


def test_hessian_of_the_mlp_loss_against_finite_differences():
    b1 = MLP_PARAMS["b1"]
    H = gt.hessian(lambda b: mlp_loss({**MLP_PARAMS, "b1": b}, MLP_X, MLP_Y))(b1)
    flat = lambda b: mlp_loss_np({**MLP_PARAMS, "b1": b}, MLP_X, MLP_Y)  # noqa: E731
    numeric = numeric_jacobian(lambda b: numeric_grad(flat, b, 1e-5), b1, 1e-4)
    np.testing.assert_allclose(H, numeric, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(H, H.T, rtol=1e-13)


def test_hessian_blocks_of_several_arguments():
    def f(a, b):
        return gt.sum(a ** 2 * b)

    a, b = RNG.normal(size=2), RNG.normal(size=2)
    H = gt.hessian(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(H[0][0], np.diag(2 * b), rtol=1e-15)
    np.testing.assert_allclose(H[0][1], np.diag(2 * a), rtol=1e-15)
    np.testing.assert_allclose(H[1][0], np.diag(2 * a), rtol=1e-15)
    np.testing.assert_allclose(H[1][1], np.zeros((2, 2)))


def test_hessian_equals_hvp_against_the_basis():
    x = RNG.uniform(-1, 1, 5)
    H = gt.hessian(rosen)(x)
    for k in range(5):
        np.testing.assert_allclose(gt.hvp(rosen)(x, np.eye(5)[k]), H[:, k], rtol=1e-13)


def test_third_derivative_by_jacobian_of_hessian():
    x = RNG.uniform(-1, 1, 3)
    T = gt.jacobian(gt.hessian(lambda x: gt.sum(x ** 4) + x[0] * x[1] * x[2]))(x)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 24 * x[i]
    for p in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]:
        expected[p] = 1.0
    np.testing.assert_allclose(T, expected, rtol=1e-14)


def test_hessian_of_a_non_scalar_function_names_it_and_the_output():
    def vector_valued(x):
        return x ** 2

    with pytest.raises(TypeError, match=r"hessian\(vector_valued\) needs a function returning one float scalar; "
                       r"it returned a value of type f64\[3\]"):
        gt.hessian(vector_valued)(np.ones(3))


@pytest.mark.native
def test_jacobian_and_hessian_compile_to_one_native_call():
    x, d = RNG.normal(size=5), RNG.normal(size=5)
    jac = gt.jacobian(tridiagonal_residual)
    np.testing.assert_allclose(jac(x, d), tridiagonal_jacobian_np(x), rtol=1e-14, atol=1e-15)
    hess = gt.hessian(rosen)
    np.testing.assert_allclose(hess(x), rosen_hessian_np(x), rtol=1e-13, atol=1e-12)
    for staged in (jac, hess):
        info = staged.cache_info()
        assert (info.traces, info.compiles) == (1, 1)


def test_forward_mode_jacobian_folds_the_identity_basis_away():
    """The basis is built from index literals and the optimizer turns the
    product W @ I into a transpose: one matrix-vector contraction remains,
    and no n x n constant is compiled into the program."""
    W = RNG.normal(size=(6, 6))
    jac = gt.jacfwd(lambda x, W: gt.tanh(W @ x) + x ** 3)
    x = RNG.normal(size=6)
    np.testing.assert_allclose(jac(x, W), (1 - np.tanh(W @ x) ** 2)[:, None] * W + np.diag(3 * x ** 2), rtol=1e-14)
    (program,) = jac._programs.values()
    assert [e.op.name for e in program.fn.eqns].count("contract") == 1
    assert all(a.value.size <= 6 for e in program.fn.eqns for a in e.inputs if isinstance(a, gt.ir.Literal))
