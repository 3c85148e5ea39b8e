"""``doctor``: connection, server identity and features, the concerns in force, the indexes ``schema.py`` declares
and the thread summaries (``deployment``)."""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, TextIO

from ..storage.deployment import check_deployment, drifted
from ..storage.schema import CollectionNames
from .terminal import escaped


def fix_command(uri: str | None, db_name: str, option: str = "--fix") -> str:
    """The ``doctor --fix`` (or ``--repair``: ``option``) command for this database: ``--db``, and ``--uri`` unless
    ``MONGODB_URI`` gives it (its password left out: the command is printed)."""
    words = ["langgraph-durable-mongodb"]
    if uri and uri != os.environ.get("MONGODB_URI"):
        words += ["--uri", shlex.quote(re.sub(r"(://[^/@:]*:)[^@/]*@", r"\1<password>@", uri))]
    return " ".join([*words, "--db", shlex.quote(db_name), "doctor", option])


def doctor(
    client: Any, db_name: str, names: CollectionNames, fix: bool, uri: str | None = None, repair: bool = False
) -> dict[str, Any]:
    """``deployment.check_deployment``, and the commands that fix what it found (``fix_command``).

    Args:
        client: a sync client.
        db_name: the database.
        names: its collection names.
        fix: create the indexes that are missing (``--fix``).
        uri: the URI given (``--uri`` or ``MONGODB_URI``), for the fix commands.
        repair: rebuild the thread summaries that are missing or short (``--repair``).

    Returns:
        The deployment's report, with ``fix_command``, ``repair_command`` and ``warnings`` (what works, but not as on
        MongoDB: the command then exits ``EXIT_WARNING``).
    """
    report = check_deployment(client, db_name, names, fix, repair)
    return {**report, "fix_command": fix_command(uri, db_name), "repair_command": fix_command(uri, db_name, "--repair"),
            "warnings": warnings(report)}


#: Said when a server's conditional updates are not atomic (FerretDB 1.x).
NOT_ATOMIC = ("conditional updates are not atomic here: the fences cannot keep two workers off one thread, so run "
              "one worker per thread")


def warnings(report: dict[str, Any]) -> list[str]:
    """What ``doctor`` warns of in a report that found nothing broken."""
    return [] if report["features"].get("atomic_updates", True) else [NOT_ATOMIC]


def render_doctor(report: dict[str, Any], out: TextIO) -> None:
    """The report, one line per check (the server's strings escaped)."""
    report = escaped(report)
    out.write(f"connection  ok\nserver      {_server_kind(report['server'])}\n")
    for feature, ok in report["features"].items():
        out.write(f"feature     {feature:<14} {'yes' if ok else 'no'}\n")
    for warning in report.get("warnings", []):
        out.write(f"warning     {warning}\n")
    for line in _concern_lines(report["concerns"], report["concerns"]["server_default"]):
        out.write(f"concern     {line}\n")
    out.write(f"format      {report['format']}\n")
    labels = [f"{row['collection']}.{row['index']}" for row in report["indexes"]]
    width = max(map(len, labels), default=0)
    for label, row in zip(labels, report["indexes"], strict=True):
        out.write(f"index       {label:<{width}}  {_index_state(row)}\n")
    if report["summaries"] is not None:
        out.write(f"summaries   {_summaries_state(report['summaries'])}\n")
    if not all(r["present"] or r.get("created") or r.get("unused") for r in report["indexes"]):
        out.write(f"\nsome indexes are missing: run `{report['fix_command']}`\n")
    if drifted(report["summaries"]):
        out.write(f"\nsome thread summaries are missing or short: run `{report['repair_command']}`\n")


def _concern_lines(concerns: dict[str, Any], defaults: dict[str, Any] | None) -> list[str]:
    """The concerns in force, one line each: the client's (or the server's defaults), and the collections always
    written with ``w: "majority"``."""
    server = f" (server default: {_concern(defaults['write'])})" if defaults and defaults.get("write") else ""
    read_default = f" (server default: {_concern(defaults['read'])})" if defaults and defaults.get("read") else ""
    return [
        f"write        {_concern(concerns['write']) or 'the server default'}{server}",
        f"read         {_concern(concerns['read']) or 'the server default'}{read_default}, "
        f"from {concerns['read_preference']}",
        f"majority     {', '.join(concerns['majority_written'])} (every write, whatever the client's)",
    ]


def _concern(document: dict[str, Any]) -> str:
    """``w`` first, then the rest in the order given: ``w: 1, wtimeout: 2000``."""
    ordered = sorted(document.items(), key=lambda item: item[0] != "w")
    return ", ".join(f"{key}: {value}" for key, value in ordered)


def _summaries_state(drift: dict[str, Any]) -> str:
    checked = f"{drift['threads']} threads compared"
    checked += "" if drift["complete"] else " (a sample: stopped at its time bound)"
    if not drift["missing"] and not drift["short"] and not drift["unsettled"]:
        return f"{checked}, none missing or short"
    found = [
        f"{drift[kind]} {kind} ({', '.join(map(repr, drift['named_' + kind]))})"
        for kind in ("missing", "short") if drift[kind]
    ]
    if drift["repaired"]:
        found.append(f"{drift['repaired']} rebuilt")
    if drift["unsettled"]:
        found.append(
            "not settled (written on while counted, or naming a later checkpoint than any): "
            f"{', '.join(map(repr, drift['unsettled']))}"
        )
    return f"{checked}: {'; '.join(found)}"


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
