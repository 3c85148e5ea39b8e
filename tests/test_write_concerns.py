"""The journal's and the run locks' writes wait for a majority of a replica set, whatever the client says (issue 34).

A journal record, a claim or a run lock that a primary alone acknowledged can be rolled back by a failover, and
the next run would then run a completed effect again. So every write of those two storage classes
(``schema.MAJORITY_WRITTEN``) goes out with ``w: "majority"`` (the client's ``wtimeout`` and ``j`` kept), even from
a client whose URI lowers it (``w=1``, ``w=0``); the checkpointer's writes keep the client's concern.

No replica set runs here: FerretDB and mongo-java-server are standalone servers, which take ``w: "majority"`` and
have no one to wait for. So these tests check the concern each write command carries on the wire (pymongo command
monitoring, sync and async clients, on both servers), and the concern of each collection object offline
(mongomock, mongomock_motor) and through ``from_conn_string``'s per-loop clients. That a majority-acknowledged
write survives a failover is MongoDB's guarantee, not tested here.
"""

from __future__ import annotations

import uuid
from typing import Any

import mongomock
import pytest
from mongomock_motor import AsyncMongoMockClient
from pymongo import AsyncMongoClient, MongoClient, monitoring

from langgraph_durable_mongodb import DurablePlatform

from .clients import on_servers, tier_uri, with_database
from .graphs import invoke, three_effects

WRITES = {"insert", "update", "delete", "findAndModify"}
MAJORITY = {"w": "majority"}


class WriteCommands(monitoring.CommandListener):
    """``(collection, writeConcern)`` of every write command on one database."""

    def __init__(self, db_name: str) -> None:
        self.db_name, self.seen = db_name, []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.database_name == self.db_name and event.command_name in WRITES:
            self.seen.append((event.command[event.command_name], dict(event.command.get("writeConcern") or {})))

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass

    def concerns(self) -> dict[str, list[dict]]:
        """Each collection written, and the distinct concerns its writes carried."""
        found: dict[str, list[dict]] = {}
        for coll, concern in self.seen:
            found.setdefault(coll, [])
            if concern not in found[coll]:
                found[coll].append(concern)
        return found


@pytest.fixture(params=on_servers("server"))
def server_uri(request: pytest.FixtureRequest) -> str:
    return tier_uri(request)


@pytest.mark.parametrize(("options", "client_concern"), [("w=1", {"w": 1}), ("w=1&wtimeoutMS=5000", {"w": 1, "wtimeout": 5000})], ids=["w1", "w1-wtimeout"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_journal_and_the_run_locks_write_with_majority_whatever_the_client_says(
    server_uri: str, options: str, client_concern: dict, mode: str
) -> None:
    db_name = f"t_{uuid.uuid4().hex[:12]}"
    listener = WriteCommands(db_name)
    uri = f"{with_database(server_uri, db_name)}?{options}" if "?" not in server_uri else f"{with_database(server_uri, db_name)}&{options}"
    client, async_client = MongoClient(uri, event_listeners=[listener]), AsyncMongoClient(uri, event_listeners=[listener])
    try:
        platform = DurablePlatform(client, async_client=async_client, db_name=db_name)
        await invoke(platform.compile(three_effects()), mode, {"notes": []}, "t")
        kept = {k: v for k, v in client_concern.items() if k != "w"}
        concerns = listener.concerns()
        assert concerns["activity_journal"] == concerns["thread_runs"] == [{**MAJORITY, **kept}]
        assert concerns["checkpoints"] == [client_concern]  # the client's, as it said
    finally:
        client.drop_database(db_name)
        client.close()
        await async_client.close()


def concern_of(io: Any, collection: str) -> dict:
    return io._coll(collection).write_concern.document  # noqa: SLF001


async def test_the_collections_are_given_their_concerns_offline() -> None:
    """mongomock keeps no concern of its own: the collection objects the interpreters write through carry them."""
    client = mongomock.MongoClient()
    platform = DurablePlatform(client, async_client=AsyncMongoMockClient(mock_mongo_client=client))
    await invoke(platform.compile(three_effects()), "sync", {"notes": []}, "t")
    await invoke(platform.compile(three_effects()), "async", {"notes": []}, "t")
    locks = platform.run_locks
    for io in (platform.journal._sync_io, platform.journal._async_io):  # noqa: SLF001
        assert concern_of(io, "activity_journal") == MAJORITY
    for io in (locks._sync_io, locks._async_io):  # noqa: SLF001
        assert concern_of(io, "thread_runs") == MAJORITY


@pytest.mark.parametrize("options", ["w=0", "w=1&journal=true&wtimeoutMS=100"])
def test_an_unacknowledged_or_lower_client_concern_is_raised_to_majority(options: str) -> None:
    """``w=0`` (which these servers do not take: they close the connection) on a client that never connects: the
    journal's and the run locks' collections wait for a majority, acknowledged; the checkpointer's keep the client's."""
    uri = f"mongodb://127.0.0.1:1/?{options}"
    client, async_client = MongoClient(uri, connect=False), AsyncMongoClient(uri, connect=False)
    platform = DurablePlatform(client, async_client=async_client)
    given = client.write_concern.document
    kept = {k: v for k, v in given.items() if k != "w"}
    assert platform.run_locks is not None
    for io in (platform.journal._sync_io, platform.journal._async_io):  # noqa: SLF001
        assert concern_of(io, "activity_journal") == {**MAJORITY, **kept} and io._coll("activity_journal").write_concern.acknowledged  # noqa: SLF001
    for io in (platform.run_locks._sync_io, platform.run_locks._async_io):  # noqa: SLF001
        assert concern_of(io, "thread_runs") == {**MAJORITY, **kept}
    for io in (platform.checkpointer._sync_io, platform.checkpointer._async_io):  # noqa: SLF001
        assert concern_of(io, "checkpoints") == given
    client.close()


async def test_the_per_loop_clients_of_a_uri_give_the_journal_majority_on_every_loop(server_uri: str) -> None:
    """``from_conn_string`` opens one ``AsyncMongoClient`` per event loop: the journal's collections carry majority
    on each, bound to that loop (a collection made on one loop and used on another would fail)."""
    db_name = f"t_{uuid.uuid4().hex[:12]}"
    uri = f"{with_database(server_uri, db_name)}?w=1" if "?" not in server_uri else f"{with_database(server_uri, db_name)}&w=1"
    try:
        async with DurablePlatform.from_conn_string(uri) as platform:
            await invoke(platform.compile(three_effects()), "async", {"notes": []}, "t")
            io = platform.journal._async_io  # noqa: SLF001
            assert concern_of(io, "activity_journal") == MAJORITY
            assert concern_of(platform.checkpointer._async_io, "checkpoints") == {"w": 1}  # noqa: SLF001
    finally:
        with MongoClient(server_uri) as admin:
            admin.drop_database(db_name)
