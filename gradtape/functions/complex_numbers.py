"""The complex-number functions of NumPy: real, imag, conj, angle, iscomplex,
isreal, iscomplexobj, isrealobj, real_if_close.

On complex tensors each binds the ops of `ir/ops/complex_parts.py` (with
derivatives by JAX's convention, docs/complex.md); on real tensors they give
NumPy's values without them (real(x) is x, imag(x) is zeros).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.ops import complex_parts as cp
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor, inexact_operand

__all__ = ["real", "imag", "conj", "conjugate", "angle", "iscomplex", "isreal", "iscomplexobj", "isrealobj",
           "real_if_close"]


@implements(np.real)
def real(x):
    """The real part, as numpy.real: x itself for real input.

    Example::

        >>> gradtape.real(gradtape.constant([1.0 + 2.0j, -3.0j]))
        Tensor([ 1., -0.], dtype=float64)
    """
    x = as_tensor(x)
    return bind(cp.real_p, x) if x.dtype.kind == "c" else x


@implements(np.imag)
def imag(x):
    """The imaginary part, as numpy.imag: zeros of x's shape and dtype for real input
    (with a zero, not a missing, gradient).

    Example::

        >>> gradtape.imag(gradtape.constant([1.0 + 2.0j, -3.0j]))
        Tensor([ 2., -3.], dtype=float64)
    """
    x = as_tensor(x)
    if x.dtype.kind == "c":
        return bind(cp.imag_p, x)
    return ew.where(False, x, x.dtype.type(0))


@implements(np.conj, np.conjugate)
def conj(x):
    """The complex conjugate, as numpy.conj: x itself for real input.

    Example::

        >>> gradtape.conj(gradtape.constant([1.0 + 2.0j]))
        Tensor([1.-2.j], dtype=complex128)
    """
    x = as_tensor(x)
    return bind(cp.conj_p, x) if x.dtype.kind == "c" else x


conjugate = conj


@implements(np.angle)
def angle(z, deg=False):
    """The argument arctan2(imag(z), real(z)), as numpy.angle (in degrees if deg).

    For real input: 0 for x >= +0, pi for x < 0 and -0.0, with derivative 0.

    Example::

        >>> gradtape.angle(gradtape.constant([2.0, -1.0, 1.0j]))
        Tensor([0.        , 3.14159265, 1.57079633], dtype=float64)
    """
    z = inexact_operand(z)
    if z.dtype.kind == "c":
        a = ew.arctan2(imag(z), real(z))
    else:
        a = ew.arctan2(ew.where(ew.equal(z, z), 0.0, z), z)  # +0 (NaN for NaN): arctan2(+0, x < 0) = pi
    return ew.multiply(a, 180.0 / math.pi) if deg else a


@implements(np.iscomplex)
def iscomplex(x):
    """True where the imaginary part is not 0, as numpy.iscomplex (all False for real input).

    Example::

        >>> gradtape.iscomplex(gradtape.constant([1.0 + 0.0j, 2.0j]))
        Tensor([False,  True], dtype=bool)
    """
    return ew.not_equal(imag(x), 0)


@implements(np.isreal)
def isreal(x):
    """True where the imaginary part is 0, as numpy.isreal.

    Example::

        >>> gradtape.isreal(gradtape.constant([1.0 + 0.0j, 2.0j]))
        Tensor([ True, False], dtype=bool)
    """
    return ew.equal(imag(x), 0)


@implements(np.iscomplexobj)
def iscomplexobj(x):
    """True if x has a complex dtype (a Python bool), as numpy.iscomplexobj.

    Example::

        >>> gradtape.iscomplexobj(gradtape.constant([1.0j]))
        True
    """
    return as_tensor(x).dtype.kind == "c"


@implements(np.isrealobj)
def isrealobj(x):
    """True unless x has a complex dtype, as numpy.isrealobj.

    Example::

        >>> gradtape.isrealobj(gradtape.constant([1.0]))
        True
    """
    return not iscomplexobj(x)


@implements(np.real_if_close)
def real_if_close(a, tol=100):
    """The real part if every imaginary part is within tol machine epsilons of 0
    (tol > 1; below 1 it is an absolute tolerance), else a itself, as numpy.real_if_close.

    Deciding reads the values, so a traced (abstract) complex input is refused.

    Example::

        >>> gradtape.real_if_close(gradtape.constant([1.0 + 1e-20j]))
        Tensor([1.], dtype=float64)
    """
    a = as_tensor(a)
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = tol * np.finfo(a.dtype).eps
    small = np.all(np.abs(np.asarray(bind(cp.imag_p, a).numpy())) < tol)
    return real(a) if small else a


# NumPy's array attributes and methods of complex numbers, on tensors: t.real, t.imag, t.conj().
Tensor.real = property(real, doc="The real part, as ndarray.real.")
Tensor.imag = property(imag, doc="The imaginary part, as ndarray.imag.")
Tensor.conj = Tensor.conjugate = conj
