"""Tensor's + - * / in C (_crecord.binary_operator) against the Python operators they stand in
for: the same results, dtypes and errors for every kind of operand, on a tape and off it."""
import operator

import numpy as np
import pytest

import gradtape as gt
from gradtape.functions import elementwise as ew
from gradtape.tracer import _crecord, dispatch

# Dividing by -0.0 and by arange(3)'s 0 is part of the comparison (both operators warn alike)
pytestmark = pytest.mark.filterwarnings("ignore:divide by zero encountered in divide:RuntimeWarning")

PYTHON = {operator.add: ew.add, operator.sub: ew.subtract, operator.mul: ew.multiply, operator.truediv: ew.divide}
F64 = np.array([1.5, -2.0, 3.25])
OTHERS = [2.0, 3, -0.0, True, np.float64(2.5), np.float32(2.5), F64[::-1].copy(), F64.astype(np.float32),
          np.arange(3), 10 ** 400]


def test_the_operators_are_in_c_with_the_c_bind():
    assert isinstance(gt.Tensor.__dict__["__mul__"], type(_crecord.binary_operator(None, None, False))) == (
        dispatch.bind is _crecord.bind)


@pytest.mark.parametrize("op", list(PYTHON))
@pytest.mark.parametrize("other", OTHERS, ids=repr)
@pytest.mark.parametrize("taped", [False, True])
def test_same_as_the_python_operator(op, other, taped, recording):
    x = gt.constant(F64)
    results = []
    for fn in (op, lambda a, b: PYTHON[op](a, b)):
        for a, b in ((x, other), (other, x)):
            with gt.GradientTape() as tape:
                if taped:
                    tape.watch(x)
                try:
                    y = fn(a, b)
                except Exception as e:  # noqa: BLE001  (the same error both ways)
                    results.append((type(e), str(e)))
                    continue
            results.append((type(y), y.dtype, y.shape, y.numpy().tobytes()))
    assert results[:2] == results[2:]


def test_float32_tensors_and_abstract_ones_take_the_python_operator():
    x32 = gt.constant(F64.astype(np.float32))
    assert (x32 * 2.0).dtype == np.float32 and (2 * x32).dtype == np.float32
    f = gt.grad(lambda v: gt.sum(v * v / 2.0 - 1.0 + v))
    np.testing.assert_array_equal(np.asarray(f(F64)), F64 + 1.0)
