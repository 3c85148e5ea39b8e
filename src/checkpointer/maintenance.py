"""``ThreadMaintenance``: what is done to whole threads: delete, copy, prune, sweep the expired, as plans."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pymongo import UpdateOne

from .._bson import require_str, require_str_list, unescape_key
from ..errors import DeltaChainError, InvalidInputError, ThreadExistsError
from ..storage.format import StorageFormat
from ..storage.plans import lease
from ..storage.plans.requests import Aggregate, DeleteMany, Find, Gather, InsertMany, Plan, UpdateMany, Upsert, ask
from ..storage.schema import BLOB_KEY, WRITE_KEY, CollectionNames, key_filter, keys_filter
from ..storage.thread_summaries import NOT_SUMMARY, pruned_update
from .documents import (
    CHANNEL,
    CHECKPOINT_KEY,
    HOLDER,
    VERSION,
    inline_values,
    key_id,
    references_to,
    stored_channels,
    unlinked_values,
)
from .expiry import ThreadExpiry
from .hooks import SaverHooks
from .remembered import ValueLocations
from .store import CHAIN_FIELDS, HOLDER_FIELDS, blob_upserts
from .ttl import TTLConfig


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


def _finished_root_checkpoints(root: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The root checkpoints whose tasks finished: all but the latest and the one it continues (``origin``).

    A task prepared from any other checkpoint ran in a step that a later checkpoint records (or on a branch
    the latest does not continue): a resume from the latest never runs it again.
    """
    if not root:
        return []
    latest = root[max(root)]
    return sorted(set(root) - {latest["checkpoint_id"], latest.get("origin")})


def _pruned_summaries(
    by_ns: Mapping[tuple[str, str], Mapping[str, Any]], keep: Mapping[tuple[str, str], set[str]]
) -> list[UpdateOne]:
    """The summary updates of the threads whose root checkpoints ``by_ns`` loses to the checkpoints not in ``keep``."""
    updates = []
    for (thread_id, ns), docs in by_ns.items():
        kept = keep.get((thread_id, ns), set()) & set(docs)
        if not ns and len(kept) < len(docs):
            latest = max(kept, default="")
            updates.append(pruned_update(thread_id, len(docs) - len(kept), None if latest == max(docs) else latest))
    return updates


class ThreadMaintenance:
    """The plans that delete, copy, prune and sweep whole threads, in every per-thread collection.

    The checkpointer's own collections are three of those; the others (the journal's, formats 2 and 3's ordinals) are
    what the database declares (``thread_collections.py``), read again before a thread is deleted or copied.

    Args:
        collections: the checkpointer's collections.
        storage_format: the database's format check, which knows the per-thread collections.
        chunk_bytes: serialized bytes per blob document (a pruned checkpoint's values may move to blobs).
        expiry: the threads' expiry: forgotten with a thread, set on a copy.
        locations: where this process remembers each checkpoint's values are, forgotten with them.
        hooks: what the saver's other parts observe (a prune's finished tasks).
        settled: a thread's plan that returns once what this process's runs of it left in flight is done.
    """

    def __init__(
        self,
        collections: CollectionNames,
        storage_format: StorageFormat,
        chunk_bytes: int,
        expiry: ThreadExpiry,
        locations: ValueLocations,
        hooks: SaverHooks,
        settled: Callable[[str], Plan[None]],
    ) -> None:
        self.collections = collections
        self.storage_format = storage_format
        self.chunk_bytes = chunk_bytes
        self.expiry = expiry
        self.locations = locations
        #: Its ``sweep_prunes`` drop what a pruned thread's finished tasks left (``observe_sweep_prunes``).
        self.hooks = hooks
        self.settled = settled

    def delete_thread_plan(self, thread_id: str) -> Plan[None]:
        """See ``MongoDBCheckpointer.delete_thread``: the per-thread collections read, then one ``deleteMany`` each."""
        require_str("thread_id", thread_id)
        yield from self._delete_threads_plan([thread_id])

    def _checkpoints_last(self, names: Sequence[str]) -> list[str]:
        """``names`` in the order a thread is deleted or copied: the others' collections (the journal's) first, then
        writes, blobs and checkpoints. Cut short anywhere, what is left is still a thread whose recorded effects
        are all there: a thread id never meets journal entries without its checkpoints, and a retry completes."""
        own = (self.collections.writes, self.collections.blobs, self.collections.checkpoints)
        return [n for n in names if n not in own] + [n for n in own if n in names]

    def _delete_threads_plan(self, thread_ids: list[str]) -> Plan[None]:
        names = self._checkpoints_last((yield from self.storage_format.thread_collections_plan()))
        for thread_id in thread_ids:
            for coll in names:
                yield DeleteMany(coll, {"thread_id": thread_id})
            self.expiry.forget(thread_id)
            self.locations.forget_thread(thread_id)

    def sweep_expired_plan(self) -> Plan[list[str]]:
        """Apply the TTL strategy to at most ``sweep_limit`` expired threads (by thread id; a swept thread no longer
        matches).

        ``delete`` deletes each whole. ``keep_latest`` prunes each as ``prune(strategy="keep_latest")``
        does (each namespace's latest checkpoint and what its DeltaChannels replay stay, with their writes),
        runs the ``observe_sweep_prunes`` observers with the root checkpoints whose tasks finished, then
        removes the thread's expiry: it expires again ``ttl`` after its next write.
        """
        # Without a TTL of its own a saver deletes what other savers' TTL expired, as ``ttl=`` seconds does.
        config = self.expiry.ttl_config or TTLConfig(seconds=0)
        now, limit = lease.utcnow(), config.sweep_limit
        pipeline: list[dict[str, Any]] = [
            {"$match": {"expire_at": {"$lte": now}}},
            {"$group": {"_id": "$thread_id"}},  # no accumulator: FerretDB implements few
            {"$sort": {"_id": 1}},
        ]
        expired = yield from ask(
            Aggregate(self.collections.checkpoints, pipeline + ([{"$limit": limit}] if limit else []))
        )
        threads = sorted(d["_id"] for d in expired)
        if config.strategy == "delete":
            if threads:
                yield from self._delete_threads_plan(threads)
            return threads
        if threads:
            by_ns = yield from self._keep_latest_plan(threads)
            for thread_id in threads:
                finished = _finished_root_checkpoints(by_ns.get((thread_id, ""), {}))
                for forget in self.hooks.sweep_prunes:
                    yield from forget(thread_id, finished)
            for coll in (yield from self.storage_format.thread_collections_plan()):
                yield UpdateMany(coll, {"thread_id": {"$in": threads}}, {"$unset": {"expire_at": ""}})
            for thread_id in threads:
                self.expiry.forget(thread_id)
        return threads

    def copy_thread_plan(self, source_thread_id: str, target_thread_id: str) -> Plan[None]:
        """Copy every document of the source thread, in every per-thread collection, to an empty target.

        What this process's runs of the source left in flight (an effect still running in a thread its node no
        longer waited for, a record still being written) ends first, so the copy holds its outcome. The journal's
        entries are copied first and the checkpoints last (``_checkpoints_last``), under a note in the metadata
        collection naming the copy: a copy cut short is completed by the same call again.

        Raises:
            InvalidInputError: an id is not a string, or both are the same.
            ThreadExistsError: the target has documents in some per-thread collection, and is not a copy of
                this source cut short; nothing was written.
        """
        require_str("source_thread_id", source_thread_id)
        require_str("target_thread_id", target_thread_id)
        if source_thread_id == target_thread_id:
            raise InvalidInputError("copy_thread needs two different thread ids")
        yield from self.settled(source_thread_id)
        names = self._checkpoints_last((yield from self.storage_format.thread_collections_plan()))
        found = yield from ask(
            Gather(tuple(Find(c, {"thread_id": target_thread_id}, {"_id": 1}, limit=1) for c in names))
        )
        holding = tuple(c for c, docs in zip(names, found, strict=True) if docs)
        note = {"_id": key_id("copy_thread", target_thread_id), "source": source_thread_id}
        if holding and not (yield from ask(Find(self.collections.metadata, note, {"_id": 1}, limit=1))):
            raise ThreadExistsError(
                f"copy_thread: thread {target_thread_id!r} already has documents (in {', '.join(holding)}), and a "
                f"copy onto it would mix two threads' histories; nothing was written. Delete it first with "
                f"delete_thread({target_thread_id!r}), or copy to another thread id",
                thread_id=target_thread_id,
                collections=holding,
            )
        yield Upsert(self.collections.metadata, [UpdateOne({"_id": note["_id"]}, {"$set": note}, upsert=True)])
        yield from self._copy_documents_plan(names, source_thread_id, target_thread_id, resumed=bool(holding))
        yield DeleteMany(self.collections.metadata, {"_id": note["_id"]})

    def _copy_documents_plan(
        self, names: list[str], source_thread_id: str, target_thread_id: str, resumed: bool
    ) -> Plan[None]:
        """Insert a copy of each document of the source thread in ``names``, in order; a document copied before
        (the same key: the copy was ``resumed``) is left as it is, and the expiry then spread over it."""
        expiry = self.expiry.of_write(target_thread_id)
        keyed = {  # the collections whose _id is the document's key: a copy gets the _id of its own key
            self.collections.checkpoints: CHECKPOINT_KEY,
            self.collections.blobs: (*BLOB_KEY, "chunk"),
            self.collections.writes: (*WRITE_KEY, "chunk"),
        }
        threads = self.storage_format.thread_collections
        for coll in names:
            docs = yield from ask(Find(coll, {"thread_id": source_thread_id}, {"_id": 0}))
            copies = [threads.copy(coll, d, target_thread_id) for d in docs]  # a journal entry: the target's key
            for copy in copies:
                copy.pop("expire_at", None)
                copy.update(expiry)
                if coll in keyed:
                    copy["_id"] = key_id(*(copy.get(f) for f in keyed[coll]))
            yield InsertMany(coll, copies)
        if expiry and resumed:
            yield from self.expiry.spread(target_thread_id, expiry)
        elif expiry:  # the target was empty: every document of it is a copy written just now
            self.expiry.spread_to(target_thread_id, expiry["expire_at"])

    def _chain_docs(self, thread_ids: list[str]) -> Plan[dict[tuple[str, str], dict[str, dict[str, Any]]]]:
        query = {"thread_id": {"$in": thread_ids}, "checkpoint_ns": NOT_SUMMARY}
        docs = yield from ask(Find(self.collections.checkpoints, query, CHAIN_FIELDS))
        by_ns: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
        for d in docs:
            by_ns[(d["thread_id"], d["checkpoint_ns"])][d["checkpoint_id"]] = d
        return by_ns

    def _delete_checkpoints(
        self, by_ns: Mapping[tuple[str, str], Mapping[str, Any]], keep: Mapping[tuple[str, str], set[str]]
    ) -> Plan[None]:
        """Delete every checkpoint of ``by_ns`` not in ``keep``, with its writes and the blobs only it referenced
        (a value it holds that a kept checkpoint references moves to blobs first), and count the root ones out
        of their thread's summary."""
        summaries = _pruned_summaries(by_ns, keep)
        for (thread_id, ns), docs in by_ns.items():
            kept = keep.get((thread_id, ns), set())
            doomed = [cid for cid in docs if cid not in kept]
            if not doomed:
                continue
            scope = {"thread_id": thread_id, "checkpoint_ns": ns}
            yield from self._rehome_held_values(thread_id, ns, docs, kept, set(doomed))
            yield DeleteMany(self.collections.checkpoints, {**scope, "checkpoint_id": {"$in": doomed}})
            yield DeleteMany(self.collections.writes, {**scope, "checkpoint_id": {"$in": doomed}})
            live = {(e[CHANNEL], e[VERSION]) for cid in kept for e in docs[cid].get("values", ())}
            dead = {(e[CHANNEL], e[VERSION]) for cid in doomed for e in docs[cid].get("values", ())} - live
            if dead:
                yield DeleteMany(
                    self.collections.blobs,
                    {**scope, "$or": [{"channel": c, "version": v} for c, v in sorted(dead, key=repr)]},
                )
        if summaries:
            yield Upsert(self.collections.checkpoints, summaries)

    def _rehome_held_values(
        self, thread_id: str, ns: str, docs: Mapping[str, Any], kept: set[str], doomed: set[str]
    ) -> Plan[None]:
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
        keys = [(thread_id, ns, cid) for cid in sorted(holders) + list(references)]
        found = yield from ask(Find(self.collections.checkpoints, keys_filter(keys), HOLDER_FIELDS))
        yield from self._move_to_blobs(thread_id, [d for d in found if d["checkpoint_id"] in holders], entries)
        unlinked = [
            UpdateOne(
                key_filter(thread_id, ns, d["checkpoint_id"]),
                {"$set": {"values": unlinked_values(d, doomed)}},
                upsert=False,
            )
            for d in found
            if d["checkpoint_id"] not in holders
        ]
        yield Upsert(self.collections.checkpoints, unlinked)
        self.locations.forget_thread(thread_id)

    def _move_to_blobs(
        self, thread_id: str, holders: list[dict[str, Any]], references: list[dict[str, Any]]
    ) -> Plan[None]:
        """Write to blobs the values the ``holders`` documents hold inline that ``references`` (entries) reference."""
        wanted = {(e[CHANNEL], e[VERSION]) for e in references}
        expiry = self.expiry.of_write(thread_id)
        ops: list[UpdateOne] = []
        for ref, typed in inline_values(self.collections.checkpoints, holders).items():
            if ref[2:] in wanted:
                ops += blob_upserts(ref, typed, expiry, self.chunk_bytes)
        if ops:
            yield Upsert(self.collections.blobs, ops)
            yield from self.expiry.spread(thread_id, expiry)

    def prune_plan(self, thread_ids: Sequence[str], strategy: str) -> Plan[None]:
        """See ``MongoDBCheckpointer.prune``."""
        ids = require_str_list("thread_ids", thread_ids)
        if strategy == "delete":
            if ids:
                yield from self._delete_threads_plan(ids)
            return
        if strategy != "keep_latest":
            raise InvalidInputError(f'unknown prune strategy {strategy!r}; use "keep_latest" or "delete"')
        if ids:
            yield from self._keep_latest_plan(ids)

    def _keep_latest_plan(self, ids: list[str]) -> Plan[dict[tuple[str, str], dict[str, dict[str, Any]]]]:
        """Prune the threads to each namespace's latest checkpoint; returns their checkpoints as they were."""
        by_ns = yield from self._chain_docs(ids)
        keep: dict[tuple[str, str], set[str]] = {}
        for key, docs in by_ns.items():
            latest = max(docs)
            # Keep the ancestors a DeltaChannel of the latest checkpoint still replays.
            keep[key] = {latest, *_delta_dependencies(docs, latest)}
        yield from self._delete_checkpoints(by_ns, keep)
        return by_ns

    def delete_for_runs_plan(self, run_ids: Sequence[str]) -> Plan[None]:
        """See ``MongoDBCheckpointer.delete_for_runs``: refuses (``DeltaChainError``) before deleting anything."""
        runs = require_str_list("run_ids", run_ids)
        if not runs:
            return
        hits = yield from ask(
            Find(self.collections.checkpoints, {"metadata.run_id": {"$in": runs}}, {"_id": 0, "thread_id": 1})
        )
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

