"""Structured control flow with JAX's names and signatures: cond, switch, scan, fori_loop, while_loop.

Inside a trace (a staged function, grad, vmap, make_ir) a branch on a
traced value cannot be a Python `if`: the value is not known yet. `cond`
and `switch` trace every branch into a sub-Function and emit one `cond`
equation per output leaf (gradtape/ir/ops/control.py), which the passes
differentiate and batch and code generation lowers to a native branch.
`scan` and `fori_loop` trace their body once into a `scan` equation per
result (gradtape/ir/ops/loops.py), lowered to a native loop; `while_loop`
a `while` equation (gradtape/ir/ops/while_loop.py).

Called on concrete values (eagerly, on a GradientTape, or inside a trace
with a predicate that does not depend on the traced inputs) they are
Python control flow: only the chosen branch runs, and its ops are recorded
like any other.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.ops.control import checkpoint_p, clamp_index, cond_p, narrow_index
from ..ir.ops.loops import scan_p
from ..ir.ops.while_loop import while_p
from ..tracer import tree
from ..tracer.signature import describe
from ..tracer.tensor import Tensor
from ..tracer.trace import trace_call
from ..tracer.trace_context import current_builder, in_trace
from .shape import concatenate, stack

__all__ = ["cond", "switch", "scan", "fori_loop", "while_loop", "checkpoint", "remat"]


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, also on traced values.

    Args:
      pred: a boolean scalar (a Python bool, a NumPy bool or a 0-d bool Tensor).
      true_fun, false_fun: functions of the operands returning arrays or
        Tensors (or nested lists/tuples/dicts of them) of the same structure,
        shapes and dtypes.
      *operands: the arguments passed to the branch taken (pytrees of arrays).

    Returns:
      The result of the branch taken. Under a trace with a traced `pred`
      both branches are traced and the choice is made at run time; its
      derivatives are those of the branch taken.

    Raises:
      TypeError: `pred` is not a boolean scalar; the branches return
        different structures, shapes or dtypes (naming the branch, the leaf
        and both types).

    Example::

        >>> f = gt.grad(lambda x: gt.cond(x > 0, lambda v: v * v, lambda v: -v, x))
        >>> float(f(3.0)), float(f(-3.0))
        (6.0, -1.0)
    """
    _check_scalar("cond", "pred", pred, "b", "a boolean scalar (pred of shape () and dtype bool)")
    if not _abstract(pred):
        return (true_fun if bool(_value(pred)) else false_fun)(*operands)
    return _staged("cond", (("false_fun", false_fun), ("true_fun", true_fun)), pred, operands)


def switch(index, branches, *operands):
    """`branches[index](*operands)`, with `index` clamped to `[0, len(branches) - 1]`, as in JAX.

    An index below 0 selects the first branch and one past the end the last:
    clamping keeps a traced index from selecting nothing, so no error can
    be raised at run time.

    Args:
      index: an integer scalar (Python int, NumPy integer or 0-d integer Tensor).
      branches: a nonempty sequence of functions of the operands returning
        the same structure, shapes and dtypes.
      *operands: the arguments passed to the branch taken.

    Returns:
      The result of the branch taken.

    Raises:
      TypeError: `index` is not an integer scalar, `branches` is empty or
        holds a non-callable, or the branches' results differ (naming the
        branches, the leaf and both types).

    Example::

        >>> fs = [lambda x: x + 1.0, lambda x: x * 2.0, lambda x: -x]
        >>> g = gt.differentiable(lambda i, x: gt.switch(i, fs, x))
        >>> [float(g(i, 5.0)) for i in (-1, 1, 2, 7)]
        [6.0, 10.0, -5.0, -5.0]
    """
    _check_scalar("switch", "index", index, "iu", "an integer scalar (index of shape () and an int dtype)")
    branches = list(branches) if isinstance(branches, (list, tuple)) else branches
    if not isinstance(branches, list) or not branches or not all(callable(f) for f in branches):
        raise TypeError(
            f"switch: branches must be a nonempty list or tuple of functions, got {branches!r}"[:300]
        )
    if not _abstract(index):
        return branches[clamp_index(_value(index), len(branches))](*operands)
    named = tuple((f"branch {k}", f) for k, f in enumerate(branches))
    return _staged("switch", named, index, operands)


def _abstract(x) -> bool:
    return isinstance(x, Tensor) and x._sym is not None


def _value(x):
    return x._value if isinstance(x, Tensor) else x


def _check_scalar(construct, arg, x, kinds, what):
    if isinstance(x, Tensor):
        shape, dtype = x.shape, x.dtype
    elif isinstance(x, (bool, int, float, np.generic, np.ndarray)):
        a = np.asarray(x)
        shape, dtype = a.shape, a.dtype
    else:
        raise TypeError(f"{construct}: {arg} must be {what}, got a {type(x).__name__}: {x!r}"[:300])
    if shape != () or dtype.kind not in kinds:
        raise TypeError(
            f"{construct}: {arg} must be {what}, got {ir.TensorType(shape, dtype)}"
            + ("; compare it, e.g. `x > 0`" if kinds == "b" and shape == () else "")
        )


def _staged(construct, named_branches, index, operands):
    """Trace each branch on the operands' types; emit one cond equation with an output per leaf."""
    sig = describe(operands, frozenset(), construct)
    n = len(sig.types)
    traced = [trace_call(f, operands, sig, f"{construct} {name}") for name, f in named_branches]
    _check_results(construct, [name for name, _ in named_branches], traced)
    captured = []
    for t in traced:
        captured += [c for c in t.captured if c not in captured]
    fns = [_with_inputs(t.fn, n, t.captured, captured) for t in traced]

    builder = current_builder([index, *sig.leaves])
    atoms = [_atom(index, None)]
    atoms += [_atom(x, t.dtype) for x, t in zip(sig.leaves, sig.types)]
    atoms += captured
    atoms[0] = narrow_index(ir.Sym(atoms[0], builder), len(fns)).atom
    outs = builder.bind(cond_p, atoms, {"branches": tuple(fns)})  # one equation, every output leaf
    return tree.unflatten(traced[0].out_skeleton, [Tensor(sym=ir.Sym(v, builder)) for v in outs])


def _atom(x, dtype):
    if _abstract(x):
        return x._sym.atom
    return ir.Literal(np.asarray(_value(x), dtype=dtype))


def _with_inputs(fn, n, own_captured, captured):
    """fn taking the operand leaves and then every branch's captured values (those it ignores too)."""
    mine = set(own_captured)
    extra = [c if c in mine else ir.Var(c.type) for c in captured]
    return ir.Function(list(fn.invars[:n]) + extra, fn.eqns, fn.outvars)


def _check_results(construct, names, traced):
    first = traced[0]
    for name, t in zip(names[1:], traced[1:]):
        if t.out_skeleton != first.out_skeleton:
            raise TypeError(
                f"{construct}: {names[0]} and {name} must return the same structure; "
                f"{names[0]} returns {_structure(first.out_skeleton)} and {name} returns "
                f"{_structure(t.out_skeleton)}"
            )
        for j, (a, b) in enumerate(zip(first.fn.out_types, t.fn.out_types)):
            if a != b:
                raise TypeError(
                    f"{construct}: {names[0]} and {name} must return the same shapes and dtypes; "
                    f"output leaf {j} is {a} in {names[0]} and {b} in {name} "
                    "(cast or reshape one branch's result to match)"
                )


def _structure(skeleton) -> str:
    return repr(tree.unflatten(skeleton, ["*"] * len(tree.flatten(skeleton)))).replace("'*'", "*")


# --- loops -----------------------------------------------------------------------------------

def scan(f, init, xs=None, length=None, reverse=False, unroll=1, checkpoint_every=None):
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs`; the final carry and the stacked ys.

    Like JAX's lax.scan: the body is traced once and compiled as one native
    loop (not unrolled), and its derivatives are scans too (reverse mode
    stores each step's residuals, the values its derivative reads, as JAX
    does; wrap f's step in gt.checkpoint to store the carries only).

    Args:
      f: a function `(carry, x) -> (carry, y)`; the new carry must have the
        structure, shapes and dtypes of `init`; y may be None.
      init: the initial carry (a pytree of arrays).
      xs: a pytree of arrays sliced along their leading axis, one slice per
        step, or None (then `length` steps with x None).
      length: the number of steps (required when xs is None; else it must
        equal the leading axis of xs).
      reverse: run the steps from the last to the first (ys keep their
        positions).
      unroll: accepted for JAX compatibility; the loop is never unrolled.
      checkpoint_every: None (reverse mode stores the residuals of every
        step: memory n steps' residuals) or k >= 1: the loop runs as n // k
        checkpointed segments of k steps (and the n % k steps left), and
        reverse mode stores only the carry entering each segment,
        recomputing a segment's steps when its backward pass comes: memory
        about n/k carries and k steps' residuals, least about k = sqrt(n),
        for one more forward pass. Values and derivatives are the same.

    Returns:
      `(final_carry, ys)`: ys the per-step y's stacked along a new leading axis.

    Raises:
      TypeError: f does not return a pair, or changes the carry's structure,
        shape or dtype (naming the leaf and both types).
      ValueError: xs' leading axes disagree with each other or `length`, or
        neither xs nor length gives the number of steps, or checkpoint_every
        is not a positive integer.

    Example::

        >>> cumsum = lambda c, x: (c + x, c + x)
        >>> total, partial = gt.scan(cumsum, 0.0, np.array([1.0, 2.0, 3.0]))
        >>> float(total), partial.numpy().tolist()
        (6.0, [1.0, 3.0, 6.0])
    """
    x_leaves = tree.flatten(xs) if xs is not None else []
    n = _scan_length(x_leaves, length)
    init_leaves = tree.flatten(init)
    if not in_trace() and not any(_abstract(a) for a in init_leaves + x_leaves):
        return _scan_eagerly(f, init, xs, x_leaves, n, reverse)
    if checkpoint_every is not None:
        k = _positive_int("scan", "checkpoint_every", checkpoint_every)
        if 1 < k < n:
            return _scan_in_segments(f, init, xs, n, reverse, k)
    return _scan_staged(f, init, xs, n, reverse)


def _positive_int(construct, arg, k) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"{construct}: {arg} must be a positive integer (the steps per stored carry) "
                         f"or None, got {k!r}")
    return int(k)


def _scan_in_segments(f, init, xs, n, reverse, k):
    """The scan as a scan over checkpointed segments of k steps, then the n % k steps left
    (first, when reversed): reverse mode keeps the carry entering each segment only."""
    q, r = divmod(n, k)
    lo, hi = (r, n) if reverse else (0, q * k)           # the steps run in segments
    x_leaves = tree.flatten(xs) if xs is not None else []

    def part(a, b, shape=None):
        if xs is None:
            return None
        return tree.unflatten(xs, [leaf[a:b] if shape is None else leaf[a:b].reshape(shape + tuple(leaf.shape[1:]))
                                   for leaf in x_leaves])

    def segment(carry, x_seg):
        carry, ys = _scan_staged(f, carry, x_seg, k, reverse)
        return carry, (() if ys is None else ys)

    def segment_no_xs(carry):
        return segment(carry, None)

    if xs is None:
        step = checkpoint(segment_no_xs)
        carry, ys = _scan_staged(lambda c, _: step(c), init, None, q, reverse)
    else:
        carry, ys = _scan_staged(checkpoint(segment), init, part(lo, hi, (q, k)), q, reverse)
    ys = None if isinstance(ys, tuple) and ys == () else tree.unflatten(ys, [y.reshape((q * k,) + tuple(y.shape[2:])) for y in tree.flatten(ys)])
    if r == 0:
        return carry, ys
    rest_xs = part(0, r) if reverse else part(q * k, n)
    carry, rest = _scan_staged(f, carry, rest_xs, r, reverse)
    if ys is None:
        return carry, None
    pieces = zip(tree.flatten(rest), tree.flatten(ys)) if reverse else zip(tree.flatten(ys), tree.flatten(rest))
    return carry, tree.unflatten(ys, [concatenate(list(p)) for p in pieces])


def fori_loop(lower, upper, body_fun, init_val):
    """`val = body_fun(i, val)` for i in range(lower, upper); returns the final val.

    Like JAX's lax.fori_loop: with concrete bounds, traced, it is a `scan`
    over the step numbers; with traced bounds a `while_loop` on a step
    counter (reverse mode then uses a run-time stack, see while_loop). Either is one
    native loop, differentiable in both modes.

    Args:
      lower, upper: the bounds, integer scalars (concrete or traced).
      body_fun: `(i, val) -> val`, keeping val's structure, shapes and dtypes.
      init_val: the initial value (a pytree of arrays).

    Returns:
      The value after the last step (init_val when upper <= lower).

    Raises:
      TypeError: a bound is not an integer scalar, or body_fun changes
        val's structure, shape or dtype.

    Example::

        >>> float(gt.grad(lambda x: gt.fori_loop(0, 3, lambda i, v: v * x, 1.0))(2.0))  # d/dx x**3
        12.0
    """
    for name, b in (("lower", lower), ("upper", upper)):
        _check_scalar("fori_loop", name, b, "iu", "an integer scalar")
    if _abstract(lower) or _abstract(upper):
        return _fori_while(lower, upper, body_fun, init_val)
    lower, upper = int(_value(lower)), int(_value(upper))
    if not in_trace() and not any(_abstract(a) for a in tree.flatten(init_val)):
        val = init_val
        for i in range(lower, upper):
            val = _checked_carry("fori_loop", "body_fun", init_val, body_fun(np.int64(i), val))
        return val
    steps = np.arange(lower, max(lower, upper), dtype=np.int64)
    val, _ = _scan_staged(lambda v, i: (body_fun(i, v), None), init_val, steps, len(steps), False,
                          construct="fori_loop", fname="body_fun")
    return val


def _fori_while(lower, upper, body_fun, init_val):
    """fori_loop with traced bounds: a while_loop carrying the step number."""
    def body(c):
        i, val = c
        return i + 1, body_fun(i, val)

    start = lower if isinstance(lower, Tensor) else np.int64(lower)
    upper = upper if isinstance(upper, Tensor) else np.int64(upper)
    _, val = while_loop(lambda c: c[0] < upper, body, (start.astype(np.int64), init_val))
    return val


def _scan_length(x_leaves, length) -> int:
    lengths = []
    for x in x_leaves:
        shape = x.shape if isinstance(x, Tensor) else np.shape(x)
        if len(shape) == 0:
            raise ValueError(f"scan: every leaf of xs needs a leading axis to scan over; got a scalar {x!r}"[:200])
        lengths.append(shape[0])
    if length is not None:
        lengths.append(int(length))
    if not lengths:
        raise ValueError("scan: pass xs or length: with xs None, length gives the number of steps")
    if len(set(lengths)) > 1:
        raise ValueError(f"scan: xs' leading axes and length must agree, got lengths {lengths}")
    return lengths[0]


def _types(leaves) -> list:
    return [ir.TensorType(x.shape, x.dtype) if isinstance(x, Tensor) else ir.type_of(x) for x in leaves]


def _checked_carry(construct, fname, init, new):
    """new, after checking it has init's structure, shapes and dtypes (errors name the leaf)."""
    init_skel = tree.unflatten(init, [None] * len(tree.flatten(init)))
    new_skel = tree.unflatten(new, [None] * len(tree.flatten(new)))
    if init_skel != new_skel:
        raise TypeError(
            f"{construct}: {fname} must return a carry of the initial value's structure; "
            f"the initial carry is {_structure(init_skel)}, {fname} returned {_structure(new_skel)}"
        )
    for j, (a, b) in enumerate(zip(_types(tree.flatten(init)), _types(tree.flatten(new)))):
        if a != b:
            raise TypeError(
                f"{construct}: {fname} changes carry leaf {j} from {a} to {b}; "
                "the carry must keep its shape and dtype at every step (cast or reshape in the body)"
            )
    return new


def _pair(construct, fname, r):
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise TypeError(f"{construct}: {fname} must return a pair (carry, y), got {type(r).__name__}")
    return r


def _scan_eagerly(f, init, xs, x_leaves, n, reverse):
    carry, ys = init, []
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        x = tree.unflatten(xs, [leaf[i] for leaf in x_leaves]) if xs is not None else None
        new, y = _pair("scan", "f", f(carry, x))
        carry = _checked_carry("scan", "f", init, new)
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys or ys[0] is None:
        return carry, None
    columns = zip(*[tree.flatten(y) for y in ys])
    return carry, tree.unflatten(ys[0], [stack(list(c)) for c in columns])


class _LoopSignature:
    """What trace_call reads of a signature: the leaves' types and each argument's range."""

    def __init__(self, types, ranges):
        self.types, self.ranges = types, ranges


def _scan_staged(f, init, xs, n, reverse, construct="scan", fname="f"):
    init_leaves = tree.flatten(init)
    x_leaves = tree.flatten(xs) if xs is not None else []
    carry_types = _types(init_leaves)
    x_types = [ir.TensorType(t.shape[1:], t.dtype) for t in _types(x_leaves)]
    nc, nx = len(carry_types), len(x_types)
    sig = _LoopSignature(carry_types + x_types, [(0, nc), (nc, nc + nx) if xs is not None else None])
    y_is_none = []

    def body(carry, x):
        new, y = _pair(construct, fname, f(carry, x))
        _checked_carry(construct, fname, init, new)
        y_is_none.append(y is None)
        return new, (() if y is None else y)

    traced = trace_call(body, (init, xs), sig, f"{construct} {fname}")
    carry_skel, y_skel = traced.out_skeleton
    leaves = init_leaves + x_leaves
    builder = current_builder(leaves)
    atoms = [_atom(x, t.dtype) for x, t in zip(leaves, sig.types)] + list(traced.captured)
    params = {"body": traced.fn, "length": n, "reverse": bool(reverse), "n_carry": nc, "n_xs": nx}
    outs = [Tensor(sym=ir.Sym(v, builder)) for v in builder.bind(scan_p, atoms, params)]  # one equation
    carry = tree.unflatten(carry_skel, outs[:nc])
    return carry, (None if y_is_none[0] else tree.unflatten(y_skel, outs[nc:]))


def while_loop(cond_fun, body_fun, init_val):
    """`while cond_fun(val): val = body_fun(val)`; returns the final val.

    Like JAX's lax.while_loop, traced once and compiled as one native loop
    whose trip count depends on the data. Unlike JAX's, it differentiates
    in reverse mode too, exactly: the forward loop pushes the carries
    entering each step on a stack that grows at run time and the backward
    loop pops them (n steps cost n body evaluations, n body VJPs and the
    memory of n carries); forward mode carries the tangents along. Under vmap, lanes whose condition
    turns false keep their value while the others go on.

    Args:
      cond_fun: `val -> bool scalar`.
      body_fun: `val -> val`, keeping val's structure, shapes and dtypes.
      init_val: the initial value (a pytree of arrays).

    Returns:
      The value once cond_fun is false (init_val if it is false at once).

    Raises:
      TypeError: cond_fun does not return a boolean scalar, or body_fun
        changes val's structure, shape or dtype (naming the leaf and both types).

    Example::

        >>> halve = lambda v: gt.while_loop(lambda x: x > 1.0, lambda x: x * 0.5, v)
        >>> float(halve(10.0)), float(gt.grad(halve)(10.0))
        (0.625, 0.0625)
    """
    leaves = tree.flatten(init_val)
    if not in_trace() and not any(_abstract(a) for a in leaves):
        val = init_val
        while True:
            pred = cond_fun(val)
            _check_scalar("while_loop", "cond_fun's result", pred, "b", "a boolean scalar")
            if not bool(_value(pred)):
                return val
            val = _checked_carry("while_loop", "body_fun", init_val, body_fun(val))
    types = _types(leaves)
    nc = len(types)
    sig = _LoopSignature(types, [(0, nc)])

    def checked_cond(val):
        pred = cond_fun(val)
        _check_scalar("while_loop", "cond_fun's result", pred, "b", "a boolean scalar")
        return pred

    def checked_body(val):
        return _checked_carry("while_loop", "body_fun", init_val, body_fun(val))

    traced_cond = trace_call(checked_cond, (init_val,), sig, "while_loop cond_fun")
    traced_body = trace_call(checked_body, (init_val,), sig, "while_loop body_fun")
    captured = list(traced_cond.captured)
    captured += [c for c in traced_body.captured if c not in captured]
    cond = _with_inputs(traced_cond.fn, nc, traced_cond.captured, captured)
    body = _with_inputs(traced_body.fn, nc, traced_body.captured, captured)
    if cond.outvars[0].type.dtype != np.bool_:  # a Python bool result is a Literal
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got {cond.outvars[0].type}")
    builder = current_builder(leaves)
    atoms = [_atom(x, t.dtype) for x, t in zip(leaves, types)] + captured
    params = {"cond": cond, "body": body, "n_carry": nc}
    outs = [Tensor(sym=ir.Sym(v, builder)) for v in builder.bind(while_p, atoms, params)]  # one equation
    return tree.unflatten(traced_body.out_skeleton, outs)


# --- checkpointing -----------------------------------------------------------------------------

def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """`fun`, whose intermediates reverse mode recomputes instead of storing (JAX's jax.checkpoint).

    Traced, a call of the result is one `checkpoint` equation holding fun's
    Function, with one output per output leaf; its derivatives are checkpoints of fun's
    derivatives that compute fun's forward values again, so between the
    forward and the backward pass only fun's arguments are kept. Eagerly
    (on a GradientTape) fun runs as it is.

    Args:
      fun: a function of arrays (pytrees allowed) returning arrays.
      prevent_cse, policy: accepted for JAX compatibility; gradtape never
        merges the recomputation with the forward pass, and saves nothing
        of fun's intermediates (policy must be None).
      static_argnums: positions of arguments passed to fun as they are
        (hashable Python values), not traced.

    Returns:
      A function with fun's signature.

    Raises:
      TypeError: `policy` is not None.

    Example::

        >>> f = gt.checkpoint(lambda x: gt.sin(gt.sin(x)))
        >>> round(float(gt.grad(f)(1.0)), 6)    # cos(sin 1) cos 1
        0.360039
    """
    if policy is not None:
        raise TypeError(f"checkpoint: policy must be None (gradtape saves none of fun's intermediates), got {policy!r}")
    static = frozenset(static_argnums if isinstance(static_argnums, (tuple, list)) else (static_argnums,))
    name = getattr(fun, "__name__", "function")

    def checkpointed(*args):
        sig = describe(args, static, f"checkpoint({name})")
        if not in_trace() and not sig.abstract:
            return fun(*args)
        traced = trace_call(fun, args, sig, f"checkpoint({name})")
        builder = current_builder(sig.leaves)
        atoms = [_atom(x, t.dtype) for x, t in zip(sig.leaves, sig.types)] + list(traced.captured)
        outs = [Tensor(sym=ir.Sym(v, builder)) for v in builder.bind(checkpoint_p, atoms, {"fn": traced.fn})]
        return tree.unflatten(traced.out_skeleton, outs)

    checkpointed.__name__ = f"checkpoint_{name}"
    checkpointed.__doc__ = fun.__doc__
    return checkpointed


remat = checkpoint
