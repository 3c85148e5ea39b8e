"""A thread page's labels and its unfinished entries (issue 33): labels only where the entries read prove them, and
the unfinished entries read bounded.

A visit's label counts the visits of its sequence claimed before it (``journal.labels``). The first page holds
the thread's first entries, so its labels are exact, and an unfinished or failed entry of a visit on it reads the
same label. A later page does not read the visits before it: its entries keep their stored keys, and the page says
so. Either way an effect's ``position`` (what Resolve and Discard send) is its stored key.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import mongomock
import pytest
from pymongo import MongoClient

from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.storage.schema import POSITION_FIELDS, CollectionNames
from langgraph_durable_mongodb.views import plans
from langgraph_durable_mongodb.views.commands import parse_position
from langgraph_durable_mongodb.views.reader import ThreadViews
from langgraph_durable_mongodb.views.stored import entry_plan
from tests.cli_helpers import run

VISITS = 250
FAILED_VISIT, UNKNOWN_VISIT, LATE_FAILED_VISIT = 10, 240, 230
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def key(n: int) -> str:
    """A checkpoint-id-shaped visit key (LangGraph's are UUIDs): as text, not in the order the visits ran."""
    return str(uuid.UUID(int=(n * 7919) % 100_003))


def _status(visit: int) -> dict[str, Any]:
    if visit in (FAILED_VISIT, LATE_FAILED_VISIT):
        return {"status": "failed", "error": {"type": "RuntimeError", "message": "boom"}}
    if visit == UNKNOWN_VISIT:  # claimed by a process that died: lease long over, at most once
        return {"status": "started", "lease_until": START, "at_most_once": True}
    return {"status": "completed"}


def _keyed_thread(client: Any, db_name: str) -> None:
    """One thread: ``VISITS`` visits of ``agent/1`` node ``act``, one effect each, claimed in order."""
    checkpoint = {"v": 1, "id": "1ef0", "ts": "2026-01-01T00:00:00+00:00", "channel_values": {}, "channel_versions": {},
                  "versions_seen": {}, "pending_sends": []}
    MongoDBCheckpointer(client, db_name=db_name).put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {"source": "input", "step": -1}, {})
    client[db_name][CollectionNames().journal].insert_many([
        {"thread_id": "t", "path": "agent/1", "node": "act", "occurrence": key(v), "effect_key": "1", "root_key": key(v),
         "chunk": 0, "kind": "tool", "name": "pay", "attempts": 1, "created_at": START + timedelta(seconds=v), **_status(v)}
        for v in range(1, VISITS + 1)
    ])


def _plan(views: ThreadViews, page: int) -> dict[str, Any]:
    return views._io.run(plans.thread_plan(views.names, "t", page=page))  # noqa: SLF001


def _check_labels(client: Any, db_name: str) -> None:
    _keyed_thread(client, db_name)
    views = ThreadViews(client, db_name)
    first = _plan(views, 1)
    assert first["labelled"]
    assert [e["occurrence"] for e in first["entries"]] == [str(v) for v in range(1, plans.ENTRIES_PAGE + 1)]
    assert first["entries"][0]["visit"] == {"path": "agent/1", "occurrence": key(1)}
    # a failed entry of a visit on the page reads the page's label; one of a later visit keeps its stored key
    assert [e["occurrence"] for e in first["failed"]] == [key(LATE_FAILED_VISIT), str(FAILED_VISIT)]
    assert [e["occurrence"] for e in first["unfinished"]] == [key(UNKNOWN_VISIT)] and "visit" not in first["unfinished"][0]

    second = _plan(views, 2)
    assert not second["labelled"]
    assert [e["occurrence"] for e in second["entries"]] == [key(v) for v in range(plans.ENTRIES_PAGE + 1, VISITS + 1)]
    assert [e["occurrence"] for e in second["failed"]] == [key(LATE_FAILED_VISIT), key(FAILED_VISIT)]

    for page, visit, shown_as, status in ((1, FAILED_VISIT, str(FAILED_VISIT), "failed"), (2, UNKNOWN_VISIT, key(UNKNOWN_VISIT), "started")):
        thread = views.thread("t", page)
        effects = {e["occurrence"]: e for op in thread["operations"] for node in op["nodes"] for e in node["effects"]}
        stored = parse_position(effects[shown_as]["position"])
        assert stored.occurrence == key(visit)  # the stored key, whatever the page shows
        found = views._io.run(entry_plan(views.names, {f: getattr(stored, f) for f in POSITION_FIELDS}))  # noqa: SLF001
        assert found["status"] == status and found["position"]["occurrence"] == key(visit)


def test_labels_only_where_the_page_proves_them() -> None:
    _check_labels(mongomock.MongoClient(), "labels")


def test_labels_only_where_the_page_proves_them_on_a_server(mongodb_uri: str, server_db_name: str) -> None:
    with MongoClient(mongodb_uri) as client:
        _check_labels(client, server_db_name)


def _http(client: Any, db_name: str) -> Any:
    from starlette.testclient import TestClient

    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard

    names = CollectionNames()
    return TestClient(create_app(ThreadViews(client, db_name, names), Actions(client, db_name, names), Guard()),
                      base_url="http://127.0.0.1:8765")


def test_a_later_page_says_its_paths_are_stored_keys() -> None:
    client = mongomock.MongoClient()
    _keyed_thread(client, "notice")
    http = _http(client, "notice")
    assert 'class="muted stored-keys"' not in http.get("/threads/t").text
    later = http.get("/threads/t", params={"page": "2"}).text
    assert 'class="muted stored-keys"' in later and "Page 1 shows the numbered labels" in later
    assert http.get("/api/thread", params={"id": "t", "page": "2"}).json()["labelled"] is False


def test_the_entries_not_completed_are_read_bounded_and_the_page_says_when_there_are_more(monkeypatch: pytest.MonkeyPatch) -> None:
    client = mongomock.MongoClient()
    _keyed_thread(client, "unfinished")
    journal = client["unfinished"][CollectionNames().journal]
    claimed = [START + timedelta(hours=1, seconds=i) for i in range(5)]
    journal.insert_many([
        {"thread_id": "t", "path": "agent/1", "node": "late", "occurrence": f"s{i}", "effect_key": "1", "chunk": 0,
         "kind": "tool", "name": "mail", "status": "started", "lease_until": START, "at_most_once": True, "created_at": at}
        for i, at in enumerate(claimed)
    ])
    monkeypatch.setattr(plans, "OPEN_SHOWN", 3)
    monkeypatch.setattr("langgraph_durable_mongodb.ui.app.OPEN_SHOWN", 3)
    views = ThreadViews(client, "unfinished")
    read: list[int] = []  # documents returned by the query of the entries not completed
    execute = views._io.execute  # noqa: SLF001

    def counted(request: Any) -> Any:
        found = execute(request)
        if "$ne" in str(getattr(request, "filter", None)):
            read.append(len(found))
        return found

    views._io.execute = counted  # noqa: SLF001
    found = _plan(views, 1)
    assert read == [4]  # one more than shown tells that there are more
    assert found["more_open"]
    assert [e["occurrence"] for e in found["unfinished"]] == ["s2", "s3", "s4"]  # the latest 3, in the order claimed
    page = _http(client, "unfinished").get("/threads/t").text
    assert "More than 3 entries failed or never finished" in page and "langgraph-durable-mongodb journal t" in page
    code, out = run(client, "--db", "unfinished", "inspect", "t")  # the CLI's inspect says it as the page does
    assert code == 0 and "more than 3 entries failed or never finished" in out and "`journal t` lists them all" in out
    monkeypatch.setattr(plans, "OPEN_SHOWN", 8)  # the 5 late ones, visit 240 and the two failed: all of them
    found = _plan(ThreadViews(client, "unfinished"), 1)
    assert not found["more_open"] and len(found["unfinished"]) == 6
    assert "entries failed or never finished" not in run(client, "--db", "unfinished", "inspect", "t")[1]
    assert [e["occurrence"] for e in found["failed"]] == [key(LATE_FAILED_VISIT), str(FAILED_VISIT)]


def test_a_later_page_shows_the_labels_its_entries_store() -> None:
    """Entries written since labels are stored carry their own: a later page shows them, as the first does, with
    no notice of stored keys."""
    client = mongomock.MongoClient()
    _keyed_thread(client, "stored")
    journal = client["stored"][CollectionNames().journal]
    for doc in journal.find({}, {"occurrence": 1, "created_at": 1}):
        visit = int((doc["created_at"].replace(tzinfo=None) - START.replace(tzinfo=None)).total_seconds())
        journal.update_one({"_id": doc["_id"]}, {"$set": {"label": {"path": "agent/1", "occurrence": str(visit)}}})
    later = _plan(ThreadViews(client, "stored"), 2)
    assert later["labelled"]
    assert [e["occurrence"] for e in later["entries"]] == [str(v) for v in range(plans.ENTRIES_PAGE + 1, VISITS + 1)]
    assert 'class="muted stored-keys"' not in _http(client, "stored").get("/threads/t", params={"page": "2"}).text
