"""custom_gradient: a function whose gradient is given by the user, as tf.custom_gradient.

`f(*xs)` returns `(y, grad_fn)`. How a call is recorded depends on where it runs:

  - Inside a trace (an abstract argument: staged functions, grad, vmap,
    make_ir): f, then grad_fn on symbolic cotangents, are traced into
    Functions and each output becomes a `custom_vjp` equation, the op of
    gradtape.custom_vjp (gradtape/ir/ops/custom.py). The residuals are the
    values of f's trace that grad_fn reads. So staged functions using it
    compile to native code, differentiate to any order, and vectorize.
  - Eagerly while a tape records: f is traced the same way (its values are
    the trace evaluated by the reference interpreter) and each output is
    recorded as a `custom_gradient` equation holding that trace; grad_fn is
    traced when a gradient is asked for. Its VJP is custom_vjp's: ordinary
    equations on the recorded inputs, so an outer tape differentiates
    through grad_fn, including through the values grad_fn closes over
    (second derivatives with nested tapes).
  - If f cannot be traced (Python control flow on values, `.numpy()`, ...),
    it runs eagerly instead, as in TensorFlow: grad_fn is traced on symbolic
    cotangents when a gradient is asked for, and the values it closes over
    are constants (an outer tape sees only its dependence on the cotangent).

Every rule of the `custom_gradient` op (custom_gradient_op.py) is custom_vjp's.
Forward mode (JVP) transposes grad_fn, which is linear in the cotangents,
as TensorFlow's ForwardAccumulator does for ops that have only a gradient:
forward and reverse mode agree, and Hessians are derivatives of grad_fn.
Values of an enclosing trace that f reads without receiving them as
arguments are constants for the custom gradient (TensorFlow's semantics for
captured tensors): they enter the equation through `stop_gradient`.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import ir
from ..ir.ops.custom import custom_vjp_call
from . import tape_stack, tree
from .custom_gradient_op import (RecordedCall, check_takes_variables, checked_gradients, custom_gradient_p,
                                 grad_fn_gradients)
from .custom_trace import CustomRuleError, build, free_vars, leaf_atom, paused_tapes, trace_piece
from .errors import TracerError
from .tensor import Tensor
from .trace_context import current_builder, in_trace
from .variable import Variable
from .variable_reads import VariableReads
from .variable_reads import active as active_variable_reads


class _Forward:
    """f traced on abstract inputs: its piece, outputs, grad_fn, and the traced
    values of enclosing functions it reads (`captured`)."""

    __slots__ = ("name", "piece", "y", "grad_fn", "variables", "variable_syms", "out_atoms", "captured", "fn",
                 "_vjp", "_memo")

    def __init__(self, f, in_types, name, arguments=()):
        self.name = name
        reads = VariableReads(as_inputs=True, exclude=arguments)  # the trainable Variables f reads
        self.piece = trace_piece(f, in_types, f"custom_gradient function '{name}'", reads)
        self.variables = tuple(reads.variables)  # piece.invars end with theirs
        self.variable_syms = reads.syms()
        self.y, self.grad_fn = _split_result(self.piece.out, name)
        check_takes_variables(self.grad_fn, self.variables, name)
        flat = tree.flatten(self.y)
        self.out_atoms = [leaf_atom(o, f"custom_gradient function '{name}'", f"output {k}")
                          for k, o in enumerate(flat)]
        self.captured = free_vars(self.piece, self.out_atoms)
        self.fn = build(self.piece, self.out_atoms, self.piece.invars + self.captured)
        self._vjp = None
        self._memo = {}  # the Functions of each output, made once (rule caches key on identity)

    @property
    def out_types(self) -> list:
        return [a.type for a in self.out_atoms]

    def output(self, k: int) -> ir.Function:
        """The Function of output k, of f's inputs and `captured`."""
        if ("output", k) not in self._memo:
            self._memo["output", k] = ir.select_outputs(self.fn, [k])
        return self._memo["output", k]

    def vjp_parts(self):
        """(fwd, bwd, wrt, captured): grad_fn traced, with f's values it reads as residuals.

        `captured` extends self.captured with values of enclosing traces that
        only grad_fn reads. Traced once, on first use.
        """
        if self._vjp is None:
            self._vjp = self._trace_grad_fn()
        return self._vjp

    def _trace_grad_fn(self):
        label = f"custom_gradient function '{self.name}'"
        types, in_types = self.out_types, [v.type for v in self.piece.invars]
        # grad_fn reading a Variable f read reads f's input for it (a residual)
        piece = trace_piece(lambda *cts: grad_fn_gradients(self.grad_fn, cts, types, in_types, self.variables,
                                                           self.name),
                            types, f"the grad_fn of {label}", VariableReads(known=self.variable_syms))
        wrt, atoms = checked_gradients(piece.out, [v.type for v in self.piece.invars], self.name)
        residuals = free_vars(piece, atoms)
        bwd = build(piece, atoms, residuals + piece.invars)
        defined = set(self.piece.invars) | {v for e in self.piece.builder.eqns for v in e.outvars}
        captured = self.captured + [r for r in residuals if r not in defined and r not in self.captured]
        fwd = build(self.piece, residuals, self.piece.invars + captured)
        return fwd, bwd, wrt, captured

    def vjp_params(self, k: int) -> dict:
        """The params of output k's custom_vjp equation (operands: f's inputs, then captures)."""
        if ("vjp", k) not in self._memo:
            fwd, bwd, wrt, captured = self.vjp_parts()
            fn = build(self.piece, [self.out_atoms[k]], self.piece.invars + captured)
            self._memo["vjp", k] = dict(fn=fn, fwd=fwd, bwd=bwd, wrt=wrt, index=k, name=self.name)
        return self._memo["vjp", k]


# --- the decorator -------------------------------------------------------------------
def custom_gradient(f):
    """Decorate `f(*xs) -> (y, grad_fn)` so that gradients of y use grad_fn.

    `grad_fn(*upstream)` receives one cotangent per output of f (with the
    output's shape) and returns one gradient per input of f (or None), each
    with its input's shape and dtype.

    If f reads trainable Variables (other than its arguments) with gradtape
    ops, as TensorFlow's form: `grad_fn(*upstream, variables=...)` receives
    them (in the order f first read them) and returns `(input_grads,
    variable_grads)`, one gradient per variable; tapes give the variables
    those gradients. A grad_fn that cannot take `variables` is a TypeError
    when f is called. grad_fn is written with gradtape
    functions, so it can itself be differentiated: by an outer tape (nested
    tapes give second derivatives, through the values grad_fn closes over
    too) or by grad/jvp/hessian when the function is staged. Inside staged
    functions it compiles to native code and vectorizes under vmap. Forward
    mode uses grad_fn transposed (it must be linear in the upstream
    cotangents, as a gradient is), so both modes agree.

    If f cannot be traced with abstract tensors (Python control flow on
    values, `.numpy()`), eager calls run it as TensorFlow does: then the
    values grad_fn closes over are constants for outer tapes.

    Raises:
      TypeError: f does not return `(Tensor or structure of Tensors, grad_fn)`,
        or it reads Variables and grad_fn has no `variables` keyword.
      CustomRuleError (a ValueError): grad_fn returns the wrong number of
        gradients, or one of the wrong shape or dtype (raised when the
        gradient is computed, or when a staged function is traced).

    Example::

        >>> @gradtape.custom_gradient
        ... def log1pexp(x):
        ...     e = gradtape.exp(x)
        ...     def grad_fn(upstream):
        ...         return upstream * (1 - 1 / (1 + e))
        ...     return gradtape.log(1 + e), grad_fn
        >>> x = gradtape.constant(100.0)
        >>> with gradtape.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = log1pexp(x)
        >>> float(tape.gradient(y, x))      # exp(100) / (1 + exp(100)) would overflow
        1.0

    With a Variable read inside, TensorFlow's `variables=` form::

        >>> w = gradtape.Variable(3.0)
        >>> @gradtape.custom_gradient
        ... def scale(x):
        ...     def grad_fn(upstream, variables=None):
        ...         return upstream * w, [gradtape.sum(upstream * x)]   # (input_grads, variable_grads)
        ...     return w * x, grad_fn
        >>> with gradtape.GradientTape() as tape:
        ...     y = gradtape.sum(scale(gradtape.constant([1.0, 2.0])))
        >>> float(tape.gradient(y, w))
        3.0
    """
    name = getattr(f, "__name__", "custom_gradient")

    @functools.wraps(f)
    def wrapper(*args):
        xs = [a if isinstance(a, Tensor) else Tensor(np.asarray(a)) for a in args]
        abstract = any(x.is_abstract for x in xs)
        # A trace in progress: f might read its values (then they are captured).
        if not abstract and not tape_stack.active() and not in_trace():
            with paused_tapes(), VariableReads(exclude=xs) as reads:
                y, grad_fn = _split_result(f(*xs), name)
            check_takes_variables(grad_fn, reads.variables, name)
            return y
        try:
            forward = _Forward(f, [ir.TensorType(x.shape, x.dtype) for x in xs], name, arguments=xs)
        except TracerError:
            if abstract:
                raise
            return _record_untraced(f, xs, name)
        if abstract or forward.captured:
            return _emit(forward, xs)
        return _record_traced(forward, xs)

    return wrapper


def _split_result(result, name):
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and callable(result[1])):
        raise TypeError(
            f"custom_gradient function '{name}' must return (Tensor or structure of Tensors, "
            f"grad_fn), got a {type(result).__name__}"
        )
    y, grad_fn = result
    if not all(isinstance(o, Tensor) for o in tree.flatten(y)):
        raise TypeError(
            f"custom_gradient function '{name}' must return (Tensor or structure of Tensors, grad_fn)"
        )
    return y, grad_fn


def _emit(forward: _Forward, xs):
    """Inside a trace: one custom_vjp equation per output, in the enclosing trace."""
    fwd, bwd, wrt, captured = forward.vjp_parts()
    builder = _enclosing_builder(xs, captured, forward.name)
    operands = [x._sym.atom if x.is_abstract else ir.Literal(x._value) for x in xs]
    operands += [_variable_operand(v) for v in forward.variables]
    syms = [ir.Sym(a, builder) for a in operands]
    # What f reads from enclosing traces is a constant for its custom gradient.
    syms += [ir.ops.stop_gradient(ir.Sym(v, builder)) for v in captured]
    outs = []
    for k in range(len(forward.out_atoms)):
        params = forward.vjp_params(k)
        outs.append(Tensor(sym=custom_vjp_call(syms, **params)))
    return tree.unflatten(forward.y, outs)


def _variable_operand(v: Variable):
    """The operand of the custom_vjp equation for a Variable f reads: in staged code a
    constant (its value now), unless an enclosing custom_gradient function reads it too."""
    reads = active_variable_reads()
    sym = reads.read(v) if reads is not None else None
    return sym.atom if sym is not None else ir.Literal(v._value)


def _enclosing_builder(xs, captured, name):
    builder = current_builder(xs)
    if builder is None:
        raise CustomRuleError(
            f"custom_gradient function '{name}' reads {len(captured)} traced value(s) of an "
            "enclosing function, but no trace is in progress to record it in; pass those values "
            "as arguments"
        )
    return builder


def _record_traced(forward: _Forward, xs):
    """Eager values from f's trace; each output recorded with that trace on every tape."""
    operands = [*xs, *forward.variables]  # the tapes read the Variables f read, and watch them
    values = ir.eval_function(forward.fn, [x._value for x in operands])
    outs = [Tensor(v) for v in values]
    in_types = [ir.TensorType(x.shape, x.dtype) for x in operands]
    call = RecordedCall(None, forward.grad_fn, forward.out_types, in_types, forward, forward.name,
                        variables=forward.variables)
    for tape in list(tape_stack.active()):
        for k, o in enumerate(outs):
            tape._record(custom_gradient_p, operands, {"call": call, "index": k}, o)
    return tree.unflatten(forward.y, outs)


def _record_untraced(f, xs, name):
    """f ran eagerly (it could not be traced): grad_fn is the rule, as in TensorFlow."""
    with paused_tapes(), VariableReads(exclude=xs) as reads:
        y, grad_fn = _split_result(f(*xs), name)
    check_takes_variables(grad_fn, reads.variables, name)
    outs = [Tensor(o._value) for o in tree.flatten(y)]  # new Tensors: an input returned as is keeps its place
    operands = [*xs, *reads.variables]
    in_types = [ir.TensorType(x.shape, x.dtype) for x in operands]
    call = RecordedCall(f, grad_fn, [ir.TensorType(o.shape, o.dtype) for o in outs], in_types, name=name,
                        variables=reads.variables)
    for tape in list(tape_stack.active()):
        for k, o in enumerate(outs):
            tape._record(custom_gradient_p, operands, {"call": call, "index": k}, o)
    return tree.unflatten(y, outs)
