"""The documents the checkpointer stores, and their collections and indexes.

Three collections, split like langgraph-checkpoint-postgres:

``checkpoints``
    one skeleton per checkpoint: ``thread_id``, ``checkpoint_ns``,
    ``checkpoint_id``, ``parent_checkpoint_id``, ``checkpoint`` (the serialized
    checkpoint without channel values), ``values`` (one entry per stored
    channel value: ``{c: channel, v: version}``, plus ``t``/``d`` for a small
    primitive kept inline), ``metadata`` (native BSON, keys escaped), ``ts``.
``checkpoint_blobs``
    one channel value per (thread, namespace, channel, version), written once.
``checkpoint_writes``
    one pending write per (thread, namespace, checkpoint, task, index).

Channel names and namespaces are values in these documents, never field
names, so a ``.`` or ``$`` in them cannot become a BSON path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel

#: Values of these types whose serialized form is at most INLINE_BYTES stay in the checkpoint document.
INLINE_TYPES = (type(None), bool, int, float, str)
INLINE_BYTES = 512

BLOB_KEY = ("thread_id", "checkpoint_ns", "channel", "version")
WRITE_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx")


@dataclass(frozen=True)
class CollectionNames:
    """Names of every collection that holds per-thread data.

    The journal and ordinal collections belong to the activity journal and
    the resolver; the checkpointer deletes, copies and expires them with the
    thread so a thread's history is never split.
    """

    checkpoints: str = "checkpoints"
    blobs: str = "checkpoint_blobs"
    writes: str = "checkpoint_writes"
    journal: str = "activity_journal"
    ordinals: str = "operation_ordinals"
    #: ``DurablePlatform``'s per-thread run locks (``run_lock.py``). Not in ``per_thread``: a lock is live state
    #: of a running process, not thread data; copying, expiring or deleting it with the thread would let a
    #: second run in beside the one holding it. A dead run's lock is reclaimed by the next run.
    runs: str = "thread_runs"
    #: One document per database-wide fact (the journal's input-digest key under encryption). Not per thread.
    metadata: str = "durable_metadata"

    @property
    def per_thread(self) -> tuple[str, ...]:
        return (self.checkpoints, self.blobs, self.writes, self.journal, self.ordinals)


def checkpoint_indexes(names: CollectionNames) -> dict[str, list[IndexModel]]:
    """Every index starts with ``thread_id`` so each collection can be sharded on it."""
    return {
        names.checkpoints: [
            IndexModel(
                [("thread_id", ASCENDING), ("checkpoint_ns", ASCENDING), ("checkpoint_id", DESCENDING)],
                unique=True,
                name="thread_ns_checkpoint",
            ),
            IndexModel([("thread_id", ASCENDING), ("metadata.run_id", ASCENDING)], name="thread_run"),
            IndexModel(
                [("thread_id", ASCENDING), ("metadata.source", ASCENDING), ("metadata.step", ASCENDING)],
                name="thread_source_step",
            ),
        ],
        names.blobs: [
            IndexModel(
                [(f, ASCENDING) for f in BLOB_KEY] + [("chunk", ASCENDING)],
                unique=True,
                name="thread_ns_channel_version",
            )
        ],
        names.writes: [
            IndexModel(
                [(f, ASCENDING) for f in WRITE_KEY] + [("chunk", ASCENDING)],
                unique=True,
                name="thread_ns_checkpoint_task_idx",
            )
        ],
    }


def ttl_index() -> IndexModel:
    """The TTL index of every per-thread collection.

    The one index not led by ``thread_id``: MongoDB supports TTL only on
    single-field indexes (non-unique, so a sharded collection allows it).
    """
    return IndexModel([("expire_at", ASCENDING)], expireAfterSeconds=0, name="thread_ttl")


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, str]:
    return {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}


def stored_channels(doc: dict[str, Any]) -> set[str]:
    """Channels whose value is stored at this checkpoint (a DeltaChannel seed, say)."""
    return {entry["c"] for entry in doc.get("values", ())}
