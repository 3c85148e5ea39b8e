"""The inspector is bounded (issue 33, item 5): the thread list reads documents in proportion to its page, not
to its threads' journals (counted from the server's replies with pymongo's command monitoring)."""

from __future__ import annotations

from typing import Any

import mongomock
from pymongo import MongoClient, monitoring

from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.schema import CollectionNames
from langgraph_durable_mongodb.views.reader import ThreadViews

#: Journal entries of the one big thread: the list must not read them.
ENTRIES = 3000


class Replies(monitoring.CommandListener):
    """How many documents the server's replies carried (cursor batches), by command."""

    def __init__(self) -> None:
        self.documents: dict[str, int] = {}

    def started(self, event: Any) -> None:
        pass

    def succeeded(self, event: Any) -> None:
        cursor = event.reply.get("cursor") or {}
        batch = cursor.get("firstBatch", cursor.get("nextBatch", []))
        self.documents[event.command_name] = self.documents.get(event.command_name, 0) + len(batch)

    def failed(self, event: Any) -> None:
        pass


def _big_thread(client: Any, db_name: str) -> None:
    saver = MongoDBCheckpointer(client, db_name=db_name)
    checkpoint = {"v": 1, "id": "1ef0", "ts": "2026-01-01T00:00:00+00:00", "channel_values": {}, "channel_versions": {},
                  "versions_seen": {}, "pending_sends": []}
    for thread_id in ("big", "small"):
        saver.put({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}, checkpoint, {"source": "input", "step": -1}, {})
    client[db_name][CollectionNames().journal].insert_many([
        {"thread_id": "big", "path": "agent/1", "node": "tools", "occurrence": str(i), "effect_key": "1", "chunk": 0,
         "kind": "tool", "name": "fetch", "status": "failed" if i % 100 == 0 else "completed", "attempts": 1}
        for i in range(ENTRIES)
    ])


def _listed(views: ThreadViews) -> dict[str, Any]:
    [row] = views.threads(limit=1)["threads"]
    assert row["thread_id"] == "big"
    assert row["effects"] == {"completed": ENTRIES - 30, "in flight": 0, "failed": 30, "outcome unknown": 0, "abandoned": 0}
    return row


def test_the_thread_list_reads_o_of_its_page_on_a_server(mongodb_uri: str, server_db_name: str) -> None:
    replies = Replies()
    with MongoClient(mongodb_uri) as writer:
        _big_thread(writer, server_db_name)
    with MongoClient(mongodb_uri, event_listeners=[replies]) as client:
        _listed(ThreadViews(client, server_db_name))
    assert sum(replies.documents.values()) < 20, replies.documents


def test_the_thread_list_reads_o_of_its_page() -> None:
    client = mongomock.MongoClient()
    _big_thread(client, "bounds")
    views = ThreadViews(client, "bounds")
    returned: list[int] = []
    execute = views._io.execute  # noqa: SLF001
    views._io.execute = lambda request: (lambda found: returned.append(len(found) if isinstance(found, list) else 1) or found)(execute(request))  # noqa: SLF001
    _listed(views)
    assert sum(returned) < 20, returned
