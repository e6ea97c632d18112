"""The native FFT as LLVM IR: one function per length and dtype, split format (separate
arrays of real and imaginary parts), unscaled, on one row.

    gradtape_fft_<dt>_<n>(in_re, in_im, out_re, out_im, work)     forward c2c

and the r2c and c2r functions on it (fft_real.py). `work` holds scratch_size(kind, n)
elements. The inverse c2c is the forward one with the real and imaginary parts swapped on
the way in and out (F^-1 x = swap(F(swap(x))), swap(z) = i conj(z)): it costs nothing.

The plan of a length (fft_plan.py): direct lengths run one Stockham pass per radix (4, 2,
and unrolled odd-prime butterflies), ping-ponging between `work` and the output so that the
last pass writes the output; other lengths run Bluestein's convolution through a smooth
length. Each function keeps its tables (twiddles, chirps, the rfft post-processing factors)
in a zero-initialized module global it fills on its first call (a flag read with acquire
ordering; two threads racing to fill it write the same final values, never intermediates).
Angles are computed in float64 with libm's sin and cos from exact integer ratios, and
rounded once for float32.
"""
from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from .dtypes import F32, F64, I32, I64
from .fft_plan import plan

_TWO_PI = 2.0 * math.pi


def float_type(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return F64
    if dtype == np.float32:
        return F32
    raise TypeError(f"the native FFT computes float32 and float64, got {dtype}")


def _tag(dtype) -> str:
    return "f64" if np.dtype(dtype) == np.float64 else "f32"


def scratch_size(kind: str, n: int) -> int:
    """Elements of `work` one call of the kind's function (fft, rfft, irfft) of n points needs."""
    if kind == "fft":
        return plan(n).scratch
    if n % 2 == 0:
        return 2 * n + plan(n // 2).scratch
    return (3 if kind == "rfft" else 4) * n + plan(n).scratch


# --- small emission helpers ----------------------------------------------------------------

def _i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _loop(b: ir.IRBuilder, n: int, body, start: int = 0):
    """`for i in range(start, n): body(i)` with constant bounds (a canonical counted loop)."""
    if n - start <= 0:
        return
    if n - start == 1:
        body(_i64(start))
        return
    pre = b.block
    loop = b.append_basic_block("fft.loop")
    done = b.append_basic_block("fft.done")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(_i64(start), pre)
    body(i)
    nxt = b.add(i, _i64(1))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, _i64(n)), loop, done)
    b.position_at_end(done)


def _at(b, ptr, i):
    return b.gep(ptr, [i if isinstance(i, ir.Value) else _i64(i)], inbounds=True)


def _offset(b, pair, k: int):
    return tuple(_at(b, p, k) for p in pair)


class _Complex:
    """Complex arithmetic on (re, im) pairs of LLVM values of one float type."""

    def __init__(self, b: ir.IRBuilder, ty):
        self.b, self.ty = b, ty

    def c(self, x: float):
        return ir.Constant(self.ty, float(x))

    def load(self, pair, i):
        return tuple(self.b.load(_at(self.b, p, i)) for p in pair)

    def store(self, pair, i, v):
        for p, x in zip(pair, v):
            self.b.store(x, _at(self.b, p, i))

    def add(self, x, y):
        return self.b.fadd(x[0], y[0]), self.b.fadd(x[1], y[1])

    def sub(self, x, y):
        return self.b.fsub(x[0], y[0]), self.b.fsub(x[1], y[1])

    def mul(self, x, w):
        b = self.b
        return (b.fsub(b.fmul(x[0], w[0]), b.fmul(x[1], w[1])),
                b.fadd(b.fmul(x[0], w[1]), b.fmul(x[1], w[0])))

    def mul_conj(self, x, w):
        """x * conj(w)."""
        b = self.b
        return (b.fadd(b.fmul(x[0], w[0]), b.fmul(x[1], w[1])),
                b.fsub(b.fmul(x[1], w[0]), b.fmul(x[0], w[1])))

    def scale(self, x, s: float):
        return self.b.fmul(x[0], self.c(s)), self.b.fmul(x[1], self.c(s))

    def conj(self, x):
        return x[0], self.b.fneg(x[1])


# --- butterflies (forward: omega = exp(-2 pi i / radix)) --------------------------------------

def _butterfly(cx: _Complex, a: list) -> list:
    r = len(a)
    if r == 1:
        return a
    if r == 2:
        return [cx.add(a[0], a[1]), cx.sub(a[0], a[1])]
    if r == 4:
        t0, t1 = cx.add(a[0], a[2]), cx.sub(a[0], a[2])
        t2, t3 = cx.add(a[1], a[3]), cx.sub(a[1], a[3])
        b = cx.b
        return [cx.add(t0, t2), (b.fadd(t1[0], t3[1]), b.fsub(t1[1], t3[0])),
                cx.sub(t0, t2), (b.fsub(t1[0], t3[1]), b.fadd(t1[1], t3[0]))]
    return _odd_butterfly(cx, a)


def _odd_butterfly(cx: _Complex, a: list) -> list:
    """An odd radix p by its symmetric pairs: a_b w^bc + a_(p-b) w^-bc = S_b cos - i D_b sin."""
    b, p = cx.b, len(a)
    half = (p - 1) // 2
    s = [cx.add(a[j], a[p - j]) for j in range(1, half + 1)]
    d = [cx.sub(a[j], a[p - j]) for j in range(1, half + 1)]
    y = [None] * p
    total = a[0]
    for t in s:
        total = cx.add(total, t)
    y[0] = total
    for c in range(1, half + 1):
        re, im = a[0]
        jre = jim = None
        for j in range(1, half + 1):
            angle = _TWO_PI * ((j * c) % p) / p
            co, si = cx.c(math.cos(angle)), cx.c(math.sin(angle))
            re = b.fadd(re, b.fmul(s[j - 1][0], co))
            im = b.fadd(im, b.fmul(s[j - 1][1], co))
            pr, pi = b.fmul(d[j - 1][0], si), b.fmul(d[j - 1][1], si)
            jre = pr if jre is None else b.fadd(jre, pr)
            jim = pi if jim is None else b.fadd(jim, pi)
        y[c] = (b.fadd(re, jim), b.fsub(im, jre))  # R - i J
        y[p - c] = (b.fsub(re, jim), b.fadd(im, jre))  # R + i J
    return y


# --- tables ------------------------------------------------------------------------------------

def _math(module, name: str):
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(F64, [F64]), name)


def _angle_factor(b, module, numerator, denominator: int, scale: float):
    """(cos, sin) of -scale * pi * numerator / denominator (numerator an exact integer i64, so
    the angle is rounded once, from the exact ratio)."""
    x = b.fdiv(b.sitofp(numerator, F64), ir.Constant(F64, float(denominator)))
    theta = b.fmul(x, ir.Constant(F64, scale * math.pi))
    cos = b.call(_math(module, "llvm.cos.f64"), [theta])
    sin = b.call(_math(module, "llvm.sin.f64"), [theta])
    return cos, b.fneg(sin)


def _table(module, name: str, size: int, ty):
    """A module global [2 * size x ty] (re parts, then im parts) and its `ready` flag."""
    try:
        return module.get_global(name), module.get_global(name + ".ready")
    except KeyError:
        pass
    arr = ir.GlobalVariable(module, ir.ArrayType(ty, max(1, 2 * size)), name)
    arr.linkage = "internal"
    arr.initializer = ir.Constant(arr.type.pointee, None)
    arr.align = 64
    flag = ir.GlobalVariable(module, I32, name + ".ready")
    flag.linkage = "internal"
    flag.initializer = ir.Constant(I32, 0)
    return arr, flag


def _table_pair(b, arr, size: int):
    base = b.gep(arr, [_i64(0), _i64(0)], inbounds=True)
    return base, b.gep(base, [_i64(size)], inbounds=True)


def _store_factor(b, ty, pair, i, cos, sin):
    if ty != F64:
        cos, sin = b.fptrunc(cos, ty), b.fptrunc(sin, ty)
    b.store(cos, _at(b, pair[0], i))
    b.store(sin, _at(b, pair[1], i))


def _once(b, flag, fill):
    """fill() on the first call (the flag, with acquire/release ordering, says it ran)."""
    ready = b.load_atomic(flag, "acquire", 4)
    with b.if_then(b.icmp_signed("==", ready, ir.Constant(I32, 0)), likely=False):
        fill()
        b.store_atomic(ir.Constant(I32, 1), flag, "release", 4)


def _new_function(module, name: str, n_args: int, ty):
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer()] * n_args), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    for arg in fn.args:
        arg.add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


# --- c2c -----------------------------------------------------------------------------------

def fft_function(module: ir.Module, n: int, dtype) -> ir.Function:
    """`void gradtape_fft_<dt>_<n>(in_re, in_im, out_re, out_im, work)`: the forward c2c."""
    ty, name = float_type(dtype), f"gradtape_fft_{_tag(dtype)}_{n}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    p = plan(n)
    inner = fft_function(module, p.bluestein_m, dtype) if p.bluestein_m else None
    fn, b = _new_function(module, name, 5, ty)
    in_re, in_im, out_re, out_im, work = fn.args
    src, dst = (in_re, in_im), (out_re, out_im)
    arr, flag = _table(module, name + ".table", p.table_size, ty)
    table = _table_pair(b, arr, p.table_size)
    cx = _Complex(b, ty)
    if p.bluestein_m:
        _once(b, flag, lambda: _fill_bluestein(b, module, cx, p, table, inner, work))
        _bluestein(b, cx, p, table, inner, src, dst, work)
    else:
        if p.table_size:
            _once(b, flag, lambda: _fill_twiddles(b, module, ty, p, table))
        _stockham(b, cx, p, table, src, dst, work)
    b.ret_void()
    return fn


def _fill_twiddles(b, module, ty, p, table):
    for ps in p.passes:
        if ps.ido == 1:
            continue
        length = ps.radix * ps.ido
        for c in range(1, ps.radix):
            def one(i, c=c, ps=ps, length=length):
                j = b.urem(b.mul(i, _i64(c)), _i64(length))
                cos, sin = _angle_factor(b, module, j, length, 2.0)
                _store_factor(b, ty, table, b.add(i, _i64(ps.table + (c - 1) * ps.ido)), cos, sin)
            _loop(b, ps.ido, one)


def _stockham(b, cx, p, table, src, dst, work):
    n = p.n
    if not p.passes:  # n == 1
        cx.store(dst, 0, cx.load(src, 0))
        return
    spare = (work, _at(b, work, n))
    count = len(p.passes)
    for index, ps in enumerate(p.passes):
        target = dst if (count - 1 - index) % 2 == 0 else spare
        _pass(b, cx, ps, table, src, target)
        src = target


def _pass(b, cx, ps, table, src, dst):
    l1, r, ido = ps.l1, ps.radix, ps.ido
    tw = _offset(b, table, ps.table) if ido > 1 else None

    def per_k(k):
        def per_i(i):
            base = b.add(i, b.mul(k, _i64(ido * r)))
            a = [cx.load(src, b.add(base, _i64(ido * j))) for j in range(r)]
            y = _butterfly(cx, a)
            out = b.add(i, b.mul(k, _i64(ido)))
            for c in range(r):
                v = y[c]
                if c and tw is not None:
                    v = cx.mul(v, cx.load(tw, b.add(i, _i64((c - 1) * ido))))
                cx.store(dst, b.add(out, _i64(ido * l1 * c)), v)
        _loop(b, ido, per_i)

    _loop(b, l1, per_k)


# --- Bluestein ------------------------------------------------------------------------------

def _fill_bluestein(b, module, cx, p, table, inner, work):
    n, m, ty = p.n, p.bluestein_m, cx.ty

    def chirp(k):  # exp(-pi i k^2 / n), k^2 reduced mod 2n
        j = b.urem(b.mul(k, k), _i64(2 * n))
        cos, sin = _angle_factor(b, module, j, n, 1.0)
        _store_factor(b, ty, table, k, cos, sin)

    _loop(b, n, chirp)
    # the conjugate chirp, wrapped around (b_(m-k) = b_k), divided by m, transformed
    kern = (work, _at(b, work, m))
    _loop(b, m, lambda k: cx.store(kern, k, (cx.c(0.0), cx.c(0.0))))

    def place(k):
        w = cx.scale(cx.conj(cx.load(table, k)), 1.0 / m)
        cx.store(kern, k, w)
        with b.if_then(b.icmp_unsigned("!=", k, _i64(0))):
            cx.store(kern, b.sub(_i64(m), k), w)

    _loop(b, n, place)
    # Transformed in scratch, then copied: the table only ever receives its final values (a
    # thread that finds the flag set may read it while another, racing, fills it again).
    spectrum = (_at(b, work, 2 * m), _at(b, work, 3 * m))
    b.call(inner, [*kern, *spectrum, _at(b, work, 4 * m)])
    kernel = _offset(b, table, n)
    _loop(b, m, lambda k: cx.store(kernel, k, cx.load(spectrum, k)))


def _bluestein(b, cx, p, table, inner, src, dst, work):
    n, m = p.n, p.bluestein_m
    a = (work, _at(b, work, m))
    f = (_at(b, work, 2 * m), _at(b, work, 3 * m))
    rest = _at(b, work, 4 * m)
    kernel = _offset(b, table, n)
    _loop(b, n, lambda k: cx.store(a, k, cx.mul(cx.load(src, k), cx.load(table, k))))
    _loop(b, m, lambda k: cx.store(a, k, (cx.c(0.0), cx.c(0.0))), start=n)
    b.call(inner, [*a, *f, rest])
    _loop(b, m, lambda k: cx.store(f, k, cx.mul(cx.load(f, k), cx.load(kernel, k))))
    b.call(inner, [f[1], f[0], a[1], a[0], rest])  # the inverse: parts swapped
    _loop(b, n, lambda k: cx.store(dst, k, cx.mul(cx.load(a, k), cx.load(table, k))))
