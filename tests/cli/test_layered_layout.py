"""cli/layered_layout.py: layers that respect the edges, orders with fewer crossings, and a 1,000-equation
program laid out (html_graph.panel_data) in reasonable time; the page's data has one node per equation."""
from __future__ import annotations

import random
import time

import numpy as np

import gradtape as gt
from gradtape.cli.graph import drawable, model
from gradtape.cli.html_graph import panel_data
from gradtape.cli.layered_layout import crossings, layered, layers, place


def test_every_edge_goes_to_a_later_layer():
    rng = random.Random(3)
    nodes = list(range(300))
    edges = [(rng.randrange(i), i) for i in range(1, 300) for _ in range(2)]
    layer = layers(nodes, edges)
    assert all(layer[a] < layer[b] for a, b in edges)
    assert sorted(set(layer.values())) == list(range(max(layer.values()) + 1))  # no empty layer
    columns = layered(nodes, edges)
    assert sorted(n for c in columns for n in c) == nodes


def test_an_argument_moves_to_just_before_its_first_reader():
    # a -> b -> c -> d, and the argument x read only by d: x in d's layer minus one, not the first
    layer = layers(["a", "b", "c", "d", "x"], [("a", "b"), ("b", "c"), ("c", "d"), ("x", "d")])
    assert layer == {"a": 0, "b": 1, "c": 2, "x": 2, "d": 3}


def test_a_cycle_shares_a_layer():
    layer = layers([1, 2, 3, 4], [(1, 2), (2, 3), (3, 2), (3, 4)])
    assert layer[2] == layer[3] and layer[1] < layer[2] < layer[4]


def test_the_ordering_removes_crossings():
    # Six layers of eight nodes, each linked to two of the next by a permutation: in the given order the
    # edges cross 260 times; the sweeps must do far better, and never worse than the given order.
    columns = [[f"{j}.{i}" for i in range(8)] for j in range(6)]
    edges = [(columns[j][i], columns[j + 1][(i * m + c) % 8]) for j in range(5) for i in range(8)
             for m, c in ((3, 1), (5, 2))]
    nodes = [n for c in columns for n in c]
    naive, ordered = crossings(columns, edges), crossings(layered(nodes, edges), edges)
    assert naive == 260 and ordered < naive / 4


def test_crossings_counts_pairs():
    assert crossings([["a", "b"], ["c", "d"]], [("a", "d"), ("b", "c")]) == 1
    assert crossings([["a", "b"], ["c", "d"]], [("a", "c"), ("b", "d")]) == 0
    assert crossings([["a", "b"], ["c", "d"]], [("a", "c"), ("a", "d"), ("b", "c")]) == 1  # shared ends never cross


def test_place_centres_columns_left_to_right():
    pos, (w, h) = place([["a"], ["b", "c"]], lambda n: (100, 30), gap_x=40, gap_y=10)
    assert pos == {"a": (0.0, 20.0), "b": (140.0, 0.0), "c": (140.0, 40.0)} and (w, h) == (240.0, 70.0)


def thousand(x, w):
    """About 1,000 equations: fifteen layers of a residual MLP with layer norm."""
    for i in range(15):
        h = gt.tanh(x @ w[i] + 0.1 * i)
        mu = gt.mean(h, axis=-1, keepdims=True)
        h = (h - mu) / gt.sqrt(gt.mean((h - mu) ** 2, axis=-1, keepdims=True) + 1e-5)
        x = x + gt.exp(-h * h) * h
    return gt.sum(x ** 2)


def test_a_thousand_equation_program_lays_out(capsys):
    from gradtape.cli.stages import run_stages

    run = run_stages(thousand, [gt.ShapeDtype((8, 6)), gt.ShapeDtype((15, 6, 6))], build=False)
    fn = drawable(run.adjoint)
    assert 950 <= len(fn.eqns) <= 1100
    start = time.perf_counter()
    data = panel_data(model(fn, "adjoint", "adjoint", run.sites))
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n[layout of {len(fn.eqns)} equations: {seconds:.2f} s]")
    assert seconds < 60  # not a benchmark: only that it finishes (about a second on a CI core)
    eqns = [n for n in data["nodes"] if n["kind"] == "eqn"]
    assert len(eqns) == len(fn.eqns) == data["equations"] and data["collapsed"]
    laid = [i for c in data["columns"] for i in c]
    assert sorted(laid) == sorted(set(laid))  # each item once
    grouped = {m for g in data["groups"].values() for m in g["members"]}
    assert {n["id"] for n in data["nodes"]} == grouped | set(laid) - set(data["groups"])
    column = {i: j for j, c in enumerate(data["columns"]) for i in c}
    item = {m: gid for gid, g in data["groups"].items() for m in g["members"]}
    for a, b in data["edges"]:
        ia, ib = item.get(a, a), item.get(b, b)
        assert ia == ib or column[ia] <= column[ib]  # left to right (equal only inside a cycle of kernels)


def test_the_page_data_names_nodes_as_the_printed_ir():
    fn = drawable(gt.make_ir(lambda x: gt.sum(gt.exp(x) * x), np.ones(3)))
    data = panel_data(model(fn, "traced", "traced"))
    printed = fn.pretty().splitlines()[1:-1]
    eqns = [n for n in data["nodes"] if n["kind"] == "eqn"]
    assert [f"{n['var']} = {n['op']}" for n in eqns] == [
        f"{line.split(':')[0].strip()} = {line.split(' = ')[1].split()[0].split('[')[0]}" for line in printed]
    assert [n["text"] for n in eqns] == [line.strip() for line in printed]


def test_a_long_chain_wraps_into_bands_of_the_asked_shape():
    chain = [[i] for i in range(60)]  # 60 columns of one 100 x 30 box
    pos, (w, h) = place(chain, lambda n: (100, 30), 40, 10, band_gap=50, aspect=2.0)
    assert 1.0 < w / h < 4.0  # about twice as wide as high, where one row is 8,360 x 30
    tops = sorted({y for _, y in pos.values()})
    assert len(tops) > 1 and all(b - a >= 30 + 50 for a, b in zip(tops, tops[1:]))  # bands never overlap
    for i in range(59):  # in reading order: right along a band, then on to the next band's start
        (x1, y1), (x2, y2) = pos[i], pos[i + 1]
        assert (y2 == y1 and x2 > x1) or (y2 > y1 and x2 == 0)
    assert place(chain[:5], lambda n: (100, 30), 40, 10, 50, 2.0, min_width=1000)[1] == (660, 30)  # fits: one row
