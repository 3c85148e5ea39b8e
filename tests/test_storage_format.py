"""Every database we write records its storage format; a newer or foreign one is refused before any write.

A database stamped by this package costs one ``find`` per platform (both faces share the check); a fresh
one costs two ``find``s and the stamp's ``insert``. A ``MongoDBSaver`` database (its collections share our
default names) and a newer format raise ``IncompatibleStorageError`` naming the fix, and nothing of the
database changes: documents, collections and indexes as they were, no write command on the wire.
"""

from __future__ import annotations

import io
import json
from typing import Any, TypedDict

import mongomock
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import ActivityJournal, IncompatibleStorageError
from langgraph_durable_mongodb.cli import EXIT_PROBLEM, main
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.storage.format import FORMAT_VERSION, format_document
from langgraph_durable_mongodb.storage.thread_summaries import NOT_SUMMARY

from .cli_helpers import mongod_command
from .clients import on_servers
from .stores import Store


class State(TypedDict, total=False):
    x: int


def builder() -> StateGraph:
    b = StateGraph(State)
    b.add_node("inc", lambda s: {"x": s.get("x", 0) + 1})
    b.add_edge(START, "inc")
    return b


def write_mongodbsaver_thread(store: Store) -> None:
    """A checkpoint written by langgraph-checkpoint-mongodb's own ``MongoDBSaver.put``."""
    saver = MongoDBSaver(store.client, db_name=store.db_name)
    saver.put({"configurable": {"thread_id": "old", "checkpoint_ns": ""}}, empty_checkpoint(), {"step": -1}, {})


CONFIG = {"configurable": {"thread_id": "t1"}}


async def first_use(platform: DurablePlatform, form: str, is_async: bool) -> Any:
    """The platform's first storage operation, in one of the forms a user starts with."""
    if form == "graph":
        graph = platform.compile(builder())
        return await graph.ainvoke({"x": 1}, CONFIG) if is_async else graph.invoke({"x": 1}, CONFIG)
    if form == "plain":
        graph = builder().compile(checkpointer=platform.checkpointer)
        return await graph.ainvoke({"x": 1}, CONFIG) if is_async else graph.invoke({"x": 1}, CONFIG)
    if form == "saver":
        saver, checkpoint = platform.checkpointer, empty_checkpoint()
        args = ({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, checkpoint, {"step": -1}, {})
        return await saver.aput(*args) if is_async else saver.put(*args)
    if form == "journal":
        journal = ActivityJournal(platform.checkpointer.client, async_client=platform.checkpointer.async_client, db_name=platform.checkpointer.db_name)
        return await journal.asetup() if is_async else journal.setup()
    assert form == "setup"
    return await platform.asetup() if is_async else platform.setup()


FORMS = ["graph", "plain", "saver", "journal", "setup"]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_fresh_database_is_stamped_with_the_format_version(store: Store, is_async: bool) -> None:
    assert await first_use(store.platform(), "graph", is_async) == {"x": 2}
    assert list(store.db.durable_metadata.find()) == [format_document(CollectionNames().per_thread)]
    assert format_document()["version"] == FORMAT_VERSION


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_our_unstamped_data_from_0_1_0_is_stamped_and_still_read(store: Store, is_async: bool) -> None:
    platform = store.platform()
    await first_use(platform, "graph", is_async)
    platform.run_locks.wait_releases(10)  # its run ended, its lock released (a run in flight would hold the upgrade back)
    store.db.durable_metadata.delete_many({})  # as 0.1.0 left it: our documents, no stamp
    graph = store.platform().compile(builder())
    state = await graph.aget_state(CONFIG) if is_async else graph.get_state(CONFIG)
    assert state.values == {"x": 2}
    assert list(store.db.durable_metadata.find()) == [format_document(CollectionNames().held_before_declarations)]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_newer_format_is_refused_before_any_write(store: Store, form: str, is_async: bool) -> None:
    store.db.durable_metadata.insert_one({**format_document(), "version": FORMAT_VERSION + 1})
    before = store.snapshot()
    if store.commands:
        store.commands.seen.clear()
    newer = FORMAT_VERSION + 1
    with pytest.raises(IncompatibleStorageError, match=rf"version {newer}, newer .* \(pip install -U langgraph-durable-mongodb\)") as raised:
        await first_use(store.platform(), form, is_async)
    assert raised.value.db_name == store.db_name and raised.value.found == f"version {newer}"
    assert store.snapshot() == before and store.wire_writes() == []


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_mongodbsaver_database_is_refused_naming_the_import(store: Store, form: str, is_async: bool) -> None:
    write_mongodbsaver_thread(store)
    before = store.snapshot()
    if store.commands:
        store.commands.seen.clear()
    with pytest.raises(IncompatibleStorageError) as raised:
        await first_use(store.platform(), form, is_async)
    command = f"langgraph-durable-mongodb --uri URI --db NEW_DB import-mongodbsaver --source-db {store.db_name}"
    assert "MongoDBSaver" in str(raised.value) and command in str(raised.value) and "another db_name" in str(raised.value)
    assert raised.value.found == "foreign: MongoDBSaver"
    assert store.snapshot() == before and store.wire_writes() == []
    assert "durable_metadata" not in store.db.list_collection_names()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_documents_no_one_we_know_wrote_are_refused(store: Store, is_async: bool) -> None:
    store.db.checkpoints.insert_one({"thread_id": "t", "payload": "someone else's"})
    before = store.snapshot()
    with pytest.raises(IncompatibleStorageError, match="not written by langgraph-durable-mongodb.*another db_name"):
        await first_use(store.platform(), "graph", is_async)
    assert store.snapshot() == before


@pytest.mark.server
@pytest.mark.parametrize("store", on_servers("server"), indirect=True)
async def test_the_format_check_costs_one_find_once_stamped_and_three_commands_the_first_time(store: Store) -> None:
    """Cost, for both faces of a platform together (they share one check): counted on the wire."""
    assert store.commands is not None

    def format_commands() -> list[tuple[str, str]]:
        return [
            (name, coll) for name, coll, query in store.commands.seen  # type: ignore[union-attr]
            if coll == "durable_metadata" or (coll == "checkpoints" and name == "find" and query == {"checkpoint_ns": NOT_SUMMARY})
        ]

    platform = store.platform()
    await first_use(platform, "graph", False)
    await first_use(platform, "graph", True)
    assert format_commands() == [("find", "durable_metadata"), ("find", "checkpoints"), ("insert", "durable_metadata")]
    store.commands.seen.clear()
    platform = store.platform()
    await first_use(platform, "graph", False)
    await first_use(platform, "graph", True)
    assert format_commands() == [("find", "durable_metadata")]


def doctor_format(client: Any, db_name: str) -> str:
    out = io.StringIO()
    main(["--db", db_name, "--json", "doctor"], client=client, out=out)
    return json.loads(out.getvalue())["format"]


async def test_doctor_reports_the_format(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    if store.commands is None:
        monkeypatch.setattr(mongomock.database.Database, "command", mongod_command, raising=False)
    client = store.client
    assert doctor_format(client, store.db_name) == "none yet"
    await first_use(store.platform(), "graph", False)
    assert doctor_format(client, store.db_name) == f"version {FORMAT_VERSION}"
    store.db.durable_metadata.delete_many({})
    assert doctor_format(client, store.db_name) == "unstamped (written by 0.1.0)"
    other = f"{store.db_name}_saver"
    MongoDBSaver(client, db_name=other).put(
        {"configurable": {"thread_id": "old", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {}
    )
    try:
        assert doctor_format(client, other) == "foreign: MongoDBSaver"
        out = io.StringIO()
        main(["--db", other, "doctor"], client=client, out=out)
        assert "format      foreign: MongoDBSaver\n" in out.getvalue()
        indexes_before = {name: sorted(ix["name"] for ix in client[other][name].list_indexes()) for name in client[other].list_collection_names()}
        assert main(["--db", other, "doctor", "--fix"], client=client, out=io.StringIO()) == EXIT_PROBLEM
        indexes_after = {name: sorted(ix["name"] for ix in client[other][name].list_indexes()) for name in client[other].list_collection_names()}
        assert indexes_after == indexes_before, "doctor --fix created our indexes in a MongoDBSaver database"
    finally:
        client.drop_database(other)


@pytest.mark.parametrize("version", [0, -1, 2.5, "2", True, None], ids=["0", "-1", "2.5", "'2'", "True", "missing"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_stamp_version_we_never_wrote_is_refused_before_any_write(
    store: Store, version: Any, is_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: a version 0 or -1 raised KeyError; True passed for 1 and ran an upgrade; 2.5 was called foreign."""
    await first_use(store.platform(), "saver", is_async)
    store.db.durable_metadata.update_one({"_id": "storage_format"}, {"$set": {"version": version}} if version is not None else {"$unset": {"version": ""}})
    before = store.snapshot()
    if store.commands:
        store.commands.seen.clear()
    with pytest.raises(IncompatibleStorageError, match=r"its version is .*, not an integer from 1 up; nothing was written.*\{\$set: \{version: 1\}\}") as refused:
        await first_use(store.platform(), "graph", is_async)
    assert refused.value.db_name == store.db_name and refused.value.found.startswith("malformed stamp: its version is")
    assert store.snapshot() == before and store.wire_writes() == []
    if store.commands is None:
        monkeypatch.setattr(mongomock.database.Database, "command", mongod_command, raising=False)
    assert doctor_format(store.client, store.db_name).startswith("malformed stamp: its version is")
    assert main(["--db", store.db_name, "doctor", "--fix", "--repair"], client=store.client, out=io.StringIO()) == EXIT_PROBLEM
    assert store.snapshot() == before  # doctor fixes and repairs nothing in a database it cannot trust


async def test_doctor_repairs_nothing_in_a_newer_format(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    if store.commands is None:
        monkeypatch.setattr(mongomock.database.Database, "command", mongod_command, raising=False)
    await first_use(store.platform(), "saver", False)
    store.db.checkpoints.delete_many({"checkpoint_ns": "#thread"})  # what a newer format may hold instead of summaries
    store.db.durable_metadata.update_one({"_id": "storage_format"}, {"$set": {"version": FORMAT_VERSION + 1}})
    before = store.snapshot()
    out = io.StringIO()
    assert main(["--db", store.db_name, "--json", "doctor", "--fix", "--repair"], client=store.client, out=out) == EXIT_PROBLEM
    assert json.loads(out.getvalue())["summaries"] is None and store.snapshot() == before
