"""The public reductions and nn composites: values and dtypes against NumPy,
NumPy dispatch and Tensor methods, gradients under GradientTape, numerical
stability at |x| = 1000, and error messages.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer.tensor import Tensor

X = np.random.default_rng(1).standard_normal((2, 3, 4))
AXES = [None, 0, -1, 1, (0, 2), (-1, 0), (0, 1, 2), ()]


def _np(name):
    return getattr(np, name)


# --- values against NumPy ------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "max", "amax", "min", "amin", "prod"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_values_match_numpy(name, axis, keepdims):
    got = getattr(gt, name)(gt.constant(X), axis=axis, keepdims=keepdims)
    want = _np(name)(X, axis=axis, keepdims=keepdims)
    assert isinstance(got, Tensor)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)


@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_var_std_ddof(ddof):
    for axis in [None, 1, (0, 2)]:
        np.testing.assert_allclose(gt.var(X, axis=axis, ddof=ddof).numpy(), np.var(X, axis=axis, ddof=ddof))
        np.testing.assert_allclose(gt.std(X, axis=axis, ddof=ddof).numpy(), np.std(X, axis=axis, ddof=ddof))
    np.testing.assert_allclose(gt.var(X, correction=1).numpy(), np.var(X, ddof=1))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64", "uint8", "uint32", "float32", "float64"])
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "max", "min"])
def test_result_dtypes_match_numpy(name, dtype):
    x = (np.arange(1, 7).reshape(2, 3) % 4).astype(dtype)
    got = getattr(gt, name)(x, axis=0)
    want = _np(name)(x, axis=0)
    assert got.dtype == want.dtype, (name, dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_sum_with_dtype_argument():
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    got = gt.sum(x, axis=1, dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), [3.0, 12.0])
    assert gt.mean(x, dtype="float32").dtype == np.float32


def test_scalars_and_lists():
    assert gt.sum(3.0).numpy() == 3.0
    assert gt.max([1, 5, 2]).numpy() == 5
    assert gt.mean([[1, 2], [3, 4]], axis=0).tolist() == [2.0, 3.0]


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, -3])
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_values_match_numpy(name, axis, keepdims):
    got = getattr(gt, name)(gt.constant(X), axis=axis, keepdims=keepdims)
    want = _np(name)(X, axis=axis, keepdims=keepdims)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_arg_first_wins_ties():
    x = np.array([[1.0, 3.0, 3.0], [0.0, 0.0, 2.0]])
    np.testing.assert_array_equal(gt.argmax(x, axis=1).numpy(), [1, 2])
    np.testing.assert_array_equal(gt.argmin(x, axis=1).numpy(), [0, 0])
    assert gt.argmax(x).numpy() == 1 and gt.argmin(x).numpy() == 3


def test_empty_reductions():
    z = np.zeros((0, 3))
    np.testing.assert_array_equal(gt.sum(z, axis=0).numpy(), np.zeros(3))
    np.testing.assert_array_equal(gt.prod(z, axis=0).numpy(), np.ones(3))
    assert gt.max(z, axis=1).shape == (0,)


# --- NumPy dispatch and Tensor methods -------------------------------------------------

def test_numpy_functions_dispatch_to_gradtape():
    t = gt.constant(X)
    cases = [
        (np.sum(t, axis=0), np.sum(X, axis=0)),
        (np.mean(t, axis=(0, 2)), np.mean(X, axis=(0, 2))),
        (np.var(t, axis=1, ddof=1), np.var(X, axis=1, ddof=1)),
        (np.std(t, keepdims=True), np.std(X, keepdims=True)),
        (np.max(t, 1), np.max(X, 1)),
        (np.amax(t, axis=-1), np.amax(X, axis=-1)),
        (np.min(t), np.min(X)),
        (np.amin(t, axis=(1, 2), keepdims=True), np.amin(X, axis=(1, 2), keepdims=True)),
        (np.prod(t, axis=2), np.prod(X, axis=2)),
        (np.argmax(t, axis=1), np.argmax(X, axis=1)),
        (np.argmin(t), np.argmin(X)),
        (np.clip(t, -0.5, 0.5), np.clip(X, -0.5, 0.5)),
    ]
    for got, want in cases:
        assert isinstance(got, Tensor)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)


def test_ufunc_reduce_dispatch():
    t = gt.constant(X)
    cases = [
        (np.add.reduce(t), np.add.reduce(X)),  # axis defaults to 0, as in NumPy
        (np.add.reduce(t, axis=None), np.add.reduce(X, axis=None)),
        (np.add.reduce(t, 1, keepdims=True), np.add.reduce(X, 1, keepdims=True)),
        (np.multiply.reduce(t, axis=(0, 2)), np.multiply.reduce(X, axis=(0, 2))),
        (np.maximum.reduce(t), np.maximum.reduce(X)),
        (np.minimum.reduce(t, axis=-1), np.minimum.reduce(X, axis=-1)),
    ]
    for got, want in cases:
        assert isinstance(got, Tensor)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    b = np.array([True, True, False])
    assert np.add.reduce(gt.constant(b)).dtype == np.add.reduce(b).dtype


def test_tensor_methods():
    t = gt.constant(X)
    np.testing.assert_allclose(t.sum().numpy(), X.sum())
    np.testing.assert_allclose(t.mean(axis=1, keepdims=True).numpy(), X.mean(axis=1, keepdims=True))
    assert t.mean(axis=1, keepdims=True).shape == (2, 1, 4)
    np.testing.assert_allclose(t.var(ddof=1).numpy(), X.var(ddof=1))
    np.testing.assert_allclose(t.std(axis=0).numpy(), X.std(axis=0))
    np.testing.assert_allclose(t.max(axis=0).numpy(), X.max(axis=0))
    np.testing.assert_allclose(t.min().numpy(), X.min())
    np.testing.assert_allclose(t.prod(axis=(1, 2)).numpy(), X.prod(axis=(1, 2)))
    np.testing.assert_array_equal(t.argmax(axis=1).numpy(), X.argmax(axis=1))
    np.testing.assert_array_equal(t.argmin().numpy(), X.argmin())
    np.testing.assert_allclose(t.clip(-0.1, 0.1).numpy(), X.clip(-0.1, 0.1))


def test_traced_functions_match_eager():
    f = lambda x: gt.logsumexp(x, axis=1) + gt.var(x, axis=1) + x.max(axis=1) * x.prod(axis=1)
    fn = gt.make_ir(f, X)
    (traced,) = gt.ir.eval_function(fn, [X], check_types=True)
    np.testing.assert_allclose(traced, f(gt.constant(X)).numpy(), rtol=1e-13)


# --- gradients under GradientTape -------------------------------------------------------

def _grad(f, x):
    x = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def test_reduction_gradients():
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    np.testing.assert_array_equal(_grad(lambda x: gt.sum(x, axis=1), x).numpy(), np.ones((2, 3)))
    np.testing.assert_allclose(_grad(lambda x: gt.mean(x, axis=0), x).numpy(), np.full((2, 3), 0.5))
    np.testing.assert_allclose(_grad(gt.var, x).numpy(), 2 * (x - x.mean()) / 6)
    np.testing.assert_allclose(
        _grad(lambda x: gt.var(x, axis=1, ddof=1), x).numpy(),
        2 * (x - x.mean(axis=1, keepdims=True)) / 2,
    )
    np.testing.assert_allclose(_grad(gt.std, x).numpy(), (x - x.mean()) / (6 * x.std()))
    np.testing.assert_array_equal(
        _grad(lambda x: gt.max(x, axis=1), x).numpy(), [[0, 0, 1], [0, 1, 0]]
    )
    np.testing.assert_array_equal(
        _grad(lambda x: gt.min(x, axis=0, keepdims=True), x).numpy(), [[0, 1, 0], [1, 0, 1]]
    )
    np.testing.assert_allclose(
        _grad(lambda x: gt.prod(x, axis=0), x).numpy(), [[0.5, 4.0, -1.0], [1.0, -2.0, 3.0]]
    )


def test_max_ties_and_prod_zeros_under_a_tape():
    x = np.array([3.0, 1.0, 3.0, 3.0])
    np.testing.assert_allclose(_grad(gt.max, x).numpy(), [1 / 3, 0, 1 / 3, 1 / 3])
    x = np.array([2.0, 0.0, 5.0])
    np.testing.assert_array_equal(_grad(gt.prod, x).numpy(), [0.0, 10.0, 0.0])


def test_second_order_through_nested_tapes():
    x = gt.constant([0.0, 0.0, 2.0, 3.0])
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.prod(x)
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x).numpy()
    want = np.zeros((4, 4))
    want[0, 1] = want[1, 0] = 6.0
    np.testing.assert_array_equal(h, want)


def test_sigmoid_second_derivative_through_nested_tapes():
    v = np.array([-3.0, 0.0, 1.5])
    x = gt.constant(v)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.sum(gt.sigmoid(x))
        g = inner.gradient(y, x)
    h = outer.gradient(g, x).numpy()
    s = 1 / (1 + np.exp(-v))
    np.testing.assert_allclose(g.numpy(), s * (1 - s), rtol=1e-14)
    np.testing.assert_allclose(h, s * (1 - s) * (1 - 2 * s), rtol=1e-12, atol=1e-15)


def test_nn_gradients():
    v = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]])
    s = np.exp(v) / np.exp(v).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(_grad(lambda x: gt.logsumexp(x, axis=1), v).numpy(), s)
    np.testing.assert_allclose(_grad(gt.logsumexp, v).numpy(), np.exp(v) / np.exp(v).sum())
    w = np.array([1.0, 2.0, -3.0])
    # d/dx sum(w * softmax(x)) = s * (w - sum(w * s)), per row
    got = _grad(lambda x: gt.sum(gt.softmax(x) * w), v).numpy()
    np.testing.assert_allclose(got, s * (w - (w * s).sum(axis=1, keepdims=True)), atol=1e-15)
    got = _grad(lambda x: gt.sum(gt.log_softmax(x) * w), v).numpy()
    np.testing.assert_allclose(got, w - s * w.sum(), atol=1e-15)
    r = np.array([-1.0, 0.0, 2.0])
    sig = 1 / (1 + np.exp(-r))
    np.testing.assert_allclose(_grad(lambda x: gt.sum(gt.sigmoid(x)), r).numpy(), sig * (1 - sig))
    np.testing.assert_allclose(_grad(lambda x: gt.sum(gt.softplus(x)), r).numpy(), sig)
    np.testing.assert_array_equal(_grad(lambda x: gt.sum(gt.relu(x)), r).numpy(), [0.0, 0.0, 1.0])


def test_clip_gradient():
    v = np.array([-2.0, -1.0, 0.3, 1.0, 5.0])
    np.testing.assert_array_equal(_grad(lambda x: gt.sum(gt.clip(x, -1.0, 1.0)), v).numpy(), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(_grad(lambda x: gt.sum(np.clip(x, None, 0.5)), v).numpy(), [1, 1, 1, 0, 0])
    lo, hi = gt.constant(np.full(5, -1.5)), gt.constant(np.full(5, 2.0))
    x = gt.constant(v)
    with gt.GradientTape() as tape:
        tape.watch([lo, hi])
        y = gt.sum(gt.clip(x, lo, hi))
    g_lo, g_hi = tape.gradient(y, [lo, hi])
    np.testing.assert_array_equal(g_lo.numpy(), [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(g_hi.numpy(), [0, 0, 0, 0, 1])


def test_clip_values_like_numpy():
    v = np.array([-2.0, 0.0, np.nan, 3.0])
    np.testing.assert_array_equal(gt.clip(v, -1, 1).numpy(), np.clip(v, -1, 1))
    np.testing.assert_array_equal(gt.clip(v, 1, -1).numpy(), np.clip(v, 1, -1))  # a_min > a_max
    if np.lib.NumpyVersion(np.__version__) >= "2.1.0":  # np.clip's min=/max= keywords came in NumPy 2.1
        np.testing.assert_array_equal(np.clip(gt.constant(v), min=0.0).numpy(), np.clip(v, min=0.0))
    i = np.arange(5)
    assert gt.clip(i, 1, 3).dtype == np.clip(i, 1, 3).dtype
    assert gt.clip(i, 0.5, 3).dtype == np.clip(i, 0.5, 3).dtype
    assert gt.relu(np.array([-1, 2], dtype=np.int32)).dtype == np.int32


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_is_not_differentiable(name):
    x = gt.constant([1.0, 3.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.cast(getattr(gt, name)(x), "float64")
    assert tape.gradient(y, x) is None
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(x) + gt.cast(getattr(gt, name)(x, axis=0), "float64")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.ones(3))


# --- stability at |x| = 1000 -----------------------------------------------------------

BIG = np.array([-1000.0, -1.0, 0.0, 1.0, 1000.0])


def _finite_grad(f, x):
    g = _grad(lambda x: gt.sum(f(x) * gt.constant(np.arange(1.0, 6.0))), x).numpy()
    assert np.all(np.isfinite(g)), g
    return g


def test_softmax_is_stable():
    got = gt.softmax(BIG)
    np.testing.assert_allclose(got.numpy(), [0, 0, 0, 0, 1], atol=1e-300)
    assert np.all(np.isfinite(_finite_grad(gt.softmax, BIG)))
    x = np.array([[1000.0, 1000.0], [-1000.0, -1001.0]])
    np.testing.assert_allclose(gt.softmax(x).numpy(), [[0.5, 0.5], [1 / (1 + np.exp(-1)), 1 / (1 + np.e)]])
    np.testing.assert_allclose(gt.log_softmax(x).numpy(), [[-np.log(2)] * 2, [-np.log1p(np.exp(-1)), -1 - np.log1p(np.exp(-1))]])
    _finite_grad(lambda x: gt.log_softmax(x), BIG)


def test_logsumexp_is_stable():
    np.testing.assert_allclose(gt.logsumexp(BIG).numpy(), 1000.0)
    np.testing.assert_allclose(gt.logsumexp(np.array([1000.0, 1000.0])).numpy(), 1000.0 + np.log(2))
    np.testing.assert_allclose(gt.logsumexp(np.array([-1000.0, -1000.0])).numpy(), -1000.0 + np.log(2))
    g = _grad(gt.logsumexp, BIG).numpy()
    np.testing.assert_allclose(g, [0, 0, 0, 0, 1], atol=1e-300)
    g = _grad(gt.logsumexp, np.array([1000.0, 1000.0])).numpy()
    np.testing.assert_allclose(g, [0.5, 0.5])
    with np.errstate(divide="ignore"):  # log(0), as in NumPy
        assert gt.logsumexp(np.array([-np.inf, -np.inf])).numpy() == -np.inf
    assert gt.logsumexp(np.array([0.0, np.inf])).numpy() == np.inf


def test_sigmoid_and_softplus_are_stable():
    s1 = 1 / (1 + np.exp(-1.0))
    np.testing.assert_allclose(gt.sigmoid(BIG).numpy(), [0.0, 1 - s1, 0.5, s1, 1.0], rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(gt.sigmoid(np.array([-30.0])).numpy(), np.exp(-30) / (1 + np.exp(-30)), rtol=1e-14)
    g = _finite_grad(gt.sigmoid, BIG)
    np.testing.assert_allclose(g[[0, 4]], [0.0, 0.0])
    np.testing.assert_allclose(gt.softplus(BIG).numpy(), np.logaddexp(BIG, 0.0))
    g = _finite_grad(gt.softplus, BIG)
    np.testing.assert_allclose(g, np.arange(1.0, 6.0) * [0.0, 1 - s1, 0.5, s1, 1.0], rtol=1e-15, atol=1e-300)


def test_stable_under_tracing():
    for f in [gt.softmax, gt.log_softmax, gt.logsumexp, gt.sigmoid, gt.softplus]:
        fn = gt.make_ir(lambda x: gt.sum(f(x)), BIG)
        joint, _ = gt.ir.vjp(fn, [0])
        out, g = gt.ir.eval_function(joint, [BIG, np.ones(())])
        assert np.isfinite(out) and np.all(np.isfinite(g)), f.__name__


def test_composite_dtypes():
    x32 = np.array([[1.0, 2.0]], dtype=np.float32)
    for f in [gt.softmax, gt.log_softmax, gt.logsumexp, gt.sigmoid, gt.softplus, gt.relu]:
        assert f(x32).dtype == np.float32, f.__name__
    assert gt.softmax(np.array([1, 2])).dtype == np.float64
    np.testing.assert_allclose(gt.logsumexp(np.ones((2, 3)), axis=(0, 1), keepdims=True).numpy(), [[1 + np.log(6)]])


# --- errors ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "max", "min", "prod", "argmax", "argmin"])
def test_bad_axis_names_the_function(name):
    with pytest.raises(np.exceptions.AxisError, match=rf"^{name}: axis 3 is out of bounds for an array of dimension 3"):
        getattr(gt, name)(X, axis=3)
    with pytest.raises(np.exceptions.AxisError, match=rf"^{name}: axis -4 is out of bounds"):
        getattr(gt, name)(gt.constant(X), axis=-4)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_bad_axis_in_composites(name):
    with pytest.raises(np.exceptions.AxisError, match=rf"^{name}: axis 2 is out of bounds"):
        getattr(gt, name)(np.ones((2, 2)), axis=2)


def test_other_errors():
    with pytest.raises(np.exceptions.AxisError, match="^sum: axis 5"):
        np.sum(gt.constant(X), axis=5)
    with pytest.raises(ValueError, match=r"^mean: repeated axis"):
        gt.mean(X, axis=(0, 0))
    with pytest.raises(TypeError, match=r"^sum: the out= argument is not supported"):
        gt.sum(X, out=np.zeros(()))
    with pytest.raises(ValueError, match=r"^var: ddof and correction"):
        gt.var(X, ddof=1, correction=1)
    with pytest.raises(ValueError, match=r"^clip: at least one of a_min and a_max"):
        gt.clip(X)
    with pytest.raises(ValueError, match=r"^max: zero-size array to reduction operation maximum which has no "
                                         r"identity \(axis 1 of the input of shape \(2, 0\) has length 0\)"):
        gt.max(np.zeros((2, 0)), axis=1)
