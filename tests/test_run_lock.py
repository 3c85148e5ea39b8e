"""One run per thread at a time (``DurablePlatform(exclusive_runs=True)``, ``src/runs/run_lock.py``).

Offline on the embedded platform (mongomock, both faces on one store) and on
the real-server tier (pymongo ``MongoClient`` + ``AsyncMongoClient``).

The scenario: a thread paused before ``pay`` (``interrupt_before``), then
resumed by two callers at once. Without the lock both run the pending step
from the same checkpoint and each saves its own next checkpoint: ``ship``,
the step after, runs once per branch. With it, the second caller waits for
the first and then resumes a finished thread: every effect runs once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from pymongo.errors import AutoReconnect

from langgraph_durable_mongodb import ThreadBusyError
from langgraph_durable_mongodb.storage.plans import interpreters
from langgraph_durable_mongodb.storage.plans.requests import FencedUpdate
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.storage.liveness import identity
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.runs.run_lock import RunLocks

from .checkout import FINAL, Effects, build
from .graphs import Notes, config, note_graph


def runs_doc(platform: DurablePlatform, thread: str = "case-42") -> Any:
    """The thread's lock document, once this process's background releases are done (a sync run returns
    before its release is: ``CallLocks.release_in_background``)."""
    platform.run_locks.wait_releases(10)
    return platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"].find_one({"thread_id": thread})


def held_by(platform: DurablePlatform, thread: str = "case-42") -> Any:
    """The thread's lock while a run holds it; None when it is free (released, or never taken)."""
    doc = runs_doc(platform, thread)
    return doc if doc is not None and doc["owner"] is not None else None


def plant(platform: DurablePlatform, holder: dict[str, Any]) -> Any:
    """Make ``holder`` the holder of case-42's lock, at fence 5, as another run would have; returns the collection.

    It first waits for this process's background releases: on FerretDB, whose updates read and then write the whole
    document, a release still under way could otherwise write back the fence it read over the planted one."""
    platform.run_locks.setup()
    platform.run_locks.wait_releases(10)
    runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
    runs.update_one({"thread_id": "case-42"}, {"$set": {**holder, "fence": 5}}, upsert=True)
    return runs


def spy(platform: DurablePlatform) -> list[Any]:
    """Record every request the run locks' sync face executes (the renewer's too)."""
    seen: list[Any] = []
    io = platform.run_locks._sync_face()
    execute = io.execute

    def recording(request: Any) -> Any:
        seen.append(request)
        return execute(request)

    io.execute = recording
    return seen


def resume_in_threads(graph: Any, fx: Effects, n: int = 2) -> list[Any]:
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def resume(i: int) -> None:
        try:
            results[i] = graph.invoke(None, config())
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=resume, args=(0,))]
    threads[0].start()
    assert fx.paying.wait(10)  # the first resumer holds the thread and is inside pay
    threads += [threading.Thread(target=resume, args=(i,)) for i in range(1, n)]
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return results


def test_concurrent_resumes_run_one_after_the_other(make_platform: Any) -> None:
    platform = make_platform()
    fx = Effects()
    graph = build(platform, fx)
    graph.invoke({"notes": []}, config())
    results = resume_in_threads(graph, fx, n=3)
    # The others waited for the first run, then resumed a finished thread: they see its result.
    assert results == [FINAL] * 3
    assert fx.counts == {"pay": 1, "ship": 1}  # no fork: the step after the resumed one ran once
    assert held_by(platform) is None  # released
    history = list(graph.get_state_history(config()))
    assert len({c.parent_config["configurable"]["checkpoint_id"] for c in history if c.parent_config}) == len(history) - 1


def test_without_exclusive_runs_concurrent_resumes_fork(make_platform: Any) -> None:
    platform = make_platform(exclusive_runs=False)
    assert platform.run_locks is None
    fx = Effects()
    graph = build(platform, fx)
    graph.invoke({"notes": []}, config())
    resume_in_threads(graph, fx, n=2)
    assert fx.counts["pay"] == 1  # the journal serializes the pending step itself...
    assert fx.counts["ship"] == 2  # ...but each resumer saved its own checkpoint: the thread forked
    assert "thread_runs" not in platform.checkpointer.client[platform.checkpointer.db_name].list_collection_names()


def test_busy_thread_raises_a_clear_error(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0.2)
    fx = Effects(seconds=1.5)
    graph = build(platform, fx)
    graph.invoke({"notes": []}, config())
    first = threading.Thread(target=graph.invoke, args=(None, config()))
    first.start()
    assert fx.paying.wait(10)
    started = time.monotonic()
    with pytest.raises(ThreadBusyError) as caught:
        graph.invoke(None, config())
    waited = time.monotonic() - started
    first.join(30)
    assert 0.2 <= waited < 1.4
    message = str(caught.value)
    assert "'case-42'" in message and f"pid {os.getpid()}" in message and identity()["owner_host"] in message
    assert "run_wait_seconds" in message
    assert caught.value.thread_id == "case-42" and caught.value.holder["owner_pid"] == os.getpid()
    assert fx.counts == {"pay": 1, "ship": 1}
    assert graph.invoke(None, config()) == FINAL  # free again


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc to tell a dead owner")
def test_a_dead_holder_on_this_host_is_taken_over_at_once(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    fx = Effects(seconds=0)
    graph = build(platform, fx)
    graph.invoke({"notes": []}, config())
    me = identity()
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    pid = _dead_pid()
    runs = plant(platform, {
        "owner": "crashed", **me, "owner_pid": pid, "owner_process": {**me["owner_process"], "start": 1},
        "lease_until": now + timedelta(hours=1), "started_at": now,
    })
    assert graph.invoke(None, config()) == FINAL  # run_wait_seconds=0: no waiting for its hour-long lease
    platform.run_locks.wait_releases(10)
    assert runs.find_one({}, {"_id": 0, "owner": 1, "fence": 1}) == {"owner": None, "fence": 6}  # taken over, released
    dead = runs.find_one({})["runs"]["5"]  # the take-over kept how the dead holder's run ended, for people
    assert (dead["fence"], dead["ended"], dead["host"], dead["pid"]) == (5, "crashed", me["owner_host"], pid)


def test_an_expired_lease_is_taken_over_at_once(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    fx = Effects(seconds=0)
    graph = build(platform, fx)
    graph.invoke({"notes": []}, config())
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    runs = plant(platform, {
        "owner": "elsewhere", "owner_host": "another-host", "owner_pid": 1,
        "lease_until": now - timedelta(seconds=1), "started_at": now - timedelta(minutes=5),
    })
    assert graph.invoke(None, config()) == FINAL
    platform.run_locks.wait_releases(10)
    assert runs.find_one({}, {"_id": 0, "owner": 1, "fence": 1}) == {"owner": None, "fence": 6}
    lost = runs.find_one({})["runs"]["5"]  # its holder may live on: it lost its lock when its lease ran out
    last_seen = now - timedelta(minutes=5)  # it started then, and never renewed
    assert (lost["ended"], lost["host"], lost["ended_at"]) == ("lock lost", "another-host", last_seen.replace(microsecond=last_seen.microsecond // 1000 * 1000))


def test_each_release_keeps_how_its_run_ended_and_a_renewal_when_it_renewed(make_platform: Any) -> None:
    """For people (the inspectors' runs), never read by a run: the release of a run that finished, and of one that
    raised, each in its own slot; a renewal's time, by which a holder that stopped renewing is told apart."""
    platform = make_platform(run_lease_seconds=0.3)
    fx = Effects(seconds=0)
    graph = build(platform, fx)
    graph.invoke({"notes": []}, config())
    builder = StateGraph(Notes)
    builder.add_node("slow", lambda s: time.sleep(0.35) or {"notes": ["slow"]})  # outlives a renewal (every 0.1 s)
    builder.add_node("boom", lambda s: (_ for _ in ()).throw(RuntimeError("boom")))
    builder.add_edge(START, "slow")
    builder.add_edge("slow", "boom")
    with pytest.raises(RuntimeError):
        platform.compile(builder).invoke({"notes": []}, config("other"))
    finished, failed = runs_doc(platform)["runs"]["1"], runs_doc(platform, "other")["runs"]["1"]
    assert (finished["ended"], failed["ended"]) == ("finished", "failed")
    for record in (finished, failed):
        assert record["host"] == identity()["owner_host"] and record["pid"] == os.getpid()
        assert record["started_at"] <= record["ended_at"]
    renewed = runs_doc(platform, "other")["renewed_at"]
    assert failed["started_at"] < renewed <= failed["ended_at"]


def test_a_live_holder_elsewhere_is_not_taken_over(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0.1)
    graph = build(platform, Effects(seconds=0))
    graph.invoke({"notes": []}, config())
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    runs = plant(platform, {
        "owner": "elsewhere", "owner_host": "another-host", "owner_pid": 7,
        "lease_until": now + timedelta(minutes=1), "started_at": now,
    })
    with pytest.raises(ThreadBusyError, match="host another-host, pid 7"):
        graph.invoke(None, config())
    assert runs.find_one({"thread_id": "case-42"})["owner"] == "elsewhere"


def sent(seen: list[Any]) -> list[str]:
    """The lock requests of a run, renewals aside (a busy machine may renew a short run once); a ``Try`` is counted as
    the request it sends."""
    return [
        type(r).__name__ for r in seen
        if type(r).__name__ not in ("Heartbeat", "Try") and not isinstance(getattr(r, "filter", {}).get("lease_until"), dict)
    ]


def test_a_short_run_costs_three_commands_then_two_and_a_long_one_renews(make_platform: Any) -> None:
    platform = make_platform(run_lease_seconds=1.0)  # long enough to outlast a garbage collection's stall
    platform.setup()
    seen = spy(platform)
    fx = Effects(seconds=0)
    graph = build(platform, fx)
    graph.invoke({"notes": []}, config())  # the thread's first lock: inserted
    platform.run_locks.wait_releases(10)  # released in the background, after the run returned
    assert sent(seen) == ["Find", "InsertOne", "FencedUpdate"]
    seen.clear()
    graph.invoke(None, config())  # its lock, released by this process's last run: taken back unread
    platform.run_locks.wait_releases(10)
    assert sent(seen) == ["FindOneAndUpdate", "FencedUpdate"]
    graph.invoke({"notes": []}, config())  # back before pay, for the long run below
    platform.run_locks.wait_releases(10)
    seen.clear()
    fx.seconds = 2.0  # renewed every 1/3 s
    leases = []
    fx.paying.clear()
    runner = threading.Thread(target=graph.invoke, args=(None, config()))
    runner.start()
    assert fx.paying.wait(10)
    for _ in range(3):
        time.sleep(0.5)
        leases.append(runs_doc(platform)["lease_until"])
    runner.join(30)
    platform.run_locks.wait_releases(10)
    updates = [r for r in seen if type(r).__name__ == "FencedUpdate"]
    assert sent(seen)[0] == "FindOneAndUpdate"  # its lock taken back by one update
    renewals = [r for r in updates if isinstance(r.filter.get("lease_until"), dict)]  # {"$gt": now}
    assert len(renewals) >= 4 and len(updates) == len(renewals) + 1  # + the release
    assert leases == sorted(leases) and leases[0] < leases[-1]
    assert held_by(platform) is None


def test_the_lock_is_released_when_the_run_raises(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    graph = build(platform, Effects(seconds=0), fail=True)
    graph.invoke({"notes": []}, config())
    with pytest.raises(ValueError, match="card declined"):
        graph.invoke(None, config())
    assert held_by(platform) is None
    with pytest.raises(ValueError, match="card declined"):  # no ThreadBusyError: the lock is free
        graph.invoke(None, config())


async def test_concurrent_async_resumes_run_one_after_the_other(make_platform: Any) -> None:
    platform = make_platform()
    fx = Effects()
    graph = build(platform, fx, use_async=True)
    await graph.ainvoke({"notes": []}, config())
    first = asyncio.create_task(graph.ainvoke(None, config()))
    while not fx.paying.is_set():
        await asyncio.sleep(0.01)
    others = [asyncio.create_task(graph.ainvoke(None, config())) for _ in range(2)]
    assert await asyncio.gather(first, *others) == [FINAL] * 3
    assert fx.counts == {"pay": 1, "ship": 1}
    assert held_by(platform) is None


async def test_async_busy_thread_raises(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0.1)
    fx = Effects(seconds=0.6)
    graph = build(platform, fx, use_async=True)
    await graph.ainvoke({"notes": []}, config())
    first = asyncio.create_task(graph.ainvoke(None, config()))
    while not fx.paying.is_set():
        await asyncio.sleep(0.01)
    with pytest.raises(ThreadBusyError, match="case-42"):
        await graph.ainvoke(None, config())
    assert await first == FINAL


def test_a_nested_run_of_the_same_thread_reenters(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)  # a run that waited for its own lock would raise ThreadBusyError
    inner_builder = StateGraph(Notes)
    inner_builder.add_node("inner", lambda s: {"notes": ["inner"]})
    inner_builder.add_edge(START, "inner")
    graphs: dict[str, Any] = {}  # looked up at run time: a durable graph of its own, not a child of the outer one

    def outer_node(s: Notes) -> Notes:
        # Same thread, same process, same context: re-enters instead of waiting for itself.
        with platform.run_locks.hold(["case-42"]):
            pass
        return {"notes": graphs["inner"].invoke({"notes": []}, config())["notes"]}

    builder = StateGraph(Notes)
    builder.add_node("outer", outer_node)
    builder.add_edge(START, "outer")
    graph = platform.compile(builder)
    graphs["inner"] = platform.compile(inner_builder)
    assert graph.invoke({"notes": []}, config())["notes"] == ["inner"]
    assert held_by(platform) is None


def test_stream_holds_the_lock_until_exhausted_or_closed(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    fx = Effects(seconds=0)
    graph = build(platform, fx)
    stream = graph.stream({"notes": []}, config())
    assert held_by(platform) is None  # nothing before the first next()
    next(stream)
    assert held_by(platform)["owner_pid"] == os.getpid()
    with pytest.raises(ThreadBusyError):
        graph.invoke(None, config())
    list(stream)
    assert held_by(platform) is None

    stream = graph.stream(None, config())
    next(stream)
    assert held_by(platform) is not None
    stream.close()
    assert held_by(platform) is None


async def test_astream_holds_the_lock_until_exhausted_or_closed(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    graph = build(platform, Effects(seconds=0), use_async=True)
    stream = graph.astream({"notes": []}, config())
    await stream.__anext__()
    assert held_by(platform) is not None
    with pytest.raises(ThreadBusyError):
        await graph.ainvoke(None, config())
    _ = [chunk async for chunk in stream]
    assert held_by(platform) is None
    stream = graph.astream(None, config())
    await stream.__anext__()
    await stream.aclose()
    assert held_by(platform) is None


def test_batch_locks_every_distinct_thread(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    held: list[Any] = []

    def node(s: Notes) -> Notes:
        held.append(sorted(d["thread_id"] for d in platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"].find({"owner": {"$ne": None}})))
        return {"notes": ["x"]}

    builder = StateGraph(Notes)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    graph = platform.compile(builder)
    out = graph.batch([{"notes": []}, {"notes": []}], [config("b"), config("a")])
    assert out == [{"notes": ["x"]}] * 2
    assert held == [["a", "b"], ["a", "b"]]
    assert held_by(platform, "a") is None and held_by(platform, "b") is None


async def test_abatch_locks_every_distinct_thread(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    builder = StateGraph(Notes)
    builder.add_node("n", lambda s: {"notes": ["x"]})
    builder.add_edge(START, "n")
    graph = platform.compile(builder)
    assert await graph.abatch([{"notes": []}] * 2, [config("b"), config("a")]) == [{"notes": ["x"]}] * 2
    assert held_by(platform, "a") is None and held_by(platform, "b") is None



def _slow_release(platform: DurablePlatform, monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    from langgraph_durable_mongodb.storage.plans.requests import Sleep

    locks = platform.run_locks
    release = locks._release_plan  # noqa: SLF001 - the plan every release runs

    def slow(*args: Any, **kwargs: Any) -> Any:
        yield Sleep(seconds)
        return (yield from release(*args, **kwargs))

    monkeypatch.setattr(locks, "_release_plan", slow)


@pytest.mark.parametrize("then", ["invoke", "ainvoke"])
def test_a_sync_run_returns_before_its_release_and_the_next_run_here_waits_for_it(
    make_platform: Any, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """The release is sent in the background (off the run's path); this process's next run of the thread, sync or
    async, waits for it rather than for the lease it would otherwise find held (``run_wait_seconds`` is shorter)."""
    platform = make_platform(run_wait_seconds=0.2)
    graph = build(platform, Effects(seconds=0))
    graph.invoke({"notes": []}, config())
    platform.run_locks.wait_releases(10)
    _slow_release(platform, monkeypatch, 0.6)
    assert graph.invoke(None, config()) == FINAL
    runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
    assert runs.find_one({"thread_id": "case-42"})["owner"] is not None  # the release is still under way
    out = graph.invoke(None, config()) if then == "invoke" else asyncio.run(graph.ainvoke(None, config()))
    assert out == FINAL  # no ThreadBusyError after 0.2 s: it waited for this process's own release
    assert held_by(platform) is None


@pytest.mark.parametrize("closing", ["close", "aclose"])
async def test_closing_the_platform_lets_a_sync_runs_release_finish_first(
    mongodb_uri: str, server_db_name: str, closing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync run returns before its lock's release is sent; a ``with`` block's close right after must not close
    the client under that release: the lock would stay held until its lease expired, and the next run wait."""
    release = RunLocks._release_logged

    def slow_release(self: RunLocks, *args: Any) -> None:
        time.sleep(0.3)  # the run has returned and the block is closing by now
        release(self, *args)

    monkeypatch.setattr(RunLocks, "_release_logged", slow_release)
    if closing == "close":
        with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
            platform.compile(note_graph()).invoke({"notes": []}, config("closing"))
    else:
        async with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
            platform.compile(note_graph()).invoke({"notes": []}, config("closing"))
    with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as reader:
        doc = reader.checkpointer.client[server_db_name]["thread_runs"].find_one({"thread_id": "closing"})
    assert doc is not None and doc["owner"] is None and doc["ended_cleanly"] is True


@pytest.mark.parametrize("next_run", ["same platform", "another platform"])
@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_release_lost_to_the_network_does_not_hold_the_thread_from_this_process_s_next_run(
    make_platform: Any, face: str, next_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run ended, its release failed (the server went away): the lock stays held a lease long in the database,
    yet this process knows its run ended, and its next run of the thread, by any of its platforms, takes the lock at
    once."""
    platform = make_platform(run_lease_seconds=30.0, run_wait_seconds=0.5)
    platform.setup()
    failing = [True]

    def lost(request: Any) -> bool:
        if failing and "ended_cleanly" in (request.update.get("$set") or {}):
            failing.clear()
            return True
        return False

    sync_update, async_update = interpreters.SyncInterpreter._fenced_update, interpreters.AsyncInterpreter._fenced_update

    def sync_faulty(self: Any, request: Any) -> Any:
        if lost(request):
            raise AutoReconnect("connection closed (the server went away)")
        return sync_update(self, request)

    async def async_faulty(self: Any, request: Any) -> Any:
        if lost(request):
            raise AutoReconnect("connection closed (the server went away)")
        return await async_update(self, request)

    monkeypatch.setitem(interpreters.SyncInterpreter._HANDLERS, FencedUpdate, sync_faulty)
    monkeypatch.setitem(interpreters.AsyncInterpreter._HANDLERS, FencedUpdate, async_faulty)
    graph = platform.compile(note_graph())
    if face == "sync":
        graph.invoke({"notes": []}, config("lost"))
        platform.run_locks.wait_releases(10)
    else:
        await graph.ainvoke({"notes": []}, config("lost"))
    assert not failing and held_by(platform, "lost") is not None  # still held in the database
    if next_run == "another platform":
        graph = make_platform(run_lease_seconds=30.0, run_wait_seconds=0.5).compile(note_graph())
    out = graph.invoke(None, config("lost")) if face == "sync" else await graph.ainvoke(None, config("lost"))
    assert out["notes"] == ["seen"]  # not ThreadBusyError after 0.5 s: taken at once


@pytest.mark.parametrize("release", ["release", "release_in_background", "arelease"])
def test_a_run_s_lock_is_released_only_once_the_records_it_left_in_flight_are_written(make_platform: Any, release: str) -> None:
    """A run that stopped while its effects' records were still being written: another process that takes the thread
    the moment its lock is free must find them (issue 44). The platform's checkpointer holds them
    (``hold_task_writes``); the release waits for them, the lock renewed meanwhile."""
    import concurrent.futures

    from langgraph_durable_mongodb._langgraph import RunningTask

    platform = make_platform()
    platform.setup()
    record: concurrent.futures.Future[Any] = concurrent.futures.Future()
    platform.checkpointer.hold_task_writes("t1", RunningTask("task-1", "", "cp-1"), record)
    locks = platform.run_locks

    def run() -> None:
        if release == "arelease":
            async def arun() -> None:
                held = await locks.aacquire(["t1"])
                await held.arelease(cleanly=False)

            asyncio.run(arun())
            return
        held = locks.acquire(["t1"])
        getattr(held, release)(cleanly=False)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    time.sleep(0.3)
    assert held_by(platform, "t1") is not None  # still held: the record is in flight
    record.set_result(None)
    runner.join(10)
    locks.wait_releases(10)
    assert not runner.is_alive() and held_by(platform, "t1") is None
