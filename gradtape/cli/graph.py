"""A Function as a picture: equations as boxes, data flow as arrows, fused kernels as groups.

    panel = layout(fn, "traced")      # positions in pixels; svg.py and png.py draw it
    panel = model(fn, "traced")       # the same without positions (html_graph.py lays it out itself)

The kernels are the code generator's: gradtape.codegen.fusion.plan_storage
decides which values get a buffer, each stored value is the root of a loop
nest, and a value computed inline belongs to the kernels that read it (an
equation recomputed in several kernels is drawn in the first and says so).
Call equations are inlined first, as code generation does.

The layout is layered twice, with networkx: kernels are placed in rows by
topological generation of the graph of kernels (its condensation, in case
two kernels feed each other), and inside a kernel's box its equations are
placed in rows by topological generation of their own dependencies; the
order inside each row is layered_layout's (fewer crossing edges). The
arguments form the first row. So every kernel is one box that overlaps no
other, and data flows downwards. Each box is labelled with the IR's name of
its value ("d = pow"), so it matches a line of the printed IR.

A panel of more than COLLAPSE_AT equations is drawn with each kernel
collapsed into one box (`collapsed`): hundreds of equations drawn one by
one make a picture nobody can read.
"""
from __future__ import annotations

import dataclasses

import networkx as nx

from ..codegen.fusion import plan_storage
from ..ir.inline_calls import inline_calls
from ..ir import Var
from ..ir.passes import dce
from ..ir.printer import _Namer, eqn_to_text
from .layered_layout import layered

NODE_W, NODE_H = 150, 38  # pixels
GAP_X, GAP_Y = 16, 26
PAD = 12  # inside a kernel's box
LABEL_H = 16  # a kernel box's title line
TITLE_H = 30  # a panel's title line
COLLAPSE_AT = 80  # equations: more, and the SVG/PNG draw kernels as single boxes


@dataclasses.dataclass
class Node:
    id: str
    kind: str  # "input", "eqn", or "collapsed" (a kernel drawn as one box for its equations)
    label: str  # "var = op" (or the input's "var"), as the printed IR names it
    type: str  # the value's type, e.g. f64[3,4]
    title: str  # the full equation text
    kernel: int | None = None
    output: bool = False  # an output of the Function
    note: str = ""
    var: str = ""  # the IR's name of the value ("d"; "d, e" for a loop's results)
    op: str = ""
    site: object = None  # sources.Site: the user's line that traced it
    x: float = 0.0
    y: float = 0.0


@dataclasses.dataclass
class Kernel:
    id: int
    label: str
    nodes: list
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0


@dataclasses.dataclass
class Panel:
    name: str
    title: str
    nodes: list
    kernels: list
    edges: list  # (source node id, destination node id)
    width: float = 0.0
    height: float = 0.0
    x: float = 0.0
    y: float = 0.0

    @property
    def eqn_count(self) -> int:
        return sum(n.kind == "eqn" for n in self.nodes)


def drawable(fn):
    """The Function as code generation sees it: calls inlined, dead equations dropped."""
    return dce(inline_calls(fn))


def kernels_of(fn) -> dict:
    """{Var: [root Vars of the kernels that compute it]} for each equation's output of `fn`
    (a Function without calls), roots in equation order."""
    stored = plan_storage(fn)
    order = {e.out: i for i, e in enumerate(fn.eqns)}
    readers: dict = {}
    for e in fn.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                readers.setdefault(a, []).append(e.out)
    kernels: dict = {}
    for e in reversed(fn.eqns):
        v = e.out
        if v in stored or not readers.get(v):
            kernels[v] = [v]
        else:
            roots = {r for u in readers[v] for r in kernels[u]}
            kernels[v] = sorted(roots, key=order.__getitem__)
    return kernels


def layout(fn, name: str, title: str, sites=None) -> Panel:
    """The panel of `fn` (already drawable()): nodes, kernel boxes and edges with positions;
    kernels collapsed when it has more than COLLAPSE_AT equations."""
    panel = model(fn, name, title, sites)
    if panel.eqn_count > COLLAPSE_AT:
        panel = collapsed(panel)
    _place(panel)
    return panel


def model(fn, name: str, title: str, sites=None) -> Panel:
    """The panel of `fn` (already drawable()) without positions. `sites`: {Var: sources.Site}."""
    sites = sites or {}
    namer = _Namer()
    nodes, by_var = [], {}
    for k, v in enumerate(fn.invars):
        text = namer.define(v)
        var = text.split(":")[0]
        node = Node(f"{name}-in{k}", "input", var, str(v.type), f"input {text}", var=var, op="input")
        nodes.append(node)
        by_var[v] = node
    outputs = {v for v in fn.outvars if isinstance(v, Var)}
    membership = kernels_of(fn)
    roots = {}
    for e in fn.eqns:
        if membership[e.out][0] is e.out:
            roots[e.out] = len(roots)
    eqn_nodes = []
    for k, e in enumerate(fn.eqns):
        text = eqn_to_text(e, namer)
        ks = membership[e.out]
        note = f"recomputed in {len(ks)} kernels" if len(ks) > 1 else ""
        var = text.split(" = ")[0]
        var = ", ".join(part.split(":")[0] for part in var.split(", "))
        node = Node(f"{name}-e{k}", "eqn", f"{var} = {e.op.name}", str(e.out.type), text, roots[ks[0]],
                    e.out in outputs, note, var, e.op.name, sites.get(e.out))
        nodes.append(node)
        eqn_nodes.append(node)
        for w in e.outvars:  # an equation of several results (a loop) is one node for all of them
            by_var[w] = node
    edges = []
    for e in fn.eqns:
        for a in dict.fromkeys(a for a in e.inputs if isinstance(a, Var)):
            if a in by_var:
                edges.append((by_var[a].id, by_var[e.out].id))
    kernels = []
    for v, k in roots.items():
        members = [n for n in eqn_nodes if n.kernel == k]
        root = by_var[v]
        kernels.append(Kernel(k, f"kernel {k}: {root.label} -> {root.type}" if len(members) > 1 else f"kernel {k}",
                              members))
    return Panel(name, f"{title} ({len(fn.eqns)} equations, {len(kernels)} kernels)", nodes, kernels, edges)


def collapsed(panel: Panel) -> Panel:
    """The panel with each kernel of several equations drawn as one node (kind "collapsed") holding
    their text, its edges those of its equations to and from outside it."""
    nodes, kernels = [n for n in panel.nodes if n.kind == "input"], []
    rep = {n.id: n.id for n in nodes}
    for k in panel.kernels:
        if len(k.nodes) == 1:
            node = k.nodes[0]
        else:
            root = k.nodes[-1]  # the stored value: its equations are computed for it, so before it
            node = Node(f"{panel.name}-k{k.id}", "collapsed", f"{root.var} = kernel {k.id}",
                        f"{len(k.nodes)} eqns -> {root.type}", "\n".join(n.title for n in k.nodes), k.id,
                        any(n.output for n in k.nodes), var=root.var, op="kernel", site=root.site)
        for n in k.nodes:
            rep[n.id] = node.id
        nodes.append(node)
        kernels.append(Kernel(k.id, k.label, [node]))
    edges = list(dict.fromkeys((rep[a], rep[b]) for a, b in panel.edges if rep[a] != rep[b]))
    title = panel.title[:-1] + ", collapsed)" if panel.title.endswith(")") else panel.title
    return Panel(panel.name, title, nodes, kernels, edges)


def _place(panel: Panel):
    graph = nx.DiGraph()
    graph.add_nodes_from(n.id for n in panel.nodes)
    graph.add_edges_from(panel.edges)
    node = {n.id: n for n in panel.nodes}
    # Each kernel's box: its equations in rows by generation inside the kernel.
    for k in panel.kernels:
        ids = [n.id for n in k.nodes]
        rows = layered(ids, list(graph.subgraph(ids).edges))
        width = max(len(r) for r in rows)
        k.w = width * NODE_W + (width - 1) * GAP_X + 2 * PAD
        k.h = len(rows) * NODE_H + (len(rows) - 1) * GAP_Y + 2 * PAD + LABEL_H
        for j, row in enumerate(rows):
            for i, nid in enumerate(row):
                node[nid].x = PAD + i * (NODE_W + GAP_X) + (width - len(row)) * (NODE_W + GAP_X) / 2
                node[nid].y = PAD + LABEL_H + j * (NODE_H + GAP_Y)
    # Kernels in rows by generation of the graph of kernels.
    kgraph = nx.DiGraph()
    kgraph.add_nodes_from(k.id for k in panel.kernels)
    kgraph.add_edges_from(
        (node[a].kernel, node[b].kernel) for a, b in panel.edges
        if node[a].kernel is not None and node[a].kernel != node[b].kernel
    )
    kernel = {k.id: k for k in panel.kernels}
    inputs = [n for n in panel.nodes if n.kind == "input"]
    y = TITLE_H
    width = len(inputs) * (NODE_W + GAP_X)
    for n_in, n in enumerate(inputs):
        n.x, n.y = GAP_X + n_in * (NODE_W + GAP_X), y
    y += (NODE_H + 2 * GAP_Y) if inputs else 0
    for ids in layered([k.id for k in panel.kernels], list(kgraph.edges)):
        row = [kernel[k] for k in ids]
        x = GAP_X
        for k in row:
            k.x, k.y = x, y
            for n in k.nodes:
                n.x += k.x
                n.y += k.y
            x += k.w + GAP_X
        width = max(width, x)
        y += max(k.h for k in row) + GAP_Y
    panel.width, panel.height = max(width, 320), y + GAP_Y


def scene(panels: list) -> tuple:
    """Stack panels side by side; returns (width, height) of the whole picture."""
    x = 0.0
    for p in panels:
        p.x, p.y = x, 0.0
        x += p.width + 2 * GAP_X
    return x, max((p.height for p in panels), default=0.0)
