"""gradtape: automatic differentiation of NumPy-style code, compiled.

Two front doors over one pipeline (tracer -> ir -> codegen -> runtime):

    >>> import gradtape as gt
    >>> x = gt.constant([1.0, 2.0])
    >>> with gt.GradientTape() as tape:          # eager, TensorFlow's semantics
    ...     tape.watch(x)
    ...     y = gt.sum(gt.exp(x))
    >>> tape.gradient(y, x)
    Tensor([2.71828183, 7.3890561 ], dtype=float64)

    >>> df = gt.grad(lambda x: gt.sum(gt.exp(x)))  # staged: traced once per shape, native code
    >>> df(np.array([1.0, 2.0]))
    array([2.71828183, 7.3890561 ])
"""
from ._requirements import check_installed as _check_installed

_check_installed()  # an older NumPy or llvmlite fails here, naming itself, not deep in a compile

from . import ir  # noqa: F401,E402
from . import linalg  # noqa: F401,E402  (numpy.linalg on Tensors: gradtape.linalg.solve, ...)
from . import runtime  # noqa: F401
from . import testing  # noqa: F401
from .api import constant, stop_gradient  # noqa: F401
from .aot import AotFunction, ShapeDtype, cache_info, compile, export_c, load  # noqa: F401,A004
from .caches import clear_cache  # noqa: F401  (memory and disk; gradtape.aot's empties the disk only)
from .custom_derivatives import CustomRuleError, custom_jvp, custom_vjp  # noqa: F401
from .functions import *  # noqa: F401,F403  (exactly functions.__all__)
from .functions import __all__ as _function_names
from .staging import (  # noqa: F401
    StagedFunction,
    differentiable,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
    vmap,
)
from .staging.sparse import COOTriple, sparse_hessian, sparse_jacobian  # noqa: F401
from .tracer import (  # noqa: F401
    ArrayModifiedError,
    ConcretizationError,
    ConstantConversionError,
    ForwardAccumulator,
    GradientTape,
    Tensor,
    TracerError,
    UnconnectedGradients,
    UnexpectedTracerError,
    UnsupportedNumPyFunction,
    Variable,
    custom_gradient,
    make_ir,
)
from .runtime.dynamic_serving import DynamicServing as _DynamicServing  # noqa: E402
from .tracer import backward_plan as _backward_plan  # noqa: E402

# The tape compiles its backward plans by the runtime's policy for serving a Function
# while it compiles: injected here, since tracer/ imports neither runtime nor codegen.
# Plans that differ only in a size share a dynamic version (runtime/dynamic_serving.py).
_backward_plan.serve = _DynamicServing()
del _backward_plan, _DynamicServing

# Optimization loops: optimizers and schedules, the compiled training step, SciPy interop
# (gradtape.scipy imports SciPy only when minimize is called).
from . import optimizers  # noqa: F401,E402
import sys as _sys  # noqa: E402

from . import scipy  # noqa: F401,E402
from . import random  # noqa: F401,E402  (keys and draws: gradtape.random)

# Messages about unsupported NumPy functions name gradtape's function of the same name, if any.
from .tracer import numpy_names as _numpy_names  # noqa: E402
_numpy_names.NAMESPACES[:] = [(_sys.modules[__name__], "gradtape"), (scipy.special, "gradtape.scipy.special")]
del _numpy_names
from .training import TrainStep, train_step  # noqa: F401,E402

from ._version import __version__  # noqa: E402,F401

# The public API: what `from gradtape import *` gives and what the docs describe. The
# subpackages not listed (tracer, staging, codegen, aot, ...) are importable but internal.
__all__ = [
    # tensors, variables and tapes
    "Tensor", "Variable", "GradientTape", "ForwardAccumulator", "UnconnectedGradients", "constant", "stop_gradient",
    "custom_gradient", "custom_vjp", "custom_jvp",
    # staged (traced, compiled) functions and transforms
    "StagedFunction", "differentiable", "grad", "value_and_grad", "jvp", "vjp", "linearize",
    "vmap", "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "sparse_jacobian", "sparse_hessian",
    "COOTriple", "make_ir",
    # compiling ahead of time, and the compile cache
    "compile", "load", "export_c", "AotFunction", "ShapeDtype", "cache_info", "clear_cache",
    # optimization loops
    "optimizers", "train_step", "TrainStep", "scipy",
    # errors
    "ArrayModifiedError", "ConcretizationError", "ConstantConversionError", "TracerError", "UnexpectedTracerError",
    "UnsupportedNumPyFunction",
    "CustomRuleError",
    # modules
    "ir", "linalg", "runtime", "testing",
    # the NumPy-like functions (gradtape/functions)
    *_function_names,
]
