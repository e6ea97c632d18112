"""np.add.at (and subtract, multiply, minimum, maximum .at) and np.put on tensors do what
t[idx] = v does (the tensor takes the updated value); into a NumPy array, a tensor a tape
differentiates raises ConstantConversionError, as out[idx] = t does."""
import numpy as np
import pytest

import gradtape as gt

UFUNCS = [np.add, np.subtract, np.multiply, np.minimum, np.maximum]


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_ufunc_at_on_a_tensor_matches_numpy_on_an_array(ufunc):
    x, idx, v = np.array([1.0, -2.0, 3.0, 0.5]), np.array([0, 2, 0, 3]), np.array([2.0, -1.0, 4.0, 0.25])
    t, want = gt.constant(x), x.copy()
    assert ufunc.at(t, idx, v) is None
    ufunc.at(want, idx, v)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-15)


def test_ufunc_at_on_the_tape_differentiates():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * 1.0
        np.multiply.at(y, [0, 0], x[1])  # y = [x0 x1^2, x1]
        loss = gt.sum(y)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), [4.0, 2 * 1.0 * 2.0 + 1.0])


def test_other_ufunc_methods_at_say_what_to_write():
    t = gt.constant([1.0, 2.0])
    with pytest.raises(TypeError, match=r"t = t\.at\[idx\]\.set\(np\.power\(t\[idx\], v\)\)"):
        np.power.at(t, [0], 2.0)


def test_put_on_a_tensor_matches_numpy():
    x = np.arange(6.0).reshape(2, 3)
    t, want = gt.constant(x), x.copy()
    np.put(t, [5, 0, 3], [10.0, 20.0])  # v repeats: 10, 20, 10
    np.put(want, [5, 0, 3], [10.0, 20.0])
    np.testing.assert_array_equal(t.numpy(), want)


def test_into_a_numpy_array_an_untracked_tensor_converts_and_a_tracked_one_raises():
    a = np.zeros(3)
    np.add.at(a, [0, 0], gt.constant([1.0, 2.0]))
    np.put(a, [2], gt.constant([5.0]))
    np.testing.assert_array_equal(a, [3.0, 0.0, 5.0])
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(gt.ConstantConversionError):
            np.add.at(a, [0, 1], x)
        with pytest.raises(gt.ConstantConversionError):
            np.put(a, [0, 1], x)
        with pytest.raises(gt.ConstantConversionError):  # what out[idx] = t does
            a[:2] = x
    np.testing.assert_array_equal(a, [3.0, 0.0, 5.0])


def _scatter_program(x):
    """A NumPy program that accumulates into a preallocated array with np.add.at and np.put."""
    out = np.zeros_like(x)  # a tensor when x is one
    np.add.at(out, [0, 2, 0], x[:3] ** 2)  # repeated position 0 accumulates
    np.put(out, [3], np.sin(x[3]) * x[0])
    return np.sum(out * x)


def _scatter_reference(x):
    out = np.zeros_like(x)
    np.add.at(out, [0, 2, 0], x[:3] ** 2)
    np.put(out, [3], np.sin(x[3]) * x[0])
    return np.sum(out * x)


def test_add_at_and_put_staged_on_the_tape_and_to_second_order():
    from gradtape.testing import check_grads

    x = np.array([0.7, -1.3, 0.4, 2.1])
    assert float(gt.differentiable(_scatter_program)(x)) == pytest.approx(_scatter_reference(x), rel=1e-14)
    staged = gt.grad(_scatter_program)(x)
    t = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(t)
        loss = _scatter_program(t)
    np.testing.assert_allclose(tape.gradient(loss, t).numpy(), staged, rtol=1e-13)
    check_grads(_scatter_program, [x], order=2)  # finite differences, both modes
