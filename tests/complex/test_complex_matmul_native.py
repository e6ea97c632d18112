"""Complex matrix products in native code: a large (batched) matrix product of two complex
operands calls BLAS's zgemm / cgemm on the parts interleaved (codegen/complex_contract.py,
complex_gemm.py), a small one or any other contraction is four real products. Both paths
against the reference interpreter and NumPy, in both complex dtypes, with the path taken
read from the lowered code's external symbols; batched products on the pool keep their bits
for any number of threads."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.codegen import complex_contract, lower
from gradtape.codegen.complex_split import split_complex
from gradtape.codegen.parallel import BLAS_SERIAL_ENTER, PARALLEL_FOR
from gradtape.runtime import compile_function, parallel

DTYPES = (np.complex128, np.complex64)
# A sum of k products in BLAS's order, not NumPy's when four real products compute it:
# a few eps of the dtype times the length of the sum, relative to the largest value.
EPS = {np.complex128: 2.3e-16, np.complex64: 1.2e-7}
ZGEMM = {np.complex128: "scipy_cblas_zgemm64_", np.complex64: "scipy_cblas_cgemm64_"}


def _complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _gemm_symbols(fn) -> set:
    """The BLAS products the native code of `fn` calls (the real kernel complex_split makes)."""
    return {s for s in lower(split_complex(fn)).externals if "gemm" in s}


def _check(f, args, dtype, length):
    """f compiled: the interpreter's numbers and NumPy's; returns the BLAS symbols it calls."""
    fn = gt.make_ir(f, *args)
    compiled = compile_function(fn)
    assert compiled.native and compiled.splits_complex, compiled.fallback_reason
    got = compiled(*args)
    rtol = 8 * EPS[dtype] * length
    for g, w in zip(got, ir.eval_function(fn, list(args))):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
    want = f(*args)
    np.testing.assert_allclose(got[0], want, rtol=rtol, atol=rtol * np.abs(want).max())
    return _gemm_symbols(fn)


# (name, function, operand shapes, length of each sum): large enough for zgemm (m n k >= 24**3)
LARGE = [
    ("matmul odd sizes", np.matmul, ((31, 29), (29, 33)), 29),
    ("batched", np.matmul, ((3, 25, 27), (3, 27, 23)), 27),
    ("a transposed", lambda a, b: a.T @ b, ((29, 31), (29, 33)), 29),
    ("b transposed", lambda a, b: np.einsum("ij,kj->ik", a, b), ((31, 29), (33, 29)), 29),
    ("output transposed, batch letter last", lambda a, b: np.einsum("ijb,jkb->kib", a, b),
     ((25, 27, 2), (27, 23, 2)), 27),
    ("strided operand", lambda a, b: a[::2] @ b[:, 1:], ((62, 29), (29, 34)), 29),
    ("two summed letters", lambda a, b: np.einsum("ijk,jkl->il", a, b), ((31, 5, 6), (5, 6, 33)), 30),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,f,shapes,length", LARGE, ids=[c[0] for c in LARGE])
def test_large_complex_products_call_zgemm(name, f, shapes, length, dtype):
    rng = np.random.default_rng(len(name))
    args = [_complex(rng, s, dtype) for s in shapes]
    assert _check(f, args, dtype, length) == {ZGEMM[dtype]}


SMALL_OR_OTHER = [
    ("small", lambda a, b: a @ b, ((5, 6), (6, 7))),
    ("a letter summed in one operand alone", lambda a, b: np.einsum("ij,jk->i", a, b), ((31, 29), (29, 33))),
    ("an outer product", lambda a, b: np.einsum("ij,kl->ijkl", a, b), ((6, 5), (8, 8))),  # m n = 1920
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,f,shapes", SMALL_OR_OTHER, ids=[c[0] for c in SMALL_OR_OTHER])
def test_small_products_and_other_contractions_are_four_real_products(name, f, shapes, dtype):
    rng = np.random.default_rng(2)
    args = [_complex(rng, s, dtype) for s in shapes]
    assert ZGEMM[dtype] not in _check(f, args, dtype, math.prod(shapes[1]))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_a_real_operand_keeps_two_real_products(dtype):
    rng = np.random.default_rng(3)
    a = _complex(rng, (31, 29), dtype)
    b = rng.standard_normal((29, 33)).astype(np.finfo(dtype).dtype)
    assert ZGEMM[dtype] not in _check(np.matmul, [a, b], dtype, 29)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_the_threshold_decides_the_path(dtype):
    rng = np.random.default_rng(4)
    k = n = 8
    m = -(-complex_contract.ZGEMM_MIN_MNK // (k * n))  # the least m with m k n at the threshold
    b = _complex(rng, (k, n), dtype)
    at = _check(np.matmul, [_complex(rng, (m, k), dtype), b], dtype, k)
    below = _check(np.matmul, [_complex(rng, (m - 1, k), dtype), b], dtype, k)
    assert ZGEMM[dtype] in at and ZGEMM[dtype] not in below


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("size", [5, 27], ids=["small", "zgemm"])
def test_gradients_through_a_complex_product_are_the_interpreters(size, dtype):
    rng = np.random.default_rng(size)
    a, b = _complex(rng, (size, size + 2), dtype), _complex(rng, (size + 2, size + 1), dtype)
    fn = gt.make_ir(gt.value_and_grad(lambda a, b: np.sum(np.abs(a @ b) ** 2), argnums=(0, 1)), a, b)
    compiled = compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    assert (ZGEMM[dtype] in _gemm_symbols(fn)) == (size == 27)
    rtol = 16 * EPS[dtype] * size
    got, want = compiled(a, b), ir.eval_function(fn, [a, b])
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
    c = a @ b  # the gradients by hand (gradtape's convention: dL/dre - i dL/dim)
    for g, w in zip(got[1:], (2 * c.conj() @ b.T, a.T @ (2 * c.conj()))):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_batched_products_split_by_batch_on_the_pool_and_keep_their_bits(dtype):
    rng = np.random.default_rng(5)
    a, b = _complex(rng, (16, 40, 33), dtype), _complex(rng, (16, 33, 40), dtype)
    fn = gt.make_ir(np.matmul, a, b)
    module = str(lower(split_complex(fn)).module)
    assert ZGEMM[dtype] in module and PARALLEL_FOR in module and BLAS_SERIAL_ENTER in module
    compiled = compile_function(fn)
    saved = parallel.threads, parallel.min_elements
    try:
        parallel.configure(threads=1, min_elements=0)
        (one,) = compiled(a, b)
        for threads in (2, 3):
            parallel.configure(threads=threads, min_elements=0)
            assert np.array_equal(compiled(a, b)[0], one), f"{threads} threads changed the result"
    finally:
        parallel.configure(threads=saved[0], min_elements=saved[1])
    rtol = 8 * EPS[dtype] * 33
    np.testing.assert_allclose(one, a @ b, rtol=rtol, atol=rtol * np.abs(one).max())
