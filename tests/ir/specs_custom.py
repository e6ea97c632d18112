"""Op specs of the custom-derivative ops (custom_vjp, custom_jvp).

Their rules are the true derivatives (written differently from what
autodiff would produce), so the table's finite-difference checks hold in
both modes: reverse mode runs the user's rule (custom_vjp's bwd, custom_jvp's
transposed jvp), forward mode the primal's tangent or the jvp rule.
"""
import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal


@gt.custom_vjp
def _softplus(x):
    return gt.log1p(gt.exp(x))


def _softplus_fwd(x):
    return _softplus(x), x


def _softplus_bwd(x, g):
    return (g * gt.sigmoid(x),)  # stable where exp(x) / (1 + exp(x)) would be inf / inf


_softplus.defvjp(_softplus_fwd, _softplus_bwd)


@gt.custom_vjp
def _scaled_sin(x, y):
    """Two operands broadcast against each other, the residual a product of both."""
    return gt.sin(x) * y


def _scaled_sin_fwd(x, y):
    return _scaled_sin(x, y), (gt.cos(x), gt.sin(x), y)


def _scaled_sin_bwd(res, g):
    cos_x, sin_x, y = res
    gx = g * cos_x * y
    return gx, gt.sum(g * sin_x, axis=0)


_scaled_sin.defvjp(_scaled_sin_fwd, _scaled_sin_bwd)


@gt.custom_jvp
def _tanh_times(x, y):
    return gt.tanh(x) * y


@_tanh_times.defjvp
def _tanh_times_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    t = gt.tanh(x)
    return _tanh_times(x, y), tx * (1.0 - t * t) * y + t * ty


SPECS = [
    OpSpec("custom_vjp", lambda x: _softplus(x) * x, args(normal(2, 3)), ops=("custom_vjp",),
           numpy_fn=lambda x: np.log1p(np.exp(x)) * x),
    OpSpec("custom_vjp_two_operands", _scaled_sin, args(normal(2, 3), normal(3)), ops=("custom_vjp",),
           numpy_fn=lambda x, y: np.sin(x) * y),
    OpSpec("custom_jvp", _tanh_times, args(normal(2, 3), normal(2, 3)), ops=("custom_jvp",),
           numpy_fn=lambda x, y: np.tanh(x) * y),
]
