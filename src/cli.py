"""``langgraph-durable-mongodb``: inspect threads, checkpoints and the activity journal.

Usage::

    langgraph-durable-mongodb --uri mongodb://localhost:27017 threads
    langgraph-durable-mongodb inspect case-42            # MONGODB_URI from the environment
    langgraph-durable-mongodb journal case-42 --json
    langgraph-durable-mongodb doctor --fix

Exit codes: 0 ok; 1 ``doctor`` found a problem; 2 bad usage or URI;
3 unknown thread; 4 the server cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, TextIO

from bson import json_util
from pymongo import MongoClient
from pymongo.errors import ConfigurationError, InvalidURI, OperationFailure, PyMongoError

from ._plans import quirks as server_quirks
from ._plans.interpreters import SyncInterpreter
from .schema import CollectionNames, indexes_by_collection
from .storage_format import read_format_plan

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_UNKNOWN_THREAD, EXIT_UNREACHABLE = 0, 1, 2, 3, 4


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _namespace_label(ns: str) -> str:
    """``case_investigation:abc|policy_analysis:def`` -> ``case_investigation|policy_analysis``."""
    return "|".join(seg.split(":")[0] for seg in ns.split("|")) if ns else "(root)"


def threads(db: Any, names: CollectionNames, limit: int) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    cursor = db[names.checkpoints].find(
        {}, {"_id": 0, "thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "ts": 1, "metadata.step": 1}
    )
    for doc in cursor.batch_size(10_000):
        row = rows.setdefault(
            doc["thread_id"], {"thread_id": doc["thread_id"], "checkpoints": 0, "latest_step": None, "updated": ""}
        )
        row["checkpoints"] += 1
        row["updated"] = max(row["updated"], doc.get("ts") or "")
        if doc["checkpoint_ns"] == "" and doc["checkpoint_id"] > row.get("_latest", ""):
            row["_latest"] = doc["checkpoint_id"]
            row["latest_step"] = (doc.get("metadata") or {}).get("step")
    ordered = sorted(rows.values(), key=lambda r: r["updated"], reverse=True)[:limit]
    for row in ordered:
        row.pop("_latest", None)
    return ordered


def inspect_thread(db: Any, names: CollectionNames, thread_id: str) -> dict[str, Any]:
    docs = list(
        db[names.checkpoints].find(
            {"thread_id": thread_id},
            {"_id": 0, "checkpoint_ns": 1, "checkpoint_id": 1, "ts": 1, "metadata.step": 1, "metadata.source": 1},
        )
    )
    journal = list(db[names.journal].find({"thread_id": thread_id, "chunk": 0}, {"_id": 0, "outcome.data": 0}))
    if not docs and not journal:
        raise CliError(f"unknown thread {thread_id!r}: no checkpoints and no journal entries", EXIT_UNKNOWN_THREAD)
    per_ns: dict[str, dict[str, Any]] = {}
    for doc in sorted(docs, key=lambda d: d["checkpoint_id"]):
        label = _namespace_label(doc["checkpoint_ns"])
        entry = per_ns.setdefault(label, {"namespace": label, "checkpoints": 0, "occurrences": set()})
        entry["checkpoints"] += 1
        entry["occurrences"].add(doc["checkpoint_ns"])
        entry.update(latest_id=doc["checkpoint_id"], latest_step=(doc.get("metadata") or {}).get("step"), updated=doc.get("ts"))
    namespaces = [{**e, "occurrences": len(e["occurrences"])} for e in sorted(per_ns.values(), key=lambda e: e["namespace"])]
    return {"thread_id": thread_id, "namespaces": namespaces, "operations": operation_tree(journal)}


def operation_tree(journal: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Journal entries grouped by path, then node occurrence, in the order they started."""
    by_path: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for doc in sorted(journal, key=lambda d: (d.get("path", ""), d.get("started_at") or 0)):
        node = f"{doc.get('node')}#{doc.get('occurrence', 1)}"
        by_path[doc.get("path", "?")][node].append(
            {
                "kind": doc.get("kind"),
                "name": doc.get("name"),
                "key": doc.get("effect_key"),
                "status": doc.get("status"),
                "attempts": doc.get("attempts", 0),
                "replays": doc.get("replays", 0),
                "duration_ms": doc.get("duration_ms"),
                "error": (doc.get("error") or {}).get("type") if isinstance(doc.get("error"), dict) else doc.get("error"),
            }
        )
    return [
        {"path": path, "nodes": [{"node": node, "effects": effects} for node, effects in nodes.items()]}
        for path, nodes in sorted(by_path.items())
    ]


def render_inspect(report: dict[str, Any], out: TextIO) -> None:
    out.write(f"thread {report['thread_id']}\n\ncheckpoints\n")
    width = max([len(n["namespace"]) for n in report["namespaces"]] + [9])
    for ns in report["namespaces"]:
        out.write(
            f"  {ns['namespace']:<{width}}  {ns['checkpoints']:>3} checkpoints, {ns['occurrences']} occurrence(s)"
            f"  latest step {ns['latest_step']}\n"
        )
    out.write("\noperations\n")
    if not report["operations"]:
        out.write("  (no journaled effects)\n")
        return
    tree: dict[str, Any] = {}
    for op in report["operations"]:
        segments = op["path"].split("/")
        branch = tree
        for i in range(0, len(segments), 2):
            branch = branch.setdefault("/".join(segments[i : i + 2]), {})
        for node in op["nodes"]:
            branch[node["node"]] = [_effect_line(e) for e in node["effects"]]
    [(root, children)] = tree.items() if len(tree) == 1 else [("", tree)]
    out.write(f"  {root}\n")
    _render_branch(children, "  ", out)


def _render_branch(branch: dict[str, Any] | list[str], prefix: str, out: TextIO) -> None:
    items = list(branch.items()) if isinstance(branch, dict) else [(line, None) for line in branch]
    for i, (label, children) in enumerate(items):
        last = i == len(items) - 1
        out.write(f"{prefix}{'└─' if last else '├─'} {label}\n")
        if children:
            _render_branch(children, prefix + ("   " if last else "│  "), out)


def _effect_line(effect: dict[str, Any]) -> str:
    duration = f"{effect['duration_ms']:.0f} ms" if isinstance(effect["duration_ms"], (int, float)) else "-"
    replay = f"  replayed {effect['replays']}x" if effect["replays"] else ""  # counted by claims only
    error = f"  {effect['error']}" if effect["error"] else ""
    return (
        f"{effect['kind']:<5} {effect['name']:<20} {effect['status']:<9} attempts {effect['attempts']}"
        f"  {duration:>7}{replay}{error}"
    )


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


def doctor(client: Any, db: Any, names: CollectionNames, fix: bool) -> dict[str, Any]:
    server, quirks = server_identity(client)
    command, hello = handshake(client, quirks)
    report: dict[str, Any] = {"server": {**server, "handshake": command}, "features": {}, "indexes": []}
    report["features"]["replica_set"] = bool(hello.get("setName"))
    report["features"]["transactions"] = bool(hello.get("setName")) and quirks.transactions
    report["features"]["ttl_indexes"] = quirks.ttl_expiry
    report["format"] = SyncInterpreter(db).run(read_format_plan(names)).describe()
    for coll, indexes in indexes_by_collection(names).items():
        present = {ix["name"] for ix in db[coll].list_indexes()}
        for index in indexes:
            name = index.document["name"]
            row = {"collection": coll, "index": name, "present": name in present}
            if not row["present"] and fix:
                try:
                    db[coll].create_indexes([index])
                    row["created"] = True
                except OperationFailure as error:
                    row["error"] = str(error)
            report["indexes"].append(row)
    report["ok"] = all(r["present"] or r.get("created") for r in report["indexes"])
    return report


def render_doctor(report: dict[str, Any], out: TextIO) -> None:
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
        out.write(f"index       {label:<{width}}  {state}\n")
    if not report["ok"]:
        out.write("\nsome indexes are missing: run `langgraph-durable-mongodb doctor --fix`\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="langgraph-durable-mongodb", description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", default=os.environ.get("MONGODB_URI"), help="MongoDB URI (default: $MONGODB_URI)")
    parser.add_argument("--db", default="langgraph", help="database name (default: langgraph)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("threads", help="threads with their latest step, checkpoint count and last update")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true", dest="json_sub")
    p = sub.add_parser("inspect", help="checkpoints per namespace and the operation tree of a thread")
    p.add_argument("thread")
    p.add_argument("--json", action="store_true", dest="json_sub")
    p = sub.add_parser("journal", help="the raw journal documents of a thread")
    p.add_argument("thread")
    p.add_argument("--json", action="store_true", dest="json_sub")
    p = sub.add_parser("doctor", help="connection, server features and indexes")
    p.add_argument("--fix", action="store_true", help="create missing indexes")
    p.add_argument("--json", action="store_true", dest="json_sub")
    return parser


def _dump(value: Any, out: TextIO) -> None:
    out.write(json_util.dumps(value, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS) + "\n")


def run(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    names = CollectionNames()
    db = client[args.db]
    as_json = args.json or getattr(args, "json_sub", False)
    if args.command == "threads":
        rows = threads(db, names, args.limit)
        if as_json:
            _dump(rows, out)
        elif not rows:
            out.write("no threads\n")
        else:
            width = max(len(r["thread_id"]) for r in rows)
            out.write(f"{'THREAD':<{width}}  {'STEP':>4}  {'CHECKPOINTS':>11}  UPDATED\n")
            for r in rows:
                out.write(f"{r['thread_id']:<{width}}  {str(r['latest_step']):>4}  {r['checkpoints']:>11}  {r['updated']}\n")
        return EXIT_OK
    if args.command == "inspect":
        report = inspect_thread(db, names, args.thread)
        _dump(report, out) if as_json else render_inspect(report, out)
        return EXIT_OK
    if args.command == "journal":
        docs = list(db[names.journal].find({"thread_id": args.thread}, {"_id": 0}).sort([("path", 1), ("created_at", 1)]))
        if not docs and db[names.checkpoints].count_documents({"thread_id": args.thread}, limit=1) == 0:
            raise CliError(f"unknown thread {args.thread!r}: no checkpoints and no journal entries", EXIT_UNKNOWN_THREAD)
        _dump(docs, out)
        return EXIT_OK
    report = doctor(client, db, names, args.fix)
    _dump(report, out) if as_json else render_doctor(report, out)
    return EXIT_OK if report["ok"] else EXIT_PROBLEM


def main(argv: list[str] | None = None, *, client: Any = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = _parser().parse_args(argv)
    try:
        if client is None:
            if not args.uri:
                raise CliError("no server given: pass --uri mongodb://host:27017 or set MONGODB_URI", EXIT_USAGE)
            try:
                timeout = {} if "serverselectiontimeoutms" in args.uri.lower() else {"serverSelectionTimeoutMS": 5000}
                client = MongoClient(args.uri, **timeout)
            except (InvalidURI, ConfigurationError, ValueError) as error:
                raise CliError(f"bad MongoDB URI {args.uri!r}: {error}", EXIT_USAGE) from None
        try:
            return run(args, client, out)
        except CliError:
            raise
        except PyMongoError as error:
            raise CliError(f"cannot reach MongoDB at {args.uri}: {error}", EXIT_UNREACHABLE) from None
    except CliError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.code


if __name__ == "__main__":
    sys.exit(main())
