"""Native code for complex values: compiled Functions holding complex64/complex128 values
run machine code (the runtime splits every complex value into its real and imaginary
parts, codegen/complex_split.py) with the reference interpreter's numbers.

Every spec of complex_specs.py that is lowered, in both complex dtypes, against the
interpreter (which computes with NumPy's complex kernels); NumPy's special values
(inf, nan, signed zeros, overflow) of the arithmetic and elementary functions; the
ops that are not lowered fall back naming the op; gradients, vmap, `out=`, argument
conversion and refusals at the boundary.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.aot.errors import AotError
from gradtape.runtime import compile_function, config, portable

from .complex_specs import SPECS

DTYPES = (np.complex128, np.complex64)
# Arithmetic is NumPy's formula, the elementary functions glibc's up to a few units in the
# last place, sums and products in another order: a few eps of the dtype, relative to the
# largest value of each result.
RTOL = {np.complex128: 4e-15, np.complex64: 2e-6}

# What code generation does not lower yet: LAPACK of complex matrices (numpy.linalg, eig, roots)
# and complex arcsinh run in the interpreter, naming the op.
_INTERPRETED = {"arcsinh", "cholesky", "cholesky_upper_stack", "cond", "det", "eig_values", "eig_vectors",
                "eig_vectors_of_real", "eigh_values_upper", "eigh_vectors", "eigh_vectors_upper", "eigvals",
                "eigvals_of_real", "eigvals_stack", "eigvalsh", "expm_by_eig", "inv", "inv_stack", "lstsq",
                "lstsq_residuals", "norm_2", "norm_nuc", "pinv_tall", "pinv_wide_stack", "qr_square", "qr_tall_r",
                "qr_wide", "roots", "roots_of_real", "slogdet_logabsdet", "slogdet_sign", "solve",
                "solve_real_matrix", "solve_stack", "svd_abs_vh", "svd_tall_projectors", "svd_wide_reassembled",
                "svdvals"}
INTERPRETED_SPECS = [s for s in SPECS if s.name in _INTERPRETED]
assert len(INTERPRETED_SPECS) == len(_INTERPRETED)
NATIVE_SPECS = [s for s in SPECS if s not in INTERPRETED_SPECS]  # numpy.fft's included (codegen/fft_kernels.py)


def _close(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = np.max(np.abs(want), initial=0.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("spec", NATIVE_SPECS, ids=str)
def test_spec_runs_native_code_with_the_interpreters_numbers(spec, dtype):
    args = spec.args(np.random.default_rng(7), dtype)
    fn = gt.make_ir(spec.fn, *args)
    compiled = compile_function(fn)
    assert compiled.native and compiled.splits_complex, compiled.fallback_reason
    want = ir.eval_function(fn, list(args))
    for got, w in zip(compiled(*args), want):
        _close(got, w, RTOL[dtype])


@pytest.mark.parametrize("spec", INTERPRETED_SPECS, ids=str)
def test_spec_without_a_lowering_runs_in_the_interpreter_and_names_its_op(spec):
    args = spec.args(np.random.default_rng(7), np.complex128)
    fn = gt.make_ir(spec.fn, *args)
    compiled = compile_function(fn)
    assert not compiled.native and "complex values in " in compiled.fallback_reason
    for got, want in zip(compiled(*args), ir.eval_function(fn, list(args))):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_products_multiply_in_numpys_order_up_to_their_unrolled_length(dtype):
    rng = np.random.default_rng(3)
    z = (rng.standard_normal((4, 16)) + 1j * rng.standard_normal((4, 16))).astype(dtype)
    for f in (np.prod, lambda z: np.prod(z, axis=1), lambda z: np.prod(z, axis=0), lambda z: np.prod(z[:, :0], axis=1)):
        _native_equals_interpreter(f, z, rtol=RTOL[dtype])
    long = np.ones(65, dtype)
    compiled = compile_function(gt.make_ir(np.prod, long))
    assert not compiled.native and "reduce_prod: a product of 65 terms" in compiled.fallback_reason


# --- special values -----------------------------------------------------------------------------

_PARTS = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e300, -1e-310, 710.0, 800.0, -1.0, 1e-9, 1e17]
_GRID = np.array([complex(a, b) for a, b in itertools.product(_PARTS, _PARTS)])


def _same_values(got, want, rtol):
    """Equal nan/inf patterns (inf with its sign), finite parts within rtol."""
    if want.dtype.kind == "b":
        np.testing.assert_array_equal(got, want)
        return
    for g, w in ((got.real, want.real), (got.imag, want.imag)) if np.iscomplexobj(want) else ((got, want),):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.where(np.isinf(w), w, 0), np.where(np.isinf(g), g, 0))
        finite = np.isfinite(w)
        # a subnormal result keeps few bits: its last one may differ
        np.testing.assert_allclose(g[finite], w[finite], rtol=rtol, atol=4 * np.finfo(w.dtype).smallest_subnormal)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,f,binary", [
    ("divide", np.divide, True), ("equal", np.equal, True), ("not_equal", np.not_equal, True),
    ("abs", np.abs, False), ("exp", np.exp, False), ("log", np.log, False), ("sqrt", np.sqrt, False),
    ("log1p", np.log1p, False), ("expm1", np.expm1, False), ("sinh", np.sinh, False),
    ("cosh", np.cosh, False), ("sin", np.sin, False), ("cos", np.cos, False), ("tanh", np.tanh, False),
    ("tan", np.tan, False), ("arctanh", np.arctanh, False), ("arctan", np.arctan, False),
    ("arcsin", np.arcsin, False), ("arccos", np.arccos, False), ("arccosh", np.arccosh, False), ("square", lambda z: z ** 2, False), ("cube", lambda z: z ** 3, False),
    ("inverse_cube", lambda z: z ** -3, False), ("power_2.5", lambda z: z ** 2.5, False),
    ("power_complex", lambda z: z ** (0.5 + 0.5j), False),
])
def test_special_values_are_numpys(name, f, binary, dtype):
    # exp(b log z) of a large z: log's last bit, times |b log z| ~ 300, moves exp's result
    eps = (64 if name.startswith("power") else 8) * np.finfo(dtype).eps
    with np.errstate(over="ignore"):  # 1e300 is inf in complex64
        g = _GRID.astype(dtype)
    args = (np.repeat(g, len(g)), np.tile(g, len(g))) if binary else (g,)
    fn = gt.make_ir(f, *args)
    compiled = compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = ir.eval_function(fn, list(args))[0]
    _same_values(compiled(*args)[0], _c99_where_numpy_versions_differ(name, g, want), eps)


def _c99_where_numpy_versions_differ(name, z, want):
    """NumPy's values, except where NumPy 2.0 (its own npymath) and NumPy 2.1 on (the C
    library's) disagree: there C99 Annex G's (cacos(+-0 + i nan) = pi/2 + i nan, so
    arccosh(+-0 + i nan) = nan + i pi/2), and the later NumPy's sign where C99 leaves it open
    (arcsin(-inf + i nan) = nan + i inf)."""
    if name not in ("arcsin", "arccosh"):
        return want
    want = want.copy()
    if name == "arcsin":
        want[np.isneginf(z.real) & np.isnan(z.imag)] = complex(np.nan, np.inf)
    else:
        want[(z.real == 0) & np.isnan(z.imag)] = complex(np.nan, np.pi / 2)
    return want


_EXPONENTS = np.array([0, 1, 2, 3, 4, 7, -1, -2, -5, 99, -99, 2.5, 0.5, 1j, 1 + 1j, -0.5j, np.inf, np.nan,
                       complex(2, -0.0), -0.0], complex)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_power_of_varying_exponents_decides_per_element_as_numpy(dtype):
    """1 for a zero exponent, 0 or nan at a zero base, squaring for integers below 100 (NumPy's
    products, bit for bit), exp(b log a) with C's complex product otherwise."""
    grid = np.array([complex(a, b) for a, b in itertools.product(_PARTS[:9], _PARTS[:9])])
    with np.errstate(over="ignore"):
        a = np.repeat(grid, len(_EXPONENTS)).astype(dtype)
        b = np.tile(_EXPONENTS, len(grid)).astype(dtype)
    fn = gt.make_ir(np.power, a, b)
    compiled = compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    got = compiled(a, b)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = ir.eval_function(fn, [a, b])[0]
    integer = (b.imag == 0) & (b.real == np.round(b.real)) & (np.abs(b.real) < 100)
    np.testing.assert_array_equal(got[integer], want[integer])
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(np.isnan(part(got)), np.isnan(part(want)))
    finite = np.isfinite(want)
    tol = 64 * np.finfo(dtype).eps
    np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("f", [np.arctanh, np.arctan, np.arcsin, np.arccos, np.arccosh, np.log, np.sqrt, np.tanh],
                         ids=lambda f: f.__name__)
def test_functions_keep_their_accuracy_from_tiny_to_huge_arguments(f, dtype):
    """Near zero, near the branch points (+-1, +-i) and far out."""
    rng = np.random.default_rng(11)
    scales = (1e-12, 1e-4, 0.3, 1.0, 3.0, 1e4, 1e12) if dtype == np.complex128 else (1e-5, 1e-2, 0.3, 1.0, 3.0, 1e3, 1e5)
    z = np.concatenate([s * (rng.standard_normal(40) + 1j * rng.standard_normal(40)) for s in scales])
    z = np.concatenate([z, 1.0 + 1e-9 * z[:40], -1.0 + 1e-9 * z[:40], -1j + 1e-9 * z[:40]]).astype(dtype)
    compiled = compile_function(gt.make_ir(f, z))
    assert compiled.native, compiled.fallback_reason
    got, want = compiled(z)[0], f(z)  # each result to its own scale, not to the largest one's
    np.testing.assert_array_less(np.abs(got - want), 16 * np.finfo(dtype).eps * np.abs(want) + 1e-300)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_multiply_is_the_plain_formula_at_special_values(dtype):
    """(ar br - ai bi, ar bi + ai br), rounded after each product: NumPy's loop on CPUs without
    fused multiply-add (with it NumPy may fuse, and then differ at inf and in the last place)."""
    with np.errstate(over="ignore"):
        g = _GRID.astype(dtype)
    a, b = np.repeat(g, len(g)), np.tile(g, len(g))
    compiled = compile_function(gt.make_ir(np.multiply, a, b))
    assert compiled.native
    with np.errstate(all="ignore"):
        want_re = a.real * b.real - a.imag * b.imag
        want_im = a.real * b.imag + a.imag * b.real
    got = compiled(a, b)[0]
    np.testing.assert_array_equal(got.real, want_re)
    np.testing.assert_array_equal(got.imag, want_im)


# --- derivatives and transforms ----------------------------------------------------------------

Z = np.array([3 + 4j, 1 - 2j, -0.5 + 0.25j, 0.1 - 0.7j])
X = np.array([0.3, -1.2, 2.0, 0.5])


def _native_equals_interpreter(f, *args, rtol=1e-13):
    fn = gt.make_ir(f, *args)
    compiled = compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    for got, want in zip(compiled(*args), ir.eval_function(fn, list(args))):
        _close(got, want, rtol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gradients_of_complex_losses_are_native(dtype):
    z, x = Z.astype(dtype), X.astype(np.finfo(dtype).dtype)
    rtol = RTOL[dtype] * 10
    _native_equals_interpreter(gt.value_and_grad(lambda x, z: np.sum(np.abs(np.exp(1j * x) * z + 1.0) ** 2),
                                                 argnums=(0, 1)), x, z, rtol=rtol)
    _native_equals_interpreter(gt.grad(lambda z: np.sum(np.sin(z) * z ** 3), holomorphic=True), z, rtol=rtol)
    _native_equals_interpreter(gt.grad(lambda z: np.real(np.sum(np.log(z) * np.conj(z)))), z, rtol=rtol)
    _native_equals_interpreter(gt.jacfwd(lambda z: np.tanh(z) / z, holomorphic=True), z, rtol=rtol)


def test_a_staged_complex_gradient_runs_native_code(monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    loss = lambda z: np.sum(np.abs(np.exp(z) * z) ** 2)  # noqa: E731
    f = gt.grad(loss)
    got = f(Z)
    (program,) = f._programs.values()
    assert program.compiled.native and program.compiled.splits_complex
    e = np.exp(Z)
    np.testing.assert_allclose(got, 2 * np.conj(e * Z) * (e * Z + e), rtol=1e-14)  # 2 conj(w) w', w = z e^z


@pytest.mark.parametrize("n", [16, 15, 97])  # radix 4 and 2; radices 3 and 5; Bluestein
def test_a_staged_spectral_low_pass_gradient_runs_the_native_fft(monkeypatch, n):
    monkeypatch.setattr(config, "async_compile", False)
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n)
    keep = np.arange(n // 2 + 1) < n // 4

    def loss(x):
        low = np.fft.irfft(np.fft.rfft(x) * keep, n=n)
        return np.sum((x - low) ** 2)

    f = gt.value_and_grad(loss)
    value, grad = f(x)
    (program,) = f._programs.values()
    assert program.compiled.native and program.compiled.splits_complex, program.compiled.fallback_reason
    high = x - np.fft.irfft(np.fft.rfft(x) * keep, n=n)  # what the low pass leaves: its own gradient
    np.testing.assert_allclose(value, np.sum(high ** 2), rtol=1e-13)
    np.testing.assert_allclose(grad, 2 * high, rtol=1e-12, atol=1e-14)


def test_vmap_of_a_complex_function_is_native():
    zs = np.stack([Z, 2 * Z, Z * 1j])
    _native_equals_interpreter(gt.vmap(lambda z, x: np.exp(z) @ z * x), zs, X[:3])


# --- the boundary ------------------------------------------------------------------------------

def test_arguments_are_converted_or_refused_against_the_complex_signature():
    compiled = compile_function(gt.make_ir(lambda z, x: (z * x, np.abs(z)), Z, X))
    want = [Z * X, np.abs(Z)]
    strided = np.stack([Z, Z], axis=1)[:, 0]  # not contiguous: converted
    for z in (Z, strided, list(Z), Z.astype(">c16")):
        for got, w in zip(compiled(z, X), want):
            np.testing.assert_allclose(got, w, rtol=1e-15)
    with pytest.raises(TypeError, match="must be c128"):
        compiled(Z.astype(np.complex64), X)
    with pytest.raises(TypeError, match="must be c128"):
        compiled(Z.real.copy(), X)


def test_out_arrays_of_complex_type_are_written():
    compiled = compile_function(gt.make_ir(lambda z: (z * z, np.abs(z)), Z))
    outs = [np.empty(4, np.complex128), np.empty(4)]
    assert compiled(Z, out=outs) is outs
    np.testing.assert_allclose(outs[0], Z * Z, rtol=1e-15)
    np.testing.assert_allclose(outs[1], np.abs(Z), rtol=1e-15)
    compiled(Z, out=[Z, outs[1]])  # an output overlapping the input: as if computed first
    np.testing.assert_allclose(Z, np.array([3 + 4j, 1 - 2j, -0.5 + 0.25j, 0.1 - 0.7j]) ** 2, rtol=1e-15)


def test_scalars_and_literal_outputs():
    z = np.array(1.5 - 2j)
    compiled = compile_function(gt.make_ir(lambda z: (z, z * 0 + (1 + 2j), np.conj(z)), z))
    assert compiled.native
    got = compiled(z)
    assert [g.shape for g in got] == [(), (), ()]
    assert [complex(g) for g in got] == [1.5 - 2j, 1 + 2j, 1.5 + 2j]


def test_saving_or_packing_complex_code_is_refused(tmp_path):
    """Their machine code computes the real form: a file or pickle of it is refused (a staged
    function's pickle carries the IR instead, compiled again where it is loaded)."""
    compiled = compile_function(gt.make_ir(lambda z: z * z, Z))
    with pytest.raises(ValueError, match="complex values"):
        portable.pack(compiled, {})
    aot = gt.compile(lambda z: z * z, Z)
    np.testing.assert_allclose(aot(Z), Z * Z, rtol=1e-15)
    with pytest.raises(AotError, match="complex values"):
        aot.save(tmp_path / "f.gtaot")


def test_complex_code_is_loaded_from_the_disk_cache_with_its_boundary():
    from gradtape import runtime

    fn = gt.make_ir(lambda z, x: (np.exp(z) * x, np.abs(z)), Z, X)
    first = compile_function(fn)
    want = first(Z, X)
    runtime.clear_cache()  # what a new process sees: nothing in memory
    again = compile_function(gt.make_ir(lambda z, x: (np.exp(z) * x, np.abs(z)), Z, X))
    assert again.loaded_from_disk and again.native and again.splits_complex
    assert again.in_types == first.in_types and again.out_types == first.out_types
    for got, w in zip(again(Z, X), want):
        np.testing.assert_array_equal(got, w)


def test_control_flow_holding_complex_values_falls_back_naming_the_op():
    from gradtape.functions.control_flow import fori_loop

    fn = gt.make_ir(lambda z: fori_loop(0, 3, lambda i, w: w * z + 1.0, z), Z)
    compiled = compile_function(fn)
    assert not compiled.native and "complex values in scan" in compiled.fallback_reason
    np.testing.assert_array_equal(compiled(Z)[0], ir.eval_function(fn, [Z])[0])
