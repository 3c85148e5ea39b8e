"""BSON safety shared by every collection: input checks, key escaping, chunked values.

* Identifiers must be strings; anything else is refused before a query runs.
* User-controlled names (metadata keys, ...) never become BSON field paths:
  ``.``, ``$``, ``%`` and NUL are percent-escaped in keys and restored on read.
* Serialized values larger than one document can hold are split into chunk
  documents that share the value's key and differ by ``chunk``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bson import Binary

from .errors import CorruptDocumentError, InvalidInputError

#: Bytes of serialized value per document; keeps each document well under 16 MiB.
DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024

_ESCAPES = {"%": "%25", ".": "%2E", "$": "%24", "\x00": "%00"}
#: ``key_id``'s encoder, made once: ``json.dumps`` with options builds a new encoder per call, and a chat step
#: makes a dozen ids.
_KEY_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


#: Field types a stored document is checked against (``document_problem``): ``OPTIONAL`` allows absent or null.
OPTIONAL = type(None)
_TYPE_NAMES = {str: "a string", bytes: "bytes", int: "an int", float: "a number", dict: "a document", list: "an array"}


def dotted_value(doc: Any, path: str) -> Any:
    """The value at the dotted ``path`` of ``doc`` (``metadata.step``; a digit indexes an array), or None."""
    value = doc
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit():
            value = value[int(part)] if int(part) < len(value) else None
        else:
            value = value.get(part) if isinstance(value, Mapping) else None
    return value


def key_id(*parts: Any) -> str:
    """The ``_id`` of the document with this key: a deterministic, injective string.

    >>> key_id("t1", "", "1ef")
    '["t1","","1ef"]'
    """
    return _KEY_ENCODER.encode(parts)


def document_problem(
    collection: str, doc: Mapping[str, Any], fields: Mapping[str, tuple[type, ...]]
) -> CorruptDocumentError | None:
    """The first of ``fields`` that ``doc`` lacks or holds with another type, as an error naming the collection,
    the document's ``_id`` and the field; None when every field is as written.

    Args:
        collection: the collection ``doc`` was read from.
        doc: the document, as read.
        fields: field name (dotted to reach into a sub-document or an array item) -> the types it may have;
            ``OPTIONAL`` among them lets it be absent or null. ``bool`` is never taken for ``int``.

    Returns:
        A ``CorruptDocumentError`` to raise or report, or None.
    """
    for field, types in fields.items():
        value = dotted_value(doc, field)
        if value is None and OPTIONAL in types:
            continue
        if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
            continue
        wanted = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types if t is not OPTIONAL)
        found = "missing" if value is None else f"{type(value).__name__} {value!r:.40}"
        return CorruptDocumentError(
            f"{collection} document {doc.get('_id')!r}: field {field!r} is {found}, not {wanted}: the document was "
            "edited by hand or damaged, and nothing was run from it; restore it from a backup, or delete it "
            "(or its thread)",
            collection=collection,
            document_id=doc.get("_id"),
            field=field,
        )
    return None


def require_fields(collection: str, docs: Iterable[Mapping[str, Any]], fields: Mapping[str, tuple[type, ...]]) -> None:
    """Raise ``document_problem``'s error for the first of ``docs`` that has one.

    Raises:
        CorruptDocumentError: a document lacks one of ``fields`` or holds it with another type.
    """
    for doc in docs:
        if (problem := document_problem(collection, doc, fields)) is not None:
            raise problem


def require_db_name(db_name: Any) -> str:
    """Return ``db_name`` if MongoDB accepts it as a database name; raise ``InvalidInputError`` otherwise."""
    if not isinstance(db_name, str) or not db_name or set(db_name) & set('/\\. "$\x00'):
        raise InvalidInputError(f"db_name must be a valid MongoDB database name, got {db_name!r}")
    return db_name


def require_seconds(name: str, value: Any, *, positive: bool = False) -> float:
    """Return ``value`` as a float if it is a number of seconds (> 0 when ``positive``, else >= 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (positive and value == 0):
        raise InvalidInputError(
            f"{name} must be a {'positive' if positive else 'non-negative'} number of seconds, got {value!r}"
        )
    return float(value)


def require_str(name: str, value: Any, *, allow_empty: bool = True) -> str:
    """Return ``value`` if it is a ``str``; raise ``InvalidInputError`` otherwise.

    >>> require_str("thread_id", "t-1")
    't-1'
    """
    if not isinstance(value, str):
        raise InvalidInputError(
            f"{name} must be a str, got {type(value).__name__} ({value!r:.80}); "
            f"pass the identifier as a string, e.g. str({name})"
        )
    if not allow_empty and not value:
        raise InvalidInputError(f"{name} must be a non-empty string")
    return value


def require_thread_id(value: Any) -> str:
    """``value`` if it is a non-empty ``str``, else ``InvalidInputError`` saying what a thread id may be.

    LangGraph stores a run under ``str(thread_id)`` for a truthy non-string id (an int, a UUID), but passes an
    empty or falsy one (``""``, ``0``) on as it is: every such run would share one nameless thread.

    >>> require_thread_id("t-1")
    't-1'
    """
    if isinstance(value, str) and value:
        return value
    raise InvalidInputError(
        f"thread_id must be a non-empty string, got {type(value).__name__} ({value!r:.80}); name the thread, e.g. "
        '{"configurable": {"thread_id": "case-42"}} (a run also takes a non-zero int or a UUID, stored as '
        "str(thread_id))"
    )


def require_str_list(name: str, values: Any) -> list[str]:
    """A list or tuple of strings (not one string, not a dict), else ``InvalidInputError``."""
    if not isinstance(values, (list, tuple)):
        raise InvalidInputError(f"{name} must be a list of strings, got {type(values).__name__} ({values!r:.80})")
    return [require_str(name, v) for v in values]


def escape_key(key: str) -> str:
    """Make ``key`` safe as one BSON field name (no path, no operator).

    >>> escape_key("a.b$c")
    'a%2Eb%24c'
    """
    if not isinstance(key, str):
        raise InvalidInputError(f"document keys must be str, got {type(key).__name__} ({key!r:.80})")
    if not any(ch in key for ch in _ESCAPES):
        return key
    return "".join(_ESCAPES.get(ch, ch) for ch in key)


def unescape_key(key: str) -> str:
    if "%" not in key:
        return key
    out, i = [], 0
    while i < len(key):
        if key[i] == "%" and key[i + 1 : i + 3] in ("25", "2E", "24", "00"):
            out.append({"25": "%", "2E": ".", "24": "$", "00": "\x00"}[key[i + 1 : i + 3]])
            i += 3
        else:
            out.append(key[i])
            i += 1
    return "".join(out)


def escape_document(value: Any) -> Any:
    """Escape every mapping key, recursively (lists and tuples become lists)."""
    if isinstance(value, Mapping):
        return {escape_key(k): escape_document(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_document(v) for v in value]
    return value


def unescape_document(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {unescape_key(k): unescape_document(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unescape_document(v) for v in value]
    return value


def containment_filter(
    prefix: str, query: Mapping[str, Any], stored: Callable[[Any], Any] = escape_document
) -> dict[str, Any]:
    """Translate a metadata query into equality on escaped paths under ``prefix``.

    Top-level keys match by equality; nested mappings match by containment
    (like Postgres ``@>``): ``{"a": {"b": 1}}`` matches ``{"a": {"b": 1, "c": 2}}``;
    a list matches a stored array holding every item (``$all``). Each value (a
    mapping with a key that is no string is one) is compared in the form it is
    stored in (``stored``: by default its keys escaped).
    Keys starting with ``$`` are refused, so no operator can widen a query.

    >>> containment_filter("metadata", {"source": "loop", "parents": {"": "1"}})
    {'metadata.source': 'loop', 'metadata.parents.': '1'}
    """
    if not isinstance(query, Mapping):
        raise InvalidInputError(f"filter must be a dict, got {type(query).__name__}")
    out: dict[str, Any] = {}
    for key, value in query.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"filter keys must be str, got {type(key).__name__} ({key!r:.80})")
        if key.startswith("$"):
            raise InvalidInputError(
                f"filter key {key!r} starts with '$'; operators are not accepted in filters, "
                "pass plain metadata keys and values"
            )
        path = f"{prefix}.{escape_key(key)}"
        if isinstance(value, Mapping) and value and all(isinstance(k, str) for k in value):
            out.update(containment_filter(path, value, stored))
        elif isinstance(value, (list, tuple)):
            out[path] = {"$all": [stored(v) for v in value]} if value else []
        else:
            out[path] = stored(value)
    return out


def value_documents(key: Mapping[str, Any], typed: tuple[str, bytes], chunk_bytes: int) -> list[dict[str, Any]]:
    """Documents storing one serialized value under ``key`` (several if it is large).

    Chunk 0 carries the serde type and the chunk count ``n``.
    """
    type_, data = typed
    if len(data) <= chunk_bytes:
        return [{**key, "chunk": 0, "type": type_, "data": Binary(data)}]
    parts = [data[i : i + chunk_bytes] for i in range(0, len(data), chunk_bytes)]
    docs = [{**key, "chunk": i, "data": Binary(part)} for i, part in enumerate(parts)]
    docs[0].update(type=type_, n=len(parts))
    return docs


def assemble_values(
    docs: Iterable[Mapping[str, Any]], key_fields: tuple[str, ...]
) -> dict[tuple[Any, ...], tuple[str, bytes]]:
    """Group value documents by key and join their chunks: ``{key tuple: (type, bytes)}``.

    A value whose chunks are not all present (a write still in progress, or
    storage damaged by hand) is left out rather than returned truncated.
    """
    groups: dict[tuple[Any, ...], dict[int, Mapping[str, Any]]] = {}
    for doc in docs:
        groups.setdefault(tuple(doc[f] for f in key_fields), {})[doc.get("chunk", 0)] = doc
    out: dict[tuple[Any, ...], tuple[str, bytes]] = {}
    for key, chunks in groups.items():
        head = chunks.get(0)
        if head is None:
            continue
        n = head.get("n", 1)
        if any(i not in chunks for i in range(n)):
            continue
        out[key] = (head["type"], b"".join(bytes(chunks[i]["data"]) for i in range(n)))
    return out
