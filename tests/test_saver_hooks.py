"""The run fence reaches the saver and the journal through their construction (issue 35), not a context variable.

``DurablePlatform`` builds its checkpointer with ``run_fence=run_lock.check_held`` (with ``exclusive_runs``) and
its journal from the checkpointer, which hands the fence on. A fence that raises refuses the write or the effect
before any command; what it refuses is counted from the stored documents and the effect's real executions.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mongomock
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from mongomock_motor import AsyncMongoMockClient

from langgraph_durable_mongodb import DurablePlatform, MongoDBCheckpointer
from langgraph_durable_mongodb.errors import InvalidInputError
from langgraph_durable_mongodb.journal.journal import ActivityJournal
from langgraph_durable_mongodb.journal.position import EffectPosition
from langgraph_durable_mongodb.journal.documents import EffectCall
from langgraph_durable_mongodb.runs.run_lock import check_held


class Refused(Exception):
    pass


class Fence:
    """Refuses the threads in ``closed``; remembers every thread it was asked about."""

    def __init__(self, *closed: str) -> None:
        self.closed, self.asked = set(closed), []

    def __call__(self, thread_id: str) -> None:
        self.asked.append(thread_id)
        if thread_id in self.closed:
            raise Refused(thread_id)


def _saver(fence: Fence) -> MongoDBCheckpointer:
    client = mongomock.MongoClient()
    return MongoDBCheckpointer(client, async_client=AsyncMongoMockClient(mock_mongo_client=client), db_name="fence", run_fence=fence)


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _put_and_write(saver: MongoDBCheckpointer, thread_id: str, face: str) -> None:
    checkpoint = empty_checkpoint()
    if face == "sync":
        stored = saver.put(_config(thread_id), checkpoint, {"source": "input", "step": -1}, {})
        saver.put_writes(stored, [("messages", "hi")], "task-1")
    else:
        async def both() -> None:
            stored = await saver.aput(_config(thread_id), checkpoint, {"source": "input", "step": -1}, {})
            await saver.aput_writes(stored, [("messages", "hi")], "task-1")
        asyncio.run(both())


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_saver_s_run_fence_refuses_a_checkpoint_of_a_closed_thread_and_allows_the_others(face: str) -> None:
    fence = Fence("closed")
    saver = _saver(fence)
    _put_and_write(saver, "open", face)
    with pytest.raises(Refused):
        _put_and_write(saver, "closed", face)
    db = saver.client["fence"]
    assert db[saver.collections.checkpoints].count_documents({"thread_id": "closed"}) == 0
    assert db[saver.collections.checkpoints].count_documents({"thread_id": "open", "checkpoint_ns": ""}) == 1
    assert db[saver.collections.writes].count_documents({"thread_id": "open"}) == 1
    assert set(fence.asked) == {"open", "closed"}


@pytest.mark.parametrize("face", ["sync", "async"])
def test_the_journal_built_from_a_saver_shares_its_fence_and_starts_no_effect_it_refuses(face: str) -> None:
    fence = Fence("closed")
    journal = ActivityJournal.for_checkpointer(_saver(fence))
    assert journal.run_fence is fence
    assert ActivityJournal.for_checkpointer(_saver(fence), run_fence=None).run_fence is None  # an explicit one wins
    ran: list[str] = []

    def run(thread_id: str) -> Any:
        call, position = EffectCall("tool", "pay", {"amount": 5}), EffectPosition(thread_id, "agent/1", "pay", "1", "1")
        if face == "sync":
            return journal.run(call, lambda: ran.append(thread_id) or "paid", position=position)
        return asyncio.run(journal.arun(call, lambda: ran.append(thread_id) or "paid", position=position))

    assert run("open") == "paid"
    with pytest.raises(Refused):
        run("closed")
    assert ran == ["open"]  # the refused effect never ran
    entry = journal.client[journal.db_name][journal.collection].find_one({"thread_id": "closed"})
    assert entry["not_run"] is True  # its claim freed as never run: a take-over runs it


def test_a_platform_fences_with_its_run_locks_only_when_runs_are_exclusive() -> None:
    with DurablePlatform.embedded() as exclusive, DurablePlatform.embedded(exclusive_runs=False) as shared:
        assert exclusive.checkpointer.run_fence is check_held and exclusive.journal.run_fence is check_held
        assert shared.checkpointer.run_fence is None and shared.journal.run_fence is None
    with pytest.raises(InvalidInputError, match="run_fence"):
        DurablePlatform.embedded(run_fence=lambda thread_id: None)


def test_one_hooks_object_carries_what_the_platform_hangs_on_its_checkpointer() -> None:
    import copy

    from langgraph_durable_mongodb.journal.context import _serving

    with DurablePlatform.embedded() as platform:
        hooks = platform.checkpointer.hooks
        assert hooks.child_runs == [platform.tasks.note_child_run]
        assert hooks.sweep_prunes == [platform._forget_finished]  # noqa: SLF001
        assert _serving(platform.checkpointer)(platform.checkpointer) is platform._effects  # noqa: SLF001
        clone = copy.copy(platform.checkpointer)  # what LangGraph's with_allowlist does
        clone.serde = copy.copy(platform.checkpointer.serde)
        assert clone.hooks is hooks and _serving(clone)(clone).journal.serde is clone.serde
        assert hooks.effect_scopes == platform._effects_for  # noqa: SLF001
    assert _serving(object()) is None  # another kind of saver: nobody serves it


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_child_run_s_start_reaches_the_hooks_observers(face: str) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        n: int

    child = StateGraph(State)
    child.add_node("inner", lambda state: {"n": state["n"] + 1})
    child.add_edge(START, "inner")
    child.add_edge("inner", END)
    parent = StateGraph(State)
    parent.add_node("outer", child.compile())
    parent.add_edge(START, "outer")
    parent.add_edge("outer", END)
    saver = _saver(Fence())
    seen: list[tuple[str, str]] = []
    saver.observe_child_runs(lambda thread_id, config: seen.append((thread_id, config["metadata"]["langgraph_checkpoint_ns"])))
    graph = parent.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "kids"}}
    out = graph.invoke({"n": 1}, config) if face == "sync" else asyncio.run(graph.ainvoke({"n": 1}, config))
    assert out == {"n": 2}
    assert seen and {thread for thread, _ in seen} == {"kids"} and all(ns.startswith("outer:") for _, ns in seen)
