"""Bitwise functions of integers and bools (numpy.bitwise_and, ..., the `& | ^ ~ << >>` operators).

They carry no derivative (their results are integers) and follow NumPy:
operands promote as NumPy promotes them (a Python int is weak), bools stay
bools for and/or/xor/invert, and floats are refused with NumPy's TypeError.
Staged, each is one op compiled to native code (ir/ops/bitwise.py).
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import bitwise as bw
from ..ir.ops import elementwise as ew
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ._promote import as_tensor, promote_pair

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert", "bitwise_not", "invert",
           "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift"]


def _refuse(name, *dtypes, kinds="iub"):
    if any(np.dtype(d).kind not in kinds for d in dtypes):
        types = ", ".join(str(np.dtype(d)) for d in dtypes)
        raise TypeError(f"ufunc '{name}' not supported for the input types ({types}): it takes integers"
                        f"{' or bools' if 'b' in kinds else ''}, as in NumPy")


def _binary(op, np_fn, kinds, logical_op=None):
    name = np_fn.__name__

    @implements(np_fn)
    def fn(x1, x2):
        x1, x2 = promote_pair(x1, x2)
        x1, x2 = as_tensor(x1), as_tensor(x2)
        _refuse(name, x1.dtype, x2.dtype, kinds=kinds)
        # On bools it is the logical op, which masks (x > 0) & (y > 0) have always traced to.
        return bind(logical_op if logical_op is not None and x1.dtype.kind == "b" else op, x1, x2)

    fn.__name__ = fn.__qualname__ = name
    return fn


bitwise_and = _binary(bw.bitwise_and_p, np.bitwise_and, "iub", ew.logical_and_p)
bitwise_or = _binary(bw.bitwise_or_p, np.bitwise_or, "iub", ew.logical_or_p)
bitwise_xor = _binary(bw.bitwise_xor_p, np.bitwise_xor, "iub", ew.logical_xor_p)
left_shift = _binary(bw.left_shift_p, np.left_shift, "iu")
right_shift = _binary(bw.right_shift_p, np.right_shift, "iu")
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift  # NumPy 2's (and the array API's) names
bitwise_and.__doc__ = """Elementwise x1 & x2 of integers or bools (numpy.bitwise_and); no derivative.

    Example::

        >>> gradtape.bitwise_and(gradtape.constant(np.array([12, 10])), 6)
        Tensor([4, 2], dtype=int64)
    """
bitwise_or.__doc__ = "Elementwise x1 | x2 of integers or bools (numpy.bitwise_or); no derivative."
bitwise_xor.__doc__ = "Elementwise x1 ^ x2 of integers or bools (numpy.bitwise_xor); no derivative."
left_shift.__doc__ = """x1 << x2 for integers (numpy.left_shift): 0 where x2 is negative or at least the bit width."""
right_shift.__doc__ = """x1 >> x2 for integers (numpy.right_shift), the sign filling in: a count that is negative
    or at least the bit width gives 0, or -1 for a negative signed x1, as NumPy gives."""


@implements(np.invert)
def bitwise_invert(x):
    """Elementwise ~x of integers (every bit flipped) or bools (logical not), as numpy.invert.

    Example::

        >>> gradtape.bitwise_invert(gradtape.constant(np.array([0, 5], np.int8)))
        Tensor([-1, -6], dtype=int8)
    """
    x = as_tensor(x)
    _refuse("invert", x.dtype)
    return bind(ew.logical_not_p if x.dtype.kind == "b" else bw.bitwise_invert_p, x)


bitwise_not = invert = bitwise_invert  # NumPy's other names for it
