"""Run a function the three ways gradtape can: eager, the reference interpreter, compiled code.

    eager, interpreted, compiled = three_ways(f, *args)

`f` takes and returns Tensors. Eager calls it on the arguments; the other two
trace it once (gt.make_ir) and run the traced Function in the interpreter
(ir.eval_function) and as native code (runtime.compile_function, which must
not fall back: a fallback would hide what the compiled path computes).
"""
from __future__ import annotations

import numpy as np

import gradtape as gt
from gradtape import ir, runtime


def three_ways(f, *args):
    eager = f(*[gt.constant(a) if isinstance(a, np.ndarray) else a for a in args])
    fn = gt.make_ir(f, *args)
    inputs = [np.asarray(a) for a in args]
    interpreted = ir.eval_function(fn, inputs)
    compiled_fn = runtime.compile_function(fn)
    assert compiled_fn.native, f"compiled code fell back: {compiled_fn.fallback_reason}"
    compiled = compiled_fn(*inputs)
    return _numpy(eager), _single(interpreted), _single(compiled)


def _numpy(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _single(outs):
    return np.asarray(outs[0]) if len(outs) == 1 else [np.asarray(o) for o in outs]
