"""The inspector's thread list on every server tier: the rows, their states and effect counts, and paging by
``next_after`` through every thread in id order; and its thread summaries against the root checkpoints they
summarize."""

from __future__ import annotations

from typing import Any

import mongomock
import pytest
from pymongo import MongoClient

from langgraph_durable_mongodb.storage.plans.interpreters import SyncInterpreter
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.views.plans import thread_page_plan
from langgraph_durable_mongodb.views.reader import ThreadViews
from tests.ui_helpers import INJECTION, seed

THREADS = ["<script>alert(1)</script>", "case-42", "case-43"]  # id order: "<" sorts before "c"


def _check_listing(views: ThreadViews) -> None:
    listing = views.threads()
    rows = {row["thread_id"]: row for row in listing["threads"]}
    assert [row["thread_id"] for row in listing["threads"]] == THREADS and listing["problems"] == []
    assert rows["case-42"]["state"] == "done" and rows["case-42"]["effects"]["completed"] == 2
    assert rows["case-42"]["checkpoints"] >= 4 and rows["case-42"]["step"] == 2
    assert rows["case-43"]["effects"]["in flight"] == 1 and rows["case-43"]["effects"]["outcome unknown"] == 1
    assert rows[INJECTION]["state"] == "done" and rows[INJECTION]["updated"]
    walked, after = [], None
    while True:
        page = views.threads(after=after, limit=1)
        walked += [row["thread_id"] for row in page["threads"]]
        if not page["more"]:
            break
        after = page["next_after"]
    assert walked == THREADS
    assert [row["thread_id"] for row in views.threads(prefix="case-4")["threads"]] == ["case-42", "case-43"]


def test_the_thread_list_on_a_server(mongodb_uri: str, server_db_name: str) -> None:
    with MongoClient(mongodb_uri) as client:
        seed(client, server_db_name)
        _check_listing(ThreadViews(client, server_db_name, CollectionNames()))


def test_the_thread_list_on_mongomock() -> None:
    client = mongomock.MongoClient()
    seed(client, "views")
    _check_listing(ThreadViews(client, "views", CollectionNames()))


@pytest.mark.parametrize("prefix, after", [("", None), ("case-", None), ("", "case-42")])
def test_a_page_reads_what_the_root_checkpoints_say(prefix: str, after: Any) -> None:
    """Each listed thread's count and latest root checkpoint, from its summary, are those of a scan of its root
    checkpoints (the demo's crash and resume, a subgraph's checkpoints among them)."""
    client = mongomock.MongoClient()
    seed(client, "views")
    page = SyncInterpreter(client["views"]).run(thread_page_plan(CollectionNames(), prefix, after, 50))
    roots: dict[str, list[str]] = {}
    for doc in client["views"]["checkpoints"].find({"checkpoint_ns": ""}):
        roots.setdefault(doc["thread_id"], []).append(doc["checkpoint_id"])
    listed = [t for t in sorted(roots) if t.startswith(prefix) and (after is None or t > after)]
    assert [s["thread_id"] for s in page["summaries"]] == listed and listed
    assert {s["thread_id"]: (s["checkpoints"], s["latest"]) for s in page["summaries"]} == {
        t: (len(roots[t]), max(roots[t])) for t in listed
    }
    assert {t: doc["checkpoint_id"] for t, doc in page["latest"].items()} == {t: max(roots[t]) for t in listed}
