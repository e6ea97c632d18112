"""t[index] = v on a Tensor: the object takes the value of t.at[index].set(v) (tracer/rebind.py).
Other references to the object see the update; tensors computed from it before keep their
values; gradients are right on the tape and in staged functions, to second order."""
import gc

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads


def squares_of_first_three(x):
    y = gt.zeros_like(x)
    for i in range(3):
        y[i] = x[i] ** 2
    return gt.sum(y)


def smooth(x):
    """A NumPy program that fills a preallocated array in a loop (np.zeros_like dispatches to
    gradtape on a tensor): an exponential moving average."""
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = 0.5 * out[i - 1] + np.sin(x[i])
    return out


def smooth_reference(x):
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = 0.5 * out[i - 1] + np.sin(x[i])
    return out


X = np.array([0.5, -1.0, 2.0, 0.25, 1.5])


def test_the_loop_has_gradient_2x_on_the_first_three_entries_staged_to_second_order():
    np.testing.assert_allclose(gt.grad(squares_of_first_three)(X), [1.0, -2.0, 4.0, 0.0, 0.0])
    hessian = gt.hessian(squares_of_first_three)(X)
    np.testing.assert_allclose(hessian, np.diag([2.0, 2.0, 2.0, 0.0, 0.0]))
    check_grads(squares_of_first_three, [X], order=2)


def test_the_loop_on_nested_tapes_to_second_order():
    x = gt.constant(X)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            loss = squares_of_first_three(x)
        g = inner.gradient(loss, x)
        gg = gt.sum(g * g)  # sum (2 x_i)^2 over i < 3: its gradient is 8 x_i
    np.testing.assert_allclose(g.numpy(), [1.0, -2.0, 4.0, 0.0, 0.0])
    np.testing.assert_allclose(outer.gradient(gg, x).numpy(), [4.0, -8.0, 16.0, 0.0, 0.0])


def test_a_numpy_program_filling_a_preallocated_array_on_the_tape_and_staged():
    np.testing.assert_allclose(np.asarray(gt.differentiable(smooth)(X)), smooth_reference(X))
    x = gt.constant(X)
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = smooth(x)
        loss = gt.sum(out ** 2)
    np.testing.assert_allclose(out.numpy(), smooth_reference(X))
    staged = gt.grad(lambda x: gt.sum(smooth(x) ** 2))(X)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), staged, rtol=1e-12)
    check_grads(lambda x: gt.sum(smooth(x) ** 2), [X], order=2)


def test_other_references_see_the_update_and_derived_tensors_keep_their_values():
    y = gt.constant([1.0, 2.0, 3.0])
    alias, view, scaled = y, y[1:], y * 2
    y[1] = 10.0
    np.testing.assert_array_equal(alias.numpy(), [1.0, 10.0, 3.0])
    np.testing.assert_array_equal(view.numpy(), [2.0, 3.0])  # a copy, not a NumPy view
    np.testing.assert_array_equal(scaled.numpy(), [2.0, 4.0, 6.0])


def test_on_a_tape_pending_tensors_computed_before_keep_the_old_value():
    x = gt.constant([1.0, 2.0, 3.0])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 1.0  # recorded, not yet computed (deferred.py)
        z = y * 2.0  # reads y's old value when computed
        y[0] = x[1] ** 3
        loss = gt.sum(y * y) + gt.sum(z)
    np.testing.assert_array_equal(y.numpy(), [8.0, 2.0, 3.0])
    np.testing.assert_array_equal(z.numpy(), [2.0, 4.0, 6.0])
    # d/dx of x1^6 + x1^2 + x2^2 + 2 (x0 + x1 + x2)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), [2.0, 6 * 32 + 4 + 2, 6 + 2])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.0, 13.0, 1.0])


def test_a_watched_tensor_and_a_variable_refuse():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match="watched by a GradientTape"):
            x[0] = 5.0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    v = gt.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match=r"v\.assign\(v\.at\[i\]\.set\(x\)\)"):
        v[0] = 5.0
    v.assign(v.at[0].set(5.0))
    np.testing.assert_array_equal(v.numpy(), [5.0, 2.0])


def test_a_staged_functions_argument_is_updated_inside_it_only():
    def f(a):
        a[1] = a[0] * 3.0
        return gt.sum(a * a)

    a = np.array([1.0, 2.0])
    np.testing.assert_allclose(gt.grad(f)(a), [2.0 + 18.0, 0.0])
    np.testing.assert_array_equal(a, [1.0, 2.0])
    returned = gt.differentiable(lambda a: (a.__setitem__(0, 7.0), a)[1])(a)
    np.testing.assert_array_equal(np.asarray(returned), [7.0, 2.0])


def test_in_a_forward_accumulator():
    x = gt.constant([1.0, 2.0])
    with gt.ForwardAccumulator(x, gt.constant([1.0, 0.0])) as acc:
        y = x * 1.0
        y[1] = x[0] ** 2
    np.testing.assert_allclose(acc.jvp(y).numpy(), [1.0, 2.0])


def test_vmap_of_a_function_assigning_a_batched_index():
    def f(x, i):
        y = x * 1.0
        y[i] = 0.0
        return y

    xs, idx = np.arange(6.0).reshape(2, 3), np.array([2, 0])
    np.testing.assert_array_equal(np.asarray(gt.vmap(f)(xs, idx)), [[0.0, 1.0, 0.0], [0.0, 4.0, 5.0]])


def _kept_after_the_tape(x):
    """t and a value computed from it, both unread, returned from a tape that is then freed."""
    with gt.GradientTape() as tape:
        tape.watch(x)
        t = x * 1.0
        z = gt.sin(t) * 2.0
    return t, z


def test_a_value_computed_before_the_assignment_keeps_its_value_after_its_tape_is_gone():
    x = gt.constant([1.0, 2.0])
    t, z = _kept_after_the_tape(x)
    gc.collect()
    t[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), [5.0, 2.0])
    np.testing.assert_allclose(z.numpy(), np.sin([1.0, 2.0]) * 2.0)


def test_a_constant_operand_assigned_after_a_released_recording_keeps_the_result():
    x, c = gt.constant([1.0, 2.0]), gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        z = c * x
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [1.0, 2.0])  # releases the recording
    c[1] = 7.0
    np.testing.assert_array_equal(z.numpy(), [1.0, 4.0])


def test_augmented_assignment_binds_a_new_tensor_and_leaves_other_references_alone():
    t = gt.constant([1.0, 2.0])
    alias = t
    t += 1.0
    assert t is not alias
    np.testing.assert_array_equal(t.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(alias.numpy(), [1.0, 2.0])
