"""The BaseCheckpointSaver contract, method by method, on every client kind."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.base import ERROR, INTERRUPT
from pymongo.errors import AutoReconnect
from langgraph.checkpoint.serde.types import _DeltaSnapshot  # noqa: F401 - used by DeltaChannel tests

from langgraph_durable_mongodb import (
    CheckpointNotStoredError,
    DurableMongoError,
    InvalidInputError,
    MongoDBCheckpointer,
    ThreadExistsError,
)
from langgraph_durable_mongodb.storage.plans.requests import Find, Gather, Upsert, WaitNotice

from .checkpoints import cfg, make_checkpoint, put
from .clients import Face


async def test_put_and_get_tuple_round_trip(face: Face) -> None:
    saved, cp = await put(face, cfg(), {"small": "hi", "big": {"list": list(range(200))}, "n": 3}, {"source": "input", "step": -1})
    assert saved == cfg(checkpoint_id=cp["id"])
    got = await face.call("get_tuple", cfg())
    assert got.checkpoint["channel_values"] == {"small": "hi", "big": {"list": list(range(200))}, "n": 3}
    assert got.checkpoint["channel_versions"] == cp["channel_versions"]
    assert got.checkpoint["id"] == cp["id"]
    assert got.metadata == {"source": "input", "step": -1}
    assert got.parent_config is None
    assert got.pending_writes == []
    # raw documents: native metadata, every value inline (none is above inline_value_bytes): one command
    [doc] = await face.raw("checkpoints")
    assert doc["metadata"] == {"source": "input", "step": -1}
    assert {e["c"] for e in doc["values"] if "t" in e} == {"small", "big", "n"}
    assert await face.raw("checkpoint_blobs") == []
    # a value above inline_value_bytes goes to a blob, read back the same
    face.saver.inline_value_bytes = 128
    await put(face, cfg("t2"), {"small": "hi", "big": {"list": list(range(200))}}, {"source": "input", "step": -1})
    got = await face.call("get_tuple", cfg("t2"))
    assert got.checkpoint["channel_values"] == {"small": "hi", "big": {"list": list(range(200))}}
    [doc] = await face.raw("checkpoints", {"thread_id": "t2"})
    assert {e["c"] for e in doc["values"] if "t" in e} == {"small"}
    blobs = await face.raw("checkpoint_blobs")
    assert [(b["channel"], b["version"]) for b in blobs] == [("big", got.checkpoint["channel_versions"]["big"])]


async def test_a_document_holds_inline_values_up_to_inline_document_bytes(face: Face) -> None:
    # each value is below inline_value_bytes, together they are not: the one past the budget goes to a blob
    face.saver.inline_document_bytes = 1000
    values = {"a": "a" * 400, "b": "b" * 400, "c": "c" * 400}
    _, cp = await put(face, cfg(), values)
    [doc] = await face.raw("checkpoints")
    assert [e["c"] for e in doc["values"] if "t" in e] == ["a", "b"]
    blobs = await face.raw("checkpoint_blobs")
    assert [(b["channel"], b["version"]) for b in blobs] == [("c", cp["channel_versions"]["c"])]
    got = await face.call("get_tuple", cfg())
    assert got.checkpoint["channel_values"] == values


async def test_put_is_an_upsert_and_parent_is_kept(face: Face) -> None:
    first, cp1 = await put(face, cfg(), {"a": [1]})
    cp2, versions = make_checkpoint(face.saver, {"a": [1, 2]}, cp1)
    for _ in range(2):
        await face.call("put", first, cp2, {"source": "loop", "step": 1}, versions)
    assert len(await face.raw("checkpoints")) == 2
    got = await face.call("get_tuple", cfg())
    assert got.checkpoint["id"] == cp2["id"]
    assert got.parent_config == cfg(checkpoint_id=cp1["id"])
    older = await face.call("get_tuple", cfg(checkpoint_id=cp1["id"]))
    assert older.checkpoint["channel_values"] == {"a": [1]}
    assert await face.call("get_tuple", cfg(checkpoint_id="nope")) is None
    assert await face.call("get_tuple", cfg("other")) is None


async def test_unchanged_channels_are_not_written_again(face: Face) -> None:
    # inline: an unchanged value above copy_value_bytes is referenced in the checkpoint that holds it
    big = ["x" * 20] * 300
    first, cp1 = await put(face, cfg(), {"big": big, "other": ["y"] * 300, "small": 1})
    cp2, versions = make_checkpoint(face.saver, {"other": ["z"] * 300}, cp1)
    await face.call("put", first, cp2, {"source": "loop", "step": 1}, versions)
    [doc] = await face.raw("checkpoints", {"checkpoint_id": cp2["id"]})
    entries = {e["c"]: e for e in doc["values"]}
    assert entries["big"] == {"c": "big", "v": cp1["channel_versions"]["big"], "k": cp1["id"]}
    assert "d" in entries["other"] and "d" in entries["small"]  # changed, and small enough to copy
    got = await face.call("get_tuple", cfg())
    assert got.checkpoint["channel_values"] == {"big": big, "other": ["z"] * 300, "small": 1}
    # a saver that did not see the parent (another process) writes the value again: correct, only larger
    other = MongoDBCheckpointer(face.saver.client or face.saver.async_client, db_name=face.saver.db_name)
    cp3, versions = make_checkpoint(face.saver, {"other": ["w"]}, cp2)
    third = cfg(checkpoint_id=cp2["id"])
    await (other.aput(third, cp3, {"source": "loop", "step": 2}, versions) if face.is_async
           else _sync(other.put, third, cp3, {"source": "loop", "step": 2}, versions))
    got = await face.call("get_tuple", cfg())
    assert got.checkpoint["channel_values"] == {"big": big, "other": ["w"], "small": 1}
    # blobs: a value above inline_value_bytes is written once, and referenced by version after that
    face.saver.inline_value_bytes = face.saver.copy_value_bytes = 0
    first, cp1 = await put(face, cfg("b"), {"big": ["x"] * 300, "other": ["y"] * 300})
    cp2, versions = make_checkpoint(face.saver, {"other": ["z"] * 300}, cp1)
    await face.call("put", first, cp2, {"source": "loop", "step": 1}, versions)
    blobs = await face.raw("checkpoint_blobs", {"thread_id": "b"})
    assert sorted(b["channel"] for b in blobs) == ["big", "other", "other"]
    got = await face.call("get_tuple", cfg("b"))
    assert got.checkpoint["channel_values"] == {"big": ["x"] * 300, "other": ["z"] * 300}


async def test_put_writes_regular_are_insert_if_absent_special_overwrite(face: Face) -> None:
    saved, _ = await put(face, cfg(), {"a": 1})
    await face.call("put_writes", saved, [("ch", "first"), ("ch2", 2)], "task-1", "~__pregel_pull, a")
    await face.call("put_writes", saved, [("ch", "second")], "task-1", "~__pregel_pull, a")
    await face.call("put_writes", saved, [(ERROR, ValueError("one"))], "task-2")
    await face.call("put_writes", saved, [(ERROR, ValueError("two"))], "task-2")
    got = await face.call("get_tuple", cfg())
    writes = {(t, c): v for t, c, v in got.pending_writes}
    assert writes[("task-1", "ch")] == "first"
    assert writes[("task-1", "ch2")] == 2
    assert "two" in str(writes[("task-2", ERROR)]) and "one" not in str(writes[("task-2", ERROR)])
    raw = await face.raw("checkpoint_writes", {"task_id": "task-1"})
    assert {r["task_path"] for r in raw} == {"~__pregel_pull, a"}
    assert len(await face.raw("checkpoint_writes")) == 3


async def test_pending_writes_come_in_writes_sort_key_order(face: Face) -> None:
    saved, _ = await put(face, cfg(), {"a": 1})
    await face.call("put_writes", saved, [("x", "b0"), ("x", "b1")], "task-b", "path-1")
    await face.call("put_writes", saved, [("x", "a0")], "task-a", "path-2")
    await face.call("put_writes", saved, [("x", "c0")], "task-c", "")
    got = await face.call("get_tuple", cfg())
    assert [v for _, _, v in got.pending_writes] == ["c0", "b0", "b1", "a0"]


async def test_writes_may_arrive_before_their_checkpoint(face: Face) -> None:
    cp, versions = make_checkpoint(face.saver, {"a": 1})
    await face.call("put_writes", cfg(checkpoint_id=cp["id"]), [(INTERRUPT, {"q": 1})], "task-1")
    await face.call("put", cfg(), cp, {"source": "loop", "step": 0}, versions)
    got = await face.call("get_tuple", cfg())
    assert got.pending_writes == [("task-1", INTERRUPT, {"q": 1})]


async def test_list_filters_before_limit_and_namespaces(face: Face) -> None:
    previous = None
    ids = []
    for step in range(4):
        config = cfg(checkpoint_id=ids[-1]) if ids else cfg()
        _, previous = await put(face, config, {"n": step}, {"source": "loop", "step": step, "who": {"name": "ann", "age": 3}}, previous)
        ids.append(previous["id"])
    _, child = await put(face, cfg(ns="child:1"), {"n": 9}, {"source": "loop", "step": 0})
    await put(face, cfg("t2"), {"n": 1}, {"source": "input", "step": -1})

    everything = await face.list(None)
    assert len(everything) == 6
    assert [t.checkpoint["id"] for t in everything] == sorted((t.checkpoint["id"] for t in everything), reverse=True)
    all_ns = await face.list({"configurable": {"thread_id": "t1"}})
    assert len(all_ns) == 5
    root = await face.list(cfg())
    assert [t.checkpoint["id"] for t in root] == ids[::-1]
    assert [t.checkpoint["id"] for t in await face.list(cfg(ns="child:1"))] == [child["id"]]
    assert [t.checkpoint["id"] for t in await face.list(cfg(), limit=2)] == ids[:1:-1]
    assert [t.checkpoint["id"] for t in await face.list(cfg(), before=cfg(checkpoint_id=ids[2]))] == ids[1::-1]
    assert [t.checkpoint["id"] for t in await face.list(cfg(checkpoint_id=ids[1]))] == [ids[1]]
    assert [t.metadata["step"] for t in await face.list(cfg(), filter={"step": 2})] == [2]
    assert len(await face.list(None, filter={"source": "input"})) == 1
    # nested values match by containment
    assert len(await face.list(cfg(), filter={"who": {"name": "ann"}})) == 4
    assert len(await face.list(cfg(), filter={"who": {"name": "bob"}})) == 0


async def test_list_pages_without_losing_or_repeating(face: Face, monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph_durable_mongodb.checkpointer import store as base

    monkeypatch.setattr(base, "LIST_PAGE", 3)
    previous = None
    for step in range(7):
        _, previous = await put(face, cfg(), {"n": step}, {"source": "loop", "step": step}, previous)
        # the same checkpoint ids in another thread: pages must not skip them
    await face.call("copy_thread", "t1", "t2")
    listed = await face.list(None)
    assert len(listed) == 14
    assert len({(t.config["configurable"]["thread_id"], t.checkpoint["id"]) for t in listed}) == 14
    assert [t.metadata["step"] for t in await face.list(cfg(), limit=5)] == [6, 5, 4, 3, 2]


async def test_metadata_keys_with_dots_and_dollars_round_trip_and_filter_exactly(face: Face) -> None:
    meta = {"source": "loop", "step": 0, "a.b": 1, "$x": {"y.z": 2}, "a": {"b": 99}}
    await put(face, cfg(), {"n": 1}, meta)
    [doc] = await face.raw("checkpoints")
    assert "a%2Eb" in doc["metadata"] and "%24x" in doc["metadata"]
    got = await face.call("get_tuple", cfg())
    assert got.metadata == meta
    assert len(await face.list(cfg(), filter={"a.b": 1})) == 1
    # "a.b" is a literal key, never the path a -> b
    assert len(await face.list(cfg(), filter={"a.b": 99})) == 0


async def test_bad_identifiers_fail_before_any_query(face: Face) -> None:
    requests = []
    io = face.saver._async_io if face.is_async else face.saver._sync_io
    original = io.execute
    io.execute = lambda request: requests.append(request) or original(request)
    bad_configs = [
        {"configurable": {"thread_id": 1}},
        {"configurable": {"thread_id": {"$ne": None}}},
        {"configurable": {"thread_id": "t", "checkpoint_ns": ["x"]}},
        {"configurable": {"thread_id": "t", "checkpoint_id": {"$gt": ""}}},
        {"configurable": {}},
        {"nothing": 1},
    ]
    for bad in bad_configs:
        with pytest.raises(InvalidInputError):
            await face.call("get_tuple", bad)
    with pytest.raises(InvalidInputError):
        await face.list(cfg(), filter={"$where": "1"})
    with pytest.raises(InvalidInputError):
        await face.list(cfg(), filter={"ok": {"$ne": 1}, "$or": []})
    with pytest.raises(InvalidInputError):
        await face.call("put_writes", cfg(checkpoint_id="c"), [("a", 1)], 5)
    with pytest.raises(InvalidInputError):
        await face.call("put_writes", cfg(checkpoint_id="c"), [("a", 1)], "task", None)
    with pytest.raises(InvalidInputError):
        await face.call("delete_thread", {"$ne": ""})
    with pytest.raises(InvalidInputError):
        await face.call("copy_thread", "a", 7)
    with pytest.raises(InvalidInputError):
        await face.call("prune", "t1")
    with pytest.raises(InvalidInputError):
        await face.call("delete_for_runs", [None])
    assert requests == []


async def test_operator_values_in_filters_are_refused_at_any_depth(face: Face) -> None:
    await put(face, cfg(), {"n": 1}, {"source": "loop", "step": 0, "user": "ann"})
    with pytest.raises(InvalidInputError, match="starts with"):
        await face.list(cfg(), filter={"user": {"$ne": "bob"}})
    # values are compared literally: a string that looks like an operator matches nothing
    assert await face.list(cfg(), filter={"user": "$ne"}) == []


async def test_delete_thread_removes_only_that_thread(face: Face) -> None:
    saved, _ = await put(face, cfg(), {"big": ["x"] * 300})
    await face.call("put_writes", saved, [("a", 1)], "task")
    await put(face, cfg("keep"), {"big": ["y"] * 300})
    before = {c: await face.raw(c, {"thread_id": "keep"}) for c in ("checkpoints", "checkpoint_blobs")}
    await face.call("delete_thread", "t1")
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        assert await face.raw(coll, {"thread_id": "t1"}) == []
    assert {c: await face.raw(c, {"thread_id": "keep"}) for c in before} == before


async def test_copy_thread_copies_every_namespace_with_ids_and_parents(face: Face) -> None:
    s1, cp1 = await put(face, cfg(), {"big": ["x"] * 300})
    s2, cp2 = await put(face, s1, {"n": 2}, previous=cp1)
    await face.call("put_writes", s2, [("w", "pending")], "task", "p")
    await put(face, cfg(ns="child:abc"), {"c": ["child"] * 300})
    await face.call("copy_thread", "t1", "copy")
    for ns in ("", "child:abc"):
        src = await face.list(cfg(ns=ns))
        dst = await face.list(cfg("copy", ns=ns))
        assert [t.checkpoint for t in dst] == [t.checkpoint for t in src]
        assert [t.pending_writes for t in dst] == [t.pending_writes for t in src]
        assert [t.parent_config and t.parent_config["configurable"]["checkpoint_id"] for t in dst] == [
            t.parent_config and t.parent_config["configurable"]["checkpoint_id"] for t in src
        ]
    assert (await face.call("get_tuple", cfg("copy"))).parent_config == cfg("copy", checkpoint_id=cp1["id"])


async def test_prune_keep_latest_and_delete(face: Face) -> None:
    face.saver.inline_value_bytes = face.saver.copy_value_bytes = 0  # every value in a blob
    previous, config = None, cfg()
    for step in range(3):
        config, previous = await put(face, config, {"big": [step] * 300}, {"source": "loop", "step": step}, previous)
        await face.call("put_writes", config, [("w", step)], f"task{step}")
    await put(face, cfg(ns="child:1"), {"n": 1})
    await put(face, cfg(ns="child:1"), {"n": 2})
    await face.call("prune", ["t1"])
    remaining = await face.list({"configurable": {"thread_id": "t1"}})
    assert sorted(t.checkpoint["channel_values"].get("n", -1) for t in remaining) == [-1, 2]
    latest = await face.call("get_tuple", cfg())
    assert latest.checkpoint["channel_values"] == {"big": [2] * 300}
    assert latest.pending_writes == [("task2", "w", 2)]
    assert len(await face.raw("checkpoint_blobs", {"thread_id": "t1", "checkpoint_ns": ""})) == 1
    assert len(await face.raw("checkpoint_blobs", {"thread_id": "t1", "checkpoint_ns": "child:1"})) == 1
    assert len(await face.raw("checkpoint_writes", {"thread_id": "t1"})) == 1
    await face.call("prune", ["t1"], strategy="delete")
    assert await face.raw("checkpoints", {"thread_id": "t1"}) == []
    with pytest.raises(InvalidInputError):
        await face.call("prune", ["t1"], strategy="everything")


def second_saver(face: Face) -> MongoDBCheckpointer:
    """A saver on the same database with its own memory: another process, as far as caches go."""
    return MongoDBCheckpointer(face.saver.client or face.saver.async_client, db_name=face.saver.db_name)


async def call_on(face: Face, saver: MongoDBCheckpointer, name: str, *args: Any) -> Any:
    """``saver.name(*args)`` on the face's side (sync or async)."""
    return await (getattr(saver, "a" + name)(*args) if face.is_async else _sync(getattr(saver, name), *args))


async def held_chain(face: Face, thread: str, big: list) -> tuple[dict, dict, str]:
    """A thread whose first checkpoint (run r1) holds ``big`` inline and whose two later ones (run r2)
    reference it there: ``(config, checkpoint, holder id)`` of the latest."""
    config, previous = await put(face, cfg(thread), {"big": big, "n": 0}, {"source": "loop", "step": 0, "run_id": "r1"})
    holder = previous["id"]
    for step in (1, 2):
        config, previous = await put(face, config, {"n": step}, {"source": "loop", "step": step, "run_id": "r2"}, previous)
    [latest] = await face.raw("checkpoints", {"thread_id": thread, "checkpoint_id": previous["id"]})
    assert {"c": "big", "v": previous["channel_versions"]["big"], "k": holder} in latest["values"]
    return config, previous, holder


async def test_prune_and_delete_for_runs_keep_values_held_by_the_checkpoints_they_delete(face: Face) -> None:
    big = ["x" * 20] * 300  # above copy_value_bytes: later checkpoints reference the one holding it
    for strategy in ("prune", "delete_for_runs"):
        thread = f"held-{strategy}"
        config, previous, holder = await held_chain(face, thread, big)
        if strategy == "prune":
            await face.call("prune", [thread])
        else:
            await face.call("delete_for_runs", ["r1"])
        # the holder is gone; its value was written to blobs first, under its version, and the checkpoint
        # that referenced it now says so
        assert await face.raw("checkpoints", {"thread_id": thread, "checkpoint_id": holder}) == []
        [blob] = await face.raw("checkpoint_blobs", {"thread_id": thread})
        assert (blob["channel"], blob["version"]) == ("big", previous["channel_versions"]["big"])
        [kept] = await face.raw("checkpoints", {"thread_id": thread, "checkpoint_id": previous["id"]})
        assert {"c": "big", "v": blob["version"]} in kept["values"]
        # the saver that deleted the holder forgot where its values were: its next checkpoint holds the value
        # again instead of referencing a checkpoint that is gone
        latest, cp = await put(face, config, {"n": 3}, {"source": "loop", "step": 3, "run_id": "r2"}, previous)
        [doc] = await face.raw("checkpoints", {"thread_id": thread, "checkpoint_id": cp["id"]})
        assert [e.get("k") for e in doc["values"] if e["c"] == "big"] == [None]
        for saver in (face.saver, second_saver(face)):
            got = await call_on(face, saver, "get_tuple", cfg(thread))
            assert got.checkpoint["channel_values"] == {"big": big, "n": 3}
            got = await call_on(face, saver, "get_tuple", config)
            assert got.checkpoint["channel_values"] == {"big": big, "n": 2}


async def test_a_copied_thread_resolves_its_references_in_itself(face: Face) -> None:
    # the copy's references name checkpoint ids, which the copy keeps: they resolve in the target thread,
    # and pruning the source afterwards leaves the copy whole
    big = ["x" * 20] * 300
    config, previous, holder = await held_chain(face, "from", big)
    await face.call("copy_thread", "from", "to")
    [latest] = await face.raw("checkpoints", {"thread_id": "to", "checkpoint_id": previous["id"]})
    assert {"c": "big", "v": previous["channel_versions"]["big"], "k": holder} in latest["values"]
    await face.call("prune", ["from"], strategy="delete")
    for saver in (face.saver, second_saver(face)):
        got = await call_on(face, saver, "get_tuple", cfg("to"))
        assert got.checkpoint["channel_values"] == {"big": big, "n": 2}
    # the copy's next checkpoint: copy_thread notes no locations, so it holds the value again
    latest, cp = await put(face, cfg("to", checkpoint_id=previous["id"]), {"n": 3}, {"source": "loop", "step": 3}, previous)
    got = await face.call("get_tuple", cfg("to"))
    assert got.checkpoint["channel_values"] == {"big": big, "n": 3}


async def test_a_stale_value_location_in_another_process_reads_the_moved_value(face: Face) -> None:
    # this saver wrote the chain and remembers that "big" is held by the first checkpoint; another
    # process prunes the thread, deleting that checkpoint; this saver's next checkpoint still references it
    big = ["x" * 20] * 300
    config, previous, holder = await held_chain(face, "stale", big)
    await call_on(face, second_saver(face), "prune", ["stale"])
    assert await face.raw("checkpoints", {"thread_id": "stale", "checkpoint_id": holder}) == []
    config, previous = await put(face, config, {"n": 3}, {"source": "loop", "step": 3}, previous)
    [doc] = await face.raw("checkpoints", {"thread_id": "stale", "checkpoint_id": previous["id"]})
    assert {"c": "big", "v": previous["channel_versions"]["big"], "k": holder} in doc["values"]
    # a reader finds the holder gone and the value in blobs, where the prune moved it
    for saver in (face.saver, second_saver(face)):
        got = await call_on(face, saver, "get_tuple", cfg("stale"))
        assert got.checkpoint["channel_values"] == {"big": big, "n": 3}
        listed = [t async for t in saver.alist(cfg("stale"))] if face.is_async else list(saver.list(cfg("stale")))
        assert [t.checkpoint["channel_values"]["big"] for t in listed] == [big, big]


async def test_documents_written_before_key_ids_are_read_and_continued(face: Face) -> None:
    # documents of the earlier layout: an ObjectId _id, values inline or in blobs (never "k")
    face.saver.inline_value_bytes = 0
    config, cp = await put(face, cfg("old"), {"big": ["x"] * 300})
    await face.call("put_writes", config, [("w", 1)], "task")
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        docs = await face.raw(coll, {"thread_id": "old"})
        for name, arg in (("delete_many", {"thread_id": "old"}), ("insert_many", docs)):
            done = getattr(face.db[coll], name)(arg)
            if face.is_async:
                await done
    assert all(not isinstance(d["_id"], str) for d in await _raw_with_ids(face, "checkpoints", {"thread_id": "old"}))
    face.saver = second_saver(face)  # a process that never saw them
    got = await face.call("get_tuple", cfg("old"))
    assert got.checkpoint["channel_values"] == {"big": ["x"] * 300}
    assert got.pending_writes == [("task", "w", 1)]
    child, cp2 = await put(face, config, {"n": 1}, {"source": "loop", "step": 1}, cp)
    got = await face.call("get_tuple", cfg("old"))
    assert got.checkpoint["channel_values"] == {"big": ["x"] * 300, "n": 1}
    assert got.parent_config["configurable"]["checkpoint_id"] == cp["id"]


async def _raw_with_ids(face: Face, collection: str, query: dict) -> list[dict]:
    cursor = face.db[collection].find(query)
    return await cursor.to_list(None) if face.is_async else list(cursor)


async def test_delete_for_runs_deletes_their_checkpoints_only(face: Face) -> None:
    c1, cp1 = await put(face, cfg(), {"big": ["a"] * 300}, {"source": "loop", "step": 0, "run_id": "r1"})
    await face.call("put_writes", c1, [("w", 1)], "task")
    _, cp2 = await put(face, c1, {"n": 1}, {"source": "loop", "step": 1, "run_id": "r2"}, cp1)
    await put(face, cfg("other"), {"n": 1}, {"source": "loop", "step": 0, "run_id": "r1"})
    await face.call("delete_for_runs", ["r1"])
    assert [t.checkpoint["id"] for t in await face.list(None)] == [cp2["id"]]
    assert await face.raw("checkpoint_writes") == []


async def test_next_version_is_unique_and_sortable(face: Face) -> None:
    v1 = face.saver.get_next_version(None, None)
    forks = {face.saver.get_next_version(v1, None) for _ in range(50)}
    assert len(forks) == 50
    assert all(isinstance(v, str) and v > v1 for v in forks)
    assert face.saver.get_next_version(7, None) > face.saver.get_next_version(6, None)


async def test_values_larger_than_a_bson_document_round_trip(face: Face) -> None:
    huge = bytes(range(256)) * (20 * 1024 * 1024 // 256)  # 20 MiB
    saved, _ = await put(face, cfg(), {"huge": huge})
    await face.call("put_writes", saved, [("w", huge)], "task")
    got = await face.call("get_tuple", cfg())
    assert got.checkpoint["channel_values"]["huge"] == huge
    assert got.pending_writes[0][2] == huge
    assert len(await face.raw("checkpoint_blobs")) == 3


async def test_survives_copy_and_with_allowlist(face: Face) -> None:
    await put(face, cfg(), {"n": [1, 2]})
    clone = face.saver.with_allowlist([("mymodule", "MyType")])
    shallow = copy.copy(face.saver)
    for saver in (clone, shallow):
        got = await (saver.aget_tuple(cfg()) if face.is_async else _sync(saver.get_tuple, cfg()))
        assert got.checkpoint["channel_values"] == {"n": [1, 2]}


async def _sync(fn, *args):
    return fn(*args)


async def test_setup_is_idempotent_and_every_index_leads_with_thread_id(face: Face) -> None:
    await face.call("setup")
    await face.call("setup")
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        cursor = face.db[coll].list_indexes()
        if face.is_async:
            cursor = await cursor if hasattr(cursor, "__await__") else cursor
            indexes = await cursor.to_list(None)
        else:
            indexes = list(cursor)
        keys = [list(ix["key"]) for ix in indexes if ix["name"] != "_id_"]
        assert keys and all(k[0] == "thread_id" for k in keys), (coll, keys)
    [unique] = [ix for ix in indexes if ix.get("unique")]
    assert list(unique["key"]) == ["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "chunk"]


async def wait_stored(face: Face, thread_id: str, checkpoint_id: str, timeout: float) -> None:
    if face.is_async:
        await face.saver.await_stored(thread_id, checkpoint_id, timeout)
    else:
        face.saver.wait_stored(thread_id, checkpoint_id, timeout)


def counted_requests(face: Face, seen: Callable[[Any], Any] = lambda request: None) -> list:
    """Every request the saver's face executes from now on (a Gather's parts one by one), each shown to ``seen``
    before it runs."""
    requests: list = []
    io = face.saver._async_io if face.is_async else face.saver._sync_io
    original = io.execute

    def counted(request: Any) -> Any:
        requests.extend(request.requests if isinstance(request, Gather) else [request])
        seen(request)
        return original(request)

    io.execute = counted
    return requests


async def test_wait_stored_returns_for_a_stored_checkpoint_waits_for_a_later_one_and_times_out(
    face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_durable_mongodb.checkpointer import roots as base

    monkeypatch.setattr(base, "STORED_RECHECK_SECONDS", 0.05)
    first, cp1 = await put(face, cfg(), {"n": 1})
    requests = counted_requests(face)
    await wait_stored(face, "t1", cp1["id"], 0.5)
    assert requests == []  # this process stored it: no query
    # Stored later, by this saver (another thread or task) and by another process (another saver).
    other = MongoDBCheckpointer(face.saver.client or face.saver.async_client, db_name=face.saver.db_name)
    for saver in (face.saver, other):
        cp, versions = make_checkpoint(face.saver, {"n": 2}, cp1)
        args = (first, cp, {"source": "loop", "step": 1}, versions)
        started = time.monotonic()
        if face.is_async:

            async def store_later() -> None:
                await asyncio.sleep(0.2)
                await saver.aput(*args)

            later = asyncio.ensure_future(store_later())
            await face.saver.await_stored("t1", cp["id"], 5)
            await later
        else:
            later = threading.Timer(0.2, saver.put, args)
            later.start()
            face.saver.wait_stored("t1", cp["id"], 5)
            later.join()
        assert time.monotonic() - started >= 0.2
        assert await face.raw("checkpoints", {"checkpoint_id": cp["id"]})
    with pytest.raises(CheckpointNotStoredError, match="not stored within 0.05 s"):
        await wait_stored(face, "t1", "never-stored", 0.05)


async def test_a_failed_root_store_ends_the_waits_for_it_and_for_newer_checkpoints(face: Face) -> None:
    """A root checkpoint whose store fails will not be stored, nor will any newer one of its run (LangGraph's stores
    wait for the one before): a node's first effect waiting for one of them stops with the failure, at once, instead
    of waiting out its timeout; a new run of the thread (its latest checkpoint read) waits again."""
    first, cp1 = await put(face, cfg(), {"n": 1})
    cp2, versions = make_checkpoint(face.saver, {"n": 2}, cp1)
    newer, _ = make_checkpoint(face.saver, {"n": 3}, cp2)
    io = face.saver._async_io if face.is_async else face.saver._sync_io
    original = io.execute

    def failing(request: Any) -> Any:
        if isinstance(request, Upsert) and request.collection == "checkpoints":
            raise AutoReconnect("connection closed (the server went away)")
        return original(request)

    io.execute = failing
    with pytest.raises(AutoReconnect):
        await face.call("put", first, cp2, {"source": "loop", "step": 1}, versions)
    io.execute = original
    for checkpoint_id in (cp2["id"], newer["id"]):
        with pytest.raises(CheckpointNotStoredError, match="an older checkpoint of the run, failed"):
            await wait_stored(face, "t1", checkpoint_id, 2)  # a wait left to its timeout says otherwise
    await face.call("get_tuple", cfg())  # a new run reads the thread's latest checkpoint
    with pytest.raises(CheckpointNotStoredError, match="not stored within"):
        await wait_stored(face, "t1", newer["id"], 0.05)


async def test_wait_stored_waits_for_this_saver_s_own_background_store_without_a_query(
    face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    """durability="async": the node's first effect waits for the put LangGraph runs in the background, woken by it
    (the registry's grace before a query is made long here: a waiter left to sleep it out would fail the test)."""
    from langgraph_durable_mongodb.checkpointer import roots as base

    monkeypatch.setattr(base, "STORED_FIRST_CHECK_SECONDS", 10.0)
    first, cp1 = await put(face, cfg(), {"n": 1})
    cp, versions = make_checkpoint(face.saver, {"n": 2}, cp1)
    args = (first, cp, {"source": "loop", "step": 1}, versions)
    # The store starts once the wait has begun, however late this thread gets there on a loaded machine.
    waiting = asyncio.Event() if face.is_async else threading.Event()
    requests = counted_requests(face, lambda request: isinstance(request, WaitNotice) and waiting.set())
    started = time.monotonic()
    if face.is_async:

        async def store_once_waited() -> None:
            await waiting.wait()
            await face.saver.aput(*args)

        later = asyncio.ensure_future(store_once_waited())
        await face.saver.await_stored("t1", cp["id"], 30)
        await later
    else:
        store = threading.Thread(target=lambda: waiting.wait(30) and face.saver.put(*args))
        store.start()
        face.saver.wait_stored("t1", cp["id"], 30)
        store.join()
    assert time.monotonic() - started < 5  # woken by the store, not by the end of the grace
    assert [r for r in requests if isinstance(r, Find)] == []  # the registry answered: only the put's own write
    # one wait, which the store's note ended: no polling
    assert [type(r).__name__ for r in requests if not isinstance(r, Upsert)] == ["WaitNotice"]


async def test_wait_stored_finds_a_checkpoint_the_registry_forgot(face: Face, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large list() notes every checkpoint it reads and may evict the one a task waits for: the database answers."""
    monkeypatch.setattr(face.saver._roots.stored._origins, "capacity", 3)  # a registry of three
    config, cp = await put(face, cfg(), {"n": 0})
    for step in range(1, 6):
        config, cp = await put(face, config, {"n": step}, previous=cp)
    waited_for = cp["id"]  # the latest: a resume runs tasks prepared from it
    # The history, newest first: noted in that order, the older five evict the latest from a registry of three.
    assert len(await face.list(cfg())) == 6
    requests = counted_requests(face)
    await wait_stored(face, "t1", waited_for, 0.5)
    finds = [r for r in requests if isinstance(r, Find)]
    assert len(finds) == 1  # one query by the checkpoint's key, after the registry's grace
    await wait_stored(face, "t1", waited_for, 0.5)
    assert [r for r in requests if isinstance(r, Find)] == finds  # remembered again


async def snapshot(face: Face, *threads: str) -> dict[str, list[dict]]:
    """The raw documents of ``threads`` in every per-thread collection."""
    out = {}
    for coll in face.saver.collections.per_thread:
        docs = await face.raw(coll, {"thread_id": {"$in": list(threads)}})
        out[coll] = sorted(docs, key=repr)
    return out


async def test_copy_thread_refuses_a_target_with_documents_and_writes_nothing(face: Face) -> None:
    face.saver.inline_value_bytes = 0  # values in blobs: a document in every collection
    saved, _ = await put(face, cfg("source"), {"big": ["s"] * 300})
    await face.call("put_writes", saved, [("w", "source")], "task")
    taken, _ = await put(face, cfg("taken"), {"big": ["t"] * 300, "n": 1})
    await face.call("put_writes", taken, [("w", "taken")], "task")
    before = await snapshot(face, "source", "taken")
    with pytest.raises(ThreadExistsError, match=r"delete_thread\('taken'\)") as refused:
        await face.call("copy_thread", "source", "taken")
    assert refused.value.thread_id == "taken"
    assert set(refused.value.collections) == {"checkpoints", "checkpoint_blobs", "checkpoint_writes"}
    assert await snapshot(face, "source", "taken") == before
    # A target holding documents in any one per-thread collection the database declares is refused the same way.
    for coll in face.saver.storage_format.thread_collections.names:
        inserted = face.db[coll].insert_one({"thread_id": "partial", "marker": coll})
        if face.is_async:
            await inserted
        with pytest.raises(ThreadExistsError) as refused:
            await face.call("copy_thread", "source", "partial")
        assert refused.value.collections == (coll,)
        assert await snapshot(face, "partial") == {c: [{"thread_id": "partial", "marker": c}] if c == coll else [] for c in before}
        await face.call("delete_thread", "partial")
    # Deleted first, the copy goes through and the target is the source's copy.
    await face.call("delete_thread", "taken")
    await face.call("copy_thread", "source", "taken")
    copied = await snapshot(face, "taken")
    original = await snapshot(face, "source")
    assert copied == {c: sorted(({**d, "thread_id": "taken"} for d in docs), key=repr) for c, docs in original.items()}
