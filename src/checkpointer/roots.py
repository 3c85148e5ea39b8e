"""``RootCheckpoints``: what a thread's root checkpoints tell the journal, and the work their tasks' writes wait for.

The registry of stored checkpoints (``memory.StoredCheckpoints``) answers ``origin_of``, ``stored_root``,
``foresee_root`` and ``wait_stored`` without a query when it can; the plans here ask the database when it
cannot. Another component's per-thread state rides in the root checkpoints (``RootCarry``), and the task
holds (``memory.TaskHolds``) make a task's writes wait for the journal records of its effects.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _langgraph
from .._plans.requests import Find, Join, Plan, WaitNotice
from ..errors import DurableMongoError
from ..schema import CollectionNames
from .documents import checkpoint_key
from .memory import STORED_REMEMBERED, StoredCheckpoints, TaskHolds

#: ``wait_stored`` asks only the registry for this long first: a checkpoint this process stores in the background
#: (``durability="async"``: the tasks prepared from it already run) is noted there when its write returns, so
#: the node's first effect waits for that write without a query of its own.
STORED_FIRST_CHECK_SECONDS = 0.05
#: While ``wait_stored`` waits, the database is asked again this often (the registry is polled in between).
STORED_RECHECK_SECONDS = 1.0

#: What the stored-checkpoint registry reads of a checkpoint: its id, the checkpoint it continues and the nodes
#: whose interrupted task the edit that wrote it completed.
ORIGIN_FIELDS = {"_id": 0, "checkpoint_id": 1, "origin": 1, "completed": 1}
#: What an edit reads of the pending writes of the checkpoint it continues: which task wrote what, as what.
_EDITED_WRITE_FIELDS = {"_id": 0, "task_id": 1, "channel": 1, "task_path": 1}


@dataclass(frozen=True)
class RootCarry:
    """Per-thread state another component keeps in the thread's root checkpoints (``carry_in_root_checkpoints``).

    ``stamp(thread_id, checkpoint_id, completed, edited, parent)`` is written under ``field`` in every root
    checkpoint the saver stores (nothing when it returns None); for an edit made as the nodes ``completed`` (``update_state(...,
    as_node=...)`` at their interrupt), ``edited`` is what the edited checkpoint carries; ``parent`` is what the
    new checkpoint's parent carries, when the registry remembers it. ``learn(thread_id,
    value, fresh=...)`` gets it back from the latest root checkpoint whenever that one is read (None when it
    carries none, ``fresh`` when the thread has no checkpoint at all). ``abandon(thread_id, checkpoint_ids)``
    hears of root checkpoints stamped or foreseen that will never be stored. The stored-checkpoint registry keeps
    what each root checkpoint it notes carries (``Stored.carried``).
    """

    field: str
    stamp: Callable[[str], Any]
    learn: Callable[..., None]
    abandon: Callable[[str, list[str]], None] | None = None


def _registered(doc: Mapping[str, Any], carried: Any) -> dict[str, Any]:
    """What the stored-checkpoint registry keeps of a checkpoint document."""
    return {"checkpoint_id": doc["checkpoint_id"], "origin": doc.get("origin"), "completed": doc.get("completed"), "carried": carried}


class RootCheckpoints:
    """What this process knows of threads' root checkpoints, and the plans that ask the database the rest.

    Args:
        collections: where the checkpoints and their writes are.
        stored: the registry of checkpoints this process stored, stores or read.
        holds: the work each task's writes wait for.
    """

    def __init__(self, collections: CollectionNames, stored: StoredCheckpoints, holds: TaskHolds) -> None:
        self.collections = collections
        self.stored = stored
        self.holds = holds
        #: What another component carries in the root checkpoints (``carry_in_root_checkpoints``), if any.
        self.carried: RootCarry | None = None
        #: Threads a root checkpoint's store failed for since their latest root checkpoint was last read.
        self._broken: OrderedDict[str, bool] = OrderedDict()
        self._lock = threading.Lock()

    def origin_plan(self, thread_id: str, checkpoint_id: str, node: str | None) -> Plan:
        """See ``MongoDBCheckpointer.origin_of``: the registry, else one query by the checkpoint's key."""
        known = self.stored.origin(thread_id, checkpoint_id, node)
        if known is not None:
            return known
        found = yield Find(self.collections.checkpoints, checkpoint_key(thread_id, "", checkpoint_id), self.fields(), limit=1)
        if not found:
            return checkpoint_id  # not stored (durability="exit"): it continues nothing
        self.note_read(thread_id, "", found)
        return self.stored.origin(thread_id, checkpoint_id, node) or checkpoint_id

    def root_plan(self, thread_id: str, checkpoint_id: str) -> Plan:
        """See ``MongoDBCheckpointer.stored_root``: the registry, else one query by the checkpoint's key."""
        known = self.stored.root(thread_id, checkpoint_id)
        if known is None:
            found = yield Find(self.collections.checkpoints, checkpoint_key(thread_id, "", checkpoint_id), self.fields(), limit=1)
            self.note_read(thread_id, "", found)
            known = self.stored.root(thread_id, checkpoint_id)
        return known

    def foresee(self, thread_id: str, checkpoint_id: str) -> bool:
        """See ``MongoDBCheckpointer.foresee_root`` (no I/O)."""
        if self.stored.known(thread_id, checkpoint_id, stored=False):
            return True
        newest = self.stored.newest(thread_id)
        if newest is None or checkpoint_id <= newest:
            return False
        carried = None
        if self.carried is not None:
            carried = self.carried.stamp(thread_id, checkpoint_id, (), None, None)
            if carried is None:
                return False
        self.stored.announce(thread_id, "", {"checkpoint_id": checkpoint_id, "carried": carried})
        return True

    def fields(self) -> dict[str, int]:
        """What the registry reads of a checkpoint document: ``ORIGIN_FIELDS`` and the carried field."""
        return {**ORIGIN_FIELDS, self.carried.field: 1} if self.carried is not None else ORIGIN_FIELDS

    def note_read(self, thread_id: str, checkpoint_ns: str, docs: list[dict[str, Any]]) -> None:
        """Note checkpoint documents read, with what each carries."""
        field = self.carried.field if self.carried is not None else None
        self.stored.note(thread_id, checkpoint_ns, [_registered(d, d.get(field) if field else None) for d in docs])

    def abandon(self, thread_id: str) -> None:
        """A root checkpoint's store failed: LangGraph stores no later checkpoint of that run (each store waits for
        the one before), so every root checkpoint announced and not stored will never be; the carrier forgets them.
        So do the ones the failed run announces until the thread's latest checkpoint is read again (a resume)."""
        with self._lock:
            self._broken[thread_id] = True
            self._broken.move_to_end(thread_id)
            while len(self._broken) > STORED_REMEMBERED:
                self._broken.popitem(last=False)
        self._drop_unstored(thread_id)

    def _drop_unstored(self, thread_id: str) -> None:
        dropped = self.stored.drop_unstored(thread_id)
        if dropped and self.carried is not None and self.carried.abandon is not None:
            self.carried.abandon(thread_id, dropped)

    def read_latest(self, thread_id: str, docs: list[dict[str, Any]]) -> None:
        """The latest root checkpoint of the thread was read (``docs``: it, or nothing): tell the carrier what it
        carries (and what a failed run announced since its store failed: ``abandon``), and remember a thread
        without checkpoints."""
        with self._lock:
            broken = self._broken.pop(thread_id, False)
        if broken:
            self._drop_unstored(thread_id)
        if self.carried is not None:
            self.carried.learn(thread_id, docs[0].get(self.carried.field) if docs else None, fresh=not docs)
        if not docs:
            self.stored.note_empty(thread_id)

    def continued_origin(self, thread_id: str, checkpoint_ns: str, parent_id: str | None, source: Any) -> Plan:
        """``(origin, completed, carried)`` a new root checkpoint records, and what the edited checkpoint carries.

        An edit (``update_state``, source ``update``) of the latest checkpoint continues that checkpoint's
        origin, except for the nodes whose interrupted task the edit completed (``as_node`` was that node):
        their next visit is new. Anything else, an edit of an older checkpoint (time travel: a fork)
        included, continues nothing: ``(None, [])``.
        """
        if source != "update" or checkpoint_ns or not parent_id:
            return None, [], None
        newest = yield Find(
            self.collections.checkpoints,
            {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": {"$gte": parent_id}},
            self.fields(),
            [("checkpoint_id", 1)],
            2,
        )
        if len(newest) != 1 or newest[0]["checkpoint_id"] != parent_id:
            return None, [], None  # the parent is not the latest checkpoint, or is gone
        edited = yield Find(self.collections.writes, checkpoint_key(thread_id, "", parent_id), _EDITED_WRITE_FIELDS)
        carried = newest[0].get(self.carried.field) if self.carried is not None else None
        return newest[0].get("origin") or parent_id, _langgraph.nodes_completed_by_edit(edited), carried

    def carried_by(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, parent_id: str | None, origin: Any, completed: Any, edited: Any
    ) -> Any:
        """What a root checkpoint being stored carries: what its tasks already counted from when they foresaw it
        (``MongoDBCheckpointer.foresee_root``), else the stamp of ``carry_in_root_checkpoints``."""
        if self.carried is None or checkpoint_ns:
            return None
        foreseen = self.stored.root(thread_id, checkpoint_id)
        if foreseen is not None and not foreseen.stored and origin is None and not completed:
            return foreseen.carried
        parent = self.stored.root(thread_id, parent_id) if parent_id else None
        return self.carried.stamp(thread_id, checkpoint_id, completed, edited, parent.carried if parent is not None else None)

    def wait_stored_plan(self, thread_id: str, checkpoint_id: str, timeout: float, begun: bool = False) -> Plan:
        """Return once the root checkpoint is in the database (``begun``: or this process's store of it has begun);
        see ``MongoDBCheckpointer.wait_stored``.

        For a checkpoint the registry does not hold so (not stored yet, or forgotten): woken by the registry as
        soon as this process's own store notes it (no query), with one query by the checkpoint's key after
        ``STORED_FIRST_CHECK_SECONDS`` and another every ``STORED_RECHECK_SECONDS`` while waiting.

        Raises:
            DurableMongoError: the checkpoint was not stored within ``timeout`` seconds.
        """
        key = checkpoint_key(thread_id, "", checkpoint_id)
        deadline = time.monotonic() + timeout
        recheck_at = time.monotonic() + STORED_FIRST_CHECK_SECONDS
        while True:
            if time.monotonic() >= recheck_at:
                if found := (yield Find(self.collections.checkpoints, key, self.fields(), limit=1)):
                    self.note_read(thread_id, "", found)
                    return
                recheck_at = time.monotonic() + STORED_RECHECK_SECONDS
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DurableMongoError(
                    f"checkpoint {checkpoint_id} of thread {thread_id!r} was not stored within {timeout:g} s, and "
                    "effects do not start before the checkpoint their position derives from is stored; check the "
                    'server, or run with durability="sync"'
                )
            pause = max(0.0, min(remaining, recheck_at - time.monotonic()))
            yield WaitNotice(pause, lambda wake: self.stored.subscribe(thread_id, checkpoint_id, wake, stored=not begun))
            if self.stored.known(thread_id, checkpoint_id, stored=not begun):
                return

    def after_held(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Plan:
        """Before a checkpoint, which holds the writes of the tasks before it: wait for what is held for them
        (``TaskHolds.before``: journal records written while their nodes went on); raise the error of one that
        failed, which is then no longer held (LangGraph saves no later checkpoint of the run)."""
        if held := self.holds.before(thread_id, checkpoint_ns, checkpoint_id):
            try:
                yield Join(held)
            except BaseException:
                self.holds.drop(held)
                raise

    def after_task_held(self, thread_id: str, task_id: str) -> Plan:
        """Before a task's writes: wait for the journal records of its effects, written while the node went on."""
        if held := self.holds.of_task(thread_id, task_id):
            yield Join(held)
