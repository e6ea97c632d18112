"""`& | ^ ~ << >>` and numpy.bitwise_* on tensors: NumPy's values and dtypes, eagerly and staged.

They were the logical ops once, so `t & 2` of an integer tensor gave a bool: a
silently wrong value. The references are NumPy's own functions on the same arrays.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime

BINARY = {"and": operator.and_, "or": operator.or_, "xor": operator.xor,
          "lshift": operator.lshift, "rshift": operator.rshift}
DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64]


def _operands(dtype, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 12, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, 12, dtype=dtype, endpoint=True)
    y[:6] = np.arange(6, dtype=dtype)  # shift counts in range as well as out of it
    return x, y


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_operators_match_numpy_eager_and_native(name, dtype):
    fn = BINARY[name]
    x, y = _operands(dtype, np.random.default_rng(len(name)))
    want = fn(x, y)
    eager = fn(gt.constant(x), gt.constant(y))
    assert eager.dtype == want.dtype
    np.testing.assert_array_equal(eager.numpy(), want)
    compiled = runtime.compile_function(gt.make_ir(fn, x, y))
    assert compiled.native, compiled.fallback_reason
    (got,) = compiled(x, y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_invert_matches_numpy(dtype):
    x = np.array([0, 1, 5, 100], dtype=dtype) if dtype is not np.bool_ else np.array([True, False])
    want = ~x
    np.testing.assert_array_equal((~gt.constant(x)).numpy(), want)
    np.testing.assert_array_equal(np.invert(gt.constant(x)).numpy(), want)
    (got,) = runtime.compile_function(gt.make_ir(lambda v: ~v, x))(x)
    np.testing.assert_array_equal(got, want)


def test_bools_stay_bools_and_mix_with_python_scalars_and_arrays_as_in_numpy():
    m, n = np.array([True, False, True]), np.array([False, False, True])
    for fn in (operator.and_, operator.or_, operator.xor):
        for got, want in [(fn(gt.constant(m), n), fn(m, n)), (fn(gt.constant(m), True), fn(m, True)),
                          (fn(True, gt.constant(m)), fn(True, m))]:
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want)
    i = np.array([12, 10], np.int16)
    for got, want in [(gt.constant(i) & 6, i & 6), (6 | gt.constant(i), 6 | i), (gt.constant(i) << 2, i << 2),
                      (np.bitwise_xor(gt.constant(i), m[:2]), np.bitwise_xor(i, m[:2]))]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_floats_are_refused_as_numpy_refuses_them(name):
    x = np.array([1.0, 2.0])
    with pytest.raises(TypeError):
        BINARY[name](x, x)
    with pytest.raises(TypeError, match="not supported for the input types"):
        BINARY[name](gt.constant(x), gt.constant(x))
    with pytest.raises(TypeError, match="not supported for the input types"):
        ~gt.constant(x)


def test_integers_from_bit_operations_weight_a_gradient_on_the_tape_and_staged():
    """No derivative flows through the integers, and the float path's is right."""
    x = np.array([0.3, -1.2, 2.5, 0.7])

    def f(x):
        k = (gt.argsort(x) & 2) | (gt.argsort(-x) << 1)
        return gt.sum(x * x * k)

    k = (np.argsort(x) & 2) | (np.argsort(-x) << 1)
    t = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    np.testing.assert_allclose(tape.gradient(y, t).numpy(), 2 * x * k)
    np.testing.assert_allclose(gt.grad(f)(x), 2 * x * k)
