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

_literals: dict = {}  # (dtype, bytes) -> (Literal, type id)


def _literal(value) -> tuple:
    """(Literal, structure key, type id) of a 0-d operand. Scalar Literals are immutable, so
    the common ones (2.0, 1.0, ...) are shared.

    The key is (dtype, bytes): exact, so -0.0 and 0.0 (whose gradients through
    a division differ in sign) and NaNs get Literals of their own.
    """
    key = (value.dtype, value.tobytes())
    hit = _literals.get(key)
    if hit is None:
        lit = ir.Literal(value)
        hit = (lit, _type_of((), value.dtype)[1])
        if len(_literals) < 4096:
            _literals[key] = hit
    return hit[0], key, hit[1]


# (op, input type ids, params) -> (the shape rule's answer, signature id, its
# type id). A training loop records the same few hundred ops every step;
# looking their types up is several times cheaper than running the rules,
# and the ids make the op's structure entry cheap to hash and compare.
_signatures: dict = {}
_types: dict = {}  # (shape, dtype) -> (TensorType, type id)
_MAX_MEMO = 1 << 16
_ids = itertools.count()  # never reused, so a cleared memo cannot make two keys equal


def _type_of(shape, dtype) -> tuple:
    """(TensorType, type id): equal types get equal ids."""
    hit = _types.get((shape, dtype))
    if hit is None:
        if len(_types) >= _MAX_MEMO:
            _types.clear()
        hit = _types[(shape, dtype)] = (ir.TensorType(shape, dtype), next(_ids))
    return hit


def _signature(op, atoms, type_ids, params) -> tuple:
    """(shape_rules[op](*types, **params), signature id, result type id), memoized; errors
    are raised, never stored. The signature id is None when the params cannot key the memo
    (then neither can they key a structure entry by id)."""
    if op in _OPS_WITH_OBJECT_PARAMS:
        return _unkeyed(op, atoms, params)
    key = (op, *type_ids, *params.items()) if params else (op, *type_ids)
    try:
        hit = _signatures.get(key)
    except TypeError:  # an unhashable param: the rule says what it thinks of it
        return _unkeyed(op, atoms, params)
    if hit is None:
        out, out_id = _checked(op, atoms, params)
        if len(_signatures) >= _MAX_MEMO:
            _signatures.clear()
        hit = _signatures[key] = (out, next(_ids), out_id)
    return hit


def _unkeyed(op, atoms, params) -> tuple:
    out, out_id = _checked(op, atoms, params)
    return out, None, out_id


def _checked(op, atoms, params) -> tuple:
    """(the result type of op on atoms, its type id) from the op's shape rule."""
    out = shape_rules[op](*[a.type for a in atoms], **params)
    return _type_of(out.shape, out.dtype)


class RecordedVar(ir.Var):
    """A Var made by a recording; `index` is its position in the recording's
    structure, so recordings of the same program number their Vars alike;
    `type_id` is its type's id (see `_type_of`)."""

    __slots__ = ("index", "type_id")

    def __init__(self, type, index: int, type_id: int):
        self.type = type
        self.index = index
        self.type_id = type_id


class Recording:
    __slots__ = (
        "_log", "_eqns", "var_of", "const_of", "tensor_of", "leaves", "sources", "variables",
        "versions", "keepalive", "snapshots", "vars", "structure",
        "uncacheable", "deferred",
    )

    def __init__(self):
        # (op, input atoms, params, output Var) per recorded op, in execution
        # order: what `eqns` is made of when a backward is built (not every step).
        self._log = []
        self._eqns = []
        self.var_of = {}  # id(tensor) -> Var, for watched tensors and results of recorded ops
        # id(tensor) -> Var, for unwatched inputs of recorded ops. Kept apart
        # from var_of so that a constant does not become "tracked" (and make
        # later ops on constants alone recorded) just by meeting a watched tensor.
        self.const_of = {}
        # Var -> its forward value: a Tensor, or the array itself for an array operand
        self.tensor_of = {}
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

    @property
    def eqns(self) -> list:
        """The recorded equations, in execution order."""
        eqns, log = self._eqns, self._log
        if len(eqns) < len(log):
            eqns.extend(ir.Eqn(op, atoms, params, (out,)) for op, atoms, params, out in log[len(eqns):])
        return eqns

    def _leaf(self, value, kind: str) -> RecordedVar:
        """A new leaf Var for `value` (a Tensor, or an array operand)."""
        ty, type_id = _type_of(value.shape, value.dtype)
        v = RecordedVar(ty, len(self.vars), type_id)
        self.vars.append(v)
        self.structure.append((type_id, kind))
        self.tensor_of[v] = value
        if kind is VARIABLE:
            # A later assign must not change what this read saw.
            self.snapshots[v] = value._value
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

    def is_tracked(self, tensor: Tensor) -> bool:
        key = id(tensor)
        return key in self.var_of and not (
            isinstance(tensor, Variable) and self.versions.get(key) != tensor._version)

    def _variable_read(self, a: Variable, watch_reads: bool):
        """The Var of a read of Variable `a` if the read is tracked (watching `a` first when
        it should be: trainable and `watch_reads`, or watched before an assign), else None."""
        key = id(a)
        v = self.var_of.get(key)
        if v is not None and self.versions.get(key) == a._version:
            return v
        # An explicitly watched variable stays watched after an assign,
        # trainable or not (TF watches the variable itself).
        if ((a.trainable and watch_reads) or key in self.sources) and a._value.dtype.kind == "f":
            self.watch(a)
            return self.var_of[key]
        return None

    def _constant(self, a: Tensor) -> RecordedVar:
        """The leaf of an untracked tensor operand (one per tensor; per value for a Variable)."""
        key = id(a)
        v = self.const_of.get(key)
        if v is None or (isinstance(a, Variable) and self.snapshots[v] is not a._value):
            v = self._leaf(a, VARIABLE if isinstance(a, Variable) else CONSTANT)
            self.const_of[key] = v
            self.keepalive.append(a)
        return v

    def _operands(self, args, watch_reads: bool):
        """(atoms, structure inputs, type ids, values) of an op on `args`, or None when no
        operand is tracked: then the op is not recorded. `values` are the operands as a
        deferred op keeps them (deferred.py): PendingTensors, arrays and scalars.

        Runs for every op while a tape records, so the common operands (results of
        recorded ops) take the first branch and nothing is made twice.
        """
        var_of = self.var_of
        found = []
        values = []
        tracked = False
        for a in args:
            cls = a.__class__
            if cls is PendingTensor:
                v = var_of.get(id(a))
                values.append(a if a._forced is None else a._forced)
            elif cls is Tensor:
                v = var_of.get(id(a))
                values.append(a._value)
            elif isinstance(a, Variable):
                v = self._variable_read(a, watch_reads)
                values.append(a._value)
            elif isinstance(a, Tensor):
                v = var_of.get(id(a)) if self.is_tracked(a) else None
                values.append(a._value)
            else:
                v = None
                values.append(a)
            if v is not None:
                tracked = True
            found.append(v)
        if not tracked:
            return None
        atoms, inputs, type_ids = [], [], []
        for a, v in zip(args, found):
            if v is None:
                if isinstance(a, Tensor):
                    v = self._constant(a)
                else:
                    value = a if isinstance(a, (np.ndarray, np.generic)) else np.asarray(a)
                    if value.ndim == 0:
                        lit, key, type_id = _literal(value)
                        atoms.append(lit)
                        inputs.append(key)
                        type_ids.append(type_id)
                        continue
                    v = self._leaf(value, CONSTANT)
            atoms.append(v)
            inputs.append(v.index)
            type_ids.append(v.type_id)
        return atoms, inputs, type_ids, values

    def record(self, op, args, params, result: Tensor, watch_reads: bool = True):
        """Record `result = op(*args, **params)` if an operand is tracked.

        Returns the result's type (from the shape rule), or None when nothing
        was recorded. Raises the shape rule's error for operands the op does
        not accept.
        """
        operands = self._operands(args, watch_reads)
        if operands is None:
            return None
        return self._append(op, params, operands, result)

    def defer(self, op, args, params, watch_reads: bool = True):
        """The PendingTensor of `op(*args, **params)`, recorded, or None when no operand is
        tracked (then the caller computes it at once). See deferred.py."""
        operands = self._operands(args, watch_reads)
        if operands is None:
            return None
        result = PendingTensor(op, operands[3], params)
        result._type = self._append(op, params, operands, result)
        self.deferred = True
        return result

    def _append(self, op, params, operands, result):
        atoms, inputs, type_ids, _ = operands
        out_type, signature_id, out_type_id = _signature(op, atoms, type_ids, params)
        vars_ = self.vars
        out = RecordedVar(out_type, len(vars_), out_type_id)
        vars_.append(out)
        if signature_id is not None:
            self.structure.append((signature_id, *inputs))
        elif op in _OPS_WITH_OBJECT_PARAMS:
            self.structure.append((op, self._params_key(op, params), out_type, *inputs))
        else:  # unhashable params: no cache can hold this recording
            self.uncacheable = f"an unhashable parameter of {op.name}"
            self.structure.append((op, None, out_type, *inputs))
        self._log.append((op, atoms, params, out))
        self.var_of[id(result)] = out
        self.tensor_of[out] = result
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
        """The forward value (an array) of a recorded Var."""
        snap = self.snapshots.get(v)
        if snap is not None:
            return snap
        t = self.tensor_of[v]
        return t if t.__class__ is np.ndarray else t._value

    def tensor(self, v: ir.Var) -> Tensor:
        """The forward value of a recorded Var as the Tensor the ops saw (a Tensor
        around it for an array operand)."""
        t = self.tensor_of[v]
        return Tensor(t) if t.__class__ is np.ndarray else t
