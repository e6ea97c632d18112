"""Values that were wrong without any error (issue 14), each checked against NumPy eagerly, in the
reference interpreter and in compiled code, with gradients against their closed forms."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.ops.indexing import scatter_add_p
from gradtape.runtime import config as runtime_config

from .three_ways import three_ways

nan, inf = np.nan, np.inf


@pytest.fixture(autouse=True)
def _compile_in_the_caller(monkeypatch):
    monkeypatch.setattr(runtime_config, "async_compile", False)
    monkeypatch.setattr(runtime_config, "compile_errors", "raise")


def _assert_all_equal(results, want):
    for how, got in zip(("eager", "interpreted", "compiled"), results):
        np.testing.assert_array_equal(got, want, err_msg=how)


# --- trace, diag, einsum's repeated indices: inf or NaN off the diagonal stays there ---------------

WITH_INF_AND_NAN = np.array([[1.0, nan, 5.0], [inf, 2.0, -inf], [nan, inf, 3.0]])


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2])
def test_trace_ignores_inf_and_nan_off_its_diagonal(offset):
    want = np.trace(WITH_INF_AND_NAN, offset)
    _assert_all_equal(three_ways(lambda a: gt.trace(a, offset), WITH_INF_AND_NAN), want)


def test_trace_of_the_issue_matrix_is_three():
    _assert_all_equal(three_ways(gt.trace, np.array([[1.0, nan], [inf, 2.0]])), 3.0)


def test_trace_over_other_axes_ignores_inf_off_the_diagonal():
    a = np.arange(24.0).reshape(3, 4, 2)
    a[0, 1, 1] = inf
    a[2, 0, 0] = nan
    want = np.trace(a, 1, 0, 2)
    _assert_all_equal(three_ways(lambda x: gt.trace(x, 1, 0, 2), a), want)


@pytest.mark.parametrize("k", [-4, -1, 0, 1, 3])
def test_diag_of_a_vector_has_zeros_off_the_diagonal_next_to_inf_and_nan(k):
    v = np.array([1.0, inf, nan, -inf])
    _assert_all_equal(three_ways(lambda x: gt.diag(x, k), v), np.diag(v, k))


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 5])
def test_diag_of_a_matrix_reads_only_its_diagonal(k):
    a = np.arange(12.0).reshape(3, 4)
    a[0, 1], a[2, 0], a[1, 3] = inf, nan, -inf
    _assert_all_equal(three_ways(lambda x: gt.diag(x, k), a), np.diag(a, k))


@pytest.mark.parametrize("subscripts", ["ii", "ii->i", "iji->j", "iij->ji", "ii,i->i"])
def test_einsum_repeated_indices_ignore_inf_and_nan_off_the_diagonal(subscripts):
    a = np.arange(27.0).reshape(3, 3, 3)
    a[0, 1, 2], a[1, 0, 0], a[2, 1, 0] = inf, nan, -inf
    operands = {"ii": [a[0]], "ii->i": [a[0]], "iji->j": [a], "iij->ji": [a], "ii,i->i": [a[0], a[1, 1]]}[subscripts]
    want = np.einsum(subscripts, *operands)
    _assert_all_equal(three_ways(lambda *xs: gt.einsum(subscripts, *xs), *operands), want)


def test_gradients_of_trace_diag_and_einsum_with_inf_off_the_diagonal():
    a = np.array([[1.0, inf], [nan, 2.0]])
    w = np.array([[3.0, 5.0], [7.0, 11.0]])
    np.testing.assert_array_equal(gt.grad(lambda x: gt.trace(x) * 2.0)(a), 2.0 * np.eye(2))
    np.testing.assert_array_equal(gt.grad(lambda x: gt.sum(gt.einsum("ii->i", x) * [3.0, 4.0]))(a),
                                  np.diag([3.0, 4.0]))
    np.testing.assert_array_equal(gt.grad(lambda x: gt.sum(gt.diag(x) * [3.0, 4.0]))(a), np.diag([3.0, 4.0]))
    v = np.array([inf, 2.0])
    np.testing.assert_array_equal(gt.grad(lambda x: gt.sum(gt.diag(x) * w))(v), np.diag(w))
    with gt.GradientTape() as tape:
        x = gt.constant(a)
        tape.watch(x)
        y = gt.trace(x) + gt.sum(gt.diag(x))
    np.testing.assert_array_equal(tape.gradient(y, x), 2.0 * np.eye(2))


# --- relu keeps NaN ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_of_nan_is_nan_like_numpy_maximum(dtype):
    x = np.array([nan, -inf, -1.5, -0.0, 0.0, 2.5, inf], dtype)
    results = three_ways(gt.relu, x)
    _assert_all_equal(results, np.maximum(x, dtype(0)))
    assert all(r.dtype == dtype for r in results)


def test_relu_gradient_is_zero_at_nan_and_at_or_below_zero():
    x = np.array([nan, -inf, -1.5, 0.0, 2.5, inf])
    want = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(gt.grad(lambda v: gt.sum(gt.relu(v)))(x), want)
    with gt.GradientTape() as tape:
        t = gt.constant(x)
        tape.watch(t)
        y = gt.sum(gt.relu(t))
    np.testing.assert_array_equal(tape.gradient(y, t), want)


# --- out-of-range index arguments of staged functions: clamped to the edge, everywhere -----------

def _weighted_pick(x, i):
    return gt.sum(x[i] * np.array([1.0, 10.0]))


X3 = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("i, clamped", [([0, 5], [0, 2]), ([-1, -7], [2, 0]), ([3, 2], [2, 2])])
def test_out_of_range_index_arguments_are_clamped_with_their_gradient(i, clamped):
    i = np.array(i)
    want_value = np.sum(X3[clamped] * [1.0, 10.0])
    want_grad = np.zeros(3)
    np.add.at(want_grad, clamped, [1.0, 10.0])
    fn = gt.make_ir(_weighted_pick, X3, i)
    (interpreted,) = ir.eval_function(fn, [X3, i])
    assert interpreted == want_value
    value, grad = gt.value_and_grad(_weighted_pick)(X3, i)  # compiled (async off)
    assert value == want_value
    np.testing.assert_array_equal(grad, want_grad)
    np.testing.assert_array_equal(gt.grad(_weighted_pick)(X3, i), want_grad)


def test_out_of_range_index_gradient_clamps_in_the_interpreter_as_compiled():
    i = np.array([7, -5])
    fn = gt.make_ir(gt.grad(_weighted_pick), X3, i)
    (interpreted,) = ir.eval_function(fn, [X3, i])
    np.testing.assert_array_equal(interpreted, [10.0, 0.0, 1.0])
    np.testing.assert_array_equal(gt.grad(_weighted_pick)(X3, i), interpreted)


def test_batched_out_of_range_indices_clamp_within_their_own_row():
    x = np.arange(6.0).reshape(2, 3)
    i = np.array([[5, 0], [-9, 1]])
    got = gt.vmap(lambda row, j: row[j])(x, i)
    np.testing.assert_array_equal(got, [x[0, [2, 0]], x[1, [0, 1]]])
    grads = gt.vmap(gt.grad(_weighted_pick))(x, i)
    np.testing.assert_array_equal(grads, [[10.0, 0.0, 1.0], [1.0, 10.0, 0.0]])


def test_eager_out_of_range_indices_still_raise_index_error_like_numpy():
    x = gt.constant(X3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        x[np.array([0, 5])]
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        gt.take(x, gt.constant([0, 5]))


# --- element counts: overflow raises ValueError, more than the memory limit MemoryError -------------

def _broadcast_sum(shape):
    return lambda x: gt.sum(gt.broadcast_to(x, shape))


def test_an_element_count_past_64_bits_raises_value_error_eager_traced_and_staged():
    shape = (2**32, 2**32)
    with pytest.raises(ValueError):
        np.broadcast_to(np.ones(1), shape)  # NumPy refuses it too, in other words
    with pytest.raises(ValueError, match=r"array is too big: shape \(4294967296, 4294967296\)"):
        gt.broadcast_to(gt.constant(np.ones(1)), shape)
    with pytest.raises(ValueError, match=r"array is too big"):
        gt.make_ir(_broadcast_sum(shape), np.ones(1))
    with pytest.raises(ValueError, match=r"array is too big"):
        gt.grad(_broadcast_sum(shape))(np.ones(1))


def test_an_array_beyond_the_memory_limit_raises_memory_error_at_trace_time():
    shape = (10**6, 10**6)
    want = r"Unable to allocate 7.28 TiB for an array with shape \(1000000, 1000000\) and data type float64"
    # Eagerly it is NumPy's broadcast view, which allocates nothing (as np.broadcast_to).
    assert gt.broadcast_to(gt.constant(np.ones(1)), shape).shape == np.broadcast_to(np.ones(1), shape).shape
    with pytest.raises(MemoryError, match=want + r": more than the limit of .*GRADTAPE_MAX_ARRAY_BYTES"):
        gt.make_ir(_broadcast_sum(shape), np.ones(1))
    with pytest.raises(MemoryError, match=want):
        gt.value_and_grad(_broadcast_sum(shape))(np.ones(1))


def test_the_memory_limit_is_configurable(monkeypatch):
    from gradtape.ir import config as ir_config

    monkeypatch.setattr(ir_config, "max_array_bytes", 8 * 1000)
    gt.make_ir(_broadcast_sum((1000,)), np.ones(1))  # exactly at the limit: allowed
    with pytest.raises(MemoryError, match=r"shape \(1001,\) and data type float64: more than the limit of 7.81 KiB"):
        gt.make_ir(_broadcast_sum((1001,)), np.ones(1))
    np.testing.assert_array_equal(gt.grad(_broadcast_sum((10, 10)))(np.ones(1)), [100.0])


def test_a_negative_dimension_is_refused_like_numpy():
    from gradtape.ir import TensorType

    with pytest.raises(ValueError, match=r"negative dimensions are not allowed: shape \(2, -3\)"):
        TensorType((2, -3), np.float64)


# --- Python scalar arguments of staged functions are weak, as they are eagerly ---------------------

X32 = np.array([1.5, 2.0, 0.25], np.float32)

WEAK_CASES = [
    ("x * s", lambda x, s: x * s),
    ("s * x", lambda x, s: s * x),
    ("x * (s * 2.0)", lambda x, s: x * (s * 2.0)),
    ("x * -s", lambda x, s: x * -s),
    ("x ** s", lambda x, s: x ** s),
    ("maximum(x, s)", lambda x, s: gt.maximum(x, s)),
    ("where(x > s, x, s)", lambda x, s: gt.where(x > s, x, s)),
    ("x + exp(s)", lambda x, s: x + gt.exp(s)),  # exp of a Python float is a float64, as in NumPy
]


@pytest.mark.parametrize("name, f", WEAK_CASES, ids=[c[0] for c in WEAK_CASES])
def test_python_scalar_arguments_of_staged_functions_are_weak_like_eager(name, f):
    eager = f(gt.constant(X32), 2.5)
    staged = gt.differentiable(f)(X32, 2.5)
    assert staged.dtype == eager.dtype, name
    np.testing.assert_array_equal(staged, eager.numpy())


def test_the_issue_example_stays_float32_and_a_numpy_scalar_stays_strong():
    f = gt.differentiable(lambda x, s: x * s)
    assert f(X32, 2.5).dtype == np.float32 == (X32 * 2.5).dtype
    assert f(X32, np.float64(2.5)).dtype == np.float64 == (X32 * np.float64(2.5)).dtype
    assert f(np.ones(2, np.int32), 2).dtype == np.int32 == (np.ones(2, np.int32) * 2).dtype
    assert f(np.ones(2, np.int32), 2.5).dtype == np.float64


def test_gradients_with_weak_scalar_arguments():
    g_x, g_s = gt.grad(lambda x, s: gt.sum(x * s * s), argnums=(0, 1))(X32, 2.5)
    assert g_x.dtype == np.float32
    np.testing.assert_allclose(g_x, np.full(3, 6.25, np.float32))
    np.testing.assert_allclose(g_s, 2 * 2.5 * X32.astype(np.float64).sum(), rtol=1e-6)
    value, grad = gt.value_and_grad(lambda x, s: gt.sum(gt.tanh(x * s)))(X32, 0.5)
    assert value.dtype == grad.dtype == np.float32
    np.testing.assert_allclose(grad, 0.5 * (1 - np.tanh(X32 * 0.5) ** 2), rtol=1e-6)


# --- float_power, fmax/fmin, round with decimals --------------------------------------------------

def test_float_power_computes_in_float64_like_numpy():
    for x, y in [(X32, np.float32(3)), (X32, 2), (np.arange(4), 2), (np.float32(2.0), 0.5)]:
        want = np.float_power(x, y)
        got = np.float_power(gt.constant(x), y)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(got.numpy(), want)
    staged = gt.differentiable(lambda x: gt.float_power(x, 3))(X32)
    assert staged.dtype == np.float64
    np.testing.assert_allclose(gt.grad(lambda x: gt.sum(gt.float_power(x, 3)))(X32), 3 * X32.astype(np.float64) ** 2)


def test_fmax_and_fmin_ignore_nan_like_numpy():
    a = np.array([nan, 1.0, nan, 2.0, -inf])
    b = np.array([0.5, nan, nan, 3.0, 1.0])
    _assert_all_equal(three_ways(gt.fmax, a, b), np.fmax(a, b))
    _assert_all_equal(three_ways(gt.fmin, a, b), np.fmin(a, b))
    np.testing.assert_array_equal(gt.grad(lambda x: gt.sum(gt.fmax(x, 1.0)))(np.array([nan, 2.0, 0.5])), [0, 1, 0])


ROUNDED = np.array([1.25, 2.35, -0.5, 0.5, 1.5, 123.456, -987.65, nan, inf, -inf])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
def test_round_with_decimals_matches_numpy(dtype, decimals):
    x = ROUNDED.astype(dtype)
    results = three_ways(lambda t: np.round(t, decimals), x)
    _assert_all_equal(results, np.round(x, decimals))
    assert all(r.dtype == dtype for r in results)


@pytest.mark.parametrize("decimals", [0, 1, -1, -2])
def test_round_of_integers_matches_numpy(decimals):
    i = np.array([1250, 1350, -1550, 7, 0])
    got = np.round(gt.constant(i), decimals)
    assert got.dtype == i.dtype
    np.testing.assert_array_equal(got.numpy(), np.round(i, decimals))


def test_round_gradient_is_zero_like_floor():
    x = np.array([1.26, -2.0, 0.3])
    np.testing.assert_array_equal(gt.grad(lambda t: gt.sum(gt.round(t, 1)))(x), np.zeros(3))
    np.testing.assert_allclose(gt.grad(lambda t: gt.sum(np.around(t, 1) * t))(x), np.round(x, 1))


def test_round_refuses_out_and_non_integer_decimals():
    with pytest.raises(TypeError, match=r"round: decimals must be an integer, got 1.5"):
        gt.round(gt.constant(X32), 1.5)
    with pytest.raises(TypeError, match=r"round: out= is not supported"):
        gt.round(gt.constant(X32), 1, out=np.empty(3))


def test_an_empty_axis_cannot_be_indexed_by_a_traced_index():
    with pytest.raises(IndexError, match=r"gather: cannot index axis 0 of size 0 with 2 indices"):
        gt.make_ir(lambda x, i: x[i], np.zeros(0), np.array([0, 1]))
    with pytest.raises(IndexError, match=r"scatter_add: cannot index axis 0 of size 0"):
        ir.shape_rules[scatter_add_p](ir.TensorType((2,), np.float64), ir.TensorType((2,), np.int64),
                                      axis=0, size=0)
    np.testing.assert_array_equal(gt.differentiable(lambda x, i: x[i])(np.zeros(0), np.zeros(0, np.int64)), [])


def test_the_issue_example_with_a_list_of_indices_is_clamped():
    value, grad = gt.value_and_grad(_weighted_pick)(X3, [0, 5])
    assert value == 1.0 + 10.0 * 3.0
    np.testing.assert_array_equal(grad, [1.0, 0.0, 10.0])
