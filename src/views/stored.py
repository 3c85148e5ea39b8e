"""What the CLI reads of threads, as plans: documents as stored, never decoded.

``holds_checkpoints_plan`` tells whether a database holds any checkpoint, ``thread_exists_plan`` whether a thread
has any document; ``inspected_plan`` reads a thread's checkpoints (no values) and journal entries (no outcomes);
``journal_documents_plan`` its raw entries; ``entry_plan`` the entry at one position; ``checkpoint_counts_plan`` how
many checkpoints threads hold. ``ThreadDocuments`` runs them on a sync client. The thread list is the views'
(``reader.ThreadViews.threads``). Thread ids are values in these filters, never field names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..journal.labels import labelled
from ..storage.plans.interpreters import SyncInterpreter
from ..storage.plans.requests import Aggregate, Find, Plan, ask
from ..storage.schema import CollectionNames
from ..storage.thread_summaries import NOT_SUMMARY
from .reader import require_our_format

#: Databases of the server itself, never holding threads.
SYSTEM_DATABASES = frozenset({"admin", "local", "config"})
#: What ``inspected_plan`` reads of a checkpoint: never its serialized checkpoint or values.
INSPECTED_CHECKPOINT = {"checkpoint_ns": 1, "checkpoint_id": 1, "ts": 1, "metadata.step": 1, "metadata.source": 1}


def holds_checkpoints_plan(names: CollectionNames) -> Plan[bool]:
    """Whether the database holds any checkpoint (one ``find`` of one ``_id``)."""
    return bool((yield from ask(Find(names.checkpoints, {}, {"_id": 1}, limit=1))))


def thread_exists_plan(names: CollectionNames, thread_id: str) -> Plan[bool]:
    """Whether the thread has a checkpoint or, failing that, a journal entry (one ``find`` each, at most)."""
    for collection in (names.checkpoints, names.journal):
        if (yield from ask(Find(collection, {"thread_id": thread_id}, {"_id": 1}, limit=1))):
            return True
    return False


def inspected_plan(
    names: CollectionNames, thread_id: str
) -> Plan[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """``(checkpoints, entries)``: the thread's checkpoints (``INSPECTED_CHECKPOINT``, every namespace) and its
    journal entries without their serialized outcomes, labelled (``journal.labels``)."""
    checkpoints = yield from ask(
        Find(names.checkpoints, {"thread_id": thread_id, "checkpoint_ns": NOT_SUMMARY}, INSPECTED_CHECKPOINT)
    )
    entries = yield from ask(Find(names.journal, {"thread_id": thread_id, "chunk": 0}, {"outcome.data": 0}))
    return checkpoints, labelled(entries)


def journal_documents_plan(names: CollectionNames, thread_id: str, with_outcomes: bool) -> Plan[list[dict[str, Any]]]:
    """The thread's raw journal documents without ``_id``, in the order they were created; without
    ``with_outcomes``, only each entry's first document, without its serialized outcome (its type, digest and
    preview stay). Each entry reads ``path`` and ``occurrence`` as labels, its stored key under ``visit``
    (``journal.labels``)."""
    query = {"thread_id": thread_id} if with_outcomes else {"thread_id": thread_id, "chunk": 0}
    projection = {"_id": 0} if with_outcomes else {"_id": 0, "outcome.data": 0}
    return labelled((yield from ask(Find(names.journal, query, projection, sort=[("created_at", 1), ("path", 1)]))))


#: What ``entry_plan`` reads of an entry: what it is, and what labels it.
_ENTRY_FIELDS = {"_id": 0, "kind": 1, "name": 1, "status": 1, "path": 1, "node": 1, "occurrence": 1, "effect_key": 1,
                 "root_key": 1, "created_at": 1}


def entry_plan(names: CollectionNames, position: Mapping[str, Any]) -> Plan[dict[str, Any] | None]:
    """The entry at ``position`` (``POSITION_FIELDS``), as stored or as its labels read (``journal.labels``): its
    ``kind``, ``name``, ``status`` and stored ``position``; None when no entry is there. One ``find``; a second
    reads the thread's entries when the position is written as labels."""
    found = yield from ask(Find(names.journal, {**position, "chunk": 0}, _ENTRY_FIELDS, limit=1))
    if not found:
        entries = yield from ask(Find(names.journal, {"thread_id": position["thread_id"], "chunk": 0}, _ENTRY_FIELDS))
        labels = ("path", "node", "occurrence", "effect_key")
        found = [e for e in labelled(entries) if "visit" in e and all(e[k] == position[k] for k in labels)]
    if not found:
        return None
    entry = found[0]
    stored = {**position, **entry.get("visit", {"path": entry["path"], "occurrence": entry["occurrence"]})}
    return {"kind": entry.get("kind"), "name": entry.get("name"), "status": entry.get("status"), "position": stored}


def checkpoint_counts_plan(names: CollectionNames, thread_ids: Sequence[str]) -> Plan[dict[str, int]]:
    """``{thread_id: checkpoints in every namespace}`` for each of ``thread_ids`` (0 for one without any)."""
    counted = yield from ask(Aggregate(names.checkpoints, [
        {"$match": {"thread_id": {"$in": list(thread_ids)}, "checkpoint_ns": NOT_SUMMARY}},
        {"$group": {"_id": "$thread_id", "checkpoints": {"$sum": 1}}},
    ]))
    found = {group["_id"]: group["checkpoints"] for group in counted}
    return {thread_id: found.get(thread_id, 0) for thread_id in thread_ids}


class ThreadDocuments:
    """The plans above, run on a sync client for the CLI.

    Args:
        client: a sync client (``MongoClient``, mongomock).
        db_name: the database.
        names: its collection names.
    """

    def __init__(self, client: Any, db_name: str, names: CollectionNames | None = None) -> None:
        self.client, self.names = client, names or CollectionNames()
        self.db = client[db_name]
        self._io = SyncInterpreter(self.db)

    def databases_with_threads(self) -> list[str]:
        """The databases on the server that hold checkpoints, sorted: one ``find`` of one document in each."""
        return sorted(
            name
            for name in self.client.list_database_names()
            if name not in SYSTEM_DATABASES
            and SyncInterpreter(self.client[name]).run(holds_checkpoints_plan(self.names))
        )

    def exists(self, thread_id: str) -> bool:
        """``thread_exists_plan``."""
        return self._io.run(thread_exists_plan(self.names, thread_id))

    def inspected(self, thread_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``inspected_plan``, on a database of our format.

        Raises:
            IncompatibleStorageError: the database holds a foreign format.
        """
        require_our_format(self.db, self.names)
        return self._io.run(inspected_plan(self.names, thread_id))

    def journal_documents(self, thread_id: str, with_outcomes: bool) -> list[dict[str, Any]]:
        """``journal_documents_plan``."""
        return self._io.run(journal_documents_plan(self.names, thread_id, with_outcomes))

    def entry(self, position: Mapping[str, Any]) -> dict[str, Any] | None:
        """``entry_plan``."""
        return self._io.run(entry_plan(self.names, position))

    def checkpoint_counts(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """``checkpoint_counts_plan``."""
        return self._io.run(checkpoint_counts_plan(self.names, thread_ids))
