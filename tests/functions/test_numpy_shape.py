"""NumPy's shape functions on tensors (issue 15 point 3): gradients on the eager tape
and staged against the transposed NumPy operation, and bad input raising NumPy's
exception type with a message naming the function and the shapes. Values, higher
derivatives, batching and native code are in the op spec table (tests/ir/specs_shape.py)."""
import numpy as np
import pytest

import gradtape as gt

X = np.arange(12.0).reshape(3, 4) / 5.0
W = np.random.default_rng(0).standard_normal((3, 4))


def _tape_gradient(f, x, w):
    x = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(f(x) * w)
    return tape.gradient(y, x).numpy()


def _staged_gradient(f, x, w):
    return np.asarray(gt.grad(lambda x: np.sum(f(x) * w))(x))


def _unsort(w, order, axis):
    """w's entries sent back to the positions `order` took them from (the transposed gather)."""
    out = np.zeros_like(w)
    np.put_along_axis(out, order, w, axis)
    return out


# (f, the gradient of sum(f(x) * w) with respect to x, written with NumPy)
LINEAR = {
    "roll": (lambda x: np.roll(x, 1, axis=1), lambda w: np.roll(w, -1, axis=1)),
    "flip": (lambda x: np.flip(x), lambda w: np.flip(w)),
    "rot90": (lambda x: np.rot90(x).T, lambda w: np.rot90(w.T, -1)),
    "tril": (lambda x: np.tril(x, 1), lambda w: np.tril(w, 1)),
    "sort": (lambda x: np.sort(x, axis=0), lambda w: _unsort(w, np.argsort(X, axis=0), 0)),
    "sort_flat": (lambda x: np.sort(x, axis=None).reshape(3, 4),
                  lambda w: _unsort(w.ravel(), np.argsort(X, axis=None), 0).reshape(3, 4)),
    "vstack_split": (lambda x: np.vstack(np.split(x, 3)[::-1]), lambda w: np.vstack(np.split(w, 3)[::-1])),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
@pytest.mark.parametrize("gradient", [_tape_gradient, _staged_gradient], ids=["tape", "staged"])
def test_gradient_is_the_transposed_operation(name, gradient):
    f, transposed = LINEAR[name]
    np.testing.assert_allclose(gradient(f, X, W), transposed(W), rtol=1e-14)


@pytest.mark.parametrize("gradient", [_tape_gradient, _staged_gradient], ids=["tape", "staged"])
def test_repeat_and_tile_gradients_add_the_copies(gradient):
    w = np.arange(24.0).reshape(3, 8)
    got = gradient(lambda x: np.repeat(x, 2, axis=1), X, w)
    np.testing.assert_allclose(got, w[:, 0::2] + w[:, 1::2], rtol=1e-14)
    got = gradient(lambda x: np.tile(x, 2), X, w)
    np.testing.assert_allclose(got, w[:, :4] + w[:, 4:], rtol=1e-14)


def test_kron_gradient_on_the_tape():
    b = np.array([[1.0, -2.0], [0.5, 3.0]])
    w = np.random.default_rng(1).standard_normal((6, 8))
    got = _tape_gradient(lambda x: np.kron(x, b), X, w)
    # d/dx[i, j] of sum(kron(x, b) * w) = sum(b * block (i, j) of w)
    blocks = w.reshape(3, 2, 4, 2).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(got, np.einsum("ijkl,kl->ij", blocks, b), rtol=1e-13)


def test_tril_keeps_inf_above_the_diagonal_out():
    x = np.array([[1.0, np.inf], [2.0, 3.0]])
    np.testing.assert_array_equal(np.tril(gt.constant(x)).numpy(), np.tril(x))


def test_split_returns_a_list_like_numpy():
    pieces = np.array_split(gt.constant(np.arange(7.0)), 3)
    assert isinstance(pieces, list)
    assert [p.shape for p in pieces] == [(3,), (2,), (2,)]


BAD = [
    (lambda t: np.split(t, 5, axis=1), ValueError,
     "split: array split does not result in an equal division: axis 1 of shape (3, 4)"),
    (lambda t: np.array_split(t, 0), ValueError, "array_split: number of sections must be larger than 0"),
    (lambda t: np.vsplit(t[0], 2), ValueError, "vsplit only works on arrays of 2 or more dimensions, got shape (4,)"),
    (lambda t: np.hsplit(t[0, 0], 2), ValueError, "hsplit only works on arrays of 1 or more dimensions"),
    (lambda t: np.repeat(t, [1, 2], axis=0), ValueError,
     "repeat: repeats of shape (2,) do not match axis 0 of length 3 (tensor of shape (3, 4))"),
    (lambda t: np.repeat(t, -1), ValueError, "repeat: repeats may not contain negative values"),
    (lambda t: np.tile(t, (2, -1)), ValueError, "tile: reps must be non-negative, got (2, -1)"),
    (lambda t: np.rot90(t, 1, (0, -2)), ValueError, "rot90: axes must be different"),
    (lambda t: np.rot90(t[0]), ValueError, "rot90: input must be >= 2-d, got shape (4,)"),
    (lambda t: np.fliplr(t[0]), ValueError, "fliplr: input must be >= 2-d, got shape (4,)"),
    (lambda t: np.flip(t, 2), np.exceptions.AxisError, "flip: axis 2 is out of bounds"),
    (lambda t: np.roll(t, (1, 2), axis=(0, 1, 1)), ValueError,
     "roll: 'shift' (1, 2) and 'axis' (0, 1, 1) should be scalars or 1-d sequences"),
    (lambda t: np.diagonal(t, 0, 1, -1), ValueError, "diagonal: axis1 and axis2 cannot be the same"),
    (lambda t: np.take_along_axis(t, np.zeros(3, int), 1), ValueError,
     "take_along_axis: `indices` and `arr` must have the same number of dimensions, got indices of "
     "shape (3,) and arr of shape (3, 4)"),
    (lambda t: np.searchsorted(t[0], 1.0, side="middle"), ValueError,
     "searchsorted: side must be 'left' or 'right', got 'middle'"),
    (lambda t: np.linspace(t[0, 0], t[0, 1], -1), ValueError,
     "linspace: number of samples, -1, must be non-negative"),
    (lambda t: np.meshgrid(t[0], indexing="xx"), ValueError, "meshgrid: valid values for `indexing`"),
    (lambda t: np.partition(t, 4), ValueError, "partition: kth(=4) out of bounds (4) for axis 1 of shape (3, 4)"),
    (lambda t: np.argpartition(t, -5, axis=1), ValueError, "argpartition: kth(=-5) out of bounds (4)"),
    (lambda t: np.vstack([t, t[:, :2]]), ValueError,
     "concatenate: all input shapes must match except along axis 0, got (3, 4), (3, 2)"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_raises_numpys_exception_with_the_shapes(case):
    f, error, message = BAD[case]
    with pytest.raises(error) as info:
        f(gt.constant(X))
    assert message in str(info.value)
    with pytest.raises(error):  # NumPy agrees that it is an error, of that type
        f(X)


def test_a_fractional_count_is_a_type_error():
    # NumPy's roll happens to truncate a float shift; a count must be an integer here.
    with pytest.raises(TypeError, match="roll: `shift` must be integers, got array"):
        np.roll(gt.constant(X), 1.5)


@pytest.mark.parametrize("gradient", [_tape_gradient, _staged_gradient], ids=["tape", "staged"])
def test_linspace_gradient_in_both_end_points(gradient):
    def f(x):
        return np.linspace(x[:, 0], x[:, 1], 4, axis=1)

    w = W.copy()
    t = np.linspace(0.0, 1.0, 4)
    expected = np.zeros_like(X)
    expected[:, 0] = w @ (1 - t)
    expected[:, 1] = w @ t
    np.testing.assert_allclose(gradient(f, X, w), expected, rtol=1e-13)


def test_sort_and_argsort_put_nan_last_staged_as_numpy():
    x = np.array([[2.0, np.nan, -1.0, 2.0, 0.0], [np.nan, 1.0, np.nan, 1.0, -3.0]])
    for f, reference in ((lambda t: np.sort(t), np.sort(x)),
                         (lambda t: np.argsort(t), np.argsort(x, kind="stable"))):
        staged = gt.differentiable(f)(x)
        np.testing.assert_array_equal(np.asarray(staged), reference)
        np.testing.assert_array_equal(f(gt.constant(x)).numpy(), reference)


def test_integer_results_get_no_gradient_and_nonzero_needs_values():
    x = gt.constant(X)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.argsort(x) * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.argsort(X))
    assert np.nonzero(gt.constant(X > 1.0))[0].dtype == np.int64
    with pytest.raises(gt.ConcretizationError, match=r"nonzero: the number of non-zero elements of an "
                       r"abstract tensor float64\[3, 4\] is not known while tracing"):
        gt.grad(lambda x: np.sum(x[np.nonzero(x)]))(X)


def test_argpartition_partitions_like_numpy():
    x = np.random.default_rng(2).standard_normal((3, 6))
    for kth in (0, 3, (1, 4)):
        order = np.argpartition(gt.constant(x), kth, axis=1).numpy()
        parted = np.take_along_axis(x, order, axis=1)
        reference = np.partition(x, kth, axis=1)
        for k in np.atleast_1d(kth):
            np.testing.assert_array_equal(parted[:, k], reference[:, k])
            np.testing.assert_array_equal(np.sort(parted[:, :k]), np.sort(reference[:, :k]))
