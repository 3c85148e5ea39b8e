"""Stable ordinals for operation paths, persisted in MongoDB.

An operation path is the fixed root ``agent/1`` followed by ``name/ordinal`` for
each child boundary, e.g. ``agent/1/case_investigation/1/policy_analysis/1``. The
ordinal says which occurrence of ``name`` under its parent path this is: the
first visit of ``case_investigation`` is ``1``, a loop's second visit ``2``. Paths
never contain LangGraph's task ids, only ordinals, and the same occurrence keeps
its ordinal after a process restart because allocations live in MongoDB.

Allocation is find-or-insert on one document per occurrence,
``{thread_id, parent_path, name, task_key, ordinal}``, under two unique
indexes, ``(thread_id, parent_path, name, task_key)`` and
``(thread_id, parent_path, name, ordinal)``: a writer that loses a race gets a
duplicate-key error and looks again, so concurrent processes converge on one
answer. Every index starts with ``thread_id`` (the shard key).

Root-level ordinals
-------------------
A root-level occurrence keyed by a root checkpoint (see "Occurrence keys") is not
allocated: its ordinal is one more than the high water that checkpoint carries for its
sequence (``DurablePlatform`` has the checkpointer carry ``root_high_water`` in every
root checkpoint, ``high_water.py``). The same checkpoint gives the same ordinal on every
resume, in any process, at no command; a fork, a deleted thread or a ``copy_thread``
treats the high water as it treats the checkpoint. Allocations and journal entries
beneath carry the occurrence's key (``root_key``), which a ``keep_latest`` sweep prunes
them by. A checkpoint carrying nothing (written without the platform, or before this
rule) sends its occurrences to the collection as below.

Beneath, a new occurrence is inserted at once under the next ordinal of its sequence when
that ordinal is known without a query (one command): beneath an occurrence new in the
same lookup (nothing is there yet), and at the root from the high water known here. The
unique indexes make a wrong guess safe: a taken ordinal or an existing occurrence sends
the lookup the long way (read, then insert).

An ``OrdinalAllocator`` remembers the allocations it saw, but only as a guess:
a thread can be deleted, pruned, expired or copied over by any process, and a
remembered ordinal the database no longer holds would give two occurrences one
ordinal (the second would replay the first's effects). So every lookup of a
position confirms the guessed ordinals of all its levels with one query; only
levels the guess missed cost a query each (and an insert when new).

Occurrence keys
---------------
* A root-level task triggered by an edge is keyed by the root checkpoint it was
  prepared from (one such task per node and checkpoint), so it is the same on
  every resume, and new for a new invoke on the thread or a fork. An edit of the
  latest checkpoint (``update_state`` at an ``interrupt()``) writes a checkpoint
  that *continues* the edited one: its tasks are keyed by the edited checkpoint,
  so the interrupted node meets its occurrence again (``origin_of``). Other
  root-level tasks (the functional API's) are keyed by their task id.
* A task inside a compiled child is keyed by its step within the child's run,
  ``step:N`` (``langgraph_step``). LangGraph starts a child's run afresh, under new
  task ids, when a RetryPolicy retries the node that runs it, or when a resume
  finds none of the child's checkpoints (``durability="exit"``, or a crash before
  they were written); the steps are what repeats, so the retried or resumed child
  meets the same occurrences and its recorded effects.
* Only one edge-triggered task per node runs in a step, so first-come allocation
  of these keys is deterministic.

Ordinal text
------------
* ``n``: an edge-triggered task.
* ``g.i``: a task created by ``Send`` number ``i`` (LangGraph's PUSH index) of
  step ``S``. All Sends of that step share the group key ``S`` (the checkpoint
  the step was prepared from at the root, ``step:N`` in a child run), so they find
  the same group ordinal ``g`` whichever reaches the allocator first, and ``i``
  keeps them apart. Groups are counted in their own sequence (stored under
  ``name + ":send"``; ``:`` cannot occur in node names), so an edge-triggered task
  of the same node in the same step cannot race them. LangGraph orders a step's
  Sends deterministically (``apply_writes`` sorts the writing tasks by path), so
  ``i`` is reproducible; this also covers the prebuilt tool node's ``Send``
  fan-out. Sends to other nodes take indexes too, so ``i`` may skip numbers.
* ``…+p``: the ``p``-th compiled-graph run of one function-node task within its
  retry attempt (p >= 1; the first run has no suffix).

Example::

    allocator = OrdinalAllocator(MongoClient()["app"])
    allocator.operation_path("thread-1", resolver.resolve(ns))
    # 'agent/1/case_investigation/1/policy_analysis/1'
    await OrdinalAllocator(AsyncMongoClient()["app"]).aposition("thread-1", resolved)
    # NodePosition(thread_id='thread-1', path='agent/1/...', node='review_policy', occurrence='1')
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pymongo import DESCENDING

from .._langgraph import NS_END
from .._plans.faces import TwoFaces, is_async_client
from .._plans.requests import CreateIndexes, DeleteMany, Find, InsertMany, InsertOne, Plan
from ..errors import ClientConfigurationError, InvalidInputError, ThreadExistsError
from ..schema import INDEXES, ORDINAL_KEY, CollectionNames
from ..storage_format import StorageFormat
from .high_water import RootHighWater, table_of
from .namespace import ResolvedNamespace, SendOrigin
from .position import NodePosition

__all__ = ["DEFAULT_COLLECTION", "ROOT_PATH", "OrdinalAllocator"]

ROOT_PATH = "agent/1"
DEFAULT_COLLECTION = "operation_ordinals"
_SEND_SEQUENCE = f"{NS_END}send"
_CACHED_THREADS = 4096


@dataclass(frozen=True)
class _PathOrdinal:
    """One ordinal of a position: a child boundary, or the running node."""

    name: str
    task_key: str
    step: int | None
    send: SendOrigin | None
    run: int

    def key(self, parent_path: str) -> tuple[str, str, str]:
        """The allocation ``(parent_path, sequence name, occurrence key)`` of this level."""
        if self.send is not None:
            return parent_path, self.name + _SEND_SEQUENCE, self.send.group
        return parent_path, self.name, self.task_key if self.step is None else f"step:{self.step}"

    def text(self, ordinal: int) -> str:
        text = f"{ordinal}.{self.send.index}" if self.send is not None else str(ordinal)
        return f"{text}+{self.run}" if self.run else text


@dataclass(frozen=True)
class RootStamp:
    """What the root checkpoint a root-level occurrence is keyed by tells of it.

    Attributes:
        checkpoint_id: the checkpoint (the one the task was prepared from, or the one an edit continues).
        carried: what it carries (``root_high_water`` when it was stored), None when it carries nothing.
        new: no attempt before this one can have journaled under the occurrences it numbers (the checkpoint
            was written by this process's run, and this is the task's first attempt).
    """

    checkpoint_id: str
    carried: Any
    new: bool


def _boundary_levels(resolved: ResolvedNamespace) -> list[_PathOrdinal]:
    return [_PathOrdinal(b.name, b.task_key, b.step, b.send, b.subgraph_run) for b in resolved.boundaries]


def _node_level(resolved: ResolvedNamespace) -> _PathOrdinal:
    return _PathOrdinal(resolved.node_name, resolved.node_task_key, resolved.node_step, resolved.node_send, 0)


def _join(resolved: ResolvedNamespace, texts: list[str]) -> str:
    return "/".join([ROOT_PATH, *(f"{b.name}/{t}" for b, t in zip(resolved.boundaries, texts))])


class OrdinalAllocator(TwoFaces):
    """Allocates and persists occurrence ordinals; one storage logic, a sync and an async face.

    Pass a synchronous database (pymongo ``MongoClient``, mongomock), an
    asynchronous one (pymongo ``AsyncMongoClient``, motor ``AsyncIOMotorClient``,
    mongomock_motor), or one of each on the same data. Sync methods need the
    first kind, ``a``-prefixed methods the second (``ClientConfigurationError``
    otherwise). Indexes are created by ``setup``/``asetup`` and, idempotently,
    before this allocator's first write.

    Example::

        allocator = OrdinalAllocator(MongoClient()["app"], AsyncMongoClient()["app"])
        allocator.allocate("thread-1", "agent/1", "case_investigation", "task-a")          # 1
        await allocator.aallocate("thread-1", "agent/1", "case_investigation", "task-x")   # 2

    Args:
        *databases: one sync database, one async database, or one of each.
        collection_name: where allocations live (``operation_ordinals``).
        expiry: ``thread_id -> {"expire_at": ...}`` stamped on new allocations, so a thread with a TTL
            expires whole (``DurablePlatform`` passes the checkpointer's ``expiry_fields``).
        storage_format: the database's format check, run before the first operation (``DurablePlatform``
            passes the checkpointer's); by default one of its own. The allocator declares its collection a
            per-thread one there (``thread_collections.py``).

    Raises:
        ClientConfigurationError: no database, or two of one kind.
        InvalidInputError: ``collection_name`` is not a non-empty string.
    """

    def __init__(
        self,
        *databases: Any,
        collection_name: str = DEFAULT_COLLECTION,
        expiry: Callable[[str], Mapping[str, Any]] | None = None,
        storage_format: StorageFormat | None = None,
    ) -> None:
        if not isinstance(collection_name, str) or not collection_name:
            raise InvalidInputError(f"collection_name must be a non-empty string, got {collection_name!r}")
        sync = [db for db in databases if not is_async_client(db)]
        aio = [db for db in databases if is_async_client(db)]
        if not databases or len(sync) > 1 or len(aio) > 1:
            raise ClientConfigurationError(
                "OrdinalAllocator takes one synchronous database, one asynchronous database, or one of each"
            )
        self._collection = collection_name
        self._expiry = expiry
        if storage_format is None:
            storage_format = StorageFormat(databases[0].name, CollectionNames(ordinals=collection_name))
        storage_format.thread_collections.register(collection_name)  # deleted, copied and expired with its thread
        self._init_faces(sync[0] if sync else None, aio[0] if aio else None, True, storage_format.check_plan)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, dict[tuple[str, str, str], int]] = OrderedDict()
        #: Per thread, the root-level high water its checkpoints carry (``high_water.py``).
        self._water = RootHighWater()

    _needs_sync = (
        "its sync methods need a synchronous database (pymongo MongoClient or mongomock): "
        "use the a-prefixed methods, or pass both"
    )
    _needs_async = (
        "its a-prefixed methods need an asynchronous database (pymongo AsyncMongoClient, motor or "
        "mongomock_motor): use the sync methods, or pass both"
    )

    # -- public API: sync face -------------------------------------------------

    def allocate(self, thread_id: str, parent_path: str, name: str, task_key: str) -> int:
        """The ordinal of ``task_key`` among occurrences of ``name`` under ``parent_path``.

        Find-or-insert, read from the database (never from memory): the first occurrence gets 1, each new
        one the next number, and concurrent callers converge on one answer (unique indexes).

        Args:
            thread_id: the thread.
            parent_path: the operation path the occurrence is under, e.g. ``agent/1``.
            name: the child or node name.
            task_key: what identifies the occurrence (the same on every resume).

        Returns:
            The occurrence's ordinal (1, 2, ...).

        Raises:
            InvalidInputError: an argument is not a non-empty string.
            ClientConfigurationError: this allocator has no synchronous database.
        """
        _check_strings(thread_id=thread_id, parent_path=parent_path, name=name, task_key=task_key)
        return self._run(self._allocate_plan(thread_id, parent_path, name, task_key))

    def operation_path(self, thread_id: str, resolved: ResolvedNamespace) -> str:
        """``agent/1`` plus ``name/ordinal`` for each boundary of ``resolved``.

        Allocates the ordinals of boundaries seen for the first time; remembered ones are confirmed with
        one query.

        Args:
            thread_id: the thread.
            resolved: a resolved namespace (``DurableSubgraphResolver.resolve``/``resolve_config``).

        Returns:
            The operation path, e.g. ``agent/1/case_investigation/1/policy_analysis/1``.

        Raises:
            InvalidInputError: ``thread_id`` or a name or key of ``resolved`` is not a non-empty string, or
                ``resolved`` is not a ``ResolvedNamespace``.
            ClientConfigurationError: this allocator has no synchronous database.
        """
        _check_resolved(thread_id, resolved)
        return self._run(self._path_plan(thread_id, resolved))

    def position(
        self, thread_id: str, resolved: ResolvedNamespace, *, continued: bool = False, root: RootStamp | None = None
    ) -> NodePosition:
        """Where the running node is: its operation path, name and occurrence ordinal.

        Args:
            thread_id: the thread.
            resolved: the node's resolved namespace (``DurableSubgraphResolver.resolve_config``).
            continued: the node continues an edited occurrence (passed through to ``NodePosition``).
            root: the root checkpoint the root-level occurrence is keyed by, and what it carries: that
                occurrence's ordinal is then one more than the high water it carries for the sequence, with no
                query (see "Root-level ordinals").

        Returns:
            The ``NodePosition``; its ``new`` says the occurrence was allocated by this call.

        Raises:
            InvalidInputError: ``thread_id`` or a name or key of ``resolved`` is not a non-empty string, or
                ``resolved`` is not a ``ResolvedNamespace``.
            ClientConfigurationError: this allocator has no synchronous database.
        """
        _check_resolved(thread_id, resolved)
        return self._run(self._position_plan(thread_id, resolved, continued, root))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every allocation of ``thread_id`` (and forget the ones this allocator remembers).

        Args:
            thread_id: the thread.

        Raises:
            InvalidInputError: ``thread_id`` is not a non-empty string.
            ClientConfigurationError: this allocator has no synchronous database.
        """
        _check_strings(thread_id=thread_id)
        self._run(self._delete_plan(thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy the source's allocations to a thread that has none.

        Args:
            source_thread_id: the thread to copy (unchanged).
            target_thread_id: a thread with no allocations.

        Raises:
            ThreadExistsError: the target has allocations; nothing was written. Delete them first
                (``delete_thread(target_thread_id)``) or pick another id.
            InvalidInputError: an id is not a non-empty string, or both are the same.
            ClientConfigurationError: this allocator has no synchronous database.
        """
        _check_copy(source_thread_id, target_thread_id)
        self._run(self._copy_plan(source_thread_id, target_thread_id))

    # -- public API: async face ------------------------------------------------

    async def aallocate(self, thread_id: str, parent_path: str, name: str, task_key: str) -> int:
        """Async ``allocate`` on the asynchronous database: same arguments, return and errors."""
        _check_strings(thread_id=thread_id, parent_path=parent_path, name=name, task_key=task_key)
        return await self._arun(self._allocate_plan(thread_id, parent_path, name, task_key))

    async def aoperation_path(self, thread_id: str, resolved: ResolvedNamespace) -> str:
        """Async ``operation_path`` on the asynchronous database: same arguments, return and errors."""
        _check_resolved(thread_id, resolved)
        return await self._arun(self._path_plan(thread_id, resolved))

    async def aposition(
        self, thread_id: str, resolved: ResolvedNamespace, *, continued: bool = False, root: RootStamp | None = None
    ) -> NodePosition:
        """Async ``position`` on the asynchronous database: same arguments, return and errors."""
        _check_resolved(thread_id, resolved)
        return await self._arun(self._position_plan(thread_id, resolved, continued, root))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread`` on the asynchronous database: same arguments and errors."""
        _check_strings(thread_id=thread_id)
        await self._arun(self._delete_plan(thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async ``copy_thread`` on the asynchronous database: same arguments and errors; refuses a target with
        allocations the same way (``ThreadExistsError``)."""
        _check_copy(source_thread_id, target_thread_id)
        await self._arun(self._copy_plan(source_thread_id, target_thread_id))

    # -- storage logic, written once ---------------------------------------------

    def _setup_plan(self) -> Plan:
        yield CreateIndexes(self._collection, list(INDEXES["ordinals"]))

    def _allocate_plan(self, thread_id: str, parent_path: str, name: str, task_key: str) -> Plan:
        ordinal, _ = yield from self._find_or_insert(thread_id, (parent_path, name, task_key))
        return ordinal

    def _find_or_insert(
        self, thread_id: str, key: tuple[str, str, str], guess: int | None = None, root_key: str | None = None
    ) -> Plan:
        """``(ordinal, inserted)`` of one occurrence, read from the database (never from the cache).

        With ``guess``, the sequence's next ordinal as known without a query, the occurrence is inserted under it
        first: one command for a new occurrence. The unique indexes keep that safe: a duplicate key (the
        occurrence exists, or another occurrence took the ordinal) sends it the long way, read then insert.
        """
        parent_path, name, task_key = key
        sequence = {"thread_id": thread_id, "parent_path": parent_path, "name": name}
        projection = {"_id": 0, "ordinal": 1}
        stamp = {**(self._expiry(thread_id) if self._expiry is not None else {}), **({"root_key": root_key} if root_key else {})}
        if guess is not None and (yield InsertOne(self._collection, {**sequence, "task_key": task_key, "ordinal": guess, **stamp})):
            self._remember(thread_id, key, guess)
            return guess, True
        while True:
            found = yield Find(self._collection, {**sequence, "task_key": task_key}, projection, limit=1)
            if found:
                ordinal, inserted = found[0]["ordinal"], False
                break
            last = yield Find(self._collection, sequence, projection, sort=[("ordinal", DESCENDING)], limit=1)
            ordinal = last[0]["ordinal"] + 1 if last else 1
            # A duplicate key means another writer took this occurrence or this ordinal: look again.
            if (yield InsertOne(self._collection, {**sequence, "task_key": task_key, "ordinal": ordinal, **stamp})):
                inserted = True
                break
        self._remember(thread_id, key, ordinal)
        return ordinal, inserted

    def _next_guess(self, thread_id: str, key: tuple[str, str, str], under_new: bool) -> int | None:
        """The next ordinal of ``key``'s sequence when it is known without a query, else None.

        Under an occurrence allocated by this very call nothing is allocated yet: 1. At the root, one more than
        the highest ordinal the thread's latest checkpoint carries (``root_high_water``) or this allocator
        took since. A guess that is too low costs the long way; one too high, a gap in the numbering.
        """
        if under_new:
            return 1
        if key[0] != ROOT_PATH:
            return None
        table = self._water.before(thread_id, key[2])
        return None if table is None else table.get(key[1], 0) + 1

    def _levels_plan(self, thread_id: str, levels: list[_PathOrdinal], root: RootStamp | None = None) -> Plan:
        """The ordinal text of each level (each under the path the ones before it make), and whether the
        last level's occurrence is new.

        A root-level occurrence keyed by ``root``'s checkpoint takes its ordinal from what that checkpoint
        carries, with no query; the other levels are allocated (``_allocated_plan``).
        """
        texts: list[str] = []
        inserted, path = False, ROOT_PATH
        first = levels[0].key(ROOT_PATH)
        table = table_of(root.carried) if root is not None and first[2] == root.checkpoint_id else None
        if root is not None and table is not None:
            ordinal = table.get(first[1], 0) + 1
            self._water.took(thread_id, first[2], first[1], ordinal, table)
            texts.append(levels[0].text(ordinal))
            inserted, path = root.new, f"{ROOT_PATH}/{levels[0].name}/{texts[0]}"
            levels = levels[1:]
        if levels:
            allocated, inserted = yield from self._allocated_plan(thread_id, levels, path, inserted, first[2])
            texts += allocated
        return texts, inserted

    def _allocated_plan(self, thread_id: str, levels: list[_PathOrdinal], path: str, under_new: bool, root_key: str) -> Plan:
        """The ordinal texts of levels allocated in the collection, from ``path`` down (``under_new``: the
        occurrence ``path`` ends at is new), and whether the last one was allocated just now.

        The cache only guesses: the guessed occurrences of every level are confirmed together by one
        query, so an allocation deleted meanwhile (``delete_thread``, ``prune``, TTL, another process's
        ``copy_thread``) is never answered from memory. Levels the guess missed are read (and allocated)
        one by one.
        """
        guessed = self._guess(thread_id, levels, path)
        found: dict[tuple[str, str, str], int] = {}
        if guessed:
            docs = yield Find(
                self._collection,
                {"thread_id": thread_id, "$or": [dict(zip(ORDINAL_KEY, key)) for key in guessed]},
                {"_id": 0, **dict.fromkeys(ORDINAL_KEY, 1), "ordinal": 1},
            )
            found = {tuple(doc[f] for f in ORDINAL_KEY): doc["ordinal"] for doc in docs}
        self._forget(thread_id, [key for key in guessed if key not in found])
        texts: list[str] = []
        inserted = under_new
        for level in levels:
            key = level.key(path)
            if key in found:
                ordinal, inserted = found[key], False
                self._remember(thread_id, key, ordinal)
            else:
                guess = self._next_guess(thread_id, key, under_new=inserted)
                ordinal, inserted = yield from self._find_or_insert(thread_id, key, guess, root_key)
            text = level.text(ordinal)
            texts.append(text)
            path = f"{path}/{level.name}/{text}"
        return texts, inserted

    def _path_plan(self, thread_id: str, resolved: ResolvedNamespace) -> Plan:
        texts, _ = yield from self._levels_plan(thread_id, _boundary_levels(resolved))
        return _join(resolved, texts)

    def _position_plan(
        self, thread_id: str, resolved: ResolvedNamespace, continued: bool, root: RootStamp | None = None
    ) -> Plan:
        levels = [*_boundary_levels(resolved), _node_level(resolved)]
        texts, inserted = yield from self._levels_plan(thread_id, levels, root)
        path = _join(resolved, texts[:-1])
        root_key = levels[0].key(ROOT_PATH)[2]
        return NodePosition(
            thread_id, path, resolved.node_name, texts[-1], new=inserted, continued=continued, root_key=root_key
        )

    def _delete_plan(self, thread_id: str) -> Plan:
        yield DeleteMany(self._collection, {"thread_id": thread_id})
        self._forget(thread_id)

    def forget_root_occurrences_plan(self, thread_id: str, task_keys: Sequence[str]) -> Plan:
        """Delete the root-level occurrences keyed by ``task_keys`` and every allocation beneath them.

        A plan (run by a storage face, e.g. inside ``MongoDBCheckpointer``'s TTL sweep). The keys are root
        checkpoint ids: edge-triggered root tasks and root ``Send`` groups are keyed by the checkpoint they
        were prepared from (see "Occurrence keys"), so the occurrences of a finished step go; those of
        tasks keyed otherwise (the functional API's task ids) never match. Allocations and journal entries
        carry the key of the root-level occurrence they are under (``root_key``); those written before they
        did are found from the root-level allocations keyed so.

        Args:
            thread_id: the thread.
            task_keys: root checkpoint ids whose tasks finished.

        Returns:
            A filter on the journal's entries of the deleted occurrences (their ``root_key``, or the position
            fields of node entries and everything under their paths), or None when ``task_keys`` is empty.
        """
        if not task_keys:
            return None
        keys = sorted(task_keys)
        keyed = {"root_key": {"$in": keys}}
        roots = {"parent_path": ROOT_PATH, "task_key": {"$in": keys}}
        found = yield Find(self._collection, {"thread_id": thread_id, **roots}, {"_id": 0, "name": 1, "ordinal": 1})
        nodes, beneath = _positions_of(found)
        yield DeleteMany(self._collection, {"thread_id": thread_id, "$or": [keyed, roots, *({"parent_path": p} for p in beneath)]})
        self._forget(thread_id)
        return {"$or": [keyed, *nodes, *({"path": p} for p in beneath)]}

    def _copy_plan(self, source: str, target: str) -> Plan:
        if (yield Find(self._collection, {"thread_id": target}, {"_id": 1}, limit=1)):
            raise ThreadExistsError(
                f"copy_thread: thread {target!r} already has allocations in {self._collection}, and a copy onto it "
                f"would mix two threads' ordinals; nothing was written. Delete them first with "
                f"delete_thread({target!r}), or copy to another thread id",
                thread_id=target,
                collections=(self._collection,),
            )
        docs = yield Find(self._collection, {"thread_id": source}, {"_id": 0})
        self._forget(target)  # allocations cached before another process deleted the thread
        stamp = self._expiry(target) if self._expiry is not None else {}
        copies = [{**{k: v for k, v in doc.items() if k != "expire_at"}, "thread_id": target, **stamp} for doc in docs]
        yield InsertMany(self._collection, copies)

    # -- cache and faces -----------------------------------------------------------

    def _guess(self, thread_id: str, levels: list[_PathOrdinal], path: str) -> list[tuple[str, str, str]]:
        """The keys of the leading levels the cache remembers, each under the path the guesses before it make
        (from ``path`` down)."""
        guessed: list[tuple[str, str, str]] = []
        with self._lock:
            allocations = self._cache.get(thread_id)
            if allocations is None:
                return guessed
            self._cache.move_to_end(thread_id)
            for level in levels:
                key = level.key(path)
                ordinal = allocations.get(key)
                if ordinal is None:
                    break
                guessed.append(key)
                path = f"{path}/{level.name}/{level.text(ordinal)}"
        return guessed

    def _remember(self, thread_id: str, key: tuple[str, str, str], ordinal: int) -> None:
        with self._lock:
            self._cache.setdefault(thread_id, {})[key] = ordinal
            self._cache.move_to_end(thread_id)
            while len(self._cache) > _CACHED_THREADS:
                self._cache.popitem(last=False)
        if key[0] == ROOT_PATH:
            self._water.took(thread_id, key[2], key[1], ordinal)

    def root_high_water(
        self, thread_id: str, checkpoint_id: str, completed: Collection[str] = (), edited: Any = None, parent: Any = None
    ) -> list[dict[str, Any]] | None:
        """What the root checkpoint ``checkpoint_id`` being stored carries: the highest ordinal of each root-level
        sequence taken before it (``MongoDBCheckpointer.carry_in_root_checkpoints``; see ``high_water.py``).

        Args:
            thread_id: the thread.
            checkpoint_id: the checkpoint being stored.
            completed, edited, parent: as for ``RootHighWater.stamp``.

        Returns:
            ``[{"name": name, "ordinal": ordinal}, ...]``, or None when unknown.
        """
        return self._water.stamp(thread_id, checkpoint_id, completed, edited, parent)

    def learn_root_high_water(self, thread_id: str, carried: Any, *, fresh: bool = False) -> None:
        """Take what the thread's latest root checkpoint carries (``root_high_water``) as the thread's high water.

        Args:
            thread_id: the thread.
            carried: the checkpoint's ``[{"name": ..., "ordinal": ...}, ...]``, or None when it carries none (unknown).
            fresh: the thread has no checkpoint at all: nothing is allocated under its root.
        """
        self._water.learn(thread_id, carried, fresh=fresh)

    def abandon_root_checkpoints(self, thread_id: str, checkpoint_ids: Collection[str]) -> None:
        """The root checkpoints ``checkpoint_ids`` will never be stored (their store, or one before it, failed): the
        root-level ordinals their occurrences took count in no later checkpoint's high water (``RootHighWater.abandon``),
        so a resume numbers those occurrences again as a process that never saw them would.

        Args:
            thread_id: the thread.
            checkpoint_ids: the checkpoints (``MongoDBCheckpointer.carry_in_root_checkpoints``'s ``abandon``).
        """
        self._water.abandon(thread_id, checkpoint_ids)

    def _forget(self, thread_id: str, keys: list[tuple[str, str, str]] | None = None) -> None:
        """Drop the thread's cached allocations (``keys`` only, when given)."""
        with self._lock:
            if keys is None:
                self._cache.pop(thread_id, None)
                self._water.forget(thread_id)
                return
            allocations = self._cache.get(thread_id, {})
            for key in keys:
                allocations.pop(key, None)


def _positions_of(found: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Journal position filters of root-level allocations: their node entries, and every path under them."""
    nodes, beneath = [], []
    for doc in found:
        name, ordinal = doc["name"], str(doc["ordinal"])
        if name.endswith(_SEND_SEQUENCE):  # a Send group g: occurrences g.0, g.1, ...
            name, occurrence = name[: -len(_SEND_SEQUENCE)], re.escape(ordinal) + r"\.\d+"
            nodes.append({"path": ROOT_PATH, "node": name, "occurrence": {"$regex": f"^{occurrence}$"}})
        else:
            occurrence = re.escape(ordinal)
            nodes.append({"path": ROOT_PATH, "node": name, "occurrence": ordinal})
        # the occurrence's own path, with a subgraph run's "+p", and every path beneath it
        beneath.append({"$regex": f"^{re.escape(f'{ROOT_PATH}/{name}/')}{occurrence}(\\+\\d+)?(/|$)"})
    return nodes, beneath


def _check_strings(**values: Any) -> None:
    for field, value in values.items():
        if not isinstance(value, str) or not value:
            raise InvalidInputError(f"{field} must be a non-empty string, got {value!r}")


def _check_resolved(thread_id: Any, resolved: Any) -> None:
    _check_strings(thread_id=thread_id)
    if not isinstance(resolved, ResolvedNamespace):
        raise InvalidInputError(
            "resolved must be a ResolvedNamespace (from DurableSubgraphResolver.resolve), "
            f"got {type(resolved).__name__}"
        )
    for boundary in resolved.boundaries:
        _check_strings(boundary_name=boundary.name, boundary_task_key=boundary.task_key)
    _check_strings(node_name=resolved.node_name, node_task_key=resolved.node_task_key)


def _check_copy(source: Any, target: Any) -> None:
    _check_strings(source_thread_id=source, target_thread_id=target)
    if source == target:
        raise InvalidInputError(f"cannot copy thread {source!r} onto itself")
