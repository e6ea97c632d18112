"""Messages about NumPy calls on tensors name the function in full, say what
gradtape has instead, and, for a conversion of a traced tensor, name the
NumPy call and the line that made it."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer.errors import ConcretizationError
from gradtape.tracer.numpy_dispatch import ConstantConversionError


def test_an_unsupported_function_is_named_in_full_with_its_alternative():
    x = gt.constant(np.eye(2))
    with pytest.raises(gt.UnsupportedNumPyFunction,
                       match=r"numpy\.copyto on Tensors.*Alternative: .*gradtape\.full\(shape, t\)"):
        np.copyto(np.empty((2, 2)), x)  # (numpy.linalg.eig, named here before issue 28, is supported now)
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"numpy\.spacing on Tensors.*gradtape has no alternative"):
        np.spacing(x)
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"numpy\.add\.accumulate on Tensors"):
        np.add.accumulate(x)
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"numpy\.linalg\.matrix_rank on Tensors"):
        np.linalg.matrix_rank(x)  # (numpy.fft.fft and sort_complex, named here before issue 28, are supported)


def test_a_conversion_in_a_staged_function_names_the_numpy_call_and_the_line():
    def loss(t):
        return np.mean([t, 2 * t]) + t

    with pytest.raises(ConcretizationError, match=r"NumPy \(numpy\.mean, called at test_numpy_messages\.py:\d+: "
                                                  r"`return np\.mean\(\[t, 2 \* t\]\) \+ t`\)"):
        gt.grad(loss)(1.0)

    with pytest.raises(ConcretizationError, match=r"the NumPy call at test_numpy_messages\.py:\d+: "
                                                  r"`return np\.asarray\(t\) \* t`"):
        gt.grad(lambda t: gt.sum(_asarray_times(t)))(np.ones(2))


def _asarray_times(t):
    return np.asarray(t) * t


def test_a_conversion_on_the_tape_names_the_call_too():
    x = gt.constant(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(ConstantConversionError, match=r"numpy\.mean, called at test_numpy_messages\.py"):
            np.mean([x, 2 * x])
