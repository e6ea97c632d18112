"""A layered (Sugiyama-style) layout of a directed graph: layers, then an order inside each layer.

    columns = layered(nodes, edges)          # [[node, ...], ...]: every edge goes to a later column
    crossings(columns, edges)                # what the ordering minimizes
    positions, (w, h) = place(columns, size, gap_x=40, gap_y=12)   # left to right, in pixels
    positions, (w, h) = place(columns, size, 40, 12, band_gap=50, aspect=1.6)   # wrapped into bands

The three steps of Sugiyama's method, kept cheap enough for a 1,000-equation
program in well under a second:

- layering: a node's layer is its topological generation (the longest path
  from a source), computed on the condensation so that a cycle (two fused
  kernels that feed each other) shares a layer instead of failing; a source
  (an argument), and a node that reads only sources, is then moved to just
  before its first reader, so it does not drag an edge across the picture;
- ordering: barycenter sweeps, down and up, each sorting a layer by the
  mean position of the node's neighbours in the layers already placed
  (positions are fractions of their layer's height, so layers of different
  sizes compare). No dummy nodes are added for long edges: the adjoint reads
  primal values hundreds of layers back, and dummies would multiply the
  graph; a long edge pulls by its far end's position instead. The sweep
  result with the fewest crossings between adjacent layers is kept (never
  worse than the initial order, which is the program's);
- coordinates: columns left to right, each as wide as its widest node,
  nodes stacked top to bottom and each column centred on the tallest.
  A program is mostly a long chain, so one row of columns is a strip a few
  boxes high and metres long: with `aspect`, the row is wrapped like a line
  of text into bands stacked top to bottom, as many as make the picture
  about that much wider than high (graph_page.js does the same in the
  browser, where opening a kernel changes the sizes).
"""
from __future__ import annotations

import networkx as nx


def layers(nodes: list, edges: list) -> dict:
    """{node: layer index}: every edge between distinct strongly connected parts goes to a later layer."""
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(edges)
    condensed = nx.condensation(graph)
    part = condensed.graph["mapping"]
    level = {}
    for depth, generation in enumerate(nx.topological_generations(condensed)):
        for c in generation:
            level[c] = depth
    sources = {c for c in condensed.nodes if condensed.in_degree(c) == 0}
    # Sources (arguments), and then what reads only sources (a weight's own penalty), move right to
    # just before their first reader: placed by depth alone they sit at the left and drag their edges
    # across the picture. Reverse topological order, so a reader has moved before what it reads.
    for c in reversed(list(nx.topological_sort(condensed))):
        successors = list(condensed.successors(c))
        if successors and (c in sources or all(p in sources for p in condensed.predecessors(c))):
            level[c] = max(level[c], min(level[s] for s in successors) - 1)
    used = sorted(set(level.values()))
    compact = {old: new for new, old in enumerate(used)}  # moved sources may leave a layer empty
    return {n: compact[level[part[n]]] for n in nodes}


def layered(nodes: list, edges: list, sweeps: int = 4) -> list:
    """The nodes in columns (lists), ordered inside each to reduce edge crossings.

    `nodes` gives the initial order (the program's), which ties keep.
    """
    layer = layers(nodes, edges)
    columns = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for n in nodes:
        columns[layer[n]].append(n)
    preds: dict = {n: [] for n in nodes}
    succs: dict = {n: [] for n in nodes}
    for a, b in edges:
        if a != b and layer[a] != layer[b]:
            (preds if layer[a] < layer[b] else succs)[b].append(a)
            (succs if layer[a] < layer[b] else preds)[a].append(b)
    best, best_count = [list(c) for c in columns], crossings(columns, edges)
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        neighbours = preds if down else succs
        position = _positions(columns)
        for col in (columns[1:] if down else reversed(columns[:-1])):
            keyed = []
            for i, n in enumerate(col):
                near = neighbours[n]
                keyed.append((sum(position[m] for m in near) / len(near) if near else position[n], i, n))
            keyed.sort()
            col[:] = [n for _, _, n in keyed]
            position.update(_positions([col]))
        count = crossings(columns, edges)
        if count < best_count:
            best, best_count = [list(c) for c in columns], count
    return best


def _positions(columns) -> dict:
    return {n: (i + 0.5) / len(col) for col in columns for i, n in enumerate(col)}


def crossings(columns: list, edges: list) -> int:
    """How many pairs of edges between adjacent columns cross (edges spanning more columns are not counted)."""
    where = {n: (j, i) for j, col in enumerate(columns) for i, n in enumerate(col)}
    between: dict = {}
    for a, b in edges:
        (ja, ia), (jb, ib) = where[a], where[b]
        if abs(ja - jb) == 1:
            pair = (ia, ib) if ja < jb else (ib, ia)
            between.setdefault(min(ja, jb), []).append(pair)
    return sum(_inversions(sorted(pairs)) for pairs in between.values())


def _inversions(pairs: list) -> int:
    """Pairs sorted by their first entry: how many later pairs have a smaller second entry (a Fenwick tree)."""
    size = max(b for _, b in pairs) + 2
    tree = [0] * (size + 1)
    count = seen = 0
    for _, b in pairs:
        i, le = b + 1, 0
        while i > 0:  # how many seen so far have a second entry <= b
            le += tree[i]
            i -= i & -i
        count += seen - le
        i = b + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
        seen += 1
    return count


def place(columns: list, size, gap_x: float, gap_y: float, band_gap: float = 0.0, aspect: float | None = None,
          min_width: float = 0.0) -> tuple:
    """Left-to-right coordinates: ({node: (x, y) of its top-left corner}, (width, height)).

    `size(node)` is (width, height). Columns are `gap_x` apart, nodes in a
    column `gap_y` apart, each column centred vertically in its band. With
    `aspect` (width / height wanted), the columns wrap into bands `band_gap`
    apart, unless one row is at most `min_width` wide (it fits a screen as it is).
    """
    sizes = [[size(n) for n in col] for col in columns]
    widths = [max((w for w, _ in s), default=0.0) for s in sizes]
    heights = [sum(h for _, h in s) + gap_y * (len(s) - 1) for s in sizes]
    total = sum(w + gap_x for w in widths)
    bands = 1
    if aspect and total > min_width:  # b bands of height H each: total / b wide, b * H high; their ratio is `aspect`
        bands = max(1, round((total / ((max(heights, default=0.0) + band_gap) * aspect)) ** 0.5))
    limit = max([total / bands, *widths]) + 1
    rows, x = [[]], 0.0
    for j, w in enumerate(widths):
        if x > 0 and x + w > limit:
            rows.append([])
            x = 0.0
        rows[-1].append(j)
        x += w + gap_x
    positions, top, right = {}, 0.0, 0.0
    for row in rows:
        band_h = max(heights[j] for j in row) if row else 0.0
        x = 0.0
        for j in row:
            y = top + (band_h - heights[j]) / 2
            for n, (w_n, h_n) in zip(columns[j], sizes[j]):
                positions[n] = (x, y)
                y += h_n + gap_y
            x += widths[j] + gap_x
        right = max(right, x - gap_x)
        top += band_h + band_gap
    return positions, (max(right, 0.0), max(top - band_gap, 0.0))
