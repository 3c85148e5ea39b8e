"""``RootCheckpoints``: what a thread's root checkpoints tell the journal, and the work their tasks' writes wait for.

The registry of stored checkpoints (``remembered.StoredCheckpoints``) answers ``origin_of``, ``stored_root`` and
``wait_stored`` without a query when it can; the plans here ask the database when it cannot. The task holds
(``remembered.TaskHolds``) make a task's writes wait for the journal records of its effects.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import _langgraph
from .._lru import LRU
from ..errors import CheckpointNotStoredError, RunLockLostError
from ..storage.plans.interpreters import UnderWay
from ..storage.plans.requests import Find, Join, Plan, WaitNotice, ask
from ..storage.schema import CollectionNames
from .documents import checkpoint_key
from .remembered import STORED_REMEMBERED, Stored, StoredCheckpoints, TaskHolds

#: ``wait_stored`` asks only the registry for this long first: a checkpoint this process stores in the background
#: (``durability="async"``: the tasks prepared from it already run) is noted there when its write returns, so
#: the node's first effect waits for that write without a query of its own.
STORED_FIRST_CHECK_SECONDS = 0.5
#: While ``wait_stored`` waits, the database is asked again this often (the registry is polled in between).
STORED_RECHECK_SECONDS = 1.0

#: What the stored-checkpoint registry reads of a checkpoint: its id, the checkpoint it continues, the nodes whose
#: interrupted task the edit that wrote it completed, and the steps that edit moved a child's run on (its step and
#: source read too, for the next edit to count from).
ORIGIN_FIELDS = {
    "_id": 0, "checkpoint_id": 1, "origin": 1, "completed": 1, "shift": 1, "metadata.step": 1, "metadata.source": 1
}
#: What an edit reads of the pending writes of the checkpoint it continues: which task wrote what, as what.
_EDITED_WRITE_FIELDS = {"_id": 0, "task_id": 1, "channel": 1, "task_path": 1}


@dataclass(frozen=True)
class Continued:
    """What a new checkpoint continues (``RootCheckpoints.continued_origin``): the checkpoint it continues, the nodes
    its edit completed, and the steps its edit moved a child's run on."""

    origin: str | None
    completed: list[str]
    shift: int = 0


NOT_CONTINUED = Continued(None, [])


def _not_stored(thread_id: str, checkpoint_id: str, why: str) -> CheckpointNotStoredError:
    return CheckpointNotStoredError(
        f"checkpoint {checkpoint_id} of thread {thread_id!r} is not stored: {why}. Effects start only once the "
        "checkpoint their position derives from is stored, so this effect did not run; the run stops, and a resume "
        "starts from the stored checkpoints"
    )


def _registered(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What the stored-checkpoint registry keeps of a checkpoint document."""
    return {"checkpoint_id": doc["checkpoint_id"], "origin": doc.get("origin"), "completed": doc.get("completed"),
            "shift": doc.get("shift")}


def _step(doc: Mapping[str, Any]) -> int | None:
    step = (doc.get("metadata") or {}).get("step")
    return step if type(step) is int else None


def _shift(parent: Mapping[str, Any], step: Any, completed: bool) -> int:
    """How many steps later than without its edits a child's run runs the tasks prepared from an edit written at
    ``step`` of ``parent``: the parent's own shift, plus the steps between them (one, as LangGraph's
    ``update_state`` writes) when the edit runs the parent's tasks again. An edit made as the interrupted node
    (``completed``) stands for the checkpoint after the parent's tasks instead, and an edit of the run's input
    checkpoint (the latest stored when the stores after it failed under ``durability="async"``), written as its
    ``__start__``, for the input step: the tasks after either keep the steps they had."""
    parent_step, parent_shift = _step(parent), parent.get("shift") or 0
    if type(step) is not int or parent_step is None or not isinstance(parent_shift, int):
        return 0
    if completed or (parent.get("metadata") or {}).get("source") == "input":
        return parent_shift
    return parent_shift + max(step - parent_step, 0)


def _inherited(parent: Stored) -> int:
    """The shift a child's checkpoint takes from ``parent``: the tasks of every later step of an edited run run as
    late as those of the edit. (An edit stored before the ``completed`` nodes were folded into its shift kept its
    completed node's next visit at the shift less one: so do the steps after it.)"""
    return max(parent.shift - 1, 0) if parent.completed else parent.shift


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
        #: Per thread, whether its latest run started here runs on an event loop.
        self._on_loop: LRU[str, bool] = LRU(STORED_REMEMBERED)
        #: Per thread, the latest root checkpoint this process stored.
        self._written: LRU[str, str] = LRU(STORED_REMEMBERED)
        #: Per thread, the lineage of the latest run started here (``run_lineage``).
        self._lineage: LRU[str, tuple[int, str]] = LRU(STORED_REMEMBERED)
        self._lock = threading.Lock()

    def run_started(self, thread_id: str, *, on_loop: bool) -> None:
        """A root run of the thread started here, on an event loop (``aget_tuple``) or not."""
        with self._lock:
            self._on_loop.put(thread_id, on_loop)

    def wrote_root(self, thread_id: str, checkpoint_id: str) -> None:
        """This process stored the root checkpoint."""
        with self._lock:
            known = self._written.get(thread_id)
            self._written.put(thread_id, checkpoint_id if known is None or checkpoint_id > known else known)

    def run_read(self, thread_id: str, latest: str | None, *, chosen: bool) -> None:
        """A root run of the thread started here by reading ``latest`` (None: the thread has no checkpoint), its
        latest root checkpoint unless ``chosen`` (a run from a checkpoint it names): see ``run_lineage``."""
        with self._lock:
            if chosen:
                status = "foreign"  # a run from an older checkpoint: whether another process ran since is not known
            elif latest is None:
                status = "fresh"
            else:
                status = "ours" if self._written.get(thread_id) == latest else "foreign"
            epoch = self._lineage.get(thread_id, (0, ""))[0] + 1
            self._lineage.put(thread_id, (epoch, status))

    def run_lineage(self, thread_id: str) -> tuple[int, str] | None:
        """``(run, lineage)`` of the latest root run of the thread started here, ``run`` counting them: ``fresh``
        (the thread had no checkpoint), ``ours`` (its latest root checkpoint is the last this process stored: no other
        process has run it since) or ``foreign``; None when no run of it started here (or it was forgotten)."""
        with self._lock:
            return self._lineage.get(thread_id)

    def stores_on_loop(self, thread_id: str) -> bool:
        """See ``MongoDBCheckpointer.stores_on_event_loop``."""
        with self._lock:
            return self._on_loop.get(thread_id, True)

    def origin_plan(self, thread_id: str, checkpoint_id: str, node: str | None) -> Plan[str]:
        """See ``MongoDBCheckpointer.origin_of``: the registry, else one query by the checkpoint's key."""
        known = self.stored.origin(thread_id, checkpoint_id, node)
        if known is not None:
            return known
        key = checkpoint_key(thread_id, "", checkpoint_id)
        found = yield from ask(Find(self.collections.checkpoints, key, ORIGIN_FIELDS, limit=1))
        if not found:
            return checkpoint_id  # not stored (durability="exit"): it continues nothing
        self.note_read(thread_id, "", found)
        return self.stored.origin(thread_id, checkpoint_id, node) or checkpoint_id

    def root_plan(self, thread_id: str, checkpoint_id: str) -> Plan[Stored | None]:
        """See ``MongoDBCheckpointer.stored_root``: the registry, else one query by the checkpoint's key."""
        known = self.stored.root(thread_id, checkpoint_id)
        if known is None:
            key = checkpoint_key(thread_id, "", checkpoint_id)
            found = yield from ask(Find(self.collections.checkpoints, key, ORIGIN_FIELDS, limit=1))
            self.note_read(thread_id, "", found)
            known = self.stored.root(thread_id, checkpoint_id)
        return known

    def stored_now_plan(self, thread_id: str, checkpoint_id: str) -> Plan[bool]:
        """See ``MongoDBCheckpointer.stored_now``: the registry; else the store under way, sent here; else one
        query."""
        if self.stored.known(thread_id, checkpoint_id):
            return True
        if (pending := self.stored.pending(thread_id, checkpoint_id)) is not None:
            request, registered = pending
            yield request
            self.stored.note(thread_id, "", [registered], written=True)
            return True
        key = checkpoint_key(thread_id, "", checkpoint_id)
        found = yield from ask(Find(self.collections.checkpoints, key, ORIGIN_FIELDS, limit=1))
        self.note_read(thread_id, "", found)
        return bool(found)

    def note_read(self, thread_id: str, checkpoint_ns: str, docs: list[dict[str, Any]]) -> None:
        """Note checkpoint documents read."""
        self.stored.note(thread_id, checkpoint_ns, [_registered(d) for d in docs])

    def store_failed(self, thread_id: str, checkpoint_id: str, error: BaseException) -> None:
        """The store of a root checkpoint failed: LangGraph stores no later checkpoint of that run (each store waits
        for the one before), so whatever waits for it, or for a newer one, stops waiting (``wait_stored_plan``)."""
        self.stored.fail(thread_id, checkpoint_id, error)

    def read_latest(self, thread_id: str) -> None:
        """The thread's latest root checkpoint was read: a run starts from what is stored, and the failed stores of
        the runs before no longer stop its waits."""
        self.stored.forget_failures(thread_id)

    def continued_origin(
        self, thread_id: str, checkpoint_ns: str, parent_id: str | None, metadata: Mapping[str, Any]
    ) -> Plan[Continued]:
        """``Continued(origin, completed, shift)`` a new checkpoint records, of the root namespace or a compiled
        child's.

        An edit (``update_state``, source ``update``) of the namespace's latest checkpoint continues that
        checkpoint's origin, except for the nodes whose interrupted task the edit completed (``as_node`` was that
        node): their next visit is new. Inside a child's run, whose tasks are keyed by their step, the edit instead
        records how many steps later than without it the run goes on (``shift``), and every later checkpoint of
        the run takes that shift on (``_inherited``): an edit made at a checkpoint older than the interrupt (the
        stores after it failed under ``durability="async"``) runs again the steps the run had made past it. Anything
        else, an edit of an older checkpoint (time travel: a fork) included, continues nothing.
        """
        if not parent_id:
            return NOT_CONTINUED
        if metadata.get("source") != "update":
            if checkpoint_ns:
                return (yield from self._inherited_shift(thread_id, checkpoint_ns, parent_id))
            return NOT_CONTINUED
        newest: list[dict[str, Any]] = yield Find(
            self.collections.checkpoints,
            {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": {"$gte": parent_id}},
            ORIGIN_FIELDS,
            [("checkpoint_id", 1)],
            2,
        )
        if len(newest) != 1 or newest[0]["checkpoint_id"] != parent_id:
            return NOT_CONTINUED  # the parent is not the latest checkpoint, or is gone
        edited: list[dict[str, Any]] = yield Find(
            self.collections.writes, checkpoint_key(thread_id, checkpoint_ns, parent_id), _EDITED_WRITE_FIELDS
        )
        completed = _langgraph.nodes_completed_by_edit(edited)
        if not checkpoint_ns:
            return Continued(newest[0].get("origin") or parent_id, completed)
        return Continued(
            newest[0].get("origin") or parent_id, [], _shift(newest[0], metadata.get("step"), bool(completed))
        )

    def _inherited_shift(self, thread_id: str, checkpoint_ns: str, parent_id: str) -> Plan[Continued]:
        """A child's checkpoint written by its run: the shift of its parent (``_inherited``). The registry, else one
        query by the parent's key."""
        parent = self.stored.checkpoint(thread_id, checkpoint_ns, parent_id)
        if parent is None:
            found: list[dict[str, Any]] = yield Find(
                self.collections.checkpoints,
                checkpoint_key(thread_id, checkpoint_ns, parent_id),
                ORIGIN_FIELDS,
                limit=1,
            )
            self.note_read(thread_id, checkpoint_ns, found)
            parent = self.stored.checkpoint(thread_id, checkpoint_ns, parent_id)
        shift = _inherited(parent) if parent is not None else 0
        return Continued(None, [], shift) if shift else NOT_CONTINUED

    def superseded_plan(self, thread_id: str, checkpoint_id: str) -> Plan[None]:
        """A run starts from the root checkpoint ``checkpoint_id`` (time travel): note it as superseded when the
        thread has a newer root checkpoint (``Stored.superseded``). One query, on such starts only."""
        newer: list[dict[str, Any]] = yield Find(
            self.collections.checkpoints,
            {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": {"$gt": checkpoint_id}},
            {"_id": 0, "checkpoint_id": 1},
            limit=1,
        )
        if newer:
            self.stored.supersede(thread_id, checkpoint_id)

    def continuations_plan(self, thread_id: str, checkpoint_map: Mapping[str, Any]) -> Plan[dict[str, Stored]]:
        """See ``MongoDBCheckpointer.continuations``: the registry, else one query per child checkpoint it lacks."""
        found: dict[str, Stored] = {}
        for checkpoint_ns, checkpoint_id in checkpoint_map.items():
            if not checkpoint_ns or not isinstance(checkpoint_id, str):
                continue
            known = self.stored.checkpoint(thread_id, checkpoint_ns, checkpoint_id)
            if known is None:
                known = yield from self._stored_or_inherited(thread_id, checkpoint_ns, checkpoint_id)
            if known is not None and known.shift:
                found[checkpoint_ns] = known
        return found

    def _stored_or_inherited(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Plan[Stored | None]:
        """A child's checkpoint as stored, or, while its store is under way (``durability="async"``: its tasks start
        before it is stored), with the shift it inherits from the latest checkpoint of the run stored before it
        (those between, written by the run, inherit it too). None when the run has none stored."""
        docs = yield from ask(Find(
            self.collections.checkpoints,
            {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": {"$lte": checkpoint_id}},
            ORIGIN_FIELDS,
            [("checkpoint_id", -1)],
            1,
        ))
        self.note_read(thread_id, checkpoint_ns, docs)
        latest = self.stored.checkpoint(thread_id, checkpoint_ns, docs[0]["checkpoint_id"]) if docs else None
        if latest is None or docs[0]["checkpoint_id"] == checkpoint_id:
            return latest
        return Stored(checkpoint_id, frozenset(), shift=_inherited(latest))

    def wait_stored_plan(self, thread_id: str, checkpoint_id: str, timeout: float) -> Plan[None]:
        """Return once the root checkpoint is in the database; see ``MongoDBCheckpointer.wait_stored``.

        For a checkpoint the registry does not hold (not stored yet, or forgotten): woken by the registry as soon as
        this process's own store notes it, or fails (no query), with one query by the checkpoint's key after
        ``STORED_FIRST_CHECK_SECONDS`` and another every ``STORED_RECHECK_SECONDS`` while waiting.

        Raises:
            CheckpointNotStoredError: its store, or the store of an older checkpoint of the run, failed here, or it
                was not stored within ``timeout`` seconds.
            RunLockLostError: that store failed because the run lost its thread's lock.
        """
        key = checkpoint_key(thread_id, "", checkpoint_id)
        deadline = time.monotonic() + timeout
        recheck_at = time.monotonic() + STORED_FIRST_CHECK_SECONDS
        while True:
            if (error := self.stored.failed(thread_id, checkpoint_id)) is not None:
                if isinstance(error, RunLockLostError):
                    raise error  # the run lost its thread: it stops, as its other calls do, with the same error
                why = (
                    "its store, or the store of an older checkpoint of the run, failed "
                    f"({type(error).__name__}: {error})"
                )
                raise _not_stored(thread_id, checkpoint_id, why) from error
            if time.monotonic() >= recheck_at:
                if found := (yield from ask(Find(self.collections.checkpoints, key, ORIGIN_FIELDS, limit=1))):
                    self.note_read(thread_id, "", found)
                    return
                recheck_at = time.monotonic() + STORED_RECHECK_SECONDS
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _not_stored(thread_id, checkpoint_id, f"it was not stored within {timeout:g} s; check the server")
            pause = max(0.0, min(remaining, recheck_at - time.monotonic()))
            yield WaitNotice(pause, lambda wake: self.stored.subscribe(thread_id, checkpoint_id, wake))
            if self.stored.known(thread_id, checkpoint_id):
                return

    def after_held(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Plan[None]:
        """Before a checkpoint, which holds the writes of the tasks before it: wait for what is held for them
        (``TaskHolds.before``: journal records written while their nodes went on); raise the error of one that
        failed, which is then no longer held (LangGraph saves no later checkpoint of the run)."""
        if held := self.holds.before(thread_id, checkpoint_ns, checkpoint_id):
            try:
                yield Join(held)
            except BaseException:
                self.holds.drop(held)
                raise

    def after_thread_held(self, thread_id: str, effects: bool = False) -> Plan[None]:
        """Before a new root run of the thread starts here: wait until the records the runs before it left in flight
        (a run that stopped, its task failed or cancelled, while its effects' records were still being written) are
        written or failed, so the new run reads what they hold; then hold no failed one against it. Their errors
        were the runs before's. With ``effects`` (a run's lock released), the effects still running too: one in a
        thread its node no longer waited for."""
        yield from self.settled_plan(thread_id, effects)
        self.holds.drop_failed(thread_id)

    def settled_plan(self, thread_id: str, effects: bool = True) -> Plan[None]:
        """Wait until the records held for the thread's tasks here, and with ``effects`` the effects still running
        (``UnderWay``), are done; raise none of their errors. A new run waits for records only: an effect of a run
        still going on is that run's (its lock, or its claim's lease, keeps the new run from running it too)."""
        waited: set[int] = set()
        while unfinished := tuple(
            f for f in self.holds.of_thread(thread_id)
            if not f.done() and id(f) not in waited and (effects or not isinstance(f, UnderWay))
        ):
            waited.update(map(id, unfinished))  # each once: a sync wait on a loop skips what that loop settles
            yield Join(unfinished, settle=True)  # an effect that ended may have left its trailing record: that too

    def after_task_held(self, thread_id: str, task_id: str) -> Plan[None]:
        """Before a task's writes: wait for the journal records of its effects, written while the node went on."""
        if held := self.holds.of_task(thread_id, task_id):
            yield Join(held)
