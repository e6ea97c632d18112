"""The public batched transforms: vmap, jacobian / jacfwd / jacrev, hessian, hvp.

Each returns a StagedFunction: traced once per shape signature, compiled
to one native call (a Jacobian is one call, not a loop over rows), inlined
when called inside another transform, so they nest with grad, jvp and vjp.
"""
from __future__ import annotations

from .api import _check_argnums, _check_callable
from .jacobian_transforms import Hessian, Hvp, Jacobian
from .sparse import sparse_hessian, sparse_jacobian
from .staged import StagedFunction
from .vmap_transform import Vmap


def vmap(f, in_axes=0, out_axes=0):
    """Vectorize `f` over a batch axis of its arguments: one compiled call for the batch.

    f is traced once at the shapes of one batch element; the batching pass
    turns each of its operations into the operation on the whole batch.

    Args:
      f: a function of arrays (or nested lists/tuples/dicts of arrays).
      in_axes: the batch axis of every argument (an int; None: not mapped,
        shared by every element), or a tuple with one int/None per argument
        (applied to every array of a nested argument).
      out_axes: where the batch axis goes in each result: an int, or a
        tuple with one int per item of the tuple f returns.

    Returns:
      A StagedFunction computing f for every batch element, stacked along out_axes.

    Raises:
      ShapeError: mapped arguments whose batch axes differ in length (each
        named with its size), an axis out of range, no mapped argument, or
        in_axes / out_axes of the wrong length.

    Example::

        >>> dot = lambda a, b: gradtape.sum(a * b)
        >>> gradtape.vmap(dot, in_axes=(0, None))(np.ones((4, 3)), np.arange(3.0))
        array([3., 3., 3., 3.])
    """
    _check_callable(f, "vmap")
    return StagedFunction(f, Vmap(in_axes, out_axes))


def _jacobian(f, argnums, mode, name, holomorphic=False):
    _check_callable(f, name)
    _check_argnums(argnums, name)
    return StagedFunction(f, Jacobian(argnums, mode, holomorphic))


def jacfwd(f, argnums=0, *, holomorphic=False):
    """The Jacobian of `f` by forward mode: JVPs over the standard basis, batched in one call.

    Cheaper than jacrev when the inputs have fewer elements than the outputs.

    Args:
      f: a function of float arrays with float array results.
      argnums: the argument (int) or arguments (tuple) to differentiate.
      holomorphic: f is holomorphic, with complex inputs and outputs; the blocks
        hold f'(z) (JAX's holomorphic=True). Complex values are refused without it.

    Returns:
      A StagedFunction returning, for each result leaf of f, the structure
      of the argument whose leaves are blocks of shape `out.shape + in.shape`
      (a tuple of such structures for a tuple argnums), as JAX's jacfwd.

    Example::

        >>> gradtape.jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """
    return _jacobian(f, argnums, "fwd", "jacfwd", holomorphic)


def jacrev(f, argnums=0, *, holomorphic=False):
    """The Jacobian of `f` by reverse mode: VJPs over the standard basis, batched in one call.

    Cheaper than jacfwd when the outputs have fewer elements than the inputs.
    Args, returns: as `jacfwd`.

    Example::

        >>> gradtape.jacrev(lambda x: gradtape.sum(x) * x)(np.array([1.0, 2.0]))
        array([[4., 1.],
               [2., 5.]])
    """
    return _jacobian(f, argnums, "rev", "jacrev", holomorphic)


def jacobian(f, argnums=0, *, mode="auto", sparse=False, holomorphic=False):
    """The Jacobian of `f`, by the cheaper mode for its shapes, or exploiting sparsity.

    Args:
      f: a function of float arrays with float array results.
      argnums: the argument (int) or arguments (tuple) to differentiate.
      mode: "auto" (forward mode when the inputs have no more elements than
        the outputs, else reverse), "fwd" or "rev".
      sparse: detect the Jacobian's sparsity pattern from the traced IR,
        colour its columns and compute it with one compressed batched JVP
        (see `gradtape.sparse_jacobian`); the result is a scipy.sparse array.
      holomorphic: as in `jacfwd` (not with sparse=True).

    Returns:
      A StagedFunction returning blocks `out.shape + in.shape`, as `jacfwd`
      (a sparse matrix with sparse=True).

    Example::

        >>> J = gradtape.jacobian(lambda x: gradtape.sin(x))(np.zeros(3))
        >>> J.shape
        (3, 3)
    """
    if mode not in ("auto", "fwd", "rev"):
        raise ValueError(f"jacobian: mode must be 'auto', 'fwd' or 'rev', got {mode!r}")
    if sparse:
        if holomorphic:
            raise ValueError("jacobian: sparse=True does not take holomorphic=True")
        return sparse_jacobian(f, argnums)
    return _jacobian(f, argnums, mode, "jacobian", holomorphic)


def hessian(f, argnums=0, *, sparse=False, holomorphic=False):
    """The Hessian of a scalar `f`: forward mode over reverse mode, one compiled call.

    Args:
      f: a function returning a float scalar.
      argnums: the argument (int) or arguments (tuple) to differentiate.
      sparse: exploit the Hessian's sparsity pattern (see `gradtape.sparse_hessian`).
      holomorphic: f is holomorphic, of complex inputs with a complex scalar output: the
        blocks hold f''(z), as JAX's hessian(holomorphic=True). Complex inputs are refused
        without it, as JAX's (its jacfwd refuses them); for a real function of complex
        inputs, `hvp` gives the JVP of the gradient (docs/complex.md).

    Returns:
      A StagedFunction returning blocks of shape `in.shape + in.shape` (for
      an array argument x: an array of shape x.shape + x.shape).

    Raises:
      TypeError: f does not return one float scalar (naming what it returned).

    Example::

        >>> gradtape.hessian(lambda x: gradtape.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    _check_callable(f, "hessian")
    _check_argnums(argnums, "hessian")
    if sparse:
        if holomorphic:
            raise ValueError("hessian: sparse=True does not take holomorphic=True")
        return sparse_hessian(f, argnums)
    return StagedFunction(f, Hessian(argnums, holomorphic))


def hvp(f):
    """The Hessian-vector product of a scalar `f`, without forming the Hessian.

    Forward mode over reverse mode: the JVP of the gradient, compiled as one
    function whose cost is a small multiple of f's.

    Args:
      f: a function `f(x, *args)` returning a float scalar.

    Returns:
      A StagedFunction `g(x, v, *args)` = ``(d^2 f / dx^2)(x, *args) @ v``, shaped
      like x. The argument order matches SciPy's `hessp(x, p, *args)`. For complex x
      it is the JVP along v of JAX's gradient (``jax.jvp(jax.grad(f), (x,), (v,))``).

    Raises:
      TypeError: v not shaped like x; f not returning one float scalar.

    Example::

        >>> gradtape.hvp(lambda x: gradtape.sum(x ** 3))(np.array([1.0, 2.0]), np.ones(2))
        array([ 6., 12.])
    """
    _check_callable(f, "hvp")
    return StagedFunction(_IgnoringV(f), Hvp())


class _IgnoringV:
    """`(x, v, *args) -> f(x, *args)`: what Hvp traces (v becomes the tangent)."""

    def __init__(self, f):
        self.f = f
        self.__name__ = getattr(f, "__name__", type(f).__name__)

    def __call__(self, x, v, *args):
        return self.f(x, *args)
