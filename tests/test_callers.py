"""Every caller of a graph gets the same journal: plain code, a coroutine calling the sync API (an ``async def`` web
handler, a Jupyter cell, ``asyncio.run(main())``), an ``async def`` node calling a sync ``@effect``, a thread pool.

Records trail their effects (tests/test_trailing_records.py); here they are slowed down, as on a busy server, so that a
caller that skipped a wait for one would be seen: a ``RetryPolicy`` retry that did not wait for the record of the
attempt before it runs the charge again (issue 44, break 1).
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy

from langgraph_durable_mongodb.journal import current_effect, effect

from .journal_helpers import Counter
from .test_trailing_records import completed, slow_records, watch_writes

pytestmark = pytest.mark.both_compile_forms

RETRY = RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False, retry_on=ConnectionError)


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def charging_graph(executed: Counter, keys: list[str], *, async_node: bool) -> StateGraph:
    """``bill`` charges (a sync ``@effect``), then fails its first attempt; its ``RetryPolicy`` runs it again."""
    attempts: list[int] = []

    @effect(kind="payment", name="charge")
    def charge() -> str:
        keys.append(current_effect().idempotency_key)
        return executed("charged")

    def bill(state: State) -> State:
        attempts.append(1)
        done = charge()
        if len(attempts) == 1:
            raise ConnectionError("the worker's link dropped after the charge")
        return {"notes": [done]}

    async def abill(state: State) -> State:
        return bill(state)

    graph = StateGraph(State)
    graph.add_node("bill", abill if async_node else bill, retry_policy=RETRY)
    graph.add_edge(START, "bill")
    return graph


def test_a_sync_graph_invoked_from_a_coroutine_retries_without_charging_twice(platform: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``graph.invoke`` inside ``asyncio.run(main())``: LangGraph runs the step's only task inline, on the loop's
    thread; the retry still waits for the record of the attempt before it, which a pool thread writes."""
    platform.setup()
    slow_records(platform.journal, monkeypatch)
    executed, keys = Counter(), []
    compiled = platform.compile(charging_graph(executed, keys, async_node=False))
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}

    async def handler() -> Any:  # an async web handler calling the sync API
        return compiled.invoke({"notes": []}, config)

    out = asyncio.run(handler())
    assert out["notes"] == ["charged"]
    assert executed.n == 1 and len(set(keys)) == 1
    assert completed(platform.journal, config["configurable"]["thread_id"]) == ["charge"]


def test_an_async_node_calling_a_sync_effect_retries_without_charging_twice(platform: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    platform.setup()
    slow_records(platform.journal, monkeypatch)
    executed, keys = Counter(), []
    compiled = platform.compile(charging_graph(executed, keys, async_node=True))
    out = asyncio.run(compiled.ainvoke({"notes": []}, {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}))
    assert out["notes"] == ["charged"]
    assert executed.n == 1


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_writes_from_a_coroutine_calling_the_sync_api_wait_for_their_records(
    platform: Any, durability: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task's writes, and the checkpoint after its step, are stored only once its records are: a crash between
    them must never leave the node done with an effect the journal does not hold."""
    platform.setup()
    slow_records(platform.journal, monkeypatch)
    thread = f"t-{uuid.uuid4().hex[:8]}"
    writes = watch_writes(platform, thread, monkeypatch)

    @effect(kind="tool", name="first")
    def first() -> str:
        return "one"

    @effect(kind="tool", name="second")
    def second() -> str:
        return "two"

    graph = StateGraph(State)
    graph.add_node("work", lambda state: {"notes": [first(), second()]})
    graph.add_edge(START, "work")
    compiled = platform.compile(graph)

    async def handler() -> Any:
        return compiled.invoke({"notes": []}, {"configurable": {"thread_id": thread}}, durability=durability)

    assert asyncio.run(handler())["notes"] == ["one", "two"]
    assert writes[-1] == ["first", "second"]  # the node's writes (the last sent) waited for both records
