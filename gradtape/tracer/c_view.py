"""The optional C accelerator (_crecord.c) and what it reads from Python objects.

`crecord` is the extension module, or None when gradtape was installed
without a C compiler; `pure_python` is set by GRADTAPE_PURE_PYTHON=1, which
keeps the Python reference (recording.py, dispatch.py) on the hot path.

The extension reaches into objects by slot offset, as CPython's slot
descriptors do, so the slots it reads are declared here, once: `SLOTS` is
handed to it at setup (recording.py), which refuses a declaration that
differs from its own, and tests/tracer/test_c_view.py checks the
declaration against the classes' `__slots__` and against live objects.
Renaming or removing a slot listed here fails those tests instead of
crashing the extension.
"""
from __future__ import annotations

import logging
import os

try:
    from . import _crecord as crecord
except ImportError:  # built without a C compiler: the Python reference alone
    crecord = None

pure_python = os.environ.get("GRADTAPE_PURE_PYTHON", "0") not in ("", "0")

if crecord is None and not pure_python:
    # pip shows a build's output only with -v, so the install's one warning goes unseen: say it
    # here, once a process (this module is imported once), as one log line
    logging.getLogger("gradtape").warning(
        "gradtape: the C recording extension (gradtape/tracer/_crecord.c) is not built, probably "
        "installed without a C compiler: tapes record in pure Python, slower. Reinstall with a C "
        "compiler to get it, or set GRADTAPE_PURE_PYTHON=1 to choose pure Python and silence this.")

# Recording.var_of's class: the extension's id -> position table keyed by address (no int made per
# recorded result, no hash of addresses clustered on multiples of 16), else a dict. Python uses the
# mapping API the two share: get, [], in, pop, setdefault, items, len.
id_positions = crecord.IdPositions if crecord is not None and not pure_python else dict

# class name -> {slot: (what it must hold, as a type or None for any object; what C does with it)}.
SLOTS = {
    "Tensor": {
        "_value": (None, "a concrete Tensor's ndarray: read as the operand's value, set on new Tensors"),
        "_sym": (None, "None for a concrete Tensor: C only tests it against None (abstract: Python's path)"),
    },
    "Variable": {
        "_version": (int, "compared with Recording.versions to tell a read after an assign"),
        "trainable": (bool, "whether a read is watched"),
    },
    "PendingTensor": {
        "shape": (tuple, "set on the PendingTensors C makes"),
        "dtype": (None, "a numpy dtype, set on the PendingTensors C makes"),
        "_op": (None, "the op, set"),
        "_args": (None, "the operands, set"),
        "_params": (dict, "the params, set"),
        "_forced": (None, "None until computed: set to None"),
        "_keep": (None, "None, or a freed Recording's values list: set to None, set by keep_values, read when freed"),
    },
    "Held": {
        "array": (None, "the array held: set on the Helds C makes (held_arrays.hold's common case)"),
        "op": (None, "the op that read it: set"),
        "site": (None, "(code, instruction offset) of the user's line, or None: set"),
        "_fingerprint": (tuple, "(shape, dtype, bytes): set"),
    },
    "Recording": {
        "var_of": (id_positions, "id(tensor) -> position: looked up and extended"),
        "info": (list, "per position (type, type id, ...): indexed and appended"),
        "structure": (list, "appended"),
        "values": (list, "appended"),
        "leaves": (list, "appended"),
        "deferred": (bool, "set to True when a PendingTensor is recorded"),
        "versions": (dict, "id(variable) -> version: read and set"),
        "literals": (dict, "structure key -> Literal: set"),
        "const_of": (dict, "id(tensor) -> position: read, an entry deleted when watched"),
        "sources": (dict, "id(variable) -> [position]: read and extended"),
        "variables": (list, "appended when a variable is first watched"),
        "snapshots": (dict, "position -> array a variable read saw: set"),
        "held": (dict, "id(array) -> Held (held_arrays.py): its size read, looked up for a pending op's operands"),
    },
}


def slot_table(classes: dict) -> dict:
    """`SLOTS` as the extension's setup takes it: {"Class.slot": (class, slot)}.

    Args:
      classes: class name -> the class (every name in SLOTS).
    """
    return {f"{name}.{slot}": (classes[name], slot) for name, slots in SLOTS.items() for slot in slots}
