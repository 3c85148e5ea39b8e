"""What the journal costs in commands, and how it counts visits in ``replays``.

A recorded effect costs 2 commands (the visit, an upsert that claims the new
position; the record), a replayed one 1 (the visit). Offline, the requests a
face executes are counted by wrapping its ``execute``; on the real server, the
wire commands on the journal's collection, seen by a pymongo
``CommandListener`` on clients made here. Both are named as on the wire.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pymongo import AsyncMongoClient, MongoClient, monitoring
from pymongo.errors import DuplicateKeyError

from langgraph_durable_mongodb.errors import EffectOutcomeUnknownError
from langgraph_durable_mongodb.journal import ActivityJournal, EffectCall, EffectPosition

from .clients import make_client, offline, on_servers, tier_uri
from .journal_helpers import Counter, JournalFace

POS = EffectPosition("t1", "agent/1", "work", "1", "1")
SEARCH = EffectCall("tool", "search", input={"q": "weather"})
COLLECTION = "activity_journal"
#: The wire command of each request the journal sends.
WIRE = {"Find": "find", "FindOneAndUpdate": "findAndModify", "UpdateMany": "update", "FencedUpdate": "update", "InsertMany": "insert"}
COUNTED_KINDS = ["mongomock", "mongomock_motor", *on_servers("pymongo"), *on_servers("pymongo_async"), *on_servers("motor")]


class Listener(monitoring.CommandListener):
    def __init__(self, db_name: str, commands: list[str]) -> None:
        self.db_name, self.commands = db_name, commands

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.database_name == self.db_name and event.command.get(event.command_name) == COLLECTION:
            self.commands.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def count_requests(face: JournalFace, commands: list[str]) -> None:
    """Offline: append the wire name of each database request the face executes."""
    io = face.journal._async_io if face.is_async else face.journal._sync_io  # noqa: SLF001
    inner = io.execute

    def note(request: Any) -> None:
        if getattr(request, "collection", None) == COLLECTION:
            commands.append(WIRE[type(request).__name__])

    async def aexecute(request: Any) -> Any:
        note(request)
        return await inner(request)

    def execute(request: Any) -> Any:
        note(request)
        return inner(request)

    io.execute = aexecute if face.is_async else execute


@pytest.fixture(params=COUNTED_KINDS)
async def counted(request: pytest.FixtureRequest) -> AsyncIterator[tuple[JournalFace, list[str]]]:
    """A journal face, and the commands it sends on its collection (cleared after setup)."""
    kind, commands, uri = request.param, [], None
    db_name = f"t_{uuid.uuid4().hex[:16]}"
    if kind.startswith("mongomock"):
        client = make_client(kind, None)
    else:
        uri = tier_uri(request)
        listener = Listener(db_name, commands)
        if kind == "motor":
            from motor.motor_asyncio import AsyncIOMotorClient

            client = AsyncIOMotorClient(uri, event_listeners=[listener])
        else:
            client = (MongoClient if kind == "pymongo" else AsyncMongoClient)(uri, event_listeners=[listener])

    def make(**options: Any) -> ActivityJournal:
        return ActivityJournal(client, db_name=db_name, **options)

    face = JournalFace(make(), kind, client[db_name], make)
    await face.call("setup")
    if kind.startswith("mongomock"):
        count_requests(face, commands)
    commands.clear()
    yield face, commands
    if kind == "pymongo_async":
        await client.close()
    elif kind in ("pymongo", "motor"):
        client.close()
    if uri is not None:
        with MongoClient(uri) as admin:
            admin.drop_database(db_name)


def take(commands: list[str]) -> list[str]:
    taken = list(commands)
    commands.clear()
    return taken


async def entry(face: JournalFace) -> dict[str, Any]:
    [doc] = await face.raw({"chunk": 0})
    return doc


async def test_a_recorded_effect_costs_2_commands_and_a_replay_1(counted: tuple[JournalFace, list[str]]) -> None:
    face, commands = counted
    count = Counter()
    assert await face.run(SEARCH, lambda: count("sunny"), POS) == "sunny"
    assert take(commands) == ["findAndModify", "update"]
    for _ in range(2):
        assert await face.run(SEARCH, lambda: count("rain"), POS) == "sunny"
        assert take(commands) == ["findAndModify"]
    assert count.n == 1
    doc = await entry(face)
    assert (doc["status"], doc["attempts"], doc["replays"]) == ("completed", 1, 2)
    assert doc["visited_at"] >= doc["finished_at"]


async def test_a_take_over_of_a_failed_effect_costs_3_and_is_no_replay(counted: tuple[JournalFace, list[str]]) -> None:
    face, commands = counted

    def flaky() -> str:
        if count.n == 0:
            count()
            raise ValueError("timeout")
        return count("sunny")

    count = Counter()
    with pytest.raises(ValueError):
        await face.run(SEARCH, flaky, POS)
    assert take(commands) == ["findAndModify", "update"]
    assert "replays" not in await entry(face)
    commands.clear()  # the read just made
    assert await face.run(SEARCH, flaky, POS) == "sunny"
    assert take(commands) == ["findAndModify", "update", "update"]  # visit, take-over, record
    doc = await entry(face)
    assert (doc["status"], doc["attempts"], "replays" in doc) == ("completed", 2, False)


class Interrupted(BaseException):
    """Like a cancellation: the effect stops with its outcome unknown."""


async def test_a_position_left_started_is_settled_by_its_take_over_or_a_person(jface: JournalFace) -> None:
    def interrupted() -> None:
        raise Interrupted

    with pytest.raises(Interrupted):
        await jface.run(SEARCH, interrupted, POS)
    doc = await entry(jface)
    assert (doc["status"], doc["replays"]) == ("started", 1)  # its visit ran the effect but never recorded
    assert await jface.run(SEARCH, lambda: "sunny", POS) == "sunny"  # takes over at once: the lease was freed
    doc = await entry(jface)
    assert (doc["status"], doc["attempts"], "replays" in doc) == ("completed", 2, False)

    at_most_once = EffectCall("payment", "charge", at_most_once=True)
    other = EffectPosition("t1", "agent/1", "work", "1", "2")
    with pytest.raises(Interrupted):
        await jface.run(at_most_once, interrupted, other)
    with pytest.raises(EffectOutcomeUnknownError):
        await jface.run(at_most_once, Counter(), other)
    await jface.call("resolve", other, "charged")
    [doc] = await jface.raw({"effect_key": "2"})
    assert (doc["status"], doc["replays"]) == ("completed", 1)  # the visit that asked for a person


async def test_two_workers_claiming_a_new_position_at_once_run_it_once(jface: JournalFace) -> None:
    runs = Counter()

    async def body() -> str:
        runs()
        if jface.is_async:
            await asyncio.sleep(0.3)
        else:
            threading.Event().wait(0.3)
        return "sunny"

    if jface.is_async:
        results = await asyncio.gather(*(jface.run(SEARCH, body, POS) for _ in range(2)))
    else:
        start = threading.Barrier(2)

        def worker(_: int) -> Any:
            start.wait()
            return jface.journal.run(SEARCH, jface.fn(body), position=POS)

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(worker, range(2)))
    assert results == ["sunny", "sunny"] and runs.n == 1
    doc = await entry(jface)
    assert (doc["attempts"], doc["replays"]) == (1, 1)  # the other waited, then replayed


@offline
async def test_a_visit_that_loses_the_insert_race_replays_the_winner(
    jface: JournalFace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server retries a racing upsert itself; when one still fails on the unique index, the journal does."""
    winner = jface.variant()
    await winner.run(SEARCH, lambda: "the winner's", POS)
    import mongomock.collection

    upsert = mongomock.collection.Collection.find_one_and_update
    raised = []

    def lose_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not raised:
            raised.append(True)
            raise DuplicateKeyError("E11000 duplicate key error")
        return upsert(self, *args, **kwargs)

    monkeypatch.setattr(mongomock.collection.Collection, "find_one_and_update", lose_once)
    count = Counter()
    assert await jface.run(SEARCH, count, POS) == "the winner's"
    assert raised and count.n == 0
    assert (await entry(jface))["replays"] == 1
