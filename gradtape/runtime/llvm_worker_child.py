"""The child side of llvm_worker.py: a process that optimizes and emits LLVM modules on request.

Apart from llvm_worker.py (the parent's side, which jit.py imports) so that
this module can import jit at the top: jit -> llvm_worker, and only the
child (llvm_worker._CHILD: `serve()`, with a bare `gradtape` package module
standing for the real one, whose __init__ the child has no use for) loads
this one. It imports llvmlite and the runtime's config, jit and target, and
neither NumPy nor the tracer.
"""
from __future__ import annotations

import sys

from . import config, jit, target
from .errors import CompileError
from .llvm_worker import WorkerDied, read_frame, write_frame


def serve():
    """The child's loop: compile each request until stdin closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the protocol stream
    write_frame(stdout, {"identity": target.identity()}, b"")
    while True:
        try:
            request, ir_bytes = read_frame(stdin)
        except WorkerDied:
            return
        timings: dict = {}
        config.loop_unrolling = request["unrolling"]
        try:
            obj, declared = jit.optimize_and_emit(ir_bytes.decode(), timings, request["label"],
                                                  request["level"], request["vectorize"])
            reply = {"declared": declared, "timings": timings}
        except CompileError as e:
            obj, reply = b"", {"error": str(e), "timings": timings}
        write_frame(stdout, reply, obj)
