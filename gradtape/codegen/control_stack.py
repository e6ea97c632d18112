"""Lowering `while_vjp` (ir/ops/while_vjp.py): a native loop that pushes each step's
residuals on a heap stack growing at run time, then a native loop that pops them.

    cur = init; n = 0
    while cond(cur, consts):
        if the newest block is full:
            block = malloc(a block of twice its frames (16 first), after a header naming it)
            if block == NULL: free every block; report(n, bytes asked); n = 0; break
        cur, frame[n] = forward(cur, consts); n += 1
    ct = cts; acc = 0
    while n > 0:
        n -= 1 (freeing a block when its frames are done); ct, acc = backward(ct, acc, frame[n], consts)
    free the blocks left

`forward` and `backward` are the body's VJP split at the cotangents
(ir/ops/loops.py `split_step_vjp`, as for a scan): the forward step writes
the values its derivative reads (a sin's cosine, the carries entering it,
...) straight into the step's frame, so the backward loop does not
evaluate the body again. The interpreter (while_vjp.py) keeps the carries
and evaluates the body's VJP instead: the same values. A frame holds every
residual (each at a 64-byte-aligned offset). The stack is a chain of
blocks, each of twice the frames of the one before (16 first), so a block
never moves: n steps cost the memory of at most 2n frames and no copies
(a stack grown by realloc copied its frames as it doubled, which cost a
1,000-step RK4 loop a fifth of its time). malloc's family comes from the C library the process
(or a C caller of exported code) links anyway.

Reverse mode puts the loop's own `while` equation (its value) before the
`while_vjp` (its cotangents, which usually read that value): two runs of
the forward loop. When both are lowered in one Function, on the same
cond, body and operands (`paired_whiles`), they share one run instead:
the `while` becomes the pushing loop (`WhilePush`), writing its final
carries and leaving the stack's state (newest block, depths) in an arena slot, and
the `while_vjp` the popping loop (`WhilePop`), which frees the stack.
Steps between them run on the final carries as before. Both loops run
the same body code on the same values, so the results are those of the
separate loops, bit for bit. (A kernel runs every step to its end, even
after a reported failure, so the stack is always freed.)

A stack that cannot grow (a long loop, a memory limit) must not end the
process: the step frees it, reports the iterations stored and the bytes
asked (codegen/failures.py: the runtime raises MemoryError when the call
returns) and skips the backward loop, so the kernel finishes on cotangents
nobody will see. An exported library's function returns -1 instead.
"""
from __future__ import annotations

import llvmlite.ir as llir
import numpy as np

from ..ir import Literal, TensorType
from ..ir.ops.while_loop import while_p
from ..ir.ops.loops import split_step_vjp
from ..ir.ops.while_vjp import float_positions, while_vjp_p
from .control import args_array, carries_out, data_pointer, emit_sub, in_memory, scratch
from .control import lower_while as plain_while
from .dtypes import I8
from .failures import emit_out_of_memory, out_of_memory_external
from .steps import Fill, Step

I64 = llir.IntType(64)
I8P = I8.as_pointer()
FRAME_ALIGN = 64
FIRST_CAPACITY = 16
BLOCK_HEADER = 64  # the previous block (i8*) and this block's frames (i64), then the frames, 64-byte aligned
STATE_WORDS = 3  # the newest block, the frames used in it, the frames in all
FALSE = llir.Constant(llir.IntType(1), 0)


def _nbytes(view) -> int:
    return _type_bytes(view.type)


def _type_bytes(t) -> int:
    return t.size * t.dtype.itemsize


def _frame_layout(carry_types):
    """(offset of each carry in a frame, frame bytes): each carry 64-byte aligned."""
    offsets, frame = [], 0
    for t in carry_types:
        offsets.append(frame)
        frame += (_type_bytes(t) + FRAME_ALIGN - 1) // FRAME_ALIGN * FRAME_ALIGN
    return offsets, max(frame, FRAME_ALIGN)


def _copy(k, dst, src, nbytes):
    if nbytes:
        memcpy = k.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        k.b.call(memcpy, [dst, src, k.i64(nbytes), FALSE])


def _libc(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = llir.Function(module, llir.FunctionType(ret, args), name)
    return fn


def _free_blocks(k, stack_slot):
    """Free the block at *stack_slot and every block before it; *stack_slot = NULL."""
    b = k.b
    free = _libc(k.module, "free", llir.VoidType(), [I8P])
    test, step, done = (b.append_basic_block(n) for n in ("stack.free_test", "stack.free", "stack.freed"))
    b.branch(test)
    b.position_at_end(test)
    block = b.load(stack_slot)
    b.cbranch(b.icmp_unsigned("!=", block, llir.Constant(I8P, None)), step, done)
    b.position_at_end(step)
    block = b.load(stack_slot)
    b.store(b.load(b.bitcast(block, I8P.as_pointer())), stack_slot)  # the header's first word: the previous block
    b.call(free, [block])
    b.branch(test)
    b.position_at_end(done)


def _block_capacity(k, block):
    """The frames a block holds: the header's second word."""
    return k.b.load(k.b.gep(k.b.bitcast(block, I64.as_pointer()), [k.i64(1)], inbounds=True))


def _frame_at(k, block, index, frame):
    return k.b.gep(block, [k.b.add(k.i64(BLOCK_HEADER), k.b.mul(index, k.i64(frame)))], inbounds=True)


class _Stack:
    """Where a stack's state lives: its newest block (i8**), the frames used in that block and
    the frames in all (i64*); allocas of one step, or an arena slot (STATE_WORDS int64) that a
    WhilePush leaves for its WhilePop."""

    def __init__(self, stack_slot, used_slot, count_slot):
        self.stack, self.used, self.count = stack_slot, used_slot, count_slot

    @classmethod
    def local(cls, k):
        return cls(k.b.alloca(I8P), k.b.alloca(I64), k.b.alloca(I64))

    @classmethod
    def in_arena(cls, k, view):
        p = k.b.bitcast(data_pointer(k, view), I64.as_pointer())
        stack = k.b.bitcast(p, I8P.as_pointer())
        return cls(stack, k.b.gep(p, [k.i64(1)], inbounds=True), k.b.gep(p, [k.i64(2)], inbounds=True))


def _emit_pushing_loop(k, cond, forward, res_types, cur, nxt, consts, flag, arena, stack: _Stack):
    """cur = the final carries, each step's residuals (of `res_types`) pushed on `stack`."""
    b, m = k.b, k.module
    malloc = _libc(m, "malloc", I8P, [I64])
    offsets, frame = _frame_layout(res_types)
    cond_fn, body_fn = emit_sub(k, cond, "cond"), emit_sub(k, forward, "body")
    arena_p = data_pointer(k, arena)
    cur_p = [data_pointer(k, v) for v in cur]
    consts_p = [data_pointer(k, v) for v in consts]
    cond_args = args_array(k, cur_p + consts_p + [data_pointer(k, flag), arena_p])
    frame_slots = [llir.Constant(I8P, None)] * len(res_types)  # rewritten per step
    body_args = args_array(k, cur_p + consts_p + [data_pointer(k, v) for v in nxt] + frame_slots + [arena_p])
    first_slot = len(cur) + len(consts) + len(nxt)
    capacity = b.alloca(I64)  # of the newest block
    b.store(llir.Constant(I8P, None), stack.stack)
    for slot in (capacity, stack.used, stack.count):
        b.store(k.i64(0), slot)

    test, check, grow, failed, push, done = (b.append_basic_block(n) for n in (
        "stack.test", "stack.check", "stack.grow", "stack.failed", "stack.push", "stack.forward_done"))
    b.branch(test)
    b.position_at_end(test)
    b.call(cond_fn, [cond_args])
    go = b.icmp_unsigned("!=", b.load(data_pointer(k, flag)), llir.Constant(I8, 0))
    b.cbranch(go, check, done)

    b.position_at_end(check)
    cap = b.load(capacity)
    b.cbranch(b.icmp_unsigned("==", b.load(stack.used), cap), grow, push)

    b.position_at_end(grow)  # a new block of twice the frames; the old ones stay where they are
    doubled = b.select(b.icmp_unsigned("==", cap, k.i64(0)), k.i64(FIRST_CAPACITY), b.mul(cap, k.i64(2)))
    block = b.call(malloc, [b.add(k.i64(BLOCK_HEADER), b.mul(doubled, k.i64(frame)))])
    null = b.icmp_unsigned("==", block, llir.Constant(I8P, None))
    with b.if_then(b.not_(null), likely=True):
        header = b.bitcast(block, I64.as_pointer())
        b.store(b.load(stack.stack), b.bitcast(header, I8P.as_pointer()))
        b.store(doubled, b.gep(header, [k.i64(1)], inbounds=True))
        b.store(block, stack.stack)
        b.store(doubled, capacity)
        b.store(k.i64(0), stack.used)
    b.cbranch(null, failed, push)

    b.position_at_end(failed)  # free what is held first, so reporting has memory
    n = b.load(stack.count)
    _free_blocks(k, stack.stack)
    emit_out_of_memory(k, "while_loop", n, frame, b.mul(b.add(n, doubled), k.i64(frame)))
    b.store(k.i64(0), stack.count)
    b.store(k.i64(0), stack.used)
    b.branch(done)

    b.position_at_end(push)
    used = b.load(stack.used)
    base = _frame_at(k, b.load(stack.stack), used, frame)
    for slot, off in enumerate(offsets):
        b.store(b.gep(base, [k.i64(off)], inbounds=True), b.gep(body_args, [k.i64(first_slot + slot)], inbounds=True))
    b.call(body_fn, [body_args])
    for v, nv in zip(cur, nxt):
        _copy(k, data_pointer(k, v), data_pointer(k, nv), _nbytes(v))
    b.store(b.add(used, k.i64(1)), stack.used)
    b.store(b.add(b.load(stack.count), k.i64(1)), stack.count)
    b.branch(test)
    b.position_at_end(done)


def _emit_popping_loop(k, back, res_types, consts, ct, ct_next, acc, acc_next, arena, stack: _Stack):
    """ct, acc = the cotangents, from the frames of `stack` (residuals of `res_types`) popped
    through the backward step; then the stack is freed."""
    b = k.b
    memset = k.module.declare_intrinsic("llvm.memset", [I8P, I64])
    offsets, frame = _frame_layout(res_types)
    back_fn = emit_sub(k, back, "body_vjp")
    for v in acc:
        if _nbytes(v):
            b.call(memset, [data_pointer(k, v), llir.Constant(I8, 0), k.i64(_nbytes(v)), FALSE])
    ct_p = [data_pointer(k, v) for v in ct + acc]
    ct_next_p = [data_pointer(k, v) for v in ct_next + acc_next]
    frame_slots = [llir.Constant(I8P, None)] * len(res_types)  # rewritten per step
    args = args_array(k, ct_p + frame_slots + [data_pointer(k, v) for v in consts] + ct_next_p
                      + [data_pointer(k, arena)])
    test, step, done = (b.append_basic_block(n) for n in ("stack.pop_test", "stack.pop", "stack.done"))
    b.branch(test)
    b.position_at_end(test)
    b.cbranch(b.icmp_unsigned("!=", b.load(stack.count), k.i64(0)), step, done)

    b.position_at_end(step)
    b.store(b.sub(b.load(stack.count), k.i64(1)), stack.count)
    with b.if_then(b.icmp_unsigned("==", b.load(stack.used), k.i64(0))):  # this block is done: back to the full one before
        block = b.load(stack.stack)
        previous = b.load(b.bitcast(block, I8P.as_pointer()))
        b.call(_libc(k.module, "free", llir.VoidType(), [I8P]), [block])
        b.store(previous, stack.stack)
        b.store(_block_capacity(k, previous), stack.used)
    used = b.sub(b.load(stack.used), k.i64(1))
    b.store(used, stack.used)
    base = _frame_at(k, b.load(stack.stack), used, frame)
    for slot, off in enumerate(offsets):
        b.store(b.gep(base, [k.i64(off)], inbounds=True), b.gep(args, [k.i64(len(ct_p) + slot)], inbounds=True))
    b.call(back_fn, [args])
    for v, src, dst in zip(ct + acc, ct_next_p, ct_p):
        _copy(k, dst, src, _nbytes(v))
    b.branch(test)

    b.position_at_end(done)
    _free_blocks(k, stack.stack)


class StackedWhileVJP(Step):
    """The forward loop with its stack, then the backward loop (see the module docstring)."""

    def __init__(self, cond, body, back, res_types, cur, nxt, consts, flag, ct, ct_next, acc, acc_next, arena):
        self.cond, self.body, self.back, self.res_types = cond, body, back, res_types
        self.cur, self.nxt, self.consts, self.flag = cur, nxt, consts, flag
        self.ct, self.ct_next, self.acc, self.acc_next, self.arena = ct, ct_next, acc, acc_next, arena

    def _written(self):
        return self.cur + self.nxt + [self.flag] + self.ct + self.ct_next + self.acc + self.acc_next + [self.arena]

    def reads(self):
        return {v.buffer for v in self._written() + self.consts}

    def writes(self):
        return {v.buffer for v in self._written()}

    def emit(self, k):
        stack = _Stack.local(k)
        _emit_pushing_loop(k, self.cond, self.body, self.res_types, self.cur, self.nxt, self.consts, self.flag,
                           self.arena, stack)
        _emit_popping_loop(k, self.back, self.res_types, self.consts, self.ct, self.ct_next, self.acc,
                           self.acc_next, self.arena, stack)


class WhilePush(Step):
    """A `while` whose cotangents a later WhilePop computes: the forward loop pushing its residuals,
    leaving the stack's state in `tape` (an int64[STATE_WORDS] arena buffer)."""

    def __init__(self, cond, body, res_types, cur, nxt, consts, flag, tape, arena):
        self.cond, self.body, self.res_types, self.cur, self.nxt, self.consts = cond, body, res_types, cur, nxt, consts
        self.flag, self.tape, self.arena = flag, tape, arena

    def reads(self):
        return {v.buffer for v in self.cur + self.nxt + self.consts + [self.flag, self.arena]}

    def writes(self):
        return {v.buffer for v in self.cur + self.nxt + [self.flag, self.tape, self.arena]}

    def emit(self, k):
        _emit_pushing_loop(k, self.cond, self.body, self.res_types, self.cur, self.nxt, self.consts, self.flag,
                           self.arena, _Stack.in_arena(k, self.tape))


class WhilePop(Step):
    """The `while_vjp` paired with a WhilePush: the backward loop over the frames it left in `tape`."""

    def __init__(self, back, res_types, consts, tape, ct, ct_next, acc, acc_next, arena):
        self.back, self.res_types, self.consts, self.tape = back, res_types, consts, tape
        self.ct, self.ct_next, self.acc, self.acc_next, self.arena = ct, ct_next, acc, acc_next, arena

    def _written(self):
        return self.ct + self.ct_next + self.acc + self.acc_next + [self.tape, self.arena]

    def reads(self):
        return {v.buffer for v in self._written() + self.consts}

    def writes(self):
        return {v.buffer for v in self._written()}

    def emit(self, k):
        _emit_popping_loop(k, self.back, self.res_types, self.consts, self.ct, self.ct_next, self.acc,
                           self.acc_next, self.arena, _Stack.in_arena(k, self.tape))


class _Tape:
    """What a paired `while` and `while_vjp` share while lowering: the stack's arena slot."""

    def __init__(self):
        self.slot = None


def paired_whiles(fn) -> dict:
    """Eqn -> _Tape for each `while` and the first later `while_vjp` of the same loop on the same
    operands (the cond and body Functions themselves, the same atoms): lowered as one run of the loop."""
    pairs: dict = {}
    open_loops = []
    for eqn in fn.eqns:
        if eqn.op is while_p:
            open_loops.append(eqn)
        elif eqn.op is while_vjp_p:
            for w in open_loops:
                if _same_loop(w, eqn):
                    open_loops.remove(w)
                    pairs[w] = pairs[eqn] = _Tape()
                    break
    return pairs


def _same_loop(w, v) -> bool:
    p, q = w.params, v.params
    if p["cond"] is not q["cond"] or p["body"] is not q["body"] or p["n_carry"] != q["n_carry"]:
        return False
    return len(v.inputs) >= len(w.inputs) and all(_same_atom(a, b) for a, b in zip(w.inputs, v.inputs))


def _same_atom(a, b) -> bool:
    if a is b:
        return True
    return (isinstance(a, Literal) and isinstance(b, Literal) and a.type == b.type
            and np.array_equal(np.asarray(a.value), np.asarray(b.value)))


def _split(p):
    """(forward, backward, residual types) of the loop's body (ir/ops/loops.py split_step_vjp)."""
    forward, backward, n_res, *_ = split_step_vjp(p["body"], p["n_carry"], 0)
    return forward, backward, forward.out_types[p["n_carry"]:]


def _planned(ctx, *fns):
    subs = [ctx.plan_subfunction(fn) for fn in fns]
    for sub in subs:
        ctx.externals.update(sub.externals)
    return subs


def lower_while(ctx, eqn, *operands):
    """A `while`: the plain loop (control.py), or the pushing loop when paired (paired_whiles)."""
    tape = ctx.while_tapes.get(eqn)
    if tape is None:
        return plain_while(ctx, eqn, *operands)
    return _lower_pushing_while(ctx, eqn, tape, *operands)


def _lower_pushing_while(ctx, eqn, tape: _Tape, *operands):
    """A paired `while`: its final carries, its frames left for the WhilePop."""
    p = eqn.params
    n_carry = p["n_carry"]
    forward, _, res_types = _split(p)
    cond, body = _planned(ctx, p["cond"], forward)
    cur = [ctx.store(x) for x in operands[:n_carry]]  # the loop overwrites its carries
    nxt = [ctx.arena(t) for t in p["body"].out_types]
    consts = [in_memory(ctx, x) for x in operands[n_carry:]]
    flag = ctx.arena(TensorType((), np.bool_))
    tape.slot = ctx.arena(TensorType((STATE_WORDS,), np.int64))
    ctx.use_external(*out_of_memory_external())
    ctx.add(WhilePush(cond, body, res_types, cur, nxt, consts, flag, tape.slot, scratch(ctx, [cond, body])))
    return carries_out(ctx, [ctx.dest(v) for v in eqn.outvars], cur)


def lower_while_vjp(ctx, eqn, *operands):
    """One forward-and-backward loop pair, writing every cotangent (output) of the equation; the
    backward loop alone when a paired `while` pushed the frames (paired_whiles)."""
    p = eqn.params
    n_carry, body_fn = p["n_carry"], p["body"]
    n_in = len(body_fn.invars)
    fc, fk = float_positions(body_fn, n_carry)
    ins = body_fn.in_types
    tape = ctx.while_tapes.get(eqn)
    if tape is not None and tape.slot is None:
        tape = None  # not lowered with its `while` (cannot happen in eqn order; kept safe)
    consts = [in_memory(ctx, x) for x in operands[n_carry:n_in]]
    ct = [ctx.store(x) for x in operands[n_in:]]
    ct_next = [ctx.arena(ins[i]) for i in fc]
    acc = [ctx.arena(ins[i]) for i in fk]
    acc_next = [ctx.arena(ins[i]) for i in fk]
    forward, backward, res_types = _split(p)
    if tape is not None:
        (back,) = _planned(ctx, backward)
        ctx.add(WhilePop(back, res_types, consts, tape.slot, ct, ct_next, acc, acc_next, scratch(ctx, [back])))
    else:
        cond, body, back = _planned(ctx, p["cond"], forward, backward)
        cur = [ctx.store(x) for x in operands[:n_carry]]  # the loops overwrite these
        nxt = [ctx.arena(t) for t in ins[:n_carry]]
        flag = ctx.arena(TensorType((), np.bool_))
        ctx.use_external(*out_of_memory_external())
        ctx.add(StackedWhileVJP(cond, body, back, res_types, cur, nxt, consts, flag, ct, ct_next, acc, acc_next,
                                scratch(ctx, [cond, body, back])))
    dests = tuple(ctx.dest(v) for v in eqn.outvars)
    for dest, result in zip(dests, ct + acc):
        ctx.add(Fill(dest, result))
    return dests
