"""The argsort op in native code (codegen/sort.py) against np.argsort(kind="stable"), on the
values that make sorting hard: NaN of either sign, -0.0 beside 0.0, infinities, ties, every
integer width, rows of lengths around the merge sort's run and pass boundaries, every axis
of a stacked input; and sort's gradient through the permutation where elements tie.

Native results come from the code generator itself (no interpreter fallback), compared
with NumPy, the independent reference. Gradients on finite differences, batching and the
compiled adjoints are in the op spec table (tests/ir/specs_sort.py)."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.codegen.sort import RADIX_MIN, RUN
from tests.codegen.lower_helpers import compiled

RNG = np.random.default_rng(7)


def _native_argsort(x, axis):
    fn = gt.make_ir(lambda t: np.argsort(t, axis=axis), x)
    assert [e.op.name for e in fn.eqns].count("argsort") == 1
    (got,) = compiled(fn)(x)
    return got


def _hard_floats(shape, dtype):
    """Normal values with NaNs of both signs, signed zeros, infinities and repeats."""
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    flat = x.reshape(-1)
    flat[::5] = np.nan
    flat[3::11] = -np.nan
    flat[1::7] = -0.0
    flat[2::7] = 0.0
    flat[4::13] = np.inf
    flat[6::17] = -np.inf
    flat[8::3] = np.round(flat[8::3])  # ties
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 7, RUN, RUN + 1, 2 * RUN + 1, 4 * RUN, 1000, RADIX_MIN - 1, RADIX_MIN, 5000])
def test_native_argsort_is_numpys_stable_argsort_on_nan_zeros_inf_and_ties(n, dtype):
    x = _hard_floats((3, n), dtype)
    np.testing.assert_array_equal(_native_argsort(x, 1), np.argsort(x, axis=1, kind="stable"))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_native_argsort_along_every_axis_of_a_stacked_input(axis):
    x = _hard_floats((5, 19, 6), np.float64)
    np.testing.assert_array_equal(_native_argsort(x, axis), np.argsort(x, axis=axis, kind="stable"))
    x = _hard_floats((2, RADIX_MIN, 3), np.float32)[..., : 3 - (axis == 1)]
    np.testing.assert_array_equal(_native_argsort(x, axis), np.argsort(x, axis=axis, kind="stable"))


@pytest.mark.parametrize("n", [40, RADIX_MIN + 3])  # the merge sort, the radix sort
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.bool_])
def test_native_argsort_of_integers_and_bools(dtype, n):
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    if info is None:
        x = RNG.integers(0, 2, (4, n)).astype(np.bool_)
    else:
        x = RNG.integers(info.min, info.max, (4, n), dtype=dtype, endpoint=True)
        x[:, ::9] = info.max
        x[:, 1::9] = info.min
    np.testing.assert_array_equal(_native_argsort(x, 1), np.argsort(x, axis=1, kind="stable"))


def test_native_argsort_of_rows_with_one_value_keeps_the_order():
    # every byte of every key alike: the radix sort skips all its passes
    x = np.stack([np.full(RADIX_MIN + 5, 2.5), np.full(RADIX_MIN + 5, np.nan), np.zeros(RADIX_MIN + 5)])
    x[2, ::2] = -0.0
    np.testing.assert_array_equal(_native_argsort(x, 1), np.argsort(x, axis=1, kind="stable"))


def test_compiled_sort_and_median_of_long_rows_match_numpy():
    x = _hard_floats((2, 5000), np.float64)
    x[1] = np.where(np.isnan(x[1]), 0.5, x[1])
    f = gt.differentiable(lambda t: (np.sort(t, axis=1), np.median(t, axis=1), np.nanmedian(t, axis=1)))
    f(x)
    gt.runtime.wait_for_compiles()
    for got, want in zip(f(x), (np.sort(x, axis=1), np.median(x, axis=1), np.nanmedian(x, axis=1))):
        np.testing.assert_array_equal(got, want)


def test_sort_gradient_follows_the_stable_permutation_through_ties():
    x = np.array([[2.0, -1.0, 2.0, 0.0, 2.0, -1.0]])
    w = np.arange(1.0, 7.0).reshape(1, 6)
    order = np.argsort(x, axis=1, kind="stable")
    expected = np.zeros_like(x)
    np.put_along_axis(expected, order, w, 1)  # sorted position k's weight goes to element order[k]
    staged = gt.grad(lambda t: np.sum(np.sort(t, axis=1) * w))
    np.testing.assert_array_equal(np.asarray(staged(x)), expected)
    fn = gt.make_ir(lambda t: np.sum(np.sort(t, axis=1) * w), x)
    joint, _ = ir.vjp(fn, [0])  # (x, cotangent) -> (value, gradient)
    (_, grad) = compiled(joint)(x, np.ones(()))
    np.testing.assert_array_equal(grad, expected)


def test_sort_second_derivative_is_the_permuted_one():
    # d2/dx2 sum(w * sort(x)^3) = 6 * w[rank(x)] * x on the diagonal (no ties: the order is locally fixed)
    x = np.array([0.3, -1.2, 2.0, 0.9])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    rank = np.argsort(np.argsort(x))
    hessian = gt.hessian(lambda t: np.sum(w * np.sort(t) ** 3))(x)
    np.testing.assert_allclose(np.asarray(hessian), np.diag(6.0 * w[rank] * x), rtol=1e-14)


def test_argsort_of_complex_names_the_function_and_shape():
    with pytest.raises(TypeError, match=r"argsort: cannot sort a tensor of dtype complex128 \(shape \(3,\)\)"):
        gt.differentiable(lambda t: np.argsort(t * 1j))(np.ones(3))


def test_argsort_op_rejects_a_bad_axis_naming_the_operand():
    b = ir.Builder()
    x = b.input(ir.TensorType((2, 3), np.float64))
    with pytest.raises(ir.ShapeError, match=r"argsort: axis 2 is not an axis of a rank-2 operand"):
        ir.ops.argsort(x, 2)
