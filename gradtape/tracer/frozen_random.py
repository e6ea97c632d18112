"""Seeing NumPy draw random numbers while a function is traced.

A staged function runs its Python code once, when it is traced; whatever
NumPy's random functions return then becomes a constant of the compiled
code, the same numbers at every later call. That is rarely what the author
meant (a stochastic objective, autograd's black-box variational inference,
then optimizes against one frozen sample), and nothing in the result shows
it, so a trace that draws warns. Two ways of drawing are watched:

- np.random's functions (np.random.rand, normal, shuffle, ...) advance its
  global state, which is compared before and after the trace;
- a `np.random.RandomState` or `np.random.Generator` object keeps its state
  in itself (`rs.randn(...)`, `rng.normal(...)`), so the trace looks for
  such objects where the function can reach them by name (its closure, the
  globals its code names, and the same of functions found there, two levels
  deep) and compares their states. An object reached otherwise (an
  attribute of an argument, say) is not seen.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import types
import warnings

import numpy as np

_DRAWERS = (np.random.RandomState, np.random.Generator)


class RandomStateFrozenWarning(UserWarning):
    """NumPy drew random numbers while a staged function was traced: they are now constants."""


def _state_token():
    _, keys, position, has_gauss, cached = np.random.get_state(legacy=True)
    return keys.tobytes(), position, has_gauss, cached


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _stacklevel_of_caller() -> int:
    """The warnings stacklevel of the first frame outside gradtape and contextlib (the user's call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename == contextlib.__file__):
        frame, level = frame.f_back, level + 1
    return level


def _generator_state(obj):
    if isinstance(obj, np.random.RandomState):
        _, keys, position, has_gauss, cached = obj.get_state(legacy=True)
        return keys.tobytes(), position, has_gauss, cached
    return repr(obj.bit_generator.state)


def _names_read(code: types.CodeType):
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # nested functions and comprehensions
            yield from _names_read(const)


def _reachable_generators(f, depth: int = 2) -> list:
    """RandomState and Generator objects that `f` can reach by name: closure cells and the globals
    its code reads, following functions found there `depth` levels."""
    found, seen = {}, set()

    def visit(obj, level):
        while isinstance(obj, (functools.partial, types.MethodType)):
            obj = obj.func if isinstance(obj, functools.partial) else obj.__func__
        obj = getattr(obj, "__wrapped__", obj)
        if id(obj) in seen or not isinstance(obj, types.FunctionType):
            return
        seen.add(id(obj))
        values = []
        for cell in obj.__closure__ or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:  # an empty cell: a name assigned after the function was made
                pass
        values += [obj.__globals__[n] for n in _names_read(obj.__code__) if n in obj.__globals__]
        for value in values:
            if isinstance(value, _DRAWERS):
                found[id(value)] = value
            elif level > 0:
                visit(value, level - 1)

    visit(f, depth)
    return list(found.values())


@contextlib.contextmanager
def watch_random_draws(fname: str, f=None):
    """Warn (RandomStateFrozenWarning) if the block draws from NumPy's global random state or
    from a RandomState or Generator object that `f` reaches by name."""
    before = _state_token()
    generators = _reachable_generators(f) if f is not None else []
    states = [_generator_state(g) for g in generators]
    yield
    drawn = [type(g).__name__ for g, s in zip(generators, states) if _generator_state(g) != s]
    if drawn or _state_token() != before:
        how = f"drew from a np.random.{drawn[0]}" if drawn else "called np.random"
        warnings.warn(
            RandomStateFrozenWarning(
                f"{fname} {how} while gradtape traced it: the numbers it drew are now "
                "constants of the compiled function, the same at every call. Pass a key and draw "
                "with gradtape.random (key = gradtape.random.key(0); gradtape.random.normal(key, shape)), "
                "or draw with NumPy outside and pass the array as an argument."
            ),
            stacklevel=_stacklevel_of_caller(),
        )
