"""Ahead-of-time compilation: compile one signature now, save it, load it elsewhere, export it to C.

    g = gradtape.compile(gradtape.grad(loss), ShapeDtype((3, 4)), ShapeDtype((4,)))
    g.save("loss_grad.gtc")                 # machine code + signature, no Python code
    g = gradtape.load("loss_grad.gtc")      # in another process, without loss's module
    gradtape.export_c(g, "libloss.so", header="loss.h")   # a C library: no Python at run time

gradtape.cache_info() and gradtape.clear_cache() (the compile cache on
disk, gradtape.runtime.disk_cache) are re-exported here, next to the other
ways compiled code outlives a process.

Files: specs.py (ShapeDtype), function.py (compile, AotFunction),
trees.py (structures as JSON), artifact.py (the saved file), loading.py (load), export.py and
c_source.py (export_c: the shared library and its header), errors.py.
"""
from .loading import load  # noqa: F401
from .errors import AotError  # noqa: F401
from .export import export_c  # noqa: F401
from .function import AotFunction, compile  # noqa: F401,A004
from .specs import ShapeDtype  # noqa: F401
from ..runtime.disk_cache import cache_info, clear_cache  # noqa: F401,E402
