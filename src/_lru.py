"""``LRU``: a mapping that keeps its most recently used keys, the oldest forgotten first.

The savers, the run locks, the trace and the platform remember what saves a query in bounded maps of this kind;
each holds its own lock around it (an ``LRU`` is not thread-safe by itself).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(OrderedDict[K, V]):
    """An ``OrderedDict`` holding at most ``capacity`` keys: ``put`` and ``use`` make a key the most recent, and
    ``put`` forgets the least recently used beyond the capacity.

    Args:
        capacity: how many keys it keeps; None keeps every one.
    """

    def __init__(self, capacity: int | None) -> None:
        super().__init__()
        self.capacity = capacity

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key`` as the most recent, forgetting the oldest beyond the capacity.

        Returns:
            ``value``.
        """
        self[key] = value
        self.move_to_end(key)
        while self.capacity is not None and len(self) > self.capacity:
            self.popitem(last=False)
        return value

    def use(self, key: K) -> V | None:
        """The value under ``key``, made the most recent; None when it is not (or no longer) remembered."""
        if key not in self:
            return None
        self.move_to_end(key)
        return self[key]
