"""The libmvec implementation of the math table (math.py): glibc's vector
functions, for sin, cos, tan, arctan and pow.

LLVM 22 via llvmlite has no working `-vector-library` option
(measured: the option is accepted and ignored), so each call site says itself which vector functions
implement it, with the string attribute

    call double @"gradtape.math.sin.f64"(double %x)
        "vector-function-abi-variant"="_ZGV_LLVM_N2v_gradtape.math.sin.f64(_ZGVbN2v_sin),
                                       _ZGV_LLVM_N4v_gradtape.math.sin.f64(_ZGVdN4v_sin)"

The loop vectorizer then calls `_ZGVdN4v_sin` on 4 doubles at a time (AVX2)
or `_ZGVbN2v_sin` on 2 (SSE), whichever width it picks. The vector functions
are declared in the module and kept alive through `@llvm.compiler.used`, or
GlobalDCE would delete the unused declarations before the vectorizer looks.

The attributed callee is our own `noinline` helper (its body calls the
intrinsic `llvm.sin.f64`, so the scalar remainder loop ends up in libm), not
libm's `sin` nor the intrinsic, because LLVM rewrites those and rebuilds the
call without the attribute: InstCombine turns a `sin` libcall into the
intrinsic (pitfall 5), and sin(-x) -> -sin(x), tan(-x) -> -tan(x),
pow(2, y) -> exp2(y) replace intrinsic calls; the vectorizer then widens the
bare intrinsic, which the backend scalarizes. Marking a libcall `nobuiltin`
would stop the rewrites but also stops the vectorizer from using the mapping.
An opaque helper is left alone, and the exact pow rewrites worth having (a
constant exponent 2, 0.5, ...) are made before, by math_pow.py.

Without libmvec (another C library), the helper is inlined and the intrinsic
is called: correct, but scalarized by the backend into libm calls.

One vector function per math function and target, for every call: glibc's
SSE, AVX2 and AVX-512 versions of sin are different code and disagree in
the last bit on ~9% of inputs (measured on glibc 2.36: sin 9.3%, cos 9.7%,
log 17%; exp and atan almost never), and libm's scalar sin disagrees with
all of them. Were the vectorizer free to pick a width per loop, and the
remainder to call libm, an element's value would depend on its position in
the array and on the loop it lands in: three equal inputs gave three
outputs that were not all equal, and the standard deviation of "equal"
values a gradient of 1.93 where the true derivative does not exist. So:

- the call site offers only the target's widest variant: `_ZGVeN8v_*` when
  the target CPU (codegen.cpu, GRADTAPE_CPU) has AVX-512F, `_ZGVdN4v_*`
  when it has AVX2 and FMA, else `_ZGVbN2v_*` (a wider variant would not
  travel in one register, which the vector ABI expects); math_loops.py
  hints every loop calling one to that width;
- the scalar helper calls the same vector function with its argument in
  every lane and keeps lane 0, so the remainder loop and code outside
  loops compute exactly what the vector body computes.

No variant is offered for a target that is not x86-64 (the `_ZGVb`/`_ZGVd`/
`_ZGVe` names are the x86-64 vector ABI).
"""
from __future__ import annotations

import ctypes
import functools

from llvmlite import ir

from . import cpu as target_cpu
from .math_ir import type_suffix

LIBMVEC = "libmvec.so.1"

# x86-64 vector ABI ISA letter -> (lanes of f64, target features it needs),
# widest first. 'e' is AVX-512 (zmm), 'd' is AVX2 (ymm), 'b' is SSE (xmm);
# float variants have twice the lanes.
_ISAS = {"e": (8, ("avx512f",)), "d": (4, ("avx2", "fma")), "b": (2, ())}


@functools.lru_cache(maxsize=None)
def _libmvec_handle():
    """ctypes handle of libmvec, or None when this C library has none."""
    try:
        return ctypes.CDLL(LIBMVEC)
    except OSError:
        return None


def libmvec_available() -> bool:
    """True when libmvec loads in this process (glibc on x86-64)."""
    return _libmvec_handle() is not None


def _vector_variants(base: str, arity: int, suffix: str):
    """[(isa, lanes, vector function name)] of the one variant every call of
    `base` uses on this target (the widest it can call), or [] if none."""
    handle = _libmvec_handle()
    if handle is None or not target_cpu.current().is_x86:
        return []
    for isa, (lanes64, features) in _ISAS.items():
        if not target_cpu.current().has(*features):
            continue
        lanes = lanes64 if suffix == "f64" else 2 * lanes64
        name = f"_ZGV{isa}N{lanes}{'v' * arity}_{base}{'' if suffix == 'f64' else 'f'}"
        if hasattr(handle, name):
            return [(isa, lanes, name)]
    return []


def keep_alive(module: ir.Module, fn: ir.Function) -> None:
    """Add `fn` to @llvm.compiler.used, creating or growing the array."""
    kept = module.__dict__.setdefault("_gradtape_kept_alive", set())  # one scan per function, not per call
    if fn.name in kept:
        return
    kept.add(fn.name)
    i8p = ir.IntType(8).as_pointer()
    ref = fn.bitcast(i8p)
    gv = module.globals.get("llvm.compiler.used")
    if gv is None:
        gv = ir.GlobalVariable(module, ir.ArrayType(i8p, 0), "llvm.compiler.used")
        gv.linkage = "appending"
        gv.section = "llvm.metadata"
        gv.initializer = ir.Constant(ir.ArrayType(i8p, 0), [])
    elements = list(gv.initializer.constant)
    if any(e.get_reference() == ref.get_reference() for e in elements):
        return
    elements.append(ref)
    arr = ir.ArrayType(i8p, len(elements))
    # Nothing references @llvm.compiler.used, so its type can grow in place.
    gv.value_type = arr
    gv.type = arr.as_pointer()
    gv.initializer = ir.Constant(arr, elements)


def _declare_vector(module: ir.Module, name: str, ty: ir.Type, lanes: int, arity: int):
    fn = module.globals.get(name)
    if fn is None:
        vty = ir.VectorType(ty, lanes)
        fn = ir.Function(module, ir.FunctionType(vty, [vty] * arity), name)
        fn.attributes.add("nounwind")
    keep_alive(module, fn)
    return fn


def vector_variant_attribute(module: ir.Module, symbol: str, arity: int, scalar: ir.Function):
    """The call-site attribute mapping calls of `scalar` (the helper computing
    libm's `symbol` of `arity` arguments) to libmvec, declaring the vector
    functions; None when libmvec has no variant for this host."""
    made = module.__dict__.setdefault("_gradtape_variant_attributes", {})  # once per module and helper
    if scalar.name in made:
        return made[scalar.name]
    ty = scalar.function_type.return_type
    mapping = []
    for _isa, lanes, vname in _vector_variants(symbol, arity, type_suffix(ty)):
        _declare_vector(module, vname, ty, lanes, arity)
        mapping.append(f"_ZGV_LLVM_N{lanes}{'v' * arity}_{scalar.name}({vname})")
    made[scalar.name] = f'"vector-function-abi-variant"="{",".join(mapping)}"' if mapping else None
    return made[scalar.name]


def has_vector_variants(symbol: str, arity: int, ty: ir.Type) -> bool:
    """Whether libmvec has a vector `symbol` for `ty` usable on this host."""
    return bool(_vector_variants(symbol, arity, type_suffix(ty)))


def libmvec_symbols(module: ir.Module) -> dict:
    """{name: address in this process} of the libmvec functions `module` declares."""
    handle = _libmvec_handle()
    if handle is None:
        return {}
    out = {}
    for name, gv in module.globals.items():
        if name.startswith("_ZGV") and isinstance(gv, ir.Function) and hasattr(handle, name):
            out[name] = ctypes.cast(getattr(handle, name), ctypes.c_void_p).value
    return out


def emit_scalar_through_vector(builder: ir.IRBuilder, symbol: str, args: list) -> ir.Value:
    """`symbol(*args)` for scalars, computed by the target's vector function
    (the one the loop vectorizer calls): every lane holds the arguments, lane
    0 is the result. Call only when has_vector_variants(symbol, ...) holds."""
    ty = args[0].type
    ((_isa, lanes, vname),) = _vector_variants(symbol, len(args), type_suffix(ty))
    fn = _declare_vector(builder.module, vname, ty, lanes, len(args))
    vty = ir.VectorType(ty, lanes)
    splat = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    vectors = []
    for a in args:
        one = builder.insert_element(ir.Constant(vty, ir.Undefined), a, ir.IntType(32)(0))
        vectors.append(builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined), splat))
    return builder.extract_element(builder.call(fn, vectors), ir.IntType(32)(0))
