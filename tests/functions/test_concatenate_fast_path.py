"""concatenate's fast path for tensors of one dtype (functions/shape.py, `_concatenate_tensors`)
against its general path: the same recorded structure and IR, NumPy's values, and every case it
must leave to the general path (other dtypes, arrays, bad shapes) answered there, errors included."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.functions import shape as shape_functions

A = np.arange(12.0).reshape(3, 4)
B = np.arange(8.0).reshape(2, 4) - 3.5
C = np.arange(6.0).reshape(3, 2) * 0.25

CASES = [((A, B), 0), ((A, B, A), -2), ((A, C), 1), ((A, C, A), -1)]


def _general(monkeypatch):
    monkeypatch.setattr(shape_functions, "_concatenate_tensors", lambda arrays, axis: None)


@pytest.mark.parametrize("arrays, axis", CASES)
def test_records_and_traces_what_the_general_path_does(arrays, axis, monkeypatch):
    def recorded():
        xs = [gt.Variable(a) for a in arrays]
        with gt.GradientTape() as tape:
            y = gt.concatenate([gt.sin(x) for x in xs], axis=axis)
            loss = gt.sum(y * y)
        key = tape._tape.structure_key()
        grads = tape.gradient(loss, xs)
        return key, y.numpy(), [g.numpy() for g in grads]

    def traced():
        return str(gt.make_ir(lambda *xs: gt.concatenate(list(xs), axis=axis), *arrays))

    assert shape_functions._concatenate_tensors([gt.constant(a) for a in arrays], axis) is not None
    fast = recorded(), traced()
    _general(monkeypatch)
    general = recorded(), traced()
    assert fast[0][0] == general[0][0] and fast[1] == general[1]
    np.testing.assert_array_equal(fast[0][1], np.concatenate([np.sin(a) for a in arrays], axis=axis))
    for g, a in zip(fast[0][2], arrays):
        np.testing.assert_allclose(g, 2 * np.sin(a) * np.cos(a), rtol=1e-15)


def test_mixed_dtypes_and_arrays_take_the_general_path():
    x32 = gt.constant(A.astype(np.float32))
    assert shape_functions._concatenate_tensors([x32, gt.constant(B)], 0) is None
    assert shape_functions._concatenate_tensors([gt.constant(A), B], 0) is None
    assert shape_functions._concatenate_tensors((gt.constant(A), gt.constant(B)), np.int64(0)) is None
    y = gt.concatenate([x32, gt.constant(B)])
    assert y.dtype == np.float64  # promoted as NumPy does
    np.testing.assert_array_equal(y.numpy(), np.concatenate([A.astype(np.float32), B]))


@pytest.mark.parametrize("arrays, axis, message", [
    ((A, C), 0, "all input shapes must match except along axis 0"),
    ((A, B), 1, "all input shapes must match except along axis 1"),
    ((A, np.ones(4)), 0, "all input shapes must match"),
])
def test_bad_shapes_get_the_general_paths_errors(arrays, axis, message):
    with pytest.raises(ValueError, match=message):
        gt.concatenate([gt.constant(a) for a in arrays], axis=axis)


def test_an_axis_out_of_range_gets_the_general_paths_error():
    with pytest.raises(Exception, match="axis"):
        gt.concatenate([gt.constant(A), gt.constant(A)], axis=2)
