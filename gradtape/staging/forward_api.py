"""The public forward-mode and linear-map transforms: jvp, linearize, vjp.

Unlike `grad`, these take the function and the point together (JAX's
API). The staged form of each (function, transform) pair is kept while the
function lives, so calling `gradtape.jvp(f, ...)` in a loop traces and
compiles once per shape signature.
"""
from __future__ import annotations

import threading
import weakref

from ..tracer import tree
from ..tracer import signature
from .later import LinearMap, Pullback
from .linear_transforms import JVP, VJP, Linearize
from .staged import StagedFunction, invoke

_staged_by_function = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def staged_for(f, key, make):
    """The StagedFunction `make()` built for (f, key), made once while f lives."""
    try:
        table = _staged_by_function.get(f)
    except TypeError:  # not weak-referenceable: stage it anew (no cache across calls)
        return make()
    if table is None or key not in table:
        with _lock:
            table = _staged_by_function.setdefault(f, {})
            if key not in table:
                table[key] = make()
    return table[key]


def _name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


class _OnPrimals:
    """`(primals, tangents) -> f(*primals)`: what JVP traces."""

    def __init__(self, f):
        self.f = f
        self.__name__ = _name(f)

    def __call__(self, primals, tangents):
        return self.f(*primals)


def _as_tuple(value, what, fname):
    if not isinstance(value, (tuple, list)):
        raise TypeError(
            f"jvp({fname}): {what} must be a tuple or list with one entry per argument of "
            f"{fname}, got a {type(value).__name__}; write jvp(f, (x,), (v,)) for one argument"
        )
    return tuple(value)


def jvp(f, primals, tangents):
    """Forward mode: `f(*primals)` and its Jacobian times `tangents`, from one compiled call.

    Args:
      f: a function of arrays (or nested lists/tuples/dicts of float arrays).
      primals: a tuple with one entry per argument of `f`.
      tangents: a tuple of the same structure, shapes and dtypes.

    Returns:
      `(f(*primals), tangent_out)`, both in the structure of f's result.

    Raises:
      TypeError: primals or tangents not tuples, of different structures,
        or a tangent whose shape or dtype differs from its primal's.

    Example::

        >>> gradtape.jvp(lambda x: gradtape.sin(x), (np.array([0.0, 1.0]),), (np.ones(2),))
        (array([0.        , 0.84147098]), array([1.        , 0.54030231]))
    """
    fname = _name(f)
    primals = _as_tuple(primals, "primals", fname)
    tangents = _as_tuple(tangents, "tangents", fname)
    n = len(tree.flatten(primals))
    if tree.unflatten(primals, [None] * n) != tree.unflatten(tangents, [None] * len(tree.flatten(tangents))):
        raise TypeError(
            f"jvp({fname}): primals and tangents must have the same structure; got "
            f"{tree.unflatten(primals, [None] * n)!r} and "
            f"{tree.unflatten(tangents, [None] * len(tree.flatten(tangents)))!r}"
        )
    staged = staged_for(f, ("jvp",), lambda: StagedFunction(_OnPrimals(f), JVP()))
    return staged(primals, tangents)


def _split_call(f, key, transform, primals):
    """Run the first half of a split transform: (program, its result, signature)."""
    fname = _name(f)
    staged = staged_for(f, key, lambda: StagedFunction(f, transform))
    sig = signature.describe(primals, (), fname)
    program = staged._program(sig, primals)
    return program, invoke(program, sig, fname), sig


def vjp(f, *primals, has_aux=False):
    """Reverse mode: `f(*primals)` and a reusable pullback.

    The forward pass runs now (compiled) and keeps the residuals the
    backward pass needs; each call of the pullback runs only the backward
    half, compiled once per signature.

    Args:
      f: a function of float arrays (or nested lists/tuples/dicts of them).
      *primals: the point.
      has_aux: `f` returns `(output, aux)`; aux is returned, not differentiated.

    Returns:
      `(out, pullback)`, or `(out, pullback, aux)` with has_aux.
      `pullback(cotangent)` takes a cotangent with `out`'s structure,
      shapes and dtypes, and returns a tuple with one cotangent per primal.

    Raises:
      TypeError: an integer primal; (from the pullback) a cotangent of the
        wrong structure, shape or dtype, naming which.

    Example::

        >>> y, pullback = gradtape.vjp(lambda x: x * x, np.array([1.0, 2.0]))
        >>> pullback(np.ones(2))
        (array([2., 4.]),)
    """
    program, (result, residuals), sig = _split_call(f, ("vjp", bool(has_aux)), VJP(has_aux), primals)
    out, aux = result if has_aux else (result, None)
    n_out = len(tree.flatten(out))
    types = program.fn.outvars[:n_out]
    pullback = Pullback(program.later, residuals, [v.type for v in types],
                        tree.unflatten(out, [None] * n_out), _name(f))
    return (out, pullback, aux) if has_aux else (out, pullback)


def linearize(f, *primals):
    """`f(*primals)` and the linear map `tangents -> J @ tangents` at that point.

    The primal computation runs once, now; each call of the map runs only
    the tangent half (compiled once per signature), as JAX's linearize.

    Args:
      f: a function of float arrays (or nested lists/tuples/dicts of them).
      *primals: the point.

    Returns:
      `(out, f_jvp)`; `f_jvp(*tangents)` takes one tangent per primal (same
      structure, shapes, dtypes) and returns the output tangent.

    Example::

        >>> y, f_jvp = gradtape.linearize(gradtape.exp, np.array([0.0, 1.0]))
        >>> f_jvp(np.array([1.0, 1.0]))
        array([1.        , 2.71828183])
    """
    program, (out, residuals), sig = _split_call(f, ("linearize",), Linearize(), primals)
    n = len(sig.types)
    structure = tuple(tree.unflatten(p, [None] * len(tree.flatten(p))) for p in primals)
    return out, LinearMap(program.later, residuals, sig.types[:n], structure, _name(f))
