"""jvp, vjp, linearize and hvp: values against finite differences and each other,
structures, reuse of the pullback and linear map, nesting, and misuse errors."""
import numpy as np
import pytest

import gradtape as gt

from ._numeric import numeric_grad, numeric_jacobian

RNG = np.random.default_rng(7)
X = RNG.uniform(-1, 1, 4)
V = RNG.uniform(-1, 1, 4)
M = RNG.uniform(-1, 1, (3, 4))


def f_vec(x):
    return gt.tanh(M @ x) * gt.sum(x ** 2)


def f_vec_np(x):
    return np.tanh(M @ x) * np.sum(x ** 2)


def rosen(x):
    return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_np(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


# --- jvp ------------------------------------------------------------------------------

def test_jvp_is_the_jacobian_times_the_tangent():
    out, t = gt.jvp(f_vec, (X,), (V,))
    np.testing.assert_allclose(out, f_vec_np(X), rtol=1e-13)
    np.testing.assert_allclose(t, numeric_jacobian(f_vec_np, X) @ V, rtol=1e-7, atol=1e-9)


def test_jvp_of_several_arguments_and_nested_structures():
    def f(p, x):
        return {"y": gt.sin(p["w"] * x) + p["b"], "s": gt.sum(x)}

    p = {"w": np.array([0.5, -1.0]), "b": np.array(0.3)}
    tp = {"w": np.array([1.0, 2.0]), "b": np.array(-1.0)}
    x, tx = np.array([0.2, 0.7]), np.array([0.1, 0.0])
    out, t = gt.jvp(f, (p, x), (tp, tx))
    dy = np.cos(p["w"] * x) * (tp["w"] * x + p["w"] * tx) + tp["b"]
    np.testing.assert_allclose(t["y"], dy, rtol=1e-13)
    np.testing.assert_allclose(t["s"], np.sum(tx), rtol=1e-13)
    np.testing.assert_allclose(out["y"], np.sin(p["w"] * x) + p["b"], rtol=1e-13)


def test_jvp_traces_once_per_signature():
    def f(x):
        return gt.exp(x)

    for _ in range(3):
        gt.jvp(f, (X,), (V,))
    from gradtape.staging.forward_api import staged_for

    info = staged_for(f, ("jvp",), None).cache_info()
    assert (info.traces, info.misses, info.hits) == (1, 1, 2)


@pytest.mark.parametrize(
    "primals, tangents, message",
    [
        (X, (V,), "primals must be a tuple"),
        ((X,), (V, V), "same structure"),
        ((X,), (V[:3],), r"tangent 0 is f64\[3\] but its primal is f64\[4\]"),
        ((X,), (V.astype(np.float32),), r"tangent 0 is f32\[4\]"),
        ((np.arange(4),), (np.arange(4),), "differentiates float inputs only"),
    ],
)
def test_jvp_errors_name_the_function_and_what_was_received(primals, tangents, message):
    with pytest.raises(TypeError, match=message) as info:
        gt.jvp(f_vec, primals, tangents)
    assert "f_vec" in str(info.value)


# --- vjp ------------------------------------------------------------------------------

def test_vjp_pullback_is_reusable_and_matches_the_jacobian_transpose():
    out, pullback = gt.vjp(f_vec, X)
    np.testing.assert_allclose(out, f_vec_np(X), rtol=1e-13)
    J = numeric_jacobian(f_vec_np, X)
    for k in range(3):
        ct = RNG.uniform(-1, 1, 3)
        (g,) = pullback(ct)
        np.testing.assert_allclose(g, ct @ J, rtol=1e-7, atol=1e-9)


def test_vjp_pullback_runs_only_the_backward_half():
    """The pullback's Function reads residuals, not x: the forward is not recomputed."""
    _, pullback = gt.vjp(lambda x: gt.sum(gt.exp(gt.sin(x))), X)
    later = pullback._program.fn
    assert not any(e.op.name == "sin" for e in later.eqns)
    assert pullback(1.0)[0] == pytest.approx(np.cos(X) * np.exp(np.sin(X)), rel=1e-13)


def test_vjp_with_aux_and_several_primals():
    def f(a, b):
        return gt.sum(a * b), {"twice": 2.0 * a}

    out, pullback, aux = gt.vjp(f, X, V, has_aux=True)
    assert out == pytest.approx(np.sum(X * V))
    np.testing.assert_array_equal(aux["twice"], 2.0 * X)
    ga, gb = pullback(np.array(2.0))
    np.testing.assert_allclose(ga, 2.0 * V, rtol=1e-14)
    np.testing.assert_allclose(gb, 2.0 * X, rtol=1e-14)


def test_vjp_pullback_rejects_a_wrong_cotangent():
    _, pullback = gt.vjp(f_vec, X)
    with pytest.raises(TypeError, match=r"vjp\(f_vec\): a cotangent 0 has shape \(4,\).*expected shape \(3,\)"):
        pullback(np.ones(4))
    with pytest.raises(TypeError, match=r"vjp\(f_vec\): expected a cotangent with the structure"):
        pullback((np.ones(3), np.ones(3)))


def test_vjp_inside_grad_is_differentiated_again():
    """d/dx of (pullback of sin at x)(1) = d/dx cos(x) = -sin(x)."""
    def g(x):
        _, pullback = gt.vjp(gt.sin, x)
        return gt.sum(pullback(gt.ones_like(x))[0])

    np.testing.assert_allclose(gt.grad(g)(X), -np.sin(X), rtol=1e-13)


# --- linearize -------------------------------------------------------------------------

def test_linearize_gives_the_jvp_at_the_fixed_point():
    out, f_jvp = gt.linearize(f_vec, X)
    np.testing.assert_allclose(out, f_vec_np(X), rtol=1e-13)
    for _ in range(2):
        v = RNG.uniform(-1, 1, 4)
        np.testing.assert_allclose(f_jvp(v), gt.jvp(f_vec, (X,), (v,))[1], rtol=1e-13)


def test_linearize_rejects_a_wrong_tangent():
    _, f_jvp = gt.linearize(lambda a, b: a * b, X, V)
    with pytest.raises(TypeError, match=r"linearize\(<lambda>\): expected a tangent"):
        f_jvp(X)
    with pytest.raises(TypeError, match=r"tangent 1 has shape \(3,\)"):
        f_jvp(X, V[:3])


# --- hvp and higher order -----------------------------------------------------------

def test_hvp_matches_finite_differences_of_the_gradient():
    x, v = RNG.uniform(-1, 1, 6), RNG.uniform(-1, 1, 6)
    H = numeric_jacobian(lambda z: numeric_grad(rosen_np, z, 1e-6), x, 1e-4)
    np.testing.assert_allclose(gt.hvp(rosen)(x, v), H @ v, rtol=1e-5, atol=1e-5)


def test_hvp_passes_extra_arguments_like_scipy_hessp():
    def f(x, A):
        return gt.sum((A @ x) ** 2)

    A = RNG.uniform(-1, 1, (5, 4))
    np.testing.assert_allclose(gt.hvp(f)(X, V, A), 2.0 * A.T @ (A @ V), rtol=1e-13)


def test_hvp_errors():
    with pytest.raises(TypeError, match=r"hvp\(rosen\): v must have x's structure"):
        gt.hvp(rosen)(X, V[:3])
    with pytest.raises(TypeError, match=r"hvp\(f_vec\) needs a function returning one float scalar"):
        gt.hvp(f_vec)(X, V)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_nested_grad_jvp_vjp_to_fourth_order(order):
    """The order-th derivative of sin at x, by alternating transforms."""
    x = 0.7
    f = gt.sin
    for k in range(order):
        if k % 3 == 0:
            f = gt.grad(f)
        elif k % 3 == 1:
            f = (lambda g: lambda x: gt.jvp(g, (x,), (gt.ones_like(x),))[1])(f)
        else:
            f = (lambda g: lambda x: gt.vjp(g, x)[1](gt.ones_like(x))[0])(f)
    expected = [np.cos, lambda t: -np.sin(t), lambda t: -np.cos(t), np.sin][order - 1](x)
    assert np.asarray(gt.differentiable(f)(np.array(x))) == pytest.approx(expected, rel=1e-12)


@pytest.mark.native
def test_forward_transforms_compile_to_native_code():
    out, t = gt.jvp(f_vec, (X,), (V,))
    _, pullback = gt.vjp(f_vec, X)
    ct = np.array([1.0, -1.0, 0.5])
    np.testing.assert_allclose(pullback(ct)[0], ct @ numeric_jacobian(f_vec_np, X), rtol=1e-7)
    np.testing.assert_allclose(t, numeric_jacobian(f_vec_np, X) @ V, rtol=1e-7)
    assert pullback._program.compiled is not None
