"""Tensor's + - * / in C (_crecord.binary_operator) against the Python operators they stand in
for: the same results, dtypes and errors for every kind of operand, on a tape and off it."""
import operator

import numpy as np
import pytest

import gradtape as gt
from gradtape.functions import elementwise as ew
from gradtape.tracer import _crecord, dispatch, numpy_dispatch

# Dividing by -0.0 and by arange(3)'s 0 is part of the comparison (both operators warn alike)
pytestmark = pytest.mark.filterwarnings("ignore:divide by zero encountered in divide:RuntimeWarning")

PYTHON = {operator.add: ew.add, operator.sub: ew.subtract, operator.mul: ew.multiply, operator.truediv: ew.divide}
F64 = np.array([1.5, -2.0, 3.25])
OTHERS = [2.0, 3, -0.0, True, np.float64(2.5), np.float32(2.5), F64[::-1].copy(), F64.astype(np.float32),
          np.arange(3), 10 ** 400]


def test_the_operators_are_in_c_with_the_c_bind():
    assert isinstance(gt.Tensor.__dict__["__mul__"], type(_crecord.binary_operator(None, None, False))) == (
        dispatch.bind is _crecord.bind)


def _both_ways(fns, x, other, taped, gradient=False) -> list:
    """For each function, fn(x, other) and fn(other, x) on a tape (watching x if `taped`):
    the error, or the result's type, dtype, shape and bytes (with `gradient`, the recorded
    structure and x's gradient too)."""
    results = []
    for fn in fns:
        for a, b in ((x, other), (other, x)):
            with gt.GradientTape() as tape:
                if taped:
                    tape.watch(x)
                try:
                    y = fn(a, b)
                except Exception as e:  # noqa: BLE001  (the same error both ways)
                    results.append((type(e), str(e)))
                    continue
            result = (type(y), y.dtype, y.shape, y.numpy().tobytes())
            if gradient:
                structure = tape._tape.structure_key()
                grad = tape.gradient(y, x)
                result += (structure, None if grad is None else grad.numpy().tobytes())
            results.append(result)
    return results


@pytest.mark.parametrize("op", list(PYTHON))
@pytest.mark.parametrize("other", OTHERS, ids=repr)
@pytest.mark.parametrize("taped", [False, True])
def test_same_as_the_python_operator(op, other, taped, recording):
    results = _both_ways((op, lambda a, b: PYTHON[op](a, b)), gt.constant(F64), other, taped)
    assert results[:2] == results[2:]


def test_float32_tensors_and_abstract_ones_take_the_python_operator():
    x32 = gt.constant(F64.astype(np.float32))
    assert (x32 * 2.0).dtype == np.float32 and (2 * x32).dtype == np.float32
    f = gt.grad(lambda v: gt.sum(v * v / 2.0 - 1.0 + v))
    np.testing.assert_array_equal(np.asarray(f(F64)), F64 + 1.0)


def test_numpy_ufuncs_of_the_operators_are_in_c_with_the_c_bind():
    method = gt.Tensor.__dict__["__array_ufunc__"]
    assert (type(method) is not type(numpy_dispatch.array_ufunc)) == (dispatch.bind is _crecord.bind)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.true_divide], ids=lambda u: u.__name__)
@pytest.mark.parametrize("other", OTHERS, ids=repr)
def test_numpy_ufuncs_record_what_the_python_path_records(ufunc, other):
    """`array * t` (NumPy asks the tensor's __array_ufunc__) against numpy_dispatch.array_ufunc:
    the same values, errors, recorded structure and gradient."""
    x = gt.constant(F64)
    python = lambda a, b: numpy_dispatch.array_ufunc(x, ufunc, "__call__", a, b)  # noqa: E731
    results = _both_ways((ufunc, python), x, other, True, gradient=True)
    assert results[:2] == results[2:]
    if isinstance(other, np.ndarray) and other.dtype == np.float64:  # the C case: NumPy's numbers
        np.testing.assert_array_equal(ufunc(other, x).numpy(), ufunc(other, F64))
