"""A root checkpoint whose store failed: none of its tasks starts an effect, and the resume runs each once.

Under ``durability="async"`` LangGraph stores a root checkpoint in the background while the tasks prepared from
it already run. A position derives from that checkpoint (``resolver/visit.py``), so a task's first effect waits
until it is stored: when that store fails (the server went away, or wrote it and the reply was lost), the task's
effects never run under an identity a resume would not meet again. The resume starts from what is stored, runs
the child's effect once, and replays what was recorded before. (CI met the old failure, an effect recorded under
a checkpoint that was never stored, on FerretDB: ``test_server_killed_and_restarted_mid_run_async``.)

The fault is injected in the interpreters: the store of the root checkpoint the child is prepared from fails,
sent or not (``applied``: the server wrote it, the reply was lost).
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from pymongo.errors import AutoReconnect

from langgraph_durable_mongodb import CheckpointNotStoredError, RunLockLostError
from langgraph_durable_mongodb.storage.plans import interpreters
from langgraph_durable_mongodb.storage.plans.requests import Upsert
from langgraph_durable_mongodb.journal import effect

from .graphs import Notes, config

#: Every test runs on ``platform.compile(builder)`` and on ``builder.compile(checkpointer=platform.checkpointer)``.
pytestmark = pytest.mark.both_compile_forms

CHILD_STEP = 1  # the root checkpoint of step 1 prepares the child's task (step 0 prepares intake)


class Fault:
    """Fails the store of the root checkpoint of ``CHILD_STEP``, once."""

    def __init__(self, applied: bool, error: Exception | None = None) -> None:
        self.applied = applied
        self.error = error or AutoReconnect("connection closed (the server went away)")
        self.failed: list[str] = []

    def hits(self, request: Any) -> bool:
        if self.failed or request.collection != "checkpoints":
            return False
        fields = [getattr(op, "_doc", {}).get("$set", {}) for op in request.operations]
        return any(f.get("checkpoint_ns") == "" and (f.get("metadata") or {}).get("step") == CHILD_STEP for f in fields)

    def fail(self, request: Any) -> None:
        self.failed.append(next(op._doc["$set"]["checkpoint_id"] for op in request.operations))  # noqa: SLF001
        raise self.error


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Fault:
    applied, error = request.param if isinstance(request.param, tuple) else (request.param, None)
    fault = Fault(applied, error)
    sync_upsert, async_upsert = interpreters.SyncInterpreter._upsert, interpreters.AsyncInterpreter._upsert

    def sync_faulty(self: Any, upsert: Any) -> Any:
        if fault.hits(upsert):
            if fault.applied:
                sync_upsert(self, upsert)
            fault.fail(upsert)
        return sync_upsert(self, upsert)

    async def async_faulty(self: Any, upsert: Any) -> Any:
        if fault.hits(upsert):
            if fault.applied:
                await async_upsert(self, upsert)
            fault.fail(upsert)
        return await async_upsert(self, upsert)

    monkeypatch.setitem(interpreters.SyncInterpreter._HANDLERS, Upsert, sync_faulty)
    monkeypatch.setitem(interpreters.AsyncInterpreter._HANDLERS, Upsert, async_faulty)
    return fault


def case_graph(face: str, executions: list[str]) -> StateGraph:
    """intake → case (a compiled child: gather) → decide, each node running one effect."""

    def node(name: str) -> Any:
        def run(case: str) -> str:
            executions.append(name)
            return f"{name}:{case}"

        sync_effect = effect(kind="tool", name=name)(run)

        @effect(kind="tool", name=name)
        async def async_effect(case: str) -> str:
            return run(case)

        def sync_node(state: Notes) -> Notes:
            return {"notes": [sync_effect("c-1")]}

        async def async_node(state: Notes) -> Notes:
            return {"notes": [await async_effect("c-1")]}

        return sync_node if face == "sync" else async_node

    child = StateGraph(Notes)
    child.add_node("gather", node("lookup"))
    child.add_edge(START, "gather")
    root = StateGraph(Notes)
    root.add_node("intake", node("triage"))
    root.add_node("case", child.compile())
    root.add_node("decide", node("pay"))
    root.add_edge(START, "intake")
    root.add_edge("intake", "case")
    root.add_edge("case", "decide")
    return root


def journal_positions(platform: Any, thread_id: str) -> list[tuple[str, str, str, str]]:
    """The journal entries' ``(path, node, occurrence, name)``, as labels."""
    return sorted((d["path"], d["node"], d["occurrence"], d["name"]) for d in platform.journal.entries(thread_id))


EXPECTED = [
    ("agent/1", "decide", "1", "pay"),
    ("agent/1", "intake", "1", "triage"),
    ("agent/1/case/1", "gather", "1", "lookup"),
]


async def run(graph: Any, face: str, value: Any, thread_id: str) -> Any:
    if face == "async":
        return await graph.ainvoke(value, config(thread_id), durability="async")
    return graph.invoke(value, config(thread_id), durability="async")


@pytest.mark.parametrize("fault", [False, True], ids=["not applied", "applied, reply lost"], indirect=True)
@pytest.mark.parametrize("face", ["sync", "async"], ids=["sync_face", "async_face"])
async def test_no_effect_runs_under_a_root_whose_store_failed_and_the_resume_runs_it_once(
    platform: Any, fault: Fault, face: str
) -> None:
    executions: list[str] = []
    graph = platform.compile(case_graph(face, executions))
    with pytest.raises((AutoReconnect, CheckpointNotStoredError)):
        await run(graph, face, {"notes": []}, "t-1")
    assert fault.failed, "the root store was never failed"
    assert executions == ["triage"]  # the child's task waited for its checkpoint, and stopped when its store failed

    result = await run(graph, face, None, "t-1")

    # the child returns its whole state, the parent's notes included, which the parent's reducer adds again
    assert result["notes"] == ["triage:c-1", "triage:c-1", "lookup:c-1", "pay:c-1"]
    assert journal_positions(platform, "t-1") == EXPECTED
    assert executions == ["triage", "lookup", "pay"]  # each once: nothing recorded ran again


LOST = RunLockLostError("the run lock of thread 't-1' was taken over", thread_id="t-1", fence=1)


@pytest.mark.parametrize("fault", [(False, LOST)], ids=["lock lost"], indirect=True)
@pytest.mark.parametrize("face", ["sync", "async"], ids=["sync_face", "async_face"])
async def test_a_root_store_refused_for_a_lost_lock_stops_the_run_with_that_error(
    platform: Any, fault: Fault, face: str
) -> None:
    """The store was refused because the run lost its thread: the task waiting for it raises ``RunLockLostError``
    itself, the error every other call of the run raises then, not ``CheckpointNotStoredError``."""
    executions: list[str] = []
    graph = platform.compile(case_graph(face, executions))
    with pytest.raises(RunLockLostError) as raised:
        await run(graph, face, {"notes": []}, "t-1")
    assert raised.value is LOST and fault.failed
    assert executions == ["triage"]  # the child's effect never started
