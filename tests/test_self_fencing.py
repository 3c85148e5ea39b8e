"""Self-fencing: a run whose lease may have run out, by its own monotonic clock, starts no effect and writes no
checkpoint, even when the stall that cost it the lease also kept its renewals from noticing.

The stalls: a blocked event loop (``time.sleep`` in an async node), a renewal stuck behind a slow server
(the renewal plan held up before it sends its command, as a server that does not answer would), and a
process frozen by ``SIGSTOP`` past its lease, then ``SIGCONT`` (in a child process, on mongo-java-server).
Each test counts the real executions of the effect and reads the stored checkpoints.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import RunLockLostError
from langgraph_durable_mongodb.storage.plans.lease import utcnow
from langgraph_durable_mongodb.storage.plans.requests import Sleep
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.journal.plans import JournalPlans
from langgraph_durable_mongodb.runs.run_lock import CallLocks, HeldLock, RunLocks

from .graphs import Notes, config

LEASE = 0.6


def runs_of(platform: Any) -> Any:
    return platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]


def take_over_after(platform: Any, seconds: float) -> threading.Thread:
    """Another worker takes the thread's lock over (fence 2) once its lease has expired, from a thread."""

    def later() -> None:
        time.sleep(seconds)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not runs_of(platform).update_one(
            {"thread_id": "t", "lease_until": {"$lte": utcnow()}},
            {"$inc": {"fence": 1}, "$set": {"owner": "other", "lease_until": utcnow() + timedelta(minutes=1)}},
        ).matched_count:
            time.sleep(0.02)

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def stalled_graph(platform: Any, paid: list, stall: Any, pay: bool = True, sync: bool = False) -> Any:
    """``n`` (async, or ``sync``): stalls (``stall``, an awaitable or a call), then, if ``pay``, starts a journaled
    charge."""

    @effect(kind="payment", name="charge")
    async def charge(cents: int) -> str:
        paid.append(cents)
        return "charged"

    @effect(kind="payment", name="charge")
    def charge_sync(cents: int) -> str:
        paid.append(cents)
        return "charged"

    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        return ref

    # Each node journals a lookup first: its position and entries are then known, so the charge after the
    # stall sends no command before it starts (nothing that would give a renewal the time to notice).
    async def node(s: Notes) -> Notes:
        lookup("warm")
        result = stall()
        if asyncio.iscoroutine(result):
            await result
        return {"notes": [await charge(100)] if pay else ["stalled"]}

    def sync_node(s: Notes) -> Notes:
        lookup("warm")
        stall()
        return {"notes": [charge_sync(100)] if pay else ["stalled"]}

    builder = StateGraph(Notes)
    builder.add_node("n", sync_node if sync else node)
    builder.add_edge(START, "n")
    return platform.compile(builder)


def stored_steps(platform: Any) -> list[int]:
    return sorted(c.metadata["step"] for c in platform.checkpointer.list(config("t")))


async def test_a_blocked_event_loop_starts_no_effect_after_its_lease(make_platform: Any) -> None:
    platform, paid = make_platform(run_lease_seconds=LEASE), []
    other = take_over_after(platform, LEASE + 0.3)
    with pytest.raises(RunLockLostError, match="'t'"):
        await stalled_graph(platform, paid, lambda: time.sleep(2.5 * LEASE)).ainvoke({"notes": []}, config("t"))
    other.join()
    assert paid == []  # the charge never ran beside the new holder
    assert runs_of(platform).find_one({"thread_id": "t"})["owner"] == "other"  # its lock is left alone


async def test_a_blocked_event_loop_writes_no_checkpoint_after_its_lease(make_platform: Any) -> None:
    platform, paid = make_platform(run_lease_seconds=LEASE), []
    graph = stalled_graph(platform, paid, lambda: time.sleep(2.5 * LEASE), pay=False)
    with pytest.raises(RunLockLostError, match="'t'"):
        await graph.ainvoke({"notes": []}, config("t"))
    assert max(stored_steps(platform)) <= 0  # none after the stalled node (step 0's may be refused too: saved meanwhile)
    writes = platform.checkpointer.client[platform.checkpointer.db_name][platform.checkpointer.collections.writes]
    paths = {d["task_path"] for d in writes.find({"thread_id": "t"})}
    assert paths == {"~__pregel_pull, __start__"}  # the input's writes only: none of the stalled node's


def stuck_renewals(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Every renewal waits ``seconds`` before it sends its command: a server that does not answer in time."""
    original = RunLocks._renew_plan

    def slow(self: RunLocks, holding: Any) -> Any:
        yield Sleep(seconds)
        return (yield from original(self, holding))

    monkeypatch.setattr(RunLocks, "_renew_plan", slow)


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_renewal_stuck_behind_a_slow_server_starts_no_effect_after_its_lease(
    make_platform: Any, monkeypatch: pytest.MonkeyPatch, face: str
) -> None:
    platform, paid = make_platform(run_lease_seconds=LEASE), []
    stuck_renewals(monkeypatch, 3 * LEASE)
    if face == "sync":  # the node waits without blocking anything: the renewer thread is what is stuck
        graph = stalled_graph(platform, paid, lambda: time.sleep(2 * LEASE), sync=True)
        with pytest.raises(RunLockLostError, match="'t'"):
            graph.invoke({"notes": []}, config("t"))
    else:  # the node awaits: the event loop runs, the renewal task is what is stuck
        graph = stalled_graph(platform, paid, lambda: asyncio.sleep(2 * LEASE))
        with pytest.raises(RunLockLostError, match="'t'"):
            await graph.ainvoke({"notes": []}, config("t"))
    assert paid == []
    assert max(stored_steps(platform)) <= 0


CHILD = textwrap.dedent(
    """
    import asyncio, json, os, sys, threading, time
    from pymongo import AsyncMongoClient, MongoClient
    from langgraph.graph import START, StateGraph
    from langgraph_durable_mongodb.journal import effect
    from langgraph_durable_mongodb.platform import DurablePlatform
    from tests.graphs import Notes

    uri, db_name, out, lease, face = sys.argv[1:6]
    held_step = None if sys.argv[6] == "none" else int(sys.argv[6])
    clients = {"client": MongoClient(uri)} if face == "sync" else {"async_client": AsyncMongoClient(uri)}
    platform = DurablePlatform(**clients, db_name=db_name, run_lease_seconds=float(lease))
    woken = threading.Event()

    def thawed():  # the parent marks the thaw while this process is frozen: only a woken process sees it
        return os.path.exists(out + ".thawed")

    # Hold back one step's checkpoint write (durability="async": it runs beside the node) until the node has woken,
    # so the freeze begins with that write still to be sent.
    saver = platform.checkpointer
    put, aput = saver.put, saver.aput

    def held_put(config, checkpoint, metadata, versions):
        if metadata.get("step") == held_step:
            woken.wait()
        return put(config, checkpoint, metadata, versions)

    async def held_aput(config, checkpoint, metadata, versions):
        while metadata.get("step") == held_step and not woken.is_set():
            await asyncio.sleep(0.005)
        return await aput(config, checkpoint, metadata, versions)

    saver.put, saver.aput = held_put, held_aput

    def ran(name):
        with open(out + "." + name, "a") as f:
            f.write("1")
        return name

    @effect(kind="payment", name="charge")
    def charge(cents):
        return ran("charged")

    @effect(kind="payment", name="charge")
    async def acharge(cents):
        return ran("charged")

    @effect(kind="tool", name="lookup")
    def lookup(ref):
        return ran("looked")

    @effect(kind="tool", name="lookup")
    async def alookup(ref):
        return ran("looked")

    # Each node journals a lookup first: its position and entries are known then, so the charge after the thaw
    # sends no command before it starts. Wherever the freeze lands in the wait, the charge comes after the wake.
    # With step 0's write held, the lookup waits for it (an effect starts only under a stored root checkpoint),
    # so the freeze lands before the lookup, and the write and the lookup both come after the wake.
    def wake():
        while not thawed():
            time.sleep(0.005)
        woken.set()

    threading.Thread(target=wake, daemon=True).start()

    def node(state):
        if held_step is not None:
            open(out + ".ready", "w").close()
        lookup("warm")
        open(out + ".ready", "w").close()
        woken.wait()
        return {"notes": [charge(100)]}

    async def anode(state):
        if held_step is not None:
            open(out + ".ready", "w").close()
        await alookup("warm")
        open(out + ".ready", "w").close()
        while not woken.is_set():
            await asyncio.sleep(0.005)
        return {"notes": [await acharge(100)]}

    builder = StateGraph(Notes)
    builder.add_node("n", node if face == "sync" else anode)
    builder.add_edge(START, "n")
    graph, config = platform.compile(builder), {"configurable": {"thread_id": "t"}}
    try:
        if face == "sync":
            graph.invoke({"notes": []}, config)
        else:
            asyncio.run(graph.ainvoke({"notes": []}, config))
        result = "finished"
    except Exception as exc:
        result = type(exc).__name__
    with open(out, "w") as f:
        json.dump(result, f)
    """
)


def wait_for(done: Any, what: str, child: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert child.poll() is None and time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("write", ["step 0 stored", "step 0 in flight"])
def test_a_process_frozen_past_its_lease_starts_no_effect_when_it_wakes(
    mongo_java_server_uri: str, tmp_path: Path, face: str, write: str
) -> None:
    """The freeze lands while the node waits to be woken; the step 0 checkpoint, written beside the node
    (``durability="async"``), is either stored by then or still to be sent. After the wake, the charge does not
    start, the run raises ``RunLockLostError`` and its process exits, and no checkpoint is written after the
    freeze: one still to be sent at the freeze is refused too.

    The node waits for the parent's mark of the thaw, not for a gap in its own clock: a freeze that fell between
    two of its clock readings went unseen, and the node spun on after the wake, never reaching the charge."""
    from pymongo import MongoClient

    db_name, out = f"t_sigstop_{os.getpid()}", tmp_path / "result.json"
    root = Path(__file__).resolve().parents[1]
    held_step, before = ("none", [-1, 0]) if write == "step 0 stored" else ("0", [-1])
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, mongo_java_server_uri, db_name, str(out), str(LEASE), face, held_step],
        cwd=root,
        env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    client = MongoClient(mongo_java_server_uri)
    checkpoints = client[db_name]["checkpoints"]

    def steps() -> list[int]:
        return sorted(d["metadata"]["step"] for d in checkpoints.find({"thread_id": "t", "checkpoint_ns": ""}))

    try:
        wait_for(lambda: Path(str(out) + ".ready").exists(), "the child never reached its node", child)
        wait_for(lambda: steps() == before, f"the child never stored steps {before}", child)
        child.send_signal(signal.SIGSTOP)
        time.sleep(LEASE + 0.5)
        with RunLocks(client, db_name=db_name, lease_seconds=60, wait_seconds=5).hold(["t"]) as held:
            assert held.thread_ids == ["t"]  # the lease expired: another worker took the lock (fence 2)
            Path(str(out) + ".thawed").touch()
            child.send_signal(signal.SIGCONT)
            assert child.wait(60) == 0
        assert json.loads(out.read_text()) == "RunLockLostError"
        assert not Path(str(out) + ".charged").exists()  # the charge never started after the thaw
        assert Path(str(out) + ".looked").exists() == (write == "step 0 stored")  # nor the held write's lookup
        assert steps() == before  # nothing written after the freeze, the held step 0 included
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGCONT)
            child.kill()
        client.drop_database(db_name)
        client.close()


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_lapsed_holder_writes_no_checkpoint_and_no_pending_writes(make_platform: Any, face: str) -> None:
    """The saver's own guard, without a graph: under a holding whose lease lapsed by its clock, nothing is sent."""
    from langgraph.checkpoint.base import empty_checkpoint

    platform = make_platform()
    saver = platform.checkpointer
    holding = HeldLock("t", "me", 1, LEASE, since=time.monotonic() - 2 * LEASE)
    held = CallLocks(platform.run_locks)
    held.holdings.append(holding)
    conf = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    with held.mark():
        with pytest.raises(RunLockLostError):
            if face == "sync":
                saver.put(conf, empty_checkpoint(), {}, {})
            else:
                await saver.aput(conf, empty_checkpoint(), {}, {})
        with pytest.raises(RunLockLostError):
            written = {"configurable": {**conf["configurable"], "checkpoint_id": "c1"}}
            if face == "sync":
                saver.put_writes(written, [("notes", 1)], "task")
            else:
                await saver.aput_writes(written, [("notes", 1)], "task")
    db = saver.client[saver.db_name]
    assert db[saver.collections.checkpoints].count_documents({}) == 0  # nor its thread's summary
    assert db[saver.collections.writes].count_documents({}) == 0
    saver.put(conf, empty_checkpoint(), {}, {})  # outside the run that held it: written, with the summary
    assert db[saver.collections.checkpoints].count_documents({}) == 2


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_an_effect_whose_claim_outlived_the_lease_does_not_start_and_runs_on_resume(
    make_platform: Any, monkeypatch: pytest.MonkeyPatch, face: str
) -> None:
    """The stall falls between the effect's first check and its start (its claim answered late): the effect does
    not start, and its claim is freed as one that never ran, so the resume runs it, at_most_once as it is."""
    platform, paid = make_platform(run_lease_seconds=LEASE), []
    stuck_renewals(monkeypatch, 3 * LEASE)
    original = JournalPlans._claim

    def slow_claim(self: Any, call: Any, where: Any) -> Any:
        claimed = yield from original(self, call, where)
        if call.name == "charge" and not paid:
            yield Sleep(2 * LEASE)  # the claim's reply comes back after the lease ended
        return claimed

    monkeypatch.setattr(JournalPlans, "_claim", slow_claim)

    @effect(kind="payment", name="charge", at_most_once=True)
    def charge(cents: int) -> str:
        paid.append(cents)
        return "charged"

    @effect(kind="payment", name="charge", at_most_once=True)
    async def acharge(cents: int) -> str:
        paid.append(cents)
        return "charged"

    def node(s: Notes) -> Notes:
        return {"notes": [charge(100)]}

    async def anode(s: Notes) -> Notes:
        return {"notes": [await acharge(100)]}

    builder = StateGraph(Notes)
    builder.add_node("n", node if face == "sync" else anode)
    builder.add_edge(START, "n")
    with pytest.raises(RunLockLostError, match="'t'"):
        if face == "sync":
            platform.compile(builder).invoke({"notes": []}, config("t"))
        else:
            await platform.compile(builder).ainvoke({"notes": []}, config("t"))
    assert paid == []
    [entry] = platform.journal.entries("t")
    assert (entry["status"], entry["not_run"]) == ("started", True)
    monkeypatch.undo()
    graph = make_platform(run_lease_seconds=30).compile(builder)
    result = graph.invoke(None, config("t")) if face == "sync" else await graph.ainvoke(None, config("t"))
    assert result["notes"] == ["charged"] and paid == [100]  # run once, not EffectOutcomeUnknownError


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_run_longer_than_its_lease_whose_renewals_succeed_goes_on(make_platform: Any, face: str) -> None:
    platform, paid = make_platform(run_lease_seconds=1.5), []
    if face == "sync":
        result = stalled_graph(platform, paid, lambda: time.sleep(4.0), sync=True).invoke({"notes": []}, config("t"))
    else:
        result = await stalled_graph(platform, paid, lambda: asyncio.sleep(4.0)).ainvoke({"notes": []}, config("t"))
    assert result["notes"] == ["charged"] and paid == [100]
    assert max(stored_steps(platform)) == 1


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_renewal_stalled_by_a_real_proxy_starts_no_effect_after_its_lease(
    mongo_java_server_uri: str, toxiproxy_server: Any, face: str
) -> None:
    """The run lock talks to mongo-java-server through toxiproxy; once the run holds the lock, a ``timeout`` toxic
    swallows every byte on that connection (no reply, no close): the renewals hang, the holder's own clock runs
    out, and the charge after the stall never starts."""
    import uuid
    from urllib.parse import urlparse

    from pymongo import AsyncMongoClient, MongoClient

    from langgraph_durable_mongodb.platform import DurablePlatform

    upstream = urlparse(mongo_java_server_uri)
    name = f"lock_{uuid.uuid4().hex[:8]}"
    host, port = toxiproxy_server.proxy(upstream.hostname, upstream.port, name=name)
    db_name = f"t_{uuid.uuid4().hex[:10]}"
    client, async_client = MongoClient(mongo_java_server_uri), AsyncMongoClient(mongo_java_server_uri)
    proxied = dict(serverSelectionTimeoutMS=60_000, socketTimeoutMS=3_000)  # the release at the end gives up then
    lock_client, lock_async = MongoClient(f"mongodb://{host}:{port}", **proxied), AsyncMongoClient(f"mongodb://{host}:{port}", **proxied)
    platform = DurablePlatform(client, async_client=async_client, db_name=db_name, run_lease_seconds=LEASE)
    platform.run_locks = RunLocks(lock_client, async_client=lock_async, db_name=db_name, lease_seconds=LEASE)
    paid: list[int] = []

    def stall_the_lock_connection() -> None:
        toxiproxy_server.call("POST", f"/proxies/{name}/toxics", {
            "name": "stall", "type": "timeout", "stream": "downstream", "toxicity": 1.0, "attributes": {"timeout": 0},
        })
        time.sleep(2.5 * LEASE)  # the node itself goes on; only the lock's replies are gone

    async def astall() -> None:
        await asyncio.to_thread(stall_the_lock_connection)

    try:
        with pytest.raises(RunLockLostError, match="'t'"):
            if face == "sync":
                stalled_graph(platform, paid, stall_the_lock_connection, sync=True).invoke({"notes": []}, config("t"))
            else:
                await stalled_graph(platform, paid, astall).ainvoke({"notes": []}, config("t"))
        assert paid == []
        assert max(stored_steps(platform)) <= 0
    finally:
        toxiproxy_server.call("DELETE", f"/proxies/{name}")
        client.drop_database(db_name)
        for c in (client, lock_client):
            c.close()
        for c in (async_client, lock_async):
            await c.close()
