"""Random numbers from explicit keys: `gradtape.random`.

    key = gradtape.random.key(0)
    k1, k2 = gradtape.random.split(key)
    x = gradtape.random.normal(k1, (3, 4))

A key is data: a uint32 array of shape (2,). Every draw is a pure function
of its key (Philox-4x32-10, a counter-based generator, computed by the
`philox` op in NumPy eagerly and in native code when compiled), so a staged
function that takes a key as an argument draws new numbers for each new key,
with no hidden state to freeze into the compiled code. Use each key once:
split it for more (`split(key, n)`), as with JAX's keys.

`np.random` inside a staged function is different: it runs once, while the
function is traced, and its numbers become constants of the compiled code,
the same at every call. gradtape warns (RandomStateFrozenWarning) when a
trace changes NumPy's global random state or draws from a RandomState or
Generator the function reaches by name.
"""
from __future__ import annotations

import math

import numpy as np

from .functions import elementwise as ew
from .functions import elementwise_division as division
from .functions import reductions, sorting
from .functions._promote import as_tensor
from .functions.shape import moveaxis, stack
from .ir.ops import random_bits
from .tracer.dispatch import bind

__all__ = ["key", "split", "uniform", "normal", "bernoulli", "permutation", "categorical"]

_U32 = np.dtype(np.uint32)
_MASK = 0xFFFFFFFF
_DRAW, _SPLIT = np.uint32(0), np.uint32(1)  # the counter's second word: a key's draws, or its children


def key(seed) -> np.ndarray:
    """A key from an integer seed: the uint32 array [seed's high 32 bits, low 32 bits].

    Args:
      seed: a Python or NumPy integer (taken modulo 2**64; negative seeds wrap).

    Returns:
      A uint32 NumPy array of shape (2,): pass it to the drawing functions,
      or as an argument to a staged function.

    Raises:
      TypeError: seed is not an integer.

    Example::

        >>> gradtape.random.key(42)
        array([ 0, 42], dtype=uint32)
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"gradtape.random.key: seed must be an integer, got {seed!r}")
    seed = int(seed) % 2 ** 64
    return np.array([seed >> 32, seed & _MASK], dtype=np.uint32)


def _key_words(name, k):
    k = as_tensor(k)
    if k.dtype != _U32 or k.shape != (2,):
        raise TypeError(
            f"gradtape.random.{name}: key must be a uint32 array of shape (2,), from "
            f"gradtape.random.key(seed) or gradtape.random.split(key), got {k.dtype}{list(k.shape)}"
        )
    return k[0], k[1]


def _shape(name, shape) -> tuple:
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if any(n < 0 for n in shape) or math.prod(shape) >= 2 ** 32:
        raise ValueError(f"gradtape.random.{name}: shape must have sizes >= 0 and fewer than 2**32 elements, got {shape}")
    return shape


def _bits(name, k, shape, word, stream=_DRAW):
    k0, k1 = _key_words(name, k)
    counter = np.arange(math.prod(shape), dtype=np.uint32).reshape(shape)
    return bind(random_bits.philox_p, k0, k1, counter, stream, word=word)


def _unit(name, k, shape, dtype, first_word=0, open_interval=False):
    """Uniform numbers in [0, 1) (or (0, 1) when open_interval) of `dtype`, from
    53 random bits (two words) for float64 and 24 (one word) for float32."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        high = division.floor_divide(_bits(name, k, shape, first_word), np.uint32(32))      # 27 bits
        low = division.floor_divide(_bits(name, k, shape, first_word + 1), np.uint32(64))   # 26 bits
        units = ew.add(ew.multiply(ew.cast(high, dtype), 2.0 ** 26), ew.cast(low, dtype))
        bits = 53
    elif dtype == np.float32:
        units = ew.cast(division.floor_divide(_bits(name, k, shape, first_word), np.uint32(256)), dtype)
        bits = 24
    else:
        raise TypeError(f"gradtape.random.{name}: dtype must be float32 or float64, got {dtype}")
    if open_interval:
        units = ew.add(units, dtype.type(0.5))
    return ew.multiply(units, dtype.type(2.0 ** -bits))


def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    """Uniform random numbers in [minval, maxval).

    Args:
      key: a key (gradtape.random.key / split).
      shape: the result's shape (an int or a tuple).
      dtype: float64 (53 random bits per number) or float32 (24).
      minval, maxval: bounds, numbers or tensors broadcasting against shape;
        the result is differentiable in them.

    Returns:
      A Tensor of `shape` (broadcast with the bounds' shapes) and `dtype`.

    Raises:
      TypeError: a bad key or dtype. ValueError: a bad shape.

    Example::

        >>> u = gradtape.random.uniform(gradtape.random.key(0), (2,))
        >>> bool(((0 <= u) & (u < 1)).numpy().all())
        True
    """
    u = _unit("uniform", key, _shape("uniform", shape), dtype)
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)) and (minval, maxval) == (0, 1):
        return u
    lo, hi = as_tensor(minval, u.dtype), as_tensor(maxval, u.dtype)
    return ew.add(lo, ew.multiply(u, ew.subtract(hi, lo)))


def normal(key, shape=(), dtype=np.float64):
    """Standard normal random numbers (Box-Muller on two uniform numbers per element).

    Args:
      key: a key. shape: the result's shape. dtype: float64 or float32.

    Returns:
      A Tensor of `shape` and `dtype`.

    Example::

        >>> gradtape.random.normal(gradtape.random.key(0), (3,)).shape
        (3,)
    """
    shape, dtype = _shape("normal", shape), np.dtype(dtype)
    u1 = _unit("normal", key, shape, dtype, first_word=0, open_interval=True)  # (0, 1): log is finite
    u2 = _unit("normal", key, shape, dtype, first_word=2)
    radius = ew.sqrt(ew.multiply(ew.log(u1), dtype.type(-2.0)))
    return ew.multiply(radius, ew.cos(ew.multiply(u2, dtype.type(2.0 * math.pi))))


def bernoulli(key, p=0.5, shape=None):
    """Random booleans, True with probability p.

    Args:
      key: a key. p: the probability, a number or tensor (broadcast against shape).
      shape: the result's shape; None for p's shape.

    Returns:
      A bool Tensor (no derivative).

    Example::

        >>> gradtape.random.bernoulli(gradtape.random.key(1), 0.0, (3,))
        Tensor([False, False, False], dtype=bool)
    """
    p = as_tensor(p)
    dtype = p.dtype if p.dtype.kind == "f" else np.dtype(np.float64)
    shape = p.shape if shape is None else _shape("bernoulli", shape)
    return ew.less(_unit("bernoulli", key, shape, dtype), ew.cast(p, dtype))


def permutation(key, x, axis=0):
    """A random permutation of range(x) (x an int), or of x's entries along `axis`.

    The order is the argsort of uniform numbers (O(n log n), in a staged
    function too).

    Args:
      key: a key. x: an int n, or a tensor / array-like. axis: the axis to shuffle.

    Returns:
      An int64 Tensor (for an int), or x's entries reordered (differentiable in x).

    Example::

        >>> sorted(gradtape.random.permutation(gradtape.random.key(0), 4).numpy().tolist())
        [0, 1, 2, 3]
    """
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return sorting.argsort(_unit("permutation", key, _shape("permutation", int(x)), np.float64))
    x = as_tensor(x)
    if x.ndim == 0:
        raise ValueError("gradtape.random.permutation: x must be an int or have at least one axis, got a 0-d tensor")
    axis = axis % x.ndim
    order = sorting.argsort(_unit("permutation", key, (x.shape[axis],), np.float64))
    return moveaxis(moveaxis(x, axis, 0)[order], 0, axis)


def categorical(key, logits, axis=-1, shape=None):
    """Random category indices with probabilities softmax(logits) along `axis` (the Gumbel-max trick).

    Args:
      key: a key. logits: unnormalized log-probabilities (a tensor or array-like).
      axis: the categories' axis.
      shape: the result's shape, which logits' other axes broadcast to; None for those axes' shape.

    Returns:
      An int64 Tensor of category indices.

    Example::

        >>> gradtape.random.categorical(gradtape.random.key(0), [0.0, -np.inf, -np.inf], shape=(2,))
        Tensor([0, 0], dtype=int64)
    """
    logits = as_tensor(logits)
    if logits.dtype.kind == "c":
        raise TypeError(f"categorical: logits must be real, got dtype {logits.dtype}")
    if logits.dtype.kind != "f":
        logits = ew.cast(logits, np.float64)
    last = moveaxis(logits, axis, -1)
    batch = last.shape[:-1]
    shape = batch if shape is None else _shape("categorical", shape)
    u = _unit("categorical", key, (*shape, last.shape[-1]), logits.dtype, open_interval=True)
    gumbel = ew.negative(ew.log(ew.negative(ew.log(u))))
    return reductions.argmax(ew.add(last, gumbel), axis=-1)


def split(key, num=2):
    """`num` new keys from `key`, independent of each other and of key's own draws.

    Args:
      key: a key. num: how many keys (an int >= 1).

    Returns:
      A uint32 Tensor of shape (num, 2): unpack it (`k1, k2 = split(key)`) or index it.

    Example::

        >>> k1, k2 = gradtape.random.split(gradtape.random.key(0))
        >>> bool((k1 != k2).numpy().any())
        True
    """
    (num,) = _shape("split", int(num))
    words = [_bits("split", key, (num,), w, stream=_SPLIT) for w in (0, 1)]
    return stack(words, axis=1)
