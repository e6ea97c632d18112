"""Nested structures of tensors (lists, tuples, namedtuples, dicts), as tf.nest.

Dict leaves are visited in sorted key order, so flatten/unflatten agree
however the dict was built.
"""
from __future__ import annotations

import collections


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree) -> list:
    """The leaves of `tree` in a fixed order; anything not a container is a leaf."""
    if not isinstance(tree, (dict, list, tuple)):  # a bare leaf: the common case of tape.gradient
        return [tree]
    leaves = []

    def walk(x):
        if isinstance(x, dict):
            for k in sorted(x):
                walk(x[k])
        elif isinstance(x, (list, tuple)):
            for item in x:
                walk(item)
        else:
            leaves.append(x)

    walk(tree)
    return leaves


def leaf_paths(tree) -> list:
    """The index path of every leaf in flatten order, as text: `[0]`, `['w'][1]`, `` for a bare leaf."""
    paths = []

    def walk(x, prefix):
        if isinstance(x, dict):
            for k in sorted(x):
                walk(x[k], f"{prefix}[{k!r}]")
        elif isinstance(x, (list, tuple)):
            for i, item in enumerate(x):
                walk(item, f"{prefix}[{i}]")
        else:
            paths.append(prefix)

    walk(tree, "")
    return paths


def unflatten(structure, leaves):
    """Rebuild `structure`'s shape with `leaves` (consumed in flatten order)."""
    if not isinstance(structure, (dict, list, tuple)):
        return next(iter(leaves))
    it = iter(leaves)

    def build(x):
        if isinstance(x, dict):
            built = {k: build(x[k]) for k in sorted(x)}
            pairs = [(k, built[k]) for k in x]
            if type(x) is dict:
                return dict(pairs)
            if isinstance(x, collections.defaultdict):  # its first argument is the factory
                return type(x)(x.default_factory, pairs)
            return type(x)(pairs)
        if _is_namedtuple(x):
            return type(x)(*[build(i) for i in x])
        if isinstance(x, (list, tuple)):
            return type(x)(build(i) for i in x)
        return next(it)

    return build(structure)
