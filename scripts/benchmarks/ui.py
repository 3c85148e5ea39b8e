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
from pymongo import MongoClient
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


def bench_ui(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    from starlette.testclient import TestClient

    from langgraph_durable_mongodb import DurablePlatform, demo
    from langgraph_durable_mongodb.checkpointer.documents import CHECKPOINT_KEY
    from langgraph_durable_mongodb.storage.schema import BLOB_KEY, WRITE_KEY, CollectionNames
    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard
    from langgraph_durable_mongodb.views.reader import ThreadViews

    db_name, names = f"bench_ui_{uuid.uuid4().hex[:8]}", CollectionNames()
    counter = CommandCounter()
    client = MongoClient(uri, event_listeners=[counter])
    try:
        platform = DurablePlatform(client, db_name=db_name)
        config = {"configurable": {"thread_id": "case-42"}}
        with contextlib.redirect_stdout(io.StringIO()):  # the demo's graph prints what it executes
            try:
                platform.compile(demo.build_graph("raise")).invoke({"case": "claim 7731", "findings": []}, config)
            except demo.SimulatedCrash:
                pass
            platform.compile(demo.build_graph("none")).invoke(None, config)
        db = client[db_name]
        ids = [f"case-{i:05d}" for i in range(s.ui_threads)]
        keys = {names.checkpoints: CHECKPOINT_KEY, names.writes: (*WRITE_KEY, "chunk"), names.blobs: (*BLOB_KEY, "chunk"),
                names.journal: None, names.runs: None}
        docs = 0
        for coll, keyed in keys.items():
            template = list(db[coll].find({"thread_id": "case-42"}))
            for start in range(0, len(ids) + 1 if template else 0, 1000):
                batch = _copies(template, (ids + [UI_BIG_THREAD])[start:start + 1000], keyed)
                db[coll].insert_many(batch)
                docs += len(batch)
        entries = _copies(list(db[names.journal].find({"thread_id": "case-42"})), [UI_BIG_THREAD], None)
        for start in range(0, UI_BIG_ENTRIES, 1000):  # one big thread: each entry at its own occurrence, in order
            db[names.journal].insert_many([{**entries[i % len(entries)], "occurrence": str(i)} for i in range(start, start + 1000)])
        docs += UI_BIG_ENTRIES
        log(f"ui: {s.ui_threads} threads and {UI_BIG_THREAD} of {UI_BIG_ENTRIES} journal entries, {docs} documents")
        app = create_app(ThreadViews(client, db_name, names), Actions(client, db_name, names), Guard())
        http = TestClient(app, base_url="http://127.0.0.1:8765")
        middle = ids[len(ids) // 2]
        queries = {
            "/api/threads (first page, 50)": "/api/threads",
            f"/api/threads?after={middle}": f"/api/threads?after={middle}",
            "/api/threads?prefix=case-09": "/api/threads?prefix=case-09",
            "/ (HTML, first page)": "/",
            f"/threads/{UI_BIG_THREAD} (HTML, {UI_BIG_ENTRIES:,} entries)": f"/threads/{UI_BIG_THREAD}",
            f"/api/thread?id={UI_BIG_THREAD} ({UI_BIG_ENTRIES:,} entries)": f"/api/thread?id={UI_BIG_THREAD}",
            f"/api/thread?id={UI_BIG_THREAD}&page=100": f"/api/thread?id={UI_BIG_THREAD}&page=100",
        }
        rows = []
        for label, path in queries.items():
            times, commands = [], []
            for _ in range(s.ui_reps):
                with counter.counting() as sent:
                    begun = time.perf_counter()
                    answer = http.get(path)
                    times.append((time.perf_counter() - begun) * 1000)
                assert answer.status_code == 200, answer.text
                commands.append(len(sent))
            median = statistics.median(times)
            rows.append({"query": label, "median_ms": median, "first_ms": times[0], "max_ms": max(times), "n": len(times),
                         "commands": statistics.median(commands), "kb": len(answer.content) / 1000})
            log(f"ui: {label}: median {median:.0f} ms, first {times[0]:.0f} ms, {statistics.median(commands):.0f} commands")
        return {"threads": s.ui_threads, "documents": docs, "rows": rows, "target_ms": UI_TARGET_MS}
    finally:
        client.drop_database(db_name)
        client.close()


def render_ui(res: dict[str, Any]) -> list[str]:
    lines = ["## 8. The web inspector's thread list (issue 23)", "",
             f"{res['threads']:,} threads ({res['documents']:,} documents), each a copy of the demo's `case-42` after "
             f"its crash and resume; 50 threads a page. Through the app in process (Starlette's TestClient): the "
             f"query, the shaping and the JSON or HTML. Target: {res['target_ms']} ms.", "",
             f"The thread `{UI_BIG_THREAD}` holds {UI_BIG_ENTRIES:,} journal entries, shown 200 a page (issue 33: "
             "< 300 ms and < 300 KB).", "",
             "| request | median ms | first ms | max ms | n | commands | KB |", "|---|---|---|---|---|---|---|"]
    lines += [f"| `{r['query']}` | {r['median_ms']:.0f} | {r['first_ms']:.0f} | {r['max_ms']:.0f} | {r['n']} | {r['commands']:.0f} "
              f"| {r.get('kb', 0):.0f} |" for r in res["rows"]]
    return lines + [""]

