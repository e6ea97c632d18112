"""Steps whose code is the same become one function, called with each step's buffers.

A long program repeats itself: the gradient of a chain that applies the same
few ops k times lowers to loops that differ only in the buffers they read
and write. When a module keeps its steps as functions of their own (past
lowering.MAX_INLINED_STEPS or MAX_INLINED_INSTRUCTIONS), LLVM optimizes and
compiles each function on its own, so every copy costs as much as the
first. `StepTable.share_calls` keeps one function per distinct body and
turns each call of a copy into a call of the kept one:

    StepTable(module).share_calls(calls)   # the entry's calls of its step functions

Two steps are the same when their LLVM text is, up to the names of their
arguments: every argument is an `i8*` buffer, and arguments are matched by
the order in which the body first uses them (`canonical_body`), so equal
text means the same instructions on the same roles. A loop's `llvm.loop`
metadata (math_loops.py's vectorizer hints) is compared by its hints, as
each loop has a node of its own. Equality of text is the whole test, which
is what makes it safe: a difference of any kind (a constant, a loop bound,
an offset, a callee, a hint) leaves both functions in the module. Share
only once the bodies are final: the comparison is of the text they have
then.
"""
from __future__ import annotations

import re

import llvmlite.ir as ir

# llvmlite names unnamed values, arguments included, `%".N"`; metadata nodes `!N`.
_UNNAMED = re.compile(r'%"(\.\d+)"')
_METADATA = re.compile(r"!(\d+)\b")


def canonical_body(fn: ir.Function, metadata: dict | None = None) -> tuple:
    """(text, roles): fn's prototype and body with each argument renamed by its role, and
    roles[p] = the role of argument p (the rank of its first use in the body; unused
    arguments follow, in their order). `metadata` maps the module's metadata names to
    nodes, so that a loop ID (a node that holds itself first) reads as its hints."""
    position = {a.name: p for p, a in enumerate(fn.args)}
    role_of: dict = {}

    def rename(m):
        p = position.get(m.group(1))
        if p is None:
            return m.group(0)
        r = role_of.setdefault(p, len(role_of))
        return f'%"arg{r}"'

    def loop_hints(m):
        node = (metadata or {}).get(m.group(1))
        if node is None or not node.operands or node.operands[0] is not node:
            return m.group(0)  # shared by content (add_metadata): the same name is the same node
        return "!loop{" + ", ".join(op.get_reference() for op in node.operands[1:]) + "}"

    buf: list = []
    fn.descr_body(buf)
    body = _METADATA.sub(loop_hints, _UNNAMED.sub(rename, "".join(buf)))
    for p in range(len(fn.args)):
        role_of.setdefault(p, len(role_of))
    roles = [role_of[p] for p in range(len(fn.args))]
    by_role = sorted(range(len(fn.args)), key=roles.__getitem__)
    prototype = ", ".join(f"{fn.args[p].type} {sorted(fn.args[p].attributes)}" for p in by_role)
    head = f"{fn.ftype.return_type} ({prototype}) {fn.attributes._to_list(fn.ftype.return_type)} {fn.linkage}"
    return head + "\n" + body, roles


class StepTable:
    """The distinct step functions of one module (see the module docstring).

    Make it once the module's function bodies and metadata are final."""

    def __init__(self, module: ir.Module):
        self.module = module
        self._metadata = {md.name: md for md in module.metadata}
        self._kept: dict = {}  # canonical text -> (function, roles)
        self.shared = 0  # how many step functions were dropped for an equal one

    def share(self, fn: ir.Function, operands: list) -> tuple:
        """(function, operands) to call for step function `fn` with `operands` (one per argument):
        fn itself, or an equal function kept earlier, which is then the one defined in the
        module (fn is removed from it)."""
        text, roles = canonical_body(fn, self._metadata)
        kept = self._kept.get(text)
        if kept is None:
            self._kept[text] = (fn, roles)
            return fn, operands
        kept_fn, kept_roles = kept
        del self.module.globals[fn.name]
        self.shared += 1
        by_role = {r: operands[p] for p, r in enumerate(roles)}
        return kept_fn, [by_role[r] for r in kept_roles]

    def share_calls(self, calls) -> int:
        """Point each call (an ir.CallInstr of a step function, its only call) at the kept equal
        function with its operands in that function's order; returns how many were dropped."""
        before = self.shared
        for call in calls:
            fn, operands = self.share(call.callee, list(call.args))
            call.operands = [fn, *operands]
        return self.shared - before
