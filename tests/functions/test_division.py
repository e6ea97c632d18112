"""remainder / mod / fmod / floor_divide / divmod and the % and // operators:
NumPy's values at every special value, eager, interpreted and compiled, in
float32, float64 and integer dtypes; gradients against hand derivatives."""
import numpy as np
import pytest

import gradtape as gt

from .three_ways import three_ways

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, -7.0, 1e-300, 0.1, 3.0, np.inf, -np.inf, np.nan, 1e300]
FUNCTIONS = {"remainder": np.remainder, "fmod": np.fmod, "floor_divide": np.floor_divide}


def _grid(values, dtype):
    with np.errstate(all="ignore"):
        v = np.array(values, dtype=dtype)
    x, y = np.meshgrid(v, v)
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_special_values_match_numpy_bit_for_bit(name, dtype):
    x, y = _grid(SPECIAL, dtype)
    with np.errstate(all="ignore"):
        want = FUNCTIONS[name](x, y)
        got = three_ways(getattr(gt, name), x, y)
    for way, value in zip(("eager", "interpreted", "compiled"), got):
        assert value.dtype == want.dtype, way
        # equal, NaN where NumPy has NaN, and the same sign of zero
        np.testing.assert_array_equal(value, want, err_msg=f"{name} {way}")
        np.testing.assert_array_equal(np.signbit(value), np.signbit(want), err_msg=f"{name} {way} signs")


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8, np.uint32])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_integers_match_numpy_with_zero_and_minus_one_divisors(name, dtype):
    info = np.iinfo(dtype)
    values = [0, 1, 2, 3, 7, info.max, info.max - 1]
    if info.min < 0:
        values += [-1, -2, -3, -7, info.min, info.min + 1]
    x, y = _grid(values, dtype)
    with np.errstate(all="ignore"):
        want = FUNCTIONS[name](x, y)  # zero divisors give 0; INT_MIN // -1 wraps
        for way, value in zip(("eager", "interpreted", "compiled"), three_ways(getattr(gt, name), x, y)):
            assert value.dtype == want.dtype, way
            np.testing.assert_array_equal(value, want, err_msg=f"{name} {way}")


def test_operators_in_both_orders_and_python_divmod():
    a = np.array([5.5, -5.5, 7.0, -0.25])
    t = gt.constant(a)
    np.testing.assert_array_equal((t % 2.0).numpy(), a % 2.0)
    np.testing.assert_array_equal((3.0 % t).numpy(), 3.0 % a)
    np.testing.assert_array_equal((t // -2.0).numpy(), a // -2.0)
    np.testing.assert_array_equal((3.0 // t).numpy(), 3.0 // a)
    np.testing.assert_array_equal((a % t).numpy(), a % a)  # NumPy array on the left dispatches to gradtape
    q, r = divmod(t, 1.5)
    np.testing.assert_array_equal(q.numpy(), a // 1.5)
    np.testing.assert_array_equal(r.numpy(), a % 1.5)
    q, r = divmod(10.0, t)
    np.testing.assert_array_equal(r.numpy(), 10.0 % a)
    q, r = np.divmod(t, 2.0)
    np.testing.assert_array_equal(q.numpy(), np.floor_divide(a, 2.0))
    assert gt.mod is gt.remainder


def test_dtypes_follow_numpy_promotion():
    i = np.array([7, -7], np.int32)
    f32 = np.array([2.0, -2.0], np.float32)
    cases = [(i, 2), (i, f32), (f32, 3), (np.array([True, False]), np.array([True, True])), (i, 2.5)]
    for x, y in cases:
        for name, fn in FUNCTIONS.items():
            got = getattr(gt, name)(gt.constant(x), y)
            want = fn(x, y)
            assert got.dtype == want.dtype, (name, x.dtype, y)
            np.testing.assert_array_equal(got.numpy(), want)


def test_gradients_are_one_and_minus_the_quotient():
    x = np.array([5.5, -5.5, 7.25, -0.25])
    y = np.array([2.0, 2.0, -3.0, 0.75])
    gx, gy = gt.grad(lambda a, b: gt.sum(a % b), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, np.ones(4))
    np.testing.assert_array_equal(gy, -np.floor(x / y))
    gx, gy = gt.grad(lambda a, b: gt.sum(np.fmod(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gy, -np.trunc(x / y))
    gx, gy = gt.grad(lambda a, b: gt.sum((a // b) * a), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, x // y)
    np.testing.assert_array_equal(gy, np.zeros(4))


def test_quotient_in_the_gradient_is_exact_where_x_over_y_rounds_to_an_integer():
    # 1 / 0.1 rounds to 10.0 in float64, but 1 = 9 * 0.1 + 0.0999..., so the quotient is 9
    x, y = np.array([1.0]), np.array([0.1])
    assert x / y == 10.0 and x // y == 9.0 and x % y > 0.09
    gy = gt.grad(lambda a, b: gt.sum(a % b), argnums=1)(x, y)
    np.testing.assert_array_equal(gy, [-9.0])


def test_second_derivative_in_the_divisor_is_zero():
    hess = gt.hessian(lambda b: gt.sum(7.5 % b))(np.array([2.0, -3.0]))
    np.testing.assert_array_equal(hess, np.zeros((2, 2)))


def test_bool_ir_operands_are_refused_with_the_fix():
    from gradtape import ir
    from gradtape.ir import ops

    b = ir.Builder()
    x = b.input(ir.TensorType((2,), np.bool_))
    with pytest.raises(ir.IRError, match="remainder: operands must be numbers, got bool; cast them to int8"):
        ops.remainder(x, x)
