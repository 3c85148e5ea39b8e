"""Every collection this library writes, and every index it relies on: declared once.

Setup (each storage class creates the indexes of the collections it owns),
``doctor`` and the CLI read this module; nothing else declares an index.

| role | default name | owner | holds |
|---|---|---|---|
| ``checkpoints`` | ``checkpoints`` | checkpointer | one skeleton per checkpoint |
| ``blobs`` | ``checkpoint_blobs`` | checkpointer | one channel value per version |
| ``writes`` | ``checkpoint_writes`` | checkpointer | pending writes |
| ``journal`` | ``activity_journal`` | journal | one entry per effect position |
| ``ordinals`` | ``operation_ordinals`` | none since format 4 | formats 2 and 3's ordinals (read by the upgrade to 4) |
| ``runs`` | ``thread_runs`` | run locks | one run lock per thread |
| ``metadata`` | ``durable_metadata`` | every class; journal | database-wide facts (storage format, input-digest key) |

Every index but the TTL and expiry indexes starts with ``thread_id``, so every per-thread
collection can be sharded on it, and every command names its thread by it: a filter naming one document by its
``_id`` carries the fields that key starts with too (``key_filter``), so a sharded cluster sends it to one shard
(docs/storage.md, "Sharding").

The journal's and the run locks' collections are written with ``w: "majority"`` whatever the client's
write concern (``MAJORITY_WRITTEN``): a record, a claim or a lock that only a primary acknowledged can
be rolled back by a failover, and the next run would then run a completed effect again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel, WriteConcern

from .._bson import key_id

#: The key fields of a stored channel value and of a pending write (``chunk`` follows them).
BLOB_KEY = ("thread_id", "checkpoint_ns", "channel", "version")
WRITE_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx")
#: The fields every key of the checkpointer's documents starts with, in ``_id`` order: the thread (the shard key) and
#: its namespace. A checkpoint's key, a channel value's, a pending write's and a thread summary's each start so.
KEY_PREFIX = ("thread_id", "checkpoint_ns")
#: The key fields of a journal entry: its effect position.
POSITION_FIELDS = ("thread_id", "path", "node", "occurrence", "effect_key")
#: The order of the checkpoints' ``thread_ns_checkpoint`` index: by thread, each thread's root namespace ("")
#: first, latest checkpoint first. A sort in this order is served by the index (the thread lists group in it).
CHECKPOINT_INDEX_ORDER = (("thread_id", ASCENDING), ("checkpoint_ns", ASCENDING), ("checkpoint_id", DESCENDING))


def key_filter(*key: Any) -> dict[str, Any]:
    """The filter naming the one document of ``key`` (its ``KEY_PREFIX`` fields first): its ``_id`` (``key_id``),
    and those fields by equality.

    ``_id`` alone names the document as well (it encodes the key), but a sharded cluster routes a command by its
    shard key only: an upsert whose filter lacks it is refused before MongoDB 7.0 and broadcast to every shard
    since. The fields match what the ``_id`` already says, so the filter matches the same document, or none.

    >>> key_filter("t1", "", "1ef")
    {'_id': '["t1","","1ef"]', 'thread_id': 't1', 'checkpoint_ns': ''}
    """
    return {"_id": key_id(*key), **dict(zip(KEY_PREFIX, key, strict=False))}


def keys_filter(keys: Iterable[tuple[Any, ...]]) -> dict[str, Any]:
    """The filter naming the documents of ``keys`` (as ``key_filter`` takes them): the ``_id`` of each,
    and their threads, one by equality, several by ``$in``."""
    keys = list(keys)
    threads = sorted({key[0] for key in keys})
    return {
        "_id": {"$in": [key_id(*key) for key in keys]},
        "thread_id": threads[0] if len(threads) == 1 else {"$in": threads},
    }


@dataclass(frozen=True)
class CollectionNames:
    """The name of each collection (see the module docstring for what each holds).

    The journal collection belongs to the activity journal, which declares it a
    per-thread collection (``thread_collections.py``): the checkpointer then deletes,
    copies and expires it with the thread, so a thread's history is never split.
    """

    checkpoints: str = "checkpoints"
    blobs: str = "checkpoint_blobs"
    writes: str = "checkpoint_writes"
    journal: str = "activity_journal"
    #: Where storage formats 2 and 3 kept their occurrence ordinals: the upgrade to format 4 reads it.
    ordinals: str = "operation_ordinals"
    #: Not in ``per_thread``: a run lock is live state of a running process, not thread data; copying,
    #: expiring or deleting it with the thread would let a second run in beside the one holding it.
    runs: str = "thread_runs"
    #: Not per thread: one document per database-wide fact.
    metadata: str = "durable_metadata"

    @property
    def per_thread(self) -> tuple[str, ...]:
        """This package's collections whose documents belong to one thread (and carry its ``expire_at``): what
        its storage classes declare (``thread_collections.py``)."""
        return tuple(getattr(self, role) for role in PER_THREAD_ROLES)

    @property
    def held_before_declarations(self) -> tuple[str, ...]:
        """What a database stamped before declarations holds per thread: ``per_thread`` and the ordinals."""
        return (*self.per_thread, self.ordinals)


#: The roles of the per-thread collections (``CollectionNames.per_thread``).
PER_THREAD_ROLES = ("checkpoints", "blobs", "writes", "journal")
#: The storage classes (by the role of the collection they own) whose every write waits for a majority of a replica
#: set, whatever the client's write concern: the journal (an effect's claim, its record, the input-digest key) and
#: the run locks (``storage.plans.faces.TwoFaces``). A write a primary alone acknowledged can be rolled back by a
#: failover: the next run would then run a completed effect again, or beside a run that still holds the thread.
MAJORITY_WRITTEN = ("journal", "runs")


def majority_concern(given: WriteConcern) -> WriteConcern:
    """``given`` with ``w: "majority"``, its ``wtimeout`` and ``j`` kept (``w: 0`` included: never unacknowledged)."""
    return WriteConcern(**{**given.document, "w": "majority"})


def _ascending(*fields: str) -> list[tuple[str, int]]:
    return [(f, ASCENDING) for f in fields]


#: The indexes of each role.
INDEXES: dict[str, tuple[IndexModel, ...]] = {
    "checkpoints": (
        IndexModel(list(CHECKPOINT_INDEX_ORDER), unique=True, name="thread_ns_checkpoint"),
        IndexModel(_ascending("thread_id", "metadata.run_id"), name="thread_run"),
        IndexModel(_ascending("thread_id", "metadata.source", "metadata.step"), name="thread_source_step"),
    ),
    "blobs": (IndexModel(_ascending(*BLOB_KEY, "chunk"), unique=True, name="thread_ns_channel_version"),),
    "writes": (IndexModel(_ascending(*WRITE_KEY, "chunk"), unique=True, name="thread_ns_checkpoint_task_idx"),),
    "journal": (
        IndexModel(_ascending(*POSITION_FIELDS, "chunk"), unique=True, name="thread_effect_position"),
        IndexModel(_ascending("thread_id", "status"), name="thread_status"),
    ),
    "runs": (IndexModel(_ascending("thread_id"), unique=True, name="thread_run_lock"),),
    "metadata": (),
}

#: The unique indexes of the per-thread roles, and each one's role: a collection holding one was made by this
#: library's setup (or ``doctor --fix``) for that role, which is how a storage format stamp's declaration of it is
#: trusted, and how its documents are copied (``thread_collections.py``).
KEY_INDEX_ROLES = {
    **{ix.document["name"]: role for role in PER_THREAD_ROLES for ix in INDEXES[role] if ix.document.get("unique")},
    "thread_parent_name_task": "ordinals",  # the ordinals' of format 3 and older (the upgrade to 4 reads them)
}
THREAD_KEY_INDEXES = frozenset(KEY_INDEX_ROLES)

#: The TTL index of every per-thread collection, when a TTL is set. The one index not led by
#: ``thread_id``: MongoDB supports TTL only on single-field indexes (non-unique, so sharding allows it).
TTL_INDEX = IndexModel([("expire_at", ASCENDING)], expireAfterSeconds=0, name="thread_ttl")
#: Under the ``keep_latest`` TTL strategy no TTL index may delete a thread: this one (on ``checkpoints``)
#: lets ``sweep_expired`` find the expired threads. Led by ``expire_at`` to serve that query; compound,
#: so its key differs from ``TTL_INDEX``'s and the two never collide on one database.
EXPIRY_INDEX = IndexModel(_ascending("expire_at", "thread_id"), name="thread_expiry")


def indexes_by_collection(names: CollectionNames, ttl: bool = False) -> dict[str, list[IndexModel]]:
    """Every index, by collection name (``ttl``: with the TTL index on each per-thread collection)."""
    found = {getattr(names, role): list(indexes) for role, indexes in INDEXES.items()}
    if ttl:
        for name in names.per_thread:
            found[name].append(TTL_INDEX)
    return found
