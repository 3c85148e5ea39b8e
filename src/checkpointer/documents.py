"""The documents the checkpointer stores (their collections and indexes: ``schema.py``).

Three collections, split like langgraph-checkpoint-postgres:

``checkpoints``
    one skeleton per checkpoint: ``thread_id``, ``checkpoint_ns``,
    ``checkpoint_id``, ``parent_checkpoint_id``, ``checkpoint`` (the serialized
    checkpoint without channel values), ``values`` (one entry per stored
    channel value: ``{c: channel, v: version}``, plus ``t``/``d`` for a small
    primitive kept inline), ``metadata`` (native BSON, keys escaped), ``ts``,
    and ``origin`` on a checkpoint written by an edit of the latest one (the
    checkpoint whose tasks it continues; see ``MongoDBCheckpointer.origin_of``).
``checkpoint_blobs``
    one channel value per (thread, namespace, channel, version), written once.
``checkpoint_writes``
    one pending write per (thread, namespace, checkpoint, task, index).

Channel names and namespaces are values in these documents, never field
names, so a ``.`` or ``$`` in them cannot become a BSON path.
"""

from __future__ import annotations

from typing import Any

#: Values of these types whose serialized form is at most INLINE_BYTES stay in the checkpoint document.
INLINE_TYPES = (type(None), bool, int, float, str)
INLINE_BYTES = 512


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, str]:
    return {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}


def stored_channels(doc: dict[str, Any]) -> set[str]:
    """Channels whose value is stored at this checkpoint (a DeltaChannel seed, say)."""
    return {entry["c"] for entry in doc.get("values", ())}
