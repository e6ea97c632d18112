"""Reductions and solves over nothing: lstsq of empty systems, logsumexp / softmax / log_softmax
(gradtape's and gradtape.scipy.special's) over empty axes, norms of empty matrices, max/min
with and without initial=. Values are NumPy's and SciPy's (logsumexp of nothing is -inf, a
softmax of nothing is empty), gradients have the operands' (empty) shapes, eagerly and staged;
what NumPy refuses (the max of nothing) raises NumPy's ValueError naming the function."""
import re
import warnings

import numpy as np
import pytest
import scipy.special

import gradtape as gt
import gradtape.scipy.special as gss

pytestmark = pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")

LSTSQ = [((0, 3), (0,)), ((3, 0), (3,)), ((3, 0), (3, 2)), ((0, 0), (0,)), ((0, 3), (0, 2))]


@pytest.mark.parametrize("a_shape, b_shape", LSTSQ, ids=[f"{a}-{b}" for a, b in LSTSQ])
def test_lstsq_of_an_empty_system_is_numpys(a_shape, b_shape):
    a = np.zeros(a_shape)
    b = np.random.default_rng(1).standard_normal(b_shape)
    x, residuals, rank, s = np.linalg.lstsq(a, b)
    for got in (np.linalg.lstsq(gt.constant(a), b), gt.differentiable(lambda t, u: tuple(np.linalg.lstsq(t, u)))(a, b)):
        got = [np.asarray(g.numpy() if isinstance(g, gt.Tensor) else g) for g in got]
        for g, want in zip(got, (x, residuals, rank, s)):
            assert g.shape == np.shape(want)
            np.testing.assert_allclose(g, want, rtol=1e-12)

    def loss(t, u):
        solution, res, _, _ = np.linalg.lstsq(t, u)
        return gt.sum(solution) + gt.sum(res)

    ga, gb = gt.grad(loss, argnums=(0, 1))(a, b)
    assert ga.shape == a_shape and gb.shape == b_shape
    # with no unknowns (n = 0) the residual is |b|^2; with no equations (m = 0) there is no b
    np.testing.assert_allclose(gb, 2 * b if a_shape[1] == 0 and a_shape[0] > 0 else np.zeros(b_shape))
    ta, tb = gt.constant(a), gt.constant(b)
    with gt.GradientTape() as tape:
        tape.watch([ta, tb])
        y = loss(ta, tb)
    tape_a, tape_b = tape.gradient(y, [ta, tb])
    np.testing.assert_allclose(tape_b.numpy(), gb)
    assert tape_a.shape == a_shape


EMPTY = [((0,), None), ((0,), 0), ((2, 0), 1), ((2, 0), -1), ((0, 3), 0), ((0, 3), None), ((2, 0, 3), (0, 2))]


def _reference_logsumexp(x, axis):
    """log(sum(exp(x))) in NumPy; SciPy's too where it takes the input (SciPy 1.17 raises
    IndexError for an empty array of 2+ dimensions with axis=None or a tuple; SciPy before 1.15
    raises ValueError for every empty input, taking the max of nothing)."""
    with np.errstate(divide="ignore"):
        want = np.log(np.sum(np.exp(x), axis=axis))
    if x.ndim == 1 or isinstance(axis, int):
        try:
            scipys = scipy.special.logsumexp(x, axis=axis)
        except ValueError as e:
            assert "zero-size array to reduction operation maximum" in str(e)
        else:
            np.testing.assert_array_equal(scipys, want)
    return want


@pytest.mark.parametrize("shape, axis", EMPTY, ids=[f"{s}-{a}" for s, a in EMPTY])
def test_logsumexp_of_nothing_is_minus_inf_and_softmax_of_nothing_is_empty(shape, axis):
    x = np.zeros(shape)
    want = _reference_logsumexp(x, axis)
    assert np.all(want == -np.inf)
    for f in (lambda t: gt.logsumexp(t, axis=axis), lambda t: gss.logsumexp(t, axis=axis),
              lambda t: gss.logsumexp(t, axis=axis, b=np.ones(shape))):
        np.testing.assert_array_equal(f(gt.constant(x)).numpy(), want)
        np.testing.assert_array_equal(gt.differentiable(f)(x), want)
        assert gt.grad(lambda t: gt.sum(f(t)))(x).shape == shape
    kept = gt.logsumexp(gt.constant(x), axis=axis, keepdims=True)
    assert kept.shape == np.sum(x, axis=axis, keepdims=True).shape
    value, sign = gss.logsumexp(gt.constant(x), axis=axis, return_sign=True)
    np.testing.assert_array_equal(value.numpy(), want)
    np.testing.assert_array_equal(sign.numpy(), np.zeros(np.shape(want)))  # the sign of a sum of nothing
    axis_ = -1 if axis is None else axis
    for f in (lambda t: gt.softmax(t, axis=axis_), lambda t: gt.log_softmax(t, axis=axis_),
              lambda t: gss.softmax(t, axis=axis), lambda t: gss.log_softmax(t, axis=axis)):
        assert f(gt.constant(x)).shape == shape
        assert np.shape(gt.differentiable(f)(x)) == shape
        assert gt.grad(lambda t: gt.sum(f(t)))(x).shape == shape
        t = gt.constant(x)
        with gt.GradientTape() as tape:
            tape.watch(t)
            y = gt.sum(f(t))
        assert tape.gradient(y, t).shape == shape


def test_softmax_over_an_empty_axis_of_a_non_empty_array_leaves_the_other_groups_alone():
    x = np.random.default_rng(2).standard_normal((0, 3))
    np.testing.assert_array_equal(gt.logsumexp(gt.constant(x), axis=0).numpy(), [-np.inf] * 3)
    y = np.random.default_rng(2).standard_normal((2, 3))
    np.testing.assert_allclose(gt.logsumexp(gt.constant(y), axis=1).numpy(), scipy.special.logsumexp(y, axis=1),
                               rtol=1e-14)


@pytest.mark.parametrize("f, ufunc", [(np.max, "maximum"), (np.amax, "maximum"), (np.min, "minimum"),
                                      (gt.max, "maximum"), (gt.min, "minimum")])
def test_max_of_nothing_raises_numpys_valueerror_naming_the_function(f, ufunc):
    x = np.zeros((0, 3))
    with pytest.raises(ValueError, match=f"zero-size array to reduction operation {ufunc} which has no identity"):
        f(x, axis=0)
    name = "max" if ufunc == "maximum" else "min"
    message = re.escape(f"{name}: zero-size array to reduction operation {ufunc} which has no identity (axis 0 of "
                        "the input of shape (0, 3) has length 0)")
    with pytest.raises(ValueError, match=message):
        f(gt.constant(x), axis=0)
    with pytest.raises(ValueError, match=message):
        gt.differentiable(lambda t: f(t, axis=0))(x)
    with pytest.raises(ValueError, match=re.escape(f"{name}: zero-size array")):
        f(gt.constant(np.zeros((2, 0))))                   # axis=None


@pytest.mark.parametrize("f", [np.max, np.min])
def test_initial_is_numpys(f):
    rng = np.random.default_rng(3)
    for x, axis, initial in ((np.zeros((0, 3)), 0, -1.5), (rng.standard_normal((2, 3)), 1, 0.25),
                             (rng.standard_normal((2, 3)), None, -0.5), (np.zeros((2, 0)), None, 2.0)):
        want = f(x, axis=axis, initial=initial)
        np.testing.assert_array_equal(f(gt.constant(x), axis=axis, initial=initial).numpy(), want)
        np.testing.assert_array_equal(gt.differentiable(lambda t: f(t, axis=axis, initial=initial))(x), want)
    x = np.array([[1.0, 5.0], [3.0, 2.0]])
    g = gt.grad(lambda t: gt.sum(f(t, axis=1, initial=4.0)))(x)     # rows where initial wins get no gradient
    np.testing.assert_array_equal(g, [[0.0, 1.0], [0.0, 0.0]] if f is np.max else [[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"initial must be a scalar, got an array of shape \(2,\)"):
        f(gt.constant(x), axis=1, initial=[1.0, 2.0])


def _reference_norm(x, ord, axis):
    """NumPy's norm, with NumPy 2.1's answer where NumPy 2.0 refuses: 2.0 raises for a norm that
    is a max of absolute values over nothing (ord 1, 2, inf), 2.1 and later return 0, the
    norm of a zero-size matrix, and gradtape follows them."""
    try:
        return np.linalg.norm(x, ord, axis=axis)
    except ValueError as e:
        if "zero-size array to reduction operation maximum" not in str(e):
            raise
        assert ord in (1, 2, np.inf) and np.lib.NumpyVersion(np.__version__) < "2.1.0"
        return np.zeros(x.shape[:-2] if axis is not None or x.ndim == 2 else x.shape[:-1])


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3)])
@pytest.mark.parametrize("ord", [None, "fro", 1, -1, 2, -2, np.inf, -np.inf, "nuc"])
def test_norms_of_empty_matrices_are_numpys(shape, ord):
    x = np.zeros(shape)
    axis = (-2, -1) if len(shape) == 3 else None
    try:
        want = _reference_norm(x, ord, axis)
    except ValueError as e:
        assert "zero-size array to reduction operation minimum" in str(e)
        with pytest.raises(ValueError, match=r"norm: zero-size array to reduction operation minimum which has no "
                                             r"identity"):
            np.linalg.norm(gt.constant(x), ord, axis=axis)
        return
    np.testing.assert_array_equal(np.linalg.norm(gt.constant(x), ord, axis=axis).numpy(), want)
    np.testing.assert_array_equal(gt.differentiable(lambda t: np.linalg.norm(t, ord, axis=axis))(x), want)


def test_vector_inf_norm_of_nothing_is_zero():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _reference_norm(np.zeros(0), np.inf, None) == 0.0
    assert np.linalg.norm(gt.constant(np.zeros(0)), np.inf).numpy() == 0.0
    with pytest.raises(ValueError, match="norm: zero-size array to reduction operation minimum"):
        np.linalg.norm(gt.constant(np.zeros(0)), -np.inf)
