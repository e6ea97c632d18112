"""The C accelerator's view of Python objects (gradtape/tracer/c_view.py) against the classes:
_crecord.c reads these slots by offset, so a renamed or removed slot must fail here, not crash."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import c_view, recording
from gradtape.tracer.deferred import PendingTensor
from gradtape.tracer.recording import Recording
from gradtape.tracer.held_arrays import Held
from gradtape.tracer.tensor import Tensor
from gradtape.tracer.variable import Variable

CLASSES = {"Tensor": Tensor, "Variable": Variable, "PendingTensor": PendingTensor, "Recording": Recording,
           "Held": Held}

needs_c = pytest.mark.skipif(c_view.crecord is None, reason="gradtape was built without its C extension")


def _declared():
    return [(name, slot, want) for name, slots in c_view.SLOTS.items() for slot, (want, _) in slots.items()]


@pytest.mark.parametrize("name, slot, want", _declared())
def test_each_declared_slot_is_an_object_slot_of_its_class(name, slot, want):
    cls = CLASSES[name]
    assert slot in cls.__dict__.get("__slots__", ()), f"{name}.__slots__ lost {slot!r}, which _crecord.c reads"
    assert type(cls.__dict__[slot]).__name__ == "member_descriptor"


def test_live_objects_hold_what_the_declaration_says():
    w = Variable(np.array([1.0, 2.0]))
    data = np.array([3.0, 4.0])  # writeable: the recording holds it
    with gt.GradientTape() as tape:
        y = w * 2.0  # deferred on one tape: a PendingTensor
        gt.sum(y * y * data)
    held = next(iter(tape._tape.held.values()))
    objects = {"Tensor": gt.constant([1.0]), "Variable": w, "PendingTensor": y, "Recording": tape._tape, "Held": held}
    assert type(y) is PendingTensor and objects["Tensor"]._sym is None
    for name, slot, want in _declared():
        value = getattr(objects[name], slot)
        if want is not None:
            assert isinstance(value, want), f"{name}.{slot} holds a {type(value).__name__}, declared {want.__name__}"


@needs_c
def test_the_extension_refuses_a_declaration_that_is_not_its_own():
    names = recording._crecord_names()
    short = dict(names["slots"])
    del short["Tensor._sym"]
    n = len(names["slots"])
    with pytest.raises(ValueError, match=f"has {n - 1} slots, _crecord.c reads {n}"):
        c_view.crecord.setup(dict(names, slots=short))
    renamed = dict(short)
    renamed["Tensor._symbol"] = (Tensor, "_sym")
    with pytest.raises(KeyError, match="has no Tensor._sym, which _crecord.c reads"):
        c_view.crecord.setup(dict(names, slots=renamed))

    wrong_name = dict(names["slots"], **{"Tensor._sym": (Tensor, "_symbol")})
    with pytest.raises(TypeError, match="Tensor._symbol is not a __slots__ member"):
        c_view.crecord.setup(dict(names, slots=wrong_name))

    class Other(Tensor):
        __slots__ = ("_sym2",)

    wrong_class = dict(names["slots"], **{"Tensor._sym": (Other, "_sym2")})
    with pytest.raises(TypeError, match="declared on Other, which is not the class given for it"):
        c_view.crecord.setup(dict(names, slots=wrong_class))
    # every failed setup left the previous one in force
    with gt.GradientTape() as tape:
        z = Variable(np.array([3.0])) * 2.0
    np.testing.assert_array_equal(tape.gradient(z, tape.watched_variables()[0]), [2.0])
