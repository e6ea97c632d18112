"""Panels (graph.py) as an SVG document, written directly (no dependency).

Each equation is a `<g class="eqn">` with a `<title>` holding its text
and the user's line that traced it (shown on hover), each argument a
`<g class="input">`, each fused kernel a `<g class="kernel">` box (in a
collapsed panel, graph.collapsed, a `<g class="collapsed">` node holding
its equations' text), each panel a `<g class="panel">`.
"""
from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from .graph import NODE_H, NODE_W, edge_path, scene

_STYLE = """
  text { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; font-size: 11px; fill: #222; }
  .panel-title { font-size: 15px; font-weight: bold; }
  .kernel rect { fill: #eef4fb; stroke: #7aa3cc; stroke-dasharray: 5,3; }
  .kernel text { font-size: 10px; fill: #47698c; }
  .eqn rect { fill: #ffffff; stroke: #555; }
  .eqn.output rect { stroke: #c0392b; stroke-width: 2.5; }
  .eqn .type, .input .type { font-size: 10px; fill: #666; }
  .eqn .note { font-size: 9px; fill: #b9770e; }
  .input rect { fill: #fdf2d0; stroke: #b9a050; }
  .collapsed rect { fill: #dbe8f6; stroke: #47698c; stroke-width: 1.5; }
  .edge { stroke: #8a8a8a; stroke-width: 1.2; fill: none; marker-end: url(#arrow); }
"""


def to_svg(panels: list) -> str:
    width, height = scene(panels)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">',
        f"<style>{_STYLE}</style>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#8a8a8a"/></marker></defs>',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    for p in panels:
        out.append(f'<g class="panel" id={quoteattr("panel-" + p.name)} transform="translate({p.x:.1f},{p.y:.1f})">')
        out.append(f'<text class="panel-title" x="16" y="20">{escape(p.title)}</text>')
        for k in p.kernels:
            out.append(
                f'<g class="kernel" id={quoteattr(f"{p.name}-k{k.id}")}><rect x="{k.x:.1f}" y="{k.y:.1f}" '
                f'width="{k.w:.1f}" height="{k.h:.1f}" rx="8"/>'
                f'<text x="{k.x + 8:.1f}" y="{k.y + 14:.1f}">{escape(k.label)}</text></g>'
            )
        node = {n.id: n for n in p.nodes}
        for a, b in p.edges:
            s, d = node[a], node[b]
            (x1, y1), (c1x, c2x), (x2, y2) = edge_path(s, d)
            out.append(f'<path class="edge" d="M {x1:.1f} {y1:.1f} C {c1x:.1f} {y1:.1f} {c2x:.1f} {y2:.1f} '
                       f'{x2:.1f} {y2:.1f}"/>')
        for n in p.nodes:
            out.append(_node(n))
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _node(n) -> str:
    cls = n.kind + (" output" if n.output else "")
    cx = n.x + NODE_W / 2
    parts = [
        f'<g class={quoteattr(cls)} id={quoteattr(n.id)}><title>{escape(n.title)}'
        f'{escape(chr(10) + "at " + str(n.site)) if n.site else ""}</title>',
        f'<rect x="{n.x:.1f}" y="{n.y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="4"/>',
        f'<text x="{cx:.1f}" y="{n.y + 15:.1f}" text-anchor="middle">{escape(_fit(n.label, 22))}</text>',
        f'<text class="type" x="{cx:.1f}" y="{n.y + 29:.1f}" text-anchor="middle">{escape(_fit(n.type, 26))}</text>',
    ]
    if n.note:
        parts.append(f'<text class="note" x="{n.x + NODE_W - 3:.1f}" y="{n.y + NODE_H + 10:.1f}" '
                     f'text-anchor="end">{escape(n.note)}</text>')
    parts.append("</g>")
    return "".join(parts)


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
