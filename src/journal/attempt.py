"""One attempt of one task: its effect ordinals, and which of the node's entries its effects took.

The ordinal counter belongs to one *attempt* of one task: it starts again at 1
when LangGraph re-runs the node (a resume, an ``interrupt()`` answered by
``Command(resume=...)``, a ``RetryPolicy`` retry), so each re-run meets its
effects at the positions they were recorded at. Attempts live in a weak-keyed
table, freed with their task.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..resolver.position import NodePosition


@dataclass(frozen=True)
class Recorded:
    """What matching needs of an entry already journaled at the node: its effect and its input digest."""

    kind: str
    name: str
    digest: str | None


@dataclass
class Attempt:
    """One attempt of one task: its effect ordinals, its node position and the entries it matched.

    Effects called one after another meet the ordinals they were recorded at. Effects started
    concurrently (``batch``, a thread pool, ``asyncio.gather``) take their ordinals in the order they
    happen to start, which differs between runs, so ``take`` matches an effect to the entry recorded for
    its own input first (see ``take``).
    """

    number: int
    node: NodePosition | None = None
    #: The node's top-level ordinal entries, by effect key; None until read (``ActivityJournal`` reads them).
    recorded: dict[str, Recorded] | None = None
    #: The node's entry documents as read, by effect key (an exclusive run replays from them).
    entries: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    _taken: set[str] = field(default_factory=set)
    _issued: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_ordinal(self) -> int:
        with self._lock:  # concurrent tools never share one
            self._issued += 1
            return self._issued

    @property
    def issued(self) -> int:
        """How many ordinals this attempt has handed out: an effect started later takes a higher one."""
        return self._issued

    def learn(self, recorded: dict[str, Recorded], entries: dict[str, Mapping[str, Any]]) -> None:
        """Keep the node's entries as first read (a concurrent effect may have read them too)."""
        with self._lock:
            if self.recorded is None:
                self.recorded, self.entries = recorded, entries

    def reserve(self, key: str) -> None:
        """A keyed effect (a tool call's) takes its key: no matching may hand it to another effect."""
        with self._lock:
            self._taken.add(key)

    def take(self, ordinal: int, kind: str, name: str, digest: str) -> str:
        """The effect key of the effect that took ``ordinal``; each key is taken once per attempt.

        In order: the entry at its ordinal if it records this effect and input; else the first untaken
        entry that does (a concurrent sibling took its ordinal); else the entry at its ordinal as it is
        (the input changed: the journal's ``on_input_change`` decides, or, in a continued occurrence,
        the effect runs under a new key); else a key nobody holds.
        """
        own = str(ordinal)
        wanted = Recorded(kind, name, digest)
        with self._lock:
            recorded = self.recorded or {}
            free = [key for key in recorded if key not in self._taken]
            if own in free and recorded[own] == wanted:
                key = own
            elif same := sorted((k for k in free if recorded[k] == wanted), key=_ordinal_order):
                key = same[0]
            elif own in free and not (self.node is not None and self.node.continued):
                key = own
            elif own not in recorded and own not in self._taken:
                key = own
            else:
                key = str(max(map(_ordinal_order, [*recorded, *self._taken, own])) + 1)
                while key in self._taken:
                    key = str(int(key) + 1)
            self._taken.add(key)
            return key


def _ordinal_order(key: str) -> int:
    return int(key) if key.isdigit() else 0


_lock = threading.Lock()
_attempts: weakref.WeakKeyDictionary[Any, Attempt] = weakref.WeakKeyDictionary()


def current_attempt(task: Any, number: int) -> Attempt:
    """The running task's attempt; a new task, or a new attempt of it, starts counting again."""
    with _lock:
        attempt = _attempts.get(task)
        if attempt is None or attempt.number != number:
            attempt = _attempts[task] = Attempt(number)
        return attempt
