"""Variable: a mutable, named tensor that tapes watch automatically when read."""
from __future__ import annotations

import itertools

import numpy as np

from ..ir.ops.elementwise import cast_p
from . import tape_stack
from .tensor import Tensor

_counter = itertools.count()  # default names
_serials = itertools.count()  # creation order, named or not


class Variable(Tensor):
    """A mutable tensor, like tf.Variable.

    Trainable variables are watched by every active GradientTape (created
    with the default `watch_accessed_variables=True`) as soon as an op reads
    them. `assign*` replace the value; they are not recorded on tapes.

    Args:
      initial_value: array-like; its dtype is kept (Python floats become float64).
      trainable: whether tapes watch it automatically.
      name: a label for messages; defaults to "Variable:N".
      dtype: optional dtype to convert `initial_value` to.

    Example::

        >>> w = gradtape.Variable([1.0, 2.0], name="w")
        >>> with gradtape.GradientTape() as tape:
        ...     loss = gradtape.sum(w * w)
        >>> tape.gradient(loss, w).numpy()
        array([2., 4.])
    """

    __slots__ = ("trainable", "name", "_version", "_serial")

    def __init__(self, initial_value, trainable: bool = True, name: str | None = None, dtype=None):
        if isinstance(initial_value, Tensor):
            initial_value = initial_value.numpy()
        value = np.array(initial_value, dtype=dtype)  # a private copy
        if not value.dtype.isnative:  # a big-endian array's values, in the order gradtape computes in
            value = value.astype(value.dtype.newbyteorder("="))
        value.flags.writeable = False
        super().__init__(value)
        self.trainable = bool(trainable)
        self._serial = next(_serials)
        self.name = name if name is not None else f"Variable:{next(_counter)}"
        self._version = 0

    @staticmethod
    def creation_order(v: "Variable") -> int:
        """A sort key: variables created earlier come first (GradientTape.watched_variables)."""
        return v._serial

    def _check(self, value, what):
        value = value.numpy() if isinstance(value, Tensor) else value
        value = np.asarray(value)
        if value.shape != self._value.shape:
            raise ValueError(
                f"{what}: cannot assign a value of shape {value.shape} to variable "
                f"'{self.name}' of shape {self._value.shape}"
            )
        if not np.can_cast(value.dtype, self._value.dtype, casting="same_kind"):
            raise TypeError(
                f"{what}: cannot assign a {value.dtype} value to variable "
                f"'{self.name}' of dtype {self._value.dtype}"
            )
        return value

    def _set(self, value):
        """Replace the value by a copy of `value` (of this shape; cast to this dtype)."""
        # A copy: the old array is never written either, since tapes and pending values hold it.
        return self._adopt(np.array(value, dtype=self._value.dtype))

    def _adopt(self, new: np.ndarray):
        """Make `new` the value without copying it.

        Only for a fresh array of this variable's shape and dtype that nothing
        else holds (e.g. an optimizer's result): it is made read-only, since
        from now on tapes may record it.
        """
        new.setflags(False)  # write=False, given by position: NumPy parses keywords slowly (0.2 us)
        self._value = new
        self._version += 1
        return self

    def assign(self, value):
        """Set the value (same shape; dtype must cast safely). Returns the variable."""
        return self._set(self._check(value, "assign"))

    def assign_add(self, delta):
        """Add `delta` to the value in place of the variable. Returns the variable."""
        return self._adopt(self._combined(np.add, delta, "assign_add"))

    def assign_sub(self, delta):
        """Subtract `delta` from the value. Returns the variable."""
        return self._adopt(self._combined(np.subtract, delta, "assign_sub"))

    def _combined(self, ufunc, delta, what) -> np.ndarray:
        """`ufunc(value, delta)` in a new array of this variable's dtype (computed in the promoted
        dtype and cast back, as a copy of the result would be, without that copy)."""
        return ufunc(self._value, self._check(delta, what), out=np.empty_like(self._value))

    def __setitem__(self, key, value):
        raise TypeError(
            f"v[...] = {type(value).__name__}: Variable '{self.name}' ({self.dtype}, shape {tuple(self.shape)}) "
            "does not support item assignment: a variable changes only through assign, assign_add and "
            "assign_sub. Assign the updated value: v.assign(v.at[i].set(x)) (or .add, .multiply, .min, "
            ".max); or read it into a tensor first, y = v.value(), whose items can be assigned: y[i] = x."
        )

    def value(self) -> Tensor:
        """A Tensor holding the current value; later assigns do not change it.

        As in TF, this is a read of the variable: active tapes record it (and
        watch the variable if it is trainable), so gradients flow back through
        the returned tensor to the variable. Use `gradtape.stop_gradient` or
        `.numpy()` for a value that is not differentiated.
        """
        reads = tape_stack.local.variable_reads
        if reads:  # a custom_gradient function is running (variable_reads.py): it sees this read
            sym = reads[-1].read(self)
            if sym is not None:
                return Tensor(sym=sym)
        result = Tensor(self._value)  # the array is never mutated, only replaced
        # A recorded identity, as bind would record it (not deferred: the value is at
        # hand). Not through bind: the recorder (recording.py), below bind, knows Variables.
        for tape in list(tape_stack.active()):
            tape._record(cast_p, (self,), {"dtype": self._value.dtype}, result)
        return result

    read_value = value

    def __repr__(self):
        body = np.array2string(self._value, separator=", ")
        return f"<Variable '{self.name}' shape={self.shape} dtype={self.dtype} numpy={body}>"
