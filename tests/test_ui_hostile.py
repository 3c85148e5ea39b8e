"""Views that never run, leak or choke on what the database holds (issue 45, item 4): bytes crafted to name a
constructor are shown, never run; a credential a tool's error or an interrupt echoes is redacted wherever the
views show it; redaction costs one pass whatever the number of credentials; a write route reads no more than its
limit and nothing at all before its checks; a hand-edited document is a typed answer, never a traceback; a name
holding a control character leaves the timeline well-formed XML."""

from __future__ import annotations

import json
import math
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from typing import Any, TypedDict

import mongomock
import ormsgpack
import pytest
from bson import Binary, ObjectId
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from starlette.testclient import TestClient

from langgraph_durable_mongodb import DurablePlatform, SecureTool
from langgraph_durable_mongodb.cli import main
from langgraph_durable_mongodb.journal import redaction
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import MAX_FORM_BYTES, create_app
from langgraph_durable_mongodb.ui.guard import Guard
from langgraph_durable_mongodb.views.reader import ThreadViews

DB = "ui_hostile"
NAMES = CollectionNames()
#: LangGraph's msgpack extension that names a constructor and its positional arguments.
EXT_CONSTRUCTOR_POS_ARGS = 1
#: A password the failing tool's error and the interrupt's question both echo.
PASSWORD = "hunter2-correct-horse"


class _State(TypedDict, total=False):
    n: int
    login: dict[str, Any]
    answer: str


def _http(client: Any, guard: Guard | None = None) -> TestClient:
    views = ThreadViews(client, DB, NAMES)
    return TestClient(create_app(views, Actions(client, DB, NAMES), guard or Guard()), base_url="http://127.0.0.1:8765")


def _crafted(target: Path) -> bytes:
    """msgpack holding one extension that names ``os.mkdir(target)``: LangGraph's default serde would call it."""
    return ormsgpack.packb(ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, ormsgpack.packb(["os", "mkdir", [str(target)]])))


def _asking(client: Any, thread_id: str) -> None:
    """A thread interrupted in ``ask``, its state holding a login with a password, the question quoting it."""
    platform = DurablePlatform(client, db_name=DB)
    builder = StateGraph(_State)
    builder.add_node("prepare", lambda s: {"n": 1, "login": {"user": "al", "password": PASSWORD}})
    builder.add_node("ask", lambda s: {"answer": interrupt(f"log in as al with {s['login']['password']}?")})
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "ask")
    platform.compile(builder).invoke({"n": 0}, {"configurable": {"thread_id": thread_id}})
    platform.run_locks.wait_releases(10)


def _every_view(client: Any, thread_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    """What every view shows of the thread: its page, its JSON, its values whole, and ``inspect`` both ways."""
    http = _http(client)
    shown = [http.get(f"/threads/{thread_id}").text, http.get("/api/thread", params={"id": thread_id}).text]
    for name in ("login", "n", "answer"):
        shown.append(http.get("/api/thread/value", params={"id": thread_id, "channel": name}).text)
    for argv in (["--db", DB, "inspect", thread_id], ["--db", DB, "inspect", thread_id, "--json"]):
        main(argv, client=client)
        shown.append(capsys.readouterr().out)
    return "\n".join(shown)


def test_crafted_msgpack_in_an_interrupt_or_a_state_value_is_shown_never_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = mongomock.MongoClient()
    _asking(client, "t")
    db = client[DB]
    in_interrupt, in_state = tmp_path / "from-interrupt", tmp_path / "from-state"
    interrupt_bytes = _crafted(in_interrupt)
    done = db[NAMES.writes].update_many({"thread_id": "t", "channel": "__interrupt__"}, {"$set": {
        "type": "msgpack", "data": Binary(interrupt_bytes), "h": zlib.crc32(interrupt_bytes)}})
    assert done.modified_count >= 1
    latest = db[NAMES.checkpoints].find_one({"thread_id": "t", "checkpoint_ns": ""}, sort=[("checkpoint_id", -1)])
    state_bytes = _crafted(in_state)
    values = [{**v, "t": "msgpack", "d": Binary(state_bytes), "h": zlib.crc32(state_bytes)} if v["c"] == "n" else v
              for v in latest["values"]]
    db[NAMES.checkpoints].update_one({"_id": latest["_id"]}, {"$set": {"values": values}})
    shown = _every_view(client, "t", capsys)
    assert not in_interrupt.exists() and not in_state.exists()
    assert "mkdir" in shown  # the stored form is shown instead


def test_a_credential_an_error_or_an_interrupt_echoes_is_redacted_in_every_view(capsys: pytest.CaptureFixture[str]) -> None:
    client = mongomock.MongoClient()
    _asking(client, "asked")
    platform = DurablePlatform(client, db_name=DB)

    @tool
    def sign_in(user: str, password: str) -> str:
        """Sign in."""
        raise PermissionError(f"no account {user}:{password}")

    @tool
    def profile(user: str) -> str:
        """A user's profile (which holds, by mistake, the password: its stored preview too)."""
        return f"{user}: gold plan, last password {PASSWORD}"

    secure, echo = SecureTool(sign_in), SecureTool(profile)
    builder = StateGraph(_State)
    builder.add_node("prepare", lambda s: {"login": {"user": "al", "password": PASSWORD}})
    builder.add_node("look", lambda s: {"answer": echo.invoke({"user": "al"})})
    builder.add_node("sign", lambda s: {"answer": secure.invoke(s["login"])})
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "look")
    builder.add_edge("look", "sign")
    with pytest.raises(PermissionError):
        platform.compile(builder).invoke({"n": 0}, {"configurable": {"thread_id": "echoed"}})
    platform.run_locks.wait_releases(10)
    stored = client[DB][NAMES.journal].find_one({"thread_id": "echoed", "name": "profile"})
    assert PASSWORD in stored["outcome"]["preview"]  # not the input's credential: the journal kept it
    for thread_id in ("asked", "echoed"):
        shown = _every_view(client, thread_id, capsys)
        assert PASSWORD not in shown, thread_id
        assert "[REDACTED]" in shown, thread_id


class _Counted:
    """Counts the calls Python makes (C functions included) while it is on."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            self.calls += 1

    def count(self, fn: Any) -> int:
        self.calls = 0
        sys.setprofile(self)
        try:
            fn()
        finally:
            sys.setprofile(None)
        return self.calls


def test_scrubbing_a_text_costs_the_same_whatever_the_number_of_credentials() -> None:
    text = "a state of records " * 5000
    sets = {n: frozenset(f"secret-{i:05d}" for i in range(n)) for n in (10, 100, 20_000)}
    for secrets in sets.values():  # what a set of credentials compiles to is built once, then kept
        redaction.scrub(text, secrets)
    counted = _Counted()
    calls = {n: counted.count(lambda s=s: redaction.scrub(text, s)) for n, s in sets.items()}
    assert calls[20_000] == calls[100] <= calls[10], calls
    assert redaction.scrub("x secret-19999 y", sets[20_000]) == "x [REDACTED] y"


def _form_post(app: Any, headers: dict[str, str], body: bytes, chunk: int = 1 << 20) -> tuple[int, int]:
    """POST ``body`` to ``/api/discard`` straight through ASGI: ``(status, bytes the app read)``."""
    import asyncio

    read = 0
    sent: dict[str, Any] = {}

    async def receive() -> dict[str, Any]:
        nonlocal read
        piece = body[read:read + chunk]
        read += len(piece)
        return {"type": "http.request", "body": piece, "more_body": read < len(body)}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]

    scope = {
        "type": "http", "method": "POST", "path": "/api/discard", "raw_path": b"/api/discard", "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()], "scheme": "http",
        "server": ("127.0.0.1", 8765), "client": ("127.0.0.1", 5555), "http_version": "1.1", "root_path": "",
    }
    asyncio.run(app(scope, receive, send))
    return sent["status"], read


def test_a_write_route_reads_nothing_before_its_checks_and_no_more_than_its_limit() -> None:
    guard = Guard(allow_writes=True)
    app = create_app(ThreadViews(mongomock.MongoClient(), DB, NAMES), Actions(mongomock.MongoClient(), DB, NAMES), guard)
    big = b"position=" + b"x" * (8 * MAX_FORM_BYTES)
    host = {"host": "127.0.0.1:8765", "content-type": "application/x-www-form-urlencoded"}
    cross_origin = {**host, "origin": "https://evil.example", "content-length": str(len(big))}
    assert _form_post(app, cross_origin, big) == (403, 0)
    no_token = {**host, "content-length": str(len(big))}
    assert _form_post(app, no_token, big) == (403, 0)
    too_long = {**host, "content-length": str(len(big)), "x-csrf-token": guard.csrf}
    assert _form_post(app, too_long, big) == (413, 0)
    status, read = _form_post(app, {**host, "x-csrf-token": guard.csrf}, big, chunk=4096)  # no length said: read up to it
    assert status == 413 and read <= MAX_FORM_BYTES + 4096


#: Values a person may leave in a hand-edited document where the library stores something else.
HAND_EDITS = {"nan": math.nan, "inf": math.inf, "bytes": Binary(b"\x00\xff"), "object id": ObjectId(), "text": "not a document"}


def _hand_edited(client: Any, value: Any) -> None:
    """A thread whose every stored field the views read holds ``value`` instead of what the library wrote."""
    _asking(client, "edited")
    db = client[DB]
    db[NAMES.journal].insert_one({
        "thread_id": "edited", "path": value, "node": value, "occurrence": value, "effect_key": value, "chunk": 0,
        "kind": value, "name": value, "status": "completed", "attempts": value, "duration_ms": value,
        "started_at": value, "finished_at": value, "input": value, "outcome": value, "error": value, "replays": value,
        "idempotency_key": value, "root_key": value, "created_at": value, "label": value,
    })
    for collection, query in ((NAMES.checkpoints, {"thread_id": "edited", "checkpoint_ns": ""}), (NAMES.writes, {"thread_id": "edited"})):
        for doc in db[collection].find(query):
            fields = {"metadata": value, "ts": value} if collection == NAMES.checkpoints else {"task_path": value, "task_id": value}
            db[collection].update_one({"_id": doc["_id"]}, {"$set": fields})
    db[NAMES.runs].update_one({"thread_id": "edited"}, {"$set": {"owner": value, "lease_until": value, "started_at": value}})


@pytest.mark.parametrize("edit", sorted(HAND_EDITS))
def test_a_hand_edited_document_is_a_typed_answer_on_every_route(edit: str, capsys: pytest.CaptureFixture[str]) -> None:
    client = mongomock.MongoClient()
    _hand_edited(client, HAND_EDITS[edit])
    http = _http(client)
    for url in ("/", "/threads/edited", "/api/threads", "/api/thread?id=edited", "/api/thread/status?id=edited",
                "/api/thread/timeline.svg?id=edited", "/api/thread/value?id=edited&channel=login"):
        answer = http.get(url)
        assert answer.status_code in (200, 400, 404, 409, 422, 500), url
        if answer.headers["content-type"].startswith("application/json"):
            json.loads(answer.text, parse_constant=lambda constant: pytest.fail(f"{url} sent {constant}"))
            assert "$oid" not in answer.text or edit == "object id", url
        if answer.status_code >= 400:
            assert "error" in answer.text, url
    for argv in (["--db", DB, "inspect", "edited"], ["--db", DB, "inspect", "edited", "--json"], ["--db", DB, "threads"]):
        assert main(argv, client=client) in (0, 1), argv  # a traceback would raise here
        capsys.readouterr()


def test_an_entry_whose_path_is_not_text_is_named_by_inspect(capsys: pytest.CaptureFixture[str]) -> None:
    client = mongomock.MongoClient()
    _asking(client, "pathless")
    client[DB][NAMES.journal].insert_one({
        "thread_id": "pathless", "path": 3, "node": "ask", "occurrence": "1", "effect_key": "1", "chunk": 0,
        "kind": "tool", "name": "lookup", "status": "completed", "root_key": "1f0",
    })
    assert main(["--db", DB, "inspect", "pathless"], client=client) == 1
    captured = capsys.readouterr()
    assert "path" in captured.err and "thread pathless" in captured.out


def test_a_name_with_a_control_character_leaves_the_timeline_well_formed() -> None:
    client = mongomock.MongoClient()
    _asking(client, "ctl")
    client[DB][NAMES.journal].insert_one({
        "thread_id": "ctl", "path": "agent/1", "node": "ask\x01\x1b[2J", "occurrence": "1", "effect_key": "1", "chunk": 0,
        "kind": "tool\x00", "name": "look\x0bup\ufffe", "status": "completed", "attempts": 1,
    })
    answer = _http(client).get("/api/thread/timeline.svg", params={"id": "ctl"})
    assert answer.status_code == 200
    svg = ET.fromstring(answer.text)
    assert any("look" in (t.text or "") for t in svg.iter("{http://www.w3.org/2000/svg}text"))


def test_an_error_no_check_foresaw_is_a_json_500_naming_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last net: a failure the views did not foresee answers JSON, not a bare text page, and never quotes its
    message (it may hold a stored value the views did not scrub)."""
    def broken(self: Any, thread_id: str, page: int = 1) -> Any:
        raise ZeroDivisionError("a reading no check foresaw, quoting pw-1234")

    monkeypatch.setattr(ThreadViews, "thread", broken)
    views = ThreadViews(mongomock.MongoClient(), DB, NAMES)
    http = TestClient(create_app(views, Actions(mongomock.MongoClient(), DB, NAMES), Guard()), base_url="http://127.0.0.1:8765",
                      raise_server_exceptions=False)
    answer = http.get("/api/thread", params={"id": "t"})
    assert answer.status_code == 500
    assert answer.json() == {"error": "the inspector could not answer /api/thread: ZeroDivisionError (see its log)"}
