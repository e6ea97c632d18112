"""The vmap transform: f traced at the shapes of one batch element, then batched.

A call's arguments carry the batch axis; `Vmap.trace` strips it from each
mapped leaf's type and traces f once at the per-element shapes, and
`Vmap.build` applies the batching pass (ir.batching.vmap) to that trace.
So f is traced once per (batched) signature and runs as one compiled call
over the whole batch.
"""
from __future__ import annotations

from .. import ir
from ..ir.batching import infer_axis_size, vmap as batch_function
from ..ir.errors import ShapeError
from ..ir.optimize import optimize
from ..tracer import tree
from .program import Program
from ..tracer.trace import trace_call


class _ElementSignature:
    """What trace_call reads of a signature, at the shapes of one batch element."""

    __slots__ = ("types", "ranges")

    def __init__(self, types, ranges):
        self.types = types
        self.ranges = ranges


class Vmap:
    """`vmap(f, in_axes, out_axes)`; see gradtape.vmap."""

    name = "vmap"

    def __init__(self, in_axes, out_axes):
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.key = ("vmap", _hashable(in_axes), _hashable(out_axes))

    def _leaf_axes(self, sig, fname) -> list:
        """The batch axis of every leaf (None: not mapped), from in_axes per argument."""
        n_args = len(sig.ranges)
        if isinstance(self.in_axes, (list, tuple)):
            if len(self.in_axes) != n_args:
                raise ShapeError(
                    f"vmap({fname}): in_axes has {len(self.in_axes)} entries {tuple(self.in_axes)!r} "
                    f"but the function was called with {n_args} arguments; give one per argument"
                )
            per_arg = list(self.in_axes)
        else:
            per_arg = [self.in_axes] * n_args
        axes = []
        for r, a in zip(sig.ranges, per_arg):
            if r is not None:
                axes.extend([a] * (r[1] - r[0]))
        return axes

    def check(self, sig, fname):
        pass

    def trace(self, fun, args, sig, fname):
        axes = self._leaf_axes(sig, fname)
        shapes = [t.shape for t in sig.types]
        try:
            infer_axis_size(shapes, axes, name=f"vmap({fname})")
        except ShapeError as err:  # name arguments as the user passed them, not leaves
            raise ShapeError(_per_argument_text(str(err), sig)) from None
        types = [t if k is None else t.with_shape(t.shape[:k % len(t.shape)] + t.shape[k % len(t.shape) + 1:])
                 for t, k in zip(sig.types, axes)]
        return trace_call(fun, args, _ElementSignature(types, sig.ranges), fname)

    def build(self, traced, sig, args, fname) -> Program:
        axes = self._leaf_axes(sig, fname)
        size = infer_axis_size([t.shape for t in sig.types], axes, name=f"vmap({fname})")
        out_axes = self._out_leaf_axes(traced.out_skeleton, fname)
        in_axes = axes + [None] * len(traced.captured)
        batched = batch_function(traced.fn, in_axes, size, out_axes)
        return Program(optimize(batched), traced.out_skeleton, traced.captured, source=batched)

    def _out_leaf_axes(self, skeleton, fname):
        n = 1 if skeleton is None else len(tree.flatten(skeleton))
        if not isinstance(self.out_axes, (list, tuple)):
            return [self.out_axes] * n
        if not isinstance(skeleton, (list, tuple)) or len(skeleton) != len(self.out_axes):
            raise ShapeError(
                f"vmap({fname}): out_axes {tuple(self.out_axes)!r} has {len(self.out_axes)} entries but "
                f"the function returned {'one value' if skeleton is None else f'a {type(skeleton).__name__}'}"
                f"{'' if skeleton is None else f' of {len(skeleton)} items'}; give one per returned item"
            )
        axes = []
        for item, a in zip(skeleton, self.out_axes):
            axes.extend([a] * (1 if item is None else len(tree.flatten(item))))
        return axes


def _per_argument_text(text, sig) -> str:
    """Rewrite 'argument k' (a leaf index) as the argument it belongs to, for nested arguments."""
    if all(r is None or r[1] - r[0] == 1 for r in sig.ranges) and all(r is not None for r in sig.ranges):
        return text
    return text + " (arguments counted as array leaves, nested containers flattened)"


def _hashable(x):
    return tuple(_hashable(i) for i in x) if isinstance(x, (list, tuple)) else x
