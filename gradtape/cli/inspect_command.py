"""`python -m gradtape inspect module:function --shape ...`: the IR of every stage, timed, and a picture."""
from __future__ import annotations

import os
import sys

from .. import codegen
from .graph import drawable, layout, model
from .html_graph import to_html
from .png import write_png
from .stages import run_stages
from .svg import to_svg
from .targets import UsageError, add_target_arguments, check_arity, describe_args, load_function, parse_shape, traced_for_shapes

_RUNTIME_STAGES = ("lower", "ir_text", "parse", "optimize", "emit_object", "load", "entry")


def add_parser(commands):
    p = commands.add_parser(
        "inspect", help="print the traced, adjoint and optimized IR with the time of each stage",
        description="Trace module:function for the given shapes and print its IR at every stage of "
                    "value_and_grad's pipeline (traced, adjoint, optimized; --llvm: the LLVM IR) with the "
                    "time each stage took; --graph draws the traced, adjoint and optimized graphs with the fused "
                    "kernels: out.html is an interactive page (one self-contained file: pan, zoom, search, "
                    "kernels that open on a click, each box named as in the printed IR and linked to its "
                    "source line; docs/inspect_graph.md), out.svg or out.png a picture whose kernels are "
                    "collapsed past 80 equations.")
    add_target_arguments(p)
    p.add_argument("--argnums", help="arguments to differentiate, comma-separated (default: every float one)")
    p.add_argument("--forward", action="store_true", help="no adjoint: the function alone")
    p.add_argument("--llvm", action="store_true", help="also print the LLVM IR that code generation makes")
    p.add_argument("--graph", metavar="FILE",
                   help="draw the graphs into FILE: .html (interactive, self-contained), .svg, or .png (matplotlib)")
    p.set_defaults(run=run, parser=p)


def run(args, out=None) -> int:
    out = out or sys.stdout
    if args.graph and os.path.splitext(args.graph)[1].lower() not in (".html", ".svg", ".png"):
        raise UsageError(f"--graph {args.graph!r}: the picture is written as .html, .svg or .png")
    f = load_function(args.target)
    named = [parse_shape(s, args.dtype) for s in args.shape]
    names, specs = [n for n, _ in named], [s for _, s in named]
    check_arity(f, args.target, specs)
    argnums = None
    if args.argnums:
        try:
            argnums = [int(a) for a in args.argnums.split(",")]
        except ValueError:
            raise UsageError(f"--argnums {args.argnums!r}: expected comma-separated integers") from None
    with traced_for_shapes(getattr(f, "__name__", args.target), names, specs):
        run_ = run_stages(f, specs, argnums, args.forward)
    ms = {k: v * 1e3 for k, v in run_.seconds.items()}
    title = getattr(f, "__name__", args.target)
    wrt = f"; adjoint w.r.t. argument{'s' if len(run_.wrt) != 1 else ''} {', '.join(map(str, run_.wrt))}" \
        if run_.wrt else ""
    print(f"gradtape inspect {args.target} ({describe_args(names, specs)}){wrt}", file=out)
    _section(out, f"traced IR (trace {ms['trace']:.1f} ms, {len(run_.traced.eqns)} equations)", run_.traced.pretty())
    if run_.adjoint is not None:
        _section(out, f"adjoint IR (adjoint {ms['adjoint']:.1f} ms, {len(run_.adjoint.eqns)} equations): "
                      "the function and its gradient, before optimization", run_.adjoint.pretty())
    _section(out, f"optimized IR (optimize {ms['optimize']:.1f} ms, {len(run_.optimized.eqns)} equations): "
                  "what is compiled", run_.optimized.pretty())
    if args.llvm:
        try:
            _section(out, "LLVM IR (as code generation emits it, before LLVM's passes)",
                     str(codegen.lower(run_.optimized, f"{title}_kernel").module).rstrip())
        except codegen.Unsupported as e:
            _section(out, "LLVM IR", f"(none: {e})")
    _section(out, "time per stage (ms)", _times(run_))
    if args.graph:
        _draw(run_, args.graph, title)
        print(f"\nwrote {args.graph}", file=out)
    return 0


def _section(out, title: str, body: str):
    print(f"\n== {title}\n{body}", file=out)


def _times(run_) -> str:
    rows = [(f"{k}", v * 1e3) for k, v in run_.seconds.items()]
    if run_.fallback:
        rows.append(("native code", float("nan")))
    rows += [(f"{k}{' (LLVM)' if k == 'optimize' else ''}", run_.compile_seconds[k] * 1e3)
             for k in _RUNTIME_STAGES if k in run_.compile_seconds]
    lines = [f"  {name:18s} {value:9.2f}" for name, value in rows]
    lines.append(f"  {'total':18s} {sum(v for _, v in rows if v == v):9.2f}")
    if run_.fallback:
        lines.append(f"  (no native code: {run_.fallback})")
    return "\n".join(lines)


def _draw(run_, path: str, title: str):
    stages = [(run_.traced, "traced", "traced")]
    if run_.adjoint is not None:
        stages.append((run_.adjoint, "adjoint", "adjoint"))
    stages.append((run_.optimized, "optimized", "optimized (compiled)"))
    if path.lower().endswith(".html"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(to_html([model(drawable(fn), name, text, run_.sites) for fn, name, text in stages], title))
        return
    panels = [layout(drawable(fn), name, text, run_.sites) for fn, name, text in stages]
    if path.lower().endswith(".png"):
        write_png(panels, path)
    else:
        with open(path, "w") as f:
            f.write(to_svg(panels))
