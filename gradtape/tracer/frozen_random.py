"""Seeing np.random called while a function is traced.

A staged function runs its Python code once, when it is traced; whatever
np.random returns then becomes a constant of the compiled code, the same
numbers at every later call. That is rarely what the author meant, and
nothing in the result shows it, so a trace that changes NumPy's global
random state (np.random.rand, normal, shuffle, ... all advance it) warns.
Generators made with np.random.default_rng() keep their own state, which a
trace cannot see: the same freezing happens to them silently.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np


class RandomStateFrozenWarning(UserWarning):
    """np.random was called while a staged function was traced: its numbers are now constants."""


def _state_token():
    _, keys, position, has_gauss, cached = np.random.get_state(legacy=True)
    return keys.tobytes(), position, has_gauss, cached


@contextlib.contextmanager
def watch_global_random_state(fname: str):
    """Warn (RandomStateFrozenWarning) if the block changes np.random's global state."""
    before = _state_token()
    yield
    if _state_token() != before:
        warnings.warn(
            RandomStateFrozenWarning(
                f"{fname} called np.random while gradtape traced it: the numbers it drew are now "
                "constants of the compiled function, the same at every call. Pass a key and draw "
                "with gradtape.random (key = gradtape.random.key(0); gradtape.random.normal(key, shape)), "
                "or draw with NumPy outside and pass the array as an argument."
            ),
            stacklevel=4,
        )
