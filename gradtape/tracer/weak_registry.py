"""A registry of objects held weakly, cheap to add to: what `t[i] = v` must search (rebind.py).

Every GradientTape step adds its Recording, and a freed Recording its unread
pending values, so adding is on the hot path of eager training loops, while
searching happens only at `t[i] = v`. weakref.WeakSet and
WeakValueDictionary run Python code on every add and every removal (their
callbacks); here an add is one weak reference (C) appended to a list, and
dead references are dropped when the list has doubled since it was last
compacted, so memory stays proportional to what is alive.
"""
from __future__ import annotations

import gc
import weakref

_MIN_COMPACT = 1024


class WeakRegistry:
    """Objects held weakly, in the order added. `add(obj)`; iterate for those still alive."""

    __slots__ = ("_refs", "_compact_at")

    def __init__(self):
        self._refs = []
        self._compact_at = _MIN_COMPACT

    def add(self, obj) -> weakref.ref:
        """Add `obj`; returns the weak reference to it."""
        refs = self._refs
        ref = weakref.ref(obj)
        refs.append(ref)
        if len(refs) > self._compact_at:
            self._compact()
        return ref

    def add_all(self, objs) -> None:
        """Add every object of the list `objs` (one C loop: a freed Recording adds thousands).

        The collector is paused meanwhile: a quarter of a million new weak references
        would set off full collections of everything alive (0.4 s after a 4,096-step
        LSTM's recording); the references are young, and the next collection sees them."""
        refs = self._refs
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            refs.extend(map(weakref.ref, objs))
        finally:
            if paused:
                gc.enable()
        if len(refs) > self._compact_at:
            self._compact()

    def _compact(self) -> None:
        self._refs = [r for r in self._refs if r() is not None]
        self._compact_at = max(_MIN_COMPACT, 2 * len(self._refs))

    def __iter__(self):
        """The objects still alive (a snapshot: adding while iterating is safe)."""
        for ref in list(self._refs):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self) -> int:
        return sum(1 for _ in self)
