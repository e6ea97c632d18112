"""The staged front door: differentiable, grad, value_and_grad."""
from __future__ import annotations

import inspect

from .staged import StagedFunction
from .transforms import Differentiate, Forward


def differentiable(f=None, *, static_argnums=(), dynamic=None):
    """Stage `f`: trace it once per shape signature, optimize and compile it.

    Each call computes the signature of its arguments (their nesting of
    lists/tuples/dicts, each array's shape and dtype, Python floats and ints
    as float64 and int64 scalars, static arguments by value) and runs the
    compiled function cached for it; a new signature traces `f` again. So a
    decision `f` makes in Python may depend on shapes and static arguments,
    never on values: `if x > 0` raises ConcretizationError; use
    `gradtape.where`. A new signature does not wait for its native code:
    the reference interpreter serves calls while it compiles on a
    background thread (`gradtape.runtime.wait_for_compiles()` waits for it;
    GRADTAPE_ASYNC_COMPILE=0 compiles in the first call instead). Threads
    may call the function at once: each signature is traced and compiled
    once.

    Results are NumPy arrays in `f`'s result structure (JAX returns arrays
    too). Called on abstract tensors inside another trace, the function is
    inlined into that trace; called with Tensors while a GradientTape
    records them, it returns Tensors recorded as `call` equations, so the
    tape differentiates through it.

    Values `f` reads from its closure (arrays, Tensors, Variables) are
    constants of the trace: a Variable assigned after the first call is not
    seen by later calls. Pass such values as arguments.

    Args:
      f: the function, of arrays (or nested lists/tuples/dicts of arrays),
        written with gradtape functions or NumPy calls on its arguments.
      static_argnums: positions of arguments passed to `f` as Python values
        (hashable; each distinct value is its own trace), e.g. sizes or flags.
      dynamic: sizes that vary without a compile each (docs/transforms.md,
        "Dynamic shapes"). None (automatic): when a second call differs from
        the first only in the size of some dimensions, one version in which
        they are a run-time size N (N >= 2) is compiled and serves every later
        size whose trace is the same program. A set of (argnum, axis) pairs,
        e.g. {(1, 0), (2, 0)}, or True (axis 0 of the last array argument and
        of every array argument with the same axis-0 size): those dimensions
        from the first call on. False: a specialized compile per shape.

    Returns:
      A StagedFunction; also usable as `@differentiable` or
      `@differentiable(static_argnums=(1,))`. `.grad` and `.value_and_grad`
      give its derivative w.r.t. argument 0; `.cache_info()` counts hits,
      misses, traces and compiles.

    Raises:
      TypeError: a leaf that is not an array or number (named by its path),
        an unhashable static argument, keyword arguments.
      ConcretizationError: `f` used a traced value in Python control flow.

    Example::

        >>> @gradtape.differentiable
        ... def loss(w, x):
        ...     return gradtape.sum(gradtape.tanh(x @ w) ** 2)
        >>> loss(np.ones((3, 2)), np.ones((4, 3)))             # traced, compiled
        array(7.9210717)
        >>> dw = loss.grad(np.ones((3, 2)), np.ones((4, 3)))   # shape (3, 2)
    """
    if f is None:
        return lambda fun: differentiable(fun, static_argnums=static_argnums, dynamic=dynamic)
    _check_callable(f, "differentiable")
    return StagedFunction(f, Forward(), _normalize_static(f, static_argnums, "differentiable"), dynamic=dynamic)


def grad(f, argnums=0, has_aux=False, *, static_argnums=None, dynamic=None, holomorphic=False):
    """The gradient of a scalar-valued `f`, staged like `differentiable`.

    Forward and backward compile into one function per shape signature.

    Args:
      f: a function returning a float scalar (or `(scalar, aux)` with has_aux).
      argnums: an int, or a tuple of ints: which arguments to differentiate.
        The gradient has the structure of that argument (a tuple of them for
        a tuple); nested lists/tuples/dicts of float arrays are allowed.
      has_aux: `f` returns `(scalar, aux)`; the result is then `(grad, aux)`.
      static_argnums: as in `differentiable`. By default taken from `f` when
        it is itself staged (so `grad(differentiable(f, static_argnums=(1,)))`
        keeps argument 1 static), else none.
      dynamic: as in `differentiable` (None: `f`'s own when it is staged, else automatic).
      holomorphic: `f` is holomorphic, with complex inputs and a complex output;
        the gradient is f'(z) (JAX's holomorphic=True). A real output of
        complex inputs needs no flag: its gradient is JAX's, d f/dx - i d f/dy
        (docs/complex.md).

    Returns:
      A StagedFunction returning NumPy arrays (abstract Tensors inside another
      trace, so `grad(grad(f))` is the second derivative).

    Raises:
      TypeError: "Gradient only defined for scalar-output functions. Output
        had shape: (3,)." for a non-scalar output; a non-float output; an
        integer argument among `argnums` ("grad requires float inputs").
      ValueError: `argnums` out of range, or naming a static argument.

    Example::

        >>> df = gradtape.grad(lambda x: gradtape.sum(x ** 3))
        >>> df(np.array([1.0, 2.0]))
        array([ 3., 12.])
        >>> gradtape.grad(gradtape.grad(lambda x: x ** 3))(2.0)
        array(12.)
    """
    return _differentiate(f, argnums, has_aux, static_argnums, dynamic, return_value=False, holomorphic=holomorphic)


def value_and_grad(f, argnums=0, has_aux=False, *, static_argnums=None, dynamic=None, holomorphic=False):
    """`f`'s value and gradient together, from one compiled function.

    Args: as `grad`.

    Returns:
      A StagedFunction returning `(value, grad)`, or `((value, aux), grad)`
      with has_aux (JAX's convention).

    Raises: as `grad`.

    Example::

        >>> vg = gradtape.value_and_grad(lambda x: gradtape.sum(x * x))
        >>> vg(np.array([1.0, 2.0]))
        (array(5.), array([2., 4.]))
    """
    return _differentiate(f, argnums, has_aux, static_argnums, dynamic, return_value=True, holomorphic=holomorphic)


def _differentiate(f, argnums, has_aux, static_argnums, dynamic, return_value, holomorphic=False):
    name = "value_and_grad" if return_value else "grad"
    _check_callable(f, name)
    _check_argnums(argnums, name)
    transform = Differentiate(argnums, has_aux, return_value, holomorphic)
    traces = None
    if isinstance(f, StagedFunction):
        if static_argnums is None:
            static_argnums = f.static_argnums
        if dynamic is None:
            dynamic = f.dynamic
        forward = f._forward_parts()
        if forward is not None and frozenset(_normalize_static(f, static_argnums, name)) == forward[1]:
            # A staged forward function: trace its Python function directly and
            # share its traces, rather than tracing the staged wrapper around it.
            f, _, traces = forward
    static = _normalize_static(f, static_argnums or (), name)
    overlap = sorted(set(transform.argnums) & set(static))
    if overlap:
        raise ValueError(
            f"{name}: argument {overlap[0]} is both in argnums and static_argnums; "
            "a static argument cannot be differentiated"
        )
    return StagedFunction(f, transform, static, traces, dynamic)


def _check_callable(f, name):
    if not callable(f):
        raise TypeError(f"{name} expects a function, got a {type(f).__name__}: {f!r}"[:200])


def _check_argnums(argnums, name):
    items = (argnums,) if isinstance(argnums, int) else argnums
    ok = isinstance(argnums, (int, tuple)) and len(items) > 0 and all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in items
    )
    if not ok:
        raise TypeError(
            f"{name}: argnums must be a non-negative int or a non-empty tuple of them, "
            f"got {argnums!r}"
        )
    if len(set(items)) != len(items):
        raise ValueError(f"{name}: argnums {argnums!r} repeats an argument")


def _normalize_static(f, static_argnums, name) -> tuple:
    items = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise TypeError(f"{name}: static_argnums must be ints, got {static_argnums!r}")
    if any(i < 0 for i in items):
        n = _positional_count(f)
        if n is None:
            raise ValueError(
                f"{name}: negative static_argnums {static_argnums!r} need a function with a "
                "fixed number of positional parameters; give non-negative positions"
            )
        items = tuple(i + n if i < 0 else i for i in items)
    return tuple(sorted(set(items)))


def _positional_count(f):
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    return sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds)
