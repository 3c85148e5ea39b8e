"""Every LangGraph internal the library relies on (``src/_langgraph.py``), checked against the installed LangGraph.

A LangGraph release that renames a config key, changes the namespace format or
the task paths fails here, by name, instead of somewhere deep in a run.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.pregel._loop import PregelLoop
from langgraph.types import RetryPolicy, Send

from langgraph_durable_mongodb import _langgraph


class State(TypedDict, total=False):
    seen: Annotated[list, operator.add]


def test_the_namespace_format_and_task_paths_are_what_the_resolver_parses() -> None:
    assert (_langgraph.NS_SEP, _langgraph.NS_END) == ("|", ":")
    assert (_langgraph.PULL, _langgraph.PUSH) == ("__pregel_pull", "__pregel_push")


def run_and_observe(durability: str | None) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    attempts = {"flaky": 0}

    def observe(name: str) -> Any:
        def node(state: State) -> State:
            config = get_config()
            configurable = config["configurable"]
            if name == "flaky":
                attempts["flaky"] += 1
                if attempts["flaky"] == 1:
                    raise ConnectionError("first attempt fails")
            seen.append(
                {
                    "name": name,
                    "ns": configurable["checkpoint_ns"],
                    "writer": _langgraph.task_writer(configurable),
                    "attempt": _langgraph.node_attempt(configurable),
                    "root": _langgraph.root_checkpoint(configurable),
                    "async": _langgraph.runs_durably_async(configurable),
                    "path": config["metadata"]["langgraph_path"],
                    "checkpointer": _langgraph.run_checkpointer(configurable),
                }
            )
            return {"seen": [name]}

        return node

    child = StateGraph(State)
    child.add_node("inner", observe("inner"))
    child.add_edge(START, "inner")
    graph = StateGraph(State)
    graph.add_node("first", observe("first"))
    graph.add_node("flaky", observe("flaky"), retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01))
    graph.add_node("sub", child.compile())
    graph.add_node("worker", observe("worker"))
    graph.add_edge(START, "first")
    graph.add_edge("first", "flaky")
    graph.add_edge("flaky", "sub")
    graph.add_conditional_edges("sub", lambda s: [Send("worker", {})])
    saver = InMemorySaver()
    compiled = graph.compile(checkpointer=saver)
    compiled.invoke({"seen": []}, {"configurable": {"thread_id": "t"}}, durability=durability)
    assert {s["checkpointer"] is saver for s in seen} == {True}  # CONFIG_KEY_CHECKPOINTER, in the child too
    return seen


def test_inside_a_node_the_config_carries_what_the_journal_reads() -> None:
    seen = {s["name"]: s for s in run_and_observe("async")}
    first, flaky, inner, worker = seen["first"], seen["flaky"], seen["inner"], seen["worker"]
    assert callable(first["writer"]) and first["writer"] is not flaky["writer"]  # one write callable per task
    assert (first["attempt"], flaky["attempt"]) == (1, 2)  # the RetryPolicy retry is attempt 2
    assert first["async"] is True
    assert isinstance(first["root"], str) and first["root"] != flaky["root"]  # each step's root checkpoint
    assert isinstance(inner["root"], str)  # a task inside a child sees the root checkpoint too
    name, sep, task_id = first["ns"].partition(_langgraph.NS_END)
    assert (name, sep) == ("first", ":") and task_id
    outer, _, leaf = inner["ns"].partition(_langgraph.NS_SEP)
    assert outer.startswith("sub:") and leaf.startswith("inner:")
    assert first["path"][0] == _langgraph.PULL
    assert worker["path"][0] == _langgraph.PUSH and worker["path"][1] == 0  # ("__pregel_push", index, ...)


def test_durability_sync_is_not_taken_for_async() -> None:
    assert {s["async"] for s in run_and_observe("sync")} == {False}


def test_a_run_without_a_durability_stores_in_the_background() -> None:
    """LangGraph's default is "async", and it names no durability in the config then, in the child either."""
    assert {s["async"] for s in run_and_observe(None)} == {True}


class Watching(InMemorySaver):
    """Records ``starting_run()`` at each read of a checkpoint, as ``MongoDBCheckpointer`` asks it."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Any] = []

    def get_tuple(self, config: Any) -> Any:
        self.runs.append(_langgraph.starting_run())
        return super().get_tuple(config)

    async def aget_tuple(self, config: Any) -> Any:
        self.runs.append(_langgraph.starting_run())
        return InMemorySaver.get_tuple(self, config)  # InMemorySaver's own aget_tuple calls get_tuple


def one_step_graph(saver: InMemorySaver) -> Any:
    graph = StateGraph(State)
    graph.add_node("step", lambda state: {"seen": ["step"]})
    graph.add_edge(START, "step")
    return graph.compile(checkpointer=saver)


def test_a_run_starts_where_pregel_enters_its_loop() -> None:
    """``starting_run`` finds ``Pregel.stream`` and ``PregelLoop.__enter__`` above the first read, and the
    loop's callback ``manager``; ``get_state`` starts no run."""
    saver = Watching()
    compiled = one_step_graph(saver)
    compiled.invoke({"seen": []}, {"configurable": {"thread_id": "t"}})
    started = [run for run in saver.runs if run is not None]
    assert len(started) == 1 and started[0].graph is compiled
    assert isinstance(started[0].loop, PregelLoop) and isinstance(started[0].loop.manager.inheritable_handlers, list)
    saver.runs.clear()
    compiled.get_state({"configurable": {"thread_id": "t"}})
    assert saver.runs == [None]


async def test_an_async_run_starts_where_pregel_enters_its_loop() -> None:
    saver = Watching()
    compiled = one_step_graph(saver)
    await compiled.ainvoke({"seen": []}, {"configurable": {"thread_id": "t"}})
    started = [run for run in saver.runs if run is not None]
    assert len(started) == 1 and started[0].graph is compiled and isinstance(started[0].loop, PregelLoop)
    saver.runs.clear()
    await compiled.aget_state({"configurable": {"thread_id": "t"}})
    assert saver.runs == [None]


def test_an_edit_as_the_interrupted_node_saves_its_writes_under_that_task_on_the_edited_checkpoint() -> None:
    """``nodes_completed_by_edit`` reads the task paths LangGraph gives the loop's and the edit's pending writes."""
    from langgraph.types import interrupt

    def gate(state: State) -> State:
        interrupt("ok?")
        return {"seen": ["gate"]}

    builder = StateGraph(State)
    builder.add_node("intake", lambda s: {"seen": ["intake"]})
    builder.add_node("gate", gate)
    builder.add_edge(START, "intake")
    builder.add_edge("intake", "gate")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)

    def edited_writes(thread: str, **update: Any) -> list[dict[str, Any]]:
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"seen": []}, config)
        edited = saver.get_tuple(config).checkpoint["id"]
        graph.update_state(config, {"seen": ["edited"]}, **update)
        return [
            {"task_id": task_id, "channel": channel, "task_path": task_path}
            for (t, _, checkpoint), writes in saver.writes.items()
            if (t, checkpoint) == (thread, edited)
            for (task_id, _), (_, channel, _, task_path) in writes.items()
        ]

    assert _langgraph.nodes_completed_by_edit(edited_writes("as-last")) == []  # as the node that ran last
    assert _langgraph.nodes_completed_by_edit(edited_writes("as-gate", as_node="gate")) == ["gate"]
