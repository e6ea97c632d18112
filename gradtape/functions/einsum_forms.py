"""einsum's other calling forms and its contraction order: the sublist form
`einsum(a, [0, 1], b, [1, 2], [0, 2])` as a subscripts string, and the
pairwise order NumPy's `einsum_path` chooses for `optimize=`.

Only shapes are read here: the contractions themselves are linalg.einsum's.
"""
from __future__ import annotations

import numpy as np

_SUBLIST_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # NumPy's order


def _sublist_term(sublist, where) -> str:
    letters = []
    for s in sublist:
        if s is Ellipsis:
            letters.append("...")
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < 52:
            letters.append(_SUBLIST_LETTERS[int(s)])
        else:
            raise ValueError(
                f"einsum: subscripts in the sublist form must be ints in [0, 52) or Ellipsis, "
                f"got {s!r} in the sublist {sublist!r} of {where}"
            )
    return "".join(letters)


def sublist_subscripts(args):
    """(subscripts, operands) of einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])."""
    args = list(args)
    out = args.pop() if len(args) % 2 else None
    operands, sublists = args[0::2], args[1::2]
    terms = [_sublist_term(s, f"operand {i}") for i, s in enumerate(sublists)]
    subscripts = ",".join(terms)
    if out is not None:
        subscripts += "->" + _sublist_term(out, "the output")
    return subscripts, operands


def contraction_order(subscripts, shapes, optimize) -> list:
    """The pairs of positions (in the shrinking operand list, NumPy's convention) to
    contract in turn: einsum_path's choice for `optimize`, else left to right."""
    n = len(shapes)
    left_to_right = [(0, 1)] * (n - 1)
    if optimize is False or n < 3:
        return left_to_right
    dummies = [np.broadcast_to(np.zeros(()), s) for s in shapes]  # shapes only, no memory
    path = np.einsum_path(subscripts, *dummies, optimize=optimize)[0][1:]
    if any(len(step) != 2 for step in path):  # single-operand steps: keep it simple
        return left_to_right
    return [tuple(int(i) for i in step) for step in path]
