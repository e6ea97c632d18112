"""Settings of the runtime, read from the environment once at import.

Each is a plain module attribute, so tests and programs may also assign it:

    import gradtape.runtime.config as rt_config
    rt_config.async_compile = False

- `dynamic_plans` (GRADTAPE_DYNAMIC_PLANS, default on): a tape's backward
  plans that differ only in one size share one compiled dynamic version
  (dynamic_serving.py); off, each plan compiles its own.
- `async_compile` (GRADTAPE_ASYNC_COMPILE, default off): off, a new
  signature's native code is compiled in the call that meets it (as JAX's
  `jit` does), so the same program gives the same bits in every run. On,
  compile_function_async builds native code on a background thread and the
  reference interpreter serves the calls made meanwhile (W3's first call:
  about 30 ms instead of 200-300 ms, bench/first_call.py); the interpreter's
  last bits differ from native code's, so which calls it served, and so the
  results, then depend on timing. It is meant for interactive use; call
  runtime.wait_for_compiles() before timing steady-state calls. The tape's
  backward plans are interpreted for their first runs either way: that
  switch is by a count of runs, not by time (tracer/backward_plan.py).
- The target CPU (GRADTAPE_CPU, default `host`) is read by
  gradtape.codegen.cpu, since the code generator's choices depend on it too.
- `threads` and `parallel_min_elements` (GRADTAPE_THREADS,
  GRADTAPE_PARALLEL_MIN_ELEMENTS): the thread pool's settings as the
  environment gives them, read here so that a bad one stops `import
  gradtape` rather than the first compile; parallel.py, which loads with the
  compiler, documents them, and parallel.configure changes them.
- `opt_level` (GRADTAPE_OPT_LEVEL, default 2): the new pass manager's speed
  level, with loop and SLP vectorization on. O2 and O3 give equally fast code
  here (bench/compile_pipeline.py), and 0 turns the IR passes off.
- `loop_unrolling` (GRADTAPE_LOOP_UNROLLING, default on): LLVM's loop
  unroller in that pipeline. Off, compiles take about a third less time
  (W3's gradient: optimize + emit_object 120 -> 79 ms of CPU), but kernels
  with short inner loops run slower (a softmax over rows of 10: 2.7 -> 3.7
  us; W3: 2.8 -> 3.3 ms), so it stays on (bench/compile_pipeline.py
  --unrolling).
- `fast_call` (GRADTAPE_FAST_CALL, default on): call through the generated
  METH_FASTCALL wrapper; off, through ctypes (slower, for debugging).
- `compile_errors` (GRADTAPE_COMPILE_ERRORS, "warn" or "raise", default
  "warn"): what a failure of code generation or LLVM other than
  codegen.Unsupported does. "warn" falls back to the interpreter with a
  RuntimeWarning naming the error; "raise" raises runtime.CompileError.
- `release_gil_bytes` (GRADTAPE_RELEASE_GIL_BYTES, default 262144): a native
  call releases the GIL when its inputs, outputs and arena hold at least
  this many bytes, so other Python threads run while it computes (and it
  uses the calling thread's arena). Below that, the release and the
  thread-local lookup cost more than they let others gain (about 0.5-1 µs
  a call, bench/call_overhead.py).
- `dump` (GRADTAPE_DUMP, comma-separated stage names): print the LLVM IR of
  these stages to stderr as functions compile: `llvm` (as lowered, with the
  call wrapper), `opt` (optimized), `asm` (machine code).
- `disk_cache` (GRADTAPE_DISK_CACHE, default on): keep compiled object
  code on disk, so that a new process calling the same function with the
  same shapes loads it (about 2 ms) instead of compiling it (100-300 ms).
  disk_cache.py has the details.
- `cache_dir` (GRADTAPE_CACHE_DIR): where the disk cache lives; None (unset)
  means the per-user default, $XDG_CACHE_HOME/gradtape or
  ~/.cache/gradtape; "" (set but empty) turns the disk cache off.
- `cache_max_bytes` (GRADTAPE_CACHE_MAX_BYTES, default 512 MiB): the disk
  cache's size bound; the least recently used entries go first.
- `memory_cache_entries` (GRADTAPE_MEMORY_CACHE_ENTRIES, default 256): at
  most this many compiled functions stay in the runtime's in-memory cache
  (the least recently used go first; their machine code is freed once
  nothing else holds them), and each staged function keeps the traces and
  programs of at most this many signatures. A signature met again after
  its eviction is traced and compiled (or loaded from disk) again. 0 or
  less means no bound.
- `memory_cache_bytes` (GRADTAPE_MEMORY_CACHE_BYTES, default 256 MiB): the
  same cache's bound on the machine code and private scratch arenas of
  the functions it holds (cache.py's footprint); 0 or less means no bound.
- `llvm_worker_after` (GRADTAPE_LLVM_WORKER_AFTER, default 0): after this
  many compiles in the process, LLVM's optimization and code emission run
  in a child process that is replaced every 256 compiles (llvm_worker.py).
  0 (the default) sends every compile there, for two reasons: an LLVM
  assertion (an abort, which LLVM bugs do raise: issue 14) then kills only
  the child, and the function falls back to the interpreter with a warning
  instead of the program ending; and each in-process compile leaves about
  175 KB that LLVM never frees. The price is starting the child once per
  process (on the compile thread, while the interpreter serves). A negative
  value keeps every compile here (unguarded).
"""
import os


def env_int(name: str, default: int) -> int:
    """The integer in environment variable `name`, `default` when it is unset or blank.

    Raises:
        ValueError: naming the variable, when it holds something else.
    """
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}; unset it for the default") from None


MAX_THREADS = 64


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def check_threads(threads: int, where: str = "parallel.configure: threads", default: str = "None") -> int:
    """`threads` when it is an int from 1 to MAX_THREADS; else ValueError naming `where`."""
    if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= MAX_THREADS:
        raise ValueError(
            f"{where} must be an int from 1 to {MAX_THREADS} (or {default} for the "
            f"default, {available_cpus()}), got {threads!r}"
        )
    return threads


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")


# Off by default: results must not depend on when a background compile finishes (see above).
async_compile = _flag("GRADTAPE_ASYNC_COMPILE", False)
# A tape's backward plans that differ only in a size share one dynamic version (dynamic_serving.py).
dynamic_plans = _flag("GRADTAPE_DYNAMIC_PLANS", True)
opt_level = int(os.environ.get("GRADTAPE_OPT_LEVEL", "2"))
loop_unrolling = _flag("GRADTAPE_LOOP_UNROLLING", True)
fast_call = _flag("GRADTAPE_FAST_CALL", True)
compile_errors = os.environ.get("GRADTAPE_COMPILE_ERRORS", "warn").strip().lower()
release_gil_bytes = int(os.environ.get("GRADTAPE_RELEASE_GIL_BYTES", str(256 * 1024)))
dump = frozenset(s.strip() for s in os.environ.get("GRADTAPE_DUMP", "").split(",") if s.strip())
disk_cache = _flag("GRADTAPE_DISK_CACHE", True)
cache_dir = os.environ.get("GRADTAPE_CACHE_DIR")
cache_max_bytes = int(os.environ.get("GRADTAPE_CACHE_MAX_BYTES", str(512 * 1024 * 1024)))
memory_cache_entries = int(os.environ.get("GRADTAPE_MEMORY_CACHE_ENTRIES", "256"))
memory_cache_bytes = int(os.environ.get("GRADTAPE_MEMORY_CACHE_BYTES", str(256 * 1024 * 1024)))
llvm_worker_after = int(os.environ.get("GRADTAPE_LLVM_WORKER_AFTER", "0"))
# The thread pool's settings (parallel.py, loaded at the first compile, documents them): read
# here so that a bad value stops `import gradtape`, not the first compile.
threads = check_threads(env_int("GRADTAPE_THREADS", min(MAX_THREADS, available_cpus())), "GRADTAPE_THREADS", "unset")
parallel_min_elements = env_int("GRADTAPE_PARALLEL_MIN_ELEMENTS", 65536)
