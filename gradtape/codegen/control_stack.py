"""Lowering `while_vjp` (ir/ops/while_vjp.py): a native loop that pushes its carries on
a heap stack growing at run time, then a native loop that pops them.

    cur = init; n = 0
    while cond(cur, consts):
        if n == capacity:
            grown = realloc(stack, 2 * capacity frames)
            if grown == NULL: free(stack); stack = NULL; report(n, bytes asked); n = 0; break
            stack = grown
        stack[n] = cur; cur = body(cur, consts); n += 1
    ct = cts; acc = 0
    while n > 0:
        n -= 1; ct, acc = step_vjp(stack[n], consts, ct, acc)
    free(stack)

A frame holds every carry (each at a 64-byte-aligned offset); the stack
starts at 16 frames and doubles, so n steps cost O(n) copies and the
memory of n frames. malloc's family comes from the C library the process
(or a C caller of exported code) links anyway.

A stack that cannot grow (a long loop, a memory limit) must not end the
process: the step frees it, reports the iterations stored and the bytes
asked (codegen/failures.py: the runtime raises MemoryError when the call
returns) and skips the backward loop, so the kernel finishes on cotangents
nobody will see. An exported library's function returns -1 instead.
"""
from __future__ import annotations

import llvmlite.ir as llir
import numpy as np

from ..ir import TensorType
from ..ir.ops.while_vjp import float_positions, step_vjp
from .control import args_array, data_pointer, emit_sub, in_memory, scratch
from .dtypes import I8
from .failures import emit_out_of_memory, out_of_memory_external
from .steps import Fill, Step

I64 = llir.IntType(64)
I8P = I8.as_pointer()
FRAME_ALIGN = 64
FIRST_CAPACITY = 16


def _nbytes(view) -> int:
    return view.type.size * view.type.dtype.itemsize


class StackedWhileVJP(Step):
    """The forward loop with its stack, then the backward loop (see the module docstring)."""

    def __init__(self, cond, body, back, cur, nxt, consts, flag, ct, ct_next, acc, acc_next, arena):
        self.cond, self.body, self.back = cond, body, back
        self.cur, self.nxt, self.consts, self.flag = cur, nxt, consts, flag
        self.ct, self.ct_next, self.acc, self.acc_next, self.arena = ct, ct_next, acc, acc_next, arena

    def _written(self):
        return self.cur + self.nxt + [self.flag] + self.ct + self.ct_next + self.acc + self.acc_next + [self.arena]

    def reads(self):
        return {v.buffer for v in self._written() + self.consts}

    def writes(self):
        return {v.buffer for v in self._written()}

    def emit(self, k):
        b, m = k.b, k.module
        memcpy = m.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        memset = m.declare_intrinsic("llvm.memset", [I8P, I64])
        false = llir.Constant(llir.IntType(1), 0)
        realloc = _libc(m, "realloc", I8P, [I8P, I64])
        free = _libc(m, "free", llir.VoidType(), [I8P])
        offsets, frame = [], 0
        for v in self.cur:
            offsets.append(frame)
            frame += (_nbytes(v) + FRAME_ALIGN - 1) // FRAME_ALIGN * FRAME_ALIGN
        frame = max(frame, FRAME_ALIGN)

        def copy(dst, src, nbytes):
            if nbytes:
                b.call(memcpy, [dst, src, k.i64(nbytes), false])

        cond_fn, body_fn = emit_sub(k, self.cond, "cond"), emit_sub(k, self.body, "body")
        back_fn = emit_sub(k, self.back, "body_vjp")
        arena = data_pointer(k, self.arena)
        cur = [data_pointer(k, v) for v in self.cur]
        consts = [data_pointer(k, v) for v in self.consts]
        cond_args = args_array(k, cur + consts + [data_pointer(k, self.flag), arena])
        body_args = args_array(k, cur + consts + [data_pointer(k, v) for v in self.nxt] + [arena])
        stack = b.alloca(I8P)
        capacity = b.alloca(I64)
        count = b.alloca(I64)
        b.store(llir.Constant(I8P, None), stack)
        b.store(k.i64(0), capacity)
        b.store(k.i64(0), count)

        test, check, grow, failed, push, fwd_done = (b.append_basic_block(n) for n in (
            "stack.test", "stack.check", "stack.grow", "stack.failed", "stack.push", "stack.forward_done"))
        b.branch(test)
        b.position_at_end(test)
        b.call(cond_fn, [cond_args])
        go = b.icmp_unsigned("!=", b.load(data_pointer(k, self.flag)), llir.Constant(I8, 0))
        b.cbranch(go, check, fwd_done)

        b.position_at_end(check)
        n, cap = b.load(count), b.load(capacity)
        b.cbranch(b.icmp_unsigned("==", n, cap), grow, push)

        b.position_at_end(grow)
        doubled = b.select(b.icmp_unsigned("==", cap, k.i64(0)), k.i64(FIRST_CAPACITY), b.mul(cap, k.i64(2)))
        asked = b.mul(doubled, k.i64(frame))
        grown = b.call(realloc, [b.load(stack), asked])
        null = b.icmp_unsigned("==", grown, llir.Constant(I8P, None))
        with b.if_then(b.not_(null), likely=True):
            b.store(grown, stack)
            b.store(doubled, capacity)
        b.cbranch(null, failed, push)

        b.position_at_end(failed)  # realloc left the old block: free it first, so reporting has memory
        b.call(free, [b.load(stack)])
        b.store(llir.Constant(I8P, None), stack)
        emit_out_of_memory(k, "while_loop", n, frame, asked)
        b.store(k.i64(0), count)
        b.branch(fwd_done)

        b.position_at_end(push)
        n = b.load(count)
        base = b.gep(b.load(stack), [b.mul(n, k.i64(frame))], inbounds=True)
        for v, p, off in zip(self.cur, cur, offsets):
            copy(b.gep(base, [k.i64(off)], inbounds=True), p, _nbytes(v))
        b.call(body_fn, [body_args])
        for v, nv in zip(self.cur, self.nxt):
            copy(data_pointer(k, v), data_pointer(k, nv), _nbytes(v))
        b.store(b.add(n, k.i64(1)), count)
        b.branch(test)

        b.position_at_end(fwd_done)
        for v in self.acc:
            if _nbytes(v):
                b.call(memset, [data_pointer(k, v), llir.Constant(I8, 0), k.i64(_nbytes(v)), false])
        ct = [data_pointer(k, v) for v in self.ct + self.acc]
        ct_next = [data_pointer(k, v) for v in self.ct_next + self.acc_next]
        frame_slots = args_array(k, cur + consts + ct + ct_next + [arena])  # carry slots rewritten per step
        back_test, back_step, back_done = (b.append_basic_block(n) for n in ("stack.pop_test", "stack.pop",
                                                                            "stack.done"))
        b.branch(back_test)
        b.position_at_end(back_test)
        b.cbranch(b.icmp_unsigned("!=", b.load(count), k.i64(0)), back_step, back_done)

        b.position_at_end(back_step)
        n = b.sub(b.load(count), k.i64(1))
        b.store(n, count)
        base = b.gep(b.load(stack), [b.mul(n, k.i64(frame))], inbounds=True)
        for slot, off in enumerate(offsets):
            b.store(b.gep(base, [k.i64(off)], inbounds=True), b.gep(frame_slots, [k.i64(slot)], inbounds=True))
        b.call(back_fn, [frame_slots])
        for v, src, dst in zip(self.ct + self.acc, ct_next, ct):
            copy(dst, src, _nbytes(v))
        b.branch(back_test)

        b.position_at_end(back_done)
        b.call(free, [b.load(stack)])


def _libc(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = llir.Function(module, llir.FunctionType(ret, args), name)
    return fn


def lower_while_vjp(ctx, eqn, *operands):
    """One forward-and-backward loop pair, writing every cotangent (output) of the equation."""
    p = eqn.params
    n_carry, body_fn = p["n_carry"], p["body"]
    n_in = len(body_fn.invars)
    fc, fk = float_positions(body_fn, n_carry)
    ins = body_fn.in_types
    cond, body = ctx.plan_subfunction(p["cond"]), ctx.plan_subfunction(body_fn)
    back = ctx.plan_subfunction(step_vjp(body_fn, n_carry))
    for sub in (cond, body, back):
        ctx.externals.update(sub.externals)
    cur = [ctx.store(x) for x in operands[:n_carry]]  # the loops overwrite these
    nxt = [ctx.arena(t) for t in ins[:n_carry]]
    consts = [in_memory(ctx, x) for x in operands[n_carry:n_in]]
    ct = [ctx.store(x) for x in operands[n_in:]]
    ct_next = [ctx.arena(ins[i]) for i in fc]
    acc = [ctx.arena(ins[i]) for i in fk]
    acc_next = [ctx.arena(ins[i]) for i in fk]
    flag = ctx.arena(TensorType((), np.bool_))
    ctx.use_external(*out_of_memory_external())
    ctx.add(StackedWhileVJP(cond, body, back, cur, nxt, consts, flag, ct, ct_next, acc, acc_next,
                            scratch(ctx, [cond, body, back])))
    dests = tuple(ctx.dest(v) for v in eqn.outvars)
    for dest, result in zip(dests, ct + acc):
        ctx.add(Fill(dest, result))
    return dests
