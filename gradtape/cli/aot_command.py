"""`python -m gradtape aot module:function --shape ... -o libname.so`: export a C library."""
from __future__ import annotations

import os

from .. import aot, grad, value_and_grad
from .targets import UsageError, add_target_arguments, check_arity, describe_args, load_function, parse_shape, traced_for_shapes


def add_parser(commands):
    p = commands.add_parser(
        "aot", help="compile a function for fixed shapes into a C shared library and header",
        description="Compile module:function for the given shapes and write a shared library and a C header "
                    "whose function takes pointers to the inputs and outputs (gradtape.export_c).")
    add_target_arguments(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--grad", action="store_true", help="export the gradient (gradtape.grad)")
    which.add_argument("--value-and-grad", action="store_true", help="export the value and the gradient")
    p.add_argument("--argnums", default="0", help="arguments to differentiate, comma-separated (default 0)")
    p.add_argument("-o", "--output", required=True, help="the shared library to write, e.g. libloss.so")
    p.add_argument("--header", help="the C header to write (default: <name>.h next to the library)")
    p.add_argument("--name", help="the C function's name (default: the library's name without lib and .so)")
    p.add_argument("--save", metavar="FILE", help="also save the compiled function for gradtape.load")
    p.set_defaults(run=run, parser=p)


def run(args) -> int:
    f = load_function(args.target)
    named = [parse_shape(s, args.dtype) for s in args.shape]
    names, specs = [n for n, _ in named], [s for _, s in named]
    check_arity(f, args.target, specs)
    try:
        argnums = tuple(int(a) for a in args.argnums.split(","))
    except ValueError:
        raise UsageError(f"--argnums {args.argnums!r}: expected comma-separated integers, e.g. 0,1") from None
    out_of_range = [a for a in argnums if not -len(specs) <= a < len(specs)]
    if out_of_range:
        raise UsageError(f"--argnums {args.argnums}: {', '.join(map(str, out_of_range))} is not an argument of a "
                         f"function given {len(specs)} --shape option{'s' if len(specs) != 1 else ''} (0 to "
                         f"{len(specs) - 1})")
    argnums = argnums[0] if len(argnums) == 1 else argnums
    if args.grad:
        f = grad(f, argnums=argnums)
    elif args.value_and_grad:
        f = value_and_grad(f, argnums=argnums)
    with traced_for_shapes(getattr(f, "__name__", args.target), names, specs):
        compiled = aot.compile(f, *specs)
    if all(names) and len(names) == len(compiled.arg_names):
        compiled.arg_names = names
    exported = aot.export_c(compiled, args.output, header=args.header, name=args.name)
    if args.save:
        compiled.save(args.save)
    print(f"compiled {compiled.transform}({compiled.name}) for ({describe_args(names, specs)}): "
          f"{compiled.signature()}")
    print(f"wrote {os.path.relpath(exported.library)} and {os.path.relpath(exported.header)}: "
          f"{exported.function}(...), {exported.workspace_bytes} bytes of workspace"
          + (f"; saved {args.save}" if args.save else ""))
    return 0
