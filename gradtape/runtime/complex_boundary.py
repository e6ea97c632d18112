"""Native code for Functions with complex values: the real kernel and the views at its boundary.

Code generation computes with real dtypes only; codegen/complex_split.py
rewrites a Function holding complex values into a real one whose complex
inputs and outputs of shape S are real arrays of shape S + (2,) (real and
imaginary parts side by side: NumPy's memory layout of a complex array).
This module builds that real Function for the compile cache, and wraps the
real kernel's entry points so that callers pass and get complex arrays:

    z (complex128, shape S, C-contiguous)  ->  z[..., None].view(float64)   (shape S + (2,), no copy)
    out (float64, shape S + (2,))          ->  out.view(complex128)[..., 0] (shape S, no copy)

An argument the views cannot take as it is (another dtype or shape, not
C-contiguous, misaligned) makes the entry point decline (NotImplemented),
and CompiledFunction converts or refuses it against the complex signature,
as for any kernel.
"""
from __future__ import annotations

import numpy as np

from .. import codegen


def real_kernel_function(fn):
    """The Function to compile for `fn`: `fn` itself when it holds no complex value, else its
    real form (codegen.complex_split). Raises Fallback when an op cannot be made real."""
    from ..codegen.complex_split import has_complex, split_complex
    from .build import Fallback

    if fn is None or not has_complex(fn):
        return fn
    try:
        return split_complex(fn)
    except codegen.Unsupported as e:
        raise Fallback(f"code generation does not support it: {e}") from None


def wrap_entries(new, into, in_types, out_types):
    """Entry points of complex signature (in_types, out_types) around the real kernel's `new` and
    `into` (same protocol: a list of outputs or None, NotImplemented to decline).

    Only the dtype is checked here: an array whose memory the kernel cannot take as it is (not
    C-contiguous, misaligned, read-only for `into`) gives a view the kernel's own entry declines,
    or no view at all (ValueError), and then this entry declines too.
    """
    n_in, n_out = len(in_types), len(out_types)
    complex_in = [(i, np.dtype(t.dtype), _real(t.dtype)) for i, t in enumerate(in_types) if t.dtype.kind == "c"]
    complex_out = [(j, np.dtype(t.dtype)) for j, t in enumerate(out_types) if t.dtype.kind == "c"]
    complex_out_at = [(n_in + j, dtype, _real(dtype)) for j, dtype in complex_out]
    ndarray = np.ndarray

    def as_parts(arrays, specs):
        for i, dtype, real in specs:
            a = arrays[i]
            if a.__class__ is not ndarray or a.dtype != dtype:
                return False
            try:
                arrays[i] = a[..., None].view(real)
            except ValueError:  # its last axis is not contiguous
                return False
        return True

    def wrapped_new(*inputs):
        args = list(inputs)
        if len(args) != n_in or not as_parts(args, complex_in):
            return NotImplemented
        outs = new(*args)
        if outs is NotImplemented:
            return outs
        for j, dtype in complex_out:
            outs[j] = outs[j].view(dtype)[..., 0]
        return outs

    def wrapped_into(*arrays):
        args = list(arrays)
        if len(args) != n_in + n_out or not as_parts(args, complex_in) or not as_parts(args, complex_out_at):
            return NotImplemented
        return into(*args)

    return wrapped_new, wrapped_into


def _real(dtype) -> np.dtype:
    return np.dtype(np.dtype(dtype).char.lower()) if np.dtype(dtype).kind == "c" else np.dtype(dtype)
