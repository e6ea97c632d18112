"""The lowering table: one Rule per op object, `RULES[op]`.

    rule.lower(ctx, eqn, *operand_nodes) -> Node

returns the Node of the equation's value. Elementwise and layout ops
("fusable") return a Node that computes elements on demand, so whoever
reads it inlines it; the fusion planner decides which of them are stored
anyway. The other kinds add a step that writes the value into a buffer and
return a View of it; `kind` also tells the planner how they read their
operands:

    elementwise   reads operands at its own index (broadcast ones elsewhere)
    layout        reads its operand at remapped indices
    reduction     iterates its operand's index space once (the loop fuses it)
    per_operand   concatenate: one loop per operand over the operand's space
    scatter       iterates the updates once, the indices once per update
    contract      reads operands once (BLAS views them or copies them)
    inlined       `call`, `custom_vjp`, `custom_jvp`: replaced by their (primal)
                  sub-Function before lowering
    control       `cond`, `scan`, `while`, `checkpoint`: read operands from memory and call their
                  sub-Functions natively, in a branch or a loop (control.py)

Elementwise ops get their rule from one of two tables keyed by op: the math
table (math.py: exp, tanh, pow, ...) or the scalar code of everything else
(scalar.py: arithmetic, comparisons, where; cast has its own rule). An op that needs new
native math needs only its entry in the math table.

`cheap` marks ops worth recomputing rather than storing when a value is read
a few times (a predicate of the equation where it depends on the params or
operands: x ** 2 is a multiplication, x ** 2.7 a call of pow; math_pow.py
decides which).

An error while generating an equation's code names that equation
(LoweringError, which the runtime reports and answers with the interpreter).
custom_gradient has no rule: it runs Python, so lowering raises
Unsupported for it.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..ir import Literal, ops
from ..ir.op import Op
from . import layout
from .lowered import LoweringError, Unsupported
from .contract import lower_contract
from .lapack import lower_cholesky, lower_eigh, lower_pinv, lower_qr, lower_slogdet, lower_solve, lower_svd
from .control import lower_checkpoint, lower_cond, lower_scan
from .control_stack import lower_while, lower_while_vjp
from .math import MATH_FUNCTIONS, MathFunction, emit_math
from .math_pow import pow_shortcut
from .nodes import Map, View
from .scalar import SCALAR, make_cast
from .sort import lower_argsort
from .complex_gemm import lower_complex_matmul
from .fft_steps import lower_fft_pairs, lower_irfft_pairs, lower_rfft_pairs
from .reductions import ArgReduce
from .steps import Fill, ScatterAdd


@dataclasses.dataclass(frozen=True)
class Rule:
    lower: Callable
    kind: str
    cheap: bool | Callable = False

    @property
    def fusable(self) -> bool:
        return self.kind in ("elementwise", "layout")

    def is_cheap(self, eqn) -> bool:
        return self.cheap(eqn) if callable(self.cheap) else self.cheap


def _naming(eqn, emit):
    """`emit`, with any error it raises (when the step's code is generated,
    after lowering) reported as a failure on `eqn`."""
    def emit_of_eqn(k, values):
        try:
            return emit(k, values)
        except Unsupported:
            raise
        except Exception as e:
            raise LoweringError(f"code generation failed on `{eqn}`: {type(e).__name__}: {e}") from e

    return emit_of_eqn


def _elementwise(make, cheap=True):
    def lower(ctx, eqn, *ins):
        emit = make([x.dtype for x in ins], eqn.out.type.dtype, **eqn.params)
        return Map(eqn.out.type, _naming(eqn, emit), ins)

    return Rule(lower, "elementwise", cheap)


def _math_rule(f: MathFunction) -> Rule:
    def make(in_dtypes, out_dtype, **params):
        return lambda k, values: emit_math(k.b, f.op, *values)

    # The op's `cheap` fact, except for pow, where it depends on the exponent
    # (math_pow.py turns some into a few multiplications).
    return _elementwise(make, cheap=_pow_is_cheap if f.op is ops.pow_p else f.op.cheap)


def _pow_is_cheap(eqn) -> bool:
    y = eqn.inputs[1]
    if not isinstance(y, Literal) or np.size(y.value) != 1:
        return False
    shortcut = pow_shortcut(np.asarray(y.value).reshape(()).item())
    return shortcut is not None and shortcut.cheap


def _lower_cast(ctx, eqn, x):
    if x.dtype == eqn.out.type.dtype:
        return x
    return Map(eqn.out.type, make_cast([x.dtype], eqn.out.type.dtype), [x])


def _identity(ctx, eqn, x):
    return x


def _reduction(kind):
    return Rule(lambda ctx, eqn, x: ctx.reduce(x, eqn.params["axes"], kind, ctx.dest(eqn.out)), "reduction")


def _arg(kind):
    def lower(ctx, eqn, x):
        dest = ctx.dest(eqn.out)
        ctx.add(ArgReduce(dest, x, eqn.params["axis"], kind))
        return dest

    return Rule(lower, "reduction")


def _lower_scatter_add(ctx, eqn, x, idx):
    dest = ctx.dest(eqn.out)
    ctx.add(ScatterAdd(dest, x, idx, eqn.params["axis"]))
    return dest


def _lower_concatenate(ctx, eqn, *xs):
    dest = ctx.dest(eqn.out)
    axis = eqn.params["axis"]
    at = 0
    for x in xs:
        part = View(dest.buffer, x.type, dest.offset + at * dest.strides[axis], dest.strides)
        ctx.add(Fill(part, x))
        at += x.shape[axis]
    return dest


def _call_is_inlined(ctx, eqn, *xs):
    raise AssertionError(f"{eqn.op.name} equations are inlined before lowering (ir/inline_calls.py)")


def _layout(fn, cheap=True):
    return Rule(fn, "layout", cheap)


RULES: dict[Op, Rule] = {
    **{op: _elementwise(make, cheap=op.cheap) for op, make in SCALAR.items()},
    **{op: _math_rule(f) for op, f in MATH_FUNCTIONS.items()},
    ops.cast_p: Rule(_lower_cast, "elementwise", cheap=True),
    ops.stop_gradient_p: Rule(_identity, "elementwise", cheap=True),
    ops.broadcast_to_p: _layout(lambda ctx, eqn, x: layout.broadcast_to(x, eqn.out.type)),
    ops.reshape_p: _layout(lambda ctx, eqn, x: layout.reshape(x, eqn.out.type)),
    ops.transpose_p: _layout(lambda ctx, eqn, x: layout.transpose(x, eqn.out.type, eqn.params["perm"])),
    ops.slice_p: _layout(lambda ctx, eqn, x: layout.slice_(
        x, eqn.out.type, eqn.params["starts"], eqn.params["steps"])),
    ops.pad_p: _layout(lambda ctx, eqn, x: layout.pad(
        x, eqn.out.type, eqn.params["pad_width"], eqn.params["value"])),
    ops.unslice_p: _layout(lambda ctx, eqn, x: layout.unslice(
        x, eqn.out.type, eqn.params["starts"], eqn.params["steps"])),
    ops.gather_p: _layout(lambda ctx, eqn, x, idx: layout.gather(x, idx, eqn.out.type, eqn.params["axis"])),
    ops.reduce_sum_p: _reduction("sum"),
    ops.reduce_prod_p: _reduction("prod"),
    ops.reduce_max_p: _reduction("max"),
    ops.reduce_min_p: _reduction("min"),
    ops.argmax_p: _arg("argmax"),
    ops.argmin_p: _arg("argmin"),
    ops.argsort_p: Rule(lower_argsort, "reduction"),  # reads each row once, into its sort buffer
    ops.fft_pairs_p: Rule(lower_fft_pairs, "contract"),  # native FFT kernels (fft_steps.py): rows read once
    ops.rfft_pairs_p: Rule(lower_rfft_pairs, "contract"),
    ops.irfft_pairs_p: Rule(lower_irfft_pairs, "contract"),
    ops.scatter_add_p: Rule(_lower_scatter_add, "scatter"),
    ops.concatenate_p: Rule(_lower_concatenate, "per_operand"),
    ops.contract_p: Rule(lower_contract, "contract"),
    ops.complex_matmul_p: Rule(lower_complex_matmul, "contract"),  # zgemm / cgemm (complex_gemm.py)
    ops.solve_p: Rule(lower_solve, "contract"),  # LAPACK (lapack.py): reads operands once, into copies
    ops.slogdet_p: Rule(lower_slogdet, "contract"),
    ops.cholesky_p: Rule(lower_cholesky, "contract"),
    ops.eigh_p: Rule(lower_eigh, "contract"),
    ops.svd_p: Rule(lower_svd, "contract"),
    ops.qr_p: Rule(lower_qr, "contract"),
    ops.pinv_p: Rule(lower_pinv, "contract"),
    ops.call_p: Rule(_call_is_inlined, "inlined"),
    ops.custom_vjp_p: Rule(_call_is_inlined, "inlined"),
    ops.custom_jvp_p: Rule(_call_is_inlined, "inlined"),
    ops.cond_p: Rule(lower_cond, "control"),
    ops.scan_p: Rule(lower_scan, "control"),
    ops.while_p: Rule(lower_while, "control"),
    ops.while_vjp_p: Rule(lower_while_vjp, "control"),
    ops.checkpoint_p: Rule(lower_checkpoint, "control"),
}
