"""The command line: `python -m gradtape aot ...` and `python -m gradtape inspect ...`.

    python -m gradtape aot losses:loss --shape w=3,4 --shape x=4 --value-and-grad -o libloss.so
    python -m gradtape inspect losses:loss --shape w=3,4 --shape x=4 --llvm --graph loss.svg
    python -m gradtape inspect losses:loss --shape w=3,4 --shape x=4 --graph loss.html

`aot` exports a C shared library and header (gradtape.export_c) and can
save the compiled function (--save, for gradtape.load); `inspect` prints the
traced, adjoint and optimized IR (and LLVM IR) with the time of each stage
and draws the graphs with their fused kernels: as an interactive,
self-contained HTML page (docs/inspect_graph.md), an SVG or a PNG.

Files: targets.py (module:function and --shape), aot_command.py,
inspect_command.py, stages.py (the timed pipeline), sources.py (the user's
line of each equation), graph.py (a Function's graph with its kernels, and
its top-down layout), layered_layout.py (layers and crossing reduction),
svg.py and png.py (drawing it), html_graph.py with graph_page.js and
graph_page.css (the interactive page).
"""
from __future__ import annotations

import argparse
import sys

from ..aot import AotError
from . import aot_command, inspect_command
from .targets import UsageError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gradtape", description="gradtape's command line")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{aot,inspect}")
    aot_command.add_parser(commands)
    inspect_command.add_parser(commands)
    return parser


def main(argv=None) -> int:
    """Run the command line on `argv` (default: sys.argv[1:]); returns the exit status.

    0 on success; 2 for arguments that cannot be used: the command's usage
    line and a message saying what to write instead, never a traceback
    (argparse's own errors exit with 2 the same way); 1 when compiling or
    exporting fails (gradtape.aot.AotError).
    """
    parser = _parser()
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help()  # what the command can do, rather than argparse's "arguments are required"
        return 0
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as e:
        args.parser.print_usage(sys.stderr)
        print(f"python -m gradtape {args.command}: error: {e}", file=sys.stderr)
        return 2
    except AotError as e:
        print(f"python -m gradtape {args.command}: {e}", file=sys.stderr)
        return 1
