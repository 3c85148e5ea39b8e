"""The inspector never shows or does more than the CLI (issue 33, item 6): every answer refuses framing, every
odd query parameter is a 400 before any query, the prefix range is right at the Unicode edges, state values
are redacted as journal previews are, and the read-only inspector writes nothing to an older format."""

from __future__ import annotations

from typing import Any

import bson
import mongomock
import pytest
from pymongo import MongoClient
from starlette.testclient import TestClient

from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.errors import InvalidInputError
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import create_app
from langgraph_durable_mongodb.ui.guard import Guard
from langgraph_durable_mongodb.views.plans import thread_id_range
from langgraph_durable_mongodb.views.reader import ThreadViews
from tests.ui_helpers import position, seed

DB = "ui_guards"
#: Thread ids at the Unicode edges of a prefix: U+10FFFF (the last code point) and U+D7FF (the last before
#: the surrogates, which have no UTF-8 and so cannot bound a range).
EDGE_IDS = ["a", "a\ud7ff", "a\ud7ff-x", "a\ue000", "a\U0010ffff", "a\U0010ffff\U0010ffff", "a\U0010ffffz", "b", "\U0010ffff"]


@pytest.fixture(scope="module")
def seeded() -> mongomock.MongoClient:
    client = mongomock.MongoClient()
    seed(client, DB, with_demo=False)
    return client


def _http(client: Any, guard: Guard, base_url: str = "http://127.0.0.1:8765") -> TestClient:
    names = CollectionNames()
    return TestClient(create_app(ThreadViews(client, DB, names), Actions(client, DB, names), guard), base_url=base_url)


def _refuses_framing(answer: Any) -> bool:
    return answer.headers.get("content-security-policy") == "frame-ancestors 'none'" and answer.headers.get("x-frame-options") == "DENY"


def test_every_answer_refuses_to_be_framed(seeded: mongomock.MongoClient) -> None:
    guard = Guard(allow_writes=True)
    http = _http(seeded, guard)
    answers = {
        "list": http.get("/"), "thread": http.get("/threads/case-43"), "missing": http.get("/threads/nope"),
        "json list": http.get("/api/threads"), "json thread": http.get("/api/thread", params={"id": "case-43"}),
        "bad input": http.get("/api/threads", params={"limit": "x"}), "static": http.get("/static/ui.css"),
        "write": http.post("/api/discard", params={"csrf": guard.csrf}, data={"position": position("9")}),
        "host refused": _http(seeded, guard, "http://rebound.example:8765").get("/"),
    }
    assert {name: answer.status_code for name, answer in answers.items()} == {
        "list": 200, "thread": 200, "missing": 404, "json list": 200, "json thread": 200, "bad input": 400,
        "static": 200, "write": 404, "host refused": 403,
    }
    assert [name for name, answer in answers.items() if not _refuses_framing(answer)] == []


ODD_LIMITS = ["²", "٣", "9" * 5000, "-1", "0", "501", "1.5", " 5", "5 ", "+5", "0x10", "", "1e3"]


@pytest.mark.parametrize("limit", ODD_LIMITS, ids=lambda text: repr(text[:12]))
@pytest.mark.parametrize("route", ["/", "/api/threads"])
def test_an_odd_limit_is_a_400_before_any_query(limit: str, route: str) -> None:
    client = mongomock.MongoClient()
    http = _http(client, Guard())
    answer = http.get(route, params={"limit": limit})
    assert answer.status_code == 400 and "limit" in answer.json()["error"]
    assert client[DB].list_collection_names() == []  # refused before anything was read or written


def test_a_limit_in_range_is_taken(seeded: mongomock.MongoClient) -> None:
    http = _http(seeded, Guard())
    assert [len(http.get("/api/threads", params={"limit": n}).json()["threads"]) for n in ("1", "2", "500", "0002")] == [1, 2, 2, 2]


def test_a_lone_surrogate_is_refused_before_any_query() -> None:
    client = mongomock.MongoClient()
    views = ThreadViews(client, DB)
    for call in (lambda: views.threads(prefix="a\ud800"), lambda: views.threads(after="\udfff"), lambda: views.thread("t\ud800")):
        with pytest.raises(InvalidInputError, match="lone surrogate"):
            call()
    assert client[DB].list_collection_names() == []


def test_bytes_of_a_lone_surrogate_in_a_url_are_no_500(seeded: mongomock.MongoClient) -> None:
    http = _http(seeded, Guard())
    for url in ("/api/threads?prefix=a%ED%A0%80", "/?after=%ED%BF%BF", "/api/thread?id=%ED%A0%80", "/threads/%ED%A0%80"):
        assert http.get(url).status_code in (200, 404), url


def _edge_threads(client: Any, db_name: str) -> None:
    saver = MongoDBCheckpointer(client, db_name=db_name)
    for thread_id in EDGE_IDS:
        saver.put({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
                  {"v": 1, "id": "1ef0", "ts": "2026-01-01T00:00:00+00:00", "channel_values": {}, "channel_versions": {},
                   "versions_seen": {}, "pending_sends": []}, {"source": "input", "step": -1}, {})


def _listed(views: ThreadViews, prefix: str) -> list[str]:
    return [row["thread_id"] for row in views.threads(prefix=prefix, limit=500)["threads"]]


def _check_edges(views: ThreadViews, in_code_point_order: bool = True) -> None:
    """Each prefix lists exactly its ids; in code point order, as MongoDB sorts (mongo-java-server sorts by
    UTF-16 code units: U+E000 after U+10FFFF)."""
    for prefix in ("a\U0010ffff", "a\ud7ff", "\U0010ffff", "a", "a\ue000", ""):
        listed = _listed(views, prefix)
        assert (listed if in_code_point_order else sorted(listed)) == sorted(t for t in EDGE_IDS if t.startswith(prefix)), repr(prefix)


@pytest.mark.parametrize("prefix, below", [("ab", "ac"), ("a\ud7ff", "a\ue000"), ("a\U0010ffff", "b"), ("a\U0010ffff\U0010ffff", "b"), ("\U0010ffff", None)])
def test_the_prefix_range_at_the_unicode_edges_is_a_range_bson_can_hold(prefix: str, below: str | None) -> None:
    condition = thread_id_range(prefix, None)
    assert condition["thread_id"].get("$lt") == below and condition["thread_id"]["$gte"] == prefix
    assert bson.decode(bson.encode(condition)) == condition  # a surrogate bound would raise here, as on a server


def test_the_prefix_range_is_right_at_the_unicode_edges() -> None:
    client = mongomock.MongoClient()
    _edge_threads(client, DB)
    _check_edges(ThreadViews(client, DB))


def test_the_prefix_range_is_right_at_the_unicode_edges_on_a_server(mongodb_uri: str, server_db_name: str, mongodb_server: str) -> None:
    with MongoClient(mongodb_uri) as client:
        _edge_threads(client, server_db_name)
        _check_edges(ThreadViews(client, server_db_name), in_code_point_order=mongodb_server != "mongo_java_server")


#: Credentials in a thread's state, as the security review planted them: an access token in a tool's result,
#: a provider key in a user's message, a password as a tool call's argument, echoed by the tool's result.
SECRETS = ("tok-ACCESS-7f3a9", "sk-proj-AbCdEf0123456789xyzSECRET", "hunter2-PASSWORD")


def _secret_thread(client: Any, db_name: str) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from langgraph_durable_mongodb import DurablePlatform

    def talk(state: MessagesState) -> dict[str, Any]:
        return {"messages": [
            AIMessage("logging in", tool_calls=[{"name": "login", "args": {"user": "al", "password": SECRETS[2]}, "id": "c1"}]),
            ToolMessage(f'{{"access_token": "{SECRETS[0]}", "user": "al"}}', tool_call_id="c1"),
            ToolMessage(f"logged in as al with {SECRETS[2]}", tool_call_id="c1"),
        ]}

    builder = StateGraph(MessagesState)
    builder.add_node("talk", talk)
    builder.add_edge(START, "talk")
    graph = DurablePlatform(client, db_name=db_name).compile(builder)
    graph.invoke({"messages": [HumanMessage(f"my key is {SECRETS[1]}")]}, {"configurable": {"thread_id": "secrets"}})


def test_state_values_are_redacted_as_journal_previews_unless_with_outcomes() -> None:
    client = mongomock.MongoClient()
    _secret_thread(client, DB)
    names = CollectionNames()
    for with_outcomes in (False, True):
        app = create_app(ThreadViews(client, DB, names, with_outcomes=with_outcomes), Actions(client, DB, names), Guard())
        http = TestClient(app, base_url="http://127.0.0.1:8765")
        page, api = http.get("/threads/secrets").text, http.get("/api/thread", params={"id": "secrets"}).text
        assert all("logged in as al" in text for text in (page, api))  # the values are there, only their secrets go
        shown = [secret for secret in SECRETS for text in (page, api) if secret in text]
        assert shown == ([] if not with_outcomes else [s for s in SECRETS for _ in (page, api)]), with_outcomes
        assert ("[REDACTED]" in page) is not with_outcomes
