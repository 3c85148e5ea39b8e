"""What the on-call person sees in a real browser (headless Chromium), on threads real processes left on
mongo-java-server (tests/oncall_threads.py): a ReAct agent crashed in its tool and resumed elsewhere draws both runs,
the crash marked; an outcome unknown says what to look up and gives the commands to copy; an approval shows its
question as text; every state badge has its colour. The pages the screenshots of docs/inspector.md are taken of
(``scripts/screenshots``)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
from pymongo import MongoClient

from tests import oncall_threads
from tests.conftest import serve_inspector
from tests.state_shapes import QUESTION

DB = "ui_browser_oncall"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def served(mongo_java_server_uri: str) -> Iterator[str]:
    client = MongoClient(mongo_java_server_uri)
    client.drop_database(DB)
    oncall_threads.leave(mongo_java_server_uri, DB)
    yield from serve_inspector(client, DB)
    client.drop_database(DB)
    client.close()


def test_every_state_badge_has_its_colour(page: Any, served: str) -> None:
    page.goto(served + "/")
    for thread_id, state in oncall_threads.THREADS.items():
        badge = page.locator("tr", has=page.locator("a.thread-id", has_text=thread_id)).locator(".state")
        assert badge.inner_text() == state
        assert badge.evaluate("b => getComputedStyle(b).backgroundColor") not in ("rgba(0, 0, 0, 0)", "transparent"), state


def test_a_crashed_and_resumed_react_thread_draws_both_runs_and_the_crash(page: Any, served: str) -> None:
    page.goto(served + "/threads/react-crashed-and-resumed")
    runs = page.locator("table.runs tbody tr")
    assert runs.count() == 2
    assert "crashed" in runs.nth(0).inner_text() and "✕" in runs.nth(0).inner_text()
    assert "finished" in runs.nth(1).inner_text()
    assert "__pregel" not in page.content()
    visit = page.locator("h4", has=page.locator(".node-name", has_text="tools"))
    assert "1st visit" in visit.inner_text()
    picture = page.locator("img.timeline-svg")
    drawn = ET.fromstring(page.request.get(served + picture.get_attribute("src")).text())
    lanes = [r.get("class") for r in drawn.iter(f"{SVG}rect") if "run " in (r.get("class") or "")]
    assert lanes == ["run run-crashed", "run run-finished"]
    assert any("crash" in (t.get("class") or "") for t in drawn.iter(f"{SVG}text"))
    rows = [row.inner_text() for row in page.locator("table.effects tr.effect").all()]
    # the kill cut the tool short in run 1 before its entry was written (an exclusive run writes it once it ended):
    # run 2 ran it, once
    assert [row.split("\t")[:4] for row in rows if "call_pay_1" in row] == [["tool", "pay", "call_pay_1", "completed"]]
    assert any("ran in run 2" in row for row in rows if "call_pay_1" in row), rows


def test_an_outcome_unknown_gives_its_key_and_the_commands_to_copy(page: Any, served: str) -> None:
    page.goto(served + "/threads/react-outcome-unknown")
    unknown = page.locator("section.stopped div.unknown")
    assert "tool call call_pay_1" in unknown.inner_text()
    commands = [c.inner_text() for c in unknown.locator("pre.command code").all()]
    assert commands[0].startswith("ik-") and len(commands) == 3
    assert re.fullmatch(r"langgraph-durable-mongodb --db ui_browser_oncall resolve \"thread 'react-outcome-unknown' path "
                        r"'agent/1' node 'tools'#[0-9a-f-]+\.0 effect 'tool_call:call_pay_1'\" '<what it returned, as JSON>'", commands[1])
    assert commands[2].startswith("langgraph-durable-mongodb --db ui_browser_oncall discard \"thread 'react-outcome-unknown'")
    assert "'\"'\"'" not in page.content()  # no shell quoting of a quote in the prose


def test_an_approval_shows_its_question_as_text(page: Any, served: str) -> None:
    page.goto(served + "/threads/react-approval")
    assert page.locator("blockquote.question").inner_text() == QUESTION
    assert "node tools" in page.locator("section.stopped div.interrupt").inner_text().replace("\n", " ")
    assert "pay" in page.locator("p.due").inner_text() and "call_pay_1" in page.locator("p.due").inner_text()
