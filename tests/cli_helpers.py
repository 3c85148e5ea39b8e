"""Helpers of the CLI tests (no tests here): run the CLI in-process, write threads through a real saver."""

from __future__ import annotations

import io
import json
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb.cli import EXIT_OK, EXIT_WARNING, main


class Terminal(io.StringIO):
    """A stdin a person types ``answer`` into."""

    def isatty(self) -> bool:
        return True


def mongod_command(self: object, command: object, *args: object, **kwargs: object) -> dict:
    """mongomock's ``Database.command`` (patched in), answering what ``doctor`` asks as a MongoDB 7 mongod does:
    mongomock has no buildInfo/serverStatus/hello; the real-server tests run the genuine ones."""
    name = command if isinstance(command, str) else next(iter(command))
    return {
        "buildInfo": {"version": "7.0.0"}, "serverStatus": {"process": "mongod"}, "hello": {"isWritablePrimary": True},
        "getDefaultRWConcern": {"defaultWriteConcern": {"w": "majority", "wtimeout": 0}, "defaultReadConcern": {"level": "local"}},
    }[name]


def run(client: Any, *argv: str, stdin: io.StringIO | None = None) -> tuple[int, str]:
    """``(exit code, stdout)`` of the CLI on ``client`` (a new one from ``--uri`` when None)."""
    out = io.StringIO()
    code = main(list(argv), client=client, out=out, stdin=stdin or io.StringIO())
    return code, out.getvalue()


def doctor_exit(report: dict[str, Any] | str) -> int:
    """The exit code a healthy database's ``doctor`` owes its ``--json`` report: ``EXIT_WARNING`` when it warns,
    else ``EXIT_OK``. A healthy database of the tier warns of its server alone (FerretDB's updates are not atomic)."""
    report = json.loads(report) if isinstance(report, str) else report
    assert all("not atomic" in warning for warning in report["warnings"]), report["warnings"]
    return EXIT_WARNING if report["warnings"] else EXIT_OK


def write_thread(saver: MongoDBCheckpointer, thread_id: str, checkpoints: int, ns: str = "") -> None:
    """A chain of ``checkpoints`` checkpoints of one namespace, steps 0, 1, ..., through ``saver.put``."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
    for step in range(checkpoints):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"step": step}
        checkpoint["channel_versions"] = {"step": saver.get_next_version(None, None)}
        config = saver.put(config, checkpoint, {"source": "loop", "step": step}, checkpoint["channel_versions"])
