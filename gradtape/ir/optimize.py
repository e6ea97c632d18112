"""The optimization pipeline run on a Function before it is compiled.

Each pass is a small pure function Function -> Function; `optimize` runs
them in the order of `PIPELINE` until nothing changes, verifying after each
pass when `gradtape.ir.config.checks` is on. Set GRADTAPE_DUMP_PASSES to a
comma-separated list of pass names (or `all`) to print the IR after those
passes to stderr.

Every pass keeps derivative semantics, not just values: an optimized
Function may be differentiated again (a staged transform inlined into an
outer trace, or a `call` recorded on a tape), so `stop_gradient` is never
removed.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from . import config
from .core import Eqn, Function, Literal, Var
from .op import impls, multiple_results
from .ops.contract import contract_p, parse_spec
from .ops.elementwise import add_p, cast_p, eq_p, neg_p, pow_p, sub_p
from .ops.layout import broadcast_to_p, reshape_p, transpose_p
from .loop_merge import merge_scans
from .passes import dce
from .verify import verify

__all__ = ["PIPELINE", "optimize", "fold_constants", "simplify", "cse", "merge_scans", "dce"]

_DUMP = {p.strip() for p in os.environ.get("GRADTAPE_DUMP_PASSES", "").split(",") if p.strip()}
_MAX_ROUNDS = 4


def _rewrite(fn: Function, replacement) -> Function:
    """Walk the equations once, substituting replaced Vars in later inputs.

    `replacement(eqn)` sees each equation with its inputs already substituted
    and returns None (keep it), another Eqn defining the same output (keep
    that one instead), or an atom to stand for the output (drop the equation);
    for an equation of several outputs, a tuple of atoms, one per output.
    """
    subst = {}
    eqns = []
    changed = False
    for eqn in fn.eqns:
        if subst:
            inputs = tuple(subst.get(a, a) if isinstance(a, Var) else a for a in eqn.inputs)
            if inputs != eqn.inputs:
                eqn = Eqn(eqn.op, inputs, eqn.params, eqn.outvars)
        new = replacement(eqn)
        if new is None:
            eqns.append(eqn)
        elif type(new) is Eqn:
            eqns.append(new)
            changed = True
        elif type(new) is tuple:
            subst.update(zip(eqn.outvars, new))
        else:
            subst[eqn.outvars[0]] = new
    if not subst:
        return Function(fn.invars, eqns, fn.outvars) if changed else fn
    outvars = [subst.get(v, v) if isinstance(v, Var) else v for v in fn.outvars]
    return Function(fn.invars, eqns, outvars)


def _scalar_literal(a):
    return type(a) is Literal and a.value.ndim == 0


# --- constant folding ---------------------------------------------------------------

def fold_constants(fn: Function) -> Function:
    """Evaluate equations on constants: scalar Literals, and "splats"
    (`broadcast_to` of a scalar Literal) for elementwise ops. A scalar result
    becomes a Literal; an array result a splat of the folded scalar, so arrays
    are never materialized into the program.

        { a:f64[3] . b:f64[] = mul 2.0 3.0 ; c:f64[3] = mul a b -> c }
     -> { a:f64[3] . b:f64[3] = mul a 6.0 -> b }

        { a:f64[3] . b:f64[3] = broadcast_to[shape=(3,)] 1.0 ; c:f64[3] = mul b 100.0 ;
          d:f64[3] = mul c a -> d }
     -> { a:f64[3] . b:f64[3] = broadcast_to[shape=(3,)] 1.0 ;
          c:f64[3] = broadcast_to[shape=(3,)] 100.0 ; d:f64[3] = mul c a -> d }
    """
    splat_of = {}  # Var -> the scalar Literal it is a broadcast of

    def constant(a):
        if isinstance(a, Var):
            return splat_of.get(a)
        return a if a.value.ndim == 0 else None

    def fold(eqn):
        if eqn.op in multiple_results:
            return None
        out = eqn.outvars[0]
        ins = eqn.inputs
        if eqn.op is broadcast_to_p and _scalar_literal(ins[0]):
            splat_of[out] = ins[0]
            return None
        scalars = [constant(a) for a in ins]
        if any(c is None for c in scalars):
            return None
        if out.type.shape != () and not eqn.op.elementwise:
            return None
        if any(isinstance(a, Var) for a in ins) and not eqn.op.elementwise:
            return None
        with np.errstate(all="ignore"):  # IEEE results, as the interpreter gives
            value = impls[eqn.op](*[c.value for c in scalars], **eqn.params)
        lit = Literal(np.asarray(value, dtype=out.type.dtype))
        if out.type.shape == ():
            return lit
        splat_of[out] = lit
        return Eqn(broadcast_to_p, (lit,), {"shape": out.type.shape}, eqn.outvars)

    return _rewrite(fn, fold)


# --- algebraic simplification ----------------------------------------------------

# Ops that compute their operand unchanged whenever the output type is the operand's.
_SAME_TYPE_IS_IDENTITY = (broadcast_to_p, reshape_p, cast_p)
# Complex multiplication, division and power by 1 are not the identity at infinities
# ((inf+0j) * (1+0j) is inf+nanj in NumPy, as in C99's formula), so of the identity
# facts only these hold for complex operands.
IDENTITIES_EXACT_FOR_COMPLEX = (add_p, sub_p)

def _broadcast(shapes) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != 1:
                out[i] = d
    return tuple(out)


def simplify(fn: Function) -> Function:
    """Remove identities whose result has its operand's exact type: an
    operand with its op's identity element (the op's `left_identity` and
    `right_identity` facts: x*1, 1*x, x/1, x+0, 0+x, x-0, x**1), neg(neg x), and broadcast_to,
    reshape, transpose and cast that change nothing; x**0 becomes a splat of
    1, and a contraction with a Literal identity matrix becomes a transpose
    of the other operand (Jacobians by forward mode seed the identity). A constant may be a
    scalar Literal or a splat (`broadcast_to` of one: the adjoint pass seeds
    `sum` with `broadcast_to 1.0`); an elementwise op reads a splat operand
    as its scalar Literal when the other operands give the result its shape.

        { a:f64[3] . b:f64[3] = mul a 1.0 ; c:f64[3] = neg b ; d:f64[3] = neg c ;
          e:f64[3] = reshape[shape=(3,)] d -> e }
     -> { a:f64[3] . -> a }

        { a:f64[3] . b:f64[3] = broadcast_to[shape=(3,)] 2.0 ; c:f64[3] = mul b a -> c }
     -> { a:f64[3] . b:f64[3] = broadcast_to[shape=(3,)] 2.0 ; c:f64[3] = mul 2.0 a -> c }

    `x + 0 -> x` turns a -0.0 result into -0.0 where IEEE would give +0.0;
    only a division by that zero can tell, the trade XLA and LLVM's
    no-signed-zeros make.
    """
    neg_of = {}  # Var -> the operand of the `neg` that defines it
    splat_of = {}  # Var -> the scalar Literal it is a broadcast of
    defining = {}  # Var -> its (rewritten) equation, to recognize an identity matrix

    def is_constant(a, value) -> bool:
        return _scalar_literal(a) and a.value == value

    def unsplat(eqn):
        """Read splat operands of an elementwise op as scalar Literals where the shape allows."""
        ins = list(eqn.inputs)
        changed = False
        for i, a in enumerate(ins):
            lit = splat_of.get(a) if isinstance(a, Var) else None
            if lit is None:
                continue
            others = [b.type.shape for j, b in enumerate(ins) if j != i]
            if _broadcast(others) == eqn.outvars[0].type.shape:
                ins[i] = lit
                changed = True
        return Eqn(eqn.op, ins, eqn.params, eqn.outvars) if changed else eqn

    def identity(eqn):
        op, ins, out = eqn.op, eqn.inputs, eqn.outvars[0]
        if op is neg_p:
            inner = neg_of.get(ins[0])
            if inner is not None:
                return inner
            neg_of[out] = ins[0]
            return None
        if op in _SAME_TYPE_IS_IDENTITY or (
            op is transpose_p and tuple(eqn.params["perm"]) == tuple(range(out.type.ndim))
        ):
            return ins[0] if ins[0].type == out.type else None
        if op is contract_p:
            return _contract_with_identity(eqn, defining)
        if len(ins) != 2:
            return None
        x, y = ins
        if out.type.dtype.kind == "c" and op not in IDENTITIES_EXACT_FOR_COMPLEX:
            return None
        if op.right_identity is not None and x.type == out.type and is_constant(y, op.right_identity):
            return x
        if op.left_identity is not None and y.type == out.type and is_constant(x, op.left_identity):
            return y
        if op is pow_p and is_constant(y, 0):  # x ** 0 == 1 everywhere, NaN included
            return Eqn(broadcast_to_p, (Literal(np.array(1, out.type.dtype)),),
                       {"shape": out.type.shape}, eqn.outvars)
        return None

    def rewrite(eqn):
        if eqn.op in multiple_results:
            return None
        if eqn.op is broadcast_to_p and _scalar_literal(eqn.inputs[0]):
            splat_of[eqn.outvars[0]] = eqn.inputs[0]
        new = unsplat(eqn) if eqn.op.elementwise else eqn
        defining[new.outvars[0]] = new
        replaced = identity(new)
        if type(replaced) is Eqn and replaced.op is broadcast_to_p and _scalar_literal(replaced.inputs[0]):
            splat_of[replaced.outvars[0]] = replaced.inputs[0]
        if replaced is not None:
            return replaced
        return None if new is eqn else new

    return _rewrite(fn, rewrite)


def _is_index_literal(a, shape) -> bool:
    """a is the Literal arange(n) with the given shape ((n,) or (n, 1))."""
    if type(a) is not Literal or a.value.shape != shape or a.value.dtype.kind not in "iu":
        return False
    return bool(np.array_equal(a.value.reshape(-1), np.arange(shape[0])))


def _is_identity_matrix(a, defining) -> bool:
    """a is an identity matrix: a Literal one, or `cast(eq(i[:, None], j))` of index Literals
    (how the Jacobian transforms build their basis without an n x n constant)."""
    ty = a.type
    if len(ty.shape) != 2 or ty.shape[0] != ty.shape[1]:
        return False
    if type(a) is Literal:
        v = a.value
        return np.count_nonzero(v) == v.shape[0] and bool(np.all(np.diagonal(v) == 1))
    cast = defining.get(a)
    if cast is None or cast.op is not cast_p or not isinstance(cast.inputs[0], Var):
        return False
    eq = defining.get(cast.inputs[0])
    if eq is None or eq.op is not eq_p:
        return False
    n = ty.shape[0]
    x, y = eq.inputs
    return (_is_index_literal(x, (n, 1)) and _is_index_literal(y, (n,))) or (
        _is_index_literal(x, (n,)) and _is_index_literal(y, (n, 1)))


def _contract_with_identity(eqn, defining):
    """`contract[x, I]` summing x's letter p against I's (p, q): x with p renamed q, transposed.

        { a:f64[2,3] . b:f64[3,2] = contract[spec='ij,kj->ki'] a eye3 -> b }   # eye3 = identity
     -> { a:f64[2,3] . b:f64[3,2] = transpose[perm=(1, 0)] a -> b }
    """
    la, lb, lo = parse_spec(eqn.params["spec"])
    for x, lx, eye, le in ((eqn.inputs[0], la, eqn.inputs[1], lb), (eqn.inputs[1], lb, eqn.inputs[0], la)):
        if not _is_identity_matrix(eye, defining):
            continue
        for p, q in ((le[0], le[1]), (le[1], le[0])):
            if p in lx and p not in lo and q not in lx and q in lo:
                renamed = lx.replace(p, q)
                if sorted(renamed) != sorted(lo):
                    continue  # x has other letters summed away: not a relabeling
                perm = tuple(renamed.index(c) for c in lo)
                return Eqn(transpose_p, (x,), {"perm": perm}, eqn.outvars)
    return None


# --- common-subexpression elimination -------------------------------------------

def _atom_key(a):
    if type(a) is Literal:
        v = a.value
        return ("literal", v.dtype.str, v.shape, v.tobytes())
    return a


def _eqn_key(eqn):
    keys = [_atom_key(a) for a in eqn.inputs]
    if eqn.op.commutative:
        keys.sort(key=hash)  # ties keep input order: at worst a missed match, never a wrong one
    params = tuple((k, type(v), v) for k, v in sorted(eqn.params.items()))
    key = (eqn.op, tuple(keys), params)
    try:
        hash(key)
    except TypeError:  # an unhashable parameter: leave the equation alone
        return None
    return key


def cse(fn: Function) -> Function:
    """Give one equation to each (op, operands, params) computed more than once.

        { a:f64[3] . b:f64[3] = exp a ; c:f64[3] = exp a ; d:f64[3] = add b c -> d }
     -> { a:f64[3] . b:f64[3] = exp a ; c:f64[3] = add b b -> c }

    Commutative ops match with their operands in either order. Sub-Function
    params (`call`) match only when they are the same Function object.
    """
    seen = {}

    def reuse(eqn):
        key = _eqn_key(eqn)
        if key is None:
            return None
        first = seen.get(key)
        if first is None:  # the whole equation: all its outputs stand for a later twin's
            seen[key] = eqn.outvars[0] if len(eqn.outvars) == 1 and eqn.op not in multiple_results else eqn.outvars
        return first

    return _rewrite(fn, reuse)


# --- the pipeline --------------------------------------------------------------------

PIPELINE = (
    ("fold_constants", fold_constants),
    ("simplify", simplify),
    ("cse", cse),
    ("merge_scans", merge_scans),
    ("dce", dce),
)


def optimize(fn: Function, *, dump=None) -> Function:
    """Run `PIPELINE` until a round removes no equation (at most a few rounds).

    Args:
      fn: the Function to optimize (not modified).
      dump: optional callback `dump(pass_name, fn)` called after every pass.

    Returns:
      An equivalent Function (same invars, same values of every output, same
      derivatives).

    Example::

        >>> from gradtape import make_ir
        >>> print(optimize(make_ir(lambda x: -(-x) * 1.0, np.ones(3))))
        { a:f64[3] . -> a }
    """
    for _ in range(_MAX_ROUNDS):
        before = len(fn.eqns)
        for name, run in PIPELINE:
            fn = run(fn)
            if config.checks:
                verify(fn)
            if dump is not None:
                dump(name, fn)
            if name in _DUMP or "all" in _DUMP:
                print(f"--- after {name}:\n{fn.pretty()}", file=sys.stderr)
        if len(fn.eqns) == before:
            break
    return fn
