"""OrdinalAllocator: find-or-insert ordinals in MongoDB, sync and async faces, cache, races."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import mongomock
import pytest
from mongomock_motor import AsyncMongoMockClient
from pymongo.errors import DuplicateKeyError

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb._plans.requests import DeleteMany, Find
from langgraph_durable_mongodb.errors import ClientConfigurationError, InvalidInputError, ThreadExistsError
from langgraph_durable_mongodb.resolver import (
    ChildOperationBoundary,
    NodePosition,
    OrdinalAllocator,
    ResolvedNamespace,
    SendOrigin,
)

PARENT = "agent/1"


def _docs(db: Any, thread_id: str) -> list[tuple[str, str, str, int]]:
    return sorted(
        (d["parent_path"], d["name"], d["task_key"], d["ordinal"])
        for d in db["operation_ordinals"].find({"thread_id": thread_id})
    )


class _CountingDatabase:
    """A database that counts requests and can refuse all of them."""

    def __init__(self, db: Any, refuse: bool = False) -> None:
        self._db, self._refuse, self.requests = db, refuse, 0
        self.client, self.name = db.client, db.name

    def __getitem__(self, name: str) -> Any:
        return _CountingCollection(self, self._db[name])


class _CountingCollection:
    """A collection whose every method call is a request of its ``_CountingDatabase``."""

    def __init__(self, db: _CountingDatabase, collection: Any) -> None:
        self._counting, self._collection = db, collection

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._collection, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._counting._refuse:  # noqa: SLF001
                raise AssertionError("no query may run")
            self._counting.requests += 1
            return method(*args, **kwargs)

        return call


def test_ordinals_count_occurrences_per_parent_and_name() -> None:
    db = mongomock.MongoClient()["db"]
    allocator = OrdinalAllocator(db)
    assert [allocator.allocate("t1", PARENT, "case", key) for key in ("a", "b", "a", "c")] == [1, 2, 1, 3]
    assert allocator.allocate("t1", PARENT, "other", "a") == 1
    assert allocator.allocate("t1", "agent/1/case/1", "case", "a") == 1
    assert allocator.allocate("t2", PARENT, "case", "c") == 1
    assert _docs(db, "t1") == [
        ("agent/1", "case", "a", 1),
        ("agent/1", "case", "b", 2),
        ("agent/1", "case", "c", 3),
        ("agent/1", "other", "a", 1),
        ("agent/1/case/1", "case", "a", 1),
    ]


def test_allocations_survive_a_process_restart() -> None:
    client = mongomock.MongoClient()
    before = OrdinalAllocator(client["db"])
    assert [before.allocate("t1", PARENT, "case", key) for key in ("a", "b")] == [1, 2]
    after = OrdinalAllocator(client["db"])  # a new process: empty cache, same collection
    assert [after.allocate("t1", PARENT, "case", key) for key in ("b", "a", "c")] == [2, 1, 3]


def test_indexes_are_unique_start_with_thread_id_and_setup_is_idempotent() -> None:
    db = mongomock.MongoClient()["db"]
    allocator = OrdinalAllocator(db, collection_name="ordinals")
    allocator.setup()
    allocator.setup()
    indexes = {name: info for name, info in db["ordinals"].index_information().items() if name != "_id_"}
    assert {name: [field for field, _ in info["key"]] for name, info in indexes.items()} == {
        "thread_parent_name_task": ["thread_id", "parent_path", "name", "task_key"],
        "thread_parent_name_ordinal": ["thread_id", "parent_path", "name", "ordinal"],
    }
    assert all(info["unique"] for info in indexes.values())


def test_first_write_creates_the_indexes() -> None:
    db = mongomock.MongoClient()["db"]
    OrdinalAllocator(db).allocate("t1", PARENT, "case", "a")
    with pytest.raises(DuplicateKeyError):
        db["operation_ordinals"].insert_one(
            {"thread_id": "t1", "parent_path": PARENT, "name": "case", "task_key": "b", "ordinal": 1}
        )


def test_a_remembered_position_costs_one_query_whatever_its_depth() -> None:
    db = _CountingDatabase(mongomock.MongoClient()["db"])
    allocator = OrdinalAllocator(db)
    deep = ResolvedNamespace(
        (ChildOperationBoundary("case", "a"), ChildOperationBoundary("policy", "b", step=1)), "review", "c", node_step=2
    )
    first = allocator.position("t1", deep)
    assert first.new and first == NodePosition("t1", "agent/1/case/1/policy/1", "review", "1")
    requests = db.requests
    again = allocator.position("t1", deep)
    assert again == first and not again.new
    assert db.requests == requests + 1


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("deleted_by", ["the checkpointer", "another process"])
async def test_the_cache_never_answers_for_allocations_the_database_no_longer_holds(face: str, deleted_by: str) -> None:
    client = mongomock.MongoClient()
    db = client["db"] if face == "sync" else AsyncMongoMockClient(mock_mongo_client=client)["db"]
    allocator = OrdinalAllocator(db)
    checkpointer = MongoDBCheckpointer(client, db_name="db")  # the platform's: it deletes ordinals too

    async def loop(step: int) -> str:
        """The ordinal of a child's visit at ``step`` inside a compiled child: keyed by the step."""
        resolved = ResolvedNamespace((ChildOperationBoundary("outer", "T"),), "child", "x", node_step=step)
        position = allocator.position("t1", resolved) if face == "sync" else await allocator.aposition("t1", resolved)
        return position.occurrence

    assert [await loop(1), await loop(3)] == ["1", "2"]
    if deleted_by == "the checkpointer":
        checkpointer.delete_thread("t1")
    else:
        OrdinalAllocator(client["db"]).delete_thread("t1")
    # The reused thread id loops again: step 1 was remembered, step 5 is new; they must not share an ordinal.
    assert [await loop(1), await loop(5)] == ["1", "2"]
    stored = client["db"]["operation_ordinals"].find({"thread_id": "t1", "name": "child"}, {"_id": 0})
    assert sorted((d["task_key"], d["ordinal"]) for d in stored) == [("step:1", 1), ("step:5", 2)]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda a: a.allocate(7, PARENT, "case", "a"), "thread_id must be a non-empty string, got 7"),
        (lambda a: a.allocate("", PARENT, "case", "a"), "thread_id must be a non-empty string"),
        (lambda a: a.allocate("t1", PARENT, {"$ne": 1}, "a"), "name must be a non-empty string"),
        (lambda a: a.allocate("t1", PARENT, "case", None), "task_key must be a non-empty string"),
        (lambda a: a.operation_path("t1", "case:a|x:b"), "resolved must be a ResolvedNamespace"),
        (lambda a: a.position(None, ResolvedNamespace((), "n", "k")), "thread_id must be a non-empty string"),
        (lambda a: a.delete_thread(["t1"]), "thread_id must be a non-empty string"),
        (lambda a: a.copy_thread("t1", "t1"), "cannot copy thread 't1' onto itself"),
        (lambda a: a.copy_thread("t1", 2), "target_thread_id must be a non-empty string"),
    ],
)
def test_bad_input_is_refused_before_any_query(call: Any, message: str) -> None:
    allocator = OrdinalAllocator(_CountingDatabase(mongomock.MongoClient()["db"], refuse=True))
    with pytest.raises(InvalidInputError, match=message):
        call(allocator)


def test_ordinal_text_for_send_and_subgraph_runs() -> None:
    allocator = OrdinalAllocator(mongomock.MongoClient()["db"])
    step_3 = SendOrigin("checkpoint-3", 0)

    def path(*boundaries: ChildOperationBoundary) -> str:
        return allocator.operation_path("t1", ResolvedNamespace(boundaries, "leaf", "k"))

    assert path(ChildOperationBoundary("worker", "w1", send=SendOrigin("checkpoint-3", 1))) == "agent/1/worker/1.1"
    assert path(ChildOperationBoundary("worker", "w0", send=step_3)) == "agent/1/worker/1.0"
    assert path(ChildOperationBoundary("worker", "pulled")) == "agent/1/worker/1"  # its own sequence
    assert path(ChildOperationBoundary("worker", "w9", send=SendOrigin("checkpoint-7", 0))) == "agent/1/worker/2.0"
    assert (
        path(ChildOperationBoundary("caller", "T"), ChildOperationBoundary("inner", "U")) == "agent/1/caller/1/inner/1"
    )
    assert path(ChildOperationBoundary("caller", "T", subgraph_run=1), ChildOperationBoundary("inner", "V")) == (
        "agent/1/caller/1+1/inner/1"
    )
    assert allocator.position("t1", ResolvedNamespace((), "tools", "x", SendOrigin("checkpoint-9", 4))) == (
        NodePosition("t1", "agent/1", "tools", "1.4")
    )


def test_tasks_inside_a_child_are_keyed_by_step() -> None:
    allocator = OrdinalAllocator(mongomock.MongoClient()["db"])
    case = ChildOperationBoundary("case", "T")

    def position(node_key: str, step: int) -> NodePosition:
        return allocator.position("t1", ResolvedNamespace((case,), "review", node_key, node_step=step))

    assert position("first-attempt-task", 1) == NodePosition("t1", "agent/1/case/1", "review", "1")
    assert position("retried-child-task", 1) == NodePosition("t1", "agent/1/case/1", "review", "1")
    assert position("loop-visit-task", 3) == NodePosition("t1", "agent/1/case/1", "review", "2")
    assert allocator.operation_path(
        "t1", ResolvedNamespace((case, ChildOperationBoundary("policy", "U", send=SendOrigin("step:2", 1))), "n", "k")
    ) == ("agent/1/case/1/policy/1.1")


def test_delete_thread_removes_allocations_and_cache() -> None:
    db = mongomock.MongoClient()["db"]
    allocator = OrdinalAllocator(db)
    allocator.allocate("t1", PARENT, "case", "a")
    allocator.allocate("t2", PARENT, "case", "a")
    allocator.delete_thread("t1")
    assert _docs(db, "t1") == []
    assert allocator.allocate("t1", PARENT, "case", "b") == 1
    assert _docs(db, "t2") == [("agent/1", "case", "a", 1)]


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_copy_thread_refuses_a_target_with_allocations_and_writes_nothing(face: str) -> None:
    client = mongomock.MongoClient()
    db = client["db"]
    allocator = OrdinalAllocator(db, AsyncMongoMockClient(mock_mongo_client=client)["db"])

    async def copy(source: str, target: str) -> None:
        if face == "async":
            await allocator.acopy_thread(source, target)
        else:
            allocator.copy_thread(source, target)

    for key in ("a", "b"):
        allocator.allocate("source", PARENT, "case", key)
    allocator.allocate("target", PARENT, "case", "stale")
    before = sorted(map(repr, db["operation_ordinals"].find()))
    with pytest.raises(ThreadExistsError, match=r"delete_thread\('target'\)"):
        await copy("source", "target")
    assert sorted(map(repr, db["operation_ordinals"].find())) == before
    allocator.delete_thread("target")
    await copy("source", "target")
    assert _docs(db, "target") == _docs(db, "source") == [("agent/1", "case", "a", 1), ("agent/1", "case", "b", 2)]
    assert allocator.allocate("target", PARENT, "case", "b") == 2  # the cached 'stale' is gone too
    assert allocator.allocate("target", PARENT, "case", "stale") == 3


class _RacingDatabase:
    """Every allocator's first insert waits until all racers looked and found nothing.

    Inserts then run one at a time, as a server applies them, so exactly one
    writer wins each unique key and the others get a duplicate-key error.
    """

    def __init__(self, db: Any, racers: int) -> None:
        self._db, self.client, self.name = db, db.client, db.name
        self.barrier = threading.Barrier(racers, timeout=5)
        self.lock = threading.Lock()
        self.waited: set[int] = set()

    def __getitem__(self, name: str) -> Any:
        return _RacingCollection(self, self._db[name])


class _RacingCollection:
    def __init__(self, owner: _RacingDatabase, collection: Any) -> None:
        self._owner, self._collection = owner, collection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def insert_one(self, document: dict) -> Any:
        me = threading.get_ident()
        if me not in self._owner.waited:
            self._owner.waited.add(me)
            self._owner.barrier.wait()
        with self._owner.lock:
            return self._collection.insert_one(document)


@pytest.mark.parametrize(("keys", "expected"), [(("same", "same"), [1, 1]), (("a", "b"), [1, 2])])
def test_two_threads_allocating_at_once_converge(keys: tuple[str, str], expected: list[int]) -> None:
    db = mongomock.MongoClient()["db"]
    OrdinalAllocator(db).setup()
    racing = _RacingDatabase(db, racers=2)
    allocators = [OrdinalAllocator(racing), OrdinalAllocator(racing)]  # two processes
    with ThreadPoolExecutor(2) as pool:
        ordinals = list(pool.map(lambda i: allocators[i].allocate("t1", PARENT, "case", keys[i]), range(2)))
    assert sorted(ordinals) == expected
    assert sorted(doc[3] for doc in _docs(db, "t1")) == expected[: len(set(keys))]
    by_key = {doc[2]: doc[3] for doc in _docs(db, "t1")}
    assert [by_key[key] for key in keys] == ordinals


async def test_async_face_shares_the_storage_logic_and_the_data() -> None:
    sync_client = mongomock.MongoClient()
    async_db = AsyncMongoMockClient(mock_mongo_client=sync_client)["db"]
    only_async = OrdinalAllocator(async_db)
    await only_async.asetup()
    assert [await only_async.aallocate("t1", PARENT, "case", key) for key in ("a", "b", "a")] == [1, 2, 1]
    resolved = ResolvedNamespace((ChildOperationBoundary("case", "b"),), "review", "r")
    assert await only_async.aposition("t1", resolved) == NodePosition("t1", "agent/1/case/2", "review", "1")
    assert await only_async.aoperation_path("t1", resolved) == "agent/1/case/2"
    both = OrdinalAllocator(sync_client["db"], async_db)
    assert both.allocate("t1", PARENT, "case", "b") == 2  # allocated through the async face
    await both.acopy_thread("t1", "t2")
    assert _docs(sync_client["db"], "t2") == _docs(sync_client["db"], "t1")
    await both.adelete_thread("t1")
    assert _docs(sync_client["db"], "t1") == []
    with pytest.raises(ClientConfigurationError, match="use the a-prefixed methods, or pass both"):
        only_async.allocate("t1", PARENT, "case", "a")
    with pytest.raises(ClientConfigurationError, match="use the sync methods, or pass both"):
        await OrdinalAllocator(sync_client["db"]).aallocate("t1", PARENT, "case", "a")


async def test_concurrent_async_allocations_get_one_answer() -> None:
    async_db = AsyncMongoMockClient()["db"]
    allocators = [OrdinalAllocator(async_db) for _ in range(4)]
    ordinals = await asyncio.gather(*(a.aallocate("t1", PARENT, "case", "same") for a in allocators))
    assert ordinals == [1, 1, 1, 1]


def test_allocator_needs_one_database_per_kind() -> None:
    db = mongomock.MongoClient()["db"]
    with pytest.raises(ClientConfigurationError):
        OrdinalAllocator()
    with pytest.raises(ClientConfigurationError):
        OrdinalAllocator(db, db)


def _server_client(kind: str, uri: str) -> Any:
    if kind == "pymongo":
        from pymongo import MongoClient

        return MongoClient(uri)
    if kind == "pymongo_async":
        from pymongo import AsyncMongoClient

        return AsyncMongoClient(uri)
    from motor.motor_asyncio import AsyncIOMotorClient

    return AsyncIOMotorClient(uri)


@pytest.mark.parametrize("kind", ["pymongo", "pymongo_async", "motor"])
async def test_real_server_faces(kind: str, mongodb_uri: str, server_db_name: str) -> None:
    client = _server_client(kind, mongodb_uri)
    racers = [OrdinalAllocator(client[server_db_name]) for _ in range(4)]  # four processes
    try:
        if kind == "pymongo":
            with ThreadPoolExecutor(4) as pool:
                ordinals = list(pool.map(lambda a: a.allocate("t1", PARENT, "case", "same"), racers))
            assert racers[0].allocate("t1", PARENT, "case", "other") == 2
        else:
            ordinals = await asyncio.gather(*(a.aallocate("t1", PARENT, "case", "same") for a in racers))
            assert await racers[0].aallocate("t1", PARENT, "case", "other") == 2
        assert ordinals == [1, 1, 1, 1]
    finally:
        closed = client.close()
        if asyncio.iscoroutine(closed):
            await closed


def test_a_sweep_forgets_a_send_group_allocated_before_entries_carried_their_root_key() -> None:
    """Entries written before ``root_key`` are found from the root-level allocations keyed by the pruned checkpoint:
    a Send group ``g`` (sequence ``worker:send``) stands for its occurrences ``g.0``, ``g.1``, ... of ``worker``."""
    plan = OrdinalAllocator(mongomock.MongoClient()["db"]).forget_root_occurrences_plan("t", ["cp1"])
    assert isinstance(next(plan), Find)  # the root-level allocations keyed by cp1
    assert isinstance(plan.send([{"name": "worker:send", "ordinal": 1}]), DeleteMany)
    with pytest.raises(StopIteration) as done:
        plan.send(None)
    journal = mongomock.MongoClient()["db"]["activity_journal"]
    journal.insert_many([
        {"thread_id": "t", "path": "agent/1", "node": "worker", "occurrence": occurrence}
        for occurrence in ("1.0", "1.1", "2.0")
    ] + [
        {"thread_id": "t", "path": "agent/1", "node": "gate", "occurrence": "1"},
        {"thread_id": "t", "path": "agent/1/worker/1.1/inner/1", "node": "leaf", "occurrence": "1"},  # beneath it
        {"thread_id": "t", "path": "agent/1/worker/2.0/inner/1", "node": "leaf", "occurrence": "1"},
    ])
    forgotten = journal.find({"thread_id": "t", **done.value.value})
    assert sorted((d["path"], d["node"], d["occurrence"]) for d in forgotten) == [
        ("agent/1", "worker", "1.0"), ("agent/1", "worker", "1.1"), ("agent/1/worker/1.1/inner/1", "leaf", "1")
    ]


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_guessed_root_ordinal_another_occurrence_took_goes_the_long_way(face: str) -> None:
    """A root checkpoint carrying no high water (written without the platform) leaves root-level occurrences in the
    collection: a guess from the high water known here that another occurrence took meanwhile is read back, and
    the new occurrence takes the next free ordinal."""
    client = mongomock.MongoClient()
    allocator = OrdinalAllocator(client["db"], AsyncMongoMockClient(mock_mongo_client=client)["db"])
    allocator.learn_root_high_water("t", [])  # known here: nothing taken yet
    client["db"]["operation_ordinals"].insert_one(
        {"thread_id": "t", "parent_path": "agent/1", "name": "act", "task_key": "elsewhere", "ordinal": 1}
    )
    resolved = ResolvedNamespace((), "act", "cp-2")
    position = allocator.position("t", resolved) if face == "sync" else await allocator.aposition("t", resolved)
    assert position.occurrence == "2"
