"""The oracle of the batching tests: the reference interpreter run once per
batch element on the original Function, its results stacked along each
output's batch axis, compared with the interpreter run on vmap's Function."""
from __future__ import annotations

import itertools

import numpy as np

from gradtape import ir

B = 3  # batch size of the table-driven tests


def per_element(fn, elements, in_axes, out_axes):
    """Stack fn evaluated on each batch element: elements[b] holds one value per input.

    Shared inputs (in_axes None) take element 0's value in every batch element.
    """
    in_axes = in_axes if isinstance(in_axes, (list, tuple)) else [in_axes] * len(fn.invars)
    outs = [
        ir.eval_function(fn, [e[i] if k is not None else elements[0][i] for i, k in enumerate(in_axes)])
        for e in elements
    ]
    out_axes = out_axes if isinstance(out_axes, (list, tuple)) else [out_axes] * len(fn.outvars)
    return [
        outs[0][j] if k is None else np.stack([o[j] for o in outs], axis=k)
        for j, k in enumerate(out_axes)
    ]


def stacked_inputs(elements, in_axes):
    """The batched Function's inputs: batched ones stacked along their axis, shared ones from element 0."""
    in_axes = in_axes if isinstance(in_axes, (list, tuple)) else [in_axes] * len(elements[0])
    return [
        elements[0][i] if k is None else np.stack([e[i] for e in elements], axis=k)
        for i, k in enumerate(in_axes)
    ]


def assert_same(got, want, exact, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
    )
    if exact or want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:  # reductions may sum in another order once the batch axis is there
        rtol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=what)


def check_vmap(fn, elements, in_axes, out_axes=0, exact=False):
    """vmap(fn) on the stacked elements equals fn on each element, stacked; returns the batched Function."""
    batched = ir.vmap(fn, in_axes, len(elements), out_axes)
    got = ir.eval_function(batched, stacked_inputs(elements, in_axes), check_types=True)
    want = per_element(fn, elements, in_axes, out_axes)
    for j, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, exact, f"output {j} with in_axes={in_axes}, out_axes={out_axes}\n{batched}")
    return batched


def input_subsets(n):
    """Non-empty subsets of n inputs to batch: all of them for n <= 3, else each alone and all."""
    if n <= 3:
        return [s for r in range(1, n + 1) for s in itertools.combinations(range(n), r)]
    return [(i,) for i in range(n)] + [tuple(range(n))]


def check_every_subset(fn, make_args, seed, exact):
    """Batch each subset of fn's inputs along axis 0 and along the last axis."""
    rng = np.random.default_rng(seed)
    elements = [make_args(rng) for _ in range(B)]
    for subset in input_subsets(len(fn.invars)):
        for axis in (0, -1):
            in_axes = [axis if i in subset else None for i in range(len(fn.invars))]
            check_vmap(fn, elements, in_axes, out_axes=axis, exact=exact)
