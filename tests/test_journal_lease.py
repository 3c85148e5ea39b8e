"""Leases of the activity journal: heartbeats while an effect runs, and take-over from a dead owner on this host.

Leases here are short (1 s, renewed every 1/3 s) so that an effect "longer than its lease" takes about a second.
A renewal later than the lease gives the lease up, as it must, so the 2/3 s between a renewal and the lease's end
has to outlast the process's stalls: a garbage collection late in the full fast tier was measured at 213 ms, and a
0.3 s lease (tolerating 0.2 s) failed CI once. Renewals are counted by wrapping the face's ``execute``: a renewal
is the update that sets ``heartbeat_at``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from langgraph_durable_mongodb.storage.plans.requests import FencedUpdate
from langgraph_durable_mongodb.errors import EffectInProgressError, EffectOutcomeUnknownError
from langgraph_durable_mongodb.journal import ActivityJournal, EffectPosition, current_effect
from langgraph_durable_mongodb.storage.liveness import identity
from langgraph_durable_mongodb.storage.plans.lease import utcnow

from .clients import offline
from .journal_helpers import POS, SEARCH, Counter, JournalFace, linux_only, owned_entry

LEASE = 1.0  # renewed every 1/3 s


async def pause(face: JournalFace, seconds: float) -> None:
    """Sleep, also inside an effect body: blocking on a sync face (run inline), awaiting on an async one."""
    if face.is_async:
        await asyncio.sleep(seconds)
    else:
        time.sleep(seconds)


async def until(face: JournalFace, condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for ``condition``: polling keeps the tests right on a loaded machine, where fixed sleeps are not."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pause(face, 0.01)


async def settled(face: JournalFace, renewals: list[Any]) -> int:
    """How many renewals there were once an in-flight one had time to land; then a whole lease passes without one."""
    await pause(face, 0.05)
    count = len(renewals)
    await pause(face, LEASE)
    assert len(renewals) == count, "renewed after the effect ended"
    return count


def count_renewals(face: JournalFace) -> list[Any]:
    """The results of the face's lease renewals (the number of entries renewed), appended as they land."""
    io = face.journal._async_io if face.is_async else face.journal._sync_io  # noqa: SLF001
    inner, seen = io.execute, []

    def renewal(request: Any) -> bool:
        return isinstance(request, FencedUpdate) and "heartbeat_at" in request.update.get("$set", {})

    async def aexecute(request: Any) -> Any:
        result = await inner(request)
        if renewal(request):
            seen.append(result)
        return result

    def execute(request: Any) -> Any:
        result = inner(request)
        if renewal(request):
            seen.append(result)
        return result

    io.execute = aexecute if face.is_async else execute
    return seen


async def assert_held_by_a_live_worker(face: JournalFace, pos: EffectPosition = POS) -> None:
    """A second worker that will not wait finds the position busy: it neither takes it over nor runs the effect."""
    other = Counter()
    with pytest.raises(EffectInProgressError):
        await face.variant(wait_seconds=0).run(SEARCH, other, pos)
    assert other.n == 0


# -- scenarios, shared by the offline and the real-server tests ------------------------


async def check_a_long_effect_keeps_its_lease(jface: JournalFace) -> None:
    worker = jface.variant(lease_seconds=LEASE)
    renewals, ran = count_renewals(worker), Counter()

    async def long_effect() -> str:
        started = time.monotonic()
        ran()
        await until(worker, lambda: len(renewals) >= 4)
        assert time.monotonic() - started > LEASE  # without heartbeats the lease would have expired by now
        await assert_held_by_a_live_worker(jface)
        return "done"

    assert await worker.run(SEARCH, worker.fn(long_effect), POS) == "done"
    [doc] = await jface.raw()
    assert (doc["status"], doc["attempts"], ran.n) == ("completed", 1, 1)
    assert all(renewals) and doc["heartbeat_at"] <= doc["finished_at"]
    await settled(worker, renewals)


async def check_a_dead_owner_is_taken_over_at_once(jface: JournalFace, dead_pid: int) -> None:
    await jface.raw_insert(owned_entry(owner_pid=dead_pid))
    seen = []

    def rerun() -> str:
        info = current_effect()
        seen.append((info.attempt, info.idempotency_key))
        return "ran again"

    started = time.monotonic()
    assert await jface.variant(wait_seconds=30).run(SEARCH, rerun, POS) == "ran again"
    assert time.monotonic() - started < 10  # no waiting for the hour-long lease, nor for wait_seconds
    assert seen == [(2, POS.idempotency_key)]
    [doc] = await jface.raw()
    assert (doc["status"], doc["attempts"], doc["owner_pid"]) == ("completed", 2, os.getpid())


# -- heartbeats -------------------------------------------------------------------------


@offline
async def test_a_long_effect_keeps_its_lease(jface: JournalFace) -> None:
    await check_a_long_effect_keeps_its_lease(jface)


@offline
async def test_renewals_stop_when_the_effect_ends_and_short_effects_cost_none(jface: JournalFace) -> None:
    worker = jface.variant(lease_seconds=LEASE)
    renewals = count_renewals(worker)
    assert await worker.run(SEARCH, lambda: "quick", POS) == "quick"
    assert renewals == []  # shorter than the interval: no renewal I/O at all

    async def for_a_while() -> str:
        await until(worker, lambda: len(renewals) >= 2)
        return "slow"

    slow = EffectPosition("t1", "agent/1", "work", "1", "2")
    assert await worker.run(SEARCH, worker.fn(for_a_while), slow) == "slow"
    assert await settled(worker, renewals) >= 2


@offline
async def test_a_fenced_out_owner_stops_renewing(jface: JournalFace) -> None:
    worker = jface.variant(lease_seconds=LEASE)
    renewals = count_renewals(worker)
    taken_until = utcnow() + timedelta(hours=1)

    async def overtaken() -> str:
        await until(worker, lambda: len(renewals) >= 1)
        await jface.raw_update({"chunk": 0}, {"$set": {"owner": "new-owner", "lease_until": taken_until}, "$inc": {"fence": 1}})
        await until(worker, lambda: 0 in renewals)  # the next renewal finds the fence closed ...
        await pause(worker, LEASE)  # ... and is the last one
        return "stale"

    assert await worker.run(SEARCH, worker.fn(overtaken), POS) == "stale"
    assert renewals[-1] == 0 and renewals.count(0) == 1
    [doc] = await jface.raw()
    assert (doc["owner"], doc["status"], doc["lease_until"]) == ("new-owner", "started", taken_until)


@offline
async def test_a_stream_renews_its_lease_while_it_is_consumed(jface: JournalFace) -> None:
    worker = jface.variant(lease_seconds=LEASE)
    renewals = count_renewals(worker)
    parts = ["a", "b", "c"]

    def chunks() -> Iterator[str]:
        yield from parts

    async def achunks() -> AsyncIterator[str]:
        for part in parts:
            yield part

    replay = lambda outcome: [outcome]  # noqa: E731
    if jface.is_async:
        stream = worker.journal.arun_stream(SEARCH, achunks, "".join, replay, position=POS)
    else:
        stream = _aiter(worker.journal.run_stream(SEARCH, chunks, "".join, replay, position=POS))
    got = []
    async for item in stream:
        got.append(item)
        await until(jface, lambda: len(renewals) >= 2 * len(got))  # the caller takes its time with each item
        if len(got) == 2:
            await assert_held_by_a_live_worker(jface)
    assert got == parts and await settled(jface, renewals) >= 6
    [doc] = await jface.raw()
    assert (doc["status"], doc["outcome"]["preview"]) == ("completed", "abc")


async def _aiter(items: Iterator[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


# -- a dead owner on this host ------------------------------------------------------------


@linux_only
@offline
async def test_a_dead_owner_on_this_host_is_taken_over_at_once(jface: JournalFace, dead_pid: int) -> None:
    await check_a_dead_owner_is_taken_over_at_once(jface, dead_pid)


@linux_only
@offline
async def test_an_owner_pid_reused_by_a_later_process_counts_as_dead(jface: JournalFace) -> None:
    start = identity()["owner_process"]["start"]
    await jface.raw_insert(owned_entry(**{"owner_process.start": start - 1}))  # our pid, an earlier process
    assert await jface.variant(wait_seconds=30).run(SEARCH, lambda: "ran again", POS) == "ran again"


@linux_only
@offline
async def test_at_most_once_with_a_dead_owner_asks_a_person_at_once(jface: JournalFace, dead_pid: int) -> None:
    await jface.raw_insert(owned_entry(owner_pid=dead_pid))
    count = Counter()
    started = time.monotonic()
    with pytest.raises(EffectOutcomeUnknownError, match=rf"process \({dead_pid} on .*\) exited") as caught:
        await jface.variant(wait_seconds=30).run(replace(SEARCH, at_most_once=True), count, POS)
    assert time.monotonic() - started < 10 and count.n == 0
    assert caught.value.idempotency_key == POS.idempotency_key


@offline
@pytest.mark.parametrize(
    "owner",
    [
        pytest.param({}, id="this-process"),
        pytest.param({"owner_host": "elsewhere", "owner_pid": "DEAD"}, id="another-host"),
        pytest.param({"owner_process.pid_ns": "pid:[1]", "owner_pid": "DEAD"}, id="another-container"),
        pytest.param({"owner_process": None, "owner_pid": "DEAD"}, id="no-process-identity"),
    ],
)
async def test_an_owner_that_may_be_alive_keeps_its_lease(jface: JournalFace, owner: dict, dead_pid: int) -> None:
    fields = {k: dead_pid if v == "DEAD" else v for k, v in owner.items()}
    if "owner_process" not in identity() and fields:
        pytest.skip("no /proc: every owner may be alive")
    await jface.raw_insert(owned_entry(**fields))
    count = Counter()
    with pytest.raises(EffectInProgressError):
        await jface.variant(wait_seconds=0.1).run(SEARCH, count, POS)
    assert count.n == 0


# -- the real-server tier ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["pymongo", "pymongo_async"])
async def test_heartbeats_and_dead_owners_on_a_real_server(
    mongodb_uri: str, server_db_name: str, kind: str, dead_pid: int
) -> None:
    from pymongo import AsyncMongoClient, MongoClient

    client: Any = MongoClient(mongodb_uri) if kind == "pymongo" else AsyncMongoClient(mongodb_uri)

    def make(**options: Any) -> ActivityJournal:
        return ActivityJournal(client, db_name=server_db_name, **{"wait_seconds": 2.0, **options})

    face = JournalFace(make(), kind, client[server_db_name], make)
    try:
        await face.call("setup")
        await check_a_long_effect_keeps_its_lease(face)
        cleared = face.db[face.journal.collection].delete_many({})
        if face.is_async:
            await cleared
        if "owner_process" in identity():
            await check_a_dead_owner_is_taken_over_at_once(face, dead_pid)
    finally:
        closed = client.close()
        if face.is_async:
            await closed


# -- the idempotency key a re-execution keeps ----------------------------------------------------------


@offline
async def test_a_take_over_keeps_the_key_the_entry_was_first_claimed_under(jface: JournalFace) -> None:
    """The key is fixed when the entry is first claimed: a re-execution after its worker died passes the system it
    calls the same key, even when the position's digest is another one (an entry written by an older format)."""
    await jface.raw_insert(owned_entry(lease_seconds=-1, idempotency_key="ik-first-claimed"))
    seen: list[str] = []

    async def body() -> str:
        seen.append(current_effect().idempotency_key)
        return "ran again"

    assert await jface.run(SEARCH, jface.fn(body), POS) == "ran again"
    [doc] = await jface.raw()
    assert seen == ["ik-first-claimed"] and doc["idempotency_key"] == "ik-first-claimed" != POS.idempotency_key


@offline
async def test_an_outcome_unknown_names_the_key_the_entry_was_first_claimed_under(jface: JournalFace) -> None:
    await jface.raw_insert(owned_entry(lease_seconds=-1, idempotency_key="ik-first-claimed"))
    with pytest.raises(EffectOutcomeUnknownError, match="ik-first-claimed") as caught:
        await jface.run(replace(SEARCH, at_most_once=True), Counter(), POS)
    assert caught.value.idempotency_key == "ik-first-claimed"
