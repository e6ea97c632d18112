"""No function hands back its argument itself, even where it changes nothing (functions/fresh.py).

`t[i] = v` changes the object t, so a result that *is* t (a reshape to t's own shape, t[:],
np.copy(t), ...) would change with it: a silent wrong value. Every public function and
method is called here on tensors of several kinds, with its default arguments and with the
arguments that make it a no-op, and an assignment into the argument afterwards must leave
the result as it was.
"""
import warnings

import numpy as np
import pytest

import gradtape as gt
import gradtape.linalg
import gradtape.scipy.special
from gradtape import array_api as xp
from gradtape.tracer import numpy_dispatch

KINDS = {
    "float 1-d": lambda: gt.constant([1.5, -2.0, 3.0]),
    "float 2-d": lambda: gt.constant([[1.0, 2.0], [3.0, 4.0]]),
    "float 1x1": lambda: gt.constant([[1.0]]),
    "float 0-d": lambda: gt.constant(2.5),
    "int 1-d": lambda: gt.constant(np.array([1, 2, 3])),
    "bool 1-d": lambda: gt.constant(np.array([True, False])),
    # v.assign changes a Variable: a result must be a read of it, not the variable
    "Variable": lambda: gt.Variable([1.5, -2.0, 3.0]),
}

# NumPy's np.asarray(a) is a: gradtape's asarray keeps that identity.
SAME_OBJECT = {"asarray"}


def _returns_an_argument(result, t) -> bool:
    if result is t:
        return True
    return isinstance(result, (tuple, list)) and any(_returns_an_argument(r, t) for r in result)


def _public_functions():
    namespaces = [("gradtape", gt, gt.functions.__all__),
                  ("gradtape.linalg", gradtape.linalg, dir(gradtape.linalg)),
                  ("gradtape.scipy.special", gradtape.scipy.special, gradtape.scipy.special.__all__),
                  ("gradtape.array_api", xp, dir(xp))]
    for prefix, module, names in namespaces:
        for name in names:
            fn = getattr(module, name, None)
            if name.startswith("_") or name in SAME_OBJECT or not callable(fn) or isinstance(fn, type):
                continue
            if getattr(fn, "__module__", "").startswith("gradtape"):
                yield f"{prefix}.{name}", fn
    for numpy_fn in list(numpy_dispatch._functions):
        yield f"numpy.{getattr(numpy_fn, '__name__', numpy_fn)}", numpy_fn


def test_no_public_function_returns_its_argument_with_default_arguments():
    """Every function of gradtape's namespaces, and every NumPy function that dispatches to a
    tensor, called on each kind of tensor: those that accept one argument return new objects."""
    offenders, called = [], 0
    for name, fn in _public_functions():
        for kind, make in KINDS.items():
            t = make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    result = fn(t)
                except Exception:  # needs more arguments, or not for this kind: the table below
                    continue
            called += 1
            if _returns_an_argument(result, t):
                offenders.append(f"{name} on {kind}")
    assert called > 600  # the sweep really ran the namespaces
    assert offenders == []


def test_no_tensor_method_or_property_returns_its_tensor():
    offenders = []
    names = [n for n in dir(gt.Tensor) if not n.startswith("__")] + ["__pos__", "__abs__", "__invert__"]
    for name in names:
        for kind, make in KINDS.items():
            t = make()
            try:
                attr = getattr(t, name)
                result = attr() if callable(attr) else attr
            except Exception:
                continue
            if _returns_an_argument(result, t):
                offenders.append(f"t.{name} on {kind}")
    assert offenders == []


# Calls that change nothing: each must still give a new object, which keeps its value when the
# argument is assigned into afterwards.
NO_OPS = {
    "t[:]": lambda t: t[:],
    "t[...]": lambda t: t[...],
    "t[()]": lambda t: t[()],
    "t[0:3]": lambda t: t[0:3],
    "reshape to its shape": lambda t: t.reshape(t.shape),
    "np.reshape to its shape": lambda t: np.reshape(t, (3,)),
    "np.broadcast_to its shape": lambda t: np.broadcast_to(t, (3,)),
    "np.transpose": lambda t: np.transpose(t, (0,)),
    "t.T": lambda t: t.T,
    "np.pad by 0": lambda t: np.pad(t, 0),
    "np.roll by 0": lambda t: np.roll(t, 0),
    "np.roll by the length": lambda t: np.roll(t, 3),
    "np.moveaxis 0 to 0": lambda t: np.moveaxis(t, 0, 0),
    "np.swapaxes 0 and 0": lambda t: np.swapaxes(t, 0, 0),
    "astype its dtype": lambda t: t.astype(t.dtype),
    "np.asarray with its dtype": lambda t: np.array(t, dtype=t.dtype),
    "np.array": lambda t: np.array(t),
    "np.copy": lambda t: np.copy(t),
    "t.copy()": lambda t: t.copy(),
    "np.tile by 1": lambda t: np.tile(t, 1),
    "np.repeat by 1": lambda t: np.repeat(t, 1),
    "np.concatenate of one": lambda t: np.concatenate([t]),
    "np.hstack of one": lambda t: np.hstack([t]),
    "np.sum over no axes": lambda t: np.sum(t, axis=()),
    "np.diff of order 0": lambda t: np.diff(t, n=0),
    "np.squeeze of no axes": lambda t: np.squeeze(t, axis=()),
    "np.flip over no axes": lambda t: np.flip(t, axis=()),
    "np.expand_dims then squeeze": lambda t: np.squeeze(np.expand_dims(t, 0), 0),
    "np.atleast_1d": lambda t: np.atleast_1d(t),
    "np.ravel": lambda t: np.ravel(t),
    "np.real": lambda t: np.real(t),
    "np.conj": lambda t: np.conj(t),
    "np.positive": lambda t: np.positive(t),
    "+t": lambda t: +t,
    "np.nan_to_num of finite values": lambda t: np.nan_to_num(t),
    "np.broadcast_arrays": lambda t: np.broadcast_arrays(t, t)[0],
    "np.meshgrid": lambda t: np.meshgrid(t)[0],
    "np.block": lambda t: np.block([t]),
    "gt.stop_gradient": lambda t: gt.stop_gradient(t),
    "t.at[[]].set": lambda t: t.at[np.array([], dtype=int)].set(1.0),
    "xp.astype": lambda t: xp.astype(t, t.dtype),
    "t.to_device": lambda t: t.to_device("cpu"),
    "t.mT of a stack": lambda t: t.reshape(1, 1, 3)[0].mT.mT[0],
    "t + 0": lambda t: t + 0,
    "0 + t": lambda t: 0 + t,
    "t - 0": lambda t: t - 0,
    "t * 1": lambda t: t * 1,
    "1 * t": lambda t: 1 * t,
    "t / 1": lambda t: t / 1,
    "t ** 1": lambda t: t ** 1,
    "t.at[0].add(0)": lambda t: t.at[0].add(0.0),
}


VALUES = [1.5, -2.0, 3.0]


def _keeps_its_value(make, target, update):
    """make(target) is a new object holding VALUES, and still does after update(target)."""
    result = make(target)
    assert result is not target
    before = np.array(np.asarray(result))
    np.testing.assert_array_equal(before.ravel(), VALUES)
    update(target)
    np.testing.assert_array_equal(np.asarray(result), before)


@pytest.mark.parametrize("make", NO_OPS.values(), ids=NO_OPS.keys())
def test_a_no_op_result_keeps_its_value_when_the_argument_is_assigned_into(make):
    t = gt.constant(VALUES)
    _keeps_its_value(make, t, lambda t: t.__setitem__(0, 99.0))
    assert float(t[0]) == 99.0


@pytest.mark.parametrize("make", [NO_OPS["np.copy"], NO_OPS["t[:]"], NO_OPS["reshape to its shape"],
                                  NO_OPS["t.T"]], ids=["copy", "t[:]", "reshape", "T"])
def test_gradients_flow_through_the_new_objects_on_a_tape_and_staged(make):
    x = np.array([0.5, -1.0, 2.0])

    def loss(x):
        y = x * 1.0
        z = make(y)
        y[0] = 0.0  # must not reach z
        return gt.sum(z ** 2) + gt.sum(y)

    expected = 2 * x + np.array([0.0, 1.0, 1.0])
    np.testing.assert_allclose(gt.grad(loss)(x), expected)
    t = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(t)
        value = loss(t)
    np.testing.assert_allclose(tape.gradient(value, t).numpy(), expected)
    np.testing.assert_allclose(float(value), np.sum(x ** 2) + x[1] + x[2])


@pytest.mark.parametrize("make", NO_OPS.values(), ids=NO_OPS.keys())
def test_a_no_op_result_of_a_variable_keeps_its_value_when_the_variable_is_assigned(make):
    _keeps_its_value(make, gt.Variable(VALUES), lambda v: v.assign([99.0, 0.0, 0.0]))
