"""Lowering control flow: sub-Functions as internal functions, called from a branch.

A `cond` equation (ir/ops/control.py) becomes one step: each branch is
lowered on its own (lowering.SubFunction: its own steps and arena plan)
and emitted into the same module as an internal `void branch(i8** args)`
with the calling convention of gradtape.codegen; the step clamps the index
and jumps to the block that calls the chosen branch (an LLVM `switch`), so
only that branch runs, natively:

    entry:  i = clamp(index, 0, n - 1); switch i [0 -> b0, 1 -> b1, ...]
    b0:     call branch0(args); br done
    ...

The branch's operands and result live in memory (every operand is stored,
as for a contraction), and its scratch arena is a region of the caller's
arena, alive during the step.
"""
from __future__ import annotations

import llvmlite.ir as llir
import numpy as np

from ..ir import TensorType
from .dtypes import I8
from .nodes import View
from .steps import Step

I32 = llir.IntType(32)
I64 = llir.IntType(64)
I8P = I8.as_pointer()


def in_memory(ctx, node) -> View:
    """`node` as a contiguous View whose first element is the array's (stored if need be)."""
    if isinstance(node, View) and node.linear:
        return node
    return ctx.store(node)


def scratch(ctx, subs) -> View:
    """An arena region large enough for the arena of each sub-Function in `subs`."""
    size = max([s.arena_bytes for s in subs] + [1])
    return ctx.arena(TensorType((size,), np.uint8))


def data_pointer(k, view: View):
    """An i8* to the first element of `view` (a contiguous View)."""
    p = view.pointer_at(k, k.i64(view.offset))
    return k.b.bitcast(p, I8P)


def args_array(k, pointers):
    """An i8*[n] holding `pointers`, as a sub-Function's `args` (i8**)."""
    b = k.b
    array = b.alloca(llir.ArrayType(I8P, len(pointers)))
    for i, p in enumerate(pointers):
        b.store(p, b.gep(array, [k.i64(0), k.i64(i)], inbounds=True))
    return b.gep(array, [k.i64(0), k.i64(0)], inbounds=True)


def emit_sub(k, sub, what: str) -> llir.Function:
    """Emit the planned sub-Function `sub` into k's module as an internal function."""
    fn = sub.emit(k.module, k.module.get_unique_name(f"gradtape.{what}"))
    fn.linkage = "internal"
    return fn


class Branch(Step):
    """dest = branches[clamp(index)](operands), by a native jump to the chosen branch's call."""

    def __init__(self, dest: View, index, operands, subs, arena: View):
        self.dest, self.index, self.operands, self.subs, self.arena = dest, index, operands, subs, arena

    def reads(self):
        out = set(self.index.buffers())
        for v in self.operands:
            out.add(v.buffer)
        return out

    def writes(self):
        return {self.dest.buffer, self.arena.buffer}

    def emit(self, k):
        b = k.b
        i = b.sext(self.index.read(k, []), I64) if self.index.dtype.itemsize < 8 else self.index.read(k, [])
        last = k.i64(len(self.subs) - 1)
        i = b.select(b.icmp_signed("<", i, k.i64(0)), k.i64(0), i)
        i = b.select(b.icmp_signed(">", i, last), last, i)
        pointers = [data_pointer(k, v) for v in self.operands]
        pointers += [data_pointer(k, self.dest), data_pointer(k, self.arena)]
        args = args_array(k, pointers)
        fns = [emit_sub(k, sub, "branch") for sub in self.subs]
        blocks = [b.append_basic_block(f"branch{n}") for n in range(len(fns))]
        done = b.append_basic_block("branched")
        switch = b.switch(i, blocks[-1])
        for n, block in enumerate(blocks[:-1]):
            switch.add_case(k.i64(n), block)
        for fn, block in zip(fns, blocks):
            b.position_at_end(block)
            b.call(fn, [args])
            b.branch(done)
        b.position_at_end(done)


def lower_cond(ctx, eqn, index, *xs):
    subs = [ctx.plan_subfunction(fn) for fn in eqn.params["branches"]]
    for sub in subs:
        ctx.externals.update(sub.externals)
    operands = [in_memory(ctx, x) for x in xs]
    dest = ctx.dest(eqn.out)
    ctx.add(Branch(dest, index, operands, subs, scratch(ctx, subs)))
    return dest
