"""Panels (graph.py) as a PNG image, drawn with matplotlib (the optional `plot` extra).

Same geometry and colours as svg.py. It uses matplotlib's Agg canvas
directly, never pyplot, so it changes no global matplotlib state.
"""
from __future__ import annotations

from .graph import NODE_H, NODE_W, edge_path, scene

DPI = 100


def write_png(panels: list, path: str):
    """Draw `panels` into the PNG file `path`.

    Raises:
        ImportError: matplotlib is not installed (pip install "gradtape[plot]"), with that advice.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
        from matplotlib.path import Path as MplPath
    except ImportError:
        raise ImportError('drawing a PNG needs matplotlib: pip install "gradtape[plot]", or write an .svg') from None
    width, height = scene(panels)
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)  # y grows downwards, as in the SVG
    ax.axis("off")
    for p in panels:
        ax.text(p.x + 16, p.y + 20, p.title, fontsize=11, fontweight="bold", va="baseline")
        for k in p.kernels:
            ax.add_patch(FancyBboxPatch((p.x + k.x, p.y + k.y), k.w, k.h, boxstyle="round,pad=0,rounding_size=8",
                                        facecolor="#eef4fb", edgecolor="#7aa3cc", linestyle="--", linewidth=1))
            ax.text(p.x + k.x + 8, p.y + k.y + 14, k.label, fontsize=7, color="#47698c", va="baseline")
        node = {n.id: n for n in p.nodes}
        for a, b in p.edges:
            s, d = node[a], node[b]
            (x1, y1), (c1, c2), (x2, y2) = edge_path(s, d)
            curve = MplPath([(p.x + x1, p.y + y1), (p.x + c1, p.y + y1), (p.x + c2, p.y + y2), (p.x + x2, p.y + y2)],
                            [MplPath.MOVETO, MplPath.CURVE4, MplPath.CURVE4, MplPath.CURVE4])
            ax.add_patch(FancyArrowPatch(path=curve, arrowstyle="-|>", mutation_scale=8, color="#8a8a8a",
                                         linewidth=0.9, shrinkA=0, shrinkB=0))
        for n in p.nodes:
            face, edge, lw = {"input": ("#fdf2d0", "#b9a050", 1), "collapsed": ("#dbe8f6", "#47698c", 1.5)}.get(
                n.kind, ("white", "#555", 1))
            if n.output:
                edge, lw = "#c0392b", 2.2
            ax.add_patch(FancyBboxPatch((p.x + n.x, p.y + n.y), NODE_W, NODE_H, boxstyle="round,pad=0,rounding_size=4",
                                        facecolor=face, edgecolor=edge, linewidth=lw))
            cx = p.x + n.x + NODE_W / 2
            ax.text(cx, p.y + n.y + 15, n.label, fontsize=8, ha="center", va="baseline")
            ax.text(cx, p.y + n.y + 29, n.type, fontsize=7, color="#666", ha="center", va="baseline")
            if n.note:
                ax.text(p.x + n.x + NODE_W - 3, p.y + n.y + NODE_H + 10, n.note, fontsize=6, color="#b9770e",
                        ha="right", va="baseline")
    fig.savefig(path, dpi=DPI, facecolor="white")
