"""The run lock's guards, one by one (``src/runs/run_lock.py``): the fence, the take-over rule, the lease.

Races are driven step by step: run X's acquire plan until it yields its
take-over request, let another run renew, release or take the lock in
between, then send X's request. Each test fails when the guard it names is
removed from the plans. Every test runs on both faces (``kind``: the sync face,
the async face) and on both tiers (``make_platform``: embedded mongomock, and
the real server through ``mongodb_uri``); the interleavings are explicit, so a
server whose conditional updates are atomic is not what they rely on.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from pymongo.errors import AutoReconnect
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import DurableMongoError, RunLockLostError, ThreadBusyError
from langgraph_durable_mongodb.runs import run_lock
from langgraph_durable_mongodb.storage.plans.requests import FencedUpdate, FindOneAndUpdate, InsertOne, Raised, Returned, Try
from langgraph_durable_mongodb.storage.plans import lease
from langgraph_durable_mongodb.storage.plans.lease import utcnow
from langgraph_durable_mongodb.runs.run_lock import RELEASED, CallLocks, HeldLock, RunLocks, check_held

from .graphs import Notes, config

KINDS = ["sync", "async"]


class Face:
    """The run locks' sync or async face, behind one ``await``-able API."""

    def __init__(self, locks: RunLocks, kind: str) -> None:
        self.locks, self.kind = locks, kind

    async def execute(self, request: Any) -> Any:
        if self.kind == "sync":
            return self.locks._sync_face().execute(request)
        return await (await self.locks._async_face()).execute(request)

    async def run(self, plan: Any) -> Any:
        return await Stepped(plan, self).finish()

    async def acquire(self, thread_id: str = "t") -> CallLocks:
        if self.kind == "sync":
            return self.locks.acquire([thread_id])
        return await self.locks.aacquire([thread_id])

    async def release(self, held: CallLocks) -> None:
        if self.kind == "sync":
            held.release()
        else:
            await held.arelease()

    async def renew(self, holding: HeldLock) -> bool:
        return await self.run(self.locks._renew_plan(holding))

    async def release_holding(self, holding: HeldLock) -> None:
        """Release what a hand-driven acquire plan returned, as ``CallLocks.release`` would."""
        held = CallLocks(self.locks)
        held.holdings.append(holding)
        await self.release(held)


_SENT = object()


class Stepped:
    """A plan run one request at a time, so a test can act between two of its requests."""

    def __init__(self, plan: Any, face: Face) -> None:
        self.plan, self.face = plan, face
        self.request = next(plan)

    async def until(self, kind: type) -> Any:
        """Run the plan up to its next request of type ``kind`` (sent as it is, or in a ``Try``); returns that
        request, not yet sent."""
        while not isinstance(getattr(self.request, "request", self.request), kind):
            self.request = self.plan.send(await self.face.execute(self.request))
        return getattr(self.request, "request", self.request)

    async def finish(self, result: Any = _SENT) -> Any:
        """Go on to the end (answering the pending request with ``result`` if given); returns the plan's value."""
        try:
            if result is not _SENT:
                self.request = self.plan.send(Returned(result) if isinstance(self.request, Try) else result)
            while True:
                self.request = self.plan.send(await self.face.execute(self.request))
        except StopIteration as stop:
            return stop.value


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def locks(make_platform: Any) -> RunLocks:
    """Run locks that never wait for a live holder (``wait_seconds=0``) and renew every 10 s (not in a test)."""
    platform = make_platform(run_wait_seconds=0)
    platform.run_locks.setup()
    return platform.run_locks


@pytest.fixture
def face(locks: RunLocks, kind: str) -> Face:  # overrides tests/clients.py's `face` here
    return Face(locks, kind)


def lock_doc(locks: RunLocks, thread_id: str = "t") -> dict[str, Any]:
    return locks._sync_face().db[locks.collection].find_one({"thread_id": thread_id}, {"_id": 0})


def stall(locks: RunLocks, seconds: float = 1.0, thread_id: str = "t") -> None:
    """Let the holder's lease run out, as a stall longer than the lease would: ``lease_until`` ``seconds`` ago."""
    locks._sync_face().db[locks.collection].update_one(
        {"thread_id": thread_id}, {"$set": {"lease_until": utcnow() - timedelta(seconds=seconds)}}
    )


async def test_a_take_over_loses_when_another_run_took_the_lock_in_between(face: Face, locks: RunLocks) -> None:
    stalled = await face.acquire()
    stall(locks)
    x = Stepped(locks._acquire_plan("t"), face)
    take = await x.until(FencedUpdate)  # X read the expired lock and decided to take it over...
    assert take.filter == {"thread_id": "t", "fence": 1, "lease_until": lock_doc(locks)["lease_until"]}
    y = await face.acquire()  # ...but Y took it over first
    assert await face.execute(take) is False  # X's update names a state that is gone
    with pytest.raises(ThreadBusyError):  # X reads again and finds Y's live lock
        await x.finish(False)
    assert lock_doc(locks)["owner"] == y.holdings[0].owner and lock_doc(locks)["fence"] == 2 == y.holdings[0].fence
    await face.release(stalled)
    await face.release(y)


async def test_a_take_over_loses_when_the_holder_renewed_in_between(
    face: Face, locks: RunLocks, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = await face.acquire()
    stall(locks)
    x = Stepped(locks._acquire_plan("t"), face)
    take = await x.until(FencedUpdate)  # by X's clock the lease has expired...
    with monkeypatch.context() as skew:  # ...by the holder's, 10 s behind, it has not: its renewal succeeds
        skew.setattr(lease, "utcnow", lambda: utcnow() - timedelta(seconds=10))
        assert await face.renew(holder.holdings[0]) is True
    assert await face.execute(take) is False  # the lease X decided on is not the lease now
    assert lock_doc(locks)["owner"] == holder.holdings[0].owner and lock_doc(locks)["fence"] == 1
    assert not holder.lost
    await face.release(holder)
    x.plan.close()


async def test_a_take_over_loses_when_the_lock_was_released_and_taken_again_in_between(
    face: Face, locks: RunLocks
) -> None:
    await face.release(await face.acquire())  # free, at fence 1
    locks._taken_before.clear()  # X is another process: it reads the lock first
    x = Stepped(locks._acquire_plan("t"), face)
    take = await x.until(FencedUpdate)
    assert take.filter == {"thread_id": "t", "fence": 1, "lease_until": RELEASED}
    await face.release(await face.acquire())  # Y took it and released it: free again, at fence 2
    locks._taken_before.clear()
    assert await face.execute(take) is False  # free as X read it, but not at the fence X read
    held = await x.finish(False)  # X reads again and takes it at fence 3, the fence it expects
    assert held.fence == lock_doc(locks)["fence"] == 3
    assert await face.renew(held) is True
    await face.release_holding(held)


async def test_of_two_runs_taking_one_free_lock_one_wins(face: Face, locks: RunLocks) -> None:
    x, y = Stepped(locks._acquire_plan("t"), face), Stepped(locks._acquire_plan("t"), face)
    first_x, first_y = await x.until(InsertOne), await y.until(InsertOne)  # no lock yet: both insert
    assert [await face.execute(first_x), await face.execute(first_y)] == [True, False]  # the unique index
    x_held = await x.finish(True)
    with pytest.raises(ThreadBusyError):
        await y.finish(False)
    await face.release_holding(x_held)

    x, y = Stepped(locks._acquire_plan("t"), face), Stepped(locks._acquire_plan("t"), face)
    # A lock this process took before: both try the released lock at once, unread; one update matches.
    take_x, take_y = await x.until(FindOneAndUpdate), await y.until(FindOneAndUpdate)
    assert take_x.filter == {"thread_id": "t", "owner": None}
    taken = [await face.execute(take_x), await face.execute(take_y)]
    assert taken[0] is not None and taken[1] is None
    x_held = await x.finish(taken[0])
    with pytest.raises(ThreadBusyError):
        await y.finish(None)
    assert x_held.fence == lock_doc(locks)["fence"] == 2
    await face.release_holding(x_held)

    locks._taken_before.clear()  # another process: it reads the lock first
    x, y = Stepped(locks._acquire_plan("t"), face), Stepped(locks._acquire_plan("t"), face)
    take_x, take_y = await x.until(FencedUpdate), await y.until(FencedUpdate)  # both read it free at fence 2
    assert [await face.execute(take_x), await face.execute(take_y)] == [True, False]
    x_held = await x.finish(True)
    with pytest.raises(ThreadBusyError):
        await y.finish(False)
    assert x_held.fence == lock_doc(locks)["fence"] == 3
    await face.release_holding(x_held)


async def test_a_renewal_fails_once_its_lease_expired_even_if_nobody_took_the_lock(
    face: Face, locks: RunLocks, caplog: pytest.LogCaptureFixture
) -> None:
    held = await face.acquire()
    stall(locks)
    with caplog.at_level(logging.WARNING, logger="langgraph_durable_mongodb.runs.run_lock"):
        assert await face.renew(held.holdings[0]) is False
    assert held.lost == ["t"]
    assert "lost the run lock of thread 't' (fence 1)" in caplog.text and "run_lease_seconds" in caplog.text
    assert lock_doc(locks)["lease_until"] < utcnow()  # not extended
    await face.release(held)


async def test_a_renewal_fails_once_another_run_took_the_lock_over(face: Face, locks: RunLocks) -> None:
    stalled = await face.acquire()
    stall(locks)
    y = await face.acquire()  # took the expired lock over: fence 2, a live lease
    before = lock_doc(locks)
    assert await face.renew(stalled.holdings[0]) is False
    assert stalled.lost == ["t"] and lock_doc(locks) == before  # Y's lease untouched
    assert await face.renew(y.holdings[0]) is True and not y.lost
    await face.release(y)
    await face.release(stalled)


async def test_a_release_after_a_take_over_leaves_the_new_holder_s_lock(face: Face, locks: RunLocks) -> None:
    stalled = await face.acquire()
    stall(locks)
    y = await face.acquire()
    before = lock_doc(locks)
    await face.release(stalled)  # the stalled run ends: its release must not free Y's lock
    assert lock_doc(locks) == before and lock_doc(locks)["owner"] == y.holdings[0].owner
    assert stalled.lost == ["t"]
    await face.release(y)
    assert lock_doc(locks)["owner"] is None and lock_doc(locks)["lease_until"] == RELEASED


async def test_the_fence_counts_every_acquisition_and_take_over(face: Face, locks: RunLocks) -> None:
    fences = []
    for _ in range(3):
        held = await face.acquire()
        fences.append((held.holdings[0].fence, lock_doc(locks)["fence"]))
        await face.release(held)
    stalled = await face.acquire()
    stall(locks)
    y = await face.acquire()
    fences += [(stalled.holdings[0].fence, 4), (y.holdings[0].fence, lock_doc(locks)["fence"])]
    assert fences == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    await face.release(y)
    await face.release(stalled)
    assert lock_doc(locks)["fence"] == 5  # releases do not count


async def test_check_held_raises_once_the_run_s_lock_was_lost(face: Face, locks: RunLocks) -> None:
    check_held()  # no lock held: nothing to check
    held = await face.acquire()
    with held.mark():
        check_held()
        check_held("t")
        stall(locks)
        assert await face.renew(held.holdings[0]) is False
        with pytest.raises(RunLockLostError) as caught:
            check_held("t")
        check_held("another-thread")  # only the lost thread's work is refused
        with pytest.raises(RunLockLostError):
            check_held()
    check_held("t")  # outside the run that held it
    error = caught.value
    assert isinstance(error, DurableMongoError) and error.thread_id == "t" and error.fence == 1
    assert "'t'" in str(error) and "run_lease_seconds" in str(error)
    await face.release(held)


def test_check_held_is_cheap_and_takes_thread_ids_as_langgraph_does() -> None:
    holding = HeldLock("7", "owner", 3, 30.0)
    held = CallLocks(object())  # type: ignore[arg-type]
    held.holdings.append(holding)
    with held.mark():
        check_held(7)
        holding.lose()
        with pytest.raises(RunLockLostError, match="fence 3"):
            check_held(7)


def take_over(runs: Any) -> None:
    """Another run takes the lock over (a new token, its owner, a live lease), unless it has already.

    Called until the holder notices: on FerretDB, whose updates are not atomic, a renewal at the same
    moment can write the holder's state back over it.
    """
    runs.update_one(
        {"thread_id": "t", "owner": {"$ne": "other"}},
        {"$inc": {"fence": 1}, "$set": {"owner": "other", "lease_until": utcnow() + timedelta(minutes=1)}},
    )


async def test_the_renewer_notices_a_lost_lock(make_platform: Any, kind: str, caplog: pytest.LogCaptureFixture) -> None:
    platform = make_platform(run_lease_seconds=0.3)  # renewed every 0.1 s
    locks, face = platform.run_locks, Face(platform.run_locks, kind)
    locks.setup()
    with caplog.at_level(logging.WARNING, logger="langgraph_durable_mongodb.runs.run_lock"):
        held = await face.acquire()
        deadline = time.monotonic() + 5
        while not held.lost and time.monotonic() < deadline:
            take_over(locks._sync_face().db[locks.collection])  # as a run deciding on a stale read would
            await asyncio.sleep(0.02)
    assert held.lost == ["t"]
    assert "lost the run lock of thread 't'" in caplog.text
    with held.mark(), pytest.raises(RunLockLostError):
        check_held("t")
    await face.release(held)
    assert lock_doc(locks)["owner"] == "other"


def lose_mid_run(platform: Any, lost: threading.Event) -> Any:
    """A graph whose node lets another run take its lock over, waits for the renewer to notice, then checks."""

    def node(s: Notes) -> Notes:
        runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            take_over(runs)
            try:
                check_held("t")  # what the journal calls before starting an effect
            except RunLockLostError:
                lost.set()
                raise
            time.sleep(0.02)
        return {"notes": ["not stopped"]}

    builder = StateGraph(Notes)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    return platform.compile(builder)


def test_a_node_of_a_sync_run_sees_its_lost_lock(make_platform: Any) -> None:
    platform = make_platform(run_lease_seconds=0.3)
    lost = threading.Event()
    with pytest.raises(RunLockLostError, match="'t'"):
        lose_mid_run(platform, lost).invoke({"notes": []}, config("t"))
    assert lost.is_set()


async def test_a_node_of_an_async_run_sees_its_lost_lock(make_platform: Any) -> None:
    platform = make_platform(run_lease_seconds=0.3)
    lost = threading.Event()
    with pytest.raises(RunLockLostError, match="'t'"):
        await lose_mid_run(platform, lost).ainvoke({"notes": []}, config("t"))
    assert lost.is_set()


def effect_after_losing(platform: Any, lost: threading.Event, paid: list) -> Any:
    """A graph whose node loses its run lock (another run takes it over), then starts a journaled payment."""
    from langgraph_durable_mongodb.journal import effect

    @effect(kind="payment", name="charge")
    def charge(cents: int) -> str:
        paid.append(cents)
        return "charged"

    def node(s: Notes) -> Notes:
        runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
        deadline = time.monotonic() + 5
        while not any(h.lost for h in run_lock.held_locks().values()) and time.monotonic() < deadline:
            take_over(runs)
            time.sleep(0.02)
        lost.set()
        return {"notes": [charge(100)]}

    builder = StateGraph(Notes)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    return platform.compile(builder)


def test_an_effect_does_not_start_once_its_run_lost_the_lock(make_platform: Any) -> None:
    platform, lost, paid = make_platform(run_lease_seconds=0.3), threading.Event(), []
    with pytest.raises(RunLockLostError, match="'t'"):
        effect_after_losing(platform, lost, paid).invoke({"notes": []}, config("t"))
    assert lost.is_set() and paid == []


async def test_an_async_effect_does_not_start_once_its_run_lost_the_lock(make_platform: Any) -> None:
    from langgraph_durable_mongodb.journal import effect

    platform, paid = make_platform(run_lease_seconds=0.3), []

    @effect(kind="payment", name="charge")
    async def charge(cents: int) -> str:
        paid.append(cents)
        return "charged"

    async def node(s: Notes) -> Notes:
        runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
        deadline = time.monotonic() + 5
        while not any(h.lost for h in run_lock.held_locks().values()) and time.monotonic() < deadline:
            take_over(runs)
            await asyncio.sleep(0.02)  # the renewal task runs meanwhile
        return {"notes": [await charge(100)]}

    builder = StateGraph(Notes)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    with pytest.raises(RunLockLostError, match="'t'"):
        await platform.compile(builder).ainvoke({"notes": []}, config("t"))
    assert paid == []


@pytest.mark.parametrize("unread", [False, True], ids=["inserted", "taken back unread"])
async def test_a_take_whose_reply_was_lost_after_it_was_applied_holds_the_lock(face: Face, locks: RunLocks, unread: bool) -> None:
    """The take was applied and its reply lost (a standalone server's replies are not retried): the lock, read again,
    is this run's. Without that read the run would fail holding the lock, and every later run wait out its lease."""
    if unread:
        await face.release(await face.acquire())  # this process ran the thread: its next take is one unread update
    x = Stepped(locks._acquire_plan("t"), face)
    take = await x.until(FindOneAndUpdate if unread else InsertOne)
    assert await face.execute(take)  # the server applied it...
    x.request = x.plan.send(Raised(AutoReconnect("connection closed")))  # ...and the reply was lost
    held = await x.finish()
    assert (held.owner, held.fence) == (lock_doc(locks)["owner"], lock_doc(locks)["fence"])
    assert await face.renew(held) is True
    await face.release_holding(held)


async def test_a_take_whose_reply_was_lost_before_it_was_applied_fails_the_run(face: Face, locks: RunLocks) -> None:
    x = Stepped(locks._acquire_plan("t"), face)
    await x.until(InsertOne)  # never sent
    x.request = x.plan.send(Raised(AutoReconnect("connection refused")))  # the plan reads the lock again
    with pytest.raises(AutoReconnect):
        await x.finish()
    assert lock_doc(locks) is None
