"""SciPy's gamma-family functions as ops: gammaln (log |Gamma(x)|) and
polygamma[n] (psi^(n), the n-th derivative of digamma; n = 0 is digamma).

gammaln' = digamma = polygamma[0] and polygamma[n]' = polygamma[n + 1], so
derivatives of every order are the same op again with a larger n.
"""
from __future__ import annotations

import math

from ..builder import bind
from ..op import batching_rules, impls, jvp_rules, shape_rules, vjp_rules
from ._helpers import require_float
from .elementwise import _broadcasting_batch_rule, _elementwise_in_float64, elementwise_op, unary
from .polygamma_series import polygamma_reference



def _lgamma(v: float) -> float:
    """C's lgamma (what native code calls): +inf at the poles, where Python's raises; and
    SciPy's -inf at -inf (C's lgamma gives +inf there)."""
    if v == -math.inf:
        return -math.inf
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


gammaln_p = unary("gammaln", _elementwise_in_float64(_lgamma), lambda x, out: polygamma(x, 0))

polygamma_p = elementwise_op("polygamma")


def _polygamma_shape(x, *, n):
    require_float(polygamma_p, x)
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"polygamma: the order n must be an int >= 0, got {n!r}")
    return x


shape_rules[polygamma_p] = _polygamma_shape
impls[polygamma_p] = lambda x, *, n: polygamma_reference(x, n)
batching_rules[polygamma_p] = _broadcasting_batch_rule(polygamma_p)
vjp_rules[polygamma_p] = lambda ct, out, x, *, n: (ct * polygamma(x, n + 1),)
jvp_rules[polygamma_p] = lambda ts, out, x, *, n: ts[0] * polygamma(x, n + 1)


def gammaln(x): return bind(gammaln_p, x)
def polygamma(x, n): return bind(polygamma_p, x, n=int(n))
