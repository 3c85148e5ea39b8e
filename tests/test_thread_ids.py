"""What a thread id may be: a non-empty string, or a value LangGraph names with ``str()`` (a non-zero int, a UUID).

An empty or falsy id (``""``, ``0``) is refused with ``InvalidInputError`` before anything is written: no
document, no index, no format stamp, no write command on the wire. Before, a run under ``""`` stored 5
checkpoints and 11 writes before a node failed.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from langgraph_durable_mongodb import DurablePlatform, InvalidInputError, effect

from .stores import Store


class State(TypedDict, total=False):
    x: int
    answer: str


def graph_of(platform: DurablePlatform, form: str, executions: list[int]) -> Any:
    @effect(kind="tool", name="lookup")
    def lookup(x: int) -> int:
        executions.append(x)
        return x + 1

    def ask(state: State) -> State:
        looked_up = lookup(state["x"])
        return {"x": looked_up, "answer": interrupt("approve?")}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return platform.compile(builder) if form == "platform.compile" else builder.compile(checkpointer=platform.checkpointer)


async def run(graph: Any, call: str, inputs: Any, config: Any) -> Any:
    if call == "invoke":
        return graph.invoke(inputs, config)
    if call == "stream":
        return list(graph.stream(inputs, config))
    if call == "ainvoke":
        return await graph.ainvoke(inputs, config)
    return [chunk async for chunk in graph.astream(inputs, config)]


SAVER_CALLS = {
    "get_tuple": lambda s, c: s.get_tuple(c),
    "put": lambda s, c: s.put({"configurable": {**c["configurable"], "checkpoint_ns": ""}}, empty_checkpoint(), {}, {}),
    "put_writes": lambda s, c: s.put_writes({"configurable": {**c["configurable"], "checkpoint_ns": "", "checkpoint_id": "1"}}, [("x", 1)], "task"),
    "list": lambda s, c: list(s.list(c)),
}


async def call_saver(saver: Any, name: str, is_async: bool, config: Any) -> Any:
    if not is_async:
        return SAVER_CALLS[name](saver, config)
    if name == "list":
        return [t async for t in saver.alist(config)]
    if name == "get_tuple":
        return await saver.aget_tuple(config)
    if name == "put":
        return await saver.aput({"configurable": {**config["configurable"], "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
    return await saver.aput_writes({"configurable": {**config["configurable"], "checkpoint_ns": "", "checkpoint_id": "1"}}, [("x", 1)], "task")


def assert_nothing_written(store: Store) -> None:  # noqa: F811
    assert {name: store.db[name].count_documents({}) for name in store.db.list_collection_names()} == {}
    assert store.wire_writes() == []


BAD_IDS = {"empty": "", "zero": 0}


@pytest.mark.parametrize("thread", BAD_IDS.values(), ids=BAD_IDS.keys())
@pytest.mark.parametrize("call", ["invoke", "stream", "ainvoke", "astream"])
@pytest.mark.parametrize("form", ["platform.compile", "plain compile"])
async def test_an_empty_thread_id_is_refused_before_anything_is_written(store: Store, form: str, call: str, thread: Any) -> None:  # noqa: F811
    executions: list[int] = []
    graph = graph_of(store.platform(), form, executions)
    with pytest.raises(InvalidInputError, match=r"thread_id must be a non-empty string.*\"thread_id\": \"case-42\""):
        await run(graph, call, {"x": 1}, {"configurable": {"thread_id": thread}})
    assert executions == []
    assert_nothing_written(store)


@pytest.mark.parametrize("name", SAVER_CALLS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_the_saver_refuses_an_empty_thread_id_before_any_query(store: Store, name: str, is_async: bool) -> None:  # noqa: F811
    with pytest.raises(InvalidInputError, match="thread_id must be a non-empty string"):
        await call_saver(store.platform().checkpointer, name, is_async, {"configurable": {"thread_id": ""}})
    if store.commands is not None:
        assert store.commands.seen == []  # not even a read
    assert_nothing_written(store)


@pytest.mark.parametrize("form", ["platform.compile", "plain compile"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_an_int_thread_id_runs_interrupts_and_resumes_as_its_str(store: Store, form: str, is_async: bool) -> None:  # noqa: F811
    executions: list[int] = []
    graph = graph_of(store.platform(), form, executions)
    config = {"configurable": {"thread_id": 7}}
    first = await run(graph, "ainvoke" if is_async else "invoke", {"x": 1}, config)
    assert "__interrupt__" in first
    done = await run(graph, "ainvoke" if is_async else "invoke", Command(resume="yes"), config)
    assert done == {"x": 2, "answer": "yes"}
    assert executions == [1]  # the resume replayed the effect
    assert set(store.db.checkpoints.distinct("thread_id")) == {"7"}
    assert set(store.db.activity_journal.distinct("thread_id")) == {"7"}
    state = await graph.aget_state(config) if is_async else graph.get_state(config)
    assert state.values == {"x": 2, "answer": "yes"}



@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_what_earlier_releases_stored_under_an_empty_thread_id_can_still_be_deleted(store: Store, is_async: bool) -> None:  # noqa: F811
    platform = store.platform()
    graph_of(platform, "platform.compile", []).invoke({"x": 1}, {"configurable": {"thread_id": "kept"}})
    store.db.checkpoints.insert_one({"thread_id": "", "checkpoint_ns": "", "checkpoint_id": "1", "ts": "t"})
    store.db.checkpoint_writes.insert_one({"thread_id": "", "checkpoint_ns": "", "checkpoint_id": "1", "task_id": "x", "idx": 0})
    await platform.checkpointer.adelete_thread("") if is_async else platform.checkpointer.delete_thread("")
    assert store.db.checkpoints.count_documents({"thread_id": ""}) == store.db.checkpoint_writes.count_documents({"thread_id": ""}) == 0
    assert set(store.db.checkpoints.distinct("thread_id")) == {"kept"}
