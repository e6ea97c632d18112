"""LAPACK from NumPy's bundled OpenBLAS, called from generated code: solve, slogdet,
cholesky, eigh, svd, qr, pinv.

float32 ops call the single-precision routines. numpy.linalg's front ends
(gradtape/functions/linalg_*.py) never emit them: like NumPy they compute
float32 input in float64 and cast the results back.

NumPy's ILP64 OpenBLAS exports the Fortran LAPACK routines with a prefix and
suffix (`scipy_dgesv_64_`): every argument by pointer, integers 64-bit,
and each character argument followed by a hidden length at the end. The
integer and character arguments live in a small arena block; the matrices
are copied into the arena in the layout LAPACK wants (it overwrites its
input), and results are copied (transposed where needed) into the output.

A row-major matrix read as column-major is its transpose. So: cholesky of
a symmetric matrix factors it as column-major with UPLO='U' (its upper
triangle there is our lower one) and the factor's transpose is our L;
slogdet factors A^T (same determinant). solve, eigh, svd and qr copy
their operands transposed into column-major and call LAPACK exactly as
numpy.linalg does (?gesv, ?syevd with its UPLO, ?gesdd, ?geqrf + ?orgqr),
so eigenvectors and singular vectors come out with NumPy's signs.

Failures: when LAPACK's `info` is not 0 (a singular matrix for solve, one
that is not positive definite for cholesky, no convergence for eigh), the
code calls `gradtape_linalg_failed(message, info, batch_index)`, a ctypes
callback that records the failure for the calling thread; the runtime
raises it as np.linalg.LinAlgError when the call returns (failures.py),
with the message of the interpreter (ir/ops/linalg.py: linalg_error). The
message string travels in the object code, so cached objects report
correctly in other processes.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.ir as ir
import numpy as np

from ..ir import TensorType
from ..ir.ops import log_p
from ..ir.ops.linalg import linalg_error
from ..ir.ops.linalg_decomp import qr_sizes, svd_sizes
from . import blas, failures
from .dtypes import F32, F64, I8, I32, I64, constant
from .lowered import Unsupported, blas_allowed
from .math import emit_math
from .nodes import Const, View, contiguous_strides
from .steps import Fill, Step

ERROR_SYMBOL = failures.LINALG_SYMBOL

_PREFIX = {np.dtype(np.float64): "d", np.dtype(np.float32): "s"}
_ROUTINES = ("gesv", "getrf", "potrf", "syevd", "gesdd", "geqrf", "orgqr")


def _symbol(routine: str, dtype) -> str:
    return f"scipy_{_PREFIX[np.dtype(dtype)]}{routine}_64_"


@functools.lru_cache(maxsize=None)
def address(routine: str, dtype) -> tuple | None:
    """(symbol, address) of LAPACK `routine` ("gesv", "getrf", "potrf", "syevd") for dtype, or None."""
    lib = blas._library()
    if lib is None or np.dtype(dtype) not in _PREFIX:
        return None
    name = _symbol(routine, dtype)
    try:
        return name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    except AttributeError:
        return None


# --- failures: a callback the generated code calls, raised by the runtime (failures.py) -----

_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64)


def _record_failure(message, info, batch_index):
    failures.record(functools.partial(_linalg_exception, message.decode(), int(info), int(batch_index)))


_callback = _CALLBACK_TYPE(_record_failure)


def symbol_address(symbol: str) -> int | None:
    """The address of the error callback or of a LAPACK routine named `symbol`, or None."""
    if symbol == ERROR_SYMBOL:
        return ctypes.cast(_callback, ctypes.c_void_p).value
    for routine in _ROUTINES:
        for dtype in _PREFIX:
            if _symbol(routine, dtype) == symbol:
                found = address(routine, dtype)
                return found[1] if found else None
    return None


def _linalg_exception(message: str, info: int, batch_index: int) -> Exception:
    """The LinAlgError for a failure generated code reported (a RuntimeError for an argument LAPACK rejects)."""
    function, problem, shape = message.split("|")
    shape = tuple(int(d) for d in shape.split(",") if d)
    if info < 0:
        return RuntimeError(f"numpy.linalg.{function}: LAPACK rejected argument {-info} for an input of shape "
                            f"{shape}; this is a gradtape bug, please report it")
    index = np.unravel_index(batch_index, shape[:-2]) if len(shape) > 2 else None
    return linalg_error(function, problem, shape, index)


# --- emitting calls --------------------------------------------------------------------

def _float_type(dtype):
    return F64 if np.dtype(dtype) == np.float64 else F32


class LapackCall(Step):
    """Shared machinery: an int64 scratch block for scalar arguments, calls, info checks."""

    SLOTS = 16  # int64 slots: scalars by reference, character codes, info

    def __init__(self, ctx, function: str, problem: str, shape, dtype):
        self.ints = ctx.arena(TensorType((self.SLOTS,), np.int64))
        self.function, self.problem, self.shape, self.dtype = function, problem, tuple(shape), np.dtype(dtype)
        ctx.use_external(ERROR_SYMBOL, symbol_address(ERROR_SYMBOL))

    def _slot(self, k, i, value=None):
        """Pointer to int64 slot i (storing `value`, an int or an i64 value, first when given)."""
        p = self.ints.pointer_at(k, k.i64(i))
        if value is not None:
            k.b.store(k.i64(value) if isinstance(value, int) else value, p)
        return p

    def _char(self, k, i, char: str):
        """A LAPACK character argument (one byte in slot i)."""
        return k.b.bitcast(self._slot(k, i, ord(char)), I8.as_pointer())

    def _ptr(self, k, view: View, offset):
        """Pointer to element `offset` (an i64 value) of view's buffer as the float type."""
        return view.pointer_at(k, offset)

    def _declare(self, k, routine, n_args, n_chars):
        name, _ = address(routine, self.dtype)
        args = [ir.IntType(8).as_pointer()] * n_args + [I64] * n_chars
        return blas.declare(k.module, name, ir.VoidType(), args)

    def _call(self, k, routine, args, n_chars):
        fn = self._declare(k, routine, len(args), n_chars)
        casted = [k.b.bitcast(a, ir.IntType(8).as_pointer()) for a in args]
        k.b.call(fn, casted + [k.i64(1)] * n_chars)

    def _check(self, k, info_slot, batch_index, nan_argument=None):
        """Report a nonzero info through the callback.

        LAPACK 3.x's ?gesdd checks its matrix for NaN and answers info = -(that argument's
        position); NumPy reports it as the iteration's failure, so `nan_argument` makes it one."""
        info = k.b.load(self._slot(k, info_slot))
        if nan_argument is not None:
            info = k.b.select(k.b.icmp_signed("==", info, k.i64(-nan_argument)), k.i64(1), info)
        failed = k.b.icmp_signed("!=", info, k.i64(0))
        with k.b.if_then(failed, likely=False):
            self._report(k, info, batch_index)
        return info

    def _report(self, k, info, batch_index):
        text = f"{self.function}|{self.problem}|{','.join(map(str, self.shape))}"
        msg = k.b.bitcast(failures.global_string(k.module, "gradtape_linalg_msg_", text), I8.as_pointer())
        callback = blas.declare(k.module, ERROR_SYMBOL, ir.VoidType(), [I8.as_pointer(), I64, I64])
        k.b.call(callback, [msg, info, batch_index])


def _batch_loop(k, batch_shape, body):
    """body(linear batch index) for every matrix of the stack."""
    size = int(np.prod(batch_shape, dtype=np.int64))
    k.loop(size, body)


def _transposed(view: View) -> View:
    """The same elements with the last two axes swapped."""
    shape = view.shape[:-2] + (view.shape[-1], view.shape[-2])
    strides = view.strides[:-2] + (view.strides[-1], view.strides[-2])
    return View(view.buffer, TensorType(shape, view.dtype), view.offset, strides)


def _arena_copy(ctx, node, transpose: bool) -> View:
    """A contiguous arena copy of a stack of matrices (each transposed when asked)."""
    shape = node.shape[:-2] + ((node.shape[-1], node.shape[-2]) if transpose else node.shape[-2:])
    target = ctx.arena(TensorType(shape, node.dtype))
    ctx.add(Fill(_transposed(target) if transpose else target, node))
    return target


def _destination(ctx, eqn, routines, contiguous=True):
    """Where the equation's value goes (a contiguous View at offset 0 when asked), and the
    output itself: (None, dest) for an empty result. Unsupported when LAPACK is missing or off."""
    dtype, what = eqn.out.type.dtype, eqn.op.name
    if not blas_allowed():
        raise Unsupported(f"{what}: LAPACK is off (code for export_c must run without NumPy)")
    for r in routines:
        if address(r, dtype) is None:
            raise Unsupported(f"{what}: NumPy's OpenBLAS has no LAPACK routine {r} for {np.dtype(dtype).name}")
    dest = ctx.dest(eqn.out)
    if dest.type.size == 0:
        return None, dest
    ok = dest.linear and dest.offset == 0
    return (dest if ok or not contiguous else ctx.arena(dest.type)), dest


def _add(ctx, step):
    ctx.add(step)
    for r in step.ROUTINES:
        ctx.use_external(*address(r, step.dtype))


def _finish(ctx, out, dest):
    if out is not dest:
        ctx.add(Fill(dest, out))
    return dest


# --- solve: ?gesv on A and B copied column-major ---------------------------------------------

class Gesv(LapackCall):
    ROUTINES = ("gesv",)

    def __init__(self, ctx, a_col, b_col, name, shape):
        super().__init__(ctx, name, "singular", shape, a_col.dtype)
        self.a, self.b = a_col, b_col
        self.n, self.nrhs = a_col.shape[-1], b_col.shape[-2]
        self.ipiv = ctx.arena(TensorType((self.n,), np.int64))

    def reads(self):
        return {self.a.buffer, self.b.buffer}

    def writes(self):
        return {self.a.buffer, self.b.buffer, self.ipiv.buffer, self.ints.buffer}

    def emit(self, k):
        n, nrhs = self.n, self.nrhs

        def body(i):
            a = self._ptr(k, self.a, k.b.mul(i, k.i64(n * n)))
            b = self._ptr(k, self.b, k.b.mul(i, k.i64(n * nrhs)))
            self._call(k, "gesv", [self._slot(k, 0, n), self._slot(k, 1, nrhs), a, self._slot(k, 2, max(1, n)),
                                   self.ipiv.pointer_at(k, k.i64(0)), b, self._slot(k, 3, max(1, n)),
                                   self._slot(k, 4)], 0)
            self._check(k, 4, i)

        _batch_loop(k, self.a.shape[:-2], body)


def lower_solve(ctx, eqn, a, b):
    _, dest = _destination(ctx, eqn, Gesv.ROUTINES, contiguous=False)
    if dest.type.size == 0:
        return dest
    a_col, b_col = _arena_copy(ctx, a, True), _arena_copy(ctx, b, True)
    _add(ctx, Gesv(ctx, a_col, b_col, eqn.params["name"], a.shape))
    ctx.add(Fill(dest, _transposed(b_col)))
    return dest


# --- cholesky: ?potrf('U') on the row-major copy, then zeros above the diagonal ------------------

class Potrf(LapackCall):
    ROUTINES = ("potrf",)

    def __init__(self, ctx, work, shape):
        super().__init__(ctx, "cholesky", "not_pd", shape, work.dtype)
        self.work, self.n = work, work.shape[-1]

    def reads(self):
        return {self.work.buffer}

    def writes(self):
        return {self.work.buffer, self.ints.buffer}

    def emit(self, k):
        n = self.n
        zero = constant(self.dtype, 0)

        def body(i):
            base = k.b.mul(i, k.i64(n * n))
            a = self._ptr(k, self.work, k.add(k.i64(self.work.offset), base))
            self._call(k, "potrf", [self._char(k, 0, "U"), self._slot(k, 1, n), a, self._slot(k, 2, max(1, n)),
                                    self._slot(k, 3)], 1)
            self._check(k, 3, i)

            def row(r):
                def col(c):
                    at = k.b.add(k.b.add(base, k.b.mul(r, k.i64(n))), c)
                    k.b.store(zero, self.work.pointer_at(k, k.add(k.i64(self.work.offset), at)))
                _upper_cols(k, r, n, col)

            k.loop(n, row)

        _batch_loop(k, self.work.shape[:-2], body)


def _upper_cols(k, r, n, col):
    """col(c) for c in r+1..n-1 (a loop with a dynamic start)."""
    b = k.b
    start = b.add(r, k.i64(1))
    pre = b.block
    head = b.append_basic_block("upper")
    done = b.append_basic_block("upper.end")
    b.cbranch(b.icmp_unsigned("<", start, k.i64(n)), head, done)
    b.position_at_end(head)
    c = b.phi(I64)
    c.add_incoming(start, pre)
    col(c)
    nxt = b.add(c, k.i64(1))
    c.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, k.i64(n)), head, done)
    b.position_at_end(done)


def lower_cholesky(ctx, eqn, a):
    work, dest = _destination(ctx, eqn, Potrf.ROUTINES)
    if work is None:
        return dest
    ctx.add(Fill(work, a))
    _add(ctx, Potrf(ctx, work, a.shape))
    return _finish(ctx, work, dest)


# --- slogdet: ?getrf, then the sign and the log of the pivots' product ----------------------------

class Getrf(LapackCall):
    ROUTINES = ("getrf",)

    def __init__(self, ctx, lu, dest, shape):
        super().__init__(ctx, "slogdet", "singular", shape, lu.dtype)
        self.lu, self.dest, self.n = lu, dest, lu.shape[-1]
        self.ipiv = ctx.arena(TensorType((self.n,), np.int64))

    def reads(self):
        return {self.lu.buffer}

    def writes(self):
        return {self.lu.buffer, self.ipiv.buffer, self.ints.buffer, self.dest.buffer}

    def emit(self, k):
        n, t = self.n, _float_type(self.dtype)
        one, zero = constant(self.dtype, 1), constant(self.dtype, 0)
        fabs = k.module.declare_intrinsic("llvm.fabs", [t])

        def body(i):
            base = k.b.mul(i, k.i64(n * n))
            self._call(k, "getrf", [self._slot(k, 0, n), self._slot(k, 1, n), self._ptr(k, self.lu, base),
                                    self._slot(k, 2, max(1, n)), self.ipiv.pointer_at(k, k.i64(0)),
                                    self._slot(k, 3)], 0)
            info = k.b.load(self._slot(k, 3))

            def pivot(j, sign, logsum):
                d = k.b.load(self.lu.pointer_at(k, k.b.add(base, k.b.mul(j, k.i64(n + 1)))))
                swapped = k.b.icmp_signed("!=", k.b.load(self.ipiv.pointer_at(k, j)), k.b.add(j, k.i64(1)))
                flip = k.b.xor(k.b.fcmp_ordered("<", d, zero), swapped)
                sign = k.b.select(flip, k.b.fneg(sign), sign)
                return sign, k.b.fadd(logsum, emit_math(k.b, log_p, k.b.call(fabs, [d])))

            sign, logsum = k.loop(n, pivot, (one, zero))
            singular = k.b.icmp_signed(">", info, k.i64(0))
            sign = k.b.select(singular, zero, sign)
            logsum = k.b.select(singular, constant(self.dtype, -np.inf), logsum)
            at = k.add(k.i64(self.dest.offset), k.b.mul(i, k.i64(2)))
            k.b.store(sign, self.dest.pointer_at(k, at))
            k.b.store(logsum, self.dest.pointer_at(k, k.b.add(at, k.i64(1))))
            # info < 0 (an argument LAPACK rejects) would be our bug: report it.
            with k.b.if_then(k.b.icmp_signed("<", info, k.i64(0)), likely=False):
                self._check(k, 3, i)

        _batch_loop(k, self.lu.shape[:-2], body)


def lower_slogdet(ctx, eqn, a):
    out, dest = _destination(ctx, eqn, Getrf.ROUTINES)
    if out is None:
        return dest
    _add(ctx, Getrf(ctx, _arena_copy(ctx, a, False), out, a.shape))
    return _finish(ctx, out, dest)


# --- eigh: ?syevd('V', UPLO) on the column-major copy, as numpy.linalg.eigh ---------------------------

def _ctypes_call(routine: str, dtype, args, n_chars: int) -> int:
    """Call LAPACK `routine` from Python with ctypes objects (a workspace query); returns info."""
    _, addr = address(routine, dtype)
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(args), *[ctypes.c_int64] * n_chars)(addr)
    fn(*[ctypes.addressof(a) for a in args], *[1] * n_chars)
    return int(args[-1].value)


def _float_ctype(dtype):
    return ctypes.c_double if np.dtype(dtype) == np.float64 else ctypes.c_float


def _query(routine, dtype, build, minimum: int, int_minimum: int = 0):
    """(lwork, liwork): what a workspace query (lwork = -1) of `routine` asks for, at least the minimums.

    `build(work, lwork, iwork, liwork)` returns the call's arguments (info last)."""
    if address(routine, dtype) is None:
        return minimum, int_minimum
    work, iwork = _float_ctype(dtype)(0), ctypes.c_int64(0)
    lwork, liwork = ctypes.c_int64(-1), ctypes.c_int64(-1)
    args = build(work, lwork, iwork, liwork)
    if _ctypes_call(routine, dtype, args, sum(isinstance(a, ctypes.c_char) for a in args)) != 0:
        return minimum, int_minimum
    return max(minimum, int(work.value)), max(int_minimum, int(iwork.value))


def _ints(*values):
    return [ctypes.c_int64(v) for v in values]


def _floats(dtype, n):
    return (_float_ctype(dtype) * max(1, n))()


def _syevd_workspace(n: int, dtype, uplo: str, jobz: str) -> tuple:
    def build(work, lwork, iwork, liwork):
        nn, lda, info = _ints(n, max(1, n), 0)
        return [ctypes.c_char(jobz.encode()), ctypes.c_char(uplo.encode()), nn, _floats(dtype, n * n), lda, _floats(dtype, n),
                work, lwork, iwork, liwork, info]

    return _query("syevd", dtype, build, 1 + 6 * n + 2 * n * n, 3 + 5 * n)  # the minimums of JOBZ='V'


class Syevd(LapackCall):
    ROUTINES = ("syevd",)

    def __init__(self, ctx, work, out, shape, uplo, vectors):
        super().__init__(ctx, "eigh" if vectors else "eigvalsh", "no_convergence", shape, work.dtype)
        self.work, self.out, self.n, self.uplo = work, out, work.shape[-1], uplo
        self.jobz, self.stride = ("V", (self.n + 1) * self.n) if vectors else ("N", self.n)
        lwork, liwork = _syevd_workspace(self.n, self.dtype, uplo, self.jobz)
        self.lwork, self.liwork = lwork, liwork
        self.fwork = ctx.arena(TensorType((lwork,), self.dtype))
        self.iwork = ctx.arena(TensorType((liwork,), np.int64))

    def reads(self):
        return {self.work.buffer}

    def writes(self):
        return {self.work.buffer, self.out.buffer, self.fwork.buffer, self.iwork.buffer, self.ints.buffer}

    def emit(self, k):
        n = self.n

        def body(i):
            a = self._ptr(k, self.work, k.b.mul(i, k.i64(n * n)))
            w = self.out.pointer_at(k, k.add(k.i64(self.out.offset), k.b.mul(i, k.i64(self.stride))))
            self._call(k, "syevd", [self._char(k, 0, self.jobz), self._char(k, 1, self.uplo), self._slot(k, 2, n), a,
                                    self._slot(k, 3, max(1, n)), w, self.fwork.pointer_at(k, k.i64(0)),
                                    self._slot(k, 4, self.lwork), self.iwork.pointer_at(k, k.i64(0)),
                                    self._slot(k, 5, self.liwork), self._slot(k, 6)], 2)
            self._check(k, 6, i)

        _batch_loop(k, self.work.shape[:-2], body)


def lower_eigh(ctx, eqn, a):
    out, dest = _destination(ctx, eqn, Syevd.ROUTINES)
    if out is None:
        return dest
    work = _arena_copy(ctx, a, True)  # column-major, as numpy.linalg.eigh calls ?syevd: the same vectors
    vectors = eqn.params["vectors"]
    _add(ctx, Syevd(ctx, work, out, a.shape, eqn.params["uplo"], vectors))
    if not vectors:
        return _finish(ctx, out, dest)
    # Column j of the column-major result (row j of the row-major buffer) is eigenvector j:
    # out[..., 1 + i, j] = work[..., j, i].
    n = a.shape[-1]
    vectors = View(out.buffer, work.type, out.offset + n, out.strides[:-2] + (out.strides[-2], out.strides[-1]))
    ctx.add(Fill(vectors, _transposed(work)))
    return _finish(ctx, out, dest)


# --- svd: ?gesdd on the column-major copy, as numpy.linalg.svd -----------------------------------

def _gesdd_workspace(m: int, n: int, jobz: str, dtype) -> tuple:
    k = min(m, n)
    u_cols, vt_rows = (m, n) if jobz == "A" else (k, k)

    def build(work, lwork, iwork, liwork):
        mm, nn, lda, ldu, ldvt, info = _ints(m, n, max(1, m), max(1, m), max(1, vt_rows), 0)
        return [ctypes.c_char(jobz.encode()), mm, nn, _floats(dtype, m * n), lda, _floats(dtype, k),
                _floats(dtype, m * u_cols), ldu, _floats(dtype, vt_rows * n), ldvt, work, lwork,
                _ints(0)[0], info]

    minimum = 3 * k + max(max(m, n), 5 * k * k + 4 * k) + 4 * k * k + 6 * k + max(m, n)
    return _query("gesdd", dtype, build, minimum)[0], 8 * max(k, 1)


class Gesdd(LapackCall):
    """U, s, Vh of each matrix, packed as svd_p packs them (u_col, vt_col: LAPACK's column-major U and VT)."""

    ROUTINES = ("gesdd",)

    def __init__(self, ctx, a_col, out, u_col, vt_col, full, shape):
        super().__init__(ctx, "svd", "no_convergence", shape, a_col.dtype)
        self.a, self.out, self.u, self.vt = a_col, out, u_col, vt_col
        self.m, self.n = shape[-2:]
        self.jobz = "A" if full else "S"
        self.lwork, liwork = _gesdd_workspace(self.m, self.n, self.jobz, self.dtype)
        self.fwork = ctx.arena(TensorType((self.lwork,), self.dtype))
        self.iwork = ctx.arena(TensorType((liwork,), np.int64))

    def reads(self):
        return {self.a.buffer}

    def writes(self):
        return {self.a.buffer, self.out.buffer, self.u.buffer, self.vt.buffer, self.fwork.buffer,
                self.iwork.buffer, self.ints.buffer}

    def s_pointer(self, k, i):
        """Where ?gesdd writes the singular values of matrix i: the packed output's s."""
        start = self.m * self.u.shape[-2]
        return self.out.pointer_at(k, k.add(k.i64(self.out.offset + start), k.b.mul(i, k.i64(self.out.shape[-1]))))

    def emit(self, k):
        _batch_loop(k, self.a.shape[:-2], lambda i: self._decompose(k, i))

    def _gesdd(self, k, i):
        m, n = self.m, self.n
        u_cols, vt_rows = self.u.shape[-2], self.vt.shape[-1]
        s = self.s_pointer(k, i)
        self._call(k, "gesdd", [
            self._char(k, 0, self.jobz), self._slot(k, 1, m), self._slot(k, 2, n),
            self._ptr(k, self.a, k.b.mul(i, k.i64(m * n))), self._slot(k, 3, max(1, m)), s,
            self._ptr(k, self.u, k.b.mul(i, k.i64(m * u_cols))), self._slot(k, 4, max(1, m)),
            self._ptr(k, self.vt, k.b.mul(i, k.i64(vt_rows * n))), self._slot(k, 5, max(1, vt_rows)),
            self.fwork.pointer_at(k, k.i64(0)), self._slot(k, 6, self.lwork),
            self.iwork.pointer_at(k, k.i64(0)), self._slot(k, 7)], 1)
        self._check(k, 7, i, nan_argument=4)   # A

    def _decompose(self, k, i):
        """?gesdd on matrix i, or a failure when it holds a NaN or an infinity: numpy.linalg
        refuses both from NumPy 2.5 (ir/ops/linalg.py: refuse_non_finite), where older OpenBLAS
        gave NaN for an infinity; what follows a failure computes garbage that is never returned."""
        for view in (self.a, self.out, self.u, self.vt, self.fwork, self.iwork, self.ints):
            k.pointer(view.buffer)  # made here, before the branches, so that code after them may use it
        with k.b.if_else(self._non_finite(k, i), likely=False) as (bad, good):
            with bad:
                self._report(k, k.i64(1), i)
            with good:
                self._gesdd(k, i)

    def _non_finite(self, k, i):
        """Whether matrix i holds a NaN or an infinity (an i1)."""
        t = _float_type(self.dtype)
        fabs = k.module.declare_intrinsic("llvm.fabs", [t])
        inf = constant(self.dtype, np.inf)
        size = self.m * self.n

        def element(j, bad):
            x = k.b.load(self._ptr(k, self.a, k.b.add(k.b.mul(i, k.i64(size)), j)))
            return (k.b.or_(bad, k.b.fcmp_unordered("==", k.b.call(fabs, [x]), inf)),)

        return k.loop(size, element, (ir.Constant(ir.IntType(1), 0),))[0]


def _part(out: View, start: int, shape) -> View:
    """The packed output's piece at `start` (per matrix of the stack) viewed with `shape` per matrix."""
    batch = out.shape[:-1]
    piece = TensorType(batch + tuple(shape), out.dtype)
    inner = contiguous_strides(tuple(shape))
    return View(out.buffer, piece, out.offset + start, out.strides[:-1] + inner)


def lower_svd(ctx, eqn, a):
    out, dest = _destination(ctx, eqn, Gesdd.ROUTINES)
    if out is None:
        return dest
    m, n = a.shape[-2:]
    full = eqn.params["full_matrices"]
    u_cols, k, vt_rows = svd_sizes(m, n, full)
    batch = a.shape[:-2]
    a_col = _arena_copy(ctx, a, True)
    u_col = ctx.arena(TensorType(batch + (u_cols, m), a.dtype))     # column-major m x u_cols
    vt_col = ctx.arena(TensorType(batch + (n, vt_rows), a.dtype))   # column-major vt_rows x n
    _add(ctx, Gesdd(ctx, a_col, out, u_col, vt_col, full, a.shape))
    ctx.add(Fill(_part(out, 0, (m, u_cols)), _transposed(u_col)))
    ctx.add(Fill(_part(out, m * u_cols + k, (vt_rows, n)), _transposed(vt_col)))
    return _finish(ctx, out, dest)


# --- qr: ?geqrf then ?orgqr on the column-major copy, as numpy.linalg.qr ----------------------------

def _qr_workspace(m: int, n: int, q: int, dtype) -> int:
    k = min(m, n)
    cols = max(n, q)

    def geqrf(work, lwork, iwork, liwork):
        mm, nn, lda, info = _ints(m, n, max(1, m), 0)
        return [mm, nn, _floats(dtype, m * cols), lda, _floats(dtype, k), work, lwork, info]

    def orgqr(work, lwork, iwork, liwork):
        mm, qq, kk, lda, info = _ints(m, q, k, max(1, m), 0)
        return [mm, qq, kk, _floats(dtype, m * cols), lda, _floats(dtype, k), work, lwork, info]

    return max(_query("geqrf", dtype, geqrf, max(1, n))[0], _query("orgqr", dtype, orgqr, max(1, q))[0])


class Geqrf(LapackCall):
    """Q and R of each matrix: ?geqrf, R read off above the diagonal, then ?orgqr forms Q in place."""

    ROUTINES = ("geqrf", "orgqr")

    def __init__(self, ctx, a_col, r_out: View, shape, q: int):
        super().__init__(ctx, "qr", "no_convergence", shape, a_col.dtype)
        self.a, self.r = a_col, r_out
        self.m, self.n = shape[-2:]
        self.q, self.k = q, min(self.m, self.n)
        self.lwork = _qr_workspace(self.m, self.n, q, self.dtype)
        self.fwork = ctx.arena(TensorType((self.lwork,), self.dtype))
        self.tau = ctx.arena(TensorType((max(1, self.k),), self.dtype))

    def reads(self):
        return {self.a.buffer}

    def writes(self):
        return {self.a.buffer, self.r.buffer, self.fwork.buffer, self.tau.buffer, self.ints.buffer}

    def emit(self, k):
        m, n, q = self.m, self.n, self.q
        cols = self.a.shape[-2]
        zero = constant(self.dtype, 0)
        batch = self.a.shape[:-2]

        def body(i):
            a = self._ptr(k, self.a, k.b.mul(i, k.i64(m * cols)))
            tau, work = self.tau.pointer_at(k, k.i64(0)), self.fwork.pointer_at(k, k.i64(0))
            self._call(k, "geqrf", [self._slot(k, 0, m), self._slot(k, 1, n), a, self._slot(k, 2, max(1, m)),
                                    tau, work, self._slot(k, 3, self.lwork), self._slot(k, 4)], 0)
            self._check(k, 4, i)
            bidx = k.delinearize(i, batch) if batch else []

            def element(idx):
                r, c = idx
                value = k.b.load(self.a.pointer_at(k, k.add(k.b.mul(i, k.i64(m * cols)),
                                                             k.b.add(r, k.b.mul(c, k.i64(m))))))
                self.r.store(k, bidx + [r, c], k.b.select(k.b.icmp_unsigned("<=", r, c), value, zero))

            k.nest((q, n), element)
            self._call(k, "orgqr", [self._slot(k, 5, m), self._slot(k, 6, q), self._slot(k, 7, self.k), a,
                                    self._slot(k, 8, max(1, m)), tau, work, self._slot(k, 9, self.lwork),
                                    self._slot(k, 10)], 0)
            self._check(k, 10, i)

        _batch_loop(k, batch, body)


def lower_qr(ctx, eqn, a):
    out, dest = _destination(ctx, eqn, Geqrf.ROUTINES)
    if out is None:
        return dest
    m, n = a.shape[-2:]
    q = qr_sizes(m, n, eqn.params["complete"])
    batch = a.shape[:-2]
    cols = max(n, q)
    a_col = ctx.arena(TensorType(batch + (cols, m), a.dtype))   # column-major m x cols
    first_n = View(a_col.buffer, TensorType(batch + (n, m), a.dtype), 0, a_col.strides)
    ctx.add(Fill(_transposed(first_n), a))
    _add(ctx, Geqrf(ctx, a_col, _part(out, m * q, (q, n)), a.shape, q))
    first_q = View(a_col.buffer, TensorType(batch + (q, m), a.dtype), 0, a_col.strides)
    ctx.add(Fill(_part(out, 0, (m, q)), _transposed(first_q)))
    return _finish(ctx, out, dest)


# --- pinv: ?gesdd, the cutoff, then V (diag(s+) U^T) with one ?gemm, as numpy.linalg.pinv -------------

class Pinv(Gesdd):
    """pinv of each matrix: singular values at or below rcond * max(s) count as zero."""

    def __init__(self, ctx, a_col, s, u_col, vt_col, dest, rcond, shape, name):
        super().__init__(ctx, a_col, s, u_col, vt_col, False, shape)
        self.function, self.dest, self.rcond = name, dest, rcond
        ctx.use_external(*blas.gemm_address(self.dtype))

    def writes(self):
        return super().writes() | {self.dest.buffer}

    def s_pointer(self, k, i):
        return self.out.pointer_at(k, k.b.mul(i, k.i64(self.out.shape[-1])))

    def emit(self, k):
        m, n = self.m, self.n
        kk = min(m, n)
        zero, one = constant(self.dtype, 0), constant(self.dtype, 1)

        def body(i):
            self._decompose(k, i)
            s = self.s_pointer(k, i)
            cutoff = k.b.fmul(constant(self.dtype, self.rcond), k.b.load(s))   # s descends: s[0] is the max
            ut = k.b.mul(i, k.i64(m * kk))    # U^T (k x m, row-major) is the column-major U

            def scale(c):
                sc = k.b.load(k.b.gep(s, [c], inbounds=True))
                inv = k.b.select(k.b.fcmp_ordered(">", sc, cutoff), k.b.fdiv(one, sc), zero)
                row = k.b.add(ut, k.b.mul(c, k.i64(m)))
                k.loop(m, lambda j: self._scale_at(k, self.u, k.b.add(row, j), inv))

            k.loop(kk, scale)
            # pinv (n x m) = V (n x k: the column-major VT) @ (diag(s+) U^T) (k x m)
            k.b.call(blas.declare_gemm(k.module, self.dtype), [
                ir.Constant(I32, blas.ROW_MAJOR), ir.Constant(I32, blas.NO_TRANS), ir.Constant(I32, blas.NO_TRANS),
                k.i64(n), k.i64(m), k.i64(kk), one,
                self._ptr(k, self.vt, k.b.mul(i, k.i64(n * kk))), k.i64(max(1, kk)),
                self._ptr(k, self.u, ut), k.i64(max(1, m)), zero,
                self.dest.pointer_at(k, k.add(k.i64(self.dest.offset), k.b.mul(i, k.i64(n * m)))), k.i64(max(1, m)),
            ])

        _batch_loop(k, self.a.shape[:-2], body)

    @staticmethod
    def _scale_at(k, view, at, factor):
        p = view.pointer_at(k, at)
        k.b.store(k.b.fmul(k.b.load(p), factor), p)


def lower_pinv(ctx, eqn, a):
    out, dest = _destination(ctx, eqn, Pinv.ROUTINES)
    if out is None:
        return dest
    if blas.gemm_address(a.dtype) is None:
        raise Unsupported(f"pinv: NumPy's OpenBLAS has no ?gemm for {np.dtype(a.dtype).name}")
    m, n = a.shape[-2:]
    kk = min(m, n)
    if kk == 0:
        ctx.add(Fill(out, Const(out.type, 0)))
        return _finish(ctx, out, dest)
    batch = a.shape[:-2]
    s = ctx.arena(TensorType(batch + (kk,), a.dtype))
    u_col = ctx.arena(TensorType(batch + (kk, m), a.dtype))
    vt_col = ctx.arena(TensorType(batch + (n, kk), a.dtype))
    _add(ctx, Pinv(ctx, _arena_copy(ctx, a, True), s, u_col, vt_col, out, eqn.params["rcond"], a.shape,
                   eqn.params["name"]))
    return _finish(ctx, out, dest)
