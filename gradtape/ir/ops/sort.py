"""argsort: the permutation that sorts an operand along one axis.

    argsort[axis=1] : f64[2,5] -> i64[2,5]

The order is NumPy's stable sort (`np.argsort(x, axis, kind="stable")`):
ascending, NaN after every number, -0.0 equal to 0.0, and equal elements
in their original order, so the permutation is the same wherever it is
computed (reference, native code, any CPU). It is an integer result and
has no derivative; sorted values are `gather`s at it, which carry the
derivative through the permutation (gather forward, scatter_add back, and
gather again for the second order). Native code sorts each row in
O(n log n) (codegen/sort.py).
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import ShapeError
from ..op import batching_rules, impls, new_op, shape_rules

__all__ = ["argsort_p", "argsort"]

argsort_p = new_op("argsort", elementwise=False, can_fail_on_values=False, runs_code=False,
                   differentiable=False)


def _argsort_shape(x, *, axis):
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < x.ndim:
        raise ShapeError(f"argsort: axis {axis!r} is not an axis of a rank-{x.ndim} operand {x}")
    if x.dtype.kind not in "biuf":
        raise ShapeError(f"argsort: cannot sort an operand of dtype {x.dtype} ({x}); "
                         "sort bool, integer or real floating-point values")
    return x.with_dtype(np.int64)


shape_rules[argsort_p] = _argsort_shape
impls[argsort_p] = lambda x, *, axis: np.argsort(x, axis=axis, kind="stable").astype(np.int64)
# Each batch element is sorted along the same axis, one place right of the leading batch axis.
batching_rules[argsort_p] = lambda n, ins, batched, *, axis: argsort(ins[0], axis + 1)


def argsort(x: Sym, axis: int) -> Sym:
    return bind(argsort_p, x, axis=int(axis))
