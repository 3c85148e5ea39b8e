"""The storage format of a database: which version of this package's documents it holds, declared once.

One document in the metadata collection (``schema.CollectionNames.metadata``) records it, with the
collections that hold per-thread documents (``thread_collections.py``)::

    {"_id": "storage_format", "format": "langgraph-durable-mongodb", "version": FORMAT_VERSION,
     "thread_collections": ["checkpoints", "checkpoint_blobs", "checkpoint_writes", ...]}

Every storage class runs ``StorageFormat.check_plan`` before its first plan (``_plans.faces``), so before
its first write: an empty database is stamped; one holding our checkpoints without a stamp (written by
0.1.0) is stamped; a newer version, or a foreign format (notably ``langgraph-checkpoint-mongodb``'s
``MongoDBSaver``, whose collections share our default names), raises ``IncompatibleStorageError``
before anything is written.

A database of an older version is upgraded, one step of ``MIGRATIONS`` after another, each followed by
the stamp's new version: version 1 had no thread summaries (``thread_summaries.py``), version 2 keyed journal
entries by ordinals (``visit_keys.py``). Upgrade every process writing a database together: one of an older
version still running writes no summaries, and keys its entries by ordinals no run of this version meets.

Cost: one ``find`` on a stamped database, once per ``StorageFormat`` (a ``DurablePlatform`` shares one
among its storage classes); two ``find``s and the stamp's ``insert`` the first time; one ``update`` when
this process declares a per-thread collection the database does not list yet; the migrations, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import thread_summaries, visit_keys
from ._plans.requests import Find, InsertOne, Plan, UpdateMany
from .errors import IncompatibleStorageError
from .schema import CollectionNames
from .thread_collections import ThreadCollections

#: The version of the documents this package writes. Raise it when a release changes their shape.
FORMAT_VERSION = 3
#: What upgrades a database from each version to the next: version 1 had no thread summaries; version 2 keyed
#: journal entries by ordinals (``visit_keys.py``).
MIGRATIONS = {1: thread_summaries.build_plan, 2: visit_keys.upgrade_plan}
FORMAT_NAME = "langgraph-durable-mongodb"
FORMAT_DOCUMENT_ID = "storage_format"
#: The field of the stamp listing the per-thread collections (``thread_collections.py``).
THREAD_COLLECTIONS = "thread_collections"
#: How ``StoredFormat.foreign`` names a ``langgraph-checkpoint-mongodb`` database.
MONGODBSAVER = "MongoDBSaver"


def format_document(thread_collections: Sequence[str] = (), version: int = FORMAT_VERSION) -> dict[str, Any]:
    """The metadata document that stamps a database with this package's format (or an older ``version``, which
    ``MIGRATIONS`` then upgrade), declaring ``thread_collections``."""
    return {"_id": FORMAT_DOCUMENT_ID, "format": FORMAT_NAME, "version": version, THREAD_COLLECTIONS: list(thread_collections)}


@dataclass(frozen=True)
class StoredFormat:
    """What a database holds: a stamped ``version``, a ``foreign`` format, our unstamped data, or nothing;
    and the per-thread collections it declares (None: stamped, or written, before declarations)."""

    version: int | None = None
    foreign: str | None = None
    has_data: bool = False
    thread_collections: tuple[str, ...] | None = ()

    def describe(self) -> str:
        """``version 1``, ``foreign: MongoDBSaver``, ``unstamped (written by 0.1.0)`` or ``none yet``."""
        if self.foreign is not None:
            return f"foreign: {self.foreign}"
        if self.version is not None:
            return f"version {self.version}"
        return "unstamped (written by 0.1.0)" if self.has_data else "none yet"


def _shape_of(checkpoint: dict[str, Any]) -> str | None:
    """None for one of our checkpoint documents, else the name of the format that wrote it."""
    if "type" in checkpoint:  # MongoDBSaver: serialized ``checkpoint`` bytes beside their serde ``type``
        return MONGODBSAVER
    return None if "ts" in checkpoint else "unknown documents"


def read_format_plan(names: CollectionNames) -> Plan:
    """Read what the database holds (``StoredFormat``); one ``find``, two when it is not stamped. Writes nothing."""
    found = yield Find(names.metadata, {"_id": FORMAT_DOCUMENT_ID}, limit=1)
    if found:
        stamp = found[0]
        version = stamp.get("version")
        if stamp.get("format") != FORMAT_NAME or not isinstance(version, int):
            return StoredFormat(foreign=f"a {FORMAT_DOCUMENT_ID} document of {stamp.get('format')!r}", has_data=True)
        return StoredFormat(version=version, has_data=True, thread_collections=_declared(stamp))
    sample = yield Find(names.checkpoints, {"checkpoint_ns": thread_summaries.NOT_SUMMARY}, {"_id": 0, "type": 1, "ts": 1}, limit=1)
    if not sample:
        return StoredFormat()
    return StoredFormat(foreign=_shape_of(sample[0]), has_data=True, thread_collections=None)


def _declared(stamp: dict[str, Any]) -> tuple[str, ...] | None:
    """The per-thread collections a stamp lists; None for a stamp written before it listed them."""
    listed = stamp.get(THREAD_COLLECTIONS)
    if not isinstance(listed, list):
        return None
    return tuple(n for n in listed if isinstance(n, str))


class StorageFormat:
    """The format check of one database, run once (then free) before the first write of any storage class sharing it.

    Args:
        db_name: the database (named in the errors' fixes).
        collections: its collection names (the stamp lives in ``metadata``; foreign data is looked for in
            ``checkpoints``).
    """

    def __init__(self, db_name: str, collections: CollectionNames | None = None) -> None:
        self.db_name = db_name
        self.collections = collections or CollectionNames()
        #: The per-thread collections of the database: declared by the storage classes sharing this check,
        #: and read from the stamp.
        self.thread_collections = ThreadCollections(self.collections)
        self._checked = False

    def check_plan(self) -> Plan:
        """Stamp an empty or 0.1.0 database, upgrade an older one (``MIGRATIONS``); raise
        ``IncompatibleStorageError`` for a newer or foreign format.

        Also learns the per-thread collections the stamp declares, and adds to it those declared here since.
        """
        if self._checked:
            yield from self._declare_plan()
            return
        stored = yield from read_format_plan(self.collections)
        if stored.foreign is not None:
            raise IncompatibleStorageError(self.foreign_message(stored), db_name=self.db_name, found=stored.describe())
        self.thread_collections.learn(stored.thread_collections)
        version = stored.version
        if version is None:
            names = self.thread_collections.names
            version = 1 if stored.has_data else FORMAT_VERSION  # 0.1.0's data is of format 1
            if (yield InsertOne(self.collections.metadata, format_document(names, version))):
                self.thread_collections.stored(names)  # else another process stamped it first: declared below
        elif version > FORMAT_VERSION:
            raise IncompatibleStorageError(
                f"database {self.db_name!r} holds storage format version {stored.version}, newer than this "
                f"langgraph-durable-mongodb writes ({FORMAT_VERSION}); nothing was written. Upgrade the package "
                "(pip install -U langgraph-durable-mongodb)",
                db_name=self.db_name,
                found=stored.describe(),
            )
        yield from self._migrate_plan(version)
        yield from self._declare_plan()
        self._checked = True

    def _migrate_plan(self, version: int) -> Plan:
        """Upgrade a database of ``version`` to ``FORMAT_VERSION``: each step of ``MIGRATIONS``, then the stamp's
        version. Two processes upgrading at once both run a step; each step writes the same twice."""
        for step in range(version, FORMAT_VERSION):
            yield from MIGRATIONS[step](self.collections)
            yield UpdateMany(self.collections.metadata, {"_id": FORMAT_DOCUMENT_ID, "version": step}, {"$set": {"version": step + 1}})

    def thread_collections_plan(self) -> Plan:
        """Every per-thread collection of the database, read again: another process may have declared one
        since this one checked (one ``find``). For what deletes or copies a thread whole.

        Returns:
            The collection names (``ThreadCollections.names``).
        """
        found = yield Find(self.collections.metadata, {"_id": FORMAT_DOCUMENT_ID}, {"_id": 0, THREAD_COLLECTIONS: 1}, limit=1)
        if found:
            self.thread_collections.learn(_declared(found[0]))
        return self.thread_collections.names

    def _declare_plan(self) -> Plan:
        """Add to the stamp the per-thread collections it does not list yet (one ``update``, when there are)."""
        missing = self.thread_collections.unstored()
        if missing:
            update = {"$addToSet": {THREAD_COLLECTIONS: {"$each": missing}}}
            yield UpdateMany(self.collections.metadata, {"_id": FORMAT_DOCUMENT_ID}, update)
            self.thread_collections.stored(missing)

    def foreign_message(self, stored: StoredFormat) -> str:
        """What to say of a database holding ``stored``, a foreign format: what it is, and what to do
        (for MongoDBSaver's, ``import-mongodbsaver``)."""
        where = f"database {self.db_name!r} (collection {self.collections.checkpoints!r})"
        if stored.foreign == MONGODBSAVER:
            return (
                f"{where} holds langgraph-checkpoint-mongodb MongoDBSaver checkpoints, which this package does not "
                "read; nothing was written. Import them into a new database with `langgraph-durable-mongodb "
                f"--uri URI --db NEW_DB import-mongodbsaver --source-db {self.db_name}` and use db_name=NEW_DB, "
                "or use another db_name"
            )
        return (
            f"{where} holds {stored.foreign}, not written by langgraph-durable-mongodb; nothing was written. "
            "Use another db_name (or other collection names)"
        )
