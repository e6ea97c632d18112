"""Native code of philox[word] (ir/ops/random_bits.py): Philox-4x32-10's rounds
on 64-bit integers, straight-line code that the loop vectorizer widens."""
from __future__ import annotations

import llvmlite.ir as llvm_ir

from ..ir import ops
from ..ir.ops.random_bits import KEY_STEPS, MULTIPLIERS, ROUNDS

_I32, _I64 = llvm_ir.IntType(32), llvm_ir.IntType(64)


def _mulhilo(b, multiplier, x):
    product = b.mul(llvm_ir.Constant(_I64, multiplier), b.zext(x, _I64))
    return b.trunc(b.lshr(product, llvm_ir.Constant(_I64, 32)), _I32), b.trunc(product, _I32)


def _philox(b, k0, k1, c0, c1, word):
    zero = llvm_ir.Constant(_I32, 0)
    x = [c0, c1, zero, zero]
    for r in range(ROUNDS):
        if r:  # i32 additions wrap, as the reference's masked uint64 ones
            k0 = b.add(k0, llvm_ir.Constant(_I32, KEY_STEPS[0]))
            k1 = b.add(k1, llvm_ir.Constant(_I32, KEY_STEPS[1]))
        hi0, lo0 = _mulhilo(b, MULTIPLIERS[0], x[0])
        hi1, lo1 = _mulhilo(b, MULTIPLIERS[1], x[2])
        x = [b.xor(b.xor(hi1, x[1]), k0), lo1, b.xor(b.xor(hi0, x[3]), k1), lo0]
    return x[word]


def make_philox(in_dtypes, out_dtype, *, word):
    return lambda k, v: _philox(k.b, *v, word)


RANDOM = {ops.philox_p: make_philox}
"""The scalar maker of the philox op, merged into scalar.SCALAR."""
