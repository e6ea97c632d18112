"""The table of op specs that drives the gradient checks of every op.

Each group of ops contributes a list of OpSpec in its own module
(specs_<group>.py); ALL_SPECS gathers them. A spec is a function of
Tensors built from gradtape functions, argument makers (domain-safe random
inputs), the IR ops it exercises, and the orders/modes to check.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np


@dataclasses.dataclass
class OpSpec:
    name: str  # test id
    fn: Callable  # f(*tensors) -> Tensor, written with gradtape functions
    args: Callable  # rng -> list of NumPy arrays / scalars (inputs in a safe domain)
    ops: tuple  # names of the IR ops this spec exercises
    order: int = 3  # check_grads to third order, in both modes
    modes: tuple = ("rev", "fwd")
    numpy_fn: Callable | None = None  # NumPy reference of fn on arrays, if it has one

    def __str__(self):
        return self.name


def normal(*shape, dtype=np.float64):
    return lambda rng: rng.standard_normal(shape).astype(dtype)


def positive(*shape, lo=0.5, hi=2.0, dtype=np.float64):
    return lambda rng: rng.uniform(lo, hi, shape).astype(dtype)


def args(*makers):
    """Combine per-argument makers into one args maker."""
    return lambda rng: [m(rng) for m in makers]


def all_specs() -> list:
    from . import (specs_contract, specs_control, specs_custom, specs_elementwise, specs_indexing,
                   specs_reduce, specs_shape)
    from . import specs_numpy_more
    from . import specs_statistics
    from . import specs_division, specs_linalg, specs_special, specs_sort
    from . import specs_indexed_update
    from . import specs_complex
    from . import specs_fourier_pairs
    from . import specs_complex_matmul

    return (
        specs_elementwise.SPECS
        + specs_numpy_more.SPECS
        + specs_indexing.SPECS
        + specs_reduce.SPECS
        + specs_contract.SPECS
        + specs_custom.SPECS
        + specs_control.SPECS
        + specs_shape.SPECS
        + specs_statistics.SPECS
        + specs_division.SPECS
        + specs_special.SPECS
        + specs_linalg.SPECS
        + specs_sort.SPECS
        + specs_indexed_update.SPECS
        + specs_complex.SPECS
        + specs_fourier_pairs.SPECS
        + specs_complex_matmul.SPECS
    )
