"""Arrays that can change under whoever holds them, and constants that cannot.

A NumPy array handed to gradtape (a closed-over weight, an operand on a
tape) may still be written by its owner, directly or through another view
of the same memory. `may_change` says whether that can happen; `frozen`
gives a read-only array of the same values that nothing else can write,
copying only when it must, and never touching the flags of the array it
was given.
"""
from __future__ import annotations

import numpy as np

# Inputs from which np.asarray makes a new array of its own when it returns another object
# with no base (an ndarray: converted to another dtype).
_BUILT_FRESH = (float, int, bool, complex, np.generic, list, tuple, np.ndarray)


def may_change(a: np.ndarray) -> bool:
    """Whether the memory `a` views can still be written: `a` is writeable, or one of the
    arrays it is a view of is (a read-only view of a writeable array changes with it)."""
    while True:
        if a.flags.writeable:
            return True
        a = a.base
        if not isinstance(a, np.ndarray):
            return False  # None (owns its memory) or a read-only buffer object


def frozen(value, dtype=None) -> np.ndarray:
    """`np.asarray(value, dtype)` made read-only, as a copy when someone else could write it.

    The flags of an array passed in are left as they were: a copy is frozen
    instead, so the caller's array stays writeable and later writes to it
    do not reach the result.

    Example::

        >>> w = np.ones(3)
        >>> c = frozen(w)
        >>> w[:] = 2.0                      # still writeable, and c keeps the old values
        >>> c, c.flags.writeable
        (array([1., 1., 1.]), False)
    """
    a = np.asarray(value, dtype=dtype)
    if a is not value and a.base is None and isinstance(value, _BUILT_FRESH):
        a.flags.writeable = False  # a conversion np.asarray made (a number, a list, another dtype): ours
    elif may_change(a):
        a = a.copy()
        a.flags.writeable = False
    return a
