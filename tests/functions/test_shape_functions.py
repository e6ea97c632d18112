"""The layout and indexing front end: values against NumPy (eager and traced),
gradients on a GradientTape, NumPy dispatch, Tensor methods and error messages."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.testing import check_grads

X = np.arange(60.0).reshape(3, 4, 5) / 7.0
MASK = X[..., 0] > 3.0  # a (3, 4) mask

INDICES = {
    "int": np.s_[1],
    "negative_int": np.s_[-1],
    "two_ints": np.s_[2, -3],
    "slice_step_-2": np.s_[:, ::-2],
    "reversed_all": np.s_[::-1, ::-1, ::-1],
    "steps": np.s_[::2, 3:0:-2, 4:0:-3],
    "empty_slice": np.s_[2:1],
    "out_of_range_slice_bounds": np.s_[-10:10, 7:],
    "ellipsis_newaxis_slice": np.s_[..., None, 1:3],
    "newaxis_front_back": np.s_[None, ..., None],
    "ellipsis_int": np.s_[..., -1],
    "empty_tuple": np.s_[()],
    "int_array_duplicates": np.s_[[0, 2, 2]],
    "int_array_negative": np.s_[[-1, 0, -3]],
    "empty_list": np.s_[[]],
    "int_array_2d": np.s_[:, [[0, 1], [3, 3]]],
    "array_last_axis": np.s_[..., [4, 0]],
    "int_and_array_adjacent": np.s_[:, 1, [0, 1]],
    "int_and_array_separated": np.s_[1, :, [0, 1]],
    "arrays_broadcast": np.s_[[[0], [2]], :, [1, 2, 3]],
    "three_arrays": np.s_[[0, 1], [1, 2], [2, 3]],
    "arrays_around_newaxis": np.s_[[0, 1], None, [0, 1]],
    "newaxis_then_array": np.s_[None, [0, 1]],
    "zero_d_array": np.s_[np.array(1), [0, 1]],
    "mask_2d": np.s_[MASK],
    "mask_3d": np.s_[X > 5.0],
    "mask_after_slice": np.s_[1:, MASK[0]],
    "mask_and_array": np.s_[MASK[:, 0], :, [1, 1]],
}


def _expected_grad(x, index, w):
    """J^T w for y = x[index]: scatter w into the positions each output reads."""
    ids = np.arange(x.size).reshape(x.shape)[index]
    g = np.zeros(x.size)
    np.add.at(g, np.ravel(ids), np.ravel(w))
    return g.reshape(x.shape)


@pytest.mark.parametrize("index", INDICES.values(), ids=INDICES.keys())
def test_getitem_matches_numpy_eager(index):
    out = gt.constant(X)[index]
    assert isinstance(out, gt.Tensor)
    assert out.shape == X[index].shape
    np.testing.assert_array_equal(out.numpy(), X[index])


@pytest.mark.parametrize(
    "index", [v for k, v in INDICES.items() if not k.startswith("mask")],
    ids=[k for k in INDICES if not k.startswith("mask")],
)
def test_getitem_matches_numpy_traced(index):
    fn = gt.make_ir(lambda x: x[index], X)
    (out,) = ir.eval_function(fn, [X], check_types=True)
    np.testing.assert_array_equal(out, X[index])


@pytest.mark.parametrize("index", INDICES.values(), ids=INDICES.keys())
def test_getitem_gradient_on_a_tape(index):
    x = gt.constant(X)
    w = np.random.default_rng(0).standard_normal(X[index].shape)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x[index]
    g = tape.gradient(y, x, output_gradients=gt.constant(w))
    np.testing.assert_allclose(g.numpy(), _expected_grad(X, index, w))


@pytest.mark.parametrize("key", ["slice_step_-2", "ellipsis_newaxis_slice", "int_array_duplicates",
                                 "int_and_array_separated", "arrays_broadcast"])
def test_getitem_second_order(key):
    index = INDICES[key]
    check_grads(lambda x: gt.sin(x[index]) * x[index], [X[:3, :4, :5] - 4.0], order=2)


def test_example_from_the_readme():
    x = gt.constant(np.arange(6.0).reshape(2, 3))
    with gt.GradientTape() as t:
        t.watch(x)
        y = x[:, ::-1][0] * 2.0
    np.testing.assert_array_equal(y.numpy(), [4.0, 2.0, 0.0])
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]])


def test_getitem_with_integer_tensor_indices():
    x = gt.constant(X)
    np.testing.assert_array_equal(x[gt.constant([2, -1])].numpy(), X[[2, -1]])
    np.testing.assert_array_equal(x[gt.constant(1)].numpy(), X[1])
    # A traced index: gather with a symbolic index, negatives wrapped by `where`.
    fn = gt.make_ir(lambda x, i: x[:, i], X, np.array([0, -1, 2]))
    assert [e.op.name for e in fn.eqns] == ["lt", "add", "where", "gather"]
    i = np.array([3, -4, 0])
    (out,) = ir.eval_function(fn, [X, i], check_types=True)
    np.testing.assert_array_equal(out, X[:, i])
    # Out of range while traced: clamped to the edge (docs/staged.md, "Out-of-range indices").
    (out,) = ir.eval_function(fn, [X, np.array([0, 4, -9])])
    np.testing.assert_array_equal(out, X[:, [0, 3, 0]])


def test_getitem_with_a_concrete_boolean_tensor_mask():
    x = gt.constant(X)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x[x > 4.0] * 3.0
    np.testing.assert_array_equal(y.numpy(), X[X > 4.0] * 3.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.where(X > 4.0, 3.0, 0.0))


def test_random_index_expressions_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 2))
    t = gt.constant(x)

    def entry():
        k = rng.integers(0, 5)
        if k == 0:
            return int(rng.integers(-2, 2))
        if k == 1:
            bounds = [None, -4, -1, 0, 1, 3, 5]
            return slice(rng.choice(bounds), rng.choice(bounds), rng.choice([None, 2, -1, -2]))
        if k == 2:
            return None
        if k == 3:
            return rng.integers(-2, 2, size=rng.integers(1, 3))
        return Ellipsis

    checked = 0
    while checked < 200:
        index = tuple(entry() for _ in range(rng.integers(1, 4)))
        try:
            want = x[index]
        except IndexError:
            with pytest.raises(IndexError):
                t[index]
            continue
        np.testing.assert_array_equal(t[index].numpy(), want, err_msg=repr(index))
        checked += 1


def test_iterating_a_tensor_yields_rows():
    rows = list(gt.constant(A))
    assert len(rows) == 2
    np.testing.assert_array_equal(rows[1].numpy(), A[1])
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d Tensor"):
        list(gt.constant(1.0))


def test_two_traced_index_arrays_become_one_linear_index():
    fn = gt.make_ir(lambda x, i, j: x[i, j], X, np.array([0, 2]), np.array([1, -1]))
    (out,) = ir.eval_function(fn, [X, np.array([0, 2]), np.array([1, -1])], check_types=True)
    np.testing.assert_array_equal(out, X[[0, 2], [1, -1]])


# --- functions against NumPy -------------------------------------------------------------

A = np.arange(6.0).reshape(2, 3)

FUNCTIONS = {
    "reshape_-1": (lambda a: gt.reshape(a, (3, -1)), lambda a: np.reshape(a, (3, -1))),
    "reshape_int": (lambda a: gt.reshape(a, 6), lambda a: np.reshape(a, 6)),
    "reshape_newshape": (lambda a: gt.reshape(a, newshape=(1, 6)), lambda a: a.reshape(1, 6)),
    "transpose": (gt.transpose, np.transpose),
    "transpose_axes": (lambda a: gt.transpose(a[None], (2, 0, 1)),
                       lambda a: np.transpose(a[None], (2, 0, 1))),
    "transpose_negative_axes": (lambda a: gt.transpose(a, (-1, 0)), lambda a: a.T),
    "expand_dims": (lambda a: gt.expand_dims(a, 1), lambda a: np.expand_dims(a, 1)),
    "expand_dims_tuple": (lambda a: gt.expand_dims(a, (0, -1)), lambda a: np.expand_dims(a, (0, -1))),
    "squeeze_all": (lambda a: gt.squeeze(a[:, None, :1]), lambda a: np.squeeze(a[:, None, :1])),
    "squeeze_axis": (lambda a: gt.squeeze(a[:, None, :1], axis=-1),
                     lambda a: np.squeeze(a[:, None, :1], axis=-1)),
    "broadcast_to": (lambda a: gt.broadcast_to(a, (4, 2, 3)), lambda a: np.broadcast_to(a, (4, 2, 3))),
    "broadcast_to_ones": (lambda a: gt.broadcast_to(a[:, :1], (2, 5)),
                          lambda a: np.broadcast_to(a[:, :1], (2, 5))),
    "concatenate_axis0": (lambda a: gt.concatenate([a, a[:1]]), lambda a: np.concatenate([a, a[:1]])),
    "concatenate_axis-1": (lambda a: gt.concatenate((a, a, a), axis=-1),
                           lambda a: np.concatenate((a, a, a), axis=-1)),
    "concatenate_none": (lambda a: gt.concatenate([a, a[0]], axis=None),
                         lambda a: np.concatenate([a, a[0]], axis=None)),
    "concatenate_promotes": (lambda a: gt.concatenate([a, np.ones((1, 3), np.int32)]),
                             lambda a: np.concatenate([a, np.ones((1, 3), np.int32)])),
    "stack": (lambda a: gt.stack([a, a * 2.0]), lambda a: np.stack([a, a * 2.0])),
    "stack_axis-1": (lambda a: gt.stack([a, a], axis=-1), lambda a: np.stack([a, a], axis=-1)),
    "pad_int": (lambda a: gt.pad(a, 1), lambda a: np.pad(a, 1)),
    "pad_pairs": (lambda a: gt.pad(a, ((0, 1), (2, 0))), lambda a: np.pad(a, ((0, 1), (2, 0)))),
    "pad_value": (lambda a: gt.pad(a, (1, 2), constant_values=-3.5),
                  lambda a: np.pad(a, (1, 2), constant_values=-3.5)),
    "take_flat": (lambda a: gt.take(a, [5, 0, -1]), lambda a: np.take(a, [5, 0, -1])),
    "take_axis": (lambda a: gt.take(a, [[2, 2], [0, 1]], axis=1),
                  lambda a: np.take(a, [[2, 2], [0, 1]], axis=1)),
    "take_scalar": (lambda a: gt.take(a, 1, axis=0), lambda a: np.take(a, 1, axis=0)),
    "take_clip": (lambda a: gt.take(a, [-2, 7], axis=1, mode="clip"),
                  lambda a: np.take(a, [-2, 7], axis=1, mode="clip")),
    "take_wrap": (lambda a: gt.take(a, [-4, 7], axis=1, mode="wrap"),
                  lambda a: np.take(a, [-4, 7], axis=1, mode="wrap")),
    "ravel": (gt.ravel, np.ravel),
    "flatten": (gt.flatten, lambda a: a.flatten()),
    "moveaxis": (lambda a: gt.moveaxis(a[None], 0, -1), lambda a: np.moveaxis(a[None], 0, -1)),
    "moveaxis_many": (lambda a: gt.moveaxis(a[None], (0, 1), (-1, 0)),
                      lambda a: np.moveaxis(a[None], (0, 1), (-1, 0))),
    "swapaxes": (lambda a: gt.swapaxes(a, 0, -1), lambda a: np.swapaxes(a, 0, -1)),
}


@pytest.mark.parametrize("fns", FUNCTIONS.values(), ids=FUNCTIONS.keys())
def test_functions_match_numpy(fns):
    gt_fn, np_fn = fns
    expected = np_fn(A)
    for out in (gt_fn(gt.constant(A)), gt_fn(A)):
        assert isinstance(out, gt.Tensor)
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out.numpy(), expected)
    fn = gt.make_ir(gt_fn, A)
    (traced,) = ir.eval_function(fn, [A], check_types=True)
    np.testing.assert_array_equal(traced, expected)


@pytest.mark.parametrize(
    "key", [k for k in FUNCTIONS if k not in ("concatenate_promotes", "take_clip", "take_wrap")]
)
def test_function_gradients(key):
    gt_fn, _ = FUNCTIONS[key]
    check_grads(lambda a: gt.sin(gt_fn(a)), [A / 3.0], order=2)


def test_gradient_of_stack_and_concatenate_on_a_tape():
    x = gt.constant([1.0, 2.0])
    y = gt.constant([3.0, 4.0])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        s = gt.stack([x, y * y, x])  # (3, 2)
        c = gt.concatenate([x, y[::-1]])
    gx, gy = tape.gradient(s, [x, y], output_gradients=gt.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    np.testing.assert_array_equal(gx.numpy(), [6.0, 8.0])
    np.testing.assert_array_equal(gy.numpy(), [18.0, 32.0])
    gx, gy = tape.gradient(c, [x, y], output_gradients=gt.constant([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(gx.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(gy.numpy(), [4.0, 3.0])


def test_pad_with_a_tensor_value_is_differentiable_in_it():
    x = gt.constant([1.0, 2.0])
    c = gt.constant(0.5)
    with gt.GradientTape() as tape:
        tape.watch([x, c])
        y = gt.pad(x, (1, 2), constant_values=c)
    np.testing.assert_array_equal(y.numpy(), [0.5, 1.0, 2.0, 0.5, 0.5])
    gx, gc = tape.gradient(y, [x, c])
    np.testing.assert_array_equal(gx.numpy(), [1.0, 1.0])
    assert gc.numpy() == 3.0


def test_take_gradient_accumulates_duplicates():
    x = gt.constant([1.0, 2.0, 3.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.take(x, [2, 0, 2, 2]) * gt.constant([1.0, 10.0, 100.0, 1000.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [10.0, 0.0, 1101.0])


def test_second_order_through_a_tape():
    x = gt.constant([1.0, 2.0, 3.0])
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = x[::-1] ** 3
        g = inner.gradient(y, x)  # 3 x**2
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0, 27.0])
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), [6.0, 12.0, 18.0])


# --- NumPy dispatch and Tensor methods ------------------------------------------------------

def test_numpy_dispatch():
    t = gt.constant(A)
    cases = [
        (np.reshape(t, (3, 2)), np.reshape(A, (3, 2))),
        (np.reshape(t, -1), np.reshape(A, -1)),
        (np.concatenate([t, t]), np.concatenate([A, A])),
        (np.concatenate([t, A], axis=1), np.concatenate([A, A], axis=1)),
        (np.stack([t, t], axis=1), np.stack([A, A], axis=1)),
        (np.take(t, [0, 2], axis=1), np.take(A, [0, 2], axis=1)),
        (np.take(t, 4), np.take(A, 4)),
        (np.transpose(t), A.T),
        (np.expand_dims(t, 0), A[None]),
        (np.squeeze(t[None]), A),
        (np.broadcast_to(t, (2, 2, 3)), np.broadcast_to(A, (2, 2, 3))),
        (np.pad(t, 1), np.pad(A, 1)),
        (np.ravel(t), A.ravel()),
        (np.moveaxis(t, 0, 1), A.T),
        (np.swapaxes(t, 0, 1), A.T),
    ]
    for got, want in cases:
        assert isinstance(got, gt.Tensor)
        np.testing.assert_array_equal(got.numpy(), want)


def test_tensor_methods():
    t = gt.constant(A)
    np.testing.assert_array_equal(t.reshape(3, 2).numpy(), A.reshape(3, 2))
    np.testing.assert_array_equal(t.reshape((3, 2)).numpy(), A.reshape((3, 2)))
    np.testing.assert_array_equal(t.reshape(-1).numpy(), A.reshape(-1))
    np.testing.assert_array_equal(t.T.numpy(), A.T)
    np.testing.assert_array_equal(t.transpose().numpy(), A.T)
    np.testing.assert_array_equal(t[None].transpose(1, 2, 0).numpy(), A[None].transpose(1, 2, 0))
    np.testing.assert_array_equal(t[None].transpose((2, 0, 1)).numpy(), A[None].transpose((2, 0, 1)))
    np.testing.assert_array_equal(t[:, None].squeeze().numpy(), A)
    np.testing.assert_array_equal(t[:, None].squeeze(1).numpy(), A)
    np.testing.assert_array_equal(t.flatten().numpy(), A.flatten())
    np.testing.assert_array_equal(t.ravel().numpy(), A.ravel())
    np.testing.assert_array_equal(t.swapaxes(0, 1).numpy(), A.T)


def test_identity_layouts_return_new_tensors_with_the_same_values():
    """New objects (t[i] = v changes t, never them: functions/fresh.py), no IR op when staged."""
    t = gt.constant(A)
    for same in (gt.reshape(t, (2, 3)), t[:], t[...], t[()], gt.transpose(t, (0, 1)), gt.pad(t, 0)):
        assert same is not t
        np.testing.assert_array_equal(same.numpy(), A)
    traced = gt.make_ir(lambda t: gt.transpose(gt.reshape(t[:], (2, 3)), (0, 1)), A)
    assert len(traced.eqns) == 0  # a traced value is passed along, no op recorded


# --- errors ----------------------------------------------------------------------------------

ERRORS = [
    (lambda t: gt.reshape(t, (4, -1)), ValueError,
     r"reshape: cannot reshape a tensor of shape \(2, 3\) \(size 6\) into shape \(4, -1\)"),
    (lambda t: t.reshape(5), ValueError, r"reshape: cannot reshape .* into shape \(5,\)"),
    (lambda t: gt.reshape(t, (-1, -1)), ValueError, "at most one dimension can be -1"),
    (lambda t: t[2], IndexError, "index 2 is out of bounds for axis 0 with size 2"),
    (lambda t: t[:, -4], IndexError, "index -4 is out of bounds for axis 1 with size 3"),
    (lambda t: t[[0, 2]], IndexError, "index 2 is out of bounds for axis 0 with size 2"),
    (lambda t: t[:, [0, -5]], IndexError, "index -5 is out of bounds for axis 1 with size 3"),
    (lambda t: t[0, [3]], IndexError, "index 3 is out of bounds for axis 1 with size 3"),
    (lambda t: t[None, 1, None, 3], IndexError, "index 3 is out of bounds for axis 1 with size 3"),
    (lambda t: gt.take(t, [6]), IndexError, "index 6 is out of bounds for axis 0 with size 6"),
    (lambda t: t[0, 0, 0], IndexError,
     "too many indices for tensor: tensor is 2-dimensional, but 3 were indexed"),
    (lambda t: t[..., ...], IndexError, r"an index can only have a single ellipsis \('...'\)"),
    (lambda t: t[1.5], IndexError, "only integers, slices .* are valid indices; got float"),
    (lambda t: t[np.array([0.0])], IndexError,
     "arrays used as indices must be of integer \\(or boolean\\) type, got float64"),
    (lambda t: t[np.array([True, False, True])], IndexError,
     "boolean index did not match indexed tensor along axis 0; size of axis is 2 but size of "
     "corresponding boolean axis is 3"),
    (lambda t: t[True], IndexError, "indexing with a scalar boolean"),
    (lambda t: t[[0, 1], [0, 1, 2]], IndexError,
     r"shape mismatch: indexing arrays could not be broadcast together with shapes \(2,\) \(3,\)"),
    (lambda t: gt.pad(t, 1, mode="median"), NotImplementedError,
     "pad: mode='median' is not supported; the modes are 'constant', 'edge', 'reflect'"),
    (lambda t: np.pad(t[:0], 1, mode="edge"), ValueError,
     r"pad: can't extend the empty axis 0 of a tensor of shape \(0, 3\) with mode='edge'"),
    (lambda t: gt.pad(t, -1), ValueError,
     r"pad: pad_width must be non-negative, got -1 for a tensor of shape \(2, 3\)"),
    (lambda t: gt.pad(t, ((1, 1), (1, 1), (1, 1))), ValueError,
     r"pad: pad_width .* does not give \(before, after\) for each axis"),
    (lambda t: gt.concatenate([t, t[:, :1]]), ValueError,
     r"concatenate: all input shapes must match except along axis 0, got \(2, 3\), \(2, 1\)"),
    (lambda t: gt.concatenate([t[0, 0], t[0, 0]]), ValueError,
     "zero-dimensional tensors cannot be concatenated"),
    (lambda t: gt.concatenate([t], axis=2), np.exceptions.AxisError,
     "concatenate: axis 2 is out of bounds for an array of dimension 2"),
    (lambda t: gt.stack([t, t[:1]]), ValueError, "stack: all input tensors must have the same shape"),
    (lambda t: gt.transpose(t, (0,)), ValueError, r"transpose: axes \(0,\) don't match"),
    (lambda t: gt.transpose(t, (0, 0)), ValueError, "transpose: repeated axis"),
    (lambda t: gt.squeeze(t, 0), ValueError,
     "squeeze: cannot select an axis to squeeze out which has size not equal to one"),
    (lambda t: gt.broadcast_to(t, (3, 3)), ValueError,
     r"broadcast_to: cannot broadcast a tensor of shape \(2, 3\) to shape \(3, 3\)"),
    (lambda t: gt.moveaxis(t, (0, 1), 0), ValueError, "moveaxis: `source` and `destination`"),
    (lambda t: gt.take(t, [0], mode="nearest"), ValueError, "take: mode must be"),
]


@pytest.mark.parametrize("fn, error, message", ERRORS, ids=[m[:40] for _, _, m in ERRORS])
def test_errors(fn, error, message):
    with pytest.raises(error, match=message):
        fn(gt.constant(A))


def test_boolean_mask_under_tracing_names_the_fix():
    with pytest.raises(gt.ConcretizationError, match="use gradtape.where"):
        gt.make_ir(lambda x: x[x > 0.0], A)


def test_abstract_index_with_clip_mode_is_refused():
    with pytest.raises(NotImplementedError, match="take: mode='clip' needs concrete indices"):
        gt.make_ir(lambda x, i: gt.take(x, i, mode="clip"), A, np.array([1]))
