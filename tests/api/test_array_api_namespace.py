"""gradtape.array_api: array-API-generic code runs on tensors and differentiates; the functions
whose names or signatures differ from NumPy's agree with NumPy 2's own array API functions."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import array_api as xp


def energy(x):
    """Written against the standard only: it asks its argument for the namespace."""
    ns = x.__array_namespace__()
    return ns.sum(ns.sin(x) ** 2 + ns.linalg.vector_norm(x) * ns.acos(x / 10.0))


def energy_grad_numpy(x):
    norm = np.linalg.norm(x)
    acos = np.arccos(x / 10.0)
    return 2 * np.sin(x) * np.cos(x) + (x / norm) * np.sum(acos) - norm / 10.0 / np.sqrt(1 - (x / 10.0) ** 2)


X = np.array([0.3, -1.2, 2.5, 0.7])


def test_generic_code_differentiates_on_the_tape_and_staged():
    t = gt.constant(X)
    with gt.GradientTape() as tape:
        tape.watch(t)
        e = energy(t)
    want = energy_grad_numpy(X)
    np.testing.assert_allclose(tape.gradient(e, t).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(gt.grad(energy)(X), want, rtol=1e-12)


def test_the_namespace_and_the_array_attributes():
    t = gt.constant(X.reshape(2, 2))
    assert t.__array_namespace__() is xp and t.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="2024.12"):
        t.__array_namespace__(api_version="2021.12")
    assert xp.__array_api_version__ == "2024.12"
    np.testing.assert_array_equal(t.mT.numpy(), X.reshape(2, 2).T)
    moved = t.to_device(xp.CPU)
    assert t.device == xp.CPU and moved is not t  # a new object: t[i] = v never reaches it
    np.testing.assert_array_equal(moved.numpy(), t.numpy())
    with pytest.raises(ValueError, match="CPU"):
        t.to_device("gpu")
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == xp.float64 and info.devices() == [xp.CPU]
    assert set(info.dtypes(kind="integral").values()) == {xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8,
                                                          xp.uint16, xp.uint32, xp.uint64}


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_are_stable_both_ways(descending):
    x = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, -1.0, 5.0, 5.0, 0.0]])
    got = xp.argsort(gt.constant(x), axis=1, descending=descending).numpy()
    for row, order in zip(x, got):  # the reference: Python's stable sort of the indices by value
        assert list(order) == sorted(range(len(row)), key=lambda i: -row[i] if descending else row[i])
    np.testing.assert_array_equal(xp.sort(gt.constant(x), axis=1, descending=descending).numpy(),
                                  np.take_along_axis(x, got, axis=1))


def test_the_unique_family_matches_numpy():
    x = np.array([[2.0, 1.0, 2.0], [np.nan, 1.0, np.nan]])
    got = xp.unique_all(gt.constant(x))
    values, indices, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                                 equal_nan=False)  # every NaN its own value, as the standard says
    for name, want in [("values", values), ("indices", indices), ("inverse_indices", inverse.reshape(x.shape)),
                       ("counts", counts)]:
        np.testing.assert_array_equal(getattr(got, name).numpy(), want, err_msg=name)
    np.testing.assert_array_equal(xp.unique_values(gt.constant(x)).numpy(), np.unique_values(x))


@pytest.mark.parametrize("axis", [None, 0, (0, 2), (-1,)])
@pytest.mark.parametrize("ord", [2, 1, np.inf, 0.5])
def test_vector_norm_over_any_axes_matches_numpy_2(axis, ord):
    x = np.random.default_rng(3).normal(size=(2, 3, 4))
    for keepdims in (False, True):
        got = xp.linalg.vector_norm(gt.constant(x), axis=axis, keepdims=keepdims, ord=ord).numpy()
        np.testing.assert_allclose(got, np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord), rtol=1e-12)


def test_data_type_functions_follow_numpy_2():
    assert xp.result_type(xp.int8, xp.uint8) == np.result_type(np.int8, np.uint8)
    assert xp.result_type(gt.constant(np.ones(2, np.float32)), 1.0) == np.float32
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.float64, xp.float32)
    assert xp.isdtype(xp.uint8, "integral") and xp.isdtype(xp.float32, ("bool", "real floating"))
    assert not xp.isdtype(xp.float32, "integral")
    f = xp.finfo(xp.float32)
    assert type(f.eps) is float and f.eps == float(np.finfo(np.float32).eps) and f.bits == 32
    assert xp.iinfo(xp.int16).max == 32767
    y = xp.astype(gt.constant([1.7, -2.2]), xp.int32)
    assert y.dtype == np.int32 and list(y.numpy()) == [1, -2]


def test_creation_functions_and_the_names_numpy_spells_otherwise():
    np.testing.assert_array_equal(xp.arange(1, 7, 2, dtype=xp.int32).numpy(), [1, 3, 5])
    assert xp.zeros((2, 3)).dtype == xp.float64 and xp.full((2,), 7).dtype == np.int64
    np.testing.assert_array_equal(xp.eye(2, 3, k=1).numpy(), np.eye(2, 3, k=1))
    a, b = gt.constant(X[:2]), gt.constant(X[2:])
    np.testing.assert_array_equal(xp.concat([a, b]).numpy(), X)
    np.testing.assert_array_equal(xp.concat([a.reshape(1, 2), b.reshape(1, 2)], axis=None).numpy(), X)
    np.testing.assert_array_equal(xp.permute_dims(gt.constant(np.ones((2, 3, 4))), (2, 0, 1)).shape, (4, 2, 3))
    np.testing.assert_allclose(xp.pow(a, 2.0).numpy(), X[:2] ** 2)
    np.testing.assert_array_equal(xp.signbit(gt.constant([-0.0, 0.0, -1.0, np.nan])).numpy(),
                                  np.signbit([-0.0, 0.0, -1.0, np.nan]))
    np.testing.assert_array_equal(xp.nextafter(a, 10.0).numpy(), np.nextafter(X[:2], 10.0))
    small = np.array([1.0, -2.0], dtype=np.float32)  # a Python scalar promotes weakly, as in NumPy
    got = xp.nextafter(gt.constant(small), 10.0).numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.nextafter(small, 10.0))
    np.testing.assert_array_equal(xp.diff(gt.constant(X), prepend=gt.constant([0.0])).numpy(),
                                  np.diff(X, prepend=[0.0]))


def test_dlpack_exports_the_value():
    t = gt.constant(X)
    exported = np.from_dlpack(t)
    np.testing.assert_array_equal(exported, X)
    assert t.__dlpack_device__() == (1, 0)
    # Either the export is flagged read-only or it is a private copy: writing
    # through it never changes the tensor.
    if exported.flags.writeable:
        exported[...] = -1.0
    else:
        with pytest.raises(ValueError):
            exported[...] = -1.0
    np.testing.assert_array_equal(t.numpy(), X)


@pytest.mark.parametrize("name, x, kwargs", [
    ("fft", np.arange(6.0) - 2.5 + 1j * np.cos(np.arange(6.0)), {"n": 8}),
    ("ifft", np.arange(5.0) + 0.5j, {"norm": "ortho"}),
    ("rfft", np.sin(np.arange(7.0)), {}),
    ("irfft", np.arange(4.0) + 1j, {"n": 6}),
    ("hfft", np.arange(4.0) - 1j, {}),
    ("ihfft", np.cos(np.arange(6.0)), {"norm": "forward"}),
    ("fftn", np.arange(12.0).reshape(3, 4) * (1 + 0.5j), {"axes": (0, 1)}),
    ("rfftn", np.arange(12.0).reshape(3, 4), {"s": (3, 6), "axes": (0, 1)}),
    ("fftshift", np.arange(7.0), {}),
    ("ifftshift", np.arange(12.0).reshape(3, 4), {"axes": (1,)}),
])
def test_the_fft_extension_matches_numpy(name, x, kwargs):
    got = getattr(xp.fft, name)(xp.asarray(x), **kwargs)
    np.testing.assert_allclose(np.asarray(got), getattr(np.fft, name)(x, **kwargs), rtol=1e-13, atol=1e-12)


def test_fft_frequencies_take_the_standards_dtype():
    np.testing.assert_allclose(np.asarray(xp.fft.fftfreq(5, d=0.5)), np.fft.fftfreq(5, d=0.5))
    f = xp.fft.rfftfreq(8, dtype=xp.float32)
    assert f.dtype == np.float32
    np.testing.assert_allclose(np.asarray(f), np.fft.rfftfreq(8).astype(np.float32))
