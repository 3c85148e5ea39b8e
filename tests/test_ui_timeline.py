"""The timeline picture (issue 33, item 4): an SVG the server draws of a page of effects, bars coloured by state,
replays marked, nested paths indented, every text escaped."""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from typing import Any

import mongomock
from pymongo import MongoClient
from starlette.testclient import TestClient

from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import create_app
from langgraph_durable_mongodb.ui.guard import Guard
from langgraph_durable_mongodb.views.reader import ThreadViews
from langgraph_durable_mongodb.views.timeline import timeline_svg

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script>&amp;'


def _thread(client: Any, db_name: str) -> None:
    begun = datetime(2026, 1, 1, 12, 0, 0)
    entry = {"thread_id": "t", "effect_key": "1", "chunk": 0, "kind": "tool", "attempts": 1}
    client[db_name][CollectionNames().journal].insert_many([
        {**entry, "path": "agent/1", "node": "agent", "occurrence": "1", "name": "plan", "status": "completed",
         "started_at": begun, "finished_at": begun + timedelta(seconds=1)},
        {**entry, "path": "agent/1/sub/1", "node": HOSTILE, "occurrence": "1", "name": HOSTILE, "status": "failed",
         "started_at": begun + timedelta(seconds=1), "finished_at": begun + timedelta(seconds=2), "error": {"type": "E", "message": "m"}},
        {**entry, "path": "agent/1", "node": "pay", "occurrence": "1", "name": "charge", "status": "completed",
         "started_at": begun + timedelta(seconds=2), "finished_at": begun + timedelta(seconds=4)},
    ])


def _http(client: Any, db_name: str) -> TestClient:
    names = CollectionNames()
    app = create_app(ThreadViews(client, db_name, names), Actions(client, db_name, names), Guard())
    return TestClient(app, base_url="http://127.0.0.1:8765")


def test_the_timeline_draws_a_bar_per_effect_coloured_by_state_and_escapes_every_name() -> None:
    _check_timeline(mongomock.MongoClient(), "timeline")


def test_the_timeline_is_drawn_alike_from_a_real_server(mongodb_uri: str) -> None:
    """Stored datetimes come back from a server truncated to milliseconds, and naive: the bars stand as drawn."""
    db_name = f"timeline_{uuid.uuid4().hex[:8]}"
    with MongoClient(mongodb_uri) as client:
        try:
            _check_timeline(client, db_name)
        finally:
            client.drop_database(db_name)


def _check_timeline(client: Any, db_name: str) -> None:
    _thread(client, db_name)
    http = _http(client, db_name)
    answer = http.get("/api/thread/timeline.svg", params={"id": "t"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("image/svg+xml")
    assert "<script" not in answer.text  # the hostile name is text, escaped
    svg = ET.fromstring(answer.text)
    bars = svg.findall(f"{SVG}rect")
    # rows as the operation tree lists them (by path, then as run): the subgraph's failed effect last
    assert [b.get("class") for b in bars] == ["bar state-completed", "bar state-completed", "bar state-failed"]
    labels = [t for t in svg.findall(f"{SVG}text") if t.get("class") == "label"]
    assert len(labels) == 3 and HOSTILE[:20] in labels[2].text
    assert float(labels[2].get("x")) > float(labels[0].get("x"))  # the subgraph's effect is indented
    assert float(bars[1].get("x")) > float(bars[2].get("x")) > float(bars[0].get("x"))  # placed in time
    page = http.get("/threads/t").text
    assert 'class="timeline-svg" src="/api/thread/timeline.svg?id=t&amp;page=1"' in page
    assert http.get("/api/thread/timeline.svg", params={"id": "t", "page": "0"}).status_code == 400
    assert http.get("/api/thread/timeline.svg", params={"id": "nope"}).status_code == 404


def test_the_timeline_marks_root_checkpoints_in_time_and_how_the_thread_stopped() -> None:
    begun = datetime(2026, 1, 1, 12, 0, 0)
    effect = {"kind": "tool", "name": "charge", "state": "failed", "started_at": begun, "finished_at": begun + timedelta(seconds=4)}
    operations = [{"path": "agent/1", "nodes": [{"node": "pay", "effects": [effect]}]}]
    checkpoints = [  # latest first, as the thread view lists them; ts as LangGraph writes it, aware ISO text
        {"step": 2, "source": "loop", "ts": "2026-01-01T12:00:08+00:00"},  # after the last effect: the axis reaches it
        {"step": 1, "source": "loop", "ts": "2026-01-01T13:00:02+01:00"},  # 12:00:02 UTC
        {"step": 0, "source": "input", "ts": "2026-01-01T12:00:00+00:00"},
    ]
    svg = ET.fromstring(timeline_svg(operations, checkpoints, "crashed"))
    ticks = [r for r in svg.findall(f"{SVG}rect") if "checkpoint" in r.get("class", "")]
    assert [t.find(f"{SVG}title").text.split(" at ")[0] for t in ticks] == ["step 2 (loop)", "step 1 (loop)", "step 0 (input)"]
    [bar] = [r for r in svg.findall(f"{SVG}rect") if r.get("class", "").startswith("bar")]
    assert float(ticks[2].get("x")) == float(bar.get("x"))  # both at 12:00:00
    assert float(ticks[1].get("x")) == float(bar.get("x")) + float(bar.get("width")) / 2  # 12:00:02: halfway to the end
    assert float(ticks[0].get("x")) == float(bar.get("x")) + float(bar.get("width")) * 2  # 12:00:08: the axis's end
    [stop] = svg.findall(f"{SVG}line")
    assert stop.get("class") == "stop stop-crashed"
    assert not ET.fromstring(timeline_svg(operations, checkpoints, "done")).findall(f"{SVG}line")  # a finished run: no mark
