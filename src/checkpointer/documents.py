"""The documents the checkpointer stores, and the codec of their channel values (collections and indexes:
``schema.py``). Pure functions: the plans (``plans.py``) do the I/O.

Three collections, split like langgraph-checkpoint-postgres:

``checkpoints``
    one document per checkpoint: ``thread_id``, ``checkpoint_ns``,
    ``checkpoint_id``, ``parent_checkpoint_id``, ``checkpoint`` (the serialized
    checkpoint without channel values), ``values``, ``metadata`` (native BSON
    where that is lossless, keys escaped; see ``stored_metadata``), ``ts``, and
    ``origin`` on a checkpoint written by an edit of
    the latest one (the checkpoint whose tasks it continues; see
    ``MongoDBCheckpointer.origin_of``), with ``completed``, the nodes whose
    interrupted task that edit completed (``as_node``), when there are any.
    ``values`` has one entry per channel value of the checkpoint,
    ``{c: channel, v: version}`` (``CHANNEL``, ``VERSION``), stored one of three
    ways (``lay_out_values`` decides, at ``put``):

    - inline: ``t``/``d``/``h`` (``VALUE_TYPE``, ``VALUE_DATA``, ``CHECKSUM``),
      the serde type, the serialized bytes and their CRC-32, here in the entry.
      A value whose version is new at this checkpoint is inline when it is at
      most ``inline_value_bytes`` and the document's inline total stays within
      ``inline_document_bytes``; an unchanged value is written inline again
      under the same limits, unless it is larger than ``copy_value_bytes`` and
      the saver remembers where its parent's copy is (``ValueLocations``), so
      the latest checkpoint usually holds every value itself and a read needs
      no second query for values;
    - held: ``k`` (``HOLDER``), the ``checkpoint_id`` of the checkpoint of the
      same thread and namespace that holds the value inline (an unchanged value
      larger than ``copy_value_bytes``, where the parent's entry said it is);
    - in blobs: neither, the value is in ``checkpoint_blobs`` under
      (thread, namespace, channel, version): too large to inline, an unchanged
      value whose parent's entry said it is there, or moved there by
      ``prune``/``delete_for_runs`` when the checkpoint holding it was deleted
      (a reader also looks a value up in blobs when its holder is gone).

    ``h`` is absent from a value written before checksums existed (read as it is).
``checkpoint_blobs``
    one channel value per (thread, namespace, channel, version), written once,
    in chunks of at most ``chunk_bytes``: ``chunk``, ``data``; chunk 0 also
    ``type``, ``h`` (the CRC-32 of the whole value) and, for more than one
    chunk, ``n`` (the chunk count).
``checkpoint_writes``
    one pending write per (thread, namespace, checkpoint, task, index), chunked
    like a blob, with ``channel`` and ``task_path``.

A document's ``_id`` is its key (``key_id``), so every write names its document
by ``_id``: an index lookup on any server, and the one filter FerretDB's SQLite
backend answers without scanning the collection. Beside the ``_id``, the filter
carries the thread and the namespace the key starts with (``schema.key_filter``):
a sharded cluster routes a write by its shard key, ``thread_id``. FerretDB and
mongo-java-server, which cannot be sharded, are sent the ``_id`` alone
(``quirks.ServerQuirks.id_alone``).

Channel names and namespaces are values in these documents, never field
names, so a ``.`` or ``$`` in them cannot become a BSON path.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bson.int64 import Int64

from .._bson import OPTIONAL, assemble_values, escape_key, require_fields, unescape_key, value_documents
from .._bson import key_id as key_id  # re-exported: views.plans imports it from here
from .._langgraph import canonical_set
from ..errors import CorruptDocumentError, InvalidInputError, MissingValueError
from ..storage.schema import BLOB_KEY, key_filter
from .remembered import LARGE, Location

#: The fields of an entry of a checkpoint's ``values`` (see the module docstring).
CHANNEL = "c"
VERSION = "v"
VALUE_TYPE = "t"
VALUE_DATA = "d"
#: The CRC-32 of a value's bytes: in an inline entry, and on chunk 0 of a blob or a pending write.
CHECKSUM = "h"
HOLDER = "k"

#: What ``stored_channels`` reads of a checkpoint document: its values' channel names, never the values.
STORED_CHANNELS_PROJECTION = {f"values.{CHANNEL}": 1, f"values.{VALUE_TYPE}": 1, f"values.{CHECKSUM}": 1}
#: The CRC-32 of an empty list as LangGraph's serde writes it (msgpack ``0x90``): an inline value holding nothing,
#: as a consumed ``Send`` topic keeps it.
EMPTY_LIST_CHECKSUM = zlib.crc32(b"\x90")

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
_HEAD_FIELDS: dict[str, tuple[type, ...]] = {"type": (str,), "n": (int, OPTIONAL), CHECKSUM: (int, OPTIONAL)}


def entry_fields(doc: Mapping[str, Any]) -> dict[str, tuple[type, ...]]:
    """What each entry of a checkpoint's ``values`` must hold: a channel and a version, and the type and bytes
    when the value is inline, the holder when another checkpoint holds it."""
    values = doc.get("values")
    fields: dict[str, tuple[type, ...]] = {}
    for i, entry in enumerate(values if isinstance(values, list) else ()):
        at = f"values.{i}"
        fields.update({at: (dict,), f"{at}.{CHANNEL}": (str,), f"{at}.{VERSION}": (str, int, float)})
        if isinstance(entry, dict) and (VALUE_TYPE in entry or VALUE_DATA in entry):
            fields.update(
                {f"{at}.{VALUE_TYPE}": (str,), f"{at}.{VALUE_DATA}": (bytes,), f"{at}.{CHECKSUM}": (int, OPTIONAL)}
            )
        elif isinstance(entry, dict) and HOLDER in entry:
            fields[f"{at}.{HOLDER}"] = (str,)
    return fields


def checksum(data: bytes) -> int:
    """The CRC-32 of a value's serialized bytes, stored with them (``h``) so that damaged or edited bytes are
    caught when read instead of loading as another value. Not a defence against someone who can write the
    database (they can write ``h`` too): use ``EncryptedSerializer`` for that."""
    return zlib.crc32(data)


def with_checksum(docs: list[dict[str, Any]], data: bytes) -> list[dict[str, Any]]:
    """A value's chunk documents (``_bson.value_documents``), the first carrying the checksum of all its bytes."""
    docs[0][CHECKSUM] = checksum(data)
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
    collection: str,
    docs: Iterable[Mapping[str, Any]],
    key_fields: tuple[str, ...],
    values: Mapping[tuple[Any, ...], tuple[str, bytes]],
) -> None:
    """``check_checksum`` for each value assembled from chunk documents (its checksum is on chunk 0).

    Raises:
        CorruptDocumentError: a value's bytes do not match their checksum.
    """
    for doc in docs:
        key = tuple(doc.get(f) for f in key_fields)
        if doc.get("chunk", 0) == 0 and key in values:
            check_checksum(collection, doc, "data", values[key][1], doc.get(CHECKSUM))


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


# -- metadata ---------------------------------------------------------------------
#
# Metadata stays native BSON where BSON gives back what was put, so ``list(filter=...)`` is a server-side query on
# it. A value BSON would change (a ``datetime``: its microseconds, and its zone under a client's ``tz_aware``; a
# ``set``; a message; an ``int`` past 64 bits; any other type) is stored as the serde writes it, in a document whose
# two keys no escaped key can be (``escape_key`` writes a ``%`` as ``%25``), and loaded back through the serde. A
# filter on such a value is encoded the same way, so it matches where ``MongoDBSaver``'s does. A tuple is stored
# as an array: it comes back a list, as it does through the serde (msgpack has no tuple).

#: The fields of the document standing for a metadata value stored through the serde: its type, its bytes.
SERDE_TYPE, SERDE_DATA = "%serde", "%data"
#: The types BSON stores and gives back as they are (an ``int`` within 64 bits).
_NATIVE = (str, bool, float, bytes, type(None))
_INT64 = range(-(2**63), 2**63)


def stored_metadata(metadata: Any, dumps: Callable[[Any], tuple[str, bytes]]) -> dict[str, Any]:
    """``metadata`` as ``put`` stores it (see above), checked before anything is written.

    Args:
        metadata: the checkpoint's metadata, after ``get_checkpoint_metadata``.
        dumps: the serde's ``dumps_typed``.

    Returns:
        The stored document.

    Raises:
        InvalidInputError: ``metadata`` is not a dict with string keys, or the serde cannot write one of its values
            (named by its path).
    """
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidInputError(
            f"metadata must be a dict with string keys, got {type(metadata).__name__} ({metadata!r:.80})"
        )
    return {escape_key(k): stored_value(v, dumps, k) for k, v in metadata.items()}


def stored_value(value: Any, dumps: Callable[[Any], tuple[str, bytes]], path: str = "") -> Any:
    """One metadata value as stored: native, or through the serde (``SERDE_TYPE``/``SERDE_DATA``).

    Raises:
        InvalidInputError: the serde cannot write ``value`` (or a value within it); ``path`` names where it is.
    """
    if type(value) in _NATIVE or (type(value) is int and value in _INT64):
        return value
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return {escape_key(k): stored_value(v, dumps, f"{path}.{k}") for k, v in value.items()}
    if type(value) in (list, tuple):
        return [stored_value(v, dumps, f"{path}[{i}]") for i, v in enumerate(value)]
    if type(value) in (set, frozenset):
        value = canonical_set(value)  # equal sets, equal bytes: a filter on one matches
    try:
        type_, data = dumps(value)
    except Exception as error:  # any serde's refusal, named with where it is
        raise InvalidInputError(
            f"metadata[{path!r}] is a {type(value).__name__} the serde cannot write ({error}); nothing was written. "
            "Store a value it can (a str, a number, a dict of them), or give the saver a serde that can"
        ) from None
    return {SERDE_TYPE: type_, SERDE_DATA: data}


def loaded_metadata(stored: Any, loads: Callable[[tuple[str, bytes], str], Any], field: str = "metadata") -> Any:
    """Stored metadata (or one value of it, at ``field``) as it was put: keys unescaped, serde-stored values loaded
    (``loads`` is given each one's type and bytes, and its field: ``metadata.<key>.<key>``, ``metadata.<key>.0``)."""
    if isinstance(stored, Mapping):
        if set(stored) == {SERDE_TYPE, SERDE_DATA}:
            return loads((stored[SERDE_TYPE], bytes(stored[SERDE_DATA])), field)
        return {unescape_key(k): loaded_metadata(v, loads, f"{field}.{k}") for k, v in stored.items()}
    if isinstance(stored, list):
        return [loaded_metadata(v, loads, f"{field}.{i}") for i, v in enumerate(stored)]
    return int(stored) if type(stored) is Int64 else stored  # pymongo reads an int past 32 bits as Int64


def check_checkpoint(checkpoint: Any, metadata: Any, new_versions: Any) -> None:
    """Raise ``InvalidInputError`` naming the first argument or field of a checkpoint being put that is not of its
    type, before anything is read or written: the checkpoint and its metadata dicts, its ``channel_values`` and
    ``channel_versions`` and ``new_versions`` dicts keyed by channel name, a version for each channel value.

    Raises:
        InvalidInputError: a field is not a dict, a channel name not a string, or a value has no version.
    """
    fields = {"checkpoint": checkpoint, "metadata": metadata, "new_versions": new_versions}
    if isinstance(checkpoint, Mapping):
        fields.update({f"checkpoint[{f!r}]": checkpoint.get(f, {}) for f in ("channel_values", "channel_versions")})
    for name, value in fields.items():
        if not isinstance(value, Mapping):
            raise InvalidInputError(
                f"{name} must be a dict, got {type(value).__name__} ({value!r:.80}); nothing was written"
            )
        if name not in ("checkpoint", "metadata") and not all(isinstance(k, str) for k in value):
            raise InvalidInputError(
                f"{name} must be keyed by channel name (str), got {sorted(map(repr, value))[:5]}; nothing was written"
            )
    versions = checkpoint.get("channel_versions", {})
    unversioned = [
        c for c in checkpoint.get("channel_values", {}) if not isinstance(versions.get(c), (str, int, float))
    ]
    if unversioned:
        raise InvalidInputError(
            f"checkpoint['channel_versions'] holds no version of channel {unversioned[0]!r}, which channel_values "
            "holds; nothing was written"
        )


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, str]:
    return {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}


def stored_channels(doc: Mapping[str, Any], *, holding: bool = False) -> set[str]:
    """The channels checkpoint document ``doc`` stores a value for (a DeltaChannel seed, say), read from
    ``STORED_CHANNELS_PROJECTION`` or more; with ``holding``, only those whose value is not known to be an empty list
    (one written inline as msgpack ``[]``: ``EMPTY_LIST_CHECKSUM``). A document written by hand may hold anything: an
    entry without a string channel names none, and ``values`` that is not a list names no channel."""
    values = doc.get("values")
    entries = values if isinstance(values, list) else ()
    return {
        e[CHANNEL] for e in entries if isinstance(e, Mapping) and isinstance(e.get(CHANNEL), str)
        and not (holding and e.get(VALUE_TYPE) == "msgpack" and e.get(CHECKSUM) == EMPTY_LIST_CHECKSUM)
    }


# -- channel values ---------------------------------------------------------------
#
# A value key is (thread, namespace, channel, version): ``BLOB_KEY``'s fields, in that order. A serialized value
# is the ``(type, bytes)`` of the saver's serde, whose ``dumps``/``loads`` the codec is handed.


def value_key(doc: Mapping[str, Any], entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key of the value an entry of checkpoint document ``doc``'s ``values`` stands for."""
    return (doc["thread_id"], doc["checkpoint_ns"], entry[CHANNEL], entry[VERSION])


def is_inline(entry: Mapping[str, Any]) -> bool:
    """Whether the entry holds its value itself (a chain walk reads an entry's ``VALUE_TYPE``, not its bytes)."""
    return VALUE_TYPE in entry


def inline_entry(channel: str, version: Any, typed: tuple[str, bytes]) -> dict[str, Any]:
    """The entry that holds a serialized value inline, with its checksum."""
    return {
        CHANNEL: channel, VERSION: version, VALUE_TYPE: typed[0], VALUE_DATA: typed[1], CHECKSUM: checksum(typed[1])
    }


def referenced_entry(channel: str, version: Any, holder: str | None) -> dict[str, Any]:
    """The entry of a value stored elsewhere: inline in checkpoint ``holder``, or in blobs (``holder`` None)."""
    entry: dict[str, Any] = {CHANNEL: channel, VERSION: version}
    if holder is not None:
        entry[HOLDER] = holder
    return entry


def as_reference(entry: Mapping[str, Any], checkpoint_id: str) -> dict[str, Any]:
    """An entry that finds the value ``entry`` of checkpoint ``checkpoint_id`` stands for where it is: in that
    checkpoint when the entry is inline, else where the entry references it."""
    holder = checkpoint_id if is_inline(entry) else entry.get(HOLDER)
    return referenced_entry(entry[CHANNEL], entry[VERSION], holder)


def references_to(
    holders: set[str], docs: Mapping[str, Mapping[str, Any]], among: Iterable[str]
) -> dict[str, list[dict[str, Any]]]:
    """The entries that reference one of the checkpoints ``holders``, of the checkpoints ``among`` (ids into
    ``docs``) that have any, by checkpoint id in id order."""
    held = {cid: [e for e in docs[cid].get("values", ()) if e.get(HOLDER) in holders] for cid in sorted(among)}
    return {cid: entries for cid, entries in held.items() if entries}


def unlinked_values(doc: Mapping[str, Any], holders: set[str]) -> list[dict[str, Any]]:
    """``doc``'s ``values`` with the references to ``holders`` dropped: those values are then read from blobs."""
    return [{f: x for f, x in e.items() if f != HOLDER} if e.get(HOLDER) in holders else e for e in doc["values"]]


def locations_of(doc: Mapping[str, Any]) -> dict[str, Location]:
    """Where each value of a checkpoint document is stored (see ``ValueLocations``)."""
    out: dict[str, Location] = {}
    for e in doc.get("values", ()):
        if is_inline(e):
            out[e[CHANNEL]] = (e[VERSION], doc["checkpoint_id"], len(e[VALUE_DATA]))
        else:
            out[e[CHANNEL]] = (e[VERSION], e.get(HOLDER), LARGE)
    return out


@dataclass(frozen=True)
class InlineLimits:
    """How large a value ``lay_out_values`` keeps inline (the saver's ``*_bytes`` attributes)."""

    value_bytes: int  #: a value, new or unchanged
    document_bytes: int  #: the inline values of one document together
    copy_bytes: int  #: an unchanged value the saver knows the location of: above this, it is referenced


@dataclass
class LaidOut:
    """How ``put`` stores the channel values of one checkpoint."""

    entries: list[dict[str, Any]] = field(default_factory=list)  #: the checkpoint document's ``values``
    located: dict[str, Location] = field(default_factory=dict)  #: where each value is, for ``ValueLocations``
    blobs: list[tuple[tuple[Any, ...], tuple[str, bytes]]] = field(default_factory=list)  #: (value key, serialized)


def lay_out_values(
    key: tuple[str, str, str],
    values: Mapping[str, Any],
    versions: Mapping[str, Any],
    unchanged: Mapping[str, Location],
    dumps: Callable[[Any], tuple[str, bytes]],
    limits: InlineLimits,
) -> LaidOut:
    """Decide where each channel value of the checkpoint ``key`` (thread, namespace, id) is stored.

    A value ``unchanged`` locates at its current version, larger than ``limits.copy_bytes``, is referenced
    where it is, not serialized; any other is inline while the limits allow, else in blobs.

    Args:
        key: the checkpoint's thread, namespace and id.
        values: the checkpoint's ``channel_values``, in the order their entries are stored.
        versions: the checkpoint's ``channel_versions``.
        unchanged: where the parent's values are, for the channels whose version did not change.
        dumps: the serde's ``dumps_typed``.
        limits: the inline limits.

    Returns:
        The entries, the locations and the values bound for blobs.
    """
    laid_out, room = LaidOut(), limits.document_bytes
    for channel, value in values.items():
        version, known = versions.get(channel), unchanged.get(channel)
        if known is not None and known[0] == version and known[2] > limits.copy_bytes:
            laid_out.entries.append(referenced_entry(channel, version, known[1]))
            laid_out.located[channel] = known
            continue
        typed = dumps(value)
        size = len(typed[1])
        if size <= limits.value_bytes and size <= room:
            room -= size
            laid_out.entries.append(inline_entry(channel, version, typed))
            laid_out.located[channel] = (version, key[2], size)
        else:
            laid_out.entries.append(referenced_entry(channel, version, None))
            laid_out.blobs.append(((key[0], key[1], channel, version), typed))
            laid_out.located[channel] = (version, None, size)
    return laid_out


def blob_documents(
    ref: tuple[Any, ...], typed: tuple[str, bytes], chunk_bytes: int
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The chunk documents that store one value in blobs under value key ``ref``, each with the filter naming it
    (``schema.key_filter``)."""
    key = dict(zip(BLOB_KEY, ref, strict=True))
    docs = with_checksum(value_documents(key, typed, chunk_bytes), typed[1])
    return [(key_filter(*ref, doc["chunk"]), doc) for doc in docs]


def values_elsewhere(
    docs: list[dict[str, Any]], channels: Collection[str] | None = None
) -> tuple[dict[tuple[str, str, str], list[tuple[Any, ...]]], set[tuple[Any, ...]]]:
    """The values ``docs`` reference but do not hold inline (of ``channels`` only, when given).

    Returns:
        ``(held, in_blobs)``: the keys of the values held by a checkpoint not among ``docs``, by that
        checkpoint's key (thread, namespace, id); the keys of the values in blobs.
    """
    among = {(d["thread_id"], d["checkpoint_ns"], d["checkpoint_id"]) for d in docs}
    held: dict[tuple[str, str, str], list[tuple[Any, ...]]] = defaultdict(list)
    in_blobs: set[tuple[Any, ...]] = set()
    for d in docs:
        for e in d.get("values", ()):
            if is_inline(e) or (channels is not None and e[CHANNEL] not in channels):
                continue
            if HOLDER not in e:
                in_blobs.add(value_key(d, e))
            elif (d["thread_id"], d["checkpoint_ns"], e[HOLDER]) not in among:
                held[(d["thread_id"], d["checkpoint_ns"], e[HOLDER])].append(value_key(d, e))
    return held, in_blobs


def inline_values(collection: str, docs: Iterable[Mapping[str, Any]]) -> dict[tuple[Any, ...], tuple[str, bytes]]:
    """The values held inline by checkpoint documents, by value key, each checked against its checksum.

    Raises:
        CorruptDocumentError: a value's bytes do not match their checksum.
    """
    out: dict[tuple[Any, ...], tuple[str, bytes]] = {}
    for d in docs:
        for i, e in enumerate(d.get("values", ())):
            if is_inline(e):
                check_checksum(collection, d, f"values.{i}.{VALUE_DATA}", bytes(e[VALUE_DATA]), e.get(CHECKSUM))
                out[value_key(d, e)] = (e[VALUE_TYPE], bytes(e[VALUE_DATA]))
    return out


def blob_values(collection: str, docs: list[dict[str, Any]]) -> dict[tuple[Any, ...], tuple[str, bytes]]:
    """The values assembled from blob chunk documents, by value key, each checked against its checksum.

    Raises:
        CorruptDocumentError: a document cannot be read, or a value's bytes do not match their checksum.
    """
    check_values(collection, docs, BLOB_FIELDS)
    values = assemble_values(docs, BLOB_KEY)
    check_assembled(collection, docs, BLOB_KEY, values)
    return values


def load_channel_values(
    doc: Mapping[str, Any],
    values: Mapping[tuple[Any, ...], tuple[str, bytes]],
    loads: Callable[[tuple[str, bytes], str], Any],
) -> dict[str, Any]:
    """A checkpoint document's channel values, loaded from ``values`` (by value key) with ``loads``, which is given
    each value's type and bytes and the field of ``doc`` holding it (``values.<i>.d``), or referencing it
    (``values.<i>``).

    Raises:
        MissingValueError: a value the document references is not in ``values``.
    """
    channel_values: dict[str, Any] = {}
    for i, entry in enumerate(doc.get("values", ())):
        typed = values.get(value_key(doc, entry))
        if typed is None:
            raise _missing_value(doc, entry)
        channel_values[entry[CHANNEL]] = loads(typed, f"values.{i}.{VALUE_DATA}" if is_inline(entry) else f"values.{i}")
    return channel_values


def _missing_value(doc: Mapping[str, Any], entry: Mapping[str, Any]) -> MissingValueError:
    where = {f: doc[f] for f in CHECKPOINT_KEY}
    return MissingValueError(
        f"thread {where['thread_id']!r} checkpoint {where['checkpoint_id']!r} (namespace {where['checkpoint_ns']!r}) "
        f"references channel {entry[CHANNEL]!r} version {entry[VERSION]!r}, which cannot be loaded: its document in "
        "checkpoint_blobs, or one of its chunks, is gone. Nothing was run from this checkpoint: restore the value "
        "from a backup, or resume from an earlier checkpoint (get_state_history) that does not reference it",
        thread_id=where["thread_id"], checkpoint_ns=where["checkpoint_ns"], checkpoint_id=where["checkpoint_id"],
        channel=entry[CHANNEL],
    )


def checkpoint_document(
    key: Mapping[str, str],
    parent_id: str | None,
    skeleton: tuple[str, bytes],
    values: list[dict[str, Any]],
    metadata: Mapping[str, Any],
    ts: Any,
    continued: Any,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """A checkpoint document as ``put`` sets it, its ``_id`` aside.

    Args:
        key: the checkpoint's key fields (``checkpoint_key``).
        parent_id: the parent's ``checkpoint_id``, None for none.
        skeleton: the serialized checkpoint without its channel values.
        values: the entries of its channel values (``LaidOut.entries``).
        metadata: the metadata, keys escaped.
        ts: the checkpoint's ``ts``.
        continued: what it continues (``roots.Continued``): the checkpoint (``origin``), stored when set, the nodes
            whose interrupted task its edit completed (``completed``) and the steps its edit moved a child's run on
            (``shift``), each stored when any.
        extra: the fields that follow (the expiry).

    Returns:
        The document's fields.
    """
    return {
        **key,
        "parent_checkpoint_id": parent_id,
        "checkpoint": {"type": skeleton[0], "data": skeleton[1]},
        "values": values,
        "metadata": metadata,
        "ts": ts,
        **({"origin": continued.origin} if continued.origin else {}),
        **({"completed": continued.completed} if continued.completed else {}),
        **({"shift": continued.shift} if continued.shift else {}),
        **extra,
    }
