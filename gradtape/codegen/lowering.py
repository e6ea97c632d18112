"""lower_function: an ir.Function to an LLVM module (the contract is in __init__.py).

The stages, each in its own module:

    inline_calls     call equations replaced by their sub-Functions (ir/inline_calls.py)
    plan_storage     which values get a buffer; the rest are fused (fusion.py)
    build            one pass over the equations: each op's Rule (rules.py)
                     turns operand Nodes into a Node and adds steps
    fuse_fills       consecutive loops over one index space become one
                     (steps.py)
    split_for_threads  large loops split into units the runtime's threads
                     share (parallel.py)
    block_matvec_pairs  X @ w, elementwise, X.T @ r run block of rows by
                     block of rows, reading X once (rowblock.py)
    plan_arena       offsets of intermediate buffers by liveness (arena.py)
    emit             `void name(i8** args)` unpacks the pointers and calls
                     each step, an always-inlined function whose pointer
                     arguments are `noalias` (so LLVM needs no runtime alias
                     checks to vectorize it)

Example::

    >>> lowered = lower_function(gradtape.make_ir(lambda x: gt.sum(gt.exp(x)), np.ones(8)), "f")
    >>> lowered.arena_bytes      # the exp is fused into the sum's loop
    0
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..ir import Literal, Var
from ..ir.inline_calls import inline_calls
from ..ir.op import multiple_results
from ..ir.passes import dce
from .lowered import Lowered, LoweringError, Unsupported
from .arena import plan_arena
from .context import BuildContext
from .control_stack import paired_whiles
from .dtypes import I8, storage_type
from .dynamic_arena import arena_offset, dynamic_arena_plan, refuse_subfunction
from .emitter import Emitter
from .fusion import plan_storage
from .math import MATH_FUNCTIONS, Polynomial, libraries_and_externals, outline_polynomials
from .math_loops import hint_math_loops
from .nodes import Buffer, Const, View, literal_node
from .parallel import split_for_threads
from .rowblock import block_matvec_pairs
from .rules import RULES
from .shared_steps import StepTable
from .steps import Fill, fuse_fills


# Longer chains of fused ops are cut by storing a value: code generation
# recurses through a chain (about three Python frames per op).
MAX_INLINE_DEPTH = 100

# A Function with more uses of polynomial math (tanh, exp, log, ...) than this
# calls each as one vector function instead of inlining it (math.py's
# outline_polynomials): LLVM's time on the inlined copies grows faster than
# the program, while a call per vector costs little next to that many ops
# (W7, 25 tanh among 100 ops: first call 0.14 -> 0.05 s of CPU, run time
# unchanged). Kernels with a few activations keep them inline.
OUTLINE_MATH_AFTER = 16

# A function of more steps than this keeps each step (loop nest) a function of
# its own, called from the entry, instead of inlining them all into one: LLVM's
# loop passes analyse the whole function at each loop, so one function of n
# loops costs it about n**2, n functions about n (bench/compile_scaling.py).
# Below it, inlining lets LLVM forward values from one step to the next.
MAX_INLINED_STEPS = 24

# Nor does a function whose steps hold more LLVM instructions than this in all:
# a few steps of hundreds of ops each cost LLVM as much as many small ones
# (the k = 3,000 chain's gradient: 21 steps of about 600 instructions,
# optimize + emit_object 0.73 -> 0.57 s as functions of their own). Steps
# kept apart are also shared when their code is the same (shared_steps.py).
MAX_INLINED_INSTRUCTIONS = 2000

# Steps kept as functions of their own whose code is the same are compiled once
# (shared_steps.py); off, each keeps its copy (for tests and measurements).
SHARE_EQUAL_STEPS = True


def lower_function(fn, name: str = "gradtape_fn", *, dynamic: bool = False) -> Lowered:
    """Lower `fn` to a module defining `void name(i8** args)` (see gradtape.codegen).

    Args:
      fn: the ir.Function; any ops but custom_gradient, dtypes float64,
        float32, integers and bool.
      name: the symbol of the entry function.

    Returns:
      A Lowered holding the module, the arena size and the external symbols
      (BLAS) the runtime must register.

      dynamic: `fn`'s shapes hold a run-time size (codegen/dynamic.py: the
        entry then takes one more input, the sizes vector).

    Raises:
      Unsupported: for custom_gradient, float16 or other dtypes, naming what.
    """
    plan = SubFunction(fn, dynamic=dynamic)
    module = ir.Module(name=name)
    if _polynomial_uses(plan.fn) > OUTLINE_MATH_AFTER:
        outline_polynomials(module)
    plan.emit(module, name)
    hint_math_loops(module)  # chains of math calls: wider and interleaved vectors (math_loops.py)
    if plan.step_calls and SHARE_EQUAL_STEPS:  # once the step bodies are final (hints included)
        StepTable(module).share_calls(plan.step_calls)
    libraries, math_externals = libraries_and_externals(module)
    return Lowered(
        module=module,
        name=name,
        in_types=plan.fn.in_types,
        out_types=plan.fn.out_types,
        arena_bytes=plan.arena_bytes,
        externals={**plan.externals, **math_externals},
        libraries=libraries,
        arena_plan=plan.arena_plan,
    )


class SubFunction:
    """A Function planned (steps, arena) and ready to emit as `void name(i8** args)`
    into a module: the entry of lower_function, or a branch or loop body that
    a control-flow step calls (codegen/control.py) with its own args array
    and a scratch arena of `arena_bytes` inside its caller's."""

    def __init__(self, fn, dynamic: bool = False):
        fn = dce(inline_calls(fn))
        _check_supported(fn)
        self.fn = fn
        self.dynamic = dynamic
        self.ctx = _build(fn, plan_storage(fn), dynamic)
        steps = block_matvec_pairs(fuse_fills(self.ctx.steps))
        # A dynamic version (codegen/dynamic.py) splits only fills of a run-time size.
        self.ctx.steps = split_for_threads(self.ctx, steps, dynamic)
        self.arena_plan = None
        if dynamic:  # offsets are planned per run-time size, and read from the sizes vector
            self.arena_plan = dynamic_arena_plan(self.ctx.steps, self.ctx.arena_buffers)
            self.arena_bytes = 0
        else:
            self.arena_bytes = plan_arena(self.ctx.steps, self.ctx.arena_buffers)
        self.externals = self.ctx.externals

    def emit(self, module, name: str) -> ir.Function:
        """The entry; `step_calls` then holds its calls of steps that are functions of their own
        (empty when they are inlined), which lower_function may share (shared_steps.py)."""
        entry, self.step_calls = _emit(module, self.ctx, name, len(self.fn.invars), len(self.fn.outvars),
                                       self.dynamic)
        return entry


def _polynomial_uses(fn) -> int:
    polynomial = {op for op, f in MATH_FUNCTIONS.items() if isinstance(f.impl, Polynomial)}
    return sum(eqn.op in polynomial for eqn in fn.eqns)


def _check_supported(fn):
    for eqn in fn.eqns:
        if eqn.op not in RULES:
            # custom_gradient, the one op without a rule, calls Python (a callback
            # that could not be traced), which native code cannot call.
            raise Unsupported(
                f"{eqn.op.name}: code generation has no lowering rule for this op ({eqn}); "
                "it runs in the interpreter instead (an op that computes something "
                "natively needs a rule in codegen/rules.py or an entry in codegen/math.py)"
            )
    atoms = list(fn.invars) + [a for e in fn.eqns for a in list(e.inputs) + list(e.outvars)]
    for a in atoms:
        try:
            storage_type(a.type.dtype)
        except Unsupported as e:
            raise Unsupported(f"{e} (value of type {a.type} in {fn})") from None


def _build(fn, stored, dynamic: bool = False) -> BuildContext:
    ctx = BuildContext(len(fn.invars) + dynamic, fn.out_types)  # dynamic: the sizes vector follows the inputs
    ctx.plan_subfunction = refuse_subfunction if dynamic else SubFunction  # control flow (codegen/control.py)
    ctx.while_tapes = paired_whiles(fn)  # a `while` and its `while_vjp` run the loop once (control_stack.py)
    nodes: dict = {v: View(Buffer(v.type, "arg", i)) for i, v in enumerate(fn.invars)}
    for i, v in enumerate(fn.outvars):
        if isinstance(v, Var) and v not in nodes and v not in ctx.outputs:
            ctx.outputs[v] = ctx.output_views[i]

    def node_of(a):
        if isinstance(a, Literal):
            return literal_node(a, ctx.const_buffer)
        return nodes[a]

    depth: dict = {}  # Var -> length of the chain of inline nodes that computes it
    for eqn in fn.eqns:
        rule = RULES[eqn.op]
        try:
            node = rule.lower(ctx, eqn, *[node_of(a) for a in eqn.inputs])
        except Unsupported:
            raise
        except Exception as e:
            raise LoweringError(f"code generation failed on `{eqn}`: {type(e).__name__}: {e}") from e
        if len(eqn.outvars) > 1 or eqn.op in multiple_results:  # a rule of several results: one node each
            nodes.update(zip(eqn.outvars, node))
            continue
        v = eqn.out
        d = 1 + max((depth.get(a, 0) for a in eqn.inputs if isinstance(a, Var)), default=0)
        if rule.fusable and (v in stored or d > MAX_INLINE_DEPTH):
            if v in ctx.outputs:
                node = ctx.store(node, ctx.outputs[v])
            elif not isinstance(node, (View, Const)):  # a view of stored data costs nothing to read
                node = ctx.store(node)
        nodes[v] = node
        depth[v] = d if rule.fusable and not isinstance(node, (View, Const)) else 0
    for view, v in zip(ctx.output_views, fn.outvars):
        node = node_of(v)
        if node is not view:
            ctx.add(Fill(view, node))
    return ctx


def _emit(module, ctx, name: str, n_in: int, n_out: int, dynamic: bool = False) -> tuple:
    i8p = I8.as_pointer()
    i64 = ir.IntType(64)
    entry = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p.as_pointer()]), name)
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    args = [b.load(b.gep(entry.args[0], [ir.Constant(i64, i)])) for i in range(n_in + dynamic + n_out + 1)]
    arena = args[-1]
    pointers: dict = {}
    sizes = Buffer(None, "arg", n_in) if dynamic else None  # the sizes vector (codegen/dynamic.py)

    def pointer(buf):
        p = pointers.get(buf)
        if p is None:
            if buf.kind == "arg":
                p = args[buf.slot]
            elif buf.kind == "arena" and dynamic:
                p = b.gep(arena, [arena_offset(b, args[n_in], buf.offset)], inbounds=True)
            elif buf.kind == "arena":
                p = b.gep(arena, [ir.Constant(i64, buf.offset)], inbounds=True)
            else:
                p = b.bitcast(_global(module, buf, f"{name}.const{len(pointers)}"), i8p)  # unique: one per buffer
            pointers[buf] = p
        return p

    emitted = []
    for i, step in enumerate(ctx.steps):
        buffers = sorted(step.reads() | step.writes(), key=_buffer_order)
        if dynamic:
            buffers.insert(0, sizes)
        emitted.append((_step_function(module, f"{name}.step{i}", step, buffers, sizes), buffers))
    inline = len(emitted) <= MAX_INLINED_STEPS and (
        sum(_instructions(fn) for fn, _ in emitted) <= MAX_INLINED_INSTRUCTIONS)
    calls = []
    for fn, buffers in emitted:
        fn.attributes.add("alwaysinline" if inline else "noinline")
        calls.append(b.call(fn, [pointer(buf) for buf in buffers]))
    b.ret_void()
    return entry, ([] if inline else calls)


def _instructions(fn: ir.Function) -> int:
    return sum(len(block.instructions) for block in fn.blocks)


def _buffer_order(buf: Buffer):
    return (buf.kind, buf.slot if buf.slot is not None else -1, buf.offset or 0, id(buf))


def _step_function(module, name: str, step, buffers, sizes=None) -> ir.Function:
    """The step as an internal function of one `noalias` pointer per buffer (the caller
    marks it always inlined or never: see MAX_INLINED_STEPS); with `sizes` (a dynamic
    version's sizes vector, codegen/dynamic.py) it reads run-time sizes from the first.

    The buffers a step touches are alive together, so they never overlap;
    saying so lets LLVM vectorize without runtime alias checks (inlining
    turns the attributes into alias scopes of this step's accesses only, as
    arena buffers of different steps may share memory).
    """
    i8p = I8.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p] * len(buffers)), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    for arg in fn.args:
        arg.add_attribute("noalias")
    sizes_block = fn.append_basic_block("sizes") if sizes is not None else None  # run-time sizes, first
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    k = Emitter(module, b, dict(zip(buffers, fn.args)))
    if sizes is not None:
        k.use_sizes(fn.args[0], sizes_block)
    step.emit(k)
    k.b.ret_void()
    if sizes is not None:
        ir.IRBuilder(sizes_block).branch(fn.basic_blocks[1])
    return fn


def _global(module, buf: Buffer, name: str):
    data = bytearray(buf.data.tobytes())
    t = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, t, name=name)
    g.global_constant = True
    g.linkage = "private"
    g.align = 64
    g.initializer = ir.Constant(t, data)
    return g
