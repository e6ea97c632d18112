"""The structure of parameter trees: comparing two, and printing one in messages."""
from __future__ import annotations


def outline_key(x):
    """A hashable, comparable outline of a tree (lists and tuples alike; leaves as None)."""
    if isinstance(x, dict):
        return ("dict", tuple((k, outline_key(x[k])) for k in sorted(x)))
    if isinstance(x, (list, tuple)):
        return ("seq", tuple(outline_key(i) for i in x))
    return None


def check_same(where: str, what: str, got, params) -> None:
    """Raise ValueError, showing both, when `got` does not have the structure of `params`."""
    if outline_key(got) != outline_key(params):
        raise ValueError(
            f"{where}: {what} must have the structure of params; got {outline(got)} for params "
            f"{outline(params)}"
        )


def outline(x) -> str:
    """`{'b': <(3,)>, 'w': [<(2, 2)>, None]}`: a tree with its leaves' shapes."""
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {outline(x[k])}" for k in sorted(x)) + "}"
    if isinstance(x, list):
        return "[" + ", ".join(outline(i) for i in x) + "]"
    if isinstance(x, tuple):
        return "(" + ", ".join(outline(i) for i in x) + ("," if len(x) == 1 else "") + ")"
    if x is None:
        return "None"
    shape = getattr(x, "shape", None)
    return f"<{shape}>" if shape is not None else type(x).__name__
