"""``threads`` (grouped on the server, paged by thread id, pointing at the databases that hold threads) and
the numeric ordinal order of ``inspect``."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta
from typing import Any

import mongomock
import pytest
from pymongo import MongoClient, monitoring

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb.cli.threads import render_inspect, render_threads
from tests.cli_helpers import run, write_thread
from tests.clients import on_servers

SYNC_KINDS = ["mongomock", *on_servers("pymongo")]


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_threads_pages_in_thread_id_order(mongo_client: Any, db_name: str) -> None:
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name)
    for thread_id in ("t03", "t01", "t05", "t04", "t02"):
        write_thread(saver, thread_id, 2)
    write_thread(saver, "t02", 1, ns="sub:abc")  # a subgraph's: not a root checkpoint, not counted
    write_thread(saver, "t06", 3, ns="sub:abc")  # no root checkpoint (LangGraph never writes one so): not listed

    code, out = run(mongo_client, "--db", db_name, "threads", "--limit", "2", "--json")
    assert code == 0
    roots = mongo_client[db_name].checkpoints
    last = {t: max(d["ts"] for d in roots.find({"thread_id": t, "checkpoint_ns": ""})) for t in ("t01", "t02")}
    nothing = dict.fromkeys(("completed", "in flight", "interrupted", "failed", "outcome unknown", "abandoned"), 0)
    assert json.loads(out) == [
        {"thread_id": t, "state": "done", "due": [], "checkpoints": 2, "latest_step": 1, "updated": last[t], "effects": nothing}
        for t in ("t01", "t02")
    ]
    pages = [[r["thread_id"] for r in json.loads(run(mongo_client, "--db", db_name, "threads", "--limit", "2",
                                                     "--after", after, "--json")[1])] for after in ("t02", "t04", "t05")]
    assert pages == [["t03", "t04"], ["t05"], []]

    code, text = run(mongo_client, "--db", db_name, "threads", "--limit", "2")
    assert text.splitlines()[-1] == "more: --after t02"
    assert "more:" not in run(mongo_client, "--db", db_name, "threads", "--limit", "2", "--after", "t04")[1]


class Replies(monitoring.CommandListener):
    """``(command, documents in its reply)`` of each command the CLI sends."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []
        self._names: dict[int, str] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self._names[event.request_id] = event.command_name

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        cursor = event.reply.get("cursor") or {}
        batch = cursor.get("firstBatch", cursor.get("nextBatch", []))
        self.seen.append((self._names.pop(event.request_id), len(batch)))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.seen.append((self._names.pop(event.request_id), -1))


def monitored_threads(uri: str, db_name: str) -> list[tuple[str, int]]:
    listener = Replies()
    with MongoClient(uri, event_listeners=[listener]) as client:
        assert run(client, "--db", db_name, "threads", "--json")[0] == 0
    return [seen for seen in listener.seen if seen[0] not in ("hello", "isMaster", "ismaster", "endSessions")]


@pytest.mark.parametrize("client_kind", on_servers("pymongo"), indirect=True)
def test_threads_costs_the_same_commands_and_replies_for_500_checkpoints_as_for_one(
    mongo_client: Any, db_name: str, server_uri: str
) -> None:
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name)
    write_thread(saver, "big", 1)
    write_thread(saver, "small", 1)
    before = monitored_threads(server_uri, db_name)
    write_thread(saver, "big", 499, ns="sub:abc")
    assert mongo_client[db_name].checkpoints.count_documents({"thread_id": "big", "checkpoint_ns": "sub:abc"}) == 499
    assert monitored_threads(server_uri, db_name) == before
    # the format's find, the summaries (two rows), the threads with root checkpoints and no summary (none: issue
    # 34's lists never hide one), then at once (the state column, issue 45) the latest checkpoints (two rows), the
    # run locks, the finished entries counted by the server and the entries not finished (none of each)
    assert before == [("find", 1), ("find", 2), ("find", 0), ("find", 2), ("find", 0), ("aggregate", 0), ("find", 0)]


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_threads_on_an_empty_database_names_the_databases_holding_threads(
    mongo_client: Any, db_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_thread(MongoDBCheckpointer(mongo_client, db_name=db_name), "t1", 1)
    mongo_client[db_name + "_other"].unrelated.insert_one({"x": 1})  # a database without our checkpoints
    try:
        code, out = run(mongo_client, "--db", db_name + "_empty", "threads")
        assert (code, out) == (0, "no threads\n")
        err = capsys.readouterr().err
        assert f"no threads in database '{db_name}_empty'; threads are in " in err and db_name in err
        assert f"{db_name}_other" not in err
        if isinstance(mongo_client, mongomock.MongoClient):
            assert f"threads are in {db_name}: pass --db NAME" in err
        code, out = run(mongo_client, "--db", db_name + "_empty", "threads", "--json")
        assert (code, json.loads(out)) == (0, [])  # stdout stays JSON; the hint goes to stderr
        assert db_name in capsys.readouterr().err
    finally:
        mongo_client.drop_database(db_name + "_other")


def test_threads_with_none_anywhere_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(mongomock.MongoClient(), "threads") == (0, "no threads\n")
    assert capsys.readouterr().err == "no threads in database 'langgraph'; nor in any other database\n"


T0 = datetime(2026, 1, 1, 12, 0, 0)


def entry(path: str, node: str, occurrence: str, started: int) -> dict:
    return {"thread_id": "many", "path": path, "node": node, "occurrence": occurrence, "effect_key": "1", "chunk": 0,
            "kind": "tool", "name": "send", "status": "completed", "attempts": 1,
            "started_at": T0 - timedelta(seconds=started), "duration_ms": 1}


def test_inspect_orders_ordinals_numerically_where_start_times_tie() -> None:
    """Operations are in the order they ran (``test_ui_accounts``); started at the same second, in ordinal order,
    numerically: text order would not give it."""
    client = mongomock.MongoClient()
    docs = [entry("agent/1", "notify", f"1.{i}", 0) for i in reversed(range(12))]
    docs += [entry("agent/1", "x", o, 0) for o in ("10", "2")]
    docs += [entry(f"agent/1/sub/{i}", "inner", "1", 0) for i in reversed(range(1, 12))]
    client.langgraph.activity_journal.insert_many(docs)

    report = json.loads(run(client, "--json", "inspect", "many")[1])
    assert [op["path"] for op in report["operations"]] == ["agent/1", *(f"agent/1/sub/{i}" for i in range(1, 12))]
    assert [n["node"] for n in report["operations"][0]["nodes"]] == [*(f"notify#1.{i}" for i in range(12)), "x#2", "x#10"]

    lines = run(client, "inspect", "many")[1].split("operations\n")[1].splitlines()
    children = [line.split("─ ")[1] for line in lines if line.startswith(("  ├─", "  └─"))]
    assert children == [*(f"notify (1st visit, Send {i})" for i in range(12)), "x (2nd visit)", "x (10th visit)",
                        *(f"sub/{i}" for i in range(1, 12))]


def test_the_tables_align_for_any_id_length_and_kind() -> None:
    """Short thread ids under the THREAD header, a kind longer than ``tool`` (``payment``): every column starts
    where its header does."""
    rows = [{"thread_id": "t1", "state": "done", "due": [], "latest_step": 3, "checkpoints": 4, "updated": "2026-12-05T00:00:00"},
            {"thread_id": "t22", "state": "outcome unknown", "due": ["tools"], "latest_step": 12345, "checkpoints": 6,
             "updated": "2026-12-05T00:00:01"}]
    out = io.StringIO()
    render_threads(rows, {"more": False}, out)
    header, *lines = out.getvalue().splitlines()
    for line in lines:
        assert line.index("2026") == header.index("UPDATED")
        assert len(line.split("  2026")[0]) == len(header.split("  UPDATED")[0])
    effect = {"duration_ms": 5, "replayed": False, "error": None, "attempts": 1}
    nodes = [{"node": "pay#1", "name": "pay", "visit": "1st visit", "effects": [
        {**effect, "kind": "payment", "name": "charge", "status": "completed", "state": "completed"},
        {**effect, "kind": "llm", "name": "CaseModel", "status": "started", "state": "outcome unknown"}]}]
    report = {"thread_id": "t1", "namespaces": [], "operations": [{"path": "agent/1", "nodes": nodes}]}
    out = io.StringIO()
    render_inspect(report, out)
    charge, model = [line for line in out.getvalue().splitlines() if "attempts" in line]
    assert charge.index("attempts") == model.index("attempts") and charge.index("charge") == model.index("CaseModel")
