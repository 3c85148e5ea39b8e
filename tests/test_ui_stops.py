"""Why a thread stopped (issue 33, item 1), in the page, its JSON and the thread list: the error LangGraph saved
(the node that raised, its type and message, redacted), a journal entry's failure (when, which attempt), an
interrupt's value, an outcome unknown's idempotency key, and a crashed run told apart from an interrupted one."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any, TypedDict

import mongomock
import pytest
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from starlette.testclient import TestClient

from langgraph_durable_mongodb import DurablePlatform, SecureTool
from langgraph_durable_mongodb.cli import EXIT_OK, main
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import create_app
from langgraph_durable_mongodb.ui.guard import Guard
from langgraph_durable_mongodb.views.reader import ThreadViews
from tests.ui_helpers import seed

DB = "ui_stops"
#: A provider key in the failing node's message and in the interrupt's value: never shown without --with-outcomes.
KEY = "sk-proj-AbCdEf0123456789xyzSTOPS"


class _State(TypedDict, total=False):
    n: int
    answer: str


def _pay(state: _State) -> dict[str, Any]:
    raise RuntimeError(f"boom after payment with {KEY}")


def _ask(state: _State) -> dict[str, Any]:
    return {"answer": interrupt({"question": "approve the refund?", "api_key": KEY})}


def _graph(platform: DurablePlatform, second: Any, **options: Any) -> Any:
    builder = StateGraph(_State)
    builder.add_node("prepare", lambda s: {"n": s["n"] + 1})
    builder.add_node("second", second)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "second")
    return platform.compile(builder, **options)


@pytest.fixture(scope="module")
def threads() -> mongomock.MongoClient:
    """``failed`` (its node raised), ``asked`` (interrupted), ``paused`` (at a breakpoint: due, no interrupt write), ``crashed`` (its process died while ``second`` ran:
    the documents a SIGKILL leaves, no error write and the run lock still owned), and ``case-43`` (an outcome
    unknown)."""
    client = mongomock.MongoClient()
    seed(client, DB, with_demo=False)
    platform = DurablePlatform(client, db_name=DB)
    for thread_id, second in (("failed", _pay), ("crashed", _pay), ("asked", _ask)):
        try:
            _graph(platform, second).invoke({"n": 1}, {"configurable": {"thread_id": thread_id}})
        except RuntimeError:
            pass
    _graph(platform, _pay, interrupt_before=["second"]).invoke({"n": 1}, {"configurable": {"thread_id": "paused"}})
    platform.run_locks.wait_releases(10)
    names = CollectionNames()
    client[DB][names.writes].delete_many({"thread_id": "crashed"})
    past = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(minutes=1)
    client[DB][names.runs].update_one({"thread_id": "crashed"}, {"$set": {
        "owner": "owner-dead", "owner_host": "worker-3.example", "owner_pid": 77, "lease_until": past, "started_at": past,
    }})
    return client


def _http(client: Any, *, with_outcomes: bool = False) -> TestClient:
    names = CollectionNames()
    views = ThreadViews(client, DB, names, with_outcomes=with_outcomes)
    return TestClient(create_app(views, Actions(client, DB, names), Guard()), base_url="http://127.0.0.1:8765")


def _stopped(client: Any, thread_id: str, **options: Any) -> dict[str, Any]:
    return _http(client, **options).get("/api/thread", params={"id": thread_id}).json()["stopped"]


def test_a_failed_thread_says_which_node_raised_what(threads: mongomock.MongoClient) -> None:
    stopped = _stopped(threads, "failed")
    assert stopped["state"] == "failed"
    [error] = stopped["errors"]
    assert (error["source"], error["node"], error["path"], error["type"]) == ("langgraph", "second", "second", "RuntimeError")
    assert error["message"] == "boom after payment with [REDACTED]" and error["at"]
    page = _http(threads).get("/threads/failed").text
    assert "Why it stopped" in page and "RuntimeError" in page and "boom after payment" in page and KEY not in page
    assert _stopped(threads, "failed", with_outcomes=True)["errors"][0]["message"] == f"boom after payment with {KEY}"


def test_an_interrupt_shows_its_value_redacted(threads: mongomock.MongoClient) -> None:
    stopped = _stopped(threads, "asked")
    assert stopped["state"] == "interrupted" and stopped["errors"] == [] and stopped["crashed_run"] is None
    [asked] = stopped["interrupts"]
    assert asked["node"] == "second" and "approve the refund?" in asked["value"]["text"]
    assert KEY not in asked["value"]["text"] and "[REDACTED]" in asked["value"]["text"]
    assert "approve the refund?" in _http(threads).get("/threads/asked").text


def test_a_crashed_run_is_told_apart_from_an_interrupted_one(threads: mongomock.MongoClient) -> None:
    stopped = _stopped(threads, "crashed")
    assert stopped["state"] == "crashed" and stopped["errors"] == [] and stopped["interrupts"] == []
    assert (stopped["crashed_run"]["owner"], stopped["crashed_run"]["pid"]) == ("owner-dead", 77)
    rows = {r["thread_id"]: r["state"] for r in _http(threads).get("/api/threads").json()["threads"]}
    assert (rows["crashed"], rows["asked"], rows["paused"], rows["failed"]) == ("crashed", "interrupted", "interrupted", "failed")
    assert _stopped(threads, "paused")["crashed_run"] is None
    assert "Crashed: the run of" in _http(threads).get("/threads/crashed").text


def test_an_unknown_outcome_shows_its_idempotency_key(threads: mongomock.MongoClient) -> None:
    [unknown] = _stopped(threads, "case-43")["unknown"]
    stored = threads[DB][CollectionNames().journal].find_one({"thread_id": "case-43", "name": "send_payment"})
    assert unknown["name"] == "send_payment" and unknown["idempotency_key"] == stored["idempotency_key"]
    assert stored["idempotency_key"] in _http(threads).get("/threads/case-43").text


def test_a_failed_journal_entry_says_when_and_which_attempt() -> None:
    client = mongomock.MongoClient()
    platform = DurablePlatform(client, db_name=DB)

    @tool
    def refund(amount: int) -> str:
        """Refund an amount."""
        raise ValueError(f"card declined, token={KEY}")

    secure = SecureTool(refund)
    builder = StateGraph(_State)
    builder.add_node("refund", lambda s: {"answer": secure.invoke({"amount": 3})})
    builder.add_edge(START, "refund")
    with pytest.raises(ValueError):
        platform.compile(builder).invoke({"n": 1}, {"configurable": {"thread_id": "declined"}})
    errors = _stopped(client, "declined")["errors"]
    journal = [e for e in errors if e["source"] == "journal"]
    assert [(e["node"], e["name"], e["type"], e["attempts"]) for e in journal] == [("refund", "refund", "ValueError", 1)]
    assert journal[0]["at"] and KEY not in journal[0]["message"]


def test_inspect_says_why_it_stopped_as_the_page_does(threads: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    for thread_id, line in (
        ("failed", "  error      second: RuntimeError boom after payment with [REDACTED] (in the step begun"),
        ("crashed", "  crashed    the run of owner-dead on worker-3.example pid 77"),
        ("asked", "  interrupt  second: "),
        ("case-43", "  unknown    tool send_payment: idempotency key "),
    ):
        assert main(["--db", DB, "inspect", thread_id], client=threads) == EXIT_OK
        printed = capsys.readouterr().out
        assert line in printed and KEY not in printed, printed
        assert main(["--db", DB, "inspect", thread_id, "--json"], client=threads) == EXIT_OK
        report = json.loads(capsys.readouterr().out)
        assert report["stopped"]["state"] == report["state"] == _stopped(threads, thread_id)["state"]
