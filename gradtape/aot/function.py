"""gradtape.compile: one signature of a function, compiled ahead of time.

    g = gradtape.compile(gradtape.grad(loss), ShapeDtype((3, 4)), np.ones(4))
    g(w, x)                        # native code: no tracing, no signature cache
    g.save("loss_grad.gtc")        # machine code + signature; gradtape.load it elsewhere

An AotFunction is a staged function's Program for one signature, compiled
synchronously (the disk cache applies), plus what a call needs to turn the
arguments into the kernel's flat arrays and its outputs back into the
result structure. Static arguments (static_argnums) are baked in and are
not passed again, as in JAX's compiled functions.
"""
from __future__ import annotations

import inspect
import re

from .. import runtime
from ..runtime import portable
from ..staging import StagedFunction, differentiable
from ..tracer import signature
from ..tracer.signature import as_array
from ..tracer import tree
from . import artifact
from .errors import AotError
from .specs import examples


class AotFunction:
    """A function compiled ahead of time for one signature (gradtape.compile, gradtape.load).

    Call it with the arguments of the original function, static arguments
    left out: arrays of exactly the compiled shapes and dtypes (other
    memory layouts and Python scalars are converted), in the same nesting of
    lists, tuples and dicts. Returns NumPy arrays in the function's result
    structure.

    Attributes:
        name: the function's name.
        in_types, out_types: the flat signature (ir.TensorType per array).
        arg_names: a name per input array (C parameter names for export_c).
        ir: the optimized IR text that was compiled.
        native: True when calls run machine code (False: the interpreter).
        fn: the ir.Function (None for a loaded file, which holds machine code only).

    Raises (on call):
        TypeError: arguments of another structure; runtime.ArgumentError (a
            TypeError) for an array of another shape or dtype.
    """

    def __init__(self, compiled, in_tree, out_tree, name, arg_names, ir_text, fn=None, transform=""):
        self._compiled = compiled
        self._entry = compiled.entry
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._assemble = _assembler(out_tree)
        # A flat tuple of arrays: the call can hand its arguments straight to the kernel's entry.
        self._flat = all(s is None for s in in_tree)
        self.name = name
        self.transform = transform
        self.arg_names = list(arg_names)
        self.ir = ir_text
        self.fn = fn
        self.in_types = compiled.in_types
        self.out_types = compiled.out_types

    @property
    def native(self) -> bool:
        return self._compiled.native

    def __call__(self, *args):
        if self._flat and len(args) == len(self.in_tree):
            outs = self._entry(*args)
            if outs is NotImplemented:
                outs = self._compiled(*[as_array(a) for a in args])
            return self._assemble(outs)
        return self._assemble(self._compiled(*self._leaves(args)))

    def _leaves(self, args) -> list:
        if len(args) != len(self.in_tree):
            raise TypeError(f"{self._title()} takes {len(self.in_tree)} arguments "
                            f"(static arguments are compiled in), got {len(args)}")
        leaves = []
        for i, (a, skeleton) in enumerate(zip(args, self.in_tree)):
            flat = tree.flatten(a)
            if tree.unflatten(a, [None] * len(flat)) != skeleton:
                raise TypeError(f"{self._title()}: argument {i} must have the structure {_show(skeleton)}, "
                                f"got {_show(tree.unflatten(a, [None] * len(flat)))}")
            leaves += flat
        return [as_array(x) for x in leaves]

    def signature(self) -> str:
        """`(f64[3,4], f64[4]) -> (f64[3,4])`: the flat types this function takes and returns."""
        return self._compiled.signature()

    def _title(self) -> str:
        return f"compiled {self.transform + ' of ' if self.transform else ''}{self.name}{self.signature()}"

    def __repr__(self):
        return f"<AotFunction {self._title()} via {self._compiled.call_path}>"

    def save(self, path) -> None:
        """Write the machine code and signature to `path`, for gradtape.load in another process.

        The file holds no Python code: loading it needs neither the module
        that defined the function nor its source. It runs only on a machine
        like this one (CPU name and features, LLVM, gradtape's code
        generator); gradtape.load refuses others with a message.

        Raises:
            AotError: the function runs in the interpreter (nothing to save),
                or its structure holds something a file cannot (a dict key of
                another type than str/int/float/bool).
        """
        artifact.save(self, path)

    def __reduce__(self):
        """Pickled as the saved file's bytes plus the IR: a process on another CPU or LLVM
        compiles the IR again instead of loading this machine code (see _unpickle)."""
        state = {
            "code": artifact.to_bytes(self) if self.native else None,
            "fn": self.fn,
            "in_tree": self.in_tree,
            "out_tree": self.out_tree,
            "name": self.name,
            "arg_names": self.arg_names,
            "ir": self.ir,
            "transform": self.transform,
        }
        return (_unpickle, (state,))


def _unpickle(state: dict) -> AotFunction:
    """An AotFunction from its pickled state: the machine code when it was built for this machine,
    else compiled again from the IR (never foreign code).

    Raises:
        AotError: the code was built for another machine and the pickle holds no IR (a function
            loaded from a file), or the machine code cannot be loaded here.
    """
    fn, code = state["fn"], state["code"]
    where = f"unpickling compiled {state['name']}"
    compiled = None
    if code is not None:
        meta, payload = artifact.decode(code, where)
        why = portable.foreign(meta)
        if not why:
            compiled = artifact.restore(meta, payload, where, f"{state['name']} (unpickled)", fn)[0]
        elif fn is None:
            raise AotError(f"{where}: its machine code was built for another machine or version ({why}), "
                           "and it was loaded from a file, so it carries no IR to compile again; "
                           "gradtape.compile(f, *args) in this process instead")
    if compiled is None:
        if fn is None:
            raise AotError(f"{where}: the pickle holds neither machine code nor IR")
        compiled = runtime.compile_function(fn)
    return AotFunction(compiled, state["in_tree"], state["out_tree"], state["name"], state["arg_names"],
                       state["ir"], fn=fn, transform=state["transform"])


def _assembler(out_tree):
    if out_tree is None:
        return lambda outs: outs[0]
    return lambda outs: tree.unflatten(out_tree, outs)


def _show(skeleton) -> str:
    return re.sub(r"None", "x", repr(skeleton))


def compile(fn, *args, static_argnums=None) -> AotFunction:  # noqa: A001  (gradtape.compile)
    """Compile `fn` for the signature of `args`, ahead of its first call.

    Args:
        fn: a Python function of arrays (staged as gradtape.differentiable
            would), or a staged function (gradtape.differentiable, grad,
            value_and_grad): its transform is what is compiled.
        *args: example arguments or their specs: arrays, Python scalars,
            gradtape.ShapeDtype((3, 4), "float64"), nested in lists, tuples
            and dicts as the function takes them; static arguments by value.
        static_argnums: for a plain Python function, the positions of static
            arguments (a staged function has its own).

    Returns:
        An AotFunction: call it without static arguments; `.save(path)`.

    Raises:
        AotError: the function reads values of an enclosing trace, or its
            transform returns functions (vjp, linearize) rather than arrays.
        TypeError: as the staged function would for these arguments.

    Example:
        >>> from gradtape import ShapeDtype
        >>> def loss(w, x):
        ...     return gradtape.sum(gradtape.tanh(w @ x) ** 2)
        >>> vg = gradtape.compile(gradtape.value_and_grad(loss), ShapeDtype((3, 4)), ShapeDtype((4,)))
        >>> value, grad = vg(np.ones((3, 4)), np.ones(4))
        >>> grad.shape
        (3, 4)
    """
    if isinstance(fn, StagedFunction):
        if static_argnums is not None:
            raise TypeError(f"compile({fn._fname}): a staged function has its own static_argnums; "
                            "pass static_argnums to gradtape.differentiable/grad instead")
        staged = fn
    elif callable(fn):
        staged = differentiable(fn, static_argnums=static_argnums or ())
    else:
        raise TypeError(f"compile: expected a function, got {type(fn).__name__} {fn!r}"[:200])
    args = [examples(a) for a in args]
    sig = signature.describe(args, staged._static, staged._fname)
    if sig.abstract:
        raise AotError(f"compile({staged._fname}): called on abstract tensors inside a trace; "
                       "compile outside of gradtape.grad/differentiable")
    program = staged._program(sig, args)
    title = f"compile({staged._transform.name}({staged._fname}))"
    if program.captured:
        raise AotError(f"{title}: the function reads values of an enclosing trace; compile it at top level")
    if getattr(program, "later", None) is not None:
        raise AotError(f"{title}: this transform returns a function to call later; "
                       "compile a transform that returns arrays (grad, value_and_grad, differentiable, ...)")
    compiled = runtime.compile_function(program.fn)
    in_tree = tuple(
        tree.unflatten(a, [None] * len(tree.flatten(a))) for i, a in enumerate(args) if i not in staged._static
    )
    out_tree = program.assemble([None] * len(program.fn.outvars))
    return AotFunction(
        compiled, in_tree, out_tree, staged._fname, _arg_names(staged, args, sig), str(program.fn),
        fn=program.fn, transform=staged._transform.name,
    )


def _arg_names(staged, args, sig) -> list:
    """A name per input array: the parameter's name, with `_k` for the k-th array of a container."""
    try:
        params = list(inspect.signature(staged._fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, r in enumerate(sig.ranges):
        if r is None:
            continue
        base = params[i] if i < len(params) else f"arg{i}"
        n = r[1] - r[0]
        names += [base] if n == 1 and not isinstance(args[i], (list, tuple, dict)) else [f"{base}_{k}" for k in range(n)]
    return names

