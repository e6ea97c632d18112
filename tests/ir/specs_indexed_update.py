"""Op specs of the indexed updates `x.at[index].set/add/multiply/min/max(v)`.

They are built from where, gather and scatter_add (gradtape/functions/
update_rules.py), so these specs run them through every table-driven check:
gradients to third order in both modes, vmap over each subset of inputs,
native code against NumPy. Indices are closed over (they become constants);
tests/functions/test_indexed_update.py covers traced indices. Each NumPy
reference updates a copy with NumPy's own fancy assignment or ufunc.at.
"""
import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal

DUP = [0, 2, 2, 1, 0]  # repeated positions: add/multiply accumulate them, set keeps the last


def _np_update(mode, x, index, v):
    out = np.array(x, copy=True)
    if mode == "set":
        out[index] = v
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[mode].at(out, index, v)
    return out


def _spec(name, mode, index, x_maker, v_maker, ops=("where", "gather")):
    return OpSpec(
        f"at_{mode}_{name}",
        lambda x, v: gt.sin(getattr(x.at[index], mode)(v)) * x,
        args(x_maker, v_maker),
        ops=ops,
        numpy_fn=lambda x, v: np.sin(_np_update(mode, x, index, v)) * x,
    )


SPECS = [
    _spec("int_row", "set", 1, normal(3, 2), normal(2)),
    _spec("slice_broadcast", "set", np.s_[::2, 1:], normal(4, 3), normal(2)),
    _spec("ellipsis_newaxis", "add", np.s_[..., None, 0], normal(2, 3), normal(2, 1)),
    _spec("duplicates", "add", (np.array(DUP),), normal(3, 2), normal(5, 2)),
    _spec("two_arrays", "multiply", (np.array([0, 1, 1]), np.array([2, 0, 0])), normal(2, 3), normal(3)),
    _spec("mask", "max", np.array([True, False, True, True]), normal(4), normal(3)),
    _spec("duplicates", "min", (np.array(DUP),), normal(3), normal(5)),
    _spec("float32_scalar", "add", np.s_[1:], normal(3, dtype=np.float32), normal(dtype=np.float32)),
]
