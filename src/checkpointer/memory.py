"""What a checkpointer remembers in this process: threads' expiries and the checkpoints it stored or read.

Both are bounded (oldest first out) and thread-safe, and both are hints that
save queries: a miss never means "absent", so the plans ask the database then.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
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


class StoredCheckpoints:
    """Checkpoints this process stored or read, each with the root checkpoint it continues (its ``origin``).

    A hit proves the checkpoint is in the database and costs no query; a miss proves nothing.
    """

    def __init__(self) -> None:
        self._origins: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def note(self, thread_id: str, checkpoint_ns: str, docs: Sequence[Mapping[str, Any]]) -> None:
        """Remember checkpoint documents (or ``{checkpoint_id, origin?}``) of one namespace."""
        with self._lock:
            for doc in docs:
                key = (thread_id, checkpoint_ns, doc["checkpoint_id"])
                self._origins[key] = doc.get("origin") or doc["checkpoint_id"]
                self._origins.move_to_end(key)
            while len(self._origins) > STORED_REMEMBERED:
                self._origins.popitem(last=False)

    def origin(self, thread_id: str, checkpoint_id: str) -> str | None:
        """The origin of a remembered root checkpoint, or None when it is not remembered."""
        with self._lock:
            return self._origins.get((thread_id, "", checkpoint_id))
