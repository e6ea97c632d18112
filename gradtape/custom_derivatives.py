"""Custom derivatives that stay differentiable: custom_vjp, custom_jvp (JAX's API)
and the tape's custom_gradient (TensorFlow's).

Each becomes IR equations whose derivative rules inline the user's rules,
traced into Functions, so what they compute is ordinary IR: it can be
differentiated again (Hessians of functions with custom gradients),
vectorized by vmap, and compiled to native code.

    custom_vjp      gradtape/tracer/custom_vjp.py   the `custom_vjp` op
    custom_jvp      gradtape/tracer/custom_jvp.py   the `custom_jvp` op
    custom_gradient gradtape/tracer/custom_gradient.py
    the ops and their rules: gradtape/ir/ops/custom.py
"""
from .tracer.custom_gradient import custom_gradient  # noqa: F401
from .tracer.custom_jvp import custom_jvp  # noqa: F401
from .tracer.custom_trace import CustomRuleError  # noqa: F401
from .tracer.custom_vjp import custom_vjp  # noqa: F401
