"""A node's position without waiting for its root checkpoint's store (``MongoDBCheckpointer.foresee_root``).

Under ``durability="async"`` LangGraph stores a root checkpoint after the one before it is stored, while the
tasks prepared from it already run. A root checkpoint newer than every one this process read, stored or
announced is one a run of this process is creating: its tasks know what it will record (it continues nothing,
and carries the process's high water) with no query and no wait, and ``put`` then stores exactly that.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import effect
from langgraph_durable_mongodb._plans.requests import Sleep

from .clients import count_requests

MODES = ["sync", "async"]


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def _graph() -> StateGraph:
    @effect(kind="tool", name="write_note")
    def write_note() -> str:
        return "noted"

    graph = StateGraph(State)
    graph.add_node("note", lambda state: {"notes": [write_note()]})
    graph.add_edge(START, "note")
    return graph


def _stored_thread(platform: Any) -> tuple[str, str]:
    """A thread with a few root checkpoints; returns it and its latest checkpoint id."""
    graph = _graph()
    thread = f"t-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread}}
    compiled = platform.compile(graph)
    compiled.invoke({"notes": []}, config)
    return thread, compiled.get_state(config).config["configurable"]["checkpoint_id"]


@pytest.mark.parametrize("mode", MODES)
def test_a_root_newer_than_any_known_is_foreseen_without_a_query_and_stored_as_foreseen(platform: Any, mode: str) -> None:
    platform.setup()
    saver = platform.checkpointer
    thread, latest = _stored_thread(platform)
    coming = str(uuid6(clock_seq=1))
    assert coming > latest
    commands: list[str] = []
    count_requests(saver, saver.collections.checkpoints, commands)
    assert saver.foresee_root(thread, coming) is True
    assert commands == []
    foreseen = saver.stored_root(thread, coming)
    assert (foreseen.origin, foreseen.stored, foreseen.written) == (coming, False, True)
    assert foreseen.carried == [{"name": "note", "ordinal": 1}]  # the thread's high water: note/1 took an entry

    checkpoint = {**empty_checkpoint(), "id": coming}
    parent = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": latest}}
    metadata = {"source": "loop", "step": 9, "parents": {}}
    if mode == "sync":
        saver.put(parent, checkpoint, metadata, {})
    else:
        asyncio.run(saver.aput(parent, checkpoint, metadata, {}))
    doc = saver.client[saver.db_name][saver.collections.checkpoints].find_one({"thread_id": thread, "checkpoint_id": coming})
    assert doc["ordinals"] == foreseen.carried  # what its tasks counted from is what it carries
    assert saver.stored_root(thread, coming).stored is True


def test_a_root_older_than_the_newest_known_is_not_foreseen(platform: Any) -> None:
    """Only its store, or the database, can tell what it records: it may be an edit made elsewhere."""
    platform.setup()
    saver = platform.checkpointer
    thread, latest = _stored_thread(platform)
    older = "0" * len(latest)
    assert saver.foresee_root(thread, older) is False
    assert saver.stored_root(thread, older) is None
    assert saver.foresee_root(f"{thread}-unknown", str(uuid6(clock_seq=2))) is False  # a thread never met here


@pytest.mark.parametrize("mode", MODES)
def test_the_first_run_of_a_new_thread_waits_for_no_store(platform: Any, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its first read found no checkpoint: every root checkpoint its run creates is foreseen, also before the
    store of its first one has begun (slowed here)."""
    platform.setup()
    saver, waits = platform.checkpointer, []
    store = saver._store  # noqa: SLF001 - its put_plan is the plan both faces of put run
    put = store.put_plan

    def slow_put(*args: Any, **kwargs: Any) -> Any:
        yield Sleep(0.2)
        return (yield from put(*args, **kwargs))

    monkeypatch.setattr(store, "put_plan", slow_put)
    monkeypatch.setattr(saver, "wait_stored", lambda *args, **kwargs: waits.append(args))

    async def await_stored(*args: Any, **kwargs: Any) -> None:
        waits.append(args)

    monkeypatch.setattr(saver, "await_stored", await_stored)
    graph = _graph()
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    compiled = platform.compile(graph)
    out = compiled.invoke({"notes": []}, config) if mode == "sync" else asyncio.run(compiled.ainvoke({"notes": []}, config))
    assert out["notes"] == ["noted"]
    assert waits == []


def test_a_stored_root_carries_what_its_tasks_foresaw_even_when_the_high_water_moved_since(platform: Any) -> None:
    platform.setup()
    saver = platform.checkpointer
    thread, latest = _stored_thread(platform)
    coming = str(uuid6(clock_seq=3))
    assert saver.foresee_root(thread, coming)
    foreseen = saver.stored_root(thread, coming).carried
    platform.allocator._water.took(thread, latest, "note", 5)  # noqa: SLF001 - a take keyed before it, arriving late
    parent = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": latest}}
    saver.put(parent, {**empty_checkpoint(), "id": coming}, {"source": "loop", "step": 9, "parents": {}}, {})
    doc = saver.client[saver.db_name][saver.collections.checkpoints].find_one({"thread_id": thread, "checkpoint_id": coming})
    assert doc["ordinals"] == foreseen == [{"name": "note", "ordinal": 1}]
