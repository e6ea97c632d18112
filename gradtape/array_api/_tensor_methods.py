"""What the standard asks of the array object beyond NumPy's surface: `__array_namespace__`,
`device`, `to_device`, `mT` and DLPack export, installed on gradtape's Tensor."""
from __future__ import annotations

import sys

from .. import functions as gt
from ..functions.fresh import fresh
from ..tracer.tensor import Tensor
from . import _device

SUPPORTED_VERSIONS = ("2023.12", "2024.12")


def __array_namespace__(self, /, *, api_version=None):
    """gradtape.array_api, the array API namespace of tensors (api_version: None, 2023.12 or 2024.12)."""
    if api_version is not None and api_version not in SUPPORTED_VERSIONS:
        raise ValueError(f"api_version={api_version!r}: gradtape.array_api follows the array API standard "
                         f"{' and '.join(SUPPORTED_VERSIONS)}")
    return sys.modules[__package__]


def to_device(self, device, /, *, stream=None):
    """The tensor's value, as a new object (t[i] = v on one never changes the other): gradtape
    tensors live on the CPU only (another device raises ValueError)."""
    _device.check(device)
    return fresh(self)


def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The tensor's value exported through DLPack (a constant, as t.numpy() is: no derivative)."""
    value = self.numpy()
    kwargs = {"stream": stream}
    if max_version is not None:
        kwargs.update(max_version=max_version, dl_device=dl_device, copy=copy)
    elif not value.flags.writeable:
        # The legacy (unversioned) protocol cannot flag a buffer read-only, so
        # NumPy refuses to export one (NumPy 2.0's from_dlpack asks for it).
        # Tensor values are read-only; the consumer gets a private copy.
        value = value.copy()
    return value.__dlpack__(**kwargs)


def __dlpack_device__(self, /):
    """(kDLCPU, 0): gradtape tensors live in this process's memory."""
    return (1, 0)


Tensor.__array_namespace__ = __array_namespace__
Tensor.__dlpack__ = __dlpack__
Tensor.__dlpack_device__ = __dlpack_device__
Tensor.to_device = to_device
Tensor.device = property(lambda self: _device.CPU, doc="The device of the tensor: always the CPU.")
Tensor.mT = property(gt.matrix_transpose, doc="The tensor with its last two axes swapped (the standard's mT).")
