"""The NumPy-like functions of gradtape's public namespace.

Each module registers its functions for the NumPy functions they implement
and installs its own Tensor methods (operators, indexing, .sum, ...).

`__all__` is what `gradtape` re-exports: each module's `__all__`, or, for a
module without one, the public functions it defines (never the names it
imports, such as `np` or `bind`), so a new function is exported as soon as
it is defined.
"""
import types as _types

from . import operators  # noqa: F401  (installs Tensor's arithmetic operators)
from . import indexed_update, inplace_numpy  # noqa: F401  (Tensor.at, t[i] = v, np.add.at and np.put on tensors)
from . import arrays, control_flow, creation, elementwise, implicit, linalg, nn, reductions, shape
from . import elementwise_rest, arrays_more, polynomials, calculus, sets, linear_algebra_more  # the rest of NumPy
from . import grids, joining, rearrange, sorting  # issue 15 point 3: NumPy's shape functions
from . import predicates, scans, statistics, quantiles, bessel  # issue 15 points 2 and 6: reductions, predicates
from . import elementwise_more, elementwise_division  # issue 15 point 1: NumPy's other elementwise functions
from . import bitwise  # & | ^ ~ << >> of integers
from . import complex_numbers  # issue 28: real, imag, conj, angle of complex tensors
from . import fourier  # noqa: F401  (issue 28: numpy.fft on tensors, through NumPy's dispatch)
from . import applied, polyfit  # noqa: F401  (np.apply_along_axis, piecewise, choose, insert, astype, polyfit)
from . import linalg_decomp, linalg_eig, linalg_solve  # issue 15 point 4: numpy.linalg (public as gradtape.linalg)
from .elementwise import *  # noqa: F401,F403
from .elementwise_more import *  # noqa: F401,F403
from .elementwise_division import *  # noqa: F401,F403
from .bitwise import *  # noqa: F401,F403
from .complex_numbers import *  # noqa: F401,F403
from .elementwise_rest import *  # noqa: F401,F403
from .arrays_more import *  # noqa: F401,F403
from .polynomials import *  # noqa: F401,F403
from .calculus import *  # noqa: F401,F403
from .sets import *  # noqa: F401,F403
from .linear_algebra_more import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .rearrange import *  # noqa: F401,F403
from .joining import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .grids import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .arrays import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .scans import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .quantiles import *  # noqa: F401,F403
from .bessel import *  # noqa: F401,F403
from .predicates import *  # noqa: F401,F403
from .control_flow import *  # noqa: F401,F403
from .implicit import *  # noqa: F401,F403
from .linalg_eig import *  # noqa: F401,F403


def _public_functions(module: _types.ModuleType) -> list:
    """`module.__all__`, else the functions `module` itself defines whose names do not start with '_'."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [name for name, obj in vars(module).items()
            if not name.startswith("_") and isinstance(obj, _types.FunctionType)
            and obj.__module__ == module.__name__]


__all__ = [name for module in (elementwise, shape, creation, arrays, reductions, linalg, nn, control_flow, implicit,
                               rearrange, joining, sorting, grids,
                               scans, statistics, quantiles, bessel, predicates, elementwise_more, elementwise_division,
                               elementwise_rest, arrays_more, polynomials, calculus, sets, linear_algebra_more, bitwise,
                               complex_numbers, linalg_eig)
           for name in _public_functions(module)]


# Last, once every module has registered its functions and methods: results that leave gradtape
# are never one of their arguments (fresh.py: `t[i] = v` changes the object t).
from . import fresh as _fresh  # noqa: E402
from ..tracer import numpy_dispatch as _numpy_dispatch  # noqa: E402
from ..tracer.tensor import Tensor as _Tensor  # noqa: E402

_fresh.install_on_namespace(globals(), __all__)
_fresh.install_on_dispatch(_numpy_dispatch._functions)
_fresh.install_on_dispatch(_numpy_dispatch._reductions)
_fresh.install_on_tensor_methods(_Tensor, ("gradtape.functions",))
