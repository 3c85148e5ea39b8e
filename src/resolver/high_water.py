"""What a process knows of each thread's root-level ordinals: the high water its root checkpoints carry.

Every root checkpoint carries, per root-level sequence (a node's name, or ``name:send`` for its ``Send``
groups), the highest ordinal taken before it (``MongoDBCheckpointer.carry_in_root_checkpoints``). A root-level
occurrence keyed by a checkpoint takes one more than what that checkpoint carries for its sequence: the same
ordinal on every resume, in any process, with no query.

What a checkpoint carries must therefore not depend on when it was stored. LangGraph stores it in the
background (``durability="async"``) while the tasks prepared from it, and even later steps, may already run;
so a checkpoint's high water counts the thread's latest high water as read (``learn``) and the ordinals taken
since by occurrences keyed by *older* checkpoints only (checkpoint ids sort by creation). An edit, a fork,
a new checkpoint of any kind is newer than everything taken before it, and so counts all of it.

Except what was taken under a checkpoint that will never be stored (``abandon``): when a root checkpoint's store
fails, LangGraph stores no later checkpoint of that run, and a resume starts again from the one before, under new
checkpoint ids. The occurrences the failed run numbered are then numbered again, to the same ordinals, in this
process as in any other: their records are found where the failed run left them.

Example::

    water = RootHighWater()
    water.learn("t1", [{"name": "agent", "ordinal": 2}])
    water.took("t1", "cp-3", "agent", 3)
    water.stamp("t1", "cp-4")   # [{"name": "agent", "ordinal": 3}]
    water.stamp("t1", "cp-3")   # [{"name": "agent", "ordinal": 2}]: cp-3's own tasks do not count in it
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RootHighWater", "table_of"]

#: Threads whose high water a process remembers, the least recently used forgotten.
THREADS_REMEMBERED = 4096
#: Keys whose takes a thread remembers (the oldest are folded into what the thread's latest carries).
TAKES_REMEMBERED = 256


def table_of(carried: Any) -> dict[str, int] | None:
    """The table ``{sequence: highest ordinal}`` a root checkpoint carries, or None when it carries none."""
    if not isinstance(carried, list):
        return None
    pairs = [(p.get("name"), p.get("ordinal")) for p in carried if isinstance(p, dict)]
    return {name: ordinal for name, ordinal in pairs if isinstance(name, str) and type(ordinal) is int}


def _carried(table: dict[str, int]) -> list[dict[str, Any]]:
    # names are values, never field names; no nested arrays, which FerretDB 1.x refuses
    return [{"name": n, "ordinal": o} for n, o in sorted(table.items())]


@dataclass
class _Thread:
    base: dict[str, int]
    takes: dict[str, dict[str, int]] = field(default_factory=dict)  # occurrence key -> {sequence: ordinal}

    def before(self, key: str) -> dict[str, int]:
        table = dict(self.base)
        for taken_key, taken in self.takes.items():
            if taken_key < key:
                for sequence, ordinal in taken.items():
                    table[sequence] = max(table.get(sequence, 0), ordinal)
        return table


class RootHighWater:
    """Per thread, the root-level high water known here: thread-safe, bounded (see the module docstring)."""

    def __init__(self) -> None:
        self._threads: OrderedDict[str, _Thread] = OrderedDict()
        self._lock = threading.Lock()

    def learn(self, thread_id: str, carried: Any, *, fresh: bool = False) -> None:
        """The thread's latest root checkpoint was read: what it carries (None: nothing) is the thread's high water;
        ``fresh``: the thread has no checkpoint at all. Takes noted here are kept."""
        table = table_of(carried)
        if table is None and fresh:
            table = {}
        with self._lock:
            known = self._threads.get(thread_id)
            if table is None:
                self._threads.pop(thread_id, None)
            elif known is None or fresh:  # a fresh thread (deleted meanwhile?) keeps nothing of an earlier life
                self._keep(thread_id, _Thread(table))
            else:
                known.base = table
                self._threads.move_to_end(thread_id)

    def took(self, thread_id: str, key: str, sequence: str, ordinal: int, carried: dict[str, int] | None = None) -> None:
        """An occurrence keyed by ``key`` took ``ordinal`` in ``sequence``; ``carried``, what its checkpoint carries,
        stands for the thread's high water when none is known here."""
        with self._lock:
            known = self._threads.get(thread_id)
            if known is None:
                if carried is None:
                    return
                known = self._keep(thread_id, _Thread(dict(carried)))
            taken = known.takes.setdefault(key, {})
            taken[sequence] = max(taken.get(sequence, 0), ordinal)
            while len(known.takes) > TAKES_REMEMBERED:
                oldest = min(known.takes)
                for sequence_, ordinal_ in known.takes.pop(oldest).items():
                    known.base[sequence_] = max(known.base.get(sequence_, 0), ordinal_)

    def before(self, thread_id: str, key: str) -> dict[str, int] | None:
        """The high water an occurrence keyed by checkpoint ``key`` counts from, or None when unknown here."""
        with self._lock:
            known = self._threads.get(thread_id)
            return None if known is None else known.before(key)

    def stamp(
        self, thread_id: str, checkpoint_id: str, completed: Collection[str] = (), edited: Any = None, parent: Any = None
    ) -> list[dict[str, Any]] | None:
        """What the root checkpoint ``checkpoint_id`` being stored carries, or None when unknown here.

        Args:
            thread_id: the thread.
            checkpoint_id: the checkpoint.
            completed: nodes an edit completed at their interrupt (``update_state(..., as_node=...)``): their
                interrupted occurrence, numbered from what the edited checkpoint carries (``edited``), counts as
                taken, so their next visit is a new occurrence.
            edited: what the edited checkpoint carries.
            parent: what the checkpoint's parent carries, standing for the thread's high water when none is
                known here (forgotten, or never learned).
        """
        interrupted, inherited = table_of(edited) or {}, table_of(parent)
        with self._lock:
            known = self._threads.get(thread_id)
            if known is None and inherited is not None:
                known = self._keep(thread_id, _Thread(inherited))
            if known is None:
                return None
            for node in completed:
                known.base[node] = max(known.base.get(node, 0), interrupted.get(node, 0) + 1)
            return _carried(known.before(checkpoint_id))

    def abandon(self, thread_id: str, keys: Collection[str]) -> None:
        """Forget the ordinals taken by occurrences keyed by ``keys``, root checkpoints that will never be stored:
        no later checkpoint counts them, as none would in a process that never saw them."""
        with self._lock:
            known = self._threads.get(thread_id)
            for key in keys if known is not None else ():
                known.takes.pop(key, None)

    def forget(self, thread_id: str) -> None:
        with self._lock:
            self._threads.pop(thread_id, None)

    def _keep(self, thread_id: str, known: _Thread) -> _Thread:
        self._threads[thread_id] = known
        self._threads.move_to_end(thread_id)
        while len(self._threads) > THREADS_REMEMBERED:
            self._threads.popitem(last=False)
        return known
