"""A stored value loaded through the saver's serde, under encryption's rules (issue 44, break 9).

LangGraph's ``EncryptedSerializer`` writes every value as ``<type>+<cipher>`` (``msgpack+aes``) and, reading, loads a
type without a cipher in clear. Whoever can write the database could then plant clear msgpack where an encrypted
value was (its checksum or digest recomputed) and have it replayed, loaded as state, or decide what it constructs:
under an ``EncryptedSerializer`` a value without the cipher's type is refused here (``CorruptDocumentError``), so
encryption authenticates what it stores. A value that cannot be decrypted (another key; or no key, the serde not an
``EncryptedSerializer``) raises ``EncryptionKeyError`` naming the thread, the document and the key.

A database written before encryption was turned on holds clear values: they are refused the same way (a planted
value looks exactly like them). See docs/security.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from ..errors import CorruptDocumentError, EncryptionKeyError


@dataclass(frozen=True)
class StoredAt:
    """Where a stored value is, for an error to name: its thread, collection, document (its ``_id``, or what names
    it: a journal position) and field."""

    thread_id: str
    collection: str
    document_id: Any
    field: str

    def __str__(self) -> str:
        return f"thread {self.thread_id!r}: {self.collection} document {self.document_id!r}, field {self.field!r}"


def encrypts(serde: SerializerProtocol) -> bool:
    """Whether ``serde`` encrypts every value it writes (LangGraph's ``EncryptedSerializer``)."""
    return isinstance(serde, EncryptedSerializer)


def load_stored(serde: SerializerProtocol, typed: tuple[str, bytes], at: StoredAt) -> Any:
    """The value ``typed`` (the serde's type and bytes, as stored at ``at``), loaded by ``serde``.

    Raises:
        CorruptDocumentError: ``serde`` encrypts, and the value is stored in clear.
        EncryptionKeyError: the value is encrypted, and ``serde`` cannot decrypt it (another key, or none).
    """
    type_ = typed[0]
    if isinstance(serde, EncryptedSerializer):
        inner, encrypted, cipher = type_.partition("+")
        if not encrypted:
            raise _in_clear(at, type_)
        try:
            data = serde.cipher.decrypt(cipher, typed[1])
        except Exception as error:  # whatever the cipher raises for a key that does not open it
            why = f"it cannot be decrypted with this serde's key ({type(error).__name__}: {error})"
            raise _another_key(at, why) from error
        return serde.serde.loads_typed((inner, data))
    try:
        return serde.loads_typed(typed)
    except Exception as error:
        if "+" in type_:  # written by an EncryptedSerializer, read by a serde without a key
            raise _another_key(at, f"it is encrypted ({type_!r}) and this saver's serde has no key") from error
        raise


def _in_clear(at: StoredAt, type_: str) -> CorruptDocumentError:
    return CorruptDocumentError(
        f"{at}: the value is stored in clear (serde type {type_!r}), but this saver's serde is an EncryptedSerializer, "
        "which writes every value encrypted: it was written by someone who can write the database, or before "
        "encryption was turned on. Nothing was run from it. Restore the document from a backup, or delete it (or its "
        "thread); a thread written before encryption was turned on is finished or deleted without it "
        "(docs/security.md)",
        collection=at.collection, document_id=at.document_id, field=at.field,
    )


def _another_key(at: StoredAt, why: str) -> EncryptionKeyError:
    return EncryptionKeyError(
        f"{at}: {why}: it was written under another key. Nothing was run from it. Configure the serde it was "
        "written with (EncryptedSerializer.from_pycryptodome_aes(key=...), or LANGGRAPH_AES_KEY), or use another "
        "database",
        thread_id=at.thread_id, collection=at.collection, document_id=at.document_id, field=at.field,
    )
