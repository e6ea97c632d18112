"""Indexing's fast path (tracer/basic_index.py, and its C twin in _crecord.c) against the
general getitem of functions/shape.py: same values, same recorded structure, gradients
against NumPy, and every index it must not take handed to the general path, with its errors.
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape.functions import shape as shape_functions
from gradtape.tracer import basic_index
from gradtape.tracer.c_view import crecord

FAST = {"python": basic_index.python_getitem}
if crecord is not None:
    FAST["c"] = crecord.getitem

X = np.arange(60.0).reshape(3, 4, 5) * 0.5 - 7.0

BASIC = [
    0, -1, 2, -3, (1, 2), (-1, -2, -5), (0, 3, 4),
    slice(None), slice(1, None), slice(None, None, -1), slice(-2, None, -2), slice(5, 1, -1),
    slice(10, 20), slice(2, 1), slice(0, 1), slice(-100, 100), slice(None, None, 2),
    (slice(None), 1), (1, slice(None, None, -2)), (slice(1, 3), -1, slice(None, None, 3)),
    (slice(None), slice(None), -1), (), (slice(0, 0), 2),
]


def _general(monkeypatch):
    monkeypatch.setattr(shape_functions, "basic_getitem", lambda x, index: NotImplemented)


@pytest.mark.parametrize("impl", sorted(FAST))
@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_values_match_numpy(impl, index):
    out = FAST[impl](gt.constant(X), index)
    assert out is not NotImplemented
    np.testing.assert_array_equal(out.numpy(), X[index])
    assert out.shape == X[index].shape


@pytest.mark.parametrize("impl", sorted(FAST))
@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_gradient_scatters_into_the_indexed_places(impl, index):
    w = np.random.default_rng(3).standard_normal(X[index].shape)
    x = gt.constant(X)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(FAST[impl](x, index) * w)
    expected = np.zeros_like(X)
    expected[index] += w
    g = tape.gradient(y, x, unconnected_gradients="zero")
    np.testing.assert_array_equal(g.numpy(), expected)
    np.testing.assert_allclose(y.numpy(), np.sum(X[index] * w), rtol=1e-13)


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_records_what_the_general_getitem_records(index, monkeypatch):
    def recorded():
        x = gt.constant(X)
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = x[index] * 2.0
        return tape._tape.structure_key(), y.numpy()

    fast = recorded()
    _general(monkeypatch)
    general = recorded()
    assert fast[0] == general[0]
    np.testing.assert_array_equal(fast[1], general[1])


@pytest.mark.parametrize("impl", sorted(FAST))
@pytest.mark.parametrize("index", [
    3, -4, (0, 4), (0, 0, 5), (0, 0, -6),                   # out of range: the general path raises
    (0, 0, 0, 0),                                           # too many indices
    np.int64(1), True, None, Ellipsis, (Ellipsis, 1), (None, 0), [0, 1], np.array([1]),
    slice(np.int64(1), None), slice(None, None, 0), slice(0.5, None), 2**70, "a",
], ids=repr)
def test_declines_what_it_does_not_take(impl, index):
    assert FAST[impl](gt.constant(X), index) is NotImplemented


@pytest.mark.parametrize("index, error, message", [
    (3, IndexError, "index 3 is out of bounds for axis 0 with size 3"),
    ((0, -5), IndexError, "index -5 is out of bounds for axis 1 with size 4"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor: tensor is 3-dimensional, but 4 were indexed"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
])
def test_errors_come_from_the_general_getitem(index, error, message):
    x = gt.constant(X)
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(error, match=message):
            x[index]


def test_declines_abstract_and_unknown_tensors():
    class Marked(gt.Tensor):
        __slots__ = ()

    for impl in FAST.values():
        assert impl(Marked(X), 0) is NotImplemented
    # Abstract tensors are traced by the general getitem: staged indexing still works.
    g = gt.grad(lambda v: gt.sum(v[1, ::-2] ** 2))(X)
    expected = np.zeros_like(X)
    expected[1, ::-2] = 2 * X[1, ::-2]
    np.testing.assert_allclose(g, expected)


@pytest.mark.parametrize("impl", sorted(FAST))
def test_full_index_returns_the_tensor_itself(impl):
    x = gt.constant(X)
    assert FAST[impl](x, ()) is x
    assert FAST[impl](x, slice(None)) is x
    assert FAST[impl](x, (slice(None), slice(-100, 100))) is x


@pytest.mark.parametrize("impl", sorted(FAST))
def test_pending_tensors_and_variables(impl):
    v = gt.Variable(X)
    with gt.GradientTape() as tape:
        y = gt.sin(v)                         # pending on the tape
        z = FAST[impl](y, (1, slice(None, None, -1), -2)) + FAST[impl](v, (2, 0, 0))
        loss = gt.sum(z)
    expected = np.zeros_like(X)
    expected[1, ::-1, -2] = np.cos(X[1, ::-1, -2])
    expected[2, 0, 0] += 4.0                  # four elements of z each add v[2, 0, 0]
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), expected, rtol=1e-13)
    np.testing.assert_allclose(z.numpy(), np.sin(X[1, ::-1, -2]) + X[2, 0, 0], rtol=1e-13)


def test_rosenbrock_gradient_through_scalar_indices():
    x0 = np.array([1.2, 0.7])
    x = gt.constant(x0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2
    g = tape.gradient(y, x).numpy()
    a, b = x0
    np.testing.assert_allclose(g, [-400 * a * (b - a * a) - 2 * (1 - a), 200 * (b - a * a)], rtol=1e-13)
    np.testing.assert_allclose(float(y), 100 * (b - a * a) ** 2 + (1 - a) ** 2, rtol=1e-13)


# The C getitem remembers each (shape, index of ints) and the signatures its two records found
# (_crecord.c's index_memo): repeated, alternated and evicted entries must record exactly what a
# fresh parse records.

@pytest.mark.parametrize("impl", sorted(FAST))
def test_repeated_int_indices_on_tensors_of_other_dtypes_and_shapes(impl):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(4), rng.standard_normal(4).astype(np.float32), rng.standard_normal((4, 3)),
              rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(7)]
    for _ in range(3):  # the same (shape, index) keys, met again with each dtype in turn
        for a in arrays:
            x = gt.constant(a)
            w = rng.standard_normal(a[2].shape).astype(a.dtype)
            with gt.GradientTape() as tape:
                tape.watch(x)
                parts = [FAST[impl](x, i) for i in (2, -2, 2)]
                y = gt.sum((parts[0] + 3.0 * parts[1] - parts[2]) * w)
            assert all(p.dtype == a.dtype and p.shape == a[2].shape for p in parts)
            for p, i in zip(parts, (2, -2, 2)):
                np.testing.assert_array_equal(p.numpy(), a[i])
            expected = np.zeros_like(a)
            expected[-2] += w * 3.0  # the same element as 2 on a length-4 axis, another on length 7
            g = tape.gradient(y, x)
            assert g.dtype == a.dtype
            np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6 if a.dtype == np.float32 else 1e-15)


@pytest.mark.parametrize("impl", sorted(FAST))
def test_tuple_of_ints_on_a_variable_many_times(impl):
    v = gt.Variable(X)
    for step in range(4):
        with gt.GradientTape() as tape:
            loss = FAST[impl](v, (1, 2, 3)) * FAST[impl](v, (-1, 0, -1)) + FAST[impl](v, (1, 2)) [0]
        expected = np.zeros_like(X)
        expected[1, 2, 3] += X[-1, 0, -1]
        expected[-1, 0, -1] += X[1, 2, 3]
        expected[1, 2, 0] += 1.0
        np.testing.assert_array_equal(tape.gradient(loss, v).numpy(), expected)
        assert float(loss) == X[1, 2, 3] * X[-1, 0, -1] + X[1, 2, 0]


def test_more_indices_than_the_memo_keeps():
    n = 5000  # past _crecord.c's INDEX_MEMO_MAX (4096): the memo is cleared on the way
    a = np.random.default_rng(6).standard_normal(n)
    x = gt.constant(a)
    for _ in range(2):
        with gt.GradientTape() as tape:
            tape.watch(x)
            total = x[0]
            for i in range(1, n, 7):
                total = total + float(i) * x[i]
        expected = np.zeros(n)
        expected[0] = 1.0
        expected[1:n:7] = np.arange(1, n, 7)
        np.testing.assert_array_equal(tape.gradient(total, x).numpy(), expected)
        np.testing.assert_allclose(float(total), a[0] + np.dot(np.arange(1, n, 7), a[1:n:7]), rtol=1e-12)


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_traced_indexing_emits_what_the_general_getitem_emits(index, monkeypatch):
    """A traced tensor's basic index takes the same binds (basic_index.abstract_getitem)
    without the general path's index expansion: the same IR, the same values as NumPy."""
    def traced():
        return str(gt.make_ir(lambda v: v[index] * 2.0, X))

    fast = traced()
    monkeypatch.setattr(shape_functions, "abstract_getitem", lambda x, index: NotImplemented)
    general = traced()
    assert fast == general
    np.testing.assert_array_equal(gt.differentiable(lambda v: v[index] * 2.0)(X), X[index] * 2.0)


def test_abstract_getitem_declines_symbolic_sizes_and_other_indices():
    seen = []

    def f(v):
        seen.append(basic_index.abstract_getitem(v, (None, 0)))
        seen.append(basic_index.abstract_getitem(v, np.int64(0)))
        seen.append(basic_index.abstract_getitem(v, (0, 9)))
        return v[0]

    gt.make_ir(f, X)
    assert seen == [NotImplemented] * 3
    assert basic_index.abstract_getitem(gt.constant(X), 0) is NotImplemented  # concrete: not its case


@pytest.mark.parametrize("impl", sorted(FAST))
def test_one_index_object_on_shapes_that_differ_in_one_axis_or_past_small_ints(impl):
    """The same int or slice object on arrays whose shapes differ in one length (or have lengths
    past the ints Python keeps one object of): each indexed as NumPy indexes it, in a loop, as
    C remembers recent indices by their objects."""
    arrays = [np.arange(float(n * 3)).reshape(n, 3) for n in (4, 5, 300, 301, 4)]
    arrays += [np.arange(float(3 * n)).reshape(3, n) for n in (300, 301)]
    indices = [2, -1, slice(1, 3), slice(-2, None), slice(None, None, -1), slice(299, 301)]
    for _ in range(3):
        for a in arrays:
            x = gt.constant(a)
            for index in indices:
                try:
                    want = a[index]
                except IndexError:
                    continue
                out = FAST[impl](x, index)
                if out is NotImplemented:
                    continue
                np.testing.assert_array_equal(out.numpy(), want)
                assert out.shape == want.shape
                with gt.GradientTape() as tape:
                    tape.watch(x)
                    y = gt.sum(FAST[impl](x, index) * 2.0)
                grad = np.zeros_like(a)
                grad[index] = 2.0
                np.testing.assert_array_equal(tape.gradient(y, x).numpy(), grad)
