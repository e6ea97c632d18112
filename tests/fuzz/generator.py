"""Random gradtape programs, each reproducible from one integer seed.

A program is Python source text `def f(x0, x1, ...): ... return <scalar>`
written against a namespace `gt` (gradtape, or numpy_reference's NumPy
stand-in) and a weight helper `_w`, plus its input arrays. The text is what
runs, so the text printed for a mismatch is the exact reproducer.

Shapes stay small (dimensions 1-3, rank 0-3) so each compile is quick; input
values mix normal draws with 0, -0, +-1, +-inf, NaN, ties and domain
boundaries, so kinks (abs, relu, maximum ties, clip bounds) and IEEE special
values are hit often.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import numpy_reference

# Elementwise functions of one float array, by name in the `gt` namespace.
UNARY = [
    "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "arctan",
    "negative", "abs", "sign", "floor", "ceil", "round", "square", "reciprocal",
    "sigmoid", "relu", "softplus", "positive",
]
# Unary steps that keep values finite and moderate, so that some programs stay
# smooth and finite (and finite differences can check them).
TAME_UNARY = ["sin", "cos", "tanh", "arctan", "sigmoid", "softplus", "negative", "square"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum"]
OPERATORS = ["+", "-", "*", "/"]
COMPARISONS = [">", ">=", "<", "<=", "==", "!="]
REDUCTIONS = ["sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "logsumexp"]
SPECIAL_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e-300, 1e300, np.pi / 2]

WEIGHT_HELPER = '''def _w(v):
    """Fixed non-uniform weights shaped like v: the output is sum(v * _w(v))."""
    n = int(np.prod(v.shape))
    return np.linspace(-1.0, 1.5, n).reshape(v.shape).astype(v.dtype)
'''


@dataclasses.dataclass
class Program:
    """One generated program: its source, inputs and what may be checked on it."""

    seed: int
    source: str          # defines f(x0, ..., x{n-1}) returning a float scalar
    inputs: list         # one array per parameter of f
    batch: list          # the inputs of a second point, stacked with `inputs` for vmap
    tangents: list       # a finite direction per input (jvp, hvp, finite differences)
    dtype: np.dtype
    uses_stop_gradient: bool

    def text(self) -> str:
        """The program as a runnable script (for a bug report)."""
        args = ", ".join(_array_text(a) for a in self.inputs)
        return (
            f"# fuzz seed {self.seed}\nimport numpy as np\nimport gradtape as gt\nnan, inf = np.nan, np.inf\n\n"
            f"{WEIGHT_HELPER}\n\n{self.source}\n"
            f"args = [{args}]\nprint(gt.value_and_grad(f, argnums=tuple(range(len(args))))(*args))\n"
        )


def _array_text(a) -> str:
    return f"np.array({np.array2string(a, separator=', ', precision=17, floatmode='unique')}, dtype=np.{a.dtype})"


@dataclasses.dataclass
class Val:
    name: str
    shape: tuple


# The generator's versions: 1 has no control flow or sorting, 2 adds them.
LATEST = 2


def generate(seed: int, version: int = LATEST) -> Program:
    """The program of `seed` (same seed and version, same program, on any machine)."""
    if version not in (1, 2):
        raise ValueError(f"generate: version must be 1 or 2, got {version!r}")
    return _Generator(np.random.default_rng(seed), seed, version).program()


class _Generator:
    def __init__(self, rng, seed, version):
        self.rng = rng
        self.seed = seed
        self.version = version
        self.lines = []
        self.pool = []
        self.uses_stop_gradient = False
        self.tame = rng.random() < 0.35       # smooth, finite programs: finite differences apply
        self.special = not self.tame and rng.random() < 0.6

    # -- choices ---------------------------------------------------------------
    def pick(self, items):
        return items[self.rng.integers(len(items))]

    def shape(self, max_rank=3):
        rank = int(self.rng.integers(0, max_rank + 1))
        return tuple(int(d) for d in self.rng.integers(1, 4, size=rank))

    def operand(self) -> Val:
        if self.rng.random() < 0.6:
            return self.pool[-1]
        return self.pool[self.rng.integers(len(self.pool))]

    def const(self) -> str:
        return repr(float(self.pick([0.5, -1.25, 2.0, 1.0, 0.0, -0.75, 3.0])))

    def emit(self, expr: str, shape=None) -> Val | None:
        """Append `name = expr` if NumPy accepts it on the inputs (its shape is then known).

        The line is evaluated with the NumPy reference on the actual inputs, so the
        program is valid NumPy by construction and shapes are NumPy's, not guessed
        (`shape` is only the generator's expectation, unused).
        """
        name = f"v{len(self.lines)}"
        try:
            with np.errstate(all="ignore"):
                value = np.asarray(eval(expr, {"gt": numpy_reference.namespace, "np": np}, self.env))
        except Exception:  # an invalid combination: drop the step, the rng stream stays seeded
            return None
        if value.dtype.kind != "f" or value.size == 0 or value.size > 64:
            return None
        self.env[name] = value
        self.lines.append(f"    {name} = {expr}")
        v = Val(name, value.shape)
        self.pool.append(v)
        return v

    # -- the program -------------------------------------------------------------
    def program(self) -> Program:
        dtype = np.dtype(np.float32 if self.rng.random() < 0.2 else np.float64)
        n_inputs = int(self.rng.integers(1, 4))
        shapes = [self.shape() for _ in range(n_inputs)]
        params = [Val(f"x{i}", s) for i, s in enumerate(shapes)]
        self.pool = list(params)
        inputs = [self.values(s, dtype) for s in shapes]
        self.env = {p.name: x for p, x in zip(params, inputs)}
        for _ in range(int(self.rng.integers(1, 8))):
            steps = self.STEPS_TAME if self.tame else self.STEPS
            step = self.pick(steps + self.STEPS_V2 if self.version >= 2 else steps)
            getattr(self, step)()
        outs = [self.pool[-1]]
        if len(self.pool) > 2 and self.rng.random() < 0.4:
            outs.append(self.pool[self.rng.integers(len(self.pool) - 1)])
        ret = " + ".join(f"gt.sum({v.name} * _w({v.name}))" for v in outs)
        body = "\n".join(self.lines)
        source = f"def f({', '.join(p.name for p in params)}):\n{body + chr(10) if body else ''}    return {ret}\n"
        batch = [self.values(s, dtype) for s in shapes]
        tangents = [self.rng.standard_normal(s).astype(dtype) for s in shapes]
        return Program(self.seed, source, inputs, batch, tangents, dtype, self.uses_stop_gradient)

    def values(self, shape, dtype):
        scale = self.pick([0.5, 1.0, 2.0]) if self.tame else self.pick([0.5, 1.0, 3.0, 10.0])
        a = self.rng.standard_normal(shape) * scale
        if self.special and a.size:
            mask = self.rng.random(shape) < 0.25
            specials = np.array(SPECIAL_VALUES)[self.rng.integers(len(SPECIAL_VALUES), size=shape)]
            a = np.where(mask, specials, a)
            if a.size > 1 and self.rng.random() < 0.5:  # a tie, for max/min/maximum
                flat = a.reshape(-1)
                flat[self.rng.integers(a.size)] = flat[self.rng.integers(a.size)]
        with np.errstate(over="ignore"):  # 1e300 in float32 is inf, as intended
            return np.asarray(a, dtype=dtype)

    # -- steps (each appends one line) -----------------------------------------------
    STEPS = [
        "unary", "unary", "unary", "binary", "binary", "binary", "scalar_binary", "where",
        "clip", "reduce", "reduce", "softmax", "norm", "layout", "layout", "layout",
        "index", "index", "join", "pad", "contract", "contract", "diag_trace", "argmax_take",
        "creation", "stop_gradient", "cast",
    ]
    STEPS_TAME = [
        "tame_unary", "tame_unary", "binary_tame", "scalar_binary", "where", "reduce_tame",
        "softmax", "layout", "layout", "index", "join", "pad", "contract", "contract", "diag_trace",
    ]
    # Steps added with version 2 (control flow and sorting); version 1's seeds
    # (the regression tests' and the first 10,000-program run's) keep their programs.
    STEPS_V2 = ["scan", "loop", "branch", "order"]

    def unary(self):
        a = self.operand()
        self.emit(f"gt.{self.pick(UNARY)}({a.name})", a.shape)

    def tame_unary(self):
        a = self.operand()
        self.emit(f"gt.{self.pick(TAME_UNARY)}({a.name})", a.shape)

    def partner(self, a: Val) -> Val:
        """A pool value that broadcasts with a (made to fit when none does)."""
        fits = [v for v in self.pool if _broadcasts(a.shape, v.shape)]
        if fits and self.rng.random() < 0.85:
            return self.pick(fits)
        return Val(self.fit(self.operand(), a.shape), a.shape)

    def binary(self):
        a = self.operand()
        b = self.partner(a)
        out = np.broadcast_shapes(a.shape, b.shape)
        if self.rng.random() < 0.4:
            self.emit(f"{a.name} {self.pick(OPERATORS)} {b.name}", out)
        else:
            self.emit(f"gt.{self.pick(BINARY)}({a.name}, {b.name})", out)

    def binary_tame(self):
        a = self.operand()
        b = self.partner(a)
        out = np.broadcast_shapes(a.shape, b.shape)
        op = self.pick(["+", "-", "*", "gt.add", "gt.multiply", "gt.subtract"])
        expr = f"{a.name} {op} {b.name}" if len(op) == 1 else f"{op}({a.name}, {b.name})"
        self.emit(expr, out)

    def scalar_binary(self):
        a = self.operand()
        c = self.const()
        forms = [f"{a.name} + {c}", f"{c} - {a.name}", f"{a.name} * {c}", f"{a.name} / 2.0",
                 f"{a.name} ** 2", f"{a.name} ** 3", f"gt.power({a.name}, 2.0)"]
        if not self.tame:
            forms += [f"{a.name} ** 0.5", f"{a.name} ** -1", f"{a.name} ** 1.5", f"{c} / {a.name}",
                      f"gt.power(2.0, {a.name})", f"{a.name} ** 0", f"gt.maximum({a.name}, {c})",
                      f"gt.minimum({c}, {a.name})"]
        self.emit(self.pick(forms), a.shape)

    def where(self):
        a = self.operand()
        b = self.partner(a)
        out = np.broadcast_shapes(a.shape, b.shape)
        cmp = self.pick(COMPARISONS)
        r = self.rng.random()
        if r < 0.4:
            expr = f"gt.where({a.name} {cmp} {b.name}, {a.name}, {b.name})"
        elif r < 0.6:
            expr = f"gt.where(gt.logical_and({a.name} > {self.const()}, {b.name} {cmp} 0.0), {a.name} * {b.name}, {b.name})"
        elif r < 0.8 and not self.tame:
            # The NaN-safe pattern: the branch not taken may be NaN or inf.
            fn = self.pick(["log", "sqrt", "reciprocal", "log1p"])
            expr = f"gt.where({a.name} > 0.0, gt.{fn}({a.name}), {b.name})"
        else:
            expr = f"gt.where(gt.logical_not({a.name} {cmp} {self.const()}), {b.name}, {a.name} * 2.0)"
        self.emit(expr, out)

    def clip(self):
        a = self.operand()
        lo, hi = sorted(float(self.pick([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0])) for _ in range(2))
        form = self.pick([f"gt.clip({a.name}, {lo}, {hi})", f"gt.clip({a.name}, None, {hi})",
                          f"gt.clip({a.name}, {lo}, None)"])
        self.emit(form, a.shape)

    def axis_args(self, a: Val, allow_tuple=True):
        """(text, out_shape) of random axis/keepdims arguments for a reduction of a."""
        rank = len(a.shape)
        keep = bool(self.rng.random() < 0.3)
        r = self.rng.random()
        if rank == 0 or r < 0.3:
            axes, text = tuple(range(rank)), ""
        elif allow_tuple and rank > 1 and r < 0.45:
            axes = tuple(sorted(int(i) for i in self.rng.choice(rank, 2, replace=False)))
            text = f", axis={axes}"
        else:
            ax = int(self.rng.integers(-rank, rank))
            axes, text = (ax % rank,), f", axis={ax}"
        if keep:
            text += ", keepdims=True"
            out = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
        else:
            out = tuple(d for i, d in enumerate(a.shape) if i not in axes)
        return text, out

    def reduce(self, names=REDUCTIONS):
        a = self.operand()
        name = self.pick(names)
        text, out = self.axis_args(a)
        if name in ("var", "std") and self.rng.random() < 0.3:
            n = int(np.prod(a.shape)) // max(1, int(np.prod(out)))
            if n > 1:
                text += ", ddof=1"
        self.emit(f"gt.{name}({a.name}{text})", out)

    def reduce_tame(self):
        self.reduce(["sum", "mean", "logsumexp", "max", "min"])

    def softmax(self):
        a = self.operand()
        if not a.shape:
            return self.unary() if not self.tame else self.tame_unary()
        ax = int(self.rng.integers(-len(a.shape), len(a.shape)))
        self.emit(f"gt.{self.pick(['softmax', 'log_softmax'])}({a.name}, axis={ax})", a.shape)

    def norm(self):
        a = self.operand()
        if len(a.shape) == 1 and self.rng.random() < 0.5:
            self.emit(f"gt.norm({a.name}, ord={self.pick([1, 2, 'np.inf', 3])})", ())
        elif len(a.shape) == 2 and self.rng.random() < 0.5:
            order = self.pick(["'fro'", "1", "np.inf"])
            self.emit(f"gt.norm({a.name}, ord={order})", ())
        else:
            self.emit(f"gt.norm({a.name})", ())

    def layout(self):
        a = self.operand()
        rank = len(a.shape)
        choice = self.pick(["reshape", "ravel", "expand_dims", "squeeze", "broadcast_to", "transpose",
                            "moveaxis", "swapaxes", "T"])
        if choice == "reshape":
            shape = _factor(int(np.prod(a.shape)), self.rng)
            self.emit(f"gt.reshape({a.name}, {shape})", shape)
        elif choice == "ravel":
            self.emit(f"gt.{self.pick(['ravel', 'flatten'])}({a.name})", (int(np.prod(a.shape)),))
        elif choice == "expand_dims" or rank == 0:
            ax = int(self.rng.integers(-(rank + 1), rank + 1))
            shape = list(a.shape)
            shape.insert(ax % (rank + 1), 1)
            self.emit(f"gt.expand_dims({a.name}, {ax})", shape)
        elif choice == "squeeze":
            ones = [i for i, d in enumerate(a.shape) if d == 1]
            if not ones:
                return self.emit(f"gt.squeeze(gt.expand_dims({a.name}, 0), 0)", a.shape)
            if self.rng.random() < 0.5:
                self.emit(f"gt.squeeze({a.name})", tuple(d for d in a.shape if d != 1))
            else:
                ax = self.pick(ones)
                self.emit(f"gt.squeeze({a.name}, axis={ax})", tuple(d for i, d in enumerate(a.shape) if i != ax))
        elif choice == "broadcast_to":
            shape = tuple(int(self.rng.integers(1, 4)) if d == 1 else d for d in a.shape)
            if self.rng.random() < 0.5:
                shape = (int(self.rng.integers(1, 4)),) + shape
            self.emit(f"gt.broadcast_to({a.name}, {shape})", shape)
        elif choice in ("transpose", "T"):
            perm = tuple(int(i) for i in self.rng.permutation(rank))
            if choice == "T" or self.rng.random() < 0.3:
                self.emit(f"gt.transpose({a.name})", a.shape[::-1])
            else:
                self.emit(f"gt.transpose({a.name}, {perm})", tuple(a.shape[i] for i in perm))
        elif choice == "moveaxis":
            s, d = (int(i) for i in self.rng.integers(-rank, rank, size=2))
            order = [i for i in range(rank) if i != s % rank]
            order.insert(d % rank, s % rank)
            self.emit(f"gt.moveaxis({a.name}, {s}, {d})", tuple(a.shape[i] for i in order))
        else:
            i, j = (int(k) for k in self.rng.integers(0, rank, size=2))
            shape = list(a.shape)
            shape[i], shape[j] = shape[j], shape[i]
            self.emit(f"gt.swapaxes({a.name}, {i}, {j})", shape)

    def index(self):
        a = self.operand()
        rank = len(a.shape)
        if rank == 0:
            return self.emit(f"{a.name}[None]", (1,))
        d0 = a.shape[0]
        r = self.rng.random()
        if r < 0.2:
            i = int(self.rng.integers(-d0, d0))
            self.emit(f"{a.name}[{i}]", a.shape[1:])
        elif r < 0.45:
            start = int(self.rng.integers(0, d0))
            step = self.pick([1, 1, 2, -1])
            if step > 0:
                n = len(range(start, d0, step))
                self.emit(f"{a.name}[{start}::{step}]", (n,) + a.shape[1:])
            else:
                self.emit(f"{a.name}[::-1]", a.shape)
        elif r < 0.6:
            last = a.shape[-1]
            k = int(self.rng.integers(1, last + 1))
            self.emit(f"{a.name}[..., :{k}]", a.shape[:-1] + (k,))
        elif r < 0.8:
            idx = [int(i) for i in self.rng.integers(-d0, d0, size=int(self.rng.integers(1, 4)))]
            self.emit(f"{a.name}[{idx}]", (len(idx),) + a.shape[1:])
        else:
            ax = int(self.rng.integers(0, rank))
            idx = [int(i) for i in self.rng.integers(-a.shape[ax], a.shape[ax], size=int(self.rng.integers(1, 4)))]
            shape = a.shape[:ax] + (len(idx),) + a.shape[ax + 1:]
            self.emit(f"gt.take({a.name}, {idx}, axis={ax})", shape)

    def join(self):
        a = self.operand()
        rank = len(a.shape)
        if rank == 0 or self.rng.random() < 0.4:
            b = self.fit(self.operand(), a.shape)
            ax = int(self.rng.integers(0, rank + 1))
            shape = list(a.shape)
            shape.insert(ax, 2)
            return self.emit(f"gt.stack([{a.name}, {b}], axis={ax})", shape)
        ax = int(self.rng.integers(0, rank))
        k = int(self.rng.integers(1, 3))
        bshape = a.shape[:ax] + (k,) + a.shape[ax + 1:]
        b = self.fit(self.operand(), bshape)
        shape = a.shape[:ax] + (a.shape[ax] + k,) + a.shape[ax + 1:]
        self.emit(f"gt.concatenate([{a.name}, {b}], axis={ax})", shape)

    def pad(self):
        a = self.operand()
        if not a.shape:
            return self.emit(f"gt.pad(gt.reshape({a.name}, (1,)), (1, 0))", (2,))
        widths = [tuple(int(w) for w in self.rng.integers(0, 3, size=2)) for _ in a.shape]
        shape = tuple(d + w0 + w1 for d, (w0, w1) in zip(a.shape, widths))
        cv = "" if self.rng.random() < 0.5 else f", constant_values={self.const()}"
        self.emit(f"gt.pad({a.name}, {widths}{cv})", shape)

    def contract(self):
        a = self.operand()
        r = self.rng.random()
        m = a.shape[-2] if len(a.shape) >= 2 else None
        k = a.shape[-1] if a.shape else None
        n = int(self.rng.integers(1, 4))
        if r < 0.25 and len(a.shape) in (1, 2, 3):
            b = self.fit(self.operand(), (k, n))
            self.emit(f"{a.name} @ {b}" if self.rng.random() < 0.5 else f"gt.matmul({a.name}, {b})",
                      a.shape[:-1] + (n,))
        elif r < 0.35 and len(a.shape) == 1:
            b = self.fit(self.operand(), a.shape)
            self.emit(f"gt.{self.pick(['dot', 'vdot', 'inner'])}({a.name}, {b})", ())
        elif r < 0.45 and len(a.shape) <= 1:
            b = self.fit(self.operand(), (n,))
            self.emit(f"gt.outer({a.name}, {b})", (int(np.prod(a.shape)), n))
        elif r < 0.55 and len(a.shape) == 2:
            b = self.fit(self.operand(), (k, n))
            self.emit(f"gt.tensordot({a.name}, {b}, axes=1)", (m, n))
        elif r < 0.65 and len(a.shape) == 2:
            b = self.fit(self.operand(), a.shape)
            self.emit(f"gt.tensordot({a.name}, {b}, axes=2)", ())
        elif len(a.shape) == 2:
            spec, shape, bshape = self.pick([
                ("ij,jk->ik", (m, n), (k, n)), ("ij,ij->i", (m,), (m, k)), ("ij,kj->ik", (m, n), (n, k)),
                ("ij->ji", (k, m), None), ("ij,j->i", (m,), (k,)), ("ij,ik->jk", (k, n), (m, n)),
                ("ij->", (), None), ("ij,ij->", (), (m, k)),
            ])
            if bshape is None:
                self.emit(f"gt.einsum('{spec}', {a.name})", shape)
            else:
                self.emit(f"gt.einsum('{spec}', {a.name}, {self.fit(self.operand(), bshape)})", shape)
        elif len(a.shape) == 3:
            b = self.fit(self.operand(), (a.shape[0], k, n))
            self.emit(f"gt.einsum('bij,bjk->bik', {a.name}, {b})", a.shape[:2] + (n,))
        else:
            b = self.fit(self.operand(), (n,))
            self.emit(f"gt.einsum('i,j->ij', gt.ravel({a.name}), {b})", (int(np.prod(a.shape)), n))

    def diag_trace(self):
        a = self.operand()
        if len(a.shape) == 1:
            return self.emit(f"gt.diag({a.name})")
        if len(a.shape) != 2:
            d = int(self.rng.integers(1, 4))
            return self.emit(f"gt.{self.pick(['trace', 'diag'])}({self.fit(a, (d, d))})")
        r = self.rng.random()
        if r < 0.4:
            self.emit(f"gt.trace({a.name})")
        elif r < 0.7:
            self.emit(f"gt.diag({a.name})")
        elif a.shape[0] == a.shape[1]:
            self.emit(f"gt.einsum('{self.pick(['ii->', 'ii->i'])}', {a.name})")
        else:
            self.emit(f"gt.trace({a.name}, offset={self.pick([-1, 1])})")

    def argmax_take(self):
        a = self.operand()
        fn = self.pick(["argmax", "argmin"])
        self.emit(f"gt.take({a.name}, gt.{fn}({a.name}))", ())

    def creation(self):
        a = self.operand()
        form = self.pick([f"gt.zeros_like({a.name}) + {a.name}", f"gt.ones_like({a.name}) * {a.name}",
                          f"{a.name} - gt.full_like({a.name}, {self.const()})"])
        self.emit(form, a.shape)

    def stop_gradient(self):
        a = self.operand()
        self.uses_stop_gradient = True
        self.emit(f"{a.name} * gt.stop_gradient({a.name})", a.shape)

    def cast(self):
        a = self.operand()
        self.emit(f"gt.cast(gt.cast({a.name}, 'float32'), {a.name}.dtype)", a.shape)

    # -- control flow and sorting ---------------------------------------------------
    # Bodies and branches are smooth (TAME_UNARY, +, -, *): the interpreter's
    # fingerprint does not see decisions inside a sub-function, so finite
    # differences stay valid; the branch taken (cond/switch) is fingerprinted.
    def body_expr(self, v: str, other: str | None = None) -> str:
        """A smooth expression of the name v and, when given, of other (of a shape broadcasting
        with v's: the result has their broadcast shape, whichever form is picked)."""
        k1, k2 = self.pick(["0.5", "-0.75", "0.9"]), self.pick(["0.25", "1.5", "-1.0"])
        u = self.pick(TAME_UNARY)
        if other is not None:
            return self.pick([f"gt.{u}({v} * {k1} + {other})", f"{v} * {k2} + gt.{u}({other}) * {k1}",
                              f"gt.{u}({v}) * gt.tanh({other})"])  # bounded: no chaotic map
        return self.pick([f"gt.{u}({v}) * {k1} + {v} * {k2}", f"gt.{u}({v} * {k1})", f"{v} * {k1} - gt.{u}({v})"])

    def scan(self):
        xs = self.operand()
        if not xs.shape:
            return self.loop()
        init = self.fit(self.operand(), xs.shape[1:])
        reverse = ", reverse=True" if self.rng.random() < 0.25 else ""
        new_c, y = self.body_expr("c", "x"), self.pick(["c * x", "gt.sin(c) + x", "c"])
        # Both results are used: reverse mode through a scan runs every step's VJP, the last
        # carry update's too, and 0 * inf there is NaN when the final carry is unused (as in
        # JAX), where a tape, which unrolls the loop, never reaches that dead update.
        self.emit(f"gt.add(*gt.scan(lambda c, x: ({new_c}, {y}), {init}, {xs.name}{reverse}))")

    def loop(self):
        a = self.operand()
        n = int(self.rng.integers(0, 4))
        if self.rng.random() < 0.5:
            step = self.body_expr("c")
            if self.rng.random() < 0.3:
                step += " + c * gt.cast(i, c.dtype) * 0.25"  # the counter enters the carry (in its dtype)
            self.emit(f"gt.fori_loop(0, {n}, lambda i, c: {step}, {a.name})")
        else:
            step = self.body_expr("s[1]")
            self.emit(f"gt.while_loop(lambda s: s[0] < {n}, lambda s: (s[0] + 1, {step}), (0, {a.name}))[1]")

    def branch(self):
        if self.special:
            # vmap turns a batched branch into a select of both branches, whose
            # gradient is NaN where the branch not taken is (inf in, as in JAX):
            # a documented difference from one point at a time, not a finding.
            return self.unary()
        a = self.operand()
        b = self.partner(a)
        if self.rng.random() < 0.6:
            pred = self.pick([f"gt.sum({a.name}) > {self.const()}", f"gt.max({b.name}) < {self.const()}"])
            self.emit(f"gt.cond({pred}, lambda u, w: {self.body_expr('u', 'w')}, "
                      f"lambda u, w: {self.body_expr('u', 'w')}, {a.name}, {b.name})")
        else:
            branches = ", ".join(f"lambda u: {self.body_expr('u')}" for _ in range(int(self.rng.integers(2, 4))))
            index = self.pick([f"gt.argmax(gt.ravel({a.name}))", f"gt.argmin(gt.ravel({a.name})) - 1"])
            self.emit(f"gt.switch({index}, [{branches}], {a.name})")

    def order(self):
        a = self.operand()
        if not a.shape:
            return self.emit(f"gt.sort(gt.reshape({a.name}, (1,)))")
        ax = int(self.rng.integers(-len(a.shape), len(a.shape)))
        r = self.rng.random()
        if r < 0.4:
            self.emit(f"gt.sort({a.name}, axis={ax})")
        elif r < 0.6:
            self.emit(f"gt.median({a.name}, axis={ax})")
        else:
            q = self.pick(["0.3", "[0.1, 0.75]", "0.5"])
            method = self.pick(["linear", "lower", "higher", "nearest", "midpoint", "hazen", "weibull"])
            self.emit(f"gt.quantile({a.name}, {q}, axis={ax}, method='{method}')")

    # -- fitting a value to a shape ------------------------------------------------
    def fit(self, v: Val, shape) -> str:
        """An expression of v with exactly `shape` (reshape, broadcast, slice or pad)."""
        shape = tuple(shape)
        if v.shape == shape:
            return v.name
        if _broadcasts_to(v.shape, shape):
            return f"gt.broadcast_to({v.name}, {shape})"
        n, s = int(np.prod(shape)), int(np.prod(v.shape))
        flat = f"gt.ravel({v.name})"
        if s > n:
            flat = f"{flat}[:{n}]"
        elif s < n:
            flat = f"gt.pad({flat}, (0, {n - s}), constant_values=0.25)"
        return f"gt.reshape({flat}, {shape})"


def _broadcasts(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _broadcasts_to(a, shape) -> bool:
    return len(a) <= len(shape) and _broadcasts(a, shape) and np.broadcast_shapes(a, shape) == tuple(shape)


def _factor(n: int, rng) -> tuple:
    """A random shape with n elements (rank 0-3; rank 0 only for n == 1)."""
    dims = []
    while n > 1:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        d = divisors[rng.integers(len(divisors))]
        dims.append(d)
        n //= d
    if rng.random() < 0.4 and len(dims) < 3:
        dims.insert(int(rng.integers(0, len(dims) + 1)), 1)
    rng.shuffle(dims)
    return tuple(int(d) for d in dims)
