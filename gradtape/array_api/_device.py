"""The one device of gradtape tensors: this process's CPU."""
from __future__ import annotations


class Device:
    """gradtape computes on the CPU of this process: the only device the namespace knows."""

    def __repr__(self):
        return "gradtape.array_api.CPU"

    def __eq__(self, other):
        return isinstance(other, Device)

    def __hash__(self):
        return hash(Device)


CPU = Device()


def check(device):
    """Refuse a device other than the CPU (None means the default, the CPU)."""
    if device is not None and device != CPU and device != "cpu":
        raise ValueError(f"device={device!r}: gradtape tensors live on the CPU only (gradtape.array_api.CPU)")
