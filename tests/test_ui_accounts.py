"""One truthful account of a thread (issue 33, item 2): the thread list, the page, its JSON and the CLI's
``inspect`` agree on the same threads, and mark an effect replayed only where stored documents prove it (a
visit counted in ``replays`` on a completed entry, or the resumed run's checkpoint), never with a count."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

import mongomock
import pytest
from starlette.testclient import TestClient

from langgraph_durable_mongodb.cli import EXIT_OK, main
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import create_app
from langgraph_durable_mongodb.ui.guard import Guard
from langgraph_durable_mongodb.views.reader import ThreadViews
from tests.ui_helpers import INJECTION, seed

DB = "ui_accounts"


@pytest.fixture(scope="module")
def seeded() -> mongomock.MongoClient:
    """The demo's crash and resume (``case-42``: two effects replayed on resume), ``case-43`` (one in flight and
    one outcome unknown, whose refused visits were counted: ``replays`` 2 on an entry never completed), and the
    ``INJECTION`` thread, one of whose entries a later visit replayed (``replays`` 1 on a completed entry)."""
    client = mongomock.MongoClient()
    seed(client, DB)
    journal = client[DB][CollectionNames().journal]
    journal.update_one({"thread_id": "case-43", "name": "send_payment"}, {"$set": {"replays": 2}})
    journal.insert_one({
        "thread_id": INJECTION, "path": "inc/1", "node": "inc", "occurrence": "1", "effect_key": "1", "chunk": 0,
        "kind": "tool", "name": "fetch", "status": "completed", "attempts": 1, "replays": 1,
    })
    return client


def _http(client: Any) -> TestClient:
    names = CollectionNames()
    return TestClient(create_app(ThreadViews(client, DB, names), Actions(client, DB, names), Guard()), base_url="http://127.0.0.1:8765")


def _page_replayed(thread: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(op["path"], n["node"], e["effect_key"]) for op in thread["operations"] for n in op["nodes"] for e in n["effects"] if e["replayed"]}


def _cli(client: Any, thread_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    assert main(["--db", DB, "inspect", thread_id, "--json"], client=client) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert main(["--db", DB, "inspect", thread_id], client=client) == EXIT_OK
    return report, capsys.readouterr().out


def test_the_list_the_page_its_json_and_inspect_agree(seeded: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    http = _http(seeded)
    listed = {row["thread_id"]: row for row in http.get("/api/threads").json()["threads"]}
    assert set(listed) == {"case-42", "case-43", INJECTION}
    expected_replayed = {"case-42": 2, "case-43": 0, INJECTION: 1}
    for thread_id, row in listed.items():
        thread = http.get("/api/thread", params={"id": thread_id}).json()
        assert (thread["state"], thread["effects"]) == (row["state"], row["effects"]), thread_id
        assert thread["replayed"] == len(_page_replayed(thread)) == expected_replayed[thread_id], thread_id
        page = http.get("/threads/" + thread_id.replace("/", "%2F")).text
        assert page.count('<span class="replayed">') == thread["replayed"], thread_id
        counts = dict((state, int(n)) for n, state in re.findall(r'<span class="count effect-[a-z-]+">(\d+) ([a-z ]+)</span>', page))
        assert counts == {state: n for state, n in row["effects"].items() if n}, thread_id
        report, printed = _cli(seeded, thread_id, capsys)
        assert report["state"] == thread["state"], thread_id
        cli_replayed = {(op["path"], n["node"], e["key"]) for op in report["operations"] for n in op["nodes"] for e in n["effects"] if e["replayed"]}
        assert cli_replayed == _page_replayed(thread) and printed.count("  replayed") == thread["replayed"], thread_id
        assert not re.search(r"replayed \d+x|replays", printed + page), thread_id  # no count anywhere


def test_an_outcome_unknown_is_never_shown_replayed(seeded: mongomock.MongoClient) -> None:
    thread = _http(seeded).get("/api/thread", params={"id": "case-43"}).json()
    states = {e["name"]: (e["state"], e["replayed"]) for op in thread["operations"] for n in op["nodes"] for e in n["effects"]}
    assert states["send_payment"] == ("outcome unknown", False)  # its stored replays is 2: refused visits


#: Effects as they ran, which is not their order by name: the tool ran second, a subgraph between two visits.
RAN = [("p/1", "agent", "1"), ("p/1", "tools", "1"), ("p/1/sub/1", "inner", "1"), ("p/1", "agent", "2"), ("p/1", "pay", "1")]


def test_operations_are_in_the_order_they_ran(capsys: pytest.CaptureFixture[str]) -> None:
    client = mongomock.MongoClient()
    t0 = datetime(2026, 1, 1, 12, 0, 0)
    client[DB][CollectionNames().journal].insert_many([
        {"thread_id": "ordered", "path": path, "node": node, "occurrence": occurrence, "effect_key": "1", "chunk": 0,
         "kind": "tool", "name": f"{node}{occurrence}", "status": "completed", "attempts": 1, "started_at": t0 + timedelta(seconds=i)}
        for i, (path, node, occurrence) in reversed(list(enumerate(RAN)))  # stored in another order still
    ])
    expected = [f"{node}{occurrence}" for _, node, occurrence in RAN]
    thread = _http(client).get("/api/thread", params={"id": "ordered"}).json()
    ran = [(op["path"], n["node"]) for op in thread["operations"] for n in op["nodes"]]
    assert ran == [("p/1", "agent#1"), ("p/1", "tools#1"), ("p/1", "agent#2"), ("p/1", "pay#1"), ("p/1/sub/1", "inner#1")]
    page = _http(client).get("/threads/ordered").text
    assert [page.index(f'class="name">{name}<') for name in expected if name != "inner1"] == sorted(
        page.index(f'class="name">{name}<') for name in expected if name != "inner1")
    report, printed = _cli(client, "ordered", capsys)
    in_order = ["agent1", "tools1", "agent2", "pay1", "inner1"]  # a path's nodes as they ran, then the next path
    assert [e["name"] for op in thread["operations"] for n in op["nodes"] for e in n["effects"]] == in_order
    assert [e["name"] for op in report["operations"] for n in op["nodes"] for e in n["effects"]] == in_order
    assert [line.split("─ ", 1)[1].split()[1] for line in printed.splitlines() if "tool " in line] == in_order
