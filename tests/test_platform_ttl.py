"""A thread with a TTL expires whole: every document a durable run writes carries the thread's one expiry."""

from __future__ import annotations

from typing import Any


from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .graphs import State, nest

PER_THREAD = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "activity_journal")


def expiries(platform: DurablePlatform, thread_id: str) -> dict[str, set[Any]]:
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    return {c: {d.get("expire_at") for d in db[c].find({"thread_id": thread_id})} for c in PER_THREAD}


def run(platform: DurablePlatform, thread_id: str) -> None:
    @effect(kind="tool", name="probe")
    def probe(n: int) -> int:
        return n + 1

    graph = platform.compile(nest("step", lambda s: {"count": probe(s.get("count", 0)), "notes": ["x" * 600]}, "outer", "inner"))
    graph.invoke({"count": 0, "notes": []}, {"configurable": {"thread_id": thread_id}})


def test_every_document_of_a_durable_run_carries_the_threads_expiry(make_platform: Any) -> None:
    platform = make_platform(ttl=3600)
    platform.checkpointer.inline_value_bytes = 64  # some values in blobs: every collection is stamped
    run(platform, "ttl-1")
    found = expiries(platform, "ttl-1")
    assert all(found[c] for c in PER_THREAD), found  # every collection holds documents of the thread
    [value] = set().union(*found.values())
    assert value is not None


async def test_async_runs_stamp_the_threads_expiry_too(make_platform: Any) -> None:
    platform = make_platform(ttl=3600)
    platform.checkpointer.inline_value_bytes = 64  # some values in blobs: every collection is stamped

    @effect(kind="tool", name="probe")
    async def probe(n: int) -> int:
        return n + 1

    async def step(state: State) -> State:
        return {"count": await probe(state.get("count", 0)), "notes": ["x" * 600]}

    graph = platform.compile(nest("step", step, "outer", "inner"))
    await graph.ainvoke({"count": 0, "notes": []}, {"configurable": {"thread_id": "ttl-2"}})
    [value] = set().union(*expiries(platform, "ttl-2").values())
    assert value is not None
