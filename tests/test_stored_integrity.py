"""Stored documents that cannot be read name themselves, and nothing runs from them.

A checkpoint, a pending write or a blob edited by hand or damaged raises ``CorruptDocumentError`` naming the
collection, the ``_id`` and the field; a channel value the checkpoint references but cannot load raises
``MissingValueError`` naming the thread, the checkpoint and the channel. Both before anything runs: a resume
executes no effect and writes no checkpoint. Sync and async, on mongomock and on both servers of the tier.
"""

from __future__ import annotations

import operator
import zlib
from typing import Annotated, Any, TypedDict

import pytest
from bson import Binary
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb.errors import CorruptDocumentError, MissingValueError
from langgraph_durable_mongodb.journal import effect

from .graphs import invoke, state_of

THREAD = "damaged"


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]
    blob: str
    steps: int


def two_step_graph(platform: Any, executed: list[str], blob: str = "") -> Any:
    """``first`` (one effect) then ``second`` (one effect, interrupted before it the first time)."""

    @effect(kind="tool", name="record")
    def record(what: str) -> str:
        executed.append(what)
        return what

    g = StateGraph(State)
    g.add_node("first", lambda s: {"notes": [record("first")], "blob": blob, "steps": 1})
    g.add_node("second", lambda s: {"notes": [record("second")], "steps": 2})
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    return platform.compile(g, interrupt_before=["second"])


def database(platform: Any) -> Any:
    return platform.checkpointer.client[platform.checkpointer.db_name]


def latest_root(platform: Any) -> dict:
    return database(platform).checkpoints.find_one({"thread_id": THREAD, "checkpoint_ns": ""}, sort=[("checkpoint_id", -1)])


async def started(make_platform: Any, mode: str, blob: str = "", **options: Any) -> tuple[Any, Any, list[str]]:
    platform = make_platform(**options)
    platform.checkpointer.inline_value_bytes = 1024  # a larger value goes to checkpoint_blobs
    executed: list[str] = []
    graph = two_step_graph(platform, executed, blob)
    await invoke(graph, mode, {"notes": []}, THREAD)  # stops before `second`
    assert executed == ["first"]
    return platform, graph, executed


async def refuses_to_resume(platform: Any, graph: Any, mode: str, executed: list[str], error: type) -> Any:
    """The state read and the resume both raise ``error``; no effect ran, no document was written."""
    before = {c: database(platform)[c].count_documents({}) for c in ("checkpoints", "checkpoint_writes", "activity_journal")}
    with pytest.raises(error) as read:
        await state_of(graph, mode, THREAD)
    with pytest.raises(error):
        await invoke(graph, mode, None, THREAD)
    assert executed == ["first"]
    assert {c: database(platform)[c].count_documents({}) for c in before} == before
    return read.value


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "damage, field",
    [
        ({"$unset": {"checkpoint": ""}}, "checkpoint"),
        ({"$set": {"metadata": "not a document"}}, "metadata"),
        ({"$set": {"checkpoint.data": "text, not bytes"}}, "checkpoint.data"),
        ({"$set": {"values.0.c": 7}}, "values.0.c"),
        ({"$set": {"parent_checkpoint_id": 12}}, "parent_checkpoint_id"),
        ({"$set": {"expire_at": "tomorrow"}}, "expire_at"),
    ],
)
async def test_a_checkpoint_that_cannot_be_read_names_itself_and_nothing_runs(
    make_platform: Any, mode: str, damage: dict, field: str
) -> None:
    platform, graph, executed = await started(make_platform, mode)
    doc = latest_root(platform)
    database(platform).checkpoints.update_one({"_id": doc["_id"]}, damage)
    error = await refuses_to_resume(platform, graph, mode, executed, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoints", doc["_id"], field)
    assert f"checkpoints document {doc['_id']!r}: field {field!r}" in str(error)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "damage, field", [({"$unset": {"task_id": ""}}, "task_id"), ({"$set": {"idx": "0"}}, "idx"), ({"$unset": {"type": ""}}, "type")]
)
async def test_a_pending_write_that_cannot_be_read_names_itself(make_platform: Any, mode: str, damage: dict, field: str) -> None:
    platform, graph, executed = await started(make_platform, mode)
    saver = platform.checkpointer
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": latest_root(platform)["checkpoint_id"]}}
    saver.put_writes(config, [("notes", ["pending"])], task_id="task-1")
    [write] = database(platform).checkpoint_writes.find({"thread_id": THREAD, "task_id": "task-1"})
    database(platform).checkpoint_writes.update_one({"_id": write["_id"]}, damage)
    error = await refuses_to_resume(platform, graph, mode, executed, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoint_writes", write["_id"], field)


BIG = "x" * 5000


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("lost", ["the blob", "one chunk", "the head chunk"])
async def test_a_value_the_checkpoint_references_but_cannot_load_stops_the_resume(make_platform: Any, mode: str, lost: str) -> None:
    platform, graph, executed = await started(make_platform, mode, blob=BIG, chunk_bytes=1024)
    blobs = database(platform).checkpoint_blobs
    stored = list(blobs.find({"thread_id": THREAD, "channel": "blob"}).sort("chunk", 1))
    assert len(stored) == 5  # 5,000 bytes and more in chunks of 1,024: a value in blobs, not inline
    gone = {"the blob": {"thread_id": THREAD, "channel": "blob"}, "one chunk": {"_id": stored[3]["_id"]},
            "the head chunk": {"_id": stored[0]["_id"]}}[lost]
    blobs.delete_many(gone)
    error = await refuses_to_resume(platform, graph, mode, executed, MissingValueError)
    doc = latest_root(platform)
    assert (error.thread_id, error.checkpoint_id, error.channel) == (THREAD, doc["checkpoint_id"], "blob")
    assert f"thread {THREAD!r} checkpoint {doc['checkpoint_id']!r}" in str(error) and "'blob'" in str(error)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_damaged_blob_document_names_itself(make_platform: Any, mode: str) -> None:
    platform, graph, executed = await started(make_platform, mode, blob=BIG, chunk_bytes=1024)
    blobs = database(platform).checkpoint_blobs
    head = blobs.find_one({"thread_id": THREAD, "channel": "blob", "chunk": 0})
    blobs.update_one({"_id": head["_id"]}, {"$set": {"data": "text"}})
    error = await refuses_to_resume(platform, graph, mode, executed, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoint_blobs", head["_id"], "data")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_undamaged_thread_still_resumes(make_platform: Any, mode: str) -> None:
    # the same run, nothing damaged: what the tests above refuse runs here (the checks cost no query)
    platform, graph, executed = await started(make_platform, mode, blob=BIG, chunk_bytes=1024)
    final = await invoke(graph, mode, None, THREAD)
    assert executed == ["first", "second"] and final["blob"] == BIG and final["steps"] == 2


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_replaced_bytes_of_an_inline_value_are_caught_by_its_checksum(make_platform: Any, mode: str) -> None:
    platform, graph, executed = await started(make_platform, mode)
    doc = latest_root(platform)
    [i] = [i for i, e in enumerate(doc["values"]) if e["c"] == "steps"]
    assert doc["values"][i]["h"] == zlib.crc32(doc["values"][i]["d"])
    # msgpack 42: without the checksum it loaded as steps=42
    database(platform).checkpoints.update_one({"_id": doc["_id"]}, {"$set": {f"values.{i}.d": Binary(b"\x2a")}})
    error = await refuses_to_resume(platform, graph, mode, executed, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoints", doc["_id"], f"values.{i}.d")
    assert "does not match its checksum" in str(error)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_replaced_bytes_of_a_blob_chunk_are_caught_by_its_checksum(make_platform: Any, mode: str) -> None:
    platform, graph, executed = await started(make_platform, mode, blob=BIG, chunk_bytes=1024)
    blobs = database(platform).checkpoint_blobs
    head = blobs.find_one({"thread_id": THREAD, "channel": "blob", "chunk": 0})
    middle = blobs.find_one({"thread_id": THREAD, "channel": "blob", "chunk": 2})
    blobs.update_one({"_id": middle["_id"]}, {"$set": {"data": Binary(bytes(middle["data"]).replace(b"x", b"y"))}})
    error = await refuses_to_resume(platform, graph, mode, executed, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoint_blobs", head["_id"], "data")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_replaced_bytes_of_a_pending_write_are_caught_by_its_checksum(make_platform: Any, mode: str) -> None:
    platform, graph, executed = await started(make_platform, mode)
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": latest_root(platform)["checkpoint_id"]}}
    platform.checkpointer.put_writes(config, [("steps", 5)], task_id="task-1")
    writes = database(platform).checkpoint_writes
    [write] = writes.find({"thread_id": THREAD, "task_id": "task-1"})
    writes.update_one({"_id": write["_id"]}, {"$set": {"data": Binary(b"\x2a")}})
    error = await refuses_to_resume(platform, graph, mode, executed, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoint_writes", write["_id"], "data")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_values_written_before_checksums_still_load(make_platform: Any, mode: str) -> None:
    platform, graph, executed = await started(make_platform, mode, blob=BIG, chunk_bytes=1024)
    db = database(platform)
    for doc in db.checkpoints.find({"thread_id": THREAD}):
        values = [{k: v for k, v in e.items() if k != "h"} for e in doc.get("values", [])]
        db.checkpoints.update_one({"_id": doc["_id"]}, {"$set": {"values": values}})
    db.checkpoint_blobs.update_many({"thread_id": THREAD}, {"$unset": {"h": ""}})
    assert all("h" not in e for d in db.checkpoints.find({"thread_id": THREAD}) for e in d["values"])
    final = await invoke(graph, mode, None, THREAD)
    assert executed == ["first", "second"] and final["blob"] == BIG
