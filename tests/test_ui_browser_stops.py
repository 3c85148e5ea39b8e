"""Why a thread stopped and what the inspector refuses, in a real browser (headless Chromium) on mongo-java-server
(issue 33, items 1 and 6): the demo SIGKILLed mid-run shows as crashed, not interrupted; a failed node's error
shows redacted; every page refuses framing; an odd limit is a 400."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from pymongo import MongoClient

from langgraph_durable_mongodb import DurablePlatform
from tests.conftest import serve_inspector

DB = "ui_browser_stops"
#: A provider key in the failing node's message: never on the page.
KEY = "sk-proj-AbCdEf0123456789xyzBROWSER"


class _State(TypedDict, total=False):
    n: int


def _fail(state: _State) -> dict[str, Any]:
    raise RuntimeError(f"boom after payment with {KEY}")


@pytest.fixture(scope="module")
def served(mongo_java_server_uri: str) -> Iterator[str]:
    """The demo SIGKILLed after its tool ran, never resumed (``case-42``), and a thread whose node raised."""
    client = MongoClient(mongo_java_server_uri)
    client.drop_database(DB)
    killed = subprocess.run([sys.executable, "-m", "langgraph_durable_mongodb.demo", "--db", DB, "--crash"],
                            env={**os.environ, "MONGODB_URI": mongo_java_server_uri}, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    builder = StateGraph(_State)
    builder.add_node("pay", _fail)
    builder.add_edge(START, "pay")
    platform = DurablePlatform(client, db_name=DB)
    with pytest.raises(RuntimeError):
        platform.compile(builder).invoke({"n": 1}, {"configurable": {"thread_id": "failed"}})
    platform.run_locks.wait_releases(10)
    yield from serve_inspector(client, DB)
    client.drop_database(DB)
    client.close()


def test_a_sigkilled_run_shows_as_crashed(page: Any, served: str) -> None:
    page.goto(served + "/")
    row = page.locator("tr", has=page.locator("a.thread-id", has_text="case-42"))
    assert row.locator(".state").inner_text() == "crashed"
    page.goto(served + "/threads/case-42")
    assert page.locator("h1 .state").inner_text() == "crashed"
    assert "never released its lock" in page.locator("section.stopped p.crashed").inner_text()


def test_a_failed_node_says_why_redacted(page: Any, served: str) -> None:
    page.goto(served + "/threads/failed")
    error = page.locator("section.stopped div.error")
    assert error.locator(".error-type").inner_text() == "RuntimeError"
    assert error.locator(".error-message").inner_text() == "boom after payment with [REDACTED]"
    assert KEY not in page.content()


def test_pages_refuse_framing_and_odd_input(page: Any, served: str) -> None:
    for path in ("/", "/threads/failed", "/api/threads"):
        headers = page.goto(served + path).headers
        assert (headers["content-security-policy"], headers["x-frame-options"]) == ("frame-ancestors 'none'", "DENY"), path
    assert page.goto(served + "/?limit=%C2%B2").status == 400
    assert page.goto(served + "/api/threads?limit=" + "9" * 5000).status == 400
