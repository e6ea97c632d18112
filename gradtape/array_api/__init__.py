"""gradtape as an array API namespace (the Python array API standard, 2024.12).

Array-API-aware code asks a tensor for its namespace and calls that, so it
runs on gradtape tensors unchanged, and differentiates:

    >>> import gradtape as gt
    >>> def energy(x):                       # written for any array API library
    ...     xp = x.__array_namespace__()
    ...     return xp.sum(xp.sin(x) ** 2)
    >>> x = gt.constant([0.1, 0.2])
    >>> with gt.GradientTape() as tape:
    ...     tape.watch(x)
    ...     e = energy(x)
    >>> tape.gradient(e, x)                  # sin(2x)
    Tensor([0.19866933, 0.38941834], dtype=float64)

Every function is gradtape's own where gradtape has it (so it records on
tapes and stages); the standard's other names and signatures are adapted
in _functions.py, linalg.py, fft.py, _creation.py and _dtypes.py. Complex
dtypes and the fft extension follow gradtape's complex numbers
(docs/complex.md: asinh of complex input is refused). What it does not
have: in-place updates (tensors are immutable: `x.at[i].set(v)`), and
`copy=False` where a copy is needed (refused).
docs/numpy.md gives the conformance suite's pass rate and how to rerun it.
"""
from __future__ import annotations

import math as _math

from .. import functions as _gt
from . import _tensor_methods  # noqa: F401  (x.__array_namespace__(), x.device, x.mT)
from . import fft  # noqa: F401  (the fft extension)
from . import linalg  # noqa: F401  (the linalg extension)
from ._creation import (  # noqa: F401
    arange, asarray, empty, empty_like, eye, from_dlpack, full, full_like, linspace, meshgrid, ones, ones_like,
    tril, triu, zeros, zeros_like,
)
from ._device import CPU  # noqa: F401
from ._dtypes import (  # noqa: F401
    astype, bool, can_cast, complex64, complex128, finfo, float32, float64, iinfo, int8, int16, int32, int64, isdtype, result_type,
    uint8, uint16, uint32, uint64,
)
from ._functions import (  # noqa: F401
    acos, acosh, argsort, asin, asinh, atan, atan2, atanh, broadcast_arrays, clip, concat, diff, nextafter,
    nonzero, permute_dims, pow, repeat, reshape, signbit, sort, take, tensordot, tile, unique_all,
    unique_counts, unique_inverse, unique_values, unstack, vecdot,
)
from ._info import __array_namespace_info__  # noqa: F401

__array_api_version__ = "2024.12"

e, pi, inf, nan, newaxis = _math.e, _math.pi, _math.inf, _math.nan, None

# The standard's functions that gradtape has under the same name and with NumPy 2's signature.
_SAME = (
    "abs add bitwise_and bitwise_invert bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor ceil "
    "conj copysign cos cosh divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite "
    "isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or logical_xor "
    "maximum minimum multiply negative not_equal positive real reciprocal remainder round sign sin sinh square "
    "sqrt subtract tan tanh trunc all any cumulative_sum cumulative_prod max mean min prod std sum var argmax "
    "argmin count_nonzero searchsorted where broadcast_to expand_dims flip moveaxis roll squeeze stack "
    "take_along_axis matmul matrix_transpose"
).split()
globals().update({name: getattr(_gt, name) for name in _SAME})
