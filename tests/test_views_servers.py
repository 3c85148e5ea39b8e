"""The inspector's thread list on every server tier: the rows, their states and effect counts, and paging by
``next_after`` through every thread in id order. FerretDB's ``$group`` takes no ``$max``, so there the list reads
each listed thread's latest root checkpoint with a ``find`` of its own (``thread_page_plan(group_max=False)``);
mongomock checks that both ways give the same page."""

from __future__ import annotations

from typing import Any

import mongomock
import pytest
from pymongo import MongoClient

from langgraph_durable_mongodb._plans.interpreters import SyncInterpreter
from langgraph_durable_mongodb.schema import CollectionNames
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
def test_a_page_read_without_group_max_is_the_page_read_with_it(prefix: str, after: Any) -> None:
    """FerretDB's way (one ``find`` per listed thread for its latest root checkpoint) reads what ``$max`` reads."""
    client = mongomock.MongoClient()
    seed(client, "views")
    run = SyncInterpreter(client["views"]).run
    names = CollectionNames()
    with_max = run(thread_page_plan(names, prefix, after, 50, group_max=True))
    without = run(thread_page_plan(names, prefix, after, 50, group_max=False))
    assert without["latest"] == with_max["latest"] and with_max["latest"]
    assert [g["_id"] for g in without["groups"]] == [g["_id"] for g in with_max["groups"]]
    assert {k: without[k] for k in ("more", "locks", "entries", "written")} == {k: with_max[k] for k in ("more", "locks", "entries", "written")}
