"""What a checkpointer remembers in this process: threads' expiries and the checkpoints it stored or read.

Both are bounded (oldest first out) and thread-safe, and both are hints that
save queries: a miss never means "absent", so the plans ask the database then.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: Threads whose expiry a saver remembers.
EXPIRIES_REMEMBERED = 10_000
#: Stored checkpoints a saver remembers (see ``MongoDBCheckpointer.wait_stored``).
STORED_REMEMBERED = 10_000


class ThreadExpiries:
    """Per thread: the highest ``expire_at`` this process stamped or read, and the one it last spread to
    every document of the thread. A write never stamps less than the highest (one expiry, only forward)."""

    def __init__(self) -> None:
        self._known: OrderedDict[str, tuple[datetime | None, datetime | None]] = OrderedDict()
        self._lock = threading.Lock()

    def highest(self, thread_id: str) -> datetime | None:
        with self._lock:
            return self._known.get(thread_id, (None, None))[0]

    def spread(self, thread_id: str) -> datetime | None:
        with self._lock:
            return self._known.get(thread_id, (None, None))[1]

    def raise_to(self, thread_id: str, value: datetime, *, spread: bool = False) -> datetime:
        """Remember ``value`` (as spread to the whole thread, with ``spread``); returns the highest known."""
        with self._lock:
            highest, done = self._known.get(thread_id, (None, None))
            highest = value if highest is None else max(highest, value)
            self._known[thread_id] = (highest, value if spread else done)
            self._known.move_to_end(thread_id)
            while len(self._known) > EXPIRIES_REMEMBERED:
                self._known.popitem(last=False)
            return highest

    def forget(self, thread_id: str) -> None:
        with self._lock:
            self._known.pop(thread_id, None)


@dataclass(frozen=True)
class Stored:
    """What the registry knows of a stored checkpoint.

    Attributes:
        origin: the root checkpoint it continues (itself when it continues none).
        completed: the nodes whose interrupted task the edit that wrote it completed.
        carried: what it carries for another component (``carry_in_root_checkpoints``), None when nothing.
        written: this process stored it, and has not read it since: no run but the one that wrote it has
            prepared tasks from it.
    """

    origin: str
    completed: frozenset[str]
    carried: Any = None
    written: bool = False


class StoredCheckpoints:
    """Checkpoints this process stored or read, each as ``Stored``.

    A hit proves the checkpoint is in the database and costs no query; a miss proves nothing.
    """

    def __init__(self) -> None:
        self._origins: OrderedDict[tuple[str, str, str], Stored] = OrderedDict()
        self._waiting: dict[tuple[str, str, str], list[Callable[[], None]]] = {}
        self._lock = threading.Lock()

    def note(
        self, thread_id: str, checkpoint_ns: str, docs: Sequence[Mapping[str, Any]], *, written: bool = False
    ) -> None:
        """Remember checkpoints of one namespace, as ``{checkpoint_id, origin?, completed?, carried?}``, read or
        (``written``) stored by this process, and wake whoever waits for one of them (``subscribe``)."""
        woken: list[Callable[[], None]] = []
        with self._lock:
            for doc in docs:
                key = (thread_id, checkpoint_ns, doc["checkpoint_id"])
                self._origins[key] = Stored(
                    doc.get("origin") or doc["checkpoint_id"],
                    frozenset(doc.get("completed") or ()),
                    doc.get("carried"),
                    written,
                )
                self._origins.move_to_end(key)
                woken += self._waiting.pop(key, ())
            while len(self._origins) > STORED_REMEMBERED:
                self._origins.popitem(last=False)
        for wake in woken:
            wake()

    def subscribe(self, thread_id: str, checkpoint_id: str, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` once the root checkpoint is noted (at once when it is remembered already).

        Returns:
            A function that cancels the subscription.
        """
        key = (thread_id, "", checkpoint_id)
        with self._lock:
            known = key in self._origins
            if not known:
                self._waiting.setdefault(key, []).append(wake)
        if known:
            wake()

        def cancel() -> None:
            with self._lock:
                waiters = self._waiting.get(key)
                if waiters is not None and wake in waiters:
                    waiters.remove(wake)
                    if not waiters:
                        del self._waiting[key]

        return cancel

    def origin(self, thread_id: str, checkpoint_id: str, node: str | None = None) -> str | None:
        """The origin of a remembered root checkpoint, or None when it is not remembered.

        For ``node``, a node the edit completed (``update_state(..., as_node=node)`` at its interrupt), the
        checkpoint itself: that node's next visit is a new occurrence, not the one the edit completed.
        """
        known = self.root(thread_id, checkpoint_id)
        if known is None:
            return None
        return checkpoint_id if node is not None and node in known.completed else known.origin

    def root(self, thread_id: str, checkpoint_id: str) -> Stored | None:
        """What is remembered of a root checkpoint, or None."""
        with self._lock:
            return self._origins.get((thread_id, "", checkpoint_id))


#: Checkpoints whose value locations a saver remembers (see ``ValueLocations``).
LOCATIONS_REMEMBERED = 4_096

#: Where a checkpoint's channel value is stored: ``(version, holder, size)``. ``holder`` is the id of a
#: checkpoint of the same thread and namespace that holds it inline, or None for the blobs collection;
#: ``size`` is its serialized size in bytes (``LARGE`` when only known to be above the copy limit).
Location = tuple[Any, "str | None", int]
LARGE = 1 << 62


class ValueLocations:
    """Per checkpoint this process stored or read: where each of its channel values is stored.

    ``put`` consults the parent's entry for every channel whose version did not change, so an
    unchanged large value is referenced where it already is (its holder checkpoint, or its blob)
    instead of being written again, with no query. A miss (the parent was written by another
    process, or forgotten) only costs bytes: the value is written again.
    """

    def __init__(self) -> None:
        self._known: OrderedDict[tuple[str, str, str], dict[str, Location]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Location] | None:
        with self._lock:
            return self._known.get((thread_id, checkpoint_ns, checkpoint_id))

    def note(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, locations: dict[str, Location]) -> None:
        key = (thread_id, checkpoint_ns, checkpoint_id)
        with self._lock:
            self._known[key] = locations
            self._known.move_to_end(key)
            while len(self._known) > LOCATIONS_REMEMBERED:
                self._known.popitem(last=False)

    def forget_thread(self, thread_id: str) -> None:
        """Forget every checkpoint of a thread (deleted, pruned): a location must never outlive its holder."""
        with self._lock:
            for key in [k for k in self._known if k[0] == thread_id]:
                del self._known[key]
