"""philox[word]: the counter-based random bits of gradtape.random, an op.

Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3", SC 2011): ten rounds of 32x32 -> 64-bit multiplications and xors that
map a 128-bit counter and a 64-bit key to 128 random bits. The op takes the
key (k0, k1) and the counter's first two words (c0, c1; the others are 0),
all uint32 and broadcast together, and returns output word `word` (0..3).
Equal inputs give equal bits, so random numbers are a pure function of
their key: a staged function draws new numbers when it is given a new key.

The reference is NumPy on uint64; native code (codegen/scalar_random.py)
computes the same rounds on i64 and gives the same bits.
"""
from __future__ import annotations

import numpy as np

from ..builder import bind
from ..op import batching_rules, impls, shape_rules
from ..types import TensorType
from ._helpers import DTypeError, broadcast_shapes
from .elementwise import _broadcasting_batch_rule, elementwise_op

ROUNDS = 10
MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
MASK = 0xFFFFFFFF

philox_p = elementwise_op("philox", differentiable=False)


def _shape(k0, k1, c0, c1, *, word):
    for t in (k0, k1, c0, c1):
        if t.dtype != np.uint32:
            raise DTypeError(f"philox: every operand must be uint32, got {t}")
    if word not in (0, 1, 2, 3):
        raise ValueError(f"philox: word must be 0, 1, 2 or 3, got {word!r}")
    return TensorType(broadcast_shapes(philox_p, (k0, k1, c0, c1)), np.dtype(np.uint32))


def philox_rounds(k0, k1, c0, c1, c2=None, c3=None):
    """The four output words of Philox-4x32-10, on NumPy uint64 arrays holding 32-bit
    values (c2 and c3, 0 in the op, are there for the published known answers)."""
    x = [c0, c1, np.zeros_like(c0) if c2 is None else c2, np.zeros_like(c0) if c3 is None else c3]
    m0, m1 = np.uint64(MULTIPLIERS[0]), np.uint64(MULTIPLIERS[1])
    mask, shift = np.uint64(MASK), np.uint64(32)
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + np.uint64(KEY_STEPS[0])) & mask
            k1 = (k1 + np.uint64(KEY_STEPS[1])) & mask
        p0, p1 = m0 * x[0], m1 * x[2]
        x = [(p1 >> shift) ^ x[1] ^ k0, p1 & mask, (p0 >> shift) ^ x[3] ^ k1, p0 & mask]
    return x


def _impl(k0, k1, c0, c1, *, word):
    arrays = np.broadcast_arrays(*(np.asarray(a, np.uint32).astype(np.uint64) for a in (k0, k1, c0, c1)))
    return philox_rounds(*arrays)[word].astype(np.uint32)


shape_rules[philox_p] = _shape
impls[philox_p] = _impl
batching_rules[philox_p] = _broadcasting_batch_rule(philox_p)


def philox(k0, k1, c0, c1, word): return bind(philox_p, k0, k1, c0, c1, word=int(word))
