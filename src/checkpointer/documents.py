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
import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .._bson import OPTIONAL, require_fields
from ..errors import CorruptDocumentError

#: Each key field of a collection, in ``_id`` order.
CHECKPOINT_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id")

#: What a checkpoint document must hold to be read (``values`` entries: ``entry_fields``).
CHECKPOINT_FIELDS: dict[str, tuple[type, ...]] = {
    "thread_id": (str,),
    "checkpoint_ns": (str,),
    "checkpoint_id": (str,),
    "checkpoint": (dict,),
    "checkpoint.type": (str,),
    "checkpoint.data": (bytes,),
    "metadata": (dict, OPTIONAL),
    "parent_checkpoint_id": (str, OPTIONAL),
    "values": (list, OPTIONAL),
    "expire_at": (datetime, OPTIONAL),
}
#: What a pending write's documents must hold (its first chunk also ``type``).
WRITE_FIELDS: dict[str, tuple[type, ...]] = {
    "task_id": (str,), "idx": (int,), "channel": (str,), "task_path": (str, OPTIONAL), "chunk": (int, OPTIONAL),
    "data": (bytes,),
}
#: What a channel value's documents in ``checkpoint_blobs`` must hold (the first chunk also ``type``).
BLOB_FIELDS: dict[str, tuple[type, ...]] = {"chunk": (int, OPTIONAL), "data": (bytes,)}
_HEAD_FIELDS: dict[str, tuple[type, ...]] = {"type": (str,), "n": (int, OPTIONAL), "h": (int, OPTIONAL)}


def entry_fields(doc: Mapping[str, Any]) -> dict[str, tuple[type, ...]]:
    """What each entry of a checkpoint's ``values`` must hold: a channel and a version, and ``t``/``d`` when
    the value is inline, ``k`` when another checkpoint holds it."""
    values = doc.get("values")
    fields: dict[str, tuple[type, ...]] = {}
    for i, entry in enumerate(values if isinstance(values, list) else ()):
        fields.update({f"values.{i}": (dict,), f"values.{i}.c": (str,), f"values.{i}.v": (str, int, float)})
        if isinstance(entry, dict) and ("t" in entry or "d" in entry):
            fields.update({f"values.{i}.t": (str,), f"values.{i}.d": (bytes,), f"values.{i}.h": (int, OPTIONAL)})
        elif isinstance(entry, dict) and "k" in entry:
            fields[f"values.{i}.k"] = (str,)
    return fields


def checksum(data: bytes) -> int:
    """The CRC-32 of a value's serialized bytes, stored with them (``h``) so that damaged or edited bytes are
    caught when read instead of loading as another value. Not a defence against someone who can write the
    database (they can write ``h`` too): use ``EncryptedSerializer`` for that."""
    return zlib.crc32(data)


def with_checksum(docs: list[dict[str, Any]], data: bytes) -> list[dict[str, Any]]:
    """A value's chunk documents (``_bson.value_documents``), the first carrying the checksum of all its bytes."""
    docs[0]["h"] = checksum(data)
    return docs


def check_checksum(collection: str, doc: Mapping[str, Any], field: str, data: bytes, stored: Any) -> None:
    """Raise ``CorruptDocumentError`` when ``data`` does not match the checksum ``stored`` with it (None: a value
    written before checksums existed, read as it is).

    Raises:
        CorruptDocumentError: the bytes changed since they were written.
    """
    if stored is not None and checksum(data) != stored:
        raise CorruptDocumentError(
            f"{collection} document {doc.get('_id')!r}: field {field!r} does not match its checksum: the stored bytes "
            "were damaged or edited, and nothing was run from them; restore the document from a backup, or delete it "
            "(or its thread)",
            collection=collection,
            document_id=doc.get("_id"),
            field=field,
        )


def check_assembled(
    collection: str, docs: Iterable[Mapping[str, Any]], key_fields: tuple[str, ...], values: Mapping[tuple, tuple[str, bytes]]
) -> None:
    """``check_checksum`` for each value assembled from chunk documents (its checksum is on chunk 0).

    Raises:
        CorruptDocumentError: a value's bytes do not match their checksum.
    """
    for doc in docs:
        key = tuple(doc.get(f) for f in key_fields)
        if doc.get("chunk", 0) == 0 and key in values:
            check_checksum(collection, doc, "data", values[key][1], doc.get("h"))


def check_checkpoints(collection: str, docs: Iterable[Mapping[str, Any]]) -> None:
    """Raise ``CorruptDocumentError`` for the first checkpoint document that cannot be read.

    Raises:
        CorruptDocumentError: a field of ``CHECKPOINT_FIELDS`` or of its values' entries is missing or of
            another type.
    """
    for doc in docs:
        require_fields(collection, [doc], {**CHECKPOINT_FIELDS, **entry_fields(doc)})


def check_values(collection: str, docs: Iterable[Mapping[str, Any]], fields: Mapping[str, tuple[type, ...]]) -> None:
    """Raise ``CorruptDocumentError`` for the first value document (a write's or a blob's) that cannot be read.

    Raises:
        CorruptDocumentError: a field of ``fields`` is missing or of another type (``type`` on a first chunk).
    """
    for doc in docs:
        require_fields(collection, [doc], {**fields, **(_HEAD_FIELDS if doc.get("chunk", 0) == 0 else {})})


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
