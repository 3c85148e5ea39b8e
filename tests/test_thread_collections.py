"""A thread's lifecycle reaches every collection declared per-thread, from any process's saver.

The journal declares its collection in the database's storage format document;
the checkpointer's ``delete_thread``/``copy_thread`` read the declarations, so a saver that built no journal
(the CLI, the web inspector, another service) deletes a thread's journal entries with its checkpoints, and a
thread id used again is not handed the old thread's recorded effects. The collections here are not the
default names, so nothing but the declarations can tell the saver of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from langgraph_durable_mongodb import ActivityJournal
from langgraph_durable_mongodb._plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb._plans.requests import InsertOne
from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.schema import CollectionNames
from langgraph_durable_mongodb.storage_format import format_document

from .graphs import run_probe
from .stores import Store

#: The journal's collection, under a name a saver with the defaults does not know.
RENAMED = CollectionNames(journal="effects")
DEFAULTS = CollectionNames()
FACES = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])


def platform_on(store: Store, names: CollectionNames = RENAMED) -> DurablePlatform:
    return DurablePlatform(store.client, async_client=store.async_client, db_name=store.db_name, collections=names)


def saver_on(store: Store) -> MongoDBCheckpointer:
    """A saver with the default names, as another process (the CLI) opens one."""
    return MongoDBCheckpointer(store.client, async_client=store.async_client, db_name=store.db_name)


async def call(saver: MongoDBCheckpointer, method: str, is_async: bool, *args: Any) -> Any:
    return await getattr(saver, f"a{method}")(*args) if is_async else getattr(saver, method)(*args)


def held(store: Store, names: CollectionNames, thread_id: str) -> dict[str, int]:
    """How many documents of the thread the journal's collection holds."""
    return {c: store.db[c].count_documents({"thread_id": thread_id}) for c in (names.journal,)}


@FACES
async def test_a_saver_of_another_process_deletes_the_declared_collections(store: Store, is_async: bool) -> None:
    calls: list[str] = []
    await run_probe(platform_on(store), "gone", calls, is_async)
    await run_probe(platform_on(store), "kept", calls, is_async)
    assert held(store, RENAMED, "gone") == {"effects": 1}
    await call(saver_on(store), "delete_thread", is_async, "gone")
    assert held(store, RENAMED, "gone") == {"effects": 0}
    assert held(store, RENAMED, "kept") == {"effects": 1}  # nothing widened
    await run_probe(platform_on(store), "gone", calls, is_async)
    assert calls == ["gone", "kept", "gone"]  # the id used again runs its effect: no old outcome handed back


@FACES
async def test_a_saver_of_another_process_copies_the_declared_collections(store: Store, is_async: bool) -> None:
    calls: list[str] = []
    await run_probe(platform_on(store), "source", calls, is_async)
    await call(saver_on(store), "copy_thread", is_async, "source", "copy")
    assert held(store, RENAMED, "copy") == held(store, RENAMED, "source") == {"effects": 1}


@FACES
async def test_a_collection_declared_after_the_saver_checked_is_deleted_too(store: Store, is_async: bool) -> None:
    saver, calls = saver_on(store), []
    await call(saver, "get_tuple", is_async, {"configurable": {"thread_id": "other", "checkpoint_ns": ""}})
    assert store.db.durable_metadata.find_one()["thread_collections"] == list(DEFAULTS.per_thread[:3])
    await run_probe(platform_on(store), "late", calls, is_async)
    await call(saver, "delete_thread", is_async, "late")
    assert held(store, RENAMED, "late") == {"effects": 0}


@FACES
async def test_a_database_stamped_before_declarations_is_read_as_holding_every_default(store: Store, is_async: bool) -> None:
    calls: list[str] = []
    await run_probe(platform_on(store, DEFAULTS), "old", calls, is_async)
    store.db.durable_metadata.update_one({"_id": "storage_format"}, {"$unset": {"thread_collections": ""}})
    saver = saver_on(store)
    await call(saver, "delete_thread", is_async, "old")
    assert held(store, DEFAULTS, "old") == {"activity_journal": 0}
    assert store.db.durable_metadata.find_one()["thread_collections"] == list(DEFAULTS.held_before_declarations)


@FACES
async def test_the_declarations_are_stored_once_per_database(store: Store, is_async: bool) -> None:
    await run_probe(platform_on(store), "t", [], is_async)
    stamp = store.db.durable_metadata.find_one()
    assert stamp["thread_collections"] == ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "effects"]
    if store.commands:
        store.commands.seen.clear()
        await run_probe(platform_on(store), "t2", [], is_async)
        updates = [c for c in store.commands.seen if c[0] == "update" and c[1] == "durable_metadata"]
        assert updates == []  # a process declaring nothing new writes nothing to the stamp


@FACES
async def test_a_journal_built_on_a_saver_in_use_declares_its_collection(store: Store, is_async: bool) -> None:
    saver = saver_on(store)
    await call(saver, "get_tuple", is_async, {"configurable": {"thread_id": "other", "checkpoint_ns": ""}})
    journal = ActivityJournal.for_checkpointer(saver, collection="effects")  # shares the checked format
    await journal.asetup() if is_async else journal.setup()
    assert store.db.durable_metadata.find_one()["thread_collections"][-1] == "effects"


@FACES
async def test_a_database_another_process_stamped_first_gets_this_ones_declarations(store: Store, is_async: bool) -> None:
    """Two processes stamp an empty database at once: the one whose insert lost adds its collections to the winner's stamp."""
    check = platform_on(store).checkpointer.storage_format.check_plan
    io = AsyncInterpreter(store.async_client[store.db_name]) if is_async else SyncInterpreter(store.db)
    execute = io.execute

    def racing(request: Any) -> Any:
        if isinstance(request, InsertOne) and request.collection == "durable_metadata":
            store.db.durable_metadata.insert_one(format_document(DEFAULTS.per_thread[:3]))  # a bare saver won
        return execute(request)

    io.execute = racing
    await io.run(check()) if is_async else io.run(check())
    assert store.db.durable_metadata.find_one()["thread_collections"] == [*DEFAULTS.per_thread[:3], "effects"]
