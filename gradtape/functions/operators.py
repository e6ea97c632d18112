"""Python operators and NumPy-style methods on Tensor, bound to gradtape functions."""
from __future__ import annotations

import numpy as np

from ..ir.ops import elementwise as ew_ops
from ..tracer import dispatch
from ..tracer.c_view import crecord as _crecord
from ..tracer.tensor import Tensor
from ..tracer.weak import WeakScalar
from . import bitwise
from . import elementwise as ew
from . import elementwise_division as division

_c_bind = _crecord is not None and dispatch.bind is getattr(_crecord, "bind", None)


def _swap(fn):
    return lambda self, other: fn(other, self)


def _keeps_weak(fn):
    """A unary operator that leaves a traced Python scalar weak, as -2.5 is a Python float."""
    def operator(self):
        out = fn(self)
        return WeakScalar(sym=out._sym) if self.__class__ is WeakScalar and out._sym is not None else out

    return operator


Tensor.__neg__ = ew.negative
Tensor.__pos__ = ew.positive
Tensor.__abs__ = ew.abs
WeakScalar.__neg__ = _keeps_weak(ew.negative)
WeakScalar.__pos__ = _keeps_weak(ew.positive)
WeakScalar.__abs__ = _keeps_weak(ew.abs)
Tensor.__add__ = ew.add
Tensor.__radd__ = _swap(ew.add)
Tensor.__sub__ = ew.subtract
Tensor.__rsub__ = _swap(ew.subtract)
Tensor.__mul__ = ew.multiply
Tensor.__rmul__ = _swap(ew.multiply)
Tensor.__truediv__ = ew.divide
Tensor.__rtruediv__ = _swap(ew.divide)
Tensor.__pow__ = ew.power
Tensor.__mod__ = division.remainder
Tensor.__rmod__ = _swap(division.remainder)
Tensor.__floordiv__ = division.floor_divide
Tensor.__rfloordiv__ = _swap(division.floor_divide)
Tensor.__divmod__ = division.divmod
Tensor.__rdivmod__ = _swap(division.divmod)
Tensor.__rpow__ = _swap(ew.power)
Tensor.__eq__ = ew.equal
Tensor.__ne__ = ew.not_equal
Tensor.__lt__ = ew.less
Tensor.__le__ = ew.less_equal
Tensor.__gt__ = ew.greater
Tensor.__ge__ = ew.greater_equal
# As NumPy's: logical on bools, bitwise on integers, refused on floats.
for _name, _fn in [("and", bitwise.bitwise_and), ("or", bitwise.bitwise_or), ("xor", bitwise.bitwise_xor),
                   ("lshift", bitwise.left_shift), ("rshift", bitwise.right_shift)]:
    setattr(Tensor, f"__{_name}__", _fn)
    setattr(Tensor, f"__r{_name}__", _swap(_fn))
Tensor.__invert__ = bitwise.bitwise_invert

if _c_bind:  # float64 operands bound in C, every other case by the Python operator above
    for _name, _op in (("add", ew_ops.add_p), ("sub", ew_ops.sub_p), ("mul", ew_ops.mul_p), ("truediv", ew_ops.div_p)):
        for _dunder in (f"__{_name}__", f"__r{_name}__"):
            setattr(Tensor, _dunder, _crecord.binary_operator(_op, getattr(Tensor, _dunder), _dunder[2] == "r"))
    # `array * t` reaches the tensor through NumPy's __array_ufunc__: the same ops, in C too
    Tensor.__array_ufunc__ = _crecord.ufunc_operator(
        {np.add: ew_ops.add_p, np.subtract: ew_ops.sub_p, np.multiply: ew_ops.mul_p, np.true_divide: ew_ops.div_p},
        Tensor.__array_ufunc__)
Tensor.__hash__ = lambda self: id(self)  # defining __eq__ would otherwise drop hashing
Tensor.astype = lambda self, dtype: ew.cast(self, dtype)
