"""A NumPy array modified in place after a tape recorded an op on it (gradtape/tracer/held_arrays.py).

The tape reads such arrays late (when a deferred value is first computed, and at
tape.gradient), so a change in between would silently change the result: it raises
ArrayModifiedError instead, naming the op, the array and the line that recorded it.
Unmodified arrays give NumPy's values and gradients. Every test runs with the C
recorder and the Python one (conftest.py)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import deferred, held_arrays

HERE = os.path.basename(__file__)


def _line_of(text: str) -> int:
    """The line number in this file of the line holding `text` (other than a call of this)."""
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if text in line and "_line_of(" not in line)


def recorded_on_a():
    """(tape, x, y = sum(x * a), a) with `a` a fresh writeable array."""
    x = gt.Variable(np.array([1.0, 2.0, 3.0]))
    a = np.array([1.0, 2.0, 3.0])
    with gt.GradientTape(persistent=True) as tape:
        y = np.sum(x * a)  # the recording line
    return tape, x, y, a


def test_the_gradient_raises_after_an_operand_is_modified_in_place():
    tape, x, y, a = recorded_on_a()
    a *= 100
    with pytest.raises(gt.ArrayModifiedError) as info:
        tape.gradient(y, x)
    assert isinstance(info.value, RuntimeError)
    text = str(info.value)
    assert text.startswith("GradientTape.gradient: the NumPy array of shape (3,) and dtype float64 that the tape "
                           "first read for `mul`")
    assert f"{HERE}:{_line_of('# the recording line')} (`y = np.sum(x * a)  # the recording line`)" in text
    assert "modified in place" in text and "Pass a copy to the op (`.copy()`" in text


def test_computing_a_deferred_value_raises_after_an_operand_is_modified():
    tape, x, y, a = recorded_on_a()
    a[1] = -1.0
    want = r"^computing the deferred value of a recorded `mul`: the NumPy array of shape \(3,\) and dtype float64 "
    with pytest.raises(gt.ArrayModifiedError, match=want + "that the tape first read for `mul` at "):
        y.numpy()


def test_unmodified_arrays_give_numpys_values_and_gradients():
    tape, x, y, a = recorded_on_a()
    assert tape._tape.held  # a writeable array was held, and found unchanged below
    assert float(y) == 14.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 2.0, 3.0])
    a *= 100  # after both were computed: nothing reads it any more
    assert float(y) == 14.0


def test_a_change_to_the_array_a_view_shows_is_seen():
    base = np.arange(6.0)
    readonly = base.view()
    readonly.flags.writeable = False  # read-only, but its base is not
    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(x * base[::2]) + gt.sum(x * readonly[1::2])
    base[3] = 30.0  # seen through readonly[1::2] only
    with pytest.raises(gt.ArrayModifiedError, match=r"shape \(3,\) and dtype float64 that the tape first read"):
        tape.gradient(y, x)


def test_a_large_array_is_checked_by_samples():
    n = held_arrays.EXACT_BYTES // 8 * 3  # over the exact size: sampled
    rng = np.random.default_rng(0)
    a = rng.normal(size=n)
    x = gt.constant(np.ones(n))
    for change in (lambda: a.__imul__(2.0), lambda: rng.shuffle(a), lambda: a.__setitem__(slice(None), 1.0)):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.sum(x * a)
        change()
        with pytest.raises(gt.ArrayModifiedError, match=rf"shape \({n},\)"):
            tape.gradient(y, x)


def test_a_large_strided_array_is_checked_by_samples():
    big = np.random.default_rng(1).normal(size=(300, 400))
    a = big.T  # not C-contiguous, 960,000 bytes
    x = gt.constant(np.ones((400, 300)))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(x * a)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), a)  # unchanged: no error
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(x * a)
    big[:] = 0.5
    with pytest.raises(gt.ArrayModifiedError, match=r"shape \(400, 300\)"):
        tape.gradient(y, x)


def test_arrays_nobody_else_can_write_are_not_held():
    readonly = np.array([0.0, 1.0, 2.0, 3.0])
    readonly.flags.writeable = False  # and so are its slices
    x = gt.Variable(np.ones(3))
    with gt.GradientTape() as tape:
        y = gt.sum(x * readonly[1:] + x * gt.constant([4.0, 5.0, 6.0]) * gt.Variable(np.ones(3), trainable=False))
    assert tape._tape.held == {}
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [5.0, 7.0, 9.0])


def test_a_tensor_over_the_users_array_is_checked():
    a = np.array([1.0, 2.0, 3.0])
    t = gt.asarray(a)
    assert t.numpy() is a  # no copy: the tape reads the user's memory
    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(x * t)
        z = gt.sum(x + t)  # the same constant again
    a[0] = 7.0
    with pytest.raises(gt.ArrayModifiedError,
                       match=r"^computing the deferred value of a recorded `add`: .* first read for `mul`"):
        z.numpy()
    with pytest.raises(gt.ArrayModifiedError, match="first read for `mul`"):
        tape.gradient(y, x)


def test_a_watched_tensor_over_the_users_array_is_checked():
    a = np.array([1.0, 2.0, 3.0])
    x = gt.asarray(a)
    with gt.GradientTape() as tape:
        tape.watch(x)  # the user array
        y = gt.sum(x * x)
    a[2] = 0.0
    with pytest.raises(gt.ArrayModifiedError, match=r"^GradientTape.gradient: .* that the tape watched at "
                                                    rf"{HERE}:{_line_of('tape.watch(x)  # the user array')}"):
        tape.gradient(y, x)
    b = np.array([1.0, 2.0, 3.0])
    x = gt.asarray(b)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(x * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), 2 * b)


def test_a_scalar_array_operand_is_checked_and_stays_writeable():
    s = np.array(2.0)
    x = gt.constant(np.array([1.0, 2.0]))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.sum(x * s)
    assert s.flags.writeable  # recording did not freeze it
    s[()] = 3.0
    with pytest.raises(gt.ArrayModifiedError, match=r"shape \(\) and dtype float64 that the tape first read for `mul`"):
        y.numpy()
    with pytest.raises(gt.ArrayModifiedError):
        tape.gradient(y, x)


def test_every_consumer_of_a_recording_checks():
    a = np.array([1.0, 2.0])
    x = gt.constant(np.array([3.0, 4.0]))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * a
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), np.diag(a))
    np.testing.assert_array_equal(tape.batch_jacobian(y, x).numpy(), a)  # one scalar per example
    a += 1.0
    consumers = {"gradient": tape.gradient, "jacobian": tape.jacobian, "batch_jacobian": tape.batch_jacobian}
    for name, call in consumers.items():
        with pytest.raises(gt.ArrayModifiedError, match=rf"^GradientTape.{name}: "):
            call(y, x)
    b = np.array([1.0, 2.0])
    with gt.ForwardAccumulator(x, gt.constant(np.ones(2))) as acc:
        z = gt.sum(x * b)
    b[0] = 0.0
    with pytest.raises(gt.ArrayModifiedError, match=r"^ForwardAccumulator.jvp: "):
        acc.jvp(z)


def test_a_persistent_tape_checks_at_each_gradient():
    tape, x, y, a = recorded_on_a()
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), a)
    a[:] = [4.0, 5.0, 6.0]
    with pytest.raises(gt.ArrayModifiedError):
        tape.gradient(y, x)
    a[:] = [1.0, 2.0, 3.0]  # the contents the op read: consistent again
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), a)


def test_ops_computed_at_once_check_at_the_gradient(monkeypatch):
    monkeypatch.setattr(deferred, "enabled", False)
    tape, x, y, a = recorded_on_a()
    assert float(y) == 14.0  # computed when recorded
    a *= 100
    with pytest.raises(gt.ArrayModifiedError, match="first read for `mul`"):
        tape.gradient(y, x)


def test_nested_tapes_both_check():
    a = np.array([1.0, 2.0, 3.0])
    x = gt.Variable(np.array([0.5, 1.0, 1.5]))
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            y = gt.sum(x * x * a)
    a[0] = 5.0
    with pytest.raises(gt.ArrayModifiedError):
        inner.gradient(y, x)
    with pytest.raises(gt.ArrayModifiedError):
        outer.gradient(y, x)


def test_a_staged_call_on_the_tape_checks_its_array_arguments():
    f = gt.differentiable(lambda x, c: gt.sum(gt.tanh(x) * c))
    a = np.array([1.0, 2.0, 3.0])
    x = gt.Variable(np.array([0.1, 0.2, 0.3]))
    with gt.GradientTape() as tape:
        y = f(x, a)
    a[2] = 0.0
    with pytest.raises(gt.ArrayModifiedError, match="first read for `call`"):
        tape.gradient(y, x)


def test_the_cached_plans_fast_path_checks(compile_at_once):
    """A loop's later steps take tape.gradient's fast path and a compiled plan: they check too."""
    x = gt.Variable(np.array([1.0, -2.0, 0.5]))
    for step in range(4):
        a = np.array([1.0, 2.0, 3.0]) * (step + 1)
        with gt.GradientTape() as tape:
            y = gt.sum(gt.tanh(x) * a)
        if step == 3:
            a[0] = 0.0
            with pytest.raises(gt.ArrayModifiedError, match="first read for `mul`"):
                tape.gradient(y, x)
        else:
            np.testing.assert_allclose(tape.gradient(y, x).numpy(), (1 - np.tanh(x.numpy()) ** 2) * a, rtol=1e-14)


def test_the_line_named_is_the_users_through_numpy_functions():
    x = gt.constant(np.array([1.0, 2.0]))
    a = np.array([3.0, 4.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.multiply(x, a))  # through NumPy's protocol
    a[0] = 0.0
    with pytest.raises(gt.ArrayModifiedError) as info:
        tape.gradient(y, x)
    assert re.search(rf"first read for `mul` at {HERE}:{_line_of('# through NumPy')} ", str(info.value))


def test_the_first_read_of_an_array_is_the_one_checked():
    """Modified between two ops on it: the first op's recording no longer matches the array."""
    a = np.array([1.0, 2.0])
    x = gt.constant(np.array([1.0, 1.0]))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(x * a)
        a[0] = 9.0
        z = gt.sum(x - a)
    with pytest.raises(gt.ArrayModifiedError, match="first read for `mul`"):
        tape.gradient(y + z, x)


ISSUE_EXAMPLE = """
import numpy as np, gradtape as gt
x = gt.Variable(np.array([1., 2., 3.]))
a = np.array([1., 2., 3.])
with gt.GradientTape() as tape:
    y = np.sum(x * a)
a *= 100
try:
    tape.gradient(y, x)
except gt.ArrayModifiedError as e:
    print(str(e)[:120])
"""


def test_the_issues_example_raises_in_a_fresh_process(recording):
    """In a process that records in C (bind too), or in Python alone (GRADTAPE_PURE_PYTHON=1)."""
    env = dict(os.environ, GRADTAPE_PURE_PYTHON="1" if recording == "python" else "0")
    out = subprocess.run([sys.executable, "-c", ISSUE_EXAMPLE], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ("GradientTape.gradient: the NumPy array of shape (3,) and dtype float64 that the "
                                  "tape first read for `mul` at <string>:6")
