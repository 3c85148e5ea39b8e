"""``doctor``: connection, server identity and features, and the indexes ``schema.py`` declares."""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, TextIO

from pymongo.errors import OperationFailure

from .._plans import quirks as server_quirks
from .._plans.interpreters import SyncInterpreter
from ..schema import CollectionNames, indexes_by_collection
from ..storage_format import FORMAT_VERSION, read_format_plan
from .terminal import escaped


def server_identity(client: Any) -> tuple[dict[str, Any], server_quirks.ServerQuirks]:
    """The MongoDB version the server reports and, when it is a stand-in, which one (``quirks.identify``).

    FerretDB says so in ``buildInfo.ferretdbVersion``; mongo-java-server only in
    ``serverStatus.process`` (``"java"``; mongod says ``"mongod"``). A user not allowed
    ``serverStatus`` is taken to be on MongoDB.
    """
    info = client.admin.command("buildInfo")
    try:
        process = client.admin.command("serverStatus").get("process")
    except OperationFailure:
        process = None
    quirks = server_quirks.identify(info, process)
    identity = {
        "version": info.get("version"),
        "name": quirks.name,
        "ferretdb": info.get("ferretdbVersion"),
        "mongo_java_server": quirks is server_quirks.MONGO_JAVA_SERVER,
    }
    return identity, quirks


def handshake(client: Any, quirks: server_quirks.ServerQuirks) -> tuple[str, dict[str, Any]]:
    """``("hello", reply)``, or ``("isMaster", reply)`` from a server without ``hello`` (mongo-java-server,
    MongoDB before 4.4.2): they answer the legacy command with the same fields."""
    if quirks.hello:
        try:
            return "hello", client.admin.command("hello")
        except OperationFailure as error:
            if error.code != 59:  # CommandNotFound
                raise
    return "isMaster", client.admin.command("isMaster")


def fix_command(uri: str | None, db_name: str) -> str:
    """The ``doctor --fix`` command for this database: ``--db``, and ``--uri`` unless ``MONGODB_URI`` gives it
    (its password left out: the command is printed)."""
    words = ["langgraph-durable-mongodb"]
    if uri and uri != os.environ.get("MONGODB_URI"):
        words += ["--uri", shlex.quote(re.sub(r"(://[^/@:]*:)[^@/]*@", r"\1<password>@", uri))]
    return " ".join([*words, "--db", shlex.quote(db_name), "doctor", "--fix"])


def doctor(client: Any, db: Any, names: CollectionNames, fix: bool, uri: str | None = None) -> dict[str, Any]:
    server, quirks = server_identity(client)
    command, hello = handshake(client, quirks)
    report: dict[str, Any] = {"server": {**server, "handshake": command}, "features": {}, "indexes": []}
    report["features"]["replica_set"] = bool(hello.get("setName"))
    report["features"]["transactions"] = bool(hello.get("setName")) and quirks.transactions
    report["features"]["ttl_indexes"] = quirks.ttl_expiry
    stored = SyncInterpreter(db).run(read_format_plan(names))
    report["format"] = stored.describe()
    # A database of another format (MongoDBSaver's, or a newer one) is not ours to fix: --fix creates nothing there.
    ours = stored.foreign is None and (stored.version is None or stored.version <= FORMAT_VERSION)
    fix = fix and ours
    # Checkpoints and no run lock ever taken: a deployment with exclusive_runs=False (the Agent Server factory's).
    collections = set(db.list_collection_names())
    no_run_locks = names.checkpoints in collections and names.runs not in collections
    for coll, indexes in indexes_by_collection(names).items():
        present = {ix["name"] for ix in db[coll].list_indexes()}
        for index in indexes:
            name = index.document["name"]
            row = {"collection": coll, "index": name, "present": name in present}
            if not row["present"] and coll == names.runs and no_run_locks:
                row["unused"] = True
            elif not row["present"] and fix:
                try:
                    db[coll].create_indexes([index])
                    row["created"] = True
                except OperationFailure as error:
                    row["error"] = str(error)
            report["indexes"].append(row)
    report["ok"] = ours and all(r["present"] or r.get("created") or r.get("unused") for r in report["indexes"])
    report["fix_command"] = fix_command(uri, db.name)
    return report


def render_doctor(report: dict[str, Any], out: TextIO) -> None:
    """The report, one line per check (the server's strings escaped)."""
    report = escaped(report)
    server = report["server"]
    if server["ferretdb"]:
        kind = f"FerretDB {server['ferretdb']} (MongoDB {server['version']} wire protocol)"
    elif server["mongo_java_server"]:
        kind = f"mongo-java-server (MongoDB {server['version']} wire protocol)"
    else:
        kind = f"MongoDB {server['version']}"
    out.write(f"connection  ok\nserver      {kind}\n")
    for feature, ok in report["features"].items():
        out.write(f"feature     {feature:<13} {'yes' if ok else 'no'}\n")
    out.write(f"format      {report['format']}\n")
    labels = [f"{row['collection']}.{row['index']}" for row in report["indexes"]]
    width = max(map(len, labels), default=0)
    for label, row in zip(labels, report["indexes"]):
        state = "present" if row["present"] else ("created" if row.get("created") else "MISSING")
        if row.get("unused"):
            state = "not used (no run lock taken: exclusive_runs=False, as on Agent Server)"
        out.write(f"index       {label:<{width}}  {state}\n")
    if not report["ok"]:
        out.write(f"\nsome indexes are missing: run `{report['fix_command']}`\n")
