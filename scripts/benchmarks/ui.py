"""The ``ui`` section: issue 23: the web inspector's thread list over a database of 10,000 threads (``--ui-threads``),
each a copy of the demo's crashed and resumed ``case-42``: the first page, a later page, a prefix search, as JSON
and as the HTML page, through the app (Starlette's TestClient, in process); target 300 ms on mongo-java-server.
Issue 45 adds two threads whose pages must stay under 300 ms and 300 KB: one whose state holds 20,000 records with a
password each (redaction must not grow with the number of credentials), and a ReAct agent's thread of 500 turns
(``create_react_agent``, its tool a ``SecureTool``), run turn by turn through the platform.
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
#: The size a page must stay under (issue 45).
UI_TARGET_KB = 300
UI_SECRETS_THREAD, UI_REACT_THREAD = "case-secrets", "case-react"
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


def _records_thread(platform: Any, records: int) -> None:
    """``UI_SECRETS_THREAD``: a state of ``records`` records, each with a password (and a tool call echoing one)."""
    from typing import TypedDict

    from langgraph.graph import START, StateGraph

    class Ledger(TypedDict, total=False):
        records: list
        note: str

    builder = StateGraph(Ledger)
    builder.add_node("load", lambda s: {"note": f"loaded; the first password is {s['records'][0]['password']}"})
    builder.add_edge(START, "load")
    rows = [{"user": f"user-{i:05d}", "password": f"pw-{i:05d}-{uuid.uuid4().hex[:8]}", "plan": "gold"} for i in range(records)]
    platform.compile(builder).invoke({"records": rows}, {"configurable": {"thread_id": UI_SECRETS_THREAD}})


def _react_thread(platform: Any, turns: int) -> None:
    """``UI_REACT_THREAD``: ``turns`` turns of a prebuilt ReAct agent, each a tool call to a ``SecureTool`` and an answer."""
    import warnings

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from langgraph_durable_mongodb import SecureTool

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent moved to langchain.agents: the bench keeps LangGraph's
        from langgraph.prebuilt import create_react_agent

    @tool
    def lookup(order: int) -> str:
        """Look an order up."""
        return f"order {order}: shipped, tracking {uuid.uuid4().hex[:12]}"

    class Chat(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    def replies() -> Any:
        for turn in range(turns):
            yield AIMessage("", tool_calls=[{"name": "lookup", "args": {"order": turn}, "id": f"call_{turn:04d}"}])
            yield AIMessage(f"Order {turn} has shipped.")

    graph = platform.attach(create_react_agent(Chat(messages=replies()), [SecureTool(lookup)]))
    config = {"configurable": {"thread_id": UI_REACT_THREAD}}
    for turn in range(turns):
        graph.invoke({"messages": [("user", f"where is order {turn}?")]}, config)


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


def _oncall(client: Any, db_name: str, s: Settings, listeners: tuple[Any, Any], log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Issue 45's two threads, written through the platform in a database of their own, and their pages measured:
    what their size costs, whatever else a database holds (the 10,000 threads above cost mongo-java-server scans)."""
    from langgraph_durable_mongodb import DurablePlatform

    platform = DurablePlatform(client, db_name=db_name)
    started = time.perf_counter()
    _records_thread(platform, s.ui_records)
    _react_thread(platform, s.ui_react_turns)
    log(f"ui: {UI_SECRETS_THREAD} ({s.ui_records:,} records) and {UI_REACT_THREAD} ({s.ui_react_turns} turns) written "
        f"in {time.perf_counter() - started:.0f} s")
    pages = {
        f"/threads/{UI_SECRETS_THREAD} (HTML, {s.ui_records:,} records with a password)": f"/threads/{UI_SECRETS_THREAD}",
        f"/api/thread?id={UI_SECRETS_THREAD}": f"/api/thread?id={UI_SECRETS_THREAD}",
        f"/api/thread/value?id={UI_SECRETS_THREAD}&channel=records (the whole value)":
            f"/api/thread/value?id={UI_SECRETS_THREAD}&channel=records",
        f"/threads/{UI_REACT_THREAD} (HTML, {s.ui_react_turns} ReAct turns)": f"/threads/{UI_REACT_THREAD}",
        f"/api/thread?id={UI_REACT_THREAD}": f"/api/thread?id={UI_REACT_THREAD}",
        f"/api/thread/timeline.svg?id={UI_REACT_THREAD}": f"/api/thread/timeline.svg?id={UI_REACT_THREAD}",
        "/ (HTML, both threads)": "/",
    }
    return _measure(client, db_name, pages, s.ui_reps, listeners, log)


def bench_ui(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    from langgraph_durable_mongodb import DurablePlatform, MongoDBCheckpointer, demo

    db_name, alone_name = f"bench_ui_{uuid.uuid4().hex[:8]}", f"bench_ui_alone_{uuid.uuid4().hex[:8]}"
    oncall_name = f"bench_ui_oncall_{uuid.uuid4().hex[:8]}"
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
        oncall = _oncall(client, oncall_name, s, (counter, server), log)
        ids = [f"case-{i:05d}" for i in range(s.ui_threads)]
        docs = _populate(client[db_name], client[db_name], ids, big=True)
        log(f"ui: {s.ui_threads} threads and {UI_BIG_THREAD} of {UI_BIG_ENTRIES} journal entries, {docs} documents")
        middle = ids[len(ids) // 2]
        queries = {
            "/api/threads (first page, 50)": "/api/threads",
            f"/api/threads?after={middle}": f"/api/threads?after={middle}",
            "/api/threads?prefix=case-09": "/api/threads?prefix=case-09",
            "/ (HTML, first page)": "/",
            "/?state=done (HTML, filtered by state)": "/?state=done",
            **big,
        }
        rows = _measure(client, db_name, queries, s.ui_reps, (counter, server), log)
        return {"threads": s.ui_threads, "documents": docs, "rows": rows, "alone": alone, "alone_documents": alone_docs,
                "target_ms": UI_TARGET_MS, "target_kb": UI_TARGET_KB, "records": s.ui_records, "react_turns": s.ui_react_turns,
                "oncall": oncall}
    finally:
        for name in (db_name, alone_name, oncall_name):
            client.drop_database(name)
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
             "< 300 ms and < 300 KB).", "",
             *header, *table(res["rows"]), ""]
    if res.get("oncall"):
        lines += [f"Issue 45, in a database of their own: `{UI_SECRETS_THREAD}`, whose state holds {res['records']:,} records "
                  "with a password each (every text shown is scrubbed of them, in one pass whatever their number; the whole "
                  f"value is sent on request, under its size limit), and `{UI_REACT_THREAD}`, a prebuilt ReAct agent's "
                  f"thread of {res['react_turns']} turns. Target: each page < {res['target_kb']} KB and "
                  f"< {res['target_ms']} ms.", "", *header, *table(res["oncall"]), ""]
    if res.get("alone"):
        lines += [f"`{UI_BIG_THREAD}` alone in a database ({res['alone_documents']:,} documents): what its page costs "
                  "whatever else the database holds.", "", *header, *table(res["alone"]), ""]
    return lines
