"""`gradtape.linalg`: numpy.linalg on Tensors, differentiable and compiled.

The same functions run when NumPy code calls `np.linalg.solve(t, ...)` on a
Tensor; this namespace offers them by name, as `jax.numpy.linalg` does:

    >>> import gradtape as gt
    >>> gt.linalg.det(gt.constant([[2.0, 1.0], [1.0, 3.0]])).numpy()
    array(5.)

Errors are NumPy's: `LinAlgError` (numpy.linalg.LinAlgError, re-exported
here) for singular, non-square or not positive-definite matrices.
"""
from numpy.linalg import LinAlgError  # noqa: F401

from .functions.linalg import norm  # noqa: F401
from .functions.linalg_decomp import eigh, eigvalsh, qr, svd, svdvals  # noqa: F401
from .functions.linalg_eig import eig, eigvals  # noqa: F401
from .functions.linalg_solve import (  # noqa: F401
    cholesky, det, inv, lstsq, matrix_power, multi_dot, pinv, slogdet, solve)

__all__ = ["LinAlgError", "cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matrix_power", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals"]
