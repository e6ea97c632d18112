"""Freeing PendingTensors (_crecord.c's pending_dealloc, in CPython's generic deallocator's place):
every slot released once, weak references cleared and their callbacks run, chains of any
depth freed without recursion, subclasses freed by their own deallocator then this one."""
import gc
import sys
import weakref

import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import c_view
from gradtape.tracer.deferred import PendingTensor

if c_view.crecord is None:
    pytest.skip("the C extension is not built (pure-Python install)", allow_module_level=True)


class Marker:
    """An object whose references are counted and whose freeing is seen (a weak reference)."""


def _pending(args, params=None):
    from gradtape.ir.ops.elementwise import neg_p
    from gradtape.ir.types import TensorType
    return PendingTensor(neg_p, args, params if params is not None else {}, TensorType((2,), np.dtype(np.float64)))


def test_every_slot_is_released_once():
    args, params, marker = (np.ones(2),), {"m": Marker()}, Marker()
    before = (sys.getrefcount(args), sys.getrefcount(params), sys.getrefcount(marker))
    t = _pending(args, params)
    t._forced = marker
    t._sym = None
    del t
    assert (sys.getrefcount(args), sys.getrefcount(params), sys.getrefcount(marker)) == before


def test_weak_references_are_cleared_and_their_callbacks_run():
    t = _pending((np.ones(2),))
    seen = []
    r = weakref.ref(t, lambda ref: seen.append(ref))
    del t
    assert r() is None and seen == [r]


def test_a_callback_freeing_more_pending_values_while_one_is_freed():
    keep = [_pending((np.ones(2),)) for _ in range(50)]
    probes = [weakref.ref(k) for k in keep]
    t = _pending((np.ones(2),))
    r = weakref.ref(t, lambda ref: keep.clear())  # frees 50 others from inside t's freeing
    del t
    assert r() is None and all(p() is None for p in probes)


def _chain(x, steps, step):
    """(tape, y): `y = step(y)` recorded `steps` times from watched x."""
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(steps):
            y = step(y)
    return tape, y


def test_a_chain_deeper_than_the_c_stack_is_freed():
    tape, y = _chain(gt.constant(np.ones(2)), 200_000, lambda y: -y)
    assert type(y) is PendingTensor
    first = weakref.ref(tape._tape.values[1])
    del tape
    assert first() is not None  # y's chain holds it
    del y
    assert first() is None


def test_a_subclass_is_freed_with_its_own_slots_and_the_base_ones():
    class Sub(PendingTensor):
        __slots__ = ("extra",)

    marker, in_args = Marker(), Marker()
    from gradtape.ir.ops.elementwise import neg_p
    from gradtape.ir.types import TensorType
    s = Sub(neg_p, (in_args,), {}, TensorType((2,), np.dtype(np.float64)))
    s.extra = marker
    refs = (weakref.ref(marker), weakref.ref(in_args), weakref.ref(s))
    del s, marker, in_args
    gc.collect()
    assert all(r() is None for r in refs)


def test_values_stay_right_after_many_recordings_are_freed():
    """Recordings made and freed in turn (their memory reused) compute what NumPy does."""
    w = np.linspace(-1, 1, 8)
    for step in range(20):
        x = gt.constant(w * (step + 1))
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(50):
                y = gt.tanh(y) * 1.5
        want = w * (step + 1)
        for _ in range(50):
            want = np.tanh(want) * 1.5
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-14)
        del tape, y


def test_it_is_in_place_unless_pure_python_is_asked_for():
    from gradtape.tracer import recording
    if recording.record is recording.Recording.record:  # GRADTAPE_PURE_PYTHON=1
        pytest.skip("pure Python recording asked for: CPython frees PendingTensors")
    assert c_view.crecord.fast_dealloc() is True


def test_a_freed_recordings_structure_is_emptied_only_when_nothing_else_holds_it():
    x = gt.constant(np.ones(2))
    tape, y = _chain(x, 3000, lambda y: y * 1.0001)
    held = tape._tape.structure
    entries = list(held)
    del tape
    assert held == entries  # still whole: someone else holds it
    tape, z = _chain(x, 3000, lambda y: y * 1.0001)
    del tape  # its structure emptied as it is freed; the values still compute
    np.testing.assert_allclose(z.numpy(), y.numpy(), rtol=0)
    np.testing.assert_allclose(z.numpy(), np.ones(2) * 1.0001 ** 3000, rtol=1e-12)


def _long_loss(x, steps=3000):
    tape, y = _chain(x, steps, lambda y: gt.tanh(y) * 1.0001)
    with tape:  # (a tape records again when re-entered)
        loss = gt.sum(y)
    return tape, y, loss


def _reference(x, steps=3000):
    y = x
    for _ in range(steps):
        y = np.tanh(y) * 1.0001
    return y


def test_a_kept_loss_holds_its_freed_recordings_values_and_frees_them():
    """A loss kept after its tape is gone: the recording's values go to it (keep_values), stay
    alive while it is unread, compute right, and are freed when it is computed or freed."""
    x = gt.constant(np.linspace(-1, 1, 4))
    tape, y, loss = _long_loss(x)
    first = weakref.ref(tape._tape.values[1])
    del y, tape  # the loss alone is held when the recording goes
    assert first() is not None
    from gradtape.tracer import recording
    if recording.record is not recording.Recording.record:
        assert isinstance(loss._keep, list) and loss._keep[-1] is None
    np.testing.assert_allclose(loss.numpy(), _reference(np.linspace(-1, 1, 4)).sum(), rtol=1e-13)
    assert loss._keep is None and first() is None  # computed: the values went

    tape, y, loss = _long_loss(x)
    first = weakref.ref(tape._tape.values[1])
    del y, tape
    del loss
    assert first() is None


def test_an_intermediate_kept_with_the_loss_stays_right():
    x = gt.constant(np.linspace(-1, 1, 4))
    tape, y, loss = _long_loss(x)
    mid = tape._tape.values[len(tape._tape.values) // 2]
    del tape
    want = _reference(np.linspace(-1, 1, 4))
    del loss  # the values list goes with it: mid (held here) and what it reads stay
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-13)
    assert mid.numpy().shape == (4,)



def test_a_kept_loss_still_reads_what_its_operands_were_after_they_are_assigned():
    """t[i] = v on a tensor a kept loss's chain read (rebind.py through `orphans`): the loss
    computes with the tensor as it was when recorded, the values list kept or not."""
    start = np.linspace(-1, 1, 4)
    x = gt.constant(start.copy())
    tape, y, loss = _long_loss(x)
    del y, tape
    from gradtape.tracer import recording
    if recording.record is not recording.Recording.record:
        assert isinstance(loss._keep, list)
    x[0] = 5.0
    np.testing.assert_allclose(loss.numpy(), _reference(start).sum(), rtol=1e-13)
    assert x.numpy()[0] == 5.0
