"""One Function for every size of a dimension: generalize two traces, check every later one.

A staged function traced at two sizes N1 and N2 of a dimension gives two
Functions. When they are the same program but for numbers that follow N (a
shape `(N, 4)`, a reshape to `4*N`, the `1/(4N)` of a mean folded into a
literal), `generalize` returns a SymbolicFunction: that program with those
numbers as polynomials in N (codegen/dynamic_sizes.py), and each literal
that depends on N turned into an extra scalar input whose value is computed
per call size (`scalars(n)`). Code generated from it takes N at run time
(runtime/dynamic_kernel.py).

Two points cannot tell `2*N` from `min(2*N, 200)`: the program `f` builds
may depend on sizes in any way Python allows. So a SymbolicFunction never
stands in for a size it was not checked at: for each new size the staged
function traces and transforms `f` as always (no compile), and `matches`
compares that Function, number by number, with the symbolic one at that
size. Only an exact match runs the dynamic code; anything else compiles a
specialized version. The dynamic code therefore runs exactly the program a
specialized version would.

>>> sym = generalize(fn_at_64, 64, fn_at_100, 100)     # None when they differ in structure
>>> sym.matches(fn_at_37, 37)
True
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .dynamic_sizes import MIN_SIZE, SymSize, concrete, is_symbolic


class Mismatch(Exception):
    """The two Functions differ somewhere other than in sizes."""


class SymbolicFunction:
    """A Function whose shapes and some literals follow one run-time size N.

    Attributes:
      fn: the Function; its invars are the original ones, then one 0-d input
        per literal that depends on N (`forms`), in order.
      forms: per extra input, (dtype, form): the literal's value is
        `form(n)` in that dtype (see _fit_literal).
      n_inputs: how many of fn's invars are the original inputs.
    """

    def __init__(self, fn, forms, n_inputs: int):
        self.fn, self.forms, self.n_inputs = fn, forms, n_inputs

    def types_at(self, types, n: int) -> list:
        return [ir.TensorType(tuple(concrete(d, n) for d in t.shape), t.dtype) for t in types]

    def scalars(self, n: int) -> list:
        """The extra inputs' values for size n (0-d arrays, in fn's invar order)."""
        return [np.asarray(form(n), dtype=dtype) for dtype, form in self.forms]

    def matches(self, fn, n: int) -> bool:
        """Whether `fn` (traced and transformed at size n) is this Function at N = n, exactly."""
        if n < MIN_SIZE:
            return False
        try:
            _Zipper(n=n, forms=dict(zip(self.fn.invars[self.n_inputs:], self.forms))).verify(self.fn, fn)
        except Mismatch:
            return False
        return True


def generalize(f1, n1: int, f2, n2: int) -> SymbolicFunction | None:
    """The SymbolicFunction that is f1 at N = n1 and f2 at N = n2, or None when none fits."""
    if n1 == n2 or min(n1, n2) < MIN_SIZE:
        return None
    z = _Zipper(n1=n1, n2=n2)
    try:
        fn = z.generalize(f1, f2)
    except Mismatch:
        return None
    if not z.symbolic:
        return None  # nothing follows N: the two Functions are one (a size that changes nothing)
    return SymbolicFunction(fn, z.new_forms, len(f1.invars))


class _Zipper:
    """Walks two Functions side by side. In generalize mode (n1, n2) it builds the symbolic
    Function; in verify mode (n, forms) it checks the second against the first at N = n."""

    def __init__(self, n1=None, n2=None, n=None, forms=None):
        self.n1, self.n2, self.n = n1, n2, n
        self.forms = forms or {}  # verify: symbolic scalar input Var -> (dtype, form)
        self.new_forms: list = []  # generalize: (dtype, form) per new scalar input
        self.new_inputs: list = []
        self.symbolic = False

    # --- the walk --------------------------------------------------------------------------
    def generalize(self, f1, f2):
        env: dict = {}
        invars = [self._bind_var(env, a, b) for a, b in _pairs(f1.invars, f2.invars)]
        eqns = []
        for e1, e2 in _pairs(f1.eqns, f2.eqns):
            if e1.op is not e2.op:
                raise Mismatch(f"{e1.op.name} vs {e2.op.name}")
            inputs = [self._atom(env, a, b) for a, b in _pairs(e1.inputs, e2.inputs)]
            params = self._value(e1.params, e2.params)
            outvars = [self._bind_var(env, a, b) for a, b in _pairs(e1.outvars, e2.outvars)]
            eqns.append(ir.Eqn(e1.op, inputs, params, outvars))
        outvars = [self._atom(env, a, b) for a, b in _pairs(f1.outvars, f2.outvars)]
        return ir.Function(invars + self.new_inputs, eqns, outvars)

    def verify(self, sym, fn):
        env: dict = {}
        n_in = len(sym.invars) - len(self.forms)
        for a, b in _pairs(sym.invars[:n_in], fn.invars):
            self._check_var(env, a, b)
        for e1, e2 in _pairs(sym.eqns, fn.eqns):
            if e1.op is not e2.op:
                raise Mismatch(e1.op.name)
            for a, b in _pairs(e1.inputs, e2.inputs):
                self._check_atom(env, a, b)
            self._value(e1.params, e2.params)
            for a, b in _pairs(e1.outvars, e2.outvars):
                self._check_var(env, a, b)
        for a, b in _pairs(sym.outvars, fn.outvars):
            self._check_atom(env, a, b)

    # --- generalize mode ---------------------------------------------------------------------
    def _bind_var(self, env, a, b):
        if not isinstance(a, ir.Var) or not isinstance(b, ir.Var):
            raise Mismatch("var vs literal")
        v = ir.Var(self._type(a.type, b.type))
        env[a] = (v, b)
        return v

    def _atom(self, env, a, b):
        if isinstance(a, ir.Var) and isinstance(b, ir.Var):
            v, second = env.get(a, (None, None))
            if second is not b:
                raise Mismatch("operands differ")
            return v
        if isinstance(a, ir.Literal) and isinstance(b, ir.Literal):
            if _same_literal(a, b):
                return a
            return self._sized_literal(a, b)
        raise Mismatch("var vs literal")

    def _sized_literal(self, a, b):
        if a.type.shape != () or b.type.shape != () or a.type.dtype != b.type.dtype:
            raise Mismatch("array literals differ")
        dtype = a.type.dtype
        form = _fit_literal(a.value.item(), self.n1, b.value.item(), self.n2, dtype)
        if form is None:
            raise Mismatch(f"literal {a.value} vs {b.value}")
        v = ir.Var(ir.TensorType((), dtype))
        self.new_inputs.append(v)
        self.new_forms.append((dtype, form))
        self.symbolic = True
        return v

    def _type(self, t1, t2):
        if t1.dtype != t2.dtype or len(t1.shape) != len(t2.shape):
            raise Mismatch(f"{t1} vs {t2}")
        if self.n is not None:  # verify: compare, build nothing
            for a, b in zip(t1.shape, t2.shape):
                self._int(a, b)
            return t1
        return ir.TensorType(tuple(self._int(a, b) for a, b in zip(t1.shape, t2.shape)), t1.dtype)

    def _int(self, a, b):
        """A number of the program: the same in both, or generalized (verify: the symbolic one at n)."""
        if self.n is not None:
            if concrete(a, self.n) != b:
                raise Mismatch(f"{a!r} at N={self.n} vs {b}")
            return a
        if a == b:
            return a
        fitted = _fit_int(a, self.n1, b, self.n2)
        if fitted is None:
            raise Mismatch(f"{a} vs {b}")
        self.symbolic = True
        return fitted

    def _value(self, a, b):
        """Params, compared (and in generalize mode rebuilt) leaf by leaf."""
        if type(a) is bool or type(b) is bool or type(a) is not type(b) and not (
                is_symbolic(a) and isinstance(b, (int, np.integer))):
            if type(a) is not type(b) or a != b:
                raise Mismatch(f"param {a!r} vs {b!r}")
            return a
        if isinstance(a, (int, np.integer)) or is_symbolic(a):
            return self._int(a, int(b))
        if isinstance(a, (tuple, list)):
            if len(a) != len(b):
                raise Mismatch("param lengths")
            return type(a)(self._value(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            if a.keys() != b.keys():
                raise Mismatch("param keys")
            return {k: self._value(a[k], b[k]) for k in a}
        if isinstance(a, ir.Function):
            return _Zipper(self.n1, self.n2, self.n).generalize(a, b) if self.n is None else _verified(a, b, self.n)
        if isinstance(a, ir.TensorType):
            return self._type(a, b)
        if isinstance(a, np.ndarray):
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                raise Mismatch("array params differ")
            return a
        if a != b:
            raise Mismatch(f"param {a!r} vs {b!r}")
        return a

    # --- verify mode -----------------------------------------------------------------------
    def _check_var(self, env, a, b):
        if not isinstance(b, ir.Var):
            raise Mismatch("var vs literal")
        self._type(a.type, b.type)
        env[a] = b

    def _check_atom(self, env, a, b):
        if a in self.forms:
            dtype, form = self.forms[a]
            if not isinstance(b, ir.Literal) or b.type.shape != () or b.type.dtype != dtype:
                raise Mismatch("sized literal")
            if np.asarray(form(self.n), dtype=dtype).tobytes() != b.value.tobytes():
                raise Mismatch(f"sized literal {b.value} at N={self.n}")
            return
        if isinstance(a, ir.Var):
            if env.get(a) is not b:
                raise Mismatch("operands differ")
            return
        if not isinstance(b, ir.Literal) or not _same_literal(a, b):
            raise Mismatch("literals differ")


def _verified(sym, fn, n):
    _Zipper(n=n).verify(sym, fn)
    return sym


def _pairs(xs, ys):
    if len(xs) != len(ys):
        raise Mismatch("lengths differ")
    return zip(xs, ys)


def _same_literal(a, b) -> bool:
    return a.type == b.type and a.value.tobytes() == b.value.tobytes()


def _fit_int(a: int, n1: int, b: int, n2: int):
    """A polynomial in N that is a at n1 and b at n2: c*N**p when one fits, else a line; None if none."""
    for p in (1, 2):
        if a % n1 ** p == 0 and b % n2 ** p == 0 and a // n1 ** p == b // n2 ** p:
            return SymSize({p: a // n1 ** p})
    if (b - a) % (n2 - n1) == 0:
        slope = (b - a) // (n2 - n1)
        return SymSize.make({1: slope, 0: a - slope * n1})
    return None


def _fit_literal(a, n1: int, b, n2: int, dtype):
    """A function n -> the literal at size n (c*N**p, c/N**p, or an int polynomial) matching
    a at n1 and b at n2 exactly in `dtype`, or None."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        sym = _fit_int(int(a), n1, int(b), n2)
        return None if sym is None else _Form("size", sym)
    if dtype.kind != "f":
        return None
    candidates = []  # exact forms first: two points fit an inexact one by luck (it fails a later check)
    for fa, fb, kind in ((a, b, "size"), (_reciprocal(a), _reciprocal(b), "inverse_size")):
        if fa is not None and fb is not None and fa == int(fa) and fb == int(fb):  # N - 1, 1 / (N - 1), ...
            sym = _fit_int(int(fa), n1, int(fb), n2)
            if sym is not None:
                candidates.append(_Form(kind, sym))
    for p in (1, 2):
        candidates.append(_Form("times", a / n1 ** p, p))  # c * N**p (a mean's count)
        if a and np.isfinite(1 / (a * n1 ** p)):
            candidates.append(_Form("inverse", round(1 / (a * n1 ** p)), p))  # 1 / (k * N**p): a mean's 1/N
    candidates += [_Form("over", a * n1 ** p, p) for p in (1, 2)]  # c / N**p
    for form in candidates:
        if all(np.asarray(form(n), dtype).tobytes() == np.asarray(v, dtype).tobytes() for n, v in ((n1, a), (n2, b))):
            return form
    return None


def _reciprocal(x):
    return 1 / x if x and np.isfinite(1 / x) else None


class _Form:
    """A literal's value as a function of N (picklable, comparable in tests)."""

    def __init__(self, kind, c, p=1):
        self.kind, self.c, self.p = kind, c, p

    def __call__(self, n: int):
        if self.kind == "size":
            return self.c.at(n) if hasattr(self.c, "at") else self.c
        if self.kind == "inverse_size":
            return 1.0 / (self.c.at(n) if hasattr(self.c, "at") else self.c)
        if self.kind == "times":
            return self.c * n ** self.p
        if self.kind == "inverse":
            return 1.0 / (self.c * n ** self.p) if self.c else float("nan")
        return self.c / n ** self.p

    def __repr__(self):
        return {"size": f"{self.c!r}", "inverse_size": f"1/({self.c!r})", "times": f"{self.c}*N**{self.p}", "over": f"{self.c}/N**{self.p}",
                "inverse": f"1/({self.c}*N**{self.p})"}[self.kind]
