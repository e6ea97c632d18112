"""What lowering returns (Lowered) and raises (Unsupported, LoweringError), and whether it may call BLAS.

Kept apart from the package's __init__ so that the code generator's own
modules import these from here, below `lower`, which imports them all.
"""
from __future__ import annotations

import contextvars
import dataclasses


class Unsupported(Exception):
    """The Function holds something code generation cannot compile (the message says what)."""


class LoweringError(Unsupported):
    """Code generation failed on an equation it should handle (a code generator
    bug); the message names the equation.

    A subclass of Unsupported, so the runtime still falls back to the interpreter.
    """


@dataclasses.dataclass
class Lowered:
    module: object  # llvmlite.ir.Module
    name: str
    in_types: tuple
    out_types: tuple
    arena_bytes: int = 0
    externals: dict = dataclasses.field(default_factory=dict)
    libraries: tuple = ()
    arena_plan: object = None  # a dynamic version's per-size arena plan (codegen/dynamic_arena.py)


_use_blas = contextvars.ContextVar("gradtape_codegen_use_blas", default=True)


def blas_allowed() -> bool:
    """Whether the lowering in progress may call BLAS (see `lower`)."""
    return _use_blas.get()
