"""The native FFT kernels (codegen/fft_kernels.py, fft_real.py) through the pair ops
(ir/ops/fourier_pairs.py), compiled by the runtime, against numpy.fft and the reference
interpreter.

Errors are measured as ||got - want|| / ||want|| in units of the dtype's epsilon and must stay
under a multiple of log2(n) (an FFT's error grows like log n): a float64 result must be
float64-accurate, a float32 one float32-accurate (computed in float32, not worse).
"""
import math

import numpy as np
import pytest

from gradtape import ir
from gradtape.codegen import fft_plan
from gradtape.ir.errors import DTypeError, ShapeError
from gradtape.ir.ops import fourier_pairs as fp
from gradtape.runtime import compile_function

DTYPES = (np.float64, np.float32)
SMALL = [list(range(1 + 16 * i, 17 + 16 * i)) for i in range(4)]  # every n in 1..64, 16 per Function
LARGE = [
    [96, 100, 243, 625, 3 * 5 * 7 * 11, 4 * 7 * 11 * 13, 2 * 13 * 13],  # odd radices, direct
    [257, 1009, 4099, 37 * 41, 2 * 37, 13 * 17 * 19, 31 * 31],  # prime factors above 13: Bluestein
    [2 ** k for k in range(7, 17)],
]
ERROR_PER_LOG2N = 4.0  # measured worst: about 1 (float64) and 0.35 (float32) epsilon per log2(n)


def _build(sizes, dtype, rows):
    """One Function: for each n, inputs re, im (rows, n) and a half spectrum (rows, n // 2 + 1);
    outputs fft, inverse fft (two parts each), rfft (two parts) and irfft."""
    b = ir.Builder()
    ins, outs = [], []
    for n in sizes:
        re, im = (b.input(ir.TensorType((rows, n), dtype)) for _ in range(2))
        hre, him = (b.input(ir.TensorType((rows, n // 2 + 1), dtype)) for _ in range(2))
        ins += [re, im, hre, him]
        outs += [*fp.fft_pairs(re, im, False), *fp.fft_pairs(re, im, True), *fp.rfft_pairs(re),
                 fp.irfft_pairs(hre, him, n)]
    return b.build(ins, outs)


def _references(n, re, im, hre, him):
    z = re.astype(np.float64) + 1j * im.astype(np.float64)
    h = hre.astype(np.float64) + 1j * him.astype(np.float64)
    f, g, r = np.fft.fft(z), np.fft.ifft(z) * n, np.fft.rfft(re.astype(np.float64))
    return [f.real, f.imag, g.real, g.imag, r.real, r.imag, np.fft.irfft(h, n) * n]


def _relative_error(got_parts, want_parts) -> float:
    got = np.concatenate([np.ravel(g).astype(np.float64) for g in got_parts])
    want = np.concatenate([np.ravel(w) for w in want_parts])
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / scale) if scale else float(np.abs(got).max())


def _check(sizes, dtype, rows):
    fn = _build(sizes, dtype, rows)
    cf = compile_function(fn)
    assert cf.native, cf.fallback_reason
    rng = np.random.default_rng(sum(sizes))
    args = []
    for n in sizes:
        args += [rng.standard_normal((rows, m)).astype(dtype) for m in (n, n, n // 2 + 1, n // 2 + 1)]
    got = cf(*args)
    interpreted = ir.eval_function(fn, args)
    eps = np.finfo(dtype).eps
    for i, n in enumerate(sizes):
        mine, theirs = got[7 * i: 7 * i + 7], interpreted[7 * i: 7 * i + 7]
        assert all(g.dtype == np.dtype(dtype) for g in mine)
        want = _references(n, *args[4 * i: 4 * i + 4])
        bound = ERROR_PER_LOG2N * eps * max(1.0, math.log2(n))
        # per transform: fft, inverse fft, rfft (two parts each), irfft
        for what, part in (("fft", slice(0, 2)), ("inverse fft", slice(2, 4)), ("rfft", slice(4, 6)),
                           ("irfft", slice(6, 7))):
            error = _relative_error(mine[part], want[part])
            assert error <= bound, f"{what} of n={n} ({np.dtype(dtype).name}): error {error / eps:.2f} eps"
            against_interpreter = _relative_error(mine[part], [np.asarray(t, np.float64) for t in theirs[part]])
            assert against_interpreter <= 2 * bound, f"{what} of n={n}: {against_interpreter / eps:.2f} eps"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("sizes", SMALL, ids=lambda s: f"n{s[0]}-{s[-1]}")
def test_every_length_up_to_64(sizes, dtype):
    _check(sizes, dtype, rows=3)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("sizes", LARGE, ids=("odd_radices", "bluestein", "powers_of_2"))
def test_larger_lengths(sizes, dtype):
    _check(sizes, dtype, rows=2)


def test_the_plans_cover_what_the_tests_claim():
    """The large lengths take the paths their group names: direct or Bluestein."""
    assert all(fft_plan.is_direct(n) for n in LARGE[0] + LARGE[2])
    assert not any(fft_plan.is_direct(n) for n in LARGE[1]) and fft_plan.MAX_RADIX == 13
    assert {p.radix for n in LARGE[0] for p in fft_plan.plan(n).passes} >= {2, 3, 4, 5, 7, 11, 13}
    m = fft_plan.plan(4099).bluestein_m
    assert m >= 2 * 4099 - 1 and set(fft_plan.prime_factors(m)) <= {2, 3, 5}


def test_strided_operands_and_results_feeding_other_ops():
    """Operands that are not C-ordered (a transpose) are copied; results are read by other ops
    through the views of their parts; the inverse of the forward transform is n times the input."""
    b = ir.Builder()
    x = b.input(ir.TensorType((6, 4), np.float64))
    xt = ir.ops.transpose(x, (1, 0))  # (4, 6): rows of 6 points, strided in x
    re, im = fp.fft_pairs(xt, xt * 2.0, False)
    back_re, back_im = fp.fft_pairs(re, im, True)
    spec_re, spec_im = fp.rfft_pairs(xt)
    y = fp.irfft_pairs(spec_re, spec_im, 6)
    fn = b.build([x], [back_re + back_im, y])
    cf = compile_function(fn)
    assert cf.native, cf.fallback_reason
    xs = np.random.default_rng(5).standard_normal((6, 4))
    got = cf(xs)
    np.testing.assert_allclose(got[0], 6 * 3 * xs.T, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got[1], 6 * xs.T, rtol=1e-13, atol=1e-13)


def test_irfft_reads_no_imaginary_part_of_the_first_and_middle_terms():
    b = ir.Builder()
    re, im = (b.input(ir.TensorType((5,), np.float64)) for _ in range(2))
    fn = b.build([re, im], [fp.irfft_pairs(re, im, 8)])
    cf = compile_function(fn)
    r = np.arange(1.0, 6.0)
    a, c = np.array([0.5, 1.0, -2.0, 3.0, 7.0]), np.array([-9.0, 1.0, -2.0, 3.0, 4.0])  # differ at 0 and 4
    np.testing.assert_array_equal(cf(r, a)[0], cf(r, c)[0])
    np.testing.assert_allclose(cf(r, a)[0], 8 * np.fft.irfft(r + 1j * a, 8), rtol=1e-14, atol=1e-13)


def test_an_empty_batch_and_bad_operands():
    b = ir.Builder()
    re, im = (b.input(ir.TensorType((0, 16), np.float32)) for _ in range(2))
    fn = b.build([re, im], list(fp.fft_pairs(re, im, False)))
    cf = compile_function(fn)
    assert cf.native and [o.shape for o in cf(np.zeros((0, 16), np.float32), np.zeros((0, 16), np.float32))] == \
        [(0, 16), (0, 16)]
    b = ir.Builder()
    x32, x64 = b.input(ir.TensorType((4,), np.float32)), b.input(ir.TensorType((4,), np.float64))
    with pytest.raises(ShapeError, match="one type"):
        fp.fft_pairs(x32, x64, False)
    with pytest.raises(DTypeError, match="float32 or float64"):
        fp.rfft_pairs(b.input(ir.TensorType((4,), np.int64)))
    with pytest.raises(ShapeError, match="n=9 needs 5 terms"):
        fp.irfft_pairs(x64, x64, 9)
    empty = b.input(ir.TensorType((3, 0), np.float64))
    with pytest.raises(ShapeError, match="nonempty last axis"):  # numpy.fft refuses 0 points too
        fp.rfft_pairs(empty)


def test_compiled_ahead_of_time_saved_and_loaded(tmp_path):
    """A saved program carries its kernels and fills their tables on its first call after loading
    (the tables are zero-initialized globals of the object, not data the compile baked in)."""
    import gradtape as gt
    from gradtape.tracer.dispatch import bind

    n = 1009  # Bluestein: the kernel calls the 2^a 3^b 5^c-point kernel, which has tables of its own
    keep = (np.arange(n // 2 + 1) < 100) / n

    def loss(x):
        spectrum = bind(fp.rfft_pairs_p, x)
        low = bind(fp.irfft_pairs_p, spectrum[0] * keep, spectrum[1] * keep, n=n)
        return np.sum((x - low) ** 2)

    compiled = gt.compile(gt.value_and_grad(loss), gt.ShapeDtype((n,)))
    path = tmp_path / "lowpass.gtc"
    compiled.save(path)
    loaded = gt.load(path)
    x = np.random.default_rng(9).standard_normal(n)
    residual = x - np.fft.irfft(np.fft.rfft(x) * keep * n, n)
    for f in (loaded, compiled):
        value, grad = f(x)
        assert value == pytest.approx(np.sum(residual ** 2), rel=1e-12)
        np.testing.assert_allclose(grad, 2 * residual, rtol=1e-11, atol=1e-12)
    assert compiled.native and loaded.native
