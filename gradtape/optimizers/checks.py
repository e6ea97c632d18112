"""Checks of what an optimizer is given: gradients that fit their parameters, and finite ones.

Every message names the parameter (a Variable's name and its index among
the pairs, or a parameter's path in the tree), shows what was received and
says the fix.
"""
from __future__ import annotations

import numpy as np

from ..tracer.tensor import Tensor
from ..tracer.variable import Variable


class NonFiniteGradientError(FloatingPointError):
    """A gradient held NaN or inf while `check_finite=True`; nothing was updated.

    Attributes:
      parameter: the description of the parameter (its name or path).
      step: the optimizer's `iterations` when the update was attempted.
    """

    def __init__(self, message, parameter: str, step: int):
        super().__init__(message)
        self.parameter = parameter
        self.step = step


def describe_pair(var, index: int) -> str:
    """`variable 'w' (index 0)`: how messages name the parameter of a (gradient, variable) pair."""
    if isinstance(var, Variable):
        return f"variable '{var.name}' (index {index})"
    return f"parameter at index {index}"


def describe_path(path: str, index: int, leaf=None) -> str:
    """`parameter params[1]['w'] (leaf 3)`, adding a Variable's name when the leaf is one."""
    name = f" = variable '{leaf.name}'" if isinstance(leaf, Variable) else ""
    return f"parameter params{path}{name} (leaf {index})"


def gradient_arrays(name: str, grads_and_vars) -> tuple[list, list]:
    """The pairs given to `{name}.apply_gradients`, checked: `(updates, skipped)`.

    `updates` holds `(index, gradient as an ndarray, Variable)` for the pairs
    with a gradient, `skipped` the Variables whose gradient is None. One pass,
    and no message is made unless one is raised: this runs on every eager step.

    Raises:
      TypeError/ValueError: as `Optimizer.apply_gradients` says, naming the
        pair (a variable's name and its index).
    """
    updates, skipped = [], []
    i = -1
    for item in grads_and_vars:
        i += 1  # a counter of its own: enumerate would cost a tenth of a microsecond more
        try:
            g, v = item
        except (TypeError, ValueError):
            raise TypeError(
                f"{name}.apply_gradients: expected (gradient, variable) pairs, e.g. zip(grads, variables); "
                f"item {i} is {type(item).__name__}"
            ) from None
        if not isinstance(v, Variable):
            raise TypeError(
                f"{name}.apply_gradients: pair {i} holds a {type(v).__name__} where a gradtape.Variable "
                "belongs; apply_gradients updates Variables in place. Wrap the parameter in "
                "gradtape.Variable, or use update() / gradtape.train_step for NumPy arrays."
            )
        if g is None:
            skipped.append(v)
            continue
        if isinstance(g, Tensor):
            if g._sym is not None:  # g.is_abstract, without a property call
                raise TypeError(
                    f"{name}.apply_gradients: the gradient for {describe_pair(v, i)} is an abstract "
                    "tensor of a trace; apply_gradients changes Variables and cannot run inside staged code. "
                    "Use the functional update() there, or gradtape.train_step."
                )
            g = g._value
        elif type(g) is not np.ndarray:
            g = np.asarray(g)
        value = v._value
        # Equal dtypes are usually one object; when not, or when anything else looks off, the checks
        # below look again in full (and describe the pair only then).
        if g.dtype is not value.dtype or g.shape != value.shape or value.dtype.kind != "f":
            who = describe_pair(v, i)
            check_float_parameter(f"{name}.apply_gradients", who, v)
            check_gradient_fits(f"{name}.apply_gradients", who, g, v)
        updates.append((i, g, v))
    if i < 0:
        raise ValueError(f"{name}.apply_gradients: got no (gradient, variable) pairs")
    if not updates:
        raise ValueError(f"{name}.apply_gradients: No gradients provided for any variable: {[v.name for v in skipped]}")
    return updates, skipped


def check_float_parameter(where: str, who: str, p) -> None:
    """An optimizer updates float parameters only."""
    dtype = np.dtype(p.dtype)
    if dtype.kind != "f":
        raise TypeError(
            f"{where}: {who} has dtype {dtype}; optimizers update float parameters. "
            "Make it a float variable (e.g. gradtape.Variable(x, dtype=np.float64)) or leave it out."
        )


def check_gradient_fits(where: str, who: str, g, p) -> None:
    """The gradient `g` has exactly the shape and dtype of the parameter `p`.

    Raises:
      ValueError: the shapes differ. TypeError: the dtypes differ.
    """
    g_shape, p_shape = tuple(g.shape if hasattr(g, "shape") else np.shape(g)), tuple(p.shape)
    if g_shape != p_shape:
        raise ValueError(
            f"{where}: the gradient for {who} has shape {g_shape}, but the parameter has shape "
            f"{p_shape}; pass gradients in the same order and with the same shapes as the parameters"
        )
    g_dtype, p_dtype = _dtype_of(g), np.dtype(p.dtype)
    if g_dtype != p_dtype:
        raise TypeError(
            f"{where}: the gradient for {who} has dtype {g_dtype}, but the parameter has dtype "
            f"{p_dtype}; cast the gradient (gradtape.cast(g, np.{p_dtype.name})) or keep the "
            "parameter and its loss in one dtype"
        )


def _dtype_of(g) -> np.dtype:
    if isinstance(g, (Tensor, np.ndarray, np.generic)):
        return np.dtype(g.dtype)
    return np.asarray(g).dtype


def non_finite_error(where: str, who: str, g, step: int) -> NonFiniteGradientError:
    """The error for a gradient holding NaN or inf (`g`: its value, or None when only the fact is known)."""
    found = ""
    if g is not None:
        values = np.asarray(g)
        n_nan = int(np.count_nonzero(np.isnan(values)))
        n_inf = int(np.count_nonzero(np.isinf(values)))
        counts = [t for t in (f"{n_nan} NaN" if n_nan else "", f"{n_inf} inf" if n_inf else "") if t]
        found = f": {', '.join(counts)} of {values.size} entries"
    return NonFiniteGradientError(
        f"{where}: the gradient for {who} is not finite in update {step + 1} "
        f"(iterations == {step}){found}. No parameter was updated. Look for log or sqrt of 0 "
        "or of negatives, division by zero, or overflow in the loss (a smaller learning rate "
        "may help).",
        who,
        step,
    )


def first_non_finite(gs) -> int | None:
    """The index of the first concrete gradient holding NaN or inf, or None."""
    for i, g in enumerate(gs):
        if g is None:
            continue
        values = g.numpy() if isinstance(g, Tensor) else g
        if not np.all(np.isfinite(values)):
            return i
    return None
