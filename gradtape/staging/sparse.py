"""Sparse Jacobians and Hessians: find the pattern, colour it, compress, decompress.

    J = sparse_jacobian(f)(x)        # scipy.sparse.csr_array of d f(x) / d x
    H = sparse_hessian(loss)(x)      # the same for the Hessian of a scalar loss

Once per shape signature: trace f; read the sparsity pattern of its
Jacobian from the IR (ir/sparsity.py); colour its columns so that columns
of one colour share no row (networkx); and build ONE Function computing the
compressed Jacobian J @ S, where the seed matrix S has one column per
colour: f's JVP vectorized over the k seeds (ir.batching.vmap), optimized
and compiled. A call is then one native call (k JVPs at once) and a gather
of the compressed values into the pattern's order. A banded Jacobian needs
about as many JVPs as its bandwidth, whatever n is.

`sparse_hessian` does the same to the Function of f's gradient (reverse
mode): its pattern is read from the gradient's IR and its compressed form
is JVPs of the gradient (forward over reverse).
"""
from __future__ import annotations

import importlib.util
import itertools
import threading
from typing import NamedTuple

import numpy as np

from .. import ir
from ..ir.batching import vmap
from ..ir.optimize import optimize
from ..ir.sparsity import Pattern, colour_columns, jacobian_pattern
from . import program as program_module
from .derivative_functions import gradient_function
from ..tracer.signature import PY_FLOAT, as_array, describe
from .staged import CacheInfo, _count_of
from ..tracer.trace import trace_call

__all__ = [
    "sparse_jacobian", "sparse_hessian", "SparseDerivative", "COOTriple", "SparsityInfo",
    "compressed_jacobian_function",
]

_FORMATS = ("csr", "coo", "triple")


class COOTriple(NamedTuple):
    """A sparse matrix as `(data, (rows, cols), shape)`: entry (rows[e], cols[e]) is data[e].

    `scipy.sparse.coo_array(t[:2], shape=t.shape)` turns it into a scipy
    matrix; `t.toarray()` into a dense NumPy array.
    """

    data: np.ndarray
    coords: tuple
    shape: tuple

    def toarray(self) -> np.ndarray:
        dense = np.zeros(self.shape, self.data.dtype)
        dense[self.coords] = self.data
        return dense


class SparsityInfo(NamedTuple):
    """What one signature's sparse Jacobian is made of.

    Attributes:
      pattern: the ir.sparsity.Pattern of the (flattened) Jacobian.
      colours: the colour of each column; columns of one colour share one JVP.
      n_colours: the number of JVPs a call computes.
    """

    pattern: Pattern
    colours: np.ndarray
    n_colours: int


class _Entry:
    """One signature: the compiled compressed Jacobian and how to decompress it."""

    __slots__ = ("program", "seed", "gather", "indptr", "indices", "rows", "shape", "dtype", "info")


class SparseDerivative:
    """A function returning the sparse Jacobian (or Hessian) of `f` at its arguments.

    Made by `sparse_jacobian` and `sparse_hessian`; call it with f's
    arguments. See those functions for the result.
    """

    def __init__(self, f, argnums: int, format: str, hessian: bool):
        self._fun = f
        self._argnum = argnums
        self._format = format
        self._hessian = hessian
        self._kind = "sparse_hessian" if hessian else "sparse_jacobian"
        self._fname = getattr(f, "__name__", type(f).__name__)
        self._label = f"{self._kind}({self._fname})"
        self._entries = {}  # signature parts -> _Entry
        self._lock = threading.RLock()
        self._hits, self._compiles = itertools.count(), itertools.count()
        self._misses = 0

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(
                f"{self._label}: keyword arguments are not supported; pass arguments positionally"
            )
        parts = []
        for a in args:  # the fast path: plain arrays and floats, keyed inline
            t = type(a)
            if t is np.ndarray:
                parts.append(a.shape)
                parts.append(a.dtype)
            elif t is float:
                parts.append(())
                parts.append(PY_FLOAT)
            else:
                break
        else:
            entry = self._entries.get(tuple(parts))
            if entry is not None:
                next(self._hits)
                return self._evaluate(entry, [np.array(a) if type(a) is float else a for a in args])
        sig = describe(args, frozenset(), self._label)
        entry = self._entry(sig, args)
        return self._evaluate(entry, [as_array(x) for x in sig.leaves])

    def sparsity(self, *args) -> SparsityInfo:
        """The pattern and colouring used for arguments of these shapes (builds the entry)."""
        return self._entry(describe(args, frozenset(), self._label), args, count=False).info

    def cache_info(self) -> CacheInfo:
        """CacheInfo(hits, misses, traces, compiles): calls served by an existing
        signature; signatures built (each traces f once); compiles started."""
        misses = self._misses
        return CacheInfo(_count_of(self._hits), misses, misses, _count_of(self._compiles))

    def __repr__(self):
        return f"<{self._label} (cache: {self.cache_info()})>"

    # --- a call -----------------------------------------------------------------------
    def _evaluate(self, entry, leaves):
        if entry.program is None:  # no structural nonzero: nothing to compute
            values = np.zeros(0, entry.dtype)
        else:
            run, final, started = entry.program.runner()
            if started:
                next(self._compiles)
            try:
                compressed = run(*leaves, entry.seed)[0]
            finally:
                if started and not final:
                    entry.program.submit()  # the background compile, after this call
            values = np.take(compressed.reshape(-1), entry.gather)
        return self._result(entry, values)

    def _result(self, entry, values):
        # Index arrays are copied: a caller may change a result in place
        # (eliminate_zeros, sort_indices) and must not change the cache.
        if self._format == "csr":
            import scipy.sparse

            return scipy.sparse.csr_array(
                (values, entry.indices.copy(), entry.indptr.copy()), shape=entry.shape
            )
        coords = (entry.rows.copy(), entry.indices.copy())
        if self._format == "coo":
            import scipy.sparse

            return scipy.sparse.coo_array((values, coords), shape=entry.shape)
        return COOTriple(values, coords, entry.shape)

    # --- one signature -------------------------------------------------------------------
    def _entry(self, sig, args, count=True) -> _Entry:
        entry = self._entries.get(sig.parts)
        if entry is not None:
            if count:
                next(self._hits)
            return entry
        with self._lock:
            entry = self._entries.get(sig.parts)
            if entry is None:
                entry = self._build(sig, args)
                self._misses += 1
                self._entries[sig.parts] = entry
            elif count:
                next(self._hits)
            return entry

    def _build(self, sig, args) -> _Entry:
        wrt = self._check_argument(sig, args)
        traced = trace_call(self._fun, args, sig, self._fname)
        if traced.captured:
            raise self._abstract_error()
        fn = self._single_output(traced)
        if self._hessian:
            fn = gradient_function(fn, [wrt])  # same inputs; the gradient is the output
        fn = optimize(fn)
        pattern = jacobian_pattern(fn, wrt, 0)
        colours, k = colour_columns(pattern)
        x, out = fn.invars[wrt].type, fn.outvars[0].type
        entry = _Entry()
        entry.info = SparsityInfo(pattern, colours, k)
        entry.shape = (out.size, x.size)
        entry.dtype = out.dtype
        index_dtype = np.int32 if max(entry.shape + (pattern.nnz,)) < 2**31 - 1 else np.int64
        rows, cols = pattern.coo()
        entry.rows, entry.indices = rows.astype(index_dtype), cols.astype(index_dtype)
        entry.indptr = pattern.indptr.astype(index_dtype)
        entry.gather = colours[cols] * out.size + rows
        seed = np.zeros((k, x.size), x.dtype)
        entry.program = None
        if k:
            seed[colours, np.arange(x.size)] = 1
            entry.program = program_module.Program(compressed_jacobian_function(fn, wrt, k), None)
        entry.seed = seed.reshape((k,) + x.shape)
        return entry

    def _check_argument(self, sig, args) -> int:
        """The leaf index of the differentiated argument, after checking it."""
        if sig.abstract:
            raise self._abstract_error()
        i, n = self._argnum, len(sig.ranges)
        if i >= n:
            raise ValueError(
                f"{self._label}: argnums {i} is out of range for a call with {n} positional arguments"
            )
        start, stop = sig.ranges[i]
        if stop - start != 1 or isinstance(args[i], (list, tuple, dict)):
            raise TypeError(
                f"{self._label}: argument {i} must be one float array, got a "
                f"{type(args[i]).__name__} of {stop - start} values; differentiate with "
                "respect to one array: pass np.asarray(...) of it, or concatenate the parts"
            )
        ty = sig.types[start]
        if ty.is_complex:
            raise TypeError(f"{self._label}: argument {i} is complex ({ty}); sparse Jacobians are of real "
                            "arrays (docs/complex.md): differentiate the real and imaginary parts")
        if not ty.is_float:
            raise TypeError(
                f"{self._label} requires a float array: argument {i} has dtype {ty.dtype} ({ty}). "
                "Pass floats (1.0, not 1), e.g. x.astype(np.float64)."
            )
        return start

    def _single_output(self, traced) -> ir.Function:
        fn = traced.fn
        if traced.out_skeleton is not None or len(fn.outvars) != 1:
            raise TypeError(
                f"{self._label}: {self._fname} must return one array, but it returned a "
                f"{type(traced.out_skeleton).__name__} of {len(fn.outvars)} values"
            )
        out = fn.outvars[0].type
        if out.is_complex:
            raise TypeError(f"{self._label}: {self._fname} returns complex values ({out}); sparse Jacobians "
                            "are of real arrays (docs/complex.md)")
        if not out.is_float:
            raise TypeError(
                f"{self._label}: {self._fname} must return a float array, but its output is {out}"
            )
        if self._hessian and out.shape != ():
            raise TypeError(
                f"{self._label}: the Hessian is defined for scalar-output functions, but "
                f"{self._fname} returned shape {out.shape}; return a scalar (e.g. a sum), or "
                "use sparse_jacobian for a vector output"
            )
        return fn

    def _abstract_error(self):
        return TypeError(
            f"{self._label} cannot be called on abstract tensors inside a trace: its result is "
            "a sparse matrix, not a traced array. Call it on concrete arrays."
        )


def compressed_jacobian_function(fn: ir.Function, wrt: int, k: int) -> ir.Function:
    """The Function `(fn's inputs..., seed) -> J @ seed`, optimized.

    `seed` has shape (k, *x.shape) for x = invars[wrt]; the result has shape
    (k, *out.shape): the JVP of fn's first output along each seed, as one
    vectorized Function.
    """
    joint, _ = ir.jvp(fn, [wrt])  # inputs: fn's, then x's tangent
    tangent = ir.select_outputs(joint, [len(fn.outvars)])
    batched = vmap(tangent, [None] * len(fn.invars) + [0], k, out_axes=0)
    return optimize(batched)


# --- the public functions ---------------------------------------------------------------

def _scipy_available() -> bool:
    return importlib.util.find_spec("scipy") is not None


def _check(f, argnums, format, name) -> str:
    if not callable(f):
        raise TypeError(f"{name} expects a function, got a {type(f).__name__}: {f!r}"[:200])
    if not isinstance(argnums, int) or isinstance(argnums, bool) or argnums < 0:
        raise TypeError(
            f"{name}: argnums must be one non-negative int (the Jacobian is with respect to "
            f"one array argument), got {argnums!r}"
        )
    if format is None:
        return "csr" if _scipy_available() else "triple"
    if format not in _FORMATS:
        raise ValueError(f"{name}: format must be one of {_FORMATS}, got {format!r}")
    if format != "triple" and not _scipy_available():
        raise ImportError(
            f"{name}: format={format!r} needs scipy (pip install scipy, or gradtape[scipy]); "
            "format='triple' returns (data, (rows, cols), shape) without it"
        )
    return format


def sparse_jacobian(f, argnums: int = 0, *, format: str | None = None) -> SparseDerivative:
    """The Jacobian of `f` w.r.t. one array argument, as a sparse matrix.

    The sparsity pattern is read from f's IR once per shape signature (never
    from numbers, so it holds at every point), its columns are coloured
    (networkx), and each call computes only the compressed Jacobian: one
    forward-mode pass per colour, vectorized into one compiled call. For a
    banded Jacobian that is a handful of passes however large n is.

    Rows index f's output flattened in C order, columns the argument
    flattened in C order, so the result has shape (out.size, x.size) (a
    scalar output gives one row). Entries of the pattern that happen to be
    zero at this point are stored as explicit zeros.

    Args:
      f: a function of arrays returning one float array.
      argnums: the position of the argument to differentiate (a float array).
      format: "csr" (scipy.sparse.csr_array), "coo" (scipy.sparse.coo_array)
        or "triple" (a COOTriple `(data, (rows, cols), shape)`, no scipy
        needed). The default is "csr" when scipy is installed, else "triple".

    Returns:
      A SparseDerivative: call it with f's arguments. `.sparsity(*args)`
      gives the pattern and colouring, `.cache_info()` the cache counters.

    Raises:
      TypeError: argnums not an int; on a call, the argument is not one
        float array, f does not return one float array, or the call is on
        abstract tensors inside a trace.
      ValueError: an unknown format; on a call, argnums out of range.
      ImportError: format "csr" or "coo" without scipy.

    Example::

        >>> def residual(x):
        ...     return x[:-2] - 2.0 * x[1:-1] + x[2:] + gt.sin(x[1:-1])
        >>> jac = gt.sparse_jacobian(residual)
        >>> J = jac(np.zeros(10000))          # csr_array (9998, 10000), 3 JVPs
        >>> jac.sparsity(np.zeros(10000)).n_colours
        3
    """
    fmt = _check(f, argnums, format, "sparse_jacobian")
    return SparseDerivative(f, argnums, fmt, hessian=False)


def sparse_hessian(f, argnums: int = 0, *, format: str | None = None) -> SparseDerivative:
    """The Hessian of a scalar `f` w.r.t. one array argument, as a sparse matrix.

    The pattern is read from the IR of f's gradient (reverse mode), and the
    compressed Hessian is JVPs of the gradient (forward over reverse), one
    per colour, in one compiled call. The result has shape (x.size, x.size)
    over the argument flattened in C order.

    Args: as `sparse_jacobian`; f must return a float scalar.

    Returns: as `sparse_jacobian`.

    Raises: as `sparse_jacobian`, and TypeError when f's output is not a
      scalar ("the Hessian is defined for scalar-output functions").

    Example::

        >>> def rosenbrock(x):
        ...     return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
        >>> H = gt.sparse_hessian(rosenbrock)(np.zeros(1000))   # tridiagonal, 3 JVPs
    """
    fmt = _check(f, argnums, format, "sparse_hessian")
    return SparseDerivative(f, argnums, fmt, hessian=True)

