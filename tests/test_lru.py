"""``LRU``, the one bounded map the library remembers things in: the oldest forgotten first, a use makes a key recent."""

from __future__ import annotations

from langgraph_durable_mongodb._lru import LRU


def test_put_forgets_the_least_recently_used_beyond_the_capacity() -> None:
    known: LRU[str, int] = LRU(2)
    known.put("a", 1)
    known.put("b", 2)
    assert known.use("a") == 1  # a is now the most recent
    assert known.put("c", 3) == 3
    assert list(known) == ["a", "c"]  # b, the least recently used, went
    known.put("a", 4)
    known.put("d", 5)
    assert dict(known) == {"a": 4, "d": 5}


def test_use_of_a_key_not_remembered_is_none_and_changes_nothing() -> None:
    known: LRU[str, int] = LRU(1)
    known.put("a", 1)
    assert known.use("b") is None
    assert dict(known) == {"a": 1}


def test_no_capacity_keeps_every_key() -> None:
    known: LRU[int, int] = LRU(None)
    for n in range(1000):
        known.put(n, n)
    assert len(known) == 1000 and next(iter(known)) == 0
