"""The scratch arena of a dynamic version: planned per run-time size.

A specialized Function's arena offsets are constants planned once
(arena.py). A dynamic version's buffer sizes depend on N, so its code reads
each arena buffer's offset from the sizes vector the caller passes,

    sizes[0] = N, sizes[1 + j] = byte offset of arena buffer j

and the runtime plans the arena for each N with the same first-fit planner
(`ArenaPlan.layout`), so every size gets the layout a specialized version
of that size would have.
"""
from __future__ import annotations

import llvmlite.ir as ir

from .arena import buffer_lifetimes, place
from .dtypes import I64
from .dynamic_sizes import DynamicUnsupported, concrete


class ArenaPlan:
    """Arena buffers of a dynamic version, their lifetimes and (symbolic) sizes in bytes."""

    def __init__(self, buffers, lifetimes: dict):
        self.buffers = list(buffers)
        self.lifetimes = lifetimes
        self.nbytes = [buf.type.size * buf.type.dtype.itemsize for buf in self.buffers]

    def layout(self, n: int) -> tuple:
        """(offsets, total bytes) of the arena for N = n."""
        return place(self.buffers, self.lifetimes, [concrete(s, n) for s in self.nbytes])


def dynamic_arena_plan(steps, buffers) -> ArenaPlan:
    """Number the arena buffers (offset = their slot in the sizes vector) and keep what layout() needs."""
    for j, buf in enumerate(buffers):
        buf.offset = j
    return ArenaPlan(buffers, buffer_lifetimes(steps))


def arena_offset(b: ir.IRBuilder, sizes: ir.Value, slot: int) -> ir.Value:
    """The byte offset of arena buffer `slot`, loaded from the sizes vector (an i8*)."""
    vector = b.bitcast(sizes, I64.as_pointer())
    return b.load(b.gep(vector, [ir.Constant(I64, 1 + slot)], inbounds=True))


def refuse_subfunction(fn):
    raise DynamicUnsupported("control flow (cond, while, scan bodies) in a dynamic version")
