"""The interactive picture: one self-contained HTML page of a Function's stages (`inspect --graph out.html`).

    html = to_html([model(fn, "traced", "traced", sites), ...], "loss")

The page embeds everything (no network): the graphs as JSON, and the
script and style of graph_page.js / graph_page.css (package data, read
here). Python lays each panel out and the script only places columns:

- the panel's items are its arguments, its equations of one-equation
  kernels, and its fused kernels as groups; they go into columns left to
  right by layered_layout (layering and crossing reduction: the costly
  part, done once here);
- inside each group its equations are laid out the same way, relative to
  the group's corner, so expanding a kernel only changes that group's size:
  the script recomputes the columns' x and y from the items' sizes (cheap,
  and nothing overlaps whether a kernel is open or not), and wraps the row
  of columns into bands to fit the window's shape (a program is mostly a
  long chain: one row of it is a strip a few boxes high and metres long).

A panel of more than graph.COLLAPSE_AT equations starts with its kernels
collapsed, so a 1,000-equation program opens as a readable picture of
kernels; any kernel opens with a click.
"""
from __future__ import annotations

import importlib.resources
import json
from html import escape

from .graph import COLLAPSE_AT, Panel
from .layered_layout import layered, place

# Pixels, shared with the script (it reads them from the page's data).
GEOMETRY = {"node_w": 140, "node_h": 36, "box_w": 160, "box_h": 50, "gap_x": 40, "gap_y": 14,
            "inner_gap_x": 24, "inner_gap_y": 10, "pad": 10, "label_h": 18, "band_gap": 50}


def panel_data(panel: Panel) -> dict:
    """What the script draws of one panel (a graph.model without positions)."""
    g = GEOMETRY
    node_of = {n.id: n for n in panel.nodes}
    groups, item = {}, {}
    for k in panel.kernels:
        if len(k.nodes) > 1:
            gid = f"k{k.id}"
            ids = [n.id for n in k.nodes]
            inside = set(ids)
            columns = layered(ids, [(a, b) for a, b in panel.edges if a in inside and b in inside])
            pos, (w, h) = place(columns, lambda _: (g["node_w"], g["node_h"]), g["inner_gap_x"], g["inner_gap_y"])
            root = k.nodes[-1]  # the stored value: its kernel's other equations are computed for it
            groups[gid] = {"label": f"kernel {k.id}", "root": root.id, "members": ids,
                           "w": w + 2 * g["pad"], "h": h + 2 * g["pad"] + g["label_h"],
                           "pos": {n: [x + g["pad"], y + g["pad"] + g["label_h"]] for n, (x, y) in pos.items()}}
            item.update((n, gid) for n in ids)
    items = list(dict.fromkeys(item.get(n.id, n.id) for n in panel.nodes))
    item_edges = list(dict.fromkeys((item.get(a, a), item.get(b, b)) for a, b in panel.edges))
    columns = layered(items, [(a, b) for a, b in item_edges if a != b])
    return {
        "name": panel.name, "title": panel.title, "equations": panel.eqn_count,
        "collapsed": panel.eqn_count > COLLAPSE_AT,
        "nodes": [_node(node_of[i], item.get(i)) for i in node_of],
        "groups": groups, "columns": columns, "edges": panel.edges,
    }


def _node(n, group) -> dict:
    d = {"id": n.id, "kind": n.kind, "var": n.var, "op": n.op, "type": n.type, "text": n.title}
    if group:
        d["group"] = group
    if n.output:
        d["output"] = 1
    if n.note:
        d["note"] = n.note
    if n.site is not None:
        s = n.site
        d["site"] = {"at": f"{s.file}:{s.line}", "path": s.path, "line": s.line, "code": s.code,
                     "derivative": int(s.derivative)}
    return d


def to_html(panels: list, title: str) -> str:
    """The page for `panels` (graph.model's, in tab order)."""
    data = {"title": title, "geometry": GEOMETRY, "panels": [panel_data(p) for p in panels]}
    # "</" would end the <script> element that holds the JSON; "<\/" is the same JSON string.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    files = importlib.resources.files(__package__)
    return _PAGE.format(title=escape(title), css=(files / "graph_page.css").read_text(encoding="utf-8"),
                        data=payload, js=(files / "graph_page.js").read_text(encoding="utf-8"))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gradtape inspect: {title}</title>
<style>
{css}</style></head>
<body data-ready="0">
<header>
<span id="title">{title}</span>
<nav id="tabs"></nav>
<input id="search" type="search" placeholder="search a variable or an op" autocomplete="off">
<span id="matches"></span>
<span class="buttons"><button id="expand-all">expand all</button><button id="collapse-all">collapse all</button><button id="fit">fit</button><button id="wrap">one row</button></span>
</header>
<main><svg id="view" xmlns="http://www.w3.org/2000/svg"><g id="scene"></g></svg>
<aside id="details"><p class="hint">Click a box for its equation and source line; click a kernel to open it.
Drag to pan, wheel to zoom; the search box finds a variable (exact) or an op (part of its name).</p></aside></main>
<script type="application/json" id="graph-data">{data}</script>
<script>
{js}</script>
</body></html>
"""
