"""The storage format of a database: which version of this package's documents it holds, declared once.

One document in the metadata collection (``schema.CollectionNames.metadata``) records it, with the
collections that hold per-thread documents (``thread_collections.py``)::

    {"_id": "storage_format", "format": "langgraph-durable-mongodb", "version": FORMAT_VERSION,
     "thread_collections": ["checkpoints", "checkpoint_blobs", "checkpoint_writes", ...]}

Every storage class runs ``StorageFormat.check_plan`` before its first plan (``storage.plans.faces``), so before
its first write: an empty database is stamped; one holding our checkpoints without a stamp (written by
0.1.0) is stamped; a newer version, or a foreign format (notably ``langgraph-checkpoint-mongodb``'s
``MongoDBSaver``, whose collections share our default names), raises ``IncompatibleStorageError``
before anything is written.

The stamp is data, never an instruction. A version that is not an integer from 1 up, a
``thread_collections`` that is not a list of collection names, or a declared collection this library
could not have made (``thread_collections.py``) raises ``IncompatibleStorageError`` naming the document
and the fix, before any write: the stamp can never aim a delete, a copy or a TTL index at a collection. A
declared collection that does not exist (dropped, or not created yet) is skipped: it holds nothing to protect.

A database of an older version is upgraded, one step of ``MIGRATIONS`` after another, each followed by
the stamp's new version. Upgrade every process writing a database together; a process of an older version
still running is found, and what it wrote repaired, by ``doctor`` (``thread_summaries.drift_plan``), except the
journal entries a process of version 3 or older keys by ordinals: no run of version 4 meets them.

Cost: one ``find`` on a stamped database, once per ``StorageFormat`` (a ``DurablePlatform`` shares one
among its storage classes); two ``find``s and the stamp's ``insert`` the first time; one ``update`` when
this process declares a per-thread collection the database does not list yet; one ``listIndexes`` for each
declared collection this process was not given; the migrations, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import IncompatibleStorageError, RunsInFlightError
from . import summary_drift, thread_summaries, visit_keys
from .plans.requests import Find, InsertOne, ListIndexes, Plan, UpdateMany, ask
from .schema import KEY_INDEX_ROLES, THREAD_KEY_INDEXES, CollectionNames
from .thread_collections import ThreadCollections, declared_problem


def _serde_metadata(names: CollectionNames) -> Plan[None]:
    """Version 3 stores the metadata values BSON would change (an aware ``datetime``, a ``set``, a message)
    through the serde (``checkpointer.documents.stored_metadata``). Every document of version 2 reads as it
    is: nothing to rewrite. The version itself is the point: a process of version 2, which would hand such a
    value back undecoded, refuses the database instead."""
    yield from ()


#: The steps that upgrade a database, in order: ``MIGRATIONS[i]`` upgrades version ``i + 1`` to ``i + 2``, as a
#: plan on the database's ``CollectionNames``. Append a step to change the documents' shape; ``FORMAT_VERSION``
#: follows. Every step guarantees, with writers running:
#:
#: 1. *Restartable.* Cut short anywhere (a SIGKILL, a lost connection) and run again, or run by two processes
#:    at once, it ends with what one uninterrupted run writes. The stamp's version moves only after the step
#:    has ended, on a filter naming the version it upgraded (``$set`` to ``n + 1`` where ``version: n``).
#: 2. *Never rolls back.* Processes already upgraded write the new shape while it runs, between any of its
#:    reads and its writes: a value it derives from a read is written conditionally (a filter on what it read,
#:    ``$max``, ``$min``), never set blind, and what it cannot decide from its read it counts again.
#: 3. *Old writers stay readable.* A process of the old version may write until it is restarted: what it
#:    writes must still be read right, or be found and repaired by ``doctor`` / ``doctor --repair``.
#: 4. *Bounded.* It reads in pages in index order, never a whole collection into memory, and writes only
#:    documents of this library's collections (``CollectionNames``), never a name read from the database.
#: 5. *Tested.* ``tests/test_storage_migrations.py`` holds the template every step runs through: add the
#:    step's ``as_version`` (the database as the version before it left it) and its ``holds`` check there.
MIGRATIONS: list[Callable[[CollectionNames], Plan[object]]] = [
    summary_drift.build_plan,  # 1 -> 2: the thread summaries
    _serde_metadata,  # 2 -> 3: metadata values BSON would change stored through the serde
    visit_keys.upgrade_plan,  # 3 -> 4: journal entries keyed by visits, no longer by ordinals
]
#: The version of the documents this package writes: one more than the steps that lead to it.
FORMAT_VERSION = len(MIGRATIONS) + 1
#: The first version keyed by visits: a database older than it is upgraded only once no run is in flight.
KEYED_BY_VISITS = MIGRATIONS.index(visit_keys.upgrade_plan) + 2
#: Threads a ``RunsInFlightError`` names.
IN_FLIGHT_SHOWN = 20
FORMAT_NAME = "langgraph-durable-mongodb"
FORMAT_DOCUMENT_ID = "storage_format"
#: The field of the stamp listing the per-thread collections (``thread_collections.py``).
THREAD_COLLECTIONS = "thread_collections"
#: How ``StoredFormat.foreign`` names a ``langgraph-checkpoint-mongodb`` database.
MONGODBSAVER = "MongoDBSaver"


def format_document(thread_collections: Sequence[str] = (), version: int = FORMAT_VERSION) -> dict[str, Any]:
    """The metadata document that stamps a database with this package's format (or an older ``version``, which
    ``MIGRATIONS`` then upgrade), declaring ``thread_collections``."""
    return {
        "_id": FORMAT_DOCUMENT_ID,
        "format": FORMAT_NAME,
        "version": version,
        THREAD_COLLECTIONS: list(thread_collections),
    }


@dataclass(frozen=True)
class StoredFormat:
    """What a database holds: a stamped ``version``, a ``foreign`` format, our unstamped data, or nothing;
    the per-thread collections it declares (None: stamped, or written, before declarations); and the
    ``problem`` of a stamp of ours that cannot be read (then nothing else of it is)."""

    version: int | None = None
    foreign: str | None = None
    has_data: bool = False
    thread_collections: tuple[str, ...] | None = ()
    problem: str | None = None

    def describe(self) -> str:
        """``version 1``, ``foreign: MongoDBSaver``, ``malformed stamp: ...``, ``unstamped (written by 0.1.0)``
        or ``none yet``."""
        if self.foreign is not None:
            return f"foreign: {self.foreign}"
        if self.problem is not None:
            return f"malformed stamp: {self.problem}"
        if self.version is not None:
            return f"version {self.version}"
        return "unstamped (written by 0.1.0)" if self.has_data else "none yet"


def _shape_of(checkpoint: dict[str, Any]) -> str | None:
    """None for one of our checkpoint documents, else the name of the format that wrote it."""
    if "type" in checkpoint:  # MongoDBSaver: serialized ``checkpoint`` bytes beside their serde ``type``
        return MONGODBSAVER
    return None if "ts" in checkpoint else "unknown documents"


def read_format_plan(names: CollectionNames) -> Plan[StoredFormat]:
    """Read what the database holds (``StoredFormat``); one ``find``, two when it is not stamped. Writes nothing."""
    found = yield from ask(Find(names.metadata, {"_id": FORMAT_DOCUMENT_ID}, limit=1))
    if found:
        stamp = found[0]
        if stamp.get("format") != FORMAT_NAME:
            return StoredFormat(foreign=f"a {FORMAT_DOCUMENT_ID} document of {stamp.get('format')!r}", has_data=True)
        problem = _version_problem(stamp.get("version")) or declared_problem(stamp.get(THREAD_COLLECTIONS))
        if problem is not None:
            return StoredFormat(has_data=True, problem=problem)
        return StoredFormat(version=stamp["version"], has_data=True, thread_collections=_declared(stamp))
    shape = {"_id": 0, "type": 1, "ts": 1}
    sample = yield from ask(Find(names.checkpoints, {"checkpoint_ns": thread_summaries.NOT_SUMMARY}, shape, limit=1))
    if not sample:
        return StoredFormat()
    return StoredFormat(foreign=_shape_of(sample[0]), has_data=True, thread_collections=None)


def _version_problem(version: Any) -> str | None:
    """Why a stamp's ``version`` is none this library ever wrote (None when it is one): an integer from 1 up."""
    if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
        return None
    return f"its version is {version!r:.40}, not an integer from 1 up"


def _declared(stamp: dict[str, Any]) -> tuple[str, ...] | None:
    """The per-thread collections a stamp lists (checked by ``declared_problem``); None for a stamp written
    before it listed them."""
    listed = stamp.get(THREAD_COLLECTIONS)
    return None if listed is None else tuple(listed)


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

    def check_plan(self) -> Plan[None]:
        """Stamp an empty or 0.1.0 database, upgrade an older one (``MIGRATIONS``); raise
        ``IncompatibleStorageError`` for a newer or foreign format.

        Also learns the per-thread collections the stamp declares, and adds to it those declared here since.
        """
        if self._checked:
            yield from self._declare_plan()
            return
        stored = yield from read_format_plan(self.collections)
        self._refuse(stored)
        yield from self._learn_plan(stored.thread_collections)
        version = stored.version or (1 if stored.has_data else FORMAT_VERSION)  # 0.1.0's data is of format 1
        if version < KEYED_BY_VISITS:
            yield from self._drained_plan(version)
        if stored.version is None:
            names = self.thread_collections.names
            if (yield from ask(InsertOne(self.collections.metadata, format_document(names, version)))):
                self.thread_collections.stored(names)  # else another process stamped it first: declared below
        yield from self._migrate_plan(version)
        yield from self._declare_plan()
        self._checked = True

    def _refuse(self, stored: StoredFormat) -> None:
        """Raise ``IncompatibleStorageError`` for a foreign format, a malformed stamp or a newer version."""
        if stored.foreign is not None:
            raise IncompatibleStorageError(self.foreign_message(stored), db_name=self.db_name, found=stored.describe())
        if stored.problem is not None:
            raise self._malformed(stored.problem)
        if stored.version is not None and stored.version > FORMAT_VERSION:
            raise IncompatibleStorageError(
                f"database {self.db_name!r} holds storage format version {stored.version}, newer than this "
                f"langgraph-durable-mongodb writes ({FORMAT_VERSION}); nothing was written. Upgrade the package "
                "(pip install -U langgraph-durable-mongodb)",
                db_name=self.db_name,
                found=stored.describe(),
            )

    def _drained_plan(self, version: int) -> Plan[None]:
        """Raise ``RunsInFlightError`` if a run of ``version`` (older than ``KEYED_BY_VISITS``) is in flight: before
        any write, so the version that started it can still resume it (docs/storage.md)."""
        held = yield from visit_keys.runs_in_flight_plan(self.collections, IN_FLIGHT_SHOWN)
        if not held:
            return
        threads = tuple(d.get("thread_id") for d in held[:IN_FLIGHT_SHOWN])
        more = (
            f" and more (db.{self.collections.runs}.find({{owner: {{$ne: null}}}}))"
            if len(held) > IN_FLIGHT_SHOWN
            else ""
        )
        listed = ", ".join(repr(t) for t in threads)
        raise RunsInFlightError(
            f"database {self.db_name!r} holds storage format version {version} and runs in flight: thread(s) "
            f"{listed}{more} (their run locks are held, by a process of format {version} still running or by one "
            f"that crashed). Upgrading to format {FORMAT_VERSION} now would change the idempotency key of an effect "
            f"such a run started without recording it (an at-least-once effect under platform.compile), and the "
            f"resume would pass its provider a new key: it could charge twice. Nothing was written. Drain them "
            f"first: let the processes of format {version} end their runs, resume each crashed thread with the "
            f"version that started it, to its end or its next interrupt (graph.invoke(None, config)), then start "
            f"this version (docs/storage.md, 'Upgrades with runs in flight'). To upgrade anyway, accepting that those "
            f"effects may run again under new keys: db.{self.collections.runs}.updateMany({{owner: {{$ne: null}}}}, "
            f"{{$set: {{owner: null}}}})",
            db_name=self.db_name,
            found=f"version {version}, runs in flight",
            thread_ids=tuple(t for t in threads if isinstance(t, str)),  # a lock damaged by hand may name none
        )

    def _migrate_plan(self, version: int) -> Plan[None]:
        """Upgrade a database of ``version`` to ``FORMAT_VERSION``: each step of ``MIGRATIONS``, then the stamp's
        version. Two processes upgrading at once both run a step; each step writes the same twice."""
        for step in range(version, FORMAT_VERSION):
            yield from MIGRATIONS[step - 1](self.collections)
            stamp = {"_id": FORMAT_DOCUMENT_ID, "version": step}
            yield UpdateMany(self.collections.metadata, stamp, {"$set": {"version": step + 1}})

    def _learn_plan(self, declared: Sequence[str] | None) -> Plan[None]:
        """Learn the per-thread collections a stamp declares (checked by ``read_format_plan`` or
        ``thread_collections_plan``), once each is trusted: a name this process does not know is looked up
        (one ``listIndexes``) and must hold a key index this library gives a per-thread collection.

        A declared collection that does not exist (no index at all: every collection has its ``_id`` index) holds
        no thread to reach: it is skipped, left in the stamp, and looked up again the next time the stamp is read.
        Pruning it from the stamp would lose the declaration of a process that declared it and has not created it
        yet (a storage class declares its collections before its setup creates them).

        Raises:
            IncompatibleStorageError: a declared collection exists and holds none; nothing was written.
        """
        absent = []
        for name in self.thread_collections.untrusted(declared):
            indexes = yield from ask(ListIndexes(name))
            held = sorted(THREAD_KEY_INDEXES & set(indexes))
            if not indexes:
                absent.append(name)
            elif not held:
                raise self._malformed(
                    f"it declares {name!r} a per-thread collection, which is none of this process's collections and "
                    f"holds none of the key indexes this library gives one ({', '.join(sorted(THREAD_KEY_INDEXES))})",
                    name,
                )
            else:
                self.thread_collections.trust(name, KEY_INDEX_ROLES[held[0]])
        self.thread_collections.learn(declared, absent)

    def _malformed(self, problem: str, name: str | None = None) -> IncompatibleStorageError:
        """The error for a stamp of ours that cannot be trusted (``problem``), naming the document and the fix."""
        where = f"db.{self.collections.metadata}.updateOne({{_id: {FORMAT_DOCUMENT_ID!r}}}, "
        if name is not None:
            fix = (
                f"if {name!r} is this library's, give it to this process (collections=, journal_options) or create "
                f"its indexes (langgraph-durable-mongodb --db {self.db_name} doctor --fix, from the process that "
                f"uses it); if not, remove it: {where}{{$pull: {{{THREAD_COLLECTIONS}: {name!r}}}}})"
            )
        elif problem.startswith("its version"):
            fix = (
                f"set the version the data was written in, 1 when unsure (every upgrade from 1 is safe to run "
                f"again): {where}{{$set: {{version: 1}}}})"
            )
        else:
            fix = (
                f"remove what is not a collection of this library from {THREAD_COLLECTIONS}, or the field (then "
                f"every default per-thread collection is assumed): {where}{{$unset: {{{THREAD_COLLECTIONS}: ''}}}})"
            )
        return IncompatibleStorageError(
            f"database {self.db_name!r}: the {self.collections.metadata} document {{_id: {FORMAT_DOCUMENT_ID!r}}} "
            f"cannot be trusted: {problem}; nothing was written. Fix the document: {fix}",
            db_name=self.db_name,
            found=StoredFormat(problem=problem).describe(),
        )

    def thread_collections_plan(self) -> Plan[tuple[str, ...]]:
        """Every per-thread collection of the database, read again: another process may have declared one
        since this one checked (one ``find``). For what deletes or copies a thread whole: each name checked
        and trusted (``_learn_plan``) before the caller's first write.

        Returns:
            The collection names (``ThreadCollections.names``).

        Raises:
            IncompatibleStorageError: the stamp declares what this library could not have made.
        """
        declared = {"_id": 0, THREAD_COLLECTIONS: 1}
        found = yield from ask(Find(self.collections.metadata, {"_id": FORMAT_DOCUMENT_ID}, declared, limit=1))
        if found:
            problem = declared_problem(found[0].get(THREAD_COLLECTIONS))
            if problem is not None:
                raise self._malformed(problem)
            yield from self._learn_plan(_declared(found[0]))
        return self.thread_collections.names

    def _declare_plan(self) -> Plan[None]:
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
