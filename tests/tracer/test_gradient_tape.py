"""GradientTape against tf.GradientTape's semantics.

Every expected number is derived by hand (in a comment) or checked against
central finite differences; every misuse asserts the exception type and text.
Only elementwise functions and operators are used, so these tests do not
depend on reductions, slicing or matmul.
"""
import re
import warnings
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest

import gradtape as gt

NON_PERSISTENT = (
    "A non-persistent GradientTape can only be used to compute one set of "
    "gradients (or jacobians)"
)


def c(value, dtype=None):
    return gt.constant(value, dtype=dtype)


def close(tensor, expected, **kw):
    assert tensor is not None, "expected a gradient, got None"
    np.testing.assert_allclose(tensor.numpy(), expected, **kw)


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of the sum of f's elements, on float64 arrays."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (np.sum(f(hi)) - np.sum(f(lo))) / (2 * eps)
    return g


def recorded(x_value, f, persistent=False):
    """Run f on a watched constant; returns (tape, x, y)."""
    x = c(x_value)
    with gt.GradientTape(persistent=persistent) as tape:
        tape.watch(x)
        y = f(x)
    return tape, x, y


# --- watch and what is recorded -----------------------------------------------


def test_watched_constant_gradient():
    tape, x, y = recorded(3.0, lambda x: x * x)
    close(tape.gradient(y, x), 6.0)  # d(x^2) = 2x


@pytest.mark.parametrize(
    "f, np_f",
    [
        (lambda x: gt.exp(x) * gt.sin(x), lambda x: np.exp(x) * np.sin(x)),
        (lambda x: gt.tanh(x) / (x * x + 1.0), lambda x: np.tanh(x) / (x * x + 1.0)),
        (lambda x: (x - 0.5) ** 3 - 2.0 * x, lambda x: (x - 0.5) ** 3 - 2.0 * x),
        (lambda x: 1.0 / (1.0 + gt.exp(-x)), lambda x: 1.0 / (1.0 + np.exp(-x))),
    ],
)
def test_gradient_matches_finite_differences(f, np_f):
    x0 = np.array([-1.3, 0.2, 0.7, 2.1])
    tape, x, y = recorded(x0, f)
    close(tape.gradient(y, x), fd_grad(np_f, x0), rtol=1e-6, atol=1e-8)


def test_watch_nested_structure():
    a, b, d = c(1.0), c(2.0), c(3.0)
    with gt.GradientTape() as tape:
        tape.watch({"p": [a, (b,)], "q": d})
        y = a * b * d
    grads = tape.gradient(y, [a, b, d])
    for g, want in zip(grads, [6.0, 3.0, 2.0]):
        close(g, want)


def test_watch_variable_explicitly():
    v = gt.Variable(2.0, trainable=False)
    with gt.GradientTape() as tape:
        tape.watch(v)
        y = v * v * v
    close(tape.gradient(y, v), 12.0)  # 3 v^2


def test_watch_non_float_warns_and_gives_none():
    i = c(3)
    with gt.GradientTape() as tape:
        with pytest.warns(UserWarning, match=r"The dtype of the watched tensor must be floating .*got int64"):
            tape.watch(i)
        y = i * 2
    assert tape.gradient(y, i) is None


@pytest.mark.parametrize("bad", [2.0, np.ones(3), [c(1.0), "s"], None])
def test_watch_non_tensor_raises(bad):
    tape = gt.GradientTape()
    with tape:
        with pytest.raises(ValueError, match="Passed in object .* of type '(float|ndarray|str|NoneType)', not a gradtape Tensor or Variable"):
            tape.watch(bad)


def test_unwatched_constant_is_not_recorded():
    x = c(3.0)
    with gt.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_ops_before_enter_and_after_exit_are_not_recorded():
    x = c(2.0)
    before = x * x
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        inside = before * x  # only this multiplication is recorded
    after = inside * x
    assert tape.gradient(before, x) is None
    assert tape.gradient(after, x) is None
    close(tape.gradient(inside, x), 4.0)  # d(before * x)/dx with before constant = before


def test_ops_on_constants_alone_are_not_recorded():
    x, k = c(2.0), c(5.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * k  # recorded: touches x
        z = k * k  # touches nothing watched, even though k met x above
        w = z + 1.0
    assert len(tape._tape.eqns) == 1
    assert tape.gradient([y, w], x).numpy() == 5.0


def test_watch_a_tensor_already_computed_on_the_tape_keeps_its_history():
    x = c(2.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        tape.watch(y)  # TF: no-op for a tensor the tape already tracks
        z = y * y
    close(tape.gradient(z, x), 32.0)  # 4 x^3
    close(tape.gradient(z, y), 8.0)  # 2 y


def test_watch_constant_after_first_use_counts_every_use():
    # TF tracks tensors by id: a constant watched late gets the gradient of
    # every recorded op that read it, not only of the later ones.
    x, k = c(2.0), c(3.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * k
        tape.watch(k)
        z = k * k
        total = y + z
    close(tape.gradient(total, k), 2.0 + 6.0)  # x + 2k


def test_watch_before_entering_is_kept():
    # Deliberate difference: TF ignores watch() outside the context.
    x = c(3.0)
    tape = gt.GradientTape()
    tape.watch(x)
    with tape:
        y = x * x
    close(tape.gradient(y, x), 6.0)


def test_watch_after_non_persistent_use_raises():
    tape, x, y = recorded(3.0, lambda x: x * x)
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT + "; it cannot watch tensors after that")):
        tape.watch(x)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        tape.gradient(y, x)


def test_reentering_a_used_non_persistent_tape_starts_afresh():
    x = c(3.0)
    tape = gt.GradientTape()
    with tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with tape:
        tape.watch(x)
        z = x * x * x
    close(tape.gradient(z, x), 27.0)


# --- gradient: structure of results -------------------------------------------

P = namedtuple("P", "a b")


@pytest.fixture
def xyz():
    x, y = c([1.0, 2.0]), c(3.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        out = x * x * y  # d/dx = 2xy = [6, 12]; d/dy = sum(x^2) = 5
    return tape, x, y, out


def test_structure_tensor(xyz):
    tape, x, y, out = xyz
    g = tape.gradient(out, x)
    assert isinstance(g, gt.Tensor)
    close(g, [6.0, 12.0])


def test_structure_list_and_tuple(xyz):
    tape, x, y, out = xyz
    g = tape.gradient(out, [x, y])
    assert isinstance(g, list) and len(g) == 2
    close(g[0], [6.0, 12.0])
    close(g[1], 5.0)
    g = tape.gradient(out, (y,))
    assert isinstance(g, tuple) and len(g) == 1
    close(g[0], 5.0)


def test_structure_dict_keeps_key_order(xyz):
    tape, x, y, out = xyz
    g = tape.gradient(out, {"zeta": x, "alpha": y})
    assert list(g) == ["zeta", "alpha"]
    close(g["zeta"], [6.0, 12.0])
    close(g["alpha"], 5.0)
    g = tape.gradient(out, OrderedDict([("b", y), ("a", x)]))
    assert type(g) is OrderedDict and list(g) == ["b", "a"]
    close(g["b"], 5.0)
    g = tape.gradient(out, defaultdict(list, {"x": x}))
    assert type(g) is defaultdict and g.default_factory is list
    close(g["x"], [6.0, 12.0])


def test_structure_nested_and_namedtuple(xyz):
    tape, x, y, out = xyz
    g = tape.gradient(out, P(a=x, b=[y, {"k": (x,)}]))
    assert isinstance(g, P)
    close(g.a, [6.0, 12.0])
    close(g.b[0], 5.0)
    close(g.b[1]["k"][0], [6.0, 12.0])


def test_same_source_listed_twice(xyz):
    tape, x, y, out = xyz
    g1, g2 = tape.gradient(out, [y, y])
    close(g1, 5.0)
    close(g2, 5.0)


# --- gradient: targets ---------------------------------------------------------


def test_several_targets_are_summed(xyz):
    tape, x, y, out = xyz
    close(tape.gradient([out, out], y), 10.0)
    # {"p": x^2 y, "q": x}: d/dx = 2xy + 1
    close(tape.gradient({"p": out, "q": x}, x), [7.0, 13.0])
    close(tape.gradient((out, [x]), x), [7.0, 13.0])
    # a target computed after the tape exited was not recorded: it adds nothing
    close(tape.gradient([out, x * 1.0], x), [6.0, 12.0])


def test_non_scalar_target_counts_as_its_sum():
    x0 = np.array([0.5, -1.0, 2.0])
    tape, x, y = recorded(x0, lambda x: gt.sin(x) * x)
    close(tape.gradient(y, x), np.cos(x0) * x0 + np.sin(x0))


def test_target_is_the_source_gives_ones():
    x = c([[1.0, 2.0], [3.0, 4.0]])
    with gt.GradientTape() as tape:
        tape.watch(x)
    g = tape.gradient(x, x)
    close(g, np.ones((2, 2)))


def test_gradient_with_respect_to_an_intermediate():
    # TF differentiates with respect to any tensor computed on the tape.
    x = c(3.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y + x
    close(tape.gradient(z, y), 18.0)  # 2y
    gx, gy = tape.gradient(z, [x, y])
    close(gx, 4 * 27.0 + 1.0)  # the path through y still counts for x
    close(gy, 18.0)
    close(tape.gradient(y, y), 1.0)


def test_variable_target_is_the_variable_itself():
    # As TF (it differentiates the variable's handle): d v / d v is ones, whether or not v
    # was read, and a Variable target is unconnected to everything else.
    v, w = gt.Variable([1.0, 2.0]), gt.Variable(3.0)
    with gt.GradientTape() as tape:
        _ = v * 2.0
    dv, dw = tape.gradient(v, [v, w])
    np.testing.assert_array_equal(dv.numpy(), [1.0, 1.0])
    assert dw is None
    with gt.GradientTape() as tape:
        y = gt.sum(v * w)
    dv, dw = tape.gradient([y, v], [v, w])  # summed with the recorded target's gradient
    np.testing.assert_array_equal(dv.numpy(), [4.0, 4.0])
    assert float(dw) == 3.0


def test_none_target_raises():
    tape, x, y = recorded(1.0, lambda x: x * 2.0)
    with pytest.raises(TypeError, match=r"Argument `target` should be a list or nested structure of Tensors or Variables to be differentiated, but received None\."):
        tape.gradient(None, x)


def test_non_tensor_target_raises():
    tape, x, y = recorded(1.0, lambda x: x * 2.0, persistent=True)
    with pytest.raises(TypeError, match="GradientTape.gradient: targets must be Tensors, got float at position 1"):
        tape.gradient([y, 3.0], x)


def test_non_tensor_source_raises():
    tape, x, y = recorded(1.0, lambda x: x * 2.0, persistent=True)
    with pytest.raises(TypeError, match="sources must be Tensors or Variables, got ndarray at position 1"):
        tape.gradient(y, [x, np.ones(2)])


def test_non_float_target_gives_none():
    tape, x, y = recorded([1.0, 2.0], lambda x: x > 1.5)
    assert tape.gradient(y, x) is None


# --- gradient: output_gradients -------------------------------------------------


def test_output_gradients_weight_the_target(xyz):
    tape, x, y, out = xyz
    close(tape.gradient(out, x, output_gradients=c([10.0, 100.0])), [60.0, 1200.0])
    close(tape.gradient(out, y, output_gradients=[np.array([1.0, -1.0])]), 1.0 - 4.0)


def test_output_gradients_one_per_target(xyz):
    tape, x, y, out = xyz
    g = tape.gradient([out, x], x, output_gradients=[c([1.0, 0.0]), c([0.0, 1.0])])
    close(g, [6.0, 1.0])
    # None means ones for that target
    close(tape.gradient([out, x], x, output_gradients=[None, c([0.0, 2.0])]), [6.0, 14.0])


def test_output_gradients_wrong_count_raises(xyz):
    tape, x, y, out = xyz
    with pytest.raises(ValueError, match=r"output_gradients has 1 entries but there are 2 targets"):
        tape.gradient([out, x], x, output_gradients=[c([1.0, 0.0])])


def test_output_gradients_wrong_shape_raises(xyz):
    tape, x, y, out = xyz
    with pytest.raises(ValueError, match=re.escape("output_gradients: an entry of shape (3,) was given for a target of shape (2,)")):
        tape.gradient(out, x, output_gradients=c([1.0, 2.0, 3.0]))


def test_output_gradients_are_differentiable_by_an_outer_tape():
    x, u = c(3.0), c(5.0)
    with gt.GradientTape() as outer:
        outer.watch(u)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        g = inner.gradient(y, x, output_gradients=u)  # 2 x u
    close(g, 30.0)
    close(outer.gradient(g, u), 6.0)  # 2 x


# --- gradient: unconnected and zero gradients ------------------------------------


def test_unconnected_source_gives_none(xyz):
    tape, x, y, out = xyz
    z = c([1.0, 1.0, 1.0])
    g = tape.gradient(out, [x, z])
    close(g[0], [6.0, 12.0])
    assert g[1] is None


@pytest.mark.parametrize("mode", ["zero", gt.UnconnectedGradients.ZERO])
def test_unconnected_zero(xyz, mode):
    tape, x, y, out = xyz
    z = c([1.0, 1.0, 1.0], dtype="float32")
    g = tape.gradient(out, [x, z], unconnected_gradients=mode)
    close(g[0], [6.0, 12.0])
    assert g[1].dtype == np.float32 and g[1].shape == (3,)
    close(g[1], np.zeros(3))


def test_unconnected_none_spelled_out(xyz):
    tape, x, y, out = xyz
    z = c(1.0)
    assert tape.gradient(out, z, unconnected_gradients="none") is None
    assert tape.gradient(out, z, unconnected_gradients=gt.UnconnectedGradients.NONE) is None


@pytest.mark.parametrize("bad", ["zeros", "None", None, 0])
def test_unconnected_unknown_value_raises(xyz, bad):
    tape, x, y, out = xyz
    with pytest.raises(ValueError, match=re.escape(f"Unknown value for unconnected_gradients: {bad!r}")):
        tape.gradient(out, x, unconnected_gradients=bad)


def test_unconnected_unknown_value_does_not_consume_the_tape():
    tape, x, y = recorded(2.0, lambda x: x * x)
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="zeroes")
    close(tape.gradient(y, x), 4.0)


def test_connected_but_zero_gradient_is_zeros_not_none():
    x0 = np.array([1.5, -2.5])
    tape, x, y = recorded(x0, lambda x: x * 0.0, persistent=True)
    close(tape.gradient(y, x), [0.0, 0.0])
    tape, x, y = recorded(x0, gt.floor, persistent=True)
    close(tape.gradient(y, x), [0.0, 0.0])
    tape, x, y = recorded(x0, lambda x: gt.stop_gradient(x) * 2.0)
    assert tape.gradient(y, x) is None  # stop_gradient cuts the path: unconnected


def test_gradient_has_the_source_dtype():
    x = c([1.0, 2.0], dtype="float32")
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * 2.0  # Python scalars are weak: stays float32
        y64 = gt.cast(x, "float64") * 3.0
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    close(g, [4.0, 8.0])
    g = tape.gradient(y64, x)
    assert g.dtype == np.float32
    close(g, [3.0, 3.0])
    x64 = c([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x64)
        y = gt.cast(x64, "float32") * x64  # promotes back to float64
    g = tape.gradient(y, x64)
    assert g.dtype == np.float64
    close(g, [2.0, 4.0])


def test_int_source_gives_none_and_zero_mode_gives_int_zeros():
    i = c([1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gt.GradientTape(persistent=True) as tape:
            tape.watch(i)
            y = i * 2.0
    assert tape.gradient(y, i) is None
    g = tape.gradient(y, i, unconnected_gradients="zero")  # TF: zeros_like(source)
    assert g.dtype == np.int64
    np.testing.assert_array_equal(g.numpy(), [0, 0])


def test_where_log_has_zero_gradient_at_zero():
    x = c([0.0, 1.0, 2.0, -1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.where(x > 0, gt.log(x), 0.0)
    g = tape.gradient(y, x)
    assert not np.any(np.isnan(g.numpy()))
    close(g, [0.0, 1.0, 0.5, 0.0])  # 1/x where x > 0


# --- persistence and calls inside the context -------------------------------------


def test_non_persistent_second_call_raises():
    tape, x, y = recorded(3.0, lambda x: x * x)
    close(tape.gradient(y, x), 6.0)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        tape.jacobian(y, x)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        tape.batch_jacobian(y, x)


def test_used_check_comes_before_other_misuse():
    tape, x, y = recorded(3.0, lambda x: x * x)
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        tape.gradient(None, x)  # TF checks the tape first


def test_never_entered_tape_raises_like_a_used_one():
    x = c(1.0)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        gt.GradientTape().gradient(x, x)


def test_persistent_tape_allows_many_calls():
    x = c(3.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    close(tape.gradient(z, x), 108.0)  # 4 x^3
    close(tape.gradient(y, x), 6.0)
    close(tape.gradient(z, x), 108.0)
    close(tape.jacobian(y, x), 6.0)


def test_gradient_inside_non_persistent_context_stops_recording():
    x = c(3.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        close(tape.gradient(y, x), 6.0)
        assert not tape.is_recording
        assert gt.GradientTape.current() is None
        _ = x * x  # not recorded anywhere; exiting must not fail
    assert not tape.is_recording


def test_persistent_gradient_inside_context_warns_once_and_keeps_recording():
    x = c(2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with gt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x ** 3
            d1 = tape.gradient(y, x)  # 3x^2 = 12, recorded on the tape itself
            d2 = tape.gradient(d1, x)  # 6x = 12
            d3 = tape.gradient(d2, x)  # 6
            assert tape.is_recording
    messages = [str(w.message) for w in caught if "persistent tape inside its context" in str(w.message)]
    assert len(messages) == 1
    close(d1, 12.0)
    close(d2, 12.0)
    close(d3, 6.0)


def test_persistent_jacobian_inside_context():
    x = c([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x * x
            j = tape.jacobian(y, x)  # diag(3 x^2), each row replayed onto the tape
            g = tape.gradient(y, x)
    close(j, np.diag([3.0, 12.0]))
    close(g, [3.0, 12.0])


# --- nested tapes: higher order ------------------------------------------------------


def test_second_derivative_with_nested_tapes():
    x = c(5.0)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        dy = inner.gradient(y, x)
    close(dy, 10.0)
    close(outer.gradient(dy, x), 2.0)


def test_third_derivative_of_cube():
    x = c(2.0)
    with gt.GradientTape() as t1:
        t1.watch(x)
        with gt.GradientTape() as t2:
            t2.watch(x)
            with gt.GradientTape() as t3:
                t3.watch(x)
                y = x ** 3
            d1 = t3.gradient(y, x)  # 3x^2 = 12
        d2 = t2.gradient(d1, x)  # 6x = 12
    d3 = t1.gradient(d2, x)  # 6
    close(d1, 12.0)
    close(d2, 12.0)
    close(d3, 6.0)


def test_second_derivative_vector_against_hand_derivation():
    x0 = np.array([0.3, 1.1, -2.0])
    x = c(x0)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.sin(x) * x
        g = inner.gradient(y, x)  # cos(x) x + sin(x)
    h = outer.gradient(g, x)  # -sin(x) x + 2 cos(x)
    close(g, np.cos(x0) * x0 + np.sin(x0))
    close(h, -np.sin(x0) * x0 + 2 * np.cos(x0))


def test_hessian_as_jacobian_of_gradient():
    x0 = np.array([0.5, -1.5])
    x = c(x0)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.exp(x) * x
        g = inner.gradient(y, x)  # e^x (1 + x)
    h = outer.jacobian(g, x)  # diag(e^x (2 + x))
    close(h, np.diag(np.exp(x0) * (2 + x0)))


def test_inner_tape_does_not_see_outer_watches():
    x = c(2.0)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            y = x * x
        assert inner.gradient(y, x) is None
    close(outer.gradient(y, x), 4.0)


# --- stop_recording, reset, re-entry, current ------------------------------------------


def test_stop_recording():
    x = c(4.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            assert not tape.is_recording
            assert gt.GradientTape.current() is None
            y = x ** 2
        assert tape.is_recording
        z = x * 3.0
    close(tape.gradient([y, z], x), 3.0)  # only z = 3x was recorded


def test_stop_recording_pauses_only_that_tape():
    x = c(2.0)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            with inner.stop_recording():
                assert gt.GradientTape.current() is outer
                y = x * x
        assert inner.gradient(y, x) is None
    close(outer.gradient(y, x), 4.0)


def test_stop_recording_on_never_entered_tape_raises():
    tape = gt.GradientTape()
    with pytest.raises(RuntimeError, match=re.escape("Trying to stop recording a tape which is not recording.")):
        with tape.stop_recording():
            pass


def test_stop_recording_after_non_persistent_use_raises():
    x = c(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.gradient(y, x)
        with pytest.raises(RuntimeError, match=re.escape("Trying to stop recording a tape which is not recording.")):
            with tape.stop_recording():
                pass


def test_stop_recording_on_exited_persistent_tape_raises_like_tf():
    x = c(1.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
    # TF: _pop_tape's ValueError (the recording exists but is not active).
    with pytest.raises(ValueError, match=re.escape("Tape is not recording.")):
        with tape.stop_recording():
            pass


def test_reset_forgets_what_was_recorded():
    x = c(3.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        assert tape.is_recording
        z = x * 5.0  # x is no longer watched after reset
        tape.watch(x)
        w = x * 7.0
    assert tape.gradient(y, x) is None
    assert tape.gradient(z, x) is None
    close(tape.gradient(w, x), 7.0)


def test_reset_forgets_watched_variables():
    a, b = gt.Variable(1.0, name="a"), gt.Variable(2.0, name="b")
    with gt.GradientTape() as tape:
        _ = a * 2.0
        tape.reset()
        y = b * 3.0
    assert [v.name for v in tape.watched_variables()] == ["b"]
    assert tape.gradient(y, [a, b])[0] is None


def test_reset_when_not_recording_raises():
    tape = gt.GradientTape()
    with pytest.raises(ValueError, match=re.escape("Tape is not recording.")):
        tape.reset()
    with tape:
        pass
    with pytest.raises(ValueError, match=re.escape("Tape is not recording.")):
        tape.reset()


def test_reentering_an_active_tape_raises():
    tape = gt.GradientTape()
    with tape:
        with pytest.raises(ValueError, match=re.escape("Tape is still recording, This can happen if you try to re-enter an already-active tape.")):
            with tape:
                pass
        assert gt.GradientTape.current() is tape
    assert gt.GradientTape.current() is None


def test_current_and_is_recording():
    assert gt.GradientTape.current() is None
    outer, inner = gt.GradientTape(), gt.GradientTape()
    assert not outer.is_recording
    with outer:
        assert outer.is_recording and gt.GradientTape.current() is outer
        with inner:
            assert gt.GradientTape.current() is inner
        assert gt.GradientTape.current() is outer and not inner.is_recording
    assert gt.GradientTape.current() is None and not outer.is_recording


def test_tape_is_popped_when_the_body_raises():
    with pytest.raises(KeyError):
        with gt.GradientTape() as tape:
            raise KeyError("boom")
    assert not tape.is_recording and gt.GradientTape.current() is None


def test_persistent_property():
    assert gt.GradientTape(persistent=True).persistent
    assert not gt.GradientTape().persistent


# --- jacobian ---------------------------------------------------------------------------


def test_jacobian_shape_and_values():
    x0 = np.array([[0.5, 1.0, -1.0], [2.0, 0.1, 3.0]])
    tape, x, y = recorded(x0, lambda x: gt.sin(x) * 2.0)
    j = tape.jacobian(y, x)
    assert j.shape == (2, 3, 2, 3)
    want = np.zeros((2, 3, 2, 3))
    for i in np.ndindex(2, 3):
        want[i + i] = 2 * np.cos(x0[i])
    close(j, want)


def test_jacobian_vector_target_scalar_source():
    a = c(2.0)
    x = c([1.0, 2.0, 3.0])
    with gt.GradientTape() as tape:
        tape.watch([a, x])
        y = a * x * x  # dy/da = x^2 (shape (3,)), dy/dx = diag(2 a x)
    ja, jx = tape.jacobian(y, [a, x])
    assert ja.shape == (3,) and jx.shape == (3, 3)
    close(ja, [1.0, 4.0, 9.0])
    close(jx, np.diag([4.0, 8.0, 12.0]))


def test_jacobian_scalar_target_is_the_gradient():
    x0 = np.array([1.0, -2.0])
    tape, x, y = recorded(x0, lambda x: x * x * x)
    # y has shape (2,): the jacobian is diag(3 x^2); a scalar target gives its gradient.
    close(tape.jacobian(y, x), np.diag(3 * x0**2))
    x = c(1.5)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    assert j.shape == ()
    close(j, 3.0)


def test_jacobian_unconnected_none_and_zero():
    x, z = c([1.0, 2.0]), c([[1.0, 1.0, 1.0]], dtype="float32")
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * 2.0
    j = tape.jacobian(y, {"x": x, "z": z})
    close(j["x"], 2 * np.eye(2))
    assert j["z"] is None
    j = tape.jacobian(y, [x, z], unconnected_gradients="zero")
    assert j[1].shape == (2, 1, 3) and j[1].dtype == np.float32
    close(j[1], np.zeros((2, 1, 3)))


def test_jacobian_without_pfor_needs_a_persistent_tape():
    tape, x, y = recorded([1.0, 2.0], lambda x: x * x)
    msg = (
        "GradientTape must be created with persistent=True to compute the jacobian "
        "with eager execution enabled and with experimental_use_pfor set to False."
    )
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        tape.jacobian(y, x, experimental_use_pfor=False)
    close(tape.jacobian(y, x), np.diag([2.0, 4.0]))  # the failed call did not use the tape
    tape, x, y = recorded([1.0, 2.0], lambda x: x * x, persistent=True)
    close(tape.jacobian(y, x, experimental_use_pfor=False), np.diag([2.0, 4.0]))


def test_jacobian_unknown_unconnected_value_raises():
    tape, x, y = recorded([1.0], lambda x: x * x)
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'nope'"):
        tape.jacobian(y, x, unconnected_gradients="nope")


# --- batch_jacobian ---------------------------------------------------------------------


def test_batch_jacobian_example_from_tf_docs():
    tape, x, y = recorded([[1.0, 2.0], [3.0, 4.0]], lambda x: x * x)
    bj = tape.batch_jacobian(y, x)
    assert bj.shape == (2, 2, 2)
    close(bj, [[[2, 0], [0, 4]], [[6, 0], [0, 8]]])


def test_batch_jacobian_shapes_and_values():
    # target [b, y1, y2] from source [b, x1, x2]
    x0 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    w0 = np.array([1.0, -1.0, 0.5, 2.0])
    w = c(w0)
    x3 = c(x0.reshape(3, 2, 1))  # broadcasting against w: [3, 2, 1] * [4] -> [3, 2, 4]
    with gt.GradientTape() as tape:
        tape.watch(x3)
        y = gt.sin(x3) * w  # dy[b,i,k]/dx3[b,j,0] = delta_ij cos(x[b,i]) w[k]
    bj = tape.batch_jacobian(y, x3)
    assert bj.shape == (3, 2, 4, 2, 1)
    want = np.zeros((3, 2, 4, 2, 1))
    for b in range(3):
        for i in range(2):
            want[b, i, :, i, 0] = np.cos(x0[b, i]) * w0
    close(bj, want)


def test_batch_jacobian_mismatched_first_dims_raises():
    tape, x, y = recorded([[1.0, 2.0], [3.0, 4.0]], lambda x: x * x, persistent=True)
    other = c([[1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match=re.escape("Need first dimension of target shape ((2, 2)) and source shape ((3, 1)) to match.")):
        tape.batch_jacobian(y, other)
    with pytest.raises(ValueError, match=re.escape("Need first dimension of target shape (()) and source shape ((2, 2)) to match.")):
        tape.batch_jacobian(c(1.0), x)


def test_batch_jacobian_unconnected_gives_zeros_like_tf():
    tape, x, y = recorded([[1.0, 2.0], [3.0, 4.0]], lambda x: x * x, persistent=True)
    other = c([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype="float32")
    for mode in ["none", "zero"]:
        bj = tape.batch_jacobian(y, other, unconnected_gradients=mode)
        assert bj.shape == (2, 2, 3) and bj.dtype == np.float32
        close(bj, np.zeros((2, 2, 3)))


def test_batch_jacobian_without_pfor_needs_a_persistent_tape():
    tape, x, y = recorded([[1.0], [2.0]], lambda x: x * x)
    msg = (
        "GradientTape must be created with persistent=True to compute the batch_jacobian "
        "with eager execution enabled and with experimental_use_pfor set to False."
    )
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        tape.batch_jacobian(y, x, experimental_use_pfor=False)
    close(tape.batch_jacobian(y, x), [[[2.0]], [[4.0]]])


def test_jacobian_inside_an_outer_tape_is_differentiable():
    # Hessian of f(x) = sum(x**3) = diag(6x), via an outer tape around a jacobian.
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        jac = inner.jacobian(y, x)  # diag(3x^2)
    np.testing.assert_allclose(jac.numpy(), np.diag([3.0, 12.0]))
    np.testing.assert_allclose(outer.gradient(jac, x).numpy(), [6.0, 12.0])


def test_batch_jacobian_inside_an_outer_tape_is_differentiable():
    x = gt.constant([[1.0, 2.0], [3.0, 4.0]])
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        bj = inner.batch_jacobian(y, x)  # bj[i] = diag(2 x[i])
    np.testing.assert_allclose(bj.numpy(), [np.diag([2.0, 4.0]), np.diag([6.0, 8.0])])
    np.testing.assert_allclose(outer.gradient(bj, x).numpy(), np.full((2, 2), 2.0))
