"""export_c: a compiled function as a C shared library and header, with nothing of Python at run time.

The Function is lowered again with BLAS off (every contraction a loop:
the library must not need NumPy's OpenBLAS), compiled by LLVM for this
CPU as position-independent code, and linked by the system C compiler
(`cc -shared`, or $CC) with a small C wrapper (c_source.py) into the
library. The object may call libm and glibc's libmvec (vector math),
which the library links against; any other outside symbol (Python's,
NumPy's, BLAS) would be a bug and stops the export.
"""
from __future__ import annotations

import collections
import os
import shutil
import subprocess
import tempfile

from .. import codegen
from .._version import __version__
from ..runtime import elf, jit, target
from ..tracer import tree
from . import c_source
from .errors import AotError
from .function import AotFunction

Exported = collections.namedtuple("Exported", ["library", "header", "function", "workspace_bytes"])

# Symbols an exported object may leave to the system: anything but these prefixes.
_FORBIDDEN_PREFIXES = ("Py", "_Py", "scipy_cblas", "cblas_", "gradtape_rt_")
_LIBMVEC_PREFIX = "_ZGV"


def export_c(compiled: AotFunction, library, header=None, *, name: str | None = None) -> Exported:
    """Write `compiled` as a C shared library and its header.

    The library's function takes one pointer per input and per output
    (C-contiguous buffers of the compiled shapes; see the header's comment
    for the ABI, scratch memory and threads); it needs libm (and libmvec
    for vector math) but nothing of Python, NumPy or llvmlite.

    Args:
        compiled: from gradtape.compile in this process (a loaded file
            holds machine code for the JIT only, not the IR to export).
        library: path of the shared library to write, e.g. "libloss.so".
        header: path of the C header (default: next to the library, named
            after the function).
        name: the C function's name (default: the library's file name
            without "lib" and extension, e.g. "loss").

    Returns:
        Exported(library, header, function, workspace_bytes).

    Raises:
        AotError: no IR to export, code generation cannot compile the
            function, no C compiler (set CC), or linking failed (the
            compiler's message is included).

    Example:
        >>> import os, tempfile
        >>> from gradtape import ShapeDtype
        >>> def loss(w, x):
        ...     return gradtape.sum(gradtape.tanh(w @ x) ** 2)
        >>> vg = gradtape.compile(gradtape.value_and_grad(loss), ShapeDtype((3, 4)), ShapeDtype((4,)))
        >>> out = tempfile.mkdtemp()
        >>> exported = gradtape.export_c(vg, os.path.join(out, "libloss.so"), header=os.path.join(out, "loss.h"))
        >>> exported.function
        'loss'
    """
    if not isinstance(compiled, AotFunction):
        raise TypeError(f"export_c: expected the result of gradtape.compile, got {type(compiled).__name__}")
    if compiled.fn is None:
        raise AotError(f"export_c({compiled.name}): this function was loaded from a file, which holds machine "
                       "code for this process only; export it from gradtape.compile(f, *args) instead")
    library = os.path.abspath(os.fspath(library))
    cname = c_source.identifier(name or _name_from_library(library))
    header = os.path.abspath(os.fspath(header)) if header else os.path.join(os.path.dirname(library), cname + ".h")
    compiler = _compiler()
    kernel = f"{cname}_kernel"
    obj, arena_bytes, symbols = _object(compiled, kernel)
    spec = c_source.ExportSpec(
        name=cname,
        kernel=kernel,
        inputs=_inputs(compiled),
        outputs=_outputs(compiled),
        workspace_bytes=arena_bytes,
        description=f"{_what(compiled)}: {compiled.signature()}",
        generator=f"gradtape {__version__}",
        cpu=target.identity()["cpu"],
        out_of_memory=codegen.failures.OUT_OF_MEMORY_SYMBOL
        if codegen.failures.OUT_OF_MEMORY_SYMBOL in symbols else "",
    )
    header_text = c_source.header_text(spec)
    with tempfile.TemporaryDirectory(prefix="gradtape-export-") as work:
        header_name = os.path.basename(header)
        with open(os.path.join(work, header_name), "w") as f:
            f.write(header_text)
        with open(os.path.join(work, "wrapper.c"), "w") as f:
            f.write(c_source.wrapper_text(spec, header_name))
        with open(os.path.join(work, "kernel.o"), "wb") as f:
            f.write(obj)
        libs = ["-l:libmvec.so.1"] if any(s.startswith(_LIBMVEC_PREFIX) for s in symbols) else []
        out = os.path.join(work, "lib.so")
        cmd = [*compiler, "-shared", "-fPIC", "-O2", "-std=c11", "-o", out, "wrapper.c", "kernel.o", *libs, "-lm"]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            raise AotError(f"export_c({compiled.name}): linking failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
        os.makedirs(os.path.dirname(library) or ".", exist_ok=True)
        shutil.move(out, library)
    os.makedirs(os.path.dirname(header) or ".", exist_ok=True)
    with open(header, "w") as f:
        f.write(header_text)
    return Exported(library, header, cname, arena_bytes)


def _name_from_library(path: str) -> str:
    base = os.path.basename(path).split(".")[0]
    return base[3:] if base.startswith("lib") and len(base) > 3 else base


def _compiler() -> list:
    cc = os.environ.get("CC", "cc").split()
    if not cc or shutil.which(cc[0]) is None:
        raise AotError(f"export_c: no C compiler found ({' '.join(cc) or 'CC is empty'}); install cc "
                       "(gcc or clang) or set CC to one")
    return cc


def _object(compiled: AotFunction, kernel: str):
    """(object bytes, arena bytes, undefined symbols) of the Function lowered without BLAS, as PIC."""
    try:
        lowered = codegen.lower(compiled.fn, kernel, blas=False)
    except codegen.Unsupported as e:
        raise AotError(f"export_c({compiled.name}): code generation cannot compile it: {e}") from None
    timings: dict = {}
    obj = jit.compile_object(str(lowered.module), dict(lowered.externals), tuple(lowered.libraries), timings,
                             f"{kernel} (export)", machine=target.pic_machine())
    symbols = elf.undefined_symbols(obj) or []
    foreign = [s for s in symbols if s.startswith(_FORBIDDEN_PREFIXES)]
    if foreign:
        raise AotError(f"export_c({compiled.name}): the code calls {', '.join(foreign)}, which a library "
                       "without Python and NumPy cannot provide (please report this)")
    return obj, int(lowered.arena_bytes), symbols


def _inputs(compiled: AotFunction) -> list:
    names = _unique([c_source.identifier(n, "in") for n in compiled.arg_names]
                    if len(compiled.arg_names) == len(compiled.in_types)
                    else [f"in{k}" for k in range(len(compiled.in_types))])
    return [c_source.Array(n, t) for n, t in zip(names, compiled.in_types)]


def _outputs(compiled: AotFunction) -> list:
    paths = tree.leaf_paths(compiled.out_tree)
    names = ["out"] if len(compiled.out_types) == 1 else [f"out{k}" for k in range(len(compiled.out_types))]
    taken = {a.name for a in _inputs(compiled)}
    names = [n + "_" if n in taken else n for n in names]
    return [c_source.Array(n, t, f"result{p}") for n, t, p in zip(names, compiled.out_types, paths)]


def _unique(names: list) -> list:
    seen: dict = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}_{k}")
    return out


def _what(compiled: AotFunction) -> str:
    return f"{compiled.transform}({compiled.name})" if compiled.transform else compiled.name


