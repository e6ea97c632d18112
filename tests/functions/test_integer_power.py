"""Integer ** integer as NumPy computes it (issue 25 point 3): integer results of NumPy's
dtype, exact and wrapping on overflow, eager, interpreted and compiled; NumPy's error for
a negative exponent known when `**` runs; the defined value of a negative exponent known
only when staged code runs; derivatives of a float base with an integer exponent."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.runtime import compile_function
from gradtape.runtime import config as runtime_config

from .three_ways import three_ways

NUMPY_MESSAGE = "Integers to negative integer powers are not allowed."
INT_DTYPES = [np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint32, np.uint64]


@pytest.fixture(autouse=True)
def _compile_in_the_caller(monkeypatch):
    monkeypatch.setattr(runtime_config, "async_compile", False)
    monkeypatch.setattr(runtime_config, "compile_errors", "raise")


def _wrapped(value: int, dtype) -> int:
    """`value` modulo 2**bits, read in dtype: what NumPy's integer loops keep of an overflow."""
    info = np.iinfo(dtype)
    value %= 1 << info.bits
    return value - (1 << info.bits) if info.min < 0 and value > info.max else value


def _grid(dtype):
    info = np.iinfo(dtype)
    bases = [0, 1, 2, 3, 7, info.max, info.max - 1] + ([-1, -2, -3, info.min, info.min + 1] if info.min < 0 else [])
    exponents = [0, 1, 2, 3, 5, info.bits - 1, info.bits, info.bits + 1, min(info.max, 200), info.max]
    x, y = np.meshgrid(np.array(bases, dtype), np.array(exponents, dtype))
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_powers_are_exact_and_wrap_like_numpy(dtype):
    x, y = _grid(dtype)
    bits = np.iinfo(dtype).bits
    want = np.array([_wrapped(pow(int(a), int(b), 1 << bits), dtype) for a, b in zip(x, y)], dtype=dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(np.power(x, y), want)  # the reference is NumPy's
    for way, got in zip(("eager", "interpreted", "compiled"), three_ways(lambda a, b: a ** b, x, y)):
        assert got.dtype == np.dtype(dtype), way
        np.testing.assert_array_equal(got, want, err_msg=way)


def test_the_issue_examples():
    got = gt.constant(3) ** 39
    assert got.dtype == np.int64 and int(got.numpy()) == 3 ** 39  # float64 gave 4052555153018976256
    assert int((gt.constant(np.int64(3)) ** 41).numpy()) == _wrapped(3 ** 41, np.int64) < 0
    staged = gt.differentiable(lambda a, b: a ** b)
    assert int(staged(np.int64(3), np.int64(39))) == 3 ** 39
    assert int(staged(np.int64(3), np.int64(41))) == _wrapped(3 ** 41, np.int64)
    np.testing.assert_array_equal(np.power(gt.constant(np.array([2, 5])), 2).numpy(), [4, 25])
    t, t2 = gt.constant(np.array([2, 3, 10])), gt.constant(np.array([62, 40, 19]))
    np.testing.assert_array_equal((t ** t2).numpy(), 
                                  [_wrapped(v, np.int64) for v in (2 ** 62, 3 ** 40, 10 ** 19)])


PROMOTIONS = [
    (np.array([2, 3], np.int64), np.array([3, 2], np.int64)),
    (np.array([2, 3], np.int32), 2),
    (np.array([2, 3], np.int32), np.array([2, 3], np.int8)),
    (np.array([2, 3], np.uint8), 3),
    (np.array([2, 3], np.uint8), np.array([5, 4], np.int8)),
    (np.array([2, 3], np.int16), np.array([1, 2], np.uint16)),
    (np.array([2, 3], np.uint64), np.array([3, 2], np.int64)),  # NumPy: float64
    (np.array([True, False]), np.array([True, True])),  # bools are raised as int8
    (np.array([True, False]), 3),
    (np.array([2, 3], np.int64), 0.5),
    (np.array([2.5, 3.0], np.float32), np.array([2, 3], np.int64)),
    (2, np.array([3, 4], np.uint8)),
]


@pytest.mark.parametrize("x,y", PROMOTIONS, ids=lambda a: repr(np.asarray(a).dtype) if not isinstance(a, int) else repr(a))
def test_result_dtypes_follow_numpy_promotion_eager_and_staged(x, y):
    want = np.power(x, y)
    eager = gt.power(gt.constant(x) if isinstance(x, np.ndarray) else x, gt.constant(y) if isinstance(y, np.ndarray) else y)
    assert eager.dtype == want.dtype
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-15)
    if isinstance(x, np.ndarray):
        staged = gt.differentiable(lambda a: a ** y)(x)
        assert staged.dtype == want.dtype
        np.testing.assert_allclose(staged, want, rtol=1e-15)


def test_python_int_arguments_of_staged_functions_give_python_int_results():
    f = gt.differentiable(lambda a, b: a ** b)
    assert f(3, 39) == 3 ** 39
    assert np.asarray(f(3, 39)).dtype == np.int64


def _refuses(f):
    with pytest.raises(ValueError) as info:
        f()
    assert str(info.value).startswith(NUMPY_MESSAGE)
    assert "power" in str(info.value) and "x ** -1.0" in str(info.value)


def test_a_negative_exponent_raises_numpys_error_eagerly():
    with pytest.raises(ValueError, match=NUMPY_MESSAGE):
        np.array([2]) ** np.array([-1])  # NumPy's behaviour, which these follow
    t = gt.constant(np.array([2, 3]))
    _refuses(lambda: gt.constant(2) ** -1)
    _refuses(lambda: np.power(t, -2))
    _refuses(lambda: t ** gt.constant(np.array([1, -1])))
    _refuses(lambda: 2 ** gt.constant(np.array([0, -1], np.int8)))
    x = gt.constant(np.array([1.0, 2.0]))
    with gt.GradientTape() as tape:
        tape.watch(x)
        _refuses(lambda: t ** gt.constant(-1))


def test_a_negative_exponent_known_while_tracing_raises_at_trace_time():
    _refuses(lambda: gt.differentiable(lambda a: a ** -1)(np.array([2, 3])))
    _refuses(lambda: gt.make_ir(lambda a: a ** np.array([1, -3]), np.array([2, 3])))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8], ids=lambda d: np.dtype(d).name)
def test_a_traced_negative_exponent_gives_the_integer_part_of_the_true_value(dtype):
    """Staged code cannot raise when it runs: x ** -n is 1 / x ** n truncated toward zero (0 for x = 0)."""
    x = np.array([1, 1, -1, -1, -1, 2, -2, 3, 0, 0, 5], dtype)
    y = np.array([-1, -6, -1, -2, -7, -1, -1, -3, -1, -2, 2], dtype)

    def truncated(a, b):
        if b >= 0:
            return a ** b
        return 0 if a == 0 else int(1 / a ** -b)  # Python's exact rational, then toward zero

    want = np.array([truncated(int(a), int(b)) for a, b in zip(x, y)], dtype)
    fn = gt.make_ir(lambda a, b: a ** b, x, y)
    code = compile_function(fn)
    assert code.native
    np.testing.assert_array_equal(ir.eval_function(fn, [x, y])[0], want)
    np.testing.assert_array_equal(code(x, y)[0], want)
    np.testing.assert_array_equal(gt.differentiable(lambda a, b: a ** b)(x, y), want)


def test_vmap_of_an_integer_power():
    x = np.array([[2, 3], [4, 5], [-1, 7]])
    y = np.array([3, 2, 5])
    got = gt.vmap(lambda a, b: a ** b)(x, y)
    np.testing.assert_array_equal(got, x ** y[:, None])
    assert got.dtype == np.int64


def test_a_float_base_with_an_integer_exponent_keeps_its_derivative():
    x = np.array([1.5, -2.0, 0.5])
    n = np.array([3, 2, 4])
    want = n * x ** (n - 1)
    np.testing.assert_allclose(gt.grad(lambda a, k: gt.sum(a ** k))(x, n), want, rtol=1e-15)
    np.testing.assert_allclose(gt.grad(lambda a: gt.sum(a ** 3))(x), 3 * x ** 2, rtol=1e-15)
    a, k = gt.constant(x), gt.constant(n)
    with gt.GradientTape() as tape:
        tape.watch(a)
        out = gt.sum(a ** k)
    np.testing.assert_allclose(tape.gradient(out, a).numpy(), want, rtol=1e-15)


def test_integer_powers_carry_no_derivative_but_scale_a_float_one():
    """d/dx of x * (k ** 2) is k ** 2: the integer power is a constant factor."""
    x = np.array([0.5, -1.5, 2.0])
    k = np.array([2, -3, 4])

    def f(a, b):
        return gt.sum(a * (b ** 2))

    np.testing.assert_allclose(gt.grad(f)(x, k), k ** 2, rtol=0)
    fn = gt.make_ir(f, x, k)
    assert "int_pow" in [e.op.name for e in fn.eqns]
    kt = gt.constant(k)
    with gt.GradientTape() as tape:
        with pytest.warns(UserWarning, match="must be floating"):
            tape.watch(kt)
        out = kt ** 2
    assert out.dtype == np.int64
    assert tape.gradient(out, kt) is None
