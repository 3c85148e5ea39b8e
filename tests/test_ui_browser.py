"""The inspector in a real browser (headless Chromium), after the demo's real crash (SIGKILL) and resume on
mongo-java-server: the thread list, a thread's paths, effects and replay, a claim in flight, resolving an
outcome unknown (and the refusal without --allow-writes), and a thread id that is markup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from pymongo import MongoClient

from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import create_app
from langgraph_durable_mongodb.ui.guard import Guard
from langgraph_durable_mongodb.views.reader import ThreadViews
from tests.conftest import serve_app
from tests.ui_helpers import INJECTION, OWNER, PATH, seed

DB = "ui_browser"


def _demo(uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MONGODB_URI": uri}
    return subprocess.run([sys.executable, "-m", "langgraph_durable_mongodb.demo", "--db", DB, *args],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def inspected(mongo_java_server_uri: str) -> Iterator[MongoClient]:
    """The demo crashed by SIGKILL and resumed by a new process, then the other threads (``seed``)."""
    client = MongoClient(mongo_java_server_uri)
    client.drop_database(DB)
    assert _demo(mongo_java_server_uri, "--crash").returncode == -signal.SIGKILL
    assert _demo(mongo_java_server_uri).returncode == 0
    seed(client, DB, with_demo=False)
    yield client
    client.drop_database(DB)
    client.close()


def _app(client: MongoClient, allow_writes: bool) -> Any:
    names = CollectionNames()
    return create_app(ThreadViews(client, DB, names), Actions(client, DB, names), Guard(allow_writes=allow_writes))


@pytest.fixture(scope="module")
def read_only(inspected: MongoClient) -> Iterator[str]:
    yield from serve_app(_app(inspected, allow_writes=False))


@pytest.fixture(scope="module")
def writable(inspected: MongoClient) -> Iterator[str]:
    yield from serve_app(_app(inspected, allow_writes=True))


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    opened = context.new_page()
    opened.dialogs = []  # every dialog the page opened, accepted
    opened.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.accept()))
    yield opened
    context.close()


def test_the_thread_list_shows_the_demo_thread(page: Any, read_only: str) -> None:
    page.goto(read_only + "/")
    row = page.locator("tr", has=page.locator("a.thread-id", has_text="case-42"))
    assert row.locator(".state").inner_text() == "done"
    assert "2 completed" in row.inner_text()


def test_the_thread_page_shows_the_path_the_effects_and_the_replay(page: Any, read_only: str) -> None:
    page.goto(read_only + "/")
    page.click("a.thread-id >> text=case-42")
    assert page.locator("code.op-path").all_inner_texts() == [PATH]
    tool = page.locator("tr.effect", has=page.locator("td.name", has_text="lookup_policy"))
    assert tool.locator(".status").inner_text() == "completed"
    assert tool.locator("span.replayed").inner_text() == "replayed"
    assert tool.locator("div.replayed").inner_text() == "replayed in run 2"  # the resumed run, in another process
    assert "2 replayed" in page.locator("p.counts").inner_text()


def test_the_thread_page_draws_its_timeline(page: Any, read_only: str) -> None:
    import xml.etree.ElementTree as ET

    page.goto(read_only + "/threads/case-42")
    picture = page.locator("img.timeline-svg")
    picture.wait_for()
    assert page.evaluate("img => img.complete && img.naturalWidth > 0", picture.element_handle())  # loaded and drawn
    drawn = ET.fromstring(page.request.get(read_only + picture.get_attribute("src")).text())
    bars = [b for b in drawn.findall("{http://www.w3.org/2000/svg}rect") if b.get("class", "").startswith("bar")]
    assert [b.get("class") for b in bars] == ["bar state-completed replayed"] * 2  # the resumed run replayed both
    runs = [b.get("class") for b in drawn.findall("{http://www.w3.org/2000/svg}rect") if b.get("class", "").startswith("run")]
    assert runs == ["run run-crashed", "run run-finished"]  # the SIGKILLed run, marked, then the one that resumed
    assert len(drawn.findall("{http://www.w3.org/2000/svg}circle")) == 2  # where the resumed run replayed them


def test_a_claim_in_flight_shows_its_owner(page: Any, read_only: str) -> None:
    with page.expect_request(lambda request: "/api/thread/status?id=case-43" in request.url):  # polls while it is live
        page.goto(read_only + "/threads/case-43")
    assert page.locator("table.claims td.owner").all_inner_texts() == [OWNER]
    assert page.locator("meta[http-equiv=refresh]").count() == 0  # never the whole page every 2 s


def test_an_unknown_outcome_is_refused_without_allow_writes(page: Any, read_only: str) -> None:
    page.goto(read_only + "/threads/case-43")
    assert page.locator("button.resolve").count() == 0
    answer = page.request.post(read_only + "/api/resolve", form={"position": "x", "outcome": "1", "csrf": "x"})
    assert answer.status == 403


def test_an_unknown_outcome_is_resolved_with_allow_writes(page: Any, writable: str) -> None:
    page.goto(writable + "/threads/case-43")
    row = page.locator("tr.effect-outcome-unknown")
    assert row.locator("td.name").inner_text() == "send_payment"
    page.fill("tr.actions input[name=outcome]", '"sent"')
    page.click("tr.actions button.resolve")
    page.wait_for_url("**/threads/case-43?done=*")
    assert page.dialogs and "Record this outcome" in page.dialogs[0]
    assert "completed tool 'send_payment' (was started)" in page.locator("p.notice").inner_text()
    assert page.locator("tr.effect-outcome-unknown").count() == 0


def test_a_thread_id_that_is_markup_renders_as_text(page: Any, read_only: str) -> None:
    page.goto(read_only + "/")
    link = page.locator("a.thread-id", has_text="alert(1)")
    assert link.inner_text() == INJECTION
    link.click()
    assert page.locator("h1 .thread-id").inner_text() == INJECTION
    assert page.dialogs == []  # no script of the id ran
