"""Remake tools/numpy_coverage_upstream.tsv, the upstream list that
tools/numpy_coverage.py reads, from JAX's own namespaces.

    python -m venv /tmp/jax
    /tmp/jax/bin/pip install jax jaxlib numpy scipy
    JAX_ENABLE_X64=1 JAX_PLATFORMS=cpu /tmp/jax/bin/python tools/numpy_coverage_upstream.py

It needs JAX, not gradtape (run it in JAX's environment, not gradtape's).
Every public function of jax.numpy, jax.numpy.linalg, jax.numpy.fft and
jax.scipy.special that NumPy or SciPy also has is called on example
arguments (EXAMPLES, else the first of DEFAULTS that JAX accepts), and
jax.grad of the sum of its float results (real and imaginary parts) says
what it is upstream: differentiable, integer (int or bool results only),
or constant (a zero gradient and the same result at other input values).
A function JAX cannot call or differentiate on any example is left out,
unless autograd differentiates it (AUTOGRAD): constructors of shapes
(zeros, eye, arange), printing and I/O, bitwise functions, and JAX's forms
of NumPy's in-place functions (fill_diagonal, place, put, put_along_axis
need inplace=False, which NumPy's do not take). COMPLEX adds rows with
complex inputs for the functions that exist for complex numbers;
tools/numpy_coverage.py counts them, and numpy.fft's, as unsupported
until gradtape has complex tensors.
"""
from __future__ import annotations

import inspect
import pathlib
import sys
import warnings

import numpy as np
import scipy.special

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from numpy_coverage import _inputs, _leaves  # noqa: E402  the same examples' inputs as gradtape's side

OUT = pathlib.Path(__file__).resolve().parent / "numpy_coverage_upstream.tsv"

HEADER = """\
# The NumPy, numpy.linalg, numpy.fft and scipy.special functions that JAX (jax.numpy,
# jax.numpy.linalg, jax.numpy.fft, jax.scipy.special) or HIPS autograd differentiate, with what
# their results are upstream and one example call. Made by tools/numpy_coverage_upstream.py
# (its docstring says how to rerun it) from JAX {jax}'s namespaces, probing each function with
# jax.grad on its example; the autograd rows are that script's AUTOGRAD list, read from
# autograd 1.9.1's vjp registrations (autograd.core.primitive_vjps). Neither library is
# needed to read it. tools/numpy_coverage.py reads it.
# kind: differentiable (a float result with a derivative), integer (int or bool results),
#       constant (a result that does not depend on the values: zeros_like, ...)
# numbers: complex where the example takes or returns complex numbers upstream, else real
# example: the arguments of one call; x and y are 3x3 float tensors with entries in
#       [0.2, 0.8], m an SPD 3x3 matrix, np NumPy
# name\tkind\tupstream\tnumbers\texample"""

# JAX's namespaces, each with the NumPy or SciPy namespace whose names the rows use
MODULES = ("numpy", "numpy.linalg", "numpy.fft", "scipy.special")

DEFAULTS = {"numpy": ("x", "x, y"), "numpy.linalg": ("m", "m, m"), "numpy.fft": ("x",),
            "scipy.special": ("x", "x, y")}

# Examples where the first default JAX accepts is not the call to make
EXAMPLES = {
    "numpy.argpartition": "x, 1", "numpy.array": "[x, y]", "numpy.array_split": "x, 2",
    "numpy.clip": "x, 0.3, 0.6", "numpy.compress": "x[0], y[0]", "numpy.concatenate": "[x, y]",
    "numpy.concat": "[x, y]", "numpy.convolve": "x[0], y[0]", "numpy.correlate": "x[0], y[0]",
    "numpy.cumulative_prod": "x[0]", "numpy.cumulative_sum": "x[0]", "numpy.delete": "x, 1",
    "numpy.digitize": "x[0], y[0]", "numpy.dsplit": "x[None], 3", "numpy.einsum": "'ij,jk', x, y",
    "numpy.expand_dims": "x, 1", "numpy.full": "(3, 3), x[0, 0]", "numpy.full_like": "x, y[0, 0]",
    "numpy.hsplit": "x, 3", "numpy.interp": "x, [0.0, 0.5, 1.0], y[0]", "numpy.ix_": "x[0]",
    "numpy.ldexp": "x, 1", "numpy.linspace": "x[0, 0], y[0, 0], 5", "numpy.meshgrid": "x[0]",
    "numpy.moveaxis": "x, 0, 1", "numpy.nanpercentile": "x, 50.0", "numpy.nanquantile": "x, 0.5",
    "numpy.pad": "x, 1", "numpy.partition": "x, 1", "numpy.percentile": "x, 50.0",
    "numpy.poly": "x[0]", "numpy.polyadd": "x[0], y[0]", "numpy.polyder": "x[0]",
    "numpy.polydiv": "x[0], y[0]", "numpy.polyint": "x[0]", "numpy.polymul": "x[0], y[0]",
    "numpy.polysub": "x[0], y[0]", "numpy.polyval": "x[0], y", "numpy.quantile": "x, 0.5",
    "numpy.repeat": "x, 2", "numpy.reshape": "x, (9,)", "numpy.resize": "x, 1", "numpy.roll": "x, 1",
    "numpy.rollaxis": "x, 1", "numpy.searchsorted": "x[0], y[0]", "numpy.split": "x, 3",
    "numpy.stack": "[x, y]", "numpy.swapaxes": "x, 0, 1", "numpy.take": "x, 1", "numpy.tile": "x, 2",
    "numpy.trim_zeros": "x[0]", "numpy.unravel_index": "[1, 2], (3, 3)", "numpy.vander": "x[0]",
    "numpy.vsplit": "x, 3", "numpy.where": "x > 0.5, x, y",
    "numpy.linalg.cross": "m, m", "numpy.linalg.matmul": "m, m", "numpy.linalg.matrix_power": "m, 1",
    "numpy.linalg.multi_dot": "[m, m]", "numpy.linalg.outer": "m[0], m[0]", "numpy.linalg.solve": "m, m",
    "numpy.linalg.tensordot": "m, m", "numpy.linalg.tensorinv": "m, 1", "numpy.linalg.vecdot": "m, m",
    "scipy.special.betainc": "x, y, x", "scipy.special.iv": "1, x", "scipy.special.ive": "1, x",
    "scipy.special.jn": "1, x", "scipy.special.multigammaln": "x + 2, 2", "scipy.special.polygamma": "1, x",
    "scipy.special.yn": "1, x",
    # functions the defaults above miss (JAX takes no lists where NumPy takes arrays)
    "numpy.apply_along_axis": "lambda v: v * v, 0, x", "numpy.astype": "x, 'float32'",
    "numpy.bincount": "np.array([0, 1, 1]), x[0]", "numpy.broadcast_to": "x[0], (3, 3)",
    "numpy.choose": "np.array([0, 1, 0]), [x[0], y[0]]", "numpy.histogram2d": "x[0], y[0]",
    "numpy.insert": "x, 1, y[0], 0", "numpy.interp": "x, np.array([0.0, 0.5, 1.0]), y[0]",
    "numpy.intersect1d": "x, x[0]", "numpy.kaiser": "3, x[0, 0]", "numpy.permute_dims": "x, (1, 0)",
    "numpy.piecewise": "x, [x < 0.5], [lambda v: v * v, lambda v: v]", "numpy.polyfit": "x[0], y[0], 1",
    "numpy.roots": "x[0]", "numpy.sort_complex": "x[0] + 1j * y[0]",
    "numpy.take_along_axis": "x, np.array([[0], [1], [2]]), 1",
    "numpy.unravel_index": "np.array([1, 2]), (3, 3)", "numpy.linalg.tensorsolve": "m, m[0]",
    "numpy.linalg.lstsq": "m[:, :2], x",  # more rows than columns: the residuals are not empty
    "numpy.fft.fftfreq": "3, x[0, 0]", "numpy.fft.rfftfreq": "3, x[0, 0]",
    "scipy.special.hyp1f1": "1.5, 2.5, x", "scipy.special.hyp2f1": "0.5, 1.5, 2.5, x",
}

# Functions autograd 1.9.1 differentiates, written out so that autograd is not needed: its public
# names with a vjp (autograd.core.primitive_vjps) and those it differentiates through wrappers of
# such primitives (array, concatenate, stack, where, mean, std, var, linalg.norm)
AUTOGRAD = {
    "numpy." + n for n in (
        "abs absolute acos acosh add amax amin angle arccos arccosh arcsin arcsinh arctan arctan2 arctanh "
        "array array_split asin asinh astype atan atan2 atanh broadcast_to gradient hypot pad permute_dims "
        "pow "
        "atleast_1d atleast_2d atleast_3d clip concatenate conj conjugate cos cosh cross cumsum deg2rad "
        "degrees diag diagonal diff divide dot dsplit einsum exp exp2 expand_dims expm1 fabs fliplr flipud "
        "fmax fmin full hsplit imag inner kron linspace log log10 log1p log2 logaddexp logaddexp2 matmul "
        "max maximum mean min minimum mod moveaxis multiply nan_to_num negative outer partition power prod "
        "rad2deg radians ravel real real_if_close reciprocal remainder repeat reshape roll rollaxis rot90 "
        "sin sinc sinh sort split sqrt square squeeze stack std subtract sum swapaxes tan tanh tensordot "
        "tile trace transpose tril triu true_divide var vsplit where").split()
} | {"numpy.linalg." + n for n in "cholesky det eig eigh inv norm pinv slogdet solve svd".split()} | {
    "scipy.special." + n for n in (
        "beta betainc betaln digamma erf erfc erfcinv erfinv expit gamma gammainc gammaincc gammaln "
        "gammasgn i0 i1 iv ive j0 j1 jn logit logsumexp multigammaln polygamma psi rgamma y0 y1 yn").split()
}

# Rows with complex inputs: a function's complex case, where NumPy code meets complex numbers
COMPLEX = {
    "numpy.abs": "x + 1j * y", "numpy.angle": "x + 1j * y", "numpy.conj": "x + 1j * y",
    "numpy.conjugate": "x + 1j * y", "numpy.real": "x + 1j * y", "numpy.imag": "x + 1j * y",
    "numpy.iscomplex": "x + 1j * y", "numpy.isreal": "x + 1j * y", "numpy.real_if_close": "x + 1j * y",
    "numpy.vdot": "x + 1j * y, y", "numpy.exp": "x + 1j * y",
    "numpy.log": "x + 1j * y", "numpy.sqrt": "x + 1j * y",  # (eigvals' real row is complex already)
    "numpy.linalg.eig": "m + 1j * x", "numpy.linalg.inv": "m + 1j * x",
}


def _namespaces():
    import jax.numpy as jnp
    import jax.scipy.special as jss

    return {"numpy": (jnp, np), "numpy.linalg": (jnp.linalg, np.linalg), "numpy.fft": (jnp.fft, np.fft),
            "scipy.special": (jss, scipy.special)}


def kind_of(f, example):
    """(kind, numbers) of f on `example`: what jax.grad makes of it (differentiable, integer, constant,
    or None: no array result), and whether it takes or returns complex numbers ("complex") or not ("real")."""
    import jax
    import jax.numpy as jnp

    def call(x, y, m):
        return f(*eval(f"({example},)", {"x": x, "y": y, "m": m, "np": np}))  # noqa: S307  this file's own examples

    def total(x, y, m):
        floats = [leaf for leaf in _leaves(call(x, y, m)) if jnp.issubdtype(leaf.dtype, jnp.inexact)]
        return sum(jnp.sum(jnp.real(leaf)) + jnp.sum(jnp.imag(leaf)) for leaf in floats)

    inputs = [jnp.asarray(v) for v in _inputs()]
    leaves = _leaves(call(*inputs))
    if not leaves or not all(isinstance(leaf, jax.Array) for leaf in leaves):
        return None, None
    numbers = "complex" if "1j" in example or any(jnp.iscomplexobj(leaf) for leaf in leaves) else "real"
    if not any(jnp.issubdtype(leaf.dtype, jnp.inexact) for leaf in leaves):
        return "integer", numbers
    grads = jax.grad(total, argnums=(0, 1, 2))(*inputs)
    if any(np.any(np.asarray(g) != 0) for g in grads):
        return "differentiable", numbers
    # a zero gradient: floor, sign, round (differentiable, derivative 0) or zeros_like (constant)
    moved = _leaves(call(*[2.0 * v - 1.7 for v in inputs]))
    same = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(leaves, moved))
    return ("constant" if same else "differentiable"), numbers


def probe(name, examples):
    """(kind, numbers, example) of the first example JAX calls and differentiates, or Nones."""
    module, _, short = name.rpartition(".")
    f = getattr(_namespaces()[module][0], short, None)  # None: a COMPLEX name JAX lacks (real_if_close)
    for example in examples if f is not None else ():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                kind, numbers = kind_of(f, example)
            except Exception:  # noqa: BLE001  an example JAX refuses: try the next one
                continue
        if kind is not None:
            return kind, numbers, example
    return None, None, None


def public_functions(module):
    """The public functions of JAX's `module` that NumPy's or SciPy's namesake also has, sorted."""
    jax_ns, np_ns = _namespaces()[module]
    names = []
    for short in dir(jax_ns):
        obj, theirs = getattr(jax_ns, short), getattr(np_ns, short, None)
        if short.startswith("_") or theirs is None or not callable(obj):
            continue
        if inspect.isclass(theirs) or inspect.ismodule(obj):  # dtypes, ndarray, finfo, ...: not functions
            continue
        names.append(f"{module}.{short}")
    return sorted(names)


def rows():
    """[(name, kind, upstream, numbers, example)]: each probed function, then the COMPLEX rows."""
    out = []
    for module in MODULES:
        for name in public_functions(module):
            examples = (EXAMPLES[name],) if name in EXAMPLES else DEFAULTS[module]
            kind, numbers, example = probe(name, examples)
            if kind is not None:
                out.append((name, kind, "jax+autograd" if name in AUTOGRAD else "jax", numbers, example))
            elif name in AUTOGRAD:
                out.append((name, "differentiable", "autograd", "real", examples[0]))
    for name in sorted(AUTOGRAD - {row[0] for row in out}):
        example = EXAMPLES.get(name, DEFAULTS[name.rpartition(".")[0]][0])
        out.append((name, "differentiable", "autograd", "real", example))
    out.sort()
    for name, example in sorted(COMPLEX.items()):
        kind, numbers, example = probe(name, (example,))
        if kind is not None:
            out.append((name, kind, "jax+autograd" if name in AUTOGRAD else "jax", numbers, example))
    return out


def main() -> int:
    import jax

    if not jax.config.jax_enable_x64:
        print("set JAX_ENABLE_X64=1: the examples are float64", file=sys.stderr)
        return 1
    lines = [HEADER.format(jax=jax.__version__)] + ["\t".join(row) for row in rows()]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(lines) - 1} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
