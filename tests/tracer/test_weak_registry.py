"""WeakRegistry: what t[i] = v searches (rebind.py) holds its objects weakly and stays small."""
import gc

from gradtape.tracer.weak_registry import WeakRegistry


class Thing:
    pass


def test_it_yields_the_objects_still_alive_in_the_order_added():
    registry = WeakRegistry()
    kept = [Thing() for _ in range(3)]
    for t in kept:
        registry.add(t)
        registry.add(Thing())  # dropped at once: nothing else holds it
    gc.collect()
    assert list(registry) == kept
    assert len(registry) == 3


def test_dead_references_are_dropped_so_memory_follows_what_is_alive():
    registry = WeakRegistry()
    kept = Thing()
    registry.add(kept)
    for _ in range(100_000):
        registry.add(Thing())
    assert len(registry._refs) <= 2 * 1024 + 1
    assert list(registry) == [kept]


def test_adding_while_iterating_is_safe():
    registry = WeakRegistry()
    things = [Thing(), Thing()]
    for t in things:
        registry.add(t)
    for t in registry:
        registry.add(t)
    assert list(registry) == things * 2


def test_add_all_adds_in_order_and_leaves_the_collector_as_it_found_it():
    registry = WeakRegistry()
    kept = [Thing() for _ in range(3000)]
    assert gc.isenabled()
    registry.add_all(kept + [Thing()])  # the last one dies at once
    assert gc.isenabled()
    assert list(registry) == kept
    gc.disable()
    try:
        registry.add_all([kept[0]])
        assert not gc.isenabled()  # a caller's paused collector stays paused
    finally:
        gc.enable()
    assert list(registry) == kept + [kept[0]]
