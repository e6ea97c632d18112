"""A tensor a recording tape differentiates is never silently a Python number (issue 25, point 1):
float(t), int(t), t.item(), math.sin(t), out[0] = t, ... raise ConstantConversionError, as
np.asarray(t) does, on a GradientTape and in a ForwardAccumulator. What carries no derivative
(bool(t), integer tensors, untracked tensors, stop_gradient, outside the recording) converts;
t.numpy() is the explicit constant; repr/str/format make strings. t[i] = v is a functional
update (tests/functions/test_tensor_setitem.py); a Variable's v[i] = x says to assign (point 16)."""
import math

import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import deferred
from gradtape.tracer.errors import ConcretizationError
from gradtape.tracer.numpy_dispatch import ConstantConversionError as OldHome

ConstantConversionError = gt.ConstantConversionError


def _assign(dtype, key):
    def assign(t):
        out = np.zeros(3, dtype)
        out[key] = t
        return out
    return assign


# form -> (conversion, the name the message gives it). A 0-d tensor t, of value 2.0.
CONVERSIONS = {
    "float": (float, "float()"),
    "int": (int, "int()"),
    "complex": (complex, "complex()"),
    "item": (lambda t: t.item(), "t.item()"),
    "tolist": (lambda t: t.tolist(), "t.tolist()"),
    "np.float64": (np.float64, None),    # NumPy takes __float__ or np.asarray, as it likes
    "np.float32": (np.float32, "np.asarray"),
    "np.int64": (np.int64, "np.asarray"),
    "math.sin": (math.sin, "float()"),
    "math.exp": (math.exp, "float()"),
    "percent_f": (lambda t: "%.3f" % t, "float()"),
    "assign_int_element": (_assign(np.int64, 0), "int()"),
    "assign_complex_element": (_assign(np.complex128, 0), "complex()"),
    "assign_slice": (_assign(np.float64, slice(0, 1)), "np.asarray"),
    "assign_fancy": (_assign(np.float64, [1]), "np.asarray"),
}

FIXES = ("t.numpy()", "gradtape.stop_gradient(t)", "after the tape's `with` block")


def _check_message(err, name):
    text = str(err)
    if name == "np.asarray":
        assert "tried to convert a tensor of shape () that a recording" in text
        assert "gradient silently lost" in text
    else:
        if name is not None:
            assert text.startswith(f"{name} of a float64 tensor of shape () that a recording")
        assert "the gradient through it silently lost" in text or "gradient silently lost" in text
    assert "test_constant_conversions.py:" in text  # the user's line
    for fix in FIXES:
        assert fix in text, fix


@pytest.mark.parametrize("form", sorted(CONVERSIONS))
def test_each_conversion_of_a_watched_tensor_raises_on_a_tape(form):
    convert, name = CONVERSIONS[form]
    x = gt.constant(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        t = x * 2.0
        with pytest.raises(ConstantConversionError) as info:
            convert(t)
    _check_message(info.value, name)
    assert "GradientTape differentiates" in str(info.value)
    assert float(t) == 2.0  # after the with block: the value


@pytest.mark.parametrize("form", sorted(CONVERSIONS))
def test_each_conversion_raises_in_a_forward_accumulator(form):
    convert, name = CONVERSIONS[form]
    x = gt.constant(1.0)
    with gt.ForwardAccumulator(x, gt.constant(1.0)):
        t = x * 2.0
        with pytest.raises(ConstantConversionError) as info:
            convert(t)
    _check_message(info.value, name)
    assert "ForwardAccumulator differentiates" in str(info.value)


def test_assigning_into_a_float_array_element_raises_through_numpy():
    # NumPy calls float(t) and, t being a sequence to it, reraises any error as a ValueError
    # whose cause is the conversion's error; the traceback shows both.
    x = gt.constant(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = np.zeros(3)
        with pytest.raises(ValueError, match="setting an array element with a sequence") as info:
            out[0] = x * 2.0
    assert isinstance(info.value.__cause__, ConstantConversionError)
    _check_message(info.value.__cause__, "float()")
    assert "out[0] = t" in str(info.value.__cause__)


def test_the_error_is_public_and_a_type_error():
    assert gt.ConstantConversionError is OldHome
    assert issubclass(gt.ConstantConversionError, TypeError)
    assert issubclass(gt.ConstantConversionError, gt.TracerError)


def test_the_issue_reproducer_raises_and_its_supported_spelling_gives_the_gradient():
    x = gt.Variable(np.array([1.0, 2.0, 3.0]))
    with gt.GradientTape():
        out = np.zeros(3)
        with pytest.raises(ValueError) as info:
            out[0] = x[0] * 2
    assert isinstance(info.value.__cause__, ConstantConversionError)

    def f(x):
        out = gt.where(np.arange(3) == 0, x[0] * 2, 0.0)
        return gt.sum(out ** 2) + x[1]

    with gt.GradientTape() as tape:
        y = f(x)
    x0 = x.numpy()
    expected = [8 * x0[0], 1.0, 0.0]  # y = (2 x0)^2 + x1
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(gt.grad(f)(x0), expected, rtol=1e-15)
    with gt.GradientTape() as tape:  # the other spelling: splice with concatenate
        out = gt.concatenate([(x[0] * 2)[None], np.zeros(2)])
        y = gt.sum(out ** 2) + x[1]
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-15)


def test_a_trainable_variable_read_while_the_tape_watches_accessed_variables_raises():
    v = gt.Variable(3.0)
    with gt.GradientTape():
        with pytest.raises(ConstantConversionError, match=r"^float\(\) of a float64 tensor"):
            float(v)
    with gt.GradientTape(watch_accessed_variables=False):
        assert float(v) == 3.0
    assert float(gt.Variable(3.0, trainable=False)) == 3.0


def test_what_carries_no_derivative_converts_on_a_tape():
    x = gt.constant([0.5, 2.0, -1.0])
    c = gt.constant(4.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        t = x * 2.0
        s = t[1]
        i = gt.argmax(x)
        assert bool(s > 1.0) is True and bool(s) is True  # Python control flow runs eagerly
        assert int(i) == 1 and i.item() == 1 and float(i) == 1.0 and i.tolist() == 1
        assert x[i].numpy() == 2.0 and [10, 20, 30][i] == 20 and list(range(i)) == [0]
        assert int(gt.sum(x > 0)) == 2  # a bool tensor summed: integers
        assert float(c * 3.0) == 12.0 and (c + 1).tolist() == 5.0  # untracked
        np.testing.assert_array_equal(t.numpy(), [1.0, 4.0, -2.0])  # the explicit constant
        assert float(s.numpy()) == 4.0 and math.sin(s.numpy()) == math.sin(4.0)
        assert float(gt.stop_gradient(s)) == 4.0
        assert float(gt.stop_gradient(s) * 3.0 + 1.0) == 13.0  # computed from stop_gradient only
        assert np.asarray(i) == 1 and np.asarray(gt.stop_gradient(s)) == 4.0  # NumPy's conversion too
        assert format(s, ".3f") == "4.000" and f"{s:.1f}" == "4.0"
        assert repr(s) == "Tensor(4., dtype=float64)" and str(t) == "Tensor([ 1.,  4., -2.], dtype=float64)"
        with tape.stop_recording():
            assert float(s) == 4.0 and t.tolist() == [1.0, 4.0, -2.0]
        with pytest.raises(ConstantConversionError):  # recording again
            float(s)
        y = gt.sum(t * t)
    assert float(y) == 21.0 and s.item() == 4.0  # after the with block
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 8 * x.numpy(), rtol=1e-15)


def test_index_with_a_float_tensor_stays_a_type_error():
    x = gt.constant(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match="only integer tensors can be used as an index, got float64"):
            [1, 2, 3][x * 1.0]


def test_a_refused_pending_value_is_not_computed():
    x = gt.constant(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.exp(x)
        if not deferred.is_pending(y):
            pytest.skip("deferred execution is off (GRADTAPE_DEFER_EAGER=0)")
        with pytest.raises(ConstantConversionError):
            float(y)
        assert deferred.is_pending(y)
    assert float(y) == math.e


def test_nested_tapes_outer_recording_after_the_inner_exited():
    x, z = gt.constant(1.5), gt.constant(0.5)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            inner.watch(z)
            y = x ** 3
            w = z * 4.0
        # The inner tape has exited; the outer still differentiates what comes from x ...
        with pytest.raises(ConstantConversionError, match="recording GradientTape"):
            float(y)
        dy = inner.gradient(y, x)  # 3 x^2, recorded by the outer tape
        with pytest.raises(ConstantConversionError):
            float(dy)
        assert dy.numpy() == 3 * 1.5 ** 2
        # ... but not what comes only from z, which only the inner tape watched.
        assert float(w) == 2.0
        with pytest.raises(ConstantConversionError):  # both tapes record: the inner one refuses
            with gt.GradientTape() as inner2:
                inner2.watch(z)
                float(z * 2.0)
    assert float(dy) == 3 * 1.5 ** 2
    assert float(outer.gradient(dy, x)) == 6 * 1.5


def test_integer_and_bool_tensors_computed_from_a_tracked_one_convert_to_arrays():
    """Issue 26, point 3: as autograd's fluidsim and wing examples do (np.asarray of an index
    computed from the differentiated values, a NumPy array indexed by it)."""
    table = np.arange(6.0) * 1.5
    x = gt.constant([0.4, 2.7, 4.2])
    for recorder in (lambda: gt.GradientTape(), lambda: gt.ForwardAccumulator(x, gt.constant(np.ones(3)))):
        with recorder() as rec:
            if isinstance(rec, gt.GradientTape):
                rec.watch(x)
            t = x * 1.0
            i = np.floor(t).astype(np.int64)
            b = t > 1.0
            np.testing.assert_array_equal(np.asarray(i), [0, 2, 4])
            np.testing.assert_array_equal(np.array(b), [False, True, True])
            assert np.asarray(i).dtype == np.int64 and np.asarray(b, dtype=np.float64).tolist() == [0.0, 1.0, 1.0]
            assert int(i[1]) == 2 and float(b[0]) == 0.0 and i.tolist() == [0, 2, 4] and b[2].item() is True
            got = table[i]  # NumPy indexes its array with the (converted) integer tensor: a constant
            assert type(got) is np.ndarray and got.tolist() == [0.0, 3.0, 6.0]
            np.testing.assert_array_equal(np.where(b, table[:3], -1.0), [-1.0, 1.5, 3.0])
            with pytest.raises(ConstantConversionError):
                np.asarray(t)  # the floating tensor itself is still refused


def test_a_numpy_array_indexed_by_a_traced_integer_tensor_names_the_gather():
    table = np.arange(6.0) * 1.5

    def f(x):
        return gt.sum(table[np.floor(x).astype(np.int64)] * x)

    with pytest.raises(ConcretizationError, match=r"abstract tensor i64\[3\].*gradtape\.asarray\(arr\)\[i\]"):
        gt.grad(f)(np.array([0.4, 2.7, 4.2]))

    def g(x):
        return gt.sum(gt.asarray(table)[np.floor(x).astype(np.int64)] * x)

    x = np.array([0.4, 2.7, 4.2])
    assert float(gt.differentiable(g)(x)) == pytest.approx(0.0 * 0.4 + 3.0 * 2.7 + 6.0 * 4.2)
    np.testing.assert_array_equal(np.asarray(gt.grad(g)(x)), [0.0, 3.0, 6.0])


def test_staged_conversions_stay_concretization_errors():
    for convert in (float, int, lambda t: t.item(), lambda t: t.tolist(), math.sin, np.float64):
        with pytest.raises(ConcretizationError, match=r"(needs the concrete value of a traced|abstract tensor) f64\[\]"):
            gt.grad(lambda t: convert(t) * t)(np.float64(1.0))


def test_item_assignment_on_a_tensor_and_the_spellings_without_it_agree():
    t = gt.constant([1.0, 2.0, 3.0])
    # The spellings that build the new value, on a tape: the value and the gradient (d/dt of sum(u * u), u[1] fixed).
    with gt.GradientTape() as tape:
        tape.watch(t)
        u = gt.where(np.arange(3) == 1, 5.0, t)
        v = gt.concatenate([t[:1], gt.constant([5.0]), t[2:]])
        w = t * 1.0
        w[1] = 5.0
        loss = gt.sum(u * u) + gt.sum(v * v) + gt.sum(w * w)
    for updated in (u, v, w):
        np.testing.assert_array_equal(updated.numpy(), [1.0, 5.0, 3.0])
    np.testing.assert_allclose(tape.gradient(loss, t).numpy(), [6.0, 0.0, 18.0], rtol=1e-15)


def test_item_assignment_on_a_variable_says_assign():
    v = gt.Variable([1.0, 2.0, 3.0], name="w")
    with pytest.raises(TypeError) as info:
        v[0] = 7.0
    text = str(info.value)
    assert text.startswith("v[...] = float: Variable 'w' (float64, shape (3,)) does not support item "
                           "assignment: a variable changes only through assign")
    assert "v.assign(v.at[i].set(x))" in text
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])  # unchanged
    v.assign(gt.where(np.arange(3) == 0, 7.0, v))  # the spellings it gives
    np.testing.assert_array_equal(v.numpy(), [7.0, 2.0, 3.0])
    a = v.numpy().copy()
    a[2] = 9.0
    v.assign(a)
    np.testing.assert_array_equal(v.numpy(), [7.0, 2.0, 9.0])
