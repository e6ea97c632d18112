"""The vectorization (batching) pass: Function -> Function over a batch axis.

`vmap(fn, in_axes, axis_size)` is fn applied to every element of a batch at
once. Batched inputs get their batch axis moved to the front, then each
equation that reads a batched value is replaced by its op's batching rule
(gradtape/ir/op.py describes the contract: operands and result batched at
axis 0); equations that read no batched value are kept as they are::

    vmap({ a:f64[3] b:f64[3] . c:f64[3] = mul a b -> c }, in_axes=[0, None], axis_size=4)
    == { a:f64[4,3] b:f64[3] . c:f64[4,3] = mul a b -> c }

An unbatched operand of an elementwise op is left to NumPy broadcasting (no
copy per batch element), and a contraction with one batched operand stays
one contraction, the batch letter being one more free letter of that
operand (one GEMM rather than a loop of GEMVs).
"""
from __future__ import annotations

import operator
from typing import Sequence

from . import config
from .builder import Builder, Sym
from .core import Function, Literal
from .errors import IRError, ShapeError
from .op import batching_rules, multiple_results, rule
from .ops.layout import broadcast_to, reshape, transpose
from .passes import dce
from .verify import verify

__all__ = ["vmap", "infer_axis_size", "move_axis"]


def vmap(
    fn: Function,
    in_axes: Sequence[int | None] | int | None,
    axis_size: int,
    out_axes: Sequence[int | None] | int | None = 0,
) -> Function:
    """Vectorize `fn` over a batch axis of length `axis_size`.

    Args:
      fn: the Function to vectorize.
      in_axes: one entry per input of fn: the position of the batch axis in
        the batched input (negative counts from the end of the batched
        array, as in NumPy), or None for an input shared by every batch
        element. A single int or None applies to every input.
      axis_size: the length of the batch axis.
      out_axes: where each output gets its batch axis (one entry per output,
        or one int/None for all). None means the output must not depend on
        a batched input and is returned as fn returns it. An output that
        does not depend on a batched input but has an int out_axes is
        broadcast along the batch axis.

    Returns:
      A Function whose input i is fn's input i with an axis of length
      `axis_size` inserted at in_axes[i] (or unchanged for None), and whose
      output j is fn's output j for every batch element, stacked along
      out_axes[j].

    Raises:
      ValueError (IRError): in_axes/out_axes of the wrong length or out of
        range, a negative axis_size, an output with out_axes None that
        depends on a batched input.
      MissingRuleError: an equation reading a batched value whose op has no
        batching rule.

    Example::

        >>> f = gradtape.make_ir(gradtape.sum, np.ones(3))   # { a:f64[3] . b:f64[] = reduce_sum[axes=(0,)] a -> b }
        >>> print(vmap(f, [0], 5))
        { a:f64[5,3] . b:f64[5] = reduce_sum[axes=(1,)] a -> b }
    """
    in_axes = _per_item(in_axes, len(fn.invars), "in_axes", "inputs")
    out_axes = _per_item(out_axes, len(fn.outvars), "out_axes", "outputs")
    axis_size = _check_axis_size(axis_size)
    in_axes = [
        None if k is None else _normalize_axis(k, f"in_axes[{i}]", f"input {i}", v.type)
        for i, (k, v) in enumerate(zip(in_axes, fn.invars))
    ]
    out_axes = [
        None if k is None else _normalize_axis(k, f"out_axes[{j}]", f"output {j}", v.type)
        for j, (k, v) in enumerate(zip(out_axes, fn.outvars))
    ]

    b = Builder()
    invars = []
    batched = {}  # Var of fn -> Sym holding its values with the batch axis leading
    arrived = {}  # Var of fn -> (the batched input, its in_axes), for inputs passed through
    for v, k in zip(fn.invars, in_axes):
        if k is None:
            invars.append(v)  # shared inputs keep their Var, so unbatched equations copy as they are
            continue
        shape = v.type.shape
        x = b.input(v.type.with_shape(shape[:k] + (axis_size,) + shape[k:]))
        invars.append(x.atom)
        batched[v] = move_axis(x, k, 0)
        arrived[v] = (x, k)

    for eqn in fn.eqns:
        flags = tuple(type(a) is not Literal and a in batched for a in eqn.inputs)
        if not any(flags):
            b.eqns.append(eqn)
            continue
        ins = [batched[a] if f else Sym(a, b) for a, f in zip(eqn.inputs, flags)]
        out = rule(batching_rules, eqn.op, "batching")(axis_size, ins, flags, **eqn.params)
        # An op of several results returns one batched Sym per output.
        several = eqn.op in multiple_results
        for v, o in zip(eqn.outvars, out if several else (out,)):
            want = v.type.with_shape((axis_size,) + v.type.shape)
            if not isinstance(o, Sym) or o.type != want:
                got = o.type if isinstance(o, Sym) else repr(o)
                raise IRError(
                    f"batching rule of '{eqn.op.name}' returned {got} for an output of type "
                    f"{v.type} batched to {want} (operands batched: {flags})"
                )
            batched[v] = o

    outvars = []
    for j, (v, k) in enumerate(zip(fn.outvars, out_axes)):
        is_batched = type(v) is not Literal and v in batched
        if k is None:
            if is_batched:
                raise ShapeError(
                    f"vmap: output {j} ({v.type}) depends on a batched input, but out_axes[{j}] "
                    f"is None; give it a batch axis (e.g. out_axes[{j}] = 0)"
                )
            outvars.append(v)
        elif v in arrived and arrived[v][1] == k:  # an input returned as it came: no transposes
            outvars.append(arrived[v][0].atom)
        elif is_batched:
            outvars.append(move_axis(batched[v], 0, k).atom)
        else:
            outvars.append(_broadcast_along(Sym(v, b), k, axis_size).atom)
    out = dce(b.build(invars, outvars))
    if config.checks:
        verify(out)
    return out


def move_axis(x: Sym, source: int, destination: int) -> Sym:
    """x with its axis `source` moved to position `destination` (a transpose, or x itself)."""
    perm = [i for i in range(x.ndim) if i != source]
    perm.insert(destination, source)
    return transpose(x, perm)


def infer_axis_size(shapes, in_axes, *, name: str = "vmap") -> int:
    """The batch size that the arrays' shapes and in_axes agree on.

    Front ends call this on the actual arguments before calling the
    Function returned by `vmap`.

    Args:
      shapes: the shape of each (batched) argument.
      in_axes: one int or None per argument (negative ints count from the end).
      name: the function to name in error messages.

    Returns:
      The common length of the batch axes.

    Raises:
      ValueError (IRError): when the arguments disagree on the batch size,
        an axis is out of range, or no argument is batched.

    Example::

        >>> infer_axis_size([(5, 3), (3,)], [0, None])
        5
    """
    shapes = [tuple(s) for s in shapes]
    in_axes = _per_item(in_axes, len(shapes), "in_axes", "arguments", name=name)
    sizes = []
    for i, (shape, k) in enumerate(zip(shapes, in_axes)):
        if k is None:
            continue
        if not isinstance(k, int) or not -len(shape) <= k < len(shape):
            raise ShapeError(
                f"{name}: in_axes[{i}]={k!r} is not an axis of argument {i}, whose shape is "
                f"{shape}; use an axis in {-len(shape)}..{len(shape) - 1} or None"
            )
        sizes.append((i, k, shape[k]))
    if not sizes:
        raise ShapeError(
            f"{name}: in_axes {tuple(in_axes)} batch no argument, so the batch size is unknown"
        )
    n0 = sizes[0][2]
    if any(n != n0 for _, _, n in sizes):
        listing = ", ".join(f"argument {i} has {n} along axis {k} (shape {shapes[i]})" for i, k, n in sizes)
        raise ShapeError(
            f"{name}: the batched arguments disagree on the batch size: {listing}; "
            "give every batched argument the same length along its in_axes axis"
        )
    return n0


# --- helpers ------------------------------------------------------------------------

def _per_item(axes, count, what, items, name="vmap") -> list:
    if axes is None or isinstance(axes, int):
        return [axes] * count
    axes = list(axes)
    if len(axes) != count:
        raise ShapeError(
            f"{name}: {what} has {len(axes)} entries {tuple(axes)} but the Function has {count} "
            f"{items}; give one int or None per {items[:-1]}"
        )
    out = []
    for i, k in enumerate(axes):
        try:
            out.append(None if k is None else operator.index(k))
        except TypeError:
            k = None  # not an int: reported below
        if isinstance(k, bool) or (k is None and axes[i] is not None):
            raise ShapeError(f"{name}: {what}[{i}] is {axes[i]!r}; use an int or None")
    return out


def _check_axis_size(axis_size) -> int:
    try:
        n = operator.index(axis_size)
    except TypeError:
        raise ShapeError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}") from None
    if n < 0:
        raise ShapeError(f"vmap: axis_size must be a non-negative int, got {n}")
    return n


def _normalize_axis(k: int, what: str, value: str, type) -> int:
    """k as a position 0..rank-1, where rank counts the batch axis (negative k from the end)."""
    rank = type.ndim + 1
    if not -rank <= k < rank:
        raise ShapeError(
            f"vmap: {what}={k} is out of range for {value} ({type}), which has rank {rank} "
            f"once batched; use an axis in {-rank}..{rank - 1} or None"
        )
    return k % rank


def _broadcast_along(x: Sym, k: int, axis_size: int) -> Sym:
    """An unbatched value repeated along a new axis of length axis_size at position k."""
    shape = x.shape
    if k:  # broadcast_to adds leading axes only: make room for the batch axis first
        x = reshape(x, shape[:k] + (1,) + shape[k:])
    return broadcast_to(x, shape[:k] + (axis_size,) + shape[k:])
