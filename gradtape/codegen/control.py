"""Lowering control flow: sub-Functions as internal functions, called from a branch or a loop.

A `cond` equation (ir/ops/control.py) becomes one step: each branch is
lowered on its own (lowering.SubFunction: its own steps and arena plan)
and emitted into the same module as an internal `void branch(i8** args)`
with the calling convention of gradtape.codegen; the step clamps the index
and jumps to the block that calls the chosen branch (an LLVM `switch`), so
only that branch runs, natively:

    entry:  i = clamp(index, 0, n - 1); switch i [0 -> b0, 1 -> b1, ...]
    b0:     call branch0(args); br done
    ...

A `scan` equation (ir/ops/loops.py) becomes a copy of the initial carries
into the arena and one native loop calling the body once per step:

    cur = init; for i in 0..n-1 (or n-1..0): body(cur, xs[i], consts) -> next, ys[i]; cur = next

with the step's slice of each xs and of the stacked output written in
place (pointer + i * slice size); ys the equation does not return (the
DCE pass dropped them) go to a one-slice scratch. The final carries are
copied out. A loop with several results is one equation (ir/op.py
`multiple_results`): lowered once, it writes every output.

A `while` equation is the same loop with a test before each step: the
condition's sub-Function writes a bool into a one-byte scratch, and the
loop exits when it is false (a native loop whose trip count is data).

Operands and results live in memory (every operand is stored, as for a
contraction), and a sub-Function's scratch arena is a region of the
caller's arena, alive during the step.
"""
from __future__ import annotations

import llvmlite.ir as llir
import numpy as np

from ..ir import TensorType
from .dtypes import I8
from .nodes import Const, View
from .steps import Fill, Step

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
    """dests = branches[clamp(index)](operands), by a native jump to the chosen branch's call."""

    def __init__(self, dests, index, operands, subs, arena: View):
        self.dests, self.index, self.operands, self.subs, self.arena = dests, index, operands, subs, arena

    def reads(self):
        out = set(self.index.buffers())
        for v in self.operands:
            out.add(v.buffer)
        return out

    def writes(self):
        return {d.buffer for d in self.dests} | {self.arena.buffer}

    def emit(self, k):
        b = k.b
        i = b.sext(self.index.read(k, []), I64) if self.index.dtype.itemsize < 8 else self.index.read(k, [])
        last = k.i64(len(self.subs) - 1)
        i = b.select(b.icmp_signed("<", i, k.i64(0)), k.i64(0), i)
        i = b.select(b.icmp_signed(">", i, last), last, i)
        pointers = [data_pointer(k, v) for v in self.operands]
        pointers += [data_pointer(k, d) for d in self.dests] + [data_pointer(k, self.arena)]
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


def lower_checkpoint(ctx, eqn, *xs):
    """A checkpoint is a branch that is always taken: its intermediates live in the
    sub-Function's arena during the call only."""
    return _branch(ctx, eqn, Const(TensorType((), np.int32), 0), [eqn.params["fn"]], xs)


def lower_cond(ctx, eqn, index, *xs):
    """Every output of the cond, written by the one branch taken."""
    return _branch(ctx, eqn, index, eqn.params["branches"], xs)


def _branch(ctx, eqn, index, branches, xs) -> tuple:
    subs = [ctx.plan_subfunction(fn) for fn in branches]
    for sub in subs:
        ctx.externals.update(sub.externals)
    operands = [in_memory(ctx, x) for x in xs]
    dests = tuple(ctx.dest(v) for v in eqn.outvars)
    ctx.add(Branch(dests, index, operands, subs, scratch(ctx, subs)))
    return dests


class Loop(Step):
    """The steps of a scan: cur = next after each call of the body (see the module docstring)."""

    def __init__(self, sub, length, reverse, cur, nxt, xs, consts, ys, arena):
        self.sub, self.length, self.reverse = sub, length, reverse
        self.cur, self.nxt, self.xs, self.consts, self.ys, self.arena = cur, nxt, xs, consts, ys, arena

    def _views(self):
        return self.cur + self.nxt + self.xs + self.consts + [v for v, _ in self.ys] + [self.arena]

    def reads(self):
        return {v.buffer for v in self._views()}

    def writes(self):
        return {v.buffer for v in self.cur + self.nxt + [v for v, _ in self.ys] + [self.arena]}

    def emit(self, k):
        b = k.b
        fn = emit_sub(k, self.sub, "body")
        n_fixed = len(self.cur) + len(self.xs) + len(self.consts)
        pointers = [data_pointer(k, v) for v in self.cur + self.xs + self.consts + self.nxt]
        pointers += [data_pointer(k, v) for v, _ in self.ys] + [data_pointer(k, self.arena)]
        args = args_array(k, pointers)
        x_base = pointers[len(self.cur):len(self.cur) + len(self.xs)]
        y_base = pointers[n_fixed + len(self.nxt):n_fixed + len(self.nxt) + len(self.ys)]
        memcpy = k.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])

        def step(i):
            at = b.sub(k.i64(self.length - 1), i) if self.reverse else i
            slots = [(len(self.cur) + n, p, v) for n, (p, v) in enumerate(zip(x_base, self.xs))]
            slots += [(n_fixed + len(self.nxt) + n, p, v) for n, (p, (v, stacked)) in enumerate(zip(y_base, self.ys))
                      if stacked]
            for slot, base, view in slots:
                size = view.type.size // max(self.length, 1) * view.type.dtype.itemsize
                p = b.gep(base, [b.mul(at, k.i64(size))], inbounds=True)
                b.store(p, b.gep(args, [k.i64(slot)], inbounds=True))
            b.call(fn, [args])
            for cur, nxt in zip(self.cur, self.nxt):
                nbytes = cur.type.size * cur.type.dtype.itemsize
                if nbytes:
                    b.call(memcpy, [data_pointer(k, cur), data_pointer(k, nxt), k.i64(nbytes),
                                    llir.Constant(llir.IntType(1), 0)])
            return ()

        k.loop(self.length, step)


def lower_scan(ctx, eqn, *operands):
    """The loop, once, writing every output of the equation."""
    p = eqn.params
    body, n_carry, n_xs = p["body"], p["n_carry"], p["n_xs"]
    sub = ctx.plan_subfunction(body)
    ctx.externals.update(sub.externals)
    cur = [ctx.store(x) for x in operands[:n_carry]]  # the loop overwrites its carries
    nxt = [ctx.arena(t) for t in body.in_types[:n_carry]]
    xs = [in_memory(ctx, x) for x in operands[n_carry:n_carry + n_xs]]
    consts = [in_memory(ctx, x) for x in operands[n_carry + n_xs:]]
    dests = [ctx.dest(v) for v in eqn.outvars]
    ys = [(d, True) for d in dests[n_carry:]]
    ctx.add(Loop(sub, p["length"], p["reverse"], cur, nxt, xs, consts, ys, scratch(ctx, [sub])))
    return carries_out(ctx, dests, cur)


def carries_out(ctx, dests, cur) -> tuple:
    """Copy the final carries out of the loop's buffers; the equation's outputs."""
    for dest, c in zip(dests, cur):
        ctx.add(Fill(dest, c))
    return tuple(dests)


class WhileLoop(Step):
    """cur = init; while cond(cur, consts): cur = body(cur, consts)."""

    def __init__(self, cond, body, cur, nxt, consts, flag, arena):
        self.cond, self.body, self.cur, self.nxt, self.consts = cond, body, cur, nxt, consts
        self.flag, self.arena = flag, arena

    def reads(self):
        return {v.buffer for v in self.cur + self.nxt + self.consts + [self.flag, self.arena]}

    def writes(self):
        return {v.buffer for v in self.cur + self.nxt + [self.flag, self.arena]}

    def emit(self, k):
        b = k.b
        cond = emit_sub(k, self.cond, "cond")
        body = emit_sub(k, self.body, "body")
        ins = [data_pointer(k, v) for v in self.cur + self.consts]
        arena = data_pointer(k, self.arena)
        flag = data_pointer(k, self.flag)
        cond_args = args_array(k, ins + [flag, arena])
        body_args = args_array(k, ins + [data_pointer(k, v) for v in self.nxt] + [arena])
        memcpy = k.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        copies = [(data_pointer(k, c), data_pointer(k, n), c.type.size * c.type.dtype.itemsize)
                  for c, n in zip(self.cur, self.nxt)]
        test = b.append_basic_block("while.test")
        step = b.append_basic_block("while.body")
        done = b.append_basic_block("while.end")
        b.branch(test)
        b.position_at_end(test)
        b.call(cond, [cond_args])
        go = b.icmp_unsigned("!=", b.load(flag), llir.Constant(I8, 0))
        b.cbranch(go, step, done)
        b.position_at_end(step)
        b.call(body, [body_args])
        for dst, src, nbytes in copies:
            if nbytes:
                b.call(memcpy, [dst, src, k.i64(nbytes), llir.Constant(llir.IntType(1), 0)])
        b.branch(test)
        b.position_at_end(done)


def lower_while(ctx, eqn, *operands):
    p = eqn.params
    n_carry = p["n_carry"]
    cond, body = ctx.plan_subfunction(p["cond"]), ctx.plan_subfunction(p["body"])
    ctx.externals.update(cond.externals)
    ctx.externals.update(body.externals)
    cur = [ctx.store(x) for x in operands[:n_carry]]  # the loop overwrites its carries
    nxt = [ctx.arena(t) for t in p["body"].out_types]
    consts = [in_memory(ctx, x) for x in operands[n_carry:]]
    flag = ctx.arena(TensorType((), np.bool_))
    ctx.add(WhileLoop(cond, body, cur, nxt, consts, flag, scratch(ctx, [cond, body])))
    return carries_out(ctx, [ctx.dest(v) for v in eqn.outvars], cur)
