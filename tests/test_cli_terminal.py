"""Stored text never reaches the terminal raw: the CLI's human output escapes control characters, as ``--json`` does."""

from __future__ import annotations

import io
import json
from typing import Any

import mongomock
import pytest

from langgraph_durable_mongodb import MongoDBCheckpointer, migrate
from langgraph_durable_mongodb.cli import EXIT_UNKNOWN_THREAD
from langgraph_durable_mongodb.cli import importer
from langgraph_durable_mongodb.cli.terminal import escaped, printable
from tests.cli_helpers import run, write_thread
from tests.clients import on_servers

CLEAR = "wipe\x1b[2J\x1b[H"  # clears the screen
LINK = "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\"  # OSC 8: shows "docs", links elsewhere
FORGED = "a\nzz-forged     9            9  2026-01-01"  # a table row of its own
RLO = "invoice\u202etxt.exe"  # reorders what follows
HOSTILE = (CLEAR, LINK, FORGED, RLO)


def _safe(text: str) -> str:
    """Fails unless ``text`` holds no control or format character other than the newlines between lines."""
    bad = [ch for line in text.split("\n") for ch in line if not ch.isprintable()]
    assert not bad, (bad, text)
    return text


@pytest.mark.parametrize(
    "text, shown",
    [
        (CLEAR, "wipe\\x1b[2J\\x1b[H"),
        (LINK, "\\x1b]8;;https://evil.example/\\x1b\\docs\\x1b]8;;\\x1b\\"),
        ("a\nb\rc\td\x7f\x9b", "a\\nb\\rc\\td\\x7f\\x9b"),
        (RLO, "invoice\\u202etxt.exe"),
        ("naïve 東京 case-42 / #1", "naïve 東京 case-42 / #1"),  # printable text of any script is kept
    ],
)
def test_printable_escapes_what_a_terminal_would_obey(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_escaped_reaches_every_string_of_a_report() -> None:
    report = {"rows": [{"thread_id": CLEAR, "n": 3, "when": None}], CLEAR: (FORGED,)}
    assert escaped(report) == {"rows": [{"thread_id": printable(CLEAR), "n": 3, "when": None}], printable(CLEAR): (printable(FORGED),)}


@pytest.mark.parametrize("client_kind", ["mongomock", *on_servers("pymongo")], indirect=True)
def test_threads_and_maintenance_escape_thread_ids(mongo_client: Any, db_name: str) -> None:
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name)
    for thread_id in HOSTILE:
        write_thread(saver, thread_id, 2)
    code, out = run(mongo_client, "--db", db_name, "threads")
    assert code == 0
    lines = _safe(out).splitlines()
    assert len(lines) == 1 + len(HOSTILE)  # the header and one row per thread: no forged row
    assert sorted(lines[1:]) == sorted(next(line for line in lines if line.startswith(printable(t))) for t in HOSTILE)
    code, out = run(mongo_client, "--db", db_name, "threads", "--limit", "1")
    assert _safe(out).splitlines()[-1].startswith("more: --after ")
    code, out = run(mongo_client, "--db", db_name, "prune", FORGED, "--yes")
    assert code == 0 and _safe(out) == f"pruned {printable(FORGED)}: 2 -> 1 checkpoints\n"
    code, out = run(mongo_client, "--db", db_name, "delete", *HOSTILE, "--yes")
    assert code == 0 and _safe(out) == "".join(f"deleted {printable(t)}\n" for t in HOSTILE)
    # the JSON output keeps the exact ids
    assert json.loads(run(mongo_client, "--db", db_name, "--json", "threads")[1]) == []


def test_inspect_escapes_every_stored_string(capsys: pytest.CaptureFixture[str]) -> None:
    client = mongomock.MongoClient()
    saver = MongoDBCheckpointer(client, db_name="langgraph")
    write_thread(saver, CLEAR, 2)
    write_thread(saver, CLEAR, 1, ns=f"{LINK}:1")
    client.langgraph.activity_journal.insert_one({
        "thread_id": CLEAR, "path": f"agent/1/{FORGED}/1", "node": LINK, "occurrence": "1", "effect_key": "1",
        "chunk": 0, "kind": CLEAR, "name": RLO, "status": "com\rpleted", "attempts": 1, "duration_ms": 3,
        "error": {"type": "Err\x1b[31mor", "message": "x"},
    })
    code, out = run(client, "inspect", CLEAR)
    assert code == 0
    _safe(out)
    for text in (CLEAR, LINK, FORGED, RLO, "com\rpleted", "Err\x1b[31mor"):
        assert printable(text) in out
    assert out.splitlines()[0] == f"thread {printable(CLEAR)}"
    # an unknown thread's error, on stderr
    assert run(client, "inspect", "nope\x1b[2J")[0] == EXIT_UNKNOWN_THREAD
    assert "nope\\x1b[2J" in _safe(capsys.readouterr().err)


def test_errors_and_settled_positions_are_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    client = mongomock.MongoClient()
    # the occurrence of a position is printed unquoted: an escape in it reaches the error message
    position = "thread 't' path 'agent/1' node 'pay'#1\x1b[2J effect '1'"
    assert run(client, "discard", position)[0] == EXIT_UNKNOWN_THREAD
    assert "#1\\x1b[2J effect" in _safe(capsys.readouterr().err)


def test_doctor_escapes_what_the_server_says(monkeypatch: pytest.MonkeyPatch) -> None:
    def command(self: object, command: object, *args: object, **kwargs: object) -> dict:
        name = command if isinstance(command, str) else next(iter(command))
        return {
            "buildInfo": {"version": "7.0\x1b[2J"}, "serverStatus": {"process": "mongod"}, "hello": {},
            "getDefaultRWConcern": {"defaultWriteConcern": {"w": "majority\x1b[2J"}},
        }[name]

    monkeypatch.setattr(mongomock.database.Database, "command", command, raising=False)
    code, out = run(mongomock.MongoClient(), "doctor")
    assert "server      MongoDB 7.0\\x1b[2J\n" in _safe(out)
    assert "(server default: w: majority\\x1b[2J)" in _safe(out)


def test_the_import_report_is_escaped() -> None:
    report = migrate.ImportReport("src", "reader", mismatches=[f"{FORGED} '' 1: missing from the destination"])
    out = io.StringIO()
    importer.render(escaped(report), out)
    assert _safe(out.getvalue()).splitlines()[-1] == f"  {printable(FORGED)} '' 1: missing from the destination"
