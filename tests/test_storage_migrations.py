"""Every step of ``storage.format.MIGRATIONS``, held to the rules its comment states: the template for the next one.

Each step runs on a database our current code wrote, turned back into what the version before it left
(``Step.as_version``), on mongomock and both servers, sync and async, and must then satisfy its ``holds`` check:

- run once, by the format check of a process's first use, and again by another process (restartable);
- cut short at each of its writes in turn and run again: the stamp stays at the old version until the
  step ends, and what the step wrote by then is completed, never doubled;
- run by a second upgrader whose reads were taken before a writer already upgraded went on with the
  threads (never rolls back): the writer's turns land between that upgrader's reads and its first write.

Adding a format: append its step to ``MIGRATIONS``, and here an entry to ``STEPS``. ``test_every_step_has_a_case``
fails until there is one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb.storage.plans.requests import FencedUpdate, InsertMany, InsertOne, UpdateMany, Upsert
from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.journal.labels import labelled
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.storage.format import FORMAT_VERSION, MIGRATIONS, StorageFormat
from langgraph_durable_mongodb.storage.thread_summaries import SUMMARY_NS
from langgraph_durable_mongodb.storage.visit_keys import KEY, levels

from .graphs import run_probe
from .stores import Store

FACES = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
#: The requests that write: a step is cut short at each in turn.
WRITES = (Upsert, UpdateMany, InsertOne, InsertMany, FencedUpdate)


def saver_on(store: Store) -> MongoDBCheckpointer:
    return MongoDBCheckpointer(store.client, async_client=store.async_client, db_name=store.db_name)


async def put_roots(saver: MongoDBCheckpointer, is_async: bool, thread_id: str, n: int) -> None:
    """``n`` root checkpoints of ``thread_id``, each the child of the one before."""
    config: dict = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for step in range(n):
        checkpoint = empty_checkpoint()
        args = (config, checkpoint, {"source": "loop", "step": step}, {})
        config = await saver.aput(*args) if is_async else saver.put(*args)


def roots(store: Store) -> dict[str, list[str]]:
    """Each thread's root checkpoint ids, sorted."""
    found: dict[str, list[str]] = {}
    for doc in store.db.checkpoints.find({"checkpoint_ns": ""}, {"thread_id": 1, "checkpoint_id": 1}):
        found.setdefault(doc["thread_id"], []).append(doc["checkpoint_id"])
    return {t: sorted(ids) for t, ids in found.items()}


# -- the steps ------------------------------------------------------------------------------------------------


def as_version_1(store: Store) -> None:
    """Version 1 had no thread summaries."""
    store.db.checkpoints.delete_many({"checkpoint_ns": SUMMARY_NS})


def holds_summaries(store: Store) -> None:
    """Every thread with root checkpoints has a summary counting them and naming the latest; no other summary."""
    summaries = {d["thread_id"]: (d["checkpoints"], d["latest"]) for d in store.db.checkpoints.find({"checkpoint_ns": SUMMARY_NS})}
    assert summaries == {t: (len(ids), ids[-1]) for t, ids in roots(store).items()}


def as_version_2(store: Store) -> None:
    """Version 2 wrote every metadata value as native BSON: what our code writes of LangGraph's own metadata (steps,
    sources, parents, counters) is native still, so a database of version 2 is this one."""
    assert store.db.checkpoints.count_documents({"metadata": {"$exists": True}}) > 0


def holds_readable_metadata(store: Store) -> None:
    """Every checkpoint reads back with the metadata stored, now that it may be stored through the serde."""
    listed = list(saver_on(store).list(None))
    assert len(listed) == store.db.checkpoints.count_documents({"checkpoint_ns": {"$ne": SUMMARY_NS}})
    assert all(t.metadata.get("step") is not None for t in listed)


def as_version_3(store: Store) -> None:
    """Version 3 keyed journal entries by ordinals: the labels they read as (``journal.labels``), allocated beneath
    the root in the ordinals collection (``{thread_id, parent_path, name, task_key, ordinal}``, a ``Send`` group
    under ``name:send``); at the root the entry's ``root_key`` names the key."""
    for thread_id in store.db.activity_journal.distinct("thread_id"):
        for doc in labelled(store.db.activity_journal.find({"thread_id": thread_id})):
            store.db.activity_journal.update_one({"_id": doc["_id"]}, {"$set": {"path": doc["path"], "occurrence": doc["occurrence"]}})
            parent = "agent/1"
            for depth, ((name, label), (_, key)) in enumerate(zip(levels(doc), levels({**doc, **doc["visit"]}))):
                ordinal, index, stood_for = int(label.split("+")[0].split(".")[0]), "." in label, KEY.match(key)["base"]
                if depth:
                    allocation = {"thread_id": thread_id, "parent_path": parent, "name": name + (":send" if index else ""),
                                  "ordinal": ordinal, "task_key": f"step:{stood_for[1:]}" if stood_for.startswith("s") else stood_for}
                    store.db.operation_ordinals.replace_one({k: v for k, v in allocation.items() if k != "task_key"}, allocation, upsert=True)
                parent = f"{parent}/{name}/{label}"


def holds_visit_keys(store: Store) -> None:
    """Every journal document is keyed by its visit again, under the root checkpoint it names; no ordinal is kept."""
    docs = list(store.db.activity_journal.find())
    assert docs and all(all(KEY.match(text) for _, text in levels(d)) for d in docs)
    assert all(KEY.match(levels(d)[0][1])["base"] == d["root_key"] for d in docs)
    assert store.db.operation_ordinals.count_documents({}) == 0


@dataclass(frozen=True)
class Step:
    """How to test one step: ``as_version`` turns a database our code wrote into what the version before the step
    left (the stamp is set by the test); ``holds`` asserts what the step must have restored."""

    as_version: Callable[[Store], None]
    holds: Callable[[Store], None]


#: The case of each step of ``MIGRATIONS``, by the version it upgrades.
STEPS: dict[int, Step] = {
    1: Step(as_version_1, holds_summaries),
    2: Step(as_version_2, holds_readable_metadata),
    3: Step(as_version_3, holds_visit_keys),
}


def test_every_step_has_a_case() -> None:
    assert sorted(STEPS) == list(range(1, FORMAT_VERSION)) == [i + 1 for i in range(len(MIGRATIONS))]


# -- the template -------------------------------------------------------------------------------------------------


async def written(store: Store, is_async: bool) -> None:
    """What our current code writes: runs with effects two subgraphs deep, and plain root checkpoints."""
    for thread_id in ("probe-1", "probe-2"):
        platform = store.platform()
        await run_probe(platform, thread_id, [], is_async)
        platform.run_locks.wait_releases(10)  # ended: released (a run in flight would hold the upgrade back)
    saver = saver_on(store)
    for thread_id, n in (("a", 3), ("b", 1), ("c", 2)):
        await put_roots(saver, is_async, thread_id, n)


def back_to(store: Store, version: int) -> None:
    """The database as ``version`` left it: every step from it undone, newest first, and the stamp at it."""
    for step in range(FORMAT_VERSION - 1, version - 1, -1):
        STEPS[step].as_version(store)
    store.db.durable_metadata.update_one({"_id": "storage_format"}, {"$set": {"version": version}})


def thread_data(store: Store) -> dict[str, Any]:
    """Every collection as stored but the run locks, which a run's release may still be writing in the background."""
    return {name: docs for name, docs in store.snapshot().items() if name != "thread_runs"}


def stamped(store: Store) -> int:
    return store.db.durable_metadata.find_one({"_id": "storage_format"})["version"]


def interpreter(store: Store, is_async: bool) -> Any:
    return AsyncInterpreter(store.async_client[store.db_name]) if is_async else SyncInterpreter(store.db)


async def run_check(io: Any, is_async: bool) -> None:
    """A process's format check, from its first plan: the upgrade."""
    plan = StorageFormat(io.db.name, CollectionNames()).check_plan()
    await io.run(plan) if is_async else io.run(plan)


def on_write(io: Any, is_async: bool, action: Callable[[int], Any]) -> None:
    """Call ``action(n)`` before the ``n``-th write request (from 0) ``io`` executes; a coroutine it returns is
    awaited (async) or driven to its end (sync, never suspending)."""
    execute, count = io.execute, [0]

    def before(request: Any) -> Any:
        if not isinstance(request, WRITES):
            return None
        count[0] += 1
        return action(count[0] - 1)

    if is_async:

        async def aexecute(request: Any) -> Any:
            pending = before(request)
            if pending is not None:
                await pending
            return await execute(request)

        io.execute = aexecute
    else:

        def sexecute(request: Any) -> Any:
            pending = before(request)
            if pending is not None:
                try:
                    pending.send(None)
                except StopIteration:
                    pass
            return execute(request)

        io.execute = sexecute


class CutShort(Exception):
    """A crash at one of the step's writes."""


@FACES
@pytest.mark.parametrize("version", sorted(STEPS))
async def test_a_step_upgrades_and_a_second_run_changes_nothing(store: Store, is_async: bool, version: int) -> None:
    await written(store, is_async)
    back_to(store, version)
    await run_check(interpreter(store, is_async), is_async)
    assert stamped(store) == FORMAT_VERSION
    STEPS[version].holds(store)
    before = thread_data(store)
    plan = MIGRATIONS[version - 1](CollectionNames())
    io = interpreter(store, is_async)
    await io.run(plan) if is_async else io.run(plan)  # another process, which read the old version, runs it too
    assert thread_data(store) == before


@FACES
@pytest.mark.parametrize("version", sorted(STEPS))
async def test_a_step_cut_short_at_any_write_is_completed_by_the_next_run(store: Store, is_async: bool, version: int) -> None:
    await written(store, is_async)
    back_to(store, version)
    at = 0
    while True:
        io = interpreter(store, is_async)

        def crash(n: int, at: int = at) -> None:
            if n == at:
                raise CutShort(n)

        on_write(io, is_async, crash)
        try:
            await run_check(io, is_async)
        except CutShort:
            assert stamped(store) < FORMAT_VERSION  # the stamp moves only once a step has ended
            at += 1
            continue
        break
    assert at > 0 and stamped(store) == FORMAT_VERSION
    STEPS[version].holds(store)


@FACES
@pytest.mark.parametrize("version", sorted(STEPS))
async def test_a_step_never_rolls_back_what_a_writer_put_between_its_reads_and_its_writes(
    store: Store, is_async: bool, version: int
) -> None:
    await written(store, is_async)
    writer = saver_on(store)
    await writer.aget_tuple({"configurable": {"thread_id": "a"}}) if is_async else writer.get_tuple({"configurable": {"thread_id": "a"}})
    back_to(store, version)
    io = interpreter(store, is_async)

    async def turns(n: int) -> None:
        if n == 0:  # the first upgrader runs whole, then the writer goes on with old threads and starts a new one
            await run_check(interpreter(store, is_async), is_async)
            for thread_id in ("a", "b", "new"):
                await put_roots(writer, is_async, thread_id, 2)

    on_write(io, is_async, lambda n: turns(n))
    await run_check(io, is_async)
    assert stamped(store) == FORMAT_VERSION
    STEPS[version].holds(store)
