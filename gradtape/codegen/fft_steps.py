"""Lowering of fft_pairs, rfft_pairs and irfft_pairs (ir/ops/fourier_pairs.py): one step that
calls the native kernel of the length (fft_kernels.py) on each row.

Operands are read in place when their rows are contiguous in C order (any other layout is
first copied to an arena buffer), and results are written in place when the destination is:
a packed result's row r has its real parts at 2 m r and its imaginary parts at 2 m r + m.
The kernels use an arena scratch buffer of fft_kernels.scratch_size elements, the same for
every row; rows run one after another (the bits do not depend on the thread count).
"""
from __future__ import annotations

import numpy as np

from ..ir import TensorType
from . import fft_kernels, fft_real
from .dynamic_sizes import DynamicUnsupported
from .lowered import Unsupported
from .nodes import View
from .steps import Fill, Step


class FftRows(Step):
    """Calls a kernel (kind fft, rfft, irfft) on each of `rows` rows of n points.

    `ins` and `outs` are (View, stride between rows, [offset of each part in a row]): the
    real and imaginary parts of a row of a pair of tensors, or the one part of a real one."""

    def __init__(self, kind: str, n: int, inverse: bool, rows: int, ins, outs, scratch):
        self.kind, self.n, self.inverse, self.rows = kind, n, inverse, rows
        self.ins, self.outs, self.scratch = ins, outs, scratch

    def reads(self):
        return {view.buffer for view, _, _ in self.ins}

    def writes(self):
        return {view.buffer for view, _, _ in self.outs} | {self.scratch.buffer}

    def _kernel(self, module, dtype):
        make = {"fft": fft_kernels.fft_function, "rfft": fft_real.rfft_function,
                "irfft": fft_real.irfft_function}[self.kind]
        return make(module, self.n, dtype)

    def emit(self, k):
        dtype = self.scratch.dtype
        kernel = self._kernel(k.module, dtype)
        work = self.scratch.pointer_at(k, k.i64(self.scratch.offset))

        def pointers(parts, row):
            out = []
            for view, stride, offsets in parts:
                base = k.add(k.i64(view.offset), k.b.mul(row, k.i64(stride)))
                out += [view.pointer_at(k, k.add(base, k.i64(o))) for o in offsets]
            return out

        def row(r):
            args = pointers(self.ins, r) + pointers(self.outs, r)
            if self.kind == "fft" and self.inverse:  # F^-1 z = swap(F(swap(z))): parts swapped
                args = [args[1], args[0], args[3], args[2]]
            k.b.call(kernel, args + [work])

        k.loop(self.rows, row)


def _static(eqn, *types):
    for t in types:
        if any(type(d) is not int for d in t.shape):
            raise DynamicUnsupported(f"{eqn.op.name} on a shape known only at run time")
        if t.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise Unsupported(f"{eqn.op.name}: the native FFT computes float32 and float64, got {t.dtype}")


def _contiguous(ctx, node) -> View:
    """node itself when it is a C-ordered View, else a contiguous arena copy of it."""
    if isinstance(node, View) and node.linear:
        return node
    return ctx.store(node)


def _destination(ctx, eqn):
    """(where the step writes, the equation's View): the same View unless it is not C-ordered."""
    dest = ctx.dest(eqn.out)
    return (dest if dest.linear else ctx.arena(dest.type)), dest


def _finish(ctx, out, dest):
    if out is not dest:
        ctx.add(Fill(dest, out))
    return dest


def _lower(ctx, eqn, kind, n, ins, inverse=False):
    out_type = eqn.out.type
    _static(eqn, out_type, *(x.type for x in ins))
    out, dest = _destination(ctx, eqn)
    if out_type.size == 0:
        return dest
    m = out_type.shape[-1]
    rows = out_type.size // (2 * m if kind != "irfft" else m)
    outs = [(out, 2 * m, (0, m))] if kind != "irfft" else [(out, n, (0,))]
    scratch = ctx.arena(TensorType((fft_kernels.scratch_size(kind, n),), out_type.dtype))
    views = [_contiguous(ctx, x) for x in ins]
    width = ins[0].shape[-1]
    ctx.add(FftRows(kind, n, inverse, rows, [(v, width, (0,)) for v in views], outs, scratch))
    return _finish(ctx, out, dest)


def lower_fft_pairs(ctx, eqn, re, im):
    return _lower(ctx, eqn, "fft", re.shape[-1], (re, im), eqn.params["inverse"])


def lower_rfft_pairs(ctx, eqn, x):
    return _lower(ctx, eqn, "rfft", x.shape[-1], (x,))


def lower_irfft_pairs(ctx, eqn, re, im):
    return _lower(ctx, eqn, "irfft", eqn.params["n"], (re, im))
