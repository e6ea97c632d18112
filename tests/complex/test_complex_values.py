"""Complex values through every path against NumPy: eager Tensors, the tape,
staged functions (native code since the runtime splits complex values into their
parts; tests/complex/test_complex_native.py checks that), vmap, in complex64 and
complex128."""
import numpy as np
import pytest

import gradtape as gt

from .complex_specs import SPECS

DTYPES = (np.complex64, np.complex128)
RTOL = {np.complex64: 2e-5, np.complex128: 1e-12}


def _check(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_eager_values_match_numpy(spec, dtype):
    args = spec.args(np.random.default_rng(0), dtype)
    want = spec.fn(*args)
    got = spec.fn(*[gt.constant(a) for a in args])
    _check(got.numpy(), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_staged_values_match_numpy(spec, dtype):
    args = spec.args(np.random.default_rng(1), dtype)
    staged = gt.differentiable(spec.fn)
    for _ in range(3):  # the served program's first runs and the one that tries to compile
        _check(staged(*args), spec.fn(*args), dtype)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_taped_values_match_numpy(spec):
    args = spec.args(np.random.default_rng(2))
    xs = [gt.constant(a) for a in args]
    with gt.GradientTape() as tape:
        tape.watch(xs)
        out = spec.fn(*xs)
    _check(out.numpy(), spec.fn(*args), np.complex128)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_vmap_matches_a_loop(spec):
    rng = np.random.default_rng(3)
    batches = [spec.args(rng) for _ in range(3)]
    stacked = [np.stack(column) for column in zip(*batches)]
    got = gt.vmap(spec.fn)(*stacked)
    _check(got, np.stack([spec.fn(*b) for b in batches]), np.complex128)


@pytest.mark.parametrize("real_dtype,complex_dtype,want", [
    (np.float32, np.complex64, np.complex64),
    (np.float64, np.complex64, np.complex128),
    (np.float32, np.complex128, np.complex128),
    (np.int64, np.complex64, np.complex128),
])
def test_promotion_follows_numpy(real_dtype, complex_dtype, want):
    x, z = np.ones(2, real_dtype), np.full(2, 1 + 1j, complex_dtype)
    assert (x + z).dtype == want  # NumPy itself
    assert (gt.constant(x) + gt.constant(z)).dtype == want
    assert gt.differentiable(lambda a, b: a * b)(x, z).dtype == want


@pytest.mark.parametrize("dtype,want", [(np.float32, np.complex64), (np.float64, np.complex128)])
def test_python_complex_scalars_are_weak(dtype, want):
    x = np.ones(2, dtype)
    assert (x * 1j).dtype == want
    assert (gt.constant(x) * 1j).dtype == want
    assert gt.differentiable(lambda a: a * (2 - 1j))(x).dtype == want
    staged = gt.differentiable(lambda a, c: a * c)  # a Python complex argument is traced weak too
    np.testing.assert_array_equal(staged(x, 2 - 1j), x * (2 - 1j))
    assert staged(x, 2 - 1j).dtype == want


def test_equality_comparisons_of_complex_values():
    z = np.array([1 + 2j, 3 - 1j, 1 + 0j])
    w = np.array([1 + 2j, 3 + 1j, 1 + 0j])
    for fn in (np.equal, np.not_equal):
        np.testing.assert_array_equal(fn(gt.constant(z), gt.constant(w)).numpy(), fn(z, w))
        np.testing.assert_array_equal(gt.differentiable(fn)(z, w), fn(z, w))
    np.testing.assert_array_equal(gt.iscomplex(gt.constant(z)).numpy(), np.iscomplex(z))
    np.testing.assert_array_equal(gt.isreal(gt.constant(z)).numpy(), np.isreal(z))
    assert gt.iscomplexobj(gt.constant(z)) and not gt.isrealobj(gt.constant(z))


def test_real_if_close_drops_tiny_imaginary_parts_as_numpy():
    z = np.array([1 + 1e-20j, 2.0])
    assert gt.real_if_close(gt.constant(z)).dtype == np.real_if_close(z).dtype == np.float64
    z = np.array([1 + 1e-3j])
    assert gt.real_if_close(gt.constant(z)).dtype == np.complex128


def test_complex_parts_of_real_input_are_numpys():
    x = np.array([1.5, -2.0])
    np.testing.assert_array_equal(gt.real(gt.constant(x)).numpy(), np.real(x))
    np.testing.assert_array_equal(gt.imag(gt.constant(x)).numpy(), np.imag(x))
    np.testing.assert_array_equal(gt.conj(gt.constant(x)).numpy(), np.conj(x))
    np.testing.assert_array_equal(gt.angle(gt.constant(x)).numpy(), np.angle(x))
