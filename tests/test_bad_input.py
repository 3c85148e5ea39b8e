"""Bad input to the checkpointer: a clear error or it works, and no other thread is touched."""

from __future__ import annotations

import pytest

from langgraph_durable_mongodb import InvalidInputError

from .clients import Face
from .test_checkpointer_contract import cfg, put

COLLECTIONS = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


async def snapshot(face: Face, thread: str) -> dict:
    return {c: await face.raw(c, {"thread_id": thread}) for c in COLLECTIONS}


@pytest.fixture
async def bystander(face: Face) -> dict:
    saved, _ = await put(face, cfg("bystander"), {"big": ["keep me"] * 200, "n": 1})
    await face.call("put_writes", saved, [("w", "pending")], "task")
    return await snapshot(face, "bystander")


UNUSUAL_IDS = ["a\x00b", "x" * 10_000, "a.b$c", "$where", "ünïcødé 🚀", " "]


@pytest.mark.parametrize("thread", UNUSUAL_IDS, ids=["nul", "10k", "dots", "dollar", "unicode", "space"])
async def test_unusual_thread_ids_work_and_stay_separate(face: Face, bystander: dict, thread: str) -> None:
    saved, cp = await put(face, cfg(thread, ns="child:" + thread), {"v": [thread]})
    await face.call("put_writes", saved, [("w", thread)], "task\x00id", "path.$x")
    got = await face.call("get_tuple", cfg(thread, ns="child:" + thread))
    assert got.checkpoint["channel_values"] == {"v": [thread]}
    assert got.pending_writes == [("task\x00id", "w", thread)]
    assert [t.checkpoint["id"] for t in await face.list({"configurable": {"thread_id": thread}})] == [cp["id"]]
    await face.call("delete_thread", thread)
    assert await face.call("get_tuple", cfg(thread, ns="child:" + thread)) is None
    assert await snapshot(face, "bystander") == bystander


BAD_CALLS = [
    ("get_tuple", ({"configurable": {"thread_id": ["bystander"]}},)),
    ("get_tuple", ({"configurable": {"thread_id": {"$regex": ".*"}}},)),
    ("get_tuple", ({"configurable": {"thread_id": "bystander", "checkpoint_ns": {"$ne": "x"}}},)),
    ("put_writes", ({"configurable": {"thread_id": "bystander", "checkpoint_id": {"$gt": ""}}}, [("a", 1)], "t")),
    ("put_writes", ({"configurable": {"thread_id": "bystander", "checkpoint_id": "c"}}, [(7, 1)], "t")),
    ("delete_thread", ({"$gt": ""},)),
    ("delete_thread", (None,)),
    ("copy_thread", ({"$gt": ""}, "new")),
    ("prune", ([{"$gt": ""}],)),
    ("delete_for_runs", ({"$gt": ""},)),
    ("get_delta_channel_history", ()),
]


@pytest.mark.parametrize("method,args", BAD_CALLS, ids=[f"{m}-{i}" for i, (m, _) in enumerate(BAD_CALLS)])
async def test_bad_calls_raise_and_touch_nothing(face: Face, bystander: dict, method: str, args: tuple) -> None:
    kwargs = {}
    if method == "get_delta_channel_history":
        kwargs = {"config": {"configurable": {"thread_id": 5}}, "channels": ["messages"]}
    with pytest.raises(InvalidInputError):
        await face.call(method, *args, **kwargs)
    assert await snapshot(face, "bystander") == bystander


async def test_list_filters_cannot_reach_other_threads(face: Face, bystander: dict) -> None:
    await put(face, cfg("mine"), {"n": 1}, {"source": "loop", "step": 0, "owner": "me"})
    for bad in ({"$or": [{}]}, {"owner": {"$exists": True}}, {"thread_id": {"$ne": None}}, {1: "x"}):
        with pytest.raises(InvalidInputError):
            await face.list(cfg("mine"), filter=bad)
    # a literal "thread_id" metadata key is metadata, not the document's thread
    assert await face.list(cfg("mine"), filter={"thread_id": "bystander"}) == []
    assert await snapshot(face, "bystander") == bystander
