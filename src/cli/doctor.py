"""``doctor``: connection, server identity and features, and the indexes ``schema.py`` declares (``deployment``)."""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, TextIO

from ..deployment import check_deployment
from ..schema import CollectionNames
from .terminal import escaped


def fix_command(uri: str | None, db_name: str) -> str:
    """The ``doctor --fix`` command for this database: ``--db``, and ``--uri`` unless ``MONGODB_URI`` gives it
    (its password left out: the command is printed)."""
    words = ["langgraph-durable-mongodb"]
    if uri and uri != os.environ.get("MONGODB_URI"):
        words += ["--uri", shlex.quote(re.sub(r"(://[^/@:]*:)[^@/]*@", r"\1<password>@", uri))]
    return " ".join([*words, "--db", shlex.quote(db_name), "doctor", "--fix"])


def doctor(client: Any, db_name: str, names: CollectionNames, fix: bool, uri: str | None = None) -> dict[str, Any]:
    """``deployment.check_deployment``, and the command that fixes what it found (``fix_command``).

    Args:
        client: a sync client.
        db_name: the database.
        names: its collection names.
        fix: create the indexes that are missing (``--fix``).
        uri: the URI given (``--uri`` or ``MONGODB_URI``), for the fix command.

    Returns:
        The deployment's report, with ``fix_command``.
    """
    return {**check_deployment(client, db_name, names, fix), "fix_command": fix_command(uri, db_name)}


def render_doctor(report: dict[str, Any], out: TextIO) -> None:
    """The report, one line per check (the server's strings escaped)."""
    report = escaped(report)
    out.write(f"connection  ok\nserver      {_server_kind(report['server'])}\n")
    for feature, ok in report["features"].items():
        out.write(f"feature     {feature:<13} {'yes' if ok else 'no'}\n")
    out.write(f"format      {report['format']}\n")
    labels = [f"{row['collection']}.{row['index']}" for row in report["indexes"]]
    width = max(map(len, labels), default=0)
    for label, row in zip(labels, report["indexes"]):
        out.write(f"index       {label:<{width}}  {_index_state(row)}\n")
    if not report["ok"]:
        out.write(f"\nsome indexes are missing: run `{report['fix_command']}`\n")


def _server_kind(server: dict[str, Any]) -> str:
    if server["ferretdb"]:
        return f"FerretDB {server['ferretdb']} (MongoDB {server['version']} wire protocol)"
    if server["mongo_java_server"]:
        return f"mongo-java-server (MongoDB {server['version']} wire protocol)"
    return f"MongoDB {server['version']}"


def _index_state(row: dict[str, Any]) -> str:
    if row.get("unused"):
        return "not used (no run lock taken: exclusive_runs=False, as on Agent Server)"
    return "present" if row["present"] else ("created" if row.get("created") else "MISSING")
