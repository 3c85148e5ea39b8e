"""One state model, right for every graph shape (issue 45, item 1): a thread stopped in a node reached by an edge or
by a ``Send`` (every ``ToolNode`` of a prebuilt agent), nested in a child, in a fan-out, shows the same true state
(running, waiting for a lock, outcome unknown, failed, crashed, interrupted, done) on the thread list, the page,
their JSON, and the CLI's ``threads`` and ``inspect``. Crashes are real SIGKILLs on the real servers; on mongomock a
crash is what a SIGKILL leaves (no error written, the claim and the run lock still held by a dead process)."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime, timedelta, timezone
from typing import Any

import mongomock
import pytest
from pymongo import MongoClient
from starlette.testclient import TestClient

from langgraph_durable_mongodb.cli import main
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import create_app
from langgraph_durable_mongodb.ui.guard import Guard
from langgraph_durable_mongodb.views.reader import ThreadViews
from langgraph_durable_mongodb.views.states import THREAD_STATES

from . import state_shapes
from .state_shapes import QUESTION, SHAPES, STATES
from .workers.harness import fork_context

DB = "views_states"
NAMES = CollectionNames()


def surfaces(client: Any, db_name: str, thread_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The state every surface shows of the thread: the list and its JSON, the page and its JSON, the CLI's
    ``threads`` (text and JSON) and ``inspect`` (text and JSON)."""
    http = TestClient(create_app(ThreadViews(client, db_name, NAMES), Actions(client, db_name, NAMES), Guard()),
                      base_url="http://127.0.0.1:8765")
    rows = {r["thread_id"]: r for r in http.get("/api/threads", params={"prefix": thread_id}).json()["threads"]}
    listed = http.get("/", params={"prefix": thread_id}).text
    page = http.get(f"/threads/{thread_id}").text
    shown = {
        "list json": rows[thread_id]["state"],
        "list page": re.findall(r'<span class="state state-[a-z-]+">([a-z ]+)</span>', listed)[0],
        "page json": http.get("/api/thread", params={"id": thread_id}).json()["state"],
        "page": re.findall(r'<span class="state state-[a-z-]+">([a-z ]+)</span>', page)[0],
    }
    assert main(["--db", db_name, "inspect", thread_id, "--json"], client=client) in (0, 1)
    shown["inspect json"] = json.loads(capsys.readouterr().out)["state"]
    main(["--db", db_name, "inspect", thread_id], client=client)
    shown["inspect"] = re.findall(r"^state (.+)$", capsys.readouterr().out, re.M)[0]
    main(["--db", db_name, "threads", "--json"], client=client)
    shown["threads json"] = {r["thread_id"]: r["state"] for r in json.loads(capsys.readouterr().out)}[thread_id]
    main(["--db", db_name, "threads"], client=client)
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(thread_id + " "))
    shown["threads"] = next(state for state in sorted(THREAD_STATES, key=len, reverse=True) if f"  {state}  " in line)
    return shown


def killed_like(client: Any, db_name: str, thread_id: str, *, at_most_once: bool = False) -> None:
    """What a SIGKILL in the paying step leaves, from a run that raised there instead: no error write, the claim of
    the effect it was running still held, and the run lock still owned, both by a process that has exited (and no
    record of the run's release); an ``at_most_once`` payment's outcome is then unknown."""
    exited = subprocess.Popen(["true"])
    exited.wait()
    past = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(minutes=1)
    dead = {"owner": "owner-dead", "owner_pid": exited.pid, "lease_until": past}
    db = client[db_name]
    db[NAMES.writes].delete_many({"thread_id": thread_id, "channel": "__error__"})
    db[NAMES.journal].update_many({"thread_id": thread_id}, {"$set": {"owner_pid": exited.pid}})  # its process's
    db[NAMES.journal].update_many({"thread_id": thread_id, "status": "failed"}, {
        "$set": {"status": "started", "at_most_once": at_most_once, **dead}, "$unset": {"error": "", "finished_at": ""}})
    db[NAMES.runs].update_one({"thread_id": thread_id}, {"$set": {**dead, "started_at": past}, "$unset": {"runs": ""}})


def _expect(shown: dict[str, Any], state: str, thread_id: str) -> None:
    assert shown == dict.fromkeys(shown, state), thread_id


@pytest.fixture(scope="module")
def stopped() -> mongomock.MongoClient:
    """Every shape left interrupted, failed, done, and as a crash leaves it (in its payment, at_most_once or not), on
    one mongomock client."""
    client = mongomock.MongoClient()
    for shape in SHAPES:
        for mode in ("done", "interrupt", "fail"):
            state_shapes.run(client, DB, f"{shape}-{mode}", shape, mode)
        for mode in ("crash", "unknown"):
            state_shapes.run(client, DB, f"{shape}-{mode}", shape, "fail")
            killed_like(client, DB, f"{shape}-{mode}", at_most_once=mode == "unknown")
    return client


def test_a_node_reached_by_an_edge_or_by_a_send_shows_its_true_state(stopped: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    """The measured case: via-edge crashed, via-send crashed (it showed done), int-edge and int-send interrupted."""
    for thread_id, state in (("edge-crash", "crashed"), ("send-crash", "crashed"), ("edge-interrupt", "interrupted"),
                             ("send-interrupt", "interrupted")):
        _expect(surfaces(stopped, DB, thread_id, capsys), state, thread_id)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_shows_the_same_true_state_on_every_surface(shape: str, stopped: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    for mode, state in STATES.items():
        _expect(surfaces(stopped, DB, f"{shape}-{mode}", capsys), state, f"{shape}-{mode}")


@pytest.mark.parametrize("shape", ["send", "react", "agent"])
def test_a_send_is_named_by_its_node_and_its_tool_call(shape: str, stopped: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    """``tools`` (``work``), never ``~__pregel_push``; a ``ToolNode``'s tool call by its name and id; the approval's
    question as text."""
    node = "work" if shape == "send" else "tools"
    http = TestClient(create_app(ThreadViews(stopped, DB, NAMES), Actions(stopped, DB, NAMES), Guard()), base_url="http://127.0.0.1:8765")
    for thread_id, status in ((f"{shape}-interrupt", "interrupted"), (f"{shape}-fail", "failed"), (f"{shape}-crash", "due")):
        thread = http.get("/api/thread", params={"id": thread_id}).json()
        assert [t["status"] for t in thread["tasks"] if t["status"] != "done"] == [status], thread_id
        page = http.get(f"/threads/{thread_id}").text
        main(["--db", DB, "inspect", thread_id], client=stopped)
        printed = capsys.readouterr().out
        for shown in (json.dumps(thread), page, printed):
            assert "__pregel" not in shown, thread_id
        assert [t["name"] for t in thread["tasks"] if t["status"] != "done"] == [node], thread_id
        stopped_in = [*thread["stopped"]["interrupts"], *(e for e in thread["stopped"]["errors"] if e["source"] == "langgraph")]
        assert {s["node"] for s in stopped_in} <= {node}, thread_id
        if shape != "send":
            assert {t["tool_call"]["id"] for t in thread["tasks"] if t["status"] != "done"} == {"call_pay_1"}, thread_id
            assert "call_pay_1" in page and "call_pay_1" in printed, thread_id
    asked = http.get("/api/thread", params={"id": f"{shape}-interrupt"}).json()["stopped"]["interrupts"]
    assert [i["question"] for i in asked] == [QUESTION]
    assert f"<blockquote class=\"question\">{QUESTION}</blockquote>" in http.get(f"/threads/{shape}-interrupt").text


SERVER_MODES = ("interrupt", "fail", "crash", "unknown")


def _leave(uri: str, db_name: str, thread_id: str, shape: str, mode: str) -> None:
    if mode not in state_shapes.KILLING:
        with MongoClient(uri) as client:
            state_shapes.run(client, db_name, thread_id, shape, mode)
        return
    child = fork_context().Process(target=state_shapes.run_in_child, args=(uri, db_name, thread_id, shape, mode), daemon=True)
    child.start()
    child.join(120)
    assert child.exitcode in (-9, 255), f"{thread_id}: the child was to die by SIGKILL, exit code {child.exitcode}"


@pytest.mark.parametrize("shape", ["send", "fanout", "react", "agent", "nested"])
def test_a_thread_killed_or_stopped_shows_its_true_state_on_every_surface_on_a_server(
    shape: str, mongodb_uri: str, server_db_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real SIGKILLs: in the paying step (crashed: its run lock left held) and inside an ``at_most_once`` payment
    (outcome unknown), beside an interrupt and a failure."""
    for mode in SERVER_MODES:
        _leave(mongodb_uri, server_db_name, f"{shape}-{mode}", shape, mode)
    with MongoClient(mongodb_uri) as client:
        for mode in SERVER_MODES:
            _expect(surfaces(client, server_db_name, f"{shape}-{mode}", capsys), STATES[mode], f"{shape}-{mode}")


def test_threads_filter_by_state_on_the_cli_and_the_web_list(stopped: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    """``threads --state crashed`` (and ``unknown``, ``interrupted``, ...) lists those threads only, as ``/?state=``
    and ``/api/threads?state=`` do, reading the threads page after page (of 2, then 4, 8, ... here) until it found
    its page; a state that is none is refused."""
    http = TestClient(create_app(ThreadViews(stopped, DB, NAMES), Actions(stopped, DB, NAMES), Guard()), base_url="http://127.0.0.1:8765")
    crashed = sorted(f"{shape}-crash" for shape in SHAPES)
    assert main(["--db", DB, "threads", "--state", "crashed", "--json"], client=stopped) == 0
    assert [r["thread_id"] for r in json.loads(capsys.readouterr().out)] == crashed
    listed = http.get("/api/threads", params={"state": "crashed"}).json()
    assert [r["thread_id"] for r in listed["threads"]] == crashed and listed["scanned"] == len(STATES) * len(SHAPES)
    assert f'<a class="thread-id" href="/threads/{crashed[0]}">' in http.get("/", params={"state": "crashed"}).text
    first = http.get("/api/threads", params={"state": "crashed", "limit": "2"}).json()
    after = http.get("/api/threads", params={"state": "crashed", "limit": "2", "after": first["next_after"]}).json()
    assert [r["thread_id"] for r in first["threads"] + after["threads"]] == crashed[:4] and first["more"]
    main(["--db", DB, "threads", "--state", "crashed", "--limit", "2"], client=stopped)
    assert f"more: --after {crashed[1]} --state crashed" in capsys.readouterr().out
    assert main(["--db", DB, "threads", "--state", "sleeping"], client=stopped) == 1
    assert "state must be one of running, waiting for a lock" in capsys.readouterr().err
    assert http.get("/api/threads", params={"state": "sleeping"}).status_code == 400


def test_a_holder_that_stopped_renewing_its_lock_leaves_the_thread_waiting_for_a_lock(
    stopped: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its lease not over, its last renewal two renewals late: the next run waits until the lease ends; while it
    renews, the thread is running."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    for thread_id, renewed in (("edge-done", now - timedelta(seconds=25)), ("send-done", now - timedelta(seconds=1))):
        stopped[DB][NAMES.runs].update_one({"thread_id": thread_id}, {"$set": {
            "owner": "owner-far", "owner_host": "far.example", "owner_pid": 7, "started_at": now - timedelta(minutes=1),
            "renewed_at": renewed, "lease_until": renewed + timedelta(seconds=30)}})
    try:
        _expect(surfaces(stopped, DB, "edge-done", capsys), "waiting for a lock", "edge-done")
        _expect(surfaces(stopped, DB, "send-done", capsys), "running", "send-done")
    finally:
        for thread_id in ("edge-done", "send-done"):
            stopped[DB][NAMES.runs].update_one({"thread_id": thread_id}, {"$set": {"owner": None, "lease_until": datetime(1970, 1, 1)}})


def test_an_outcome_unknown_names_the_commands_that_settle_it_as_a_person_copies_them(
    stopped: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each in a block of its own, its position in double quotes (its single quotes read as written), on the page,
    in the JSON and in ``inspect``; the error's message keeps its prose only."""
    http = TestClient(create_app(ThreadViews(stopped, DB, NAMES), Actions(stopped, DB, NAMES), Guard()), base_url="http://127.0.0.1:8765")
    [unknown] = http.get("/api/thread", params={"id": "react-unknown"}).json()["stopped"]["unknown"]
    resolve, discard = unknown["commands"]
    position = unknown["position"]
    assert resolve == f"langgraph-durable-mongodb --db {DB} resolve \"{position}\" '<what it returned, as JSON>'"
    assert discard == f"langgraph-durable-mongodb --db {DB} discard \"{position}\""
    page = http.get("/threads/react-unknown").text
    assert page.count('<pre class="command"><code>langgraph-durable-mongodb') == 2 and "&#39;&#34;&#39;&#34;&#39;" not in page
    main(["--db", DB, "inspect", "react-unknown"], client=stopped)
    printed = capsys.readouterr().out
    assert f"               {resolve}\n" in printed and f"               {discard}\n" in printed


def test_the_runs_count_each_effect_once_and_a_dead_run_ends_at_its_last_work(stopped: mongomock.MongoClient) -> None:
    """The run that died holding the lock: ``crashed``, ending where it was last seen at work (its last effect), not
    when the page was read; each effect counted once, whether on the page or among those not completed."""
    http = TestClient(create_app(ThreadViews(stopped, DB, NAMES), Actions(stopped, DB, NAMES), Guard()), base_url="http://127.0.0.1:8765")
    thread = http.get("/api/thread", params={"id": "react-crash"}).json()
    [run] = thread["runs"]
    effects = [e for op in thread["operations"] for n in op["nodes"] for e in n["effects"]]
    assert (run["ended"], len(effects), run["executed"]) == ("crashed", 2, 2)
    assert run["ended_at"] == max(e["updated_at"] for e in effects) and [e["executed_by"] for e in effects] == [1, 1]


@pytest.mark.parametrize("shape", ["react", "agent", "edge"])
def test_an_effect_that_asks_for_an_approval_is_interrupted_not_failed(shape: str, stopped: mongomock.MongoClient) -> None:
    """A ``SecureTool`` whose tool calls ``interrupt()`` is journaled as a failure of type ``GraphInterrupt``: the
    views count and show it ``interrupted`` (it runs again once answered), on the list and the page alike, and never
    among the errors of why the thread stopped."""
    http = TestClient(create_app(ThreadViews(stopped, DB, NAMES), Actions(stopped, DB, NAMES), Guard()), base_url="http://127.0.0.1:8765")
    thread_id = f"{shape}-interrupt"
    thread = http.get("/api/thread", params={"id": thread_id}).json()
    [row] = [r for r in http.get("/api/threads", params={"prefix": thread_id}).json()["threads"] if r["thread_id"] == thread_id]
    pay = [e for op in thread["operations"] for n in op["nodes"] for e in n["effects"] if e["name"] == "pay"]
    assert [e["state"] for e in pay] == ["interrupted"] and pay[0]["status"] == "failed"
    assert thread["effects"]["interrupted"] == row["effects"]["interrupted"] == 1
    assert thread["effects"]["failed"] == row["effects"]["failed"] == 0
    assert thread["stopped"]["errors"] == []
