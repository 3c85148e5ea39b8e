"""The inspector is bounded (issue 33, item 5): the thread list reads documents in proportion to its page, not
to its threads' journals (counted from the server's replies with pymongo's command monitoring)."""

from __future__ import annotations

from typing import Any

import mongomock
from pymongo import MongoClient, monitoring

from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.errors import InvalidInputError
from langgraph_durable_mongodb.storage.schema import CollectionNames
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
    assert row["effects"] == {"completed": ENTRIES - 30, "in flight": 0, "interrupted": 0, "failed": 30, "outcome unknown": 0, "abandoned": 0}
    return row


def test_the_thread_list_reads_o_of_its_page_on_a_server(mongodb_uri: str, server_db_name: str) -> None:
    replies = Replies()
    with MongoClient(mongodb_uri) as writer:
        _big_thread(writer, server_db_name)
    with MongoClient(mongodb_uri, event_listeners=[replies]) as client:
        _listed(ThreadViews(client, server_db_name))
    assert sum(replies.documents.values()) < 20, replies.documents


def _counted(views: ThreadViews) -> list[int]:
    """How many documents each of ``views``' requests returned, appended as they run (mongomock has no monitoring)."""
    returned: list[int] = []
    execute = views._io.execute  # noqa: SLF001
    views._io.execute = lambda request: (lambda found: returned.append(len(found) if isinstance(found, list) else 1) or found)(execute(request))  # noqa: SLF001
    return returned


def test_the_thread_list_reads_o_of_its_page() -> None:
    client = mongomock.MongoClient()
    _big_thread(client, "bounds")
    views = ThreadViews(client, "bounds")
    returned = _counted(views)
    _listed(views)
    assert sum(returned) < 20, returned


def test_a_large_state_value_is_cut_in_the_page_and_its_json() -> None:
    from langgraph.graph import START, StateGraph
    from starlette.testclient import TestClient
    from typing_extensions import TypedDict

    from langgraph_durable_mongodb import DurablePlatform
    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard
    from langgraph_durable_mongodb.views.values import MAX_SHOWN_CHARS

    class State(TypedDict):
        blob: str

    client = mongomock.MongoClient()
    builder = StateGraph(State)
    builder.add_node("grow", lambda s: {"blob": s["blob"] * 2})
    builder.add_edge(START, "grow")
    DurablePlatform(client, db_name="bounds").compile(builder).invoke({"blob": "x" * 1_000_000}, {"configurable": {"thread_id": "large"}})
    names = CollectionNames()
    http = TestClient(create_app(ThreadViews(client, "bounds", names), Actions(client, "bounds", names), Guard()), base_url="http://127.0.0.1:8765")
    answer = http.get("/api/thread", params={"id": "large"})
    blob = answer.json()["values"]["blob"]
    assert blob["cut"] and blob["chars"] == 2_000_002 and len(blob["text"]) == MAX_SHOWN_CHARS  # the JSON string's quotes
    assert len(answer.content) < 3 * MAX_SHOWN_CHARS
    page = http.get("/threads/large")
    assert len(page.content) < 3 * MAX_SHOWN_CHARS and f"cut: the first {MAX_SHOWN_CHARS} of 2000002 characters" in page.text


def test_only_the_scrubbed_window_of_a_large_value_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value of 2,000,000 characters holding a credential is scrubbed in the window the page shows (and a margin),
    not whole: the work of redaction grows with what is shown."""
    from langgraph.graph import START, StateGraph
    from starlette.testclient import TestClient
    from typing_extensions import TypedDict

    from langgraph_durable_mongodb import DurablePlatform
    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard
    from langgraph_durable_mongodb.views import values
    from langgraph_durable_mongodb.views.values import MAX_SHOWN_CHARS, SCRUB_MARGIN

    class State(TypedDict):
        blob: str
        login: dict

    client = mongomock.MongoClient()
    builder = StateGraph(State)
    builder.add_node("grow", lambda s: {"blob": "sesame-42 " + "x" * 2_000_000})
    builder.add_edge(START, "grow")
    DurablePlatform(client, db_name="bounds").compile(builder).invoke(
        {"blob": "", "login": {"password": "sesame-42"}}, {"configurable": {"thread_id": "window"}})
    scrubbed: list[int] = []
    scrub = values.scrub
    monkeypatch.setattr(values, "scrub", lambda text, secrets: scrubbed.append(len(text)) or scrub(text, secrets))
    names = CollectionNames()
    http = TestClient(create_app(ThreadViews(client, "bounds", names), Actions(client, "bounds", names), Guard()), base_url="http://127.0.0.1:8765")
    blob = http.get("/api/thread", params={"id": "window"}).json()["values"]["blob"]
    assert blob["text"].startswith('"[REDACTED] xxx') and blob["chars"] == 2_000_012
    assert scrubbed and max(scrubbed) <= MAX_SHOWN_CHARS + len("sesame-42") + SCRUB_MARGIN


def test_a_live_page_polls_a_small_status_instead_of_reloading() -> None:
    from starlette.testclient import TestClient

    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard
    from tests.ui_helpers import seed

    client = mongomock.MongoClient()
    seed(client, "bounds", with_demo=False)
    _big_thread(client, "bounds")
    names = CollectionNames()
    http = TestClient(create_app(ThreadViews(client, "bounds", names), Actions(client, "bounds", names), Guard()), base_url="http://127.0.0.1:8765")
    live = http.get("/threads/case-43").text  # a claim in flight
    assert 'data-poll="/api/thread/status?id=case-43"' in live and 'http-equiv="refresh"' not in live
    assert "data-poll" not in http.get("/threads/big").text  # nothing moves: nothing to poll
    status = http.get("/api/thread/status", params={"id": "big"})
    assert status.json()["effects"]["completed"] == ENTRIES - 30 and len(status.content) < 1000
    assert http.get("/api/thread/status", params={"id": "bi"}).status_code == 404  # a prefix of an id is not it
    assert http.get("/api/thread/status", params={"id": ""}).status_code == 400


def _effects_shown(thread: dict[str, Any]) -> list[str]:
    return [e["occurrence"] for op in thread["operations"] for node in op["nodes"] for e in node["effects"]]


def _http(client: Any, db_name: str, *, with_outcomes: bool = False) -> Any:
    from starlette.testclient import TestClient

    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard

    names = CollectionNames()
    app = create_app(ThreadViews(client, db_name, names, with_outcomes=with_outcomes), Actions(client, db_name, names), Guard())
    return TestClient(app, base_url="http://127.0.0.1:8765")


def test_a_threads_entries_are_paged_in_the_order_claimed_with_links_both_ways() -> None:
    from langgraph_durable_mongodb.views.plans import ENTRIES_PAGE

    client = mongomock.MongoClient()
    _big_thread(client, "paged")
    http = _http(client, "paged")
    first = http.get("/api/thread", params={"id": "big"}).json()
    assert first["page"] == 1 and first["more_entries"]
    assert sorted(map(int, _effects_shown(first))) == list(range(ENTRIES_PAGE))
    assert first["effects"] == {"completed": ENTRIES - 30, "in flight": 0, "interrupted": 0, "failed": 30, "outcome unknown": 0, "abandoned": 0}
    assert len(first["stopped"]["errors"]) == 20  # the latest failed entries, whatever page is shown
    second = http.get("/api/thread", params={"id": "big", "page": "2"}).json()
    assert sorted(map(int, _effects_shown(second))) == list(range(ENTRIES_PAGE, 2 * ENTRIES_PAGE))
    assert second["effects"] == first["effects"]
    last = ENTRIES // ENTRIES_PAGE
    final = http.get("/api/thread", params={"id": "big", "page": str(last)}).json()
    assert not final["more_entries"] and len(_effects_shown(final)) == ENTRIES_PAGE
    past = http.get("/api/thread", params={"id": "big", "page": str(last + 1)}).json()
    assert not past["more_entries"] and _effects_shown(past) == []
    html = http.get("/threads/big").text
    assert 'class="next" href="?page=2"' in html and 'class="previous"' not in html
    html = http.get("/threads/big", params={"page": "2"}).text
    assert 'class="next" href="?page=3"' in html and 'class="previous" href="?page=1"' in html
    html = http.get("/threads/big", params={"page": str(last)}).text
    assert 'class="next"' not in html and f'class="previous" href="?page={last - 1}"' in html
    small = http.get("/threads/small").text
    assert 'class="pager"' not in small  # one page: no links


def test_an_odd_page_is_a_400_before_any_query() -> None:
    client = mongomock.MongoClient()
    _big_thread(client, "odd")
    http = _http(client, "odd")
    for odd in ("0", "-1", "²", "1" * 5000, "1.5", "", " 1", "0x2", "100001"):
        for answer in (http.get("/api/thread", params={"id": "big", "page": odd}), http.get("/threads/big", params={"page": odd})):
            assert answer.status_code == 400, (odd, answer.status_code)
            assert "page must be a whole number" in answer.json()["error"]
    assert http.get("/api/thread", params={"id": "big", "page": "100000"}).status_code == 200
    views = ThreadViews(client, "odd")
    for odd_page in (0, -1, True, "2", 2.0, 100_001):
        try:
            views.thread("big", odd_page)  # type: ignore[arg-type]
        except InvalidInputError as error:
            assert "page must be an integer from 1 to 100000" in str(error)
        else:
            raise AssertionError(f"page {odd_page!r} was taken")


def test_the_thread_page_reads_o_of_its_page_of_entries() -> None:
    client = mongomock.MongoClient()
    _big_thread(client, "page")
    views = ThreadViews(client, "page")
    returned = _counted(views)
    assert len(_effects_shown(views.thread("big", 3))) == 200
    assert sum(returned) < 300, returned


def test_the_thread_page_reads_o_of_its_page_of_entries_on_a_server(mongodb_uri: str, server_db_name: str) -> None:
    replies = Replies()
    with MongoClient(mongodb_uri) as writer:
        _big_thread(writer, server_db_name)
    with MongoClient(mongodb_uri, event_listeners=[replies]) as client:
        found = ThreadViews(client, server_db_name).thread("big", 2)
    assert found is not None and len(_effects_shown(found)) == 200 and found["more_entries"]
    assert found["effects"]["completed"] == ENTRIES - 30
    assert sum(replies.documents.values()) < 300, replies.documents


def _large_state(client: Any, db_name: str, size: int) -> None:
    """A thread ``large`` whose state holds a ``blob`` of ``size`` characters ending in an API key and echoing a
    password its ``auth`` message passes a tool, beside a PIN too short to be scrubbed wherever it is echoed
    (redacted by key alone: a message's text is its ``repr``, which text redaction does not parse)."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    from langgraph_durable_mongodb import DurablePlatform

    class State(TypedDict):
        blob: str
        auth: list

    builder = StateGraph(State)
    builder.add_node("grow", lambda s: {"blob": "x" * size + " hunter2-correct-horse sk-proj-" + "A1b2C3d4" * 6})
    builder.add_edge(START, "grow")
    DurablePlatform(client, db_name=db_name).compile(builder).invoke(
        {"blob": "", "auth": [AIMessage(content="", tool_calls=[
            {"name": "login", "args": {"password": "hunter2-correct-horse", "pin": "739"}, "id": "call-1"}])]}, {"configurable": {"thread_id": "large"}},
    )


def test_a_cut_value_is_sent_whole_on_request_redacted_and_under_a_limit() -> None:
    from langgraph_durable_mongodb.views.values import MAX_FULL_CHARS, MAX_SHOWN_CHARS

    client = mongomock.MongoClient()
    _large_state(client, "full", 3 * MAX_SHOWN_CHARS)
    http = _http(client, "full")
    page = http.get("/threads/large").text
    assert 'href="/api/thread/value?id=large&amp;channel=blob"' in page
    whole = http.get("/api/thread/value", params={"id": "large", "channel": "blob"}).json()
    assert whole["chars"] == len(whole["text"]) > 3 * MAX_SHOWN_CHARS and whole["text"].startswith('"xxx')
    assert "sk-proj-A1b2" not in whole["text"] and "hunter2" not in whole["text"] and "[REDACTED" in whole["text"]
    auth = http.get("/api/thread/value", params={"id": "large", "channel": "auth"}).json()["text"]
    assert "hunter2" not in auth and "739" not in auth and "login" in auth
    opened = _http(client, "full", with_outcomes=True)
    assert "sk-proj-A1b2" in opened.get("/api/thread/value", params={"id": "large", "channel": "blob"}).json()["text"]
    assert http.get("/api/thread/value", params={"id": "large", "channel": "nope"}).status_code == 404
    assert http.get("/api/thread/value", params={"id": "nope", "channel": "blob"}).status_code == 404
    assert http.get("/api/thread/value", params={"id": "large", "channel": ""}).status_code == 400
    too_big = mongomock.MongoClient()
    _large_state(too_big, "full", MAX_FULL_CHARS)
    refused = _http(too_big, "full").get("/api/thread/value", params={"id": "large", "channel": "blob"})
    assert refused.status_code == 400 and f"more than the inspector sends ({MAX_FULL_CHARS})" in refused.json()["error"]
