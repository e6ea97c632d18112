"""What one GradientTape has recorded, by position: the structure of the
recording, what each position stands for, and the IR made from them.

Tensors are keyed by id(); the recording keeps every recorded tensor alive,
so an id is never reused while the recording lives.

Every leaf (a watched tensor, a variable read, a constant operand) and every
recorded op's result has a position. The structure (`Recording.structure`)
is the recording with the values left out: one entry per position,

    leaf:      (type id, kind)                    kind: "watched", "constant" or "variable"
    op:        (signature id, *inputs)            an input is a position
                                                  or the exact bytes of a scalar literal

A signature id stands for (op, input types, params), the key under which
the op's shape rule answer is memoized, and a type id for a type: small
ints handed out once per distinct key and never reused, so entries hash and
compare in C. Ops whose params hold objects (a `call`'s Function, a
custom_gradient's callback) enter as (op, params key, out_type, *inputs)
instead: a `call`'s Function by its value key (function_key.py); a
`custom_gradient` makes the recording uncacheable.

Two recordings with equal structures record the same program, so the
backward function built for one serves the other (see backward_cache.py).
Recording is on the hot path of every eager op, so an op appends one entry
to three lists and one to a dict; the IR (Vars and Eqns) is made from them
only when a backward function is built. The C extension _crecord.c does
`Recording.record` step for step (`record` at the end of this module picks
it); this module stays the reference, and what is off the common path.
"""
from __future__ import annotations

import gc
import itertools
import threading

import numpy as np

from .. import ir
from ..gc_pause import gc_paused
from ..ir.op import Op, shape_rules
from ..ir.ops.call import call_p
from .c_view import crecord, id_positions, pure_python, slot_table
from .custom_gradient_op import custom_gradient_p
from .deferred import PendingTensor
from .function_key import function_key
from . import held_arrays
from .held_arrays import Held, check, hold
from .tensor import Tensor
from .variable import Variable
from .weak_registry import WeakRegistry

live = WeakRegistry()  # every Recording not yet freed
# .latest: a weak reference to the Recording this thread made last (value_plans.py reads its last
# value; per thread, so that no other thread records into it meanwhile, as tapes are per thread).
made_here = threading.local()
# What a freed Recording calls with its unread roots before letting go of its structure: value_plans.stash
# (which leaves a loss read later what a compiled plan needs), installed when that module is imported.
stash_remains = None
orphans = WeakRegistry()  # the unread PendingTensors of Recordings already freed

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
_MANY_POSITIONS = 4096  # made into equations with the collector paused (Recording.eqns)
_ids = itertools.count()  # never reused, so a cleared memo cannot make two keys equal


def _type_of(shape, dtype) -> tuple:
    """(TensorType, type id): equal types get equal ids."""
    hit = _types.get((shape, dtype))
    if hit is None:
        if not dtype.isnative:  # its TensorType is the native one's: so is its id
            return _type_of(shape, dtype.newbyteorder("="))
        if len(_types) >= _MAX_MEMO:
            _types.clear()
        hit = _types[(shape, dtype)] = (ir.TensorType(shape, dtype), next(_ids))
    return hit


def _signature(op, types_of, inputs, type_ids, params) -> tuple:
    """The signature memo's entry for op on inputs with these type ids: (result type, its
    type id, signature id, op, params), the result type from the op's shape rule (run on
    `types_of(inputs)` on a miss; its errors are raised, never stored). The signature id
    is None when the params cannot key the memo (nor, then, a structure entry by id)."""
    if op in _OPS_WITH_OBJECT_PARAMS:
        return _checked(op, types_of(inputs), params) + (None, op, params)
    key = (op, *type_ids, *params.items())
    try:
        hit = _signatures.get(key)
    except TypeError:  # an unhashable param: the rule says what it thinks of it
        return _checked(op, types_of(inputs), params) + (None, op, params)
    if hit is None:
        hit = _checked(op, types_of(inputs), params) + (next(_ids), op, params)
        if len(_signatures) >= _MAX_MEMO:
            _signatures.clear()
        _signatures[key] = hit
    return hit


def _checked(op, types, params) -> tuple:
    """(the result type of op on these input types, its type id) from the op's shape rule."""
    out = shape_rules[op](*types, **params)
    return _type_of(out.shape, out.dtype)


class RecordedVar(ir.Var):
    """A Var made from a recording; `index` is its position in the recording's
    structure, so recordings of the same program number their Vars alike;
    `type_id` is its type's id (see `_type_of`)."""

    __slots__ = ("index", "type_id")

    def __init__(self, type, index: int, type_id: int):
        self.type = type
        self.index = index
        self.type_id = type_id


class Recording:
    """What a tape recorded, by position (see the module docstring).

    Recording an op appends one entry to `structure`, `info` and `values`
    and nothing else: the IR (`vars`, `eqns`) is made from them only when a
    backward function is built, which a training loop does once.
    """

    __slots__ = (
        "structure", "info", "values", "var_of", "const_of", "leaves", "sources", "variables",
        "versions", "snapshots", "literals", "uncacheable", "deferred", "watched_integers", "held",
        "_vars", "_eqns", "_structure_key", "__weakref__",
    )

    def __init__(self):
        made_here.latest = live.add(self)  # t[i] = v retargets the tensors every live recording holds (rebind.py)
        self.structure = []  # per position (see the module docstring)
        # per position: (TensorType, type id) for a leaf; (TensorType, type id,
        # signature id, op, params) for an op's result (the signature memo's entry)
        self.info = []
        # per position: the value it stands for: a Tensor (a PendingTensor for a
        # deferred op), or the array itself for an array operand. It keeps every
        # tensor whose id() keys var_of, const_of or sources alive.
        self.values = []
        # id(tensor) -> position, for watched tensors and results of recorded ops (a dict, or the
        # extension's table keyed by address: c_view.id_positions)
        self.var_of = id_positions()
        # id(tensor) -> position, for unwatched inputs of recorded ops. Kept apart
        # from var_of so that a constant does not become "tracked" (and make
        # later ops on constants alone recorded) just by meeting a watched tensor.
        self.const_of = {}
        self.leaves = []  # positions not defined by an op: sources and constants
        self.sources = {}  # id(tensor) -> [position, ...] (a variable re-read after assign gets a new one)
        self.variables = []  # watched Variables, in the order they were watched
        # Watched Variables of a dtype without gradients (integers, bool), by id: TF watches
        # every trainable variable read, of any dtype; no op on them is recorded.
        self.watched_integers = {}
        self.versions = {}  # id(variable) -> its version when its current position was made
        self.snapshots = {}  # position of a variable read -> the array that read saw
        self.literals = {}  # structure key of a scalar operand -> its Literal
        # id(array) -> Held, for the arrays held here that their owner can still write
        # (held_arrays.py): checked before they are read again.
        self.held = {}
        # Why the structure cannot key a cache (a custom_gradient's grad_fn
        # closes over this step's values), or None.
        self.uncacheable = None
        # Whether some recorded values are PendingTensors (deferred.py): the
        # backward then recomputes the forward rather than reading them.
        self.deferred = False
        self._vars = self._eqns = self._structure_key = None  # made on first use

    def __del__(self):
        # Its pending values may outlive it (a loss a user keeps after the tape is gone): t[i] = v
        # must still find those that read t (rebind.py), so those that something else holds join
        # `orphans`, and rebind reaches the rest through their operands.
        try:
            roots = unread_roots(self.values)
            if stash_remains is not None:  # (first: `forget` may empty the structure)
                stash_remains(self, roots)
            forget(self)
            orphans.add_all(roots)
            keep_values(self, roots)
        except Exception:  # noqa: BLE001  (interpreter shutdown: module globals may be gone)
            pass

    # --- the IR, made when a backward is built ------------------------------------
    @property
    def vars(self) -> list:
        """A RecordedVar per position."""
        if self._vars is None:
            self._vars = []
        vars_, info = self._vars, self.info
        for p in range(len(vars_), len(info)):
            vars_.append(RecordedVar(info[p][0], p, info[p][1]))
        return vars_

    @property
    def eqns(self) -> list:
        """The recorded equations, in execution order."""
        if self._eqns is None:
            self._eqns = []
        eqns = self._eqns
        done = eqns[-1].outvars[0].index + 1 if eqns else 0  # the positions made before
        if len(self.info) - done < _MANY_POSITIONS:
            return self._more_eqns(done)
        # A long recording: the objects made here all live on, and the collections they would
        # set off walk the recording again and again (gc_pause.py). Paused, they are walked once
        # here, moved to the oldest generation, rather than by the passes that follow.
        with gc_paused():
            eqns = self._more_eqns(done)
        if gc.isenabled():  # (not when the program, or another thread's pass, turned it off)
            gc.collect(1)  # the young generations: what was just made, not the whole process
        return eqns

    def _more_eqns(self, done: int) -> list:
        """`_eqns` with the equations of positions `done` and after."""
        vars_, eqns = self.vars, self._eqns
        for p in range(done, len(vars_)):
            hit = self.info[p]
            if len(hit) == 2:  # a leaf
                continue
            entry = self.structure[p]
            inputs = entry[1:] if hit[2] is not None else entry[3:]
            atoms = [vars_[i] if type(i) is int else self.literals[i] for i in inputs]
            eqns.append(ir.Eqn(hit[3], atoms, hit[4], (vars_[p],)))
        return eqns

    def function(self, outputs) -> ir.Function:
        """The recorded program as a Function from the leaves to these recorded tensors
        (for inspecting what a tape saw)."""
        vars_ = self.vars
        return ir.Function([vars_[p] for p in self.leaves], self.eqns, [vars_[self.var_of[id(t)]] for t in outputs])

    # --- recording ------------------------------------------------------------------
    def _leaf(self, value, kind: str) -> int:
        """A new leaf position for `value` (a Tensor, or an array operand)."""
        hit = _type_of(value.shape, value.dtype)
        p = len(self.structure)
        self.structure.append((hit[1], kind))
        self.info.append(hit)
        self.values.append(value)
        if kind is VARIABLE:
            # A later assign must not change what this read saw.
            self.snapshots[p] = value._value
        self.leaves.append(p)
        return p

    def watch(self, tensor: Tensor):
        key = id(tensor)
        if self.is_tracked(tensor):
            # Already watched, or computed by a recorded op: as in TF, watching
            # it again must not cut it off from what it was computed from.
            return
        if isinstance(tensor, Variable):
            self._watch_variable(tensor, key)
            return
        # A constant already used keeps its position, so those earlier uses
        # count too (TF tracks tensors by id).
        p = self.const_of.pop(key, None)
        if p is None:
            p = self._leaf(tensor, WATCHED)
            if tensor.__class__ is not PendingTensor:  # (a pending value is computed by gradtape)
                hold(self, tensor._value, None)
        self.var_of[key] = p
        self.sources.setdefault(key, []).append(p)

    def _watch_variable(self, v: Variable, key: int) -> int:
        """Watch Variable `v` (not tracked now) from here on; returns its new position. Its
        earlier unwatched reads do not count: TF watches the variable, not the values already read."""
        self.const_of.pop(key, None)
        p = self._leaf(v, VARIABLE)
        self.var_of[key] = p
        reads = self.sources.get(key)
        if reads is None:
            self.sources[key] = [p]
            self.variables.append(v)  # first watched now (ids are stable: the list keeps v alive)
        else:
            reads.append(p)
        self.versions[key] = v._version
        return p

    def watch_integer_variable(self, v: Variable):
        """Watch Variable `v` of a dtype without gradients: it is one of the watched variables,
        and its reads stay constants (the C accelerator calls this too)."""
        self.watched_integers.setdefault(id(v), v)

    def is_tracked(self, tensor: Tensor) -> bool:
        key = id(tensor)
        return key in self.var_of and not (
            isinstance(tensor, Variable) and self.versions.get(key) != tensor._version)

    def carries_derivative(self, tensor: Tensor) -> bool:
        """Whether tracked `tensor` has a derivative to a watched source: a path of floating
        values through differentiable ops. What only stop_gradient, argmax or a comparison
        connects to the sources (recorded all the same) has none, so converting it to a
        constant loses nothing (conversions.py)."""
        if not self.is_tracked(tensor):
            return False
        structure, info = self.structure, self.info
        stack, seen = [self.var_of[id(tensor)]], set()
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            hit = info[p]
            if hit[0].dtype.kind not in "fc":
                continue
            if len(hit) == 2:  # a leaf
                if structure[p][1] is not CONSTANT:
                    return True
                continue
            op = hit[3]
            if op.differentiable and not op.zero_derivative:
                entry = structure[p]
                stack.extend(i for i in (entry[1:] if hit[2] is not None else entry[3:]) if type(i) is int)
        return False

    def _variable_read(self, a: Variable, watch_reads: bool):
        """The position of a read of Variable `a` if the read is tracked (watching `a` first
        when it should be: trainable and `watch_reads`, or watched before an assign), else None."""
        key = id(a)
        p = self.var_of.get(key)
        if p is not None and self.versions.get(key) == a._version:
            return p
        # An explicitly watched variable stays watched after an assign,
        # trainable or not (TF watches the variable itself).
        if (a.trainable and watch_reads) or key in self.sources:
            if a._value.dtype.kind in "fc":
                return self._watch_variable(a, key)
            self.watch_integer_variable(a)  # watched, as in TF, but nothing to differentiate
        return None

    def _constant(self, a: Tensor, op) -> int:
        """The leaf of an untracked tensor operand of `op` (one per tensor; per value for a Variable)."""
        key = id(a)
        p = self.const_of.get(key)
        if p is None or (isinstance(a, Variable) and self.snapshots[p] is not a._value):
            variable = isinstance(a, Variable)
            p = self._leaf(a, VARIABLE if variable else CONSTANT)
            self.const_of[key] = p
            if not variable and a.__class__ is not PendingTensor:
                hold(self, a._value, op)
        return p

    def record(self, op, args, params, result: Tensor | None = None, watch_reads: bool = True):
        """Record `result = op(*args, **params)` if an operand is tracked, and return the
        recorded tensor; or return None: no operand is tracked, or one is abstract (bind
        then traces the op), and nothing is recorded.

        With `result` None the op is deferred (deferred.py): the result is a new
        PendingTensor. Raises the shape rule's error for operands the op does not
        accept.

        This is the eager hot path. The operands most ops take (results of
        recorded ops) take the first branch, and nothing is made for them.
        """
        var_of, info = self.var_of, self.info
        inputs = []  # positions of tracked operands, None for the others (for now)
        type_ids = []
        tracked = reads_variable = False
        for a in args:
            cls = a.__class__
            if cls is PendingTensor:
                p = var_of.get(id(a))
            elif cls is Variable or (cls is not Tensor and isinstance(a, Variable)):
                p = self._variable_read(a, watch_reads)
                reads_variable = True
            elif cls is Tensor or isinstance(a, Tensor):
                if a._sym is not None:
                    return None
                p = var_of.get(id(a))
            else:
                p = None
            if p is None:
                type_ids.append(None)
            else:
                tracked = True
                type_ids.append(info[p][1])
            inputs.append(p)
        if not tracked:
            return None
        if None in inputs:
            self._constants(op, args, inputs, type_ids)
        try:
            hit = _signatures.get((op, *type_ids, *params.items()))
        except TypeError:
            hit = None
        if hit is None:
            hit = _signature(op, self._input_types, inputs, type_ids, params)
        if result is None:
            if reads_variable:  # the pending op must see the array the variable holds now
                args = [a._value if isinstance(a, Variable) else a for a in args]
            if self.held:  # its value is checked when computed
                args = held_operands(self.held, args)
            result = PendingTensor(op, args, params, hit[0])
            self.deferred = True
        structure = self.structure
        var_of[id(result)] = len(structure)
        structure.append((hit[2], *inputs) if hit[2] is not None else self._structure_entry(op, params, inputs, hit))
        info.append(hit)
        self.values.append(result)
        return result

    def _constants(self, op, args, inputs, type_ids):
        """Fill in `inputs` and `type_ids` (in place) for the untracked operands of `op`:
        they become leaves (tensors and arrays) or scalar Literals."""
        for i, a in enumerate(args):
            if inputs[i] is not None:
                continue
            if isinstance(a, Tensor):
                p = self._constant(a, op)
            else:
                value = a if isinstance(a, (np.ndarray, np.generic)) else np.asarray(a)
                if value is a and isinstance(a, np.ndarray):  # the caller's array, read later
                    hold(self, a, op)
                if value.ndim == 0:
                    lit, key, type_ids[i] = _literal(value)
                    self.literals[key] = lit
                    inputs[i] = key
                    continue
                p = self._leaf(value, CONSTANT)
            inputs[i] = p
            type_ids[i] = self.info[p][1]

    def _input_types(self, inputs) -> list:
        """The TensorTypes of a structure entry's inputs (for a shape rule)."""
        return [self.info[i][0] if type(i) is int else self.literals[i].type for i in inputs]

    def _structure_entry(self, op, params, inputs, hit) -> tuple:
        """The structure entry of an op whose params cannot key the signature memo."""
        if op in _OPS_WITH_OBJECT_PARAMS:
            return (op, self._params_key(op, params), hit[0], *inputs)
        # unhashable params: no cache can hold this recording
        self.uncacheable = f"an unhashable parameter of {op.name}"
        return (op, None, hit[0], *inputs)

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

    def append(self, other: "Recording") -> None:
        """Add what `other` recorded after what this recording holds (GradientTape.append).

        Positions of `other` move up by this recording's length; a tensor or
        variable watched in both is one source whose positions are those of
        both, so its gradient sums the two parts. `other` is left unusable.
        """
        offset = len(self.structure)
        for p, (entry, hit) in enumerate(zip(other.structure, other.info)):
            if len(hit) != 2:  # an op: its integer inputs are positions (literals are keyed otherwise)
                first = 1 if hit[2] is not None else 3
                entry = entry[:first] + tuple(i + offset if type(i) is int else i for i in entry[first:])
            self.structure.append(entry)
        self.info += other.info
        self.values += other.values
        for key, p in other.var_of.items():
            self.var_of.setdefault(key, p + offset)
        for key, p in other.const_of.items():
            self.const_of.setdefault(key, p + offset)
        self.leaves += [p + offset for p in other.leaves]
        for key, positions in other.sources.items():
            self.sources.setdefault(key, []).extend(p + offset for p in positions)
        known = {id(v) for v in self.variables}
        self.variables += [v for v in other.variables if id(v) not in known]
        self.watched_integers.update(other.watched_integers)
        for key, version in other.versions.items():
            self.versions.setdefault(key, version)
        self.snapshots.update({p + offset: value for p, value in other.snapshots.items()})
        for key, h in other.held.items():
            if self.held.setdefault(key, h) is not h:  # both hold it: both fingerprints are checked
                self.held[key, id(h)] = h
        self.literals.update(other.literals)
        self.uncacheable = self.uncacheable or other.uncacheable
        self.deferred = self.deferred or other.deferred

    def check_held(self, reader: str) -> None:
        """Raise ArrayModifiedError if an array this recording holds was modified since it was
        recorded (held_arrays.py); `reader` names the method about to read them."""
        check(self.held, reader)

    def structure_key(self) -> tuple:
        """The structure as one hashable tuple: the same tuple until more is recorded (a
        structure only grows), so that a gradient's cache lookups hash it once
        (backward_cache._Key)."""
        key = self._structure_key
        if key is None or len(key) != len(self.structure):
            key = self._structure_key = tuple(self.structure)
        return key

    def value(self, p: int):
        """The forward value (an array) at position `p`."""
        snap = self.snapshots.get(p)
        if snap is not None:
            return snap
        t = self.values[p]
        return t if t.__class__ is np.ndarray else t._value

    def tensor(self, p: int) -> Tensor:
        """The forward value at position `p` as the Tensor the ops saw (a Tensor around
        it for an array operand)."""
        t = self.values[p]
        return Tensor(t) if t.__class__ is np.ndarray else t


def held_operands(held: dict, args) -> list:
    """`args` of a pending op with each held array (or Tensor holding one) replaced by its
    Held, which deferred._force checks before computing: a new list, or `args` itself when
    none is held. The C recorder does the same."""
    out = None
    for i, a in enumerate(args):
        h = held.get(id(a))
        if h is None and isinstance(a, Tensor) and a.__class__ is not PendingTensor:
            h = held.get(id(a._value))
        if h is not None:
            if out is None:
                out = list(args)
            out[i] = h
    return args if out is None else out


def all_unread(values) -> list:
    """The unread PendingTensors of a freed Recording's `values`: what `unread_roots` narrows
    down, in the Python reference (which cannot count references portably)."""
    return [v for v in values if type(v) is PendingTensor and v._forced is None]


def unread_orphans(roots) -> list:
    """The unread pending values reachable from `roots` (what `orphans` holds) through the
    operands of unread pending values: every unread value of a freed Recording still alive, each
    once (rebind.py searches them)."""
    seen, out, stack = set(), [], list(roots)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        out.append(v)
        args = v._args
        if v._forced is None and args is not None:
            stack.extend(a for a in args if type(a) is PendingTensor)
    return out


def in_creation_order(variables: list, watched_integers: dict) -> tuple:
    """A recording's watched Variables (its `variables` and `watched_integers`) in the
    order the variables were created, as TF's GradientTape.watched_variables lists them."""
    return tuple(sorted([*variables, *watched_integers.values()], key=Variable.creation_order))


def _crecord_names() -> dict:
    """What the C accelerator reads and calls (its `setup` takes them by name), with the
    slots it reads (declared in c_view.py)."""
    classes = dict(Recording=Recording, PendingTensor=PendingTensor, Tensor=Tensor, Variable=Variable, Held=Held)
    return dict(slots=slot_table(classes),
        Recording=Recording, PendingTensor=PendingTensor, Tensor=Tensor, Variable=Variable, ndarray=np.ndarray,
        float64=np.float64, signatures=_signatures, types=_types, literals=_literals, record=Recording.record,
        signature=_signature, type_of=_type_of, CONSTANT=CONSTANT, VARIABLE=VARIABLE, float64_dtype=np.dtype(np.float64),
        watch_integer_variable=Recording.watch_integer_variable, hold=hold, Op=Op, Held=Held,
        internal_dirs=held_arrays._INTERNAL, held_exact_bytes=held_arrays.EXACT_BYTES,
        # Python ints make int64 Literals only where that is NumPy's default integer
        int64_dtype=np.dtype(np.int64) if np.asarray(0).dtype == np.int64 else None)


def _accelerated():
    """`record` as a function (recording, op, args, params, result, watch_reads): the C
    accelerator (_crecord.c) when it was built and GRADTAPE_PURE_PYTHON is not set, else
    Recording.record itself. Both record identical structures."""
    if crecord is None:  # built without a C compiler: recording.py alone
        return Recording.record
    crecord.setup(_crecord_names())
    if pure_python:
        return Recording.record
    crecord.fast_dealloc()  # PendingTensors freed by _crecord.c (a long recording's thousands at once)
    return crecord.record


# What dispatch.bind and GradientTape call to record an op.
record = _accelerated()
# What a freed Recording adds to `orphans`: in C, only the unread pending values something else
# holds (_crecord.unread_roots: one weak reference for a kept loss, not one per op); the others
# are reached through their operands (unread_orphans).
unread_roots = crecord.unread_roots if record is not Recording.record else all_unread
# What a freed Recording tells the C recorder, which remembers the positions of its latest results
# by address (_crecord.c, `recent`): nothing when recording in Python.
forget = crecord.forget if record is not Recording.record else (lambda recording: None)
# What a freed Recording hands its values to: in C, the kept loss that will free them in the order
# they were made (_crecord.keep_values); nothing when recording in Python.
keep_values = crecord.keep_values if record is not Recording.record else (lambda recording, roots: None)
# A new Held goes off the collector's lists (it can close no cycle), with the extension set up.
if record is not Recording.record:
    held_arrays._untrack = crecord.untrack_held
