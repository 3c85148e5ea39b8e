"""The documents the checkpointer stores (their collections and indexes: ``schema.py``).

Three collections, split like langgraph-checkpoint-postgres:

``checkpoints``
    one document per checkpoint: ``thread_id``, ``checkpoint_ns``,
    ``checkpoint_id``, ``parent_checkpoint_id``, ``checkpoint`` (the serialized
    checkpoint without channel values), ``values``, ``metadata`` (native BSON,
    keys escaped), ``ts``, and ``origin`` on a checkpoint written by an edit of
    the latest one (the checkpoint whose tasks it continues; see
    ``MongoDBCheckpointer.origin_of``), with ``completed``, the nodes whose
    interrupted task that edit completed (``as_node``), when there are any.
    A root checkpoint stored through a ``DurablePlatform`` also carries
    ``ordinals``, ``[{name, ordinal}, ...]``: the highest occurrence ordinal of
    each root-level node known when it was written
    (``MongoDBCheckpointer.carry_in_root_checkpoints``), so a run's new
    occurrences are allocated without reading the ordinals collection first. ``values`` has one entry per stored
    channel value, ``{c: channel, v: version}`` and one of:

    - ``t``/``d``: the serialized value, inline here. A value whose version is
      new at this checkpoint is inline when it is at most ``inline_value_bytes``
      (and the document's inline total stays within ``inline_document_bytes``);
      an unchanged value is copied inline again when it is at most
      ``copy_value_bytes``, so the latest checkpoint usually holds every value
      itself and a read needs no second query for values;
    - ``k``: the id of the checkpoint of the same thread and namespace that
      holds it inline (an unchanged value larger than ``copy_value_bytes``,
      whose location the saver remembers from the parent);
    - neither: the value is in ``checkpoint_blobs`` (too large to inline, or
      moved there by ``prune``/``delete_for_runs`` when its holder was deleted).
``checkpoint_blobs``
    one channel value per (thread, namespace, channel, version), written once.
``checkpoint_writes``
    one pending write per (thread, namespace, checkpoint, task, index).

A document's ``_id`` is its key (``key_id``), so every write names its document
by ``_id``: an index lookup on any server, and the one filter FerretDB's SQLite
backend answers without scanning the collection.

Channel names and namespaces are values in these documents, never field
names, so a ``.`` or ``$`` in them cannot become a BSON path.
"""

from __future__ import annotations

import json
from typing import Any

#: Each key field of a collection, in ``_id`` order.
CHECKPOINT_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id")


def key_id(*parts: Any) -> str:
    """The ``_id`` of the document with this key: a deterministic, injective string.

    >>> key_id("t1", "", "1ef")
    '["t1","","1ef"]'
    """
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, str]:
    return {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}


def stored_channels(doc: dict[str, Any]) -> set[str]:
    """Channels whose value is stored at this checkpoint (a DeltaChannel seed, say)."""
    return {entry["c"] for entry in doc.get("values", ())}
