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

import sys as _sys  # noqa: E402

from . import _lazy  # noqa: E402

from . import array_api  # noqa: F401,E402  (x.__array_namespace__(): the array API standard)
from . import ir  # noqa: F401,E402
from . import linalg  # noqa: F401,E402  (numpy.linalg on Tensors: gradtape.linalg.solve, ...)
from . import testing  # noqa: F401,E402
from .api import constant, stop_gradient  # noqa: F401,E402
from .custom_derivatives import CustomRuleError, custom_jvp, custom_vjp  # noqa: F401,E402
from .functions import *  # noqa: F401,F403,E402  (exactly functions.__all__)
from .functions import __all__ as _function_names  # noqa: E402
from .staging import (  # noqa: F401,E402
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
from .tracer import (  # noqa: F401,E402
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
from . import scipy_special as _scipy_special  # noqa: E402
from .runtime.dynamic_serving import DynamicServing as _DynamicServing  # noqa: E402
from .tracer import backward_plan as _backward_plan  # noqa: E402
from .tracer import numpy_names as _numpy_names  # noqa: E402
from ._version import __version__  # noqa: E402,F401

# The tape compiles its backward plans by the runtime's policy for serving a Function
# while it compiles: injected here, since tracer/ imports neither runtime nor codegen.
# Plans that differ only in a size share a dynamic version (runtime/dynamic_serving.py).
# The hook is light: the compiler behind it loads when the first plan compiles.
_backward_plan.serve = _DynamicServing()
del _backward_plan, _DynamicServing

# Messages about unsupported NumPy functions name gradtape's function of the same name, if any.
_numpy_names.NAMESPACES[:] = [(_sys.modules[__name__], "gradtape"), (_scipy_special, "gradtape.scipy.special")]
# scipy.special's ufuncs on tensors (`scipy.special.expit(t)`) dispatch to gradtape.scipy.special.
_numpy_names.SCIPY_SPECIAL[:] = [_scipy_special]
del _numpy_names

# Loaded at first use (PEP 562, _lazy.py), so that `import gradtape` costs NumPy, the op
# table, the tracer and the functions, not LLVM, networkx or SciPy interop
# (bench/import_time.py): public name -> the module defining it.
__getattr__, __dir__ = _lazy.names(__name__, globals(), {
    # compiling ahead of time, and the compile cache (gradtape/aot, on the runtime)
    "compile": ".aot", "load": ".aot", "export_c": ".aot", "AotFunction": ".aot", "ShapeDtype": ".aot",
    "cache_info": ".aot",
    "clear_cache": ".caches",  # memory and disk; gradtape.aot's empties the disk only
    # sparse derivatives (graph colouring with networkx)
    "COOTriple": ".staging.sparse", "sparse_jacobian": ".staging.sparse", "sparse_hessian": ".staging.sparse",
    # the compiled training step
    "TrainStep": ".training", "train_step": ".training",
}, {
    "optimizers", "scipy", "random",  # optimization loops (optimizers, SciPy interop) and keys and draws
    "runtime", "codegen", "aot", "caches", "training",
})


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
