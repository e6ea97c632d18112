"""A tensor inside a list (or through np.asarray) is never silently a constant:
gradtape functions stack it (recorded), and NumPy's own conversion refuses it
while a tape or a trace differentiates it. Gradients are checked against
central finite differences of the same expression on plain values."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer.errors import ConcretizationError
from gradtape.tracer.numpy_dispatch import ConstantConversionError, _functions

X0 = 0.7
H = 1e-6


def _tape_grad(f, x0=X0):
    x = gt.constant(x0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return float(tape.gradient(y, x))


def _finite_difference(f, x0=X0):
    return (float(f(gt.constant(x0 + H))) - float(f(gt.constant(x0 - H)))) / (2 * H)


# The four silent constants, each now an error naming the fix on the tape ...
SILENT = {
    "mean_of_list": lambda x: np.mean([x, 2 * x]) + x,
    "asarray_times_x": lambda x: np.sum(np.asarray(x) * x),
    "sum_of_np_array": lambda x: np.sum(np.array([x, 2 * x])) * x,
    "norm_of_list": lambda x: np.linalg.norm([x, x + 2]),
}
# ... and their recorded spellings, with the gradients the issue gives.
RECORDED = {
    "mean_of_list": (lambda x: gt.mean([x, 2 * x]) + x, 2.5),
    "asarray_times_x": (lambda x: gt.sum(gt.asarray(x) * x), 2 * X0),
    "sum_of_np_array": (lambda x: np.sum(gt.array([x, 2 * x])) * x, 6 * X0),
    "norm_of_list": (lambda x: gt.linalg.norm([x, x + 2]) if hasattr(gt, "linalg") else gt.norm([x, x + 2]),
                     (2 * X0 + 2) / np.hypot(X0, X0 + 2)),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_numpy_conversion_of_a_watched_tensor_raises_naming_the_fix(name):
    with pytest.raises(ConstantConversionError, match=r"gradient silently lost.*gradtape\.array\(\[\.\.\.\]\)"):
        _tape_grad(SILENT[name])


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_list_of_tensors_through_gradtape_is_recorded(name):
    f, expected = RECORDED[name]
    assert _tape_grad(f) == pytest.approx(expected, rel=1e-12)
    assert _tape_grad(f) == pytest.approx(_finite_difference(f), rel=1e-7)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_list_of_tensors_is_recorded_in_staged_gradients(name):
    f, expected = RECORDED[name]
    assert float(gt.grad(f)(np.float64(X0))) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name", sorted(SILENT))
def test_numpy_conversion_in_a_staged_function_raises_naming_the_fix(name):
    with pytest.raises(ConcretizationError, match=r"abstract tensor.*gradtape\.array\(\[\.\.\.\]\)"):
        gt.grad(SILENT[name])(np.float64(X0))


def test_numpy_conversion_without_a_tape_gives_the_value():
    x = gt.constant([1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])
    assert np.mean([x[0], 2 * x[1]]) == 2.5


def test_conversion_of_an_untracked_tensor_inside_a_tape_gives_the_value():
    x, c = gt.constant(1.0), gt.constant(3.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        assert np.asarray(c) == 3.0
        assert np.asarray((x * 2).numpy()) == 2.0  # .numpy() is the explicit constant
        y = x * 2
    assert np.asarray(y) == 2.0  # the tape has stopped recording
    assert float(tape.gradient(y, x)) == 2.0


def test_trainable_variable_read_by_numpy_inside_a_tape_raises():
    v = gt.Variable(2.0)
    with gt.GradientTape():
        with pytest.raises(ConstantConversionError, match="recording GradientTape"):
            np.asarray(v)


def test_nested_lists_are_stacked_with_numpy_promotion():
    x = gt.constant(np.float32(1.5))
    with gt.GradientTape() as tape:
        tape.watch(x)
        a = gt.array([[x, 2.0], [3 * x, np.float32(4.0)]])
        y = gt.sum(a * a)
    assert a.dtype == np.float32 and a.shape == (2, 2)
    np.testing.assert_array_equal(a.numpy(), np.array([[1.5, 2.0], [4.5, 4.0]], np.float32))
    assert float(tape.gradient(y, x)) == pytest.approx(2 * 1.5 + 2 * 4.5 * 3)


def test_ragged_list_of_tensors_raises_naming_the_shapes():
    with pytest.raises(ValueError, match=r"array: a list of tensors must be rectangular.*\(2,\), \(3,\)"):
        gt.array([gt.constant([1.0, 2.0]), gt.constant([1.0, 2.0, 3.0])])


def _registered(kind):
    """The gradtape implementations registered for NumPy ufuncs with `kind` inputs."""
    return sorted({(f.__name__, fn) for f, fn in _functions.items()
                   if isinstance(f, np.ufunc) and f.nin == kind}, key=lambda p: p[0])


INTEGER_ONLY = ("bitwise", "invert", "left_shift", "right_shift")  # no float operand, no derivative
UNARY = [(n, fn) for n, fn in _registered(1) if not n.startswith(("logical", "is", "sign", "floor", "ceil",
                                                                      "rint", "round", "trunc", *INTEGER_ONLY))]
BINARY = [(n, fn) for n, fn in _registered(2) if n not in {
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_xor", "floor_divide", "remainder", "fmod", "heaviside", "copysign", "divmod", "matmul",
    "ldexp", "matvec", "vecmat"} and not n.startswith(INTEGER_ONLY)]  # ldexp's exponents are integers;
# matvec/vecmat take a matrix


def test_the_sweeps_cover_the_registry():
    assert len(UNARY) >= 12 and len(BINARY) >= 7


@pytest.mark.parametrize("name,fn", UNARY, ids=[n for n, _ in UNARY])
def test_every_unary_function_records_a_list_of_tensors(name, fn):
    c = 1.5 if name == "arccosh" else 0.0  # inside its domain, x >= 1

    def f(x):
        return gt.sum(fn([x * 0.5 + c, x * 0.25 + 0.1 + c]))
    assert _tape_grad(f) == pytest.approx(_finite_difference(f), rel=1e-6, abs=1e-9)
    assert float(gt.grad(f)(np.float64(X0))) == pytest.approx(_finite_difference(f), rel=1e-6, abs=1e-9)
    with pytest.raises(ConstantConversionError):  # NumPy sees a list: it must not make a constant
        _tape_grad(lambda x: gt.sum(getattr(np, name)([x * 0.5 + c, x * 0.25 + 0.1 + c])))


@pytest.mark.parametrize("name,fn", BINARY, ids=[n for n, _ in BINARY])
def test_every_binary_function_records_lists_of_tensors(name, fn):
    def through_gradtape(x):
        return gt.sum(fn([x * 0.5, x + 0.1], [x * 0.25 + 0.3, 2.0]))

    def through_numpy(x):  # x itself is an operand, so NumPy dispatches to gradtape, lists and all
        return gt.sum(getattr(np, name)([x * 0.5, x + 0.1], x))

    for f in (through_gradtape, through_numpy):
        fd = _finite_difference(f)
        assert _tape_grad(f) == pytest.approx(fd, rel=1e-6, abs=1e-9)
        assert float(gt.grad(f)(np.float64(X0))) == pytest.approx(fd, rel=1e-6, abs=1e-9)


REDUCTIONS = ["sum", "mean", "prod", "max", "min", "std", "var"]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_record_a_list_of_tensors(name):
    fn = getattr(gt, name)

    def f(x):
        return fn([x * 0.5, x * x + 0.1, 3.0])
    fd = _finite_difference(f)
    assert _tape_grad(f) == pytest.approx(fd, rel=1e-6, abs=1e-9)
    assert float(gt.grad(f)(np.float64(X0))) == pytest.approx(fd, rel=1e-6, abs=1e-9)
    with pytest.raises(ConstantConversionError):
        _tape_grad(lambda x: getattr(np, name)([x * 0.5, x * x + 0.1, 3.0]))
