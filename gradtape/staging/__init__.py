"""The staged front door: `differentiable`, `grad`, `value_and_grad`, and the
transforms `jvp`, `vjp`, `linearize`, `vmap`, `jacfwd`, `jacrev`, `jacobian`,
`hessian`, `hvp`.

A staged function is traced once per shape signature with abstract
tensors; forward (and backward) become one optimized, compiled Function.

Files, in the order a call goes through them: api.py (the public
functions), staged.py (StagedFunction: the cache and the call paths),
tracer/signature.py (the cache key), tracer/trace.py (abstract tracing,
captures; tracer/trace_context.py: which trace an op emits into), transforms.py (forward and value_and_grad as IR), program.py (a cache
entry), nesting.py (inlining into an enclosing trace), tape_calls.py
(recording on a GradientTape).
The other transforms: forward_api.py (jvp, vjp, linearize: the point and
the function together) with linear_transforms.py and later.py (the
pullback and linear map, split off by ir.partial_eval); batched_api.py
(vmap, Jacobians, Hessians) with vmap_transform.py, jacobian_transforms.py
and derivative_functions.py (the Jacobian and Hessian Functions).
"""
from .api import differentiable, grad, value_and_grad  # noqa: F401
from .batched_api import hessian, hvp, jacfwd, jacobian, jacrev, vmap  # noqa: F401
from .forward_api import jvp, linearize, vjp  # noqa: F401
from .staged import CacheInfo, StagedFunction  # noqa: F401
