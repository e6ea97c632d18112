"""Structured control flow with JAX's names and signatures: cond and switch.

Inside a trace (a staged function, grad, vmap, make_ir) a branch on a
traced value cannot be a Python `if`: the value is not known yet. `cond`
and `switch` trace every branch into a sub-Function and emit one `cond`
equation per output leaf (gradtape/ir/ops/control.py), which the passes
differentiate and batch and code generation lowers to a native branch.

Called on concrete values (eagerly, on a GradientTape, or inside a trace
with a predicate that does not depend on the traced inputs) they are
Python control flow: only the chosen branch runs, and its ops are recorded
like any other.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.ops.control import INDEX_DTYPE, clamp_index, cond_p
from ..tracer import tree
from ..tracer.signature import describe
from ..tracer.tensor import Tensor
from ..tracer.trace import trace_call
from ..tracer.trace_context import current_builder

__all__ = ["cond", "switch"]


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, also on traced values.

    Args:
      pred: a boolean scalar (a Python bool, a NumPy bool or a 0-d bool Tensor).
      true_fun, false_fun: functions of the operands returning arrays or
        Tensors (or nested lists/tuples/dicts of them) of the same structure,
        shapes and dtypes.
      *operands: the arguments passed to the branch taken (pytrees of arrays).

    Returns:
      The result of the branch taken. Under a trace with a traced `pred`
      both branches are traced and the choice is made at run time; its
      derivatives are those of the branch taken.

    Raises:
      TypeError: `pred` is not a boolean scalar; the branches return
        different structures, shapes or dtypes (naming the branch, the leaf
        and both types).

    Example::

        >>> f = gt.grad(lambda x: gt.cond(x > 0, lambda v: v * v, lambda v: -v, x))
        >>> float(f(3.0)), float(f(-3.0))
        (6.0, -1.0)
    """
    _check_scalar("cond", "pred", pred, "b", "a boolean scalar (pred of shape () and dtype bool)")
    if not _abstract(pred):
        return (true_fun if bool(_value(pred)) else false_fun)(*operands)
    return _staged("cond", (("false_fun", false_fun), ("true_fun", true_fun)), pred, operands)


def switch(index, branches, *operands):
    """`branches[index](*operands)`, with `index` clamped to `[0, len(branches) - 1]`, as in JAX.

    An index below 0 selects the first branch and one past the end the last:
    clamping keeps a traced index from selecting nothing, so no error can
    be raised at run time.

    Args:
      index: an integer scalar (Python int, NumPy integer or 0-d integer Tensor).
      branches: a nonempty sequence of functions of the operands returning
        the same structure, shapes and dtypes.
      *operands: the arguments passed to the branch taken.

    Returns:
      The result of the branch taken.

    Raises:
      TypeError: `index` is not an integer scalar, `branches` is empty or
        holds a non-callable, or the branches' results differ (naming the
        branches, the leaf and both types).

    Example::

        >>> fs = [lambda x: x + 1.0, lambda x: x * 2.0, lambda x: -x]
        >>> g = gt.differentiable(lambda i, x: gt.switch(i, fs, x))
        >>> [float(g(i, 5.0)) for i in (-1, 1, 2, 7)]
        [6.0, 10.0, -5.0, -5.0]
    """
    _check_scalar("switch", "index", index, "iu", "an integer scalar (index of shape () and an int dtype)")
    branches = list(branches) if isinstance(branches, (list, tuple)) else branches
    if not isinstance(branches, list) or not branches or not all(callable(f) for f in branches):
        raise TypeError(
            f"switch: branches must be a nonempty list or tuple of functions, got {branches!r}"[:300]
        )
    if not _abstract(index):
        return branches[clamp_index(_value(index), len(branches))](*operands)
    named = tuple((f"branch {k}", f) for k, f in enumerate(branches))
    return _staged("switch", named, index, operands)


def _abstract(x) -> bool:
    return isinstance(x, Tensor) and x._sym is not None


def _value(x):
    return x._value if isinstance(x, Tensor) else x


def _check_scalar(construct, arg, x, kinds, what):
    if isinstance(x, Tensor):
        shape, dtype = x.shape, x.dtype
    elif isinstance(x, (bool, int, float, np.generic, np.ndarray)):
        a = np.asarray(x)
        shape, dtype = a.shape, a.dtype
    else:
        raise TypeError(f"{construct}: {arg} must be {what}, got a {type(x).__name__}: {x!r}"[:300])
    if shape != () or dtype.kind not in kinds:
        raise TypeError(
            f"{construct}: {arg} must be {what}, got {ir.TensorType(shape, dtype)}"
            + ("; compare it, e.g. `x > 0`" if kinds == "b" and shape == () else "")
        )


def _staged(construct, named_branches, index, operands):
    """Trace each branch on the operands' types; emit one cond equation per output leaf."""
    sig = describe(operands, frozenset(), construct)
    n = len(sig.types)
    traced = [trace_call(f, operands, sig, f"{construct} {name}") for name, f in named_branches]
    _check_results(construct, [name for name, _ in named_branches], traced)
    captured = []
    for t in traced:
        captured += [c for c in t.captured if c not in captured]
    fns = [_with_inputs(t.fn, n, t.captured, captured) for t in traced]

    builder = current_builder([index, *sig.leaves])
    atoms = [_atom(index, None)]
    atoms += [_atom(x, t.dtype) for x, t in zip(sig.leaves, sig.types)]
    atoms += captured
    if index.dtype != INDEX_DTYPE:
        atoms[0] = builder.bind(ir.all_ops["cast"], [atoms[0]], {"dtype": INDEX_DTYPE})
    outs = []
    for j in range(len(fns[0].outvars)):
        branches = tuple(ir.select_outputs(fn, [j]) for fn in fns)
        outs.append(Tensor(sym=ir.Sym(builder.bind(cond_p, atoms, {"branches": branches}), builder)))
    return tree.unflatten(traced[0].out_skeleton, outs)


def _atom(x, dtype):
    if _abstract(x):
        return x._sym.atom
    return ir.Literal(np.asarray(_value(x), dtype=dtype))


def _with_inputs(fn, n, own_captured, captured):
    """fn taking the operand leaves and then every branch's captured values (those it ignores too)."""
    mine = set(own_captured)
    extra = [c if c in mine else ir.Var(c.type) for c in captured]
    return ir.Function(list(fn.invars[:n]) + extra, fn.eqns, fn.outvars)


def _check_results(construct, names, traced):
    first = traced[0]
    for name, t in zip(names[1:], traced[1:]):
        if t.out_skeleton != first.out_skeleton:
            raise TypeError(
                f"{construct}: {names[0]} and {name} must return the same structure; "
                f"{names[0]} returns {_structure(first.out_skeleton)} and {name} returns "
                f"{_structure(t.out_skeleton)}"
            )
        for j, (a, b) in enumerate(zip(first.fn.out_types, t.fn.out_types)):
            if a != b:
                raise TypeError(
                    f"{construct}: {names[0]} and {name} must return the same shapes and dtypes; "
                    f"output leaf {j} is {a} in {names[0]} and {b} in {name} "
                    "(cast or reshape one branch's result to match)"
                )


def _structure(skeleton) -> str:
    return repr(tree.unflatten(skeleton, ["*"] * len(tree.flatten(skeleton)))).replace("'*'", "*")
