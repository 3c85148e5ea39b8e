"""The ``checkpointer.ttl`` block of ``langgraph.json``: strategies, sweep limit, sweepers, refresh on read.

mongomock and the servers of the tier run no TTL monitor here: expiry is driven by setting ``expire_at``
or the clock, and ``sweep_expired`` does what the strategy says.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send, interrupt
from pymongo import AsyncMongoClient, MongoClient, monitoring

from langgraph_durable_mongodb import InvalidInputError, MongoDBCheckpointer
from langgraph_durable_mongodb.storage.plans import lease
from langgraph_durable_mongodb.checkpointer.sweeper import AsyncSweeper, Sweeper
from langgraph_durable_mongodb.checkpointer.ttl import MAX_MINUTES, MAX_SECONDS
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.thread_summaries import NOT_SUMMARY, summary_id

from .clients import Face
from .graphs import State, invoke, run_chat, state_of

PER_THREAD = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "activity_journal")
KEEP_LATEST = {"strategy": "keep_latest", "default_ttl": 60}
SWEEPER_TASK = "durable-mongodb-ttl-sweeper"


def raw(platform: DurablePlatform, coll: str, thread_id: str) -> list[dict]:
    """The thread's stored documents in ``coll``; of ``checkpoints``, its checkpoints (not its summary)."""
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    query = {"thread_id": thread_id, **({"checkpoint_ns": NOT_SUMMARY} if coll == "checkpoints" else {})}
    return list(db[coll].find(query, {"_id": 0}))


def summary(platform: DurablePlatform, thread_id: str) -> dict | None:
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    return db["checkpoints"].find_one({"_id": summary_id(thread_id)}, {"_id": 0})


def expire(platform: DurablePlatform, *thread_ids: str) -> None:
    """Move the threads' expiry into the past, as the clock passing it would."""
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    past = lease.utcnow() - timedelta(seconds=1)
    for coll in PER_THREAD:
        db[coll].update_many({"thread_id": {"$in": list(thread_ids)}}, {"$set": {"expire_at": past}})


async def sweep(platform: DurablePlatform, mode: str) -> list[str]:
    saver = platform.checkpointer
    return await saver.asweep_expired() if mode == "async" else saver.sweep_expired()


def pending_node_graph(platform: DurablePlatform, mode: str, calls: Counter, children: tuple[str, ...] = ("outer",)) -> Any:
    """``first`` (one effect) then ``children[0]``, compiled children nested in that order, the innermost
    running ``second``, which runs an effect and interrupts."""
    if mode == "async":

        @effect(kind="tool", name="first")
        async def first_effect(n: int) -> int:
            calls["first"] += 1
            return n + 1

        @effect(kind="tool", name="second")
        async def second_effect(n: int) -> int:
            calls["second"] += 1
            return n * 10

        async def first(state: State) -> State:
            return {"count": await first_effect(state.get("count", 0)), "notes": ["first"]}

        async def second(state: State) -> State:
            value = await second_effect(state["count"])
            return {"count": value, "notes": [f"second:{interrupt('approve?')}"]}

    else:

        @effect(kind="tool", name="first")
        def first_effect(n: int) -> int:
            calls["first"] += 1
            return n + 1

        @effect(kind="tool", name="second")
        def second_effect(n: int) -> int:
            calls["second"] += 1
            return n * 10

        def first(state: State) -> State:
            return {"count": first_effect(state.get("count", 0)), "notes": ["first"]}

        def second(state: State) -> State:
            value = second_effect(state["count"])
            return {"count": value, "notes": [f"second:{interrupt('approve?')}"]}

    child = StateGraph(State)
    child.add_node("second", second)
    child.add_edge(START, "second")
    for name in reversed(children[1:]):
        wrapper = StateGraph(State)
        wrapper.add_node(name, child.compile())
        wrapper.add_edge(START, name)
        child = wrapper
    root = StateGraph(State)
    root.add_node("first", first)
    root.add_node(children[0], child.compile())
    root.add_edge(START, "first")
    root.add_edge("first", children[0])
    return platform.compile(root)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_keep_latest_prunes_an_expired_thread_and_a_resume_replays_every_recorded_effect(
    make_platform: Any, mode: str
) -> None:
    platform = make_platform(ttl=KEEP_LATEST)
    calls: Counter = Counter()
    graph = pending_node_graph(platform, mode, calls)
    for thread_id in ("kl", "control"):  # the control thread is never swept
        await invoke(graph, mode, {"count": 0, "notes": []}, thread_id)
    assert calls == Counter(first=2, second=2)
    before = await state_of(graph, mode, "kl")
    assert before.next == ("outer",)
    checkpoints = raw(platform, "checkpoints", "kl")
    namespaces = {d["checkpoint_ns"] for d in checkpoints}
    assert len(checkpoints) > len(namespaces)  # something to prune
    latest = {ns: max(d["checkpoint_id"] for d in checkpoints if d["checkpoint_ns"] == ns) for ns in namespaces}
    journal = raw(platform, "activity_journal", "kl")
    assert {d["name"] for d in journal} == {"first", "second"}

    expire(platform, "kl")
    assert (await state_of(graph, mode, "kl")).values == before.values  # expired, yet not gone for readers
    assert await sweep(platform, mode) == ["kl"]

    after = raw(platform, "checkpoints", "kl")
    assert {(d["checkpoint_ns"], d["checkpoint_id"]) for d in after} == set(latest.items())
    assert {d["checkpoint_id"] for d in raw(platform, "checkpoint_writes", "kl")} <= set(latest.values())
    strip = lambda docs: sorted((({k: v for k, v in d.items() if k != "expire_at"}) for d in docs), key=repr)  # noqa: E731
    # the pending node's entries stay; those of the finished node go (by the root checkpoint each visit came from)
    assert strip(raw(platform, "activity_journal", "kl")) == strip(d for d in journal if d["node"] == "second")
    assert all("expire_at" not in d for coll in PER_THREAD for d in raw(platform, coll, "kl"))
    # the summary counts the one root checkpoint left, still the latest, and expires with the thread again
    assert summary(platform, "kl") == {"thread_id": "kl", "checkpoint_ns": "#thread", "latest": latest[""], "checkpoints": 1}
    assert await sweep(platform, mode) == []  # a pruned thread no longer counts as expired

    pruned = await state_of(graph, mode, "kl")
    assert (pruned.values, pruned.next) == (before.values, before.next)
    result = await invoke(graph, mode, Command(resume="yes"), "kl")
    assert calls == Counter(first=2, second=2)  # 0 recorded effects executed again
    assert result == await invoke(graph, mode, Command(resume="yes"), "control")
    assert result["count"] == 10
    # its next write gives the thread an expiry again
    assert {d.get("expire_at") is not None for d in raw(platform, "checkpoints", "kl")} == {True}


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_keep_latest_keeps_the_entries_of_a_node_whose_interrupt_was_edited(make_platform: Any, mode: str) -> None:
    # update_state at the interrupt writes a checkpoint continuing the interrupted one (its origin): the
    # resumed node is keyed by the origin, which the sweep deletes, and must still meet its entries
    platform = make_platform(ttl=KEEP_LATEST)
    calls: Counter = Counter()
    graph = pending_node_graph(platform, mode, calls)
    await invoke(graph, mode, {"count": 0, "notes": []}, "edit")
    config = {"configurable": {"thread_id": "edit"}}
    await graph.aupdate_state(config, {"notes": ["edited"]}) if mode == "async" else graph.update_state(config, {"notes": ["edited"]})
    [edited] = [d for d in raw(platform, "checkpoints", "edit") if d.get("origin")]
    expire(platform, "edit")
    assert await sweep(platform, mode) == ["edit"]
    assert {d["checkpoint_id"] for d in raw(platform, "checkpoints", "edit") if d["checkpoint_ns"] == ""} == {edited["checkpoint_id"]}
    assert {d["node"] for d in raw(platform, "activity_journal", "edit")} == {"second"}
    result = await invoke(graph, mode, Command(resume="yes"), "edit")
    assert calls == Counter(first=1, second=1)  # 0 recorded effects executed again
    assert result["count"] == 10 and "edited" in result["notes"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_keep_latest_drops_a_finished_childs_entries_and_keeps_the_pending_ones(make_platform: Any, mode: str) -> None:
    platform = make_platform(ttl=KEEP_LATEST)
    calls: Counter = Counter()
    graph = pending_node_graph(platform, mode, calls, ("outer", "middle"))
    await invoke(graph, mode, {"count": 0, "notes": []}, "again")
    await invoke(graph, mode, Command(resume="first run"), "again")
    await invoke(graph, mode, {"count": 0, "notes": []}, "again")  # a second run: interrupted in outer's 2nd occurrence
    assert calls == Counter(first=2, second=2)
    before = await state_of(graph, mode, "again")
    entries = platform.journal.entries("again")
    assert {d["path"] for d in entries} == {"agent/1", "agent/1/outer/1/middle/1", "agent/1/outer/2/middle/1"}
    pending = [(d["visit"]["path"], d["node"]) for d in entries if d["path"] == "agent/1/outer/2/middle/1"]
    expire(platform, "again")
    assert await sweep(platform, mode) == ["again"]
    assert [(d["path"], d["node"]) for d in raw(platform, "activity_journal", "again")] == pending  # as stored
    # each entry stores its label when written: the one kept still reads as outer's 2nd visit, the order visits ran
    assert [(d["path"], d["node"]) for d in platform.journal.entries("again")] == [("agent/1/outer/2/middle/1", "second")]
    assert (await state_of(graph, mode, "again")).values == before.values
    result = await invoke(graph, mode, Command(resume="second run"), "again")
    assert calls == Counter(first=2, second=2)  # 0 recorded effects executed again
    assert result["notes"][-1] == "second:second run"
    # a third run's visits are new: never a position whose entries were dropped
    await invoke(graph, mode, {"count": 0, "notes": []}, "again")
    assert "agent/1/outer/2/middle/1" in {d["path"] for d in platform.journal.entries("again")}
    assert calls == Counter(first=3, second=3)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_keep_latest_drops_the_entries_of_finished_send_tasks(make_platform: Any, mode: str) -> None:
    platform = make_platform(ttl=KEEP_LATEST)
    calls: Counter = Counter()

    @effect(kind="tool", name="work")
    def work(item: str) -> str:
        calls["work"] += 1
        return item.upper()

    @effect(kind="tool", name="check")
    def check(n: int) -> int:
        calls["check"] += 1
        return n

    def gate(state: State) -> State:
        check(len(state["notes"]))
        return {"notes": [f"gate:{interrupt('go?')}"]}

    root = StateGraph(State)
    root.add_node("fan", lambda s: {"notes": []})
    root.add_node("worker", lambda s: {"notes": [work(s["item"])]})
    root.add_node("gate", gate)
    root.add_edge(START, "fan")
    root.add_conditional_edges("fan", lambda s: [Send("worker", {"item": i}) for i in ("a", "b")], ["worker"])
    root.add_edge("worker", "gate")
    graph = platform.compile(root)
    await invoke(graph, mode, {"notes": []}, "sends")
    occurrences = {(d["node"], d["occurrence"]) for d in platform.journal.entries("sends")}
    assert occurrences == {("worker", "1.0"), ("worker", "1.1"), ("gate", "1")}
    expire(platform, "sends")
    assert await sweep(platform, mode) == ["sends"]
    assert {(d["node"], d["occurrence"]) for d in platform.journal.entries("sends")} == {("gate", "1")}
    result = await invoke(graph, mode, Command(resume="go"), "sends")
    assert calls == Counter(work=2, check=1)  # 0 recorded effects executed again
    assert sorted(result["notes"]) == ["A", "B", "gate:go"]


async def test_keep_latest_sweep_keeps_what_a_delta_channel_replays(face: Face) -> None:
    saver = MongoDBCheckpointer(
        face.saver.client, async_client=face.saver.async_client, db_name=face.saver.db_name, ttl=KEEP_LATEST
    )
    ttl_face = Face(saver, face.kind, face.db)
    graph, expected = await run_chat(saver, face.is_async, 12)
    before = len(await ttl_face.raw("checkpoints"))
    past = datetime.utcnow() - timedelta(seconds=1)
    result = face.db["checkpoints"].update_many({}, {"$set": {"expire_at": past}})
    if face.is_async:
        await result
    assert await ttl_face.call("sweep_expired") == ["chat"]
    assert len(await ttl_face.raw("checkpoints")) < before
    config = {"configurable": {"thread_id": "chat"}}
    state = await graph.aget_state(config) if face.is_async else graph.get_state(config)
    assert state.values["messages"] == expected


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_delete_strategy_deletes_an_expired_thread_whole(make_platform: Any, mode: str) -> None:
    # without the TTL index (mongomock applies one on read): what readers and the sweep do before the monitor runs
    platform = make_platform(ttl={"strategy": "delete", "default_ttl": 60}, auto_setup=False)
    graph = pending_node_graph(platform, mode, Counter())
    await invoke(graph, mode, {"count": 0, "notes": []}, "del")
    await invoke(graph, mode, {"count": 0, "notes": []}, "kept")
    expire(platform, "del")
    assert (await state_of(graph, mode, "del")).values == {}  # gone for readers at once
    assert await sweep(platform, mode) == ["del"]
    assert all(raw(platform, coll, "del") == [] for coll in PER_THREAD)
    assert raw(platform, "checkpoints", "kept")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_sweep_handles_at_most_sweep_limit_threads(make_platform: Any, mode: str) -> None:
    platform = make_platform(ttl={**KEEP_LATEST, "sweep_limit": 2})
    graph = platform.compile(_one_node())
    threads = ["t1", "t2", "t3"]
    for thread_id in threads:
        for _ in range(2):
            await invoke(graph, mode, {"notes": []}, thread_id)
    expire(platform, *threads)
    first, second = await sweep(platform, mode), await sweep(platform, mode)
    assert (len(first), len(second)) == (2, 1)
    assert sorted(first + second) == threads
    assert await sweep(platform, mode) == []


def test_keep_latest_creates_no_ttl_index(make_platform: Any) -> None:
    # a TTL index would delete the threads keep_latest keeps; an index on expire_at finds them for the sweep
    platform = make_platform(ttl=KEEP_LATEST)
    platform.setup()
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    found = {name for coll in PER_THREAD for name in db[coll].index_information()}
    assert "thread_expiry" in found and "thread_ttl" not in found


def _one_node() -> StateGraph:
    graph = StateGraph(State)
    graph.add_node("note", lambda s: {"notes": ["n"]})
    graph.add_edge(START, "note")
    return graph


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("reader", ["get_tuple", "list"])
async def test_refresh_on_read_keeps_a_read_thread_alive_and_lets_an_unread_one_expire(
    make_platform: Any, mode: str, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [lease.utcnow()]
    monkeypatch.setattr(lease, "utcnow", lambda: clock[0])
    platform = make_platform(ttl={"strategy": "delete", "default_ttl": 60, "refresh_on_read": True})
    graph = platform.compile(_one_node())
    for thread_id in ("read", "unread"):
        await invoke(graph, mode, {"notes": []}, thread_id)
    written = raw(platform, "checkpoints", "read")[0]["expire_at"]
    clock[0] += timedelta(minutes=55)  # before either thread expires (60 to 66 minutes after the write)
    saver, config = platform.checkpointer, {"configurable": {"thread_id": "read"}}
    if reader == "get_tuple":
        assert (await saver.aget_tuple(config) if mode == "async" else saver.get_tuple(config)) is not None
    else:
        assert (await Face(saver, "mongomock_motor" if mode == "async" else "mongomock", None).list(config))
    refreshed = {d["expire_at"] for coll in PER_THREAD for d in raw(platform, coll, "read")}
    assert len(refreshed) == 1 and refreshed.pop() >= clock[0] + timedelta(minutes=60) > written
    clock[0] += timedelta(minutes=45)  # past the unread thread's expiry, not the read one's
    assert await sweep(platform, mode) == ["unread"]
    assert raw(platform, "checkpoints", "read") and not raw(platform, "checkpoints", "unread")


class Commands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_refresh_on_read_costs_one_update_per_collection_once_per_expiry_value(mongodb_uri: str, mode: str) -> None:
    db_name = f"t_{uuid.uuid4().hex[:12]}"
    listener = Commands()
    client, async_client = MongoClient(mongodb_uri, event_listeners=[listener]), AsyncMongoClient(mongodb_uri, event_listeners=[listener])
    try:
        writer = MongoDBCheckpointer(client, async_client=async_client, db_name=db_name, ttl={"default_ttl": 60})
        graph = _one_node().compile(checkpointer=writer)
        await invoke(graph, mode, {"notes": []}, "t")
        config = {"configurable": {"thread_id": "t"}}
        costs = {}
        for refresh in (False, True):
            # another process reading the thread: it has spread no expiry of it yet
            reader = MongoDBCheckpointer(
                client, async_client=async_client, db_name=db_name, ttl={"default_ttl": 60, "refresh_on_read": refresh}
            )
            await reader.asetup() if mode == "async" else reader.setup()
            costs[refresh] = []
            for _ in range(2):
                listener.names.clear()
                assert (await reader.aget_tuple(config) if mode == "async" else reader.get_tuple(config)) is not None
                costs[refresh].append(list(listener.names))
        [plain, again] = costs[False]
        assert plain == again and "update" not in plain
        # one update per per-thread collection the database declares: the saver's three, no journal ran here
        assert reader.storage_format.thread_collections.names == PER_THREAD[:3]
        assert costs[True] == [plain + ["update"] * 3, plain]
    finally:
        client.drop_database(db_name)
        client.close()
        await async_client.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_sweeper_sweeps_on_start_and_stops_with_nothing_left_running(make_platform: Any, mode: str) -> None:
    platform = make_platform(ttl={**KEEP_LATEST, "sweep_interval_minutes": 60})
    graph = platform.compile(_one_node())
    for _ in range(2):
        await invoke(graph, mode, {"notes": []}, "s")
    expire(platform, "s")
    saver = platform.checkpointer
    if mode == "async":
        await saver.astart_sweeper()
        assert [t for t in asyncio.all_tasks() if t.get_name() == SWEEPER_TASK]
        await saver.astop_sweepers()
        assert not [t for t in asyncio.all_tasks() if t.get_name() == SWEEPER_TASK]
    else:
        sweeper = saver.start_sweeper()
        saver.stop_sweepers()
        assert not sweeper._thread.is_alive()
    assert len(raw(platform, "checkpoints", "s")) == 1  # swept once, at start
    assert all("expire_at" not in d for d in raw(platform, "checkpoints", "s"))


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_closing_the_platform_stops_its_sweepers(make_platform: Any, mode: str) -> None:
    platform = make_platform(ttl={**KEEP_LATEST, "sweep_interval_minutes": 60})
    saver = platform.checkpointer
    sweeper = saver.start_sweeper()
    if mode == "async":
        await saver.astart_sweeper()
        await platform.aclose()
        assert not [t for t in asyncio.all_tasks() if t.get_name() == SWEEPER_TASK]
    else:
        platform.close()
    assert not sweeper._thread.is_alive()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_sweeper_needs_an_interval(make_platform: Any, mode: str) -> None:
    saver = make_platform(ttl=KEEP_LATEST).checkpointer
    with pytest.raises(InvalidInputError, match="sweep_interval_minutes"):
        await saver.astart_sweeper() if mode == "async" else saver.start_sweeper()


@pytest.mark.parametrize(
    ("ttl", "match"),
    [
        ({"default_ttl": 60, "sweep_limt": 10}, "unknown key.*sweep_limt"),
        ({"strategy": "keep", "default_ttl": 60}, "strategy"),
        ({"strategy": "delete"}, "default_ttl.*required"),
        ({"default_ttl": "60"}, "default_ttl"),
        ({"default_ttl": -1}, "default_ttl"),
        ({"default_ttl": 0}, "default_ttl"),
        ({"default_ttl": True}, "default_ttl"),
        ({"default_ttl": float("nan")}, "default_ttl"),
        ({"default_ttl": 60, "sweep_interval_minutes": -5}, "sweep_interval_minutes"),
        ({"default_ttl": 60, "sweep_interval_minutes": "5"}, "sweep_interval_minutes"),
        ({"default_ttl": 60, "sweep_limit": 0}, "sweep_limit"),
        ({"default_ttl": 60, "sweep_limit": 2.5}, "sweep_limit"),
        ({"default_ttl": 60, "sweep_limit": -1}, "sweep_limit"),
        ({"default_ttl": 60, "refresh_on_read": "yes"}, "refresh_on_read"),
        (-3, "positive number of seconds"),
        ("3600", "positive number of seconds"),
        # longer than 100 years: an expiry past year 9999, or a wait threading cannot do; the largest is named
        ({"default_ttl": 5_000_000_000}, "default_ttl must be at most 52596000 minutes"),
        ({"default_ttl": 52_596_001}, "default_ttl must be at most 52596000 minutes"),
        ({"default_ttl": 60, "sweep_interval_minutes": 200 * 525_960}, "sweep_interval_minutes must be at most 52596000"),
        (3_155_760_001, "ttl must be at most 3155760000 seconds"),
        (float("inf"), "ttl must be at most 3155760000 seconds"),
    ],
)
def test_a_bad_ttl_is_refused_before_any_query(ttl: Any, match: str) -> None:
    listener = Commands()
    client = MongoClient("mongodb://127.0.0.1:1", event_listeners=[listener], serverSelectionTimeoutMS=1)
    try:
        with pytest.raises(InvalidInputError, match=match):
            MongoDBCheckpointer(client, ttl=ttl)
        with pytest.raises(InvalidInputError, match=match):
            DurablePlatform(client, ttl=ttl)
        assert listener.names == []
    finally:
        client.close()


def test_ttl_in_seconds_works_as_before() -> None:
    import mongomock

    saver = MongoDBCheckpointer(mongomock.MongoClient(), ttl=90)
    assert saver.ttl == 90
    assert (saver.ttl_config.strategy, saver.ttl_config.sweep_limit, saver.ttl_config.refresh_on_read) == ("delete", None, False)
    block = MongoDBCheckpointer(mongomock.MongoClient(), ttl={"default_ttl": 1.5}).ttl_config
    assert (block.seconds, block.strategy, block.sweep_limit, block.sweep_interval_minutes) == (90, "delete", 10_000, None)
    assert MongoDBCheckpointer(mongomock.MongoClient(), ttl=block).ttl_config is block


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_failed_sweep_is_logged_and_the_next_one_runs(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    second = threading.Event()

    def outcome() -> list[str]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("server down")
        second.set()
        return []

    async def aoutcome() -> list[str]:
        return outcome()

    if mode == "async":
        sweeper = AsyncSweeper(aoutcome, 0.001)
        assert await asyncio.to_thread(second.wait, 10)
        await sweeper.astop()
    else:
        threaded = Sweeper(outcome, 0.001)
        assert second.wait(10)
        threaded.stop()
    assert len(calls) >= 2
    assert "TTL sweep failed" in caplog.text and "server down" in caplog.text


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_longest_ttl_and_interval_accepted_are_honoured(make_platform: Any, mode: str) -> None:
    # 100 years each: every write stores an expiry, and the sweeper sweeps at once, then waits without dying
    platform = make_platform(ttl={"default_ttl": MAX_MINUTES, "sweep_interval_minutes": MAX_MINUTES})
    graph = platform.compile(_one_node())
    await invoke(graph, mode, {"notes": []}, "long")
    await invoke(graph, mode, {"notes": []}, "long")
    [expiry] = {d["expire_at"] for d in raw(platform, "checkpoints", "long")}
    assert timedelta(days=36524) < expiry - lease.utcnow() < timedelta(days=1.1 * 36525 + 1)
    expire(platform, "long")
    saver = platform.checkpointer
    if mode == "async":
        await saver.astart_sweeper()
        await asyncio.sleep(0.2)
        [task] = [t for t in asyncio.all_tasks() if t.get_name() == SWEEPER_TASK]
        assert not task.done()
        await saver.astop_sweepers()
    else:
        sweeper = saver.start_sweeper()
        await asyncio.sleep(0.2)
        assert sweeper._thread.is_alive()
        saver.stop_sweepers()
    assert raw(platform, "checkpoints", "long") == []  # swept once, at start (strategy delete)
    assert MongoDBCheckpointer(saver.client, ttl=MAX_SECONDS).ttl == MAX_SECONDS


class Fatal(BaseException):
    """What no sweep loop can go on after (as ``Event.wait`` overflowing once did)."""


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_sweeper_that_dies_says_so_at_error_level(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    def die() -> list[str]:
        raise Fatal("the loop cannot go on")

    async def adie() -> list[str]:
        return die()

    if mode == "async":
        sweeper = AsyncSweeper(adie, 60)
        await asyncio.wait_for(asyncio.shield(sweeper._task), 10)
        await sweeper.astop()
    else:
        threaded = Sweeper(die, 60)
        threaded._thread.join(10)
        assert not threaded._thread.is_alive()
        threaded.stop()
    [record] = [r for r in caplog.records if "TTL sweeper died" in r.getMessage()]
    assert record.levelname == "ERROR" and isinstance(record.exc_info[1], Fatal)


def test_a_sweeper_thread_whose_wait_overflows_says_so_at_error_level(caplog: pytest.LogCaptureFixture) -> None:
    # what ttl= now refuses (an interval above threading.TIMEOUT_MAX), given to the sweeper directly
    threaded = Sweeper(lambda: [], threading.TIMEOUT_MAX * 2)
    threaded._thread.join(10)
    assert not threaded._thread.is_alive()
    [record] = [r for r in caplog.records if "TTL sweeper died" in r.getMessage()]
    assert record.levelname == "ERROR" and isinstance(record.exc_info[1], OverflowError)
