"""np.diff, np.ediff1d and np.gradient at tiny lengths (an axis of 0, 1 or 2 samples, n larger
than the axis, prepend/append making up the length, edge_order=2): NumPy's values or NumPy's
error, eagerly and staged, with gradients against finite differences (zeros of the input's
shape when the result is empty)."""
import re

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

X13 = np.array([[1.0, 2.5, 4.0]])
X1 = np.array([5.0])
X0 = np.zeros(0)
X2 = np.array([1.0, 4.0])
X03 = np.zeros((0, 3))
X3 = np.array([1.0, 4.0, 9.5])

CASES = {
    "diff_axis0_of_one_row": (lambda t: np.diff(t, axis=0), X13),
    "diff_of_one": (np.diff, X1),
    "diff_of_none": (np.diff, X0),
    "diff_n3_of_two": (lambda t: np.diff(t, n=3), X2),
    "diff_n5_axis1": (lambda t: np.diff(t, n=5, axis=1), X13),
    "diff_n2_axis0_of_one_row": (lambda t: np.diff(t, n=2, axis=0), X13),
    "diff_n4_axis0_of_no_rows": (lambda t: np.diff(t, n=4, axis=0), X03),
    "diff_prepend_scalar_to_one": (lambda t: np.diff(t, prepend=0.5), X1),
    "diff_append_to_none": (lambda t: np.diff(t, append=[1.0, 2.5]), X0),
    "diff_n3_prepend_append": (lambda t: np.diff(t, n=3, prepend=1.0, append=[2.0, 7.5]), X1),
    "diff_prepend_row": (lambda t: np.diff(t, axis=0, prepend=np.full((1, 3), 0.25)), X13),
    "diff_prepend_scalar_to_no_rows": (lambda t: np.diff(t, axis=0, prepend=1.0), X03),
    "diff_n2_prepend_to_no_rows": (lambda t: np.diff(t, n=2, axis=0, prepend=np.ones((2, 3))), X03),
    "ediff1d_of_one": (np.ediff1d, X1),
    "ediff1d_of_none": (np.ediff1d, X0),
    "ediff1d_of_none_with_ends": (lambda t: np.ediff1d(t, to_begin=[1.0, 2.0], to_end=3.0), X0),
    "ediff1d_of_one_with_end": (lambda t: np.ediff1d(t, to_end=[3.0]), X1),
    "ediff1d_of_one_row": (np.ediff1d, X13),
    "gradient_of_two": (np.gradient, X2),
    "gradient_of_one_row_axis1": (lambda t: np.gradient(t, axis=1), X13),
    "gradient_of_no_rows_axis1": (lambda t: np.gradient(t, 0.5, axis=1), X03),
    "gradient_edge_order2_of_three": (lambda t: np.gradient(t, edge_order=2), X3),
    "gradient_edge_order2_spaced": (lambda t: np.gradient(t, 0.3, edge_order=2), np.array([[1.0, 2.0, 4.0, 7.0]] * 2)),
    "gradient_of_one": (np.gradient, X1),
    "gradient_of_none": (np.gradient, X0),
    "gradient_of_one_row": (np.gradient, X13),
    "gradient_edge_order2_of_two": (lambda t: np.gradient(t, edge_order=2), X2),
}


def _numpy(f, x):
    try:
        out = f(x)
    except ValueError as e:
        return "error", str(e)
    return "values", [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]


def _flat(out):
    out = out if isinstance(out, (tuple, list)) else [out]
    return gt.concatenate([gt.reshape(o, (-1,)) for o in out])


@pytest.mark.parametrize("name", list(CASES))
def test_like_numpy_eager_and_staged_with_gradients(name):
    f, x = CASES[name]
    kind, want = _numpy(f, x)
    if kind == "error":
        # NumPy's sentence, then which axis and how many samples it has
        assert want.startswith("Shape of array too small to calculate a numerical gradient")
        message = "gradient: " + re.escape(want.rstrip(".")) + r": axis 0 of the array of shape"
        with pytest.raises(ValueError, match=message):
            f(gt.constant(x))
        with pytest.raises(ValueError, match=message):
            gt.differentiable(f)(x)
        return
    for got in (f(gt.constant(x)), gt.differentiable(f)(x)):
        got = got if isinstance(got, (tuple, list)) else [got]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g = np.asarray(g.numpy() if isinstance(g, gt.Tensor) else g)
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    weights = np.random.default_rng(4).standard_normal(sum(w.size for w in want))
    loss = lambda t: gt.sum(_flat(f(t)) * weights)          # noqa: E731
    staged = gt.grad(loss)(x)
    t = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(t)
        y = loss(t)
    taped = tape.gradient(y, t)
    if weights.size == 0 or x.size == 0:   # nothing reaches x (or x is empty): zeros of its shape
        np.testing.assert_array_equal(staged, np.zeros(x.shape))
        if taped is not None:
            np.testing.assert_array_equal(taped.numpy(), np.zeros(x.shape))
        return
    np.testing.assert_allclose(taped.numpy(), staged, rtol=1e-12)
    check_grads(loss, [x], order=2)


def test_bool_diff_of_one_is_an_empty_bool_array():
    x = np.array([True])
    want = np.diff(x)
    assert want.dtype == np.bool_ and want.shape == (0,)
    for got in (np.diff(gt.constant(x)), gt.differentiable(np.diff)(x)):
        got = np.asarray(got.numpy() if isinstance(got, gt.Tensor) else got)
        assert got.dtype == np.bool_ and got.shape == (0,)


def test_gradient_edge_order_beyond_two_is_refused():
    with pytest.raises(ValueError, match=r"gradient: 'edge_order' must be 1 or 2 .*got 3"):
        np.gradient(gt.constant(np.zeros((4, 4))), edge_order=3)
