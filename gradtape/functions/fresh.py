"""Every tensor a public function returns is a new object, even where nothing changed.

`t[i] = v` changes the tensor object t (tracer/rebind.py). A function that
returned its input itself where nothing changes (a reshape to t's own shape,
`t[:]`, `np.copy(t)`, a cast to t's own dtype, a clip with no bounds, a sum
of a 0-d tensor) would hand out a second name for t, and the update would
silently change that result too, although gradtape's slices and copies are
copies. Internally those shortcuts are worth keeping (they record nothing),
so the check is made once, where a result leaves gradtape: the exported
functions (functions/__init__.py), NumPy's dispatch (tracer/numpy_dispatch.py)
and the Tensor methods. A result that is one of the call's tensor arguments
(or a Variable) is replaced by `fresh(x)`: a reshape to x's own shape, recorded like any
other op (no data is copied, and the IR simplifier drops it), so tapes
differentiate through it.

NumPy's `asarray` keeps its identity (`np.asarray(a) is a` in NumPy too).
"""
from __future__ import annotations

import functools

from ..ir.ops.layout import reshape_p
from ..tracer.deferred import PendingTensor
from ..tracer.dispatch import bind
from ..tracer.tape_stack import local as _tapes
from ..tracer.tensor import Tensor
from ..tracer.variable import Variable

__all__ = []


def fresh(x):
    """x's value as a new Tensor object, for x a Tensor that `t[i] = v` can change; a Variable's
    current value, read (later assigns do not change it, as in TF); any other value (a weak
    scalar, an array) as it is."""
    cls = x.__class__
    if cls is Tensor and not _tapes.tapes:
        # Nothing records: a new object with x's array (never written) or x's traced value.
        y = Tensor.__new__(Tensor)
        y._value, y._sym = x._value, x._sym
        return y
    if cls is Tensor or cls is PendingTensor:
        return bind(reshape_p, x, shape=tuple(x.shape))
    if isinstance(x, Variable):
        return x.value()
    return x


def _is_argument(result, args, kwargs) -> bool:
    for a in args:
        if a is result:
            return True
        if a.__class__ is list or a.__class__ is tuple:  # np.block([t]), np.broadcast_arrays(t)
            for e in a:
                if e is result:
                    return True
    return bool(kwargs) and _is_argument(result, tuple(kwargs.values()), None)


def new_objects(result, args, kwargs=None):
    """`result` with every Tensor in it (at the top, or in a tuple or list) that is one of the
    arguments replaced by a fresh object."""
    if isinstance(result, Tensor):
        return fresh(result) if _is_argument(result, args, kwargs) else result
    if isinstance(result, (tuple, list)) and any(isinstance(r, Tensor) and _is_argument(r, args, kwargs)
                                                 for r in result):
        items = [fresh(r) if isinstance(r, Tensor) and _is_argument(r, args, kwargs) else r for r in result]
        return type(result)(items) if type(result) in (tuple, list) else type(result)(*items)
    return result


def always_new(fn):
    """Mark fn as returning a new object on every path (its every return is a bind or an
    arithmetic op's result): it is exported unwrapped, saving a Python call on the hot path of
    eager code (matmul, the elementwise ops, mean). tests/functions/test_results_are_new_objects.py
    checks every public function, marked or not."""
    fn._returns_new_objects = True
    return fn


_wrappers: dict = {}  # the function -> its wrapper (aliases such as mod and remainder stay one object)


def returning_new_objects(fn):
    """fn, whose results are never one of its arguments (see the module docstring)."""
    if getattr(fn, "_returns_new_objects", False):
        return fn
    wrapper = _wrappers.get(fn)
    if wrapper is not None:
        return wrapper

    @functools.wraps(fn)
    def public(*args, **kwargs):
        result = fn(*args, **kwargs)
        cls = result.__class__
        if cls is PendingTensor or cls is Tensor:  # the common case, _is_argument inline
            for a in args:
                if a is result:
                    return fresh(result)
                if a.__class__ is list or a.__class__ is tuple:  # np.concatenate([x, y]) on every LSTM step
                    for e in a:
                        if e is result:
                            return fresh(result)
            return new_objects(result, (), kwargs) if kwargs else result
        return new_objects(result, args, kwargs)

    public._returns_new_objects = True
    _wrappers[fn] = public
    return public


# Binary operators always bind an op (t + 0 and t * 1 are recorded, never t itself; the
# tests check it), and they are the hottest methods: left unwrapped.
_BINARY_OPERATORS = frozenset(
    f"__{r}{name}__" for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "divmod", "pow",
                                  "matmul", "and", "or", "xor", "lshift", "rshift")
    for r in ("", "r")
) | {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__"}

# Kept as NumPy has them: np.asarray(a) is a.
_SAME_OBJECT = frozenset({"asarray"})


def install_on_tensor_methods(cls, modules: tuple) -> None:
    """Wrap the methods and properties of cls that `modules` installed (see the module docstring)."""
    for name, attr in list(vars(cls).items()):
        if name in _BINARY_OPERATORS:
            continue
        fn = attr.fget if isinstance(attr, property) else attr
        if not callable(fn) or not getattr(fn, "__module__", "").startswith(modules):
            continue
        if isinstance(attr, property):
            setattr(cls, name, property(returning_new_objects(attr.fget), attr.fset, attr.fdel, attr.__doc__))
        else:
            setattr(cls, name, returning_new_objects(fn))


def install_on_namespace(namespace: dict, names) -> None:
    """Wrap the public functions `names` of a module's namespace."""
    for name in names:
        fn = namespace.get(name)
        if callable(fn) and not isinstance(fn, type) and name not in _SAME_OBJECT:
            namespace[name] = returning_new_objects(fn)


def install_on_dispatch(table: dict) -> None:
    """Wrap the implementations NumPy's dispatch calls (np.reshape(t, ...) and the ufuncs)."""
    for key, fn in list(table.items()):
        if getattr(key, "__name__", None) not in _SAME_OBJECT:
            table[key] = returning_new_objects(fn)
