"""What lowering rules build with: buffers, the list of steps, externals."""
from __future__ import annotations

import numpy as np

from ..ir import TensorType
from .nodes import Buffer, Node, View
from .reductions import Reduce
from .steps import Fill


class BuildContext:
    """Collects the steps of one lowered Function and the buffers they use.

    `outputs` maps an IR output Var to the View of its output argument, so the
    value is computed straight into the caller's array.
    """

    def __init__(self, n_inputs: int, out_types):
        self.steps: list = []
        self.arena_buffers: list = []
        self.const_buffers: list = []
        self.externals: dict = {}
        self.inputs = []
        self.output_views = [View(Buffer(t, "arg", n_inputs + i)) for i, t in enumerate(out_types)]
        self.outputs: dict = {}  # Var -> View of the output argument it is computed into
        self.plan_subfunction = None  # Function -> lowering.SubFunction, set by lowering (control flow)
        self.function = None  # the ir.Function being lowered, set by lowering
        self.while_tapes: dict = {}  # Eqn -> the stack a `while` and its `while_vjp` share (control_stack.py)

    def add(self, step):
        self.steps.append(step)

    def arena(self, type) -> View:
        """A fresh arena buffer of `type` (its offset is planned later)."""
        buf = Buffer(type, "arena")
        self.arena_buffers.append(buf)
        return View(buf)

    def const_buffer(self, type, value) -> Buffer:
        buf = Buffer(type, "const", data=np.ascontiguousarray(value, dtype=type.dtype))
        self.const_buffers.append(buf)
        return buf

    def dest(self, var) -> View:
        """Where the value of `var` is stored: its output argument, else the arena."""
        view = self.outputs.get(var)
        return view if view is not None else self.arena(var.type)

    def store(self, node: Node, dest: View | None = None) -> View:
        dest = self.arena(node.type) if dest is None else dest
        self.add(Fill(dest, node))
        return dest

    def reduce(self, node: Node, axes, kind: str, dest: View | None = None) -> View:
        out_type = TensorType([d for i, d in enumerate(node.shape) if i not in axes], node.dtype)
        dest = self.arena(out_type) if dest is None else dest
        scratch = None
        if Reduce.needs_scratch(node.shape, axes, kind, node.dtype):
            scratch = self.arena(out_type.with_dtype(Reduce.accumulator_dtype(kind, node.dtype)))
        self.add(Reduce(dest, node, axes, kind, scratch))
        return dest

    def use_external(self, name: str, address: int):
        self.externals[name] = address
