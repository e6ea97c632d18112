"""`__array_namespace_info__()`: what the namespace offers (the standard's inspection API)."""
from __future__ import annotations

from ._device import CPU
from ._dtypes import DTYPES, KINDS, complex128, float64, int64


class Info:
    """The namespace's capabilities, devices and dtypes."""

    def capabilities(self):
        """Boolean indexing and data-dependent shapes work (eagerly); max rank: no limit."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self):
        return CPU

    def devices(self):
        return [CPU]

    def default_dtypes(self, *, device=None):
        return {"real floating": float64, "complex floating": complex128, "integral": int64, "indexing": int64}

    def dtypes(self, *, device=None, kind=None):
        """{name: dtype} of the dtypes of `kind` (a kind name, a dtype or a tuple; None: all)."""
        if kind is None:
            return dict(DTYPES)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        out = {}
        for k in kinds:
            names = KINDS[k] if isinstance(k, str) else [n for n, d in DTYPES.items() if d == k]
            out.update({n: DTYPES[n] for n in names})
        return out


def __array_namespace_info__():
    """The inspection object of the namespace (capabilities, devices, dtypes)."""
    return Info()
