"""LLVM's optimization and code emission in a worker process, recycled before its leaks add up.

Why: each run of llvmlite's new pass manager (llvmlite 0.50, LLVM 22)
leaves about 2.5 KB per pass executed on the C heap that nothing frees,
about 175 KB per kernel at O2 with vectorization: 3,000 signatures took
over 500 MB that neither evicting compiled functions nor clear_cache()
could return (bench/memory_soak.py). Loading machine code leaks nothing
and an engine gives its code back when freed, so only the compile needs
moving: after config.llvm_worker_after compiles in this process, `parse`,
`optimize` and `emit_object` run in a child process instead, which exits
after WORKER_COMPILES requests (its leaks go with it) and is replaced.

    worker = shared()                        # None: compile in this process
    obj, declared = worker.compile(ir_text, level, vectorize, unrolling, timings, label)

The child is a fresh interpreter (never a fork of this threaded process)
running `serve()` from the same gradtape with the same environment; it
imports only what compiling needs (llvmlite, config, jit, target: not the
package's __init__, which would load NumPy and the tracer), and reports its
target (target.identity()) first. It is used only when that equals this
process's, so its object code is what this process would have emitted.
Dumps (config.dump) stay in this process.

Starting the child takes about 0.12 s of CPU (Python, llvmlite and LLVM's
start-up), so it is started in the background as soon as a compile is likely
(`prestart()`: the first staged function, a tape's first compiled backward
plan), and the first compile waits only for what is left of its start-up
(the `worker_wait` stage of its timings). A prestarted child that never
compiled anything is killed at exit.

If the child dies while compiling (LLVM aborts on some input), the compile
raises CompileError naming the signal: the runtime then serves that
function with the interpreter and warns, instead of losing the process.

Protocol on the child's stdin/stdout: frames of a 4-byte header length, a
JSON header, an 8-byte payload length and the payload (IR text in, object
code out).
"""
from __future__ import annotations

import atexit
import json
import os
import struct
import subprocess
import sys
import threading
import time

from . import config
from .errors import CompileError

WORKER_COMPILES = 256  # requests a child serves before it exits (its leak: about 45 MB by then)
_HEADER = struct.Struct("<I")
_PAYLOAD = struct.Struct("<Q")
# The child imports gradtape's runtime without running the package's __init__ (NumPy, the op
# table, the tracer: most of a second it has no use for): a bare package module stands for it.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CHILD = ("import sys, types; package = types.ModuleType('gradtape'); package.__path__ = [sys.argv[1]]; "
          "sys.modules['gradtape'] = package; "
          "from gradtape.runtime.llvm_worker_child import serve; serve()")


class WorkerDied(Exception):
    """The child exited or broke the protocol; the message says how."""


def write_frame(stream, header: dict, payload: bytes):
    head = json.dumps(header).encode()
    stream.write(_HEADER.pack(len(head)) + head + _PAYLOAD.pack(len(payload)) + payload)
    stream.flush()


def _read_exact(stream, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise WorkerDied("the stream ended")
    return data


def read_frame(stream) -> tuple:
    (n,) = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    header = json.loads(_read_exact(stream, n))
    (m,) = _PAYLOAD.unpack(_read_exact(stream, _PAYLOAD.size))
    return header, _read_exact(stream, m)


class Worker:
    """One child process compiling IR text to object code, one request at a time."""

    def __init__(self):
        # Popen returns once the child is exec'd; only ready() waits for its start-up.
        self.process = subprocess.Popen([sys.executable, "-c", _CHILD, _PACKAGE], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, close_fds=True)
        self.served = 0
        self.identity = None  # read by ready()

    def ready(self, timings: dict | None = None) -> dict:
        """The child's target identity (blocks until it has started; the wait is `worker_wait` in `timings`)."""
        if self.identity is None:
            t = time.perf_counter()
            header, _ = read_frame(self.process.stdout)
            self.identity = header["identity"]
            if timings is not None:
                timings["worker_wait"] = timings.get("worker_wait", 0.0) + time.perf_counter() - t
        return self.identity

    def compile(self, ir_text: str, level: int, vectorize: bool, unrolling: bool, timings: dict, label: str):
        """(object bytes, names the optimized module declares but does not define).

        Raises:
            CompileError: LLVM rejected the IR (its message), or the child died (how).
        """
        t = time.perf_counter()
        try:
            write_frame(self.process.stdin, {"level": level, "vectorize": vectorize, "unrolling": unrolling,
                                              "label": label}, ir_text.encode())
            header, obj = read_frame(self.process.stdout)
        except (WorkerDied, OSError, ValueError) as e:
            raise CompileError(f"LLVM's worker process died compiling {label} ({self._death(e)})") from None
        finally:
            self.served += 1
        child = header.get("timings", {})
        for stage, seconds in child.items():
            timings[stage] = timings.get(stage, 0.0) + seconds
        # The round trip beyond the child's stages: the IR and the object through the pipes.
        transfer = max(0.0, time.perf_counter() - t - sum(child.values()))
        timings["worker_transfer"] = timings.get("worker_transfer", 0.0) + transfer
        if "error" in header:
            raise CompileError(header["error"])
        return obj, header["declared"]

    def _death(self, error) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return f"it stopped answering: {error}"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def close(self):
        """Let the child finish (end of its input) and close the pipes; kill it if it does not.
        A child that never compiled (prestarted, perhaps still starting) is killed at once."""
        try:
            if self.served == 0:
                self.process.kill()
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


_lock = threading.Lock()
_current: Worker | None = None
_refused = False  # a child reported another target: compile in this process from now on


def shared(identity: dict, timings: dict | None = None):
    """The running worker (prestarted, started, or replaced once it has served WORKER_COMPILES), or
    None when a worker's target differs from `identity` or none can be started. Waiting for its
    start-up is `worker_wait` in `timings`. Call with `lock()` held."""
    global _current, _refused
    if _refused:
        return None
    if _current is not None and (_current.served >= WORKER_COMPILES or _current.process.poll() is not None):
        _current.close()
        _current = None
    worker = _current
    try:
        if worker is None:
            worker = Worker()
        usable = worker.ready(timings) == identity
    except (OSError, WorkerDied, ValueError):
        usable = False
    if not usable:
        _refused = True
        _current = None
        if worker is not None:
            worker.close()
        return None
    _current = worker
    return _current


def prestart():
    """Start the worker now, without waiting for it, when the next compile will want one: every
    compile goes to a worker (config.llvm_worker_after = 0), and none is running or starting.
    Returns at once; the compile that uses the worker waits for what is left of its start-up."""
    global _current
    if _current is not None or _refused or config.llvm_worker_after != 0 or config.dump:
        return
    if not _lock.acquire(blocking=False):
        return  # a compile holds it: that compile starts the worker it needs
    try:
        if _current is None and not _refused:
            _current = Worker()
    except OSError:
        pass  # the first compile tries again, and compiles in this process if it cannot either
    finally:
        _lock.release()


def lock() -> threading.Lock:
    return _lock


def discard(worker: Worker):
    """Forget `worker` (it died): the next compile starts another."""
    global _current
    if _current is worker:
        _current = None
    worker.close()


def _close_at_exit():
    if _current is not None:
        _current.close()


atexit.register(_close_at_exit)


def _after_fork_in_child():
    """A forked child shares the parent's pipes: it must start its own worker."""
    global _current, _lock
    _current = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
