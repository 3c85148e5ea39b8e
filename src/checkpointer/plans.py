"""Storage logic of the checkpointer, written once as I/O plans.

Each public saver method has a plan here (a generator yielding requests of
``_plans.requests``); ``MongoDBCheckpointer`` runs it with its
sync face or its native async face. Every plan checks its input before it
yields its first request, so bad input never reaches the server.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_metadata,
    writes_sort_key,
)
from pymongo import ReplaceOne, UpdateOne

from .._bson import (
    DEFAULT_CHUNK_BYTES,
    assemble_values,
    containment_filter,
    escape_document,
    require_str,
    require_str_list,
    require_thread_id,
    unescape_document,
    unescape_key,
    value_documents,
)
from .. import _langgraph
from .._plans import lease
from .._plans.requests import (
    Aggregate,
    CreateIndexes,
    DeleteMany,
    Emit,
    Find,
    Gather,
    InsertMany,
    Join,
    Plan,
    UpdateMany,
    Upsert,
    WaitNotice,
)
from ..errors import DeltaChainError, DurableMongoError, InvalidInputError, ThreadExistsError
from ..schema import BLOB_KEY, EXPIRY_INDEX, INDEXES, TTL_INDEX, WRITE_KEY, CollectionNames
from .documents import (
    CHANNEL,
    CHECKPOINT_KEY,
    HOLDER,
    VALUE_TYPE,
    VERSION,
    WRITE_FIELDS,
    InlineLimits,
    LaidOut,
    as_reference,
    blob_documents,
    blob_values,
    check_assembled,
    check_checkpoints,
    check_values,
    checkpoint_document,
    checkpoint_key,
    inline_values,
    key_id,
    lay_out_values,
    load_channel_values,
    locations_of,
    references_to,
    stored_channels,
    unlinked_values,
    value_key,
    values_elsewhere,
    with_checksum,
)
from .memory import StoredCheckpoints, TaskHolds, ThreadExpiries, ValueLocations
from .ttl import TTLConfig

#: Checkpoints fetched with the target by ``get_delta_channel_history``: the whole chain in one query
#: unless more than this many checkpoints separate the target from its channels' seeds.
FIRST_CHAIN_PAGE = 128

#: ``wait_stored`` asks only the registry for this long first: a checkpoint this process stores in the background
#: (``durability="async"``: the tasks prepared from it already run) is noted there when its write returns, so
#: the node's first effect waits for that write without a query of its own.
STORED_FIRST_CHECK_SECONDS = 0.05
#: While ``wait_stored`` waits, the database is asked again this often (the registry is polled in between).
STORED_RECHECK_SECONDS = 1.0
_EPOCH, _MILLISECOND = datetime(1970, 1, 1), timedelta(milliseconds=1)

#: Checkpoints fetched per page by ``list``: writes and values held elsewhere cost a query per page, never per checkpoint.
LIST_PAGE = 100
#: The order of ``list``: newest first, then by thread and namespace, so that pages neither skip nor repeat.
_LIST_ORDER = [("checkpoint_id", -1), ("thread_id", -1), ("checkpoint_ns", -1)]

#: What a chain walk reads of a checkpoint: its links and where its values are, never the values.
_CHAIN_FIELDS = {
    "_id": 0,
    "thread_id": 1,
    "checkpoint_ns": 1,
    "checkpoint_id": 1,
    "parent_checkpoint_id": 1,
    f"values.{CHANNEL}": 1,
    f"values.{VERSION}": 1,
    f"values.{HOLDER}": 1,
    f"values.{VALUE_TYPE}": 1,
    "metadata.counters_since_delta_snapshot": 1,
    "metadata.run_id": 1,
    "origin": 1,
    "completed": 1,
}

#: What is read of a checkpoint that holds values another checkpoint references.
_HOLDER_FIELDS = {"_id": 0, "thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "values": 1}
_VALUE_FIELDS = None  # every field: the _id names a document that cannot be read (mongo-java-server refuses {expire_at: 0})

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
    carries none, ``fresh`` when the thread has no checkpoint at all). The stored-checkpoint registry keeps
    what each root checkpoint it notes carries (``Stored.carried``).
    """

    field: str
    stamp: Callable[[str], Any]
    learn: Callable[..., None]


def _registered(doc: Mapping[str, Any], carried: Any) -> dict[str, Any]:
    """What the stored-checkpoint registry keeps of a checkpoint document."""
    return {"checkpoint_id": doc["checkpoint_id"], "origin": doc.get("origin"), "completed": doc.get("completed"), "carried": carried}


def _configurable(config: Any) -> Mapping[str, Any]:
    if not isinstance(config, Mapping) or not isinstance(config.get("configurable"), Mapping):
        raise InvalidInputError('config must be a dict with a "configurable" dict, e.g. {"configurable": {"thread_id": "t1"}}')
    return config["configurable"]


def _thread_ns(config: Any) -> tuple[str, str, str | None]:
    conf = _configurable(config)
    if "thread_id" not in conf:
        raise InvalidInputError('config["configurable"] has no "thread_id"; pass the thread to read or write')
    thread_id = require_thread_id(conf["thread_id"])
    checkpoint_ns = require_str("checkpoint_ns", conf.get("checkpoint_ns", ""))
    checkpoint_id = conf.get("checkpoint_id")
    if checkpoint_id is not None:
        require_str("checkpoint_id", checkpoint_id)
    return thread_id, checkpoint_ns, checkpoint_id or None


def _list_query(config: Any, filter: dict[str, Any] | None, before: Any) -> dict[str, Any]:
    """The filter of ``list``: what ``config`` names, ``filter`` on the metadata, ids below ``before``'s."""
    query = _config_query(config) if config is not None else {}
    if filter:
        query.update(containment_filter("metadata", filter))
    before_id = _configurable(before).get("checkpoint_id") if before is not None else None
    if before_id is not None:
        bound = {"$lt": require_str("checkpoint_id", before_id)}
        named = query.get("checkpoint_id")
        query["checkpoint_id"] = {"$eq": named, **bound} if isinstance(named, str) else bound
    return query


def _config_query(config: Any) -> dict[str, Any]:
    """The thread, namespace and checkpoint id ``config`` names, those it names only."""
    conf = _configurable(config)
    query: dict[str, Any] = {}
    if "thread_id" in conf:
        query["thread_id"] = require_thread_id(conf["thread_id"])
    if "checkpoint_ns" in conf:
        query["checkpoint_ns"] = require_str("checkpoint_ns", conf["checkpoint_ns"])
    if conf.get("checkpoint_id") is not None:
        query["checkpoint_id"] = require_str("checkpoint_id", conf["checkpoint_id"])
    return query


def _require_limit(limit: Any) -> None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise InvalidInputError(f"limit must be a non-negative int or None, got {limit!r}")


def _listed_after(last: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoints after ``last`` in ``list`` order (``_LIST_ORDER``): the next page starts there."""
    return {
        "$or": [
            {"checkpoint_id": {"$lt": last["checkpoint_id"]}},
            {"checkpoint_id": last["checkpoint_id"], "thread_id": {"$lt": last["thread_id"]}},
            {
                "checkpoint_id": last["checkpoint_id"],
                "thread_id": last["thread_id"],
                "checkpoint_ns": {"$lt": last["checkpoint_ns"]},
            },
        ]
    }


def _parent_config(doc: Mapping[str, Any]) -> RunnableConfig | None:
    parent = doc.get("parent_checkpoint_id")
    if not parent:
        return None
    return {"configurable": checkpoint_key(doc["thread_id"], doc["checkpoint_ns"], parent)}


def _chain(docs_by_id: Mapping[str, Mapping[str, Any]], start: str | None) -> list[str]:
    """Checkpoint ids from ``start`` up the parent chain, newest first (stops at a gap)."""
    chain, seen = [], set()
    while start and start in docs_by_id and start not in seen:
        seen.add(start)
        chain.append(start)
        start = docs_by_id[start].get("parent_checkpoint_id")
    return chain


def _delta_dependencies(docs_by_id: Mapping[str, Mapping[str, Any]], checkpoint_id: str) -> list[str]:
    """Ancestors whose writes (or stored seed) a DeltaChannel at ``checkpoint_id`` needs.

    ``counters_since_delta_snapshot`` in a checkpoint's metadata names the
    delta channels that were written since their last snapshot; each needs
    every ancestor back to the nearest one that stores its value.
    """
    doc = docs_by_id[checkpoint_id]
    counters = (doc.get("metadata") or {}).get("counters_since_delta_snapshot") or {}
    pending = {unescape_key(k) for k in counters} - stored_channels(doc)
    needed: list[str] = []
    for ancestor in _chain(docs_by_id, doc.get("parent_checkpoint_id")):
        if not pending:
            break
        needed.append(ancestor)
        pending -= stored_channels(docs_by_id[ancestor])
    return needed


def _side_by_side(*requests: Any) -> Plan:
    """Send the requests that are not None at once (a ``Gather`` when there are two or more); returns each one's
    result in its place, None for a None request."""
    sent = [r for r in requests if r is not None]
    if len(sent) > 1:
        results = iter((yield Gather(tuple(sent))))
    else:
        results = iter([(yield sent[0])] if sent else [])
    return [next(results) if r is not None else None for r in requests]


def _finished_root_checkpoints(root: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The root checkpoints whose tasks finished: all but the latest and the one it continues (``origin``).

    A task prepared from any other checkpoint ran in a step that a later checkpoint records (or on a branch
    the latest does not continue): a resume from the latest never runs it again.
    """
    if not root:
        return []
    latest = root[max(root)]
    return sorted(set(root) - {latest["checkpoint_id"], latest.get("origin")})


class CheckpointPlans:
    """The checkpointer's storage logic; mixed into ``MongoDBCheckpointer``."""

    serde: Any
    collections: CollectionNames
    ttl: float | None
    ttl_config: TTLConfig | None
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    _expiries: ThreadExpiries
    _stored: StoredCheckpoints
    _holds: TaskHolds
    _locations: ValueLocations
    _prune_observers: list[Callable[[str, list[str]], Plan]]
    _carried: RootCarry | None = None
    #: A value is stored inline in the checkpoint document up to this size (a larger one in blobs) ...
    inline_value_bytes: int = 1024 * 1024
    #: ... while the document's inline values stay within this total (a document holds 16 MiB at most).
    inline_document_bytes: int = 4 * 1024 * 1024
    #: An unchanged value this small is copied inline again, so a read of the latest checkpoint needs no
    #: other document for it; a larger one is referenced where it is stored, when this process knows where.
    copy_value_bytes: int = 2048

    # -- expiry ---------------------------------------------------------------
    #
    # A thread carries one expiry, whatever the number of workers writing it, and it only moves
    # forward. A write at time t stamps the end of t's bucket (ttl/10 long, counted from the epoch)
    # plus ttl, so workers writing in one bucket agree, and never less than the highest expiry this
    # process has seen on the thread's documents, so a worker whose clock lags keeps the later one.
    # The checkpointer's writes then spread it to the thread's other documents with a refresh that
    # only raises expiries, once per value (about once per bucket) per thread per process.

    def expiry_fields(self, thread_id: str) -> dict[str, Any]:
        """``{"expire_at": ...}`` for a document another component adds to the thread (empty without ttl).

        The journal and the ordinal allocator stamp their documents with it. It is the thread's
        current expiry as this process knows it, so the new document expires with the rest of the
        thread; only the checkpointer's own writes move the expiry forward, since a refresh then
        moves every document with it. A thread this process knows nothing of, or whose expiry has
        passed, gets that of a write now.

        Args:
            thread_id: the thread the new document belongs to.

        Returns:
            ``{"expire_at": datetime}`` under ``ttl``, else ``{}``.
        """
        if self.ttl is None:
            return {}
        highest = self._expiries.highest(thread_id)
        if highest is not None and highest > lease.utcnow():
            return {"expire_at": highest}
        return self._write_expiry(thread_id)

    def _write_expiry(self, thread_id: str) -> dict[str, Any]:
        """``{"expire_at": ...}`` for the checkpointer's write to the thread now (empty without ttl)."""
        if self.ttl is None:
            return {}
        bucket, ttl = max(1, round(self.ttl * 100)), round(self.ttl * 1000)  # milliseconds: BSON dates hold no less
        now = (lease.utcnow() - _EPOCH) // _MILLISECOND
        computed = _EPOCH + _MILLISECOND * ((now // bucket + 1) * bucket + ttl)
        return {"expire_at": self._expiries.raise_to(thread_id, computed)}

    def _saw_expiries(self, docs: list[dict[str, Any]]) -> None:
        """Note the ``expire_at`` of checkpoint documents read: a later write never stamps less."""
        for doc in docs:
            if doc.get("expire_at") is not None:
                self._expiries.raise_to(doc["thread_id"], doc["expire_at"])

    def _spread_expiry(self, thread_id: str, expiry: Mapping[str, Any]) -> Plan:
        """Move every document of the thread without an expiry or with a lower one to ``expiry``.

        Sent once per expiry value per thread (the value changes about once per ttl/10): one
        ``updateMany`` per per-thread collection. The filter only ever raises an expiry, so
        concurrent refreshes of two workers end on the higher one.

        Args:
            thread_id: the thread just written.
            expiry: what ``_write_expiry`` stamped on the new documents (empty without ttl).
        """
        if not expiry:
            return
        value = expiry["expire_at"]
        spread = self._expiries.spread(thread_id)
        if spread is not None and spread >= value:
            return
        older = {"$or": [{"expire_at": {"$exists": False}}, {"expire_at": {"$lt": value}}]}
        for coll in self.collections.per_thread:
            yield UpdateMany(coll, {"thread_id": thread_id, **older}, {"$set": {"expire_at": value}})
        self._expiries.raise_to(thread_id, value, spread=True)

    # -- stored checkpoints -------------------------------------------------------

    def _origin_plan(self, thread_id: str, checkpoint_id: str, node: str | None) -> Plan:
        """See ``MongoDBCheckpointer.origin_of``: the registry, else one query by the checkpoint's key."""
        known = self._stored.origin(thread_id, checkpoint_id, node)
        if known is not None:
            return known
        found = yield Find(self.collections.checkpoints, checkpoint_key(thread_id, "", checkpoint_id), self._origin_fields(), limit=1)
        if not found:
            return checkpoint_id  # not stored (durability="exit"): it continues nothing
        self._note_read(thread_id, "", found)
        return self._stored.origin(thread_id, checkpoint_id, node) or checkpoint_id

    def _root_plan(self, thread_id: str, checkpoint_id: str) -> Plan:
        """See ``MongoDBCheckpointer.stored_root``: the registry, else one query by the checkpoint's key."""
        known = self._stored.root(thread_id, checkpoint_id)
        if known is None:
            found = yield Find(self.collections.checkpoints, checkpoint_key(thread_id, "", checkpoint_id), self._origin_fields(), limit=1)
            self._note_read(thread_id, "", found)
            known = self._stored.root(thread_id, checkpoint_id)
        return known

    def _origin_fields(self) -> dict[str, int]:
        return {**ORIGIN_FIELDS, self._carried.field: 1} if self._carried is not None else ORIGIN_FIELDS

    def _note_read(self, thread_id: str, checkpoint_ns: str, docs: list[dict[str, Any]]) -> None:
        """Note checkpoint documents read, with what each carries."""
        field = self._carried.field if self._carried is not None else None
        self._stored.note(thread_id, checkpoint_ns, [_registered(d, d.get(field) if field else None) for d in docs])

    def _continued_origin(self, thread_id: str, checkpoint_ns: str, parent_id: str | None, source: Any) -> Plan:
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
            self._origin_fields(),
            [("checkpoint_id", 1)],
            2,
        )
        if len(newest) != 1 or newest[0]["checkpoint_id"] != parent_id:
            return None, [], None  # the parent is not the latest checkpoint, or is gone
        edited = yield Find(self.collections.writes, checkpoint_key(thread_id, "", parent_id), _EDITED_WRITE_FIELDS)
        carried = newest[0].get(self._carried.field) if self._carried is not None else None
        return newest[0].get("origin") or parent_id, _langgraph.nodes_completed_by_edit(edited), carried

    def _wait_stored_plan(self, thread_id: str, checkpoint_id: str, timeout: float, begun: bool = False) -> Plan:
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
                if found := (yield Find(self.collections.checkpoints, key, self._origin_fields(), limit=1)):
                    self._note_read(thread_id, "", found)
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
            yield WaitNotice(pause, lambda wake: self._stored.subscribe(thread_id, checkpoint_id, wake, stored=not begun))
            if self._stored.known(thread_id, checkpoint_id, stored=not begun):
                return

    # -- setup ------------------------------------------------------------------

    def _setup_plan(self) -> Plan:
        for role in ("checkpoints", "blobs", "writes"):
            yield CreateIndexes(getattr(self.collections, role), list(INDEXES[role]))
        if self.ttl_config is not None and self.ttl_config.strategy == "keep_latest":
            yield CreateIndexes(self.collections.checkpoints, [EXPIRY_INDEX])
        elif self.ttl is not None:
            # Servers without TTL support (FerretDB) keep working: readers
            # already treat expired threads as gone, and sweep_expired() deletes them.
            for coll in self.collections.per_thread:
                yield CreateIndexes(coll, [TTL_INDEX], optional=True)

    # -- reading ----------------------------------------------------------------

    def _load_tuples(self, docs: list[dict[str, Any]]) -> Plan:
        """Turn checkpoint documents into tuples: their writes, and the values they do not hold inline
        (held by another checkpoint, or in blobs), fetched side by side."""
        if not docs:
            return []
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for d in docs:
            groups[(d["thread_id"], d["checkpoint_ns"])].append(d["checkpoint_id"])
        branches = [
            {"thread_id": t, "checkpoint_ns": ns, "checkpoint_id": ids[0] if len(ids) == 1 else {"$in": ids}}
            for (t, ns), ids in groups.items()
        ]
        writes_query = Find(self.collections.writes, branches[0] if len(branches) == 1 else {"$or": branches}, _VALUE_FIELDS)
        found_writes, values = yield from self._values_with(writes_query, docs)
        check_values(self.collections.writes, found_writes, WRITE_FIELDS)
        writes = self._group_writes(found_writes)
        for d in docs:
            self._note_read(d["thread_id"], d["checkpoint_ns"], [d])
        self._saw_expiries(docs)
        return [
            self._tuple(d, values, writes.get((d["thread_id"], d["checkpoint_ns"], d["checkpoint_id"]), []))
            for d in docs
        ]

    def _values_with(self, first: Any, docs: list[dict[str, Any]], channels: Any = None) -> Plan:
        """Run ``first`` (None: nothing) beside the queries for the values ``docs`` reference but do not hold inline.

        Returns ``(first's result, {value key: (type, bytes)})``. A referenced holder that is gone (``prune``
        moved its values to blobs) costs one more query, for blobs.
        """
        held, in_blobs = values_elsewhere(docs, channels)
        holders = Find(self.collections.checkpoints, {"_id": {"$in": sorted(held)}}, _HOLDER_FIELDS) if held else None
        first_result, holder_docs, blob_docs = yield from _side_by_side(first, holders, self._blobs_query(in_blobs))
        values = inline_values(self.collections.checkpoints, docs)
        values.update(inline_values(self.collections.checkpoints, holder_docs or []))
        values.update(blob_values(self.collections.blobs, blob_docs or []))
        missing = {ref for refs in held.values() for ref in refs if ref not in values}
        if missing:
            values.update(blob_values(self.collections.blobs, (yield self._blobs_query(missing))))
        return first_result, values

    def _blob_upserts(self, ref: tuple, typed: tuple[str, bytes], expiry: Mapping[str, Any]) -> list[UpdateOne]:
        """The upserts that store one value in blobs, chunked, under value key ``ref``.

        Written once: a value already stored under its version is left as it is.
        """
        documents = blob_documents(ref, typed, self.chunk_bytes)
        return [UpdateOne({"_id": _id}, {"$setOnInsert": {**doc, **expiry}}, upsert=True) for _id, doc in documents.items()]

    def _blobs_query(self, refs: set[tuple]) -> Find | None:
        """The query for the blobs of these value keys (None for none)."""
        if not refs:
            return None
        return Find(self.collections.blobs, {"$or": [dict(zip(BLOB_KEY, ref)) for ref in sorted(refs, key=repr)]}, _VALUE_FIELDS)

    def _group_writes(self, docs: list[dict[str, Any]]) -> dict[tuple, list[tuple[str, str, Any]]]:
        """Pending writes per checkpoint, in ``writes_sort_key`` order."""
        heads = {tuple(d[f] for f in WRITE_KEY): d for d in docs if d.get("chunk", 0) == 0}
        values = assemble_values(docs, WRITE_KEY)
        check_assembled(self.collections.writes, docs, WRITE_KEY, values)
        out: dict[tuple, list[tuple[str, str, str, int, Any]]] = defaultdict(list)
        for key, typed in values.items():
            head = heads[key]
            out[key[:3]].append((head.get("task_path", ""), head["task_id"], head["idx"], head["channel"], typed))
        return {
            key: [
                (task_id, channel, self.serde.loads_typed(typed))
                for path, task_id, idx, channel, typed in sorted(rows, key=lambda r: writes_sort_key(r[0], r[1], r[2]))
            ]
            for key, rows in out.items()
        }

    def _tuple(self, doc: dict[str, Any], values: Mapping[tuple, tuple[str, bytes]], pending: list) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed((doc["checkpoint"]["type"], bytes(doc["checkpoint"]["data"])))
        channel_values = load_channel_values(doc, values, self.serde.loads_typed)
        return CheckpointTuple(
            config={"configurable": checkpoint_key(doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"])},
            checkpoint={**checkpoint, "channel_values": channel_values},
            metadata=unescape_document(doc.get("metadata") or {}),
            parent_config=_parent_config(doc),
            pending_writes=pending,
        )

    def _get_tuple_plan(self, config: RunnableConfig) -> Plan:
        thread_id, checkpoint_ns, checkpoint_id = _thread_ns(config)
        query: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
        if checkpoint_id:
            query["checkpoint_id"] = checkpoint_id
        docs = yield Find(self.collections.checkpoints, query, None, [("checkpoint_id", -1)], 1)
        check_checkpoints(self.collections.checkpoints, docs)
        docs = [d for d in docs if not self._expired(d)]
        if not checkpoint_ns and not checkpoint_id:
            if self._carried is not None:
                self._carried.learn(thread_id, docs[0].get(self._carried.field) if docs else None, fresh=not docs)
            if not docs:
                self._stored.note_empty(thread_id)
        tuples = yield from self._load_tuples(docs)
        yield from self._refresh_on_read(docs)
        if docs:
            self._locations.note(thread_id, checkpoint_ns, docs[0]["checkpoint_id"], locations_of(docs[0]))
        return tuples[0] if tuples else None

    def _expired(self, doc: Mapping[str, Any]) -> bool:
        # Between two passes of the TTL monitor (and on servers without one) an expired thread is
        # already gone for readers; under keep_latest it stays, to be pruned by the next sweep.
        if self.ttl_config is None or self.ttl_config.strategy != "delete":
            return False
        expire_at = doc.get("expire_at")
        return expire_at is not None and expire_at <= lease.utcnow()

    def _refresh_on_read(self, docs: list[dict[str, Any]]) -> Plan:
        """Under ``refresh_on_read``, push the expiry of every thread read forward as a write would.

        Costs what a write's refresh costs: one ``updateMany`` per per-thread collection, once per
        expiry value (about once per ttl/10) per thread per process; other reads cost nothing more.
        """
        if self.ttl_config is None or not self.ttl_config.refresh_on_read:
            return
        for thread_id in sorted({d["thread_id"] for d in docs}):
            yield from self._spread_expiry(thread_id, self._write_expiry(thread_id))

    def _list_plan(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Plan:
        query = _list_query(config, filter, before)
        _require_limit(limit)
        remaining, after = limit, None
        while remaining is None or remaining > 0:
            page_size = LIST_PAGE if remaining is None else min(LIST_PAGE, remaining)
            page_query = query if after is None else {"$and": [query, after]}
            # One document more than the page tells whether another page exists.
            docs, more = yield from self._list_page(page_query, page_size, remaining is None or remaining > page_size)
            yield from self._emit_tuples(docs)
            if not more:
                return
            if remaining is not None:
                remaining -= len(docs)
            after = _listed_after(docs[-1])

    def _list_page(self, query: dict[str, Any], page_size: int, probe: bool) -> Plan:
        """Up to ``page_size`` checkpoint documents in ``list`` order, and whether more follow (known only when
        ``probe`` asks for one document more)."""
        docs = yield Find(self.collections.checkpoints, query, None, _LIST_ORDER, page_size + 1 if probe else page_size)
        check_checkpoints(self.collections.checkpoints, docs)
        return docs[:page_size], len(docs) > page_size

    def _emit_tuples(self, docs: list[dict[str, Any]]) -> Plan:
        """Emit the tuples of the checkpoint documents whose thread has not expired."""
        live = [d for d in docs if not self._expired(d)]
        tuples = yield from self._load_tuples(live)
        yield from self._refresh_on_read(live)
        for tup in tuples:
            yield Emit(tup)

    # -- writing ----------------------------------------------------------------

    def _put_plan(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Plan:
        thread_id, checkpoint_ns, parent_id = _thread_ns(config)
        checkpoint_id = require_str("checkpoint id", checkpoint.get("id"), allow_empty=False)
        yield from self._after_held(thread_id, checkpoint_ns, checkpoint_id)
        key = checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
        expiry = self._write_expiry(thread_id)
        laid_out = self._lay_out(thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, new_versions)
        full_metadata = get_checkpoint_metadata(config, metadata)
        stored_metadata = escape_document(full_metadata)
        origin, completed, edited = yield from self._continued_origin(
            thread_id, checkpoint_ns, parent_id, full_metadata.get("source")
        )
        carried = self._carried_by(thread_id, checkpoint_ns, checkpoint_id, parent_id, origin, completed, edited)
        skeleton = self.serde.dumps_typed({k: v for k, v in checkpoint.items() if k != "channel_values"})
        registered = {"checkpoint_id": checkpoint_id, "origin": origin, "completed": completed, "carried": carried}
        self._stored.announce(thread_id, checkpoint_ns, registered)
        yield from self._write_blobs(thread_id, laid_out.blobs, expiry)
        lease.check_self_fence(thread_id)  # a run whose lease may have run out writes no checkpoint (no I/O)
        carried_fields = {self._carried.field: carried} if carried is not None else {}
        document = checkpoint_document(
            key, parent_id, skeleton, laid_out.entries, stored_metadata, checkpoint.get("ts"), origin, completed,
            {**carried_fields, **expiry},
        )
        yield Upsert(
            self.collections.checkpoints,
            [UpdateOne({"_id": key_id(thread_id, checkpoint_ns, checkpoint_id)}, {"$set": document}, upsert=True)],
        )
        self._stored.note(thread_id, checkpoint_ns, [registered], written=True)
        self._locations.note(thread_id, checkpoint_ns, checkpoint_id, laid_out.located)
        yield from self._spread_expiry(thread_id, expiry)
        return {"configurable": key}

    def _lay_out(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
    ) -> LaidOut:
        """Where each value of a checkpoint being put goes (``lay_out_values``), knowing where this process
        remembers its parent's values are (``ValueLocations``)."""
        parent = self._locations.get(thread_id, checkpoint_ns, parent_id) if parent_id else None
        unchanged = {channel: at for channel, at in (parent or {}).items() if channel not in new_versions}
        return lay_out_values(
            (thread_id, checkpoint_ns, checkpoint_id),
            checkpoint.get("channel_values", {}),
            checkpoint.get("channel_versions", {}),
            unchanged,
            self.serde.dumps_typed,
            InlineLimits(self.inline_value_bytes, self.inline_document_bytes, self.copy_value_bytes),
        )

    def _write_blobs(self, thread_id: str, blobs: list[tuple[tuple, tuple[str, bytes]]], expiry: Mapping[str, Any]) -> Plan:
        """Store the values a checkpoint being put keeps in blobs (``LaidOut.blobs``), in one command."""
        if blobs:
            lease.check_self_fence(thread_id)
            yield Upsert(self.collections.blobs, [op for ref, typed in blobs for op in self._blob_upserts(ref, typed, expiry)])

    def _after_held(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Plan:
        """Before a checkpoint, which holds the writes of the tasks before it: wait for what is held for them
        (``TaskHolds.before``: journal records written while their nodes went on); raise the error of one that
        failed, which is then no longer held (LangGraph saves no later checkpoint of the run)."""
        if held := self._holds.before(thread_id, checkpoint_ns, checkpoint_id):
            try:
                yield Join(held)
            except BaseException:
                self._holds.drop(held)
                raise

    def _carried_by(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, parent_id: str | None, origin: Any, completed: Any, edited: Any
    ) -> Any:
        """What a root checkpoint being stored carries: what its tasks already counted from when they foresaw it
        (``MongoDBCheckpointer.foresee_root``), else the stamp of ``carry_in_root_checkpoints``."""
        if self._carried is None or checkpoint_ns:
            return None
        foreseen = self._stored.root(thread_id, checkpoint_id)
        if foreseen is not None and not foreseen.stored and origin is None and not completed:
            return foreseen.carried
        parent = self._stored.root(thread_id, parent_id) if parent_id else None
        return self._carried.stamp(thread_id, checkpoint_id, completed, edited, parent.carried if parent is not None else None)

    def _put_writes_plan(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Plan:
        thread_id, checkpoint_ns, checkpoint_id = _thread_ns(config)
        require_str("task_id", task_id)
        require_str("task_path", task_path)
        if not checkpoint_id:
            raise InvalidInputError('put_writes needs config["configurable"]["checkpoint_id"]')
        if held := self._holds.of_task(thread_id, task_id):
            yield Join(held)  # the journal records of the task's effects, written while the node went on
        expiry = self._write_expiry(thread_id)
        ops: list[UpdateOne | ReplaceOne] = []
        for idx, (channel, value) in enumerate(writes):
            require_str("write channel", channel)
            write_idx = WRITES_IDX_MAP.get(channel, idx)
            key = dict(zip(WRITE_KEY, (thread_id, checkpoint_ns, checkpoint_id, task_id, write_idx)))
            typed = self.serde.dumps_typed(value)
            for doc in with_checksum(value_documents(key, typed, self.chunk_bytes), typed[1]):
                ident = {"_id": key_id(thread_id, checkpoint_ns, checkpoint_id, task_id, write_idx, doc["chunk"])}
                full = {**doc, "channel": channel, "task_path": task_path, **expiry}
                if write_idx < 0:
                    ops.append(ReplaceOne(ident, full, upsert=True))
                else:
                    ops.append(UpdateOne(ident, {"$setOnInsert": full}, upsert=True))
        lease.check_self_fence(thread_id)
        yield Upsert(self.collections.writes, ops)
        yield from self._spread_expiry(thread_id, expiry)

    # -- thread maintenance -----------------------------------------------------

    def _delete_thread_plan(self, thread_id: str) -> Plan:
        require_str("thread_id", thread_id)
        for coll in self.collections.per_thread:
            yield DeleteMany(coll, {"thread_id": thread_id})
        self._expiries.forget(thread_id)
        self._locations.forget_thread(thread_id)

    def _sweep_expired_plan(self) -> Plan:
        """Apply the TTL strategy to at most ``sweep_limit`` expired threads (by thread id; a swept thread no longer matches).

        ``delete`` deletes each whole. ``keep_latest`` prunes each as ``prune(strategy="keep_latest")``
        does (each namespace's latest checkpoint and what its DeltaChannels replay stay, with their writes),
        runs the ``observe_sweep_prunes`` observers with the root checkpoints whose tasks finished, then
        removes the thread's expiry: it expires again ``ttl`` after its next write.
        """
        # Without a TTL of its own a saver deletes what other savers' TTL expired, as ``ttl=`` seconds does.
        config = self.ttl_config or TTLConfig(seconds=0)
        now, limit = lease.utcnow(), config.sweep_limit
        pipeline: list[dict[str, Any]] = [
            {"$match": {"expire_at": {"$lte": now}}},
            {"$group": {"_id": "$thread_id"}},  # no accumulator: FerretDB implements few
            {"$sort": {"_id": 1}},
        ]
        expired = yield Aggregate(self.collections.checkpoints, pipeline + ([{"$limit": limit}] if limit else []))
        threads = sorted(d["_id"] for d in expired)
        if config.strategy == "delete":
            for thread_id in threads:
                yield from self._delete_thread_plan(thread_id)
            return threads
        if threads:
            by_ns = yield from self._keep_latest_plan(threads)
            for thread_id in threads:
                finished = _finished_root_checkpoints(by_ns.get((thread_id, ""), {}))
                for forget in self._prune_observers:
                    yield from forget(thread_id, finished)
            for coll in self.collections.per_thread:
                yield UpdateMany(coll, {"thread_id": {"$in": threads}}, {"$unset": {"expire_at": ""}})
            for thread_id in threads:
                self._expiries.forget(thread_id)
        return threads

    def _copy_thread_plan(self, source_thread_id: str, target_thread_id: str) -> Plan:
        """Copy every document of the source thread, in every per-thread collection, to an empty target.

        Raises:
            InvalidInputError: an id is not a string, or both are the same.
            ThreadExistsError: the target has documents in some per-thread collection; nothing was written.
        """
        require_str("source_thread_id", source_thread_id)
        require_str("target_thread_id", target_thread_id)
        if source_thread_id == target_thread_id:
            raise InvalidInputError("copy_thread needs two different thread ids")
        names = self.collections.per_thread
        found = yield Gather(tuple(Find(c, {"thread_id": target_thread_id}, {"_id": 1}, limit=1) for c in names))
        holding = tuple(c for c, docs in zip(names, found) if docs)
        if holding:
            raise ThreadExistsError(
                f"copy_thread: thread {target_thread_id!r} already has documents (in {', '.join(holding)}), and a "
                f"copy onto it would mix two threads' histories; nothing was written. Delete it first with "
                f"delete_thread({target_thread_id!r}), or copy to another thread id",
                thread_id=target_thread_id,
                collections=holding,
            )
        expiry = self._write_expiry(target_thread_id)
        keyed = {  # the collections whose _id is the document's key: a copy gets the _id of its own key
            self.collections.checkpoints: CHECKPOINT_KEY,
            self.collections.blobs: (*BLOB_KEY, "chunk"),
            self.collections.writes: (*WRITE_KEY, "chunk"),
        }
        for coll in names:
            docs = yield Find(coll, {"thread_id": source_thread_id}, {"_id": 0})
            copies = [{**d, "thread_id": target_thread_id} for d in docs]
            for copy in copies:
                copy.pop("expire_at", None)
                copy.update(expiry)
                if coll in keyed:
                    copy["_id"] = key_id(*(copy.get(f) for f in keyed[coll]))
            yield InsertMany(coll, copies)
        if expiry:  # the target was empty: every document of it is a copy stamped just now
            self._expiries.raise_to(target_thread_id, expiry["expire_at"], spread=True)

    def _chain_docs(self, thread_ids: list[str]) -> Plan:
        docs = yield Find(self.collections.checkpoints, {"thread_id": {"$in": thread_ids}}, _CHAIN_FIELDS)
        by_ns: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
        for d in docs:
            by_ns[(d["thread_id"], d["checkpoint_ns"])][d["checkpoint_id"]] = d
        return by_ns

    def _delete_checkpoints(self, by_ns: Mapping[tuple[str, str], Mapping[str, Any]], keep: Mapping[tuple[str, str], set[str]]) -> Plan:
        """Delete every checkpoint of ``by_ns`` not in ``keep``, with its writes and the blobs only it referenced
        (a value it holds that a kept checkpoint references moves to blobs first)."""
        for (thread_id, ns), docs in by_ns.items():
            kept = keep.get((thread_id, ns), set())
            doomed = [cid for cid in docs if cid not in kept]
            if not doomed:
                continue
            scope = {"thread_id": thread_id, "checkpoint_ns": ns}
            yield from self._rehome_held_values(thread_id, ns, docs, kept, set(doomed))
            yield DeleteMany(self.collections.checkpoints, {**scope, "checkpoint_id": {"$in": doomed}})
            yield DeleteMany(self.collections.writes, {**scope, "checkpoint_id": {"$in": doomed}})
            live = {(e["c"], e["v"]) for cid in kept for e in docs[cid].get("values", ())}
            dead = {(e["c"], e["v"]) for cid in doomed for e in docs[cid].get("values", ())} - live
            if dead:
                yield DeleteMany(
                    self.collections.blobs,
                    {**scope, "$or": [{"channel": c, "version": v} for c, v in sorted(dead, key=repr)]},
                )

    def _rehome_held_values(
        self, thread_id: str, ns: str, docs: Mapping[str, Any], kept: set[str], doomed: set[str]
    ) -> Plan:
        """Before checkpoints go: write to blobs the values they hold inline that a kept checkpoint references
        (``HOLDER``), then drop those references, so the kept checkpoints say the values are in blobs.

        A process that still remembers the old holder (``ValueLocations``) may write one more reference
        to it: readers look a value up in blobs when its holder is gone.
        """
        references = references_to(doomed, docs, kept)
        if not references:
            return
        entries = [e for held in references.values() for e in held]
        holders = {e[HOLDER] for e in entries}
        ids = [key_id(thread_id, ns, cid) for cid in sorted(holders) + list(references)]
        found = yield Find(self.collections.checkpoints, {"_id": {"$in": ids}}, _HOLDER_FIELDS)
        yield from self._move_to_blobs(thread_id, [d for d in found if d["checkpoint_id"] in holders], entries)
        unlinked = [
            UpdateOne(
                {"_id": key_id(thread_id, ns, d["checkpoint_id"])}, {"$set": {"values": unlinked_values(d, doomed)}}, upsert=False
            )
            for d in found
            if d["checkpoint_id"] not in holders
        ]
        yield Upsert(self.collections.checkpoints, unlinked)
        self._locations.forget_thread(thread_id)

    def _move_to_blobs(self, thread_id: str, holders: list[dict[str, Any]], references: list[dict[str, Any]]) -> Plan:
        """Write to blobs the values the ``holders`` documents hold inline that ``references`` (entries) reference."""
        wanted = {(e[CHANNEL], e[VERSION]) for e in references}
        expiry = self._write_expiry(thread_id)
        ops: list[UpdateOne] = []
        for ref, typed in inline_values(self.collections.checkpoints, holders).items():
            if ref[2:] in wanted:
                ops += self._blob_upserts(ref, typed, expiry)
        if ops:
            yield Upsert(self.collections.blobs, ops)
            yield from self._spread_expiry(thread_id, expiry)

    def _prune_plan(self, thread_ids: Sequence[str], strategy: str) -> Plan:
        ids = require_str_list("thread_ids", thread_ids)
        if strategy == "delete":
            for t in ids:
                yield from self._delete_thread_plan(t)
            return
        if strategy != "keep_latest":
            raise InvalidInputError(f'unknown prune strategy {strategy!r}; use "keep_latest" or "delete"')
        if ids:
            yield from self._keep_latest_plan(ids)

    def _keep_latest_plan(self, ids: list[str]) -> Plan:
        """Prune the threads to each namespace's latest checkpoint; returns their checkpoints as they were."""
        by_ns = yield from self._chain_docs(ids)
        keep = {}
        for key, docs in by_ns.items():
            latest = max(docs)
            # Keep the ancestors a DeltaChannel of the latest checkpoint still replays.
            keep[key] = {latest, *_delta_dependencies(docs, latest)}
        yield from self._delete_checkpoints(by_ns, keep)
        return by_ns

    def _delete_for_runs_plan(self, run_ids: Sequence[str]) -> Plan:
        runs = require_str_list("run_ids", run_ids)
        if not runs:
            return
        hits = yield Find(self.collections.checkpoints, {"metadata.run_id": {"$in": runs}}, {"_id": 0, "thread_id": 1})
        threads = sorted({d["thread_id"] for d in hits})
        if not threads:
            return
        by_ns = yield from self._chain_docs(threads)
        keep: dict[tuple[str, str], set[str]] = {}
        for key, docs in by_ns.items():
            keep[key] = {cid for cid, d in docs.items() if (d.get("metadata") or {}).get("run_id") not in runs}
            for cid in keep[key]:
                broken = [a for a in _delta_dependencies(docs, cid) if a not in keep[key]]
                if broken:
                    run = docs[broken[0]]["metadata"].get("run_id")
                    raise DeltaChainError(
                        f"deleting run {run!r} would cut the DeltaChannel history of thread {key[0]!r} "
                        f"(checkpoint {cid} replays writes of checkpoint {broken[0]}); nothing was deleted. "
                        "Delete the later runs too, or the whole thread with delete_thread()"
                    )
        yield from self._delete_checkpoints(by_ns, keep)

    # -- DeltaChannel -----------------------------------------------------------

    def _delta_history_plan(self, config: RunnableConfig, channels: Sequence[str]) -> Plan:
        """Writes and seed per channel with a bounded number of queries.

        1. the target checkpoint and its newest ancestors in one query (more
        pages, sized from ``counters_since_delta_snapshot``, only for a longer
        chain or interleaved forks); 2. the channels' writes at the chain's
        checkpoints, beside 3. the seeds' values (in the checkpoints holding
        them inline, or in blobs). With ``get_tuple`` (3), a load stays within
        6 commands even when a snapshot seeds the channel.
        """
        thread_id, checkpoint_ns, checkpoint_id = _thread_ns(config)
        channels = require_str_list("channels", channels)
        if not channels:
            return {}
        scope = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
        result: dict[str, DeltaChannelHistory] = {c: {"writes": []} for c in channels}
        first = yield from self._target_page(scope, checkpoint_id)
        if not first:
            return result
        chain, seeds = yield from self._walk_to_seeds(scope, first, channels)
        writes, seeded = yield from self._writes_and_seeds(scope, chain, seeds, channels)
        for channel in channels:
            seed_id = seeds[channel][0] if channel in seeds else None
            result[channel]["writes"].extend(_writes_since_seed(chain, seed_id, writes, channel))
        for channel, typed in seeded.items():
            if typed is not None:
                result[channel]["seed"] = self.serde.loads_typed(typed)
        return result

    def _target_page(self, scope: Mapping[str, str], checkpoint_id: str | None) -> Plan:
        """The first page of a chain walk: the target checkpoint (``checkpoint_id``, else the latest) and its newest
        ancestors; [] when the target does not exist."""
        # Checkpoint ids sort by creation time, so every ancestor's id is below the target's:
        # the target and its newest ancestors come in one query.
        bound = {"checkpoint_id": {"$lte": checkpoint_id}} if checkpoint_id else {}
        first = yield self._chain_query(scope, bound, FIRST_CHAIN_PAGE)
        if first and checkpoint_id and first[0]["checkpoint_id"] != checkpoint_id:
            return []
        return first

    def _writes_and_seeds(
        self, scope: Mapping[str, str], chain: list[str], seeds: Mapping[str, tuple[str, dict[str, Any]]], channels: list[str]
    ) -> Plan:
        """The pending writes to ``channels`` at the chain's checkpoints, by checkpoint id, and the serialized value
        of each seed, by channel (None when it cannot be found), read side by side."""
        writes_query = None
        if chain:
            where = {**scope, "checkpoint_id": {"$in": chain}, "channel": {"$in": channels}}
            writes_query = Find(self.collections.writes, where, _VALUE_FIELDS)
        # Each seed is inline in its chain checkpoint, in the checkpoint it references, or in blobs: looked
        # up beside the writes, as values of a stand-in document that holds none itself.
        stand_in = {**scope, "checkpoint_id": None, "values": [as_reference(e, cid) for cid, e in seeds.values()]}
        found, values = yield from self._values_with(writes_query, [stand_in])
        # the writes query names one namespace: its writes are told apart by checkpoint id alone
        writes = {key[2]: rows for key, rows in self._group_writes(found).items()} if chain else {}
        return writes, {channel: values.get(value_key(stand_in, e)) for channel, (_, e) in seeds.items()}

    def _chain_query(self, scope: Mapping[str, str], bound: Mapping[str, Any], size: int) -> Find:
        """A page of a chain walk: the checkpoints of ``scope`` within ``bound``, newest first, their links only."""
        return Find(self.collections.checkpoints, {**scope, **bound}, _CHAIN_FIELDS, [("checkpoint_id", -1)], size)

    def _walk_to_seeds(self, scope: Mapping[str, str], first: list[dict[str, Any]], channels: list[str]) -> Plan:
        """Walk up from the target (``first[0]``, the newest of the first page) to each channel's seed, the nearest
        ancestor that stores its value, or to the end of the chain.

        Returns:
            ``(chain, seeds)``: the ids of the ancestors walked, newest first; per channel found, the id of its
            seed and the seed's entry.
        """
        target = first[0]
        by_id = {d["checkpoint_id"]: d for d in first[1:]}
        exhausted = len(first) < FIRST_CHAIN_PAGE
        pages = _ChainPages(by_id, first[-1]["checkpoint_id"], _next_chain_page(target, channels), exhausted)
        chain: list[str] = []
        seeds: dict[str, tuple[str, dict[str, Any]]] = {}
        remaining = set(channels)
        cursor_id = target.get("parent_checkpoint_id")
        while cursor_id and remaining:
            doc = yield from self._ancestor(scope, pages, cursor_id)
            if doc is None:
                break
            chain.append(cursor_id)
            for entry in doc.get("values", ()):
                if entry[CHANNEL] in remaining:
                    seeds[entry[CHANNEL]] = (cursor_id, entry)
                    remaining.discard(entry[CHANNEL])
            cursor_id = doc.get("parent_checkpoint_id")
        return chain, seeds

    def _ancestor(self, scope: Mapping[str, str], pages: _ChainPages, checkpoint_id: str) -> Plan:
        """The chain document of ``checkpoint_id``, reading older pages until it is among them; None when no
        older checkpoint is left (the chain has a gap)."""
        while checkpoint_id not in pages.by_id:
            if pages.exhausted:
                return None
            older = yield self._chain_query(scope, {"checkpoint_id": {"$lt": pages.oldest}}, pages.size)
            if not older:
                return None
            pages.add(older)
        return pages.by_id[checkpoint_id]


@dataclass
class _ChainPages:
    """What a chain walk has read of a namespace's checkpoints, by id, and where its next page starts: below
    ``oldest``, ``size`` checkpoints (doubled after each page), unless a short page left nothing older."""

    by_id: dict[str, dict[str, Any]]
    oldest: str
    size: int
    exhausted: bool

    def add(self, page: list[dict[str, Any]]) -> None:
        self.by_id.update((d["checkpoint_id"], d) for d in page)
        self.oldest = page[-1]["checkpoint_id"]
        self.exhausted = len(page) < self.size
        self.size *= 2


def _next_chain_page(target: Mapping[str, Any], channels: list[str]) -> int:
    """The size of the chain walk's second page: enough for the ancestors back to the channels' last snapshot
    (``counters_since_delta_snapshot``), at least ``FIRST_CHAIN_PAGE``."""
    counters = (target.get("metadata") or {}).get("counters_since_delta_snapshot") or {}
    since_snapshot = (int(v[1]) for k, v in counters.items() if unescape_key(k) in channels)
    return max(FIRST_CHAIN_PAGE, 2 + max(since_snapshot, default=0))


def _writes_since_seed(chain: list[str], seed_id: str | None, writes: Mapping[str, list], channel: str) -> list:
    """The pending writes to ``channel`` a DeltaChannel replays over its seed: those at the chain's checkpoints
    from the seed's (without a seed, the oldest walked) to the target's parent, oldest first.

    Args:
        chain: the ids of the ancestors walked, newest first.
        seed_id: the id of the channel's seed, None without one.
        writes: the pending writes at the chain's checkpoints, by checkpoint id.
        channel: the channel.
    """
    stop = chain.index(seed_id) if seed_id is not None else len(chain) - 1
    return [w for cid in reversed(chain[: stop + 1]) for w in writes.get(cid, []) if w[1] == channel]


def next_version(current: str | int | float | None) -> str:
    """Unique, sortable channel version: a zero-padded counter plus random bits.

    Two branches forked from one checkpoint reach the same counter but never
    the same version, so their stored values never collide.

    >>> next_version(None) < next_version("00000000000000000000000000000001.ab")
    True
    """
    if current is None:
        counter = 0
    elif isinstance(current, str):
        counter = int(current.split(".")[0])
    else:
        counter = int(current)
    return f"{counter + 1:032}.{os.urandom(8).hex()}"
