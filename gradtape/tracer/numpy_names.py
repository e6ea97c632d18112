"""Names for messages about NumPy calls on tensors: a NumPy function's public
name in full (`numpy.linalg.eig`, not `eig`), what gradtape offers instead,
and which NumPy call (and which line of the user's code) asked for a plain
array from a tensor."""
from __future__ import annotations

import linecache
import os
import sys

import numpy as np

_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep
_GRADTAPE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# (module, name) of gradtape's public namespaces, searched for a function of the same
# name: filled by the package root (tracer/ does not import the packages above it).
NAMESPACES: list = []

# gradtape.scipy.special (gradtape/scipy_special.py), whose functions stand for scipy.special's
# ufuncs of the same name: set by the package root, as NAMESPACES is.
SCIPY_SPECIAL: list = []

# NumPy functions with no gradtape counterpart of the same name, and what to use instead.
ALTERNATIVES = {
    "numpy.random": "draw with gradtape.random from an explicit key (gradtape.random.key(seed))",
    "numpy.copyto": "NumPy writes into one of its own arrays there (np.full, np.full_like with a NumPy "
                    "prototype, np.copyto); gradtape.full(shape, t) and gradtape.full_like(a, t) take a "
                    "tensor fill value",
}


def public_module(module: str | None) -> str:
    """`numpy._core.fromnumeric` -> `numpy`, `numpy.linalg._linalg` -> `numpy.linalg`."""
    parts = [p for p in (module or "numpy").split(".") if not p.startswith("_")]
    return ".".join(parts) or "numpy"


def full_name(func) -> str:
    """The name users write: numpy.mean, numpy.linalg.eig, numpy.add.reduceat."""
    if isinstance(func, str):
        return func if func.startswith("numpy") else f"numpy.{func}"
    name = getattr(func, "__name__", None) or repr(func)
    if isinstance(func, np.ufunc) and scipy_special_ufunc(func):
        return f"scipy.special.{name}"
    return f"{public_module(getattr(func, '__module__', None))}.{name}"


def scipy_special_ufunc(ufunc) -> bool:
    """Whether `ufunc` is one of scipy.special's (they are NumPy ufuncs with no __module__, so
    `numpy.<name>` to NumPy's messages). Looked up only where SciPy is loaded already: a SciPy
    ufunc exists only then, and `import gradtape` never imports SciPy."""
    name = getattr(ufunc, "__name__", None)
    if name is None or getattr(np, name, None) is ufunc:
        return False
    special = sys.modules.get("scipy.special")
    return special is not None and getattr(special, name, None) is ufunc


def alternative(qualified: str) -> str:
    """A sentence saying what gradtape has instead of `qualified`, or that it has nothing."""
    if qualified in ALTERNATIVES:
        return f"Alternative: {ALTERNATIVES[qualified]}."
    for prefix, text in ALTERNATIVES.items():
        if qualified.startswith(prefix + "."):
            return f"Alternative: {text}."
    short = qualified.rsplit(".", 1)[-1]
    for namespace, label in NAMESPACES:
        if callable(getattr(namespace, short, None)):
            return f"Alternative: {label}.{short}, called directly (it is not registered for {qualified})."
    return ("gradtape has no alternative: compute it on plain arrays with t.numpy() (a constant, "
            "with no derivative), or write it with gradtape functions.")


def _frame_function(frame) -> str:
    """The public name of the NumPy function running in `frame` (numpy.mean, not numpy._core.fromnumeric.mean)."""
    name, module = frame.f_code.co_name, frame.f_globals.get("__name__", "numpy")
    for namespace in (np.linalg, np.fft, np):
        if module.startswith(namespace.__name__) and hasattr(namespace, name):
            return f"{namespace.__name__}.{name}"
    return f"{public_module(module)}.{name}"


def _outside(frame):
    """The first frame, from `frame` outwards, of neither NumPy nor gradtape (or None), and the
    outermost NumPy function on the way (or None)."""
    numpy_function = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_NUMPY_DIR):
            numpy_function = _frame_function(frame)
        elif not filename.startswith(_GRADTAPE_DIR):
            break
        frame = frame.f_back
    return frame, numpy_function


def _where(frame) -> str:
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" + (f": `{line}`" if line else "")


def numpy_caller(skip: int = 1) -> str:
    """Where the current conversion comes from: 'numpy.mean, called at f.py:12: `y = np.mean([x, x])`'.

    Walks out of NumPy's own frames to the first frame of other code; the
    outermost NumPy function on the way is the call that was made (a NumPy
    function written in C, such as np.asarray, leaves no frame: then only
    the line is named)."""
    frame, numpy_function = _outside(sys._getframe(skip + 1))
    if frame is None:
        return numpy_function or "a NumPy call"
    where = _where(frame)
    return f"{numpy_function}, called at {where}" if numpy_function else f"the NumPy call at {where}"


def user_line(skip: int = 1) -> str | None:
    """The line of the user's code running now, outside NumPy and gradtape: 'f.py:12: `y = float(x)`'
    (math.sin(t), np.float64(t) and `out[0] = t` are written in C and leave no frame of their own)."""
    frame, _ = _outside(sys._getframe(skip + 1))
    return None if frame is None else _where(frame)
