"""What one GradientTape has recorded: equations over Vars, the values and
tensors those Vars stand for, and the structure of the recording.

Tensors are keyed by id(); the recording keeps every recorded tensor alive,
so an id is never reused while the recording lives.

The structure (`Recording.structure`) is the recording with the values left
out: one entry per Var, in the order the Vars were made,

    leaf:      (type id, kind)                    kind: "watched", "constant" or "variable"
    equation:  (signature id, *inputs)            an input is the position of a Var
                                                  or the exact bytes of a scalar literal

A signature id stands for (op, input types, params), the key under which
the op's shape rule answer is memoized, and a type id for a leaf's type:
small ints handed out once per distinct key and never reused, so entries
hash and compare in C. Ops whose params hold objects (a `call`'s Function,
a custom_gradient's callback) enter as (op, params key, out_type, *inputs)
instead: a `call`'s Function by its value key (function_key.py); a
`custom_gradient` makes the recording uncacheable.

Two recordings with equal structures record the same program, so the
backward function built for one serves the other (see backward_cache.py).
It is built while recording, on the hot path of every eager op, so an
entry is one tuple and positions are read off the Vars themselves.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import ir
from ..ir.op import shape_rules
from ..ir.ops.call import call_p
from .custom_gradient import custom_gradient_p
from .deferred import PendingTensor
from .function_key import function_key
from .tensor import Tensor
from .variable import Variable

WATCHED, CONSTANT, VARIABLE = "watched", "constant", "variable"

# Ops whose params hold objects that do not compare by value (Functions, callbacks).
_OPS_WITH_OBJECT_PARAMS = frozenset((call_p, custom_gradient_p))

_literals: dict = {}


def _literal(value: np.ndarray, key) -> ir.Literal:
    """Scalar Literals are immutable, so the common ones (2.0, 1.0, ...) are shared.

    `key` is (dtype, bytes): exact, so -0.0 and 0.0 (whose gradients through
    a division differ in sign) and NaNs get Literals of their own.
    """
    lit = _literals.get(key)
    if lit is None:
        lit = ir.Literal(value)
        if len(_literals) < 4096:
            _literals[key] = lit
    return lit


# (op, input types, params) -> (the shape rule's answer, signature id). A
# training loop records the same few hundred ops every step; looking their
# types up is several times cheaper than running the rules, and the id makes
# the op's structure entry cheap to hash and compare.
_signatures: dict = {}
_types: dict = {}  # (shape, dtype) -> (TensorType, type id), for the leaves of recordings
_MAX_MEMO = 1 << 16
_ids = itertools.count()  # never reused, so a cleared memo cannot make two keys equal


def _type_of(shape, dtype) -> tuple:
    """(TensorType, type id) for a leaf."""
    hit = _types.get((shape, dtype))
    if hit is None:
        if len(_types) >= _MAX_MEMO:
            _types.clear()
        hit = _types[(shape, dtype)] = (ir.TensorType(shape, dtype), next(_ids))
    return hit


def _signature(op, types, params) -> tuple:
    """(shape_rules[op](*types, **params), signature id), memoized; errors are raised, never
    stored. The id is None when the params cannot key the memo (then neither can they key
    a structure entry by id)."""
    if op in _OPS_WITH_OBJECT_PARAMS:
        return shape_rules[op](*types, **params), None
    key = (op, *types, *params.items()) if params else (op, *types)
    try:
        hit = _signatures.get(key)
    except TypeError:  # an unhashable param: the rule says what it thinks of it
        return shape_rules[op](*types, **params), None
    if hit is None:
        out = shape_rules[op](*types, **params)
        if len(_signatures) >= _MAX_MEMO:
            _signatures.clear()
        hit = _signatures[key] = (out, next(_ids))
    return hit


class RecordedVar(ir.Var):
    """A Var made by a recording; `index` is its position in the recording's
    structure, so recordings of the same program number their Vars alike."""

    __slots__ = ("index",)

    def __init__(self, type, index: int):
        self.type = type
        self.index = index


class Recording:
    __slots__ = (
        "eqns", "var_of", "const_of", "tensor_of", "leaves", "sources", "variables",
        "versions", "keepalive", "snapshots", "vars", "structure",
        "uncacheable", "deferred",
    )

    def __init__(self):
        self.eqns = []  # recorded equations, in execution order
        self.var_of = {}  # id(tensor) -> Var, for watched tensors and results of recorded ops
        # id(tensor) -> Var, for unwatched inputs of recorded ops. Kept apart
        # from var_of so that a constant does not become "tracked" (and make
        # later ops on constants alone recorded) just by meeting a watched tensor.
        self.const_of = {}
        self.tensor_of = {}  # Var -> Tensor (its forward value)
        self.leaves = []  # Vars not defined by an equation: sources and constants
        self.sources = {}  # id(tensor) -> [Var, ...] watched Vars (a variable re-read after assign gets a new one)
        self.variables = []  # watched Variables, in the order they were watched
        self.versions = {}  # id(variable) -> its version when its current Var was made
        self.keepalive = []  # tensors whose id() keys var_of, const_of or sources
        self.snapshots = {}  # Var of a variable read -> the value that read saw
        self.vars = []  # every RecordedVar, by index
        self.structure = []  # one entry per RecordedVar (see the module docstring)
        # Why the structure cannot key a cache (a custom_gradient's grad_fn
        # closes over this step's values), or None.
        self.uncacheable = None
        # Whether some recorded values are PendingTensors (deferred.py): the
        # backward then recomputes the forward rather than reading them.
        self.deferred = False

    def _leaf(self, tensor: Tensor, kind: str) -> ir.Var:
        ty, type_id = _type_of(tensor.shape, tensor.dtype)
        v = RecordedVar(ty, len(self.vars))
        self.vars.append(v)
        self.structure.append((type_id, kind))
        self.tensor_of[v] = tensor
        if isinstance(tensor, Variable):
            # A later assign must not change what this read saw.
            self.snapshots[v] = tensor._value
        self.leaves.append(v)
        return v

    def watch(self, tensor: Tensor):
        key = id(tensor)
        if self.is_tracked(tensor):
            # Already watched, or computed by a recorded op: as in TF, watching
            # it again must not cut it off from what it was computed from.
            return
        v = self.const_of.pop(key, None)
        if v is None or isinstance(tensor, Variable):
            # A constant already used keeps its Var, so those earlier uses count
            # too (TF tracks tensors by id). A Variable's earlier unwatched reads
            # do not: TF watches the variable, not the values already read.
            v = self._leaf(tensor, VARIABLE if isinstance(tensor, Variable) else WATCHED)
        self.var_of[key] = v
        self.sources.setdefault(key, []).append(v)
        if isinstance(tensor, Variable):
            self.versions[key] = tensor._version
            if not any(w is tensor for w in self.variables):
                self.variables.append(tensor)
        self.keepalive.append(tensor)

    def _stale(self, tensor) -> bool:
        return isinstance(tensor, Variable) and self.versions.get(id(tensor)) != tensor._version

    def is_tracked(self, tensor: Tensor) -> bool:
        return id(tensor) in self.var_of and not self._stale(tensor)

    def input_atom(self, a):
        """The Var or Literal standing for the operand `a` of a recorded op."""
        if isinstance(a, Tensor):
            return self._tensor_atom(a)
        value = np.asarray(a)
        if value.ndim == 0:
            return _literal(value, (value.dtype, value.tobytes()))
        return self._leaf(Tensor(value), CONSTANT)

    def _tensor_atom(self, a: Tensor) -> RecordedVar:
        key = id(a)
        if self.is_tracked(a):
            return self.var_of[key]
        if key in self.sources:  # a watched variable read after an assign
            self.watch(a)
            return self.var_of[key]
        v = self.const_of.get(key)
        if v is None or (isinstance(a, Variable) and self.snapshots[v] is not a._value):
            # An untracked tensor enters as a constant input.
            v = self._leaf(a, VARIABLE if isinstance(a, Variable) else CONSTANT)
            self.const_of[key] = v
            self.keepalive.append(a)
        return v

    def record(self, op, args, params, result: Tensor):
        """Record `result = op(*args, **params)`; returns the result's type (from the shape rule).

        Raises the shape rule's error for operands the op does not accept.
        """
        atoms = []
        inputs = []  # the structure entry's inputs
        var_of = self.var_of
        for a in args:
            if isinstance(a, Tensor):
                v = var_of.get(id(a))
                # A tracked tensor's Var, looked up once; a Variable's only while
                # its Var is current (_tensor_atom handles the rest).
                if v is None or (isinstance(a, Variable) and self.versions.get(id(a)) != a._version):
                    v = self._tensor_atom(a)
                inputs.append(v.index)
            else:
                value = np.asarray(a)
                if value.ndim == 0:
                    key = (value.dtype, value.tobytes())
                    v = _literal(value, key)
                    inputs.append(key)
                else:
                    v = self._leaf(Tensor(value), CONSTANT)
                    inputs.append(v.index)
            atoms.append(v)
        out_type, signature_id = _signature(op, [a.type for a in atoms], params)
        vars_ = self.vars
        out = RecordedVar(out_type, len(vars_))
        vars_.append(out)
        if signature_id is not None:
            self.structure.append((signature_id, *inputs))
        elif op in _OPS_WITH_OBJECT_PARAMS:
            self.structure.append((op, self._params_key(op, params), out_type, *inputs))
        else:  # unhashable params: no cache can hold this recording
            self.uncacheable = f"an unhashable parameter of {op.name}"
            self.structure.append((op, None, out_type, *inputs))
        self.eqns.append(ir.Eqn(op, atoms, params, (out,)))
        var_of[id(result)] = out
        self.tensor_of[out] = result
        if result.__class__ is PendingTensor:
            self.deferred = True
        return out_type

    def _params_key(self, op, params) -> tuple:
        if op is call_p:
            fn_key = function_key(params["fn"])
            if fn_key is None:
                self.uncacheable = "a call of a Function holding a custom_gradient"
            return tuple((k, fn_key if k == "fn" else p) for k, p in params.items())
        if op is custom_gradient_p:
            # The identity of grad_fn is no key: it is a new closure every
            # step, and the backward function bakes in the values it closes over.
            self.uncacheable = "a custom_gradient"
            return ()
        return tuple(params.items())

    def structure_key(self) -> tuple:
        """The structure as one hashable tuple."""
        return tuple(self.structure)

    def value(self, v: ir.Var):
        snap = self.snapshots.get(v)
        return self.tensor_of[v]._value if snap is None else snap
