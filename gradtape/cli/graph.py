"""A Function as a picture: equations as boxes, data flow as arrows, fused kernels as groups.

    panel = layout(fn, "traced")      # positions in pixels; svg.py and png.py draw it
    panel = model(fn, "traced")       # the same without positions (html_graph.py lays it out itself)

The kernels are the code generator's: gradtape.codegen.fusion.plan_storage
decides which values get a buffer, each stored value is the root of a loop
nest, and a value computed inline belongs to the kernels that read it (an
equation recomputed in several kernels is drawn in the first and says so).
Call equations are inlined first, as code generation does.

The layout is layered twice, left to right, by layered_layout (layers by
depth, ordered to reduce crossing edges): the arguments and the kernels'
boxes in the graph of kernels, and inside a kernel's box its equations.
The row of columns is wrapped into bands so that the picture is about
twice as wide as high, not a strip. So every kernel is one box that
overlaps no other, and data flows to the right (and on to the next band).
Each box is labelled with the IR's name of its value ("d = pow"), so it
matches a line of the printed IR.

A panel of more than COLLAPSE_AT equations is drawn with each kernel
collapsed into one box (`collapsed`): hundreds of equations drawn one by
one make a picture nobody can read.
"""
from __future__ import annotations

import dataclasses


from ..codegen.fusion import plan_storage
from ..ir.inline_calls import inline_calls
from ..ir import Var
from ..ir.passes import dce
from ..ir.printer import _Namer, eqn_to_text
from .layered_layout import layered, place

NODE_W, NODE_H = 150, 38  # pixels
GAP_X, GAP_Y = 24, 12  # between boxes in a kernel, and between a column's boxes
BAND_GAP_X, BAND_GAP_Y = 40, 40  # between columns of kernels, and between bands
ASPECT = 2.0  # a panel's width / height: the column wraps into bands until it is about that
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
    node = {n.id: n for n in panel.nodes}
    # Each kernel's box: its equations laid out left to right inside it.
    for k in panel.kernels:
        ids = [n.id for n in k.nodes]
        inside = set(ids)
        columns = layered(ids, [(a, b) for a, b in panel.edges if a in inside and b in inside])
        pos, (w, h) = place(columns, lambda _: (NODE_W, NODE_H), GAP_X, GAP_Y)
        k.w, k.h = w + 2 * PAD, h + 2 * PAD + LABEL_H
        for nid, (x, y) in pos.items():
            node[nid].x, node[nid].y = PAD + x, PAD + LABEL_H + y
    # The arguments and the kernels' boxes, left to right, wrapped into bands.
    item = {n.id: ("k", n.kernel) if n.kernel is not None else n.id for n in panel.nodes}
    kernel = {("k", k.id): k for k in panel.kernels}
    items = list(dict.fromkeys(item[n.id] for n in panel.nodes))
    edges = list(dict.fromkeys((item[a], item[b]) for a, b in panel.edges if item[a] != item[b]))
    pos, (w, h) = place(layered(items, edges), lambda i: (kernel[i].w, kernel[i].h) if i in kernel else (NODE_W, NODE_H),
                        BAND_GAP_X, GAP_Y, BAND_GAP_Y, ASPECT, min_width=1800)
    for i, (x, y) in pos.items():
        x, y = GAP_X + x, TITLE_H + y
        if i in kernel:
            k = kernel[i]
            k.x, k.y = x, y
            for n in k.nodes:
                n.x += x
                n.y += y
        else:
            node[i].x, node[i].y = x, y
    panel.width, panel.height = max(w + 2 * GAP_X, 320), h + TITLE_H + GAP_Y


def edge_path(s: Node, d: Node) -> tuple:
    """The arrow from node s to node d, right side to left side: ((x1, y1), (x of the two control
    points), (x2, y2)) of a cubic curve whose control points share their end's y."""
    x1, y1, x2, y2 = s.x + NODE_W, s.y + NODE_H / 2, d.x, d.y + NODE_H / 2
    bend = max(30.0, (x2 - x1) / 2) if x2 > x1 else 60.0  # to a later band: out to the right, in from the left
    return (x1, y1), (x1 + bend, x2 - bend), (x2, y2)


def scene(panels: list) -> tuple:
    """Stack panels top to bottom (each is about ASPECT times wider than high); returns (width, height)
    of the whole picture."""
    y = 0.0
    for p in panels:
        p.x, p.y = 0.0, y
        y += p.height + 2 * GAP_Y
    return max((p.width for p in panels), default=0.0), y
