"""Loop hints for elementwise loops whose bodies are chains of math calls.

A fused elementwise loop such as W7's (the gradient of 100 ops: 25 sin, 25
tanh, then 25 cos for the backward pass, in one loop over 256 values) is one
long dependency chain per element: each sin waits for the tanh before it.
Its body is thousands of instructions, far more than the CPU's reorder
window, so the out-of-order core cannot start the next iteration while this
one waits, and the loop runs at the latency of the chain, not at the
throughput of the arithmetic. LLVM's loop vectorizer does not interleave
such a loop by itself (its cost model interleaves small bodies only) and,
on most AVX-512 CPUs, keeps it at 256-bit vectors.

`hint_math_loops(module)` marks each such loop with `llvm.loop` metadata:

- `llvm.loop.vectorize.width`: as many lanes as the target's widest vector
  registers hold (8 doubles on AVX-512, 4 on AVX2, 2 on SSE), when every math
  call of the body has a vector function of that width (math_libmvec.py
  offers libmvec's AVX-512 functions on AVX-512 targets);
- `llvm.loop.interleave.count` = INTERLEAVE: the vectorized body computes
  that many independent vectors side by side, so one's latency hides the
  other's.

Measured on W7 (256 float64, AVX-512 host, bench/op_chain.py): 63 us without
hints; 37 us with interleave 2 alone (the hint an AVX2 CPU gets); 39 us with
8 lanes alone; 24 us with both. The values are the same bits: each element
is still computed by the same instructions, only more of them at a time.
The price is compile time (the interleaved body is twice as long for LLVM's
backend: W7's kernel 25 -> 31 ms), hence a threshold of MIN_MATH_CALLS.

A loop that calls a libmvec function (sin, cos, pow, ...) gets the width
hint even for one call: its call sites offer only the target's widest
vector function (math_libmvec.py explains why), and without the hint LLVM
keeps to 256 bits on most AVX-512 CPUs and would call the scalar helper
lane by lane.

A call whose vector functions no loop vectorizer can use (it is not in a
loop of one block, or its loop runs fewer iterations than the narrowest of
them) loses its mapping: LLVM unrolls such a loop and its SLP vectorizer
then crashes on calls that name vector functions (an assertion in its
scheduler, `UnscheduledDeps >= 0`: fuzz seed 965, a 2 x 2 loop nest of
float32 arctan). The call still calls the same helper, which computes the
same bits (math_libmvec.py). A loop that keeps such calls is not unrolled
(`llvm.loop.unroll.disable`) for the same reason: LLVM unrolled the scalar
remainder of a 6-iteration loop vectorized 4 at a time into two calls, and
SLP aborted on them (fuzz seed 6748); with unrolling off, the vectorizer
folds the remainder into a masked vector call instead. Which loops keep
their calls' mapping depends on the target's width: on AVX-512 (8 doubles)
that 6-iteration loop is shorter than the only vector function and loses it,
so it gets no hint and may be unrolled into plain calls, which SLP leaves
alone.

Only loops of one basic block that branch back to themselves are hinted
(the innermost loops codegen emits for elementwise work); a loop whose
static trip count is below the hinted vector size gets no hint, as the
vector body would never run.
"""
from __future__ import annotations

import re

from llvmlite import ir
from llvmlite.ir import values

from . import cpu as target_cpu
from .math import HELPER_PREFIX

# Math calls a loop body needs before it is hinted. Measured on chains of k
# ops (bench/op_chain.py --ops k): with 3 calls (k = 4) the hints already
# take 30% off; below that LLVM's own choice is as good.
MIN_MATH_CALLS = 2

# Vectors computed side by side. 4 is faster still on W7 (20 us against 24)
# but doubles the backend's work again.
INTERLEAVE = 2

# Loops with more math calls than this are not interleaved: LLVM's backend
# time grows faster than the body (registers live across the calls), and
# doubling it cost 3x in emit time on the 130-400-call loops of a 1,000-op
# chain (bench/compile_scaling.py: 80 -> 230 ms), against 1.3x on W7's
# 75-call loop. They still get the width hint, which costs nothing.
MAX_INTERLEAVED_CALLS = 100

# Helpers that are one instruction (llvm.sqrt): they make no chain of latency.
_CHEAP = ("sqrt",)

_VARIANT_ATTRIBUTE = '"vector-function-abi-variant"='


class _LoopId(values.MDValue):
    """A `distinct` metadata node whose first operand is itself, as LLVM requires of a loop ID."""

    def __init__(self, module: ir.Module, hints: list):
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *hints)

    def descr(self, buf):
        refs = ", ".join(op.get_reference() for op in self.operands)
        buf += (f"distinct !{{ {refs} }}", "\n")

    # identity, not contents: the operands hold the node itself
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def vector_bits() -> int:
    """Width in bits of the target's widest vector registers (0 for a target that is not x86-64)."""
    target = target_cpu.current()
    if not target.is_x86:
        return 0
    if target.has("avx512f"):
        return 512
    if target.has("avx"):
        return 256
    return 128


def hint_math_loops(module: ir.Module) -> int:
    """Give every loop of `module` whose body is a chain of math calls its vectorizer hints.

    Args:
        module: a module built with llvmlite, before it is turned into text.

    Returns:
        How many loops received hints.

    Example:
        >>> module = lower_function(...).module   # lowering.py calls it itself
        >>> hint_math_loops(module)
        1
    """
    hinted = 0
    for fn in module.functions:
        for block in fn.blocks:
            branch = block.terminator
            if isinstance(branch, ir.ConditionalBranch) and block in branch.operands[1:]:
                _drop_unusable_variants(block, _trip_count(block, branch))
                hints = _hints_for(module, block, branch)
                if any(_calls_libmvec(c) for c in _math_calls(block)):
                    hints.append(module.add_metadata(["llvm.loop.unroll.disable"]))
                if hints:
                    branch.set_metadata("llvm.loop", _LoopId(module, hints))
                    hinted += 1
            else:
                _drop_unusable_variants(block, 0)  # not a loop the vectorizer widens
    return hinted


def _drop_unusable_variants(block: ir.Block, trips) -> None:
    """Remove the vector-function mapping of the calls in `block` that the loop vectorizer
    cannot use: `trips` (None: unknown) is below the narrowest width the mapping offers."""
    for call in _math_calls(block):
        mapping = _variant_mapping(call)
        widths = [int(w) for w in re.findall(r"_ZGV_LLVM_N(\d+)", mapping)]
        if widths and trips is not None and trips < min(widths):
            call.attributes = type(call.attributes)(a for a in call.attributes if a != mapping)


def _math_calls(block: ir.Block) -> list:
    return [i for i in block.instructions
            if isinstance(i, ir.CallInstr) and isinstance(i.callee, ir.Function)
            and i.callee.name.startswith(HELPER_PREFIX) and i.callee.name.split(".")[2] not in _CHEAP]


def _hints_for(module: ir.Module, block: ir.Block, branch) -> list:
    calls = _math_calls(block)
    chain = len(calls) >= MIN_MATH_CALLS
    if not chain and not any(_calls_libmvec(c) for c in calls):
        return []
    bits = vector_bits()
    elem_bits = max(64 if isinstance(c.type, ir.DoubleType) else 32 for c in calls)
    lanes = max(bits // elem_bits, 1)
    width = lanes if bits and all(_has_width(c, lanes) for c in calls) else None
    # what the vector body needs at least: as many iterations as one vector holds, times INTERLEAVE
    trips = _trip_count(block, branch)
    step = width or lanes
    if trips is not None and trips < step:
        return []
    i32 = ir.IntType(32)
    hints = []
    if width:
        hints.append(module.add_metadata(["llvm.loop.vectorize.width", i32(width)]))
    if chain and len(calls) <= MAX_INTERLEAVED_CALLS and (trips is None or trips >= step * INTERLEAVE):
        hints.append(module.add_metadata(["llvm.loop.interleave.count", i32(INTERLEAVE)]))
    return hints


def _variant_mapping(call: ir.CallInstr) -> str:
    return next((a for a in call.attributes if isinstance(a, str) and a.startswith(_VARIANT_ATTRIBUTE)), "")


def _calls_libmvec(call: ir.CallInstr) -> bool:
    """Whether `call`'s vector functions are libmvec's (named by the x86-64 vector ABI)."""
    return "(_ZGV" in _variant_mapping(call)


def _has_width(call: ir.CallInstr, lanes: int) -> bool:
    """Whether `call` stays packed at `lanes` lanes: inlined code always does; a
    helper that stays a call only if its vector functions include that width."""
    if "alwaysinline" in call.callee.attributes:
        return True
    return f"_ZGV_LLVM_N{lanes}" in _variant_mapping(call)


def _trip_count(block: ir.Block, branch):
    """Iterations of the loop `block`, if both bounds are constants (emitter.py's
    `i = phi [start, pre], [i + 1, block]; br (i + 1 < n), block, end`); else None."""
    cond = branch.operands[0]
    if not (isinstance(cond, ir.ICMPInstr) and isinstance(cond.operands[1], ir.Constant)):
        return None
    step = cond.operands[0]
    if not (isinstance(step, ir.Instruction) and step.opname == "add" and isinstance(step.operands[0], ir.PhiInstr)):
        return None
    starts = [v for v, b in step.operands[0].incomings if b is not block]
    if len(starts) != 1 or not isinstance(starts[0], ir.Constant):
        return None
    return cond.operands[1].constant - starts[0].constant
