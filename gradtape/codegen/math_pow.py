"""x ** c for a constant exponent c: the one policy, used wherever pow is emitted.

NumPy's power computes a scalar exponent of 0, 1, 2, -1 or 0.5 by a
shortcut (ones, x, x*x, 1/x, sqrt) instead of calling pow, and the shortcut
differs from C's pow at special values: np.power(-0.0, 0.5) is -0.0 and
np.power(-inf, 0.5) is nan. Those five follow NumPy bit for bit. 3 and 4
are repeated multiplications: within 2 ULP of pow (which NumPy calls),
overflowing and underflowing where pow does, and several times cheaper
than a call. Every other exponent is pow's, negative integers included:
1/(x*x) would flush to 0 where pow(x, -2) is still a subnormal.

The lowering asks `pow_shortcut` twice for an exponent that is a literal:
when emitting (math.emit_math sees the exponent as an LLVM constant) and
when deciding whether recomputing x ** c beats storing it (`cheap`).
"""
from __future__ import annotations

import dataclasses

from llvmlite import ir

from ..ir.ops.elementwise import POW_SHORTCUTS
from .math_ir import FloatOps


@dataclasses.dataclass(frozen=True)
class PowShortcut:
    """How x ** `exponent` is computed without pow."""

    exponent: float
    form: str  # "one", "x", "multiply", "reciprocal" or "sqrt"

    @property
    def cheap(self) -> bool:
        """At most three multiplications: cheaper to recompute than to store."""
        return self.form in ("one", "x", "multiply")

    def emit(self, builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
        ops = FloatOps(builder, x.type)
        if self.form == "one":
            return ops.c(1.0)  # even for x = nan, as NumPy
        if self.form == "x":
            return x
        if self.form == "reciprocal":
            return ops.div(ops.c(1.0), x)
        if self.form == "sqrt":
            return ops.unary("llvm.sqrt", x)
        result = x
        for _ in range(int(self.exponent) - 1):
            result = ops.mul(result, x)
        return result


# NumPy's own shortcuts (the IR's reference applies them too), plus 3 and 4 as multiplications.
_FORMS = {**POW_SHORTCUTS, 3.0: "multiply", 4.0: "multiply"}


def pow_shortcut(exponent) -> PowShortcut | None:
    """The shortcut computing x ** `exponent` (a Python or NumPy number), or
    None when pow itself computes it.

    Example:
        >>> pow_shortcut(2.0).form, pow_shortcut(2.0).cheap
        ('multiply', True)
        >>> pow_shortcut(2.5) is None
        True
    """
    form = _FORMS.get(float(exponent))
    return None if form is None else PowShortcut(float(exponent), form)
