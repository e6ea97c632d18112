"""tf.GradientTape and tf.Variable as TensorFlow documents and tests them (its
python/eager/backprop_test.py and the API docs), one test per behaviour, against gradtape.

The expected numbers are TF's (worked by hand from the functions: d(x^3)/dx = 3x^2, ...).
Where gradtape deliberately differs, docs/coming_from.md's "Deliberate differences from
TensorFlow" says so, and the test here names the difference.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import gradtape as gt


def value(t):
    return None if t is None else np.asarray(t.numpy())


# --- targets and sources -----------------------------------------------------------------


def test_two_targets_are_summed_per_source():
    with gt.GradientTape() as t:
        x, y = gt.constant(3.0), gt.constant(2.0)
        t.watch([x, y])
        xx, yy = 2 * x, 3 * y
    dx, dy = t.gradient([xx, yy], [x, y])
    assert (float(dx), float(dy)) == (2.0, 3.0)


def test_output_gradients_may_be_python_floats_and_weight_each_target():
    with gt.GradientTape() as t:
        x, y = gt.constant(3.0), gt.constant(2.0)
        t.watch([x, y])
        loss = x * y
    (dx,) = t.gradient([loss, x], [x], output_gradients=[1.0, 2.0])
    assert float(dx) == 4.0  # y * 1 + 1 * 2


def test_a_target_that_is_its_own_source_has_gradient_one():
    x = gt.constant(3.0)
    with gt.GradientTape() as t:
        t.watch(x)
        y = x
    assert float(t.gradient(y, x)) == 1.0


def test_several_targets_that_are_the_source_add_up():
    x = gt.constant(3.0)
    with gt.GradientTape() as t:
        t.watch(x)
        y = x
    assert float(t.gradient([y, y], x)) == 2.0


def test_a_target_list_holding_the_source_and_a_function_of_it():
    x = gt.constant(2.0)
    with gt.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert float(t.gradient([x, y], x)) == 5.0  # 1 + 2x


def test_no_op_gradients_with_several_targets_and_sources():
    x, y = gt.constant(3.0), gt.constant(5.0)
    with gt.GradientTape() as t:
        t.watch(x)
        t.watch(y)
        z = y * y
    assert [float(g) for g in t.gradient([x, y, z], [x, y])] == [1.0, 11.0]


def test_a_watched_2x2_tensor_is_its_own_gradient_of_ones():
    a = gt.constant(np.full((2, 2), 2.0))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(a)
    np.testing.assert_array_equal(value(tape.gradient(a, [a])[0]), np.ones((2, 2)))
    np.testing.assert_array_equal(value(tape.gradient([a, a], [a])[0]), np.full((2, 2), 2.0))


def test_intermediate_values_are_sources_too():
    x = gt.constant(3.0)
    with gt.GradientTape() as g:
        g.watch(x)
        y = x * x
        z = y * y
    dz_dx, dz_dy = g.gradient(z, [x, y])
    assert (float(dz_dx), float(dz_dy)) == (108.0, 18.0)  # 4x^3, 2y


def test_the_same_source_twice_gets_its_gradient_twice():
    with gt.GradientTape(persistent=True) as g:
        x, y = gt.constant(3.0), gt.constant(5.0)
        g.watch(x)
        g.watch(y)
        z = x * x + x * y
    assert [float(d) for d in g.gradient(z, [x, x])] == [11.0, 11.0]
    assert [float(d) for d in g.gradient(z, [y, x])] == [3.0, 11.0]


def test_sources_keep_their_nested_structure():
    with gt.GradientTape(persistent=True) as g:
        x1, x2, x3 = gt.constant(3.0), gt.constant(3.1), gt.constant(3.2)
        g.watch(x1)
        g.watch(x2)
        g.watch(x3)
        y = x1 + 2 * x2 + 3 * x3

    def floats(tree):
        if isinstance(tree, dict):
            return {k: floats(v) for k, v in tree.items()}
        if isinstance(tree, (list, tuple)):
            return type(tree)(floats(v) for v in tree)
        return float(tree)

    assert floats(g.gradient(y, x1)) == 1.0
    assert floats(g.gradient(y, (x1,))) == (1.0,)
    assert floats(g.gradient(y, [(x1, x2), (x2, x3)])) == [(1.0, 2.0), (2.0, 3.0)]
    assert floats(g.gradient(y, (x1, x2, [x1, x3]))) == (1.0, 2.0, [1.0, 3.0])
    assert floats(g.gradient(y, [x1, {"x2": x2, "x3": x3}])) == [1.0, {"x2": 2.0, "x3": 3.0}]


def test_equal_constants_watched_separately_are_separate_sources():
    with gt.GradientTape() as g:
        x1, x2 = gt.constant(3.0), gt.constant(3.0)
        g.watch(x1)
        g.watch(x2)
        y = x1 + x2
    assert [float(d) for d in g.gradient(y, [x1])] == [1.0]


def test_variables_and_constants_give_the_same_gradients():
    def grads(a, b):
        with gt.GradientTape() as tape:
            tape.watch([a, b])
            y, z = a ** 3, b ** 2
        return [float(d) for d in tape.gradient([y, z], [a, b])]

    assert grads(gt.constant(2.0), gt.constant(2.0)) == grads(gt.Variable(2.0), gt.Variable(2.0)) == [12.0, 4.0]


def test_where_differentiates_the_branch_taken():
    def g(x0):
        x = gt.constant(x0)
        with gt.GradientTape() as t:
            t.watch(x)
            y = gt.where(x < 10, x, x * x)
        return float(t.gradient(y, x))

    assert (g(5.0), g(50.0)) == (1.0, 100.0)


def test_a_string_or_integer_target_has_no_gradient():
    x = gt.constant(3.0)
    i = gt.constant(4)
    with gt.GradientTape() as t:
        t.watch(x)
        with pytest.warns(UserWarning, match="must be floating"):
            t.watch(i)
    assert t.gradient(i, x) is None


# --- unconnected gradients -----------------------------------------------------------------


def test_unconnected_gradient_is_none_by_default():
    x, y = gt.constant(1.0), gt.constant(3.0)
    with gt.GradientTape() as g:
        g.watch([x, y])
        z = y * 2
    assert g.gradient(z, x) is None


@pytest.mark.parametrize("kind", [gt.constant, gt.Variable], ids=["constants", "variables"])
def test_unconnected_gradients_zero_has_the_source_shape(kind):
    x, y = kind(np.ones((2, 2))), kind(3.0)
    with gt.GradientTape() as g:
        g.watch([x, y])
        z = y * 2
    np.testing.assert_array_equal(value(g.gradient(z, x, unconnected_gradients="zero")), np.zeros((2, 2)))


def test_unknown_unconnected_gradients_value_is_named():
    x = gt.constant(1.0)
    with gt.GradientTape() as g:
        g.watch(x)
        z = x * 2
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'nonsense'"):
        g.gradient(z, x, unconnected_gradients="nonsense")


def test_stop_gradient_makes_a_staged_result_unconnected_zero():
    @gt.differentiable
    def h(y):
        return gt.stop_gradient(y * y)

    x = gt.constant(1.0)
    with gt.GradientTape() as g:
        g.watch(x)
        y = h(x + 2.0)
    assert float(g.gradient(y, x, unconnected_gradients="zero")) == 0.0


# --- Variable targets ------------------------------------------------------------------------


def test_gradient_of_a_variable_with_respect_to_itself_is_ones():
    v = gt.Variable([[1.0, 2.0], [3.0, 4.0]])
    with gt.GradientTape() as t:
        y = v * 2.0
    g = t.gradient(v, v)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(value(g), np.ones((2, 2)))


def test_gradient_of_a_variable_never_read_with_respect_to_itself_is_ones():
    v = gt.Variable(np.float32(1.5))
    with gt.GradientTape() as t:
        pass
    g = t.gradient(v, v)
    assert g.dtype == np.float32 and float(g) == 1.0


def test_gradient_of_a_variable_with_respect_to_another_variable_is_unconnected():
    # backprop_test's testGadientTapeCalledOnConstantTarget: Variables made in the tape, never read.
    with gt.GradientTape(persistent=True) as g:
        x = gt.Variable([3.0])
        y = gt.Variable([2.0])
    assert g.gradient(x, y) is None
    np.testing.assert_array_equal(value(g.gradient(x, y, unconnected_gradients="zero")), [0.0])


def test_python_max_of_variables_differentiates_the_largest():
    # backprop_test's testPythonMax: max() compares the Variables and returns one of them.
    x = [gt.Variable(2.0), gt.Variable(3.0), gt.Variable(5.0)]
    with gt.GradientTape() as t:
        f = max(x)
    assert float(f) == 5.0
    grad = t.gradient(f, x)
    assert grad[0] is None and grad[1] is None and float(grad[2]) == 1.0


def test_output_gradient_of_a_variable_target_is_its_seed():
    v = gt.Variable([1.0, 2.0])
    with gt.GradientTape() as t:
        y = gt.sum(v * v)
    dv = t.gradient([y, v], v, output_gradients=[None, np.array([10.0, 20.0])])
    np.testing.assert_array_equal(value(dv), [2.0 + 10.0, 4.0 + 20.0])


def test_the_variable_target_seed_is_differentiable_by_an_outer_tape():
    v = gt.Variable([1.0, 2.0])
    s = gt.constant([3.0, 4.0])
    with gt.GradientTape() as outer:
        outer.watch(s)
        with gt.GradientTape() as inner:
            y = gt.sum(v * v)
        dv = inner.gradient([y, v], v, output_gradients=[None, s])  # 2 v + s
        total = gt.sum(dv * s)
    # d/ds sum((2 v + s) s) = 2 v + 2 s
    np.testing.assert_array_equal(value(outer.gradient(total, s)), 2.0 * np.array([1.0, 2.0]) + 2.0 * np.array([3.0, 4.0]))


def test_jacobian_of_a_variable_with_respect_to_itself_is_the_identity():
    v = gt.Variable([1.0, 2.0, 3.0])
    w = gt.Variable(1.0)
    with gt.GradientTape() as t:
        pass
    jv, jw = t.jacobian(v, [v, w])
    np.testing.assert_array_equal(value(jv), np.eye(3))
    assert jw is None


def test_batch_jacobian_of_a_variable_with_respect_to_itself_is_an_identity_per_example():
    v = gt.Variable(np.arange(6.0).reshape(3, 2))
    with gt.GradientTape() as t:
        pass
    np.testing.assert_array_equal(value(t.batch_jacobian(v, v)), np.broadcast_to(np.eye(2), (3, 2, 2)))


# --- variables ------------------------------------------------------------------------------


def test_trainable_variables_are_watched_when_read():
    v = gt.Variable(1.0, name="v")
    with gt.GradientTape() as g:
        y = v * v
    assert float(g.gradient(y, [v])[0]) == 2.0


def test_a_read_value_is_the_variable_for_gradients():
    v0 = gt.Variable(1.0)
    with gt.GradientTape() as t:
        y = v0.read_value()
    assert float(t.gradient(y, v0)) == 1.0


def test_a_variable_made_in_the_tape_and_read_under_stop_recording_is_unconnected():
    with gt.GradientTape() as t:
        x = gt.Variable(1.0)
        with t.stop_recording():
            y = x * x
    assert t.gradient(y, x) is None


def test_stop_recording_then_recording_again():
    with gt.GradientTape(persistent=True) as t:
        x = gt.Variable(1.0)
        x2 = x * 2  # recorded
        with t.stop_recording():
            y = x2 * x2
        z = x2 * x2
    assert t.gradient(y, x2) is None
    assert float(t.gradient(z, x2)) == 4.0  # 2 * x2: x2 was recorded as x * 2


def test_stop_recording_drops_what_it_computes_from_the_gradient():
    x, y = gt.Variable(2.0), gt.Variable(3.0)
    with gt.GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    grad = t.gradient(z, {"x": x, "y": y})
    assert float(grad["x"]) == 4.0 and grad["y"] is None


def test_watch_inside_stop_recording_is_ignored():
    x = gt.constant(4.0)
    with gt.GradientTape() as tape:
        with tape.stop_recording():
            tape.watch(x)
        y = x ** 2
    assert tape.gradient(y, x) is None


def test_watch_inside_stop_recording_counts_while_an_outer_tape_records():
    # TF ignores the watch only when no tape at all records in the thread.
    x = gt.constant(4.0)
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            with inner.stop_recording():
                inner.watch(x)
            y = x ** 2
        assert float(inner.gradient(y, x)) == 8.0
    assert outer.gradient(y, x) is None


def test_watched_variables_are_listed_in_creation_order():
    a, b, c = gt.Variable(1.0, name="a"), gt.Variable(2.0, name="b"), gt.Variable(3.0, name="c")
    with gt.GradientTape() as t:
        y = c * a
        t.watch(b)
    assert t.watched_variables() == (a, b, c)


def test_automatic_watched_variables_and_reset():
    with gt.GradientTape() as t:
        assert len(t.watched_variables()) == 0
        v = gt.Variable(1.0)
        loss = v * v
        assert t.watched_variables() == (v,)
        t.reset()
        assert len(t.watched_variables()) == 0
        loss += v * v
        assert t.watched_variables() == (v,)
    assert float(t.gradient(loss, v)) == 2.0  # only what was recorded after the reset


def test_explicit_watched_variables_and_reset():
    with gt.GradientTape() as t:
        v = gt.Variable(1.0)
        t.watch(v)
        assert t.watched_variables() == (v,)
        t.reset()
        assert len(t.watched_variables()) == 0
        t.watch(v)
        assert t.watched_variables() == (v,)


def test_watched_variables_after_a_non_persistent_gradient_call():
    with gt.GradientTape() as tape:
        x = gt.Variable(1.0)
        tape.watch(x)
    tape.gradient(x, x)
    assert tape.watched_variables() == (x,)


def test_watched_variables_respect_reset_after_the_gradient_call():
    with gt.GradientTape() as tape:
        x = gt.Variable(1.0)
        tape.watch(x)
        assert tape.watched_variables() == (x,)
        tape.reset()
        z = gt.Variable(2.0)
        tape.watch(z)
        assert tape.watched_variables() == (z,)
    tape.gradient(z, z)
    assert tape.watched_variables() == (z,)


def test_an_integer_variable_read_is_a_watched_variable():
    i = gt.Variable(3, name="i")
    assert i.dtype == np.int64 and i.trainable
    w = gt.Variable(2.0, name="w")
    with gt.GradientTape() as tape:
        y = w * i
    assert tape.watched_variables() == (i, w)
    gi, gw = tape.gradient(y, [i, w])
    assert gi is None and float(gw) == 3.0


def test_an_integer_variable_watched_explicitly_is_listed_with_a_warning():
    i = gt.Variable(np.array([1, 2], np.int32), trainable=False)
    with gt.GradientTape() as tape:
        with pytest.warns(UserWarning, match="must be floating"):
            tape.watch(i)
    assert tape.watched_variables() == (i,)
    assert tape.gradient(i, i) is None


def test_a_non_trainable_integer_variable_read_is_not_watched():
    i = gt.Variable(3, trainable=False)
    w = gt.Variable(2.0)
    with gt.GradientTape() as tape:
        _ = w * i
    assert tape.watched_variables() == (w,)


def test_selectively_watched_variables():
    x1, x2 = gt.Variable(1.0), gt.Variable(1.0)
    with gt.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x2)
        y = x1 ** 2
        z = x2 ** 3
    assert tape.watched_variables() == (x2,)
    dy, dz = tape.gradient([y, z], [x1, x2])
    assert dy is None and float(dz) == 3.0


def test_watching_is_tape_local():
    x1 = gt.Variable(2.0, trainable=False)
    x2 = gt.Variable(2.0, trainable=False)
    with gt.GradientTape() as tape1:
        with gt.GradientTape() as tape2:
            tape1.watch(x1)
            tape2.watch([x1, x2])
            y = x1 ** 3
            z = x2 ** 2
            dy, dz = tape2.gradient([y, z], [x1, x2])
        d2y, d2z = tape1.gradient([dy, dz], [x1, x2])
    assert float(d2y) == 12.0  # 6 x1
    assert d2z is None


# --- tape lifetime -------------------------------------------------------------------------


def test_gradient_inside_the_tape_block():
    v1 = gt.Variable(1.0)
    with gt.GradientTape() as t:
        loss = 2 * v1
        grad = t.gradient(loss, v1)
    assert float(grad) == 2.0
    with gt.GradientTape(persistent=True) as t:
        loss = 2 * v1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the documented persistent-tape warning
            grad = t.gradient(loss, v1)
    assert float(grad) == 2.0


def test_entering_a_tape_inside_itself_raises():
    with gt.GradientTape() as t:
        with pytest.raises(ValueError):
            with t:
                pass


def test_reentering_a_tape_keeps_recording_on_it():
    g = gt.GradientTape()
    with g:
        x = gt.constant(3.0)
        g.watch(x)
        y = 2 * x
    with g:
        z = 2 * y
    assert [float(d) for d in g.gradient(target=z, sources=[x])] == [4.0]


def test_a_non_persistent_tape_computes_one_set_of_gradients():
    with gt.GradientTape() as g:
        x = gt.constant(3.0)
        g.watch(x)
        y = x * x
        z = y * y
    g.gradient(z, [x])
    with pytest.raises(RuntimeError, match=re.escape(
            "A non-persistent GradientTape can only be used to compute one set of gradients")):
        g.gradient(y, [x])


def test_persistent_tape_answers_several_gradients():
    with gt.GradientTape(persistent=True) as g:
        x = gt.constant(3.0)
        g.watch(x)
        y = x * x
        z = y * y
    assert float(g.gradient(z, [x])[0]) == 4 * 3 ** 3
    assert float(g.gradient(y, [x])[0]) == 2 * 3


def test_higher_order_gradients_from_one_persistent_tape():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gradients inside a persistent tape's block warn once
        with gt.GradientTape(persistent=True) as g:
            x = gt.constant(3.0)
            g.watch(x)
            y = x ** 3
            dy_dx = g.gradient(y, x)
            d2y_dx2 = g.gradient(dy_dx, x)
        d3y_dx3 = g.gradient(d2y_dx2, x)
    assert (float(y), float(dy_dx), float(d2y_dx2), float(d3y_dx3)) == (27.0, 27.0, 18.0, 6.0)


def test_nested_tapes_differentiate_an_inner_gradient():
    with gt.GradientTape() as g:
        x = gt.constant(3.0)
        g.watch(x)
        y = x * x
        with gt.GradientTape() as gg:
            gg.watch(y)
            z = 2 * y
        inner_grad = gg.gradient(z, [y])[0]
        assert float(inner_grad) == 2.0
        y += inner_grad
    assert float(g.gradient(y, [x])[0]) == 6.0


def test_persistent_nested_tapes():
    with gt.GradientTape(persistent=True) as g:
        x = gt.constant(3.0)
        g.watch(x)
        y = x * x
        with gt.GradientTape(persistent=True) as gg:
            gg.watch(y)
            z = 2 * y
        for _ in range(2):
            inner_grad = gg.gradient(z, [y])[0]
            assert float(inner_grad) == 2.0
        y += inner_grad
    assert float(g.gradient(y, [x])[0]) == 6.0
    assert float(g.gradient(z, [x])[0]) == 12.0


def test_watch_of_an_array_names_ndarray():
    with pytest.raises(ValueError, match="ndarray"):
        gt.GradientTape().watch(np.array(1.0))


# --- jacobian and batch_jacobian -------------------------------------------------------------


@pytest.mark.parametrize("use_pfor", [True, False])
def test_jacobian_with_and_without_pfor(use_pfor):
    with gt.GradientTape(persistent=not use_pfor) as g:
        x, y = gt.constant([1.0, 2.0]), gt.constant([3.0, 4.0])
        g.watch(x)
        g.watch(y)
        z = x * x * y
    jx, jy = g.jacobian(z, [x, y], experimental_use_pfor=use_pfor)
    np.testing.assert_array_equal(value(jx), np.diag(2 * np.array([1.0, 2.0]) * [3.0, 4.0]))
    np.testing.assert_array_equal(value(jy), np.diag(np.array([1.0, 2.0]) ** 2))


def test_jacobian_without_pfor_needs_a_persistent_tape():
    with gt.GradientTape() as g:
        x = gt.constant([1.0, 2.0])
        g.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent"):
        g.jacobian(y, x, experimental_use_pfor=False)


def test_jacobian_parallel_iterations_does_not_change_the_answer():
    with gt.GradientTape(persistent=True) as g:
        x = gt.constant([[1.0, 2.0], [3.0, 4.0]])
        g.watch(x)
        y = x @ x
    np.testing.assert_array_equal(value(g.jacobian(y, x, parallel_iterations=2)),
                                  value(g.jacobian(y, x, parallel_iterations=3)))


@pytest.mark.parametrize("use_pfor", [True, False])
def test_batch_jacobian_with_and_without_pfor(use_pfor):
    with gt.GradientTape(persistent=not use_pfor) as g:
        x = gt.constant([[1.0, 2.0], [3.0, 4.0]])
        y = gt.constant([[3.0, 4.0], [5.0, 6.0]])
        g.watch(x)
        z = x * x * y
    got = value(g.batch_jacobian(z, x, experimental_use_pfor=use_pfor))
    want = np.stack([np.diag(2 * np.array([1.0, 2.0]) * [3.0, 4.0]), np.diag(2 * np.array([3.0, 4.0]) * [5.0, 6.0])])
    np.testing.assert_array_equal(got, want)


def test_batch_jacobian_needs_matching_first_dimensions():
    x = gt.constant(np.ones((2, 3)))
    with gt.GradientTape() as g:
        g.watch(x)
        y = gt.concatenate([x, x], axis=0)
    with pytest.raises(ValueError, match="Need first dimension"):
        g.batch_jacobian(y, x)


@pytest.mark.parametrize("use_pfor", [True, False])
def test_batch_jacobian_of_a_degenerate_shape(use_pfor):
    x = gt.constant(np.zeros((1, 0)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 2
    assert value(tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor)).shape == (1, 0, 0)


def test_batch_jacobian_of_a_jacobian_from_nested_tapes():
    x = gt.constant(np.ones((10, 2)))
    with gt.GradientTape() as g:
        g.watch(x)
        with gt.GradientTape() as gg:
            gg.watch(x)
            y = gt.sum(x * x)
        dy_x = gg.jacobian(y, x)
    np.testing.assert_array_equal(value(g.batch_jacobian(dy_x, x)), np.broadcast_to(2 * np.eye(2), (10, 2, 2)))


def test_batch_jacobian_accepts_rank_1_unlike_tf():
    # A deliberate difference (docs/coming_from.md): TF requires rank >= 2; rank 1 is one scalar per example.
    x = gt.constant([1.0, 2.0, 3.0])
    with gt.GradientTape() as g:
        g.watch(x)
        y = x ** 3
    np.testing.assert_array_equal(value(g.batch_jacobian(y, x)), 3 * np.array([1.0, 2.0, 3.0]) ** 2)


# --- tf.Variable ------------------------------------------------------------------------------


def test_variable_assign_methods_return_the_variable_and_update_it():
    v = gt.Variable(1.0)
    assert v.assign(2.0) is v and float(v) == 2.0
    assert v.assign_add(0.5) is v and float(v) == 2.5
    assert v.assign_sub(1.0) is v and float(v) == 1.5


def test_variable_shape_dtype_name_and_trainable():
    v = gt.Variable(np.zeros((2, 3), np.float32), name="kernel", trainable=False)
    assert (v.shape, v.dtype, v.name, v.trainable) == ((2, 3), np.float32, "kernel", False)


def test_variable_assign_of_another_shape_raises():
    v = gt.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match="cannot assign a value of shape \\(3,\\) to variable 'v' of shape \\(2,\\)"):
        v.assign([1.0, 2.0, 3.0])


def test_gradient_descent_on_a_variable_with_assign_sub():
    x = gt.Variable(2.0)
    losses = []
    for _ in range(5):
        with gt.GradientTape() as t:
            loss = 2.0 * x.read_value()
        losses.append(float(loss))
        x.assign_sub(0.25 * t.gradient(loss, x))
    assert losses == [4.0, 3.0, 2.0, 1.0, 0.0]


# --- deliberate differences from TF (docs/coming_from.md: "Gradients where TF's differ, on purpose")


def test_where_gradient_is_nan_safe_unlike_tf():
    x = gt.constant([0.0, 4.0])
    with gt.GradientTape() as t:
        t.watch(x)
        y = gt.where(x > 0, gt.log(x), 0.0)
    np.testing.assert_array_equal(value(t.gradient(y, x)), [0.0, 0.25])  # TF: [nan, 0.25]


@pytest.mark.parametrize("fn", [gt.maximum, gt.minimum], ids=["maximum", "minimum"])
def test_maximum_and_minimum_split_ties_evenly_unlike_tf(fn):
    x, y = gt.constant([1.0, 3.0]), gt.constant([1.0, 2.0])
    with gt.GradientTape() as t:
        t.watch([x, y])
        z = fn(x, y)
    dx, dy = t.gradient(z, [x, y])
    winner_is_x = fn is gt.maximum  # at index 1: maximum picks x = 3, minimum picks y = 2
    np.testing.assert_array_equal(value(dx), [0.5, 1.0 if winner_is_x else 0.0])  # TF: [1, ...]
    np.testing.assert_array_equal(value(dy), [0.5, 0.0 if winner_is_x else 1.0])  # TF: [0, ...]


def test_maximum_of_a_tensor_with_itself_has_gradient_one():
    x = gt.constant(1.5)
    with gt.GradientTape() as t:
        t.watch(x)
        y = gt.maximum(x, x)
    assert float(t.gradient(y, x)) == 1.0


@pytest.mark.parametrize("fn", [gt.floor, gt.ceil, gt.round, gt.sign], ids=lambda f: f.__name__)
def test_piecewise_constant_functions_have_zero_gradient_not_none_unlike_tf(fn):
    x = gt.constant([0.3, 1.7, -2.2])
    with gt.GradientTape() as t:
        t.watch(x)
        y = fn(x)
    g = t.gradient(y, x)
    assert g is not None  # TF: None
    np.testing.assert_array_equal(value(g), np.zeros(3))


def test_variable_dtype_argument_converts_the_initial_value():
    v = gt.Variable(1, dtype=np.float32)
    assert v.dtype == np.float32 and float(v) == 1.0


def test_a_variable_is_used_like_a_tensor_and_its_ops_give_tensors():
    v = gt.Variable(gt.constant([1.0, 2.0]))
    out = v + 1
    assert type(out) is gt.Tensor
    np.testing.assert_array_equal(out.numpy(), [2.0, 3.0])


def test_a_read_value_does_not_change_when_the_variable_is_assigned():
    v = gt.Variable([1.0, 2.0])
    read = v.read_value()
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(read.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])


def test_variable_repr_names_shape_dtype_and_value():
    assert repr(gt.Variable(np.zeros(2), name="z")) == "<Variable 'z' shape=(2,) dtype=float64 numpy=[0., 0.]>"
