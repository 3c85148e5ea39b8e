"""What a checkpointer remembers in this process: threads' expiries and the checkpoints it stored or read.

Both are bounded (oldest first out) and thread-safe, and both are hints that
save queries: a miss never means "absent", so the plans ask the database then.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from .._lru import LRU
from ..storage.plans.requests import Upsert

#: Threads whose expiry a saver remembers.
EXPIRIES_REMEMBERED = 10_000
#: Stored checkpoints a saver remembers (see ``MongoDBCheckpointer.wait_stored``).
STORED_REMEMBERED = 10_000


class ThreadExpiries:
    """Per thread: the highest ``expire_at`` this process wrote or read, and the one it last spread to
    every document of the thread. A write never sets less than the highest (one expiry, only forward)."""

    def __init__(self) -> None:
        self._known: LRU[str, tuple[datetime | None, datetime | None]] = LRU(EXPIRIES_REMEMBERED)
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
            self._known.put(thread_id, (highest, value if spread else done))
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
        written: this process stored it, and has not read it since: no run but the one that wrote it has
            prepared tasks from it.
    """

    origin: str
    completed: frozenset[str]
    written: bool = False
    #: Inside a compiled child's run: how many steps later than without its edits (``update_state`` on the child's
    #: latest checkpoint at an ``interrupt()``) the run prepares the tasks of this checkpoint, which the edit wrote
    #: or the run wrote after it; 0 for any other checkpoint.
    shift: int = 0
    #: A run started from it after the thread had moved past it (a ``Command`` sent to an older checkpoint): its
    #: tasks are a fork of the ones the thread ran from it.
    superseded: bool = False


class StoredCheckpoints:
    """Checkpoints this process stored or read, each as ``Stored``, and the root stores that failed.

    A hit proves the checkpoint is in the database and tells what it records, at no query. A miss proves nothing.
    """

    def __init__(self) -> None:
        self._origins: LRU[tuple[str, str, str], Stored] = LRU(STORED_REMEMBERED)
        #: Waiters by (thread, namespace, checkpoint).
        self._waiting: dict[tuple[str, str, str], list[Callable[[], None]]] = {}
        #: Per thread, the oldest root checkpoint whose store failed since the thread's latest was last read, and
        #: the error it failed with.
        self._failed: LRU[str, tuple[str, BaseException]] = LRU(STORED_REMEMBERED)
        #: Root stores under way: (thread, checkpoint) -> the request that stores it and what it registers (``pend``).
        self._pending: dict[tuple[str, str], tuple[Upsert, Mapping[str, Any]]] = {}
        self._lock = threading.Lock()

    def note(
        self, thread_id: str, checkpoint_ns: str, docs: Sequence[Mapping[str, Any]], *, written: bool = False
    ) -> None:
        """Remember checkpoints of one namespace, as ``{checkpoint_id, origin?, completed?, shift?}``, read or
        (``written``) stored by this process, and wake whoever waits for one of them (``subscribe``). A checkpoint
        once known superseded stays so: the thread never moves back."""
        woken: list[Callable[[], None]] = []
        with self._lock:
            for doc in docs:
                key = (thread_id, checkpoint_ns, doc["checkpoint_id"])
                if not checkpoint_ns:
                    self._pending.pop((thread_id, doc["checkpoint_id"]), None)
                known = self._origins.get(key)
                self._origins.put(key, Stored(
                    doc.get("origin") or doc["checkpoint_id"], frozenset(doc.get("completed") or ()), written,
                    doc.get("shift") or 0, known is not None and known.superseded,
                ))
                woken += self._waiting.pop(key, ())
        for wake in woken:
            wake()

    def supersede(self, thread_id: str, checkpoint_id: str) -> None:
        """A run starts from the root checkpoint, which the thread has moved past (see ``Stored.superseded``)."""
        key = (thread_id, "", checkpoint_id)
        with self._lock:
            known = self._origins.get(key)
            if known is not None:
                self._origins.put(key, replace(known, superseded=True, written=False))

    def checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Stored | None:
        """What is remembered of a checkpoint of any namespace, or None."""
        with self._lock:
            return self._origins.get((thread_id, checkpoint_ns, checkpoint_id))

    def pend(self, thread_id: str, checkpoint_id: str, request: Upsert, registered: Mapping[str, Any]) -> None:
        """The store of the root checkpoint is under way: ``request`` (idempotent) stores it, and ``registered`` is what
        ``note`` then remembers of it. Until it is noted or fails, another caller may send ``request`` itself
        (``pending``)."""
        with self._lock:
            self._pending[(thread_id, checkpoint_id)] = (request, registered)

    def pending(self, thread_id: str, checkpoint_id: str) -> tuple[Upsert, Mapping[str, Any]] | None:
        """The store under way of the root checkpoint, as ``pend`` gave it, or None."""
        with self._lock:
            return self._pending.get((thread_id, checkpoint_id))

    def fail(self, thread_id: str, checkpoint_id: str, error: BaseException) -> None:
        """The store of the root checkpoint failed with ``error``: it, and every newer root checkpoint of the run, will
        not be stored (``failed``); wake whoever waits for one of them."""
        with self._lock:
            self._pending.pop((thread_id, checkpoint_id), None)
            known = self._failed.get(thread_id)
            self._failed.put(thread_id, (checkpoint_id, error) if known is None or checkpoint_id < known[0] else known)
            keys = [key for key in self._waiting if key[:2] == (thread_id, "") and key[2] >= checkpoint_id]
            woken = [wake for key in keys for wake in self._waiting.pop(key)]
        for wake in woken:
            wake()

    def failed(self, thread_id: str, checkpoint_id: str) -> BaseException | None:
        """The error the root checkpoint's store, or an older one's, failed with (``fail``): it will not be stored.
        None when it may be."""
        with self._lock:
            known = self._failed.get(thread_id)
            if known is None or checkpoint_id < known[0] or (thread_id, "", checkpoint_id) in self._origins:
                return None
            return known[1]

    def forget_failures(self, thread_id: str) -> None:
        """A new run of the thread starts from what is stored: the failures of the runs before are past."""
        with self._lock:
            self._failed.pop(thread_id, None)

    def subscribe(self, thread_id: str, checkpoint_id: str, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` once the root checkpoint is noted as stored or failed, at once when it is so already.

        Returns:
            A function that cancels the subscription.
        """
        key = (thread_id, "", checkpoint_id)
        with self._lock:
            failed = self._failed.get(thread_id)
            settled = key in self._origins or (failed is not None and checkpoint_id >= failed[0])
            if not settled:
                self._waiting.setdefault(key, []).append(wake)
        if settled:
            wake()

        def cancel() -> None:
            with self._lock:
                waiters = self._waiting.get(key)
                if waiters is not None and wake in waiters:
                    waiters.remove(wake)
                    if not waiters:
                        del self._waiting[key]

        return cancel

    def known(self, thread_id: str, checkpoint_id: str) -> bool:
        """Whether the root checkpoint is remembered as stored."""
        with self._lock:
            return (thread_id, "", checkpoint_id) in self._origins

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
        return self.checkpoint(thread_id, "", checkpoint_id)


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
        self._known: LRU[tuple[str, str, str], dict[str, Location]] = LRU(LOCATIONS_REMEMBERED)
        self._lock = threading.Lock()

    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Location] | None:
        with self._lock:
            return self._known.get((thread_id, checkpoint_ns, checkpoint_id))

    def note(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, locations: dict[str, Location]) -> None:
        key = (thread_id, checkpoint_ns, checkpoint_id)
        with self._lock:
            self._known.put(key, locations)

    def forget_thread(self, thread_id: str) -> None:
        """Forget every checkpoint of a thread (deleted, pruned): a location must never outlive its holder."""
        with self._lock:
            for key in [k for k in self._known if k[0] == thread_id]:
                del self._known[key]


#: Threads whose held work a saver remembers (see ``TaskHolds``).
THREADS_HELD = 10_000


@dataclass
class _TaskHold:
    """What one task's writes wait for: the namespace of its loop, the checkpoint it was prepared from, the futures
    held for it, and those of them that failed and whose error a checkpoint's save raised (``TaskHolds.drop``)."""

    checkpoint_ns: str
    prepared_from: str
    futures: list[Future[Any]]
    raised: list[Future[Any]] = field(default_factory=list)


class TaskHolds:
    """Work a task's writes wait for (``concurrent.futures.Future``s): the journal records of its effects, written
    while the node goes on. ``put_writes`` of a task first waits for what is held for it, and ``put`` of a
    checkpoint for what is held for the tasks of its namespace prepared from an older checkpoint, whose writes
    it holds (as LangGraph's own saves wait for the delta-channel writes they fold in). A future leaves when it
    succeeds. A failed one stays until a new run of the thread starts (``drop_failed``): every write of the run
    fails until then. Once a checkpoint's save raised its error (``drop``) it holds no later checkpoint, but still
    its task's own writes: LangGraph stores them in the background beside that save, so they may come after it."""

    def __init__(self) -> None:
        #: thread -> task id -> its hold: a ``put`` reads its own thread's tasks only
        self._threads: LRU[str, dict[str, _TaskHold]] = LRU(THREADS_HELD)
        self._lock = threading.Lock()

    def hold(self, thread_id: str, task_id: str, checkpoint_ns: str, prepared_from: str, future: Future[Any]) -> None:
        with self._lock:
            tasks = self._threads.use(thread_id)
            if tasks is None:
                tasks = self._threads.put(thread_id, {})
            tasks.setdefault(task_id, _TaskHold(checkpoint_ns, prepared_from, [])).futures.append(future)
        future.add_done_callback(lambda done: self._release(thread_id, task_id, done))

    def _release(self, thread_id: str, task_id: str, future: Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        with self._lock:
            hold = self._threads.get(thread_id, {}).get(task_id)
            if hold is not None and future in hold.futures:
                hold.futures.remove(future)
                self._forget_if_empty(thread_id, task_id)

    def _forget_if_empty(self, thread_id: str, task_id: str) -> None:
        tasks = self._threads[thread_id]
        if not tasks[task_id].futures and not tasks[task_id].raised:
            del tasks[task_id]
            if not tasks:
                del self._threads[thread_id]

    def of_task(self, thread_id: str, task_id: str) -> tuple[Future[Any], ...]:
        """What is held for the task: its failed records whose error a checkpoint's save raised too."""
        with self._lock:
            hold = self._threads.get(thread_id, {}).get(task_id)
            return (*hold.futures, *hold.raised) if hold is not None else ()

    def before(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[Future[Any], ...]:
        """What is held for the tasks of the namespace prepared from checkpoints older than ``checkpoint_id``."""
        with self._lock:
            return tuple(
                f
                for hold in self._threads.get(thread_id, {}).values()
                if hold.checkpoint_ns == checkpoint_ns and hold.prepared_from < checkpoint_id
                for f in hold.futures
            )

    def of_thread(self, thread_id: str) -> tuple[Future[Any], ...]:
        """Everything held for the thread's tasks."""
        with self._lock:
            return tuple(f for hold in self._threads.get(thread_id, {}).values() for f in hold.futures)

    def drop_failed(self, thread_id: str) -> None:
        """No longer hold the thread's failed work: a new run of the thread starts from what is stored."""
        with self._lock:
            tasks = self._threads.get(thread_id, {})
            for task_id, hold in list(tasks.items()):
                hold.raised.clear()
                hold.futures[:] = [
                    f for f in hold.futures if not (f.done() and (f.cancelled() or f.exception() is not None))
                ]
                self._forget_if_empty(thread_id, task_id)

    def drop(self, futures: tuple[Future[Any], ...]) -> None:
        """Hold no later checkpoint for ``futures``: a checkpoint's save raised their failure, and the run that made
        them stops there. Their tasks' own writes still wait for them (and raise their error)."""
        gone = set(map(id, futures))
        with self._lock:
            for tasks in self._threads.values():
                for hold in tasks.values():
                    hold.raised += [f for f in hold.futures if id(f) in gone]
                    hold.futures[:] = [f for f in hold.futures if id(f) not in gone]
