"""The fast paths of stack, concatenate (through NumPy's dispatch too), zeros_like and ones_like
(functions/shape.py, functions/creation.py, tracer/numpy_dispatch.py's `fast_path`) against
their general paths: the same recorded structure, the same IR when traced, NumPy's values and
dtypes, and every case they leave to the general path (other dtypes, arrays, bad shapes, other
arguments) answered there, errors included."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.functions import creation, shape as shape_functions
from gradtape.tracer import numpy_dispatch

RNG = np.random.default_rng(7)
V3 = RNG.standard_normal(3)
M23 = RNG.standard_normal((2, 3))
T234 = RNG.standard_normal((2, 3, 4))


def _general(monkeypatch):
    """Every fast path of this file off: the calls take the general paths."""
    monkeypatch.setattr(shape_functions, "_stack_tensors", lambda arrays, axis: None)
    monkeypatch.setattr(shape_functions, "_concatenate_tensors", lambda arrays, axis: None)
    monkeypatch.setattr(creation, "_filled", lambda x, make: None)
    monkeypatch.setattr(numpy_dispatch, "_fast_paths", {})


def _fast_and_general(monkeypatch, run):
    fast = run()
    with monkeypatch.context() as m:
        _general(m)
        general = run()
    return fast, general


def _recorded(fn, arrays):
    """fn of sin of watched Variables on a tape: (the recording's structure key, the value, the
    gradients of the sum of squares)."""
    xs = [gt.Variable(a) for a in arrays]
    with gt.GradientTape() as tape:
        y = fn([gt.sin(x) for x in xs])
        loss = gt.sum(y * y)
    key = tape._tape.structure_key()
    grads = tape.gradient(loss, xs)
    return key, y.numpy(), [None if g is None else g.numpy() for g in grads]


def _traced(fn, arrays):
    return str(gt.make_ir(lambda *xs: fn(list(xs)), *arrays))


# (arrays, axis): shapes of every rank, axes negative and positive, one array, one dtype
STACK_CASES = [
    ((V3, V3 + 1), 0), ((V3, V3, V3), 1), ((V3, V3), -1), ((V3, V3), -2),
    ((M23, M23 * 2), 0), ((M23, M23, M23), 1), ((M23, M23), 2), ((M23, M23), -1), ((M23, M23), -3),
    ((T234, T234), 3), ((T234, T234), -2), ((V3,), 0), ((M23,), -1),
    ((np.float64(1.5), np.float64(-2.0)), 0), ((np.float64(1.5),), -1),
    ((V3.astype(np.float32), V3.astype(np.float32)), 1),
]
STACKERS = {"gradtape.stack": gt.stack, "np.stack": np.stack}


@pytest.mark.parametrize("arrays, axis", STACK_CASES)
@pytest.mark.parametrize("name", STACKERS)
def test_stack_records_and_traces_what_the_general_path_does(arrays, axis, name, monkeypatch):
    stack = STACKERS[name]

    def fn(xs):
        return stack(xs, axis=axis)

    assert shape_functions._stack_tensors([gt.constant(a) for a in arrays], axis) is not None
    fast, general = _fast_and_general(monkeypatch, lambda: (_recorded(fn, arrays), _traced(fn, arrays)))
    assert fast[0][0] == general[0][0] and fast[1] == general[1]
    want = np.stack([np.sin(a) for a in arrays], axis=axis)
    assert fast[0][1].dtype == want.dtype
    np.testing.assert_array_equal(fast[0][1], want)
    np.testing.assert_array_equal(general[0][1], want)
    for g, a in zip(fast[0][2], arrays):
        np.testing.assert_allclose(g, 2 * np.sin(a) * np.cos(a), rtol=1e-6 if a.dtype == np.float32 else 1e-15)


@pytest.mark.parametrize("call", [
    lambda xs: np.stack(xs), lambda xs: np.stack(xs, 1), lambda xs: np.stack(xs, axis=-1),
    lambda xs: np.stack(tuple(xs), axis=0), lambda xs: np.stack(xs, 0, None),
])
def test_np_stack_takes_the_fast_path_for_its_argument_forms(call, monkeypatch):
    xs = [gt.constant(M23), gt.constant(-M23)]
    fast, general = _fast_and_general(monkeypatch, lambda: call(xs))
    assert fast.shape == general.shape and fast is not xs[0]
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    np.testing.assert_array_equal(fast.numpy(), call([M23, -M23]))


@pytest.mark.parametrize("arrays", [
    (V3.astype(np.float32), V3),  # mixed dtypes: promoted
    (V3.astype(np.int32), V3.astype(np.int64)),
    (V3.astype(bool), V3.astype(np.int8)),
    (V3 > 0, V3 < 0),  # one dtype that is not float
    (V3.astype(np.complex128), V3.astype(np.complex128)),
])
@pytest.mark.parametrize("name", STACKERS)
def test_stack_of_other_dtypes_gives_numpys_dtype_and_values(arrays, name, monkeypatch):
    xs = [gt.constant(a) for a in arrays]
    fast, general = _fast_and_general(monkeypatch, lambda: STACKERS[name](xs, axis=-1))
    want = np.stack(arrays, axis=-1)
    for got in (fast, general):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)


def test_stack_leaves_arrays_other_axes_and_tensors_of_tensors_to_the_general_path():
    x = gt.constant(V3)
    assert shape_functions._stack_tensors([x, V3], 0) is None  # an array among the tensors
    assert shape_functions._stack_tensors([x, gt.constant(V3.astype(np.float32))], 0) is None
    assert shape_functions._stack_tensors([x, x], np.int64(0)) is None
    assert shape_functions._stack_tensors(gt.constant(M23), 0) is None  # a tensor: split, as NumPy
    assert shape_functions._stack_tensors([], 0) is None
    assert shape_functions._stack_tensors([x, x], 2) is None  # out of range: the general path's error
    np.testing.assert_array_equal(np.stack(gt.constant(M23), axis=1).numpy(), np.stack(M23, axis=1))
    np.testing.assert_array_equal(gt.stack([x, V3]).numpy(), np.stack([V3, V3]))


@pytest.mark.parametrize("arrays, axis, error, message", [
    ((V3, M23), 0, ValueError, "all input tensors must have the same shape"),
    ((M23, M23.T), 1, ValueError, "all input tensors must have the same shape"),
    ((V3, V3), 2, Exception, "axis"),
    ((V3, V3), -3, Exception, "axis"),
    ((), 0, ValueError, "need at least one array"),
])
@pytest.mark.parametrize("name", STACKERS)
def test_stack_of_bad_input_raises_the_general_paths_error(arrays, axis, error, message, name, monkeypatch):
    xs = [gt.constant(a) for a in arrays]

    def run():
        with pytest.raises(error, match=message) as info:
            STACKERS[name](xs, axis=axis)
        return type(info.value), str(info.value)

    fast, general = _fast_and_general(monkeypatch, run)
    assert fast == general


# --- concatenate through NumPy's dispatch -------------------------------------------------------

CONCATENATE_CALLS = [
    lambda xs: np.concatenate(xs), lambda xs: np.concatenate(xs, 1), lambda xs: np.concatenate(xs, axis=-1),
    lambda xs: np.concatenate(tuple(xs), axis=0), lambda xs: np.concatenate(xs, axis=None),
    lambda xs: np.concatenate(xs, dtype=np.float32), lambda xs: np.concatenate(xs, 0, None),
]


@pytest.mark.parametrize("call", CONCATENATE_CALLS)
def test_np_concatenate_records_what_the_general_path_does(call, monkeypatch):
    arrays = (M23, M23 * 3, -M23)

    def fn(xs):
        return call(xs)

    fast, general = _fast_and_general(monkeypatch, lambda: (_recorded(fn, arrays), _traced(fn, arrays)))
    assert fast[0][0] == general[0][0] and fast[1] == general[1]
    want = call([np.sin(a) for a in arrays])
    assert fast[0][1].dtype == want.dtype
    np.testing.assert_array_equal(fast[0][1], want)


@pytest.mark.parametrize("arrays, axis", [
    ((V3, V3[:2]), 0), ((V3[:0], V3), -1), ((M23, M23[:1]), 0), ((M23, M23[:, :1], M23), 1),
    ((T234, T234[:, :1]), -2),
])
def test_concatenate_of_vectors_and_higher_ranks_along_any_axis(arrays, axis, monkeypatch):
    xs = [gt.constant(a) for a in arrays]
    assert shape_functions._concatenate_tensors(xs, axis) is not None
    fast, general = _fast_and_general(monkeypatch, lambda: np.concatenate(xs, axis=axis))
    want = np.concatenate(arrays, axis=axis)
    for got in (fast, general):
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("arrays, axis, error, message", [
    ((V3, M23), 0, ValueError, "all input shapes must match"),
    ((M23, V3), 0, ValueError, "all input shapes must match"),
    ((M23, M23.T), 0, ValueError, "all input shapes must match except along axis 0"),
    ((np.float64(1.0), np.float64(2.0)), 0, ValueError, "zero-dimensional"),
    ((V3, V3), 1, Exception, "axis"),
    ((M23, M23), -3, Exception, "axis"),
])
def test_np_concatenate_of_bad_input_raises_the_general_paths_error(arrays, axis, error, message, monkeypatch):
    xs = [gt.constant(a) for a in arrays]

    def run():
        with pytest.raises(error, match=message) as info:
            np.concatenate(xs, axis=axis)
        return type(info.value), str(info.value)

    fast, general = _fast_and_general(monkeypatch, run)
    assert fast == general


# --- zeros_like and ones_like --------------------------------------------------------------------

FILLED = {"np.zeros_like": (np.zeros_like, 0), "gradtape.zeros_like": (gt.zeros_like, 0),
          "np.ones_like": (np.ones_like, 1), "gradtape.ones_like": (gt.ones_like, 1)}
LIKE = [V3, M23.astype(np.float32), np.float64(2.5), V3[:0], (V3 * 4).astype(np.int32),
        (V3 * 4).astype(np.int64), (V3 * 4).astype(np.uint8), V3 > 0, V3 + 1j * V3,
        (V3 + 1j).astype(np.complex64), T234]


@pytest.mark.parametrize("like", LIKE, ids=lambda a: f"{a.dtype}{a.shape}")
@pytest.mark.parametrize("name", FILLED)
def test_filled_like_gives_numpys_values_and_the_general_paths_recording(like, name, monkeypatch):
    fill, value = FILLED[name]

    def run():
        w = gt.Variable(like)
        with gt.GradientTape() as tape:
            x = w * 1 if like.dtype.kind in "fc" else w  # a pending operand, or a Variable
            y = fill(x)
            # d/dw of sum(y * x) is y: no derivative flows through y itself
            total = gt.sum(gt.stack([y, y]) * x) if like.dtype.kind in "fc" else None
        out = y.numpy()
        assert not out.flags.writeable and y is not x and y is not w
        return y.dtype, out, tape._tape.structure_key(), total is not None and tape.gradient(total, w)

    fast, general = _fast_and_general(monkeypatch, run)
    want = np.full_like(like, value)
    for got in (fast, general):
        assert got[0] == want.dtype
        np.testing.assert_array_equal(got[1], want)
    assert fast[2] == general[2]
    if like.dtype.kind in "fc":
        for got in (fast, general):
            np.testing.assert_array_equal(got[3].numpy(), 2 * want)


@pytest.mark.parametrize("name", FILLED)
def test_filled_like_traces_a_constant_as_the_general_path_does(name, monkeypatch):
    fill, _ = FILLED[name]
    fast, general = _fast_and_general(monkeypatch, lambda: str(gt.make_ir(lambda x: x + fill(x), M23)))
    assert fast == general


@pytest.mark.parametrize("call, like, want", [
    (lambda x: np.zeros_like(x, dtype=np.int32), V3, np.zeros(3, np.int32)),
    (lambda x: np.ones_like(x, np.float32), V3, np.ones(3, np.float32)),
    (lambda x: np.zeros_like(x, shape=(2, 2)), V3, np.zeros((2, 2))),
    (lambda x: gt.ones_like(x, dtype=bool), V3, np.ones(3, bool)),
    (lambda x: np.zeros_like(x), [1.0, 2.0], np.zeros(2)),  # a list: NumPy's own, no dispatch
])
def test_filled_like_with_other_arguments_takes_the_general_path(call, like, want):
    got = call(gt.constant(like) if isinstance(like, np.ndarray) else like)
    got = got.numpy() if isinstance(got, gt.Tensor) else got
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_filled_leaves_tensors_of_other_dtypes_and_non_tensors_to_full_like():
    assert creation._filled(V3, np.zeros) is None  # an array
    assert creation._filled([1.0], np.zeros) is None
    assert creation._filled(gt.constant(np.array(["a"])), np.zeros) is None


# --- indices with new axes (None) ----------------------------------------------------------------

NEW_AXES = [
    (None,), None, (None, None), (slice(None), None), (None, slice(None), slice(None)),
    (1, None), (-1, None, slice(1, None, 2)), (slice(None, None, -1), None, 0), (None, 1, -3),
    (slice(1, 2), None, slice(None), None), (None, slice(5, 1)),
]


@pytest.mark.parametrize("index", NEW_AXES, ids=repr)
def test_new_axes_record_and_trace_what_the_general_path_does(index, monkeypatch):
    def run():
        def fn(xs):
            return xs[0][index]

        return _recorded(fn, (M23,)), _traced(fn, (M23,))

    assert shape_functions._new_axes_getitem(gt.constant(M23), index) is not None
    fast = run()
    monkeypatch.setattr(shape_functions, "_new_axes_getitem", lambda x, index: None)
    general = run()
    assert fast[0][0] == general[0][0] and fast[1] == general[1]
    want = np.sin(M23)[index]
    assert fast[0][1].shape == want.shape
    np.testing.assert_array_equal(fast[0][1], want)


@pytest.mark.parametrize("index", [(None,), (None, 0), (slice(None), None)], ids=repr)
def test_new_axes_of_a_vector_and_a_scalar(index):
    for like in (V3, np.float64(2.0)):
        if like.ndim == 0 and index != (None,):
            continue
        np.testing.assert_array_equal(gt.constant(like)[index].numpy(), like[index])


@pytest.mark.parametrize("index", [
    (None, 5), (None, 0, 0, 0), (None, slice(None, None, 0)), (None, np.int64(1)),
    (None, slice(np.int64(0), 2)), (None, Ellipsis, 0), (None, [0, 1]), (None, True),
], ids=repr)
def test_new_axes_with_other_entries_get_the_general_paths_answer(index, monkeypatch):
    x = gt.constant(M23)
    assert shape_functions._new_axes_getitem(x, index) is None

    def run():
        try:
            return x[index].numpy()
        except Exception as e:  # noqa: BLE001 (the errors are compared)
            return type(e), str(e)

    fast = run()
    monkeypatch.setattr(shape_functions, "_new_axes_getitem", lambda x, index: None)
    general = run()
    if isinstance(fast, tuple):
        assert fast == general
    else:
        np.testing.assert_array_equal(fast, general)
        np.testing.assert_array_equal(fast, M23[index])


@pytest.mark.parametrize("join", [
    lambda xs: np.stack(xs, axis=1), lambda xs: gt.stack(xs), lambda xs: np.concatenate(xs, axis=-1),
])
def test_variables_read_by_the_fast_paths_are_watched_as_by_the_general_path(join, monkeypatch):
    def run():
        xs = [gt.Variable(M23), gt.Variable(2 * M23)]
        with gt.GradientTape() as tape:
            y = join(xs)
            loss = gt.sum(y * y)
        key = tape._tape.structure_key()
        return key, y.numpy(), [g.numpy() for g in tape.gradient(loss, xs)]

    fast, general = _fast_and_general(monkeypatch, run)
    assert fast[0] == general[0]
    np.testing.assert_array_equal(fast[1], join([M23, 2 * M23]))
    for g, a in zip(fast[2], (M23, 2 * M23)):
        np.testing.assert_allclose(g, 2 * a, rtol=1e-15)


@pytest.mark.parametrize("name", sorted(FILLED) + ["np.full_like", "gradtape.full_like"])
def test_filled_like_takes_only_the_cpu_as_its_device_as_numpy_does(name):
    like = FILLED[name][0] if name in FILLED else (np.full_like if name.startswith("np") else gt.full_like)
    args = () if name in FILLED else (2.0,)
    x = gt.constant([1.0, 2.0])
    np.testing.assert_array_equal(like(x, *args, device="cpu"), like(np.array([1.0, 2.0]), *args))
    with pytest.raises(ValueError, match="device='cuda'"):
        like(x, *args, device="cuda")
