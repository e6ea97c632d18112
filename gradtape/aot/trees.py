"""Argument and result structures as JSON, so a saved function needs no Python class to load.

A structure is what gradtape.tracer.tree.unflatten takes: lists, tuples and
dicts with None at each leaf. Encoded:

    None            -> null
    [a, b]          -> {"list": [a', b']}
    (a, b)          -> {"tuple": [a', b']}     (namedtuples too: they load as tuples)
    {"k": a}        -> {"dict": [["k", a']]}   (keys: str, int, float, bool or None)
"""
from __future__ import annotations

_KEY_TYPES = (str, int, float, bool, type(None))


class StructureError(TypeError):
    """A structure that cannot be stored (the message names the part)."""


def encode(structure, where: str = "result"):
    """The JSON form of `structure` (raises StructureError naming what cannot be stored)."""
    if structure is None:
        return None
    if isinstance(structure, dict):
        items = []
        for k, v in structure.items():
            if not isinstance(k, _KEY_TYPES):
                raise StructureError(
                    f"the {where} holds a dict key {k!r} of type {type(k).__name__}; a saved function "
                    "stores str, int, float, bool or None keys only")
            items.append([k, encode(v, where)])
        return {"dict": items}
    if isinstance(structure, tuple):
        return {"tuple": [encode(v, where) for v in structure]}
    if isinstance(structure, list):
        return {"list": [encode(v, where) for v in structure]}
    raise StructureError(f"the {where} holds a {type(structure).__name__}, which a saved function cannot store")


def decode(data):
    """The structure `encode` made `data` from."""
    if data is None:
        return None
    (kind, items), = data.items()
    if kind == "dict":
        return {k: decode(v) for k, v in items}
    children = [decode(v) for v in items]
    return tuple(children) if kind == "tuple" else children
