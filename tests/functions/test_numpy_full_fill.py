"""NumPy's np.full and np.full_like with a tensor fill value (issue 26, point 3): numpy.full and
numpy.full_like are wrapped (gradtape/functions/creation.py) so that a tensor fill value gives a
tensor, differentiable in the fill value, on the tape and staged; every other call is NumPy's own.
(Derivatives, vmap and native code: the op spec full_tensor_fill, tests/ir/specs_numpy_more.py.)"""
import numpy as np
import pytest

import gradtape as gt


def test_a_tensor_fill_value_is_differentiable_on_the_tape():
    x = gt.constant(2.5)
    with gt.GradientTape() as tape:
        tape.watch(x)
        full = np.full((2, 3), x * 2.0)
        like = np.full_like(np.zeros(4), x)
        as_int = np.full_like(np.zeros(2, np.int64), x)  # the prototype's dtype: an integer, no derivative
        keyword = np.full(shape=(2,), fill_value=x, dtype=np.float32)
        y = gt.sum(full) + gt.sum(like) + gt.sum(as_int) + gt.sum(keyword)
    assert isinstance(full, gt.Tensor) and full.shape == (2, 3) and full.dtype == np.float64
    np.testing.assert_array_equal(full.numpy(), np.full((2, 3), 5.0))
    np.testing.assert_array_equal(like.numpy(), np.full(4, 2.5))
    assert as_int.dtype == np.int64 and as_int.numpy().tolist() == [2, 2]
    assert keyword.dtype == np.float32
    assert float(tape.gradient(y, x)) == 6 * 2.0 + 4 + 0 + 2


def test_a_tensor_fill_value_is_traced_in_a_staged_function():
    def f(v):
        return gt.sum(np.full((2, 2), v[0]) * np.full_like(np.ones(2), v[1]) + np.full(2, [v[1], v[0]]))

    v = np.array([3.0, -1.5])
    assert float(gt.differentiable(f)(v)) == pytest.approx(4 * 3.0 * -1.5 + 2 * 1.5)
    np.testing.assert_allclose(np.asarray(gt.grad(f)(v)), [4 * -1.5 + 2.0, 4 * 3.0 + 2.0])


def test_other_calls_are_numpys_own():
    assert np.full.__wrapped__ is not np.full and np.full.__name__ == "full"
    for got, want in [(np.full((2, 2), 3), np.full.__wrapped__((2, 2), 3)),
                      (np.full(3, 1.5, dtype=np.float32, order="F"), np.full.__wrapped__(3, 1.5, np.float32)),
                      (np.full_like(np.ones((2, 3), order="F"), 7), np.full_like.__wrapped__(np.ones((2, 3)), 7)),
                      (np.full(2, np.array([1, 2])), np.array([1, 2]))]:
        assert type(got) is np.ndarray and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert np.full_like(np.ones((2, 3), order="F"), 7).flags.f_contiguous
    # a tensor prototype dispatches as before
    assert isinstance(np.full_like(gt.constant([1.0, 2.0]), 3.0), gt.Tensor)
