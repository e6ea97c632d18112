"""Variable against tf.Variable's semantics on tapes: automatic watching,
trainable, assign*, reads on either side of an assign, and stop_gradient."""
import re

import numpy as np
import pytest

import gradtape as gt


def close(tensor, expected):
    assert tensor is not None, "expected a gradient, got None"
    np.testing.assert_allclose(tensor.numpy(), expected)


# --- construction and assign -----------------------------------------------------


def test_construction_keeps_dtype_and_copies():
    src = np.array([1.0, 2.0], dtype=np.float32)
    v = gt.Variable(src)
    src[0] = 100.0
    assert v.dtype == np.float32 and v.shape == (2,)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert gt.Variable(1.0).dtype == np.float64  # NumPy rules: Python floats are float64
    assert gt.Variable([1, 2], dtype="float32").dtype == np.float32
    assert gt.Variable(gt.constant([3.0])).numpy().tolist() == [3.0]


def test_name_and_trainable():
    v = gt.Variable(1.0, name="weights")
    assert v.name == "weights" and v.trainable
    w = gt.Variable(1.0, trainable=False)
    assert not w.trainable
    assert re.fullmatch(r"Variable:\d+", w.name)
    assert gt.Variable(1.0).name != gt.Variable(1.0).name  # default names are distinct
    assert "'weights'" in repr(v)


def test_assign_assign_add_assign_sub():
    v = gt.Variable([1.0, 2.0])
    assert v.assign([5.0, 6.0]) is v
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    assert v.assign_add([1.0, -1.0]) is v
    np.testing.assert_array_equal(v.numpy(), [6.0, 5.0])
    assert v.assign_sub(gt.constant([0.5, 0.5])) is v
    np.testing.assert_array_equal(v.numpy(), [5.5, 4.5])
    v.assign(np.array([1, 2]))  # ints cast safely into a float variable
    assert v.dtype == np.float64
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_assign_keeps_float32():
    v = gt.Variable([1.0, 2.0], dtype="float32")
    v.assign_add([0.25, 0.25])  # float64 deltas of the same kind are cast down
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), np.array([1.25, 2.25], dtype=np.float32))


def test_value_is_read_only_and_not_mutated_by_assign():
    v = gt.Variable([1.0, 2.0])
    before = v.numpy()
    with pytest.raises(ValueError):
        before[0] = 3.0
    v.assign([7.0, 8.0])
    np.testing.assert_array_equal(before, [1.0, 2.0])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assign_shape_mismatch_names_the_variable(method):
    v = gt.Variable([1.0, 2.0], name="w")
    with pytest.raises(ValueError, match=re.escape(f"{method}: cannot assign a value of shape (3,) to variable 'w' of shape (2,)")):
        getattr(v, method)([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assign_dtype_that_cannot_cast_raises(method):
    i = gt.Variable(np.array([1, 2], dtype=np.int32), name="counts")
    with pytest.raises(TypeError, match=re.escape(f"{method}: cannot assign a float64 value to variable 'counts' of dtype int32")):
        getattr(i, method)([0.5, 1.5])
    f = gt.Variable(1.0, name="f")
    with pytest.raises(TypeError, match=re.escape(f"{method}: cannot assign a complex128 value to variable 'f' of dtype float64")):
        getattr(f, method)(1 + 2j)


# --- watching ----------------------------------------------------------------------


def test_trainable_variable_is_watched_when_read():
    v = gt.Variable(3.0)
    with gt.GradientTape() as tape:
        y = v * v
    close(tape.gradient(y, v), 6.0)
    assert tape.watched_variables() == (v,)


def test_variable_not_read_is_not_watched():
    v, w = gt.Variable(1.0), gt.Variable(2.0)
    with gt.GradientTape() as tape:
        y = v * 2.0
    assert tape.watched_variables() == (v,)
    assert tape.gradient(y, [v, w])[1] is None


def test_non_trainable_variable_is_not_watched():
    v = gt.Variable(2.0)
    w = gt.Variable(3.0, trainable=False)
    with gt.GradientTape() as tape:
        y = v * w
    gv, gw = tape.gradient(y, [v, w])
    close(gv, 3.0)
    assert gw is None
    assert tape.watched_variables() == (v,)


def test_non_trainable_variable_watched_explicitly():
    w = gt.Variable(3.0, trainable=False)
    with gt.GradientTape() as tape:
        tape.watch(w)
        y = w * w
    close(tape.gradient(y, w), 6.0)
    assert tape.watched_variables() == (w,)


def test_watch_accessed_variables_false_needs_explicit_watch():
    x, w = gt.Variable(2.0), gt.Variable(5.0)
    with gt.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(x)
        y = x ** 2
        z = w ** 3
    close(tape.gradient(y, x), 4.0)
    assert tape.gradient(z, w) is None
    assert tape.watched_variables() == (x,)
    with gt.GradientTape(watch_accessed_variables=False) as tape:
        y = x * w
    assert tape.gradient(y, [x, w]) == [None, None]
    assert tape.watched_variables() == ()


def test_watched_variables_are_in_creation_order():
    # TF lists them "in order of construction", whatever order they were read in.
    a, b, c = (gt.Variable(float(i), name=n) for i, n in enumerate("abc"))
    d = gt.Variable(9.0, name="d", trainable=False)
    with gt.GradientTape() as tape:
        y = c * b
        tape.watch(d)
        y = y + a * c + d
    assert [v.name for v in tape.watched_variables()] == ["a", "b", "c", "d"]
    tape.gradient(y, a)
    # still answered after the non-persistent tape gave up its recording
    assert [v.name for v in tape.watched_variables()] == ["a", "b", "c", "d"]


def test_watched_variables_before_recording_is_empty():
    assert gt.GradientTape().watched_variables() == ()


def test_integer_variable_read_is_watched_but_has_no_gradient():
    # TF watches every trainable variable read on a tape, of any dtype; gradients with
    # respect to integers are None (zeros with UnconnectedGradients.ZERO).
    i = gt.Variable(np.array([1, 2]), name="i")
    frozen = gt.Variable(np.array([3, 4]), name="frozen", trainable=False)
    w = gt.Variable(0.5, name="w")
    with gt.GradientTape() as tape:
        y = gt.sum(i * 2.0 + frozen * w)
    assert tape.watched_variables() == (i, w)
    gi, gw = tape.gradient(y, [i, w])
    assert gi is None and float(gw) == 7.0
    with gt.GradientTape() as tape:
        y = i * 2.0
    zero = tape.gradient(y, i, unconnected_gradients="zero")
    assert zero.dtype == np.int64 and zero.numpy().tolist() == [0, 0]


def test_variable_gradient_keeps_its_dtype():
    v = gt.Variable([1.0, -2.0], dtype="float32")
    with gt.GradientTape() as tape:
        y = gt.tanh(v) * 2.0
    g = tape.gradient(y, v)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), 2 * (1 - np.tanh(np.array([1.0, -2.0])) ** 2), rtol=1e-6)


def test_variable_in_nested_tapes():
    v = gt.Variable(3.0)
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            y = v ** 4
        g = inner.gradient(y, v)  # 4 v^3 = 108
    close(g, 108.0)
    close(outer.gradient(g, v), 108.0)  # 12 v^2


def test_value_is_a_recorded_read_as_in_tf():
    v = gt.Variable(3.0)
    with gt.GradientTape() as tape:
        r = v.value()
        v.assign(10.0)  # r is a snapshot: the assign does not change it
        y = r * r
    close(r, 3.0)
    close(tape.gradient(y, v), 6.0)
    assert tape.watched_variables() == (v,)
    close(v.read_value(), 10.0)
    assert v.value().dtype == v.dtype


def test_numpy_is_not_differentiable():
    v = gt.Variable(3.0)
    with gt.GradientTape() as tape:
        y = gt.constant(v.numpy()) * 2.0
    assert tape.gradient(y, v) is None


# --- assign between reads on one tape ---------------------------------------------------


def test_assign_between_two_reads_counts_each_read_at_its_value():
    # TF records every read of a variable; the gradient with respect to the
    # variable is the sum over reads, each evaluated at the value it saw.
    v = gt.Variable(2.0)
    with gt.GradientTape() as tape:
        a = v * v  # read 1 sees 2: d/dv = 2 * 2
        v.assign(5.0)
        b = v * 3.0  # read 2 sees 5: d/dv = 3
        y = a + b
    close(y, 4.0 + 15.0)
    close(tape.gradient(y, v), 4.0 + 3.0)


def test_assign_add_between_reads_in_a_product():
    v = gt.Variable(2.0)
    with gt.GradientTape() as tape:
        a = v * v  # 4, from v0 = 2
        v.assign_add(1.0)
        b = v * v  # 9, from v1 = 3
        y = a * b  # dy/dv = b * 2 v0 + a * 2 v1 = 9*4 + 4*6
    close(tape.gradient(y, v), 60.0)


def test_assign_between_reads_of_an_explicitly_watched_variable():
    for kwargs, trainable in [({}, False), ({"watch_accessed_variables": False}, True)]:
        w = gt.Variable(3.0, trainable=trainable)
        with gt.GradientTape(**kwargs) as tape:
            tape.watch(w)
            a = w * w  # 2 * 3
            w.assign(4.0)
            b = w * 2.0  # 2: the variable is still watched after the assign
            y = a + b
        close(tape.gradient(y, w), 8.0)
        assert tape.watched_variables() == (w,)


def test_assign_between_reads_with_an_outer_tape_active():
    # The inner gradient is replayed through gradtape ops so the outer tape can
    # record it; the replay must still use the value each read saw.
    v = gt.Variable(2.0)
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            a = v * v
            v.assign(5.0)
            b = v * 3.0
            y = a + b
        g = inner.gradient(y, v)
    close(g, 7.0)
    assert outer.watched_variables() == (v,)


def test_persistent_tape_gradient_after_assign_uses_old_reads():
    v = gt.Variable(1.0)
    with gt.GradientTape(persistent=True) as tape:
        y = v * v * v  # 3 v0^2 = 3
    v.assign(10.0)
    close(tape.gradient(y, v), 3.0)


# --- stop_gradient -------------------------------------------------------------------------


def test_stop_gradient():
    x = gt.constant(3.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * gt.stop_gradient(x)  # d/dx = stop_gradient(x) = 3
    close(tape.gradient(y, x), 3.0)


def test_stop_gradient_on_a_variable_and_a_structure():
    v = gt.Variable(2.0)
    x = gt.constant(4.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        s = gt.stop_gradient({"v": v, "pair": (x, x)})
        y = s["v"] * v + s["pair"][0] * x
    close(s["v"], 2.0)
    gv, gx = tape.gradient(y, [v, x])
    close(gv, 2.0)
    close(gx, 4.0)


def test_stop_gradient_blocks_second_order():
    x = gt.constant(2.0)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        g = gt.stop_gradient(inner.gradient(y, x))
    close(g, 12.0)
    assert outer.gradient(g, x) is None
