"""Lower a Function whose shapes hold the run-time size N (codegen/dynamic_sizes.py).

The calling convention is that of `lower` (see codegen/__init__.py) with one
more input after the Function's own, the sizes vector (int64):

    args[0 .. n-1]   the inputs, of the Function's types at this call's N
    args[n]          sizes: sizes[0] = N, sizes[1 + j] = byte offset of
                     arena buffer j (`Lowered.arena_plan.layout(N)`)
    args[n+1 ..]     the outputs, then the arena (of layout(N)'s total bytes)

Loop bounds, strides, offsets and BLAS sizes that depend on N are computed
from sizes[0] in the code; everything else is as in a specialized version.
Whatever code generation cannot do with a run-time size raises
DynamicUnsupported (an Unsupported), so the caller compiles per size.
"""
from __future__ import annotations

from ..ir import Function
from .dynamic_sizes import DynamicUnsupported, SymSize  # noqa: F401 (re-exported)
from .lowered import Lowered
from .lowering import lower_function


def lower_dynamic(fn, name: str) -> Lowered:
    """Lower `fn` (shapes with SymSize dims) to `void name(i8** args)` taking N at run time.

    Raises:
      DynamicUnsupported: something needs N as a number (a size-dependent
        choice of algorithm, control flow, ...); Unsupported for the rest.
    """
    for eqn in fn.eqns:
        if any(isinstance(p, Function) for p in eqn.params.values()):
            raise DynamicUnsupported(f"{eqn.op.name}: sub-Functions (calls, control flow) in a dynamic version")
    return lower_function(fn, name, dynamic=True)
