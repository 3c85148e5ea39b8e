"""How each server this library runs on departs from MongoDB, declared once.

The interpreters ask a ``ServerQuirks`` what to do where servers differ, and
never test for a server themselves. It is chosen once per interpreter: from the
client's class for mongomock (no I/O), otherwise by ``identify_plan`` the first
time a request depends on it. ``doctor`` identifies the server with the same plan.

- MongoDB: the reference; every flag at its default.
- mongomock: takes no ``UpdateOne``/``ReplaceOne`` of pymongo >= 4.20 in
  ``bulk_write`` (they pass a ``sort`` it does not know), so upserts go one by one.
- FerretDB 1.x: a ``createIndexes`` holding several indexes drops the
  connection; an upsert that lost a duplicate-key race is answered without
  ``nModified``, so pymongo's ``bulk_write`` raises ``KeyError``; conditional
  updates are not atomic; TTL indexes are refused; ``$group`` accumulates
  only ``$sum`` and ``$count``.
- mongo-java-server: no ``hello`` (``isMaster`` answers instead); TTL indexes
  are accepted and never expire; no transactions; strings compare by UTF-16
  code units (U+E000 sorts after U+10000), so a range query may return more
  than MongoDB would (the thread list drops ids outside its prefix).
- FerretDB 1.x and mongo-java-server find a document from its ``_id`` index only
  by a filter on ``_id`` alone (FerretDB pushes no other filter down to SQLite;
  mongo-java-server looks a unique index up only by exactly its fields): a filter
  that also names the thread the ``_id`` encodes (``schema.key_filter``, for a
  sharded cluster, which neither can be) scans the collection, so it is sent
  without those fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pymongo.errors import OperationFailure

from .requests import Command, Plan, Raised, Try, ask


@dataclass(frozen=True)
class ServerQuirks:
    """Where a server differs from MongoDB; MongoDB's behaviour is every default."""

    name: str = "MongoDB"
    #: ``bulk_write`` takes pymongo's ``UpdateOne``/``ReplaceOne`` upserts (else: one command per operation).
    bulk_upserts: bool = True
    #: a lost upsert race is answered without ``nModified`` (pymongo raises ``KeyError``): apply one by one.
    lost_upsert_race_lacks_nmodified: bool = False
    #: ``createIndexes`` takes one index per command.
    one_index_per_command: bool = False
    #: single-document conditional updates are atomic (the fences rely on it; ``doctor`` says when they are not).
    atomic_conditional_updates: bool = True
    #: answers ``hello`` (else ``isMaster``).
    hello: bool = True
    #: a TTL index expires documents.
    ttl_expiry: bool = True
    #: multi-document transactions exist (on a replica set).
    transactions: bool = True
    #: a document is found from the ``_id`` index only by a filter on ``_id`` alone: a filter naming one by its key
    #: (``schema.key_filter``) is sent without the key fields its ``_id`` encodes (else the collection is scanned).
    id_alone: bool = False


MONGODB = ServerQuirks()
MONGOMOCK = ServerQuirks("mongomock", bulk_upserts=False, transactions=False)
FERRETDB = ServerQuirks(
    "FerretDB",
    lost_upsert_race_lacks_nmodified=True,
    one_index_per_command=True,
    atomic_conditional_updates=False,
    ttl_expiry=False,
    transactions=False,
    id_alone=True,
)
MONGO_JAVA_SERVER = ServerQuirks("mongo-java-server", hello=False, ttl_expiry=False, transactions=False, id_alone=True)


def of_client(db_or_client: Any) -> ServerQuirks | None:
    """The quirks a client's class tells (mongomock, mongomock_motor), or None: the server must be asked."""
    for candidate in (db_or_client, getattr(db_or_client, "client", None)):
        if any(cls.__module__.startswith(("mongomock", "mongomock_motor")) for cls in type(candidate).__mro__):
            return MONGOMOCK
    return None


def identify(build_info: Mapping[str, Any], process: str | None = None) -> ServerQuirks:
    """The server's quirks from its ``buildInfo`` (FerretDB names itself there) and, when known,
    ``serverStatus.process`` (mongo-java-server says ``"java"``, mongod ``"mongod"``)."""
    if build_info.get("ferretdbVersion"):
        return FERRETDB
    if process == "java":
        return MONGO_JAVA_SERVER
    return MONGODB


def identify_plan() -> Plan[tuple[ServerQuirks, dict[str, Any]]]:
    """Which server answers: ``buildInfo`` names FerretDB; else ``serverStatus.process`` tells mongo-java-server
    (``"java"``) from mongod. A user not allowed ``serverStatus`` is taken to be on MongoDB.

    Returns:
        ``(ServerQuirks, buildInfo)``.

    Raises:
        PyMongoError: ``buildInfo`` failed, or ``serverStatus`` failed otherwise than by the server's refusal.
    """
    info = yield from ask(Command({"buildInfo": 1}))
    if info.get("ferretdbVersion"):
        return FERRETDB, info
    status = yield from ask(Try(Command({"serverStatus": 1})))
    if isinstance(status, Raised):
        if not isinstance(status.error, OperationFailure):
            raise status.error
        return identify(info), info
    return identify(info, status.value.get("process")), info
