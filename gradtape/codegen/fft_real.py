"""The native r2c and c2r FFTs (split format, unscaled) on the complex kernels of fft_kernels.py.

    gradtape_rfft_<dt>_<n>(x, out_re, out_im, work)     the n // 2 + 1 terms of x's DFT
    gradtape_irfft_<dt>_<n>(in_re, in_im, x, work)      n * numpy.fft.irfft(in, n): the imaginary
                                                        parts of the terms 0 and n / 2 are not read

An even length transforms z_j = x_2j + i x_2j+1 with the n/2-point complex FFT and splits the
result into the spectra of the even and odd samples (E, O; X_k = E_k + W^k O_k with
W = exp(-2 pi i / n)); c2r merges them back and runs the inverse n/2-point FFT. An odd length
runs the full n-point complex FFT on x + 0i (c2r: on the Hermitian extension of its input).
"""
from __future__ import annotations

import llvmlite.ir as ir

from .fft_kernels import (_Complex, _angle_factor, _at, _i64, _loop, _new_function, _once, _store_factor,
                          _table, _table_pair, _tag, fft_function, float_type)


def _define(module, kind: str, n: int, dtype, body) -> ir.Function:
    """The module's function of kind and n, defined by body(module, n, fn, builder, complex
    helper, the c2c function it calls) unless the module has it."""
    ty, name = float_type(dtype), f"gradtape_{kind}_{_tag(dtype)}_{n}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    inner = fft_function(module, n // 2 if n % 2 == 0 else n, dtype)
    fn, b = _new_function(module, name, 4, ty)
    body(module, n, fn, b, _Complex(b, ty), inner)
    b.ret_void()
    return fn


def _half_factors(b, module, name, n, ty):
    """The table of W^k = exp(-2 pi i k / n), k < n / 2, of an even length's split and merge."""
    h = n // 2
    arr, flag = _table(module, name + ".table", h, ty)
    table = _table_pair(b, arr, h)

    def fill():
        _loop(b, h, lambda k: _store_factor(b, ty, table, k, *_angle_factor(b, module, k, n, 2.0)))

    _once(b, flag, fill)
    return table


def _interleaved(b, x, j):
    """Pointers to x[2j] and x[2j + 1]."""
    two_j = b.mul(j, _i64(2))
    return _at(b, x, two_j), _at(b, x, b.add(two_j, _i64(1)))


def rfft_function(module: ir.Module, n: int, dtype) -> ir.Function:
    return _define(module, "rfft", n, dtype, _rfft_body)


def irfft_function(module: ir.Module, n: int, dtype) -> ir.Function:
    return _define(module, "irfft", n, dtype, _irfft_body)


def _rfft_body(module, n, fn, b, cx, inner):
    x, out_re, out_im, work = fn.args
    out, h, zero = (out_re, out_im), n // 2, cx.c(0.0)
    if n % 2:  # the full FFT of x + 0i, of which the first h + 1 terms
        zeros, full = _at(b, work, 0), (_at(b, work, n), _at(b, work, 2 * n))
        _loop(b, n, lambda j: b.store(zero, _at(b, zeros, j)))
        b.call(inner, [x, zeros, *full, _at(b, work, 3 * n)])
        _loop(b, h + 1, lambda k: cx.store(out, k, cx.load(full, k)))
        return
    table = _half_factors(b, module, fn.name, n, cx.ty)
    z, big_z = (work, _at(b, work, h)), (_at(b, work, n), _at(b, work, n + h))
    _loop(b, h, lambda j: cx.store(z, j, tuple(b.load(p) for p in _interleaved(b, x, j))))
    b.call(inner, [*z, *big_z, _at(b, work, 2 * n)])
    z0 = cx.load(big_z, 0)
    cx.store(out, 0, (b.fadd(z0[0], z0[1]), zero))
    cx.store(out, h, (b.fsub(z0[0], z0[1]), zero))

    def split(k):  # E = (Z_k + conj Z_(h-k)) / 2, O = (Z_k - conj Z_(h-k)) / 2i
        zk, zc = cx.load(big_z, k), cx.conj(cx.load(big_z, b.sub(_i64(h), k)))
        e, d = cx.scale(cx.add(zk, zc), 0.5), cx.sub(zk, zc)
        o = (b.fmul(d[1], cx.c(0.5)), b.fmul(d[0], cx.c(-0.5)))
        cx.store(out, k, cx.add(e, cx.mul(o, cx.load(table, k))))

    _loop(b, h, split, start=1)


def _irfft_body(module, n, fn, b, cx, inner):
    in_re, in_im, x, work = fn.args
    spec, h, zero = (in_re, in_im), n // 2, cx.c(0.0)
    if n % 2:  # the full Hermitian spectrum, inverse-transformed; the real parts are x
        full, res = (work, _at(b, work, n)), (_at(b, work, 2 * n), _at(b, work, 3 * n))
        cx.store(full, 0, (b.load(in_re), zero))

        def mirror(k):
            v = cx.load(spec, k)
            cx.store(full, k, v)
            cx.store(full, b.sub(_i64(n), k), cx.conj(v))

        _loop(b, h + 1, mirror, start=1)
        b.call(inner, [full[1], full[0], res[1], res[0], _at(b, work, 4 * n)])
        _loop(b, n, lambda j: b.store(b.load(_at(b, res[0], j)), _at(b, x, j)))
        return
    table = _half_factors(b, module, fn.name, n, cx.ty)
    big_z, z = (work, _at(b, work, h)), (_at(b, work, n), _at(b, work, n + h))
    first, last = b.load(in_re), b.load(_at(b, in_re, h))
    cx.store(big_z, 0, (b.fadd(first, last), b.fsub(first, last)))

    def merge(k):  # Z_k = E + i O, E = X_k + conj X_(h-k), O = (X_k - conj X_(h-k)) conj(W^k)
        xk, xc = cx.load(spec, k), cx.conj(cx.load(spec, b.sub(_i64(h), k)))
        e, o = cx.add(xk, xc), cx.mul_conj(cx.sub(xk, xc), cx.load(table, k))
        cx.store(big_z, k, (b.fsub(e[0], o[1]), b.fadd(e[1], o[0])))

    _loop(b, h, merge, start=1)
    b.call(inner, [big_z[1], big_z[0], z[1], z[0], _at(b, work, 2 * n)])  # the inverse: parts swapped

    def interleave(j):
        for part, p in zip(z, _interleaved(b, x, j)):
            b.store(b.load(_at(b, part, j)), p)

    _loop(b, h, interleave)
