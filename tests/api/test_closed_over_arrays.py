"""Arrays a staged function closes over, and other arrays gradtape keeps as constants.

Tracing leaves the user's arrays as they were (writeable, their flags untouched): a trace
captures a closed-over array by value (ir/frozen.py), as JAX does, so the staged function
computes with the values it saw when it was traced, in the interpreter and in native code
alike, whatever the user writes into the array afterwards. A new signature traces again
and sees the array as it is then. Variables and gradtape.constant copy their initial values.
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir


def _closing_over(W):
    return gt.differentiable(lambda x: np.sum(x * W))


@pytest.mark.native
def test_a_closed_over_array_stays_writeable_and_its_traced_value_is_kept(monkeypatch):
    monkeypatch.setattr(gt.runtime.config, "async_compile", True)  # interpreted first, native once compiled
    W = np.ones(3)
    f = _closing_over(W)
    x = np.array([1.0, 2.0, 3.0])
    assert f(x) == 6.0
    assert W.flags.writeable
    W[:] = 2.0  # raised "assignment destination is read-only" before
    for _ in range(4):  # the cached trace, in the interpreter, keeps W as traced
        assert f(x) == 6.0
    gt.runtime.wait_for_compiles()
    assert f(x) == 6.0 and f.cache_info().compiles == 1  # and so does its native code
    g = gt.grad(lambda x: np.sum(x * W))  # a new trace reads W now
    np.testing.assert_array_equal(g(x), [2.0, 2.0, 2.0])


def test_a_new_signature_traces_again_with_the_array_as_it_is_then():
    W = np.ones(3)
    f = _closing_over(W)
    assert f(np.ones(3)) == 3.0
    W *= 10.0
    assert f(np.ones(3)) == 3.0  # traced before the change
    assert f(np.ones((2, 3))) == 60.0  # a new shape: a new trace, of W as it is now


def test_views_of_a_closed_over_array_are_captured_by_value():
    base = np.arange(6.0)
    every_other = base[::2]
    readonly = base[1::2].view()
    readonly.flags.writeable = False  # read-only, over base, which is not
    f = gt.differentiable(lambda x: np.sum(x * every_other) + np.sum(x * readonly))
    assert f(np.ones(3)) == 15.0
    assert base.flags.writeable and every_other.flags.writeable
    base[:] = 0.0
    assert f(np.ones(3)) == 15.0


def test_a_closed_over_tensor_over_the_users_array_is_captured_by_value():
    W = np.array([1.0, 2.0])
    t = gt.asarray(W)
    g = gt.grad(lambda x: gt.sum(x * t))
    np.testing.assert_array_equal(g(np.zeros(2)), [1.0, 2.0])
    W[0] = 5.0
    np.testing.assert_array_equal(g(np.zeros(2)), [1.0, 2.0])


def test_a_literal_copies_an_array_someone_else_can_write():
    a = np.array([1.0, 2.0])
    lit = ir.Literal(a)
    assert a.flags.writeable and not lit.value.flags.writeable
    a[0] = 7.0
    np.testing.assert_array_equal(lit.value, [1.0, 2.0])
    frozen_value = np.array([3.0, 4.0])
    frozen_value.flags.writeable = False
    assert ir.Literal(frozen_value).value is frozen_value  # nothing can write it: no copy


def test_a_recorded_scalar_array_stays_writeable():
    s = np.array(2.0)
    x = gt.Variable(np.array([1.0, 2.0]))
    with gt.GradientTape() as tape:
        y = gt.sum(x * s)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 2.0])
    assert s.flags.writeable
    s[()] = 3.0  # after the gradient: allowed, and nothing reads it any more
    assert float(y) == 6.0


def test_variable_and_constant_copy_their_initial_values():
    a = np.array([1.0, 2.0])
    v = gt.Variable(a)
    c = gt.constant(a)
    assert a.flags.writeable
    a[:] = 9.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])
    with gt.GradientTape() as tape:
        y = gt.sum(v * c)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [1.0, 2.0])
