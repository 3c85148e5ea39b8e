"""A thread's lifecycle reaches every collection declared per-thread, from any process's saver.

The journal declares its collection in the database's storage format document;
the checkpointer's ``delete_thread``/``copy_thread`` read the declarations, so a saver that built no journal
(the CLI, the web inspector, another service) deletes a thread's journal entries with its checkpoints, and a
thread id used again is not handed the old thread's recorded effects. The collections here are not the
default names, so nothing but the declarations can tell the saver of them.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph_durable_mongodb import ActivityJournal, IncompatibleStorageError, ThreadExistsError
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb.storage.plans.requests import DeleteMany, InsertMany, InsertOne
from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.storage.format import format_document

from .graphs import run_probe
from .stores import Store

#: The journal's collection, under a name a saver with the defaults does not know.
RENAMED = CollectionNames(journal="effects")
DEFAULTS = CollectionNames()
FACES = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])


def platform_on(store: Store, names: CollectionNames = RENAMED) -> DurablePlatform:
    return DurablePlatform(store.client, async_client=store.async_client, db_name=store.db_name, collections=names)


def saver_on(store: Store, **options: Any) -> MongoDBCheckpointer:
    """A saver with the default names, as another process (the CLI) opens one."""
    return MongoDBCheckpointer(store.client, async_client=store.async_client, db_name=store.db_name, **options)


async def call(saver: MongoDBCheckpointer, method: str, is_async: bool, *args: Any, **kwargs: Any) -> Any:
    return await getattr(saver, f"a{method}")(*args, **kwargs) if is_async else getattr(saver, method)(*args, **kwargs)


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


# -- issue 34: the stamp declares, the library decides ----------------------------------------------------------

#: Stamps of our format whose ``thread_collections`` would aim a thread's lifecycle where no thread lives, and
#: what the refusal says of each.
BAD_DECLARATIONS = {
    "an application's collection": ([*DEFAULTS.per_thread[:3], "orders", *DEFAULTS.per_thread[3:]], "holds none of the key indexes"),
    "$cmd before the journal": ([*DEFAULTS.per_thread[:3], "$cmd", *DEFAULTS.per_thread[3:]], r"holds a \$, which no collection"),
    "an empty name": ([*DEFAULTS.per_thread[:3], "", *DEFAULTS.per_thread[3:]], "an empty name is no collection"),
    "a NUL": ([*DEFAULTS.per_thread[:3], "a\x00b", *DEFAULTS.per_thread[3:]], "holds a NUL"),
    "a system collection": ([*DEFAULTS.per_thread, "system.views"], "is one of the server's system collections"),
    "the run locks": ([*DEFAULTS.per_thread, "thread_runs"], "holds none of the key indexes"),
    "a string": ("checkpoints", "its thread_collections is a str, not a list"),
    "an object": ({"checkpoints": 1}, "its thread_collections is a dict, not a list"),
    "non-strings": ([1, None], "1 is a int, not a collection name"),
}


async def thread_everywhere(store: Store, saver: MongoDBCheckpointer, is_async: bool, thread_id: str = "t") -> None:
    """One checkpoint of ``thread_id`` through ``saver``, an entry in the journal, a run lock, and a document of
    an application's ``orders`` collection with the same ``thread_id`` (it is not ours)."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    await call(saver, "put", is_async, config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    for coll in (*DEFAULTS.per_thread[3:], DEFAULTS.runs, "orders"):
        store.db[coll].insert_one({"thread_id": thread_id, "marker": coll})


def declare(store: Store, listed: Any) -> None:
    store.db.durable_metadata.update_one({"_id": "storage_format"}, {"$set": {"thread_collections": listed}})


#: What each thread operation is, called on a saver.
OPERATIONS = {
    "delete_thread": ("delete_thread", ("t",), {}),
    "copy_thread": ("copy_thread", ("t", "copy"), {}),
    "prune delete": ("prune", (["t"],), {"strategy": "delete"}),
    "sweep_expired": ("sweep_expired", (), {}),
}


@FACES
@pytest.mark.parametrize("stamp", BAD_DECLARATIONS)
async def test_a_stamp_declaring_what_we_could_not_have_made_is_refused_before_any_write(store: Store, is_async: bool, stamp: str) -> None:
    await thread_everywhere(store, saver_on(store), is_async)
    checked = saver_on(store)
    await call(checked, "get_tuple", is_async, {"configurable": {"thread_id": "t"}})  # checked the stamp before it changed
    listed, reason = BAD_DECLARATIONS[stamp]
    declare(store, listed)
    before = store.snapshot()
    if store.commands:
        store.commands.seen.clear()
    for saver in (checked, saver_on(store)):  # a saver of this process, and one of a process starting now
        with pytest.raises(IncompatibleStorageError, match=r"durable_metadata document \{_id: 'storage_format'\} cannot be trusted: .*" + reason) as refused:
            await call(saver, "delete_thread", is_async, "t")
        assert "nothing was written" in str(refused.value) and refused.value.found.startswith("malformed stamp: ")
    assert store.snapshot() == before and store.wire_writes() == []


@FACES
@pytest.mark.parametrize("operation", OPERATIONS)
async def test_no_thread_operation_reaches_an_application_collection_a_stamp_names(store: Store, is_async: bool, operation: str) -> None:
    await thread_everywhere(store, saver_on(store, ttl={"default_ttl": 1}), is_async)
    store.db.checkpoints.update_many({}, {"$set": {"expire_at": datetime(2000, 1, 1)}})  # expired: the sweep's
    declare(store, BAD_DECLARATIONS["an application's collection"][0])
    before = store.snapshot()
    method, args, kwargs = OPERATIONS[operation]
    with pytest.raises(IncompatibleStorageError, match=r"'orders' a per-thread collection.*\$pull: \{thread_collections: 'orders'\}"):
        await call(saver_on(store, ttl={"default_ttl": 1}), method, is_async, *args, **kwargs)
    assert store.snapshot() == before
    assert store.db.orders.count_documents({"thread_id": "t"}) == 1


@FACES
async def test_a_ttl_index_is_never_made_on_a_collection_a_stamp_names(store: Store, is_async: bool) -> None:
    declare_first = saver_on(store)
    await call(declare_first, "get_tuple", is_async, {"configurable": {"thread_id": "t"}})
    store.db.orders.insert_one({"thread_id": "t"})
    declare(store, BAD_DECLARATIONS["an application's collection"][0])
    with pytest.raises(IncompatibleStorageError):
        await call(saver_on(store, ttl={"default_ttl": 1}), "setup", is_async)
    assert sorted(store.db.orders.index_information()) == ["_id_"]


@FACES
async def test_a_collection_another_process_renamed_is_trusted_by_its_key_index_alone(store: Store, is_async: bool) -> None:
    """A default-named saver reaches a journal another process renamed only once that collection holds the
    journal's key index: the one listIndexes per name, per process, that trust costs."""
    await thread_everywhere(store, saver_on(store), is_async)
    store.db.effects.insert_one({"thread_id": "t", "marker": "effects"})
    declare(store, [*DEFAULTS.per_thread, "effects"])
    with pytest.raises(IncompatibleStorageError, match="'effects' a per-thread collection"):
        await call(saver_on(store), "delete_thread", is_async, "t")
    assert store.db.checkpoints.count_documents({"thread_id": "t"}) > 0  # nothing was deleted
    store.db.effects.create_index([("thread_id", 1), ("path", 1)], name="thread_effect_position")
    saver = saver_on(store)
    if store.commands:
        store.commands.seen.clear()
    await call(saver, "delete_thread", is_async, "t")
    assert {c: store.db[c].count_documents({"thread_id": "t"}) for c in (*DEFAULTS.per_thread, "effects")} == dict.fromkeys((*DEFAULTS.per_thread, "effects"), 0)
    await call(saver, "delete_thread", is_async, "t")
    if store.commands:
        assert [c for c in store.commands.seen if c[0] == "listIndexes"] == [("listIndexes", "effects", None)]


# -- issue 50: a declared collection that does not exist holds nothing to protect -------------------------------


@FACES
async def test_a_declared_collection_that_was_dropped_is_skipped_and_the_database_opens(store: Store, is_async: bool) -> None:
    """A test suite's teardown or an operator dropped a renamed journal the stamp declares: a default-named
    platform (with a TTL, whose setup reaches every per-thread collection) opens, runs and deletes threads, and
    neither recreates the dropped collection nor drops its declaration (its process may be about to create it)."""
    calls: list[str] = []
    await run_probe(platform_on(store), "old", calls, is_async)
    store.db.drop_collection("effects")
    platform = DurablePlatform(store.client, async_client=store.async_client, db_name=store.db_name, ttl={"default_ttl": 60})
    await run_probe(platform, "new", calls, is_async)
    assert calls == ["old", "new"] and store.db.activity_journal.count_documents({"thread_id": "new"}) == 1
    await call(platform.checkpointer, "delete_thread", is_async, "new")
    assert {c: store.db[c].count_documents({"thread_id": "new"}) for c in DEFAULTS.per_thread} == dict.fromkeys(DEFAULTS.per_thread, 0)
    assert "effects" not in store.db.list_collection_names()
    assert "effects" in store.db.durable_metadata.find_one({"_id": "storage_format"})["thread_collections"]


@FACES
async def test_a_declared_collection_that_exists_without_the_key_indexes_is_still_refused(store: Store, is_async: bool) -> None:
    """The same journal, its indexes dropped but its entries kept: it may be this library's, so it is refused as
    before (a thread deleted without it would hand a reused thread id the old thread's recorded effects)."""
    calls: list[str] = []
    probed = platform_on(store)
    await run_probe(probed, "old", calls, is_async)
    probed.run_locks.wait_releases(10)  # the run's lock is released in the background: released before the snapshot
    for index in set(store.db.effects.index_information()) - {"_id_"}:  # one by one: mongo-java-server's "*" fails
        store.db.effects.drop_index(index)
    before = store.snapshot()
    platform = DurablePlatform(store.client, async_client=store.async_client, db_name=store.db_name)
    with pytest.raises(IncompatibleStorageError, match="'effects' a per-thread collection.*holds none of the key indexes"):
        await call(platform.checkpointer, "delete_thread", is_async, "old")
    assert store.snapshot() == before


class Interrupted(Exception):
    """What cuts a thread operation short, at a chosen request."""


def interrupting(saver: MongoDBCheckpointer, is_async: bool, kind: type, at: int) -> list[str]:
    """Make the ``at``-th request of type ``kind`` (counted from 0) the saver runs raise ``Interrupted`` instead of
    running; returns the collections of the ``kind`` requests it ran (or was about to), in order."""
    io = saver._async_io if is_async else saver._sync_io  # noqa: SLF001
    execute, seen = io.execute, []

    def cut(request: Any) -> None:
        if isinstance(request, kind):
            seen.append(request.collection)
            if len(seen) == at + 1:
                raise Interrupted(request.collection)

    if is_async:

        async def aexecute(request: Any) -> Any:
            cut(request)
            return await execute(request)

        io.execute = aexecute
    else:

        def sexecute(request: Any) -> Any:
            cut(request)
            return execute(request)

        io.execute = sexecute
    return seen


def thread_holds(store: Store, thread_id: str) -> dict[str, int]:
    return {c: store.db[c].count_documents({"thread_id": thread_id}) for c in DEFAULTS.per_thread}


@FACES
async def test_delete_thread_cut_short_anywhere_leaves_no_journal_entry_without_its_checkpoints(store: Store, is_async: bool) -> None:
    """Journal first, checkpoints last: whatever delete a crash stops before, a thread still holding journal entries
    still holds its checkpoints (its id is not free to be used again), and the same call again completes it."""
    order: list[str] = []
    for at in range(len(DEFAULTS.per_thread)):
        await run_probe(platform_on(store, DEFAULTS), "gone", [], is_async)
        saver = saver_on(store)
        order = interrupting(saver, is_async, DeleteMany, at)
        with pytest.raises(Interrupted):
            await call(saver, "delete_thread", is_async, "gone")
        left = thread_holds(store, "gone")
        assert left["checkpoints"] > 0, left
        assert not left["activity_journal"] or left["checkpoints"], left
        order = order[:]
        await call(saver_on(store), "delete_thread", is_async, "gone")
        assert set(thread_holds(store, "gone").values()) == {0}
    assert order == ["activity_journal", "checkpoint_writes", "checkpoint_blobs", "checkpoints"]


@FACES
async def test_copy_thread_cut_short_anywhere_is_completed_by_the_same_call(store: Store, is_async: bool) -> None:
    """Journal first, checkpoints last, under a note naming the copy: the same call again completes a copy a crash
    stopped, and a copy of another source onto it is still refused."""
    await run_probe(platform_on(store, DEFAULTS), "source", [], is_async)
    whole = thread_holds(store, "source")
    order: list[str] = []
    for at in range(len(DEFAULTS.per_thread)):
        saver = saver_on(store, ttl={"default_ttl": 60})
        order = interrupting(saver, is_async, InsertMany, at)
        with pytest.raises(Interrupted):
            await call(saver, "copy_thread", is_async, "source", "copy")
        if at:  # something was copied: it is no other source's copy to go on with
            with pytest.raises(ThreadExistsError):
                await call(saver_on(store), "copy_thread", is_async, "other", "copy")
        sooner = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0) + timedelta(minutes=5)  # not expired yet
        for coll in DEFAULTS.per_thread:  # what the first try copied carries an older expiry than the next try's
            store.db[coll].update_many({"thread_id": "copy"}, {"$set": {"expire_at": sooner}})
        await call(saver_on(store, ttl={"default_ttl": 60}), "copy_thread", is_async, "source", "copy")
        assert thread_holds(store, "copy") == whole
        expiry = store.db.checkpoints.find_one({"thread_id": "copy"})["expire_at"]
        assert {d.get("expire_at") for c in DEFAULTS.per_thread for d in store.db[c].find({"thread_id": "copy"})} == {expiry}
        assert store.db.durable_metadata.count_documents({"_id": {"$ne": "storage_format"}}) == 0  # the note is gone
        await call(saver_on(store), "delete_thread", is_async, "copy")
    assert order == ["activity_journal", "checkpoint_writes", "checkpoint_blobs", "checkpoints"][: len(order)]
