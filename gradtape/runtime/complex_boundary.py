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
    `into` (same protocol: a list of outputs or None, NotImplemented to decline)."""
    n_in, n_out = len(in_types), len(out_types)
    complex_in = [(i, np.dtype(t.dtype)) for i, t in enumerate(in_types) if t.dtype.kind == "c"]
    complex_out = [(j, np.dtype(t.dtype)) for j, t in enumerate(out_types) if t.dtype.kind == "c"]

    def as_parts(arrays, specs, offset, writeable):
        arrays = list(arrays)
        for i, dtype in specs:
            a = arrays[offset + i]
            if type(a) is not np.ndarray or a.dtype != dtype:
                return None
            flags = a.flags
            if not (flags.c_contiguous and flags.aligned) or (writeable and not flags.writeable):
                return None
            arrays[offset + i] = a[..., None].view(dtype.type(0).real.dtype)
        return arrays

    def wrapped_new(*inputs):
        if len(inputs) != n_in:
            return NotImplemented
        args = as_parts(inputs, complex_in, 0, False)
        if args is None:
            return NotImplemented
        outs = new(*args)
        if outs is NotImplemented:
            return outs
        for j, dtype in complex_out:
            outs[j] = outs[j].view(dtype)[..., 0]
        return outs

    def wrapped_into(*arrays):
        if len(arrays) != n_in + n_out:
            return NotImplemented
        args = as_parts(arrays, complex_in, 0, False)
        args = None if args is None else as_parts(args, complex_out, n_in, True)
        if args is None:
            return NotImplemented
        return into(*args)

    return wrapped_new, wrapped_into
