"""What a deployment is made of, as ``doctor`` reports it: the server (its identity, handshake and features),
the write and read concerns in force, the format its database holds, the indexes ``schema.py`` declares
(created where missing, when asked), and the thread summaries that drifted from their checkpoints (rebuilt,
when asked: ``summary_drift``).

The server's commands are plans run on the ``admin`` database; the format, index and summary checks are
plans run on the deployment's database.

Example::

    report = check_deployment(MongoClient(uri), "langgraph", CollectionNames(), fix=False)
    report["ok"], report["server"]["name"], [row for row in report["indexes"] if not row["present"]]
"""

from __future__ import annotations

from typing import Any, overload

from pymongo import WriteConcern
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern

from .format import FORMAT_VERSION, StoredFormat, read_format_plan
from .plans import quirks as server_quirks
from .plans.interpreters import SyncInterpreter
from .plans.requests import Command, CreateIndexes, ListCollections, ListIndexes, Plan, Raised, Returned, Try, ask
from .schema import MAJORITY_WRITTEN, CollectionNames, indexes_by_collection
from .summary_drift import drift_plan

#: How long ``doctor`` compares thread summaries with their root checkpoints (a sample of a large database);
#: ``--repair`` compares, and rebuilds, every one.
DRIFT_SECONDS = 5.0

#: MongoDB's code for a command the server does not know (a ``hello`` sent to mongo-java-server).
COMMAND_NOT_FOUND = 59


@overload
def _refusal(result: Returned) -> None: ...
@overload
def _refusal(result: Raised) -> OperationFailure: ...
def _refusal(result: Returned | Raised) -> OperationFailure | None:
    """The server's refusal of a command run in a ``Try``, or None when it answered; any other error is raised."""
    if not isinstance(result, Raised):
        return None
    if not isinstance(result.error, OperationFailure):
        raise result.error
    return result.error


def server_identity_plan() -> Plan[tuple[dict[str, Any], server_quirks.ServerQuirks]]:
    """The MongoDB version the server reports and, when it is a stand-in, which one (``quirks.identify_plan``, the
    interpreters' identification). Run it on the ``admin`` database.

    Returns:
        ``({"version", "name", "ferretdb", "mongo_java_server"}, ServerQuirks)``.
    """
    quirks, info = yield from server_quirks.identify_plan()
    identity = {
        "version": info.get("version"),
        "name": quirks.name,
        "ferretdb": info.get("ferretdbVersion"),
        "mongo_java_server": quirks is server_quirks.MONGO_JAVA_SERVER,
    }
    return identity, quirks


def handshake_plan(quirks: server_quirks.ServerQuirks) -> Plan[tuple[str, dict[str, Any]]]:
    """``("hello", reply)``, or ``("isMaster", reply)`` from a server without ``hello`` (mongo-java-server,
    MongoDB before 4.4.2): they answer the legacy command with the same fields."""
    if quirks.hello:
        hello = yield from ask(Try(Command({"hello": 1})))
        if isinstance(hello, Returned):
            return "hello", hello.value
        refused = _refusal(hello)
        if refused.code != COMMAND_NOT_FOUND:
            raise refused
    return "isMaster", (yield from ask(Command({"isMaster": 1})))


def server_plan() -> Plan[dict[str, Any]]:
    """``{"server": {identity..., "handshake"}, "features": {"replica_set", "transactions", "ttl_indexes",
    "atomic_updates"}}``, on the ``admin`` database."""
    identity, quirks = yield from server_identity_plan()
    command, hello = yield from handshake_plan(quirks)
    replica_set = bool(hello.get("setName"))
    return {
        "server": {**identity, "handshake": command},
        "features": {"replica_set": replica_set, "transactions": replica_set and quirks.transactions,
                     "ttl_indexes": quirks.ttl_expiry, "atomic_updates": quirks.atomic_conditional_updates},
    }


def default_concerns_plan() -> Plan[dict[str, Any] | None]:
    """``{"write", "read"}``: the cluster-wide default concerns MongoDB 4.4 and later report
    (``getDefaultRWConcern``, on the ``admin`` database); None from a server that refuses the command."""
    defaults = yield from ask(Try(Command({"getDefaultRWConcern": 1})))
    if isinstance(defaults, Raised):
        _refusal(defaults)  # raises what is not the server's refusal
        return None
    return {"write": defaults.value.get("defaultWriteConcern"), "read": defaults.value.get("defaultReadConcern")}


def concerns(client: Any, names: CollectionNames) -> dict[str, Any]:
    """The write and read concerns this library's commands go out with on ``client``.

    Every collection is written with the client's write concern (``{}``: the server's default, ``w: "majority"``
    on a replica set since MongoDB 5.0) but those of ``schema.MAJORITY_WRITTEN``, always ``w: "majority"``; every
    read is made with the client's read concern on the primary (or as the client's read preference says).

    Returns:
        ``{"write": {...}, "read": {...}, "read_preference": name, "majority_written": [collection, ...]}``, to which
        ``check_deployment`` adds ``server_default`` (``default_concerns_plan``).
    """
    # getattr: a mongomock client answers an unknown attribute with a database of that name
    write, read = getattr(client, "write_concern", None), getattr(client, "read_concern", None)
    preference = getattr(client, "read_preference", None)
    return {
        "write": write.document if isinstance(write, WriteConcern) else {},
        "read": read.document if isinstance(read, ReadConcern) else {},
        "read_preference": mode if isinstance(mode := getattr(preference, "mongos_mode", None), str) else "primary",
        "majority_written": [getattr(names, role) for role in MAJORITY_WRITTEN],
    }


def server_identity(client: Any) -> tuple[dict[str, Any], server_quirks.ServerQuirks]:
    """``server_identity_plan`` on ``client``'s ``admin`` database.

    Args:
        client: a sync client.

    Returns:
        The server's identity and its quirks.
    """
    return SyncInterpreter(client.admin).run(server_identity_plan())


def check_deployment(
    client: Any, db_name: str, names: CollectionNames, fix: bool, repair: bool = False
) -> dict[str, Any]:
    """The server, its features, the concerns in force, the stored format, each declared index and the thread
    summaries; with ``fix``, missing indexes created; with ``repair``, drifted summaries rebuilt.

    A database of another format (MongoDBSaver's, a newer one, a malformed stamp) is not ours to fix: ``fix``
    and ``repair`` write nothing there.

    Args:
        client: a sync client.
        db_name: the database.
        names: its collection names.
        fix: create the indexes that are missing.
        repair: compare every thread's summary with its root checkpoints and rebuild those missing or short,
            beside running writers (else a sample: ``DRIFT_SECONDS``).

    Returns:
        ``{"server", "features", "concerns", "indexes": [{"collection", "index", "present", and "created",
        "unused" or "error"}], "format", "summaries": Drift.as_dict() or None, "ok"}``: ``ok`` when the format is
        ours, every index is present, created or unused, and no summary is missing or short (or all were rebuilt).

    Raises:
        pymongo.errors.PyMongoError: the server failed a command (``server_errors.typed_server_errors`` types it).
    """
    report = SyncInterpreter(client.admin).run(server_plan())
    server_default = SyncInterpreter(client.admin).run(default_concerns_plan())
    report["concerns"] = {**concerns(client, names), "server_default": server_default}
    db = SyncInterpreter(client[db_name])
    stored = db.run(read_format_plan(names))
    ours = (
        stored.foreign is None
        and stored.problem is None
        and (stored.version is None or stored.version <= FORMAT_VERSION)
    )
    report["indexes"] = db.run(index_rows_plan(names, fix and ours))
    report["format"] = stored.describe()
    report["summaries"] = db.run(_summaries_plan(names, stored, repair))
    indexed = all(r["present"] or r.get("created") or r.get("unused") for r in report["indexes"])
    report["ok"] = ours and indexed and not drifted(report["summaries"])
    return report


def drifted(summaries: dict[str, Any] | None) -> bool:
    """Whether a report's ``summaries`` (``Drift.as_dict()``) found a summary missing or short it did not rebuild."""
    return summaries is not None and (
        summaries["missing"] + summaries["short"] > summaries["repaired"] or bool(summaries["unsettled"])
    )


def _summaries_plan(names: CollectionNames, stored: StoredFormat, repair: bool) -> Plan[dict[str, Any] | None]:
    """The ``Drift`` of a database of ours that has summaries (a well-formed stamp of version 2 on, not newer), as a
    dict; None for any other (nothing is repaired there)."""
    if stored.version is None or not 2 <= stored.version <= FORMAT_VERSION:
        return None
    drift = yield from drift_plan(names, repair=repair, seconds=None if repair else DRIFT_SECONDS)
    return drift.as_dict()


def index_rows_plan(names: CollectionNames, fix: bool) -> Plan[list[dict[str, Any]]]:
    """One row per declared index: present, or missing (then created with ``fix``, or unused).

    Returns:
        ``[{"collection", "index", "present", and "created", "unused" or "error"}]``.
    """
    # Checkpoints and no run lock ever taken: a deployment with exclusive_runs=False (the Agent Server factory's).
    collections = set((yield from ask(ListCollections())))
    no_run_locks = names.checkpoints in collections and names.runs not in collections
    rows: list[dict[str, Any]] = []
    for coll, indexes in indexes_by_collection(names).items():
        present = set((yield from ask(ListIndexes(coll))))
        for index in indexes:
            name = index.document["name"]
            row: dict[str, Any] = {"collection": coll, "index": name, "present": name in present}
            if not row["present"] and coll == names.runs and no_run_locks:
                row["unused"] = True
            elif not row["present"] and fix:
                created = yield from ask(Try(CreateIndexes(coll, [index])))
                refused = _refusal(created)
                row.update({"error": str(refused)} if refused is not None else {"created": True})
            rows.append(row)
    return rows
