"""One attempt of one task: its effect ordinals, and which of the node's entries its effects took.

The ordinal counter belongs to one *attempt* of one task: it starts again at 1
when LangGraph re-runs the node (a resume, an ``interrupt()`` answered by
``Command(resume=...)``, a ``RetryPolicy`` retry), so each re-run meets its
effects at the positions they were recorded at. Attempts live in a weak-keyed
table, freed with their task.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..resolver.position import NodePosition
from ..storage.plans.interpreters import UnderWay
from .labels import ThreadLabels


@dataclass(frozen=True)
class CallSignature:
    """An effect call as matching compares it: its kind, name and input digest (of a call starting now, or of
    one an entry recorded at the node: None for a field the entry lacks)."""

    kind: str | None
    name: str | None
    digest: str | None


@dataclass
class Trail:
    """A task's journal records written while its node goes on, and ``hold``, which makes the task's writes wait
    for each (``MongoDBCheckpointer.hold_task_writes``), and the end of its run too. One per task, kept across its
    attempts, so a retry meets the records of the attempt before it."""

    hold: Callable[[Future[Any]], None]
    _pending: list[Future[Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: Future[Any]) -> None:
        with self._lock:
            self._pending = [*self._unfinished(), record]
        self.hold(record)

    @contextlib.contextmanager
    def under_way(self) -> Iterator[None]:
        """Hold the task's writes, and the end of its run, while an effect runs and until its record is trailing or
        written: an effect in a thread its cancelled node no longer waits for (``asyncio.to_thread`` in an async node
        whose sibling failed) still ends before the run's lock is released, so no next run, here or in another
        process, and no ``copy_thread`` after the run, misses its outcome."""
        running = UnderWay()
        self.hold(running)
        try:
            yield
        finally:
            running.set_result(None)

    def pending(self) -> tuple[Future[Any], ...]:
        """The records an effect starting now waits for: those still being written, and those that failed (whose
        error it raises)."""
        with self._lock:
            self._pending = self._unfinished()
            return tuple(self._pending)

    def _unfinished(self) -> list[Future[Any]]:
        return [f for f in self._pending if not f.done() or f.cancelled() or f.exception() is not None]


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
    #: The task's trailing records (None: every record is written before its effect returns).
    trail: Trail | None = None
    #: The call signatures of the node's top-level ordinal entries, by effect key; None until read
    #: (``ActivityJournal`` reads them).
    recorded: dict[str, CallSignature] | None = None
    #: The node's entry documents as read, by effect key (an exclusive run replays from them).
    entries: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    #: What this process knows of the thread's labels (``labels.ThreadLabels``), when its locator keeps them.
    labels: ThreadLabels | None = None
    #: The visit's label, ``(path, occurrence)``, stored with its entries; None until read, or when not known.
    label: tuple[str, str] | None = None
    _taken: set[str] = field(default_factory=set)
    _issued: int = 0
    #: The recorded keys of each effect and input, in ordinal order (built at the first ``take``); a key taken
    #: meanwhile is dropped from the front when met, so matching costs O(1) amortized per effect.
    _matching: dict[CallSignature, deque[str]] | None = None
    #: The highest ordinal among the recorded and the taken keys.
    _high: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_ordinal(self) -> int:
        with self._lock:  # concurrent tools never share one
            self._issued += 1
            return self._issued

    @property
    def issued(self) -> int:
        """How many ordinals this attempt has handed out: an effect started later takes a higher one."""
        return self._issued

    def learn(self, recorded: dict[str, CallSignature], entries: dict[str, Mapping[str, Any]]) -> None:
        """Keep the node's entries as first read (a concurrent effect may have read them too)."""
        with self._lock:
            if self.recorded is None:
                self.recorded, self.entries = recorded, entries

    def reserve(self, key: str) -> None:
        """A keyed effect (a tool call's) takes its key: no matching may hand it to another effect."""
        with self._lock:
            self._took(key)

    def _took(self, key: str) -> None:
        self._taken.add(key)
        self._high = max(self._high, _ordinal_order(key))

    def _index(self, recorded: dict[str, CallSignature]) -> dict[CallSignature, deque[str]]:
        """The recorded keys by effect and input (built once, at the first ``take``)."""
        if self._matching is None:
            self._matching = {}
            for key in sorted(recorded, key=_ordinal_order):
                self._matching.setdefault(recorded[key], deque()).append(key)
            self._high = max(self._high, *map(_ordinal_order, recorded), 0)
        return self._matching

    def _first_free(self, matching: dict[CallSignature, deque[str]], wanted: CallSignature) -> str | None:
        """The untaken recorded key of ``wanted`` with the lowest ordinal, or None."""
        keys = matching.get(wanted)
        while keys and keys[0] in self._taken:
            keys.popleft()
        return keys[0] if keys else None

    def take(self, ordinal: int, kind: str, name: str, digest: str) -> str:
        """The effect key of the effect that took ``ordinal``; each key is taken once per attempt.

        In order: the entry at its ordinal if it records this effect and input; else the first untaken
        entry that does (a concurrent sibling took its ordinal); else the entry at its ordinal as it is
        (the input changed: the journal's ``on_input_change`` decides, or, in a continued occurrence,
        the effect runs under a new key); else a key nobody holds. O(1) amortized: a node replaying n
        effects costs O(n) in all.
        """
        own = str(ordinal)
        wanted = CallSignature(kind, name, digest)
        with self._lock:
            recorded = self.recorded or {}
            matching = self._index(recorded)
            own_free = own in recorded and own not in self._taken
            if own_free and recorded[own] == wanted:
                key = own
            elif (same := self._first_free(matching, wanted)) is not None:
                key = same
            elif (own_free and not (self.node is not None and self.node.continued)) or (
                own not in recorded and own not in self._taken
            ):
                key = own
            else:  # above every recorded and taken key
                key = str(max(self._high, ordinal) + 1)
            self._took(key)
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
            attempt = _attempts[task] = Attempt(number, trail=attempt.trail if attempt is not None else None)
        return attempt
