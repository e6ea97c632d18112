"""The C recorder hides acyclic PendingTensors from the cycle collector (_crecord.c,
`untrack_if_acyclic`): a long recording then costs the collector nothing, and what could
close a cycle stays tracked, so a cycle through it is still collected."""
import gc
import weakref

import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import _crecord, dispatch

pytestmark = pytest.mark.skipif(dispatch.bind is not _crecord.bind, reason="the C recorder is not in use")


def test_ops_on_tensors_arrays_and_shapes_are_untracked(recording):
    x = gt.constant(np.arange(6.0))
    held = np.arange(6.0)  # writeable: the pending op holds its Held
    with gt.GradientTape() as tape:
        tape.watch(x)
        ys = [x * 2.0, x * held, gt.reshape(x, (2, 3)), x[1:4], gt.tanh(x), gt.sum(x, axis=0)]
    # Recording.record (Python), the C recorder's reference, leaves them to the collector
    assert [gc.is_tracked(y) for y in ys] == [recording == "python"] * len(ys)
    np.testing.assert_array_equal(ys[1].numpy(), np.arange(6.0) ** 2)
    np.testing.assert_array_equal(tape.gradient(ys[-1], x).numpy(), np.ones(6))


def test_a_pending_tensor_freed_with_its_tape():
    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.exp(x) * x
    ref = weakref.ref(y)
    del tape, y
    assert ref() is None  # by reference counts alone, as every untracked object


def test_a_cycle_through_a_pending_operand_is_still_collected():
    from gradtape.ir.ops import elementwise as ew
    x = gt.constant(np.ones(3))
    operand = [1.0, 2.0, 3.0]  # a mutable operand: it could refer back to the result
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = dispatch.bind(ew.add_p, x, operand)
    assert gc.is_tracked(y)
    operand.append(y)  # the cycle y -> its operands -> operand -> y
    ref = weakref.ref(y)
    del tape, y, operand
    gc.collect()
    assert ref() is None
