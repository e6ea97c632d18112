"""Plain NumPy calls on Tensors are recorded like gradtape's own functions;
NumPy functions gradtape does not support fail loudly, naming the function."""
import numpy as np
import pytest

import gradtape as gt


def test_ufuncs_on_tensors_return_tensors_and_are_recorded():
    x = gt.constant([0.5, 1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = np.tanh(x) * np.exp(x) + np.log(x)
    assert isinstance(y, gt.Tensor)
    v = x.numpy()
    np.testing.assert_allclose(y.numpy(), np.tanh(v) * np.exp(v) + np.log(v))
    expected = (1 - np.tanh(v) ** 2) * np.exp(v) + np.tanh(v) * np.exp(v) + 1 / v
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected)


def test_ndarray_on_the_left_dispatches_to_the_tensor():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = np.array([3.0, 4.0]) * x - np.array(1.0)
    assert isinstance(y, gt.Tensor)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 4.0])


def test_where_on_tensors():
    x = gt.constant([-1.0, 0.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = np.where(x > 0, np.log(x), 0.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 0.0, 0.5])


def test_unsupported_numpy_function_is_an_error_naming_it():
    x = gt.constant(np.eye(2))
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"numpy\.linalg\.matrix_rank on Tensors"):
        np.linalg.matrix_rank(x)
    with pytest.raises(TypeError, match=r"numpy\.spacing on Tensors"):
        np.spacing(x)
    with pytest.raises(TypeError, match=r"numpy\.add\.accumulate on Tensors"):
        np.add.accumulate(x)


def test_out_argument_is_rejected():
    x = gt.constant([1.0])
    with pytest.raises(TypeError, match="out= argument is not supported"):
        np.exp(x, out=np.empty(1))


def test_dtype_promotion_follows_numpy():
    f32 = gt.constant(np.ones(2, np.float32))
    assert (f32 * 2.0).dtype == np.float32  # Python scalars are weak
    assert (f32 * np.ones(2)).dtype == np.float64
    assert gt.exp(gt.constant([1, 2])).dtype == np.float64  # ints become float64
    assert (gt.constant([1, 2]) * 2).dtype == np.int64
    assert (gt.constant([1, 2]) / 2).dtype == np.float64
    assert gt.constant(1.5).dtype == np.float64


def test_broadcasting_mismatch_names_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"mul: operands could not be broadcast together with shapes \(3,\) and \(4,\)"):
        gt.constant(np.ones(3)) * gt.constant(np.ones(4))
    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(ValueError, match=r"add: operands could not be broadcast together with shapes \(3,\) and \(2,\)"):
            x + np.ones(2)


def test_python_control_flow_on_a_traced_value_says_what_to_use():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(gt.ConcretizationError, match=r"use gradtape\.where\(cond, x, y\)"):
        gt.make_ir(f, 1.0)
    with pytest.raises(gt.ConcretizationError, match="float"):
        gt.make_ir(lambda x: float(x), 1.0)
