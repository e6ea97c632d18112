"""gradtape.clear_cache(): empty every compile cache, in memory and on disk.

Compiled machine code is held by the runtime's cache and by whatever keeps
a compiled function: each staged function's programs, the tape's backward
plans. Emptying only one of them frees nothing while another still holds
the code, so this empties all of them; the machine code then goes with the
last reference (code a caller still holds keeps working).
"""
from __future__ import annotations

from .runtime import cache as _runtime_cache
from .runtime import disk_cache as _disk_cache
from .staging import staged as _staged
from .tracer import backward_cache as _backward_cache
from .tracer import backward_plan as _backward_plan


def clear_cache():
    """Empty the compile caches: memory (the runtime's compiled functions, every
    staged function's traces and programs, the tape's backward plans) and disk.

    Their counters restart from zero (a staged function's `cache_info()`
    keeps its own). The next call of each signature traces and compiles
    again. Functions a caller still holds (`gradtape.compile`'s result, a
    CompiledFunction) keep working.

    Example:
        >>> f = gradtape.grad(lambda w: gradtape.sum(w ** 2)); _ = f(np.ones(2))
        >>> gradtape.clear_cache()
        >>> gradtape.runtime.cache_info()["entries"]
        0
    """
    _staged.clear_all_caches()
    _backward_cache.clear_cache()
    getattr(_backward_plan.serve, "clear", lambda: None)()  # the plans' dynamic versions (runtime/dynamic_serving.py)
    _runtime_cache.clear_cache()
    _disk_cache.clear_cache()
