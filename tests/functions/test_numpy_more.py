"""NumPy's remaining functions on tensors, beyond the op specs
(tests/ir/specs_numpy_more.py): every mode and size pair of the
convolutions, the value-dependent set functions (eager only), and messages."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer.errors import ConcretizationError
from gradtape.tracer.numpy_dispatch import ConstantConversionError


@pytest.mark.parametrize("n,m", [(1, 1), (3, 3), (5, 3), (3, 5), (4, 2), (2, 4), (1, 4), (6, 1), (4, 7), (7, 4)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_match_numpy_for_every_mode_and_size_pair(n, m, mode):
    rng = np.random.default_rng(n * 10 + m)
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    np.testing.assert_allclose(np.convolve(gt.constant(a), v, mode).numpy(), np.convolve(a, v, mode), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(np.correlate(gt.constant(a), v, mode).numpy(), np.correlate(a, v, mode),
                               rtol=1e-12, atol=1e-15)


def test_polynomial_functions_match_numpy():
    u, v = np.array([2.0, -1.0, 0.5, 3.0, 1.0]), np.array([1.5, 0.3, -0.7])
    for got, want in zip(np.polydiv(gt.constant(u), v), np.polydiv(u, v)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(np.polyint(gt.constant(u), 2, k=[1.0, 2.0]).numpy(), np.polyint(u, 2, k=[1.0, 2.0]))
    np.testing.assert_allclose(np.polyder(gt.constant(u), 3).numpy(), np.polyder(u, 3))
    np.testing.assert_allclose(np.poly(gt.constant([1.0, -2.0, 0.5])).numpy(), np.poly([1.0, -2.0, 0.5]))
    with pytest.raises(ValueError, match=r"poly: gradtape takes the roots as a 1-D sequence, got shape \(2, 2\)"):
        np.poly(gt.constant(np.eye(2)))


def test_histogram_counts_are_integers_and_match_numpy():
    x = np.array([0.1, 0.5, 0.5, 0.9, 1.3, 2.2, 2.2])
    counts, edges = np.histogram(gt.constant(x), bins=4)
    want_counts, want_edges = np.histogram(x, bins=4)
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    np.testing.assert_allclose(edges.numpy(), want_edges, rtol=1e-15)
    density, _ = np.histogram(gt.constant(x), bins=3, density=True, range=(0.0, 3.0))
    np.testing.assert_allclose(density.numpy(), np.histogram(x, bins=3, density=True, range=(0.0, 3.0))[0])


def test_set_functions_give_numpys_values_and_gradients_on_the_tape():
    a = gt.constant([3.0, 1.0, 3.0, 2.0])
    b = gt.constant([2.0, 5.0])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        outs = {
            "unique": np.unique(a), "unique_values": np.unique_values(a), "union1d": np.union1d(a, b),
            "intersect1d": np.intersect1d(a, b), "setdiff1d": np.setdiff1d(a, b), "setxor1d": np.setxor1d(a, b),
            "trim_zeros": np.trim_zeros(gt.concatenate([gt.zeros_like(b), a, gt.zeros_like(b)]) * 1.0),
            "extract": np.extract(a.numpy() > 1.5, a),
        }
        loss = gt.sum(outs["setxor1d"] * np.array([10.0, 20.0, 30.0]))
    av, bv = a.numpy(), b.numpy()
    want = {"unique": np.unique(av), "unique_values": np.unique_values(av), "union1d": np.union1d(av, bv),
            "intersect1d": np.intersect1d(av, bv), "setdiff1d": np.setdiff1d(av, bv), "setxor1d": np.setxor1d(av, bv),
            "trim_zeros": av, "extract": np.extract(av > 1.5, av)}
    for name, out in outs.items():
        np.testing.assert_array_equal(out.numpy(), want[name], err_msg=name)
    # the gradient of sum(out * w) goes to the element each entry came from
    grad = tape.gradient(loss, [a, b])
    np.testing.assert_array_equal(grad[0].numpy(), [20.0, 10.0, 0.0, 0.0])  # 1 and 3 (first occurrence)
    np.testing.assert_array_equal(grad[1].numpy(), [0.0, 30.0])
    values, index, inverse, counts = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 2])
    np.testing.assert_array_equal(values.numpy()[inverse.numpy()], av)


def test_set_functions_in_a_staged_function_say_why_they_cannot_be_traced():
    with pytest.raises(ConcretizationError, match=r"unique: the result's length depends on the values"):
        gt.grad(lambda t: gt.sum(np.unique(t)))(np.array([1.0, 1.0, 2.0]))


def test_full_takes_a_tensor_fill_value_and_np_full_names_the_way():
    x = gt.constant(2.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(gt.full((2, 3), x) * np.arange(6.0).reshape(2, 3))
    assert tape.gradient(y, x).numpy() == 15.0
    assert gt.full(3, 1.5).numpy().tolist() == [1.5, 1.5, 1.5]
    np.testing.assert_array_equal(gt.full_like(np.zeros((2, 2)), gt.constant(4.0)).numpy(), np.full((2, 2), 4.0))
    with gt.GradientTape() as tape, pytest.raises(ConstantConversionError, match=r"NumPy \(numpy\.full, called at"):
        tape.watch(x)
        np.full((2,), x)  # NumPy converts the tensor itself: a constant, refused


def test_gradient_and_unwrap_match_numpy():
    f = np.array([[1.0, 2.0, 4.0, 7.0], [0.5, 0.0, 2.0, 2.5], [1.0, 1.0, 1.0, 3.0]])
    for got, want in zip(np.gradient(gt.constant(f), 2.0, 0.5), np.gradient(f, 2.0, 0.5)):
        np.testing.assert_allclose(got.numpy(), want)
    p = np.array([0.0, 3.0, 6.5, -2.0, 1.0, 9.0])
    np.testing.assert_allclose(np.unwrap(gt.constant(p)).numpy(), np.unwrap(p), rtol=1e-14)
    np.testing.assert_allclose(np.unwrap(gt.constant(p), period=4.0).numpy(), np.unwrap(p, period=4.0), rtol=1e-14)


def test_nanquantile_family_matches_numpy_including_all_nan_groups():
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, np.nan, np.nan, np.nan], [5.0, 4.0, np.nan, 0.5]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanquantile(x, [0.0, 0.25, 0.5, 1.0], axis=1)
    np.testing.assert_allclose(np.nanquantile(gt.constant(x), [0.0, 0.25, 0.5, 1.0], axis=1).numpy(), want,
                               rtol=1e-14)
    np.testing.assert_allclose(np.nanmedian(gt.constant(x), axis=0, keepdims=True).numpy(),
                               np.nanmedian(x, axis=0, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(np.nanpercentile(gt.constant(x), 30).numpy(), np.nanpercentile(x, 30), rtol=1e-14)
