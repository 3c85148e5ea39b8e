"""The ``ui`` section: issue 23: the web inspector's thread list over a database of 10,000 threads (``--ui-threads``),
each a copy of the demo's crashed and resumed ``case-42``: the first page, a later page, a prefix search, as JSON
and as the HTML page, through the app (Starlette's TestClient, in process); target 300 ms on mongo-java-server.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.common import Settings
from pymongo import MongoClient, monitoring
from roundtrips import CommandCounter  # scripts/roundtrips.py


UI_TARGET_MS = 300
#: Journal entries of the one big thread of section ``ui`` (issue 33): its page and JSON must stay bounded.
UI_BIG_ENTRIES = 30_000
UI_BIG_THREAD = "case-big"


def _copies(docs: list[dict[str, Any]], thread_ids: list[str], keyed: tuple[str, ...] | None) -> list[dict[str, Any]]:
    """``docs`` of one thread again under each of ``thread_ids``; ``keyed``: the key fields of their ``_id``."""
    from langgraph_durable_mongodb.checkpointer.documents import key_id

    out = []
    for thread_id in thread_ids:
        for doc in docs:
            copy = {k: v for k, v in doc.items() if k != "_id"}
            copy["thread_id"] = thread_id
            if keyed:
                copy["_id"] = key_id(*(copy.get(f) for f in keyed))  # as copy_thread keys them (a summary has no checkpoint_id)
            out.append(copy)
    return out


class ServerTime(monitoring.CommandListener):
    """The server's time (as the driver measured each command's round trip) summed while ``timing``."""

    def __init__(self) -> None:
        self.ms = 0.0

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self.ms += event.duration_micros / 1000

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.ms += event.duration_micros / 1000


def _populate(source: Any, target: Any, thread_ids: list[str], big: bool) -> int:
    """Copy ``source``'s ``case-42`` into ``target`` under each of ``thread_ids`` (and ``UI_BIG_THREAD``), and, with
    ``big``, give ``UI_BIG_THREAD`` its ``UI_BIG_ENTRIES`` journal entries; returns the documents written."""
    from langgraph_durable_mongodb.checkpointer.documents import CHECKPOINT_KEY
    from langgraph_durable_mongodb.storage.schema import BLOB_KEY, WRITE_KEY, CollectionNames

    names = CollectionNames()
    keys = {names.checkpoints: CHECKPOINT_KEY, names.writes: (*WRITE_KEY, "chunk"), names.blobs: (*BLOB_KEY, "chunk"),
            names.journal: None, names.runs: None}
    docs = 0
    every = thread_ids + [UI_BIG_THREAD]
    for coll, keyed in keys.items():
        template = list(source[coll].find({"thread_id": "case-42"}))
        for start in range(0, len(every) if template else 0, 1000):
            batch = _copies(template, every[start:start + 1000], keyed)
            target[coll].insert_many(batch)
            docs += len(batch)
    if big:
        entries = _copies(list(source[names.journal].find({"thread_id": "case-42"})), [UI_BIG_THREAD], None)
        for start in range(0, UI_BIG_ENTRIES, 1000):  # one big thread: each entry at its own occurrence, in order
            target[names.journal].insert_many([{**entries[i % len(entries)], "occurrence": str(i)} for i in range(start, start + 1000)])
        docs += UI_BIG_ENTRIES
    return docs


def _measure(client: Any, db_name: str, queries: dict[str, str], reps: int, listeners: tuple[Any, Any],
             log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Each of ``queries`` ``reps`` times through the app on ``db_name``: times, commands, server time, size."""
    from starlette.testclient import TestClient

    from langgraph_durable_mongodb.storage.schema import CollectionNames
    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard
    from langgraph_durable_mongodb.views.reader import ThreadViews

    counter, server = listeners
    names = CollectionNames()
    app = create_app(ThreadViews(client, db_name, names), Actions(client, db_name, names), Guard())
    http = TestClient(app, base_url="http://127.0.0.1:8765")
    rows = []
    for label, path in queries.items():
        times, commands, server_ms = [], [], []
        for _ in range(reps):
            with counter.counting() as sent:
                server.ms = 0.0
                begun = time.perf_counter()
                answer = http.get(path)
                times.append((time.perf_counter() - begun) * 1000)
                server_ms.append(server.ms)
            assert answer.status_code == 200, answer.text
            commands.append(len(sent))
        median = statistics.median(times)
        rows.append({"query": label, "median_ms": median, "first_ms": times[0], "max_ms": max(times), "n": len(times),
                     "commands": statistics.median(commands), "server_ms": statistics.median(server_ms),
                     "kb": len(answer.content) / 1000})
        log(f"ui: {label}: median {median:.0f} ms (server {statistics.median(server_ms):.0f} ms), first {times[0]:.0f} ms, "
            f"{statistics.median(commands):.0f} commands")
    return rows


def bench_ui(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    from langgraph_durable_mongodb import DurablePlatform, MongoDBCheckpointer, demo

    db_name, alone_name = f"bench_ui_{uuid.uuid4().hex[:8]}", f"bench_ui_alone_{uuid.uuid4().hex[:8]}"
    counter, server = CommandCounter(), ServerTime()
    client = MongoClient(uri, event_listeners=[counter, server])
    try:
        platform = DurablePlatform(client, db_name=db_name)
        config = {"configurable": {"thread_id": "case-42"}}
        with contextlib.redirect_stdout(io.StringIO()):  # the demo's graph prints what it executes
            try:
                platform.compile(demo.build_graph("raise")).invoke({"case": "claim 7731", "findings": []}, config)
            except demo.SimulatedCrash:
                pass
            platform.compile(demo.build_graph("none")).invoke(None, config)
        big = {
            f"/threads/{UI_BIG_THREAD} (HTML, {UI_BIG_ENTRIES:,} entries)": f"/threads/{UI_BIG_THREAD}",
            f"/api/thread?id={UI_BIG_THREAD} ({UI_BIG_ENTRIES:,} entries)": f"/api/thread?id={UI_BIG_THREAD}",
            f"/api/thread?id={UI_BIG_THREAD}&page=100": f"/api/thread?id={UI_BIG_THREAD}&page=100",
        }
        # first, while the server holds little else (a JVM full of the big database collects garbage mid-request)
        MongoDBCheckpointer(client, db_name=alone_name).setup()  # its format stamp and indexes, as any first run writes
        alone_docs = _populate(client[db_name], client[alone_name], [], big=True)
        log(f"ui: {UI_BIG_THREAD} alone in its database, {alone_docs} documents")
        alone = _measure(client, alone_name, big, s.ui_reps, (counter, server), log)
        client.drop_database(alone_name)
        ids = [f"case-{i:05d}" for i in range(s.ui_threads)]
        docs = _populate(client[db_name], client[db_name], ids, big=True)
        log(f"ui: {s.ui_threads} threads and {UI_BIG_THREAD} of {UI_BIG_ENTRIES} journal entries, {docs} documents")
        middle = ids[len(ids) // 2]
        queries = {
            "/api/threads (first page, 50)": "/api/threads",
            f"/api/threads?after={middle}": f"/api/threads?after={middle}",
            "/api/threads?prefix=case-09": "/api/threads?prefix=case-09",
            "/ (HTML, first page)": "/",
            **big,
        }
        rows = _measure(client, db_name, queries, s.ui_reps, (counter, server), log)
        return {"threads": s.ui_threads, "documents": docs, "rows": rows, "alone": alone, "alone_documents": alone_docs,
                "target_ms": UI_TARGET_MS}
    finally:
        client.drop_database(db_name)
        client.drop_database(alone_name)
        client.close()


def render_ui(res: dict[str, Any]) -> list[str]:
    header = ["| request | median ms | server ms | first ms | max ms | n | commands | KB |", "|---|---|---|---|---|---|---|---|"]

    def table(rows: list[dict[str, Any]]) -> list[str]:
        return [f"| `{r['query']}` | {r['median_ms']:.0f} | {r.get('server_ms', 0):.0f} | {r['first_ms']:.0f} | {r['max_ms']:.0f} "
                f"| {r['n']} | {r['commands']:.0f} | {r.get('kb', 0):.0f} |" for r in rows]

    lines = ["## 8. The web inspector's thread list (issue 23)", "",
             f"{res['threads']:,} threads ({res['documents']:,} documents), each a copy of the demo's `case-42` after "
             f"its crash and resume; 50 threads a page. Through the app in process (Starlette's TestClient): the "
             f"query, the shaping and the JSON or HTML. Target: {res['target_ms']} ms. *Server ms*: the commands' "
             "round trips as the driver timed them (mongo-java-server answers a query by scanning its collection unless it "
             "names `_id`, or every field of a unique index, by equality: they grow with the database, not with the "
             "page).", "",
             f"The thread `{UI_BIG_THREAD}` holds {UI_BIG_ENTRIES:,} journal entries, shown 200 a page (issue 33: "
             "< 300 ms and < 300 KB).", "", *header, *table(res["rows"]), ""]
    if res.get("alone"):
        lines += [f"`{UI_BIG_THREAD}` alone in a database ({res['alone_documents']:,} documents): what its page costs "
                  "whatever else the database holds.", "", *header, *table(res["alone"]), ""]
    return lines
