"""What one GradientTape has recorded: equations over Vars, the values and
tensors those Vars stand for, and the structure of the recording.

Tensors are keyed by id(); the recording keeps every recorded tensor alive,
so an id is never reused while the recording lives.

The structure (`Recording.structure`) is the recording with the values left
out: one entry per Var, in the order the Vars were made,

    leaf:      (type, kind)                       kind: "watched", "constant" or "variable"
    equation:  (op, params, out_type, *inputs)    an input is the position of a Var
                                                  or the exact bytes of a scalar literal

Two recordings with equal structures record the same program, so the
backward function built for one serves the other (see backward_cache.py).
It is built while recording, on the hot path of every eager op, so an entry
is one tuple, positions are read off the Vars themselves, and params stay
the op's own dict until `structure_key()` turns them into items (a tuple of
items per op measurably slowed recording). A `call`'s Function enters by its
value key (function_key.py); a `custom_gradient` makes the recording
uncacheable.
"""
from __future__ import annotations

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


# (op, input types, params) -> the shape rule's answer. A training loop records
# the same few hundred ops every step; looking their types up is several times
# cheaper than running the rules, and equal structures then share type objects.
_out_types: dict = {}
_MAX_OUT_TYPES = 1 << 16


_types: dict = {}  # (shape, dtype) -> TensorType, for the leaves of recordings


def _type_of(shape, dtype) -> ir.TensorType:
    ty = _types.get((shape, dtype))
    if ty is None:
        ty = ir.TensorType(shape, dtype)
        if len(_types) >= _MAX_OUT_TYPES:
            _types.clear()
        _types[(shape, dtype)] = ty
    return ty


def _out_type(op, types, params) -> ir.TensorType:
    """shape_rules[op](*types, **params), memoized (errors are raised, never stored)."""
    if op in _OPS_WITH_OBJECT_PARAMS:
        return shape_rules[op](*types, **params)
    key = (op, *types, *params.items()) if params else (op, *types)
    try:
        out = _out_types.get(key)
    except TypeError:  # an unhashable param: the rule says what it thinks of it
        return shape_rules[op](*types, **params)
    if out is None:
        out = shape_rules[op](*types, **params)
        if len(_out_types) >= _MAX_OUT_TYPES:
            _out_types.clear()
        _out_types[key] = out
    return out


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
        "versions", "keepalive", "snapshots", "vars", "structure", "with_params",
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
        self.with_params = []  # positions of the entries whose params are still a dict
        # Why the structure cannot key a cache (a custom_gradient's grad_fn
        # closes over this step's values), or None.
        self.uncacheable = None
        # Whether some recorded values are PendingTensors (deferred.py): the
        # backward then recomputes the forward rather than reading them.
        self.deferred = False

    def _leaf(self, tensor: Tensor, kind: str) -> ir.Var:
        ty = _type_of(tensor.shape, tensor.dtype)
        v = RecordedVar(ty, len(self.vars))
        self.vars.append(v)
        self.structure.append((ty, kind))
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
        # The structure entry (op, params, out_type, *inputs), grown as a list:
        # the cheapest way to build it.
        entry = [op, None, None]
        var_of = self.var_of
        for a in args:
            if isinstance(a, Tensor):
                v = var_of.get(id(a))
                # A tracked tensor's Var, looked up once; a Variable's only while
                # its Var is current (_tensor_atom handles the rest).
                if v is None or (isinstance(a, Variable) and self.versions.get(id(a)) != a._version):
                    v = self._tensor_atom(a)
                entry.append(v.index)
            else:
                value = np.asarray(a)
                if value.ndim == 0:
                    key = (value.dtype, value.tobytes())
                    v = _literal(value, key)
                    entry.append(key)
                else:
                    v = self._leaf(Tensor(value), CONSTANT)
                    entry.append(v.index)
            atoms.append(v)
        out_type = _out_type(op, [a.type for a in atoms], params)
        vars_ = self.vars
        out = RecordedVar(out_type, len(vars_))
        vars_.append(out)
        if not params:
            entry[1] = ()
        elif op in _OPS_WITH_OBJECT_PARAMS:
            entry[1] = self._params_key(op, params)
        else:
            # The dict itself: structure_key() makes it hashable, off the hot path.
            entry[1] = params
            self.with_params.append(len(self.structure))
        entry[2] = out_type
        self.structure.append(tuple(entry))
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
        """The structure as one hashable tuple.

        Raises:
          TypeError: if a param is unhashable (then nothing can be cached).
        """
        entries = list(self.structure)
        for i in self.with_params:
            op, params, *rest = entries[i]
            entries[i] = (op, tuple(params.items()), *rest)
        return tuple(entries)

    def value(self, v: ir.Var):
        snap = self.snapshots.get(v)
        return self.tensor_of[v]._value if snap is None else snap
