"""Ops and the rule tables keyed by them.

An op is one object. Everything the IR knows about it lives in tables keyed
by the op, filled side by side where the op is declared (gradtape/ir/ops/):

    shape_rules[op](*in_types, **params) -> TensorType      pure, never sees data
    impls[op](*arrays, **params) -> np.ndarray             the NumPy reference
    vjp_rules[op](ct, out, *ins, **params) -> (ct_in, ...)  builds IR, never numbers
    jvp_rules[op](tangents, out, *ins, **params) -> t_out   builds IR, never numbers
    batching_rules[op](axis_size, ins, batched, **params) -> out   builds IR (see below)

Rules receive `Sym`s (see builder.py) and emit equations by calling op
functions on them, so the derivative of a derivative is the same pass again.
A rule returns None for a symbolic zero. For elementwise ops (NumPy
broadcasting between operands) a VJP rule returns cotangents of the
*output's* shape and the adjoint pass sums them back to each operand's
shape, which is also where it applies `where`-masks.

A batching rule (used by the vectorization pass, batching.py) receives the
operands as Syms and, per operand, whether it carries a leading batch axis
of length `axis_size` (`batched[i]`); it returns the op applied to every
batch element, as one Sym with the batch axis leading. At least one operand
is batched; the others are shared by every batch element.

Facts about an op, which passes read instead of keeping lists of op names,
are attributes of the op, declared when it is created (`new_op`):

    elementwise         NumPy broadcasting between operands, out[i] depends on
                        the operands at i only (adjoint sums cotangents back,
                        constant folding and splats, sparsity)            required
    can_fail_on_values  its reference may raise on values its shape rule
                        accepts (indices out of range): eager tapes compute
                        it at once instead of deferring it                 required
    runs_code           its reference runs code held in its params (a
                        sub-Function, Python callbacks): may be costly,
                        raise or have side effects, so it is not deferred
                        and not evaluated speculatively                   required
    differentiable      gradients flow through it (False: no VJP/JVP rules,
                        e.g. comparisons, argmax, stop_gradient)           True
    zero_derivative     differentiable, but the derivative is 0 almost
                        everywhere (floor, sign): no dependency for sparsity False
    commutative         op(x, y) == op(y, x): CSE matches either order     False
    left_identity,      e such that op(e, x) == x (resp. op(x, e) == x) for
    right_identity      every x: the simplifier drops the op              None
    data_movement       every output element is an operand element or a
                        constant, which one depending on shapes and params
                        only (reshape, slice, pad): sparsity runs the
                        reference on element ids                          False
    cheap               (elementwise) an element costs about one
                        instruction: fused readers recompute it rather
                        than store it                                     False
    applies_fn          its value is params["fn"] (a Function) applied to
                        its operands (call, custom_vjp, custom_jvp): code
                        generation inlines it (inline_calls.py)           False

Ops whose outputs are not floating point (comparisons, argmax, ...) carry no
derivative: they are declared `differentiable=False` instead of having
rules, and gradients do not flow through them. tests/ir/test_op_facts.py
checks that every op declares every fact and has every rule its facts call for.
"""
from __future__ import annotations

from .errors import MissingRuleError

# The facts every Op carries (see the module docstring), in declaration order.
FACTS = (
    "elementwise",
    "can_fail_on_values",
    "runs_code",
    "differentiable",
    "zero_derivative",
    "commutative",
    "left_identity",
    "right_identity",
    "data_movement",
    "cheap",
    "applies_fn",
)
_FLAGS = tuple(f for f in FACTS if not f.endswith("_identity"))


class Op:
    """A primitive operation of the IR, identified by object identity.

    Its facts (`FACTS`) are read-only attributes, set once by `new_op`.
    """

    __slots__ = ("name",) + FACTS

    def __init__(self, name: str, **facts):
        object.__setattr__(self, "name", name)
        for fact in FACTS:
            object.__setattr__(self, fact, facts[fact])

    def __setattr__(self, attr, value):
        raise AttributeError(f"op '{self.name}': facts are declared once, in new_op (tried to set {attr})")

    def __repr__(self):
        return self.name

    def __reduce__(self):
        # Ops are compared by identity: an unpickled Function must hold this process's op of that name.
        return (_op_named, (self.name,))


def _op_named(name: str) -> "Op":
    """The registered op called `name` (unpickling a Function)."""
    try:
        return all_ops[name]
    except KeyError:
        raise ValueError(f"unpickling an ir.Function: this gradtape has no op {name!r}; "
                         "send it to a process running the same gradtape version") from None


shape_rules: dict = {}
impls: dict = {}
vjp_rules: dict = {}
jvp_rules: dict = {}
batching_rules: dict = {}
all_ops: dict = {}
# Ops whose equations have several outputs (a cond of several results, one equation):
# the shape rule returns a tuple of types, the reference a list of values, and the
# derivative and batching rules take and return one entry per output (see core.py).
multiple_results: set = set()


def new_op(
    name: str,
    *,
    elementwise: bool,
    can_fail_on_values: bool,
    runs_code: bool,
    differentiable: bool = True,
    zero_derivative: bool = False,
    commutative: bool = False,
    left_identity=None,
    right_identity=None,
    data_movement: bool = False,
    cheap: bool = False,
    applies_fn: bool = False,
) -> Op:
    """Declare an op with its facts; its rules are filled in by the caller right after.

    The facts without a safe default (a wrong guess would compute wrong
    values or raise errors late) are required keywords.

    Args:
      name: the op's name, unique (the printer and error messages use it).
      elementwise, can_fail_on_values, runs_code, differentiable,
      zero_derivative, commutative, data_movement, cheap, applies_fn: bools, see the
        module docstring.
      left_identity, right_identity: a scalar e with op(e, x) == x (resp.
        op(x, e) == x) for every x, or None.

    Returns:
      The new Op, also registered in `all_ops[name]`.

    Raises:
      ValueError: an op of that name exists already.
      TypeError: a flag is not a bool.

    Example::

        >>> hypot_p = new_op("hypot", elementwise=True, can_fail_on_values=False,
        ...                  runs_code=False, commutative=True)
    """
    if name in all_ops:
        raise ValueError(f"an op named {name!r} is already declared")
    facts = dict(
        elementwise=elementwise,
        can_fail_on_values=can_fail_on_values,
        runs_code=runs_code,
        differentiable=differentiable,
        zero_derivative=zero_derivative,
        commutative=commutative,
        left_identity=left_identity,
        right_identity=right_identity,
        data_movement=data_movement,
        cheap=cheap,
        applies_fn=applies_fn,
    )
    for fact in _FLAGS:
        if type(facts[fact]) is not bool:
            raise TypeError(f"new_op {name!r}: fact {fact} must be True or False, got {facts[fact]!r}")
    if zero_derivative and not differentiable:
        raise ValueError(
            f"new_op {name!r}: zero_derivative is for differentiable ops whose derivative is 0; "
            "a nondifferentiable op (differentiable=False) has no derivative at all"
        )
    op = Op(name, **facts)
    all_ops[name] = op
    return op


def rule(table: dict, op: Op, kind: str):
    """Look a rule up, failing with a message that names the op and the rule kind."""
    try:
        return table[op]
    except KeyError:
        raise MissingRuleError(f"op '{op.name}' has no {kind} rule") from None
