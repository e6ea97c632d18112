"""x.at[index].set/add/multiply/min/max(v) against NumPy's fancy assignment and ufunc.at on
copies, with finite-difference gradients, traced indices (interpreter and native code
agreeing), vmap, and JAX's rule for gradients at ties of min and max."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads
from tests.functions.three_ways import three_ways

MODES = ["set", "add", "multiply", "min", "max"]
UFUNC = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


def numpy_update(mode, x, index, v):
    """The reference: NumPy's own update of a copy (set: the last write wins, checked by a loop below)."""
    out = np.array(x, copy=True)
    if mode == "set":
        out[index] = v
    else:
        UFUNC[mode].at(out, index, v)
    return out


INDICES = [
    2, -1, np.s_[1:], np.s_[::-2], np.s_[..., 1], np.s_[None, 0], np.s_[0, None, 1:],
    np.s_[[0, 2, 0]], np.s_[[-1, 0], 1:], np.s_[[0, 3], [2, 1]], np.s_[:, [1, 1, 0]],
    np.s_[np.array([[0, 1], [3, 3]])], np.array([True, False, True, True]),
    np.s_[1:, np.array([True, False, True])], (),
]


def _repeats(index) -> bool:
    positions = np.arange(12).reshape(4, 3)[index]
    return len(np.unique(positions)) < np.size(positions)


# set with repeated positions keeps the last write: checked against a loop below, not NumPy's a[idx] = v
VALUE_CASES = [(mode, index) for mode in MODES for index in INDICES if not (mode == "set" and _repeats(index))]


@pytest.mark.parametrize("mode,index", VALUE_CASES, ids=repr)
def test_values_match_numpy(mode, index):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    v = rng.standard_normal(np.shape(x[index]))
    got = getattr(gt.constant(x).at[index], mode)(v)
    # add and multiply may sum repeated positions in another order than NumPy: rounding apart
    np.testing.assert_allclose(got.numpy(), numpy_update(mode, x, index, v), rtol=1e-15, atol=1e-15)
    assert got.dtype == x.dtype and got.shape == x.shape


def test_tensor_indices_and_broadcast_updates():
    x = np.arange(6.0).reshape(2, 3)
    i = gt.constant([2, 0])
    np.testing.assert_array_equal(gt.constant(x).at[:, i].set(7.0).numpy(), numpy_update("set", x, np.s_[:, [2, 0]], 7.0))
    np.testing.assert_array_equal(gt.constant(x).at[1].add([[1.0, 2.0, 3.0]][0]).numpy(), x + [[0, 0, 0], [1, 2, 3]])
    with pytest.raises(ValueError, match="does not broadcast"):
        gt.constant(x).at[0].set([1.0, 2.0])


def test_set_with_repeated_positions_keeps_the_last_write():
    x = np.zeros(4)
    index, v = np.array([1, 3, 1, 1, 3]), np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    want = x.copy()
    for i, value in zip(index, v):  # the rule itself, not NumPy's (unspecified) order
        want[i] = value
    np.testing.assert_array_equal(gt.constant(x).at[index].set(v).numpy(), want)
    traced = gt.differentiable(lambda x, i, v: x.at[i].set(v))(x, index, v)
    np.testing.assert_array_equal(np.asarray(traced), want)


def test_updates_are_cast_to_x_dtype_and_x_is_never_modified():
    x = gt.constant(np.float32([1.0, 2.0]))
    y = x.at[0].set(np.float64(3.5))
    assert y.dtype == np.float32 and y.numpy()[0] == 3.5
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    assert gt.constant([1, 5, 3]).at[[0, 2]].max(4).numpy().tolist() == [4, 5, 4]


def test_a_variable_updates_its_value():
    w = gt.Variable([1.0, 2.0, 3.0])
    with gt.GradientTape() as tape:
        y = w.at[1].multiply(4.0)
        loss = gt.sum(y * y)
    np.testing.assert_array_equal(y.numpy(), [1.0, 8.0, 3.0])
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [2.0, 64.0, 6.0])
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0, 3.0])


def test_out_of_bounds_indices_raise_like_getitem_and_traced_ones_are_clamped():
    x = gt.constant([1.0, 2.0, 3.0])
    with pytest.raises(IndexError):
        x.at[3].set(0.0)
    with pytest.raises(IndexError):
        x.at[[0, -4]].add(1.0)
    # A traced index is clamped to the edge, as x[i] clamps it (gather's rule).
    f = gt.differentiable(lambda x, i: (x.at[i].set(9.0), x[i]))
    updated, read = f(x, np.array([5, -7]))
    np.testing.assert_array_equal(np.asarray(updated), [9.0, 2.0, 9.0])
    np.testing.assert_array_equal(np.asarray(read), [3.0, 1.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", [np.s_[[0, 2, 0, 3]], np.s_[1:3], np.s_[[1, 1], None]], ids=repr)
def test_gradients_match_finite_differences(mode, index):
    x = np.array([0.3, 1.2, -0.4, 0.8])
    v = np.random.default_rng(1).standard_normal(np.shape(x[index]))
    check_grads(lambda x, v: gt.sum(gt.sin(getattr(x.at[index], mode)(v)) ** 2), [x, v], order=2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_traced_indices_agree_eager_interpreted_and_native(mode, dtype):
    x = np.array([0.3, 1.2, -0.4, 0.8], dtype)
    i = np.array([0, 2, 0, 3, 2])
    v = np.array([1.0, 2.0, -3.0, -0.5, 0.25], dtype)
    eager, interpreted, compiled = three_ways(lambda x, i, v: getattr(x.at[i], mode)(v), x, i, v)
    want = numpy_update(mode, x, i, v) if mode != "set" else numpy_update(mode, x, [0, 3, 2], v[[2, 3, 4]])
    for got in (eager, interpreted, compiled):
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got.dtype == dtype


@pytest.mark.parametrize("mode", MODES)
def test_traced_and_known_indices_give_the_same_derivatives_to_second_order(mode):
    x, v = np.array([0.3, 1.2, -0.4, 0.8]), np.array([1.0, 2.0, 3.0, -0.5])
    i = np.array([0, 2, 0, 3])

    def loss(x, i, v):
        return gt.sum(gt.sin(getattr(x.at[i], mode)(v)) ** 2)

    def second(x, i, v):
        return gt.sum(gt.grad(loss, argnums=0)(x, i, v) * gt.cos(v))

    for f in (loss, second):
        traced = gt.grad(f, argnums=(0, 2))(x, i, v)
        known = gt.grad(lambda x, v: f(x, i, v), argnums=(0, 1))(x, v)
        for a, b in zip(traced, known):
            np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_vmap_over_batched_indices_and_updates(mode):
    x = np.array([0.3, 1.2, -0.4, 0.8])
    idx = np.array([[0, 2, 0, 3], [1, 1, 1, 1], [3, 2, 1, 0]])
    vs = np.random.default_rng(2).standard_normal((3, 4))

    def loss(x, i, v):
        return gt.sum(gt.sin(getattr(x.at[i], mode)(v)) ** 2)

    out = gt.vmap(lambda i, v: getattr(gt.constant(x).at[i], mode)(v))(idx, vs)
    grads = gt.vmap(gt.grad(loss, argnums=(0, 2)), in_axes=(None, 0, 0))(x, idx, vs)
    for b in range(3):
        single = getattr(gt.constant(x).at[idx[b]], mode)(vs[b]).numpy()
        np.testing.assert_allclose(np.asarray(out)[b], single)
        want = gt.grad(lambda x, v: loss(x, idx[b], v), argnums=(0, 1))(x, vs[b])
        for g, w in zip(grads, want):
            np.testing.assert_allclose(np.asarray(g)[b], w)


def test_many_repeats_of_one_position_combine_in_log_levels():
    x, v = np.array([0.0, 5.0]), np.linspace(-1.0, 1.0, 64)
    index = np.ones(64, np.int64)
    for mode in ("min", "max", "multiply"):
        fn = gt.make_ir(lambda x, v: getattr(x.at[index], mode)(v), x, v)
        assert sum(e.op.name == "gather" for e in fn.eqns) < 24  # 2 per level (6 for 64 repeats) and a few more, not 64
        np.testing.assert_allclose(getattr(gt.constant(x).at[index], mode)(v).numpy(), numpy_update(mode, x, index, v))


@pytest.mark.parametrize("traced", [False, True])
def test_ties_of_min_split_the_derivative_equally(traced):
    # x[0] = 1 ties with two updates: each of the three gets 1/3 (JAX's rule); x[1] = 2 beats 5.
    x, v, i = np.array([1.0, 2.0]), np.array([1.0, 1.0, 5.0]), np.array([0, 0, 1])
    weights = gt.constant([1.0, 10.0])
    if traced:
        gx, gv = gt.grad(lambda x, i, v: gt.sum(x.at[i].min(v) * weights), argnums=(0, 2))(x, i, v)
    else:
        gx, gv = gt.grad(lambda x, v: gt.sum(x.at[i].min(v) * weights), argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx, [1 / 3, 10.0])
    np.testing.assert_allclose(gv, [1 / 3, 1 / 3, 0.0])


def test_on_the_tape_gradients_flow_to_x_and_v():
    x, v = gt.constant([1.0, 2.0, 3.0]), gt.constant([4.0, 5.0])
    with gt.GradientTape() as tape:
        tape.watch([x, v])
        loss = gt.sum(x.at[[0, 0]].multiply(v) ** 2)
    gx, gv = tape.gradient(loss, [x, v])
    np.testing.assert_allclose(gx.numpy(), [2 * 1 * 400.0, 4.0, 6.0])  # d (20 x0)^2 / d x0 = 800 x0
    np.testing.assert_allclose(gv.numpy(), [2 * 20.0 * 5.0, 2 * 20.0 * 4.0])
