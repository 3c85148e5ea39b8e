"""``CheckpointStore``: how checkpoints, their values and their pending writes are read and written, as plans.

Each of LangGraph's read and write methods of the saver has a plan here (a generator yielding requests of
``storage.plans.requests``); ``MongoDBCheckpointer`` runs it with its sync face or its native async face. Every plan
checks its input before it yields its first request, so bad input never reaches the server. The serializer
is passed per call: LangGraph's strict msgpack mode clones the saver with another serde (``with_allowlist``)
over the same store.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from pymongo import ReplaceOne, UpdateOne

from .. import _langgraph
from .._bson import (
    assemble_values,
    containment_filter,
    key_id,
    require_str,
    require_str_list,
    require_thread_id,
    unescape_key,
    value_documents,
)
from ..errors import InvalidInputError
from ..storage.plans.requests import Emit, Find, Gather, Plan, Request, Upsert, ask
from ..storage.schema import BLOB_KEY, WRITE_KEY, CollectionNames, key_filter, keys_filter
from ..storage.serde import StoredAt, load_stored
from ..storage.thread_summaries import NOT_SUMMARY, require_checkpoint_ns, summary_update
from .documents import (
    CHANNEL,
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
    check_checkpoint,
    check_checkpoints,
    check_values,
    checkpoint_document,
    checkpoint_key,
    inline_values,
    lay_out_values,
    load_channel_values,
    loaded_metadata,
    locations_of,
    stored_metadata,
    stored_value,
    value_key,
    values_elsewhere,
    with_checksum,
)
from .expiry import ThreadExpiry
from .hooks import SaverHooks
from .remembered import ValueLocations
from .roots import RootCheckpoints

#: Checkpoints fetched with the target by ``get_delta_channel_history``: the whole chain in one query
#: unless more than this many checkpoints separate the target from its channels' seeds.
FIRST_CHAIN_PAGE = 128


#: Checkpoints fetched per page by ``list``: writes and values held elsewhere cost a query per page, never per
#: checkpoint.
LIST_PAGE = 100
#: The order of ``list``: newest first, then by thread and namespace, so that pages neither skip nor repeat.
_LIST_ORDER = [("checkpoint_id", -1), ("thread_id", -1), ("checkpoint_ns", -1)]

#: What a chain walk reads of a checkpoint: its links and where its values are, never the values.
CHAIN_FIELDS = {
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
HOLDER_FIELDS = {"_id": 0, "thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "values": 1}
# every field: the _id names a document that cannot be read (mongo-java-server refuses {expire_at: 0})
_VALUE_FIELDS = None


def _configurable(config: Any) -> Mapping[str, Any]:
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(configurable, Mapping):
        raise InvalidInputError(
            'config must be a dict with a "configurable" dict, e.g. {"configurable": {"thread_id": "t1"}}'
        )
    return configurable


def _thread_ns(config: Any) -> tuple[str, str, str | None]:
    conf = _configurable(config)
    if "thread_id" not in conf:
        raise InvalidInputError('config["configurable"] has no "thread_id"; pass the thread to read or write')
    thread_id = require_thread_id(conf["thread_id"])
    checkpoint_ns = require_checkpoint_ns(conf.get("checkpoint_ns", ""))
    checkpoint_id = conf.get("checkpoint_id")
    if checkpoint_id is not None:
        require_str("checkpoint_id", checkpoint_id)
    return thread_id, checkpoint_ns, checkpoint_id or None


def _list_query(config: Any, filter: dict[str, Any] | None, before: Any, serde: SerializerProtocol) -> dict[str, Any]:
    """The filter of ``list``: what ``config`` names, ``filter`` on the metadata (each value as ``put`` stores it),
    ids below ``before``'s."""
    query = _config_query(config) if config is not None else {}
    query.setdefault("checkpoint_ns", NOT_SUMMARY)
    if filter:
        query.update(
            containment_filter(
                "metadata", filter, lambda value: stored_value(value, serde.dumps_typed, "a filter value")
            )
        )
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
        query["checkpoint_ns"] = require_checkpoint_ns(conf["checkpoint_ns"])
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


def _side_by_side(*requests: Request[Any] | None) -> Plan[list[Any]]:
    """Send the requests that are not None at once (a ``Gather`` when there are two or more); returns each one's
    result in its place, None for a None request."""
    sent = [r for r in requests if r is not None]
    results = iter((yield Gather(tuple(sent))) if len(sent) > 1 else [(yield sent[0])] if sent else [])
    return [next(results) if r is not None else None for r in requests]


def blob_upserts(
    ref: tuple[Any, ...], typed: tuple[str, bytes], expiry: Mapping[str, Any], chunk_bytes: int
) -> list[UpdateOne]:
    """The upserts that store one value in blobs, chunked (``chunk_bytes`` a document), under value key ``ref``.

    Written once: a value already stored under its version is left as it is.
    """
    return [
        UpdateOne(named, {"$setOnInsert": {**doc, **expiry}}, upsert=True)
        for named, doc in blob_documents(ref, typed, chunk_bytes)
    ]


class CheckpointStore:
    """The saver's reads and writes of checkpoints, values and pending writes, as plans.

    Args:
        collections: where the checkpoints, blobs and writes are.
        chunk_bytes: serialized bytes per document for large values.
        expiry: the threads' expiry, set on every write.
        roots: what root checkpoints tell the journal, noted on every read and write of one.
        locations: where this process remembers each checkpoint's values are.
    """

    def __init__(
        self,
        collections: CollectionNames,
        chunk_bytes: int,
        expiry: ThreadExpiry,
        roots: RootCheckpoints,
        locations: ValueLocations,
        hooks: SaverHooks,
    ) -> None:
        self.collections = collections
        self.chunk_bytes = chunk_bytes
        self.expiry = expiry
        self.roots = roots
        self.locations = locations
        self.hooks = hooks

    # -- reading ----------------------------------------------------------------

    def _load_tuples(self, docs: list[dict[str, Any]], serde: SerializerProtocol) -> Plan[list[CheckpointTuple]]:
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
        writes_query = Find(
            self.collections.writes, branches[0] if len(branches) == 1 else {"$or": branches}, _VALUE_FIELDS
        )
        found_writes, values = yield from self._values_with(writes_query, docs)
        check_values(self.collections.writes, found_writes, WRITE_FIELDS)
        writes = self._group_writes(found_writes, serde)
        for d in docs:
            self.roots.note_read(d["thread_id"], d["checkpoint_ns"], [d])
        self.expiry.saw(docs)
        return [
            self._tuple(d, values, writes.get((d["thread_id"], d["checkpoint_ns"], d["checkpoint_id"]), []), serde)
            for d in docs
        ]

    def _values_with(
        self, first: Find | None, docs: list[dict[str, Any]], channels: Collection[str] | None = None
    ) -> Plan[tuple[Any, dict[tuple[Any, ...], tuple[str, bytes]]]]:
        """Run ``first`` (None: nothing) beside the queries for the values ``docs`` reference but do not hold inline.

        Returns ``(first's result, {value key: (type, bytes)})`` (``first``'s result is None for None: typed ``Any``,
        as each caller knows which it sent). A referenced holder that is gone (``prune`` moved its values to blobs)
        costs one more query, for blobs.
        """
        held, in_blobs = values_elsewhere(docs, channels)
        holders = Find(self.collections.checkpoints, keys_filter(sorted(held)), HOLDER_FIELDS) if held else None
        first_result, holder_docs, blob_docs = yield from _side_by_side(first, holders, self._blobs_query(in_blobs))
        values = inline_values(self.collections.checkpoints, docs)
        values.update(inline_values(self.collections.checkpoints, holder_docs or []))
        values.update(blob_values(self.collections.blobs, blob_docs or []))
        missing = {ref for refs in held.values() for ref in refs if ref not in values}
        if missing:
            found: list[dict[str, Any]] = yield cast(Find, self._blobs_query(missing))  # missing is not empty
            values.update(blob_values(self.collections.blobs, found))
        return first_result, values

    def _blobs_query(self, refs: set[tuple[Any, ...]]) -> Find | None:
        """The query for the blobs of these value keys (None for none)."""
        if not refs:
            return None
        keys = [dict(zip(BLOB_KEY, ref, strict=True)) for ref in sorted(refs, key=repr)]
        return Find(self.collections.blobs, {"$or": keys}, _VALUE_FIELDS)

    def _group_writes(
        self, docs: list[dict[str, Any]], serde: SerializerProtocol
    ) -> dict[tuple[Any, ...], list[PendingWrite]]:
        """Pending writes per checkpoint, in ``writes_sort_key`` order."""
        heads = {tuple(d[f] for f in WRITE_KEY): d for d in docs if d.get("chunk", 0) == 0}
        values = assemble_values(docs, WRITE_KEY)
        check_assembled(self.collections.writes, docs, WRITE_KEY, values)
        # (task_path, task_id, idx, channel, serialized value, where it is stored)
        out: dict[tuple[Any, ...], list[tuple[str, str, int, str, tuple[str, bytes], StoredAt]]] = defaultdict(list)
        for key, typed in values.items():
            head = heads[key]
            at = StoredAt(head["thread_id"], self.collections.writes, head.get("_id"), "data")
            out[key[:3]].append((head.get("task_path", ""), head["task_id"], head["idx"], head["channel"], typed, at))
        return {
            key: [
                (task_id, channel, load_stored(serde, typed, at))
                for path, task_id, idx, channel, typed, at in sorted(
                    rows, key=lambda r: writes_sort_key(r[0], r[1], r[2])
                )
            ]
            for key, rows in out.items()
        }

    def _tuple(
        self,
        doc: dict[str, Any],
        values: Mapping[tuple[Any, ...], tuple[str, bytes]],
        pending: list[PendingWrite],
        serde: SerializerProtocol,
    ) -> CheckpointTuple:
        def loads(typed: tuple[str, bytes], field: str) -> Any:
            return load_stored(
                serde, typed, StoredAt(doc["thread_id"], self.collections.checkpoints, doc.get("_id"), field)
            )

        checkpoint: Checkpoint = loads((doc["checkpoint"]["type"], bytes(doc["checkpoint"]["data"])), "checkpoint.data")
        channel_values = load_channel_values(doc, values, loads)
        return CheckpointTuple(
            config={"configurable": checkpoint_key(doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"])},
            checkpoint={**checkpoint, "channel_values": channel_values},
            metadata=loaded_metadata(doc.get("metadata") or {}, loads),
            parent_config=_parent_config(doc),
            pending_writes=pending,
        )

    def get_tuple_plan(self, config: RunnableConfig, serde: SerializerProtocol) -> Plan[CheckpointTuple | None]:
        """See ``MongoDBCheckpointer.get_tuple``."""
        thread_id, checkpoint_ns, checkpoint_id = _thread_ns(config)
        run_start = _langgraph.root_run_start(config)
        if run_start:
            yield from self.roots.after_thread_held(thread_id)
        query: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
        if checkpoint_id:
            query["checkpoint_id"] = checkpoint_id
        docs: list[dict[str, Any]] = yield Find(self.collections.checkpoints, query, None, [("checkpoint_id", -1)], 1)
        check_checkpoints(self.collections.checkpoints, docs)
        docs = [d for d in docs if not self.expiry.expired(d)]
        if not checkpoint_ns and not checkpoint_id:
            self.roots.read_latest(thread_id)
        if _langgraph.root_run_start(config):
            self.roots.run_read(thread_id, docs[0]["checkpoint_id"] if docs else None, chosen=bool(checkpoint_id))
        tuples = yield from self._load_tuples(docs, serde)
        if docs and checkpoint_id and run_start:
            yield from self.roots.superseded_plan(thread_id, checkpoint_id)
        yield from self.expiry.refresh_on_read(docs)
        if docs:
            self.locations.note(thread_id, checkpoint_ns, docs[0]["checkpoint_id"], locations_of(docs[0]))
        return tuples[0] if tuples else None

    def list_plan(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
        serde: SerializerProtocol,
    ) -> Plan[None]:
        """See ``MongoDBCheckpointer.list``."""
        query = _list_query(config, filter, before, serde)
        _require_limit(limit)
        remaining, after = limit, None
        while remaining is None or remaining > 0:
            page_size = LIST_PAGE if remaining is None else min(LIST_PAGE, remaining)
            page_query = query if after is None else {"$and": [query, after]}
            # One document more than the page tells whether another page exists.
            docs, more = yield from self._list_page(page_query, page_size, remaining is None or remaining > page_size)
            yield from self._emit_tuples(docs, serde)
            if not more:
                return
            if remaining is not None:
                remaining -= len(docs)
            after = _listed_after(docs[-1])

    def _list_page(self, query: dict[str, Any], page_size: int, probe: bool) -> Plan[tuple[list[dict[str, Any]], bool]]:
        """Up to ``page_size`` checkpoint documents in ``list`` order, and whether more follow (known only when
        ``probe`` asks for one document more)."""
        size = page_size + 1 if probe else page_size
        docs = yield from ask(Find(self.collections.checkpoints, query, None, _LIST_ORDER, size))
        check_checkpoints(self.collections.checkpoints, docs)
        return docs[:page_size], len(docs) > page_size

    def _emit_tuples(self, docs: list[dict[str, Any]], serde: SerializerProtocol) -> Plan[None]:
        """Emit the tuples of the checkpoint documents whose thread has not expired."""
        live = [d for d in docs if not self.expiry.expired(d)]
        tuples = yield from self._load_tuples(live, serde)
        yield from self.expiry.refresh_on_read(live)
        for tup in tuples:
            yield Emit(tup)

    # -- writing ----------------------------------------------------------------

    def put_plan(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        serde: SerializerProtocol,
        limits: InlineLimits,
    ) -> Plan[RunnableConfig]:
        """See ``MongoDBCheckpointer.put``: ``limits`` are the saver's ``*_bytes`` attributes.

        A root checkpoint whose store fails breaks the run's chain of stores: effects waiting for it, or for a
        newer one, stop waiting (``RootCheckpoints.store_failed``)."""
        thread_id, checkpoint_ns, parent_id = _thread_ns(config)
        try:
            check_checkpoint(checkpoint, metadata, new_versions)
            checkpoint_id = require_str("checkpoint id", checkpoint.get("id"), allow_empty=False)
            full_metadata = get_checkpoint_metadata(config, metadata)
            metadata_document = stored_metadata(full_metadata, serde.dumps_typed)
            yield from self.roots.after_held(thread_id, checkpoint_ns, checkpoint_id)
            key = checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
            expiry = self.expiry.of_write(thread_id)
            laid_out = self._lay_out(
                (thread_id, checkpoint_ns, checkpoint_id), parent_id, checkpoint, new_versions, serde, limits
            )
            continued = yield from self.roots.continued_origin(thread_id, checkpoint_ns, parent_id, full_metadata)
            skeleton = serde.dumps_typed({k: v for k, v in checkpoint.items() if k != "channel_values"})
            registered = {"checkpoint_id": checkpoint_id, "origin": continued.origin, "completed": continued.completed,
                          "shift": continued.shift}
            yield from self._write_blobs(thread_id, laid_out.blobs, expiry)
            self._fenced(thread_id)  # a run whose lease may have run out writes no checkpoint (no I/O)
            document = checkpoint_document(
                key, parent_id, skeleton, laid_out.entries, metadata_document, checkpoint.get("ts"), continued, expiry
            )
            stored = UpdateOne(key_filter(thread_id, checkpoint_ns, checkpoint_id), {"$set": document}, upsert=True)
            summary = [] if checkpoint_ns else [summary_update(thread_id, checkpoint_id, expiry)]
            request = Upsert(self.collections.checkpoints, [stored, *summary])
            if not checkpoint_ns:  # a sync effect on the event loop this store waits on may send it itself
                self.roots.stored.pend(thread_id, checkpoint_id, request, registered)
            yield request
            self.roots.stored.note(thread_id, checkpoint_ns, [registered], written=True)
            if not checkpoint_ns:
                self.roots.wrote_root(thread_id, checkpoint_id)
            self.locations.note(thread_id, checkpoint_ns, checkpoint_id, laid_out.located)
            yield from self.expiry.spread(thread_id, expiry)
            return {"configurable": key}
        except BaseException as error:
            if not checkpoint_ns and isinstance(checkpoint, dict) and isinstance(checkpoint.get("id"), str):
                self.roots.store_failed(thread_id, checkpoint["id"], error)
            raise

    def _lay_out(
        self,
        key: tuple[str, str, str],
        parent_id: str | None,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        serde: SerializerProtocol,
        limits: InlineLimits,
    ) -> LaidOut:
        """Where each value of a checkpoint being put goes (``lay_out_values``), knowing where this process
        remembers its parent's values are (``ValueLocations``); ``key`` is its thread, namespace and id."""
        parent = self.locations.get(key[0], key[1], parent_id) if parent_id else None
        unchanged = {channel: at for channel, at in (parent or {}).items() if channel not in new_versions}
        return lay_out_values(
            key,
            checkpoint.get("channel_values", {}),
            checkpoint.get("channel_versions", {}),
            unchanged,
            serde.dumps_typed,
            limits,
        )

    def _fenced(self, thread_id: str) -> None:
        """Raise what the run fence raises for a write of ``thread_id`` (``MongoDBCheckpointer``'s ``run_fence``)."""
        if self.hooks.run_fence is not None:
            self.hooks.run_fence(thread_id)

    def _write_blobs(
        self, thread_id: str, blobs: list[tuple[tuple[Any, ...], tuple[str, bytes]]], expiry: Mapping[str, Any]
    ) -> Plan[None]:
        """Store the values a checkpoint being put keeps in blobs (``LaidOut.blobs``), in one command."""
        if blobs:
            self._fenced(thread_id)
            yield Upsert(
                self.collections.blobs,
                [op for ref, typed in blobs for op in blob_upserts(ref, typed, expiry, self.chunk_bytes)],
            )

    def put_writes_plan(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
        serde: SerializerProtocol,
    ) -> Plan[None]:
        """See ``MongoDBCheckpointer.put_writes``."""
        thread_id, checkpoint_ns, checkpoint_id = _thread_ns(config)
        require_str("task_id", task_id)
        require_str("task_path", task_path)
        if not checkpoint_id:
            raise InvalidInputError('put_writes needs config["configurable"]["checkpoint_id"]')
        yield from self.roots.after_task_held(thread_id, task_id)
        expiry = self.expiry.of_write(thread_id)
        ops: list[UpdateOne | ReplaceOne[dict[str, Any]]] = []
        for idx, (channel, value) in enumerate(writes):
            require_str("write channel", channel)
            write_idx = WRITES_IDX_MAP.get(channel, idx)
            key = dict(zip(WRITE_KEY, (thread_id, checkpoint_ns, checkpoint_id, task_id, write_idx), strict=True))
            typed = serde.dumps_typed(value)
            for doc in with_checksum(value_documents(key, typed, self.chunk_bytes), typed[1]):
                ident = key_filter(thread_id, checkpoint_ns, checkpoint_id, task_id, write_idx, doc["chunk"])
                full = {**doc, "channel": channel, "task_path": task_path, **expiry}
                if write_idx < 0:
                    ops.append(ReplaceOne(ident, full, upsert=True))
                else:
                    ops.append(UpdateOne(ident, {"$setOnInsert": full}, upsert=True))
        self._fenced(thread_id)
        yield Upsert(self.collections.writes, ops)
        yield from self.expiry.spread(thread_id, expiry)

    # -- DeltaChannel -----------------------------------------------------------

    def delta_history_plan(
        self, config: RunnableConfig, channels: Sequence[str], serde: SerializerProtocol
    ) -> Plan[dict[str, DeltaChannelHistory]]:
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
        writes, seeded = yield from self._writes_and_seeds(scope, chain, seeds, channels, serde)
        for channel in channels:
            seed_id = seeds[channel][0] if channel in seeds else None
            result[channel]["writes"].extend(_writes_since_seed(chain, seed_id, writes, channel))
        for channel, typed in seeded.items():
            if typed is not None:
                holder = key_id(thread_id, checkpoint_ns, seeds[channel][0])
                at = StoredAt(thread_id, self.collections.checkpoints, holder, f"the value of channel {channel!r}")
                result[channel]["seed"] = load_stored(serde, typed, at)
        return result

    def _target_page(self, scope: Mapping[str, str], checkpoint_id: str | None) -> Plan[list[dict[str, Any]]]:
        """The first page of a chain walk: the target checkpoint (``checkpoint_id``, else the latest) and its newest
        ancestors; [] when the target does not exist."""
        # Checkpoint ids sort by creation time, so every ancestor's id is below the target's:
        # the target and its newest ancestors come in one query.
        bound = {"checkpoint_id": {"$lte": checkpoint_id}} if checkpoint_id else {}
        first = yield from ask(self._chain_query(scope, bound, FIRST_CHAIN_PAGE))
        if first and checkpoint_id and first[0]["checkpoint_id"] != checkpoint_id:
            return []
        return first

    def _writes_and_seeds(
        self,
        scope: Mapping[str, str],
        chain: list[str],
        seeds: Mapping[str, tuple[str, dict[str, Any]]],
        channels: list[str],
        serde: SerializerProtocol,
    ) -> Plan[tuple[dict[str, list[PendingWrite]], dict[str, tuple[str, bytes] | None]]]:
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
        writes = {key[2]: rows for key, rows in self._group_writes(found, serde).items()} if chain else {}
        return writes, {channel: values.get(value_key(stand_in, e)) for channel, (_, e) in seeds.items()}

    def _chain_query(self, scope: Mapping[str, str], bound: Mapping[str, Any], size: int) -> Find:
        """A page of a chain walk: the checkpoints of ``scope`` within ``bound``, newest first, their links only."""
        return Find(self.collections.checkpoints, {**scope, **bound}, CHAIN_FIELDS, [("checkpoint_id", -1)], size)

    def _walk_to_seeds(
        self, scope: Mapping[str, str], first: list[dict[str, Any]], channels: list[str]
    ) -> Plan[tuple[list[str], dict[str, tuple[str, dict[str, Any]]]]]:
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

    def _ancestor(
        self, scope: Mapping[str, str], pages: _ChainPages, checkpoint_id: str
    ) -> Plan[dict[str, Any] | None]:
        """The chain document of ``checkpoint_id``, reading older pages until it is among them; None when no
        older checkpoint is left (the chain has a gap)."""
        while checkpoint_id not in pages.by_id:
            if pages.exhausted:
                return None
            older = yield from ask(self._chain_query(scope, {"checkpoint_id": {"$lt": pages.oldest}}, pages.size))
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


def _writes_since_seed(
    chain: list[str], seed_id: str | None, writes: Mapping[str, list[PendingWrite]], channel: str
) -> list[PendingWrite]:
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
