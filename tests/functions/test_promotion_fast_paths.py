"""The front end's fast paths give what NumPy's rules give: dtype promotion of every
kind of operand (tensors, pending and abstract tensors, Variables, arrays, Python and
NumPy scalars, lists, array subclasses), and reductions on a recording tape.

References: the promotion functions' own general path (np.result_type and
convert), NumPy's results on the same values, and analytic gradients.
"""
from __future__ import annotations

import numpy as np
import pytest
try:  # NumPy 2 made it public here; NumPy 1.x keeps it in numpy.core
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:
    from numpy.core.numeric import normalize_axis_tuple

import gradtape as gt
from gradtape.functions import _promote
from gradtape.tracer.deferred import PendingTensor
from gradtape.tracer.tensor import Tensor

V = np.array([0.5, 1.5, 2.5])


class _SubArray(np.ndarray):
    """An ndarray subclass: NumPy's rules make it a plain array; no fast path may keep it."""


def _pending(value):
    """A PendingTensor: the result of an op a tape recorded (deferred, not yet computed)."""
    x = gt.constant(value)
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = x * 1.0
    assert type(out) is PendingTensor
    return out


# name -> a maker of the operand; NumPy is given the same value (_raw)
OPERANDS = {
    "f64 tensor": lambda: gt.constant(V),
    "f32 pending": lambda: _pending(V.astype(np.float32)),
    "f32 tensor": lambda: gt.constant(V.astype(np.float32)),
    "f32 variable": lambda: gt.Variable(V.astype(np.float32)),
    "i64 tensor": lambda: gt.constant(np.array([1, 2, 3])),
    "bool tensor": lambda: gt.constant(np.array([True, False, True])),
    "f64 array": lambda: V.copy(),
    "f32 array": lambda: V.astype(np.float32),
    "i32 array": lambda: np.array([1, 2, 3], np.int32),
    "0-d f32 array": lambda: np.array(2.0, np.float32),
    "f64 subarray": lambda: V.copy().view(_SubArray),
    "python float": lambda: 2.0,
    "python int": lambda: 3,
    "python bool": lambda: True,
    "np.float64": lambda: np.float64(2.0),
    "np.float32": lambda: np.float32(2.0),
    "list": lambda: [1.0, 2.0, 3.0],
}


def _raw(x):
    return x.numpy() if isinstance(x, Tensor) else x


def _assert_same_operands(fast, general, given, case):
    """A fast path must hand bind exactly what the general path does."""
    assert len(fast) == len(general), case
    for f, g, x in zip(fast, general, given):
        if isinstance(x, (Tensor, np.ndarray)) and not isinstance(x, _SubArray):
            if isinstance(g, Tensor) or type(g) is np.ndarray:
                assert f is g or f.dtype != x.dtype, case  # unchanged, or a cast both made
        assert type(f) is type(g) and f.dtype == g.dtype, case
        np.testing.assert_array_equal(_raw(f), _raw(g), err_msg=case)


@pytest.mark.parametrize("float_result", [False, True], ids=["promote", "promote_float"])
@pytest.mark.parametrize("x_name", OPERANDS)
def test_promote_pair_gives_numpys_promotion(x_name, float_result):
    promote_n = _promote.promote_float if float_result else _promote.promote
    for y_name in OPERANDS:
        x, y = OPERANDS[x_name](), OPERANDS[y_name]()
        case = f"{x_name} with {y_name}"
        general = _promote._promote_by_numpy((x, y), float_result)
        _assert_same_operands(_promote.promote_pair(x, y, float_result), general, (x, y), case)
        general = _promote._promote_by_numpy((x, y, 1.0), float_result)
        _assert_same_operands(promote_n(x, y, 1.0), general, (x, y, 1.0), case + " and 1.0")


def test_float_operand_gives_promote_float():
    for name, make in OPERANDS.items():
        x = make()
        fast = [_promote.float_operand(x)]
        _assert_same_operands(fast, _promote._promote_by_numpy((x,), True), (x,), name)


@pytest.mark.parametrize("op", ["add", "multiply", "divide", "maximum", "less"])
@pytest.mark.parametrize("x_name", OPERANDS)
def test_binary_ops_match_numpy_dtypes_and_values(op, x_name):
    for y_name in OPERANDS:
        x, y = OPERANDS[x_name](), OPERANDS[y_name]()
        with np.errstate(divide="ignore", invalid="ignore"):  # bools: x / False
            want = getattr(np, op)(_raw(x), _raw(y))
            got = getattr(gt, op)(x, y)
        assert got.dtype == want.dtype, (x_name, y_name)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=f"{x_name} {op} {y_name}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_ops_on_a_tape_and_while_tracing_keep_numpys_dtypes(dtype):
    """The operands the fast paths see in a training loop: pending tensors (a recording
    tape), Variables, arrays on the left, weak scalars; and abstract tensors (tracing)."""
    y = (V * 2).astype(dtype)
    w = gt.Variable(V.astype(dtype))

    def f(w):
        z = y * w
        return [z, w * 2.0, 3 - z, z / 4, z ** 2, np.float64(2.0) * z, y - np.exp(z), np.multiply(y, z)]

    v = V.astype(dtype)
    z = y * v
    want = [z, v * 2.0, 3 - z, z / 4, z ** 2, np.float64(2.0) * z, y - np.exp(z), y * z]
    with gt.GradientTape() as tape:
        got = f(w)
    assert all(type(g) is PendingTensor for g in got)
    for g, e in zip(got, want):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(got[0], w).numpy(), y)

    def traced(v):
        outs = f(v)
        for o, e in zip(outs, want):
            assert o.is_abstract and o.dtype == e.dtype
        return outs

    for g, e in zip(gt.ir.eval_function(gt.make_ir(traced, v), [v]), want):
        np.testing.assert_allclose(g, e, rtol=1e-6)


AXES = [None, 0, 1, -1, -2, (0, 1), (1, -2), ()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("name", ["mean", "sum", "var"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_on_a_tape_match_numpy(name, axis, keepdims, dtype):
    x = (np.arange(1.0, 7.0).reshape(2, 3) % 4).astype(dtype)
    watched = gt.constant(x)
    with gt.GradientTape() as tape:
        if x.dtype.kind == "f":  # a tape watches floats only
            tape.watch(watched)
        got = getattr(gt, name)(watched, axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mean_gradient_is_one_over_n_in_the_input_dtype(dtype):
    x = gt.constant(np.arange(12.0).reshape(3, 4).astype(dtype))
    for axis, n in [(None, 12), (0, 3), (-1, 4)]:
        with gt.GradientTape() as tape:
            tape.watch(x)
            loss = gt.sum(gt.mean(x, axis=axis) * 1.0)
        g = tape.gradient(loss, x)
        assert g.dtype == dtype and loss.dtype == dtype
        np.testing.assert_allclose(g.numpy(), np.full((3, 4), 1.0 / n), rtol=1e-6)


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_normalize_axis_matches_numpy(ndim):
    for axis in [0, -1, ndim - 1, -ndim, np.int64(-1), (0, -1) if ndim > 1 else (0,)]:
        want = tuple(sorted(normalize_axis_tuple(axis, ndim)))
        assert _promote.normalize_axis("f", axis, ndim) == want
    for axis in [ndim, -ndim - 1]:
        with pytest.raises(np.exceptions.AxisError, match=rf"f: axis {axis} is out of bounds .* {ndim}"):
            _promote.normalize_axis("f", axis, ndim)


def test_ufunc_keywords_still_take_the_general_path():
    x = gt.constant(V)
    with pytest.raises(TypeError, match=r"numpy\.multiply: the out= argument is not supported"):
        np.multiply(V, x, out=np.empty(3))
    with pytest.raises(TypeError, match=r"numpy\.mean: the out= argument|mean: the out= argument"):
        np.mean(x, out=np.empty(()))
    np.testing.assert_allclose(np.add.reduce(gt.constant(np.ones((2, 3))), axis=1).numpy(), [3.0, 3.0])
