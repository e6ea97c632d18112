"""gradtape.load: a saved compiled function (artifact.py reads the file) as an AotFunction."""
from __future__ import annotations

from . import artifact
from .function import AotFunction


def load(path) -> AotFunction:
    """Load a function saved with AotFunction.save (gradtape.compile(...).save(path)).

    Works in a process that has neither the module that defined the
    function nor its source: the file holds machine code and signatures.

    Args:
        path: the file.

    Returns:
        An AotFunction, called as the saved one was.

    Raises:
        AotError: the file is not a saved gradtape function, is damaged, or
            was built for another machine or version (the message names
            the difference: CPU, its features, LLVM, llvmlite, gradtape's
            code generator or file format). Recompile it on this machine.
        OSError: the file cannot be read.

    Example:
        >>> import os, tempfile
        >>> def loss(w, x):
        ...     return gradtape.sum(gradtape.tanh(w @ x) ** 2)
        >>> path = os.path.join(tempfile.mkdtemp(), "loss_grad.gtc")
        >>> gradtape.compile(gradtape.grad(loss), gradtape.ShapeDtype((3, 4)), gradtape.ShapeDtype((4,))).save(path)
        >>> g = gradtape.load(path)   # in another process too, without the module that defined loss
        >>> g(np.ones((3, 4)), np.ones(4)).shape
        (3, 4)
    """
    compiled, in_tree, out_tree, meta = artifact.read(path)
    return AotFunction(compiled, in_tree, out_tree, meta["name"], meta["arg_names"], meta["ir"], fn=None,
                       transform=meta.get("transform", ""))
