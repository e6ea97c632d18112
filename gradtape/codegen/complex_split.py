"""split_complex: a Function with complex values as an equivalent one of real values only.

Code generation knows real dtypes; this IR-to-IR pass, run on the Function
the runtime is about to compile (after autodiff and the optimizer), makes
every complex tensor a pair of real tensors (its real and imaginary parts)
and every complex op real ops on the pairs (complex_math.py), so the
vectorized, fused, threaded real kernels do the work.

At the boundary a complex input of shape S becomes a real input of shape
S + (2,) (the runtime passes `z[..., None].view(float64)`, no copy) whose
two slices are the parts, and a complex output of shape S becomes a real
output of shape S + (2,) (the parts side by side), which the runtime views
as complex:

    { a:c128[3] . b:c128[3] = mul a a -> b }
    ->  { a:f64[3,2] . re = slice a [.., 0] ; im = slice a [.., 1] ;
          ... re*re - im*im ... ; b = concatenate (re', im') -> b:f64[3,2] }

What is lowered is the table RULES (op name -> rule): a rule gets the
equation and its operands (a `Pair` for a complex operand, the real Sym
otherwise) and returns its result (a Pair for a complex result). An op
with a complex operand or result that has no rule raises Unsupported
naming it, and the runtime falls back to the interpreter: same numbers,
and `fallback_reason` says why. Ops that only move data (reshape, slice,
gather, concatenate, ...) apply to each part alike (STRUCTURAL).
"""
from __future__ import annotations

import numpy as np

from ..ir import Literal, Var
from ..ir.builder import Builder, bind
from ..ir.core import Eqn
from ..ir.inline_calls import inline_calls
from ..ir.ops import elementwise as ew
from ..ir.ops.layout import broadcast_to, reshape, transpose
from ..ir.ops.indexing import concatenate, slice as slice_
from ..ir.passes import dce
from ..ir.types import TensorType, real_dtype
from . import complex_math as cm
from .complex_contract import contract_rule
from .complex_fourier import RULES as FOURIER_RULES
from .complex_math import Pair
from .lowered import Unsupported


def has_complex(fn) -> bool:
    """True when any value of `fn` (inputs, outputs, equation results, literals) is complex."""
    if any(v.type.dtype.kind == "c" for v in (*fn.invars, *fn.outvars)):
        return True
    return any(a.type.dtype.kind == "c" for e in fn.eqns for a in (*e.inputs, *e.outvars))


def split_complex(fn):
    """`fn` with every complex value a pair of real ones, or `fn` itself when it has none.

    Complex inputs and outputs of shape S become real ones of shape S + (2,)
    (real part, imaginary part along the last axis).

    Raises:
        Unsupported: an op with complex values that has no lowering (the message names it).

    Example:
        >>> fn = gradtape.make_ir(lambda z: z * z, np.ones(3, complex))
        >>> split_complex(fn).in_types
        (f64[3,2],)
    """
    if not has_complex(fn):
        return fn
    fn = inline_calls(fn)
    b = Builder()
    env: dict = {}  # Var -> Pair (complex) or Sym (real)
    invars = []
    for v in fn.invars:
        if v.type.dtype.kind == "c":
            w = b.input(TensorType(v.type.shape + (2,), real_dtype(v.type.dtype)))
            env[v] = _parts_of(w, v.type.shape)
            invars.append(w)
        else:
            env[v] = b.sym(v)
            invars.append(b.sym(v))
    for eqn in fn.eqns:
        _lower_eqn(b, eqn, env)
    outs = [_boundary_output(b, _value(b, env, v), v.type) for v in fn.outvars]
    return dce(b.build(invars, outs))


def _parts_of(w, shape) -> Pair:
    n = len(shape)
    zeros = (0,) * n
    re = slice_(w, zeros + (0,), tuple(shape) + (1,), (1,) * (n + 1))
    im = slice_(w, zeros + (1,), tuple(shape) + (2,), (1,) * (n + 1))
    return Pair(reshape(re, shape), reshape(im, shape))


def _full(b, x, type_):
    """x (a Sym, maybe a scalar Literal) as a value of exactly `type_`."""
    if x.shape != type_.shape:
        x = broadcast_to(x, type_.shape)
    if x.dtype != type_.dtype:
        x = ew.cast(x, type_.dtype)
    return x


def _boundary_output(b, value, type_):
    if type_.dtype.kind != "c":
        return _full(b, value, type_)
    part_type = TensorType(type_.shape, real_dtype(type_.dtype))
    column = type_.shape + (1,)
    re = reshape(_full(b, value.re, part_type), column)
    im = reshape(_full(b, value.im, part_type), column)
    return concatenate([re, im], len(type_.shape))


def _value(b, env, atom):
    """The lowered operand: a Pair for a complex atom, a Sym for a real one."""
    if isinstance(atom, Literal):
        if atom.type.dtype.kind == "c":
            part = real_dtype(atom.type.dtype)
            value = np.asarray(atom.value)
            return Pair(b.literal(np.asarray(value.real, part), part), b.literal(np.asarray(value.imag, part), part))
        return b.sym(atom)
    return env[atom]


def _is_complex(atom) -> bool:
    return atom.type.dtype.kind == "c"


def _lower_eqn(b, eqn, env):
    touches = any(_is_complex(a) for a in eqn.inputs) or any(_is_complex(v) for v in eqn.outvars)
    if not touches:
        inputs = [_value(b, env, a).atom for a in eqn.inputs]
        b.eqns.append(Eqn(eqn.op, inputs, eqn.params, eqn.outvars))
        for v in eqn.outvars:
            env[v] = b.sym(v)
        return
    name = eqn.op.name
    if name in STRUCTURAL:
        results = _structural(b, eqn, env)
    else:
        rule = RULES.get(name)
        if rule is None:
            raise Unsupported(f"complex values in {name}: {_REFUSALS.get(name, 'not lowered to real code yet')}")
        results = rule(eqn, *[_value(b, env, a) for a in eqn.inputs], **eqn.params)
    if len(eqn.outvars) == 1:
        results = (results,)
    for v, r in zip(eqn.outvars, results):
        if _is_complex(v):
            part = TensorType(v.type.shape, real_dtype(v.type.dtype))
            env[v] = Pair(_full(b, r.re, part), _full(b, r.im, part))
        else:
            env[v] = _full(b, r, v.type)


def _structural(b, eqn, env):
    """A data-movement op applied to the real parts, then to the imaginary parts (real operands,
    such as indices, go to both as they are; a complex `value` param is split alike)."""
    (out,) = eqn.outvars
    part_type = TensorType(out.type.shape, real_dtype(out.type.dtype))
    values = [_value(b, env, a) for a in eqn.inputs]

    def one(which):
        atoms = []
        for a, val in zip(eqn.inputs, values):
            if isinstance(val, Pair):
                part = val.re if which == 0 else val.im
                atoms.append(_full(b, part, TensorType(a.type.shape, part_type.dtype)))
            else:
                atoms.append(val)
        params = dict(eqn.params)
        if "value" in params and np.iscomplexobj(params["value"]):
            v = complex(params["value"])
            params["value"] = part_type.dtype.type(v.real if which == 0 else v.imag)
        return bind(eqn.op, *atoms, **params)

    return Pair(one(0), one(1))


# Ops that move or sum data without mixing the parts.
STRUCTURAL = frozenset({
    "broadcast_to", "reshape", "transpose", "slice", "unslice", "gather", "scatter_add",
    "concatenate", "pad", "stop_gradient", "reduce_sum",
})


def _cast(eqn, x, *, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = real_dtype(dtype)
        if isinstance(x, Pair):
            return Pair(ew.cast(x.re, part), ew.cast(x.im, part))
        return Pair(ew.cast(x, part), x.builder.literal(0.0, part))
    if dtype.kind == "b":
        return ew.logical_or(ew.ne(x.re, 0.0), ew.ne(x.im, 0.0))
    return ew.cast(x.re, dtype)  # NumPy keeps the real part


def _pow(eqn, x, y):
    if not isinstance(y, Pair):
        raise Unsupported("complex values in pow: a real exponent of a complex base")  # cast first by the front end
    re, im = y.re.literal_value(), y.im.literal_value()
    if re is not None and im is not None:
        return cm.const_power(x, complex(re, im))
    return cm.power(x, y)


# A complex product over more elements than this stays in the interpreter: it is unrolled.
MAX_PRODUCT_TERMS = 64


def _reduce_prod(eqn, x, *, axes):
    """The product over `axes`, one complex multiplication after another (NumPy's order: the
    reduced elements in C order), unrolled over the slices of the reduced axes."""
    shape = eqn.inputs[0].type.shape
    kept = [i for i in range(len(shape)) if i not in axes]
    count = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    if count > MAX_PRODUCT_TERMS:
        raise Unsupported(f"complex values in reduce_prod: a product of {count} terms "
                          f"(more than {MAX_PRODUCT_TERMS}) is not unrolled")
    out_shape = tuple(shape[i] for i in kept)
    if count == 0:
        return cm.Pair(x.re.builder.literal(1.0, x.re.dtype), x.re.builder.literal(0.0, x.re.dtype))
    part_type = TensorType(shape, real_dtype(eqn.inputs[0].type.dtype))

    def terms(part):
        part = _full(None, part, part_type)
        rows = reshape(transpose(part, kept + list(axes)), out_shape + (count,))
        n = len(out_shape)
        return [reshape(slice_(rows, (0,) * n + (j,), out_shape + (j + 1,), (1,) * (n + 1)), out_shape)
                for j in range(count)]

    acc = None
    for re, im in zip(terms(x.re), terms(x.im)):
        acc = Pair(re, im) if acc is None else cm.mul(acc, Pair(re, im))
    return acc


def _where(eqn, c, x, y):
    return Pair(ew.where(c, x.re, y.re), ew.where(c, x.im, y.im))


def _unary(f):
    return lambda eqn, x: f(x)


def _binary(f):
    return lambda eqn, x, y: f(x, y)


# op name -> rule(eqn, *operands, **params): the lowering of an op with complex values.
RULES = {
    "add": _binary(cm.add), "sub": _binary(cm.sub), "mul": _binary(cm.mul), "div": _binary(cm.div),
    "eq": _binary(cm.eq), "ne": _binary(cm.ne), "pow": _pow,
    "neg": _unary(cm.neg), "conj": _unary(cm.conj), "abs": _unary(cm.abs),
    "real": lambda eqn, x: x.re, "imag": lambda eqn, x: x.im,
    "exp": _unary(cm.exp), "log": _unary(cm.log), "log2": _unary(cm.log2), "log10": _unary(cm.log10),
    "exp2": _unary(cm.exp2), "log1p": _unary(cm.log1p), "expm1": _unary(cm.expm1),
    "sqrt": _unary(cm.sqrt), "sin": _unary(cm.sin), "cos": _unary(cm.cos), "tan": _unary(cm.tan),
    "sinh": _unary(cm.sinh), "cosh": _unary(cm.cosh), "tanh": _unary(cm.tanh),
    "arctanh": _unary(cm.arctanh), "arctan": _unary(cm.arctan), "arcsin": _unary(cm.arcsin),
    "arccos": _unary(cm.arccos), "arccosh": _unary(cm.arccosh),
    "cast": _cast, "where": _where, "contract": contract_rule, "reduce_prod": _reduce_prod,
}

# The FFT ops: the native kernels' pair ops (complex_fourier.py).
RULES.update(FOURIER_RULES)

# Why an op with complex values is not lowered (the default: "not lowered to real code yet").
_REFUSALS: dict = {}
